"""A model's speed profile (MODEL.md §2): τ, g, b_ex, b_in, B_ex (pure).

It sits below both the job (:mod:`.job`) and the all-reduce time model
(:mod:`.allreduce`), which both read it, so that neither imports the other's module for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: MODEL.md §2 (choice): a PS can serve this many times a worker's network bandwidth.
DEFAULT_PS_BANDWIDTH_FACTOR = 4.0


@dataclass(frozen=True, slots=True)
class JobProfile:
    """Speed parameters of a model: τ (s), g (MB), b_ex and b_in (MB/s), B_ex (MB/s)."""

    step_time_s: float
    model_size_mb: float
    bw_ex_mbps: float
    bw_in_mbps: float
    ps_bw_mbps: float | None = None  # B_ex; None = DEFAULT_PS_BANDWIDTH_FACTOR × b_ex
    name: str = "custom"

    def __post_init__(self) -> None:
        for label, value in (
            ("step time", self.step_time_s),
            ("network bandwidth", self.bw_ex_mbps),
            ("internal bandwidth", self.bw_in_mbps),
        ):
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{label} must be a finite number > 0, got {value!r}")
        if not (self.model_size_mb >= 0 and math.isfinite(self.model_size_mb)):
            raise ValueError(f"model size must be >= 0, got {self.model_size_mb!r}")

    @property
    def effective_bw_in(self) -> float:
        return max(self.bw_in_mbps, self.bw_ex_mbps)

    @property
    def effective_ps_bw(self) -> float:
        if self.ps_bw_mbps is not None:
            return self.ps_bw_mbps
        return DEFAULT_PS_BANDWIDTH_FACTOR * self.bw_ex_mbps

    @property
    def theta_in(self) -> float:
        """Seconds per mini-batch co-located: τ + 2g / b_in."""
        return self.step_time_s + 2.0 * self.model_size_mb / self.effective_bw_in

    @property
    def theta_ex(self) -> float:
        """Seconds per mini-batch distributed: τ + 2g / b_ex."""
        return self.step_time_s + 2.0 * self.model_size_mb / self.bw_ex_mbps

    def nu_in(self, slot_seconds: float) -> float:
        return slot_seconds / self.theta_in

    def nu_ex(self, slot_seconds: float) -> float:
        return slot_seconds / self.theta_ex

    @property
    def ps_per_worker(self) -> float:
        """b_ex / B_ex: the fraction of a PS one distributed worker needs."""
        return self.bw_ex_mbps / self.effective_ps_bw
