"""The cluster file: a YAML description of the nodes ``mlsub plan`` places onto.

Format (every field is checked; unknown fields are errors)::

    slot_seconds: 600            # Δ, seconds per slot (optional, default 600)
    epoch: 2026-01-01T00:00:00Z  # wall time of slot 0 (optional, see below)
    nodes:                       # single nodes
      - {name: big1, gpus: 8, cpus: 64, mem_gb: 512, gpu_type: a100}
    groups:                      # identical nodes named <prefix>1 … <prefix><count>
      - {prefix: node, count: 4, gpus: 4, cpus: 8, mem_gb: 64}   # node1, node2, node3, node4
    reservations:                # usage already promised to other jobs (optional)
      - {node: node1, start: 0, end: 3, gpus: 2, cpus: 4, mem_gb: 32, job_id: "1234"}
    gpu_speed: {a100: 2.0, v100: 1.0, t4: 0.5}   # throughput per GPU type (optional)

* ``gpu_type`` (optional) is the type of the node's GPUs, the TYPE of Slurm's
  ``Gres=gpu:TYPE:N`` (matched exactly, as Slurm does; letters, digits, ``_ . -``); a job
  that names GPU types (``--gpu-type``) runs its GPU tasks only on nodes of those types. It
  needs ``gpus`` > 0. Untyped nodes take only jobs that name no type.
* ``gpu_speed`` (optional) is the speed table: per GPU type its throughput relative to
  the reference GPU of the speed profiles (1.0 = as the profile says, 2.0 = twice as
  fast; a number > 0 and <= 1000). Types it does not list, and untyped nodes, run at 1.0;
  a job is planned at the factor of the slowest node type it may run on
  (docs/formulation.md §17). One table per file, by type: there is no per-node factor
  (nodes of one type are one speed).
* ``gpus`` (default 0) and ``cpus`` are whole numbers >= 0; ``mem_gb`` is a number of GiB
  (``64`` = 64 GiB) or a Slurm-style size with a unit (``"64G"``, ``"512000M"``); a string
  without a unit is rejected because Slurm would read it as MiB.
* Machines are ordered: ``nodes`` first, then each group's members, in file order.
* Time: without ``epoch``, slot 0 is the slot containing ``now`` (the CLI's clock), floored
  to a multiple of Δ counted from the Unix epoch, and ``now_slot`` is 0. With ``epoch``,
  slot 0 begins at ``epoch`` and ``now_slot`` is the slot containing ``now``.
* Reservation ``start`` / ``end`` are either integers, slot offsets relative to the current
  slot (``0`` = the current slot, ``-1`` = the one before), or ISO 8601 times (naive times
  are UTC); a time is widened to whole slots (start floored, end ceiled). The interval is
  half-open ``[start, end)`` and must not be empty. Resources default to 0; one reservation
  must fit its node.

:func:`parse_cluster` is pure (data from ``yaml.safe_load`` in, snapshot out);
:func:`load_cluster` reads the file. Every problem is an :class:`InputError` naming the
file, the entry, the field and the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from .. import ranges
from ..errors import InputError
from ..model import ClusterSnapshot, Machine, Reservation, Resources
from ..model.eligibility import GPU_TYPE_NAME
from ..model.gpu_speed import GpuSpeeds, speed_table, with_gpu_speed
from ..model.units import gib_to_mib
from ..ranges import OutOfRange, Range

DEFAULT_SLOT_SECONDS = 600.0
TOP_FIELDS = ("nodes", "groups", "slot_seconds", "epoch", "reservations", "gpu_speed")
NODE_FIELDS = ("name", "gpus", "cpus", "mem_gb", "gpu_type")
GROUP_FIELDS = ("prefix", "count", "gpus", "cpus", "mem_gb", "gpu_type")
RESERVATION_FIELDS = ("node", "start", "end", "gpus", "cpus", "mem_gb", "job_id")
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class _Entry:
    """Where a value sits: the file and the entry (``nodes[2] ('node3')``)."""

    source: str
    entry: str

    def error(self, field: str, value: object, problem: str, hint: str = "") -> InputError:
        shown = value.isoformat() if isinstance(value, datetime) else repr(value)
        return InputError(
            f"{self.source}: {self.entry}: field '{field}' {problem}, got {shown}",
            hint=hint,
            context={"file": self.source, "entry": self.entry, "field": field, "value": value},
        )

    def fail(self, problem: str, hint: str = "") -> InputError:
        return InputError(
            f"{self.source}: {self.entry}: {problem}",
            hint=hint,
            context={"file": self.source, "entry": self.entry},
        )


def parse_cluster(data: object, source: str, *, now: datetime | None = None) -> ClusterSnapshot:
    """Build a :class:`ClusterSnapshot` from a parsed cluster file (pure).

    ``source`` names the file in messages; ``now`` (aware, or naive = UTC) places the
    current slot (see the module docstring). ``now=None`` behaves as ``now`` = the file's
    ``epoch``, or the Unix epoch if it has none.
    """
    top = _Entry(source, "top level")
    if data is None:
        raise top.fail("the file is empty", hint="describe at least one node under 'nodes:'")
    fields = _mapping(data, top, TOP_FIELDS)
    slot_seconds = _slot_seconds(fields, top)
    epoch, now_slot = _time_base(fields, top, slot_seconds, now)
    machines = _machines(fields, source)
    reservations = _reservations(fields, source, machines, epoch, slot_seconds, now_slot)
    return ClusterSnapshot(
        machines=with_gpu_speed(machines, _gpu_speed(fields, top)),
        reservations=tuple(reservations),
        slot_seconds=slot_seconds,
        epoch=epoch,
        now_slot=now_slot,
    )


def load_cluster(path: str | Path, *, now: datetime | None = None) -> ClusterSnapshot:
    """Read and parse the cluster file at ``path`` (YAML)."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(
            f"cannot read cluster file {source}: {exc.strerror or exc}",
            hint="check the path given to --cluster",
            context={"file": source},
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"cannot read cluster file {source}: not UTF-8 text ({exc.reason} at byte {exc.start})",
            hint="save the cluster file as UTF-8 (YAML)",
            context={"file": source},
        ) from None
    return parse_cluster(parse_yaml(text, source), source, now=now)


