r"""The full integer program (docs/formulation.md §9; MODEL.md §3): ``exact`` and the LP bound.

All jobs are scheduled together over the slots :math:`T = \{t_0, \dots, H-1\}`, where
:math:`t_0` is ``snapshot.now_slot`` and :math:`H` the (exclusive) horizon. Solved as an
integer program it is the offline optimum (small instances only); its LP relaxation is a
lower bound on the total completion time :math:`\sum_i (e_i - a_i + 1)`.

Sets

====================  ==========================================================
:math:`i \in I`       jobs
:math:`h \in M`       machines
:math:`r \in R`       resource types (gpu, cpu, mem)
:math:`t \in T_i`     the job's slots :math:`\{\max(a_i, t_0), \dots, H-1\}`
====================  ==========================================================

Parameters

======================  ========================================================
:math:`a_i`             arrival slot
:math:`V_i`             workload (mini-batches)
:math:`N_i`             maximum number of workers
:math:`\alpha_{ir}`     one worker's demand of resource r
:math:`\beta_{ir}`      one PS's demand of resource r
:math:`\nu^{in}_i`      co-located rate of one worker per slot, :math:`\Delta/\theta_{in}`
:math:`\nu^{ex}_i`      distributed rate of one worker per slot, :math:`\Delta/\theta_{ex}`
:math:`\rho_i`          PSs per distributed worker, :math:`b_{ex}/B_{ex}`
:math:`S_i`             fixed PS count in distributed mode (jobs with ``ps_count`` only)
:math:`\tilde C_{hrt}`  residual capacity
                        :math:`\max(0, C_{hr} - \sum_{k \ni t} \mathrm{usage}_{khr})`
                        over the snapshot's reservations k of h that cover slot t
:math:`L_{iht}`         most co-located workers h can hold in t:
                        :math:`\min(N_i, \lfloor(\tilde C_{ht} - \beta_i)/\alpha_i\rfloor)`
:math:`L^D_{it}`        most distributed workers the cluster can hold in t:
                        :math:`\min(N^D_i, \sum_h \lfloor \tilde C_{ht}/\alpha_i \rfloor)`
                        (MODEL.md writes N_i in (3)–(4): the same integer program,
                        a weaker relaxation; see docs/formulation.md)
======================  ========================================================

Decision variables, for :math:`t \in T_i`

===============================  ====================================================
:math:`u_{iht} \in \{0,1\}`      job i runs co-located on machine h
:math:`v_{it} \in \{0,1\}`       job i runs distributed
:math:`z_{it} \in \{0,1\}`       job i is still running (has not completed)
:math:`wL_{iht}, sL_{iht}`       co-located worker count, PS count (:math:`\le 1`)
:math:`wD_{iht}, sD_{iht}`       distributed worker count, PS count on machine h
===============================  ====================================================

Objective (total completion time; the constant counts the slots a job waited before
:math:`t_0`, which the program does not cover)

.. math::

    \min \sum_{i \in I} \Big( \max(0, t_0 - a_i) + \sum_{t \in T_i} z_{it} \Big)

subject to, for every job i, slot :math:`t \in T_i`, machine h, resource r:

.. math::

    \sum_{h} u_{iht} + v_{it} &\le z_{it}                                   && \text{(1) mode}

    z_{i,t+1} &\le z_{it}                                                   && \text{(2) running}

    wL_{iht} \le L_{iht} u_{iht}, \quad sL_{iht} &\le u_{iht}               && \text{(3) link}

    \sum_h wD_{iht} \le L^D_{it} v_{it}, \quad \sum_h sD_{iht} &\le N_i v_{it} && \text{(4) link}

    \sum_{t \in T_i} \frac{1}{V_i} \Big( \nu^{in}_i \sum_h wL_{iht}
        + \nu^{ex}_i \sum_h wD_{iht} \Big) &\ge 1                           && \text{(5) work}

    \sum_{i : t \in T_i} \alpha_{ir} (wL_{iht} + wD_{iht})
        + \beta_{ir} (sL_{iht} + sD_{iht}) &\le \tilde C_{hrt}              && \text{(6) capacity}

    \sum_h sD_{iht} \ge \rho_i \sum_h wD_{iht}, \quad sL_{iht} &\ge u_{iht} && \text{(7) PS cover}

    \sum_h sD_{iht} &\le \sum_h wD_{iht}                                    && \text{(8) PS cap}

    \sum_h sD_{iht} &= S_i v_{it}                                           && \text{(9) fixed PSs}

    u, v, z \in \{0,1\}, \quad wL, wD, sD \in \{0, \dots, N_i\},
        \quad sL &\in \{0, 1\}                                              && \text{(10)}

(9) only for jobs with a fixed PS count. The LP relaxation (``relax=True``) replaces (10)
by :math:`u, v, z, sL \in [0,1]` and :math:`wL, wD, sD \in [0, N_i]`. Nothing exists
before :math:`a_i` (no variables), so (1)+(2) force :math:`z_{it} = 1` from the first
slot through the job's last working slot, and the objective counts exactly
:math:`e_i - a_i + 1` at an optimum. (5) is hard: a horizon too short to finish every job
makes the program infeasible (:class:`~slurm_mlsched.errors.InfeasibleError`).

:func:`default_horizon` gives a horizon inside which every optimal schedule ends, so the
``exact`` optimum is the unrestricted one and the ``lp-bound`` a lower bound on every
schedule. (The LP value itself falls as the horizon grows, since fractional work can
spread over more slots: the smallest horizon that holds the optimum gives the tightest
valid bound.)

Extraction: a slot is a running slot of a job when its mode holds at least one worker
(a PS-only slot is dropped), and workers beyond what covers :math:`V_i` (which cost
nothing in the objective) are trimmed from the latest slots, with the PSs of distributed
slots reduced to what the PS rule needs; the completion term is unchanged at an optimum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import metadata
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt

from ...errors import InfeasibleError, InputError, NeverFitsError, SolverError
from ...model import ClusterSnapshot, Decision, Form, JobRequest, Machine, Mode, SlotPlan, speed
from ...model.decision import merge_runs
from ..params import PlacementParams
from .eligibility import BoolArray, allowed, masked
from .feasibility import check_could_ever_fit
from .packing import first_fit, fit_counts
from .residual import residual_from

FloatArray = npt.NDArray[np.float64]
#: (job index, machine index, absolute slot) and (job index, absolute slot).
Key3 = tuple[int, int, int]
Key2 = tuple[int, int]
#: A PuLP variable (PuLP ships no type information).
LpVar = Any

_EPS = 1e-9


class Outcome(StrEnum):
    """The solver's outcome, from PuLP's ``status`` and ``sol_status`` together."""

    OPTIMAL = "optimal"
    FEASIBLE_TIME_LIMIT = "feasible-time-limit"  # a solution, optimality not proven
    INFEASIBLE = "infeasible"
    NO_SOLUTION_TIME_LIMIT = "no-solution-time-limit"
    ERROR = "error"


@dataclass(frozen=True)
class Program:
    """The built program: the PuLP problem and its variables, keyed by index and slot.

    Keys are ``(i, h, t)`` / ``(i, t)``: i indexes ``jobs``, h ``machines``, t is an
    absolute slot in ``[max(a_i, first_slot), horizon)``.
    """

    problem: Any  # pulp.LpProblem
    jobs: tuple[JobRequest, ...]
    machines: tuple[str, ...]
    first_slot: int
    horizon: int
    relax: bool
    slot_seconds: float
    offset: float  # Σ_i max(0, t0 − a_i): slots waited before the program's first slot
    u: Mapping[Key3, LpVar]
    v: Mapping[Key2, LpVar]
    w_loc: Mapping[Key3, LpVar]
    s_loc: Mapping[Key3, LpVar]
    w_dist: Mapping[Key3, LpVar]
    s_dist: Mapping[Key3, LpVar]
    z: Mapping[Key2, LpVar]

    def job_slots(self, i: int) -> range:
        return range(max(self.jobs[i].arrival_slot, self.first_slot), self.horizon)


@dataclass(frozen=True)
class ProgramValues:
    """Variable values of a solution, keyed like :class:`Program`'s variables."""

    u: Mapping[Key3, float]
    v: Mapping[Key2, float]
    w_loc: Mapping[Key3, float]
    s_loc: Mapping[Key3, float]
    w_dist: Mapping[Key3, float]
    s_dist: Mapping[Key3, float]
    z: Mapping[Key2, float]


