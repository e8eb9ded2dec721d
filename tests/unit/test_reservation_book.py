"""The replay engine's reservation book (model/reservation_book.py): each view equals the
tuple of the reservations still active, in commit order, through appends and compactions;
its rows equal a fresh conversion and the usage it keeps equals the one built from
scratch; views already cut never change; the baselines read the same arrays and segments
from a view as from the equal tuple."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, Reservation, Resources
from slurm_mlsched.model.reservation_book import (
    ReservationBook,
    ReservationView,
    UsageAt,
    reservation_rows,
)
from slurm_mlsched.placement.baselines.oasis_search import segments
from slurm_mlsched.placement.baselines.reserved import Reserved
from slurm_mlsched.placement.baselines.timeline import Timeline
from tests.conftest import make_cluster

CLUSTER = make_cluster(3, gpus=8, cpus=32)
INDEX = CLUSTER.machine_index()


def job_reservations(rng: np.random.Generator, job: int, slot: int) -> tuple[Reservation, ...]:
    return tuple(
        Reservation(
            f"node{int(rng.integers(1, 4))}",
            slot + int(rng.integers(0, 4)),
            slot + int(rng.integers(4, 12)),
            Resources(float(rng.integers(0, 3)), float(rng.integers(0, 5)), 1024.0),
            f"j{job}",
        )
        for _ in range(int(rng.integers(0, 4)))
    )


def run(seed: int, jobs: int) -> list[tuple[int, ReservationView, tuple[Reservation, ...]]]:
    """A replay-shaped walk: the book and the dict of active jobs the engine used to keep,
    side by side; every view with the tuple it must equal."""
    rng = np.random.default_rng(seed)
    book = ReservationBook(CLUSTER.machines)
    active: dict[int, tuple[Reservation, ...]] = {}
    leaves: dict[int, int] = {}
    out = []
    slot = 0
    for job in range(jobs):
        slot += int(rng.integers(0, 3))
        for k in [k for k, leave in leaves.items() if leave <= slot]:
            del active[k], leaves[k]
        view = book.view(slot)
        out.append((slot, view, tuple(r for rs in active.values() for r in rs)))
        held = job_reservations(rng, job, slot)
        if held:
            leave = max(max(r.end_slot for r in held), slot + 1)
            book.add(held, leave)
            active[job], leaves[job] = held, leave
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 80))
def test_every_view_equals_the_active_tuple_and_stays_so(seed: int, jobs: int) -> None:
    views = run(seed, jobs)
    for _, view, expected in views:  # checked after the whole walk: old views unchanged
        assert view == expected and expected == view
        assert len(view) == len(expected)
        assert list(view) == list(expected)
        assert hash(view) == hash(expected)
        rows = view.rows(CLUSTER.machines)
        assert rows is not None
        assert np.array_equal(rows, reservation_rows(INDEX, expected))


def levels(u: UsageAt, horizon: int) -> np.ndarray:
    """Reserved per slot t0 … t0 + horizon − 1, machine and resource."""
    out = np.repeat(u.now[None], horizon, axis=0)
    for t, h, d in zip(u.times.tolist(), u.machine.tolist(), u.delta, strict=True):
        assert t > u.t0
        out[t - u.t0 :, h] += d
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 80))
def test_the_kept_usage_equals_the_usage_built_from_scratch(seed: int, jobs: int) -> None:
    for slot, view, expected in run(seed, jobs):
        kept = view.usage_at(CLUSTER.machines, slot)
        assert kept is not None and kept.t0 == slot
        fresh = UsageAt.from_rows(reservation_rows(INDEX, expected), 3, slot)
        assert np.array_equal(kept.now, fresh.now)
        assert kept.times.tolist() == sorted(kept.times.tolist())
        assert np.array_equal(levels(kept, 20), levels(fresh, 20))
        assert kept.free_after == fresh.free_after
        for stop in (slot + 1, slot + 3, slot + 9, None):
            a = segments(Reserved.of(replace(CLUSTER, reservations=view), slot), slot, stop, 64)
            b = segments(Reserved.of(replace(CLUSTER, reservations=expected), slot), slot, stop, 64)
            for x, y in zip(a, b, strict=True):
                assert np.array_equal(x, y)


def test_the_usage_is_kept_only_for_its_slot_and_whole_numbers() -> None:
    _, view, _ = run(2, 30)[-1]
    slot = run(2, 30)[-1][0]
    assert view.usage_at(CLUSTER.machines, slot + 1) is None
    assert view.usage_at(tuple(reversed(CLUSTER.machines)), slot) is None
    book = ReservationBook(CLUSTER.machines)
    book.add((Reservation("node1", 0, 4, Resources(1, 0.5, 1024)),), 4)
    half = book.view(0)
    assert half.usage_at(CLUSTER.machines, 0) is None  # 0.5 CPU: sums would need rounding
    rsv = Reserved.of(replace(CLUSTER, reservations=half), 0)
    assert not rsv.integral and rsv.usage.now[0].tolist() == [1, 0.5, 1024]


def test_the_book_compacts_and_keeps_old_views() -> None:
    rng = np.random.default_rng(3)
    book = ReservationBook(CLUSTER.machines)
    first = job_reservations(rng, 0, 0) or (Reservation("node1", 0, 2, Resources(1, 1, 1)),)
    book.add(first, 2)
    early = book.view(1)
    for slot in range(2, 200):
        book.add((Reservation("node2", slot, slot + 1, Resources(1, 1, 1), f"j{slot}"),), slot + 1)
        book.view(slot)
    assert len(book) < 10  # left jobs do not pile up
    assert early == first and book.view(199) == book.view(199)
    assert book.view(500) == ()


def test_a_view_is_a_sequence_like_the_tuple() -> None:
    views = run(7, 40)
    slot, view, expected = max(views, key=lambda v: len(v[2]))
    assert len(expected) >= 3
    assert view[0] == expected[0] and view[-1] == expected[-1]
    assert view[1:3] == expected[1:3]
    extra = (Reservation("node1", 0, 1, Resources(1, 0, 0)),)
    assert view + extra == expected + extra
    snap = replace(CLUSTER, reservations=view, now_slot=slot)
    assert snap == replace(CLUSTER, reservations=expected, now_slot=slot)
    assert snap.with_reservations(extra).reservations == expected + extra
    assert "ReservationView" in repr(view)


def test_timeline_reads_a_view_as_the_equal_tuple() -> None:
    for slot, view, expected in run(11, 60)[::7]:
        a = Timeline.of(replace(CLUSTER, reservations=view), slot)
        b = Timeline.of(replace(CLUSTER, reservations=expected), slot)
        for name in ("machine", "start", "end", "usage"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_rows_need_the_books_machine_tuple() -> None:
    _, view, expected = run(5, 30)[-1]
    mirrored = tuple(reversed(CLUSTER.machines))
    assert view.rows(mirrored) is None  # Timeline then converts the objects
    other = ClusterSnapshot(mirrored, view)
    tl = Timeline.of(other, 0)
    index = other.machine_index()
    keep = reservation_rows(index, expected)
    keep = keep[keep[:, 2] > keep[:, 1]]
    assert tl.machine.tolist() == keep[:, 0].astype(int).tolist()


def test_an_unknown_machine_is_named() -> None:
    book = ReservationBook(CLUSTER.machines)
    with pytest.raises(ValueError, match="unknown machine 'nope'"):
        book.add((Reservation("nope", 0, 1, Resources(1, 1, 1)),), 1)
    snap = CLUSTER.with_reservations((Reservation("nope", 0, 1, Resources(1, 1, 1)),))
    with pytest.raises(ValueError, match="unknown machine 'nope'"):
        Timeline.of(snap, 0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(5, 80), most=st.integers(1, 6))
def test_merged_blocks_hold_the_most_of_their_segments(seed: int, jobs: int, most: int) -> None:
    """Blocks come from the changes alone; they equal the maximum over the dense segments."""
    slot, view, _ = run(seed, jobs)[-1]
    rsv = Reserved.of(replace(CLUSTER, reservations=view), slot)
    for stop in (None, slot + 7):
        if stop is not None and stop >= rsv.free_after:
            continue
        starts, lengths, used = segments(rsv, slot, stop, 10**6)  # never merged
        body = len(starts) - (stop is None)
        b_starts, b_lengths, b_used = segments(rsv, slot, stop, most)
        if body <= most:
            assert np.array_equal(b_used, used)
            continue
        cuts = np.searchsorted(starts, b_starts)
        assert np.array_equal(starts[cuts], b_starts)
        assert b_lengths.sum() == lengths.sum()
        assert np.array_equal(b_used, np.maximum.reduceat(used, cuts, axis=0))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 60))
def test_a_withdrawn_job_leaves_views_and_usage_from_its_slot(seed: int, jobs: int) -> None:
    # preemption (sim/engine.py): a running job leaves the book at the slot it is paused;
    # every later view equals the active tuple without it, rows and usage alike
    rng = np.random.default_rng(seed)
    book = ReservationBook(CLUSTER.machines)
    active: dict[int, tuple[Reservation, ...]] = {}
    leaves: dict[int, int] = {}
    slot = 0
    for job in range(jobs):
        slot += int(rng.integers(0, 3))
        for k in [k for k, leave in leaves.items() if leave <= slot]:
            del active[k], leaves[k]
        view = book.view(slot)
        expected = tuple(r for rs in active.values() for r in rs)
        assert view == expected
        kept = view.usage_at(CLUSTER.machines, slot)
        fresh = UsageAt.from_rows(reservation_rows(INDEX, expected), 3, slot)
        assert kept is not None and np.array_equal(levels(kept, 20), levels(fresh, 20))
        if active and rng.random() < 0.3:
            k = sorted(active)[int(rng.integers(0, len(active)))]
            assert book.withdraw(f"j{k}", slot) == len(active[k])
            del active[k], leaves[k]
            assert book.view(slot) == tuple(r for rs in active.values() for r in rs)
        held = job_reservations(rng, job, slot)
        if held:
            leave = max(max(r.end_slot for r in held), slot + 1)
            book.add(held, leave)
            active[job], leaves[job] = held, leave
    assert book.withdraw("nobody", slot) == 0
