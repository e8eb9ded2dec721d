"""Node state sources: what the nodes have and what running jobs hold on them, live.

* :class:`NodeStateSource` is the interface: ``read(now)`` -> :class:`NodeState`.
* :class:`SlurmCliSource` reads it with the Slurm commands through one
  :class:`~slurm_mlsched.slurm.runner.CommandRunner`: ``sinfo -N --json`` and
  ``squeue --all --json`` where the Slurm version has JSON (21.08+, so both supported
  versions), else ``scontrol -o show nodes`` and ``squeue -h -o``.
* :class:`PyslurmSource` reads it with pyslurm's ``Nodes.load()`` / ``Jobs.load()``; it is
  used only when pyslurm imports and was built for the cluster's Slurm release (pyslurm
  ``X.Y.Z`` is for Slurm ``X.Y``).
* :func:`select_source` picks one and says why.

Nothing is dropped silently: :class:`NodeState` keeps every node; nodes that are down,
drained or not responding are reported by :meth:`NodeState.excluded`.
"""

from __future__ import annotations

import importlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from .parse import (
    HOLDING_STATES,
    SQUEUE_COMMENT_FORMAT,
    SQUEUE_TEXT_FORMAT,
    JobRecord,
    NodeAllocation,
    NodeRecord,
    SlurmVersion,
    gres_type,
    parse_scontrol_nodes,
    parse_sinfo_json,
    parse_squeue_comments,
    parse_squeue_json,
    parse_squeue_text,
    split_state,
)
from .pyslurm_calls import pyslurm_errors, pyslurm_members
from .runner import CommandRunner, SlurmCommands

#: ``squeue -t`` states whose jobs hold an allocation (text mode asks only for these).
_HOLDING_STATES_ARG = ",".join(sorted(HOLDING_STATES))


@dataclass(frozen=True)
class NodeState:
    """One reading of the cluster: every node, and the jobs that hold resources now."""

    nodes: tuple[NodeRecord, ...]
    jobs: tuple[JobRecord, ...]
    source: str
    slurm_version: str = ""
    notes: tuple[str, ...] = ()
    source_reason: str = ""
    """Why this source answered (``pyslurm matches the cluster's Slurm 22.05``, ``pyslurm
    is not installed``, ``MLSUB_SLURM_SOURCE=cli``, …)."""

    def usable(self) -> tuple[NodeRecord, ...]:
        return tuple(n for n in self.nodes if n.unusable_reason() is None)

    def excluded(self) -> tuple[tuple[NodeRecord, str], ...]:
        """Nodes that cannot take work, each with why (``drained (maintenance)``)."""
        out = []
        for node in self.nodes:
            why = node.unusable_reason()
            if why is not None:
                out.append((node, why))
        return tuple(out)


class NodeStateSource(Protocol):
    """Reads the live state of the cluster."""

    @property
    def description(self) -> str:
        """What the source reads, for messages and ``mlsub cluster`` (one line)."""
        ...

    def read(self, now: datetime) -> NodeState:
        """Nodes and running jobs now; ``now`` turns relative times into absolute ones."""
        ...


Mode = Literal["auto", "json", "text"]


class SlurmCliSource:
    """The Slurm commands, through a runner. ``mode``: ``auto`` (JSON when the version has
    it), ``json`` or ``text``."""

    def __init__(
        self, runner: CommandRunner | SlurmCommands, *, mode: Mode = "auto", reason: str = ""
    ) -> None:
        self.slurm = runner if isinstance(runner, SlurmCommands) else SlurmCommands(runner)
        self.mode: Mode = mode
        self.reason = reason

    @property
    def description(self) -> str:
        return f"Slurm commands ({self.mode})"

    def _use_json(self, version: SlurmVersion) -> bool:
        return self.mode == "json" or (self.mode == "auto" and version.has_json())

    def read(self, now: datetime) -> NodeState:
        version = self.slurm.version()
        if self._use_json(version):
            nodes = parse_sinfo_json(self.slurm.run(["sinfo", "-N", "--json"]))
            jobs = parse_squeue_json(self.slurm.run(["squeue", "--all", "--json"]))
            source = "sinfo -N --json, squeue --all --json"
            notes: tuple[str, ...] = ()
        else:
            nodes = parse_scontrol_nodes(self.slurm.run(["scontrol", "-o", "show", "nodes"]))
            argv = ["squeue", "--all", "-h", "-t", _HOLDING_STATES_ARG, "-o", SQUEUE_TEXT_FORMAT]
            jobs = parse_squeue_text(self.slurm.run(argv), now)
            comments = parse_squeue_comments(
                self.slurm.run([*argv[:-1], SQUEUE_COMMENT_FORMAT])  # same jobs, %i|%k
            )
            jobs = tuple(replace(j, comment=comments.get(j.job_id, "")) for j in jobs)
            source = "scontrol -o show nodes, squeue -h -o"
            notes = _estimate_notes(jobs)
        return NodeState(
            nodes=nodes,
            jobs=tuple(j for j in jobs if j.holds_resources),
            source=source,
            slurm_version=str(version),
            notes=notes,
            source_reason=self.reason,
        )


