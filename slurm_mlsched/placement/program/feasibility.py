"""Could a job ever run on a cluster, before any solver (docs/formulation.md §12)."""

from __future__ import annotations

from dataclasses import replace

from ...errors import NeverFitsError
from ...model import RESOURCE_NAMES, ClusterSnapshot, JobRequest, Machine, Resources, restricts
from ...model.eligibility import gpu_types_text, type_allowed


def _largest(snapshot: ClusterSnapshot) -> Resources:
    best = [0.0, 0.0, 0.0]
    for m in snapshot.machines:
        for i, x in enumerate(m.capacity.as_tuple()):
            best[i] = max(best[i], x)
    return Resources(*best)


def _first_short(demand: Resources, capacity: Resources) -> str | None:
    for name, d, c in zip(RESOURCE_NAMES, demand.as_tuple(), capacity.as_tuple(), strict=True):
        if d > c + 1e-9:
            return name
    return None


def check_could_ever_fit(job: JobRequest, snapshot: ClusterSnapshot) -> None:
    """Raise :class:`NeverFitsError` if no empty-cluster placement could run ``job``.

    The smallest runnable shapes are: one worker and one PS co-located on a machine, or
    the fewest distributed workers (1, or the fixed PS count) with their PSs, each task on
    some machine. Reservations are ignored: they end, capacity does not. A job that names
    GPU types is checked on the cluster as it sees it (no GPUs on the other nodes).
    """
    if not snapshot.machines:
        raise NeverFitsError("the cluster has no machines", hint="describe at least one node")
    snapshot = _as_seen_by(job, snapshot)
    for label, demand in (("worker", job.worker), ("ps", job.ps)):
        if not any(demand.fits_in(m.capacity) for m in snapshot.machines):
            largest = _largest(snapshot)
            short = _first_short(demand, largest)
            if short is not None:
                where = f"the largest node has {short}={largest.as_dict()[short]:g}"
            else:  # each resource fits somewhere, but never all on one node
                near = min(snapshot.machines, key=lambda m: _shortfalls(demand, m.capacity))
                short = _first_short(demand, near.capacity) or "?"
                where = (
                    f"no node has all of it (e.g. {near.name} has "
                    f"{short}={near.capacity.as_dict().get(short, 0):g})"
                )
            value = demand.as_dict().get(short, 0.0)
            raise NeverFitsError(
                f"no node could ever hold one {label} of job {job.job_id!r}: it needs "
                f"{short}={value:g} and {where}",
                hint=f"lower the per-{label} {short} request, or describe bigger nodes",
                context={"field": f"{label}.{short}", "value": value, "resource": short},
            )
    pair = job.worker + job.ps
    if any(pair.fits_in(m.capacity) for m in snapshot.machines):
        return
    total = snapshot.total_capacity()
    w = job.min_distributed_workers()
    s = job.ps_needed(w)
    if w > job.max_distributed_workers():
        raise NeverFitsError(
            f"job {job.job_id!r}: {job.ps_count} PSs need at least {w} workers but at most "
            f"{job.max_distributed_workers()} are allowed",
            hint="lower --ps or raise --workers",
            context={"field": "ps", "value": job.ps_count},
        )
    need = job.worker.scaled(w) + job.ps.scaled(s)
    short = _first_short(need, total)
    if short is not None or not _packs(job, snapshot, w, s):
        short = short or "packing"
        raise NeverFitsError(
            f"the whole cluster could never hold job {job.job_id!r}: its smallest shape "
            f"({w} worker(s) + {s} PS(s)) does not fit ({short})",
            hint="ask for fewer PSs or smaller tasks, or describe more nodes",
            context={"field": "ps" if job.ps_count else "worker", "resource": short},
        )


def _as_seen_by(job: JobRequest, snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot with no GPUs on the nodes the job's GPU types exclude; a job whose
    types match no node with GPUs fails here, naming the types the cluster has."""
    if not restricts(job):
        return snapshot
    seen = tuple(
        m
        if type_allowed(job.gpu_types, m.gpu_type)
        else Machine(m.name, Resources(0.0, m.capacity.cpu, m.capacity.mem), m.gpu_type)
        for m in snapshot.machines
    )
    if not any(m.capacity.gpu > 0 for m in seen):
        have = sorted({m.gpu_type or "untyped" for m in snapshot.machines if m.capacity.gpu > 0})
        wanted = gpu_types_text(job.gpu_types)
        raise NeverFitsError(
            f"job {job.job_id!r} asks for GPU type(s) {wanted} and no node has GPUs of "
            f"{'that type' if len(job.gpu_types or ()) == 1 else 'those types'} "
            f"(the cluster has: {', '.join(have) or 'no GPUs'})",
            hint="ask for a GPU type the cluster has (--gpu-type), or none for any",
            context={"field": "gpu_types", "value": wanted, "available": have},
        )
    return replace(snapshot, machines=seen, reservations=())


def _shortfalls(demand: Resources, capacity: Resources) -> int:
    return sum(d > c + 1e-9 for d, c in zip(demand.as_tuple(), capacity.as_tuple(), strict=True))


def _packs(job: JobRequest, snapshot: ClusterSnapshot, workers: int, ps: int) -> bool:
    """First-fit of the tasks onto empty machines (PSs first): a sufficient check."""
    room = [list(m.capacity.as_tuple()) for m in snapshot.machines]
    tasks = [job.ps.as_tuple()] * ps + [job.worker.as_tuple()] * workers
    for demand in tasks:
        for r in room:
            if all(d <= c + 1e-9 for d, c in zip(demand, r, strict=True)):
                for i, d in enumerate(demand):
                    r[i] -= d
                break
        else:
            return False
    return True
