"""Parsers of Slurm command output: text in, frozen records out (pure, no I/O, no clock).

Tested on real output captured from Slurm 22.05 (Debian 12) and 24.11 (Debian 13) by
``scripts/slurm-lab/capture-fixtures.sh`` (``tests/fixtures/slurm/<version>/``).

=====================================  ==========================================
command                                parser
=====================================  ==========================================
``sinfo --version``, ``scontrol -V``   :func:`parse_version`
``scontrol ping``                      :func:`parse_ping`
``sinfo -h -N -o '%N|%T|%c|%m|%G'``    :func:`parse_sinfo_text` (:data:`SINFO_TEXT_FORMAT`)
``sinfo [-N] --json``                  :func:`parse_sinfo_json` (22.05: one entry per node,
                                       24.11: entries group nodes)
``scontrol -o show nodes``             :func:`parse_scontrol_nodes`
``squeue --json``                      :func:`parse_squeue_json` (22.05 and 24.11 layouts)
``squeue -h -o …``                     :func:`parse_squeue_text` (:data:`SQUEUE_TEXT_FORMAT`)
``sbatch --parsable``                  :func:`parse_sbatch_parsable`
=====================================  ==========================================

Node states are split into a base state (``IDLE``, ``MIXED``, ``ALLOCATED``, ``DOWN`` …)
and flags (``DRAIN``, ``NOT_RESPONDING`` …), the way ``scontrol`` prints them
(``MIXED+DRAIN``); :meth:`NodeRecord.unusable_reason` says why a node cannot take work.
Memory is in MiB everywhere; times are aware UTC datetimes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import SlurmOutputError
from ..model.units import parse_mem_mib
from .hostlist import expand_hostlist
from .values import slurm_number

SINFO_TEXT_FORMAT = "%N|%T|%c|%m|%G"
#: job id, state, node list, node count, CPUs, memory per node, TRES per node, time left, name
#: (the name is last: it may contain '|').
SQUEUE_TEXT_FORMAT = "%i|%T|%N|%D|%C|%m|%b|%L|%j"

#: Base node states in which a node can take new work (flags may still exclude it).
USABLE_STATES = frozenset({"IDLE", "MIXED", "ALLOCATED"})
#: Node flags that keep new work off a node.
UNUSABLE_FLAGS = frozenset({"DRAIN", "NOT_RESPONDING", "FAIL", "INVALID_REG"})
_BASE_STATES = frozenset({"IDLE", "MIXED", "ALLOCATED", "DOWN", "FUTURE", "UNKNOWN", "ERROR"})
#: Job states in which a job holds its allocation.
HOLDING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED"})


def _bad(command: str, problem: str) -> SlurmOutputError:
    return SlurmOutputError(
        f"cannot read the output of `{command}`: {problem}",
        hint="this Slurm version may print something mlsub does not know yet; please report "
        "it with the command's output",
        context={"command": command},
    )


# --- version and ping ------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class SlurmVersion:
    major: int
    minor: int
    micro: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.micro}"

    @property
    def release(self) -> str:
        """``22.05``: the major release, which decides formats and pyslurm compatibility."""
        return f"{self.major}.{self.minor:02d}"

    def has_json(self) -> bool:
        """``sinfo --json`` and ``squeue --json`` exist from Slurm 21.08 on."""
        return (self.major, self.minor) >= (21, 8)


_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> SlurmVersion:
    """``slurm-wlm 22.05.8`` / ``slurm 24.11.5`` -> :class:`SlurmVersion`."""
    match = _VERSION_RE.search(text)
    if not match:
        raise _bad("sinfo --version", f"no version number in {text.strip()!r}")
    major, minor, micro = match.groups()
    return SlurmVersion(int(major), int(minor), int(micro or 0))


@dataclass(frozen=True)
class ControllerStatus:
    role: str  # primary, backup, backup1 …
    host: str
    up: bool
    line: str


_PING_RE = re.compile(r"^Slurmctld\((?P<role>[^)]*)\) at (?P<host>\S+) is (?P<status>UP|DOWN)")


def parse_ping(text: str) -> tuple[ControllerStatus, ...]:
    """The ``Slurmctld(primary) at HOST is UP|DOWN`` lines of ``scontrol ping``."""
    out = []
    for line in text.splitlines():
        match = _PING_RE.match(line.strip())
        if match:
            out.append(
                ControllerStatus(
                    match["role"], match["host"], match["status"] == "UP", line.strip()
                )
            )
    return tuple(out)


def controller_is_up(statuses: Iterable[ControllerStatus]) -> bool:
    return any(s.up for s in statuses)


# --- sbatch ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmittedJob:
    job_id: int
    cluster: str = ""


def parse_sbatch_parsable(text: str) -> SubmittedJob:
    """``sbatch --parsable`` prints ``JOBID`` or ``JOBID;CLUSTER`` (last line of stdout)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    match = re.fullmatch(r"(\d+)(?:;(\S+))?", lines[-1]) if lines else None
    if not match:
        raise _bad("sbatch --parsable", f"expected a job id, got {text.strip()!r}")
    return SubmittedJob(int(match[1]), match[2] or "")


