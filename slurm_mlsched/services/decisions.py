"""Use cases on stored decisions: plan and reserve, release, history, show, explain, export.

Every function takes the store and the :class:`Viewer` (who is asking) and returns data;
the CLI prints it. Ordinary users see and release only their own decisions; admins (the
configured list, and root) see all. Another user's decision is reported as not found, so
ids do not reveal what exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from ..errors import InputError, InvalidTransitionError, NotFoundError
from ..files.cluster_file import load_cluster
from ..files.job_options import merge_options, read_script_header
from ..files.sbatch_lines import read_sbatch_header
from ..model import RESOURCE_NAMES, ClusterSnapshot, Decision, Form, JobRequest, SlotPlan
from ..model.allreduce import layout_of, ring_summary
from ..model.gpu_speed import slowest_machine
from ..placement import place
from ..storage import (
    DecisionRecord,
    DecisionState,
    DecisionStore,
    HistoryFilter,
    NewDecision,
    codec,
)
from .clock import Clock
from .decision_views import (
    Alternative,
    AlternativeRow,
    BindingResource,
    DecisionRow,
    DecisionView,
    Explanation,
    FailedAlternative,
    FieldDiff,
    Resolve,
    TrialOutcome,
)
from .plan import PlanResult, narrowed, params_for, plan_job
from .viewer import Viewer

#: Fields of a decision that a re-solve need not reproduce (wall-time measurements).
NOT_REPRODUCED = ("timings_ms",)

#: Fields a decision stored before policies recorded their kept trial does not hold: the
#: codec re-derives them when reading it (``Decision.kept_rederived``), so a re-solve,
#: which records them, is not compared on them.
NOT_RECORDED_BEFORE = ("kept_trial", "kept_because")


@dataclass(frozen=True)
class ReservedPlan:
    """``mlsub plan --reserve``: the plan, the decision it was recorded as (state
    ``planned``) and the cluster it is kept under."""

    plan: PlanResult
    record: DecisionRecord
    cluster_name: str

    def to_json(self) -> dict[str, object]:
        """``mlsub plan --reserve --json``: the plan's shape plus the stored decision."""
        return {
            **self.plan.to_json(),
            "decision_id": self.record.decision_id,
            "state": str(self.record.state),
            "cluster_name": self.cluster_name,
            "snapshot_sha256": self.record.snapshot_sha256,
        }


def plan_and_reserve(
    *,
    script: Path | None,
    cluster: Path,
    overrides: Mapping[str, object],
    clock: Clock,
    store: DecisionStore,
    cluster_name: str,
    viewer: Viewer,
    host: str,
    packages: tuple[tuple[str, str], ...],
    config_defaults: Mapping[str, object] | None = None,
) -> ReservedPlan:
    """Plan against the cluster file plus every stored reservation, and record the decision
    as ``planned``, all under the cluster's planning lock (so concurrent calls never
    double-book). Job options as for ``plan``: command line over header over the
    configuration's ``[job]`` table (``config_defaults``)."""
    header = read_script_header(script) if script is not None else []
    source = f"{script} '# mlsub:' header" if script is not None else "'# mlsub:' header"
    opts = merge_options(
        header,
        overrides,
        header_source=source,
        config_defaults=config_defaults,
        sbatch_header=read_sbatch_header(script) if script is not None else None,
    )
    base = narrowed(load_cluster(cluster, now=clock.now()), opts.narrowing)
    params = params_for(opts)
    with store.planning(cluster_name) as tx:
        now = clock.now()
        stored = tx.reservations(now, epoch=base.epoch, slot_seconds=base.slot_seconds)
        snapshot = base.with_reservations(stored)
        result = plan_job(opts, snapshot, params, clock=clock, cluster_source=str(cluster))
        record = tx.record(
            NewDecision(
                request=result.request,
                snapshot=snapshot,
                params=params,
                decision=result.decision,
                user=viewer.user,
                host=host,
                created_at=result.planned_at,
                packages=packages,
            )
        )
    return ReservedPlan(result, record, cluster_name)


# --- reading -----------------------------------------------------------------------------------


def visible(store: DecisionStore, viewer: Viewer, decision_id: int) -> DecisionRecord:
    record = store.get(decision_id)
    if not viewer.is_admin and record.summary.user != viewer.user:
        raise NotFoundError(
            f"no decision {decision_id} of user {viewer.user!r}",
            hint="list your decisions with: mlsub history",
            context={"decision_id": decision_id},
        )
    return record


