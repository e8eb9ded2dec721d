"""Job options: defaults < ``# mlsub:`` script header < command-line flags.

A job script may carry its options in header lines, like ``#SBATCH``::

    #!/usr/bin/env python3
    # mlsub: --workers 8 --ps auto --model resnet-50
    # mlsub: --epochs 2 --batches-per-epoch 2000
    import torch  # the header ended at the first line that is not blank and not a comment

The header is the run of blank and ``#`` lines at the top of the file (after an optional
``#!`` line); only lines starting ``# mlsub:`` (or ``#mlsub:``) are read, tokenized like a
shell (:mod:`shlex`: quotes work, ``$VARS`` are not expanded). A docstring or any code
ends the header.

Defaults (documented in ``docs/user-guide.md``):

* worker: 1 GPU, 4 CPUs, 16 GiB; PS (MODEL.md §2 **(choice)**): 0 GPU, 2 CPUs, 8 GiB;
* ``--ps auto``: PSs sized by the bandwidth rule (⌈W·b_ex/B_ex⌉);
* ``--epochs 1``; ``--workers`` and ``--batches-per-epoch`` have no default;
* ``--step-time`` / ``--model-size`` without ``--model``: b_ex = 100 MB/s (≈ 1 GbE) and
  b_in = 1000 MB/s unless ``--bw-ex`` / ``--bw-in`` are given; with ``--model`` those
  flags override the profile's bandwidths;
* memory sizes are Slurm-style: a bare number is MiB, ``8G`` = 8 GiB;
* ``--arch ps``; ``--arch allreduce`` has no PS (``--ps`` stays ``auto``, the PS demand is
  not counted) and starts its ranks with ``--launcher torchrun`` unless ``--launcher srun``
  (docs/user-guide.md, "Parameter servers or all-reduce").
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

from .. import ranges
from ..errors import InputError
from ..model import Architecture, Form, JobProfile, JobRequest, Launcher, Resources
from ..model.allreduce import DEFAULT_LAUNCHER
from ..model.eligibility import parse_gpu_types
from ..model.narrowing import NodeFilter
from ..ranges import OutOfRange, Range, unsafe_in_sbatch_line
from .profiles import get_profile
from .sbatch_lines import SbatchHeader, SbatchLine, merge_carried, parse_carried
from .script_text import read_script_text

#: MODEL.md §2 defaults for a worker and a PS (documented in docs/user-guide.md).
DEFAULT_GPUS_PER_WORKER = 1
DEFAULT_CPUS_PER_WORKER = 4
DEFAULT_MEM_PER_WORKER_MIB = 16 * 1024.0
DEFAULT_CPUS_PER_PS = 2
DEFAULT_MEM_PER_PS_MIB = 8 * 1024.0
#: Bandwidths used with --step-time/--model-size when --bw-ex/--bw-in are not given (MB/s).
DEFAULT_BW_EX_MBPS = 100.0  # about 1 GbE
DEFAULT_BW_IN_MBPS = 1000.0
DEFAULT_POLICY = "yu-rr"

PsCount = int | Literal["auto"]


@dataclass(frozen=True)
class JobOptions:
    """Everything a user says about one job, merged and validated (MiB for memory)."""

    workers: int | None = None
    ps: PsCount = "auto"
    gpus_per_worker: int = DEFAULT_GPUS_PER_WORKER
    cpus_per_worker: int = DEFAULT_CPUS_PER_WORKER
    mem_per_worker: float = DEFAULT_MEM_PER_WORKER_MIB
    cpus_per_ps: int = DEFAULT_CPUS_PER_PS
    mem_per_ps: float = DEFAULT_MEM_PER_PS_MIB
    epochs: int = 1
    batches_per_epoch: int | None = None
    model: str | None = None
    step_time: float | None = None
    model_size: float | None = None
    bw_ex: float | None = None
    bw_in: float | None = None
    policy: str = DEFAULT_POLICY
    seed: int = 0
    name: str = ""
    partition: str | None = None  # kept for the live path; plan ignores it
    form: Form = Form.NON_ELASTIC
    time_limit: int | None = None  # minutes (sbatch --time); submission only
    output: str | None = None  # sbatch --output pattern; submission only
    interpreter: str | None = None  # runs the script (default: python3 for *.py)
    sbatch: tuple[str, ...] = ()  # carried sbatch options (--account=x …), as rendered
    narrowing: NodeFilter = field(
        default_factory=NodeFilter
    )  # the nodes the script's #SBATCH lines allow
    gpu_type: frozenset[str] | None = None  # GPU types the workers may use (None: any)
    arch: Architecture = Architecture.PS
    launcher: Launcher | None = None  # allreduce only; None: DEFAULT_LAUNCHER

    @property
    def launch_with(self) -> Launcher:
        """How the ranks of an allreduce job start (``--launcher``, else torchrun)."""
        return self.launcher or DEFAULT_LAUNCHER

    @property
    def workload(self) -> float:
        """V = epochs × batches per epoch (mini-batches)."""
        return float(self.epochs * (self.batches_per_epoch or 0))


# --- converters: one per kind of value, each accepting a string or an already-typed value ---

Converter = Callable[[str, object], object]


def _bad(option: str, value: object, problem: str, hint: str = "") -> InputError:
    return InputError(
        f"option {option} {problem}, got {value!r}",
        hint=hint,
        context={"option": option, "value": value},
    )


def _integer(rng: Range) -> Callable[[str, object], int]:
    def convert(option: str, value: object) -> int:
        hint = f"write {option} N with a whole number N {rng.words(whole=True)}"
        try:
            return ranges.whole(value, rng)
        except OutOfRange as err:
            raise _bad(option, value, err.problem, hint) from None

    return convert


def _positive_float(rng: Range) -> Callable[[str, object], float]:
    def convert(option: str, value: object) -> float:
        hint = f"write {option} X with a number 0 < X <= {rng.hi:g} ({rng.unit})"
        try:
            return ranges.number(value, rng)
        except OutOfRange as err:
            raise _bad(option, value, err.problem, hint) from None

    return convert


def _memory(option: str, value: object) -> float:
    hint = (
        "give a Slurm-style size above 0 and at most 1P: '8G' (GiB), '512M' (MiB), or a "
        "bare number of MiB (Slurm reads --mem=0 as all of a node's memory, so 0 is refused)"
    )
    try:
        return ranges.memory_mib(value, ranges.JOB_MEM_MIB)
    except OutOfRange as err:
        raise _bad(option, value, err.problem, hint) from None


def _command(option: str, value: object) -> str:
    """A command prefix such as ``python3 -u``: split as a shell would, once, here."""
    text = _text(option, value)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise _bad(
            option, value, f"is not a command line ({exc})", "balance its quotes, e.g. 'python3 -u'"
        ) from None
    if not words:
        raise _bad(option, value, "must name a program", f"write {option} 'python3 -u'")
    return text


def _ps(option: str, value: object) -> PsCount:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    try:
        count = _integer(ranges.TASKS)(option, value)
    except InputError:
        raise _bad(
            option, value, "must be 'auto' or a whole number >= 1", "e.g. --ps auto, --ps 2"
        ) from None
    return count


def _text(option: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(option, value, "must be a non-empty string", f"write {option} TEXT")
    return value.strip()


def _sbatch_text(option: str, value: object) -> str:
    """A value that goes into an ``#SBATCH`` line (name, partition, output): refused at
    once when it cannot (``plan`` says so as ``submit`` would)."""
    text = _text(option, value)
    if unsafe_in_sbatch_line(text):
        raise _bad(
            option, value, "holds a control character (newline, tab …) or a backslash",
            f"write {option} without them (it goes into an #SBATCH line)",
        )  # fmt: skip
    return text


_SLURM_TIME = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")


def _time_limit(option: str, value: object) -> int:
    """Slurm's ``--time``: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S -> whole minutes (rounded up)."""
    hint = "write a Slurm time limit: 90 (minutes), 1:30:00, 2-00:00:00"
    text = str(value).strip() if isinstance(value, str | int) and value is not True else ""
    match = _SLURM_TIME.fullmatch(text)
    if not match:
        raise _bad(option, value, "is not a Slurm time limit", hint)
    days, a, b, c = match.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # D-H[:M[:S]]
        h, m, sec = [*parts, 0, 0][:3]
    elif len(parts) == 1:  # M
        h, m, sec = 0, parts[0], 0
    elif len(parts) == 2:  # M:S
        h, m, sec = 0, parts[0], parts[1]
    else:  # H:M:S
        h, m, sec = parts
    seconds = ((int(days or 0) * 24 + h) * 60 + m) * 60 + sec
    if seconds <= 0:
        raise _bad(option, value, "must be at least one second", hint)
    minutes = math.ceil(seconds / 60)
    if minutes not in ranges.TIME_LIMIT_MIN:
        raise _bad(option, value, "must be at most a year (366-00:00:00)", hint)
    return minutes


