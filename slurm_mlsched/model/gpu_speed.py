"""GPU speed by type: a named table of throughput factors and the rule that gives a job
its one rate (pure; docs/formulation.md §17).

**The table.** Per GPU type κ a factor f_κ > 0, the type's throughput relative to the
reference GPU the job's speed profile was measured on (1.0 = as the profile says, 2.0 =
twice as fast). A type the table does not list runs at 1.0, and so does an untyped node.
A machine carries its factor (``Machine.gpu_speed``); :func:`with_gpu_speed` sets it from
the table by the machine's type. Where the table comes from: a cluster file's top-level
``gpu_speed:``, the site configuration's ``[gpu_speed]`` (live planning) and ``mlsub
replay --gpu-speed`` (docs/user-guide.md, docs/replay-guide.md).

**The rule (slowest eligible type).** A job is planned and simulated at one factor,

    f_i = min { f(h) : h has GPUs and the job's GPU tasks may run on h (eligibility) },

the slowest machine it may be given (a job that names no type: the slowest of the whole
cluster, untyped nodes at 1.0). A job whose workers use no GPU, or that no machine can
hold (it never fits), keeps 1.0. The rule is conservative: a run on faster nodes trains
at least as fast as planned; it is exact when the job runs at that rate, which is what
the simulator assumes. A rate that depends on the chosen nodes (the slowest node of the
run) is not modelled: it is a min over the chosen machines, not linear in the counts the
programs decide.

**The scaling** (:func:`at_speed`). A ``ps`` job's time per mini-batch per worker becomes
θ/f in both modes (the profile scaled as a calibration scales it, by 1/f: τ/f, b·f, B_ex·f,
so PS sizing ρ = b_ex/B_ex is unchanged); an ``allreduce`` job's compute time becomes τ/f
and its ring's links stay as they are (they are the network's and the node bus's).
:func:`effective_request` applies it where a job meets a cluster (``sim.admit`` for a
replay, ``services.plan.plan_job`` live); the request records f (``JobRequest.gpu_speed``)
and is never scaled twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from .calibration import scaled
from .cluster import ClusterSnapshot, Machine
from .eligibility import GPU_TYPE_NAME, type_allowed
from .job import JobRequest

#: A speed table as the model keeps it: (type, factor) pairs sorted by type; () = every
#: type at 1.0.
GpuSpeeds = tuple[tuple[str, float], ...]

#: The largest factor a table may give (a typo guard: no GPU is 1000× another).
MAX_SPEED = 1000.0


def check_factor(gpu_type: str, factor: object) -> float:
    """``factor`` as a float; ValueError naming the type unless 0 < f ≤ :data:`MAX_SPEED`."""
    if isinstance(factor, bool) or not isinstance(factor, int | float | str):
        raise ValueError(f"the factor of {gpu_type!r} must be a number, got {factor!r}")
    try:
        value = float(factor)
    except ValueError:
        raise ValueError(f"the factor of {gpu_type!r} must be a number, got {factor!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_SPEED):
        raise ValueError(
            f"the factor of {gpu_type!r} must be a number > 0 and <= {MAX_SPEED:g}, got {factor!r}"
        )
    return value


def speed_table(entries: Mapping[Any, Any] | Iterable[tuple[object, object]]) -> GpuSpeeds:
    """The checked table of ``entries`` (type → factor). ValueError naming the first bad
    type name, factor or repeated type."""
    pairs = entries.items() if isinstance(entries, Mapping) else entries
    out: dict[str, float] = {}
    for raw_type, factor in pairs:
        name = raw_type.strip() if isinstance(raw_type, str) else ""
        if not GPU_TYPE_NAME.fullmatch(name):
            raise ValueError(
                f"{raw_type!r} is not a GPU type name (letters, digits, '_', '.', '-')"
            )
        if name in out:
            raise ValueError(f"GPU type {name!r} is given twice")
        out[name] = check_factor(name, factor)
    return tuple(sorted(out.items()))


def parse_speed_text(text: str) -> GpuSpeeds:
    """``"a100=2,t4=0.5"`` → the table; ``""`` → () (every type at 1.0). ValueError naming
    the bad entry."""
    pairs: list[tuple[object, object]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, factor = item.partition("=")
        if not sep:
            raise ValueError(f"{item.strip()!r} is not TYPE=FACTOR (e.g. a100=2)")
        pairs.append((name, factor.strip()))
    return speed_table(pairs)


def speed_text(table: GpuSpeeds) -> str:
    """The table as :func:`parse_speed_text` reads it (``a100=2,t4=0.5``)."""
    return ",".join(f"{name}={factor:g}" for name, factor in table)


def with_gpu_speed(machines: Iterable[Machine], table: GpuSpeeds) -> tuple[Machine, ...]:
    """``machines`` with each one's factor from ``table`` by its GPU type (1.0 for an
    untyped machine or a type the table does not list)."""
    factors = dict(table)
    return tuple(
        replace(m, gpu_speed=factors.get(m.gpu_type, 1.0) if m.gpu_type is not None else 1.0)
        for m in machines
    )


def slowest_machine(job: JobRequest, cluster: ClusterSnapshot) -> Machine | None:
    """The machine whose factor the rule gives ``job`` (the first of the slowest, in
    cluster order), or None when the rule gives 1.0 without one (no GPU workers, no
    machine the job may use)."""
    if job.worker.gpu <= 0:
        return None
    allowed = [
        m
        for m in cluster.machines
        if m.capacity.gpu > 0 and type_allowed(job.gpu_types, m.gpu_type)
    ]
    return min(allowed, key=lambda m: m.gpu_speed, default=None)


def job_speed(job: JobRequest, cluster: ClusterSnapshot) -> float:
    """f_i of the rule (module docstring)."""
    slowest = slowest_machine(job, cluster)
    return 1.0 if slowest is None else slowest.gpu_speed


def at_speed(job: JobRequest, factor: float) -> JobRequest:
    """``job`` with its profile at ``factor`` (module docstring) and the factor recorded."""
    if factor == 1.0:
        return job
    if job.is_allreduce:
        profile = replace(job.profile, step_time_s=job.profile.step_time_s / factor)
    else:
        profile = scaled(job.profile, 1.0 / factor)
    return replace(job, profile=profile, gpu_speed=factor)


def effective_request(job: JobRequest, cluster: ClusterSnapshot) -> JobRequest:
    """``job`` at the rate it is planned and simulated at on ``cluster``: its profile at
    the rule's factor. A request that already carries a factor (``gpu_speed`` ≠ 1: it met
    a cluster before, e.g. a stored request re-planned) is returned as it is."""
    if job.gpu_speed != 1.0:
        return job
    return at_speed(job, job_speed(job, cluster))
