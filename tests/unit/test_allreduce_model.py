"""The ring all-reduce time model (slurm_mlsched/model/allreduce.py) against values computed
by hand, and the allreduce job request's rules (issue 31)."""

from __future__ import annotations

import math

import pytest

from slurm_mlsched.model import (
    AllreduceParams,
    Architecture,
    JobProfile,
    JobRequest,
    LinkKind,
    Mode,
    Resources,
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


def test_two_nodes_with_two_ranks_each_are_bound_by_the_network() -> None:
    # n = 4, k = 2: links network (91.875) and intra-node (306.5); B_min = 91.875
    # t = 153.3 / 91.875 + 0.0003 = 1.668571… + 0.0003 (91.875 = 735/8: 1226.4/735)
    assert slowest_link((2, 2), RESNET) == (LinkKind.NETWORK, 91.875)
    assert allreduce_seconds((2, 2), RESNET) == pytest.approx(1226.4 / 735 + 0.0003)
    assert step_seconds((2, 2), RESNET) == pytest.approx(0.449 + 1.6688714286)


def test_one_rank_per_node_uses_only_the_network() -> None:
    # n = 3, k = 3: t = 2·2/3 · 102.2/91.875 + 2·2·α = 3270.4/2205 + 0.0002 = 1.483374…
    assert slowest_link((1, 1, 1), RESNET) == (LinkKind.NETWORK, 91.875)
    assert allreduce_seconds((1, 1, 1), RESNET) == pytest.approx(3270.4 / 2205 + 0.0002)


def test_unequal_counts_cost_what_the_slowest_link_says() -> None:
    # (3, 1): n = 4 over the network: the same as (2, 2) under the flat ring
    assert allreduce_seconds((3, 1), RESNET) == pytest.approx(allreduce_seconds((2, 2), RESNET))


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
    # n = 3: 2·2/3 · 102.2 / 50 = 408.8/150 = 2.725333…
    assert allreduce_seconds((2, 1), RESNET, slow_bus) == pytest.approx(408.8 / 150)
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


@pytest.mark.parametrize(
    "profile",
    [RESNET, DSSM, JobProfile(0.01, 500.0, 10.0, 20.0), JobProfile(5.0, 1.0, 1000.0, 1000.0)],
)
@pytest.mark.parametrize("latency", [0.0, ALPHA, 0.05, 2.0])
def test_best_rate_is_the_best_of_every_worker_count(profile: JobProfile, latency: float) -> None:
    params = AllreduceParams(latency_s=latency)
    fastest = AllreduceParams(
        intra_node_mbps=max(profile.effective_bw_in, profile.bw_ex_mbps), latency_s=latency
    )
    for n_max in (1, 2, 7, 40):
        every = [rate((n,), profile, 600.0, fastest) for n in range(1, n_max + 1)]
        assert best_rate(n_max, profile, 600.0, params) == pytest.approx(max(every))


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
        "all-reduce 1.67 s, step 2.12 s"
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