@dataclass(frozen=True)
class ProgramResult:
    """A solved program: outcome, objective (with the constant), bound, time, solver."""

    outcome: Outcome
    objective: float
    best_bound: float | None
    wall_ms: float
    solver: str
    solver_version: str
    solver_status: str  # HiGHS's own model status, for the record
    values: ProgramValues

    @property
    def time_limit_hit(self) -> bool:
        return self.outcome is Outcome.FEASIBLE_TIME_LIMIT


@dataclass(frozen=True)
class ExactResult:
    """The offline optimum of a set of jobs: one elastic decision per job."""

    decisions: tuple[Decision, ...]
    objective: float
    outcome: Outcome
    time_limit_hit: bool
    best_bound: float | None
    horizon: int
    wall_ms: float
    solver_version: str


# --------------------------------------------------------------------------- building


def _pulp() -> Any:
    """PuLP, imported on first use (it takes half a second, and only ``exact`` and
    ``lp-bound`` need it)."""
    import pulp

    return pulp


def build_program(
    jobs: Sequence[JobRequest], snapshot: ClusterSnapshot, horizon: int, relax: bool
) -> Program:
    """Build the program of MODEL.md §3 over slots ``[snapshot.now_slot, horizon)``.

    Pure: nothing is solved. ``relax=True`` builds the LP relaxation.
    """
    jobs_t = tuple(jobs)
    _check_inputs(jobs_t, snapshot, horizon)
    t0 = snapshot.now_slot
    prob = _pulp().LpProblem("lp_bound" if relax else "exact", _pulp().LpMinimize)
    room = _residual(snapshot, t0, horizon)
    builder = _Builder(prob, relax, len(snapshot.machines), snapshot.slot_seconds)
    builder.room, builder.t0, builder.machines = room, t0, snapshot.machines
    for i, job in enumerate(jobs_t):
        builder.add_job(i, job, range(max(job.arrival_slot, t0), horizon))
    builder.add_capacity(jobs_t, room, t0)
    offset = float(sum(max(0, t0 - job.arrival_slot) for job in jobs_t))
    prob.setObjective(_pulp().LpAffineExpression([(z, 1.0) for z in builder.z.values()], offset))
    return Program(
        problem=prob,
        jobs=jobs_t,
        machines=tuple(m.name for m in snapshot.machines),
        first_slot=t0,
        horizon=horizon,
        relax=relax,
        slot_seconds=snapshot.slot_seconds,
        offset=offset,
        u=builder.u,
        v=builder.v,
        w_loc=builder.w_loc,
        s_loc=builder.s_loc,
        w_dist=builder.w_dist,
        s_dist=builder.s_dist,
        z=builder.z,
    )


