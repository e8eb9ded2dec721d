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


def arrival_order(
    jobs: Sequence[JobRequest], slot_seconds: float, ties: str = "spt"
) -> list[JobRequest]:
    """The order in which the online loop decides ``jobs``: by arrival slot; jobs arriving
    in the same slot are simultaneous, and ``ties="spt"`` (default) decides the shortest
    first (fewest slots with all workers co-located: the SPT rule, the classic order for
    total completion time), ``ties="id"`` by job id. Job id breaks remaining ties."""
    if ties == "spt":
        return sorted(
            jobs, key=lambda j: (j.arrival_slot, j.shortest_slots(slot_seconds), j.job_id)
        )
    if ties == "id":
        return sorted(jobs, key=lambda j: (j.arrival_slot, j.job_id))
    raise ValueError(f"unknown tie order {ties!r}: use 'spt' or 'id'")


def place_online(
    jobs: Sequence[JobRequest],
    snapshot: ClusterSnapshot,
    policy: str,
    params: PlacementParams,
    ties: str = "spt",
) -> tuple[list[Decision], ClusterSnapshot]:
    """Place ``jobs`` one by one in :func:`arrival_order`; return the decisions and the
    final snapshot holding all their reservations."""
    fn = get_policy(policy)
    decisions: list[Decision] = []
    snap = snapshot
    for job in arrival_order(jobs, snapshot.slot_seconds, ties):
        check_could_ever_fit(job, snapshot)
        snap = snap.at_slot(max(job.arrival_slot, snapshot.now_slot))
        decision = fn(job, snap, replace(params, seed=derive_seed(params.seed, job.job_id)))
        decisions.append(decision)
        snap = snap.with_reservations(decision.reservations(job))
    return decisions, snap
