"""The replay engine's reservations, kept once across arrivals (pure, no I/O).

A replay hands every policy call the reservations still active at its slot. On the whole
Philly trace that is ~10⁴ reservations per call and 82,000 calls: rebuilding a tuple of
them per arrival, and converting it back to arrays in each baseline, took a quarter of an
``oasis`` replay. :class:`ReservationBook` keeps them once, in commit order, both as the
:class:`Reservation` objects and as numeric rows

    (machine index, start slot, end slot, gpu, cpu, mem),

each with the slot at which its job leaves the book. :meth:`ReservationBook.view` is what
a snapshot carries: a :class:`ReservationView`, an immutable ``Sequence[Reservation]``
equal (``==``, ``hash``, order) to the tuple of the reservations active at that slot,
built only when something iterates it, whose :meth:`ReservationView.rows` gives the same
reservations as arrays without touching the objects.

Rows are written once and never changed; the book only appends, and when more than half
of its rows belong to jobs that have left it copies the rest to new storage. A view keeps
the storage it was cut from, so it stays valid after the book moves on.

While every usage booked is a whole number (sums of them are then exact in any order), the
book also keeps the reserved usage **from its slot on** as a :class:`UsageAt` (the level in
the slot, and the changes after it in time order), updated as jobs are added and time
advances, instead of re-adding the rows for each question; each view carries the one of its
slot. :meth:`UsageAt.from_rows` builds the same thing from scratch for any reservations.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .cluster import Machine, Reservation

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: columns of a row
MACHINE, START, END, GPU, CPU, MEM = range(6)
_TIME = itemgetter(0)
_MACHINE = attrgetter("machine")
_START = attrgetter("start_slot")
_END = attrgetter("end_slot")
_USAGE = attrgetter("usage")
_RESOURCE = (attrgetter("gpu"), attrgetter("cpu"), attrgetter("mem"))


def reservation_rows(index: dict[str, int], reservations: Sequence[Reservation]) -> FloatArray:
    """The rows of ``reservations`` (module docstring), machine names mapped by ``index``.

    Raises ValueError naming a machine the index does not have."""
    n = len(reservations)
    if n < 32:  # one job's: a list of tuples converts faster than six passes
        try:
            data = [
                (index[r.machine], r.start_slot, r.end_slot, r.usage.gpu, r.usage.cpu, r.usage.mem)
                for r in reservations
            ]
        except KeyError as err:
            raise ValueError(f"a reservation names unknown machine {err.args[0]!r}") from None
        return np.array(data, dtype=np.float64).reshape(n, 6)
    out = np.empty((n, 6), dtype=np.float64)
    try:  # map + attrgetter run in C: no Python-level loop over the reservations
        out[:, MACHINE] = np.fromiter(
            map(index.__getitem__, map(_MACHINE, reservations)), np.int64, n
        )
    except KeyError as err:
        raise ValueError(f"a reservation names unknown machine {err.args[0]!r}") from None
    out[:, START] = np.fromiter(map(_START, reservations), np.int64, n)
    out[:, END] = np.fromiter(map(_END, reservations), np.int64, n)
    usages = list(map(_USAGE, reservations))
    for col, get in zip((GPU, CPU, MEM), _RESOURCE, strict=True):
        out[:, col] = np.fromiter(map(get, usages), np.float64, n)
    return out


@dataclass(frozen=True)
class UsageAt:
    """Reserved usage from slot ``t0`` on: ``now`` (H, 3) is what the reservations hold in
    slot t0 (Σ over start ≤ t0 < end); the changes after t0 are ``times`` (E,, ascending,
    all > t0), ``machine`` (E,) and ``delta`` (E, 3): + the usage at a reservation's start
    after t0, − at its end. Reserved in slot t ≥ t0 = now + Σ delta over times ≤ t.
    Reservations with end ≤ start hold nothing and are left out. Arrays are never written
    to once built."""

    t0: int
    now: FloatArray
    times: IntArray
    machine: IntArray
    delta: FloatArray

    @property
    def free_after(self) -> int:
        """The first slot from which nothing is reserved (the last end, or t0)."""
        return int(self.times[-1]) if len(self.times) else self.t0

    @staticmethod
    def from_rows(rows: FloatArray, n_machines: int, t0: int) -> UsageAt:
        """From reservation rows (:func:`reservation_rows`)."""
        start = rows[:, START].astype(np.int64)
        end = rows[:, END].astype(np.int64)
        keep = (end > t0) & (end > start)
        mach = rows[keep, MACHINE].astype(np.int64)
        start, end, use = start[keep], end[keep], rows[keep, GPU:]
        held = start <= t0
        now = np.zeros((n_machines, 3))
        for r in range(3):
            now[:, r] = np.bincount(mach[held], weights=use[held, r], minlength=n_machines)
        later = ~held
        times = np.concatenate([start[later], end])
        order = np.argsort(times, kind="stable")
        return UsageAt(
            t0,
            now,
            times[order],
            np.concatenate([mach[later], mach])[order],
            np.concatenate([use[later], -use])[order],
        )


class ReservationView(Sequence[Reservation]):
    """The reservations of a book active at one slot (module docstring)."""

    __slots__ = ("_at", "_items", "_machines", "_rows", "_tuple", "_usage")

    def __init__(
        self,
        items: list[Reservation],
        rows: FloatArray,
        at: IntArray,
        machines: tuple[Machine, ...],
        usage: UsageAt | None = None,
    ) -> None:
        self._items = items
        self._rows = rows
        self._at = at
        self._machines = machines
        self._tuple: tuple[Reservation, ...] | None = None
        self._usage = usage

    def usage_at(self, machines: tuple[Machine, ...], t0: int) -> UsageAt | None:
        """The book's :class:`UsageAt` of these reservations from ``t0`` on, when the book
        kept it (whole-number usage), for the book's machine tuple and the view's slot;
        None otherwise (the caller builds it with :meth:`UsageAt.from_rows`)."""
        u = self._usage
        if u is None or u.t0 != t0 or machines is not self._machines:
            return None
        return u

    def rows(self, machines: tuple[Machine, ...]) -> FloatArray | None:
        """The reservations as rows (a new array, in order), or None when ``machines`` is
        not the machine tuple the book indexes (the caller converts the objects then)."""
        if machines is not self._machines:
            return None
        out: FloatArray = self._rows[self._at]
        return out

    def as_tuple(self) -> tuple[Reservation, ...]:
        if self._tuple is None:
            get = self._items.__getitem__
            self._tuple = tuple(map(get, self._at.tolist()))
        return self._tuple

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, i: int) -> Reservation: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Reservation, ...]: ...

    def __getitem__(self, i: int | slice) -> Reservation | tuple[Reservation, ...]:
        return self.as_tuple()[i]

    def __iter__(self) -> Iterator[Reservation]:
        return iter(self.as_tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReservationView):
            other = other.as_tuple()
        return isinstance(other, tuple) and self.as_tuple() == other

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __add__(self, other: Any) -> tuple[Reservation, ...]:
        return self.as_tuple() + tuple(other)

    def __repr__(self) -> str:
        return f"ReservationView({len(self)} reservations)"


class ReservationBook:
    """Reservations in commit order with the slot their job leaves (module docstring).

    ``add`` and ``view`` must be called with non-decreasing slots, as an event loop does.
    """

    def __init__(self, machines: tuple[Machine, ...]) -> None:
        self.machines = machines
        self._index = {m.name: i for i, m in enumerate(machines)}
        self._items: list[Reservation] = []
        self._rows = np.empty((64, 6), dtype=np.float64)
        self._leave = np.empty(64, dtype=np.int64)
        self._n = 0
        self._integral = True  # every usage booked so far is a whole number
        # the reserved usage from slot _slot on (kept while _integral; None: before any view)
        self._slot: int | None = None
        self._now = np.zeros((len(machines), 3))
        self._times = np.zeros(0, dtype=np.int64)
        self._machine = np.zeros(0, dtype=np.int64)
        self._delta = np.zeros((0, 3))

    def __len__(self) -> int:
        """Rows held, including those of jobs that have left (until the next compaction)."""
        return self._n

    def add(self, reservations: Sequence[Reservation], leave: int) -> None:
        """Book ``reservations`` (one job's); they stay in views at slots before ``leave``."""
        k = len(reservations)
        if not k:
            return
        rows = reservation_rows(self._index, reservations)
        usage = rows[:, GPU:]
        self._integral = self._integral and bool((usage == np.rint(usage)).all())
        if self._n + k > len(self._leave):
            size = max(2 * len(self._leave), self._n + k)
            self._rows = _grown(self._rows, size, self._n)
            self._leave = _grown(self._leave, size, self._n)
        self._rows[self._n : self._n + k] = rows
        self._leave[self._n : self._n + k] = leave
        self._items.extend(reservations)
        self._n += k
        if self._integral:
            self._book_usage(rows)

    def _book_usage(self, rows: FloatArray) -> None:
        """Add rows to the usage from ``_slot`` on (:class:`UsageAt`'s rules). A job books
        a few rows, so this walks them in Python and touches the arrays once."""
        slot = self._slot
        events: list[tuple[int, int, float, float, float]] = []
        for m, start, end, gpu, cpu, mem in rows.tolist():
            h, begin, stop = int(m), int(start), int(end)
            if stop <= begin:
                continue  # holds nothing
            if slot is not None and begin <= slot:
                if stop <= slot:
                    continue  # over before the book's slot
                self._now[h] += (gpu, cpu, mem)
            else:
                events.append((begin, h, gpu, cpu, mem))
            events.append((stop, h, -gpu, -cpu, -mem))
        if not events:
            return
        events.sort(key=_TIME)
        times = np.array([e[0] for e in events], dtype=np.int64)
        at = np.searchsorted(self._times, times, side="right").tolist()
        self._times = _inserted(self._times, at, times)
        self._machine = _inserted(
            self._machine, at, np.array([e[1] for e in events], dtype=np.int64)
        )
        self._delta = _inserted(self._delta, at, np.array([e[2:] for e in events]))

    def _advance(self, slot: int) -> None:
        """Move the usage's slot to ``slot``: changes at or before it join the level."""
        if self._slot is not None and slot <= self._slot:
            return
        k = int(np.searchsorted(self._times, slot, side="right"))
        if k:
            np.add.at(self._now, self._machine[:k], self._delta[:k])
            self._times, self._machine, self._delta = (
                self._times[k:],
                self._machine[k:],
                self._delta[k:],
            )
        self._slot = slot

    def withdraw(self, job_id: str, slot: int) -> int:
        """Job ``job_id`` leaves the book at ``slot`` (it was preempted then): its rows
        are in no view from ``slot`` on and the usage from ``slot`` on no longer holds
        them. ``slot`` must be the slot of the last view (or later). Returns the rows
        withdrawn."""
        live = np.flatnonzero(self._leave[: self._n] > slot).tolist()
        idx = [i for i in live if self._items[i].job_id == job_id]
        if not idx:
            return 0
        if self._integral:
            rows = self._rows[idx].copy()
            rows[:, START] = np.maximum(rows[:, START], slot)  # what they hold from slot on
            rows[:, GPU:] *= -1.0
            self._advance(slot)
            self._book_usage(rows)
        self._leave[idx] = slot
        return len(idx)

    def view(self, slot: int) -> ReservationView:
        """The reservations whose job leaves after ``slot``, in commit order."""
        live: IntArray = np.flatnonzero(self._leave[: self._n] > slot)
        if 2 * len(live) < self._n:  # compact: new storage, so views already cut keep theirs
            size = max(64, 2 * len(live))
            rows = np.empty((size, 6), dtype=np.float64)
            leave = np.empty(size, dtype=np.int64)
            rows[: len(live)] = self._rows[live]
            leave[: len(live)] = self._leave[live]
            get = self._items.__getitem__
            self._items = list(map(get, live.tolist()))
            self._rows, self._leave, self._n = rows, leave, len(live)
            live = np.arange(len(live), dtype=np.int64)
        usage = None
        if self._integral:
            self._advance(slot)
            usage = UsageAt(slot, self._now.copy(), self._times, self._machine, self._delta)
        return ReservationView(self._items, self._rows, live, self.machines, usage)


def _inserted(a: npt.NDArray[Any], at: list[int], new: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A new array: ``new[i]`` inserted before ``a[at[i]]`` (``at`` ascending; after the
    rows already there for equal ``at``). Slices and one concatenate: ``np.insert`` costs
    several times more for the few rows a job adds."""
    parts = []
    prev = 0
    for i, cut in enumerate(at):
        parts += [a[prev:cut], new[i : i + 1]]
        prev = cut
    parts.append(a[prev:])
    return np.concatenate(parts)


def _grown(a: npt.NDArray[Any], size: int, n: int) -> npt.NDArray[Any]:
    out = np.empty((size, *a.shape[1:]), dtype=a.dtype)
    out[:n] = a[:n]
    return out
