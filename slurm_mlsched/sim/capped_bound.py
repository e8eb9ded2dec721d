r"""The pooled LP with rate caps: a lower bound that knows a job cannot use the whole
cluster (pure; docs/formulation.md §15.3, "Theorem 2").

The rank bound (:mod:`.bounds`) pools each resource into one machine on which any job may
use all of it: a 1-GPU job of a week counts as 1/48 of a week on 48 GPUs. On traces of
many long narrow jobs (Philly on 6 × 8) that is where it is weak. This bound keeps both
the pool and each job's own speed limit, as a linear program over slots t:

* job i may not train before its arrival a_i, trains at most R_i mini-batches a slot
  (its fastest shape, :func:`.job_bounds.max_rate`) and must train
  V_i' = V_i·(1 − 10⁻⁸) − 10⁻⁶ (the least work the checks accept); x_it ∈ [0, 1/d_i'] is
  the share of V_i' it trains in slot t, d_i' = V_i'/R_i, Σ_t x_it = 1;
* in every slot the jobs together hold at most the cluster's capacity C_r of every
  resource r, and job i, training u mini-batches in a slot, holds at least h_i^r(u) of
  it: its *resource curve* (:func:`.job_bounds.resource_curve`, Lemma 2′), convex and
  piecewise linear, K pieces of rates ρ_ik adding up to R_i at rising costs c_ik^r per
  mini-batch (one piece at c_i^r, :func:`.job_bounds.cost_per_batch`, for a job whose
  fastest shape is also its cheapest per mini-batch). Split x_it = Σ_k x_itk with
  0 ≤ x_itk ≤ ρ_ik/V_i' (a schedule fills its pieces in order); then
  Σ_i Σ_k P_ik^r x_itk ≤ 1 with P_ik^r = V_i'·c_ik^r / C_r;
* spread each slot's share evenly over the slot: job i's training then has a density of at
  most 1/d_i' on [a_i, C_i] and mass 1, so its mean busy time M_i = Σ_t x_it (t + ½) is at
  most C_i − d_i'/2 (the mean is largest with all the mass at the end), and

      T_i = C_i − a_i ≥ φ_i(x) := M_i + d_i'/2 − a_i,      and T_i ≥ d_i (Lemma 1).

  *By pieces* (``by_pieces``, the default since 2026-12-06; docs/formulation.md §15.3,
  Lemma 4): each piece's share has a density of at most c_ik := ρ_ik/V_i' on its own, so
  with m_ik := Σ_t x_itk (Σ_k m_ik = 1), C_i − M_i = Σ_k ∫ (C_i − t) f_ik(t) dt ≥
  Σ_k m_ik²/(2 c_ik) and

      T_i ≥ φ_i(x) := M_i + Σ_k m_ik²/(2 c_ik) − a_i,

  which is ≥ the line above (its least value over Σ_k m_ik = 1 is d_i'/2, at the full
  rate's split) and equal to it for a job of one piece. A job whose cheap pieces are
  cheap because they are slow is charged the slow run's length when the program runs it
  on them: a 48-worker job run on its co-located piece alone ends no sooner than that
  piece's run allows.

The LP  min Σ_i φ_i(x)  over those constraints is a relaxation of every schedule the
simulator accepts, so its optimum is ≤ Σ_i T_i. It has jobs × slots columns, too many to
solve on a trace of weeks, so the bound is computed through its **Lagrangian**: for any
prices λ_tr ≥ 0 on the capacity rows,

    L(λ) = Σ_i max(d_i, min_{x_i} [φ_i(x_i) + Σ_{t,k} μ_itk x_itk]) − Σ_{t,r} λ_tr,
    μ_itk = Σ_r λ_tr P_ik^r,

is ≤ Σ_i T_i for **every** feasible schedule (its x satisfies every capacity row, so the
priced rows only subtract, and max(d_i, ·) is below both of T_i's bounds since μ ≥ 0). Each
job's inner minimum is a fractional knapsack over (slot, piece) items: the cheapest first,
each up to ρ_ik/V_i' (:func:`pieces_minimum`; with one piece, the ⌊d_i'⌋ cheapest slots at
1/d_i' and the rest on the next cheapest, :func:`job_minimum`); by pieces, the same
knapsack with the convex term added, solved exactly by one threshold on the marginal costs
(:func:`duration_minimum`). Lowering some slots' costs
only lowers L, so slots past a window of each job are costed without their price (t + ½): still a
bound, and cheap.

**The floor** (``floors``, the default since 2026-12-06; docs/formulation.md §15.3,
Lemma 5). T_i ≥ max(d_i, φ_i(x)), and the max belongs inside the job's term:
min_x [max(d_i, φ_i(x)) + μ_i·x] is the Lagrangian of the LP min Σ_i max(d_i, φ_i), and it
can be well above max(d_i, min_x [φ_i(x) + μ_i·x]): a short job (d_i' = 1.2, d_i = 2) whose
cheapest run is at once (φ_i = 1.2) pays the prices of that run, though its T_i is 2 in
any schedule, so it could run later, where the room is cheaper, at no cost. For every
ν ∈ [0, 1], max(d, φ) ≥ (1 − ν)·d + ν·φ, so

    g_i(ν) := (1 − ν)·d_i + ν·min_x [φ_i(x) + (μ_i/ν)·x]   (ν > 0)

is a lower bound on the job's term for every ν, and L stays a bound whichever ν is used.
g_i is concave in ν (a minimum of functions affine in ν), equal to the term without the
floor at ν = 1, and by the minimax theorem its maximum is the true term.
:func:`floor_term` takes the most of g over the ν it tries: none below 1 when
g(1 − 1/16) ≤ g(1) (concave: nothing lower is higher), else a golden section over
[10⁻³, 1]. It can add at most d_i − d_i' to a job's term (g(ν) − g(1) ≤ (1 − ν)(d_i −
φ_i) and φ_i ≥ d_i'), so jobs with d_i = d_i' are not searched. The coarse LP carries the
floor too where it is small (:func:`_floored_prices`: where the floorless LP is solved at
single-slot resolution, one more LP, min Σ s_i with s_i ≥ d_i and s_i ≥ φ_i, every job
free up to the greedy schedule's end + ⌈max d'⌉ + 2 slots, since a job whose floor has
slack may run later at no cost and the duals must see where), and L takes the better of
its prices and the floorless ones; on coarser blocks only the floorless LP is solved.

So validity does not depend on how λ is found. :func:`find_prices` takes them from the
duals of a coarse LP (slots grouped into blocks so that the LP keeps at most
``max_columns`` columns, each job's columns within a window around a feasible greedy
schedule of the same relaxation, :func:`greedy_schedule`; by pieces, each convex term
m²/(2c) replaced by the largest of its tangents at :func:`duration_tangents`, below it, so
the LP's duals price the trade the term makes), then adds the columns the
Lagrangian's own choices leave outside the windows and solves again (column
generation, at most ``rounds`` times). L at those prices is the bound
(:func:`capped_bound`); it is at most the LP's optimum and, when the blocks are single
slots and no column is missing, equal to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from ..model import ClusterSnapshot, JobRequest
from ..model.eligibility import restricts, type_allowed
from ..placement.program.highs_lp import LpStatus, SparseLp, solve_lp
from .job_bounds import (
    NO_POOLS,
    SLACK,
    NodePools,
    Piece,
    Widths,
    fewest_slots,
    job_widths,
    max_rate,
    node_pools,
    resource_curve,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The coarse LP of :func:`find_prices` keeps at most this many columns (blocks grow).
MAX_COLUMNS = 150_000
#: Column-generation rounds of :func:`find_prices` after the first solve.
ROUNDS = 2
#: Each job's priced window in :func:`lagrangian_bound` is at most this many slots …
MAX_WINDOW = 20_000
#: … and all windows together at most this many (longer ones are cut, still a bound).
MAX_WINDOW_TOTAL = 40_000_000
#: HiGHS's time limit for one solve of the coarse LP (s); past it no price is used.
LP_TIME_LIMIT_S = 60.0
#: Absolute work the checks may leave uncovered (``placement.verify``).
WORK_ABS = 1e-6
#: The coarse LP's tangents of a piece's duration term m²/(2c) (by pieces): at these
#: multiples of the piece's share of the full rate …
TANGENT_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
#: … and at every 1/TANGENT_GRID of the work (points above 1 left out).
TANGENT_GRID = 8
#: … leaving out a tangent steeper than this (m₀/c, slots per unit share): a piece of a
#: negligible rate (c = 2e-18 beside 1e-2 for the job's other pieces: a hull edge between
#: two shapes of nearly the same rate) would put a coefficient of 4e17 in the LP, which
#: HiGHS refuses (more than its 1e15). The smallest c of a job of several pieces in the
#: 127 saved cells (the ladder's and the held-out ones) is 1.6e-7 (Mustang 2012-02-07 at
#: Δ = 60 s): a steepest tangent of 6e6, far below this, so no saved bound changes.
#: Leaving a tangent out only loosens the LP that *finds* the prices; every λ ≥ 0 gives a
#: bound, and L is evaluated with the exact term (module docstring).
TANGENT_SLOPE_MAX = 1e12
#: The floor (module docstring): ν is searched in [FLOOR_NU_MIN, 1] …
FLOOR_NU_MIN = 1e-3
#: … by golden section with this many evaluations of the job's inner minimum …
FLOOR_STEPS = 10
#: … when g(1 − FLOOR_PROBE) > g(1) (else g, concave, is highest at ν = 1) and the
#: floor may add more than FLOOR_GAIN_MIN slots (it adds at most d_i − d_i').
FLOOR_PROBE = 1.0 / 16.0
FLOOR_GAIN_MIN = 1e-6


@dataclass(frozen=True)
class CappedJobs:
    """The data of the LP (module docstring), one row per job: arrival a_i, fewest whole
    slots d_i, least slots d_i' (real, > 0; 0 for a job with no work to count), and its
    resource curve as K pieces (padded with empty ones): ``cap[i, k]`` the most share of
    its work piece k adds per slot (Σ_k = 1/d_i'), ``share[i, k, r]`` the pool share of
    resource r per unit of work share on piece k (rising in k; one column per pooled
    resource, capacity > 0)."""

    arrival: IntArray
    fewest: IntArray
    least: FloatArray
    share: FloatArray  # (n, pieces, resources)
    cap: FloatArray  # (n, pieces)

    def __len__(self) -> int:
        return len(self.arrival)

    def subset(self, keep: npt.NDArray[np.bool_]) -> CappedJobs:
        """The jobs where ``keep`` is true."""
        return CappedJobs(
            self.arrival[keep], self.fewest[keep], self.least[keep], self.share[keep],
            self.cap[keep],
        )  # fmt: skip

    def with_fewest(self, fewest: IntArray) -> CappedJobs:
        """The same jobs with other floors d_i."""
        return CappedJobs(self.arrival, fewest, self.least, self.share, self.cap)

    @property
    def resources(self) -> int:
        return int(self.share.shape[2])

    def full_rate(self) -> FloatArray:
        """(n, resources): the pool share a job holds per slot at its cap."""
        out: FloatArray = np.einsum("nk,nkr->nr", self.cap, self.share)
        return out

    def held(self, i: int, rate: float) -> FloatArray:
        """The pool share job i holds per slot training ``rate`` of its work share (its
        cheapest pieces first)."""
        fill = np.clip(rate - np.concatenate([[0.0], np.cumsum(self.cap[i])[:-1]]), 0, None)
        out: FloatArray = np.minimum(fill, self.cap[i]) @ self.share[i]
        return out


@dataclass(frozen=True)
class Pool:
    """The share of each pooled resource the jobs may use, per slot: ``rows[k]`` from slot
    ``edges[k]`` to the next edge (the last row for ever). The whole cluster (one row of
    ones from slot 0) unless running jobs hold part of it (:mod:`.queue_estimate`)."""

    edges: IntArray
    rows: FloatArray  # (len(edges), resources)

    @classmethod
    def whole(cls, resources: int) -> Pool:
        return cls(np.zeros(1, dtype=np.int64), np.ones((1, resources)))

    def per_slot(self, horizon: int) -> FloatArray:
        """Slots 0 … horizon − 1 × resources."""
        k = np.searchsorted(self.edges, np.arange(horizon), side="right") - 1
        out: FloatArray = self.rows[np.maximum(k, 0)]
        return out

    def next_edge(self, t: int) -> int | None:
        """The first slot after ``t`` where the share changes (None: never)."""
        k = int(np.searchsorted(self.edges, t, side="right"))
        return int(self.edges[k]) if k < len(self.edges) else None


@dataclass(frozen=True)
class Column:
    """One capacity row of the LP per slot: ``cost`` indexes a piece's cost tuple (gpu,
    cpu, mem, then the GPU pools by node size), ``resource`` the machines' resource it
    counts and ``machines`` which machines' (all of them, or a pool's). A GPU pool by
    type (``types`` set: the GPUs of the nodes of those types) counts only the jobs that
    name types within ``types`` (:meth:`counts`), each with all its GPUs (Lemma 2‴)."""

    cost: int
    resource: int
    machines: npt.NDArray[np.bool_]
    types: frozenset[str] | None = None

    def total(self, capacity: FloatArray) -> float:
        """What ``capacity`` (H, 3) holds of it."""
        return float(capacity[self.machines, self.resource].sum())

    def counts(self, job: JobRequest) -> bool:
        """Whether ``job`` holds its cost in this column (every job, but in a type pool
        only the jobs whose GPU tasks may run nowhere else)."""
        if self.types is None:
            return True
        return restricts(job) and job.gpu_types is not None and job.gpu_types <= self.types


def type_sets(jobs: Sequence[JobRequest]) -> tuple[frozenset[str], ...]:
    """The distinct sets of GPU types the jobs name (jobs that may use any type, or use no
    GPUs, left out), sorted: the candidate type pools of :func:`columns`."""
    found = {j.gpu_types for j in jobs if restricts(j) and j.gpu_types is not None}
    return tuple(sorted(found, key=lambda t: (len(t), sorted(t))))


def columns(
    capacity: FloatArray,
    pools: bool = True,
    node_types: Sequence[str | None] = (),
    job_types: Sequence[frozenset[str]] = (),
) -> tuple[NodePools, list[Column]]:
    """The GPU pools by node size of machines of ``capacity`` (H, 3) (none without
    ``pools``) and the LP's columns in order: each of (gpu, cpu, mem) the machines have,
    then each pool by size (Lemma 2″), then, with ``pools``, one GPU pool per set of types
    in ``job_types`` (``node_types``: each machine's GPU type) whose nodes hold some but
    not all of the cluster's GPUs (Lemma 2‴)."""
    by_size = node_pools(capacity) if pools else NO_POOLS
    every = np.ones(len(capacity), dtype=bool)
    out = [Column(r, r, every) for r in range(3) if capacity[:, r].sum() > 0]
    inside = by_size.members(capacity)
    out += [Column(3 + k, 0, inside[k]) for k in range(len(by_size))]
    if not pools or not len(node_types):
        return by_size, out
    gpus = capacity[:, 0]
    for kinds in job_types:
        mask = np.array([type_allowed(kinds, t) for t in node_types], dtype=bool)
        held = float(gpus[mask].sum())
        if 0 < held < float(gpus.sum()) - 1e-9:
            out.append(Column(0, 0, mask, kinds))
    return by_size, out


def node_types(cluster: ClusterSnapshot) -> tuple[str | None, ...]:
    """Each machine's GPU type, in order."""
    return tuple(m.gpu_type for m in cluster.machines)


def capped_jobs(
    jobs: Sequence[JobRequest],
    cluster: ClusterSnapshot,
    shapes: Sequence[Widths] | None = None,
    pools: bool = True,
) -> CappedJobs:
    """:class:`CappedJobs` of ``jobs`` on the empty ``cluster`` (``shapes``: their
    :func:`.job_bounds.widths` there, when the caller has them), one resource per
    :func:`columns` (with ``pools``, the GPU pools by node size, Lemma 2″)."""
    capacity = np.array([m.capacity.as_tuple() for m in cluster.machines], dtype=np.float64)
    capacity = capacity.reshape(-1, 3)
    if shapes is None:
        shapes = job_widths(jobs, cluster)
    by_size, cols = columns(capacity, pools, node_types(cluster), type_sets(jobs))
    totals = [c.total(capacity) for c in cols]
    delta = cluster.slot_seconds
    n = len(jobs)
    arrival = np.zeros(n, dtype=np.int64)
    fewest = np.zeros(n, dtype=np.int64)
    least = np.zeros(n, dtype=np.float64)
    rows: list[tuple[int, float, tuple[Piece, ...]]] = []  # (job, V_i', its curve)
    for i, (job, w) in enumerate(zip(jobs, shapes, strict=True)):
        arrival[i] = job.arrival_slot
        fewest[i] = fewest_slots(job, w, delta)
        rate = max_rate(job, w, delta)
        work = job.workload * (1 - SLACK) - WORK_ABS
        if rate <= 0 or work <= 0:
            continue  # counted by d_i alone
        least[i] = work / rate
        rows.append((i, work, resource_curve(job, w, delta, pools=by_size)))
    k = max((len(curve) for _, _, curve in rows), default=0) or 1
    share = np.zeros((n, k, len(cols)), dtype=np.float64)
    cap = np.zeros((n, k), dtype=np.float64)
    for i, work, curve in rows:  # the pieces' rates add up to R_i: their caps to 1/d_i'
        for j, piece in enumerate(curve):
            cap[i, j] = piece.rate / work
            share[i, j] = [
                work * piece.cost[c.cost] / t if c.counts(jobs[i]) else 0.0
                for c, t in zip(cols, totals, strict=True)
            ]
    return CappedJobs(arrival, fewest, least, share, cap)


def job_minimum(costs: FloatArray, least: float) -> float:
    """min Σ_t x_t·costs_t over 0 ≤ x_t ≤ 1/least, Σ_t x_t = 1 (``least`` > 0; costs
    holds at least ⌈least⌉ entries): the ⌊least⌋ cheapest at 1/least, the rest on the
    next cheapest."""
    return _slots_minimum(costs, least)[0]


def _slots_minimum(costs: FloatArray, least: float) -> tuple[float, int]:
    """:func:`job_minimum` and the last slot its cheapest ⌈least⌉ slots reach."""
    k = math.floor(least)
    frac = 1.0 - k / least
    take = min(k + (1 if frac > 0 else 0), len(costs))
    chosen = np.argpartition(costs, take - 1)[:take] if take < len(costs) else np.arange(take)
    part = np.sort(costs[chosen])
    total = float(part[:k].sum()) / least
    if frac > 0 and k < len(part):
        total += frac * float(part[k])
    return total, int(chosen.max())


def pieces_minimum(costs: FloatArray, caps: FloatArray) -> tuple[float, int]:
    """min Σ_{t,k} x_tk·costs_tk over 0 ≤ x_tk ≤ caps_k, Σ x = 1 (``costs``: slots ×
    pieces, with enough slots to hold 1): the cheapest (slot, piece) items filled in turn;
    and the last slot used."""
    flat = costs.reshape(-1)
    room = np.broadcast_to(caps, costs.shape).reshape(-1)
    order = np.argsort(flat, kind="stable")
    filled = np.cumsum(room[order])
    last = min(int(np.searchsorted(filled, 1.0 - 1e-12)), len(order) - 1)
    used = room[order[: last + 1]].copy()
    used[-1] -= filled[last] - 1.0 if filled[last] > 1.0 else 0.0
    total = float(used @ flat[order[: last + 1]])
    return total, int(order[: last + 1].max() // costs.shape[1])


def duration_minimum(costs: FloatArray, caps: FloatArray) -> tuple[float, int]:
    """min Σ_{t,k} x_tk·costs_tk + Σ_k m_k²/(2·caps_k) over 0 ≤ x_tk ≤ caps_k, Σ x = 1,
    m_k = Σ_t x_tk (``costs``: slots × pieces, every cap > 0, slots enough to hold 1); and
    the last slot used. The inner minimum of L by pieces (module docstring).

    Sort piece k's slots by cost, s_k0 ≤ s_k1 ≤ …: filling its j-th slot to the fraction y
    costs s_kj at the margin plus the term's m_k/c_k = j + y, so the marginal cost is
    b_kj + y with b_kj := s_kj + j, and b_k,j+1 ≥ b_kj + 1: the pieces fill their slots in
    order. The program is convex and separable under one equality, so its minimum fills
    every slot to one threshold θ on the marginal cost, y_kj = clip(θ − b_kj, 0, 1), with
    θ where Σ_k c_k Σ_j y_kj = 1; that sum is piecewise linear and rising in θ, bending at
    every b_kj and b_kj + 1, so θ is found exactly by walking those points in order. A
    piece uses at most ⌈1/c_k⌉ + 1 slots, so only as many of its cheapest are sorted."""
    starts: list[FloatArray] = []
    cost: list[FloatArray] = []
    rate: list[FloatArray] = []
    slot: list[IntArray] = []
    for k in range(costs.shape[1]):
        col = costs[:, k]
        take = min(len(col), math.ceil(1.0 / float(caps[k])) + 1)
        idx = np.argpartition(col, take - 1)[:take] if take < len(col) else np.arange(len(col))
        idx = idx[np.argsort(col[idx], kind="stable")]
        starts.append(col[idx] + np.arange(len(idx)))
        cost.append(col[idx])
        rate.append(np.full(len(idx), float(caps[k])))
        slot.append(idx)
    b, c, s = np.concatenate(starts), np.concatenate(rate), np.concatenate(cost)
    points = np.concatenate([b, b + 1.0])
    order = np.argsort(points, kind="stable")
    points = points[order]
    slope = np.cumsum(np.concatenate([c, -c])[order])  # on [points[j], points[j + 1]]
    mass = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(points))])  # at points[j]
    j = int(np.searchsorted(mass, 1.0, side="left"))
    if j >= len(points):
        theta = float(points[-1])  # the whole room is 1 but for rounding
    else:
        j = max(j - 1, 0)
        theta = float(points[j]) + (1.0 - float(mass[j])) / max(float(slope[j]), 1e-300)
    y = np.clip(theta - b, 0.0, 1.0)
    total = float((c * s * y).sum())
    edges = np.cumsum([0] + [len(x) for x in starts])
    for k in range(costs.shape[1]):
        filled = float(y[edges[k] : edges[k + 1]].sum())  # m_k / c_k
        total += float(caps[k]) * filled * filled / 2.0
    used = np.concatenate(slot)[y > 0]
    return total, int(used.max()) if len(used) else 0


