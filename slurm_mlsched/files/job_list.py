"""The replay job list: a JSON or YAML file of jobs with submit times (``mlsub replay``).

Until trace files are read by :mod:`slurm_mlsched.traces`, ``mlsub replay`` takes this
simple list; it stays useful for hand-made scenarios. Format (unknown fields are errors)::

    epoch: 2026-01-01T00:00:00Z   # optional: the wall time of submit 0 (default: Unix epoch)
    jobs:
      - id: j1                    # optional, default job-<n> (1-based); ids must be distinct
        submit: 0                 # seconds after the epoch, or an ISO 8601 time
        workers: 4                # N: the job's (most) workers
        model: resnet-50          # a profiled model, or step_time + model_size (+ bw_ex, bw_in)
        workload: 20000           # V in mini-batches; or epochs × batches_per_epoch;
                                  # or duration_s (below)
      - {id: j2, submit: 120, workers: 1, model: vgg-16, duration_s: 3600}

* Every ``mlsub plan`` job option may be given with its field name: ``ps`` (``auto`` or a
  count), ``gpus_per_worker``, ``cpus_per_worker``, ``mem_per_worker``, ``cpus_per_ps``,
  ``mem_per_ps``, ``epochs``, ``batches_per_epoch``, ``model``, ``step_time``,
  ``model_size``, ``bw_ex``, ``bw_in``, ``name``; the defaults are ``mlsub plan``'s
  (worker 1 GPU, 4 CPUs, 16 GiB; PS 2 CPUs, 8 GiB; ``ps: auto``).
* Exactly one of ``workload``, ``batches_per_epoch`` (times ``epochs``, default 1) and
  ``duration_s`` sets V. ``duration_s`` is a run time as recorded: V is what N workers
  run in that time distributed, V = N · duration_s / θ_ex (a replay that co-locates the
  job runs it faster).
* Submit times are taken relative to the earliest one: the replay's slot 0 begins at the
  first submission.

:func:`parse_job_list` is pure (parsed data in, jobs out); :func:`read_job_list` reads
the file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path

import yaml

from ..errors import InputError
from ..model import JobRequest, Resources
from .job_options import OPTIONS, merge_options, profile_of

TOP_FIELDS = ("epoch", "jobs")
OWN_FIELDS = ("id", "submit", "workload", "duration_s")
OPTION_FIELDS = (
    "workers", "ps", "gpus_per_worker", "cpus_per_worker", "mem_per_worker", "cpus_per_ps",
    "mem_per_ps", "epochs", "batches_per_epoch", "model", "step_time", "model_size", "bw_ex",
    "bw_in", "name", "gpu_type",
)  # fmt: skip
JOB_FIELDS = OWN_FIELDS + OPTION_FIELDS
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class JobList:
    """Jobs with their submit times in seconds after ``epoch`` (the earliest is 0)."""

    entries: tuple[tuple[JobRequest, float], ...]
    epoch: datetime
    source: str


def _fail(source: str, where: str, problem: str, hint: str = "", **context: object) -> InputError:
    return InputError(
        f"{source}: {where}: {problem}",
        hint=hint,
        context={"file": source, "entry": where, **context},
    )


_OPTION = re.compile(r"\b(options?) (--[a-z][a-z-]*)|--([a-z][a-z-]*)(?: ([A-Z]+)\b)?")


def _as_fields(text: str) -> str:
    """``mlsub submit``'s option names in a message about a job list's entry, written as
    the entry's fields: ``option --step-time`` → ``field 'step_time'``, ``--model NAME`` →
    ``model: NAME``, ``--model-size`` → ``'model_size'`` (a job list has no options)."""

    def field(m: re.Match[str]) -> str:
        if m.group(2):
            word = "field" if m.group(1) == "option" else "fields"
            return f"{word} '{m.group(2)[2:].replace('-', '_')}'"
        name = m.group(3).replace("-", "_")
        return f"{name}: {m.group(4)}" if m.group(4) else f"'{name}'"

    return _OPTION.sub(field, text)


def _when(value: object, source: str, where: str, field: str) -> datetime | float:
    if isinstance(value, bool):
        raise _fail(source, where, f"field '{field}' is not a time, got {value!r}", field=field)
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise _fail(source, where, f"field '{field}' must be >= 0 seconds, got {value!r}")
        return float(value)
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise _fail(
        source,
        where,
        f"field '{field}' is not a number of seconds or an ISO 8601 time, got {value!r}",
        hint="e.g. submit: 120, or submit: 2026-01-01T10:00:00Z",
        field=field,
    )


def _workload(entry: Mapping[str, object], job: JobRequest, source: str, where: str) -> float:
    given = [k for k in ("workload", "batches_per_epoch", "duration_s") if entry.get(k) is not None]
    if len(given) != 1:
        problem = "sets no workload" if not given else f"sets {' and '.join(given)}"
        raise _fail(
            source,
            where,
            problem,
            hint="give exactly one of workload (mini-batches), batches_per_epoch, duration_s",
        )
    key = given[0]
    if key == "batches_per_epoch":
        return job.workload  # epochs × batches, already checked by the job options
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise _fail(source, where, f"field '{key}' must be a number > 0, got {value!r}", field=key)
    if key == "workload":
        return float(value)
    return job.max_workers * float(value) / job.profile.theta_ex


def _job(entry: object, n: int, source: str) -> tuple[JobRequest, datetime | float]:
    where = f"jobs[{n - 1}]"
    if not isinstance(entry, Mapping):
        raise _fail(source, where, f"is not a mapping, got {entry!r}")
    unknown = sorted(str(k) for k in entry if k not in JOB_FIELDS)
    if unknown:
        raise _fail(
            source,
            where,
            f"unknown field(s) {', '.join(unknown)}",
            hint=f"valid fields: {', '.join(JOB_FIELDS)}",
        )
    job_id = str(entry.get("id", f"job-{n}"))
    where = f"jobs[{n - 1}] ({job_id!r})"
    if "submit" not in entry:
        raise _fail(source, where, "has no 'submit' time", hint="add submit: SECONDS")
    submit = _when(entry["submit"], source, where, "submit")
    options = {k: entry[k] for k in OPTION_FIELDS if k in entry}
    options.setdefault("batches_per_epoch", 1)  # placeholder when V comes from elsewhere
    if "workers" not in options:
        raise _fail(source, where, "has no 'workers'", hint="add workers: N")
    try:
        opts = merge_options([], options, header_source=f"{source}: {where}")
        profile = profile_of(opts)
    except InputError as err:
        context = {k: v for k, v in err.context.items() if k != "option"}
        option = err.context.get("option")
        if isinstance(option, str) and option.startswith("--"):
            context["field"] = option[2:].replace("-", "_")
        raise _fail(
            source, where, _as_fields(err.message), _as_fields(err.hint), **context
        ) from None
    if opts.ps != "auto" and opts.workers is not None and opts.ps > opts.workers:
        raise _fail(source, where, f"ps {opts.ps} > workers {opts.workers}", field="ps")
    assert opts.workers is not None and opts.batches_per_epoch is not None
    base = JobRequest(
        job_id=job_id,
        arrival_slot=0,
        workload=float(opts.epochs * opts.batches_per_epoch),
        max_workers=opts.workers,
        worker=Resources(
            float(opts.gpus_per_worker), float(opts.cpus_per_worker), opts.mem_per_worker
        ),
        ps=Resources(0.0, float(opts.cpus_per_ps), opts.mem_per_ps),
        profile=profile,
        ps_count=None if opts.ps == "auto" else opts.ps,
        name=opts.name,
        gpu_types=opts.gpu_type,
    )
    return replace(base, workload=_workload(entry, base, source, where)), submit


def parse_job_list(data: object, source: str) -> JobList:
    """Jobs and submit times from a parsed job list (pure; module docstring)."""
    if isinstance(data, list):
        data = {"jobs": data}
    if not isinstance(data, Mapping):
        raise InputError(
            f"{source}: a job list is a mapping with 'jobs' (or a list of jobs)",
            context={"file": source},
        )
    unknown = sorted(str(k) for k in data if k not in TOP_FIELDS)
    if unknown:
        raise InputError(
            f"{source}: unknown top-level field(s) {', '.join(unknown)}",
            hint=f"valid fields: {', '.join(TOP_FIELDS)}",
            context={"file": source},
        )
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise InputError(f"{source}: 'jobs' must be a non-empty list", context={"file": source})
    epoch_value = data.get("epoch")
    epoch = _UNIX_EPOCH
    if epoch_value is not None:
        when = _when(epoch_value, source, "epoch", "epoch")
        if not isinstance(when, datetime):
            raise InputError(
                f"{source}: 'epoch' must be an ISO 8601 time", context={"file": source}
            )
        epoch = when
    parsed = [_job(entry, n, source) for n, entry in enumerate(jobs, start=1)]
    seen: set[str] = set()
    for req, _ in parsed:
        if req.job_id in seen:
            raise InputError(
                f"{source}: job id {req.job_id!r} appears twice",
                hint="give every job its own id",
                context={"file": source, "job_id": req.job_id},
            )
        seen.add(req.job_id)
    seconds = [(w - epoch).total_seconds() if isinstance(w, datetime) else w for _, w in parsed]
    first = min(seconds)
    start = datetime.fromtimestamp(epoch.timestamp() + first, tz=UTC)
    entries = tuple((req, s - first) for (req, _), s in zip(parsed, seconds, strict=True))
    return JobList(entries=entries, epoch=start, source=source)


def read_job_list(path: str | Path) -> JobList:
    """Read a job list from a ``.json``, ``.yaml`` or ``.yml`` file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot read job list {source}: {exc.strerror or exc}",
            hint="check the TRACE path",
            context={"file": source},
        ) from None
    try:
        data = json.loads(text) if source.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise InputError(
            f"{source}: not valid {'JSON' if source.endswith('.json') else 'YAML'}: {exc}",
            context={"file": source},
        ) from None
    return parse_job_list(data, source)


def is_job_list(path: str | Path) -> bool:
    """Whether ``path`` names a job list: a ``.json``/``.yaml`` file that is not a Slurm
    ``sacct --json`` dump (recognized by its content: a ``meta`` object with the Slurm
    version and a ``jobs`` array near the top, whatever the file's name)."""
    if not str(path).lower().endswith((".json", ".yaml", ".yml")):
        return False
    return not looks_like_sacct_json(path)


def looks_like_sacct_json(path: str | Path) -> bool:
    """Whether the file starts like ``sacct --json`` output (its first 64 KiB)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64 * 1024).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    return head.startswith("{") and '"jobs"' in head and ('"meta"' in head or '"Slurm"' in head)


assert set(OPTION_FIELDS) <= set(OPTIONS), "OPTION_FIELDS out of sync with job options"
