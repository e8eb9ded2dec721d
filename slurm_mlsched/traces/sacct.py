"""Readers of Slurm accounting: ``sacct --parsable2`` (or ``--parsable``) and ``sacct --json``.

Both turn sacct's rows into one :class:`~.record.TraceRecord` per job:

* **steps** (``N.batch``, ``N.extern``, ``N.0``, ``N+K.0`` …) are folded into their job: a
  step's resources are part of its job's allocation, so step rows add nothing but are
  checked to belong to a job (steps without their job row are counted in the notes);
* **hetjob components** (``N+0``, ``N+1`` …; in JSON ``het.job_id``/``het.job_offset``) are
  folded into one job ``N``: GPUs, CPUs, memory and nodes summed; submit and start the
  earliest, end the latest, run time the longest, time limit the largest (none if one
  component has none), state the one that says most (running > pending > node_fail >
  out_of_memory > failed > timeout > preempted > cancelled > completed), name, user and
  partition those of component 0;
* **array tasks** stay separate jobs ``N_K`` (each had its own allocation);
* resources are the job's **requested** TRES (``ReqTRES``), else its allocation
  (``AllocTRES``), else the plain columns (``ReqCPUS``/``NCPUS``, ``ReqMem``,
  ``ReqNodes``/``NNodes``); memory units K/M/G/T, ``gres/gpu`` for GPUs;
* jobs that never ran (cancelled while pending: ``Start`` = ``None``) are kept, with their
  state; a job's duplicate rows (``sacct -D``: requeued runs) keep the last one, counted.

Field names are those of Slurm 22.05 and 24.11 (the columns used exist in both; 24.11
renamed ``Reserved`` to ``Planned``, which is not used). The header line is required; the
recommended field set is :data:`SACCT_FORMAT`. ``Submit``/``Start``/``End`` are local
times without a zone (read in ``tz``, default UTC) or epoch seconds when sacct ran with
``SLURM_TIME_FORMAT=%s``.

``sacct --json``: Slurm 22.05's ``openapi/dbv0.0.38`` layout and 24.11's
``data_parser/v0.0.42`` (the same paths; 24.11 has ``state.current`` as a list, limits,
offsets and task ids as ``{set, infinite, number}``, and a never-started job's
``time.start`` as NO_VAL). Both verified against real output of the lab cluster
(``tests/fixtures/sacct/``). Numbers are read in either form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..slurm.values import SlurmValueError, slurm_number
from .record import JobState, SkippedLine, TimeBase, Trace, TraceRecord
from .rows import BadField, LineErrors, ReadOptions, StateWords, quote
from .values import (
    parse_count,
    parse_req_mem,
    parse_slurm_duration,
    parse_slurm_time,
    parse_time_limit,
    parse_time_limit_minutes,
    tres_resources,
    zone,
)

#: The ``--format`` the replay guide recommends (every field exists in 22.05 and 24.11).
SACCT_FORMAT = (
    "JobID,JobIDRaw,JobName,User,Account,Partition,State,ExitCode,Submit,Eligible,Start,End,"
    "Elapsed,ElapsedRaw,Timelimit,TimelimitRaw,NNodes,NCPUS,ReqCPUS,ReqMem,ReqNodes,ReqTRES,"
    "AllocTRES,NodeList"
)
REQUIRED_FIELDS = ("JobID", "Submit")

_JOBID_RE = re.compile(
    r"^(?P<base>\d+(?:_(?:\d+|\[[^\]]*\]))?)(?:\+(?P<het>\d+))?(?:\.(?P<step>[^.]+))?$"
)

#: Which state of a hetjob's components the whole job gets: the first in this order.
_STATE_ORDER = (
    JobState.RUNNING,
    JobState.PENDING,
    JobState.NODE_FAIL,
    JobState.OUT_OF_MEMORY,
    JobState.FAILED,
    JobState.TIMEOUT,
    JobState.PREEMPTED,
    JobState.CANCELLED,
    JobState.COMPLETED,
    JobState.UNKNOWN,
)


@dataclass(frozen=True)
class _Part:
    """One job-level row: a whole job, or one component of a hetjob."""

    base: str
    het: int | None
    line: int
    submit: float
    start: float | None
    end: float | None
    elapsed: float | None
    time_limit: float | None
    gpus: int | None
    cpus: int | None
    mem: float | None
    nodes: int | None
    state: JobState
    user: str | None
    name: str | None
    partition: str | None
    extra: tuple[tuple[str, str], ...]


class _Jobs:
    """Collects parts by job, in first-seen order; folds them into records at the end."""

    def __init__(self, errors: LineErrors) -> None:
        self.errors = errors
        self.parts: dict[str, dict[int | None, _Part]] = {}
        self.lines: dict[str, list[int]] = {}  # every job-level line of a job
        self.bad: set[str] = set()  # jobs with a skipped (malformed) job-level line
        self.steps: dict[str, int] = {}  # step rows per job
        self.duplicates = 0

    def add(self, part: _Part) -> None:
        comps = self.parts.setdefault(part.base, {})
        if part.het in comps:
            self.duplicates += 1
        comps[part.het] = part
        self.lines.setdefault(part.base, []).append(part.line)

    def add_bad(self, base: str, line: int) -> None:
        self.bad.add(base)
        self.parts.setdefault(base, {})
        self.lines.setdefault(base, []).append(line)

    def add_step(self, base: str) -> None:
        self.steps[base] = self.steps.get(base, 0) + 1

    def records(self, source: str) -> list[TraceRecord]:
        out: list[TraceRecord] = []
        for base, comps in self.parts.items():
            if base in self.bad:
                bad_lines = {s.line for s in self.errors.skipped}
                for line in self.lines[base]:
                    if line not in bad_lines:
                        self.errors.skipped.append(
                            _skipped(line, base, "another row of this job is malformed")
                        )
                continue
            out.append(_fold(base, [comps[k] for k in sorted(comps, key=_het_key)], source))
        return out

    def count_rows(self) -> None:
        """Record in the row accounting (``errors``) where the rows that are neither a
        record nor skipped went: the other rows of a folded job (components, requeued
        duplicates) and its steps are folded; steps of no job (or of a skipped one) are
        ignored. Call after :meth:`records`."""
        for base, lines in self.lines.items():
            if base not in self.bad:
                self.errors.folded += len(lines) - 1
        for base, n in self.steps.items():
            if base in self.parts and base not in self.bad:
                self.errors.folded += n
            else:
                self.errors.ignored += n

    def notes(self) -> list[str]:
        notes = []
        folded = sum(n for base, n in self.steps.items() if base in self.parts)
        if folded:
            notes.append(f"{folded} step rows folded into their jobs")
        orphans = {b: n for b, n in self.steps.items() if b not in self.parts}
        if orphans:
            notes.append(
                f"{sum(orphans.values())} step rows of {len(orphans)} jobs without a job row "
                f"ignored (jobs {', '.join(sorted(orphans)[:5])}{' …' if len(orphans) > 5 else ''})"
            )
        hets = sum(1 for comps in self.parts.values() if len(comps) > 1)
        if hets:
            notes.append(f"{hets} heterogeneous jobs folded from their components")
        if self.duplicates:
            notes.append(f"{self.duplicates} duplicate job rows (requeued runs): kept the last")
        return notes


def _het_key(het: int | None) -> int:
    return -1 if het is None else het


def _skipped(line: int, base: str, reason: str) -> SkippedLine:
    return SkippedLine(line, "JobID", base, reason)


def _sum(values: Sequence[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return float(sum(v for v in values if v is not None))


def _max_limit(limits: Sequence[float | None]) -> float | None:
    """The largest time limit; none when one component has none (it may run forever)."""
    known = [t for t in limits if t is not None]
    return max(known) if len(known) == len(limits) else None


def _fold(base: str, parts: list[_Part], source: str) -> TraceRecord:
    first = parts[0]
    if len(parts) == 1:
        gpus, cpus, mem, nodes = first.gpus, first.cpus, first.mem, first.nodes
        extra = first.extra
    else:
        gpus_f, cpus_f, nodes_f = (
            _sum([p.gpus for p in parts]),
            _sum([p.cpus for p in parts]),
            _sum([p.nodes for p in parts]),
        )
        gpus = int(gpus_f) if gpus_f is not None else None
        cpus = int(cpus_f) if cpus_f is not None else None
        nodes = int(nodes_f) if nodes_f is not None else None
        mem = _sum([p.mem for p in parts])
        extra = (*first.extra, ("het_components", str(len(parts))))
    starts = [p.start for p in parts if p.start is not None]
    ends = [p.end for p in parts]
    elapsed = [p.elapsed for p in parts if p.elapsed is not None]
    limits = [p.time_limit for p in parts]
    state = min((p.state for p in parts), key=_STATE_ORDER.index)
    return TraceRecord(
        job_id=base,
        submit=min(p.submit for p in parts),
        source=source,
        line=min(p.line for p in parts),
        start=min(starts) if starts else None,
        end=max(e for e in ends if e is not None) if all(e is not None for e in ends) else None,
        duration_s=max(elapsed) if elapsed else None,
        time_limit_s=_max_limit(limits),
        gpus=gpus,
        cpus=cpus,
        mem_mb=mem,
        nodes=nodes,
        state=state,
        user=first.user,
        name=first.name,
        partition=first.partition,
        extra=extra,
    )


def _tz(opts: ReadOptions, errors: LineErrors) -> str:
    tz = opts.tz or "UTC"
    try:
        zone(tz)
    except ValueError as exc:
        raise errors.whole_file(str(exc), "pass an IANA zone name such as UTC") from None
    return tz


# --- sacct --parsable2 ------------------------------------------------------------------


def split_job_id(text: str) -> tuple[str, int | None, str | None]:
    """``66+1.0`` -> (``"66"``, 1, ``"0"``); ``72_1.batch`` -> (``"72_1"``, None, ``"batch"``)."""
    match = _JOBID_RE.match(text.strip())
    if not match:
        raise ValueError(f"not a Slurm job id: {text!r} (expected N, N_K, N+K, optionally .STEP)")
    het = match["het"]
    return match["base"], int(het) if het is not None else None, match["step"]


def _delimiter(header: str, errors: LineErrors) -> str:
    for ch in header:
        if not (ch.isalnum() or ch == "_"):
            return ch
    raise errors.whole_file(
        f"the header has one column only ({header.strip()!r})",
        f"run sacct --parsable2 --format={SACCT_FORMAT}",
        line=1,
    )


def parse_sacct(lines: Iterable[str], opts: ReadOptions | None = None) -> Trace:
    """``sacct --parsable2`` (or ``--parsable``, or ``--delimiter=X``) output with its header.

    Needs at least ``JobID`` and ``Submit``; reads every other field of
    :data:`SACCT_FORMAT` it finds (field names are matched without regard to case).
    """
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "sacct")
    tz = _tz(opts, errors)
    states = StateWords()
    jobs = _Jobs(errors)
    it = iter(lines)
    header_line = ""
    header_no = 0
    for raw in it:  # the header is the first non-blank line
        header_no += 1
        errors.total = header_no
        if raw.strip():
            header_line = raw.rstrip("\r\n")
            errors.header += 1
            break
        errors.blank += 1
    if not header_line:
        raise errors.whole_file(
            "the file is empty (no header line)", f"run sacct --parsable2 --format={SACCT_FORMAT}"
        )
    delim = _delimiter(header_line, errors)
    trailing = header_line.endswith(delim)
    names = header_line[:-1].split(delim) if trailing else header_line.split(delim)
    index = {name.strip().lower(): i for i, name in enumerate(names)}
    missing = [f for f in REQUIRED_FIELDS if f.lower() not in index]
    if missing:
        raise errors.whole_file(
            f"missing field(s) {', '.join(missing)}; the header has: {', '.join(names)}",
            f"run sacct with a header and at least JobID,Submit, e.g. "
            f"sacct -a --parsable2 --format={SACCT_FORMAT} (sacct's default fields have "
            "no Submit time)",
            line=header_no,
        )
    text_times = False
    for number, raw in enumerate(it, start=header_no + 1):
        errors.total = number
        line = raw.rstrip("\r\n")
        if not line.strip():
            errors.blank += 1
            continue
        if trailing and line.endswith(delim):
            line = line[:-1]
        values = line.split(delim)
        if len(values) != len(names):
            errors.bad(
                number,
                BadField("(row)", line, f"{len(values)} fields, the header has {len(names)}"),
            )
            continue
        row = {name: values[i] for name, i in index.items()}
        try:
            base, het, step = split_job_id(row["jobid"])
        except ValueError as exc:
            errors.bad(number, BadField("JobID", row["jobid"], str(exc)))
            continue
        if step is not None:
            jobs.add_step(base)
            continue
        try:
            part = _part_from_row(base, het, number, row, tz, states)
        except BadField as exc:
            errors.bad(number, exc)
            jobs.add_bad(base, number)
            continue
        text_times = text_times or not row["submit"].strip().isdigit()
        jobs.add(part)
    records = jobs.records("sacct")
    jobs.count_rows()
    notes = jobs.notes() + list(states.notes())
    if text_times:
        notes.insert(0, f"Submit/Start/End have no zone in sacct's output: read as {tz}")
    errors.skipped.sort(key=lambda s: s.line)
    return Trace(
        tuple(records),
        "sacct",
        opts.path,
        TimeBase.EPOCH,
        tuple(errors.skipped),
        tuple(notes),
        errors.counts(),
        zone=tz,
    )


def _cell(row: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    """The first of ``names`` (lower-case field names) that the row has, non-empty."""
    for name in names:
        value = row.get(name)
        if value is not None and value.strip():
            return name, value.strip()
    return None


_FIELD_NAMES = {
    "submit": "Submit",
    "start": "Start",
    "end": "End",
    "elapsedraw": "ElapsedRaw",
    "elapsed": "Elapsed",
    "timelimitraw": "TimelimitRaw",
    "timelimit": "Timelimit",
    "reqtres": "ReqTRES",
    "alloctres": "AllocTRES",
    "reqcpus": "ReqCPUS",
    "ncpus": "NCPUS",
    "alloccpus": "AllocCPUS",
    "reqmem": "ReqMem",
    "reqnodes": "ReqNodes",
    "nnodes": "NNodes",
}


def _read(row: Mapping[str, str], name: str, parse: Any) -> Any:
    try:
        return parse(row[name])
    except ValueError as exc:
        raise BadField(_FIELD_NAMES.get(name, name), row[name], str(exc)) from None


def _part_from_row(
    base: str,
    het: int | None,
    line: int,
    row: Mapping[str, str],
    tz: str,
    states: StateWords,
) -> _Part:
    submit = _read(row, "submit", lambda t: parse_slurm_time(t, tz))
    if submit is None:
        raise BadField("Submit", row["submit"], "a job row needs its submit time")
    start = _read(row, "start", lambda t: parse_slurm_time(t, tz)) if "start" in row else None
    end = _read(row, "end", lambda t: parse_slurm_time(t, tz)) if "end" in row else None
    elapsed: float | None = None
    if cell := _cell(row, "elapsedraw", "elapsed"):
        name = cell[0]
        elapsed = float(
            _read(row, name, parse_count if name == "elapsedraw" else parse_slurm_duration)
        )
    limit: float | None = None
    if cell := _cell(row, "timelimitraw", "timelimit"):
        name = cell[0]
        limit = _read(
            row, name, parse_time_limit_minutes if name == "timelimitraw" else parse_time_limit
        )
    req = _read(row, "reqtres", tres_resources) if "reqtres" in row else {}
    alloc = _read(row, "alloctres", tres_resources) if "alloctres" in row else {}

    def pick(key: str) -> float | None:
        for source in (req, alloc):
            if key in source:
                return float(source[key])
        return None

    gpus = pick("gpu")
    if gpus is None and (req or alloc):
        gpus = 0.0  # the TRES are known and hold no GPU
    cpus = pick("cpu")
    if cpus is None and (cell := _cell(row, "reqcpus", "ncpus", "alloccpus")):
        cpus = float(_read(row, cell[0], parse_count))
    nodes = pick("node")
    if nodes is None and (cell := _cell(row, "reqnodes", "nnodes")):
        nodes = float(_read(row, cell[0], parse_count))
    mem = pick("mem")
    if mem is None and (cell := _cell(row, "reqmem")):
        amount, per = _read(row, "reqmem", parse_req_mem)
        factor = {"job": 1.0, "node": nodes, "cpu": cpus}[per]
        mem = amount * factor if factor is not None else None
    extra = tuple(
        (key, row[name].strip())
        for key, name in (
            ("exit_code", "exitcode"),
            ("account", "account"),
            ("node_list", "nodelist"),
            ("eligible", "eligible"),
        )
        if row.get(name, "").strip()
    )
    return _Part(
        base=base,
        het=het,
        line=line,
        submit=submit,
        start=start,
        end=end,
        elapsed=elapsed,
        time_limit=limit,
        gpus=int(gpus) if gpus is not None else None,
        cpus=int(cpus) if cpus is not None else None,
        mem=mem,
        nodes=int(nodes) if nodes is not None else None,
        state=states(row["state"]) if "state" in row else JobState.UNKNOWN,
        user=row.get("user", "").strip() or None,
        name=row.get("jobname", "").strip() or None,
        partition=row.get("partition", "").strip() or None,
        extra=extra,
    )


# --- sacct --json -----------------------------------------------------------------------


def parse_sacct_json(text: str, opts: ReadOptions | None = None) -> Trace:
    """``sacct --json`` output (Slurm 22.05 ``openapi/dbv0.0.38`` or 24.11
    ``data_parser/v0.0.42``). ``line`` of a record = the 1-based index of its first entry
    in ``jobs``; errors name that entry and the field's path (``time.submission``)."""
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "sacct-json", unit="job entry")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise errors.whole_file(
            f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            "give the complete output of sacct --json",
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise errors.whole_file(
            "not sacct --json output (no 'jobs' list at the top level)",
            "give the output of sacct --json, or pick the format with --format",
        )
    states = StateWords()
    jobs = _Jobs(errors)
    errors.total = len(doc["jobs"])
    for index, entry in enumerate(doc["jobs"], start=1):
        try:
            if not isinstance(entry, dict):
                raise BadField("(entry)", entry, "a job entry must be an object")
            base, het = _json_ids(entry)
        except BadField as exc:
            errors.bad(index, exc)
            continue
        try:
            jobs.add(_json_part(base, het, index, entry, states))
        except BadField as exc:
            errors.bad(index, exc)
            jobs.add_bad(base, index)
    records = jobs.records("sacct-json")
    jobs.count_rows()  # nested steps are not entries: only components and duplicates fold
    steps = sum(len(e.get("steps") or []) for e in doc["jobs"] if isinstance(e, dict))
    notes_steps = [f"{steps} steps (nested in their jobs) folded into them"] if steps else []
    notes = [_json_layout(doc), *notes_steps, *jobs.notes(), *states.notes()]
    problems = [e for e in doc.get("errors") or [] if e]
    if problems:
        notes.append(f"sacct reported errors: {quote(json.dumps(problems))}")
    errors.skipped.sort(key=lambda s: s.line)
    return Trace(
        tuple(records),
        "sacct-json",
        opts.path,
        TimeBase.EPOCH,
        tuple(errors.skipped),
        tuple(n for n in notes if n),
        errors.counts(),
    )


def _safe_base(entry: Mapping[str, Any]) -> str | None:
    try:
        return _json_ids(entry)[0]
    except BadField:
        return None


def _json_layout(doc: Mapping[str, Any]) -> str:
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    assert isinstance(meta, dict)
    plugin = meta.get("plugin") if isinstance(meta.get("plugin"), dict) else {}
    assert isinstance(plugin, dict)
    layout = plugin.get("data_parser") or plugin.get("type") or "unknown layout"
    slurm = meta.get("slurm") or meta.get("Slurm") or {}
    release = slurm.get("release") if isinstance(slurm, dict) else None
    return f"sacct --json layout {layout}" + (f" (Slurm {release})" if release else "")


def _path(entry: Mapping[str, Any], path: str, required: bool = True) -> Any:
    node: Any = entry
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            if required:
                raise BadField(path, "(missing)", "the field is missing")
            return None
        node = node[key]
    return node


#: Slurm's NO_VAL and INFINITE (32 and 64 bits): 24.11 prints a never-started job's
#: ``time.start`` as 4294967294.
def _number(value: Any, path: str) -> float | None:
    """A JSON number of either layout, sentinels as ``None`` (``slurm/values.py``, the
    one decoder of the live readers too); anything else is a bad field of this row."""
    try:
        return slurm_number(value, path)
    except SlurmValueError as exc:
        raise BadField(path, value, exc.reason) from None


def _json_ids(entry: Mapping[str, Any]) -> tuple[str, int | None]:
    job_id = _number(_path(entry, "job_id"), "job_id")
    if job_id is None:
        raise BadField("job_id", entry.get("job_id"), "a job entry needs its job_id")
    het_leader = _number(_path(entry, "het.job_id", required=False), "het.job_id")
    het_offset = _number(_path(entry, "het.job_offset", required=False), "het.job_offset")
    if het_leader and het_offset is not None:
        return str(int(het_leader)), int(het_offset)
    array_job = _number(_path(entry, "array.job_id", required=False), "array.job_id")
    if array_job:
        task = _number(_path(entry, "array.task_id", required=False), "array.task_id")
        if task is not None:
            return f"{int(array_job)}_{int(task)}", None
        tasks = _path(entry, "array.task", required=False)
        if isinstance(tasks, str) and tasks:
            return f"{int(array_job)}_[{tasks}]", None
    return str(int(job_id)), None


def _json_tres(items: Any, path: str) -> dict[str, float]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise BadField(path, items, "expected a list of TRES")
    out: dict[str, float] = {}
    typed_gpus = 0.0
    for item in items:
        if not isinstance(item, dict):
            raise BadField(path, item, "expected a TRES object")
        kind, name = item.get("type"), item.get("name")
        count = _number(item.get("count"), f"{path}.count")
        if count is None:
            continue
        if kind in ("cpu", "mem", "node"):
            out[kind] = count
        elif kind == "gres" and name == "gpu":
            out["gpu"] = count
        elif kind == "gres" and isinstance(name, str) and name.startswith("gpu:"):
            typed_gpus += count
    if "gpu" not in out and typed_gpus:
        out["gpu"] = typed_gpus
    return out


def _json_part(
    base: str, het: int | None, index: int, entry: Mapping[str, Any], states: StateWords
) -> _Part:
    submit = _number(_path(entry, "time.submission"), "time.submission")
    if not submit:
        raise BadField("time.submission", _path(entry, "time.submission"), "no submit time")
    start = _number(_path(entry, "time.start", required=False), "time.start") or None
    end = _number(_path(entry, "time.end", required=False), "time.end") or None
    elapsed = _number(_path(entry, "time.elapsed", required=False), "time.elapsed")
    limit = _number(_path(entry, "time.limit", required=False), "time.limit")
    req = _json_tres(_path(entry, "tres.requested", required=False), "tres.requested")
    alloc = _json_tres(_path(entry, "tres.allocated", required=False), "tres.allocated")

    def pick(key: str) -> float | None:
        for source in (req, alloc):
            if key in source:
                return source[key]
        return None

    gpus = pick("gpu")
    if gpus is None and (req or alloc):
        gpus = 0.0
    cpus = pick("cpu")
    if cpus is None:
        cpus = _number(_path(entry, "required.CPUs", required=False), "required.CPUs")
    nodes = pick("node")
    if nodes is None:
        nodes = _number(_path(entry, "allocation_nodes", required=False), "allocation_nodes")
    state_value = _path(entry, "state.current", required=False)
    if isinstance(state_value, list):
        state_value = state_value[0] if state_value else ""
    if state_value is not None and not isinstance(state_value, str):
        raise BadField("state.current", state_value, "expected a state name")
    user = entry.get("user")
    if not isinstance(user, str) or not user:
        user = _path(entry, "association.user", required=False)
    exit_code = _number(_path(entry, "exit_code.return_code", required=False), "exit_code")
    extra = tuple(
        (key, str(value))
        for key, value in (
            ("exit_code", int(exit_code) if exit_code is not None else None),
            ("account", entry.get("account")),
            ("node_list", entry.get("nodes")),
        )
        if value not in (None, "")
    )
    return _Part(
        base=base,
        het=het,
        line=index,
        submit=submit,
        start=start,
        end=end,
        elapsed=elapsed,
        time_limit=limit * 60.0 if limit is not None else None,
        gpus=int(gpus) if gpus is not None else None,
        cpus=int(cpus) if cpus is not None else None,
        mem=pick("mem"),
        nodes=int(nodes) if nodes is not None else None,
        state=states(state_value or ""),
        user=user if isinstance(user, str) and user else None,
        name=entry.get("name") or None,
        partition=entry.get("partition") or None,
        extra=extra,
    )