# --- GRES, TRES, times -----------------------------------------------------------------


def _split_outside_parens(text: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return [i.strip() for i in items if i.strip()]


def gres_count(text: str | None, name: str = "gpu") -> int:
    """How many of GRES ``name`` a GRES string holds.

    Handles ``gpu:4``, ``gpu:a100:2``, ``gpu:4(S:0-1)``, ``gpu:2(IDX:0-1)``,
    ``gpu:0(IDX:N/A)``, ``gres:gpu:2`` (22.05 TRES per node), ``gres/gpu:2`` (24.11),
    several entries (``gpu:a100:2,gpu:v100:1,mps:100``) and ``(null)`` / ``N/A``.
    """
    if not text or text.strip() in ("(null)", "N/A", "None"):
        return 0
    total = 0
    for item in _split_outside_parens(text.strip()):
        item = re.sub(r"\(.*\)$", "", item).strip()
        for prefix in ("gres:", "gres/"):
            item = item.removeprefix(prefix)
        parts = item.split(":")
        if parts[0] != name:
            continue
        last = parts[-1]
        if len(parts) == 1:
            total += 1
        elif last.isdigit():
            total += int(last)
        elif len(parts) == 2:  # gpu:TYPE without a count means one
            total += 1
        else:
            raise ValueError(f"bad GRES count in {item!r}")
    return total


def parse_tres(text: str | None) -> dict[str, str]:
    """``cpu=8,mem=64G,billing=8,gres/gpu=4`` -> ``{"cpu": "8", "mem": "64G", …}``."""
    if not text or text.strip() in ("(null)", "N/A"):
        return {}
    out: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.strip().partition("=")
        if sep:
            out[key] = value
    return out


def tres_gpus(tres: Mapping[str, str]) -> int:
    """GPUs in a TRES map: ``gres/gpu``, else the sum of the typed ``gres/gpu:TYPE``."""
    if "gres/gpu" in tres:
        return int(tres["gres/gpu"])
    return sum(int(v) for k, v in tres.items() if k.startswith("gres/gpu:"))


_DURATION_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")


def parse_duration(text: str) -> timedelta | None:
    """Slurm's ``[D-][HH:]MM:SS`` (as in ``squeue %L``); None for UNLIMITED and the like."""
    text = text.strip()
    if text.upper() in ("UNLIMITED", "NOT_SET", "INVALID", "N/A", "INFINITE", ""):
        return None
    match = _DURATION_RE.match(text)
    if not match:
        raise ValueError(f"not a Slurm duration: {text!r}")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


#: A JSON number of either layout, sentinels as ``None``: the one decoder (:mod:`.values`).
_number = slurm_number


def _epoch(value: object) -> datetime | None:
    seconds = _number(value)
    if seconds is None or seconds <= 0:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC)