def _estimate_notes(jobs: Iterable[JobRecord]) -> tuple[str, ...]:
    estimated = [j.job_id for j in jobs if j.holds_resources and not j.exact]
    if not estimated:
        return ()
    return (
        "per-node holdings of multi-node jobs are their totals split evenly (squeue -o "
        f"gives no more): {', '.join(estimated)}",
    )


# --- pyslurm -------------------------------------------------------------------------


class PyslurmSource:
    """pyslurm's ``Nodes.load()`` and ``Jobs.load()`` (the API of pyslurm 23.2 and later,
    attribute names from its ``node.pxd`` / ``job.pxd``). ``module`` is the imported
    ``pyslurm`` (tests pass a stand-in)."""

    def __init__(
        self,
        module: Any,
        slurm_version: str = "",
        slurm: SlurmCommands | None = None,
        reason: str = "",
    ) -> None:
        self.module = module
        self.slurm_version = slurm_version
        self.reason = reason
        self.slurm = slurm
        """The Slurm funnel: its bounded ``scontrol ping`` runs before pyslurm's first
        call (the C library would wait MessageTimeout on an unresponsive controller)."""

    @property
    def description(self) -> str:
        return f"pyslurm {getattr(self.module, '__version__', '?')}"

    def read(self, now: datetime) -> NodeState:
        if self.slurm is not None:
            self.slurm.ensure_reachable()
        with pyslurm_errors(self.description):
            loaded = pyslurm_members(self.module.Nodes.load())
            jobs = tuple(_pyslurm_job(j) for j in pyslurm_members(self.module.Jobs.load()))
            in_use: dict[str, int] = defaultdict(int)
            for job in jobs:
                if job.holds_resources:
                    for a in job.allocations:
                        in_use[a.node] += a.gpus
            nodes = tuple(_pyslurm_node(n, in_use[str(n.name)]) for n in loaded)
        return NodeState(
            nodes=nodes,
            jobs=tuple(j for j in jobs if j.holds_resources),
            source=f"{self.description} (Nodes.load, Jobs.load)",
            slurm_version=self.slurm_version,
            source_reason=self.reason,
        )


def _pyslurm_gpus(gres: object) -> int:
    """``configured_gres`` / ``allocated_gres``: ``{"gpu": 4}``, ``{"gpu:a100": 2}``, or with
    indexes ``{"gpu": {"count": "2", "indexes": "0-1"}}``."""
    if not isinstance(gres, Mapping):
        return 0
    total = 0
    for key, value in gres.items():
        if str(key).split(":")[0] != "gpu":
            continue
        count = value.get("count", 0) if isinstance(value, Mapping) else value
        total += int(count or 0)
    return total


def _pyslurm_gpu_type(gres: object) -> str | None:
    """The GPU type in ``configured_gres`` (``{"gpu:a100": 2}`` -> ``a100``), read as the
    commands read ``Gres`` (:func:`.parse.gres_type`)."""
    if not isinstance(gres, Mapping):
        return None
    return gres_type(",".join(str(k) for k in gres))


def _pyslurm_node(node: Any, gpus_in_use: int = 0) -> NodeRecord:
    """``gpus_in_use``: the GPUs the node's running jobs hold, from their layouts; used
    when ``allocated_gres`` is empty (pyslurm 22.5 leaves it so while jobs hold GPUs)."""
    state, flags = split_state(str(node.state or "UNKNOWN"))
    cpus, alloc_cpus = int(node.total_cpus or 0), int(node.allocated_cpus or 0)
    if state == "ALLOCATED" and 0 < alloc_cpus < cpus:
        state = "MIXED"  # as sinfo and scontrol derive it (the controller sends ALLOCATED)
    return NodeRecord(
        name=str(node.name),
        state=state,
        flags=flags,
        cpus=cpus,
        memory_mib=float(node.real_memory or 0),
        gpus=_pyslurm_gpus(node.configured_gres),
        address=str(node.address or ""),
        reason=str(node.reason or ""),
        alloc_cpus=alloc_cpus,
        alloc_memory_mib=float(node.allocated_memory or 0),
        alloc_gpus=_pyslurm_gpus(node.allocated_gres) or gpus_in_use,
        partitions=tuple(str(p) for p in (node.partitions or ())),
        features=tuple(str(f) for f in (getattr(node, "active_features", None) or ())),
        gpu_type=_pyslurm_gpu_type(node.configured_gres),
    )