def _check_inputs(jobs: tuple[JobRequest, ...], snapshot: ClusterSnapshot, horizon: int) -> None:
    if not jobs:
        raise InputError("the program needs at least one job")
    if not snapshot.machines:
        raise NeverFitsError("the cluster has no machines", hint="describe at least one node")
    ids = [job.job_id for job in jobs]
    if len(set(ids)) != len(ids):
        dup = sorted({j for j in ids if ids.count(j) > 1})
        raise InputError(f"duplicate job ids: {dup}", context={"job_ids": ", ".join(dup)})
    if horizon <= snapshot.now_slot:
        raise InputError(
            f"horizon {horizon} must be after the current slot {snapshot.now_slot}",
            hint="pass a larger horizon, or none to use default_horizon()",
            context={"horizon": horizon, "now_slot": snapshot.now_slot},
        )
    late = [job.job_id for job in jobs if job.arrival_slot >= horizon]
    if late:
        raise InfeasibleError(
            f"jobs {late} arrive at or after the horizon {horizon}",
            hint="raise the horizon, or omit it to use default_horizon()",
            context={"horizon": horizon},
        )


class _Builder:
    """Creates the variables and rows of one program (used only by build_program)."""

    def __init__(self, prob: Any, relax: bool, n_machines: int, slot_seconds: float) -> None:
        self.prob = prob
        self.relax = relax
        self.n_machines = n_machines
        self.slot_seconds = slot_seconds
        self.u: dict[Key3, LpVar] = {}
        self.v: dict[Key2, LpVar] = {}
        self.w_loc: dict[Key3, LpVar] = {}
        self.s_loc: dict[Key3, LpVar] = {}
        self.w_dist: dict[Key3, LpVar] = {}
        self.s_dist: dict[Key3, LpVar] = {}
        self.z: dict[Key2, LpVar] = {}
        self.room: FloatArray | None = None  # residual (T, H, 3) after fixed reservations
        self.t0 = 0
        self.machines: tuple[Machine, ...] = ()

    def allowed(self, job: JobRequest) -> BoolArray | None:
        """Per machine, whether the job's GPU tasks may go there (None: everywhere)."""
        return allowed(job, self.machines) if self.machines else None

    def var(self, name: str, upper: float) -> LpVar:
        cat = _pulp().LpContinuous if self.relax else _pulp().LpInteger
        return self.prob.add_variable(name, 0, upper, cat)

    def row(self, name: str, terms: list[tuple[LpVar, float]], sense: int, rhs: float) -> None:
        expr = _pulp().LpAffineExpression(terms)
        self.prob.addConstraint(_pulp().LpConstraint(expr, sense, name, rhs))

    def rates(self, job: JobRequest) -> tuple[float, float]:
        """Per-worker rates (ν_in, ν_ex) of the work row: the time model's
        (:func:`~...model.speed.worker_rates`: an allreduce job's floors) for the integer
        program, what no worker beats for the relaxation (lp-bound must stay a bound; an
        allreduce worker: Δ/τ in both modes)."""
        if self.relax and job.is_allreduce:
            top = speed.upper_worker_rate(job, self.slot_seconds)
            return top, top
        return speed.worker_rates(job, self.slot_seconds)

    def add_job(self, i: int, job: JobRequest, slots: range) -> None:
        nu_in, nu_ex = self.rates(job)
        nu_in, nu_ex = nu_in / job.workload, nu_ex / job.workload
        work: list[tuple[LpVar, float]] = []
        done: LpVar | None = None  # share of the work done before slot t (relaxation only)
        ge, eq = _pulp().LpConstraintGE, _pulp().LpConstraintEQ
        for t in slots:
            self.add_slot(i, job, t, first=t == slots.start)
            step = [
                pair
                for h in range(self.n_machines)
                for pair in ((self.w_loc[i, h, t], nu_in), (self.w_dist[i, h, t], nu_ex))
            ]
            if self.relax:
                # completion cut (valid for the integer program): a job whose work is not
                # yet done is still running, z[i,t] ≥ 1 − done[i,t]; done[i,t+1] =
                # done[i,t] + the share trained in t (auxiliary, O(T) nonzeros)
                if done is not None:
                    self.row(f"cut_{i}_{t}", [(self.z[i, t], 1.0), (done, 1.0)], ge, 1.0)
                nxt = self.prob.add_variable(f"done_{i}_{t + 1}", 0, None, _pulp().LpContinuous)
                prev = [] if done is None else [(done, -1.0)]
                self.row(
                    f"cum_{i}_{t + 1}", [(nxt, 1.0), *prev, *((v, -c) for v, c in step)], eq, 0.0
                )
                done = nxt
            work += step
        self.row(f"work_{i}", work, ge, 1.0)  # (5)
        if self.relax:  # the job runs at least its shortest possible run
            shortest = float(job.shortest_slots(self.slot_seconds))
            self.row(f"shortest_{i}", [(self.z[i, t], 1.0) for t in slots], ge, shortest)

    def link_caps(self, job: JobRequest, t: int) -> tuple[list[float], float]:
        """Most workers each mode can hold in slot t (valid for the integer program):
        co-located on h, min(N, ⌊(C̃_h − β)/α⌋); distributed, min(N_D, Σ_h ⌊C̃_h/α⌋).
        The same strengthening as the per-arrival LP's ``tight_links``."""
        n = float(job.max_workers)
        if self.room is None:
            return [n] * self.n_machines, n
        free = masked(self.room[t - self.t0], self.allowed(job))  # (H, 3)
        alpha, beta = np.array(job.worker.as_tuple()), np.array(job.ps.as_tuple())
        colo = np.minimum(fit_counts(free - beta, alpha), n).astype(float)
        dist = min(float(fit_counts(free, alpha).sum()), float(job.max_distributed_workers()))
        return [max(c, 0.0) for c in colo], max(dist, 0.0)

    def add_slot(self, i: int, job: JobRequest, t: int, first: bool) -> None:
        n = float(job.max_workers)
        caps, dist_cap = self.link_caps(job, t)
        le, ge = _pulp().LpConstraintLE, _pulp().LpConstraintGE
        z = self.z[i, t] = self.var(f"z_{i}_{t}", 1)
        v = self.v[i, t] = self.var(f"v_{i}_{t}", 1)
        us, wds, sds = [], [], []
        ok = self.allowed(job)
        for h in range(self.n_machines):
            k = (i, h, t)
            # a node the job's GPU types exclude: its GPU tasks' variables are fixed at 0
            bad = ok is not None and not ok[h]
            nw = 0.0 if bad and job.worker.gpu > 0 else n
            ns = 0.0 if bad and job.ps.gpu > 0 else n
            u = self.u[k] = self.var(f"u_{i}_{h}_{t}", 1 if nw and ns else 0)
            wl = self.w_loc[k] = self.var(f"wL_{i}_{h}_{t}", nw)
            sl = self.s_loc[k] = self.var(f"sL_{i}_{h}_{t}", min(1.0, ns))
            wds.append(self.var(f"wD_{i}_{h}_{t}", nw))
            sds.append(self.var(f"sD_{i}_{h}_{t}", ns))
            self.w_dist[k], self.s_dist[k] = wds[-1], sds[-1]
            us.append(u)
            self.row(f"linkw_{i}_{h}_{t}", [(wl, 1.0), (u, -caps[h])], le, 0.0)  # (3)
            self.row(f"links_{i}_{h}_{t}", [(sl, 1.0), (u, -1.0)], le, 0.0)  # (3)
            self.row(f"psloc_{i}_{h}_{t}", [(sl, 1.0), (u, -1.0)], ge, 0.0)  # (7)
        self.row(f"mode_{i}_{t}", [(u, 1.0) for u in us] + [(v, 1.0), (z, -1.0)], le, 0.0)  # (1)
        if not first:
            self.row(f"run_{i}_{t}", [(z, 1.0), (self.z[i, t - 1], -1.0)], le, 0.0)  # (2)
        self.add_distributed_rows(i, job, t, v, wds, sds, dist_cap)

    def add_distributed_rows(
        self,
        i: int,
        job: JobRequest,
        t: int,
        v: LpVar,
        wds: list[LpVar],
        sds: list[LpVar],
        dist_cap: float,
    ) -> None:
        n = float(job.max_workers)
        le, ge = _pulp().LpConstraintLE, _pulp().LpConstraintGE
        ws = [(w, 1.0) for w in wds]
        ss = [(s, 1.0) for s in sds]
        self.row(f"linkwd_{i}_{t}", [*ws, (v, -dist_cap)], le, 0.0)  # (4)
        self.row(f"linksd_{i}_{t}", [*ss, (v, -n)], le, 0.0)  # (4)
        if job.is_allreduce:  # no PS: the PS rows (7)-(9) do not apply (formulation §18.2)
            return
        rho = job.profile.ps_per_worker
        self.row(f"pscov_{i}_{t}", ss + [(w, -rho) for w in wds], ge, 0.0)  # (7)
        self.row(f"pscap_{i}_{t}", ss + [(w, -1.0) for w in wds], le, 0.0)  # (8)
        if job.ps_count is not None:  # (9)
            self.row(
                f"psfix_{i}_{t}", [*ss, (v, -float(job.ps_count))], _pulp().LpConstraintEQ, 0.0
            )

    def add_capacity(self, jobs: tuple[JobRequest, ...], room: FloatArray, t0: int) -> None:
        """(6): one row per machine, resource and slot that some job's demand touches."""
        demands = [(np.array(j.worker.as_tuple()), np.array(j.ps.as_tuple())) for j in jobs]
        for t in range(t0, t0 + room.shape[0]):
            active = [i for i, job in enumerate(jobs) if t >= max(job.arrival_slot, t0)]
            for h in range(self.n_machines):
                for r in range(room.shape[2]):
                    terms: list[tuple[LpVar, float]] = []
                    for i in active:
                        alpha, beta = float(demands[i][0][r]), float(demands[i][1][r])
                        k = (i, h, t)
                        if alpha > 0:
                            terms += [(self.w_loc[k], alpha), (self.w_dist[k], alpha)]
                        if beta > 0:
                            terms += [(self.s_loc[k], beta), (self.s_dist[k], beta)]
                    if terms:
                        rhs = float(room[t - t0, h, r])
                        self.row(f"cap_{h}_{r}_{t}", terms, _pulp().LpConstraintLE, rhs)


