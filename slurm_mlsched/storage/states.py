"""The life of a decision: its states and the transitions allowed between them (pure).

::

    planned ──► submitted ──► running ──► completed | failed | cancelled
       │            │                                   ▲
       │            └──────────────────────────────────-┘ (ended before it was seen running)
       ├──► submit-failed   (sbatch failed; the transition's detail holds the error)
       ├──► released        (``mlsub release``: a planned reservation given back)
       └──► cancelled

A decision in a terminal state reserves nothing.
"""

from __future__ import annotations

from enum import StrEnum


class DecisionState(StrEnum):
    PLANNED = "planned"
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
    S.SUBMITTED: frozenset({S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.RUNNING: frozenset({S.COMPLETED, S.FAILED, S.CANCELLED}),
    **{t: frozenset() for t in TERMINAL},
}


def can_move(src: DecisionState, dst: DecisionState) -> bool:
    return dst in ALLOWED[src]
