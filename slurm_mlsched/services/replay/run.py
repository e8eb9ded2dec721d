"""The ``replay`` use case: a trace (or a job list) through every asked policy, then the
metrics of MODEL.md §8 and the report files. Returns data; never prints.

Steps (docs/replay-guide.md, "Simulator, baselines and metrics"):

1. the cluster: ``--nodes NxG`` (``sim.node_grid``) or a cluster file (its machines and
   Δ; reservations in it are ignored, with a note: a replay starts from an empty cluster);
   Δ = ``--slot-seconds``, else the cluster file's, else 600 s;
2. the input: a job list (``.json``/``.yaml``, :mod:`slurm_mlsched.files.job_list`) or a
   trace read by :func:`slurm_mlsched.traces.read_trace` and turned into jobs by
   :func:`slurm_mlsched.traces.synthesis.synthesize_trace` (MODEL.md §7);
3. the jobs submitted in the ``--since/--until`` window (:mod:`slurm_mlsched.traces.window`),
   in submission order, the first ``--limit`` of them kept; jobs that no placement could
   run on the cluster are *unplaceable* (``sim.admit``): reported, not replayed;
4. the LP lower bound when the replay is small (``sim.lower_bound``); the utility draws;
5. for each policy, ``sim.simulate`` timed with the injected clock, then
   ``sim.compute_metrics``;
6. ``summary.json``, ``metrics.json``, the plots and ``report.html`` in the output
   directory (:mod:`.report`).

Counting: every distinct job of the input is exactly one of *jobs* (replayed), *skipped*
(malformed lines under ``--skip-bad``, and records synthesis could not make a job of,
e.g. never ran) and *unplaceable*.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ...files.cluster_file import load_cluster
from ...files.job_list import is_job_list, read_job_list
from ...model import ClusterSnapshot, JobRequest, Machine
from ...model.gpu_speed import GpuSpeeds, parse_speed_text, with_gpu_speed
from ...placement import PlacementParams, policy_names
from ...placement.params import PREEMPT_GAINS
from ...placement.registry import policy_function
from ...sim import (
    PolicyMetrics,
    admit,
    compute_metrics,
    draw_utilities,
    lower_bound,
    node_grid,
    parse_nodes_spec,
    sim_jobs,
    simulate,
)
from ...sim.cluster import DEFAULT_SLOT_SECONDS
from ...sim.jobs import as_allreduce
from ...sim.limits import DEFAULT_NODES
from ...sim.load import MAX_LOAD, MIN_LOAD, at_load
from ...sim.metrics import check_placed
from ..clock import Clock
from .types import (
    CPU_JOBS,
    PREEMPT_COSTS,
    QUEUE_PROGRAMS,
    InputRows,
    ProgressFn,
    ReplayFiles,
    ReplayInput,
    ReplayJobs,
    ReplayOptions,
    ReplayReport,
)

if TYPE_CHECKING:
    from ...traces.record import Trace, TraceRecord


def _policies(names: tuple[str, ...]) -> tuple[str, ...]:
    if not names:
        raise InputError(
            "no policy to replay", hint=f"pass --policy with one of: {', '.join(policy_names())}"
        )
    for name in names:
        policy_function(name)  # InputError listing the valid ones
    return tuple(dict.fromkeys(names))


def replay_cluster(opts: ReplayOptions, epoch: datetime) -> tuple[ClusterSnapshot, str, list[str]]:
    """The empty cluster of the replay, a label for it, and notes."""
    if opts.nodes is not None and opts.cluster is not None:
        raise InputError(
            "options --nodes and --cluster exclude each other",
            hint="describe the cluster one way: --nodes NODESxGPUS or --cluster FILE",
            context={"option": "--nodes"},
        )
    if opts.slot_seconds is not None and not opts.slot_seconds > 0:
        raise InputError(
            f"option --slot-seconds must be > 0, got {opts.slot_seconds}",
            context={"option": "--slot-seconds", "value": opts.slot_seconds},
        )
    notes: list[str] = []
    if opts.cluster is not None:
        snap = load_cluster(opts.cluster, now=epoch)
        if snap.reservations:
            notes.append(
                f"the cluster file's {len(snap.reservations)} reservation(s) are ignored: "
                "a replay starts from an empty cluster"
            )
        delta = opts.slot_seconds or snap.slot_seconds
        machines = _with_speed_option(snap.machines, opts.gpu_speed)
        notes += _speed_note(machines)
        cluster = ClusterSnapshot(machines, slot_seconds=delta, epoch=epoch)
        return cluster, str(opts.cluster), notes
    if opts.gpu_speed is not None:
        raise InputError(
            "option --gpu-speed needs a cluster with GPU types: a --nodes grid is untyped "
            "(every node at 1.0)",
            hint="describe the nodes with --cluster FILE (gpu_type per node or group)",
            context={"option": "--gpu-speed", "value": opts.gpu_speed},
        )
    spec = opts.nodes or DEFAULT_NODES
    try:
        nodes, gpus = parse_nodes_spec(spec)
    except ValueError as exc:
        raise InputError(
            str(exc),
            hint="e.g. --nodes 64x8 (64 nodes of 8 GPUs), or --cluster FILE",
            context={"option": "--nodes", "value": spec},
        ) from None
    delta = opts.slot_seconds or DEFAULT_SLOT_SECONDS
    return node_grid(nodes, gpus, slot_seconds=delta, epoch=epoch), spec, notes


def _with_speed_option(machines: tuple[Machine, ...], text: str | None) -> tuple[Machine, ...]:
    """``--gpu-speed TYPE=F,…``: the speed table in place of the cluster file's."""
    return machines if text is None else with_gpu_speed(machines, _speed_option(text))


