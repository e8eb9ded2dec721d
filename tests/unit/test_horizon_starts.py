"""default_horizon's greedy tries only the slots where room grows; a slot-by-slot scan
finds the same earliest finish (random small clusters with reservations)."""

from __future__ import annotations

import random

from slurm_mlsched.model import Reservation, Resources
from slurm_mlsched.placement.program.integer_program import _finish, _Room
from tests.conftest import make_cluster, make_job


def scan(room: _Room, job, start: int):  # type: ignore[no-untyped-def]
    best = None
    s = start
    while best is None or s + 1 < _finish(best):
        shape = room.fastest(job, s)
        if shape is not None and (best is None or s + shape.slots < _finish(best)):
            best = (s, shape)
        if s >= room.free_from:
            break
        s += 1
    return best


def test_jumping_to_growth_slots_matches_the_slot_by_slot_scan() -> None:
    rng = random.Random(5)
    for case in range(40):
        snap = make_cluster(3, gpus=4)
        res = []
        for k in range(rng.randint(1, 12)):
            a = rng.randint(0, 30)
            res.append(
                Reservation(
                    f"node{rng.randint(1, 3)}", a, a + rng.randint(1, 25),
                    Resources(rng.choice([1, 2, 4]), 1, 1024), f"r{k}",
                )
            )  # fmt: skip
        snap = snap.with_reservations(tuple(res))
        job = make_job("j", workers=rng.randint(1, 6), workload=rng.uniform(50, 3000))
        room = _Room(snap)
        got = room.earliest(job, 0)
        want = scan(room, job, 0)
        assert want is not None and _finish(got) == _finish(want), case
