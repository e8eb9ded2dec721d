"""``mlsub plan --for-sbatch SCRIPT``: a placement for a plain ``sbatch`` (the cli_filter
plugin's ``plan`` mode; the contract is in docs/admin-plugins.md).

The user's own script is submitted by their ``sbatch``, not by mlsub, so only what sbatch
options can say is filled in: the nodes (``--nodelist``, ``--nodes``), the task count
(``--ntasks``), a later start (``--begin=now+SECONDS``, relative so that sbatch's time
zone does not matter) and the decision tag for ``--comment``. The per-node role counts of
the decision are the script's business (it runs its own ``srun``); the message says so.

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
from ..sbatch.tag import DecisionTag
from ..storage import DecisionRecord
from .plan import PlanResult
from .submit import LiveWiring, plan_live, read_live_state, record_submitting, tag_of


@dataclass(frozen=True)
class SbatchPlacement:
    plan: PlanResult
    record: DecisionRecord
    tag: DecisionTag
    nodes: tuple[str, ...]
    ntasks: int
    begin_in_s: int | None  # seconds from now, when the decision starts later

    def lines(self) -> list[str]:
        """The ``KEY=VALUE`` lines the cli_filter plugin reads."""
        out = [
            f"nodelist={','.join(self.nodes)}",
            f"nodes={len(self.nodes)}",
            f"ntasks={self.ntasks}",
            f"comment={self.tag}",
        ]
        if self.begin_in_s is not None:
            out.append(f"begin=now+{self.begin_in_s}")
        d = self.plan.decision
        roles = ", ".join(f"{r.node}: {r.count} {r.role.value}" for r in d.placement)
        out.append(
            f"message=mlsub decision {self.record.decision_id} ({d.mode.value}): {roles}; "
            "your script starts the tasks (srun), mlsub's own scripts do it per role: "
            "mlsub submit"
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
        _, plan = plan_live(wiring, tx, state, opts, opts.name or script.stem)
        record = record_submitting(replace(wiring, process=None), tx, plan)
        tx.attach_script(record.decision_id, text)
    d, snap = plan.decision, plan.snapshot
    nodes = tuple(dict.fromkeys(r.node for r in d.placement))
    start = snap.slot_start(d.start_slot)
    wait = (start - (now or plan.planned_at)).total_seconds()
    begin = math.ceil(wait) if d.start_slot > snap.now_slot and wait > 0 else None
    return SbatchPlacement(
        plan=plan,
        record=record,
        tag=tag_of(wiring.cluster_name, record.summary),
        nodes=nodes,
        ntasks=sum(r.count for r in d.placement),
        begin_in_s=begin,
    )
