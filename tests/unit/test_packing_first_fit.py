"""packing.first_fit against the plain loop over machines it replaced (same counts, same room)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_mlsched.placement.program.packing import first_fit, fit_counts


def loop_first_fit(
    room: np.ndarray, demand: np.ndarray, count: int, order: np.ndarray
) -> np.ndarray:
    placed = np.zeros(room.shape[0], dtype=np.int64)
    left = count
    if left <= 0:
        return placed
    for h, f in zip(order, fit_counts(room[order], demand), strict=True):
        if left == 0:
            break
        n = int(min(f, left))
        if n > 0:
            placed[h] += n
            room[h] -= demand * n
            left -= n
    return placed


@settings(max_examples=300, deadline=None)
@given(
    rooms=st.lists(st.tuples(*(st.integers(0, 16) for _ in range(3))), min_size=1, max_size=12),
    demand=st.tuples(*(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]) for _ in range(3))),
    count=st.integers(-1, 40),
    seed=st.integers(0, 2**16),
)
def test_first_fit_equals_the_loop(
    rooms: list[tuple[int, int, int]], demand: tuple[float, float, float], count: int, seed: int
) -> None:
    room = np.array(rooms, dtype=float)
    dem = np.array(demand)
    order = np.random.default_rng(seed).permutation(len(rooms)).astype(np.int64)
    a, b = room.copy(), room.copy()
    got = first_fit(a, dem, count, order)
    want = loop_first_fit(b, dem, count, order)
    assert got.tolist() == want.tolist()
    assert np.allclose(a, b)
    assert int(got.sum()) <= max(count, 0)


def test_first_fit_fills_in_order_and_stops_at_count() -> None:
    room = np.array([[1.0, 8, 8], [4.0, 8, 8], [4.0, 8, 8]])
    got = first_fit(room, np.array([1.0, 1, 1]), 6, np.array([2, 0, 1]))
    assert got.tolist() == [1, 1, 4]
    assert room[:, 0].tolist() == [0.0, 3.0, 0.0]
