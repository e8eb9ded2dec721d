"""The replay's types: its options, its input, the jobs ready for the simulator and the
report (a module of its own so that the report writer and the runner do not import each
other)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from ...model import ClusterSnapshot, Form, JobRequest
from ...placement import Binding, PlacementParams
from ...sim import LowerBound, PolicyMetrics, SimJob, Unplaceable
from ...sim.limits import LP_MAX_JOBS

ProgressFn = Callable[[str, int, int], None]
"""``progress(policy, done, total)``: jobs placed so far by the policy being replayed."""


RESTART_S = PlacementParams().restart_s
QUEUE_PROGRAMS = ("per-job", "joint")
#: ``--preempt-cost``: what a pause is weighed against (docs/formulation.md §16).
PREEMPT_COSTS = ("exact", "slot")
CPU_JOBS = ("off", "per-node", "per-cores")


@dataclass(frozen=True)
class ReplayOptions:
    trace: Path
    policies: tuple[str, ...]
    out_dir: Path | None = None
    nodes: str | None = None  # NxG; DEFAULT_NODES when neither nodes nor cluster is given
    cluster: Path | None = None
    seed: int = 0
    form: Form = Form.NON_ELASTIC
    binding: Binding = Binding.LATE
    queue_program: str = "per-job"
    lookahead: bool = True
    lookahead_pausable: bool = False  # with preemption, hold back pausable jobs too (§14.7)
    lookahead_widths: bool = False  # weigh narrower starts now too (formulation §14.7)
    widths_forecast: bool = False  # and count the forecast arrivals in that (§14.7)
    preempt: bool = True  # checkpoint-restart preemption under late binding (formulation
    # §16): on, as a site with `preempt = true` runs it live; it won on the sweep's average
    preempt_cost: str = "exact"  # what a pause is weighed against (formulation §16)
    preempt_gain: str = PlacementParams().preempt_gain  # how its gain is estimated (§16)
    preempt_migrate: bool = PlacementParams().preempt_migrate  # a pause stands when the
    # paused job starts again at once elsewhere (a migration; formulation §16)
    preempt_shrink: bool = PlacementParams().preempt_shrink  # a pause may restart its job
    # at once narrower on the machines it holds (formulation §16, "Shrink in place"); off:
    # 0.9970 × over the 103 ladder cells but 1.0010 × on the held-out cells and a lost p99
    # clause on the 16 cells (Mustang 2012-12-13 at 600 s); live not built
    preempt_defrag: bool | None = None  # move a running job to a smaller node that holds
    # it when that starts a wide waiting job co-located (formulation §16, "Move to a
    # smaller node"): None = on with preemption (2026-12-05); live a site's choice
    preempt_resize: bool | None = None  # resize a running job by checkpoint-restart
    # (formulation §16, "Resize"): None = on with preemption (it won on the average of the
    # ladder's 103 cells once narrow starts were bounded, 2026-12-05); live a site's choice
    preempt_regather: bool | None = None  # with resize: a spread job with less work left
    # than every waiting job restarts co-located on a free node before the re-plan gives
    # the node away (formulation §16, "Regather"): None = on with preemption and resize
    # (2026-12-06: 0.9993 × over the 103 ladder cells, Philly on the mixed cluster
    # 0.969–0.981 ×, no cell worse by more than 0.2 %); live not built
    preempt_max: int | None = None  # pauses per job for waiting jobs (None: PlacementParams')
    restart_s: float = RESTART_S
    slot_seconds: float | None = None
    limit: int | None = None
    since: str | None = None  # --since/--until: the submit window, as written
    until: str | None = None  # (traces.window; resolved against the input when read)
    load: float | None = None  # target offered load (sim.load); None: the trace's own rate
    lp_max_jobs: int = LP_MAX_JOBS
    cpu_jobs: str = "off"  # synthesis of records without GPUs (traces.synthesis.CpuJobs)
    arch_reading: str = "ps"  # ps: as synthesized; allreduce: jobs of >= 2 GPUs read as
    # all-reduce jobs (sim.as_allreduce, docs/formulation.md §18.5)
    cores_per_worker: int = 8
    gpu_speed: str | None = None  # --gpu-speed TYPE=F,…: the speed table in place of the
    # cluster file's (docs/formulation.md §17); None: the cluster file's, if any
    trace_format: str = "auto"
    columns: str | None = None
    skip_bad: bool = False
    tz: str | None = None  # zone of trace times written without one (None: the format's)


@dataclass(frozen=True)
class InputRows:
    """Where every physical row of a trace went (``metrics.json`` ``input_rows``): the
    reader's counts (:class:`~slurm_mlsched.traces.record.RowCounts`) in its ``unit``
    (lines, records), the malformed rows skipped, the job records, the records left out by
    ``--since/--until`` (submitted outside the window) and by ``--limit``, and what no
    category holds (0 unless a reader has a bug)."""

    unit: str
    total: int
    header: int
    blank: int
    folded: int
    ignored: int
    malformed: int
    records: int
    outside_window: int
    beyond_limit: int
    unaccounted: int

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class ReplayInput:
    """Jobs with submit times (s after ``epoch``), and what did not become a job."""

    name: str
    source: str  # "job-list" or the trace format
    entries: tuple[tuple[JobRequest, float], ...]
    skipped: int
    epoch: datetime
    notes: tuple[str, ...] = ()
    skipped_by_reason: Mapping[str, int] = field(default_factory=dict)
    rows: InputRows | None = None  # where every physical row went (trace input)


@dataclass(frozen=True)
class ReplayFiles:
    """The files a replay wrote into its output directory (paths)."""

    summary: str  # summary.json
    metrics: str  # metrics.json
    html: str  # report.html
    jct_cdf: str  # the plots (PNG)
    gpu_util: str
    queue: str

    def to_json(self) -> dict[str, object]:
        """``{kind: path}``, the ``files`` of ``metrics.json``."""
        return asdict(self)


@dataclass(frozen=True)
class ReplayReport:
    """What a replay gives (``mlsub replay``, locally or merged from its cells on Slurm):
    the input's counts (``jobs`` replayed, ``skipped``, the ``unplaceable`` jobs), the
    cluster and parameters the policies ran with, the LP lower bound, each policy's
    metrics (MODEL.md §8) in the order asked, the notes, and the files written
    (none without ``--out``)."""

    trace: str
    source: str
    cluster: ClusterSnapshot
    cluster_label: str
    params: PlacementParams
    jobs: int
    skipped: int
    unplaceable: tuple[Unplaceable, ...]
    bound: LowerBound
    metrics: Mapping[str, PolicyMetrics]
    notes: tuple[str, ...]
    skipped_by_reason: Mapping[str, int] = field(default_factory=dict)
    files: ReplayFiles | None = None
    input_rows: InputRows | None = None

    def to_json(self) -> dict[str, object]:
        """What ``--json`` prints, and ``summary.json`` (issue 3 item 5): exactly trace,
        jobs, skipped, unplaceable, policies: {policy: the 13 metrics}."""
        return {
            "trace": self.trace,
            "jobs": self.jobs,
            "skipped": self.skipped,
            "unplaceable": len(self.unplaceable),
            "policies": {name: m.summary() for name, m in self.metrics.items()},
        }

    def details(self) -> dict[str, object]:
        """The document of the ``metrics.json`` file (a file format, not the command's
        JSON): the summary, plus everything behind it."""
        total = self.cluster.total_capacity()
        return {
            **self.to_json(),
            "schema": 1,
            "source": self.source,
            "skipped_by_reason": dict(self.skipped_by_reason),
            "input_rows": None if self.input_rows is None else self.input_rows.to_json(),
            "cluster": {
                "label": self.cluster_label,
                "nodes": len(self.cluster.machines),
                "gpus": total.gpu,
                "cpus": total.cpu,
                "mem_mib": total.mem,
                "slot_seconds": self.cluster.slot_seconds,
                "epoch": self.cluster.epoch.isoformat(),
            },
            "params": self.params.as_dict(),
            "lp_bound": {"value": self.bound.value, "note": self.bound.note},
            "unplaceable_jobs": [
                {"job_id": u.job.job_id, "reason": u.reason} for u in self.unplaceable
            ],
            "notes": list(self.notes),
            "details": {name: m.as_dict() for name, m in self.metrics.items()},
            "files": {} if self.files is None else self.files.to_json(),
        }


@dataclass(frozen=True)
class ReplayJobs:
    """The input of a replay, ready for the simulator (steps 1–3 of the module docstring):
    the empty cluster, the admitted jobs in submission order and the unplaceable ones."""

    data: ReplayInput
    cluster: ClusterSnapshot
    cluster_label: str
    cluster_notes: tuple[str, ...]
    admitted: tuple[SimJob, ...]
    unplaceable: tuple[Unplaceable, ...]