# --- nodes -----------------------------------------------------------------------------


def gres_type(text: str | None, name: str = "gpu") -> str | None:
    """The type of GRES ``name`` in a GRES string: ``gpu:v100:4(S:0-1)`` -> ``"v100"``.

    None when the GRES is untyped (``gpu:4``), absent, or of several types on one node
    (``gpu:a100:2,gpu:v100:1``): the model gives a node one GPU type, and a node of mixed
    types takes no job that names types (docs/formulation.md, "GPU types"). Also reads the
    TRES forms ``gres/gpu:v100=4`` (``CfgTRES``).
    """
    if not text or text.strip() in ("(null)", "N/A", "None"):
        return None
    found: set[str] = set()
    for item in _split_outside_parens(text.strip()):
        item = re.sub(r"\(.*\)$", "", item).strip()
        for prefix in ("gres:", "gres/"):
            item = item.removeprefix(prefix)
        parts = item.split("=")[0].split(":")
        if parts[0] != name or len(parts) < 2:
            continue
        kind = parts[1]
        if len(parts) == 2 and kind.isdigit():
            continue  # gpu:4: untyped
        found.add(kind)
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class NodeRecord:
    """One node as Slurm reports it. ``alloc_*`` are None when the command does not say."""

    name: str
    state: str  # base state, upper case: IDLE, MIXED, ALLOCATED, DOWN, FUTURE …
    flags: frozenset[str]  # upper case: DRAIN, NOT_RESPONDING, PLANNED …
    cpus: int
    memory_mib: float
    gpus: int
    address: str = ""
    reason: str = ""
    alloc_cpus: int | None = None
    alloc_memory_mib: float | None = None
    alloc_gpus: int | None = None
    partitions: tuple[str, ...] = ()
    """Sorted, without repeats: the sources list them in different orders (sinfo by its
    rows, pyslurm by slurm.conf), and the order means nothing."""
    gpu_type: str | None = None
    """The node's GPU type from its ``Gres`` (``gpu:v100:4`` -> ``v100``; :func:`gres_type`)."""

    features: tuple[str, ...] = ()
    """The node's active features (``--constraint`` reads them), sorted, without repeats."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(sorted(set(self.partitions))))
        object.__setattr__(self, "features", tuple(sorted(set(self.features))))

    @property
    def state_text(self) -> str:
        """``MIXED+DRAIN``: as scontrol prints it."""
        return "+".join([self.state, *sorted(self.flags)])

    def unusable_reason(self) -> str | None:
        """Why this node cannot take new work (down, drained, not responding …), or None."""
        why: list[str] = []
        if self.state not in USABLE_STATES:
            why.append(self.state.lower())
        for flag in sorted(self.flags & UNUSABLE_FLAGS):
            why.append(
                {
                    "DRAIN": "draining" if self.state in ("MIXED", "ALLOCATED") else "drained",
                    "NOT_RESPONDING": "not responding",
                    "FAIL": "failing",
                    "INVALID_REG": "invalid registration",
                }[flag]
            )
        if not why:
            return None
        text = ", ".join(why)
        return f"{text} ({self.reason})" if self.reason else text


_SUFFIX_FLAGS = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "!": "POWER_DOWN",
    "%": "POWERING_DOWN",
    "$": "MAINT",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "-": "PLANNED",
}
#: sinfo's long state names that are a base state plus a flag.
_LONG_STATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "drained": ("IDLE", ("DRAIN",)),
    "draining": ("MIXED", ("DRAIN",)),
    "drng": ("MIXED", ("DRAIN",)),
    "drain": ("IDLE", ("DRAIN",)),
    "fail": ("IDLE", ("FAIL",)),
    "failing": ("ALLOCATED", ("FAIL",)),
    "mix": ("MIXED", ()),
    "alloc": ("ALLOCATED", ()),
    "completing": ("MIXED", ("COMPLETING",)),
    "comp": ("MIXED", ("COMPLETING",)),
    "maint": ("IDLE", ("MAINT",)),
    "reserved": ("IDLE", ("RESERVED",)),
    "resv": ("IDLE", ("RESERVED",)),
    "planned": ("IDLE", ("PLANNED",)),
    "powered_down": ("IDLE", ("POWERED_DOWN",)),
    "powering_up": ("IDLE", ("POWERING_UP",)),
    "powering_down": ("IDLE", ("POWERING_DOWN",)),
    "power_down": ("IDLE", ("POWER_DOWN",)),
    "reboot_issued": ("IDLE", ("REBOOT_ISSUED",)),
    "reboot_requested": ("IDLE", ("REBOOT_REQUESTED",)),
    "inval": ("UNKNOWN", ("INVALID_REG",)),
}


def split_state(text: str) -> tuple[str, frozenset[str]]:
    """A node state as sinfo (``drained``, ``idle*``, ``mixed-``) or scontrol
    (``MIXED+DRAIN``, ``DOWN*+NOT_RESPONDING``) prints it -> (base, flags)."""
    parts = [p for p in text.strip().split("+") if p]
    if not parts:
        return "UNKNOWN", frozenset()
    first = parts[0]
    flags = {p.upper() for p in parts[1:]}
    while first and first[-1] in _SUFFIX_FLAGS:
        flags.add(_SUFFIX_FLAGS[first[-1]])
        first = first[:-1]
    base, extra = _LONG_STATES.get(first.lower(), (first.upper(), ()))
    return base, frozenset(flags | set(extra))


def parse_sinfo_text(text: str) -> tuple[NodeRecord, ...]:
    """``sinfo -h -N -o '%N|%T|%c|%m|%G'``: one line per node and partition (deduplicated)."""
    command = f"sinfo -h -N -o '{SINFO_TEXT_FORMAT}'"
    out: dict[str, NodeRecord] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.strip().split("|")
        if len(fields) != 5:
            raise _bad(command, f"line {number} has {len(fields)} fields, expected 5: {line!r}")
        name, state_text, cpus, memory, gres = fields
        try:
            state, flags = split_state(state_text)
            record = NodeRecord(
                name=name,
                state=state,
                flags=flags,
                cpus=int(cpus.rstrip("+")),
                memory_mib=parse_mem_mib(memory.rstrip("+")),
                gpus=gres_count(gres),
                gpu_type=gres_type(gres),
            )
        except ValueError as exc:
            raise _bad(command, f"line {number} ({line!r}): {exc}") from None
        out.setdefault(name, record)
    return tuple(out.values())


def _load_json(text: str, command: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(command, f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise _bad(command, "the JSON is not an object")
    errors = [e for e in data.get("errors") or [] if not _nothing_found(e)]
    if errors:
        raise _bad(command, f"Slurm reported errors: {errors}")
    return data


#: Slurm's "Nothing found with query" (slurmdbd on an empty or filtered accounting
#: database, e.g. ``sacct --json`` on a fresh cluster): an empty answer, not a failure.
NOTHING_FOUND = 9003


def _nothing_found(error: object) -> bool:
    return isinstance(error, dict) and error.get("error_number") == NOTHING_FOUND


def parse_sinfo_json(text: str) -> tuple[NodeRecord, ...]:
    """``sinfo --json`` or ``sinfo -N --json``, both layouts.

    * 22.05 (openapi v0.0.38): ``nodes``, one entry per node.
    * 24.11 (data_parser v0.0.42): ``sinfo``, entries that each cover a group of nodes in
      one partition and state (``nodes.nodes``); per-node figures are the group's
      ``minimum`` (equal to its ``maximum`` when Slurm groups identical nodes; ``-N`` gives
      one entry per node). Allocated figures are kept only for one-node entries.
    """
    command = "sinfo --json"
    data = _load_json(text, command)
    try:
        if "nodes" in data and "sinfo" not in data:
            records = [_node_v0038(n) for n in data["nodes"]]
        elif "sinfo" in data:
            records = [r for entry in data["sinfo"] for r in _nodes_v0042(entry)]
        else:
            raise _bad(command, f"neither 'nodes' nor 'sinfo' at the top (keys: {sorted(data)})")
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(command, f"unexpected layout ({type(exc).__name__}: {exc})") from None
    out: dict[str, NodeRecord] = {}
    for record in records:  # sinfo -N lists a node once per partition: merge them
        seen = out.setdefault(record.name, record)
        if seen is not record:
            merged = tuple(dict.fromkeys(seen.partitions + record.partitions))
            out[record.name] = replace(seen, partitions=merged)
    return tuple(out.values())


def _node_v0038(node: Mapping[str, Any]) -> NodeRecord:
    base, flags = split_state(str(node["state"]))
    flags = flags | {str(f).upper() for f in node.get("state_flags") or ()}
    return NodeRecord(
        name=str(node["name"]),
        state=base,
        flags=frozenset(flags),
        cpus=int(node["cpus"]),
        memory_mib=float(node["real_memory"]),
        gpus=gres_count(node.get("gres")),
        address=str(node.get("address") or ""),
        reason=str(node.get("reason") or ""),
        alloc_cpus=int(node.get("alloc_cpus") or 0),
        alloc_memory_mib=float(node.get("alloc_memory") or 0),
        alloc_gpus=gres_count(node.get("gres_used")),
        partitions=tuple(str(p) for p in node.get("partitions") or ()),
        features=feature_list(node.get("active_features")),
        gpu_type=gres_type(node.get("gres")),
    )


def _nodes_v0042(entry: Mapping[str, Any]) -> list[NodeRecord]:
    states = [str(s).upper() for s in entry["node"]["state"]]
    base = next((s for s in states if s in _BASE_STATES), states[0] if states else "UNKNOWN")
    flags = frozenset(s for s in states if s != base)
    names = [str(n) for n in entry["nodes"]["nodes"]]
    addresses = [str(a) for a in entry["nodes"].get("addresses") or ()]
    single = len(names) == 1
    cpus, memory = entry["cpus"], entry["memory"]
    reason = entry.get("reason") or ""
    partition = (entry.get("partition") or {}).get("name")
    return [
        NodeRecord(
            name=name,
            state=base,
            flags=flags,
            cpus=int(cpus["minimum"]),
            memory_mib=float(memory["minimum"]),
            gpus=gres_count(entry["gres"]["total"]),
            address=addresses[i] if len(addresses) == len(names) else "",
            reason=str(reason.get("description") or "")
            if isinstance(reason, Mapping)
            else str(reason),
            alloc_cpus=int(cpus["allocated"]) if single else None,
            alloc_memory_mib=float(memory["allocated"]) if single else None,
            alloc_gpus=gres_count(entry["gres"].get("used")) if single else None,
            partitions=(str(partition),) if partition else (),
            features=feature_list(entry.get("features")),
            gpu_type=gres_type(entry["gres"]["total"]),
        )
        for i, name in enumerate(names)
    ]


_KEY_RE = re.compile(r"(?:^|(?<=\s))([A-Za-z][\w:/.]*)=")


def parse_key_values(line: str) -> dict[str, str]:
    """One ``scontrol -o`` line: ``Key=Value Key=Value with spaces …`` -> dict.

    A value runs to the next `` Key=``; values may contain spaces (``OS=Linux 6.1 #1 SMP``,
    ``Reason=maintenance [root@2026-01-01T10:00:00]``).
    """
    matches = list(_KEY_RE.finditer(line))
    out: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        out.setdefault(match[1], line[match.end() : end].strip())
    return out


def parse_scontrol_nodes(text: str) -> tuple[NodeRecord, ...]:
    """``scontrol -o show nodes``: one ``Key=Value`` line per node.

    Capacity: ``CPUTot``, ``RealMemory``, GPUs from ``CfgTRES`` (``gres/gpu``) or ``Gres``.
    Allocated: ``CPUAlloc``, ``AllocMem``, GPUs from ``AllocTRES`` (only when the cluster
    accounts ``gres/gpu`` as a TRES; else None).
    """
    command = "scontrol -o show nodes"
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        kv = parse_key_values(line.strip())
        try:
            cfg, alloc = parse_tres(kv.get("CfgTRES")), parse_tres(kv.get("AllocTRES"))
            base, flags = split_state(kv["State"])
            out.append(
                NodeRecord(
                    name=kv["NodeName"],
                    state=base,
                    flags=flags,
                    cpus=int(kv["CPUTot"]),
                    memory_mib=float(kv["RealMemory"]),
                    gpus=tres_gpus(cfg) if "gres/gpu" in cfg else gres_count(kv.get("Gres")),
                    address=kv.get("NodeAddr", ""),
                    reason=_strip_reason_stamp(kv.get("Reason", "")),
                    alloc_cpus=int(kv["CPUAlloc"]) if "CPUAlloc" in kv else None,
                    alloc_memory_mib=float(kv["AllocMem"]) if "AllocMem" in kv else None,
                    alloc_gpus=tres_gpus(alloc) if "gres/gpu" in cfg else None,
                    partitions=tuple(p for p in kv.get("Partitions", "").split(",") if p),
                    features=feature_list(kv.get("ActiveFeatures")),
                    gpu_type=gres_type(kv.get("Gres")),
                )
            )
        except (KeyError, ValueError) as exc:
            raise _bad(command, f"line {number}: {type(exc).__name__}: {exc}") from None
    return tuple(out)


def feature_list(value: object) -> tuple[str, ...]:
    """Node features as Slurm gives them: ``a,b`` (``(null)`` or empty: none), a list, or
    24.11's ``{"active": [...], "total": [...]}``."""
    if isinstance(value, Mapping):
        value = value.get("active")
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if str(v))
    text = str(value or "").strip()
    if text in ("", "(null)"):
        return ()
    return tuple(f for f in text.split(",") if f)


