"""The ring all-reduce time model (slurm_mlsched/model/allreduce.py) against values computed
by hand, and the allreduce job request's rules (issue 31)."""

from __future__ import annotations

import math

import pytest

from slurm_mlsched.files.profiles import load_profiles
from slurm_mlsched.model import (
    AllreduceParams,
    Architecture,
    JobProfile,
    JobRequest,
    Launcher,
    LinkKind,
    Mode,
    Resources,
    RingKind,
    SlotPlan,
)
from slurm_mlsched.model.allreduce import (
    DEFAULT_LATENCY_S,
    allreduce_seconds,
    best_rate,
    layout_of,
    rate,
    ring_summary,
    slowest_link,
    step_seconds,
    worker_rate_floors,
)

# resnet-50 of the DL2 table: τ 0.449 s, M 102.2 MB, b_ex 91.875 MB/s, b_in 306.5 MB/s.
RESNET = JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50")
# dssm: its measured b_in (65.625) is below its b_ex (92.125); the model clamps b_in to b_ex.
DSSM = JobProfile(0.567, 6.0, 92.125, 65.625, name="dssm")
ALPHA = 50e-6


def test_the_default_latency_is_the_documented_one() -> None:
    assert DEFAULT_LATENCY_S == ALPHA


def test_one_node_uses_the_intra_node_link() -> None:
    # n = 4, k = 1: t = 2·3/4 · 102.2/306.5 + 2·3·α = 153.3/306.5 + 0.0003
    expected = 153.3 / 306.5 + 6 * ALPHA  # 0.500163… + 0.0003 = 0.500463…
    assert slowest_link((4,), RESNET) == (LinkKind.INTRA_NODE, 306.5)
    assert allreduce_seconds((4,), RESNET) == pytest.approx(expected)
    assert allreduce_seconds((4,), RESNET) == pytest.approx(0.5004631321)
    assert step_seconds((4,), RESNET) == pytest.approx(0.449 + 0.5004631321)
    # rate at Δ = 600 s: 4 · 600 / 0.9494631321 = 2527.74… mini-batches per slot
    assert rate((4,), RESNET, 600.0) == pytest.approx(2400.0 / 0.9494631321)


FLAT = AllreduceParams(ring=RingKind.FLAT)


def test_two_nodes_with_two_ranks_each_hierarchical() -> None:
    # g = 2, k = 2: intra 2·(1/2)·102.2/306.5 = 0.333442…, inter 2·(1/2)·102.2/91.875 =
    # 1.112381…, latency 2·(1 + 1)·α = 0.0002: 1.445823… + 0.0002
    assert slowest_link((2, 2), RESNET) == (LinkKind.NETWORK, 91.875)
    assert allreduce_seconds((2, 2), RESNET) == pytest.approx(
        102.2 / 306.5 + 102.2 / 91.875 + 4 * ALPHA
    )
    assert allreduce_seconds((2, 2), RESNET) == pytest.approx(1.4460233)
    assert step_seconds((2, 2), RESNET) == pytest.approx(0.449 + 1.4460233)


def test_two_nodes_with_two_ranks_each_flat() -> None:
    # n = 4 in one ring, B_min = 91.875: 2·(3/4)·102.2/91.875 + 2·3·α
    # = 153.3 / 91.875 + 0.0003 = 1.668571… + 0.0003 (91.875 = 735/8: 1226.4/735)
    assert allreduce_seconds((2, 2), RESNET, FLAT) == pytest.approx(1226.4 / 735 + 0.0003)
    assert step_seconds((2, 2), RESNET, FLAT) == pytest.approx(0.449 + 1.6688714286)


def test_both_rings_agree_on_one_node_and_on_one_rank_per_node() -> None:
    for layout in ((4,), (1, 1, 1), (8,), (1,) * 8):
        assert allreduce_seconds(layout, RESNET) == pytest.approx(
            allreduce_seconds(layout, RESNET, FLAT)
        )


def test_one_rank_per_node_uses_only_the_network() -> None:
    # n = 3, k = 3: t = 2·2/3 · 102.2/91.875 + 2·2·α = 3270.4/2205 + 0.0002 = 1.483374…
    assert slowest_link((1, 1, 1), RESNET) == (LinkKind.NETWORK, 91.875)
    assert allreduce_seconds((1, 1, 1), RESNET) == pytest.approx(3270.4 / 2205 + 0.0002)


