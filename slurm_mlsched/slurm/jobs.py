"""What Slurm did with submitted jobs: their state, times, nodes and comment.

``mlsub reconcile`` brings stored decisions up to date from this. Two sources:

* ``squeue --all --json`` (every job the controller still knows: pending, running, and
  finished ones for ``MinJobAge`` seconds);
* ``sacct --json -a -X`` (accounting, when slurmdbd is configured: everything since a time).

Both give one entry per heterogeneous-job component; :func:`fold_components` folds them
into one :class:`JobStatus` per job (the id ``sbatch --parsable`` printed, which is the
leader's). The parsers are pure and read the 22.05 and 24.11 layouts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import SlurmError
from .hostlist import expand_hostlist
from .parse import SqueueRow, _bad, _epoch, _load_json, _number, parse_squeue_rows
from .pyslurm_calls import pyslurm_errors, pyslurm_members
from .runner import SlurmCommands

#: Slurm job states by what they mean for a decision.
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD"})
ACTIVE_STATES = frozenset(
    {
        "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "RESIZING",
        "SIGNALING", "STAGE_OUT",
    }
)  # fmt: skip
COMPLETED_STATES = frozenset({"COMPLETED"})
CANCELLED_STATES = frozenset({"CANCELLED"})
#: Everything else that is over (FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL,
#: DEADLINE, PREEMPTED, REVOKED, SPECIAL_EXIT) counts as failed.


@dataclass(frozen=True)
class ComponentStatus:
    """One row of squeue/sacct: a job or one component of a heterogeneous job."""

    job_id: str  # the job (leader) id: what sbatch printed
    offset: int  # component index (0 for a plain job)
    state: str  # upper case, first word: CANCELLED, not "CANCELLED by 0"
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    nodes: tuple[str, ...]
    comment: str
    admin_comment: str = ""
    exit_code: str = ""
    user: str = ""  # the job's owner; empty when the source does not say
    reason: str = ""  # squeue's state reason (``JobHeldUser``); empty from sacct


#: The state reasons of a held job (``sbatch --hold``, ``scontrol hold``).
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
#: Slurm's descriptions that pyslurm gives instead of the reason when the controller set
#: one (pyslurm's ``state_reason`` is ``state_desc`` when there is one; ``squeue --json``
#: gives the reason itself): ``scontrol requeuehold`` sets ``JobHeldUser`` with this text
#: (slurmctld's job requeue), whoever asks for it.
REASON_OF_DESCRIPTION = {"job requeued in held state": "JobHeldUser"}


@dataclass(frozen=True)
class JobStatus:
    """A whole job, its components folded (see :func:`fold_components`)."""

    job_id: str
    state: str
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    nodes: tuple[str, ...]
    comment: str
    admin_comment: str
    exit_code: str
    source: str  # "squeue" or "sacct"
    user: str = ""  # the job's owner (Slurm user name); empty when the source does not say
    held: bool = False  # pending and held (every component waits with a hold reason)
    reason: str = ""  # the first component's state reason (squeue; ``JobHeldAdmin``)

    @property
    def phase(self) -> str:
        """``pending``, ``running``, ``completed``, ``cancelled`` or ``failed``."""
        return phase_of(self.state)


def phase_of(state: str) -> str:
    if state in PENDING_STATES:
        return "pending"
    if state in ACTIVE_STATES:
        return "running"
    if state in COMPLETED_STATES:
        return "completed"
    if state in CANCELLED_STATES:
        return "cancelled"
    return "failed"


_PHASE_ORDER = ("running", "pending", "failed", "cancelled", "completed")


def fold_components(rows: Iterable[ComponentStatus], source: str) -> dict[str, JobStatus]:
    """One status per job: running if any component runs, else pending if any waits, else
    failed if any failed, else cancelled if any was cancelled, else completed. Times span
    the components (first start, last end); nodes are the union, in component order."""
    groups: dict[str, list[ComponentStatus]] = defaultdict(list)
    for row in rows:
        groups[row.job_id].append(row)
    out: dict[str, JobStatus] = {}
    for job_id, parts in groups.items():
        parts.sort(key=lambda p: p.offset)
        phases = [phase_of(p.state) for p in parts]
        chosen = min(range(len(parts)), key=lambda i: _PHASE_ORDER.index(phases[i]))
        lead = parts[0]
        starts = [p.start for p in parts if p.start is not None]
        ends = [p.end for p in parts if p.end is not None]
        finished = phases[chosen] not in ("running", "pending")
        out[job_id] = JobStatus(
            job_id=job_id,
            state=parts[chosen].state,
            submit=lead.submit,
            start=min(starts) if starts else None,
            end=max(ends) if ends and finished else None,
            nodes=tuple(dict.fromkeys(n for p in parts for n in p.nodes)),
            comment=lead.comment or next((p.comment for p in parts if p.comment), ""),
            admin_comment=next((p.admin_comment for p in parts if p.admin_comment), ""),
            exit_code=parts[chosen].exit_code,
            source=source,
            user=lead.user,
            held=all(phase_of(p.state) == "pending" and p.reason in HELD_REASONS for p in parts),
            reason=lead.reason,
        )
    return out


# --- parsers ------------------------------------------------------------------------------------


def _state(value: object) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value or "").split()[0].upper() if str(value or "").strip() else "UNKNOWN"


def _int(value: object) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _ids(job_id: object, het_id: object, het_offset: object) -> tuple[str, int]:
    het = _int(het_id)
    if het:
        return str(het), _int(het_offset) or 0
    return str(_int(job_id)), 0


def parse_squeue_status_json(text: str) -> tuple[ComponentStatus, ...]:
    """``squeue --all --json`` -> one row per job or component: the job state's projection
    of the one squeue reader (``parse.parse_squeue_rows``)."""
    return tuple(status_row(row) for row in parse_squeue_rows(text))


def status_row(row: SqueueRow) -> ComponentStatus:
    """An squeue entry as a status row: the leader's id and the component's offset."""
    return ComponentStatus(
        job_id=str(row.het_id or row.job_id),
        offset=row.het_offset if row.het_id else 0,
        state=_state(row.state),
        submit=row.submit,
        start=row.start,
        end=row.end,
        nodes=row.nodes,
        comment=row.comment,
        admin_comment=row.admin_comment,
        exit_code=_exit_code(row.exit_code),
        user=row.user,
        reason=row.reason,
    )


def parse_sacct_status_json(text: str) -> tuple[ComponentStatus, ...]:
    """``sacct --json`` -> one row per job or component (steps are not listed there)."""
    command = "sacct --json"
    data = _load_json(text, command)
    try:
        return tuple(_sacct_row(job) for job in data.get("jobs") or ())
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(command, f"unexpected layout ({type(exc).__name__}: {exc})") from None


def _sacct_row(job: Mapping[str, Any]) -> ComponentStatus:
    het = job.get("het") or {}
    job_id, offset = _ids(job["job_id"], het.get("job_id"), het.get("job_offset"))
    times = job.get("time") or {}
    comments = job.get("comment") or {}
    state = (job.get("state") or {}).get("current")
    return ComponentStatus(
        job_id=job_id,
        offset=offset,
        state=_state(state),
        submit=_epoch(times.get("submission")),
        start=_epoch(times.get("start")),
        end=_epoch(times.get("end")),
        nodes=expand_hostlist(str(job.get("nodes") or "").replace("None assigned", "")),
        comment=str(comments.get("job") or ""),
        admin_comment=str(comments.get("administrator") or ""),
        exit_code=_exit_code(job.get("exit_code")),
        user=str(job.get("user") or ""),
    )


def _exit_code(value: object) -> str:
    """``{"status": …, "return_code": n}`` (sacct, squeue of 24.11) -> ``"n"``; a bare
    number (squeue ``--json`` of 22.05) is Slurm's raw wait status, decoded by
    :func:`return_code`. Empty when unknown."""
    if not isinstance(value, Mapping):
        number = _int(value)
        return "" if number is None else str(return_code(number))
    code = _int(value.get("return_code"))
    return "" if code is None else str(code)


def return_code(wait_status: int) -> int:
    """The return code in a raw wait(2) status, as Slurm decodes it (``sacct``'s
    ``ExitCode`` before the colon; pyslurm's ``Job.exit_code``): ``WEXITSTATUS`` for a
    normal exit, less 128 when it is 128 or more (a shell reporting a signal), and 0 when
    a signal ended the job (the signal is not a return code)."""
    if wait_status & 0x7F:  # signalled (or stopped, or a NO_VAL sentinel)
        return 0
    code = (wait_status >> 8) & 0xFF
    return code - 128 if code >= 128 else code


# --- the reader -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusReport:
    """What the reader found, and what it could not ask."""

    jobs: Mapping[str, JobStatus]
    notes: tuple[str, ...] = ()


def pyslurm_status_rows(module: Any) -> tuple[ComponentStatus, ...]:
    """The controller's queue through pyslurm's ``Jobs.load()``: the same rows as
    :func:`parse_squeue_status_json` (the same C fields; tests/integration/
    test_pyslurm_parity.py checks they agree on the real cluster)."""
    with pyslurm_errors("pyslurm Jobs.load"):
        return tuple(_pyslurm_row(job) for job in pyslurm_members(module.Jobs.load()))


def _pyslurm_row(job: Any) -> ComponentStatus:
    job_id, offset = _ids(job.id, job.heterogeneous_id, job.heterogeneous_offset)
    return ComponentStatus(
        job_id=job_id,
        offset=offset,
        state=_state(job.state),
        submit=_epoch(job.submit_time),
        start=_epoch(job.start_time),
        end=_epoch(job.end_time),
        nodes=expand_hostlist(str(job.allocated_nodes or "")),
        comment=str(job.comment or ""),
        admin_comment=str(job.admin_comment or ""),
        exit_code="" if job.exit_code is None else str(int(job.exit_code)),  # decoded already
        user=str(job.user_name or ""),
        reason=_reason(str(getattr(job, "state_reason", "") or "")),
    )


def _reason(text: str) -> str:
    """The state reason as ``squeue --json`` names it (:data:`REASON_OF_DESCRIPTION`)."""
    return REASON_OF_DESCRIPTION.get(text, text)


class JobStatusReader:
    """Reads job statuses through the one Slurm funnel; the queue through pyslurm when
    ``pyslurm`` (the imported module, chosen by ``nodes.select_source``) is given."""

    def __init__(self, slurm: SlurmCommands, pyslurm: Any = None) -> None:
        self.slurm = slurm
        self.pyslurm = pyslurm

    def queue(self) -> dict[str, JobStatus]:
        """Every job the controller still lists."""
        if self.pyslurm is not None:
            self.slurm.ensure_reachable()  # the same bounded check as the commands get
            return fold_components(pyslurm_status_rows(self.pyslurm), "squeue")
        rows = parse_squeue_status_json(self.slurm.run(["squeue", "--all", "--json"]))
        return fold_components(rows, "squeue")

    def accounting(self, *, since: datetime, job_ids: Sequence[str] = ()) -> StatusReport:
        """Jobs in accounting submitted since ``since`` (all users), or exactly ``job_ids``.

        Without slurmdbd ``sacct`` fails; that is a note, not an error: reconcile then
        works from the queue alone."""
        argv = ["sacct", "--json", "-a", "-X"]
        if job_ids:
            argv += ["-j", ",".join(job_ids)]
        else:
            argv += ["-S", since.astimezone().strftime("%Y-%m-%dT%H:%M:%S")]
        try:
            text = self.slurm.run(argv)
        except SlurmError as err:
            return StatusReport({}, (f"accounting not read: {err.message.splitlines()[0]}",))
        return StatusReport(fold_components(parse_sacct_status_json(text), "sacct"))
