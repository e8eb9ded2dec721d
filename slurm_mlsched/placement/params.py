"""Named parameters of every placement policy (docs/formulation.md §10, §14.6).

Every choice MODEL.md leaves open is a field here with its default, documented in
``docs/formulation.md``; a decision stores the parameters it was taken with. Beside them,
what every placement run shares: the one signature of an arrival policy
(:data:`ArrivalFn`) and the per-job seed of the online loop (:func:`derive_seed`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from ..model import ClusterSnapshot, Decision, Form, JobRequest


class Binding(StrEnum):
    """When a job's resources are fixed (MODEL.md §4b, docs/formulation.md §14)."""

    LATE = "late"  # a job that cannot start now holds nothing; the queue is re-planned
    EARLY = "early"  # §4 read literally: the whole future is booked at the arrival


#: The values of ``PlacementParams.machine_price``.
MACHINE_PRICES = ("fit", "load")

#: The values of ``PlacementParams.aging_unit``.
AGING_UNITS = ("cluster", "machine")
#: How a pause's gain is estimated (``preempt_gain``; docs/formulation.md §16).
PREEMPT_GAINS = ("exchange", "rollout")


@dataclass(frozen=True)
class PlacementParams:
    form: Form = Form.NON_ELASTIC
    """elastic: counts may change per slot (paper, replay); non-elastic: constant (Slurm)."""
    seed: int = 0
    """Seed of the rounding RNG; stored with the decision."""
    trials: int = 20
    """K: randomized-rounding trials; the kept one and the rule that kept it are recorded
    with each (``Decision.kept_trial``, ``kept_because``; docs/formulation.md §14.4)."""
    scale: float = 1.0
    """λ: fractional counts are scaled by λ / probability before unbiased rounding."""
    top_k_colocated: int = 10
    """Co-located mode is offered on the k machines with the most residual room."""
    horizon_factor: float = 3.0
    """Top-k ranking window: machines are ranked by their room over [a, a + factor × the
    job's shortest possible duration) (and until the cluster is free). Not a cap on the LP
    window, which may grow until the job surely fits (docs/formulation.md §11)."""
    lp_max_blocks: int = 24
    """Elastic LP: at most this many time blocks; slots are merged into blocks (capacity =
    minimum over the block) when the window is longer. 1 slot per block when it fits."""
    max_start_candidates: int = 32
    """Non-elastic: start slots considered (arrival, then each slot where capacity frees)."""
    machine_price: str = "fit"
    """The LP's tie-break price of a unit of resource r on machine h (docs/formulation.md
    §4). ``fit`` (the default since 2026-12-05): C̃[h, r]/(max_h C[h, r])², the share of
    the largest machine's r a unit is, priced by the share of it still free on h: cheaper
    on a fuller machine, so the LP packs a job into the holes of busy machines and keeps
    whole machines whole (best fit, as the fast path and Slurm's own node selection do);
    the co-location candidates' ties then go to the machine with the least room left.
    ``load``: (1 + load)/C[h, r], dearer on a busier and on a smaller machine (the rule
    until then, and the one a decision stored without this field decodes with). Measured
    over the 103 cells of the parameter ladder: ``fit`` 0.997 × the average JCT of
    ``load``, better by more than 1 % in 9 cells (the mixed cluster to 0.93 ×), worse in
    1 (1.014 ×; docs/benchmarks.md, "Machine price")."""
    time_weight: float = 0.05
    """Tie-break: the load price grows by this fraction from the window's first to last
    slot, so among equally cheap schedules the LP prefers earlier work."""
    tight_links: bool = True
    """Link rows use the most workers a mode can hold (L = min(N, ⌊C̃/α⌋)) instead of N:
    the same integer program, a much tighter relaxation (docs/formulation.md)."""
    group_identical: bool = True
    """Machines with identical capacity and residual profile share LP variables."""
    fast_path: bool = True
    """Exact fast path: if all N workers and one PS fit co-located on one machine from the
    arrival for the job's whole co-located duration, that is optimal for the job: take it."""
    time_limit_s: float = 60.0
    """Wall-clock limit of one solver call (the exact MIP); reaching it is reported."""
    mip_rel_gap: float = 0.0
    """exact: relative MIP gap accepted (0 = prove optimality)."""

    # --- late binding over the pending queue (MODEL.md §4b; docs/formulation.md §14) ---
    binding: Binding = Binding.LATE
    """yu-rr: ``late`` re-plans the pending queue at every event and commits only what
    starts now; ``early`` books each job's whole schedule at its arrival (§4 literally)."""
    aging: float = 0.01875
    """γ of the queue order key S_i + γ·M·s_i (S_i: the job's service in machine-seconds,
    s_i: its arrival in seconds, M: ``aging_unit``): a later job can be put ahead of job i
    only if it arrives within S_i / (γ·M) seconds of i. 0 = pure smallest-service-first
    (no bound)."""
    aging_unit: str = "cluster"
    """What γ is counted in (docs/formulation.md §14.2). ``cluster`` (the default since
    2026-12-05): M = how many of its largest machine the cluster amounts to in its scarcest
    resource, so γ is dimensionless: a job can be overtaken for 1/γ times the time its
    work would take on the whole cluster, whatever the cluster's size (γ = 0.01875 =
    0.3/16 is the old 0.3 on the 16-machine clusters it was chosen on). ``machine``: M = 1,
    the rule until then (γ in machines: relative to the cluster's speed, 0.3 aged about
    11 × faster on 6 machines than on 64)."""
    reserve_depth: int = 2
    """How many waiting jobs, in queue order, hold a tentative plan during a re-plan that
    later jobs may not delay (1: the head alone, as EASY backfill, which the starvation
    bound needs; 2, the default since 2026-12-05: the head and the next, nearer Slurm's
    backfill, which delays no higher-priority job's expected start, without letting the
    held plans claim most of a small cluster; 4 until then; measured in
    docs/formulation.md §14.1)."""
    scan_depth: int = 64
    """At most this many other waiting jobs are decided per event (in queue order), after
    a cheap test that some of their tasks fit now."""

    queue_program: str = "per-job"
    """yu-rr late binding: ``per-job`` decides each waiting job alone, in queue order (K = 1
    of MODEL.md §4b step 3; the default by measurement, docs/formulation.md §14.3);
    ``joint`` decides the head of the queue with one LP over ``joint_jobs`` waiting jobs."""
    joint_jobs: int = 8
    """K of the joint program: at most this many waiting jobs (in queue order, each with
    some task that fits now) share one LP."""
    joint_blocks: int = 12
    """Blocks of the joint LP's horizon (fine near now and where running jobs end)."""
    joint_grow: str = "both"
    """Joint program: a started job's counts are fixed for its whole run, so a trial may
    add workers with the room left now (``always``), never (``never``), or every other
    trial does (``both``, default: the kept trial decides)."""
    joint_top_k: int = 4
    """Co-location candidates per job in the joint LP (their union are singletons)."""

    lookahead: bool = True
    """yu-rr late binding: a start narrower than the requested width is weighed against
    the arrivals the recent past forecasts (:mod:`.lookahead`); False starts it whenever
    it ends the job sooner."""
    lookahead_max_s: float = 6 * 3600.0
    """Horizon cap of that forecast, in seconds (the horizon is the narrow run, at most
    this)."""
    lookahead_patience: float = 1.0
    """A job that has waited this many times its narrow run is no longer held back."""
    lookahead_jobs: int = 16
    """Waiting jobs behind the one decided that the look-ahead's rollout includes."""
    lookahead_pausable: bool = False
    """With ``lookahead`` and ``preempt``: the look-ahead holds back a narrow start also of
    a job that the pause rule could pause once started (the rule until 2026-12-06). False:
    only a job that cannot be paused later is held back (``preempt`` off, or live a job
    that does not consent, ``PendingJob.pausable``): the hold-back exists because a start
    is never given back, and under checkpoint-restart preemption it is, at the restart
    cost, when the arrivals the forecast only expects come (docs/formulation.md §14.7,
    "Under preemption"; 0.9934 × the avg JCT over the 103 ladder cells)."""
    lookahead_widths: bool = False
    """yu-rr late binding: a start now is weighed, by the look-ahead's rollout, against
    the same job's starts with at most W/2, W/4, … 1 of its W workers, and the cheapest is
    taken (:func:`.yu_rr.lookahead.cheapest_width`; docs/formulation.md §14.7): the total
    completion of the job and the waiting jobs behind it (with ``widths_forecast``, also
    of the arrivals the recent past forecasts)."""
    widths_forecast: bool = False
    """With ``lookahead_widths``: the width's rollout also counts the arrivals the recent
    past forecasts, and without a forecast no width is weighed (the rule until
    2026-12-05, measured 1.05 × the avg JCT on the robustness sweep: the forecast
    over-counts arrivals after a burst). False: the waiting jobs behind it alone, and
    nothing is weighed when none waits (docs/benchmarks.md, "Width look-ahead")."""

    preempt: bool = False
    """Late binding: checkpoint-restart preemption. At an event a running job is paused
    and requeued when the waiting jobs that would start in its place gain more completion
    time than its restart cost (:mod:`.preemption`; docs/formulation.md §16). False here,
    so that nothing is paused unless asked: ``mlsub replay`` turns it on by default (it
    won on the average of the preemption ladder and of the robustness sweep,
    docs/benchmarks.md; ``--no-preempt`` turns it off), and live a site turns it on with
    ``preempt = true`` in its configuration, for the jobs that consent by
    ``#SBATCH --signal``."""
    preempt_max: int = 1000
    """At most this many pauses of one job for waiting jobs: a guard against thrash, not the
    rule (each pause must already gain more than its restart cost, :mod:`.preemption`); a
    resize (``preempt_resize``) does not count, since each leaves the job strictly faster
    and pays on its own (until 2026-12-05 it counted). 1000 since 2026-12-05 (8 from
    2026-12-04, 2 before): on the 87 sweep cells 1000 measured the same as 8 without
    resizes, and with them 8 cost up to 15 % (Pollux 2 at Δ = 60 s: 0.83 → 0.95 h, a job
    at its limit resumed at full width while short jobs waited; docs/formulation.md §16)."""
    preempt_jobs: int = 32
    """Waiting jobs (in queue order) the preemption rule considers per event."""
    preempt_rollouts: int = 8
    """With ``preempt_gain = rollout``: running jobs whose pause is weighed by a rollout per
    event at most, the longest-remaining first (each is one list schedule of the waiting
    jobs); the rest wait for the next event. A bound on the work of one event, as
    ``preempt_jobs`` is: the re-plan with preemption stays within its latency target."""
    preempt_cost: str = "exact"
    """What a pause is weighed against (:func:`.yu_rr.preemption.victim_cost_s`): ``exact``,
    the whole slots the paused job's restart charge adds to its run when it resumes in
    its current shape (often 0: the charge fits in its last slot's slack); ``slot``, the
    most one restart may cost on the slot grid, ⌈restart_s/Δ⌉ slots (the rule until
    2026-12-04). ``exact`` measured 0.9985 × the avg JCT of ``slot`` over the 87 sweep
    cells and the 16 policy cells (21 better, 12 worse; docs/formulation.md §16)."""
    preempt_gain: str = "rollout"
    """How a pause's gain is estimated (:func:`.yu_rr.preemption.choose`; docs/formulation.md
    §16): ``rollout``, the total completion of the waiting jobs and the paused one under
    the list schedule in queue order (each at its earliest start at its requested width
    on what the ones before it leave), with the pause against without it; ``exchange``,
    the two-job exchange of SRPT summed over the jobs that start in its room, each against
    its earliest start on the running jobs alone (the rule until 2026-12-05), which misses
    that the jobs behind a node that frees soon wait for each other. ``rollout`` measured
    0.9963 × the avg JCT of ``exchange`` over the 103 ladder cells (better by more than
    1 % in 23, worse in 6, at most 1.037 ×) at 0.80–0.99 × the replay time
    (docs/benchmarks.md, "Pause gain")."""
    preempt_migrate: bool = False
    """With ``preempt``: a pause stands when a job it was paused for starts now, also if
    the paused job itself starts again at once in the same re-plan (elsewhere, or at
    another width: a migration, charged its restart like any resume). False: such a pause
    is dropped (the paused job "did not need to wait"), and with it the start it made
    room for (docs/formulation.md §16, "Kept only if it pays"). Off by default: on, it
    measured 1.0005 × the avg JCT over the 103 ladder cells (better by more than 1 % in
    6, worse in 10; docs/benchmarks.md, "Migration")."""
    preempt_heads: bool = False
    """With ``preempt``: the waiting jobs a pause is for (S) are found as the re-plan
    will start them: the first ``reserve_depth`` waiting jobs that do not start now hold
    their earliest start at their requested width before the later ones are tried (the
    re-plan reserves them and lets no later job delay them); the room passed on to the
    event's later victims is without those plans. False: S is found in the freed room
    alone, so a job of S may be one whose start would delay a reserved head, which the
    re-plan then does not start, dropping the pause (docs/formulation.md §16). Off
    (measured, not kept): 0.9999 × the avg JCT over the 103 ladder cells, 1.0020 × on the
    24 held-out cells (docs/benchmarks.md, "The reserved heads in a pause's S, the room
    passed on without their plans")."""
    preempt_room: bool = False
    """With ``preempt``: a pause also stands when none of the jobs it was chosen for
    starts now but the re-plan starts others *in its room*: the jobs started now use
    more, on some machine the paused job held, than that machine had free without the
    pause (docs/formulation.md §16, "Kept only if it pays"). The rule chooses a pause for
    the jobs that start in the room at their requested width; the re-plan may start
    others there first, narrow (the look-ahead of narrow starts) or by their per-job
    decision's layout. Only jobs whose queue key is below the paused job's count (the
    jobs a pause may be for). False: such a pause is dropped, and the plain re-plan
    follows. Off (measured, not kept): 0.9992 × the avg JCT over the 103 ladder cells but
    the p99 1.0051 ×, and 0.9997 × on the 24 held-out cells (p99 1.0022 ×); it takes out
    the preempting re-plan's second call (docs/benchmarks.md, "A pause stands for the room
    it frees")."""
    preempt_defrag: bool = False
    """With ``preempt``: *moves to a smaller node* (:mod:`.yu_rr.preemption`, "Move to a
    smaller node"). Running jobs co-located on one machine are restarted at once, at the
    same width and rate, on machines with fewer GPUs that hold them now, when the room
    they leave lets a waiting job start now co-located (and end sooner than it would
    spread or later) and the rollout's total gains — whatever the waiting job's queue key,
    since a moved job is delayed by no more than its restart. False here, so that nothing
    moves unless asked: ``mlsub replay`` turns it on with preemption
    (``--no-preempt-defrag`` off); live, the site's ``preempt_defrag`` sets it. Measured
    on the 13 ladder cells of the mixed cluster, the only ones with machines of several
    GPU counts (elsewhere it cannot fire): 0.9959 × the avg JCT (better by more than 1 %
    in 3, worse in none; at most 1.004 ×), so 0.9995 × over all 103 cells
    (docs/benchmarks.md, "Moves to a smaller node")."""
    preempt_shrink: bool = False
    """With ``preempt`` and ``preempt_gain = rollout``: a pause may be a *shrink in place*
    (:mod:`.yu_rr.preemption`, "Shrink in place"): the victim restarts at once, narrower,
    on the machines it holds, in what the jobs it gives way to leave of its room — the
    faster of its workers that still fit there beside its PSs (distributed) or one of its
    machines co-located — instead of waiting for its whole width; taken when the
    rollout's total with it is lower than both without and with a pause. Counted as a
    pause (``preempt_max``). Off (``mlsub replay --preempt-shrink`` on): 0.9970 × the avg
    JCT over the 103 ladder cells (Philly 1.0009 ×), but 1.0010 × on the 24 held-out
    cells and, on the 16 policy cells, the p99 clause of Mustang 2012-12-13 at 600 s lost
    (38.5 → 46.1 h): a gain on the synthetic workloads, none on the real-duration traces
    (docs/formulation.md §16, docs/benchmarks.md "Shrink in place"). Live: not built."""
    preempt_group: bool = False
    """With ``preempt`` and ``preempt_gain = rollout``: a *pause together*
    (:mod:`.yu_rr.preemption`). A running job whose room alone starts no waiting job may
    be paused with the running jobs sharing its machine (up to three, by falling key,
    each key above the jobs they make room for) when their room together starts one, the
    rollout weighing them all: two 4-worker jobs on one 8-GPU node keep an 8-worker job
    waiting although no single pause frees its room. Off (measured, not kept): 1.0012 ×
    the avg JCT over the 103 ladder cells, 1.05–1.07 × on Pollux 2 and 8 on 6 × 8, the
    cells it was built for: the rollout has no arrivals, so the same pairs are paused
    again and again (docs/formulation.md §16, "Pause together"; ``make bench-group``)."""
    preempt_forecast: bool = False
    """With ``preempt`` and ``preempt_gain = rollout``: *arrivals in the rollout*
    (:mod:`.yu_rr.preemption`). A pause's rollout also list-schedules the arrivals the
    recent past forecasts (:func:`.yu_rr.lookahead.forecast`, the look-ahead's forecast)
    over the victim's remaining run (at most ``lookahead_max_s``), in both branches: a
    paused job waits in the queue, where every later arrival with a smaller key goes
    first, while a running one is paused again only when that pays."""
    preempt_regather: bool = False
    """With ``preempt_resize``: *regather before the re-plan* (:mod:`.yu_rr.preemption`).
    A running job spread over machines, slower than its fastest shape, whose resumed
    request's queue key is below every waiting job's, is re-decided *before* the queue's
    re-plan, and restarted co-located when that ends it more than the restart cost sooner:
    the fast machine a job frees goes to the job with the least work left, running or
    waiting (SRPT on machines of unequal speed), where the grow after the re-plan gives it
    to the queue first. False here: ``mlsub replay`` turns it on with preemption and
    resize (``--no-preempt-regather`` off), and live a site with ``preempt_regather =
    true`` beside ``preempt_resize``."""
    preempt_resize: bool = False
    """With ``preempt``: resize by checkpoint-restart (:mod:`.yu_rr.preemption`, "Resize").
    A running job slower than its fastest shape is re-decided (its work left + the
    restart charge, by the same per-job decision) in the room freed, its own included,
    and restarted so when that ends it more than the restart cost sooner (after the
    event's re-plan, in the room it leaves: its started and reserved jobs keep theirs);
    and a reserved job that waits for its width starts narrow now in the idle room when
    that and a grow at its planned start end more than the restart cost sooner (within
    ``narrow_regret``). A resize does not count towards ``preempt_max``. False here, so
    nothing is resized unless asked: ``mlsub replay`` turns it on with preemption (0.990
    × the avg JCT over the 103 ladder cells, docs/formulation.md §16;
    ``--no-preempt-resize`` turns it off), and live a site with ``preempt_resize = true``."""
    narrow_regret: float = 2.0
    """With ``preempt_resize``: a job that waits for its width starts narrow now only if
    that narrow run alone — should the grow it is started for never come — would end at
    most this many times as long after now as the plan it replaces (:mod:`.yu_rr.
    preemption`, "Start narrow, then grow"): whatever happens later, the job's time from
    now to its end is at most ``narrow_regret`` × what waiting would give. 0 = no guard
    (the rule until 2026-12-05). 2, the factor of the classic rent-or-buy bound, not a
    value fitted to any trace (docs/formulation.md §16)."""

    # --- the time model shared by every policy (MODEL.md §6) ---
    restart_s: float = 30.0
    """A running job whose allocation changes (resize, migration, preemption and resume)
    makes no progress for this many seconds while it holds its new resources."""

    # --- the replay baselines oasis, optimus, drf (docs/formulation.md, "Baselines") ---
    utility_seed: int | None = None
    """Seed of the jobs' utility draws (``placement.utility``), which ``oasis`` prices
    against; None = ``seed``. The replay sets it to its seed before deriving per-job seeds,
    so the policy sees the utilities the metrics score."""
    oasis_ln_u: float | None = None
    """oasis: ln U, the largest utility per unit of (normalized) resource over all jobs;
    None = from the job alone. The replay sets the value of the whole trace (oracle)."""
    oasis_ln_l: float | None = None
    """oasis: ln L, (1/4η) × the smallest utility per unit of time and resource; None =
    from the job alone. Kept as a logarithm: with sigmoid utilities L underflows."""
    oasis_end_candidates: int = 6
    """oasis: completion slots tried: the earliest feasible end, then durations ×√2 each."""
    oasis_max_segments: int = 64
    """oasis: at most this many segments (runs of slots with equal prices) in a job's window;
    beyond, consecutive ones are merged into blocks holding their most reserved usage."""
    optimus_samples: int = 10
    """optimus: (PS, worker) samples of the time model behind each job's speed-model fit."""
    optimus_noise: float = 0.05
    """optimus: relative noise of each sample, uniform in [−noise, +noise], seeded."""
    tiresias_thresholds_s: tuple[float, ...] = (18_000.0,)
    """tiresias: the attained-service thresholds (GPU-seconds) between its priority queues
    (one threshold, two queues, as the Helios study's port of Tiresias)."""
    realloc_keep_placement: bool = True
    """optimus, drf: a job whose counts do not change at an event keeps its machines (no
    migration); False re-places every job at every event."""
    allreduce_pack: bool = True
    """allreduce jobs (docs/formulation.md §18): a run a policy lays over several nodes is
    re-laid, same worker count, on the layout the ring formula makes fastest among those
    the room holds (fewest nodes, equal counts where the formula prefers them), when that
    is faster. False keeps each policy's own layout (still timed by the formula). The
    re-allocating policies lay an allreduce job's ring that way in any case."""
    allreduce_shrink: bool = True
    """allreduce jobs (docs/formulation.md §18.3): a run keeps, within its own nodes and
    counts, the fewer workers the ring formula makes faster, when fewer are faster (the
    linear programs count every worker as adding work; a heavy model's all-reduce can cost
    more than a worker adds). False keeps every worker the policy placed."""

    def with_seed(self, seed: int) -> PlacementParams:
        """A copy with another seed. The replay engine calls this once per job, so it
        copies the fields as they are (``dataclasses.replace`` rebuilds all of them)."""
        out = object.__new__(PlacementParams)
        out.__dict__.update(self.__dict__)
        object.__setattr__(out, "seed", seed)
        return out

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["form"] = str(self.form)
        out["binding"] = str(self.binding)
        out["tiresias_thresholds_s"] = list(self.tiresias_thresholds_s)
        return out


ArrivalFn = Callable[[JobRequest, ClusterSnapshot, PlacementParams], Decision]
"""An arrival policy: decide once, on the job's arrival, against the reservations in the
snapshot (``yu-rr``, ``exact``, ``fifo-*``, ``oasis``); ``place()`` and the replay call it."""


def derive_seed(base: int, job_id: str) -> int:
    """A per-job seed from a base seed and the job id, stable across runs and platforms.

    The online loop itself is the replay engine's (``sim/engine.py``: one event order for
    every policy kind); what it shares with the live path is how a job's rounding seed is
    derived from a run's seed."""
    digest = hashlib.blake2b(f"{base}:{job_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF_FFFF_FFFF
