"""The timeline's row book (placement/baselines/timeline.py): reservations found by identity
among the last call's give the same arrays as a fresh conversion, call after call and
across machine tuples."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_mlsched.model import ClusterSnapshot, Reservation, Resources
from slurm_mlsched.placement.baselines.timeline import Timeline, _convert
from tests.conftest import make_cluster


def reservations(n: int, seed: int) -> tuple[Reservation, ...]:
    rng = np.random.default_rng(seed)
    return tuple(
        Reservation(
            f"node{int(rng.integers(1, 4))}",
            int(s),
            int(s + rng.integers(1, 9)),
            Resources(float(rng.integers(0, 3)), float(rng.integers(0, 5)), 1024.0),
            f"r{k}",
        )
        for k, s in enumerate(rng.integers(0, 20, size=n))
    )


def fresh(snap: ClusterSnapshot, t0: int) -> np.ndarray:
    index = snap.machine_index()
    return _convert(index, snap.reservations)


def same(a: Timeline, rows: np.ndarray, t0: int) -> None:
    keep = (rows[:, 2] > t0) & (rows[:, 2] > rows[:, 1])
    assert a.machine.tolist() == rows[keep, 0].astype(int).tolist()
    assert a.end.tolist() == rows[keep, 2].astype(int).tolist()
    assert np.array_equal(a.usage, rows[keep, 3:])


def test_cached_rows_equal_fresh_ones() -> None:
    base = make_cluster(3, gpus=8, cpus=32)
    book = reservations(30, 1)
    for step in range(8):  # like a replay: some end, some are added, most stay
        snap = base.with_reservations(book)
        same(Timeline.of(snap, step), fresh(snap, step), step)
        book = book[3:] + reservations(4, 10 + step) + book[:1]  # book[:1] twice: a repeat
    same(Timeline.of(base, 0), fresh(base, 0), 0)  # no reservation at all


def test_the_same_reservation_under_another_machine_order() -> None:
    rs = reservations(10, 4)
    a = make_cluster(3, gpus=8, cpus=32).with_reservations(rs)
    b = ClusterSnapshot(tuple(reversed(a.machines)), rs)
    tb = Timeline.of(b, 0)
    same(tb, fresh(b, 0), 0)
    ta = Timeline.of(a, 0)
    assert (ta.machine + tb.machine).tolist() == [2] * len(rs)  # mirrored indices


def test_an_unknown_machine_is_named() -> None:
    snap = make_cluster(1).with_reservations((Reservation("nope", 0, 1, Resources(1, 1, 1)),))
    with pytest.raises(ValueError, match="unknown machine 'nope'"):
        Timeline.of(snap, 0)
