"""The ``cluster`` use case: the live cluster as a snapshot the placement core can read.

:func:`build_cluster_state` is pure: a :class:`~slurm_mlsched.slurm.nodes.NodeState`, the
time ``now`` and the slot length Δ in, a :class:`ClusterState` out:

* machines: the usable nodes, capacity = configured CPUs, memory (RealMemory, MiB) and
  GPU GRES; nodes that are down, drained or not responding are left out and listed in
  ``excluded`` with the reason;
* time: slot 0 is the Δ-slot containing ``now`` (``now`` floored to a multiple of Δ from
  the Unix epoch, as for cluster files without ``epoch``), and the snapshot's
  ``now_slot`` is 0;
* reservations: what each running job holds on each usable node, from slot 0 to the
  slot containing its expected end (end exclusive: ``ceil((end − epoch) / Δ)``, at least
  1, since it holds the node now). A job without a time limit (or with an end Slurm does
  not report) holds until ``UNKNOWN_END_HORIZON``;
* ``extra`` reservations (e.g. decisions not yet running) are added as they are, those on
  usable nodes only;
* ``gpu_speed``: the site's speed table (config ``[gpu_speed]``); each machine carries its
  type's factor (docs/formulation.md §17);
* ``partition``: only nodes of that partition are usable (others are listed as excluded,
  "not in partition P"); ``covered_jobs``: running jobs whose holdings are already in
  ``extra`` (mlsub's own jobs, whose decisions the store still reserves until their
  predicted end + grace) are left out, so nothing is counted twice.

:func:`own_jobs` finds those jobs by the decision tag in their comment.

:func:`read_cluster_state` is the wiring: read the source, then build. Nothing here prints.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from .. import __version__
from ..files.cluster_file import DEFAULT_SLOT_SECONDS, as_utc, floor_to_slot
from ..model import ClusterSnapshot, Machine, Reservation, Resources
from ..model.gpu_speed import GpuSpeeds, with_gpu_speed
from ..model.narrowing import NodeFilter
from ..sbatch.tag import find_tags
from ..slurm.nodes import NodeState, NodeStateSource
from ..slurm.parse import JobRecord, NodeRecord
from .clock import Clock

#: Version of the ``mlsub cluster --json`` shape; bump on any incompatible change.
CLUSTER_SCHEMA_VERSION = 1
#: How long a job with no time limit is assumed to hold its nodes (Slurm's own figure).
UNKNOWN_END_HORIZON = timedelta(days=365)


@dataclass(frozen=True)
class NodeView:
    """One node as ``mlsub cluster`` shows it."""

    record: NodeRecord
    usable: bool
    reason: str | None
    total: Resources
    used_now: Resources
    jobs: tuple[str, ...]

    @property
    def free_now(self) -> Resources:
        return Resources(
            max(0.0, self.total.gpu - self.used_now.gpu),
            max(0.0, self.total.cpu - self.used_now.cpu),
            max(0.0, self.total.mem - self.used_now.mem),
        )


@dataclass(frozen=True)
class ClusterState:
    """The live cluster as the placement sees it (``mlsub cluster``): the snapshot, every
    node (usable or excluded, with why), Slurm's running jobs, when and how it was read
    (``source``, and ``source_reason`` when the preferred source was not used), Slurm's
    version and notes of the reading."""

    snapshot: ClusterSnapshot
    nodes: tuple[NodeView, ...]
    jobs: tuple[JobRecord, ...]
    now: datetime
    source: str
    slurm_version: str
    notes: tuple[str, ...] = ()
    source_reason: str = ""

    @property
    def excluded(self) -> tuple[NodeView, ...]:
        return tuple(n for n in self.nodes if not n.usable)

    @property
    def capacity(self) -> Resources:
        """The usable nodes' total capacity."""
        return _sum(n.total for n in self.nodes if n.usable)

    @property
    def free_now(self) -> Resources:
        """What the usable nodes have free now."""
        return _sum(n.free_now for n in self.nodes if n.usable)

    def to_json(self) -> dict[str, object]:
        """The JSON shape of ``mlsub cluster --json`` (documented in docs/user-guide.md)."""
        snap = self.snapshot
        return {
            "schema": CLUSTER_SCHEMA_VERSION,
            "mlsub_version": __version__,
            "source": self.source,
            "source_reason": self.source_reason,
            "slurm_version": self.slurm_version,
            "now": self.now.isoformat(),
            "slot_seconds": snap.slot_seconds,
            "epoch": snap.epoch.isoformat(),
            "nodes": [_node_dict(n) for n in self.nodes],
            "excluded": [{"name": n.record.name, "reason": n.reason} for n in self.excluded],
            "jobs": [_job_dict(j) for j in self.jobs],
            "reservations": [_reservation_dict(r) for r in snap.reservations],
            "capacity": _resources(self.capacity),
            "free_now": _resources(self.free_now),
            "notes": list(self.notes),
        }


