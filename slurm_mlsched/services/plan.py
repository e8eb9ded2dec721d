"""The ``plan`` use case: decide where and when a job would run, without submitting it.

:func:`plan_job` turns merged :class:`JobOptions` and a cluster snapshot into a
:class:`PlanResult` through the one placement entry point; :func:`plan_from_files` is the
wiring the CLI calls (script header + flags + cluster file + clock). Nothing here prints.

Times in the result: slot ``t`` covers ``[epoch + t·Δ, epoch + (t+1)·Δ)``, so ``start`` is
the beginning of the start slot, ``end`` the end of the last running slot, and
``lp_deadline`` the end of slot D. ``predicted_runtime_s`` is the time model's estimate
from ``start`` to the last mini-batch (MODEL.md §2: each running slot contributes
workers × Δ/θ_mode mini-batches; the last slot is counted in part), so it is at most
``end − start``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from .. import __version__
from ..errors import InputError
from ..files.cluster_file import load_cluster
from ..files.job_options import JobOptions, merge_options, read_script_header, to_request
from ..files.profiles import profiles_version
from ..files.sbatch_lines import read_sbatch_header
from ..model import ClusterSnapshot, Decision, JobRequest, Mode, NodeCount, SlotPlan
from ..model.allreduce import RingSummary, layout_of, ring_summary
from ..model.calibration import ProfileFit, fit_for
from ..model.decision import placement_json
from ..model.gpu_speed import effective_request
from ..model.narrowing import NodeFilter
from ..model.speed import plan_rate
from ..placement import PlacementParams, place
from .clock import Clock

#: Version of the ``mlsub plan --json`` shape; bump on any incompatible change.
PLAN_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SlotRun:
    """A run of identical slots of the schedule, ``[first_slot, last_slot]``: from the
    beginning of the first to the end of the last, the mode, the total worker and PS
    counts and the per-node counts."""

    first_slot: int
    last_slot: int
    start: datetime
    end: datetime
    mode: Mode
    workers: int
    ps: int
    placement: tuple[NodeCount, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "first_slot": self.first_slot,
            "last_slot": self.last_slot,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "mode": str(self.mode),
            "workers": self.workers,
            "ps": self.ps,
            "placement": placement_json(self.placement),
        }


@dataclass(frozen=True)
class PlanResult:
    """A plan and everything needed to explain it: the decision, the job and the
    snapshot it was placed on, the parameters and options, when it was planned and how
    long placing took (``decision_ms``), and where the cluster came from
    (``cluster_source``: the cluster file, or ``Slurm (SOURCE)``)."""

    decision: Decision
    request: JobRequest
    snapshot: ClusterSnapshot
    params: PlacementParams
    opts: JobOptions
    planned_at: datetime
    decision_ms: float
    cluster_source: str = ""

    @property
    def predicted_runtime_s(self) -> float:
        return predicted_runtime_s(self.decision, self.request, self.snapshot.slot_seconds)

    @property
    def ring(self) -> RingSummary | None:
        """An allreduce job's ring on its first run (workers, nodes, the slowest link, the
        step time: docs/formulation.md §18.1); None for a ps job or an empty plan."""
        if not self.request.is_allreduce or not self.decision.slots:
            return None
        return ring_summary(layout_of(self.decision.slots[0]), self.request.profile)

    @property
    def start(self) -> datetime:
        """The beginning of the start slot."""
        return self.snapshot.slot_start(self.decision.start_slot)

    @property
    def end(self) -> datetime:
        """The end of the last running slot."""
        return self.snapshot.slot_start(self.decision.end_slot + 1)

    @property
    def lp_deadline(self) -> datetime | None:
        """The end of the LP's deadline slot D (None without one)."""
        deadline = self.decision.lp_deadline
        return None if deadline is None else self.snapshot.slot_start(deadline + 1)

    @property
    def slot_runs(self) -> tuple[SlotRun, ...]:
        """The schedule as runs of identical slots, in slot order."""
        return slot_runs(self.decision.slots, self.snapshot)

    def to_json(self) -> dict[str, object]:
        """The JSON-able shape of ``mlsub plan --json`` (documented in docs/user-guide.md)."""
        d, snap = self.decision, self.snapshot
        deadline = self.lp_deadline
        return {
            "schema": PLAN_SCHEMA_VERSION,
            "mlsub_version": __version__,
            "job_id": d.job_id,
            "policy": d.policy,
            "seed": d.seed,
            "form": str(d.form),
            "mode": str(d.mode),
            "planned_at": _iso(self.planned_at),
            "start": _iso(self.start),
            "end": _iso(self.end),
            "start_slot": d.start_slot,
            "end_slot": d.end_slot,
            "lp_deadline": None if deadline is None else _iso(deadline),
            "lp_deadline_slot": d.lp_deadline,
            "lp_value": d.lp_value,
            "placement": placement_json(d.placement),
            "slots": [run.to_json() for run in self.slot_runs],
            "solver": d.solver,
            "solver_version": d.solver_version,
            "decision_ms": round(self.decision_ms, 3),
            "timings_ms": {name: round(ms, 3) for name, ms in d.timings_ms},
            "trials": d.trials,
            "kept_trial": d.kept_trial,
            "kept_because": d.kept_because,
            "repair_actions": list(d.repair_actions),
            "notes": list(d.notes),
            "work_covered": d.work_covered,
            "predicted_runtime_s": round(self.predicted_runtime_s, 3),
            "job": _job_dict(self.request, self.opts),
            "cluster": _cluster_dict(snap, self.cluster_source),
            "params": self.params.as_dict(),
            **self._ring_json(),
        }

    def _ring_json(self) -> dict[str, object]:
        """``arch`` and ``ring`` for an allreduce job (a ps job's document is unchanged)."""
        ring = self.ring
        if not self.request.is_allreduce:
            return {}
        return {"arch": str(self.request.arch), "ring": ring.to_json() if ring else None}