def own_user(viewer: Viewer, user: str | None) -> str | None:
    """The ``--user`` a listing may use: any (or all) for an admin, else the viewer's own."""
    if viewer.is_admin:
        return user
    if user not in (None, viewer.user):
        raise InputError(
            f"user {viewer.user!r} may only list their own decisions, not {user!r}",
            hint="admins (config key 'admins', and root) may list every user's",
            context={"option": "--user", "value": user},
        )
    return viewer.user


def history(
    store: DecisionStore, viewer: Viewer, where: HistoryFilter = HistoryFilter()
) -> tuple[DecisionRow, ...]:
    """The decisions ``viewer`` may see that match ``where``, oldest first."""
    if not viewer.is_admin:
        if where.user not in (None, viewer.user):
            raise InputError(
                f"user {viewer.user!r} may only list their own decisions, not {where.user!r}",
                hint="admins (config key 'admins', and root) may list every user's",
                context={"option": "--user", "value": where.user},
            )
        where = HistoryFilter(viewer.user, where.since, where.state, where.cluster, where.limit)
    return tuple(DecisionRow(s) for s in store.history(where))


def show(store: DecisionStore, viewer: Viewer, decision_id: int) -> DecisionView:
    return DecisionView(visible(store, viewer, decision_id))


def export(
    store: DecisionStore, viewer: Viewer, where: HistoryFilter = HistoryFilter()
) -> tuple[DecisionView, ...]:
    """Every visible decision in full (solver inputs included), oldest first."""
    rows = history(store, viewer, where)
    return tuple(DecisionView(store.get(r.summary.decision_id), full=True) for r in rows)


def release(store: DecisionStore, viewer: Viewer, decision_id: int, now: datetime) -> DecisionRow:
    """Give a planned reservation back (state ``released``)."""
    visible(store, viewer, decision_id)
    try:
        moved = store.transition(
            decision_id, DecisionState.RELEASED, now, f"released by {viewer.user}"
        )
    except InvalidTransitionError as err:
        err.hint = (
            f"only planned decisions can be released (a submitted job is cancelled with "
            f"scancel, and reconcile records it); see: mlsub show {decision_id}"
        )
        raise
    return DecisionRow(moved.summary)


# --- explain -----------------------------------------------------------------------------------


def explain(store: DecisionStore, viewer: Viewer, decision_id: int) -> Explanation:
    """Why the decision is what it is, and a re-solve from its stored inputs that must
    reproduce it exactly (every field but :data:`NOT_REPRODUCED`)."""
    record = visible(store, viewer, decision_id)
    d, snap = record.decision, record.snapshot
    stored_digest = codec.digest(codec.dumps(codec.encode_snapshot(snap)))
    return Explanation(
        decision_id=record.decision_id,
        job_id=d.job_id,
        policy=d.policy,
        form=d.form.value,
        seed=d.seed,
        mode=d.mode.value,
        why=tuple(_why(d, record)),
        lp_deadline_slot=d.lp_deadline,
        lp_deadline=None if d.lp_deadline is None else snap.slot_start(d.lp_deadline + 1),
        lp_value=d.lp_value,
        start_slot=d.start_slot,
        end_slot=d.end_slot,
        trials=d.trials,
        kept_trial=d.kept_trial,
        kept_because=d.kept_because,
        repair_actions=tuple(d.repair_actions),
        binding=binding_resources(d, record, snap),
        alternatives=alternatives(record),
        snapshot_sha256=record.snapshot_sha256,
        snapshot_digest_ok=stored_digest == record.snapshot_sha256,
        resolved=resolve(record),
    )


#: Other ways to place the job that ``explain`` re-solves on the stored snapshot: what plain
#: Slurm would have done (first fit of all N workers), and the paper's elastic form.
WHAT_IF: tuple[tuple[str, str, bool], ...] = (
    ("plain Slurm (fifo-ff: all workers at once, first fit)", "fifo-ff", False),
    ("yu-rr, the other form", "yu-rr", True),  # (label, policy, switch the form)
)


def alternatives(record: DecisionRecord) -> tuple[AlternativeRow, ...]:
    """What the decision was chosen among, each with its predicted completion:

    * the rounding trials the policy drew (``Decision.rounding``): before repair, with
      their capacity violations, work covered by the LP deadline and end, and their end
      after repair; ``kept`` marks the one the policy recorded (``Decision.kept_trial``),
      with why (``kept_because``; for a decision stored before policies recorded it, the
      storage codec's re-derivation, :data:`~slurm_mlsched.model.decision.LEGACY_KEPT_BECAUSE`);
    * what-if re-solves on the stored inputs (:data:`WHAT_IF`), deterministic like the
      decision itself.
    """
    d, snap, req = record.decision, record.snapshot, record.request
    out: list[AlternativeRow] = [_alternative("chosen", d, snap, req.arrival_slot)]
    out += _trials(d, snap, req.arrival_slot)
    for label, policy, switch_form in WHAT_IF:
        params = record.params
        if switch_form:
            other = Form.ELASTIC if d.form == Form.NON_ELASTIC else Form.NON_ELASTIC
            params = replace(params, form=other)
            label = f"yu-rr, {other.value} form"
        try:
            alt = place(req, snap, policy, params)
        except Exception as exc:  # an alternative that cannot be built is reported, not raised
            out.append(FailedAlternative(label, f"{type(exc).__name__}: {exc}"))
            continue
        out.append(_alternative(label, alt, snap, req.arrival_slot))
    return tuple(out)