def duration_tangents(caps: FloatArray, k: int) -> list[float]:
    """The shares m of the work at which the coarse LP takes a tangent of piece k's term
    m²/(2·caps_k) (``caps``: the job's pieces with room): :data:`TANGENT_SCALES` × the
    piece's share of the full rate and every 1/:data:`TANGENT_GRID`, in (0, 1]."""
    full = float(caps[k]) / float(caps.sum())
    points = {round(f * full, 12) for f in TANGENT_SCALES}
    points |= {j / TANGENT_GRID for j in range(1, TANGENT_GRID + 1)}
    return sorted(m for m in points if 0.0 < m <= 1.0)


def _job_costs(
    jobs: CappedJobs, i: int, prices: FloatArray, span: int, scale: float = 1.0
) -> FloatArray:
    """Job i's cost per unit share in each slot from its arrival a and on each piece
    (slots × pieces): t + ½ plus its price μ_itk (× ``scale``) over ``span`` slots (cut at
    the priced horizon), then ⌈d_i'⌉ slots unpriced (a lower cost than theirs, so still a
    bound).

    They are enough: no minimum of :func:`pieces_minimum` or :func:`duration_minimum` over
    every later slot uses one past them. For the second (the first is the same without
    the term): in the threshold solution, let piece k fill some of slot t* ≥ t₀ + ⌈d'⌉
    (t₀ the first unpriced slot), so θ > b_k(t*) ≥ t* + ½ + (t* − t₀), and piece k fills
    its unpriced slots before t* whole (each has a b at least 2 lower). Any other piece k′
    either fills its first ⌈d'⌉ unpriced slots whole, or leaves room in one of them, t:
    then b_k′(t) > θ − 1 puts more than ⌈d'⌉ of its cheaper slots before t, the first
    ⌈d'⌉ + 1 of them with b < t + ½ + j ≤ θ − 1, so filled whole. Either way every piece
    holds at least c·⌈d'⌉ and piece k more, so the mass exceeds Σ_k c_k·⌈d'⌉ ≥ 1: a
    contradiction. (``test_ceil_d_unpriced_slots_hold_the_minimum_by_pieces`` checks it
    against ten times as many slots.)"""
    a = int(jobs.arrival[i])
    w = max(0, min(span, prices.shape[0] - a))
    slots = np.arange(a, a + w + max(1, math.ceil(jobs.least[i])), dtype=np.float64) + 0.5
    costs = np.repeat(slots[:, None], jobs.share.shape[1], axis=1)
    if w:
        costs[:w] += (prices[a : a + w] @ jobs.share[i].T) * scale
    return costs


