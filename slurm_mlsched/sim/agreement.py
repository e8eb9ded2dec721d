"""How well a replay's start order agrees with the order a real scheduler started the jobs
(pure).

Given each job's recorded start time (from the trace, e.g. sacct's ``Start``) and its
simulated start (from a policy's decision), over the jobs present in both:

* **pairwise agreement**: of the pairs of jobs that started at different times in *both*
  the record and the replay, the share the replay orders the same way (Kendall's
  concordance: 1 = the same order, 0.5 = unrelated, 0 = reversed). Pairs tied in either
  are left out and counted (``tied_pairs``);
* **same rank**: the share of jobs whose position in the start order (ties broken by job
  id) is the same in both;
* **mean absolute start difference** in seconds (the replay's slots are Δ wide, so a
  difference below Δ is within the resolution).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StartAgreement:
    jobs: int
    pairs: int
    concordant: int
    discordant: int
    tied_pairs: int
    same_rank: int
    mean_abs_diff_s: float | None

    @property
    def pairwise(self) -> float | None:
        counted = self.concordant + self.discordant
        return None if counted == 0 else self.concordant / counted

    @property
    def same_rank_share(self) -> float | None:
        return None if self.jobs == 0 else self.same_rank / self.jobs

    def as_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "pairs": self.pairs,
            "concordant": self.concordant,
            "discordant": self.discordant,
            "tied_pairs": self.tied_pairs,
            "pairwise_agreement": self.pairwise,
            "same_rank": self.same_rank,
            "same_rank_share": self.same_rank_share,
            "mean_abs_start_diff_s": self.mean_abs_diff_s,
        }


def start_agreement(
    recorded: Mapping[str, float], simulated: Mapping[str, float], *, tie_s: float = 0.0
) -> StartAgreement:
    """Compare start times (seconds on any common origin) of the jobs in both mappings.

    Two starts closer than ``tie_s`` count as tied (e.g. the trace's one-second
    resolution)."""
    ids = sorted(set(recorded) & set(simulated))
    concordant = discordant = tied = 0
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            dr = recorded[a] - recorded[b]
            ds = simulated[a] - simulated[b]
            if abs(dr) <= tie_s or abs(ds) <= tie_s:
                tied += 1
            elif (dr > 0) == (ds > 0):
                concordant += 1
            else:
                discordant += 1
    by_recorded = sorted(ids, key=lambda j: (recorded[j], j))
    by_simulated = sorted(ids, key=lambda j: (simulated[j], j))
    same = sum(1 for x, y in zip(by_recorded, by_simulated, strict=True) if x == y)
    diffs = [abs(recorded[j] - simulated[j]) for j in ids]
    n = len(ids)
    return StartAgreement(
        jobs=n,
        pairs=n * (n - 1) // 2,
        concordant=concordant,
        discordant=discordant,
        tied_pairs=tied,
        same_rank=same,
        mean_abs_diff_s=sum(diffs) / n if n else None,
    )