def _residual(snapshot: ClusterSnapshot, start: int, stop: int) -> FloatArray:
    """Residual capacity C̃[t, h, r] for the slots [start, stop), clipped at 0.

    The segments of :func:`~slurm_mlsched.placement.program.residual.residual_from` (the same
    subtraction yu-rr uses), made dense: one row per slot.
    """
    _check_reservation_machines(snapshot)
    res = residual_from(snapshot, start)
    slots = np.arange(start, max(start, stop), dtype=np.int64)
    segment = np.searchsorted(res.seg_starts, slots, side="right") - 1
    out: FloatArray = np.ascontiguousarray(res.seg_res[:, :, segment].transpose(2, 0, 1))
    return out


def _check_reservation_machines(snapshot: ClusterSnapshot) -> None:
    """Every reservation names a machine of the snapshot (past ones included)."""
    index = snapshot.machine_index()
    for res in snapshot.reservations:
        if res.machine not in index:
            raise InputError(
                f"reservation of job {res.job_id!r} on unknown machine {res.machine!r}",
                hint="reservations must name machines of the snapshot",
                context={"machine": res.machine},
            )


# --------------------------------------------------------------------------- solving


def solve_program(
    program: Program, time_limit_s: float, mip_rel_gap: float, threads: int = 1
) -> ProgramResult:
    """Solve ``program`` with HiGHS in-process through PuLP.

    Returns on an optimal solution and on a solution found before the time limit (then
    ``time_limit_hit`` is true). Raises :class:`InfeasibleError` when the program is
    infeasible and :class:`SolverError` when no solution was found.
    """
    _check_solver_args(time_limit_s, mip_rel_gap, threads)
    solver = _pulp().HiGHS(
        mip=not program.relax,
        msg=False,
        timeLimit=time_limit_s,
        gapRel=mip_rel_gap,
        threads=threads,
    )
    prob = program.problem
    try:
        prob.solve(solver)
    except _pulp().PulpSolverError as exc:
        raise SolverError(f"HiGHS failed: {exc}", context={"solver": "highs"}) from exc
    status_name, limit_reached, dual_bound = _highs_details(prob.solverModel)
    outcome = map_outcome(int(prob.status), int(prob.sol_status), limit_reached)
    _raise_for(outcome, program, status_name, time_limit_s)
    objective = float(_pulp().value(prob.objective))
    if outcome is Outcome.OPTIMAL and program.relax:
        best_bound: float | None = objective
    elif math.isfinite(dual_bound) and not program.relax:
        best_bound = dual_bound + program.offset
    else:
        best_bound = None
    return ProgramResult(
        outcome=outcome,
        objective=objective,
        best_bound=best_bound,
        wall_ms=1000.0 * float(prob.solutionTime),
        solver="highs-lp" if program.relax else "highs-mip",
        solver_version=solver_version(),
        solver_status=status_name,
        values=_values(program),
    )