def _inner(
    jobs: CappedJobs,
    i: int,
    prices: FloatArray,
    span: int,
    by_pieces: bool = True,
    scale: float = 1.0,
) -> tuple[float, int]:
    """Job i's inner minimum min_x [φ_i(x) + a_i + s·Σ_{t,k} μ_itk·x_tk] of L (φ_i with
    its duration term d_i'/2, or by pieces Σ_k m_ik²/(2c_ik): the same for one piece;
    s = ``scale``) and the last slot (from its arrival) it uses."""
    costs = _job_costs(jobs, i, prices, span, scale)
    pieces = np.flatnonzero(jobs.cap[i] > 0)
    half = float(jobs.least[i]) / 2.0
    if len(pieces) <= 1:  # one piece: the fractional knapsack of whole slots
        got = _slots_minimum(costs[:, pieces[0] if len(pieces) else 0], float(jobs.least[i]))
        return got[0] + half, got[1]
    if by_pieces:
        return duration_minimum(costs[:, pieces], jobs.cap[i, pieces])
    got = pieces_minimum(costs[:, pieces], jobs.cap[i, pieces])
    return got[0] + half, got[1]


def floor_term(
    jobs: CappedJobs, i: int, prices: FloatArray, span: int, by_pieces: bool, at_one: float
) -> float:
    """Job i's term of L with its floor (module docstring, "The floor"): the most of
    g(ν) = (1 − ν)·d_i + ν·(min_x [φ_i(x) + (μ_i/ν)·x] ) over the values of ν tried, at
    least ``at_one`` = g(1). Every g(ν) is a lower bound on the job's term, so any ν
    tried gives a valid L; g is concave in ν, so where g(1 − FLOOR_PROBE) ≤ g(1) none
    below is higher and nothing more is tried, else golden section over
    [FLOOR_NU_MIN, 1] (:data:`FLOOR_STEPS` evaluations)."""
    fewest, a = float(jobs.fewest[i]), float(jobs.arrival[i])
    start = int(jobs.arrival[i])
    if not prices[start : start + span].any():
        # no price in its window: g is linear in ν, highest at ν = 1 (``at_one``) or 0
        # (d_i, which the caller's max(d_i, ·) adds): nothing to search (λ = 0, say)
        return at_one

    def g(nu: float) -> float:
        inner, _ = _inner(jobs, i, prices, span, by_pieces, 1.0 / nu)
        return (1.0 - nu) * fewest + nu * (inner - a)

    best = at_one
    probe = g(1.0 - FLOOR_PROBE)
    if probe <= at_one:
        return best
    best = probe
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    lo, hi = FLOOR_NU_MIN, 1.0
    x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    g1, g2 = g(x1), g(x2)
    for _ in range(FLOOR_STEPS - 2):
        best = max(best, g1, g2)
        if g1 < g2:
            lo, x1, g1 = x1, x2, g2
            x2 = lo + ratio * (hi - lo)
            g2 = g(x2)
        else:
            hi, x2, g2 = x2, x1, g1
            x1 = hi - ratio * (hi - lo)
            g1 = g(x1)
    return max(best, g1, g2)


