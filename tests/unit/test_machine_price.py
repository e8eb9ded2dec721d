"""The LP's tie-break price of a machine's resources (``PlacementParams.machine_price``;
docs/formulation.md §4): ``fit`` packs a job into the fullest machines that hold it and
keeps whole machines whole, ``load`` spreads it over the least loaded ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurm_mlsched.model import ClusterSnapshot, JobProfile, Reservation, Resources
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.placement.program.job_lp import JobShape
from slurm_mlsched.placement.program.residual import residual_from
from slurm_mlsched.placement.yu_rr.arrival import _top_k
from tests.conftest import make_cluster, make_job

DELTA = 600.0
# a small model: 6 distributed workers train faster than 4 co-located ones
PROFILE = JobProfile(0.1, 1.0, 91.875, 306.5)


def _cluster() -> ClusterSnapshot:
    """Three 4-GPU nodes; node1 half busy for the whole horizon."""
    busy = Reservation("node1", 0, 1000, Resources(2, 2, 8192), "busy")
    return replace(make_cluster(3, 4, 16), reservations=(busy,), slot_seconds=DELTA)


def _gpus_by_node(price: str, seed: int) -> dict[str, int]:
    job = make_job("j", workers=6, workload=PROFILE.nu_ex(DELTA) * 6 * 10, profile=PROFILE)
    params = PlacementParams(machine_price=price, fast_path=False, seed=seed)
    d = place(job, _cluster(), "yu-rr", params)
    assert d.solver == "highs-lp" and len(d.slots) == 1
    return dict(d.slots[0].workers)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_fills_the_hole_and_keeps_a_node_whole(seed: int) -> None:
    used = _gpus_by_node("fit", seed)
    assert sum(used.values()) == 6
    assert used.get("node1") == 2  # the half-busy node's two free GPUs first
    assert sum(1 for n in ("node2", "node3") if used.get(n, 0) == 0) == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_load_spreads_over_the_idle_nodes(seed: int) -> None:
    used = _gpus_by_node("load", seed)
    assert sum(used.values()) == 6
    assert used.get("node1", 0) == 0  # the busier node is dearer
    assert used.get("node2", 0) > 0 and used.get("node3", 0) > 0


def test_the_default_is_fit() -> None:
    assert PlacementParams().machine_price == "fit"


def test_co_location_candidates_of_equal_room_go_to_the_fullest_first() -> None:
    """Two workers fit on each of three nodes for the whole window: with ``fit`` the node
    with least room left comes first, with ``load`` the lower index."""
    busy = (
        Reservation("node2", 0, 1000, Resources(2, 2, 8192), "a"),
        Reservation("node3", 0, 1000, Resources(1, 1, 4096), "b"),
    )
    cluster = replace(make_cluster(3, 4, 16), reservations=busy, slot_seconds=DELTA)
    job = make_job("j", workers=2, workload=PROFILE.nu_in(DELTA) * 2 * 5, profile=PROFILE)
    shape = JobShape.of(job, DELTA)
    res = residual_from(cluster, 0)
    assert _top_k(res, shape, 0, 20, 3, "fit") == [1, 2, 0]
    assert _top_k(res, shape, 0, 20, 3, "load") == [0, 1, 2]
