"""Which nodes a job's GPU-using tasks may run on: the one rule every policy shares.

A node is **eligible** for a job when the job names no GPU types (``gpu_types is None``)
or the node's GPU type is one of them (exact match, as Slurm matches ``gpu:TYPE``); an
untyped node is never eligible for a job that names types. The rule binds only the tasks
that use GPUs: a task with no GPU demand (typically a PS) may run on any node. Policies
apply it by giving an ineligible node no GPU room for that job (:func:`gpu_mask`), so any
task with a GPU demand cannot go there and the other tasks are unaffected. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .cluster import ClusterSnapshot, Machine
from .job import JobRequest

#: A GPU type name as Slurm's gres.conf takes it (``Type=``) and an ``#SBATCH`` line can
#: carry it unquoted: letters, digits, ``_ . -``, at most 64 characters.
GPU_TYPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def parse_gpu_types(text: str, separator: str = ",") -> frozenset[str] | None:
    """``"v100,p100"`` -> ``{"v100", "p100"}``; ``""`` or ``"any"`` -> None (any type).
    Raises ValueError naming the first bad name."""
    words = [w.strip() for w in text.split(separator)]
    if not any(words) or (len(words) == 1 and words[0].lower() == "any"):
        return None
    for w in words:
        if not GPU_TYPE_NAME.fullmatch(w):
            raise ValueError(
                f"{w!r} is not a GPU type name (letters, digits, '_', '.', '-'; "
                f"types separated by {separator!r})"
            )
    return frozenset(words)


def type_allowed(gpu_types: frozenset[str] | None, gpu_type: str | None) -> bool:
    """Whether a node of type ``gpu_type`` may hold GPU tasks asking for ``gpu_types``."""
    return gpu_types is None or (gpu_type is not None and gpu_type in gpu_types)


def restricts(job: JobRequest) -> bool:
    """Whether the rule can exclude anything for ``job``: it names types and some of its
    tasks use GPUs."""
    return job.gpu_types is not None and (job.worker.gpu > 0 or job.ps.gpu > 0)


def _machines(cluster: ClusterSnapshot | Sequence[Machine]) -> Sequence[Machine]:
    return cluster.machines if isinstance(cluster, ClusterSnapshot) else cluster


def gpu_mask(job: JobRequest, cluster: ClusterSnapshot | Sequence[Machine]) -> tuple[bool, ...]:
    """Per machine (in order), whether the job's GPU tasks may run there."""
    return tuple(type_allowed(job.gpu_types, m.gpu_type) for m in _machines(cluster))


def eligible_nodes(
    job: JobRequest, cluster: ClusterSnapshot | Sequence[Machine]
) -> tuple[str, ...]:
    """Names of the nodes (in cluster order) where the job's GPU-using tasks may run."""
    return tuple(m.name for m in _machines(cluster) if type_allowed(job.gpu_types, m.gpu_type))


def ineligible_use(
    job: JobRequest,
    cluster: ClusterSnapshot | Sequence[Machine],
    workers_on: Sequence[str],
    ps_on: Sequence[str],
) -> tuple[str, ...]:
    """Nodes among ``workers_on`` / ``ps_on`` (names holding at least one such task) where
    a GPU-using task of the job sits although the node is not eligible: sorted, unique."""
    if not restricts(job):
        return ()
    ok = set(eligible_nodes(job, cluster))
    bad: set[str] = set()
    if job.worker.gpu > 0:
        bad.update(n for n in workers_on if n not in ok)
    if job.ps.gpu > 0:
        bad.update(n for n in ps_on if n not in ok)
    return tuple(sorted(bad))


def gpu_types_text(gpu_types: frozenset[str] | None) -> str:
    """The types as users write them: ``v100,p100`` sorted, or ``any``."""
    return "any" if gpu_types is None else ",".join(sorted(gpu_types))