def _strip_reason_stamp(reason: str) -> str:
    """``fixture: drained [root@2026-11-29T16:54:09]`` -> ``fixture: drained``."""
    return re.sub(r"\s*\[[^\[\]]*@[^\[\]]*\]$", "", reason.strip())


# --- jobs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeAllocation:
    """What one job holds on one node."""

    node: str
    cpus: int
    memory_mib: float
    gpus: int


@dataclass(frozen=True)
class JobRecord:
    """A job (or one component of a heterogeneous job, id ``12+1``) and its allocation.

    ``end_time`` is Slurm's expected end (start + time limit); None when unknown or the
    job has no time limit. ``exact`` is False when per-node figures were estimated
    (``squeue -o`` only gives a multi-node job's totals).
    """

    job_id: str
    name: str
    state: str
    allocations: tuple[NodeAllocation, ...] = ()
    end_time: datetime | None = None
    comment: str = ""
    exact: bool = True
    nodes: tuple[str, ...] = field(default=())
    user: str = ""
    """The job's owner (Slurm's user name); empty when the source does not say."""

    @property
    def holds_resources(self) -> bool:
        return self.state in HOLDING_STATES and bool(self.allocations)


@dataclass(frozen=True)
class SqueueRow:
    """One entry of ``squeue --json`` (a job or one hetjob component), read once: the node
    state projects it to a :class:`JobRecord` (:meth:`job_record`), the job state to a
    status row (``jobs.status_row``)."""

    job_id: int
    het_id: int | None  # the leader's id for a hetjob component, else None
    het_offset: int
    name: str
    state: str  # as Slurm wrote it, first word of a list (``RUNNING``, ``CANCELLED``)
    allocations: tuple[NodeAllocation, ...]
    unlimited: bool  # no time limit
    submit: datetime | None
    start: datetime | None
    end: datetime | None
    nodes: tuple[str, ...]
    comment: str
    admin_comment: str
    exit_code: object  # raw: a wait status (22.05) or {status, return_code} (24.11)
    user: str
    reason: str = ""  # why it is pending (``state_reason``: ``JobHeldUser``, ``Resources``)

    def job_record(self) -> JobRecord:
        """The node state's view: ``12+1`` ids, the expected end unless unlimited."""
        job_id = f"{self.het_id}+{self.het_offset}" if self.het_id else str(self.job_id)
        return JobRecord(
            job_id=job_id,
            name=self.name,
            state=self.state.upper(),
            allocations=self.allocations,
            end_time=None if self.unlimited else self.end,
            comment=self.comment,
            nodes=self.nodes,
            user=self.user,
        )