def lagrangian_bound(
    jobs: CappedJobs,
    prices: FloatArray,
    pool: Pool | None = None,
    by_pieces: bool = True,
    floors: bool = True,
) -> float:
    """L(λ) of the module docstring for ``prices`` λ (slots 0 … T−1 × pooled resources,
    every entry ≥ 0; no price from slot T on): a lower bound on Σ_i T_i of every schedule.
    Each job is priced over at most :data:`MAX_WINDOW` slots past its arrival, all jobs
    over :data:`MAX_WINDOW_TOTAL`; ``pool``: the share of the pool the jobs may use per
    slot (default all of it), the right-hand side of the priced rows; ``by_pieces``: each
    job's duration term by pieces (module docstring), else d_i'/2; ``floors``: each job's
    term with its floor d_i inside (:func:`floor_term`), else max(d_i, its inner minimum)."""
    prices = np.maximum(np.asarray(prices, dtype=np.float64), 0.0)
    horizon = prices.shape[0]
    share = (pool or Pool.whole(jobs.resources)).per_slot(horizon)
    span = np.minimum(np.clip(horizon - jobs.arrival, 0, None), MAX_WINDOW)
    if span.sum() > MAX_WINDOW_TOTAL:
        span = (span * (MAX_WINDOW_TOTAL / span.sum())).astype(np.int64)
    total = -float((prices * share).sum())
    for i in range(len(jobs)):
        d = float(jobs.least[i])
        if d <= 0:
            total += float(jobs.fewest[i])
            continue
        inner, _ = _inner(jobs, i, prices, int(span[i]), by_pieces)
        at_one = inner - float(jobs.arrival[i])
        if floors and float(jobs.fewest[i]) - d > FLOOR_GAIN_MIN:
            at_one = floor_term(jobs, i, prices, int(span[i]), by_pieces, at_one)
        total += max(float(jobs.fewest[i]), at_one)
    return total


