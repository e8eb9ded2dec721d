r"""Ring all-reduce jobs (issue 31): the time of one synchronous data-parallel step (pure).

An ``allreduce`` job has no parameter server. Its n workers (ranks) compute a mini-batch
each, then sum their gradients with the bandwidth-optimal ring all-reduce (Patarasuk and
Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 69(2),
2009; Thakur, Rabenseifner and Gropp, "Optimization of collective communication operations
in MPICH", IJHPCA 19(1), 2005): a reduce-scatter and an all-gather of n − 1 steps each,
every step sending M / n bytes over every ring link at once. For a layout of g_j workers on
node j (k nodes, n = Σ g_j):

    t_allreduce = 2 (n − 1)/n · M / B_min + 2 (n − 1) · α
    T_step      = τ + t_allreduce
    rate        = n · Δ / T_step          (mini-batches per slot of Δ seconds)

with M the gradient size (= the model size g of the profile, MB), τ the compute time of one
mini-batch on one worker, α the latency of one ring step, and B_min the slowest link the
ring uses: the node's GPU interconnect (intra-node) between two ranks of one node, the
network between nodes. The ring visits the nodes in order, so it crosses each node
boundary twice (once in, once out) whatever the g_j: a node's network link carries one
flow each way and is not shared by the node's ranks. Hence B_min is

* no link at all for n = 1 (t_allreduce = 0);
* the intra-node bandwidth for k = 1;
* the network bandwidth for k > 1 when every node has one rank; the smaller of the two
  when some node also has two or more.

The rate is in the PS model's units (MODEL.md §2: mini-batches, summed over workers), so
the same workload V serves both architectures. Bandwidths default to the job profile's own
measured figures (``b_in`` = :attr:`JobProfile.effective_bw_in`, ``b_ex``), so that a
calibrated profile (``model/calibration.py``) calibrates the ring too; docs/formulation.md
§18 has the defaults, the assumptions and hand-computed values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only attributes are read: no import cycle with .job
    from .decision import SlotPlan
    from .job import JobProfile

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


def layout_of(plan: SlotPlan) -> Layout:
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
    """t_allreduce = 2 (n − 1)/n · M / B_min + 2 (n − 1) · α (0 for one worker)."""
    n = sum(checked_layout(layout))
    _, bandwidth = slowest_link(layout, profile, params)
    if bandwidth is None:
        return 0.0
    return 2.0 * (n - 1) / n * profile.model_size_mb / bandwidth + 2.0 * (n - 1) * params.latency_s


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
    """The highest rate of any layout of 1 … ``max_workers`` workers (a bound: the workers
    on one node, at the faster of the two bandwidths, whether or not a node holds them).

    With c = 2M/B and a = 2α, n ↦ n / (τ + c(n − 1)/n + a(n − 1)) has derivative of the sign
    of (τ + c − a)·n − 2c: it falls and then rises (or only falls), so its maximum over
    1 … N is at n = 1 or n = N."""
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    fastest = AllreduceParams(
        intra_node_mbps=max(params.intra_node(profile), params.network(profile)),
        latency_s=params.latency_s,
    )
    return max(rate((n,), profile, slot_seconds, fastest) for n in {1, max_workers})


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
