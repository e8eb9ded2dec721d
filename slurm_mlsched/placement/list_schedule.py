"""List scheduling at the requested width: the estimate late binding compares futures with.

:func:`earliest_requested` puts one job at its earliest start (not before its arrival)
with its requested width — all N workers and one PS co-located on the first machine that
holds them for the whole co-located run, else N distributed workers and the PSs they need
laid out first fit — on a residual, and returns its end and the room left.
:func:`list_schedule` does that for several jobs in a given order (each sees the ones
before it). Used by the joint program's trial score (the jobs a trial leaves waiting) and
by the look-ahead of a narrow start (:mod:`.lookahead`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..model import JobRequest
from .arrival import Arrival
from .job_lp import FloatArray, JobShape
from .nonelastic import Shape, end_slot, normalize
from .packing import first_fit, fit_counts
from .params import PlacementParams
from .residual import Residual


def usage(arr: Arrival, sh: Shape) -> FloatArray:
    """What ``sh`` holds on every machine: (H, 3)."""
    out: FloatArray = sh.w[:, None] * arr.shape.alpha + sh.s[:, None] * arr.shape.beta
    return out


def earliest_requested(arr: Arrival, res: Residual) -> tuple[int, Residual, Shape | None]:
    """The job at its earliest start ≥ ``arr.a`` with its requested width on ``res``: its
    end, the room left and the shape (None when the width never fits at once: then the
    most workers one machine holds, on the empty cluster, gives the end)."""
    shape, job = arr.shape, arr.job
    h_count = res.n_machines
    order = np.arange(h_count, dtype=np.int64)
    need_colo = shape.alpha * shape.n_max + shape.beta
    w_ex = shape.n_dist_max
    d_ex = math.ceil(shape.workload / (w_ex * shape.nu_ex) - 1e-9) if w_ex else 0
    for sigma in (arr.a, *(t for t in res.increase_slots() if t > arr.a)):
        mins = res.window_min(sigma, sigma + arr.d_min)
        ok = np.flatnonzero((mins >= need_colo - 1e-9).all(axis=1))
        if len(ok):
            h = int(ok[0])
            w = np.zeros(h_count, dtype=np.int64)
            s = np.zeros(h_count, dtype=np.int64)
            w[h], s[h] = shape.n_max, 1
            sh = Shape(sigma, h, w, s)
        elif w_ex >= shape.n_dist_min and d_ex:
            room = res.window_min(sigma, sigma + d_ex).copy()
            if (room.sum(axis=0) < shape.alpha * w_ex - 1e-9).any():
                continue
            n_ps = job.ps_needed(w_ex)
            s = first_fit(room, shape.beta, n_ps, order)
            w = first_fit(room, shape.alpha, w_ex, order)
            if int(w.sum()) != w_ex or int(s.sum()) != n_ps:
                continue
            sh = Shape(sigma, -1, w, s)
            normalize(sh)
        else:
            continue
        end = end_slot(arr, sh)
        return end, res.minus(usage(arr, sh), sigma, end + 1), sh
    sigma = max(res.free_after, arr.a)
    fit = int(min(fit_counts(res.capacity - shape.beta, shape.alpha).max(), shape.n_max))
    rate = max(fit, 1) * shape.nu_in
    return sigma + math.ceil(shape.workload / rate - 1e-9) - 1, res, None


@dataclass(frozen=True)
class Listed:
    """One job of a list schedule: its end slot and its term end − arrival + 1."""

    job_id: str
    end: int
    term: int


def arrival_of(
    job: JobRequest, slot_seconds: float, res: Residual, params: PlacementParams, a: int
) -> Arrival:
    """An :class:`Arrival` of ``job`` decided from slot ``a`` (no co-location candidates:
    list scheduling needs none)."""
    shape = JobShape.of(job, slot_seconds)
    return Arrival(job, shape, res, a, job.shortest_slots(slot_seconds), (), (), params)


def list_schedule(arrs: Sequence[Arrival], res: Residual) -> tuple[tuple[Listed, ...], Residual]:
    """``arrs`` in the given order, each at :func:`earliest_requested` on what the ones
    before it left; the terms are counted from each job's own ``a``."""
    out: list[Listed] = []
    for arr in arrs:
        end, res, _ = earliest_requested(replace(arr, res=res), res)
        out.append(Listed(arr.job.job_id, end, end - arr.a + 1))
    return tuple(out), res
