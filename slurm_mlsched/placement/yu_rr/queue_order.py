r"""The order of the pending queue under late binding (docs/formulation.md §14.2; MODEL.md §4b).

Smallest service first, with linear aging. Job i's **service** S_i is the machine-time it
needs, in machine-seconds, whatever its width:

    S_i = share_i · V_i · θ_in,i        share_i = max_r α_i[r] / C̄[r]

(V_i θ_in,i is its worker-seconds at the co-located speed, a width-independent measure of
its size; share_i the fraction of the largest machine C̄ one worker takes in its dominant
resource, so on a GPU cluster S_i is GPU-time ÷ GPUs per machine, on a CPU cluster
CPU-time ÷ CPUs per machine). With s_i = a_i·Δ its arrival in seconds, the queue is
sorted by the **key**

    k_i = S_i + γ · s_i                  (ties: arrival slot, then job id)

which is the classic "service minus γ × time waited" priority, S_i − γ(t − s_i), plus the
same γt for every job at time t: the order of two jobs never changes while they wait, so
the key is computed once.

**The unit of γ** (``aging_unit``). γ above is in machines (machine-seconds of service
per second waited). With ``aging_unit = cluster`` (the default) it is γ = γ'·M, γ' the
parameter ``aging`` and M the cluster's size in its largest machines (:func:`cluster_size`),
so the key divided by M is S_i/M + γ'·s_i: the job's service as time on the whole cluster,
plus γ' × its arrival. A job can then be overtaken for S_i/(γ'M) seconds, 1/γ' times the
time its work takes on the whole cluster, on any cluster: the same patience, in the
cluster's own time, on 6 machines as on 64. With γ in machines (``machine``, the rule
until 2026-12-05) a job's window S_i/γ does not shrink with the cluster's speed, so a
small cluster under load turns into first come, first served (docs/formulation.md §14.2).

**Bound on overtaking (proof).** A job j that arrives after i (s_j > s_i) is ahead of i
only if k_j < k_i, i.e. γ(s_j − s_i) < S_i − S_j ≤ S_i, so s_j < s_i + S_i / γ. No job
arriving later than S_i/γ seconds after i is ever put ahead of it: from then on, the jobs
ahead of i are a fixed finite set, and each, once it is the first waiting job, holds a
plan that later jobs may not delay (``reserve_depth`` ≥ 1) and whose end never moves
later (the re-plan keeps its previous plan when a new one would end later,
:mod:`.late_binding`). So i waits at most

    S_i/γ  +  Σ_{j ahead of i at s_i + S_i/γ} (its start bound)  + …

— concretely, each job ahead starts no later than its first plan's end as the head, which
is at most (the longest remaining run of the jobs running then) + its own duration after
it became the head. ``tests/sim/test_late_binding.py`` checks this against an adversarial
stream of small jobs. γ = 0 gives pure smallest-service-first, which has no such bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...model import JobRequest, Machine
from ...model.speed import worker_thetas


def largest_capacity(machines: Sequence[Machine]) -> tuple[float, float, float]:
    """C̄[r]: the largest capacity of each resource over the machines."""
    caps = [m.capacity.as_tuple() for m in machines]
    return (
        max((c[0] for c in caps), default=0.0),
        max((c[1] for c in caps), default=0.0),
        max((c[2] for c in caps), default=0.0),
    )


def cluster_size(machines: Sequence[Machine]) -> float:
    """M: how many of its largest machine the cluster amounts to, in its scarcest resource,
    min_r Σ_h C_h[r] / C̄[r] over the resources some machine has (the machine count on a
    cluster of equal machines; 6.5 on 4 × 8 + 1 × 4 + 16 × 1 GPUs). 1 for no machines."""
    largest = largest_capacity(machines)
    totals = [sum(m.capacity.as_tuple()[r] for m in machines) for r in range(3)]
    sizes = [t / c for t, c in zip(totals, largest, strict=True) if c > 0]
    return min(sizes, default=1.0) or 1.0


def aging_rate(machines: Sequence[Machine], aging: float, unit: str) -> float:
    """γ of the key in machine-seconds per second: ``aging`` × :func:`cluster_size` with
    ``unit`` ``cluster``, ``aging`` itself with ``machine`` (module docstring)."""
    if unit == "machine":
        return aging
    if unit != "cluster":
        raise ValueError(f"aging_unit {unit!r} is not 'cluster' or 'machine'")
    return aging * cluster_size(machines)


def worker_share(job: JobRequest, largest: tuple[float, float, float]) -> float:
    """share_i = max_r α_i[r] / C̄[r] (resources no machine has are left out)."""
    return max(
        (a / c for a, c in zip(job.worker.as_tuple(), largest, strict=True) if c > 0),
        default=0.0,
    )


def service_seconds(job: JobRequest, largest: tuple[float, float, float]) -> float:
    """S_i = share_i · V_i · θ_in,i (machine-seconds)."""
    return worker_share(job, largest) * job.workload * worker_thetas(job, 1.0)[0]


def queue_key(
    job: JobRequest, slot_seconds: float, largest: tuple[float, float, float], aging: float
) -> tuple[float, int, str]:
    """k_i = S_i + γ·a_i·Δ, then arrival slot, then job id (module docstring); ``aging``
    is γ in machines (:func:`aging_rate` of the parameters)."""
    key = service_seconds(job, largest) + aging * job.arrival_slot * slot_seconds
    return (key, job.arrival_slot, job.job_id)


def keyer(
    machines: Sequence[Machine], slot_seconds: float, aging: float, unit: str
) -> Callable[[JobRequest], tuple[float, int, str]]:
    """:func:`queue_key` on these machines with the parameters' ``aging`` in ``unit``
    (:func:`aging_rate`): what every queue order reads, built once per call."""
    largest = largest_capacity(machines)
    rate = aging_rate(machines, aging, unit)
    return lambda job: queue_key(job, slot_seconds, largest, rate)


def overtaking_window_s(
    job: JobRequest, largest: tuple[float, float, float], aging: float
) -> float:
    """S_i / γ: later arrivals after this many seconds are never put ahead of ``job``
    (``aging``: γ in machines, :func:`aging_rate`)."""
    if aging <= 0:
        return float("inf")
    return service_seconds(job, largest) / aging
