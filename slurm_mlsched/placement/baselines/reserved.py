"""What ``oasis`` reads of a snapshot: the machines and the reserved usage from the
arrival slot on (pure).

The usage is a :class:`~slurm_mlsched.model.reservation_book.UsageAt`: the level in slot
t0 and the changes after it in time order. In a replay the engine's reservation book keeps
it up to date across arrivals, so a question about the slots [t0, stop) reads only the
changes before ``stop`` (a handful for a short job) instead of every active reservation;
for any other snapshot it is built from the reservations (:meth:`UsageAt.from_rows`). Both
give the same numbers: the book keeps it only while every usage is a whole number, where
sums are exact in any order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot
from ...model.reservation_book import ReservationView, UsageAt, reservation_rows
from .timeline import machine_arrays

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Reserved:
    names: tuple[str, ...]
    capacity: FloatArray  # (H, 3)
    usage: UsageAt
    integral: bool  # every usage a whole number: sums of them need no rounding

    @staticmethod
    def of(snapshot: ClusterSnapshot, t0: int) -> Reserved:
        names, index, capacity = machine_arrays(snapshot.machines)
        rs = snapshot.reservations
        rows = None
        if isinstance(rs, ReservationView):
            kept = rs.usage_at(snapshot.machines, t0)
            if kept is not None:
                return Reserved(names, capacity, kept, True)
            rows = rs.rows(snapshot.machines)
        if rows is None:
            rows = reservation_rows(index, rs)
        usage = rows[:, 3:]
        integral = bool((usage == np.rint(usage)).all())
        return Reserved(names, capacity, UsageAt.from_rows(rows, len(names), t0), integral)

    @property
    def t0(self) -> int:
        return self.usage.t0

    @property
    def n_machines(self) -> int:
        return len(self.names)

    @property
    def free_after(self) -> int:
        """The first slot from which nothing is reserved (the empty cluster)."""
        return self.usage.free_after
