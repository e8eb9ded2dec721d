"""``mlsub replay``: a trace (or a job list) through the simulator under several policies.

Thin: declares the options and calls :func:`~slurm_mlsched.services.replay.run_replay`
with the wall clock (for ``wall_s``) and a progress bar on stderr; prints the results.
With ``--on-slurm`` (or ``--merge DIR``) it hands over to :mod:`.replay_slurm`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from ..errors import InputError
from ..model import Form
from ..placement.params import Binding, PlacementParams
from ..sim.limits import DEFAULT_NODES, LP_MAX_JOBS
from . import completion, output, replay_slurm
from .context import Commands, app_context
from .highs_banner import silence_highs_banner

if TYPE_CHECKING:  # the replay services load when the command runs
    from ..api import SlurmReplayOptions

RESTART_S = PlacementParams().restart_s

CLUSTER = "Cluster"
TRACE = "Trace"
SLURM = "On Slurm (a job array of cells: policy × seed × slice)"


_E = TypeVar("_E", Form, Binding)


def _choice(kind: type[_E], value: str, option: str) -> _E:
    """The enum member named by an option's value, or an InputError listing the choices."""
    try:
        return kind(value.strip().lower())
    except ValueError:
        names = " or ".join(m.value for m in kind)
        raise InputError(
            f"option {option} must be {names}, got {value!r}",
            context={"option": option, "value": value},
        ) from None


commands = Commands()