def map_outcome(status: int, sol_status: int, limit_reached: bool) -> Outcome:
    """Map PuLP's ``status`` and ``sol_status`` (and whether a limit stopped HiGHS)."""
    if status == _pulp().LpStatusOptimal and sol_status == _pulp().LpSolutionOptimal:
        return Outcome.OPTIMAL
    if status == _pulp().LpStatusOptimal and sol_status == _pulp().LpSolutionIntegerFeasible:
        return Outcome.FEASIBLE_TIME_LIMIT
    if status == _pulp().LpStatusInfeasible or sol_status == _pulp().LpSolutionInfeasible:
        return Outcome.INFEASIBLE
    if (
        status == _pulp().LpStatusNotSolved
        and sol_status == _pulp().LpSolutionNoSolutionFound
        and limit_reached
    ):
        return Outcome.NO_SOLUTION_TIME_LIMIT
    return Outcome.ERROR


def _raise_for(outcome: Outcome, program: Program, status_name: str, time_limit_s: float) -> None:
    context: dict[str, object] = {
        "horizon": program.horizon,
        "jobs": len(program.jobs),
        "solver_status": status_name,
    }
    if outcome is Outcome.INFEASIBLE:
        raise InfeasibleError(
            f"the {'LP relaxation' if program.relax else 'integer program'} of "
            f"{len(program.jobs)} job(s) is infeasible within the horizon {program.horizon}",
            hint="raise the horizon (or omit it: default_horizon() always leaves room)",
            context=context,
        )
    if outcome is Outcome.NO_SOLUTION_TIME_LIMIT:
        raise SolverError(
            f"HiGHS found no solution within the time limit of {time_limit_s:g} s",
            hint="raise the time limit, or solve a smaller instance",
            context=context,
        )
    if outcome is Outcome.ERROR:
        raise SolverError(f"HiGHS ended without a solution ({status_name})", context=context)


def _check_solver_args(time_limit_s: float, mip_rel_gap: float, threads: int) -> None:
    if not (time_limit_s > 0 and math.isfinite(time_limit_s)):
        raise InputError(f"time limit must be a finite number > 0 s, got {time_limit_s!r}")
    if not (mip_rel_gap >= 0 and math.isfinite(mip_rel_gap)):
        raise InputError(f"MIP relative gap must be >= 0, got {mip_rel_gap!r}")
    if threads < 1:
        raise InputError(f"threads must be >= 1, got {threads}")


