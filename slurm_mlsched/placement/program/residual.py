"""Residual capacity C̃[h][r][t] = C[h][r] − reserved[h][r][t] (docs/formulation.md §3).

Reservations are intervals, so residual capacity is piecewise constant in t: it is kept
as segments (the slots where some reservation starts or ends), which keeps memory and
time independent of how long the reservations are. From ``free_after`` on, no
reservation holds anything and the residual equals the capacity.

Also groups machines that are interchangeable (same capacity, same residual in every
segment, same GPU type): the LP gives such a group one set of variables (size control, §4).
:meth:`Residual.for_job` is the residual a job that names GPU types sees.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, JobRequest
from .eligibility import GPU, allowed_by_types, any_typed, masked

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Residual:
    """Residual capacity of every machine from slot ``t0`` on, as segments.

    ``seg_starts`` (S,) are absolute slots, the first is ``t0``; segment i covers
    [seg_starts[i], seg_starts[i+1]) and the last one extends forever (it is the empty
    cluster when ``free_after`` > t0). ``seg_res`` has shape (H, 3, S).
    """

    names: tuple[str, ...]
    capacity: FloatArray  # (H, 3)
    t0: int
    seg_starts: IntArray
    seg_res: FloatArray
    touched: npt.NDArray[np.bool_]
    free_after: int
    gpu_types: tuple[str | None, ...] = ()  # per machine (empty: none typed)

    @property
    def n_machines(self) -> int:
        return len(self.names)

    def change_slots(self) -> tuple[int, ...]:
        """Slots after t0 where some machine's residual changes."""
        return tuple(int(s) for s in self.seg_starts[1:])

    def increase_slots(self) -> tuple[int, ...]:
        """Slots after t0 where some machine's residual grows in some resource (a
        reservation ends there): the only slots where a start can become possible.
        Computed once per residual (the arrays are never changed in place: every change
        is a new residual, :meth:`minus`)."""
        got: tuple[int, ...] | None = self.__dict__.get("_increase_slots")
        if got is None:
            if self.seg_res.shape[2] < 2:
                got = ()
            else:
                grows = (self.seg_res[:, :, 1:] > self.seg_res[:, :, :-1] + 1e-9).any(axis=(0, 1))
                got = tuple(int(s) for s in self.seg_starts[1:][grows])
            object.__setattr__(self, "_increase_slots", got)  # a cache, not a field
        return got

    def segment_of(self, slot: int) -> int:
        return int(np.searchsorted(self.seg_starts, slot, side="right")) - 1

    def at(self, slot: int) -> FloatArray:
        """Residual of every machine in one slot: (H, 3)."""
        if slot < self.t0:
            raise IndexError(f"slot {slot} before the window start {self.t0}")
        out: FloatArray = self.seg_res[:, :, self.segment_of(slot)]
        return out

    def window_min(self, start: int, stop: int, rows: IntArray | None = None) -> FloatArray:
        """Minimum residual of each machine over slots [start, stop): (H, 3); of the
        machines ``rows`` only, in that order, when given: (len(rows), 3)."""
        if stop <= start or start < self.t0:
            raise IndexError(f"bad slot window [{start}, {stop}) from t0={self.t0}")
        lo = self.segment_of(start)
        hi = self.segment_of(stop - 1)
        seg = self.seg_res if rows is None else self.seg_res[rows]
        out: FloatArray = seg[:, :, lo : hi + 1].min(axis=2)
        return out

    def minus(self, usage: FloatArray, start: int, stop: int) -> Residual:
        """A new residual with ``usage`` (H, 3) taken over slots [start, stop) (start ≥ t0):
        the room left once a job with that usage runs there."""
        if stop <= start:
            return self
        points = np.unique(np.r_[self.seg_starts, [start, stop]])
        idx = np.searchsorted(self.seg_starts, points, side="right") - 1
        seg = self.seg_res[:, :, idx].copy()
        inside = (points >= start) & (points < stop)
        seg[:, :, inside] -= usage[:, :, None]
        np.maximum(seg, 0.0, out=seg)
        touched = self.touched | (usage > 0).any(axis=1)
        return Residual(
            self.names,
            self.capacity,
            self.t0,
            points.astype(np.int64),
            seg,
            touched,
            max(self.free_after, stop),
            self.gpu_types,
        )

    def for_job(self, job: JobRequest) -> Residual:
        """This residual as ``job`` sees it: no GPU room on the machines its GPU types
        exclude (:mod:`.eligibility`); itself when the job excludes none."""
        if job.gpu_types is None:
            return self  # the common case: nothing to mask, no work
        ok = allowed_by_types(job, self.gpu_types or (None,) * self.n_machines)
        if ok is None or bool(ok.all()):
            return self
        bad = ~ok
        if not (self.capacity[bad, GPU] > 0).any() and not (self.seg_res[bad, GPU] > 0).any():
            return self  # already seen this way
        return replace(self, capacity=masked(self.capacity, ok), seg_res=masked(self.seg_res, ok))

    def blocks_min(self, starts: IntArray, stops: IntArray) -> FloatArray:
        """Minimum residual per block [starts[b], stops[b]): (H, 3, B)."""
        return np.stack(
            [self.window_min(int(s), int(e)) for s, e in zip(starts, stops, strict=True)], axis=2
        )


