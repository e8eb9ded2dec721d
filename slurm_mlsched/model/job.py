"""A training job (MODEL.md §2) and its time model.

Per mini-batch on one worker:

* co-located (every worker and every PS on one machine):  θ_in = τ + 2g / b_in
* distributed (any other placement):                       θ_ex = τ + 2g / b_ex

with b_in := max(b_in, b_ex) (the DL2 table has dssm's internal figure below its network
one; we keep the data as published and clamp here). A worker's rate in one slot of Δ
seconds is ν = Δ / θ mini-batches. Training is asynchronous: progress in a slot is
(number of workers) × ν of the mode the job runs in.

PS sizing in distributed mode (covering): B_ex · S ≥ b_ex · W with S ≤ W and S ≥ 1 when
W ≥ 1; B_ex defaults to 4 × b_ex, so S ≥ ⌈W / 4⌉. Co-located, one PS suffices (O3).

A job's :class:`Architecture` is ``ps`` (the above) or ``allreduce`` (issue 31: no PS, a
synchronous ring all-reduce per step; its time model is :mod:`.allreduce`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from . import allreduce
from .allreduce import Launcher
from .profile import DEFAULT_PS_BANDWIDTH_FACTOR, JobProfile
from .resources import Resources

__all__ = ["DEFAULT_PS_BANDWIDTH_FACTOR", "Architecture", "JobProfile", "JobRequest"]


class Architecture(StrEnum):
    """How a job's workers exchange gradients."""

    PS = "ps"  # parameter servers, asynchronous (MODEL.md §2)
    ALLREDUCE = "allreduce"  # no PS; synchronous ring all-reduce (docs/formulation.md §18)


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One job: arrival slot a, workload V (mini-batches), at most N workers, demands α, β.

    ``ps_count`` fixes the number of PSs in distributed mode (None = sized by the PS rule,
    ``--ps auto``); co-located mode always uses one PS (MODEL.md O3). ``gpu_types``: the
    GPU types (Slurm GRES types, matched exactly) the job's GPU-using tasks may run on;
    None = any node (:mod:`.eligibility`). ``arch``: an ``allreduce`` job has no PS:
    ``ps_count`` 0 and a zero PS demand (``ps``), so no policy can count one; ``launcher``
    how its ranks start (None: :data:`.allreduce.DEFAULT_LAUNCHER`; placement never reads
    it, the script does, so a stored request re-renders the same way). A ps job has none.
    ``gpu_speed``: the GPU-type factor its ``profile`` was scaled to when it met a cluster
    (:func:`.gpu_speed.effective_request`, docs/formulation.md §17; 1.0 = the profile's
    reference GPU); kept so the plan can say it and the request is not scaled twice.
    """

    job_id: str
    arrival_slot: int
    workload: float
    max_workers: int
    worker: Resources
    ps: Resources
    profile: JobProfile
    ps_count: int | None = None
    name: str = ""
    gpu_types: frozenset[str] | None = None
    arch: Architecture = Architecture.PS
    launcher: Launcher | None = None
    gpu_speed: float = 1.0

    def __post_init__(self) -> None:
        self._check_arch()
        if not (self.gpu_speed > 0 and math.isfinite(self.gpu_speed)):
            raise ValueError(f"gpu_speed must be a finite number > 0, got {self.gpu_speed!r}")
        if self.gpu_types is not None:
            types = frozenset(self.gpu_types)
            if not types or any(not isinstance(t, str) or not t.strip() for t in types):
                raise ValueError(
                    f"gpu_types must be None (any) or a non-empty set of type names, "
                    f"got {sorted(map(str, types))!r}"
                )
            object.__setattr__(self, "gpu_types", types)
        if self.max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {self.max_workers}")
        if not (self.workload > 0 and math.isfinite(self.workload)):
            raise ValueError(f"workload must be a finite number > 0, got {self.workload!r}")
        if self.arch is Architecture.PS and self.ps_count is not None and self.ps_count < 1:
            raise ValueError(f"ps_count must be >= 1 or None (auto), got {self.ps_count}")
        for label, res in (("worker", self.worker), ("ps", self.ps)):
            if any(x < 0 or not math.isfinite(x) for x in res.as_tuple()):
                raise ValueError(f"{label} demand must be finite and >= 0, got {res}")

    def _check_arch(self) -> None:
        arch = Architecture(self.arch)  # a string from a caller: the enum, or ValueError
        object.__setattr__(self, "arch", arch)
        if arch is not Architecture.ALLREDUCE:
            if self.launcher is not None:
                raise ValueError(f"a ps job has no launcher, got {self.launcher!r}")
            return
        if self.launcher is not None:
            object.__setattr__(self, "launcher", Launcher(self.launcher))
        if self.ps_count != 0:
            raise ValueError(
                f"an allreduce job has no parameter server: ps_count must be 0, "
                f"got {self.ps_count!r}"
            )
        if any(x != 0 for x in self.ps.as_tuple()):
            raise ValueError(
                f"an allreduce job has no parameter server: ps demand must be 0, got {self.ps}"
            )

    @property
    def is_allreduce(self) -> bool:
        return self.arch is Architecture.ALLREDUCE

    @property
    def launch_with(self) -> Launcher:
        """How an allreduce job's ranks start (``launcher``, else the default)."""
        return self.launcher or allreduce.DEFAULT_LAUNCHER

    def work_per_slot(
        self, layout: Sequence[int], slot_seconds: float, *, colocated: bool
    ) -> float:
        """The job's progress (mini-batches) in one slot of ``slot_seconds`` with
        ``layout`` workers per node used: a ps job W × ν_in co-located (``colocated``:
        every worker and PS on one machine), else W × ν_ex; an allreduce job the ring's
        rate (:func:`.allreduce.rate`, default link parameters; ``colocated`` unread: one
        node is in the layout). The one speed call both architectures answer."""
        if self.is_allreduce:
            return allreduce.rate(layout, self.profile, slot_seconds)
        workers = sum(allreduce.checked_layout(layout))
        nu = self.profile.nu_in if colocated else self.profile.nu_ex
        return workers * nu(slot_seconds)

    def ps_needed(self, workers: int) -> int:
        """PSs for ``workers`` distributed workers: ⌈W·b_ex/B_ex⌉ (or the fixed count), ≤ W, ≥ 1
        (0 for an allreduce job)."""
        if workers <= 0 or self.is_allreduce:
            return 0
        if self.ps_count is not None:
            return self.ps_count
        need = math.ceil(workers * self.profile.ps_per_worker - 1e-9)
        return max(1, min(workers, need))

    def max_distributed_workers(self) -> int:
        """With a fixed PS count S, the PS rules allow S ≤ W ≤ S·B_ex/b_ex workers."""
        if self.ps_count is None or self.is_allreduce:
            return self.max_workers
        cap = math.floor(self.ps_count / self.profile.ps_per_worker + 1e-9)
        return min(self.max_workers, cap)

    def min_distributed_workers(self) -> int:
        return 1 if self.ps_count is None or self.is_allreduce else self.ps_count

    def shortest_slots(self, slot_seconds: float) -> int:
        """Fewest slots the job could ever take: N workers co-located from its arrival (an
        allreduce job: its best rate, :func:`.allreduce.best_rate`, at the default link
        parameters)."""
        if self.is_allreduce:
            rate = allreduce.best_rate(self.max_workers, self.profile, slot_seconds)
        else:
            rate = self.max_workers * self.profile.nu_in(slot_seconds)
        return max(1, math.ceil(self.workload / rate - 1e-9))
