"""What a replay returns: one outcome per job, for one policy (pure data).

Both kinds of policy produce the same result, so the metrics, the checks and the reports
never ask which kind ran: an arrival policy's outcomes hold the decisions it took; a
re-allocating policy's (``sim.realloc``) hold, per job, the decision its allocations
amount to (the slots it ran, with their counts), and ``call_ms`` times each re-allocation.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import ClusterSnapshot, Decision, Reservation
from ..placement.params import PlacementParams
from .jobs import SimJob


@dataclass(frozen=True)
class JobOutcome:
    """What happened to one job: its decision, or the error with which it was rejected."""

    job: SimJob
    decision: Decision | None
    error: str = ""  # "code: message" when rejected

    @property
    def placed(self) -> bool:
        return self.decision is not None


@dataclass(frozen=True)
class SimResult:
    """One policy's replay: an outcome per admitted job, in arrival order."""

    policy: str
    params: PlacementParams
    cluster: ClusterSnapshot  # the empty cluster the replay ran on (epoch, Δ)
    outcomes: tuple[JobOutcome, ...]
    peak_active_reservations: int  # re-allocating policies: the most jobs one call saw
    events: int
    call_ms: tuple[float, ...] = ()  # re-allocating policies: each call's duration (ms)
    queue_series: tuple[tuple[int, int], ...] = ()  # (slot, jobs waiting after the event)

    @property
    def decisions(self) -> tuple[Decision, ...]:
        return tuple(o.decision for o in self.outcomes if o.decision is not None)

    @property
    def rejected(self) -> tuple[JobOutcome, ...]:
        return tuple(o for o in self.outcomes if o.decision is None)

    def decision_latencies_ms(self) -> list[float]:
        """Decision latency samples: each re-allocation call, or each placed job's own
        step timings (``Decision.decision_ms``) for an arrival policy."""
        if self.call_ms:
            return list(self.call_ms)
        return [o.decision.decision_ms() for o in self.outcomes if o.decision is not None]

    def reservations(self) -> list[Reservation]:
        """Every committed reservation of the run (for checks and metrics)."""
        out: list[Reservation] = []
        for o in self.outcomes:
            if o.decision is not None:
                out.extend(o.decision.reservations(o.job.request))
        return out
