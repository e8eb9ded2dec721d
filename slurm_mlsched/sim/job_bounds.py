r"""Each job's own limits on a cluster (pure; docs/formulation.md §15.2–15.3): its widest
shapes, its fewest slots d_i and fastest rate R_i (Lemma 1), the least of each resource it
holds per mini-batch trained, c_i^r (Lemma 2), and the least it holds to train at a given
rate, its resource curve h_i (Lemma 2′). The rank bound (:mod:`.bounds`) and the pooled LP
with rate caps (:mod:`.capped_bound`) are built from them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..model import ClusterSnapshot, JobRequest
from ..model.speed import upper_rate, upper_worker_rate
from ..placement.program.eligibility import allowed, masked
from ..placement.program.widths import Widths, max_rate, widths

FloatArray = npt.NDArray[np.float64]

#: Relative slack for work a schedule may leave uncovered in floating point
#: (``placement.verify`` accepts V·(1 − 10⁻⁹) − 10⁻⁶): every rounding up here gives way
#: by this much, so a bound never exceeds a schedule that the checks accept.
SLACK = 1e-8

__all__ = [
    "CURVE_PIECES",
    "NO_POOLS",
    "SLACK",
    "NodePools",
    "Piece",
    "Widths",
    "cost_per_batch",
    "fewest_slots",
    "job_widths",
    "max_rate",
    "node_pools",
    "resource_curve",
    "widths",
]


def job_widths(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> list[Widths]:
    """Each job's :func:`widths` on the machines it may use: a job that names GPU types has
    only the GPUs of those types (the rule every policy and the simulator's checks apply,
    :func:`.eligibility.allowed` and :func:`.eligibility.masked`; docs/formulation.md
    §17), so its widest shapes, fewest slots and resource curve are counted there (Lemma 1
    under the type rule)."""
    capacity = np.array([m.capacity.as_tuple() for m in cluster.machines], dtype=np.float64)
    capacity = capacity.reshape(-1, 3)
    return [widths(j, masked(capacity, allowed(j, cluster.machines))) for j in jobs]


def fewest_slots(job: JobRequest, w: Widths, slot_seconds: float) -> int:
    """d_i = ⌈V / R_i⌉ ≥ 1, rounded up with :data:`SLACK`."""
    rate = max_rate(job, w, slot_seconds)
    if rate <= 0:  # never runs on this cluster (not admitted): the weakest true bound
        return 1
    runs = job.workload / rate
    return max(1, math.ceil(runs * (1 - SLACK) - 1e-9))


def cost_per_batch(job: JobRequest, w: Widths, slot_seconds: float) -> tuple[float, ...]:
    """c_i^r: the least of resource r held per mini-batch trained, over the modes the job
    can run in (module docstring), per r in (gpu, cpu, mem)."""
    alpha, beta = job.worker.as_tuple(), job.ps.as_tuple()
    if job.is_allreduce:  # no PS; a worker trains at most Δ/τ per slot in any layout
        if max(w.colocated, w.distributed) < 1:
            return (0.0, 0.0, 0.0)
        nu = upper_worker_rate(job, slot_seconds)
        return tuple(a / nu for a in alpha)
    options: list[tuple[float, ...]] = []
    if w.colocated >= 1:
        nu = job.profile.nu_in(slot_seconds)
        options.append(tuple((a + b / w.colocated) / nu for a, b in zip(alpha, beta, strict=True)))
    if w.distributed >= 1:
        nu = job.profile.nu_ex(slot_seconds)
        ps_share = max(job.profile.ps_per_worker * (1 - SLACK), 1.0 / w.distributed)
        options.append(tuple((a + b * ps_share) / nu for a, b in zip(alpha, beta, strict=True)))
    if not options:
        return (0.0, 0.0, 0.0)
    return tuple(min(o[r] for o in options) for r in range(3))


#: Most pieces of a job's resource curve (:func:`resource_curve`); a hull with more edges
#: keeps this many of its supporting lines (their maximum stays below the hull).
CURVE_PIECES = 6


@dataclass(frozen=True)
class Piece:
    """One piece of a job's resource curve: ``rate`` more mini-batches per slot, each
    holding ``cost`` of (gpu, cpu, mem) and then of each GPU pool of :class:`NodePools`
    (none when the curve was built without pools)."""

    rate: float
    cost: tuple[float, ...]


@dataclass(frozen=True)
class NodePools:
    r"""GPU pools by node size (docs/formulation.md §15.3, Lemma 2″): pool k holds the GPUs
    of the machines with at least ``least[k]`` GPUs, one pool per GPU count above the
    smallest (a cluster of one node size has none). A job's shape holds at least so much
    of pool k: a co-located shape of g GPUs, g of it when g exceeds ``below_max[k]`` (the
    most GPUs a machine outside the pool has: no such machine holds it); a distributed
    one, all its workers' GPUs when one worker's exceed ``below_max[k]``, else what the
    machines outside the pool (``below_total[k]`` GPUs) cannot hold."""

    least: tuple[float, ...]
    total: tuple[float, ...]  # G_{≥k}: the pool's GPUs
    below_total: tuple[float, ...]  # GPUs of the machines outside it
    below_max: tuple[float, ...]  # the most GPUs one machine outside it has

    def __len__(self) -> int:
        return len(self.least)

    def members(self, capacity: FloatArray) -> npt.NDArray[np.bool_]:
        """(pools, machines): which machines of ``capacity`` (H, 3) each pool holds."""
        gpus = np.asarray(capacity, dtype=np.float64).reshape(-1, 3)[:, 0]
        return np.array([gpus >= k - 1e-9 for k in self.least], dtype=bool).reshape(
            len(self), len(gpus)
        )

    def colocated(self, gpus: float) -> tuple[float, ...]:
        """Least held of each pool by ``gpus`` GPUs on one machine."""
        return tuple(gpus if gpus > m + 1e-9 else 0.0 for m in self.below_max)

    def spread(self, per_worker: float, workers: float, rest: float) -> tuple[float, ...]:
        """Least held of each pool by ``workers`` workers of ``per_worker`` GPUs each and
        ``rest`` GPUs more (PSs) on any machines."""
        total = per_worker * workers + rest
        return tuple(
            max(per_worker * workers if per_worker > m + 1e-9 else 0.0, total - b, 0.0)
            for m, b in zip(self.below_max, self.below_total, strict=True)
        )


#: No pools: the curve of the pooled cluster alone.
NO_POOLS = NodePools((), (), (), ())


def node_pools(capacity: FloatArray) -> NodePools:
    """:class:`NodePools` of machines of ``capacity`` (H, 3)."""
    gpus = np.asarray(capacity, dtype=np.float64).reshape(-1, 3)[:, 0]
    sizes = sorted({float(g) for g in gpus if g > 0})
    least, total, below_total, below_max = [], [], [], []
    for k in sizes[1:]:
        inside = gpus >= k - 1e-9
        least.append(k)
        total.append(float(gpus[inside].sum()))
        below_total.append(float(gpus[~inside].sum()))
        below_max.append(float(gpus[~inside].max(initial=0.0)))
    return NodePools(tuple(least), tuple(total), tuple(below_total), tuple(below_max))


def _shapes(
    job: JobRequest, w: Widths, slot_seconds: float, pools: NodePools = NO_POOLS
) -> list[tuple[float, ...]]:
    """(rate, gpu, cpu, mem, pool 1, …) no faster and holding no less than some shape of
    each width the job can run at (Lemma 2′, and Lemma 2″ for ``pools``): co-located
    W ≤ w_c workers beside a PS; distributed W ≤ w_d workers and at least max(1, ρ·W)
    PSs; an allreduce job W workers at the best rate of any layout of W (spread, for the
    pools: any layout of W holds at least that)."""
    alpha, beta = job.worker.as_tuple(), job.ps.as_tuple()
    out: list[tuple[float, ...]] = []
    if job.is_allreduce:
        for n in range(1, max(w.colocated, w.distributed) + 1):
            out.append(
                (
                    upper_rate(job, n, slot_seconds),
                    *(n * a for a in alpha),
                    *pools.spread(alpha[0], n, 0.0),
                )
            )
        return out
    nu_in, nu_ex = job.profile.nu_in(slot_seconds), job.profile.nu_ex(slot_seconds)
    for n in range(1, w.colocated + 1):
        held = tuple(n * a + b for a, b in zip(alpha, beta, strict=True))
        out.append((n * nu_in, *held, *pools.colocated(held[0])))
    rho = job.profile.ps_per_worker * (1 - SLACK)
    for n in range(job.min_distributed_workers(), w.distributed + 1):
        ps = max(1.0, rho * n)
        held = tuple(n * a + ps * b for a, b in zip(alpha, beta, strict=True))
        out.append((n * nu_ex, *held, *pools.spread(alpha[0], n, ps * beta[0])))
    return out


def _lower_hull(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The lower convex hull of (0, 0) and ``points`` from the origin to the fastest point
    (the least held among the fastest), as its vertices by rising rate."""
    top = max(p[0] for p in points)
    last = min(p[1] for p in points if p[0] >= top)
    pts = sorted({(0.0, 0.0), *((r, h) for r, h in points if r < top), (top, last)})
    hull: list[tuple[float, float]] = []
    for p in pts:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:
                hull.pop()  # hull[-1] is on or above the segment hull[-2] → p
            else:
                break
        hull.append(p)
    return hull