def residual_from(snapshot: ClusterSnapshot, t0: int) -> Residual:
    """Residual capacity from slot ``t0`` on, given the snapshot's reservations."""
    index = snapshot.machine_index()
    cap = np.array([m.capacity.as_tuple() for m in snapshot.machines], dtype=np.float64)
    active = [r for r in snapshot.reservations if r.end_slot > t0 and r.end_slot > r.start_slot]
    points = {t0}
    for r in active:
        if r.start_slot > t0:
            points.add(r.start_slot)
        points.add(r.end_slot)
    starts = np.array(sorted(points), dtype=np.int64)
    n_seg = len(starts)
    touched = np.zeros(len(cap), dtype=bool)
    res = np.repeat(cap[:, :, None], n_seg, axis=2)
    if active:
        rows = np.empty(len(active), dtype=np.int64)
        for i, r in enumerate(active):
            h = index.get(r.machine)
            if h is None:
                raise ValueError(
                    f"reservation of job {r.job_id!r} names unknown machine {r.machine!r}"
                )
            rows[i] = h
        begin = np.fromiter((max(r.start_slot, t0) for r in active), np.int64, len(active))
        end = np.fromiter((r.end_slot for r in active), np.int64, len(active))
        usage = np.array([r.usage.as_tuple() for r in active], dtype=np.float64)  # (R, 3)
        lo = np.searchsorted(starts, begin)
        hi = np.searchsorted(starts, end)
        # difference array over segments: −usage from lo, +usage from hi; then a cumsum
        delta = np.zeros((len(cap), 3, n_seg + 1))
        for r_idx in range(3):
            np.add.at(delta[:, r_idx, :], (rows, lo), -usage[:, r_idx])
            np.add.at(delta[:, r_idx, :], (rows, hi), usage[:, r_idx])
        res += np.cumsum(delta, axis=2)[:, :, :n_seg]
        touched[rows] = True
    np.maximum(res, 0.0, out=res)
    free_after = int(starts[-1]) if active else t0
    return Residual(
        names=tuple(m.name for m in snapshot.machines),
        capacity=cap,
        t0=t0,
        seg_starts=starts,
        seg_res=res,
        touched=touched,
        free_after=free_after,
        gpu_types=tuple(m.gpu_type for m in snapshot.machines)
        if any_typed(snapshot.machines)
        else (),
    )


def identical_groups(residual: Residual, exclude: set[int]) -> list[list[int]]:
    """Machines (not in ``exclude``) grouped by identical capacity and residual profile.

    Untouched machines are keyed by capacity alone; touched ones by their residual in
    every segment. Groups keep machine order and are sorted by their first machine.
    """
    groups: dict[bytes, list[int]] = {}
    types = residual.gpu_types
    for h in range(residual.n_machines):
        if h in exclude:
            continue
        if residual.touched[h]:
            key = b"T" + residual.seg_res[h].tobytes()
        else:
            key = b"U" + residual.capacity[h].tobytes()
        if types:  # machines of different GPU types are never interchangeable
            key += b"|" + (types[h] or "").encode()
        groups.setdefault(key, []).append(h)
    return sorted(groups.values(), key=lambda g: g[0])
