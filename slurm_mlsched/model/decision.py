"""A placement decision: what ``place()`` returns (frozen).

A schedule is a list of :class:`SlotPlan` (one per slot in which the job runs; idle slots
are absent). The non-elastic form (MODEL.md §5) has identical plans from its start slot to
its end slot, and also reports them once as :attr:`Decision.placement`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from .cluster import Reservation
from .job import JobRequest
from .resources import Resources


class Mode(StrEnum):
    COLOCATED = "colocated"
    DISTRIBUTED = "distributed"


class Role(StrEnum):
    PS = "ps"
    WORKER = "worker"


class Form(StrEnum):
    ELASTIC = "elastic"  # counts may change per slot (the paper's model; replay)
    NON_ELASTIC = "non-elastic"  # constant counts from a start slot (what Slurm runs)


@dataclass(frozen=True, slots=True)
class NodeCount:
    node: str
    role: Role
    count: int


@dataclass(frozen=True, slots=True)
class SlotPlan:
    """The job's tasks in a run of ``length`` identical slots from ``slot``: the mode and
    the per-machine worker and PS counts."""

    slot: int
    mode: Mode
    workers: tuple[tuple[str, int], ...]
    ps: tuple[tuple[str, int], ...]
    length: int = 1

    @property
    def stop(self) -> int:
        """First slot after the run."""
        return self.slot + self.length

    def same_tasks(self, other: SlotPlan) -> bool:
        return (self.mode, self.workers, self.ps) == (other.mode, other.workers, other.ps)

    @property
    def total_workers(self) -> int:
        return sum(c for _, c in self.workers)

    @property
    def total_ps(self) -> int:
        return sum(c for _, c in self.ps)

    def usage(self, job: JobRequest) -> dict[str, Resources]:
        """Resources used per machine in this slot."""
        out: dict[str, Resources] = {}
        for name, count in self.workers:
            out[name] = out.get(name, Resources()) + job.worker.scaled(count)
        for name, count in self.ps:
            out[name] = out.get(name, Resources()) + job.ps.scaled(count)
        return out

    def node_counts(self) -> tuple[NodeCount, ...]:
        rows = [NodeCount(n, Role.PS, c) for n, c in self.ps if c > 0]
        rows += [NodeCount(n, Role.WORKER, c) for n, c in self.workers if c > 0]
        return tuple(sorted(rows, key=lambda r: (r.node, r.role != Role.PS)))


@dataclass(frozen=True)
class Decision:
    """The outcome of one ``place()`` call, with everything needed to audit it."""

    job_id: str
    policy: str
    form: Form
    seed: int
    slots: tuple[SlotPlan, ...]  # runs of identical slots, in slot order
    start_slot: int
    end_slot: int  # last slot in which the job runs (inclusive)
    work_covered: float
    arrival_slot: int = 0  # a: the job's arrival slot (its completion term starts here)
    lp_deadline: int | None = None  # D: last slot of the smallest LP-feasible window
    lp_value: float | None = None
    trials: int = 0
    repair_actions: tuple[str, ...] = ()
    solver: str = ""
    solver_version: str = ""
    timings_ms: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()
    stats: tuple[tuple[str, float], ...] = field(default=())

    @property
    def mode(self) -> Mode:
        """The mode of the first running slot (constant in the non-elastic form)."""
        return self.slots[0].mode if self.slots else Mode.DISTRIBUTED

    @property
    def placement(self) -> tuple[NodeCount, ...]:
        """Per-node counts of the first running slot (all slots, in the non-elastic form)."""
        return self.slots[0].node_counts() if self.slots else ()

    @property
    def completion_slots(self) -> int:
        """Slots from arrival through completion, end − a + 1: the job's term in Σ_t z[i,t]."""
        return self.end_slot - self.arrival_slot + 1

    def decision_ms(self) -> float:
        return sum(ms for _, ms in self.timings_ms)

    def running_slots(self) -> int:
        return sum(p.length for p in self.slots)

    def colocated_share(self) -> float:
        """Share of the job's running slots spent co-located."""
        total = self.running_slots()
        if not total:
            return 0.0
        return sum(p.length for p in self.slots if p.mode == Mode.COLOCATED) / total

    def reservations(self, job: JobRequest) -> tuple[Reservation, ...]:
        """The decision's usage as reservations, merging runs of identical slots."""
        return tuple(_merge_runs(job, self.slots))

    def shifted(self, k: int) -> Decision:
        """The same plan on a slot grid whose slot 0 is this grid's slot ``-k`` (every
        slot number plus ``k``): a stored plan on the grid of a later snapshot."""
        if k == 0:
            return self
        return replace(
            self,
            slots=tuple(replace(p, slot=p.slot + k) for p in self.slots),
            start_slot=self.start_slot + k,
            end_slot=self.end_slot + k,
            arrival_slot=self.arrival_slot + k,
            lp_deadline=None if self.lp_deadline is None else self.lp_deadline + k,
        )


def merge_runs(plans: Iterable[SlotPlan]) -> tuple[SlotPlan, ...]:
    """Join adjacent plans with the same tasks into runs."""
    out: list[SlotPlan] = []
    for plan in plans:
        if out and out[-1].stop == plan.slot and out[-1].same_tasks(plan):
            last = out[-1]
            out[-1] = SlotPlan(
                last.slot, last.mode, last.workers, last.ps, last.length + plan.length
            )
        else:
            out.append(plan)
    return tuple(out)


def _merge_runs(job: JobRequest, slots: Iterable[SlotPlan]) -> list[Reservation]:
    out: list[Reservation] = []
    open_runs: dict[str, Reservation] = {}
    for plan in slots:
        usage = plan.usage(job)
        for name in list(open_runs):
            current = open_runs[name]
            if current.end_slot != plan.slot or usage.get(name) != current.usage:
                out.append(open_runs.pop(name))
        for name, res in usage.items():
            run = open_runs.get(name)
            if run is not None and run.end_slot == plan.slot and run.usage == res:
                open_runs[name] = Reservation(name, run.start_slot, plan.stop, res, job.job_id)
            else:
                open_runs[name] = Reservation(name, plan.slot, plan.stop, res, job.job_id)
    out.extend(open_runs.values())
    return sorted(out, key=lambda r: (r.start_slot, r.machine))
