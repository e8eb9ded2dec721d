r"""Ring all-reduce jobs (issue 31): the time of one synchronous data-parallel step (pure).

An ``allreduce`` job has no parameter server. Its n workers (ranks) compute a mini-batch
each, then sum their gradients with a ring all-reduce. For a layout of g_j workers on node
j (k nodes, n = Σ g_j, g = max_j g_j), two readings (``AllreduceParams.ring``):

* **hierarchical** (the default; the two-level ring of NCCL and Horovod: Jia et al. 2018,
  "Highly Scalable Deep Learning Training System with Mixed-Precision: Training ImageNet
  in Four Minutes", arXiv:1807.11205; Sergeev and Del Balso 2018, "Horovod: fast and easy
  distributed deep learning in TensorFlow", arXiv:1802.05799): a reduce-scatter inside
  every node, a ring all-reduce of each shard across the k nodes, an all-gather inside
  every node. Each phase is the bandwidth-optimal ring of Patarasuk and Yuan (JPDC 69(2),
  2009) over its own links, and the node with the most ranks finishes its intra-node
  phases last:

      t_allreduce = 2 (g − 1)/g · M / B_intra + 2 (k − 1)/k · M / B_net
                    + 2 (g − 1 + k − 1) · α

* **flat**: one ring through all n ranks, every step bound by the slowest link it uses
  (the network for k > 1, the intra-node bus for k = 1):

      t_allreduce = 2 (n − 1)/n · M / B_min + 2 (n − 1) · α

Both agree for k = 1 and for one rank per node. Then

    T_step = τ + t_allreduce,        rate = n · Δ / T_step   (mini-batches per slot)

with M the gradient size (= the profile's model size g, MB), τ the compute time of one
mini-batch on one worker, α the latency of one ring step. For fixed n and k the
hierarchical time grows with g, so equal per-node counts are best; with equal counts
(g = n/k) and α = 0, k₁ < k₂ nodes beat k₂ exactly when B_intra / B_net > k₁·k₂ / n
(docs/formulation.md §18).

The rate is in the PS model's units (MODEL.md §2: mini-batches, summed over workers), so
the same workload V serves both architectures. Bandwidths default to the job profile's own
measured figures (``b_in`` = :attr:`JobProfile.effective_bw_in`, ``b_ex``), so that a
calibrated profile (``model/calibration.py``) calibrates the ring too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Protocol

from .profile import JobProfile

#: α: seconds of latency per ring step (docs/formulation.md §18, a **choice**: about one
#: small-message round over TCP on a data-centre network).
DEFAULT_LATENCY_S = 50e-6

#: Workers per node the ring spans, one entry per node used (each ≥ 1).
Layout = tuple[int, ...]


class Launcher(StrEnum):
    """How an allreduce job's ranks are started (``--launcher``; docs/user-guide.md)."""

    TORCHRUN = "torchrun"  # one torchrun per node, rendezvous (c10d) on the first node
    SRUN = "srun"  # one task per rank; RANK, LOCAL_RANK, WORLD_SIZE … from Slurm's


#: ``--launcher`` when an allreduce job does not say.
DEFAULT_LAUNCHER = Launcher.TORCHRUN


class RingKind(StrEnum):
    """Which all-reduce the time model reads (module docstring)."""

    HIERARCHICAL = "hierarchical"  # intra-node reduce-scatter, inter-node ring, all-gather
    FLAT = "flat"  # one ring through every rank, bound by its slowest link


class _HasWorkers(Protocol):
    """What :func:`layout_of` reads of a slot plan (no import of :mod:`.decision`)."""

    @property
    def workers(self) -> tuple[tuple[str, int], ...]: ...


class LinkKind(StrEnum):
    """The kind of the slowest link a ring uses."""

    NONE = "none"  # one worker: no ring, nothing to send
    INTRA_NODE = "intra-node"
    NETWORK = "network"