def _highs_details(model: highspy.Highs | None) -> tuple[str, bool, float]:
    """HiGHS's model status name, whether a limit stopped it, and its MIP dual bound."""
    if model is None:
        return ("not run", False, math.nan)
    status = model.getModelStatus()
    limits = {
        highspy.HighsModelStatus.kTimeLimit,
        highspy.HighsModelStatus.kIterationLimit,
        highspy.HighsModelStatus.kInterrupt,
    }
    bound = float(model.getInfo().mip_dual_bound)
    return (model.modelStatusToString(status), status in limits, bound)


@cache
def solver_version() -> str:
    """``pulp X; highspy Y`` from the installed packages' metadata."""
    parts = []
    for package in ("pulp", "highspy"):
        try:
            parts.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:  # pragma: no cover
            parts.append(f"{package} unknown")
    return "; ".join(parts)


def _values(program: Program) -> ProgramValues:
    def read(vars_: Mapping[Any, LpVar]) -> dict[Any, float]:
        return {k: float(var.varValue or 0.0) for k, var in vars_.items()}

    return ProgramValues(
        u=read(program.u),
        v=read(program.v),
        w_loc=read(program.w_loc),
        s_loc=read(program.s_loc),
        w_dist=read(program.w_dist),
        s_dist=read(program.s_dist),
        z=read(program.z),
    )


# --------------------------------------------------------------------------- exact, lp-bound


def solve_exact(
    jobs: Sequence[JobRequest],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    horizon: int | None = None,
) -> ExactResult:
    """The offline optimum of ``jobs`` on ``snapshot``: one elastic decision per job.

    ``horizon`` defaults to :func:`default_horizon`. The solver's time limit and gap
    come from ``params``; reaching the limit is reported in the result.
    """
    jobs_t = tuple(jobs)
    stop = default_horizon(jobs_t, snapshot) if horizon is None else horizon
    program = build_program(jobs_t, snapshot, stop, relax=False)
    result = solve_program(program, params.time_limit_s, params.mip_rel_gap)
    decisions = tuple(_decision(program, result, i, params) for i in range(len(jobs_t)))
    return ExactResult(
        decisions=decisions,
        objective=result.objective,
        outcome=result.outcome,
        time_limit_hit=result.time_limit_hit,
        best_bound=result.best_bound,
        horizon=stop,
        wall_ms=result.wall_ms,
        solver_version=result.solver_version,
    )


def lp_bound(
    jobs: Sequence[JobRequest],
    snapshot: ClusterSnapshot,
    horizon: int | None = None,
    time_limit_s: float = 60.0,
) -> float:
    """The LP relaxation's optimum: a lower bound on Σ_i (e_i − a_i + 1).

    With the default horizon it bounds every schedule, not only those inside a horizon.
    """
    jobs_t = tuple(jobs)
    stop = default_horizon(jobs_t, snapshot) if horizon is None else horizon
    result = solve_program(build_program(jobs_t, snapshot, stop, relax=True), time_limit_s, 0.0)
    if result.outcome is not Outcome.OPTIMAL:
        raise SolverError(
            "the LP relaxation stopped before optimality: its value is no lower bound",
            hint="raise the time limit",
            context={"solver_status": result.solver_status, "horizon": stop},
        )
    return result.objective


def _decision(program: Program, result: ProgramResult, i: int, params: PlacementParams) -> Decision:
    job = program.jobs[i]
    delta = program.slot_seconds
    plans = _job_plans(program, result.values, i)
    plans, work = _trim_excess(job, plans, *speed.worker_rates(job, delta))
    if not plans:
        raise SolverError(
            f"the solution runs no worker of job {job.job_id!r}",
            context={"job_id": job.job_id, "solver_status": result.solver_status},
        )
    notes = [f"outcome: {result.outcome}", f"horizon: {program.horizon}"]
    if result.time_limit_hit:
        notes.append("time limit reached: the schedule is feasible, optimality is not proven")
    if params.form is not Form.ELASTIC:
        notes.append("exact schedules are elastic: params.form is ignored")
    stats = [("objective", result.objective), ("horizon", float(program.horizon))]
    if result.best_bound is not None:
        stats.append(("best_bound", result.best_bound))
    return Decision(
        job_id=job.job_id,
        policy="exact",
        form=Form.ELASTIC,
        seed=params.seed,
        slots=merge_runs(plans),
        start_slot=plans[0].slot,
        end_slot=plans[-1].slot,
        work_covered=work,
        arrival_slot=job.arrival_slot,
        lp_value=result.objective,
        solver=result.solver,
        solver_version=result.solver_version,
        timings_ms=(("solve", result.wall_ms),),
        notes=tuple(notes),
        stats=tuple(stats),
    )


def _job_plans(program: Program, values: ProgramValues, i: int) -> list[SlotPlan]:
    """One plan per slot in which the job's mode holds at least one worker."""
    names = program.machines
    plans: list[SlotPlan] = []
    for t in program.job_slots(i):
        on = [h for h in range(len(names)) if values.u[i, h, t] > 0.5]
        if on:
            h = on[0]
            w = round(values.w_loc[i, h, t])
            if w > 0:
                plans.append(SlotPlan(t, Mode.COLOCATED, ((names[h], w),), ((names[h], 1),)))
            continue
        if values.v[i, t] <= 0.5:
            continue
        workers = _counts(names, [values.w_dist[i, h, t] for h in range(len(names))])
        if workers:
            ps = _counts(names, [values.s_dist[i, h, t] for h in range(len(names))])
            plans.append(SlotPlan(t, Mode.DISTRIBUTED, workers, ps))
    return plans