def test_unequal_counts_cost_the_fullest_node() -> None:
    # (3, 1): g = 3, k = 2: 2·(2/3)·102.2/306.5 + 2·(1/2)·102.2/91.875 + 2·(2 + 1)·α
    # = 0.444589… + 1.112381… + 0.0003, slower than (2, 2)'s 1.446023…
    assert allreduce_seconds((3, 1), RESNET) == pytest.approx(
        4 / 3 * 102.2 / 306.5 + 102.2 / 91.875 + 6 * ALPHA
    )
    assert allreduce_seconds((3, 1), RESNET) > allreduce_seconds((2, 2), RESNET)
    # the flat ring cannot tell them apart: n = 4 over the network either way
    assert allreduce_seconds((3, 1), RESNET, FLAT) == pytest.approx(
        allreduce_seconds((2, 2), RESNET, FLAT)
    )


def test_the_eight_worker_layouts_of_the_issue() -> None:
    # (4, 4): 2·(3/4)·102.2/306.5 + 2·(1/2)·102.2/91.875 + 2·(3 + 1)·α
    #       = 0.500163… + 1.112381… + 0.0004 = 1.612944…
    # (1,)*8: 2·(7/8)·102.2/91.875 + 2·7·α = 1.946666… + 0.0007 = 1.947367…
    four_four = 1.5 * 102.2 / 306.5 + 102.2 / 91.875 + 8 * ALPHA
    eight_ones = 1.75 * 102.2 / 91.875 + 14 * ALPHA
    assert allreduce_seconds((4, 4), RESNET) == pytest.approx(four_four)
    assert allreduce_seconds((1,) * 8, RESNET) == pytest.approx(eight_ones)
    assert four_four < eight_ones  # B_intra/B_net = 3.34 > k1·k2/n = 2·8/8 = 2
    # and 4 nodes of 2 lose to 8 of 1: 3.34 < 4·8/8 = 4
    assert allreduce_seconds((2, 2, 2, 2), RESNET) > allreduce_seconds((1,) * 8, RESNET)


def test_one_worker_sends_nothing() -> None:
    assert slowest_link((1,), RESNET) == (LinkKind.NONE, None)
    assert allreduce_seconds((1,), RESNET) == 0.0
    assert step_seconds((1,), RESNET) == 0.449
    assert rate((1,), RESNET, 600.0) == pytest.approx(600.0 / 0.449)  # 1336.30…


def test_the_clamped_intra_node_bandwidth_ties_and_the_tie_goes_to_the_network() -> None:
    assert slowest_link((2, 2), DSSM) == (LinkKind.NETWORK, 92.125)
    assert slowest_link((2,), DSSM) == (LinkKind.INTRA_NODE, 92.125)  # max(65.625, 92.125)


def test_named_parameters_override_the_profile() -> None:
    slow_bus = AllreduceParams(intra_node_mbps=50.0, network_mbps=1000.0, latency_s=0.0)
    assert slowest_link((2, 1), RESNET, slow_bus) == (LinkKind.INTRA_NODE, 50.0)
    # hierarchical, g = 2, k = 2: 2·(1/2)·102.2/50 + 2·(1/2)·102.2/1000 = 2.044 + 0.1022
    assert allreduce_seconds((2, 1), RESNET, slow_bus) == pytest.approx(2.1462)
    # flat, n = 3 over the bus: 2·2/3 · 102.2 / 50 = 408.8/150 = 2.725333…
    flat_bus = AllreduceParams(50.0, 1000.0, 0.0, RingKind.FLAT)
    assert allreduce_seconds((2, 1), RESNET, flat_bus) == pytest.approx(408.8 / 150)
    assert slowest_link((1, 1), RESNET, slow_bus) == (LinkKind.NETWORK, 1000.0)