def plan_job(
    opts: JobOptions,
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    *,
    clock: Clock,
    cluster_source: str = "",
    calibration: Mapping[str, ProfileFit] | None = None,
    user: str | None = None,
) -> PlanResult:
    """Plan ``opts`` arriving now (``snapshot.now_slot``) with policy ``opts.policy``.

    Raises :class:`~slurm_mlsched.errors.InputError` for options that do not make a job
    and :class:`~slurm_mlsched.errors.NeverFitsError` when it could never run here.
    """
    request = to_request(opts, snapshot.now_slot)
    fit = fit_for(calibration or {}, opts.model, user) if opts.model else None
    if fit is not None:  # the site's calibrated speed for this model (mlsub calibrate)
        request = replace(request, profile=fit.apply(request.profile))
    request = effective_request(request, snapshot)  # its GPU type's speed (formulation §17)
    planned_at = clock.now()
    started = clock.monotonic()
    decision = place(request, snapshot, opts.policy, params)
    elapsed_ms = (clock.monotonic() - started) * 1000.0
    if fit is not None and fit.factor != 1.0:
        decision = replace(decision, notes=(*decision.notes, fit.note()))
    return PlanResult(
        decision=decision,
        request=request,
        snapshot=snapshot,
        params=params,
        opts=opts,
        planned_at=planned_at,
        decision_ms=elapsed_ms,
        cluster_source=cluster_source,
    )


def params_for(opts: JobOptions, base: PlacementParams | None = None) -> PlacementParams:
    """``base`` (default :class:`PlacementParams`) with the job's ``--seed`` and ``--form``."""
    return replace(base or PlacementParams(), seed=opts.seed, form=opts.form)


def plan_from_files(
    *,
    script: Path | None,
    cluster: Path,
    overrides: Mapping[str, object],
    clock: Clock,
    config_defaults: Mapping[str, object] | None = None,
) -> PlanResult:
    """``mlsub plan``: read the script's header and the cluster file, merge (command line
    over header over the configuration's ``[job]`` table, ``config_defaults``), and plan."""
    header = read_script_header(script) if script is not None else []
    source = f"{script} '# mlsub:' header" if script is not None else "'# mlsub:' header"
    opts = merge_options(
        header,
        overrides,
        header_source=source,
        config_defaults=config_defaults,
        sbatch_header=read_sbatch_header(script) if script is not None else None,
    )
    snapshot = narrowed(load_cluster(cluster, now=clock.now()), opts.narrowing)
    return plan_job(opts, snapshot, params_for(opts), clock=clock, cluster_source=str(cluster))