def _speed_option(text: str) -> GpuSpeeds:
    """The table ``--gpu-speed`` gives, or an InputError naming the option."""
    try:
        return parse_speed_text(text)
    except ValueError as exc:
        raise InputError(
            f"option --gpu-speed: {exc}",
            hint="write TYPE=FACTOR pairs, e.g. --gpu-speed a100=2,t4=0.5 (a factor > 0; "
            "1.0 = the profiles' reference GPU)",
            context={"option": "--gpu-speed", "value": text},
        ) from None


def _speed_note(machines: tuple[Machine, ...]) -> list[str]:
    """The GPU speeds the replay runs at, when any type is not at 1.0."""
    speeds = dict.fromkeys(sorted((m.gpu_type, m.gpu_speed) for m in machines if m.gpu_type))
    if all(f == 1.0 for _, f in speeds):
        return []
    table = ", ".join(f"{kind} ×{f:g}" for kind, f in speeds)
    return [
        f"GPU speed by type: {table}; each job runs at the slowest type it may use "
        "(docs/formulation.md §17)"
    ]


def _prepared(policy: str, given: PlacementParams, used: PlacementParams) -> list[str]:
    """A note with the parameters a policy's prepare hook took from the trace (OASiS's U, L)."""
    before, after = given.as_dict(), used.as_dict()
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    if not changed:
        return []
    return [f"{policy}: from the trace: " + ", ".join(f"{k} = {v}" for k, v in changed.items())]


def load_input(opts: ReplayOptions) -> ReplayInput:
    """The jobs of ``opts.trace``: a job list, or a trace read and synthesized."""
    name = opts.trace.name
    if is_job_list(opts.trace):
        if opts.trace_format not in ("auto", "job-list") or opts.columns or opts.tz:
            raise InputError(
                f"{opts.trace} is a job list (.json/.yaml): --format, --columns and --tz do "
                "not apply",
                context={"file": str(opts.trace)},
            )
        jl = read_job_list(opts.trace)
        entries, notes = _job_list_window(opts, jl.entries, jl.epoch)
        return ReplayInput(name, "job-list", entries, 0, jl.epoch, notes)
    return _load_trace(opts)


def _job_list_window(
    opts: ReplayOptions, entries: tuple[tuple[JobRequest, float], ...], epoch: datetime
) -> tuple[tuple[tuple[JobRequest, float], ...], tuple[str, ...]]:
    """A job list's entries in the ``--since/--until`` window (its dates are UTC)."""
    from ...traces.record import TimeBase
    from ...traces.window import select

    base = epoch.timestamp()
    submits = [base + s for _, s in entries]
    got = select(
        opts.since, opts.until, submits, time_base=TimeBase.EPOCH, tz="UTC", name=opts.trace.name
    )
    if got is None:
        return entries, ()
    return tuple(entries[i] for i in got[0].kept), (got[1],)


