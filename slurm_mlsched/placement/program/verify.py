"""Invariants every decision must satisfy, checked from the outside (pure; formulation §7).

Used by the property tests, the benchmarks and ``mlsub explain``: capacity is never
exceeded in any slot (counting the snapshot's reservations), the work is covered, the PS
rules hold in every slot, nothing runs before the arrival, the non-elastic form keeps
its counts constant, and no task that uses GPUs sits on a node the job's GPU types exclude
(:mod:`slurm_mlsched.model.eligibility`).
"""

from __future__ import annotations

from collections import defaultdict

from ...model import ClusterSnapshot, Decision, Form, JobRequest, Mode, Resources, SlotPlan
from ...model.eligibility import gpu_types_text, ineligible_use
from ...model.speed import plan_rate

EPS = 1e-6


def check_decision(decision: Decision, job: JobRequest, snapshot: ClusterSnapshot) -> list[str]:
    """Return the list of broken invariants (empty when the decision is valid)."""
    problems: list[str] = []
    caps = {m.name: m.capacity for m in snapshot.machines}
    work = 0.0
    if not decision.slots:
        return ["decision has no running slot"]
    if (
        decision.form == Form.NON_ELASTIC
        and len({(p.workers, p.ps, p.mode) for p in decision.slots}) > 1
    ):
        problems.append("non-elastic decision changes its counts")
    prev_stop = None
    for plan in decision.slots:
        if plan.slot < job.arrival_slot:
            problems.append(f"slot {plan.slot}: runs before arrival {job.arrival_slot}")
        if prev_stop is not None and plan.slot < prev_stop:
            problems.append(f"slot {plan.slot}: plans overlap or are out of order")
        prev_stop = plan.stop
        if (
            decision.form == Form.NON_ELASTIC
            and prev_stop is not None
            and plan.slot != decision.start_slot
        ):
            problems.append(f"slot {plan.slot}: non-elastic decision is not one run")
        w, s = plan.total_workers, plan.total_ps
        if w < 1:
            problems.append(f"slot {plan.slot}: no worker in a running slot")
        if w > job.max_workers:
            problems.append(f"slot {plan.slot}: {w} workers > max {job.max_workers}")
        nodes = {n for n, c in plan.workers if c} | {n for n, c in plan.ps if c}
        unknown = nodes - set(caps)
        if unknown:
            problems.append(f"slot {plan.slot}: unknown node(s) {sorted(unknown)}")
        known = [m for m in snapshot.machines if m.name in nodes]
        bad = ineligible_use(
            job,
            known,
            [n for n, c in plan.workers if c],
            [n for n, c in plan.ps if c],
        )
        if bad:
            problems.append(
                f"slot {plan.slot}: GPU task(s) on node(s) {list(bad)} whose GPU type is not "
                f"one the job allows ({gpu_types_text(job.gpu_types)})"
            )
        work += plan_rate(plan, job, snapshot.slot_seconds) * plan.length
        if job.is_allreduce:
            problems += _allreduce_rules(plan, nodes)
        elif plan.mode == Mode.COLOCATED:
            if len(nodes) != 1 or s != 1:
                problems.append(
                    f"slot {plan.slot}: co-located needs one machine and one PS "
                    f"(nodes={sorted(nodes)}, ps={s})"
                )
        else:
            need = job.ps_needed(w)
            if job.ps_count is not None and s != job.ps_count:
                problems.append(f"slot {plan.slot}: {s} PSs but the job fixes {job.ps_count}")
            if job.ps_count is None and s < need:
                problems.append(f"slot {plan.slot}: {s} PSs < {need} required for {w} workers")
            if s > w or s < 1:
                problems.append(f"slot {plan.slot}: PS count {s} outside [1, workers={w}]")
            if w > job.max_distributed_workers():
                problems.append(
                    f"slot {plan.slot}: {w} distributed workers > "
                    f"{job.max_distributed_workers()} allowed by the PS rule"
                )
    if work < job.workload * (1 - 1e-9) - EPS:
        problems.append(f"work covered {work:.3f} < workload {job.workload:.3f}")
    problems += _capacity(decision, job, snapshot, caps)
    return problems


def _allreduce_rules(plan: SlotPlan, nodes: set[str]) -> list[str]:
    """An allreduce slot has no PS task; co-located means one node (its work is the ring
    formula's for its layout, counted by the caller)."""
    out: list[str] = []
    if plan.total_ps:
        out.append(f"slot {plan.slot}: {plan.total_ps} PS task(s) in an allreduce job")
    if plan.mode == Mode.COLOCATED and len(nodes) != 1:
        out.append(f"slot {plan.slot}: co-located needs one machine (nodes={sorted(nodes)})")
    return out


def _capacity(
    decision: Decision, job: JobRequest, snapshot: ClusterSnapshot, caps: dict[str, Resources]
) -> list[str]:
    problems: list[str] = []
    for plan in decision.slots:
        usage = plan.usage(job)
        for t in range(plan.slot, plan.stop):
            held: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
            for r in snapshot.reservations:
                if r.start_slot <= t < r.end_slot and r.machine in usage:
                    for i, x in enumerate(r.usage.as_tuple()):
                        held[r.machine][i] += x
            for name, use in usage.items():
                total = [u + h for u, h in zip(use.as_tuple(), held[name], strict=True)]
                if any(x > c + EPS for x, c in zip(total, caps[name].as_tuple(), strict=True)):
                    problems.append(
                        f"slot {t}: node {name} over capacity ({total} > {caps[name].as_tuple()})"
                    )
                    break
            if problems:
                return problems  # one is enough to fail; keep the report short
    return problems
