"""The life of a decision: its states and the transitions allowed between them (pure).

::

    planned ──► submitted ──► running ──► completed | failed | cancelled
       │            │                                   ▲
       │            └──────────────────────────────────-┘ (ended before it was seen running)
       ├──► submit-failed   (sbatch failed; the transition's detail holds the error)
       ├──► released        (``mlsub release``: a planned reservation given back)
       └──► cancelled

    submitting ──► submitted | running | completed | failed | cancelled | submit-failed

``mlsub plan --reserve`` records a decision as ``planned``; ``mlsub submit`` records it as
``submitting`` (committed before ``sbatch`` runs) and moves it to ``submitted`` with the
Slurm job id, or to ``submit-failed`` with Slurm's message. A decision left in
``submitting`` means mlsub stopped while submitting (killed, or the connection dropped):
``mlsub reconcile`` looks for the job by the tag in its comment and moves it on.

A decision in a terminal state reserves nothing.
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


S = DecisionState

TERMINAL: frozenset[DecisionState] = frozenset(
    {S.COMPLETED, S.FAILED, S.CANCELLED, S.SUBMIT_FAILED, S.RELEASED}
)
#: States whose decisions still reserve capacity (until predicted end + grace).
OPEN: frozenset[DecisionState] = frozenset(set(DecisionState) - TERMINAL)

ALLOWED: dict[DecisionState, frozenset[DecisionState]] = {
    S.PLANNED: frozenset({S.SUBMITTED, S.SUBMIT_FAILED, S.RELEASED, S.CANCELLED}),
    S.SUBMITTING: frozenset(
        {S.SUBMITTED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED, S.SUBMIT_FAILED}
    ),
    S.SUBMITTED: frozenset({S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.RUNNING: frozenset({S.COMPLETED, S.FAILED, S.CANCELLED}),
    **{t: frozenset() for t in TERMINAL},
}


def can_move(src: DecisionState, dst: DecisionState) -> bool:
    return dst in ALLOWED[src]