def parse_yaml(text: str, source: str) -> object:
    """``yaml.safe_load`` that rejects duplicate keys and reports line and column."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "malformed YAML"
        raise InputError(
            f"{source}: malformed YAML{where}: {problem}",
            hint="fix the YAML syntax there (indentation, ':' after keys, matching brackets)",
            context={"file": source, "line": mark.line + 1 if mark else None},
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(
            f"{source}: malformed YAML: {exc}",
            hint="check the file is YAML text",
            context={"file": source},
        ) from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader whose mappings refuse duplicate keys (a silent override is a typo)."""


def _construct_unique_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Hashable] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


# --- structure ---------------------------------------------------------------------------


def _mapping(value: object, where: _Entry, allowed: tuple[str, ...]) -> dict[str, object]:
    if not isinstance(value, Mapping):
        raise where.fail(
            f"expected a mapping of fields ({', '.join(allowed)}), got {value!r}",
            hint="write the entry as 'key: value' pairs",
        )
    out: dict[str, object] = {}
    for key, item in value.items():
        if key not in allowed:
            raise where.fail(
                f"unknown field {key!r}",
                hint=f"valid fields here: {', '.join(allowed)}",
            )
        out[str(key)] = item
    return out


def _list(fields: Mapping[str, object], key: str, where: _Entry) -> list[object]:
    value = fields.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(key, value, "must be a list of entries", hint=f"write '{key}:' items")
    return value


def _machines(fields: Mapping[str, object], source: str) -> list[Machine]:
    top = _Entry(source, "top level")
    machines: list[Machine] = []
    origin: dict[str, str] = {}
    for i, raw in enumerate(_list(fields, "nodes", top)):
        where = _Entry(source, _label("nodes", i, raw, "name"))
        node = _mapping(raw, where, NODE_FIELDS)
        name = _name(node, "name", where)
        where = _Entry(source, f"nodes[{i}] ({name!r})")
        capacity = _capacity(node, where)
        machine = Machine(name, capacity, _gpu_type(node, where, capacity))
        _add(machines, origin, machine, where.entry, source)
    for i, raw in enumerate(_list(fields, "groups", top)):
        where = _Entry(source, _label("groups", i, raw, "prefix"))
        group = _mapping(raw, where, GROUP_FIELDS)
        prefix = _name(group, "prefix", where)
        where = _Entry(source, f"groups[{i}] (prefix {prefix!r})")
        count = _count(group, "count", where, required=True, rng=ranges.GROUP_NODES)
        capacity = _capacity(group, where)
        gpu_type = _gpu_type(group, where, capacity)
        for k in range(1, count + 1):
            entry = f"{where.entry} member {k}"
            _add(machines, origin, Machine(f"{prefix}{k}", capacity, gpu_type), entry, source)
    if not machines:
        raise top.fail(
            "the cluster has no nodes",
            hint="list nodes under 'nodes:' (name, gpus, cpus, mem_gb) or 'groups:' "
            "(prefix, count, gpus, cpus, mem_gb)",
        )
    return machines


def _label(section: str, index: int, raw: object, key: str) -> str:
    """``nodes[2]``, with the entry's name when it has a usable one: ``nodes[2] ('n3')``."""
    name = raw.get(key) if isinstance(raw, Mapping) else None
    if isinstance(name, str) and name.strip():
        shown = repr(name.strip()) if key == "name" else f"{key} {name.strip()!r}"
        return f"{section}[{index}] ({shown})"
    return f"{section}[{index}]"