def narrowed(snapshot: ClusterSnapshot, narrowing: NodeFilter) -> ClusterSnapshot:
    """A cluster file's snapshot with only the machines the script's ``#SBATCH`` lines
    allow (``plan --cluster``: a cluster file has no features, so ``--constraint`` is not
    applied there, as ``--partition`` is not). Raises :class:`InputError` when none is
    left."""
    if not narrowing.narrows:
        return snapshot
    offline = replace(narrowing, constraint=None)
    why = {
        m.name: offline.reason(
            m.name, cpus=m.capacity.cpu, mem_mib=m.capacity.mem, gpus=m.capacity.gpu
        )
        for m in snapshot.machines
    }
    keep = tuple(m for m in snapshot.machines if why[m.name] is None)
    if not keep:
        listed = "; ".join(f"{name}: {reason}" for name, reason in why.items())
        raise InputError(
            f"the script's #SBATCH lines leave no node of the cluster file ({listed})",
            hint="loosen --nodelist/--exclude/--mem/--cpus-per-task/--gres in the script",
            context={"option": "#SBATCH"},
            code="sbatch-line",
        )
    names = {m.name for m in keep}
    reservations = tuple(r for r in snapshot.reservations if r.machine in names)
    return replace(snapshot, machines=keep, reservations=reservations)


def predicted_runtime_s(decision: Decision, request: JobRequest, slot_seconds: float) -> float:
    """Seconds from the start slot's beginning to the last mini-batch, by the time model
    (an allreduce job: each run at its layout's ring rate, docs/formulation.md §18.1)."""
    remaining = request.workload
    for run in decision.slots:
        per_slot = plan_rate(run, request, slot_seconds)  # mini-batches in one slot
        if per_slot <= 0:
            continue
        if remaining <= per_slot * run.length + 1e-9:
            offset = (run.slot - decision.start_slot) * slot_seconds
            return offset + slot_seconds * max(remaining, 0.0) / per_slot
        remaining -= per_slot * run.length
    return (decision.end_slot + 1 - decision.start_slot) * slot_seconds


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def slot_runs(runs: tuple[SlotPlan, ...], snap: ClusterSnapshot) -> tuple[SlotRun, ...]:
    """The schedule as runs of identical slots ``[first_slot, last_slot]``, in slot order."""
    out: list[SlotRun] = []
    for run in runs:
        rows = run.node_counts()
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_slot + 1 == run.slot
            and last.mode == run.mode
            and last.placement == rows
        ):
            out[-1] = replace(last, last_slot=run.stop - 1, end=snap.slot_start(run.stop))
            continue
        out.append(
            SlotRun(
                first_slot=run.slot,
                last_slot=run.stop - 1,
                start=snap.slot_start(run.slot),
                end=snap.slot_start(run.stop),
                mode=run.mode,
                workers=run.total_workers,
                ps=run.total_ps,
                placement=rows,
            )
        )
    return tuple(out)


def _job_dict(request: JobRequest, opts: JobOptions) -> dict[str, object]:
    profile = request.profile
    speed = {} if request.gpu_speed == 1.0 else {"gpu_speed": request.gpu_speed}
    return {
        **speed,  # only when not 1.0 (formulation §17): the profile below is at that speed
        "id": request.job_id,
        "name": request.name,
        "arrival_slot": request.arrival_slot,
        "workers": request.max_workers,
        "ps": "auto" if request.ps_count is None else request.ps_count,
        "per_worker": _resources(request.worker.as_dict()),
        "per_ps": _resources(request.ps.as_dict()),
        "gpu_types": None if request.gpu_types is None else sorted(request.gpu_types),
        "epochs": opts.epochs,
        "batches_per_epoch": opts.batches_per_epoch,
        "workload": request.workload,
        "partition": opts.partition,
        "profile": {
            "name": profile.name,
            "table_version": profiles_version() if opts.model is not None else None,
            "step_time_s": profile.step_time_s,
            "model_size_mb": profile.model_size_mb,
            "bw_ex_mbps": profile.bw_ex_mbps,
            "bw_in_mbps": profile.bw_in_mbps,
            "ps_bw_mbps": profile.effective_ps_bw,
            "theta_in_s": profile.theta_in,
            "theta_ex_s": profile.theta_ex,
        },
    }


def _resources(amounts: dict[str, float]) -> dict[str, float]:
    return {"gpus": amounts["gpu"], "cpus": amounts["cpu"], "mem_mib": amounts["mem"]}


def _cluster_dict(snap: ClusterSnapshot, source: str) -> dict[str, object]:
    return {
        "source": source,
        "nodes": len(snap.machines),
        "slot_seconds": snap.slot_seconds,
        "epoch": _iso(snap.epoch),
        "now_slot": snap.now_slot,
        "reservations": len(snap.reservations),
        "capacity": _resources(snap.total_capacity().as_dict()),
    }
