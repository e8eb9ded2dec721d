"""The online loop's order: arrival slot, then shortest first among simultaneous jobs."""

from __future__ import annotations

import pytest

from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.online import arrival_order, place_online
from slurm_mlsched.placement.verify import check_decision
from tests.conftest import RESNET, make_cluster, make_job

NU_IN = RESNET.nu_in(600.0)


def test_simultaneous_arrivals_are_decided_shortest_first() -> None:
    long_ = make_job("a-long", workers=4, workload=4 * NU_IN * 6)
    short = make_job("b-short", workers=4, workload=4 * NU_IN * 1)
    late = make_job("c-late", workers=1, workload=NU_IN, arrival=1)
    order = arrival_order([late, long_, short], 600.0)
    assert [j.job_id for j in order] == ["b-short", "a-long", "c-late"]
    assert [j.job_id for j in arrival_order([late, long_, short], 600.0, "id")] == [
        "a-long",
        "b-short",
        "c-late",
    ]
    with pytest.raises(ValueError, match="tie order"):
        arrival_order([long_], 600.0, "random")


def test_spt_lowers_total_completion_on_one_machine() -> None:
    # one 4-GPU machine, two simultaneous 4-worker jobs of 6 and 1 slots
    snap = make_cluster(1)
    jobs = [
        make_job("a-long", workers=4, workload=4 * NU_IN * 6),
        make_job("b-short", workers=4, workload=4 * NU_IN * 1),
    ]
    spt, _ = place_online(jobs, snap, "yu-rr", PlacementParams())
    by_id, _ = place_online(jobs, snap, "yu-rr", PlacementParams(), ties="id")
    assert sum(d.completion_slots for d in spt) == 1 + 7
    assert sum(d.completion_slots for d in by_id) == 6 + 7
    cur = snap
    for d, job in zip(spt, sorted(jobs, key=lambda j: j.job_id)[::-1], strict=True):
        assert check_decision(d, job, cur) == []
        cur = cur.with_reservations(d.reservations(job))
