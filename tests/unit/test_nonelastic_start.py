"""The non-elastic start search finds the first hole however many reservations start and
end before it (regression: it used to look at the first 32 change slots only)."""

from __future__ import annotations

from slurm_mlsched.model import Reservation, Resources
from slurm_mlsched.placement import PlacementParams, place
from tests.conftest import make_cluster, make_job


def test_a_hole_after_many_changes_is_found() -> None:
    snap = make_cluster(2, gpus=4)
    full = Resources(4, 0, 0)
    res = [Reservation("node1", 0, 200, full, "long0"), Reservation("node2", 0, 60, full, "short1")]
    # 80 small reservations starting and ending on node1's CPUs: change slots, no GPU room
    res += [Reservation("node1", t, t + 1, Resources(0, 1, 0), f"c{t}") for t in range(1, 81)]
    snap = snap.with_reservations(tuple(res))
    job = make_job("one", workers=1, workload=10.0)
    d = place(job, snap, "yu-rr", PlacementParams(max_start_candidates=4))
    assert d.start_slot == 60  # node2's GPUs free up at 60, long before node1's at 200
