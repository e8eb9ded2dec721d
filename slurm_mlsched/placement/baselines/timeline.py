"""The snapshot's reservations as arrays, for the baselines' earliest-fit searches (pure).

:class:`~slurm_mlsched.placement.program.residual.Residual` keeps residual capacity as dense
segments (machines × resources × every slot where something changes), which ``yu-rr``
needs for its LPs. A baseline only asks "how much room does each machine have, at least,
over the slots [s, e)?" for a handful of windows, so it keeps the reservations as four
flat arrays and answers each question with one sort over the reservations that overlap
the window: O(R log R) numpy per window, no Python loop over reservations. In a replay
the rows come from the engine's reservation book (``ReservationView.rows``), so even the
one conversion is skipped.

Room is the residual capacity C̃[h][r] = C[h][r] − reserved[h][r][t], minimized over the
window per machine and resource (the same "window minimum" as ``Residual.window_min``),
clipped at 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, Machine
from ...model.reservation_book import ReservationView, reservation_rows

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Timeline:
    """Reservations still holding something at or after slot ``t0``.

    ``start`` is clipped to ``t0``; reservation k holds ``usage[k]`` on machine
    ``machine[k]`` over [start[k], end[k]).
    """

    names: tuple[str, ...]
    capacity: FloatArray  # (H, 3)
    t0: int
    machine: IntArray  # (R,)
    start: IntArray  # (R,)
    end: IntArray  # (R,)
    usage: FloatArray  # (R, 3)

    @staticmethod
    def of(snapshot: ClusterSnapshot, t0: int) -> Timeline:
        names, index, capacity = machine_arrays(snapshot.machines)
        rs = snapshot.reservations
        rows = rs.rows(snapshot.machines) if isinstance(rs, ReservationView) else None
        if rows is None:
            rows = reservation_rows(index, rs)
        machine = rows[:, 0].astype(np.int64)
        start = rows[:, 1].astype(np.int64)
        end = rows[:, 2].astype(np.int64)
        usage = rows[:, 3:]
        keep = (end > t0) & (end > start)
        return Timeline(
            names=names,
            capacity=capacity,
            t0=t0,
            machine=machine[keep],
            start=np.maximum(start[keep], t0),
            end=end[keep],
            usage=usage[keep],
        )

    @property
    def n_machines(self) -> int:
        return len(self.names)

    @property
    def free_after(self) -> int:
        """The first slot from which nothing is reserved (the empty cluster)."""
        return int(self.end.max()) if len(self.end) else self.t0

    def latest_start(self) -> int | None:
        """The latest start among the reservations (clipped to t0), None if there are none."""
        return int(self.start.max()) if len(self.start) else None

    def ends_after(self, slot: int) -> IntArray:
        """Sorted distinct slots after ``slot`` at which some reservation ends (room grows)."""
        ends = np.unique(self.end)
        out: IntArray = ends[ends > slot]
        return out

    def peak(self, start: int, stop: int) -> FloatArray:
        """Per machine and resource, the most reserved at once in a slot of [start, stop)."""
        out = np.zeros_like(self.capacity)
        hit = np.flatnonzero((self.start < stop) & (self.end > start))
        if not len(hit):
            return out
        mach = self.machine[hit]
        use = self.usage[hit]
        begins = np.maximum(self.start[hit], start)
        ends = self.end[hit]
        inside = ends < stop  # ends at or after stop never lower the peak inside the window
        times = np.concatenate([begins, ends[inside]])
        machs = np.concatenate([mach, mach[inside]])
        kinds = np.concatenate([np.ones(len(hit), np.int64), np.zeros(int(inside.sum()), np.int64)])
        deltas = np.concatenate([use, -use[inside]])
        # per machine, in time order, an end before a start in the same slot (half-open)
        order = np.lexsort((kinds, times, machs))
        deltas, machs = deltas[order], machs[order]
        running = np.cumsum(deltas, axis=0)
        first = np.flatnonzero(np.r_[True, machs[1:] != machs[:-1]])
        before = running[first] - deltas[first]
        peaks = np.maximum.reduceat(running, first, axis=0) - before
        out[machs[first]] = np.round(peaks, 6)
        return out

    def room(self, start: int, stop: int) -> FloatArray:
        """Least residual capacity of each machine over [start, stop): (H, 3), ≥ 0."""
        out: FloatArray = np.maximum(self.capacity - self.peak(start, stop), 0.0)
        return out

    def oversubscribed(self) -> bool:
        """Whether some machine is ever reserved beyond its capacity (the room is clipped)."""
        stop = max(self.free_after, self.t0 + 1)
        return bool((self.peak(self.t0, stop) > self.capacity + 1e-6).any())

    def total_room(self, starts: IntArray, length: int) -> FloatArray:
        """For each window [s, s + length), s in ``starts``, the least total residual of the
        whole cluster over the window, per resource: (C, 3). An upper bound on the sum of
        the machines' window room when no machine is over-subscribed (:meth:`oversubscribed`).
        """
        total = self.capacity.sum(axis=0)
        if not len(starts):
            return np.zeros((0, 3))
        if not len(self.end):
            return np.repeat(total[None], len(starts), axis=0)
        times = np.concatenate([self.start, self.end])
        deltas = np.concatenate([self.usage, -self.usage])
        order = np.argsort(times, kind="stable")
        times, deltas = times[order], deltas[order]
        points, first = np.unique(times, return_index=True)
        level = np.add.reduceat(deltas, first, axis=0).cumsum(axis=0)  # use on [p_k, p_k+1)
        # row 0: before points[0]; row k + 1: on [points[k], points[k + 1]); then a spare
        # row so that every exclusive row bound below is a valid index for reduceat
        free = np.vstack([total[None], total - np.round(level, 6), total[None]])
        lo = np.searchsorted(points, starts, side="right")  # the row of slot s
        hi = np.searchsorted(points, starts + length, side="left") + 1  # past the last row
        idx = np.empty(2 * len(starts), dtype=np.int64)
        idx[0::2], idx[1::2] = lo, hi
        mins: FloatArray = np.minimum.reduceat(free, idx, axis=0)[0::2]  # lo < hi always
        return mins


_MachineArrays = tuple[tuple[str, ...], dict[str, int], FloatArray]
#: The last few machine tuples seen, by identity, with their arrays. A replay hands every
#: policy call snapshots that share one machine tuple; reading 2,000 capacities per call
#: would cost more than the search itself. The entry keeps its tuple alive, so an id is
#: never reused while it is cached, and the arrays are never written to.
_MACHINES: dict[int, tuple[tuple[Machine, ...], _MachineArrays]] = {}
_MACHINES_KEPT = 8


def machine_arrays(machines: tuple[Machine, ...]) -> _MachineArrays:
    """Names, name → index, and capacities (H, 3, read-only) of a machine tuple (cached)."""
    hit = _MACHINES.get(id(machines))
    if hit is not None and hit[0] is machines:
        return hit[1]
    capacity = np.array([m.capacity.as_tuple() for m in machines], dtype=np.float64)
    capacity = capacity.reshape(len(machines), 3)
    capacity.flags.writeable = False
    arrays = (
        tuple(m.name for m in machines),
        {m.name: i for i, m in enumerate(machines)},
        capacity,
    )
    if len(_MACHINES) >= _MACHINES_KEPT:
        _MACHINES.pop(next(iter(_MACHINES)))
    _MACHINES[id(machines)] = (machines, arrays)
    return arrays