@dataclass(frozen=True, slots=True)
class AllreduceParams:
    """The link parameters of the ring (MB/s, seconds). ``None`` = the job profile's own
    bandwidth: ``intra_node_mbps`` its b_in (clamped to ≥ b_ex), ``network_mbps`` its
    b_ex."""

    intra_node_mbps: float | None = None
    network_mbps: float | None = None
    latency_s: float = DEFAULT_LATENCY_S
    ring: RingKind = RingKind.HIERARCHICAL

    def __post_init__(self) -> None:
        for label, value in (("intra-node", self.intra_node_mbps), ("network", self.network_mbps)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{label} bandwidth must be a finite number > 0, got {value!r}")
        if not (self.latency_s >= 0 and math.isfinite(self.latency_s)):
            raise ValueError(f"latency must be a finite number >= 0, got {self.latency_s!r}")

    def intra_node(self, profile: JobProfile) -> float:
        return profile.effective_bw_in if self.intra_node_mbps is None else self.intra_node_mbps

    def network(self, profile: JobProfile) -> float:
        return profile.bw_ex_mbps if self.network_mbps is None else self.network_mbps


DEFAULT_PARAMS = AllreduceParams()


def checked_layout(layout: Sequence[int]) -> Layout:
    """``layout`` as a tuple of positive worker counts; ValueError otherwise."""
    counts = tuple(layout)
    if not counts or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in counts):
        raise ValueError(
            f"a layout is one whole number >= 1 of workers per node used, got {counts!r}"
        )
    return counts


def layout_of(plan: _HasWorkers) -> Layout:
    """The layout of a slot plan: its per-node worker counts, in the plan's node order."""
    return checked_layout([count for _, count in plan.workers if count > 0])


def slowest_link(
    layout: Sequence[int], profile: JobProfile, params: AllreduceParams = DEFAULT_PARAMS
) -> tuple[LinkKind, float | None]:
    """The slowest link the ring over ``layout`` uses and its bandwidth (MB/s); ``(NONE,
    None)`` for one worker. Ties go to the network (the link shared with other jobs)."""
    counts = checked_layout(layout)
    links: list[tuple[float, int, LinkKind]] = []
    if len(counts) > 1:
        links.append((params.network(profile), 0, LinkKind.NETWORK))
    if any(c > 1 for c in counts):
        links.append((params.intra_node(profile), 1, LinkKind.INTRA_NODE))
    if not links:
        return LinkKind.NONE, None
    bandwidth, _, kind = min(links)
    return kind, bandwidth


def allreduce_seconds(
    layout: Sequence[int], profile: JobProfile, params: AllreduceParams = DEFAULT_PARAMS
) -> float:
    """t_allreduce of the layout (module docstring; 0 for one worker): hierarchical,
    2(g − 1)/g · M/B_intra + 2(k − 1)/k · M/B_net + 2(g − 1 + k − 1)·α, or flat,
    2(n − 1)/n · M/B_min + 2(n − 1)·α."""
    counts = checked_layout(layout)
    n = sum(counts)
    if n == 1:
        return 0.0
    m = profile.model_size_mb
    if params.ring is RingKind.FLAT:
        _, bandwidth = slowest_link(counts, profile, params)
        assert bandwidth is not None  # n ≥ 2: some link
        return 2.0 * (n - 1) / n * m / bandwidth + 2.0 * (n - 1) * params.latency_s
    g, k = max(counts), len(counts)
    intra = 2.0 * (g - 1) / g * m / params.intra_node(profile)
    inter = 2.0 * (k - 1) / k * m / params.network(profile)
    return intra + inter + 2.0 * (g - 1 + k - 1) * params.latency_s


def step_seconds(
    layout: Sequence[int], profile: JobProfile, params: AllreduceParams = DEFAULT_PARAMS
) -> float:
    """T_step = τ + t_allreduce: one synchronous step (every worker one mini-batch)."""
    return profile.step_time_s + allreduce_seconds(layout, profile, params)


def rate(
    layout: Sequence[int],
    profile: JobProfile,
    slot_seconds: float,
    params: AllreduceParams = DEFAULT_PARAMS,
) -> float:
    """Work per slot of ``slot_seconds`` (mini-batches): n · Δ / T_step."""
    return sum(checked_layout(layout)) * slot_seconds / step_seconds(layout, profile, params)