@dataclass(frozen=True)
class Greedy:
    """:func:`greedy_schedule`'s result: each job's completion slot (its last slot + 1)
    and, per slot from 0 to the last completion, whether some pooled resource was full."""

    done: IntArray
    busy: npt.NDArray[np.bool_]


def _most_rate(jobs: CappedJobs, i: int, upto: float, left: FloatArray) -> float:
    """The most work share per slot, at most ``upto``, job i can train with ``left`` of the
    pool (its cheapest pieces first)."""
    got = 0.0
    room = np.maximum(left, 0.0)
    for k in range(jobs.cap.shape[1]):
        want = min(float(jobs.cap[i, k]), upto - got)
        if want <= 0:
            break
        per = jobs.share[i, k]
        need = per > 0
        step = min(want, float((room[need] / per[need]).min(initial=math.inf)))
        step = max(0.0, step)
        got += step
        room = np.maximum(room - step * per, 0.0)
        if step < want:
            break
    return got


def greedy_schedule(jobs: CappedJobs, pool: Pool | None = None) -> Greedy:
    """A feasible schedule of the LP (the pool, the caps, no start before arrival): in
    each slot the jobs by least remaining pool share first, each at its cap while room is
    left (``pool``: the share of it they may use per slot, default all). In a slot where
    no resource is full every job present runs at its cap."""
    pool = pool or Pool.whole(jobs.resources)
    n = len(jobs)
    done = np.zeros(n, dtype=np.int64)
    rem = [1.0] * n
    cap = [1.0 / d if d > 0 else 1.0 for d in jobs.least.tolist()]
    size = jobs.share[:, 0, :].max(axis=1, initial=0.0).tolist()
    order = np.argsort(jobs.arrival, kind="stable").tolist()
    arrival = jobs.arrival.tolist()
    full: list[tuple[int, int]] = []  # (first slot, slots) of busy stretches
    active: list[int] = []
    k = 0
    t = int(arrival[order[0]]) if n else 0
    while k < n or active:
        if not active:
            t = max(t, arrival[order[k]])
        while k < n and arrival[order[k]] <= t:
            active.append(order[k])
            k += 1
        active.sort(key=lambda i: (rem[i] * size[i], i))
        k_pool = int(np.searchsorted(pool.edges, t, side="right")) - 1
        left = np.array(pool.rows[max(k_pool, 0)], dtype=np.float64)
        rate: list[float] = []
        for i in active:
            f = _most_rate(jobs, i, min(cap[i], rem[i]), left)
            rate.append(f)
            left -= jobs.held(i, f)
        # the same rates hold until a job ends or one arrives (a served job only moves up
        # the order): take the whole slots before that at once
        span = arrival[order[k]] - t if k < n else 1 << 62
        edge = pool.next_edge(t)
        if edge is not None:
            span = min(span, edge - t)
        for i, f in zip(active, rate, strict=True):
            if f > 0:
                span = min(span, max(1, math.floor((rem[i] - 1e-12) / f)))
        span = max(1, span)
        if left.min(initial=1.0) <= 1e-9:
            full.append((t, span))
        if not any(f > 0 for f in rate) and edge is None and k >= n:
            raise ValueError("the pool never has room for the jobs left")
        still: list[int] = []
        for i, f in zip(active, rate, strict=True):
            rem[i] -= f * span
            if rem[i] <= 1e-12:
                done[i] = t + span
            else:
                still.append(i)
        active = still
        t += span
    busy = np.zeros(int(done.max(initial=0)) + 1, dtype=np.bool_)
    for first, slots in full:
        busy[first : first + slots] = True
    return Greedy(done, busy)