def _load_trace(opts: ReplayOptions) -> ReplayInput:
    from ...traces import TimeBase, read_trace
    from ...traces.synthesis import SYNTHESIS_VERSION, CpuJobs, SynthesisParams, synthesize_trace

    trace = read_trace(
        opts.trace,
        format=opts.trace_format,
        columns=opts.columns,
        skip_bad=opts.skip_bad,
        tz=opts.tz,
    )
    records, window_notes, outside = _in_window(opts, trace)
    windowed = len(records)
    if opts.limit is not None:
        records = tuple(sorted(records, key=lambda r: (r.submit, r.job_id))[: opts.limit])
    synthesis = synthesize_trace(
        records,
        SynthesisParams(
            seed=opts.seed,
            cpu_jobs=CpuJobs(opts.cpu_jobs),
            cores_per_worker=opts.cores_per_worker,
        ),
    )
    by_reason = synthesis.rejected_by_reason()
    if trace.skipped:
        by_reason["malformed"] = trace.skipped
    if trace.time_base is TimeBase.EPOCH:
        epoch = datetime.fromtimestamp(synthesis.origin, tz=UTC)
    else:
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
    notes = [
        *trace.notes,
        *window_notes,
        f"trace format {trace.format}; job synthesis version {SYNTHESIS_VERSION} "
        f"(seed {opts.seed})",
    ]
    rows = _row_accounting(trace, outside, windowed - len(records))
    if rows is not None:
        notes.append(_rows_note(rows))
    return ReplayInput(
        name=opts.trace.name,
        source=trace.format,
        entries=tuple(j.entry for j in synthesis.jobs),
        skipped=trace.skipped + len(synthesis.rejected),
        epoch=epoch,
        notes=tuple(notes),
        skipped_by_reason=by_reason,
        rows=rows,
    )


def _in_window(opts: ReplayOptions, trace: Trace) -> tuple[tuple[TraceRecord, ...], list[str], int]:
    """The records of ``trace`` submitted in the ``--since/--until`` window, the note that
    says so and how many it left out (all of them, no note and 0 without a window)."""
    from ...traces.window import select

    submits = [r.submit for r in trace.records]
    got = select(
        opts.since,
        opts.until,
        submits,
        time_base=trace.time_base,
        tz=trace.zone,
        name=opts.trace.name,
    )
    if got is None:
        return trace.records, [], 0
    kept, note = got
    return tuple(trace.records[i] for i in kept.kept), [note], kept.outside


def _row_accounting(trace: Trace, outside_window: int, beyond_limit: int) -> InputRows | None:
    """Where every physical row of the trace went (:class:`InputRows`), when the reader
    counted its rows."""
    counts = trace.rows
    if counts is None:
        return None
    return InputRows(
        unit=counts.unit,
        total=counts.total,
        header=counts.header,
        blank=counts.blank,
        folded=counts.folded,
        ignored=counts.ignored,
        malformed=trace.skipped,
        records=len(trace.records),
        outside_window=outside_window,
        beyond_limit=beyond_limit,
        unaccounted=trace.unaccounted(),
    )


def _rows_note(rows: InputRows) -> str:
    """``161 lines: 1 header, 160 job records (…)`` — every row of the file, by where it went."""
    parts = [f"{rows.records} job record(s)"]
    labels = (
        (rows.header, "header/comment"),
        (rows.blank, "blank"),
        (rows.folded, "folded into their jobs (steps, components, repeats)"),
        (rows.ignored, "of no job (ignored)"),
        (rows.malformed, "malformed (skipped)"),
    )
    parts += [f"{count} {label}" for count, label in labels if count]
    text = f"input: {rows.total} {rows.unit} = " + " + ".join(parts)
    if rows.outside_window:
        text += f"; {rows.outside_window} record(s) outside --since/--until left out"
    if rows.beyond_limit:
        text += f"; {rows.beyond_limit} record(s) beyond --limit left out"
    if rows.unaccounted:
        text += f"; {rows.unaccounted} {rows.unit} UNACCOUNTED (a bug: please report)"
    return text


def _at_load(
    entries: tuple[tuple[JobRequest, float], ...],
    cluster: ClusterSnapshot,
    target: float,
    notes: list[str],
) -> tuple[tuple[JobRequest, float], ...]:
    """``--load``: the submit offsets scaled to the target offered load (``sim.load``)."""
    try:
        rescaled = at_load(entries, cluster, target)
    except ValueError as exc:
        raise InputError(
            f"option --load cannot be applied: {exc}",
            hint="--load needs jobs submitted over a span of time; drop it for this input",
            context={"option": "--load", "value": target},
        ) from None
    notes.append(
        f"arrivals rescaled to offered load {target:g} (from {rescaled.native_load:.3g}): "
        f"submit offsets × {rescaled.factor:.4g}"
    )
    return rescaled.entries