def _count_ids(text: str) -> int:
    """``0-1,4`` -> 3."""
    total = 0
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        lo, _, hi = part.partition("-")
        total += int(hi) - int(lo) + 1 if hi else 1
    return total


def _pyslurm_job(job: Any) -> JobRecord:
    layout = job.get_resource_layout_per_node() or {}
    allocations = tuple(
        NodeAllocation(
            node=str(node),
            cpus=_count_ids(res.get("cpu_ids") or ""),
            memory_mib=float(res.get("memory") or 0),
            gpus=_pyslurm_gpus(res.get("gres")),
        )
        for node, res in layout.items()
    )
    job_id = str(job.id)
    het = getattr(job, "heterogeneous_id", None)
    if het:
        job_id = f"{het}+{getattr(job, 'heterogeneous_offset', 0) or 0}"
    end = job.end_time
    unlimited = job.time_limit in (None, "UNLIMITED")
    return JobRecord(
        job_id=job_id,
        name=str(job.name or ""),
        state=str(job.state or "").upper(),
        allocations=allocations,
        end_time=None if unlimited or not end else datetime.fromtimestamp(end, tz=UTC),
        comment=str(getattr(job, "comment", "") or ""),
        nodes=tuple(a.node for a in allocations),
        user=str(getattr(job, "user_name", "") or ""),
    )


# --- selection -----------------------------------------------------------------------


@dataclass(frozen=True)
class SourceChoice:
    source: NodeStateSource
    reason: str


Importer = Callable[[str], Any]


def pyslurm_release(version_text: str) -> tuple[int, int] | None:
    """pyslurm ``25.11.0`` -> (25, 11): the Slurm release it was built for."""
    match = re.match(r"\s*(\d+)\.(\d+)", version_text)
    return (int(match[1]), int(match[2])) if match else None


#: pyslurm releases that import and match their Slurm but cannot read what placement
#: needs (found by tests/integration/test_pyslurm_parity.py on the real cluster): the
#: commands are used instead, and ``mlsub cluster`` says why.
PYSLURM_GAPS: dict[tuple[int, int], str] = {
    (24, 11): "reads no per-node job allocations on Slurm 24.11 "
    "(Job.get_resource_layout_per_node() is empty: it needs job_resrcs.core_bitmap, which "
    "slurmctld 24.11 no longer sends), so running jobs would seem to hold nothing; the "
    "Slurm commands are used",
}


def select_source(
    runner: CommandRunner | SlurmCommands,
    *,
    importer: Importer = importlib.import_module,
) -> SourceChoice:
    """pyslurm when it imports and matches the cluster's Slurm ``major.minor``, else the
    Slurm commands. The cluster's version comes from ``sinfo --version``."""
    slurm = runner if isinstance(runner, SlurmCommands) else SlurmCommands(runner)

    def cli(reason: str) -> SourceChoice:
        return SourceChoice(SlurmCliSource(slurm, reason=reason), reason)

    try:
        module = importer("pyslurm")
    except ImportError:
        return cli("pyslurm is not installed")
    except (OSError, RuntimeError) as exc:  # built against another libslurm
        return cli(f"pyslurm does not load here ({type(exc).__name__}: {exc})")
    theirs = pyslurm_release(str(getattr(module, "__version__", "")))
    ours = slurm.version()
    if theirs in PYSLURM_GAPS and theirs == (ours.major, ours.minor):
        return cli(f"pyslurm {getattr(module, '__version__', '?')}: {PYSLURM_GAPS[theirs]}")
    if theirs != (ours.major, ours.minor):
        shown = ".".join(map(str, theirs)) if theirs else "unknown"
        return cli(
            f"pyslurm {getattr(module, '__version__', '?')} is for Slurm {shown}, "
            f"the cluster runs Slurm {ours}"
        )
    reason = f"pyslurm matches the cluster's Slurm {ours.release}"
    return SourceChoice(PyslurmSource(module, str(ours), slurm, reason), reason)
