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
from typing import Any

from ..errors import InputError, InvalidTransitionError, NotFoundError
from ..files.cluster_file import load_cluster
from ..files.job_options import merge_options, read_script_header
from ..model import RESOURCE_NAMES, ClusterSnapshot, Decision, Form, NodeCount
from ..placement import place
from ..storage import (
    DecisionRecord,
    DecisionState,
    DecisionStore,
    DecisionSummary,
    HistoryFilter,
    NewDecision,
    codec,
)
from .clock import Clock
from .plan import PlanResult, params_for, plan_job
from .viewer import Viewer

#: Fields of a decision that a re-solve need not reproduce (wall-time measurements).
NOT_REPRODUCED = ("timings_ms",)


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
) -> ReservedPlan:
    """Plan against the cluster file plus every stored reservation, and record the decision
    as ``planned``, all under the cluster's planning lock (so concurrent calls never
    double-book)."""
    header = read_script_header(script) if script is not None else []
    source = f"{script} '# mlsub:' header" if script is not None else "'# mlsub:' header"
    opts = merge_options(header, overrides, header_source=source)
    base = load_cluster(cluster, now=clock.now())
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


def write_private(path: Path, text: str) -> None:
    """``text`` into ``path`` (mode 0600: a report shows every user's jobs an admin sees),
    written beside it and renamed, never through a symbolic link."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def history(
    store: DecisionStore, viewer: Viewer, where: HistoryFilter = HistoryFilter()
) -> list[dict[str, Any]]:
    """The decisions ``viewer`` may see that match ``where``, oldest first."""
    if not viewer.is_admin:
        if where.user not in (None, viewer.user):
            raise InputError(
                f"user {viewer.user!r} may only list their own decisions, not {where.user!r}",
                hint="admins (config key 'admins', and root) may list every user's",
                context={"option": "--user", "value": where.user},
            )
        where = HistoryFilter(viewer.user, where.since, where.state, where.cluster, where.limit)
    return [summary_dict(s) for s in store.history(where)]


def show(store: DecisionStore, viewer: Viewer, decision_id: int) -> dict[str, Any]:
    return record_dict(visible(store, viewer, decision_id))


def export(
    store: DecisionStore, viewer: Viewer, where: HistoryFilter = HistoryFilter()
) -> list[dict[str, Any]]:
    """Every visible decision in full (solver inputs included), oldest first."""
    rows = history(store, viewer, where)
    return [record_dict(store.get(int(r["decision_id"])), full=True) for r in rows]


def release(
    store: DecisionStore, viewer: Viewer, decision_id: int, now: datetime
) -> dict[str, Any]:
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
    return summary_dict(moved.summary)


# --- explain -----------------------------------------------------------------------------------


def explain(store: DecisionStore, viewer: Viewer, decision_id: int) -> dict[str, Any]:
    """Why the decision is what it is, and a re-solve from its stored inputs that must
    reproduce it exactly (every field but :data:`NOT_REPRODUCED`)."""
    record = visible(store, viewer, decision_id)
    d, snap = record.decision, record.snapshot
    stored_digest = codec.digest(codec.dumps(codec.encode_snapshot(snap)))
    return {
        "decision_id": record.decision_id,
        "job_id": d.job_id,
        "policy": d.policy,
        "form": d.form.value,
        "seed": d.seed,
        "mode": d.mode.value,
        "why": _why(d, record),
        "lp_deadline_slot": d.lp_deadline,
        "lp_deadline": None if d.lp_deadline is None else _iso(snap.slot_start(d.lp_deadline + 1)),
        "lp_value": d.lp_value,
        "start_slot": d.start_slot,
        "end_slot": d.end_slot,
        "trials": d.trials,
        "repair_actions": list(d.repair_actions),
        "binding": binding_resources(d, record, snap),
        "alternatives": alternatives(record),
        "snapshot_sha256": record.snapshot_sha256,
        "snapshot_digest_ok": stored_digest == record.snapshot_sha256,
        **resolve(record),
    }


#: Other ways to place the job that ``explain`` re-solves on the stored snapshot: what plain
#: Slurm would have done (first fit of all N workers), and the paper's elastic form.
WHAT_IF: tuple[tuple[str, str, bool], ...] = (
    ("plain Slurm (fifo-ff: all workers at once, first fit)", "fifo-ff", False),
    ("yu-rr, the other form", "yu-rr", True),  # (label, policy, switch the form)
)


def alternatives(record: DecisionRecord) -> list[dict[str, Any]]:
    """What the decision was chosen among, each with its predicted completion:

    * the rounding trials the policy drew (from the decision's ``trial<k>:*`` stats):
      before repair, with their capacity violations, work covered by the LP deadline and
      end, and their end after repair; the kept one is the one the policy recorded
      (``kept_trial``: the earliest end after repair), or for older decisions the first by
      (violations, −work, end);
    * what-if re-solves on the stored inputs (:data:`WHAT_IF`), deterministic like the
      decision itself.
    """
    d, snap, req = record.decision, record.snapshot, record.request
    out: list[dict[str, Any]] = [_alternative("chosen", d, snap, req.arrival_slot)]
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
            out.append({"kind": label, "error": f"{type(exc).__name__}: {exc}"})
            continue
        out.append(_alternative(label, alt, snap, req.arrival_slot))
    return out


def _alternative(kind: str, d: Decision, snap: ClusterSnapshot, arrival: int) -> dict[str, Any]:
    first = d.slots[0] if d.slots else None
    return {
        "kind": kind,
        "policy": d.policy,
        "form": d.form.value,
        "mode": d.mode.value,
        "workers": first.total_workers if first else 0,
        "ps": first.total_ps if first else 0,
        "start_slot": d.start_slot,
        "end_slot": d.end_slot,
        "start": _iso(snap.slot_start(d.start_slot)),
        "end": _iso(snap.slot_start(d.end_slot + 1)),
        "completion_slots": d.end_slot - arrival + 1,
    }


def _trials(d: Decision, snap: ClusterSnapshot, arrival: int) -> list[dict[str, Any]]:
    by_trial: dict[int, dict[str, float]] = {}
    for key, value in d.stats:
        name, sep, field = key.partition(":")
        if sep and name.startswith("trial") and name[5:].isdigit():
            by_trial.setdefault(int(name[5:]), {})[field] = value
    rows = []
    for k in sorted(by_trial):
        t = by_trial[k]
        row: dict[str, Any] = {
            "kind": f"rounding trial {k}",
            "violations": int(t.get("violations", 0)),
            "work_fraction": t.get("work_fraction"),
        }
        end = t.get("end_slot")
        if end is not None and end >= 0:
            row.update(
                end_slot=int(end),
                end=_iso(snap.slot_start(int(end) + 1)),
                completion_slots=int(end) - arrival + 1,
                workers=int(t.get("workers", 0)),
                start_slot=int(t.get("start_slot", 0)),
                mode="colocated" if t.get("colocated") else "distributed",
            )
        rows.append(row)
    for k, row in zip(sorted(by_trial), rows, strict=True):
        repaired = by_trial[k].get("repaired_end_slot")
        if repaired is not None and repaired >= 0:
            row["repaired_end_slot"] = int(repaired)
            row["repaired_workers"] = int(by_trial[k].get("repaired_workers", 0))
    if rows:
        kept = dict(d.stats).get("kept_trial")
        if kept is not None:  # the policy records which trial it kept (after repair)
            best = sorted(by_trial).index(int(kept))
        else:  # decisions before the rule changed: fewest violations, most work, end
            best = min(
                range(len(rows)),
                key=lambda i: (
                    rows[i]["violations"],
                    -(rows[i]["work_fraction"] or 0.0),
                    rows[i].get("end_slot", 1 << 60),
                ),
            )
        for i, row in enumerate(rows):
            row["kept"] = i == best
    return rows


def resolve(record: DecisionRecord) -> dict[str, Any]:
    """Re-run ``place()`` on the stored request, snapshot, policy and parameters."""
    try:
        again = place(record.request, record.snapshot, record.decision.policy, record.params)
    except Exception as exc:  # a re-solve that fails is a finding, not a crash
        return {"reproduced": False, "diff": [], "resolve_error": f"{type(exc).__name__}: {exc}"}
    diff = decision_diff(record.decision, again)
    return {"reproduced": not diff, "diff": diff, "resolve_error": None}


def decision_diff(stored: Decision, again: Decision) -> list[dict[str, Any]]:
    a, b = codec.encode_decision(stored), codec.encode_decision(again)
    return [
        {"field": key, "stored": a[key], "resolved": b[key]}
        for key in sorted(a)
        if key not in NOT_REPRODUCED and codec.dumps(a[key]) != codec.dumps(b[key])
    ]


def _why(d: Decision, record: DecisionRecord) -> list[str]:
    req = record.request
    plan = d.slots[0] if d.slots else None
    lines: list[str] = []
    if d.solver == "fast-path":
        lines.append(
            "exact fast path: all workers and one PS fit co-located on one node from the "
            "job's arrival for its whole run, which is optimal for the job"
        )
    elif d.lp_deadline is not None:
        lines.append(
            f"LP relaxation: the smallest feasible window ends at slot {d.lp_deadline} "
            f"(objective {d.lp_value:.6g}); randomized rounding kept the best of "
            f"{d.trials} trial(s)"
        )
    if plan is not None:
        nodes = len({n for n, c in plan.workers + plan.ps if c})
        where = "one node" if nodes == 1 else f"{nodes} nodes"
        lines.append(
            f"mode {plan.mode.value}: {plan.total_workers} of at most {req.max_workers} "
            f"worker(s) and {plan.total_ps} PS(s) on {where}, slots {d.start_slot}–{d.end_slot}"
        )
    if d.start_slot > req.arrival_slot:
        lines.append(
            f"starts {d.start_slot - req.arrival_slot} slot(s) after arrival: capacity was "
            "reserved before that"
        )
        lines.extend(wait_reasons(d, record))
    lines.extend(f"repair: {a}" for a in d.repair_actions)
    lines.extend(f"note: {n}" for n in d.notes)
    return lines


def wait_reasons(d: Decision, record: DecisionRecord) -> list[str]:
    """Why a job starts after its arrival, from the stored snapshot: for each node of its
    placement, what the same tasks would have needed there from the arrival on, what was
    free, and which jobs held the rest (until when)."""
    req, snap = record.request, record.snapshot
    plan = d.slots[0] if d.slots else None
    if plan is None:
        return []
    a = req.arrival_slot
    length = d.end_slot - d.start_slot + 1
    out: list[str] = []
    for node, need in sorted(plan.usage(req).items()):
        free = snap.machines[snap.machine_index()[node]].capacity
        held: dict[str, int] = {}
        used = [0.0, 0.0, 0.0]
        for r in snap.reservations:
            if r.machine == node and r.start_slot < a + length and r.end_slot > a:
                held[r.job_id or "?"] = max(held.get(r.job_id or "?", 0), r.end_slot)
                used = [u + x for u, x in zip(used, r.usage.as_tuple(), strict=True)]
        room = [c - u for c, u in zip(free.as_tuple(), used, strict=True)]
        short = [
            f"{label} {n:g} (free {max(f, 0):g})"
            for label, n, f in zip(("GPUs", "CPUs", "MiB"), need.as_tuple(), room, strict=True)
            if n > f + 1e-9
        ]
        if not short:
            continue
        jobs = ", ".join(f"{j} until slot {e}" for j, e in sorted(held.items(), key=lambda x: x[1]))
        out.append(
            f"waited for {node}: needs {', '.join(short)} over slots {a}–{a + length - 1}; "
            f"held by {jobs}"
        )
    return out


def binding_resources(
    d: Decision, record: DecisionRecord, snap: ClusterSnapshot
) -> list[dict[str, Any]]:
    """Per node used in the start slot: its tightest resource after this decision (share of
    capacity held by reservations plus this job)."""
    if not d.slots:
        return []
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
        out.append({"node": node, "resource": name, "share": round(share, 6)})
    return out


# --- shapes -------------------------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def placement_rows(rows: tuple[NodeCount, ...]) -> list[dict[str, Any]]:
    return [{"node": r.node, "role": r.role.value, "count": r.count} for r in rows]


def summary_dict(s: DecisionSummary) -> dict[str, Any]:
    """The documented shape of one decision in ``mlsub history --json``."""
    return {
        "decision_id": s.decision_id,
        "cluster": s.cluster,
        "created_at": _iso(s.created_at),
        "user": s.user,
        "host": s.host,
        "job_id": s.job_id,
        "job_name": s.job_name,
        "policy": s.policy,
        "form": s.form,
        "mode": s.mode,
        "state": s.state.value,
        "start": _iso(s.start),
        "end": _iso(s.end),
        "start_slot": s.start_slot,
        "end_slot": s.end_slot,
        "placement": placement_rows(s.placement),
        "slurm_job_id": s.slurm_job_id,
    }


def record_dict(r: DecisionRecord, *, full: bool = False) -> dict[str, Any]:
    """``mlsub show --json`` (and, with ``full``, one element of ``mlsub export``)."""
    d, snap = r.decision, r.snapshot
    out = {
        **summary_dict(r.summary),
        "earlier_slurm_job_ids": list(r.earlier_job_ids),
        "seed": r.seed,
        "params": codec.encode_params(r.params),
        "solver": d.solver,
        "solver_version": d.solver_version,
        "packages": dict(r.packages),
        "lp_deadline_slot": d.lp_deadline,
        "lp_value": d.lp_value,
        "trials": d.trials,
        "repair_actions": list(d.repair_actions),
        "slots": [codec.encode_slot_plan(p) for p in d.slots],
        "snapshot_sha256": r.snapshot_sha256,
        "cluster_snapshot": {
            "nodes": len(snap.machines),
            "reservations": len(snap.reservations),
            "slot_seconds": snap.slot_seconds,
            "epoch": _iso(snap.epoch),
            "now_slot": snap.now_slot,
        },
        "script": r.script,
        "transitions": [
            {"state": t.state.value, "at": _iso(t.at), "detail": t.detail} for t in r.transitions
        ],
    }
    if full:
        out["request"] = codec.encode_request(r.request)
        out["snapshot"] = codec.encode_snapshot(snap)
        out["decision"] = codec.encode_decision(d)
    return out


def has_queued(store: DecisionStore, cluster_name: str) -> bool:
    """Whether jobs wait in mlsub's queue on ``cluster_name`` (late binding)."""
    return bool(
        store.history(HistoryFilter(state=DecisionState.QUEUED, cluster=cluster_name, limit=1))
    )