def _counts(names: tuple[str, ...], xs: list[float]) -> tuple[tuple[str, int], ...]:
    return tuple((name, round(x)) for name, x in zip(names, xs, strict=True) if round(x) > 0)


def _trim_excess(
    job: JobRequest, plans: list[SlotPlan], nu_in: float, nu_ex: float
) -> tuple[list[SlotPlan], float]:
    """Drop workers that only over-cover the work, latest slots first; PSs follow."""
    rate = {Mode.COLOCATED: nu_in, Mode.DISTRIBUTED: nu_ex}
    covered = sum(rate[p.mode] * p.total_workers for p in plans)
    kept: list[SlotPlan] = []
    for plan in reversed(plans):
        excess = covered - job.workload
        w = plan.total_workers
        cut = max(0, min(w, math.floor(excess / rate[plan.mode]))) if excess > 0 else 0
        if plan.mode is Mode.DISTRIBUTED and cut < w and job.ps_count is not None:
            cut = min(cut, w - job.ps_count)
        if cut == w:
            covered -= rate[plan.mode] * w
            continue
        covered -= rate[plan.mode] * cut
        kept.append(_shrink(job, plan, w - cut))
    kept.reverse()
    return kept, covered


def _shrink(job: JobRequest, plan: SlotPlan, workers: int) -> SlotPlan:
    """The plan with ``workers`` workers (removed from the last machines first)."""
    new_workers = _take(plan.workers, workers)
    if plan.mode is Mode.COLOCATED:
        return SlotPlan(plan.slot, plan.mode, new_workers, plan.ps, plan.length)
    need = _distributed_ps(job, workers)
    ps = plan.ps if need is None or need >= plan.total_ps else _take(plan.ps, need)
    return SlotPlan(plan.slot, plan.mode, new_workers, ps, plan.length)


def _take(counts: tuple[tuple[str, int], ...], total: int) -> tuple[tuple[str, int], ...]:
    """Keep ``total`` of the counts, taking from the front (machine order)."""
    out: list[tuple[str, int]] = []
    left = total
    for name, c in counts:
        if left <= 0:
            break
        out.append((name, min(c, left)))
        left -= min(c, left)
    return tuple(out)


# --------------------------------------------------------------------------- horizon


def default_horizon(jobs: Sequence[JobRequest], snapshot: ClusterSnapshot) -> int:
    """An exclusive horizon inside which every optimal schedule of ``jobs`` ends.

    A greedy list schedule (jobs by arrival, then shortest possible run; each at the
    constant shape that finishes earliest in the capacity the reservations and the jobs
    before it leave) is feasible for the program and has a total completion C. In an
    optimal schedule job j's term is at most C minus the other jobs' shortest possible
    terms L_k (N workers co-located from max(a_k, t0)), so j ends before
    a_j + C − Σ_{k≠j} L_k. The horizon is the largest of these (at least the greedy
    makespan), + 1 slot of slack. For one job it is its earliest finish + 1. Raises
    :class:`NeverFitsError` for a job that could never run.
    """
    jobs_t = tuple(jobs)
    if not jobs_t:
        raise InputError("default_horizon needs at least one job")
    for job in jobs_t:
        check_could_ever_fit(job, snapshot)
    t0 = snapshot.now_slot
    lows = [_shortest_term(job, t0, snapshot.slot_seconds) for job in jobs_t]
    room = _Room(snapshot)
    finishes = [0] * len(jobs_t)
    for i in sorted(range(len(jobs_t)), key=lambda k: (jobs_t[k].arrival_slot, lows[k], k)):
        start, shape = room.earliest(jobs_t[i], max(jobs_t[i].arrival_slot, t0))
        room.take(start, shape)
        finishes[i] = start + shape.slots
    total = sum(f - job.arrival_slot for f, job in zip(finishes, jobs_t, strict=True))
    ends = [
        job.arrival_slot + total - (sum(lows) - low) for job, low in zip(jobs_t, lows, strict=True)
    ]
    return max(*ends, *finishes) + 1


def horizon_floor(jobs: Sequence[JobRequest], snapshot: ClusterSnapshot) -> int:
    """A cheap lower bound on :func:`default_horizon` (no schedule built): every job's
    arrival + shortest possible term, + 1. Callers that only need to know whether a
    program would be too large ask this first, so that a trace spanning decades never
    builds the greedy schedule's per-slot room."""
    t0 = snapshot.now_slot
    return max(j.arrival_slot + _shortest_term(j, t0, snapshot.slot_seconds) for j in jobs) + 1


def _shortest_term(job: JobRequest, t0: int, slot_seconds: float) -> int:
    """A lower bound on the job's completion term: N workers co-located from its start."""
    rate = speed.upper_rate(job, job.max_workers, slot_seconds)
    run = max(1, math.ceil(job.workload / rate - 1e-6))
    return max(job.arrival_slot, t0) - job.arrival_slot + run


@dataclass(frozen=True)
class _Shape:
    """A constant shape: its number of slots and its usage per machine and resource."""

    slots: int
    usage: FloatArray  # (H, R)