@dataclass(frozen=True)
class Prices:
    """Prices found for the capacity rows (slots × pooled resources), the bound
    L(prices) they give and how they were found."""

    prices: FloatArray
    value: float
    note: str


@dataclass(frozen=True)
class Blocks:
    """Slots grouped for the coarse LP: block j is [edges[j], edges[j + 1])."""

    edges: IntArray

    @property
    def count(self) -> int:
        return len(self.edges) - 1

    def of(self, slots: IntArray) -> IntArray:
        """The block of each slot."""
        out: IntArray = np.searchsorted(self.edges, slots, side="right") - 1
        return out

    def sums(self, per_slot: FloatArray) -> FloatArray:
        """Per-slot rows summed over each block (``per_slot`` covers edges[-1] slots)."""
        out: FloatArray = np.add.reduceat(per_slot, self.edges[:-1], axis=0)
        return out

    def spread(self, per_block: FloatArray) -> FloatArray:
        """Each block's row repeated over its slots."""
        out: FloatArray = np.repeat(per_block, np.diff(self.edges), axis=0)
        return out


def blocks_for(busy: npt.NDArray[np.bool_], horizon: int, fine: int, coarse: int) -> Blocks:
    """Blocks of ``fine`` slots where the greedy schedule filled some resource and of
    ``coarse`` slots elsewhere (prices matter where capacity binds), over 0 … horizon."""
    flags = np.zeros(horizon, dtype=np.bool_)
    flags[: min(horizon, len(busy))] = busy[:horizon]
    change = np.flatnonzero(np.diff(flags.astype(np.int8))) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [horizon]])
    edges = [
        np.arange(a, b, fine if flags[a] else coarse)
        for a, b in zip(starts.tolist(), stops.tolist(), strict=True)
    ]
    return Blocks(np.concatenate([*edges, [horizon]]).astype(np.int64))


def _coarse_lp(
    jobs: CappedJobs,
    ends: IntArray,
    blocks: Blocks,
    room: FloatArray,
    by_pieces: bool = True,
    floors: bool = False,
) -> SparseLp:
    """The LP of the module docstring over ``blocks``, job i's columns on its blocks from
    its arrival's to ``ends[i]``, one per piece of its resource curve, and ``room``
    (blocks × resources) the pool left in each block; the capacity rows come first
    (block-major, then resource), then one row per job. With ``by_pieces``, each piece k
    of a job of several gets a column q_ik (cost 1) above the tangents of its duration
    term, q_ik ≥ (m₀/c_ik)·m_ik − m₀²/(2c_ik) at each m₀ of :func:`duration_tangents`
    (m_ik its own column; rows after the jobs'); the constant d_i'/2 of one piece is left
    out, as without. With ``floors`` (module docstring, "The floor") the objective is
    Σ_i s_i instead: one column s_i ≥ d_i per job (the last n columns) and one row per
    job (the last n rows), M_i + Σ_k q_ik − s_i ≤ a_i − (d_i'/2 of one piece), so that
    s_i ≥ max(d_i, φ_i)."""
    res = room.shape[1]
    n = len(jobs)
    firsts = blocks.of(jobs.arrival)
    counts = np.maximum(ends - firsts + 1, 1)
    job_of = np.repeat(np.arange(n), counts)
    k = np.concatenate([np.arange(f, f + c) for f, c in zip(firsts, counts, strict=True)])
    start = np.maximum(blocks.edges[k], jobs.arrival[job_of])
    stop = blocks.edges[k + 1]
    # one column per (job, block, piece) with room on that piece
    pieces = jobs.cap.shape[1]
    piece = np.tile(np.arange(pieces), len(k))
    job_of, k, start, stop = (np.repeat(x, pieces) for x in (job_of, k, start, stop))
    keep = jobs.cap[job_of, piece] > 0
    job_of, k, start, stop, piece = job_of[keep], k[keep], start[keep], stop[keep], piece[keep]
    ncol = len(k)
    rows = [(k[:, None] * res + np.arange(res)[None, :]).reshape(-1), blocks.count * res + job_of]
    cols = [np.repeat(np.arange(ncol), res), np.arange(ncol)]
    vals = [jobs.share[job_of, piece].reshape(-1), np.ones(ncol)]
    cost = [((start + stop) / 2.0).astype(np.float64)]
    lo = [np.full(blocks.count * res, -np.inf), np.ones(n)]
    hi = [room.reshape(-1), np.ones(n)]
    q_cols, q_jobs = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if by_pieces:
        more = _tangent_rows(jobs, job_of, piece, blocks.count * res + n)
        # the lists hold arrays of different dtypes: their join is `object` to mypy (and
        # which join it finds varied from run to run), so say what they are
        parts = cast(tuple[list[Any], ...], (rows, cols, vals, cost, lo, hi))
        for part, entries in zip(parts, more[:6], strict=True):
            part.append(entries)
        q_cols, q_jobs = more.q_cols, more.q_jobs
    extra = sum(len(x) for x in cost) - ncol
    lb = [np.zeros(ncol + extra)]
    ub = [(stop - start) * jobs.cap[job_of, piece], np.full(extra, np.inf)]
    if floors:  # every other column's cost moves into its job's row
        first_row, s_col = sum(len(x) for x in lo), ncol + extra + np.arange(n)
        several = (jobs.cap > 0).sum(axis=1) > 1
        half = np.where(several & by_pieces, 0.0, jobs.least / 2.0)
        rows += [first_row + job_of, first_row + q_jobs, first_row + np.arange(n)]
        cols += [np.arange(ncol), q_cols, s_col]
        vals += [cost[0], np.ones(len(q_cols)), -np.ones(n)]
        lo.append(np.full(n, -np.inf))
        hi.append(jobs.arrival.astype(np.float64) - half)
        cost = [np.zeros(ncol + extra), np.ones(n)]
        lb.append(jobs.fewest.astype(np.float64))
        ub.append(np.full(n, np.inf))
    return SparseLp(
        c=np.concatenate(cost),
        lb=np.concatenate(lb),
        ub=np.concatenate(ub),
        rows=np.concatenate(rows).astype(np.int64),
        cols=np.concatenate(cols).astype(np.int64),
        vals=np.concatenate(vals),
        row_lo=np.concatenate(lo),
        row_hi=np.concatenate(hi),
    )


class _Rows(NamedTuple):
    """Entries of :func:`_coarse_lp` to append: (row, column, value) triplets, the new
    columns' costs and the new rows' bounds."""

    rows: IntArray
    cols: IntArray
    vals: FloatArray
    cost: FloatArray
    lo: FloatArray
    hi: FloatArray
    q_cols: IntArray  # the duration columns q_ik …
    q_jobs: IntArray  # … and the job i of each


