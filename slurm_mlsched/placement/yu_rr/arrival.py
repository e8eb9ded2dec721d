"""What every per-arrival step of ``yu-rr`` shares (docs/formulation.md §4–§7): the shape,
residual capacity, the co-location candidates (top-k), the groups of alike machines."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ...model import ClusterSnapshot, JobRequest, Mode, SlotPlan
from ..params import PlacementParams
from ..program.job_lp import FloatArray, IntArray, JobShape, LpInstance
from ..program.packing import EPS, fit_counts
from ..program.residual import Residual, identical_groups, residual_from


@dataclass(frozen=True)
class Arrival:
    job: JobRequest
    shape: JobShape
    res: Residual
    a: int  # the slot the job is decided in (arrival, or now if later)
    d_min: int  # fewest slots the job could take (N workers co-located)
    colo: tuple[int, ...]  # co-location candidates, best first
    groups: tuple[tuple[int, ...], ...]  # colo singletons first, then identical groups
    params: PlacementParams

    def __post_init__(self) -> None:
        # the job sees no GPU room where its GPU types exclude it (every copy made with
        # dataclasses.replace, e.g. on a shared residual, passes here again)
        object.__setattr__(self, "res", self.res.for_job(self.job))

    def rate(self, mode: Mode) -> float:
        return self.shape.nu_in if mode == Mode.COLOCATED else self.shape.nu_ex

    def cuts(self) -> tuple[int, ...]:
        """Block boundaries worth keeping: where the cluster becomes free, then every
        slot where some residual capacity changes."""
        return (self.res.free_after, *self.res.change_slots())

    def earliest_end_bound(self) -> int:
        """A lower bound on the LP deadline: slots from ``a`` until the per-slot rate upper
        bound (whole-task column bounds of the LP) has covered V. Cheap, no LP."""
        shape, res = self.shape, self.res
        colo = np.array(self.colo, dtype=np.int64)
        covered, work = 0.0, shape.workload
        starts = res.seg_starts
        for i, seg_start in enumerate(starts):
            lo = max(int(seg_start), self.a)
            hi = int(starts[i + 1]) if i + 1 < len(starts) else None
            mins = res.seg_res[:, :, i]
            colo_rate = 0.0
            if len(colo):
                fit = np.minimum(fit_counts(mins[colo] - shape.beta, shape.alpha), shape.n_max)
                colo_rate = shape.nu_in * float(fit.max())
            dist = min(
                int(np.minimum(fit_counts(mins, shape.alpha), shape.n_dist_max).sum()),
                shape.n_dist_max,
            )
            rate = max(colo_rate, shape.nu_ex * dist if dist >= shape.n_dist_min else 0.0)
            if rate <= 0:
                continue
            need = math.ceil((work - covered) / rate - 1e-9)
            if hi is None or lo + need <= hi:
                return max(lo + need - 1, self.a + self.d_min - 1)
            covered += rate * (hi - lo)
        return self.a + self.d_min - 1  # pragma: no cover (last segment always returns)

    def longest_end(self) -> int:
        """A slot by which the job certainly can finish: its smallest shape, on the empty
        cluster that exists from ``free_after`` on."""
        w = self.shape.n_dist_min
        slowest = min(self.shape.nu_ex * w, self.shape.nu_in)
        return max(self.res.free_after, self.a) + math.ceil(self.job.workload / slowest - 1e-9)

    def instance(self, starts: IntArray, stops: IntArray) -> LpInstance:
        """Block capacities and prices for blocks [starts[b], stops[b])."""
        mins = self.res.blocks_min(starts, stops)  # (H, 3, B)
        reps = np.array([g[0] for g in self.groups], dtype=np.int64)
        sizes = np.array([len(g) for g in self.groups], dtype=np.int64)
        per_machine = mins[reps]  # (G, 3, B)
        cap_m = self.res.capacity[reps][:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.params.machine_price == "fit":
                top = self.res.capacity.max(axis=0)[None, :, None]
                price = np.where(top > 0, per_machine / top**2, 0.0)
            else:
                load = np.where(cap_m > 0, 1.0 - per_machine / cap_m, 0.0)
                price = np.where(cap_m > 0, (1.0 + load) / cap_m, 0.0)
        return LpInstance(
            widths=(stops - starts).astype(np.int64),
            n_colo=len(self.colo),
            group_sizes=sizes,
            cap=per_machine * sizes[:, None, None],
            price=price,
        )


def blocks_for(
    a: int, deadline: int, max_blocks: int, cuts: tuple[int, ...] = ()
) -> tuple[IntArray, IntArray]:
    """Split [a, deadline] into at most ``max_blocks`` blocks of whole slots.

    Every slot is its own block when the window is short enough. Otherwise blocks start
    at the given ``cuts`` (slots where residual capacity changes, most important first;
    at most half the budget), and the longest blocks are halved until the budget is
    used: a block's capacity is its minimum, so boundaries where capacity changes (above
    all, where the cluster becomes free) keep the merged LP close to the slot LP.
    """
    length = deadline - a + 1
    if length <= max(1, max_blocks):
        starts = np.arange(a, deadline + 1, dtype=np.int64)
        return starts, starts + 1
    budget = max(1, max_blocks)
    inside = [c for c in dict.fromkeys(cuts) if a < c <= deadline][: budget // 2]
    bounds = sorted({a, deadline + 1, *inside})
    while len(bounds) - 1 < budget:
        widths = np.diff(bounds)
        i = int(np.argmax(widths))
        if widths[i] <= 1:
            break
        bounds.insert(i + 1, bounds[i] + int(widths[i]) // 2)
    arr = np.array(bounds, dtype=np.int64)
    return arr[:-1], arr[1:]


def prepare(
    job: JobRequest,
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    candidates: bool = True,
    residual: Residual | None = None,
) -> Arrival:
    """Everything a decision for ``job`` shares. With ``candidates=False`` the top-k
    co-location machines and the machine groups are left empty (the exact fast path needs
    neither); :func:`with_candidates` adds them. ``residual``: the snapshot's residual from
    the decision slot on when the caller already has it (a re-plan keeps one)."""
    a = max(job.arrival_slot, snapshot.now_slot)
    shape = JobShape.of(job, snapshot.slot_seconds)
    res = residual if residual is not None and residual.t0 == a else residual_from(snapshot, a)
    d_min = job.shortest_slots(snapshot.slot_seconds)
    arr = Arrival(job, shape, res, a, d_min, (), (), params)
    return with_candidates(arr) if candidates else arr


def with_candidates(arr: Arrival) -> Arrival:
    """``arr`` with its co-location candidates (top-k) and groups of identical machines."""
    params, res = arr.params, arr.res
    end = max(arr.a + math.ceil(params.horizon_factor * arr.d_min), res.free_after + 1)
    colo = _top_k(res, arr.shape, arr.a, end, params.top_k_colocated, params.machine_price)
    if params.group_identical:
        rest = identical_groups(res, set(colo))
    else:
        rest = [[h] for h in range(res.n_machines) if h not in set(colo)]
    groups = tuple((h,) for h in colo) + tuple(tuple(g) for g in rest)
    return replace(arr, colo=tuple(colo), groups=groups)


def _top_k(
    res: Residual, shape: JobShape, a: int, end: int, k: int, price: str = "load"
) -> list[int]:
    """The k machines with the most room for co-located workers over [a, end), weighted by
    how long each residual segment lasts; machines that never hold one worker and one PS
    are left out. Ties go to the lower machine index (``price`` ``fit``: to the machine
    with the least room left in its first segment, Σ_r C̃/max C, then the lower index)."""
    if k <= 0:
        return []
    starts = res.seg_starts
    stops = np.r_[starts[1:], max(end, int(starts[-1]) + 1)]
    weight = (np.clip(stops, a, end) - np.clip(starts, a, end)).astype(np.float64)
    live = np.flatnonzero(weight > 0)
    if len(live) == 0:
        return []
    seg = res.seg_res[:, :, live] - shape.beta[None, :, None]  # (H, 3, S')
    mask = shape.alpha > 0
    if mask.any():
        q = np.floor(np.maximum(seg[:, mask, :], 0.0) / shape.alpha[mask][None, :, None] + EPS)
        fit = np.minimum(q.min(axis=1), float(shape.n_max))  # (H, S')
        fit = np.where((seg >= -1e-9).all(axis=1), fit, 0.0)  # the PS must fit too
    else:
        fit = np.where((seg >= -1e-9).all(axis=1), float(shape.n_max), 0.0)
    room = fit @ weight[live]
    best = fit.max(axis=1)
    tie = np.zeros(res.n_machines)
    if price == "fit":
        top = res.capacity.max(axis=0)
        used = top > 0
        tie = (res.seg_res[:, used, live[0]] / top[used]).sum(axis=1)
    order = np.lexsort((np.arange(res.n_machines), tie, -room))
    return [int(h) for h in order if best[h] >= 1][:k]


def slot_plan(
    slot: int,
    mode: Mode,
    names: tuple[str, ...],
    workers: FloatArray | IntArray,
    ps: FloatArray | IntArray,
) -> SlotPlan:
    w = tuple((names[h], int(workers[h])) for h in np.flatnonzero(workers > 0))
    s = tuple((names[h], int(ps[h])) for h in np.flatnonzero(ps > 0))
    return SlotPlan(slot=slot, mode=mode, workers=w, ps=s)
