"""Run ``place()`` over a sequence of arrivals, committing each decision (pure).

This is the online loop of MODEL.md §4: jobs in arrival order, each placed against the
reservations of the jobs before it. Replay builds on the same loop.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

from ..model import ClusterSnapshot, Decision, JobRequest
from .feasibility import check_could_ever_fit
from .params import PlacementParams
from .registry import get_policy


def derive_seed(base: int, job_id: str) -> int:
    """A per-job seed from a base seed and the job id, stable across runs and platforms."""
    digest = hashlib.blake2b(f"{base}:{job_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF_FFFF_FFFF


def place_online(
    jobs: Sequence[JobRequest],
    snapshot: ClusterSnapshot,
    policy: str,
    params: PlacementParams,
) -> tuple[list[Decision], ClusterSnapshot]:
    """Place ``jobs`` one by one in (arrival, id) order; return decisions and the final
    snapshot holding all their reservations."""
    fn = get_policy(policy)
    decisions: list[Decision] = []
    snap = snapshot
    for job in sorted(jobs, key=lambda j: (j.arrival_slot, j.job_id)):
        check_could_ever_fit(job, snapshot)
        snap = snap.at_slot(max(job.arrival_slot, snapshot.now_slot))
        decision = fn(job, snap, replace(params, seed=derive_seed(params.seed, job.job_id)))
        decisions.append(decision)
        snap = snap.with_reservations(decision.reservations(job))
    return decisions, snap