def _tangent_rows(jobs: CappedJobs, job_of: IntArray, piece: IntArray, first_row: int) -> _Rows:
    """The duration columns of every piece k of a job i of several: m_ik (cost 0) with the
    row Σ x_ik − m_ik = 0, and q_ik (cost 1) with the tangent rows
    q_ik − (m₀/c_ik)·m_ik ≥ −m₀²/(2c_ik); rows from ``first_row`` and columns from
    len(job_of) on (``job_of``, ``piece``: each x column's). Two entries per tangent row
    keep HiGHS fast."""
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    cost: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    n_pieces = jobs.cap.shape[1]
    key = job_of * n_pieces + piece
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    row, col = first_row, len(job_of)
    q_cols: list[int] = []
    q_jobs: list[int] = []
    for i in np.flatnonzero((jobs.cap > 0).sum(axis=1) > 1).tolist():
        caps = jobs.cap[i][jobs.cap[i] > 0]
        for at, k in enumerate(np.flatnonzero(jobs.cap[i] > 0).tolist()):
            a, b = np.searchsorted(sorted_key, [i * n_pieces + k, i * n_pieces + k + 1])
            mine = order[a:b].tolist()
            m, q, c = col, col + 1, float(caps[at])
            rows += [row] * (len(mine) + 1)  # Σ x − m = 0
            cols += [*mine, m]
            vals += [1.0] * len(mine) + [-1.0]
            lo.append(0.0)
            hi.append(0.0)
            row += 1
            for m0 in duration_tangents(caps, at):
                if m0 / c > TANGENT_SLOPE_MAX:
                    continue  # a negligible piece: its term left out of this LP alone
                rows += [row, row]
                cols += [q, m]
                vals += [1.0, -m0 / c]
                lo.append(-m0 * m0 / (2.0 * c))
                hi.append(math.inf)
                row += 1
            cost += [0.0, 1.0]
            q_cols.append(q)
            q_jobs.append(i)
            col += 2
    return _Rows(
        np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
        np.array(vals, dtype=np.float64), np.array(cost, dtype=np.float64),
        np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64),
        np.array(q_cols, dtype=np.int64), np.array(q_jobs, dtype=np.int64),
    )  # fmt: skip


def _at_cap_usage(jobs: CappedJobs, horizon: int) -> FloatArray:
    """The pool (slots × resources) that ``jobs`` hold when each runs at its cap from its
    arrival: its full rate for ⌊d'⌋ slots, the rest of its work (cheapest pieces first)
    in the next."""
    res = jobs.resources
    diff = np.zeros((horizon + 2, res))
    whole = np.floor(jobs.least).astype(np.int64)
    per = jobs.full_rate()
    np.add.at(diff, np.minimum(jobs.arrival, horizon + 1), per)
    np.add.at(diff, np.minimum(jobs.arrival + whole, horizon + 1), -per)
    left = 1.0 - whole / jobs.least
    before = np.concatenate([np.zeros((len(jobs), 1)), np.cumsum(jobs.cap, axis=1)[:, :-1]], 1)
    fill = np.minimum(np.clip(left[:, None] - before, 0, None), jobs.cap)
    tail = np.einsum("nk,nkr->nr", fill, jobs.share)
    np.add.at(diff, np.minimum(jobs.arrival + whole, horizon + 1), tail)
    np.add.at(diff, np.minimum(jobs.arrival + whole + 1, horizon + 1), -tail)
    out: FloatArray = np.cumsum(diff, axis=0)[:horizon]
    return out


def _chosen_last(jobs: CappedJobs, prices: FloatArray, by_pieces: bool = True) -> IntArray:
    """The last slot each job's inner minimum of L(prices) uses (column generation)."""
    out = np.array(jobs.arrival, copy=True)
    for i in range(len(jobs)):
        if jobs.least[i] <= 0:
            continue
        out[i] += _inner(jobs, i, prices, MAX_WINDOW, by_pieces)[1]
    return out


def counted(jobs: CappedJobs) -> CappedJobs:
    """The jobs with work to count (d_i' > 0); the others add d_i alone."""
    return jobs.subset(jobs.least > 0)


def find_prices(
    jobs: CappedJobs,
    greedy: Greedy | None = None,
    max_columns: int = MAX_COLUMNS,
    rounds: int = ROUNDS,
    time_limit_s: float = LP_TIME_LIMIT_S,
    pool: Pool | None = None,
    by_pieces: bool = True,
    floors: bool = True,
    floored_lp: bool = True,
) -> Prices | None:
    """Prices λ ≥ 0 from the coarse LP's duals (module docstring) and L at them (λ = 0
    when that is higher, or the LP did not solve in time); None without a job to count.
    ``greedy``: :func:`greedy_schedule` of the jobs with work to count on ``pool``;
    ``by_pieces``: the duration term by pieces (module docstring), in the LP and in L;
    ``floors``: each job's floor d_i inside L's terms, and with ``floored_lp``, where the
    LP's blocks are single slots, the better of these prices and those of the LP with the
    floors (:func:`_floored_prices`; module docstring, "The floor"). That LP has every job
    free over the whole horizon, the dearest of them: ``mlsub queue``'s estimate goes
    without it (1,000 waiting jobs on 1,024 machines: 4.7 s more for a bound 0.3 % higher).

    The LP is restricted where that makes it small (any prices give a bound): a job whose
    greedy run meets no full slot ran at its cap from its arrival and keeps that run
    (its pool comes off the blocks' room); the others get columns from their arrival to
    their greedy end plus as long again as they waited there (and two slots), widened by
    column generation where the Lagrangian's choices go further."""
    sub = counted(jobs)
    if not len(sub) or sub.resources == 0:
        return None
    pool = pool or Pool.whole(sub.resources)
    greedy = greedy_schedule(sub, pool) if greedy is None else greedy
    done, busy = greedy.done, greedy.busy
    horizon = int(done.max())
    seen = np.concatenate([[0], np.cumsum(busy[:horizon], dtype=np.int64)])
    moves = seen[np.minimum(done, horizon)] > seen[sub.arrival]
    unpriced = np.zeros((0, sub.resources))
    at_zero = Prices(
        unpriced,
        lagrangian_bound(jobs, unpriced, pool=pool, by_pieces=by_pieces, floors=floors),
        "pooled LP with rate caps, λ = 0",
    )
    if not moves.any():
        return at_zero  # no full slot: every job at its cap from its arrival is optimal
    fixed, free = sub.subset(~moves), sub.subset(moves)
    waited = done[moves] - free.arrival - np.ceil(free.least).astype(np.int64)
    ends_slot = np.minimum(done[moves] + np.maximum(waited, 0) + 2, horizon - 1)
    fine, coarse = 1, 1
    while True:  # single slots if the budget allows, else coarse ones 16 × as long
        blocks = blocks_for(busy, horizon, fine, coarse)
        ends = blocks.of(ends_slot)
        if int(np.sum(ends - blocks.of(free.arrival) + 1)) <= max_columns or fine >= horizon:
            break
        fine, coarse = (fine, 16) if coarse == 1 else (2 * fine, 32 * fine)
    room = np.maximum(
        blocks.sums(pool.per_slot(horizon)) - blocks.sums(_at_cap_usage(fixed, horizon)), 0.0
    )
    best = at_zero
    for rnd in range(rounds + 1):
        lp = _coarse_lp(free, ends, blocks, room, by_pieces)
        result = solve_lp(lp, time_limit_s=time_limit_s, duals=True)
        if result.status != LpStatus.OPTIMAL:
            break
        res = free.resources
        dual = result.row_dual[: blocks.count * res].reshape(blocks.count, res)
        prices = blocks.spread(np.maximum(-dual, 0.0))
        value = lagrangian_bound(jobs, prices, pool=pool, by_pieces=by_pieces, floors=floors)
        if value > best.value:
            note = f"pooled LP with rate caps (blocks of {fine} slot(s) where full, round {rnd})"
            best = Prices(prices, value, note)
        if rnd == rounds:
            break
        last = blocks.of(_chosen_last(free, prices, by_pieces))
        if not (last > ends).any():
            break
        ends = np.minimum(np.maximum(ends, last), blocks.count - 1)
    if floors and floored_lp and fine == 1 and coarse == 1:
        floored = _floored_prices(jobs, sub, horizon, pool, by_pieces, max_columns, time_limit_s)
        if floored is not None and floored.value > best.value:
            best = floored
    return best