@pytest.mark.parametrize(
    "kw",
    [{"intra_node_mbps": 0.0}, {"network_mbps": -1.0}, {"latency_s": math.inf}],
)
def test_bad_parameters_are_refused(kw: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        AllreduceParams(**kw)


@pytest.mark.parametrize("layout", [(), (0,), (2, -1), (True,)])
def test_bad_layouts_are_refused(layout: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="layout"):
        rate(layout, RESNET, 600.0)


def test_layout_of_a_slot_plan_skips_empty_nodes() -> None:
    plan = SlotPlan(0, Mode.DISTRIBUTED, (("a", 3), ("b", 0), ("c", 1)), ())
    assert layout_of(plan) == (3, 1)


def layouts(n_max: int) -> list[tuple[int, ...]]:
    """Every layout (a partition: per-node counts, largest first) of 1 … n_max workers."""

    def parts(n: int, top: int) -> list[tuple[int, ...]]:
        if n == 0:
            return [()]
        return [(c, *rest) for c in range(min(n, top), 0, -1) for rest in parts(n - c, c)]

    return [p for n in range(1, n_max + 1) for p in parts(n, n)]


PROFILES = [RESNET, DSSM, JobProfile(0.01, 500.0, 10.0, 20.0), JobProfile(5.0, 1.0, 1000.0, 1000.0)]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("latency", [0.0, ALPHA, 0.05, 2.0])
@pytest.mark.parametrize("ring", list(RingKind))
def test_best_rate_bounds_every_layout(profile: JobProfile, latency: float, ring: RingKind) -> None:
    params = AllreduceParams(latency_s=latency, ring=ring)
    for n_max in (1, 2, 5, 9):
        every = [rate(lay, profile, 600.0, params) for lay in layouts(n_max)]
        assert best_rate(n_max, profile, 600.0, params) >= max(every) * (1 - 1e-12)
        if latency == 0.0:  # exact then: the n workers on one node (B_intra >= B_net)
            assert best_rate(n_max, profile, 600.0, params) == pytest.approx(max(every))


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("latency", [0.0, ALPHA, 2.0])
@pytest.mark.parametrize("ring", list(RingKind))
def test_the_floors_are_below_every_layout(
    profile: JobProfile, latency: float, ring: RingKind
) -> None:
    params = AllreduceParams(latency_s=latency, ring=ring)
    for n_max in (1, 2, 6, 9):
        nu_in, nu_ex = worker_rate_floors(n_max, profile, 600.0, params)
        assert nu_ex <= nu_in
        for lay in layouts(n_max):
            floor = nu_in if len(lay) == 1 else nu_ex
            assert rate(lay, profile, 600.0, params) >= sum(lay) * floor * (1 - 1e-12)
        # the one-node floor is attained: N workers on one node
        assert rate((n_max,), profile, 600.0, params) == pytest.approx(n_max * nu_in)


def test_best_rate_can_be_one_worker() -> None:
    # α = 1 s: four workers take 0.449 + 0.500163 + 6 = 6.949 s a step: 2400/6.949 = 345
    # mini-batches per slot, below one worker's 600/0.449 = 1336.3
    slow = AllreduceParams(latency_s=1.0)
    assert best_rate(4, RESNET, 600.0, slow) == pytest.approx(600.0 / 0.449)


def test_ring_summary_names_the_slowest_link() -> None:
    summary = ring_summary((2, 2), RESNET)
    assert (summary.workers, summary.nodes, summary.link) == (4, 2, LinkKind.NETWORK)
    assert summary.describe() == (
        "ring of 4 worker(s) on 2 node(s), slowest link network 91.88 MB/s: "
        "all-reduce 1.45 s, step 1.9 s"
    )
    assert summary.to_json()["slowest_link"] == "network"
    assert "no link" in ring_summary((1,), RESNET).describe()


# --- the request ---------------------------------------------------------------------------


def allreduce_job(**kw: object) -> JobRequest:
    base: dict[str, object] = {
        "job_id": "ddp",
        "arrival_slot": 0,
        "workload": 10_000.0,
        "max_workers": 4,
        "worker": Resources(1, 4, 16384),
        "ps": Resources(),
        "profile": RESNET,
        "ps_count": 0,
        "arch": Architecture.ALLREDUCE,
    }
    return JobRequest(**{**base, **kw})  # type: ignore[arg-type]


def test_the_default_architecture_is_ps() -> None:
    job = JobRequest("j", 0, 10.0, 2, Resources(1, 1, 1), Resources(0, 1, 1), RESNET)
    assert job.arch is Architecture.PS and not job.is_allreduce
    assert job.ps_needed(4) == 1


def test_an_allreduce_job_needs_no_ps_and_any_worker_count() -> None:
    job = allreduce_job()
    assert job.ps_needed(4) == 0
    assert (job.min_distributed_workers(), job.max_distributed_workers()) == (1, 4)


def test_an_allreduce_job_arch_may_be_given_as_its_name() -> None:
    assert allreduce_job(arch="allreduce").arch is Architecture.ALLREDUCE
    with pytest.raises(ValueError, match="Architecture"):
        allreduce_job(arch="ring")


@pytest.mark.parametrize("ps_count", [None, 1])
def test_an_allreduce_job_with_a_ps_count_is_refused(ps_count: int | None) -> None:
    with pytest.raises(ValueError, match="no parameter server: ps_count must be 0"):
        allreduce_job(ps_count=ps_count)


def test_an_allreduce_job_with_a_ps_demand_is_refused() -> None:
    with pytest.raises(ValueError, match="ps demand must be 0"):
        allreduce_job(ps=Resources(0, 2, 8192))


def test_a_ps_job_with_zero_ps_is_still_refused() -> None:
    with pytest.raises(ValueError, match="ps_count must be >= 1"):
        allreduce_job(arch=Architecture.PS, ps_count=0)


def test_shortest_slots_of_an_allreduce_job_uses_its_best_rate() -> None:
    # best of 1 worker (1336.30 per slot) and 4 on one node (2527.74): ⌈10,000 / 2527.74⌉ = 4
    assert allreduce_job().shortest_slots(600.0) == 4
    assert allreduce_job(workload=2527.0).shortest_slots(600.0) == 1


def test_the_documented_crossovers_of_more_ranks() -> None:
    # more ranks are not always faster (docs/formulation.md §18.1): the smallest n on one node
    # (and on two equal nodes, two-level ring) whose rate beats one worker's, on the shipped
    # profiles
    profiles = load_profiles()

    def first(name: str, split: bool) -> int:
        p = profiles[name]
        one = rate((1,), p, 1.0)
        layouts = ((n // 2, n - n // 2) if split else (n,) for n in range(2, 100))
        return next(sum(lay) for lay in layouts if rate(lay, p, 1.0) > one)

    assert [first(m, False) for m in ("vgg-16", "seq2seq", "wlm", "resnet-50")] == [5, 6, 11, 2]
    assert [first(m, True) for m in ("vgg-16", "seq2seq", "wlm", "resnet-50")] == [10, 10, 24, 5]


def test_the_launcher_belongs_to_allreduce_jobs() -> None:
    assert allreduce_job().launch_with is Launcher.TORCHRUN
    assert allreduce_job(launcher="srun").launcher is Launcher.SRUN
    with pytest.raises(ValueError, match="a ps job has no launcher"):
        JobRequest("j", 0, 10.0, 2, Resources(1, 1, 1), Resources(0, 1, 1), RESNET,
                   launcher=Launcher.SRUN)  # fmt: skip


def test_work_per_slot_answers_for_both_architectures() -> None:
    ps = JobRequest("p", 0, 10.0, 4, Resources(1, 1, 1), Resources(0, 1, 1), RESNET)
    # ps: W × Δ/θ; θ_in = 0.449 + 2·102.2/306.5 = 1.115884…, θ_ex = 0.449 + 2·102.2/91.875
    assert ps.work_per_slot((4,), 600.0, colocated=True) == pytest.approx(2400 / 1.1158841762)
    assert ps.work_per_slot((2, 2), 600.0, colocated=False) == pytest.approx(
        2400 / (0.449 + 204.4 / 91.875)
    )
    ring = allreduce_job()
    assert ring.work_per_slot((4,), 600.0, colocated=True) == rate((4,), RESNET, 600.0)
    # two-level ring on (2, 2): t = 1·102.2/306.5 + 1·102.2/91.875 + 2·(1 + 1)·50 µs
    #   = 0.3334421 + 1.1123810 + 0.0002 = 1.4460230 s; T_step = 0.449 + 1.4460230 s
    assert ring.work_per_slot((2, 2), 600.0, colocated=False) == pytest.approx(2400 / 1.8950230)
