"""The cluster snapshot: machines, their capacities, and reservations (MODEL.md §1).

A snapshot is what one decision sees: the machines H with capacity C[h][r], the slot
length Δ, the epoch (wall time of slot 0, given as data: the core never reads a clock),
the current slot, and the reservations of jobs already placed (their usage per machine
over a half-open slot interval). Residual capacity is C̃[h][r][t] = C[h][r] − reserved.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from .resources import Resources


@dataclass(frozen=True, slots=True)
class Machine:
    """A node: its name (Slurm NodeName), its capacity for managed jobs, the type of its
    GPUs (Slurm's GRES type, ``gpu:v100:4`` → ``"v100"``; None = untyped or no GPUs) and
    its GPUs' throughput factor relative to the profiles' reference GPU (``gpu_speed``,
    from the speed table by type: :mod:`.gpu_speed`, docs/formulation.md §17)."""

    name: str
    capacity: Resources
    gpu_type: str | None = None
    gpu_speed: float = 1.0

    def __post_init__(self) -> None:
        if not (self.gpu_speed > 0 and math.isfinite(self.gpu_speed)):
            raise ValueError(f"gpu_speed must be a finite number > 0, got {self.gpu_speed!r}")


@dataclass(frozen=True, slots=True)
class InventoryNode:
    """One node of a published node inventory (``traces.inventory``): its GPU type (None:
    no GPUs or untyped), GPUs and CPUs."""

    name: str
    gpu_type: str | None
    gpus: int
    cpus: int


@dataclass(frozen=True, slots=True)
class Reservation:
    """Usage of one machine by an already-placed job over slots [start_slot, end_slot)."""

    machine: str
    start_slot: int
    end_slot: int
    usage: Resources
    job_id: str = ""


#: the last machine tuple whose names were found distinct (kept alive, compared by identity)
_CHECKED: list[tuple[Machine, ...]] = []


@dataclass(frozen=True)
class ClusterSnapshot:
    """Everything a placement decision reads about the cluster.

    ``now_slot`` is the slot in which the decision is taken; ``epoch`` the wall time at
    which slot 0 begins (UTC). ``slot_seconds`` is Δ. ``reservations`` is a tuple, or in a
    replay the engine's :class:`~.reservation_book.ReservationView` (a sequence equal to
    that tuple which also gives the reservations as arrays).
    """

    machines: tuple[Machine, ...]
    reservations: Sequence[Reservation] = ()
    slot_seconds: float = 600.0
    epoch: datetime = field(default_factory=lambda: datetime(1970, 1, 1, tzinfo=UTC))
    now_slot: int = 0

    def __post_init__(self) -> None:
        if self.slot_seconds <= 0:
            raise ValueError(f"slot_seconds must be > 0, got {self.slot_seconds}")
        if _CHECKED and _CHECKED[-1] is self.machines:
            return  # a replay makes one snapshot per arrival on the same machines
        names = [m.name for m in self.machines]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"duplicate machine names in snapshot: {dup}")
        _CHECKED[:] = [self.machines]

    def machine_index(self) -> dict[str, int]:
        return {m.name: i for i, m in enumerate(self.machines)}

    def with_reservations(self, extra: tuple[Reservation, ...]) -> ClusterSnapshot:
        """A new snapshot with more reservations (the online algorithm's commit)."""
        return replace(self, reservations=(*self.reservations, *extra))

    def at_slot(self, slot: int) -> ClusterSnapshot:
        return replace(self, now_slot=slot)

    def slot_start(self, slot: int) -> datetime:
        return self.epoch + timedelta(seconds=slot * self.slot_seconds)

    def total_capacity(self) -> Resources:
        total = Resources()
        for m in self.machines:
            total = total + m.capacity
        return total