def _alternative(kind: str, d: Decision, snap: ClusterSnapshot, arrival: int) -> Alternative:
    first = d.slots[0] if d.slots else None
    return Alternative(
        kind=kind,
        policy=d.policy,
        form=d.form.value,
        mode=d.mode.value,
        workers=first.total_workers if first else 0,
        ps=first.total_ps if first else 0,
        start_slot=d.start_slot,
        end_slot=d.end_slot,
        start=snap.slot_start(d.start_slot),
        end=snap.slot_start(d.end_slot + 1),
        completion_slots=d.end_slot - arrival + 1,
    )


def _trials(d: Decision, snap: ClusterSnapshot, arrival: int) -> list[TrialOutcome]:
    """A row per rounding trial of ``d.rounding``, ``kept`` on the one ``d.kept_trial``
    names (with ``kept_because``)."""
    return [
        TrialOutcome(
            trial=t,
            end=None if t.end_slot is None else snap.slot_start(t.end_slot + 1),
            completion_slots=None if t.end_slot is None else t.end_slot - arrival + 1,
            kept=t.index == d.kept_trial,
            kept_because=d.kept_because if t.index == d.kept_trial else "",
        )
        for t in d.rounding
    ]


def resolve(record: DecisionRecord) -> Resolve:
    """Re-run ``place()`` on the stored request, snapshot, policy and parameters."""
    try:
        again = place(record.request, record.snapshot, record.decision.policy, record.params)
    except Exception as exc:  # a re-solve that fails is a finding, not a crash
        return Resolve(False, (), f"{type(exc).__name__}: {exc}")
    diff = decision_diff(record.decision, again)
    return Resolve(not diff, diff, None)


def decision_diff(stored: Decision, again: Decision) -> tuple[FieldDiff, ...]:
    a, b = codec.encode_decision(stored), codec.encode_decision(again)
    skip = NOT_REPRODUCED + (NOT_RECORDED_BEFORE if stored.kept_rederived else ())
    return tuple(
        FieldDiff(key, a[key], b[key])
        for key in sorted(a)
        if key not in skip and codec.dumps(a[key]) != codec.dumps(b[key])
    )


def _why(d: Decision, record: DecisionRecord) -> list[str]:
    req = record.request
    plan = d.slots[0] if d.slots else None
    lines: list[str] = []
    notes = list(d.notes)
    if d.solver == "fast-path":
        # the policy's own note says which fast path it took (co-located, or the fastest
        # shape); it leads the explanation rather than repeating among the notes
        said = next((n for n in notes if n.startswith("exact fast path")), None)
        if said is not None:
            notes.remove(said)
        lines.append(f"{said or 'exact fast path'} for its whole run, which is optimal for the job")
    elif d.lp_deadline is not None:
        kept = d.kept_text or f"the best of {d.trials} trial(s)"
        lines.append(
            f"LP relaxation: the smallest feasible window ends at slot {d.lp_deadline} "
            f"(objective {d.lp_value:.6g}); randomized rounding kept {kept}"
        )
    if plan is not None:
        nodes = len({n for n, c in plan.workers + plan.ps if c})
        where = "one node" if nodes == 1 else f"{nodes} nodes"
        lines.append(
            f"mode {plan.mode.value}: {plan.total_workers} of at most {req.max_workers} "
            f"worker(s) and {plan.total_ps} PS(s) on {where}, slots {d.start_slot}–{d.end_slot}"
        )
        if req.is_allreduce and plan.total_workers:
            lines.append(_ring_line(req, plan))
    if d.start_slot > req.arrival_slot:
        lines.append(
            f"starts {d.start_slot - req.arrival_slot} slot(s) after arrival: capacity was "
            "reserved before that"
        )
        lines.extend(wait_reasons(d, record))
    lines.extend(f"repair: {a}" for a in d.repair_actions)
    lines.extend(f"note: {n}" for n in notes)
    if req.gpu_speed != 1.0:
        lines.append(_speed_line(req, record.snapshot))
    return lines