def best_rate(
    max_workers: int,
    profile: JobProfile,
    slot_seconds: float,
    params: AllreduceParams = DEFAULT_PARAMS,
) -> float:
    """An upper bound on the rate of every layout of 1 … ``max_workers`` workers, on any
    nodes (exact when α = 0 and B_intra ≥ B_net: the n workers on one node).

    A layout of n workers with g on its fullest node and k nodes has g·k ≥ n, so
    (1 − 1/g) + (1 − 1/k) ≥ 1 − 1/(g·k) ≥ 1 − 1/n and g + k ≥ ⌈2√n⌉ (the least g + k with
    g·k ≥ n): hierarchical, T_step ≥ τ + 2(1 − 1/n)·M/B_fast + 2(⌈2√n⌉ − 2)·α with B_fast
    the faster of the two links; flat, T_step ≥ τ + 2(1 − 1/n)·M/B_fast + 2(n − 1)·α. The
    bound is the best n·Δ/T_step of that over n = 1 … ``max_workers``."""
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    return _best_rate(max_workers, profile, slot_seconds, params)


@lru_cache(maxsize=4096)
def _best_rate(
    max_workers: int, profile: JobProfile, slot_seconds: float, params: AllreduceParams
) -> float:
    fast = max(params.intra_node(profile), params.network(profile))
    m, alpha = profile.model_size_mb, params.latency_s
    best = 0.0
    for n in range(1, max_workers + 1):
        steps = n - 1 if params.ring is RingKind.FLAT else math.ceil(2 * math.sqrt(n) - 1e-9) - 2
        t = profile.step_time_s + 2.0 * (n - 1) / n * m / fast + 2.0 * steps * alpha
        best = max(best, n * slot_seconds / t)
    return best


def worker_rate_floors(
    max_workers: int,
    profile: JobProfile,
    slot_seconds: float,
    params: AllreduceParams = DEFAULT_PARAMS,
) -> tuple[float, float]:
    """(ν_in, ν_ex): the lowest per-worker rate of any layout of at most ``max_workers``
    workers on one node, and on two or more nodes (ν_ex ≤ ν_in). A layout of n workers
    runs at least n·ν of its kind, so a linear program that counts workers at these
    rates never promises work the exact formula does not give (docs/formulation.md §18).

    One node: T_step grows with n, so the floor is n = N's. Several nodes: a layout with g
    on its fullest node spans k ≤ N − g + 1 nodes (one worker at least on each other
    node), and T_step grows with g and with k, so the floor is the largest T_step over
    g = 1 … N − 1 at k = N − g + 1."""
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    return _floors(max_workers, profile, slot_seconds, params)


@lru_cache(maxsize=4096)
def _floors(
    max_workers: int, profile: JobProfile, slot_seconds: float, params: AllreduceParams
) -> tuple[float, float]:
    n = max_workers
    nu_in = slot_seconds / step_seconds((n,), profile, params)
    if n == 1:
        return nu_in, nu_in
    worst = max(
        step_seconds((g,) + (1,) * (n - g), profile, params) for g in range(1, n)
    )  # g on one node, one on each of the N − g others: k = N − g + 1
    return nu_in, min(nu_in, slot_seconds / worst)


@dataclass(frozen=True, slots=True)
class RingSummary:
    """What ``explain`` says of an allreduce layout: the ring's slowest link and times."""

    workers: int
    nodes: int
    link: LinkKind
    bandwidth_mbps: float | None
    allreduce_s: float
    step_s: float

    def to_json(self) -> dict[str, object]:
        return {
            "workers": self.workers,
            "nodes": self.nodes,
            "slowest_link": self.link.value,
            "bandwidth_mbps": self.bandwidth_mbps,
            "allreduce_s": self.allreduce_s,
            "step_s": self.step_s,
        }

    def describe(self) -> str:
        """``ring of 6 workers on 2 nodes, slowest link network 91.9 MB/s: step 1.7 s``."""
        where = f"ring of {self.workers} worker(s) on {self.nodes} node(s)"
        if self.bandwidth_mbps is None:
            return f"{where}, no link (one worker): step {self.step_s:.3g} s"
        return (
            f"{where}, slowest link {self.link.value} {self.bandwidth_mbps:.4g} MB/s: "
            f"all-reduce {self.allreduce_s:.3g} s, step {self.step_s:.3g} s"
        )


def ring_summary(
    layout: Sequence[int], profile: JobProfile, params: AllreduceParams = DEFAULT_PARAMS
) -> RingSummary:
    counts = checked_layout(layout)
    kind, bandwidth = slowest_link(counts, profile, params)
    return RingSummary(
        workers=sum(counts),
        nodes=len(counts),
        link=kind,
        bandwidth_mbps=bandwidth,
        allreduce_s=allreduce_seconds(counts, profile, params),
        step_s=step_seconds(counts, profile, params),
    )