def parse_squeue_rows(text: str, command: str = "squeue --all --json") -> tuple[SqueueRow, ...]:
    """``squeue --json``, 22.05 (plain numbers, ``allocated_nodes``) and 24.11
    (``{"set", "number"}`` numbers, ``job_resources.nodes.allocation``) layouts: every
    entry, finished ones too (22.05 keeps them for ``MinJobAge``)."""
    data = _load_json(text, command)
    try:
        return tuple(_squeue_row(job) for job in data["jobs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(command, f"unexpected layout ({type(exc).__name__}: {exc})") from None


def parse_squeue_json(text: str) -> tuple[JobRecord, ...]:
    """The node state's projection of :func:`parse_squeue_rows`; use
    :attr:`JobRecord.holds_resources` to keep the running ones."""
    return tuple(row.job_record() for row in parse_squeue_rows(text, "squeue --json"))


def _squeue_row(job: Mapping[str, Any]) -> SqueueRow:
    state = job["job_state"]
    state = str(state[0] if isinstance(state, list) else state)
    job_id = _number(job["job_id"])
    if job_id is None:
        raise ValueError(f"a job without its job_id: {str(job)[:100]}")
    het_id = _number(job.get("het_job_id"))
    return SqueueRow(
        job_id=int(job_id),
        het_id=int(het_id) if het_id else None,
        het_offset=int(_number(job.get("het_job_offset")) or 0),
        name=str(job.get("name") or ""),
        state=state,
        allocations=_allocations_json(job),
        unlimited=_number(job.get("time_limit")) is None,
        submit=_epoch(job.get("submit_time")),
        start=_epoch(job.get("start_time")),
        end=_epoch(job.get("end_time")),
        nodes=expand_hostlist(str(job.get("nodes") or "")),
        comment=str(job.get("comment") or ""),
        admin_comment=str(job.get("admin_comment") or ""),
        exit_code=job.get("exit_code"),
        user=str(job.get("user_name") or ""),
        reason=str(job.get("state_reason") or ""),
    )


def _allocations_json(job: Mapping[str, Any]) -> tuple[NodeAllocation, ...]:
    resources = job.get("job_resources") or {}
    if not resources:  # pending
        return ()
    gres = [str(g) for g in job.get("gres_detail") or ()]
    nodes = resources.get("nodes")
    if isinstance(nodes, Mapping):  # 24.11
        return tuple(
            NodeAllocation(
                node=str(a["name"]),
                cpus=int(a["cpus"]["count"]),
                memory_mib=float(a["memory"]["allocated"]),
                gpus=gres_count(gres[i]) if i < len(gres) else 0,
            )
            for i, a in enumerate(nodes.get("allocation") or ())
        )
    allocated = resources.get("allocated_nodes") or []  # 22.05
    cores = [_allocated_cores(a) for a in allocated]
    factor = _threads_factor(int(_number(job.get("cpus")) or 0), sum(cores))
    return tuple(
        NodeAllocation(
            node=str(a["nodename"]),
            cpus=c * factor,
            memory_mib=float(a.get("memory_allocated") or 0),
            gpus=gres_count(gres[i]) if i < len(gres) else 0,
        )
        for i, (a, c) in enumerate(zip(allocated, cores, strict=True))
    )


def _allocated_cores(node: Mapping[str, Any]) -> int:
    """22.05 lists the allocated cores per socket: ``{"5": {"cores": {"0": "allocated"}}}``."""
    count = 0
    for socket in (node.get("sockets") or {}).values():
        for status in (socket.get("cores") or {}).values():
            text = str(status).lower()
            count += "allocated" in text and "unallocated" not in text
    return count


def _threads_factor(job_cpus: int, cores: int) -> int:
    """CPUs per allocated core: 22.05 lists cores, the job's CPU total counts threads."""
    if cores and job_cpus and job_cpus % cores == 0:
        return job_cpus // cores
    return 1


def parse_squeue_text(text: str, now: datetime) -> tuple[JobRecord, ...]:
    """``squeue -h -o '%i|%T|%N|%D|%C|%m|%b|%L|%j'`` (:data:`SQUEUE_TEXT_FORMAT`).

    The end is ``now`` + time left (``%L``), so pass the time squeue ran. Per-node figures
    of a job on several nodes are its totals split evenly (``exact=False``); ``%m`` is
    read as memory per node (a job submitted with ``--mem-per-cpu`` prints memory per CPU,
    which this format cannot tell apart).
    """
    command = f"squeue -h -o '{SQUEUE_TEXT_FORMAT}'"
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("|", 8)
        if len(fields) != 9:
            raise _bad(command, f"line {number} has {len(fields)} fields, expected 9: {line!r}")
        job_id, state, nodelist, count, cpus, memory, tres, left, name = fields
        try:
            nodes = expand_hostlist(nodelist)
            if nodes and len(nodes) != int(count):
                raise ValueError(f"{len(nodes)} nodes in {nodelist!r} but %D says {count}")
            duration = parse_duration(left)
            end = None if duration is None else now + duration
            allocations = _even_split(nodes, int(cpus), memory, gres_count(tres))
        except ValueError as exc:
            raise _bad(command, f"line {number} ({line!r}): {exc}") from None
        out.append(
            JobRecord(
                job_id=job_id.strip(),
                name=name,
                state=state.strip().upper(),
                allocations=allocations,
                end_time=end,
                exact=len(nodes) <= 1,
                nodes=nodes,
            )
        )
    return tuple(out)


#: ``squeue -h -o`` format of :func:`parse_squeue_comments` (the comment is last: it may hold '|').
SQUEUE_COMMENT_FORMAT = "%i|%k"


def parse_squeue_comments(text: str) -> dict[str, str]:
    """``squeue -h -o '%i|%k'``: job id -> comment (``(null)`` = none)."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        job_id, sep, comment = line.partition("|")
        if not sep or not job_id.strip():
            raise _bad(f"squeue -h -o '{SQUEUE_COMMENT_FORMAT}'", f"line {number}: {line!r}")
        out[job_id.strip()] = "" if comment == "(null)" else comment
    return out


def _even_split(
    nodes: tuple[str, ...], cpus: int, memory: str, gpus_per_node: int
) -> tuple[NodeAllocation, ...]:
    if not nodes:
        return ()
    mem = parse_mem_mib(memory) if memory.strip() not in ("", "0", "N/A") else 0.0
    base, extra = divmod(cpus, len(nodes))
    return tuple(
        NodeAllocation(node, base + (1 if i < extra else 0), mem, gpus_per_node)
        for i, node in enumerate(nodes)
    )