def replay_params(opts: ReplayOptions, seed: int) -> PlacementParams:
    """The parameters every policy of a replay runs with (form, binding, restart cost)."""
    if not (opts.restart_s >= 0 and opts.restart_s < float("inf")):
        raise InputError(
            f"option --restart-cost must be a number of seconds >= 0, got {opts.restart_s}",
            context={"option": "--restart-cost", "value": opts.restart_s},
        )
    _arch_reading(opts)
    if opts.gpu_speed is not None:
        _speed_option(opts.gpu_speed)
    if opts.cpu_jobs not in CPU_JOBS:
        raise InputError(
            f"option --cpu-jobs must be one of {', '.join(CPU_JOBS)}, got {opts.cpu_jobs!r}",
            context={"option": "--cpu-jobs", "value": opts.cpu_jobs},
        )
    if not 1 <= opts.cores_per_worker <= 100_000:
        raise InputError(
            f"option --cores-per-worker must be between 1 and 100000, got {opts.cores_per_worker}",
            context={"option": "--cores-per-worker", "value": opts.cores_per_worker},
        )
    for option, asked, what in (
        ("--preempt-resize", opts.preempt_resize, "resizes running jobs"),
        ("--preempt-defrag", opts.preempt_defrag, "moves running jobs"),
        ("--preempt-shrink", opts.preempt_shrink, "shrinks running jobs"),
        ("--preempt-regather", opts.preempt_regather, "regathers spread running jobs"),
    ):
        if asked is True and not opts.preempt:
            raise InputError(
                f"option {option} {what} by checkpoint-restart, which needs preemption, "
                "but --no-preempt was given",
                hint=f"drop --no-preempt (preemption is the replay's default) or {option}",
                context={"option": option},
            )
    if opts.widths_forecast and not opts.lookahead_widths:
        raise InputError(
            "option --widths-forecast says how --lookahead-widths weighs a start, but "
            "--lookahead-widths was not given",
            hint="add --lookahead-widths, or drop --widths-forecast",
            context={"option": "--widths-forecast"},
        )
    if opts.preempt_max is not None:
        if not opts.preempt:
            raise InputError(
                "option --preempt-max limits how often a job is paused or resized, which "
                "needs preemption, but --no-preempt was given",
                hint="drop --no-preempt (preemption is the replay's default) or --preempt-max",
                context={"option": "--preempt-max", "value": opts.preempt_max},
            )
        if not 0 <= opts.preempt_max <= 1_000_000:
            raise InputError(
                f"option --preempt-max must be between 0 and 1000000, got {opts.preempt_max}",
                context={"option": "--preempt-max", "value": opts.preempt_max},
            )
    if opts.preempt_cost not in PREEMPT_COSTS:
        raise InputError(
            f"option --preempt-cost must be one of {', '.join(PREEMPT_COSTS)}, "
            f"got {opts.preempt_cost!r}",
            context={"option": "--preempt-cost", "value": opts.preempt_cost},
        )
    if opts.preempt_gain not in PREEMPT_GAINS:
        raise InputError(
            f"option --preempt-gain must be one of {', '.join(PREEMPT_GAINS)}, "
            f"got {opts.preempt_gain!r}",
            context={"option": "--preempt-gain", "value": opts.preempt_gain},
        )
    if opts.preempt_regather is True and opts.preempt_resize is False:
        raise InputError(
            "option --preempt-regather restarts a running job in a faster shape, a resize, "
            "but --no-preempt-resize was given",
            hint="drop --no-preempt-resize (resize is on with preemption) or --preempt-regather",
            context={"option": "--preempt-regather"},
        )
    if opts.preempt_shrink and opts.preempt_gain != "rollout":
        raise InputError(
            "option --preempt-shrink weighs a shrink by the rollout of the waiting queue, "
            f"but --preempt-gain {opts.preempt_gain} was given",
            hint="drop --preempt-gain (rollout is the default) or --preempt-shrink",
            context={"option": "--preempt-shrink"},
        )
    if opts.queue_program not in QUEUE_PROGRAMS:
        raise InputError(
            f"option --queue-program must be one of {', '.join(QUEUE_PROGRAMS)}, "
            f"got {opts.queue_program!r}",
            context={"option": "--queue-program", "value": opts.queue_program},
        )
    params = PlacementParams(
        form=opts.form,
        seed=seed,
        binding=opts.binding,
        restart_s=opts.restart_s,
        queue_program=opts.queue_program,
        lookahead=opts.lookahead,
        lookahead_pausable=opts.lookahead_pausable,
        lookahead_widths=opts.lookahead_widths,
        widths_forecast=opts.widths_forecast,
        preempt=opts.preempt,
        preempt_resize=opts.preempt if opts.preempt_resize is None else opts.preempt_resize,
        preempt_cost=opts.preempt_cost,
        preempt_gain=opts.preempt_gain,
        preempt_migrate=opts.preempt_migrate,
        preempt_shrink=opts.preempt_shrink,
        preempt_defrag=opts.preempt if opts.preempt_defrag is None else opts.preempt_defrag,
    )
    params = replace(
        params,
        preempt_regather=params.preempt_resize
        if opts.preempt_regather is None
        else opts.preempt_regather,
    )
    if opts.preempt_max is not None:
        params = replace(params, preempt_max=opts.preempt_max)
    return params


