"""The life of a decision: its states and the transitions allowed between them (pure).

::

    planned ──► submitted ──► running ──► completed | failed | cancelled
       │            │                                   ▲
       │            └──────────────────────────────────-┘ (ended before it was seen running)
       ├──► submit-failed   (sbatch failed; the transition's detail holds the error)
       ├──► released        (``mlsub release``: a planned reservation given back)
       └──► cancelled

    submitting ──► submitted | running | completed | failed | cancelled | submit-failed
    submit-failed ──► submitted | running | completed | failed | cancelled
                      (repair: ``mlsub reconcile`` found a job with its exact tag)

    submitting | submit-failed ──► queued ◄──► starting ──► submitted | running | … | cancelled
                     │  └──► submitted | running | …   (its held job released by hand)
                     └──► cancelled                     (scancel of the held job)

    submitted | running ──► preempting ──► queued      (checkpointed, requeued held)
                                 ├──► running          (the signal or the requeue failed:
                                 │                      Slurm still runs it)
                                 └──► completed | failed | cancelled  (it ended meanwhile)

Late binding (issue 19, ``services/replan.py``): a job that cannot start now is submitted
*held* and its decision is ``queued``: it holds nothing (its layout is only tentative)
until a re-plan starts it. The re-plan records the layout it chose as ``starting`` (from
then on it reserves) *before* it releases the held job or submits the new script, and
``submitted`` after; a ``starting`` decision left by a re-plan that stopped is finished by
the next re-plan or ``mlsub reconcile`` once that re-plan's process is gone (its nodes are
held for it meanwhile); one whose start kept failing for ``START_GIVE_UP_S`` goes back to
``queued``. A held job found for a ``submit-failed`` decision (its ``sbatch --hold``
timed out) repairs it to ``queued``.

Checkpoint-restart preemption on the live queue (docs/formulation.md §16, "Live";
``services/preempt.py``): a re-plan that pauses a running job records ``preempting``
(it still reserves: Slurm still runs it) *before* it sends the job's checkpoint signal,
and ``queued`` once Slurm shows the job requeued and held (the decision then waits with
the work it has left, ``DecisionRecord.resumed_request``, and a re-plan starts it again
like any queued job). A job Slurm still runs after a failed signal or requeue goes back
to ``running``; one that ended meanwhile ends as Slurm says.

``mlsub plan --reserve`` records a decision as ``planned``; ``mlsub submit`` records it as
``submitting`` (committed before ``sbatch`` runs) and moves it to ``submitted`` with the
Slurm job id, or to ``submit-failed`` with Slurm's message. A decision left in
``submitting`` means mlsub stopped while submitting (killed, or the connection dropped):
``mlsub reconcile`` looks for the job by the tag in its comment and moves it on.

A decision in a terminal state reserves nothing. ``submit-failed`` is terminal (it reserves
nothing) but not final: when ``reconcile`` marked it so because its submitting process was
gone, and a Slurm job carrying its exact tag turns up after all, reconcile moves it on.

Transitions are idempotent along the path: asking for a state the decision already reached
or passed (:func:`reached`; ``submitted`` when it is ``running``, ``running`` when it has
``completed``) is a no-op, not an error. Two processes that saw the same Slurm facts
(a ``submit`` recording its own job id and a neighbour's reconcile that found it by its tag)
then both succeed, in either order.
"""

from __future__ import annotations

from enum import StrEnum


class DecisionState(StrEnum):
    PLANNED = "planned"
    SUBMITTING = "submitting"
    SUBMITTED = "submitted"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SUBMIT_FAILED = "submit-failed"
    RELEASED = "released"
    QUEUED = "queued"
    STARTING = "starting"
    PREEMPTING = "preempting"


S = DecisionState

TERMINAL: frozenset[DecisionState] = frozenset(
    {S.COMPLETED, S.FAILED, S.CANCELLED, S.SUBMIT_FAILED, S.RELEASED}
)
#: States that are not over (reconcile and the queue look at them).
OPEN: frozenset[DecisionState] = frozenset(set(DecisionState) - TERMINAL)
#: States whose decisions reserve capacity (until predicted end + grace): every open one
#: but ``queued`` (a waiting job holds nothing under late binding).
RESERVING: frozenset[DecisionState] = OPEN - {DecisionState.QUEUED}

ALLOWED: dict[DecisionState, frozenset[DecisionState]] = {
    S.PLANNED: frozenset({S.SUBMITTED, S.SUBMIT_FAILED, S.RELEASED, S.CANCELLED}),
    S.SUBMITTING: frozenset(
        {S.SUBMITTED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED, S.SUBMIT_FAILED, S.QUEUED}
    ),
    S.QUEUED: frozenset({S.STARTING, S.SUBMITTED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.STARTING: frozenset({S.SUBMITTED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED, S.QUEUED}),
    S.SUBMITTED: frozenset({S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED, S.PREEMPTING}),
    S.RUNNING: frozenset({S.COMPLETED, S.FAILED, S.CANCELLED, S.PREEMPTING}),
    S.PREEMPTING: frozenset({S.QUEUED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED}),
    **{t: frozenset() for t in TERMINAL},
    S.SUBMIT_FAILED: frozenset(
        {S.SUBMITTED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED, S.QUEUED}
    ),
}

#: How far along the path to the end a state is (``submit-failed``, ``released`` and
#: ``preempting`` are off the path: nothing reaches them by going further, and a
#: ``preempting`` decision asked to be ``running`` again really moves back).
_PROGRESS: dict[DecisionState, int] = {
    S.PLANNED: 0,
    S.SUBMITTING: 1,
    S.QUEUED: 1,
    S.STARTING: 1,
    S.SUBMITTED: 2,
    S.RUNNING: 3,
    S.COMPLETED: 4,
    S.FAILED: 4,
    S.CANCELLED: 4,
}


def can_move(src: DecisionState, dst: DecisionState) -> bool:
    return dst in ALLOWED[src]


def reached(current: DecisionState, target: DecisionState) -> bool:
    """Whether a decision in ``current`` is already at ``target`` or past it on the path
    ``submitted → running → completed | failed | cancelled`` (so moving it there is a no-op).

    An ended decision has reached every end state (Slurm reports one end; a second report
    of a different end does not reopen it)."""
    if current == target:
        return True
    a, b = _PROGRESS.get(current), _PROGRESS.get(target)
    return a is not None and b is not None and b >= 2 and a >= b