def _sbatch(option: str, value: object) -> tuple[str, ...]:
    """``'--qos=high --mail-type=END'``: carried sbatch options (files/sbatch_lines.py)."""
    if isinstance(value, tuple):
        return tuple(str(v) for v in value)
    return merge_carried([parse_carried(_text(option, value), f"option {option}")])


def _gpu_type(option: str, value: object) -> frozenset[str] | None:
    """``v100`` or ``v100,p100`` (Slurm's GRES types, matched exactly); ``any`` = any."""
    if isinstance(value, frozenset):
        value = ",".join(sorted(value))
    hint = f"write {option} v100, or {option} v100,p100 for either, or {option} any"
    if not isinstance(value, str) or not value.strip():
        raise _bad(option, value, "must name one or more GPU types", hint)
    try:
        return parse_gpu_types(value)
    except ValueError as exc:
        raise _bad(option, value, f"is not a list of GPU types: {exc}", hint) from None


def _form(option: str, value: object) -> Form:
    try:
        return Form(str(value).strip().lower())
    except ValueError:
        valid = ", ".join(f.value for f in Form)
        raise _bad(option, value, "is not a placement form", f"choose one of: {valid}") from None


def _choice(kind: type[Architecture] | type[Launcher], what: str) -> Converter:
    """A converter to one of an enum's values (case and spaces ignored)."""

    def convert(option: str, value: object) -> object:
        try:
            return kind(str(value).strip().lower())
        except ValueError:
            valid = " | ".join(k.value for k in kind)
            raise _bad(option, value, f"is not {what}", f"write {option} {valid}") from None

    return convert