def resource_curve(
    job: JobRequest,
    w: Widths,
    slot_seconds: float,
    pieces: int = CURVE_PIECES,
    pools: NodePools = NO_POOLS,
) -> tuple[Piece, ...]:
    r"""h_i: the least a job holds to train u mini-batches in a slot, as pieces of rising
    cost per mini-batch whose rates add up to R_i (docs/formulation.md §15.3, Lemma 2′).

    Of its main resource (GPU if its workers hold one, else CPU, else memory) the job holds
    at least the lower convex envelope of (0, 0) and its shapes' (rate, held) points: a
    24-worker job whose co-located rate per worker is 2.4 × its distributed one pays 8
    GPUs for its first 8 workers' rate and 16 more for the last fifth of its fastest. Of
    the other resources it holds c_i^r per mini-batch (Lemma 2) on every piece; of each
    GPU pool of ``pools`` (Lemma 2″) the lower convex envelope of its shapes' holdings
    there, so a piece's costs change wherever one of the envelopes bends. A hull of more
    than ``pieces`` edges keeps that many of its lines (the first and the last among
    them): their maximum lies below the hull, so it is still a lower bound."""
    costs = cost_per_batch(job, w, slot_seconds)
    rate = max_rate(job, w, slot_seconds)
    if rate <= 0:
        return ()
    none = (0.0,) * len(pools)
    alpha = job.worker.as_tuple()
    main = next((r for r in range(3) if alpha[r] > 0), None)
    shapes = _shapes(job, w, slot_seconds, pools if alpha[0] > 0 else NO_POOLS)
    if main is None or not shapes:
        return (Piece(rate, (costs[0], costs[1], costs[2], *none)),)
    curves = [_hull_pieces([(s[0], s[1 + main]) for s in shapes], rate, pieces)]
    if alpha[0] > 0:
        curves += [_hull_pieces([(s[0], s[4 + k]) for s in shapes], rate, pieces)
                   for k in range(len(pools))]  # fmt: skip
    cuts = sorted({0.0, rate, *(x for curve in curves for x, _ in curve)})
    out = []
    for lo, hi in itertools.pairwise(cuts):
        if hi - lo <= 0:
            continue
        mid = (lo + hi) / 2
        slopes = [_slope_at(curve, mid) for curve in curves]
        cost = list(costs)
        cost[main] = slopes[0]
        out.append(Piece(hi - lo, (cost[0], cost[1], cost[2], *(slopes[1:] or none))))
    return tuple(out)