def _speed_line(req: JobRequest, snap: ClusterSnapshot) -> str:
    """The GPU speed the job was planned at (docs/formulation.md §17)."""
    slowest = slowest_machine(req, snap)
    where = ""
    if slowest is not None and slowest.gpu_speed == req.gpu_speed:
        kind = slowest.gpu_type or "untyped"
        where = f" of GPU type {kind} (node {slowest.name}), the slowest it may run on"
    what = "compute time τ" if req.is_allreduce else "time per mini-batch"
    return f"GPU speed ×{req.gpu_speed:g}{where}: its {what} is the profile's ÷ {req.gpu_speed:g}"


def _ring_line(req: JobRequest, plan: SlotPlan) -> str:
    """An allreduce job's architecture and its ring's slowest link (formulation §18); a
    ps job's explanation names no architecture (its lines are as they were)."""
    ring = ring_summary(layout_of(plan), req.profile)
    return f"architecture allreduce (no PS): {ring.describe()}"


def wait_reasons(d: Decision, record: DecisionRecord) -> list[str]:
    """Why a job starts after its arrival, from the stored snapshot: for each node of its
    placement, the slots in which the same tasks did not fit there (any start between the
    arrival and the chosen start would have used them), what they needed and the least
    that was free, and every job holding that node in those slots (until when)."""
    req, snap = record.request, record.snapshot
    plan = d.slots[0] if d.slots else None
    if plan is None:
        return []
    a = req.arrival_slot
    length = d.end_slot - d.start_slot + 1
    horizon = range(a, max(d.start_slot + length - 1, a + 1))  # slots an earlier start used
    out: list[str] = []
    for node, need in sorted(plan.usage(req).items()):
        capacity = snap.machines[snap.machine_index()[node]].capacity.as_tuple()
        mine = [r for r in snap.reservations if r.machine == node]
        short: dict[int, tuple[float, float, float]] = {}  # slot -> room, where need > room
        for t in horizon:
            used = [0.0, 0.0, 0.0]
            for r in mine:
                if r.start_slot <= t < r.end_slot:
                    used = [u + x for u, x in zip(used, r.usage.as_tuple(), strict=True)]
            room = tuple(c - u for c, u in zip(capacity, used, strict=True))
            if any(n > f + 1e-9 for n, f in zip(need.as_tuple(), room, strict=True)):
                short[t] = (room[0], room[1], room[2])
        if not short:
            continue
        lacking = [
            f"{label} {n:g} (free {max(min(room[k] for room in short.values()), 0):g})"
            for k, (label, n) in enumerate(
                zip(("GPUs", "CPUs", "MiB"), need.as_tuple(), strict=True)
            )
            if any(n > room[k] + 1e-9 for room in short.values())
        ]
        held: dict[str, int] = {}
        for r in mine:
            if any(r.start_slot <= t < r.end_slot for t in short):
                held[r.job_id or "?"] = max(held.get(r.job_id or "?", 0), r.end_slot)
        jobs = ", ".join(f"{j} until slot {e}" for j, e in sorted(held.items(), key=lambda x: x[1]))
        first, last = min(short), max(short)
        when = f"slot {first}" if first == last else f"slots {first}–{last}"
        out.append(f"waited for {node}: needs {', '.join(lacking)} in {when}; held by {jobs}")
    return out


def binding_resources(
    d: Decision, record: DecisionRecord, snap: ClusterSnapshot
) -> tuple[BindingResource, ...]:
    """Per node used in the start slot: its tightest resource after this decision (share of
    capacity held by reservations plus this job)."""
    if not d.slots:
        return ()
    plan, t = d.slots[0], d.slots[0].slot
    usage = plan.usage(record.request)
    caps = {m.name: m.capacity for m in snap.machines}
    out = []
    for node, use in sorted(usage.items()):
        held = [0.0, 0.0, 0.0]
        for r in snap.reservations:
            if r.machine == node and r.start_slot <= t < r.end_slot:
                held = [h + x for h, x in zip(held, r.usage.as_tuple(), strict=True)]
        shares = []
        for i, name in enumerate(RESOURCE_NAMES):
            cap = caps[node].as_tuple()[i]
            if cap > 0:
                shares.append(((held[i] + use.as_tuple()[i]) / cap, name))
        share, name = max(shares) if shares else (0.0, "none")
        out.append(BindingResource(node, name, round(share, 6)))
    return tuple(out)


# --- shapes -------------------------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def has_queued(store: DecisionStore, cluster_name: str) -> bool:
    """Whether jobs wait in mlsub's queue on ``cluster_name`` (late binding)."""
    return bool(
        store.history(HistoryFilter(state=DecisionState.QUEUED, cluster=cluster_name, limit=1))
    )