#: The job options' ranges are in :mod:`slurm_mlsched.ranges` (a job beyond them is a typo,
#: not a request; they keep every number the placement program sees finite).
MAX_TASKS = int(ranges.TASKS.hi)


@dataclass(frozen=True)
class JobOptionSpec:
    """One job option, declared once: the ``JobOptions`` field, the flag (the same in the
    ``# mlsub:`` header, on the command line and, as ``field``, in the config's ``[job]``
    table), the converter every source goes through, and what the command line shows (the
    value type Typer parses, help, panel ``job`` or ``placement``, extra aliases)."""

    field: str
    flag: str
    convert: Converter
    cli_type: type
    help: str
    panel: str = "job"
    aliases: tuple[str, ...] = ()


SPECS: tuple[JobOptionSpec, ...] = (
    JobOptionSpec("workers", "--workers", _integer(ranges.TASKS), int, "Workers (N, at most)."),
    JobOptionSpec("ps", "--ps", _ps, str, "PSs: 'auto' or a count."),
    JobOptionSpec("gpus_per_worker", "--gpus-per-worker", _integer(ranges.GPUS_PER_TASK), int,
                  "GPUs per worker (default 1)."),
    JobOptionSpec("cpus_per_worker", "--cpus-per-worker", _integer(ranges.CPUS_PER_TASK), int,
                  "CPUs per worker (default 4)."),
    JobOptionSpec("mem_per_worker", "--mem-per-worker", _memory, str,
                  "Memory per worker, Slurm-style (8G; bare = MiB) (default 16G)."),
    JobOptionSpec("cpus_per_ps", "--cpus-per-ps", _integer(ranges.CPUS_PER_TASK), int,
                  "CPUs per PS (default 2)."),
    JobOptionSpec("mem_per_ps", "--mem-per-ps", _memory, str,
                  "Memory per PS, Slurm-style (default 8G)."),
    JobOptionSpec("epochs", "--epochs", _integer(ranges.BATCHES), int, "Epochs (default 1)."),
    JobOptionSpec("batches_per_epoch", "--batches-per-epoch", _integer(ranges.BATCHES), int,
                  "Mini-batches per epoch."),
    JobOptionSpec("model", "--model", _text, str, "Profiled model (see the user guide)."),
    JobOptionSpec("step_time", "--step-time", _positive_float(ranges.STEP_TIME_S), float,
                  "Seconds per mini-batch (τ)."),
    JobOptionSpec("model_size", "--model-size", _positive_float(ranges.MODEL_MB), float,
                  "Model size in MB (g)."),
    JobOptionSpec("bw_ex", "--bw-ex", _positive_float(ranges.BANDWIDTH_MBPS), float,
                  "Network MB/s per worker (default: the model's, else 100)."),
    JobOptionSpec("bw_in", "--bw-in", _positive_float(ranges.BANDWIDTH_MBPS), float,
                  "Internal MB/s per worker (default: the model's, else 1000)."),
    JobOptionSpec("gpu_type", "--gpu-type", _gpu_type, str,
                  "GPU type(s) the workers may use: v100, or v100,p100 (default any)."),
    JobOptionSpec("name", "--name", _sbatch_text, str, "Job name."),
    JobOptionSpec("partition", "--partition", _sbatch_text, str,
                  "Slurm partition (live: its nodes only)."),
    JobOptionSpec("time_limit", "--time", _time_limit, str,
                  "Slurm time limit (90, 1:30:00, 2-00:00:00)."),
    JobOptionSpec("output", "--output", _sbatch_text, str,
                  "sbatch --output pattern (default mlsub-ID-%j.out); the header's key is "
                  "--output too.", aliases=("--output-pattern",)),
    JobOptionSpec("interpreter", "--interpreter", _command, str,
                  "Runs the script on each task (default: python3 for *.py)."),
    JobOptionSpec("sbatch", "--sbatch", _sbatch, str,
                  "sbatch options carried to the script: '--qos=high --mail-type=END' "
                  "(over the script's #SBATCH lines)."),
    JobOptionSpec("arch", "--arch", _choice(Architecture, "an architecture"), str,
                  "ps | allreduce: parameter servers, or a ring all-reduce (DDP) with no PS "
                  "(default ps)."),
    JobOptionSpec("launcher", "--launcher", _choice(Launcher, "a launcher"), str,
                  "torchrun | srun: how an allreduce job starts its ranks (default torchrun)."),
    JobOptionSpec("policy", "--policy", _text, str, "Placement policy (default yu-rr).",
                  panel="placement"),
    JobOptionSpec("seed", "--seed", _integer(ranges.SEED), int, "Rounding seed (default 0).",
                  panel="placement"),
    JobOptionSpec("form", "--form", _form, str, "elastic | non-elastic (default non-elastic).",
                  panel="placement"),
)  # fmt: skip

