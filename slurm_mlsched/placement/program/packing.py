"""Whole-task packing on residual room matrices (H, 3) (docs/formulation.md §7). Pure numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

EPS = 1e-9


def fit_counts(room: FloatArray, demand: FloatArray) -> IntArray:
    """How many tasks of ``demand`` fit in each row of ``room`` (H, 3) → (H,).

    A demand of zero in every resource fits without bound; it is capped at 10**9.
    """
    mask = demand > 0
    if not mask.any():
        return np.full(room.shape[0], 10**9, dtype=np.int64)
    q = np.floor(np.maximum(room[:, mask], 0.0) / demand[mask] + EPS)
    out: IntArray = np.minimum(q.min(axis=1), 10**9).astype(np.int64)
    return out


def first_fit(room: FloatArray, demand: FloatArray, count: int, order: IntArray) -> IntArray:
    """Place ``count`` tasks first-fit over machines in ``order``; updates ``room`` in place.

    Returns the per-machine counts placed (H,); fewer than ``count`` if room runs out.
    """
    placed = np.zeros(room.shape[0], dtype=np.int64)
    if count <= 0:
        return placed
    fits = np.maximum(fit_counts(room[order], demand), 0)
    # Machine i in ``order`` takes min(f_i, what is left after the ones before it); the ones
    # before it took min(count, f_0 + … + f_{i-1}) together, so it takes the difference of
    # two capped prefix sums (the same counts as the loop over machines, without the loop).
    upto = np.minimum(np.cumsum(fits), count)
    took = upto.copy()
    took[1:] -= upto[:-1]
    placed[order] += took
    room[order] -= took[:, None] * demand[None, :]
    return placed


def best_fit(room: FloatArray, need: FloatArray, capacity: FloatArray) -> int | None:
    """The machine whose ``room`` (H, 3) holds ``need`` (3,) with the least normalized room
    left (Σ_r (room − need) / capacity), lowest index on ties; None if none holds it."""
    ok = (room >= need - 1e-9).all(axis=1)
    if not ok.any():
        return None
    cap = np.where(capacity > 0, capacity, 1.0)
    slack = ((room - need) / cap).sum(axis=1)
    slack[~ok] = np.inf
    return int(np.argmin(slack))


def overloaded(room: FloatArray) -> npt.NDArray[np.bool_]:
    """Machines whose room went negative in some resource."""
    out: npt.NDArray[np.bool_] = np.asarray((room < -1e-7).any(axis=1))
    return out


def unbiased_round(x: FloatArray, rng: np.random.Generator) -> IntArray:
    """⌊x⌋ + Bernoulli(x − ⌊x⌋), elementwise: E[result] = x."""
    x = np.maximum(x, 0.0)
    base = np.floor(x)
    out: IntArray = (base + (rng.random(x.shape) < (x - base))).astype(np.int64)
    return out


def fill_distributed(
    room: FloatArray,
    alpha: FloatArray,
    beta: FloatArray,
    ps_needed: Callable[[int], int],
    wanted: int,
    min_workers: int,
    order: IntArray,
    workers: IntArray | None = None,
    ps: IntArray | None = None,
) -> tuple[IntArray, IntArray]:
    """Add up to ``wanted`` distributed workers one at a time, each with the PSs the rule
    then needs (PSs first-fit, then the worker first-fit), on top of ``workers``/``ps``.

    Updates ``room`` in place. If fewer than ``min_workers`` workers result (a fixed PS
    count needs at least as many workers), everything added is taken back.
    """
    h = room.shape[0]
    w = np.zeros(h, dtype=np.int64) if workers is None else workers.copy()
    s = np.zeros(h, dtype=np.int64) if ps is None else ps.copy()
    start = room.copy()
    for _ in range(max(0, wanted)):
        trial = room.copy()
        extra = max(ps_needed(int(w.sum()) + 1) - int(s.sum()), 0)
        s_add = first_fit(trial, beta, extra, order)
        if int(s_add.sum()) < extra:
            break
        w_add = first_fit(trial, alpha, 1, order)
        if int(w_add.sum()) < 1:
            break
        w += w_add
        s += s_add
        room[:] = trial
    if int(w.sum()) < min_workers:
        room[:] = start
        return (
            np.zeros(h, dtype=np.int64) if workers is None else workers.copy(),
            np.zeros(h, dtype=np.int64) if ps is None else ps.copy(),
        )
    return w, s


def shed_and_replace(
    room: FloatArray,
    workers: IntArray,
    ps: IntArray,
    alpha: FloatArray,
    beta: FloatArray,
    order: IntArray,
) -> None:
    """Repair of a distributed placement over capacity, in place: on every overloaded
    machine drop workers, then PSs, until it fits; then re-place the dropped workers
    first-fit wherever there is room (the PS rule is enforced by the caller)."""
    removed = 0
    for h in (int(x) for x in np.flatnonzero(overloaded(room))):
        while (room[h] < -1e-7).any() and workers[h] > 0:
            workers[h] -= 1
            room[h] += alpha
            removed += 1
        while (room[h] < -1e-7).any() and ps[h] > 0:
            ps[h] -= 1
            room[h] += beta
    workers += first_fit(room, alpha, removed, order)