def _add(
    machines: list[Machine], origin: dict[str, str], machine: Machine, entry: str, source: str
) -> None:
    if machine.name in origin:
        raise _Entry(source, entry).fail(
            f"duplicate node name {machine.name!r} (already defined by {origin[machine.name]})",
            hint="node names must be unique; group members are named <prefix>1 … <prefix><count>",
        )
    origin[machine.name] = entry
    machines.append(machine)


def _reservations(
    fields: Mapping[str, object],
    source: str,
    machines: list[Machine],
    epoch: datetime,
    slot_seconds: float,
    now_slot: int,
) -> list[Reservation]:
    capacity = {m.name: m.capacity for m in machines}
    out: list[Reservation] = []
    for i, raw in enumerate(_list(fields, "reservations", _Entry(source, "top level"))):
        where = _Entry(source, f"reservations[{i}]")
        res = _mapping(raw, where, RESERVATION_FIELDS)
        node = _name(res, "node", where)
        if node not in capacity:
            known = list(capacity)
            more = f" … ({len(known)} in all)" if len(known) > 10 else ""
            raise where.error(
                "node",
                node,
                "names an unknown node",
                hint=f"known nodes: {', '.join(known[:10])}{more}",
            )
        start = _slot_of(res, "start", where, epoch, slot_seconds, now_slot, math.floor)
        end = _slot_of(res, "end", where, epoch, slot_seconds, now_slot, math.ceil)
        if end <= start:
            raise where.error(
                "end",
                res["end"],
                f"must be after start ({res['start']!r}); the interval [start, end) is empty",
                hint="end is exclusive: a one-slot reservation has end = start + 1",
            )
        usage = _resources(res, where, required=False)
        if not usage.fits_in(capacity[node]):
            raise where.fail(
                f"usage {usage.as_dict()} exceeds the capacity of node {node!r} "
                f"{capacity[node].as_dict()}",
                hint="a reservation cannot hold more than its node has",
            )
        job_id = res.get("job_id", "")
        out.append(Reservation(node, start, end, usage, "" if job_id is None else str(job_id)))
    return out


# --- values ------------------------------------------------------------------------------


def _name(fields: Mapping[str, object], key: str, where: _Entry) -> str:
    if key not in fields:
        raise where.fail(f"missing field '{key}'", hint=f"give every entry a '{key}'")
    value = fields[key]
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise where.error(key, value, "must be a non-empty name", hint=f"write e.g. '{key}: node1'")
    text = str(value).strip()
    if any(c.isspace() or c in ",[]" for c in text):
        raise where.error(
            key,
            value,
            "must not contain spaces, commas or brackets",
            hint="use the node's Slurm NodeName",
        )
    return text


def _count(
    fields: Mapping[str, object],
    key: str,
    where: _Entry,
    *,
    required: bool,
    rng: Range = ranges.NODE_COUNT,
) -> int:
    if key not in fields:
        if required:
            raise where.fail(f"missing field '{key}'", hint=f"add '{key}: <whole number>'")
        return 0
    value = fields[key]
    if isinstance(value, str):  # YAML typed it as text: a count is written bare
        raise where.error(key, value, "must be a whole number", hint=f"write e.g. '{key}: 4'")
    try:
        return ranges.whole(value, rng)
    except OutOfRange as err:
        raise where.error(key, value, err.problem, hint=f"write e.g. '{key}: 4'") from None


def _mem_mib(fields: Mapping[str, object], where: _Entry, *, required: bool) -> float:
    key = "mem_gb"
    if key not in fields:
        if required:
            raise where.fail(f"missing field '{key}'", hint="add 'mem_gb: <GiB>' (e.g. 64)")
        return 0.0
    value = fields[key]
    hint = "give a number of GiB (64) or a size with a unit ('64G', '512000M')"
    if isinstance(value, bool):
        raise where.error(key, value, "must be a memory size", hint=hint)
    cap = ranges.NODE_MEM_GIB
    if isinstance(value, int | float):
        try:
            gib = ranges.number(value, replace(cap, hi=math.inf, said=""))
        except OutOfRange:
            raise where.error(key, value, "must be a finite number >= 0", hint=hint) from None
        if gib not in cap:
            raise where.error(key, value, f"must be {cap.words()}", hint=hint)
        return gib_to_mib(gib)
    if isinstance(value, str):
        if not value.strip() or value.strip()[-1].isdigit():
            raise where.error(key, value, "needs a unit when written as a string", hint=hint)
        per_mib = Range(0, gib_to_mib(cap.hi), said=cap.said)
        try:
            return ranges.memory_mib(value, per_mib)
        except OutOfRange as err:
            raise where.error(key, value, err.problem, hint=hint) from None
    raise where.error(key, value, "must be a memory size", hint=hint)