#: field name -> (command-line option, converter). The header accepts exactly these.
OPTIONS: dict[str, tuple[str, Converter]] = {s.field: (s.flag, s.convert) for s in SPECS}
_BY_FLAG = {flag: name for name, (flag, _) in OPTIONS.items()}
#: Fields set from the script's ``#SBATCH`` lines only (no flag of their own).
SBATCH_ONLY = frozenset({"narrowing"})
assert set(OPTIONS) == {f.name for f in fields(JobOptions)} - SBATCH_ONLY, "OPTIONS out of sync"


# --- the header ----------------------------------------------------------------------------


class HeaderTokens(list[str]):
    """The tokens of a script's ``# mlsub:`` lines, with the line each came from
    (``lines[i]`` for ``self[i]``), so that a bad value's error names its line."""

    lines: list[int]

    def __init__(self) -> None:
        super().__init__()
        self.lines = []

    def line_of(self, index: int) -> int | None:
        return self.lines[index] if 0 <= index < len(self.lines) else None


def parse_script_header(text: str, source: str) -> HeaderTokens:
    """The tokens of the ``# mlsub:`` lines at the top of a script (pure)."""
    tokens = HeaderTokens()
    lines = text.splitlines()
    start = 1 if lines and lines[0].startswith("#!") else 0
    for number, line in enumerate(lines[start:], start=start + 1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        body = stripped[1:].lstrip()
        if not body.startswith("mlsub:"):
            continue
        try:
            words = shlex.split(body[len("mlsub:") :])
            tokens.extend(words)
            tokens.lines.extend([number] * len(words))
        except ValueError as exc:
            raise InputError(
                f"{source} line {number}: cannot read the '# mlsub:' line: {exc}",
                hint="close the quotes on that line",
                context={"file": source, "line": number},
            ) from None
    return tokens


def read_script_header(path: str | Path) -> HeaderTokens:
    """Read ``path`` and return its header tokens."""
    source = str(path)
    text = read_script_text(path)
    return parse_script_header(text, source)


def _header_values(
    args: Sequence[str], source: str, at: dict[str, int] | None = None
) -> dict[str, str]:
    """``--flag value`` / ``--flag=value`` tokens -> raw values by field name (last wins);
    ``at`` receives the index of each field's flag token."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        flag, eq, inline = token.partition("=")
        name = _BY_FLAG.get(flag)
        if name is None:
            raise InputError(
                f"{source}: unknown option {token!r}",
                hint=f"valid options: {', '.join(sorted(_BY_FLAG))}",
                context={"file": source, "option": token},
            )
        if at is not None:
            at[name] = i
        if eq:
            out[name] = inline
            i += 1
        elif i + 1 < len(args):
            out[name] = args[i + 1]
            i += 2
        else:
            raise InputError(
                f"{source}: option {flag} needs a value",
                hint=f"write '{flag} VALUE'",
                context={"file": source, "option": flag},
            )
    return out


#: Where merge_options' values come from, besides the script's header (its ``header_source``).
CONFIG_LAYER = "the config's [job] table"
SBATCH_LAYER = "#SBATCH lines"
CLI_LAYER = "the command line"


def merge_options(
    header_args: Sequence[str],
    cli_overrides: Mapping[str, object],
    *,
    header_source: str = "'# mlsub:' header",
    config_defaults: Mapping[str, object] | None = None,
    sbatch_header: SbatchHeader | None = None,
) -> JobOptions:
    """Defaults < config ``[job]`` table < the script's ``#SBATCH`` lines < its ``# mlsub:``
    header < command line; every value checked and converted.

    ``cli_overrides`` maps :class:`JobOptions` field names to values given on the command
    line (``None`` = not given); values may be strings or already typed. ``--sbatch``
    merges per sbatch option instead (:func:`~.sbatch_lines.merge_carried`): the highest
    source that names an option gives all its lines.
    """
    sbatch = sbatch_header or SbatchHeader()
    at: dict[str, int] = {}  # field -> index of its flag in header_args
    cli = {}
    for name, value in cli_overrides.items():
        if name not in OPTIONS:
            raise ValueError(f"not a job option: {name!r}")
        if value is not None:
            cli[name] = value
    layers: list[tuple[str, Mapping[str, object]]] = [
        (CONFIG_LAYER, dict(config_defaults or {})),
        (SBATCH_LAYER, dict(sbatch.job_values)),
        (header_source, _header_values(header_args, header_source, at)),
        (CLI_LAYER, cli),
    ]
    merged: dict[str, object] = {}
    origin: dict[str, str] = {}
    for where, layer in layers:
        for name, value in layer.items():
            if name != "sbatch":
                merged[name], origin[name] = value, where
    converted: dict[str, object] = {}
    for name, raw in merged.items():
        try:
            converted[name] = OPTIONS[name][1](OPTIONS[name][0], raw)
        except InputError as err:
            if origin[name] == CLI_LAYER:  # its option is where
                raise
            if origin[name] == SBATCH_LAYER and name in sbatch.lines:
                file, number = sbatch.lines[name]
                raise _placed(err, f"{file}:{number}", file, number) from None
            if origin[name] == header_source and isinstance(header_args, HeaderTokens):
                written = header_args.line_of(at.get(name, -1))
                if written is not None:
                    place = f"{header_source} line {written}"
                    raise _placed(err, place, header_source, written) from None
            raise _placed(err, origin[name], origin[name]) from None
    converted["sbatch"] = _carried(layers, sbatch.carried)
    converted["narrowing"] = sbatch.narrowing
    return replace(JobOptions(), **converted)  # type: ignore[arg-type]


def _placed(err: InputError, place: str, file: str, line: int | None = None) -> InputError:
    """``err`` of a value, prefixed with where the value was written: its ``#SBATCH`` line
    (``file:line``), its ``# mlsub:`` line, else the header or the config's ``[job]``
    table."""
    context = {**err.context, "file": file, **({} if line is None else {"line": line})}
    return InputError(f"{place}: {err.message}", hint=err.hint, context=context, code=err.code)


def _carried(
    layers: Sequence[tuple[str, Mapping[str, object]]], from_lines: tuple[SbatchLine, ...]
) -> tuple[str, ...]:
    """The carried sbatch options of every source, merged (the #SBATCH lines are the
    second layer)."""
    parsed: list[Sequence[SbatchLine]] = []
    for index, (where, layer) in enumerate(layers):
        if index == 1:
            parsed.append(from_lines)
        raw = layer.get("sbatch")
        if raw is None:
            continue
        if isinstance(raw, tuple):
            parsed.append(parse_carried(" ".join(raw), where))
        else:
            parsed.append(parse_carried(_text("--sbatch", raw), f"{where}: --sbatch"))
    return merge_carried(parsed)


# --- the request ---------------------------------------------------------------------------


def _require(value: int | None, option: str) -> int:
    if value is None:
        raise InputError(
            f"option {option} is not set",
            hint=f"pass {option} N on the command line, in the script's '# mlsub:' header or "
            "in the [job] table of your config file (docs/user-guide.md)",
            context={"option": option},
        )
    return value


def profile_of(opts: JobOptions) -> JobProfile:
    """The speed profile: ``--model`` from the table, or ``--step-time`` + ``--model-size``."""
    if opts.model is not None and (opts.step_time is not None or opts.model_size is not None):
        flag = "--step-time" if opts.step_time is not None else "--model-size"
        raise InputError(
            f"options --model ({opts.model!r}) and {flag} exclude each other",
            hint="use --model NAME for a profiled model, or --step-time and --model-size",
            context={"option": flag, "value": opts.model},
        )
    if opts.model is not None:
        base = get_profile(opts.model)
        return replace(
            base,
            bw_ex_mbps=base.bw_ex_mbps if opts.bw_ex is None else opts.bw_ex,
            bw_in_mbps=base.bw_in_mbps if opts.bw_in is None else opts.bw_in,
        )
    if opts.step_time is None or opts.model_size is None:
        missing = "--step-time" if opts.step_time is None else "--model-size"
        raise InputError(
            f"no speed profile: option {missing} is not set",
            hint="pass --model NAME (see the profile table), or both --step-time SECONDS and "
            "--model-size MB",
            context={"option": missing},
        )
    return JobProfile(
        step_time_s=opts.step_time,
        model_size_mb=opts.model_size,
        bw_ex_mbps=DEFAULT_BW_EX_MBPS if opts.bw_ex is None else opts.bw_ex,
        bw_in_mbps=DEFAULT_BW_IN_MBPS if opts.bw_in is None else opts.bw_in,
        name="custom",
    )


def to_request(opts: JobOptions, arrival_slot: int, job_id: str | None = None) -> JobRequest:
    """The :class:`JobRequest` of ``opts`` arriving in ``arrival_slot``.

    ``job_id`` defaults to ``--name`` or ``"plan"``.
    """
    workers = _require(opts.workers, "--workers")
    batches = _require(opts.batches_per_epoch, "--batches-per-epoch")
    _check_arch(opts)
    if opts.ps != "auto" and opts.ps > workers:
        raise InputError(
            f"option --ps {opts.ps} asks for more PSs than --workers {workers}",
            hint="a job never has more PSs than workers (MODEL.md §2); lower --ps or use --ps auto",
            context={"option": "--ps", "value": opts.ps},
        )
    profile = profile_of(opts)
    ring = opts.arch is Architecture.ALLREDUCE
    return JobRequest(
        job_id=job_id or opts.name or "plan",
        arrival_slot=arrival_slot,
        workload=float(opts.epochs * batches),
        max_workers=workers,
        worker=Resources(
            float(opts.gpus_per_worker), float(opts.cpus_per_worker), opts.mem_per_worker
        ),
        ps=Resources() if ring else Resources(0.0, float(opts.cpus_per_ps), opts.mem_per_ps),
        profile=profile,
        ps_count=0 if ring else None if opts.ps == "auto" else opts.ps,
        name=opts.name,
        gpu_types=opts.gpu_type,
        arch=opts.arch,
        launcher=opts.launch_with if ring else None,
    )


def _check_arch(opts: JobOptions) -> None:
    """An allreduce job has no PS; ``--launcher`` belongs to allreduce jobs."""
    if opts.arch is Architecture.ALLREDUCE and opts.ps != "auto":
        raise InputError(
            f"option --ps {opts.ps} gives PSs to an --arch allreduce job, which has none",
            hint="drop --ps (or write --ps auto) for an all-reduce job, or use --arch ps",
            context={"option": "--ps", "value": opts.ps},
        )
    if opts.arch is Architecture.PS and opts.launcher is not None:
        raise InputError(
            f"option --launcher {opts.launcher} is for --arch allreduce jobs only",
            hint="add --arch allreduce, or drop --launcher (a ps job's roles start as mlsub "
            "renders them)",
            context={"option": "--launcher", "value": str(opts.launcher)},
        )
