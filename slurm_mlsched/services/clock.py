"""The clock interface: wall time and a monotonic timer, injected (STYLE.md habit 4).

The CLI picks :class:`WallClock`, or :class:`FixedClock` when ``MLSUB_FIXED_NOW`` is set
(tests, reproducible demos); replay will use a simulated clock. Nothing else reads time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current wall time, timezone-aware (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, never going back: for measuring durations."""
        ...


class WallClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.perf_counter()


@dataclass(frozen=True)
class FixedClock:
    """A clock stopped at ``at``: every duration measured with it is 0."""

    at: datetime

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            object.__setattr__(self, "at", self.at.replace(tzinfo=UTC))

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return 0.0

    @classmethod
    def from_iso(cls, text: str) -> FixedClock:
        """Parse an ISO 8601 time (``Z`` allowed; naive = UTC). Raises ValueError."""
        text = text.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        return cls(datetime.fromisoformat(text))