def build_cluster_state(
    state: NodeState,
    *,
    now: datetime,
    slot_seconds: float = DEFAULT_SLOT_SECONDS,
    extra: Iterable[Reservation] = (),
    partition: str | None = None,
    covered_jobs: Collection[str] = (),
    narrowing: NodeFilter | None = None,
    gpu_speed: GpuSpeeds = (),
) -> ClusterState:
    """The snapshot and per-node view of ``state`` at ``now`` (pure; see the module doc).
    ``narrowing``: the job's ``#SBATCH`` node filter; the nodes it refuses are left out,
    each with its reason."""
    now = as_utc(now)
    epoch = floor_to_slot(now, slot_seconds)
    refused = {n.name: why for n in state.nodes if (why := narrow_reason(n, narrowing))}
    usable = {
        n.name for n in state.usable() if _in_partition(n, partition) and n.name not in refused
    }
    holdings: dict[str, list[tuple[JobRecord, Resources]]] = {n.name: [] for n in state.nodes}
    for job in state.jobs:
        if job.job_id in covered_jobs or job.job_id.split("+")[0] in covered_jobs:
            continue
        for alloc in job.allocations:
            usage = Resources(float(alloc.gpus), float(alloc.cpus), alloc.memory_mib)
            holdings.setdefault(alloc.node, []).append((job, usage))
    reservations = [
        Reservation(node, 0, _end_slot(job.end_time, now, epoch, slot_seconds), usage, job.job_id)
        for node, held in holdings.items()
        if node in usable
        for job, usage in held
    ]
    machines = with_gpu_speed(
        (Machine(n.name, _capacity(n), n.gpu_type) for n in state.nodes if n.name in usable),
        gpu_speed,
    )
    snapshot = ClusterSnapshot(
        machines=machines,
        reservations=tuple(reservations) + tuple(r for r in extra if r.machine in usable),
        slot_seconds=slot_seconds,
        epoch=epoch,
        now_slot=0,
    )
    views = tuple(
        NodeView(
            record=n,
            usable=n.name in usable,
            reason=n.unusable_reason()
            or refused.get(n.name)
            or (None if n.name in usable else f"not in partition {partition}"),
            total=_capacity(n),
            used_now=_sum(u for _, u in holdings.get(n.name, ())),
            jobs=tuple(dict.fromkeys(j.job_id for j, _ in holdings.get(n.name, ()))),
        )
        for n in state.nodes
    )
    return ClusterState(
        snapshot=snapshot,
        nodes=views,
        jobs=state.jobs,
        now=now,
        source=state.source,
        slurm_version=state.slurm_version,
        notes=state.notes,
        source_reason=state.source_reason,
    )


def narrow_reason(node: NodeRecord, narrowing: NodeFilter | None) -> str | None:
    """Why the job's ``#SBATCH`` node filter refuses ``node`` (None: it may use it)."""
    if narrowing is None or not narrowing.narrows:
        return None
    return narrowing.reason(
        node.name,
        cpus=node.cpus,
        mem_mib=node.memory_mib,
        gpus=node.gpus,
        features=node.features,
    )


def _in_partition(node: NodeRecord, partition: str | None) -> bool:
    return partition is None or partition in node.partitions


def partitions_of(state: NodeState) -> tuple[str, ...]:
    """Every partition some node belongs to, in first-seen order."""
    return tuple(dict.fromkeys(p for n in state.nodes for p in n.partitions))


def own_jobs(
    jobs: Iterable[JobRecord],
    tags: Mapping[str, int],
    owners: Mapping[int, str] | None = None,
) -> dict[str, int]:
    """Slurm job id -> decision id, for the jobs whose comment holds one of ``tags``
    (tag text -> decision id; a tag counts only with its exact token) and, with
    ``owners`` (decision id -> Slurm user), that belong to the decision's user: a job
    whose owner Slurm names as someone else is not the decision's, whatever tag it copied
    (it is then counted as any other running job). A source that does not name owners
    (empty ``user``) is trusted on the tag alone."""
    out: dict[str, int] = {}
    for job in jobs:
        for tag in find_tags(job.comment):
            decision = tags.get(str(tag))
            if decision is None:
                continue
            expected = (owners or {}).get(decision)
            if expected and job.user and job.user != expected:
                continue
            out[job.job_id.split("+")[0]] = decision
    return out


def read_cluster_state(
    source: NodeStateSource, *, clock: Clock, slot_seconds: float = DEFAULT_SLOT_SECONDS
) -> ClusterState:
    """Read the live state once and build the snapshot (``mlsub cluster``, submission)."""
    now = clock.now()
    return build_cluster_state(source.read(now), now=now, slot_seconds=slot_seconds)


def _capacity(node: NodeRecord) -> Resources:
    return Resources(float(node.gpus), float(node.cpus), node.memory_mib)


def _end_slot(end: datetime | None, now: datetime, epoch: datetime, slot_seconds: float) -> int:
    """The first slot after the job's expected end (exclusive end), at least 1."""
    end = now + UNKNOWN_END_HORIZON if end is None else as_utc(end)
    return max(1, math.ceil((end - epoch).total_seconds() / slot_seconds - 1e-9))


def _sum(items: Iterable[Resources]) -> Resources:
    total = Resources()
    for item in items:
        total = total + item
    return total


def _resources(r: Resources) -> dict[str, float]:
    return {"gpus": r.gpu, "cpus": r.cpu, "mem_mib": r.mem}


def _node_dict(view: NodeView) -> dict[str, object]:
    return {
        "name": view.record.name,
        "state": view.record.state_text,
        "usable": view.usable,
        "reason": view.reason,
        "address": view.record.address,
        "gpu_type": view.record.gpu_type,
        "total": _resources(view.total),
        "used_now": _resources(view.used_now),
        "free_now": _resources(view.free_now),
        "jobs": list(view.jobs),
    }


def _job_dict(job: JobRecord) -> dict[str, object]:
    return {
        "id": job.job_id,
        "name": job.name,
        "state": job.state,
        "end": job.end_time.isoformat() if job.end_time else None,
        "exact": job.exact,
        "allocations": [
            {"node": a.node, "gpus": a.gpus, "cpus": a.cpus, "mem_mib": a.memory_mib}
            for a in job.allocations
        ],
    }


def _reservation_dict(r: Reservation) -> dict[str, object]:
    return {
        "node": r.machine,
        "job_id": r.job_id,
        "start_slot": r.start_slot,
        "end_slot": r.end_slot,
        **_resources(r.usage),
    }