@commands.command()
def replay(
    trace: Annotated[
        Path | None,
        typer.Argument(
            help="Trace file (sacct, Philly, Pollux/Sia, Mustang, SWF, CSV with --columns) "
            "or a job list (.json/.yaml). Required, except with --merge.",
            show_default=False,
        ),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            "-p",
            help="Policy to replay (repeat for several). Required, except with --merge.",
            show_default=False,
            autocompletion=completion.policies,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Directory for summary.json, plots and report."),
    ] = None,
    nodes: Annotated[
        str | None,
        typer.Option(
            help=f"NODESxGPUS identical nodes (default {DEFAULT_NODES}; 8 CPUs and 64 GiB "
            "per GPU).",
            rich_help_panel=CLUSTER,
        ),
    ] = None,
    cluster: Annotated[
        Path | None,
        typer.Option("--cluster", "-c", help="Cluster file (YAML).", rich_help_panel=CLUSTER),
    ] = None,
    slot_seconds: Annotated[
        float | None,
        typer.Option(
            help="Δ, seconds per slot (default: the cluster file's, else 600).",
            rich_help_panel=CLUSTER,
        ),
    ] = None,
    gpu_speed: Annotated[
        str | None,
        typer.Option(
            "--gpu-speed",
            help="Throughput per GPU type, e.g. a100=2,t4=0.5 (1.0 = the profiles' "
            "reference GPU; unlisted types 1.0), in place of the cluster file's gpu_speed; "
            "each job runs at the slowest type it may use.",
            rich_help_panel=CLUSTER,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of rounding, synthesis, utility.")] = 0,
    form: Annotated[
        str, typer.Option(help="elastic | non-elastic (yu-rr; fifo-* are non-elastic).")
    ] = "non-elastic",
    binding: Annotated[
        str,
        typer.Option(
            help="yu-rr: late (re-plan the waiting queue at every event) | early (book "
            "each job's future at its arrival)."
        ),
    ] = "late",
    queue_program: Annotated[
        str,
        typer.Option(
            "--queue-program",
            help="yu-rr late binding: per-job (each waiting job alone, in queue order) | "
            "joint (one LP over the head of the queue).",
        ),
    ] = "per-job",
    cpu_jobs: Annotated[
        str,
        typer.Option(
            "--cpu-jobs",
            help="Trace records without GPUs: off (skipped) | per-node (one worker a "
            "node) | per-cores (one worker per --cores-per-worker CPUs).",
        ),
    ] = "off",
    cores_per_worker: Annotated[
        int,
        typer.Option("--cores-per-worker", help="CPUs of one worker with --cpu-jobs per-cores."),
    ] = 8,
    arch_reading: Annotated[
        str,
        typer.Option(
            "--arch-reading",
            help="ps (every job as synthesized; a trace's own arch column wins) | allreduce "
            "(every job of 2+ GPUs as an all-reduce job: no PS, the ring's time).",
        ),
    ] = "ps",
    lookahead: Annotated[
        bool,
        typer.Option(
            "--lookahead/--no-lookahead",
            help="yu-rr late binding: weigh a start narrower than the requested width "
            "against the arrivals the recent past forecasts.",
        ),
    ] = True,
    lookahead_pausable: Annotated[
        bool,
        typer.Option(
            "--lookahead-pausable/--no-lookahead-pausable",
            help="With --lookahead and preemption: hold back a narrow start also of a job "
            "the pause rule could pause later (the rule until 2026-12-06; off: a start a "
            "pause can take back is not held back for forecast arrivals).",
        ),
    ] = False,
    lookahead_widths: Annotated[
        bool,
        typer.Option(
            "--lookahead-widths/--no-lookahead-widths",
            help="yu-rr late binding: weigh a start now against the same job with a half, "
            "a quarter, ... of its workers, by the total completion of the jobs waiting "
            "behind it (off by default: measured, not kept).",
        ),
    ] = False,
    widths_forecast: Annotated[
        bool,
        typer.Option(
            "--widths-forecast/--no-widths-forecast",
            help="With --lookahead-widths: count the arrivals the recent past forecasts "
            "too (the rule until 2026-12-05).",
        ),
    ] = False,
    preempt: Annotated[
        bool,
        typer.Option(
            "--preempt/--no-preempt",
            help="Late binding: pause (checkpoint, requeue) a running job when the waiting "
            "jobs that start in its place gain more than its restart cost (on: the "
            "replay models a site with `preempt = true` whose jobs consent by "
            "`#SBATCH --signal`; the re-sharing baselines re-allocate at the same cost "
            "either way).",
        ),
    ] = True,
    preempt_cost: Annotated[
        str,
        typer.Option(
            "--preempt-cost",
            help="With preemption: a pause must gain more than exact (the slots the "
            "paused job's restart charge adds to its own run) | slot (one restart's "
            "worst case on the slot grid, ⌈restart cost / Δ⌉ slots).",
        ),
    ] = "exact",
    preempt_gain: Annotated[
        str,
        typer.Option(
            "--preempt-gain",
            help="With preemption: a pause's gain is estimated by exchange (the jobs that "
            "start in its room, each against its own earliest start) | rollout (the "
            "waiting jobs' total completion under the list schedule, with the pause "
            "against without it).",
        ),
    ] = PlacementParams().preempt_gain,
    preempt_migrate: Annotated[
        bool,
        typer.Option(
            "--preempt-migrate/--no-preempt-migrate",
            help="With preemption: a pause stands when a job it was paused for starts, "
            "also if the paused job starts again at once elsewhere or at another width "
            "(a migration, charged its restart) (docs/formulation.md §16).",
        ),
    ] = PlacementParams().preempt_migrate,
    preempt_shrink: Annotated[
        bool,
        typer.Option(
            "--preempt-shrink/--no-preempt-shrink",
            help="With preemption and the rollout gain: a pause may instead restart the "
            "running job at once, narrower, on the nodes it holds, beside the jobs it gives "
            "way to (docs/formulation.md §16, 'Shrink in place'; measured, not the default).",
        ),
    ] = PlacementParams().preempt_shrink,
    preempt_defrag: Annotated[
        bool | None,
        typer.Option(
            "--preempt-defrag/--no-preempt-defrag",
            help="With preemption (default: on with it): move a running job, at its "
            "restart cost, to a node with fewer GPUs that holds it now when that lets a "
            "waiting job start co-located on the node it leaves (docs/formulation.md §16).",
            show_default=False,
        ),
    ] = None,
    preempt_regather: Annotated[
        bool | None,
        typer.Option(
            "--preempt-regather/--no-preempt-regather",
            help="With preemption and resize (default: on with them): a running job spread "
            "over nodes, with less work left than every waiting job, restarts co-located on "
            "a free node before the re-plan gives that node to the queue "
            "(docs/formulation.md §16, 'Regather').",
            show_default=False,
        ),
    ] = None,
    preempt_resize: Annotated[
        bool | None,
        typer.Option(
            "--preempt-resize/--no-preempt-resize",
            help="With preemption (default: on with it): also resize a running job by "
            "checkpoint-restart (grow a job slower than its fastest shape, start a job "
            "that waits for its width narrow and grow it), each at the restart cost; live, "
            "a site's `preempt_resize = true` (docs/formulation.md §16).",
            show_default=False,
        ),
    ] = None,
    preempt_max: Annotated[
        int | None,
        typer.Option(
            "--preempt-max",
            help="With preemption: pause one job for waiting jobs at most N times (default "
            "1000: each pause must gain more than its restart cost anyway; resizes do not "
            "count).",
            show_default=False,
        ),
    ] = None,
    restart_cost: Annotated[
        float,
        typer.Option(
            "--restart-cost",
            help="Seconds of no progress each time a running job's allocation changes "
            "(every policy).",
        ),
    ] = RESTART_S,
    limit: Annotated[
        int | None,
        typer.Option(help="Replay only the N earliest-submitted jobs (of the window, if given)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="TIME",
            help="Replay only jobs submitted at or after TIME: an ISO 8601 date or date-time "
            "(without a zone, read in the zone of the trace's own times: --tz, else Philly "
            "US Pacific and others UTC) or +DURATION from the trace's first submit (+7d, "
            "+12h, +30m, +90s).",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="TIME",
            help="Replay only jobs submitted before TIME (as --since; the window is "
            "since <= submit < until).",
        ),
    ] = None,
    load: Annotated[
        float | None,
        typer.Option(
            "--load",
            metavar="RHO",
            help="Rescale the arrivals to this offered load of the cluster (the jobs' least "
            "work over their submit span; 1.0 = full; default: the trace's own rate).",
        ),
    ] = None,
    lp_max_jobs: Annotated[
        int, typer.Option(help="Compute the LP lower bound up to this many jobs.")
    ] = LP_MAX_JOBS,
    trace_format: Annotated[
        str,
        typer.Option("--format", help="Trace format (auto detects).", rich_help_panel=TRACE),
    ] = "auto",
    columns: Annotated[
        str | None,
        typer.Option(
            help="Column map of a generic CSV (submit=COL,…) or a file with it.",
            rich_help_panel=TRACE,
        ),
    ] = None,
    skip_bad: Annotated[
        bool,
        typer.Option("--skip-bad", help="Skip malformed lines (counted).", rich_help_panel=TRACE),
    ] = False,
    tz: Annotated[
        str | None,
        typer.Option(
            help="Zone of trace times written without one (default UTC; Philly: "
            "America/Los_Angeles).",
            rich_help_panel=TRACE,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print summary.json to stdout.")] = False,
    on_slurm: Annotated[
        bool,
        typer.Option(
            "--on-slurm",
            help="Run the cells as a Slurm job array and merge them (needs --out DIR).",
            rich_help_panel=SLURM,
        ),
    ] = False,
    seeds: Annotated[
        str | None,
        typer.Option(
            help="Seeds to replay, e.g. 0,1,2 (default: --seed); results are means.",
            rich_help_panel=SLURM,
        ),
    ] = None,
    slices: Annotated[
        int,
        typer.Option(
            help="Cut the jobs into K contiguous slices replayed alone (an approximation).",
            rich_help_panel=SLURM,
        ),
    ] = 1,
    partition: Annotated[
        str | None, typer.Option(help="Partition of the array tasks.", rich_help_panel=SLURM)
    ] = None,
    time_limit: Annotated[
        str | None,
        typer.Option(
            "--time", help="Time limit of each task (sbatch --time).", rich_help_panel=SLURM
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="Wait for the cells and merge them; --no-wait prints the job id and the "
            "merge command.",
            rich_help_panel=SLURM,
        ),
    ] = True,
    merge: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Merge the cells of an earlier --on-slurm --no-wait run in DIR.",
            rich_help_panel=SLURM,
        ),
    ] = None,
) -> None:
    """Replay a trace under one or more placement policies and report the metrics."""
    if merge is not None:
        silence_highs_banner()
        _only_merge(trace, policy, on_slurm)
        replay_slurm.run_merge(merge, as_json=as_json)
        return
    if trace is None:  # usage: exit 2
        raise typer.BadParameter("give the TRACE to replay (or --merge DIR)", param_hint="'TRACE'")
    if not policy:
        raise typer.BadParameter("give a policy to replay", param_hint="'--policy' / '-p'")
    silence_highs_banner()
    from ..api import ReplayOptions
    from ..api import replay as run_replay

    opts = ReplayOptions(
        trace=trace,
        policies=tuple(policy),
        out_dir=out,
        nodes=nodes,
        cluster=cluster,
        seed=seed,
        form=_choice(Form, form, "--form"),
        binding=_choice(Binding, binding, "--binding"),
        queue_program=queue_program.strip().lower(),
        lookahead=lookahead,
        lookahead_widths=lookahead_widths,
        widths_forecast=widths_forecast,
        lookahead_pausable=lookahead_pausable,
        preempt=preempt,
        preempt_resize=preempt_resize,
        preempt_max=preempt_max,
        preempt_cost=preempt_cost.strip().lower(),
        preempt_gain=preempt_gain.strip().lower(),
        preempt_migrate=preempt_migrate,
        preempt_shrink=preempt_shrink,
        preempt_defrag=preempt_defrag,
        preempt_regather=preempt_regather,
        cpu_jobs=cpu_jobs.strip().lower(),
        cores_per_worker=cores_per_worker,
        arch_reading=arch_reading,
        restart_s=restart_cost,
        slot_seconds=slot_seconds,
        gpu_speed=gpu_speed,
        limit=limit,
        since=since,
        until=until,
        load=load,
        lp_max_jobs=lp_max_jobs,
        trace_format=trace_format,
        columns=columns,
        skip_bad=skip_bad,
        tz=tz,
    )
    if on_slurm:
        slurm_opts = _slurm_options(seed, seeds, slices, partition, time_limit)
        replay_slurm.run_on_slurm(
            opts, slurm_opts, wait=wait, as_json=as_json, clock=app_context().clock
        )
        return
    _local_only(seeds, slices, partition, time_limit, wait)
    with output.replay_progress(enabled=not as_json) as progress:
        report = run_replay(opts, app_context().clock, progress=progress)
    output.show_replay(report, as_json=as_json)


def _only_merge(trace: Path | None, policy: list[str] | None, on_slurm: bool) -> None:
    if trace is not None or policy or on_slurm:
        raise InputError(
            "option --merge DIR takes no trace, --policy or --on-slurm: the plan in DIR has them",
            hint="run: mlsub replay --merge DIR",
            context={"option": "--merge"},
        )


def _slurm_options(
    seed: int, seeds: str | None, slices: int, partition: str | None, time_limit: str | None
) -> SlurmReplayOptions:
    if seeds is not None and seed != 0:
        raise InputError(
            "options --seed and --seeds exclude each other",
            hint="give the seeds to replay as --seeds 0,1,2",
            context={"option": "--seeds"},
        )
    from ..api import SlurmReplayOptions, parse_seeds

    return SlurmReplayOptions(
        seeds=parse_seeds(seeds) if seeds is not None else (seed,),
        slices=slices,
        partition=partition,
        time_limit=time_limit,
    )


def _local_only(
    seeds: str | None, slices: int, partition: str | None, time_limit: str | None, wait: bool
) -> None:
    """The --on-slurm options given to a local replay: an error naming the first."""
    given = [
        ("--seeds", seeds is not None),
        ("--slices", slices != 1),
        ("--partition", partition is not None),
        ("--time", time_limit is not None),
        ("--no-wait", not wait),
    ]
    for option, present in given:
        if present:
            raise InputError(
                f"option {option} needs --on-slurm (a local replay runs one seed: --seed N)",
                hint="add --on-slurm to run the replay as a Slurm job array",
                context={"option": option},
            )
