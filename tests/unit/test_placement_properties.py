"""Property tests: placement invariants over random clusters and job sequences.

For every policy and form: no decision exceeds a capacity in any slot (counting all
earlier reservations), every job's work is covered, the PS rules hold, nothing runs
before arrival, and identical seeds give identical decisions.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.errors import NeverFitsError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Form,
    JobProfile,
    JobRequest,
    Machine,
    Resources,
)
from slurm_mlsched.placement import PlacementParams, check_could_ever_fit, place
from slurm_mlsched.placement.params import derive_seed
from slurm_mlsched.placement.program.verify import check_decision

PROFILES = [
    JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50"),
    JobProfile(0.535, 553.4, 233.0, 427.75, name="vgg-16"),
    JobProfile(0.567, 6.0, 92.125, 65.625, name="dssm"),
]


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    n = draw(st.integers(1, 5))
    machines = tuple(
        Machine(
            f"n{i}",
            Resources(
                draw(st.sampled_from([0, 1, 2, 4, 8])),
                draw(st.sampled_from([2, 4, 8, 16])),
                draw(st.sampled_from([8192, 32768, 65536])),
            ),
        )
        for i in range(n)
    )
    return ClusterSnapshot(machines, slot_seconds=draw(st.sampled_from([60.0, 600.0])))


@st.composite
def jobs(draw: st.DrawFn, index: int) -> JobRequest:
    prof = draw(st.sampled_from(PROFILES))
    n = draw(st.integers(1, 12))
    ps_count = draw(st.one_of(st.none(), st.integers(1, 3)))
    if ps_count is not None and ps_count > n:
        ps_count = None
    slot_rate = prof.nu_ex(600.0)
    return JobRequest(
        job_id=f"j{index}",
        arrival_slot=draw(st.integers(0, 6)),
        workload=draw(st.floats(0.3, 8.0)) * slot_rate * n,
        max_workers=n,
        worker=Resources(
            draw(st.sampled_from([0, 1, 2])),
            draw(st.sampled_from([1, 2, 4])),
            draw(st.sampled_from([1024, 4096, 16384])),
        ),
        ps=Resources(0, draw(st.sampled_from([1, 2])), draw(st.sampled_from([1024, 8192]))),
        profile=prof,
        ps_count=ps_count,
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobRequest]]:
    snap = draw(clusters())
    count = draw(st.integers(1, 6))
    return snap, [draw(jobs(i)) for i in range(count)]


def run_online(
    snap: ClusterSnapshot, job_list: list[JobRequest], policy: str, params: PlacementParams
) -> list[tuple[object, list[str]]]:
    out: list[tuple[object, list[str]]] = []
    cur = snap
    for job in sorted(job_list, key=lambda j: (j.arrival_slot, j.job_id)):
        try:
            check_could_ever_fit(job, snap)
        except NeverFitsError:
            continue
        seen = cur.at_slot(job.arrival_slot)
        d = place(job, seen, policy, replace(params, seed=derive_seed(params.seed, job.job_id)))
        out.append((d.slots, check_decision(d, job, seen)))
        cur = seen.with_reservations(d.reservations(job))
    return out


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios(), st.sampled_from([Form.NON_ELASTIC, Form.ELASTIC]), st.integers(0, 2**31))
def test_yu_rr_invariants_hold(
    scn: tuple[ClusterSnapshot, list[JobRequest]], form: Form, seed: int
) -> None:
    snap, job_list = scn
    params = PlacementParams(form=form, seed=seed, trials=5)
    first = run_online(snap, job_list, "yu-rr", params)
    for _, problems in first:
        assert problems == []
    again = run_online(snap, job_list, "yu-rr", params)
    assert [s for s, _ in first] == [s for s, _ in again]


@SETTINGS
@given(scenarios(), st.integers(0, 2**31))
def test_yu_rr_invariants_hold_without_size_control(
    scn: tuple[ClusterSnapshot, list[JobRequest]], seed: int
) -> None:
    snap, job_list = scn
    params = PlacementParams(
        form=Form.ELASTIC,
        seed=seed,
        trials=3,
        fast_path=False,
        tight_links=False,
        group_identical=False,
        lp_max_blocks=3,
    )
    for _, problems in run_online(snap, job_list, "yu-rr", params):
        assert problems == []