class _Room:
    """Residual capacity from t0 on, consumed by the shapes placed so far.

    Dense over [t0, free_from); every slot from ``free_from`` on is the empty cluster.
    """

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.cap = np.array([m.capacity.as_tuple() for m in snapshot.machines], dtype=np.float64)
        self.t0 = snapshot.now_slot
        free_from = max([self.t0, *(r.end_slot for r in snapshot.reservations)])
        self.room = _residual(snapshot, self.t0, free_from)
        self.slot_seconds = snapshot.slot_seconds
        self.machines = snapshot.machines

    @property
    def free_from(self) -> int:
        return self.t0 + int(self.room.shape[0])

    def window(self, start: int, length: int, ok: BoolArray | None = None) -> FloatArray:
        """Per machine, the least room over the slots [start, start + length) (no GPU room
        where ``ok`` excludes the machine)."""
        lo, hi = start - self.t0, min(start + length, self.free_from) - self.t0
        if hi <= lo:
            return masked(self.cap, ok)
        out: FloatArray = self.room[lo:hi].min(axis=0)
        return masked(out, ok)

    def take(self, start: int, shape: _Shape) -> None:
        stop = start + shape.slots
        if stop > self.free_from:
            more = np.repeat(self.cap[np.newaxis], stop - self.free_from, axis=0)
            self.room = np.concatenate([self.room, more])
        self.room[start - self.t0 : stop - self.t0] -= shape.usage

    def earliest(self, job: JobRequest, start: int) -> tuple[int, _Shape]:
        """The start and shape that finish ``job`` earliest, starting at ``start`` or later."""
        best: tuple[int, _Shape] | None = None
        for s in self._starts(start):
            if best is not None and s + 1 >= _finish(best):
                break
            shape = self.fastest(job, s)
            if shape is not None and (best is None or s + shape.slots < _finish(best)):
                best = (s, shape)
        if best is None:
            raise NeverFitsError(
                f"job {job.job_id!r} fits no constant shape even on the empty cluster",
                hint="check the PS bandwidth (B_ex below b_ex leaves no distributed shape)",
                context={"job_id": job.job_id},
            )
        return best

    def _starts(self, start: int) -> list[int]:
        """``start``, then every later slot where some machine's room grows, then
        ``free_from``: starting inside a stretch where room only shrinks is never better
        than at its beginning (the window minimum can only rise where room grows)."""
        lo = max(start - self.t0, 0)
        grows = np.flatnonzero((self.room[lo + 1 :] > self.room[lo:-1] + _EPS).any(axis=(1, 2)))
        later = [self.t0 + lo + 1 + int(k) for k in grows]
        tail = [self.free_from] if self.free_from > start else []
        return [start, *(t for t in later if t > start), *tail]

    def fastest(self, job: JobRequest, start: int) -> _Shape | None:
        """The constant shape with fewest slots that fits from ``start`` on, or None."""
        alpha, beta = np.array(job.worker.as_tuple()), np.array(job.ps.as_tuple())
        nu_in, nu_ex = speed.worker_rates(job, self.slot_seconds)
        best: _Shape | None = None
        ok = allowed(job, self.machines)
        for w in range(1, job.max_workers + 1):
            d = _slots_for(job.workload, w * nu_in)
            if best is not None and d >= best.slots:
                continue
            room = self.window(start, d, ok)
            fits = np.flatnonzero(np.all(alpha * w + beta <= room + _EPS, axis=1))
            if fits.size:
                usage = np.zeros_like(self.cap)
                usage[fits[0]] = alpha * w + beta
                best = _Shape(d, usage)
        for w in range(job.min_distributed_workers(), job.max_distributed_workers() + 1):
            n_ps = _distributed_ps(job, w)
            d = _slots_for(job.workload, w * nu_ex)
            if n_ps is None or (best is not None and d >= best.slots):
                continue
            usage_or_none = _first_fit(self.window(start, d, ok), beta, n_ps, alpha, w)
            if usage_or_none is not None:
                best = _Shape(d, usage_or_none)
        return best


def _finish(placed: tuple[int, _Shape]) -> int:
    return placed[0] + placed[1].slots


def _distributed_ps(job: JobRequest, workers: int) -> int | None:
    """PSs of a distributed shape satisfying (7), (8), (9), or None if there is none."""
    if job.is_allreduce:
        return 0
    rho = job.profile.ps_per_worker
    s = job.ps_count if job.ps_count is not None else max(1, math.ceil(workers * rho - _EPS))
    if s > workers or s < workers * rho - _EPS:
        return None
    return s


def _slots_for(workload: float, rate: float) -> int:
    return max(1, math.ceil(workload / rate - _EPS))


def _first_fit(
    room: FloatArray, beta: FloatArray, n_ps: int, alpha: FloatArray, workers: int
) -> FloatArray | None:
    """First-fit in machine order, the PSs then the workers (placement/program/packing.py): their
    usage per machine, or None if some task does not fit."""
    left = room.copy()
    order = np.arange(room.shape[0], dtype=np.int64)
    ps_at = first_fit(left, beta, n_ps, order)
    workers_at = first_fit(left, alpha, workers, order)
    if int(ps_at.sum()) < n_ps or int(workers_at.sum()) < workers:
        return None
    usage: FloatArray = ps_at[:, None] * beta + workers_at[:, None] * alpha
    return usage


# --------------------------------------------------------------------------- policy


def exact_policy(job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams) -> Decision:
    """Per-arrival optimum: this job alone, against the snapshot's reservations (elastic)."""
    return solve_exact([job], snapshot, params).decisions[0]