def _floored_prices(
    jobs: CappedJobs,
    sub: CappedJobs,
    horizon: int,
    pool: Pool,
    by_pieces: bool,
    max_columns: int,
    time_limit_s: float,
) -> Prices | None:
    """L with floors at the duals of the LP with each job's floor (module docstring, "The
    floor"): every job of ``sub`` (those of ``jobs`` with work to count) free on single
    slots from its arrival to ``horizon`` + ⌈max d'⌉ + 2, none held at its greedy run,
    since a job whose floor has slack may run later at no cost and the duals must see
    where. None when that LP would pass ``max_columns`` or did not solve."""
    ext = horizon + math.ceil(float(sub.least.max())) + 2
    if int(np.sum(ext - sub.arrival)) > max_columns:
        return None
    blocks = Blocks(np.arange(ext + 1, dtype=np.int64))
    ends = np.full(len(sub), ext - 1, dtype=np.int64)
    lp = _coarse_lp(sub, ends, blocks, pool.per_slot(ext), by_pieces, floors=True)
    result = solve_lp(lp, time_limit_s=time_limit_s, duals=True)
    if result.status != LpStatus.OPTIMAL:
        return None
    res = sub.resources
    prices = np.maximum(-result.row_dual[: ext * res].reshape(ext, res), 0.0)
    value = lagrangian_bound(jobs, prices, pool=pool, by_pieces=by_pieces, floors=True)
    return Prices(prices, value, "pooled LP with rate caps and floors (single slots)")


def capped_bound(
    jobs: Sequence[JobRequest],
    cluster: ClusterSnapshot,
    beat: float = 0.0,
    shapes: Sequence[Widths] | None = None,
    pools: bool = True,
    by_pieces: bool = True,
    floors: bool = True,
) -> tuple[float, str]:
    """The bound of the module docstring for ``jobs`` on the empty ``cluster`` and how it
    was found; 0 and why when it cannot exceed ``beat`` (a bound the caller has) or no
    price was found. It cannot when the greedy schedule of its own relaxation
    (:func:`greedy_schedule`: Σ_i max(d_i, its T_i) ≥ the LP's optimum ≥ L) is ≤ ``beat``:
    then no LP is solved. ``shapes``, ``pools``: as for :func:`capped_jobs`;
    ``by_pieces``: each job's duration term by pieces (module docstring; the default);
    ``floors``: each job's floor d_i inside L's terms and the LP (module docstring, "The
    floor"; the default)."""
    data = capped_jobs(jobs, cluster, shapes, pools)
    sub = counted(data)
    if not len(sub):
        return 0.0, "pooled LP with rate caps: no job with work to count"
    greedy = greedy_schedule(sub)
    schedule = relaxation_total(data, sub, greedy)
    if schedule <= beat:
        return 0.0, "pooled LP with rate caps: a schedule of it is no higher"
    found = find_prices(data, greedy, by_pieces=by_pieces, floors=floors)
    if found is None:
        return 0.0, "pooled LP with rate caps: no job with work to count"
    return found.value, found.note


def relaxation_total(data: CappedJobs, sub: CappedJobs, greedy: Greedy) -> float:
    """Σ_i max(d_i, T_i) of ``greedy`` (a schedule of ``sub``, the jobs of ``data`` with
    work to count) plus d_i of the others: the relaxation's objective at that schedule,
    never below the LP's optimum."""
    rest = float(data.fewest[data.least <= 0].sum())
    return float(np.maximum(greedy.done - sub.arrival, sub.fewest).sum()) + rest


def relaxed_completions(
    jobs: Sequence[JobRequest],
    cluster: ClusterSnapshot,
    shapes: Sequence[Widths] | None = None,
    pools: bool = True,
) -> IntArray:
    """Each job's T_i (slots from its arrival slot to its end, ≥ its d_i) in the schedule
    of :func:`relaxed_schedule`, in the order of ``jobs``: the relaxation's answer to
    "when could this job have ended", job by job, for taking a policy's distance from
    the bound apart (``bench/cell_anatomy.py``). A job with no work to count has its
    d_i."""
    data = capped_jobs(jobs, cluster, shapes, pools)
    out = data.fewest.astype(np.int64).copy()
    keep = data.least > 0
    if keep.any():
        sub = data.subset(keep)
        out[keep] = np.maximum(greedy_schedule(sub).done - sub.arrival, sub.fewest)
    return out


def relaxed_schedule(
    jobs: Sequence[JobRequest],
    cluster: ClusterSnapshot,
    shapes: Sequence[Widths] | None = None,
    pools: bool = True,
) -> float:
    """Σ_i T_i (slots) of a feasible schedule of this bound's own relaxation — every
    resource pooled, each job at any rate up to its cap on its resource curve, preemptive
    and resized for free — the smallest remaining share first (:func:`greedy_schedule`).
    The relaxation's optimum lies between :func:`capped_bound` and this, so their ratio
    says how much of a policy's distance from the bound the bound itself may owe (the
    relaxation's optimum is not known) and how much is what the relaxation's freedoms are
    worth (docs/formulation.md §15.10). ``jobs`` on the empty ``cluster``; ``shapes``,
    ``pools``: as for :func:`capped_jobs`. The sum of :func:`relaxed_completions`."""
    return float(relaxed_completions(jobs, cluster, shapes, pools).sum())
