"""``mlsub plan --for-sbatch SCRIPT``: a placement for a plain ``sbatch`` (the cli_filter
plugin's ``plan`` mode; the contract is in docs/admin-plugins.md).

The user's own script is submitted by their ``sbatch``, not by mlsub, so only what sbatch
options can say is filled in: the nodes (``--nodelist``, ``--nodes``), the task count
(``--ntasks``), a later start (``--begin=now+SECONDS``, relative so that sbatch's time
zone does not matter) and the decision tag for ``--comment``. The per-node role counts of
the decision are the script's business (it runs its own ``srun``); the message says so.

Late binding (``services/replan.py``): a job that cannot start now is told to wait held
(``hold=1`` instead of ``begin``; the plugin sets ``--hold``); its decision holds nothing,
reconcile finds the held job by its tag (``queued``), and the re-plan that starts it sets
the held job's nodes and task count (``scontrol update``: it is not a heterogeneous job)
and releases it — the user's own script runs unchanged.

The decision is recorded as ``submitting`` (its script: the user's script text) under the
cluster's planning lock, exactly as ``mlsub submit`` does before its own sbatch; ``mlsub
reconcile`` then finds the job by the tag (``submitted`` …) or, if the user's sbatch never
ran, marks it ``submit-failed`` once it is stale. No submitting process is recorded: the
sbatch that submits it is the user's, which goes on after this process has exited, so
reconcile goes by the decision's age (``--stale-after``, an hour by default) and repairs
the decision should the job still turn up later.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from ..errors import InputError
from ..files.job_options import JobOptions
from ..placement.registry import get_queue
from ..sbatch.tag import DecisionTag
from ..storage import DecisionRecord
from .live_queue import LiveWiring, tag_of
from .plan import PlanResult
from .submit import bind_late, plan_live, read_live_state, record_submitting


@dataclass(frozen=True)
class SbatchPlacement:
    plan: PlanResult
    record: DecisionRecord
    tag: DecisionTag
    nodes: tuple[str, ...]
    ntasks: int
    begin_in_s: int | None  # seconds from now, when the decision starts later
    hold: bool = False  # it cannot start now: it waits held in mlsub's queue (late binding)

    def lines(self) -> list[str]:
        """The ``KEY=VALUE`` lines the cli_filter plugin reads."""
        out = [
            f"nodelist={','.join(self.nodes)}",
            f"nodes={len(self.nodes)}",
            f"ntasks={self.ntasks}",
            f"comment={self.tag}",
        ]
        if self.hold:
            out.append("hold=1")
        elif self.begin_in_s is not None:
            out.append(f"begin=now+{self.begin_in_s}")
        d = self.plan.decision
        roles = ", ".join(f"{r.node}: {r.count} {r.role.value}" for r in d.placement)
        out.append(
            f"message=mlsub decision {self.record.decision_id} ({d.mode.value}): {roles}; "
            "your script starts the tasks (srun), mlsub's own scripts do it per role: "
            "mlsub submit"
            + (
                "; it cannot start now: it waits held in mlsub's queue (mlsub queue), and a "
                "re-plan sets its nodes and releases it"
                if self.hold
                else ""
            )
        )
        return out


def plan_for_sbatch(
    wiring: LiveWiring, opts: JobOptions, script: Path, *, now: datetime | None = None
) -> SbatchPlacement:
    """Place the job of ``script`` (its ``# mlsub:`` header and ``opts``) for the user's
    own sbatch, and record the decision as ``submitting``."""
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(
            f"cannot read job script {script}: {exc.strerror or exc}",
            context={"file": str(script)},
        ) from None
    state = read_live_state(wiring, opts)
    with wiring.store.planning(wiring.cluster_name) as tx:
        cluster, plan = plan_live(wiring, tx, state, opts, opts.name or script.stem)
        waits = False
        if wiring.held_submitter is not None and get_queue(opts.policy, plan.params):
            plan, waits = bind_late(tx, cluster.snapshot, plan)
        record = record_submitting(replace(wiring, process=None), tx, plan, holds=not waits)
        tx.attach_script(record.decision_id, text)
    d, snap = plan.decision, plan.snapshot
    nodes = tuple(dict.fromkeys(r.node for r in d.placement))
    start = snap.slot_start(d.start_slot)
    wait = (start - (now or plan.planned_at)).total_seconds()
    begin = math.ceil(wait) if d.start_slot > snap.now_slot and wait > 0 and not waits else None
    return SbatchPlacement(
        plan=plan,
        record=record,
        tag=tag_of(wiring.cluster_name, record.summary),
        nodes=nodes,
        ntasks=sum(r.count for r in d.placement),
        begin_in_s=begin,
        hold=waits,
    )