def _gpu_type(fields: Mapping[str, object], where: _Entry, capacity: Resources) -> str | None:
    """The node's ``gpu_type`` (None when not given); a type needs GPUs."""
    if "gpu_type" not in fields or fields["gpu_type"] is None:
        return None
    value = fields["gpu_type"]
    hint = "write the TYPE of Slurm's Gres=gpu:TYPE:N, e.g. 'gpu_type: v100'"
    if not isinstance(value, str) or not GPU_TYPE_NAME.fullmatch(value.strip()):
        raise where.error(
            "gpu_type", value, "must be a GPU type name (letters, digits, '_', '.', '-')", hint
        )
    if capacity.gpu <= 0:
        raise where.error(
            "gpu_type", value, "is given for a node without GPUs", "add 'gpus: N' or drop it"
        )
    return value.strip()


def _gpu_speed(fields: Mapping[str, object], where: _Entry) -> GpuSpeeds:
    """The top-level ``gpu_speed`` table (() when not given: every type at 1.0)."""
    value = fields.get("gpu_speed")
    hint = (
        "write a mapping of GPU type to throughput factor (> 0, 1.0 = the profile's "
        "reference GPU), e.g. 'gpu_speed: {a100: 2.0, t4: 0.5}'"
    )
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise where.error("gpu_speed", value, "must be a mapping of GPU type to factor", hint)
    try:
        return speed_table(value)
    except ValueError as exc:
        raise where.error("gpu_speed", dict(value), f"is not a speed table ({exc})", hint) from None


def _capacity(fields: Mapping[str, object], where: _Entry) -> Resources:
    return _resources(fields, where, required=True)


def _resources(fields: Mapping[str, object], where: _Entry, *, required: bool) -> Resources:
    """gpus (default 0), cpus and mem_gb (required for nodes, default 0 for reservations)."""
    gpus = _count(fields, "gpus", where, required=False)
    cpus = _count(fields, "cpus", where, required=required)
    return Resources(float(gpus), float(cpus), _mem_mib(fields, where, required=required))


def _slot_seconds(fields: Mapping[str, object], where: _Entry) -> float:
    value = fields.get("slot_seconds", DEFAULT_SLOT_SECONDS)
    hint = f"write e.g. 'slot_seconds: 600', or leave it out for {DEFAULT_SLOT_SECONDS:g}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error("slot_seconds", value, "must be a number of seconds", hint=hint)
    try:
        return ranges.number(value, ranges.SLOT_SECONDS)
    except OutOfRange as err:
        raise where.error("slot_seconds", value, err.problem, hint=hint) from None


def _as_datetime(value: object) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string or a YAML timestamp; None if neither."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        text = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
    else:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime (naive = UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def floor_to_slot(moment: datetime, slot_seconds: float) -> datetime:
    """The start of the Δ-slot containing ``moment``, slots counted from the Unix epoch."""
    elapsed = (as_utc(moment) - _UNIX_EPOCH).total_seconds()
    return _UNIX_EPOCH + timedelta(seconds=math.floor(elapsed / slot_seconds) * slot_seconds)


def _time_base(
    fields: Mapping[str, object], where: _Entry, slot_seconds: float, now: datetime | None
) -> tuple[datetime, int]:
    if "epoch" not in fields:
        base = _UNIX_EPOCH if now is None else floor_to_slot(now, slot_seconds)
        return base, 0
    epoch = _as_datetime(fields["epoch"])
    if epoch is None:
        raise where.error(
            "epoch", fields["epoch"], "must be an ISO 8601 time", hint="e.g. 2026-01-01T00:00:00Z"
        )
    if now is None:
        return epoch, 0
    elapsed = (as_utc(now) - epoch).total_seconds()
    if elapsed < 0:
        raise where.error(
            "epoch",
            fields["epoch"],
            f"is after the current time {as_utc(now).isoformat()}",
            hint="slot 0 must not begin in the future; drop 'epoch' to start at now",
        )
    return epoch, math.floor(elapsed / slot_seconds)


def _slot_of(
    fields: Mapping[str, object],
    key: str,
    where: _Entry,
    epoch: datetime,
    slot_seconds: float,
    now_slot: int,
    rounding: Callable[[float], int],
) -> int:
    hint = "give a slot offset from now (0, 3, -1) or an ISO 8601 time (2026-01-01T10:00:00Z)"
    if key not in fields:
        raise where.fail(f"missing field '{key}'", hint=hint)
    value = fields[key]
    if isinstance(value, int) and not isinstance(value, bool):
        return now_slot + value
    moment = _as_datetime(value)
    if moment is None:
        raise where.error(key, value, "must be a slot offset or an ISO 8601 time", hint=hint)
    slots: int = rounding((moment - epoch).total_seconds() / slot_seconds)
    return slots
