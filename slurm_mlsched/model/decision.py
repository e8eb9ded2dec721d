"""A placement decision: what ``place()`` returns (frozen).

A schedule is a list of :class:`SlotPlan` (one per slot in which the job runs; idle slots
are absent). The non-elastic form (MODEL.md §5) has identical plans from its start slot to
its end slot, and also reports them once as :attr:`Decision.placement`.

A policy that draws randomized-rounding trials records each as a :class:`RoundingTrial`
in :attr:`Decision.rounding`, and which one it kept and by which rule in
:attr:`Decision.kept_trial` and :attr:`Decision.kept_because` (:class:`TrialRule`).
"""

from __future__ import annotations

import math
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


def placement_json(rows: Iterable[NodeCount]) -> list[dict[str, object]]:
    """A placement as ``[{node, role, count}, ...]``: the shape the store keeps (the
    decisions' ``placement_json``) and every command prints."""
    return [{"node": r.node, "role": r.role.value, "count": r.count} for r in rows]


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


class TrialRule(StrEnum):
    """How a policy chooses among its rounding trials: the first words of
    :attr:`Decision.kept_because` (docs/formulation.md §5 step 5, §14.3, §14.4)."""

    #: ``yu-rr`` non-elastic: every trial repaired, the earliest end after repair kept.
    EARLIEST_END = "earliest end after repair"
    #: ``yu-rr`` elastic (MODEL.md §4 step 3): fewest violations, then most work by D.
    FEWEST_VIOLATIONS = "fewest violations before repair, then most work by D"
    #: the joint program (late binding): least total completion of the window's jobs.
    LEAST_TOTAL_COMPLETION = "least total completion after repair"


_TIES = {
    TrialRule.EARLIEST_END: "ties: fewer task-slots, then lower index",
    TrialRule.FEWEST_VIOLATIONS: "ties: lower index",
    TrialRule.LEAST_TOTAL_COMPLETION: "ties: fewer task-slots, then lower index",
}

#: :attr:`Decision.kept_because` of a decision stored before policies recorded the trial
#: they kept: the storage codec re-derives :attr:`Decision.kept_trial` with the rule
#: ``explain`` used then, which need not be the policy's.
LEGACY_KEPT_BECAUSE = (
    "legacy rule (not recorded by the policy, re-derived when read): fewest violations "
    "before repair, then most work by D (up to the whole workload), then earliest end; "
    "ties: lower index"
)


#: Between a kept reason's rule (with its value) and its tie-breaks.
TIES_SEPARATOR = "; "


def kept_reason(rule: TrialRule, detail: str = "") -> str:
    """:attr:`Decision.kept_because` for a trial kept by ``rule``: the rule, the kept
    trial's value under it (``detail``, free of slot numbers, so that it stays true on a
    shifted grid) and the tie-breaks. The policies and the storage codec (for decisions
    stored before this field) build it with the three functions below."""
    value = f" ({detail})" if detail else ""
    return f"{rule.value}{value}{TIES_SEPARATOR}{_TIES[rule]}"


def earliest_end_reason(completion_slots: int) -> str:
    """:attr:`TrialRule.EARLIEST_END`; the kept trial's end after repair − arrival + 1."""
    return kept_reason(TrialRule.EARLIEST_END, f"completion {completion_slots} slots")


def work_by_d_text(work_fraction: float) -> str:
    """A trial's work by D in words: ``all the work by D`` from the whole workload V on
    (the rule counts no more than V), else the percentage rounded down (99.6 % is not
    all of it)."""
    if work_fraction >= 1.0:
        return "all the work by D"
    return f"{math.floor(max(work_fraction, 0.0) * 100)}% of the work by D"


def fewest_violations_reason(violations: int, work_fraction: float) -> str:
    """:attr:`TrialRule.FEWEST_VIOLATIONS`; the work counted at most V, as the rule does."""
    return kept_reason(
        TrialRule.FEWEST_VIOLATIONS, f"{violations} over, {work_by_d_text(work_fraction)}"
    )


def least_total_completion_reason(total_slots: float, jobs: int) -> str:
    """:attr:`TrialRule.LEAST_TOTAL_COMPLETION` over ``jobs`` jobs (the trials are drawn
    over the whole window, so such decisions hold no per-job :attr:`Decision.rounding`)."""
    return kept_reason(
        TrialRule.LEAST_TOTAL_COMPLETION, f"{total_slots:g} slots over {jobs} job(s)"
    )


@dataclass(frozen=True, slots=True)
class RoundingTrial:
    """One randomized-rounding trial a policy drew (before repair), and, where the policy
    repairs every trial, what repair made of it. Slot numbers are on the decision's grid.

    * ``index``: k, the trial's place in the draw sequence of the decision's seed (0 … K−1);
    * ``violations``: capacity violations of the draw before repair (non-elastic: machines
      over capacity over its run; elastic: group-slots over capacity, Σ_b ω_b·groups over);
    * ``work_fraction``: work the draw covers by the LP deadline D, as a share of V
      (non-elastic: at most 1; elastic: the rounded blocks' work inside [a, D], uncapped);
    * ``start_slot``, ``workers``, ``colocated``: the drawn constant shape (non-elastic);
      ``None`` when the draw is no single shape (elastic: one draw per block);
    * ``end_slot``: the drawn shape's last slot; ``None`` when the trial placed nothing
      (no worker) or is no single shape;
    * ``repaired_end_slot``, ``repaired_workers``: the shape after repair (non-elastic:
      every trial is repaired); ``None`` when only the kept trial is repaired (elastic).
    """

    index: int
    violations: int
    work_fraction: float
    start_slot: int | None = None
    end_slot: int | None = None
    workers: int | None = None
    colocated: bool | None = None
    repaired_end_slot: int | None = None
    repaired_workers: int | None = None

    def shifted(self, k: int) -> RoundingTrial:
        """The same trial on a grid whose slot numbers are this one's plus ``k``."""

        def plus(slot: int | None) -> int | None:
            return None if slot is None else slot + k

        return replace(
            self,
            start_slot=plus(self.start_slot),
            end_slot=plus(self.end_slot),
            repaired_end_slot=plus(self.repaired_end_slot),
        )


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
    rounding: tuple[RoundingTrial, ...] = ()
    """The randomized-rounding trials the policy drew, in draw order (empty: none drawn,
    or no per-job trials, as in the joint program)."""
    kept_trial: int | None = None
    """Index of the trial the policy kept (``None``: no rounding, e.g. the fast path)."""
    kept_because: str = ""
    """Why that trial: the rule (:class:`TrialRule`, made by :func:`kept_reason`), the
    kept trial's value under it and the tie-breaks; :data:`LEGACY_KEPT_BECAUSE` when the
    decision was stored before policies recorded their choice."""

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
            rounding=tuple(t.shifted(k) for t in self.rounding),
        )

    @property
    def kept_rederived(self) -> bool:
        """Whether :attr:`kept_trial` was re-derived when read (a decision stored before
        policies recorded it) rather than recorded by the policy."""
        return self.kept_because == LEGACY_KEPT_BECAUSE

    @property
    def kept_text(self) -> str:
        """Which rounding trial the policy kept and why, in words (``""`` without rounding):
        ``trial 5 of 20: fewest violations before repair, ...``."""
        if self.kept_trial is None:
            return ""
        return f"trial {self.kept_trial} of {self.trials}: {self.kept_because}"

    @property
    def kept_summary(self) -> str:
        """:attr:`kept_text` without the tie-breaks (where space is short: the report
        page; ``mlsub explain`` gives them)."""
        return self.kept_text.split(TIES_SEPARATOR + "ties", 1)[0]


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