def _hull_pieces(
    points: list[tuple[float, float]], rate: float, pieces: int
) -> list[tuple[float, float]]:
    """The lower convex envelope of (0, 0) and ``points`` up to ``rate``, as (start, slope)
    of its pieces by rising rate (at most ``pieces`` of its lines kept: their maximum lies
    below it)."""
    hull = _lower_hull(points)
    edges: list[tuple[float, float]] = []  # (slope, intercept) of each edge, slopes rising
    for (x1, y1), (x2, y2) in itertools.pairwise(hull):
        if x2 <= x1:
            continue
        slope = (y2 - y1) / (x2 - x1)
        if edges and slope <= edges[-1][0]:
            continue  # collinear within rounding: the line is (nearly) the last one; a
            # lower envelope of fewer lines is still below the hull
        edges.append((slope, y1 - slope * x1))
    if not edges:
        return [(0.0, 0.0)]
    if len(edges) > pieces:
        keep = np.unique(np.linspace(0, len(edges) - 1, pieces).round().astype(int))
        edges = [edges[k] for k in keep]
    # breakpoints where the kept lines cross; the first line passes through the origin
    starts = [0.0]
    for (s1, b1), (s2, b2) in itertools.pairwise(edges):
        starts.append(min(rate, max(starts[-1], (b1 - b2) / (s2 - s1))))
    return [(lo, slope) for (slope, _), lo in zip(edges, starts, strict=True)]


def _slope_at(curve: list[tuple[float, float]], u: float) -> float:
    """The slope of ``curve`` ((start, slope) pieces) at rate ``u``."""
    slope = curve[0][1]
    for lo, s in curve:
        if lo <= u:
            slope = s
    return slope