#: ``--arch-reading``: how a replay reads a trace job's architecture (docs/formulation.md §18.5).
ARCH_READINGS = ("ps", "allreduce")


def _arch_reading(opts: ReplayOptions) -> str:
    reading = opts.arch_reading.strip().lower()
    if reading not in ARCH_READINGS:
        raise InputError(
            f"option --arch-reading must be one of {', '.join(ARCH_READINGS)}, "
            f"got {opts.arch_reading!r}",
            hint="ps: every job as the trace reader synthesizes it (a record's own arch "
            "column wins); allreduce: every job of 2 or more GPUs as an all-reduce job",
            context={"option": "--arch-reading", "value": opts.arch_reading},
        )
    return reading


def prepare_jobs(opts: ReplayOptions) -> ReplayJobs:
    """Read the input of ``opts`` and admit its jobs onto the replay cluster: what every
    policy replays (``run_replay`` here, and each cell of ``mlsub replay --on-slurm``)."""
    if opts.limit is not None and opts.limit < 1:
        raise InputError(
            f"option --limit must be >= 1, got {opts.limit}",
            context={"option": "--limit", "value": opts.limit},
        )
    if opts.load is not None and not MIN_LOAD <= opts.load <= MAX_LOAD:
        raise InputError(
            f"option --load must be an offered load between {MIN_LOAD} and {MAX_LOAD}, "
            f"got {opts.load}",
            hint="e.g. --load 1.0: the jobs' least work fills the cluster over their span",
            context={"option": "--load", "value": opts.load},
        )
    data = load_input(opts)
    cluster, label, notes = replay_cluster(opts, data.epoch)
    entries = data.entries
    if opts.limit is not None and data.source == "job-list":
        entries = tuple(sorted(entries, key=lambda e: (e[1], e[0].job_id))[: opts.limit])
    if opts.load is not None:
        entries = _at_load(entries, cluster, opts.load, notes)
    jobs = sim_jobs(entries, cluster.slot_seconds)
    if _arch_reading(opts) == "allreduce":
        jobs = list(as_allreduce(jobs))
    admitted, unplaceable = admit(jobs, cluster)
    return ReplayJobs(data, cluster, label, tuple(notes), tuple(admitted), tuple(unplaceable))


def run_replay(
    opts: ReplayOptions,
    clock: Clock,
    progress: ProgressFn | None = None,
    write: Callable[[ReplayReport, Path], ReplayFiles] | None = None,
) -> ReplayReport:
    """Replay ``opts.trace`` under each policy (module docstring); ``write`` (the report
    writer, :func:`.report.write_outputs` by default) puts the files in
    ``opts.out_dir`` when that is set."""
    policies = _policies(opts.policies)
    params = replay_params(opts, opts.seed)  # bad options fail before the trace is read
    prepared = prepare_jobs(opts)
    data, cluster, admitted = prepared.data, prepared.cluster, prepared.admitted
    notes = list(prepared.cluster_notes)
    bound = lower_bound(admitted, cluster, max_jobs=opts.lp_max_jobs)
    utilities = draw_utilities((j.job_id for j in admitted), opts.seed)
    metrics: dict[str, PolicyMetrics] = {}
    for policy in policies:

        def step(done: int, total: int, policy: str = policy) -> None:
            if progress is not None:
                progress(policy, done, total)

        if progress is not None:
            progress(policy, 0, len(admitted))
        began = clock.monotonic()
        result = simulate(admitted, cluster, policy, params, progress=step)
        wall = clock.monotonic() - began
        metrics[policy] = compute_metrics(result, utilities, bound.value, round(wall, 3))
        check_placed(result)  # compute_metrics checks the bound when nothing was rejected
        notes += _prepared(policy, params, result.params)
    report = ReplayReport(
        trace=data.name,
        source=data.source,
        cluster=cluster,
        cluster_label=prepared.cluster_label,
        params=params,
        jobs=len(admitted),
        skipped=data.skipped,
        unplaceable=prepared.unplaceable,
        bound=bound,
        metrics=metrics,
        notes=(*data.notes, *notes, bound.note),
        skipped_by_reason=dict(data.skipped_by_reason),
        input_rows=data.rows,
    )
    if opts.out_dir is None:
        return report
    if write is None:
        from .report import write_outputs

        write = write_outputs
    return replace(report, files=write(report, opts.out_dir))
