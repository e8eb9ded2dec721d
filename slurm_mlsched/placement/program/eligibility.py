"""The GPU-type rule on room matrices (docs/formulation.md §17; pure numpy).

A job that names GPU types sees no GPU room on the nodes of other types: every policy
masks the GPU column of the room it lays the job's tasks on (:func:`masked`), so a task
with a GPU demand never goes to an ineligible node and the tasks without one (PSs) are
unaffected; the LPs get their GPU-task variables on ineligible nodes fixed at 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ...model import JobRequest, Machine, restricts, type_allowed

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

GPU = 0  # the GPU column of every (H, 3) array (model.resources.RESOURCE_NAMES)

#: the last (types, machines) asked for and its mask (machines compared by identity)
_LAST: list[tuple[frozenset[str], Sequence[Machine], BoolArray]] = []


def allowed(job: JobRequest, machines: Sequence[Machine]) -> BoolArray | None:
    """Per machine, whether the job's GPU tasks may run there; None = every machine (the
    job names no types, or none of its tasks uses a GPU)."""
    if not restricts(job) or job.gpu_types is None:
        return None
    if _LAST and _LAST[-1][0] == job.gpu_types and _LAST[-1][1] is machines:
        return _LAST[-1][2]
    ok = np.fromiter(
        (type_allowed(job.gpu_types, m.gpu_type) for m in machines), bool, len(machines)
    )
    ok.flags.writeable = False
    _LAST[:] = [(job.gpu_types, machines, ok)]
    return ok


def allowed_by_types(job: JobRequest, gpu_types: Sequence[str | None]) -> BoolArray | None:
    """:func:`allowed` from the machines' GPU types alone (a residual keeps only those)."""
    if not restricts(job) or job.gpu_types is None:
        return None
    wanted = job.gpu_types
    return np.fromiter((type_allowed(wanted, t) for t in gpu_types), bool, len(gpu_types))


def masked(room: FloatArray, ok: BoolArray | None) -> FloatArray:
    """``room`` (H, 3, …) with no GPU room on the machines ``ok`` excludes (a copy; the
    same array when nothing is excluded)."""
    if ok is None or bool(ok.all()):
        return room
    out = np.array(room, dtype=np.float64, copy=True)
    out[~ok, GPU] = 0.0
    return out


def any_typed(machines: Sequence[Machine]) -> bool:
    """Whether some machine has a GPU type (a cluster without types needs no masks)."""
    return any(m.gpu_type is not None for m in machines)
