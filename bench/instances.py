"""Seeded random instances for the benchmarks (pure)."""

from __future__ import annotations

import random

from slurm_mlsched.model import (
    ClusterSnapshot,
    JobProfile,
    JobRequest,
    Machine,
    Reservation,
    Resources,
)

PROFILES = [
    JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50"),
    JobProfile(0.535, 553.4, 233.0, 427.75, name="vgg-16"),
    JobProfile(0.226, 6.92, 59.5, 63.0, name="resnext-110"),
    JobProfile(0.075, 36.5, 120.125, 181.125, name="seq2seq"),
]
SLOT_S = 600.0


def small_instance(seed: int) -> tuple[ClusterSnapshot, list[JobRequest]]:
    """≤ 4 machines, ≤ 6 jobs, each job 1–4 slots long alone: horizons stay ≤ ~12 slots."""
    rng = random.Random(seed)
    machines = tuple(
        Machine(f"node{i + 1}", Resources(rng.choice([2, 4]), 8, 65536))
        for i in range(rng.randint(1, 4))
    )
    jobs = []
    for i in range(rng.randint(2, 6)):
        prof = rng.choice(PROFILES)
        n = rng.randint(1, 6)
        slots_alone = rng.uniform(0.5, 2.0)  # at full distributed speed
        jobs.append(
            JobRequest(
                job_id=f"j{i}",
                arrival_slot=rng.randint(0, 2),
                workload=slots_alone * n * prof.nu_ex(SLOT_S),
                max_workers=n,
                worker=Resources(1, rng.choice([1, 2]), rng.choice([4096, 8192])),
                ps=Resources(0, 1, 2048),
                profile=prof,
            )
        )
    return ClusterSnapshot(machines, slot_seconds=SLOT_S), jobs


def medium_instance(
    seed: int, machines: int = 8, jobs: int = 20
) -> tuple[ClusterSnapshot, list[JobRequest]]:
    rng = random.Random(seed)
    snap = ClusterSnapshot(
        tuple(Machine(f"node{i + 1}", Resources(4, 16, 131072)) for i in range(machines)),
        slot_seconds=SLOT_S,
    )
    out = []
    for i in range(jobs):
        prof = rng.choice(PROFILES)
        n = rng.choice([1, 2, 4, 6, 8, 12])
        out.append(
            JobRequest(
                job_id=f"j{i}",
                arrival_slot=rng.randint(0, 10),
                workload=rng.uniform(0.5, 4.0) * n * prof.nu_ex(SLOT_S),
                max_workers=n,
                worker=Resources(1, 2, 8192),
                ps=Resources(0, 2, 4096),
                profile=prof,
            )
        )
    return snap, out


def latency_cluster(machines: int, reservations: int, seed: int) -> ClusterSnapshot:
    """Machines of 8 GPUs / 32 CPUs / 256 GiB with random earlier reservations."""
    rng = random.Random(seed)
    snap = ClusterSnapshot(
        tuple(Machine(f"n{i}", Resources(8, 32, 262144)) for i in range(machines)),
        slot_seconds=SLOT_S,
    )
    res = []
    for k in range(reservations):
        start = rng.randrange(0, 20)
        res.append(
            Reservation(
                f"n{rng.randrange(machines)}",
                start,
                start + rng.randrange(1, 40),
                Resources(rng.choice([2, 4, 8]), 8, 65536),
                f"r{k}",
            )
        )
    return snap.with_reservations(tuple(res))


def latency_job(i: int, rng: random.Random) -> JobRequest:
    prof = PROFILES[0]
    n = rng.choice([1, 2, 4, 8, 16, 32])
    return JobRequest(
        f"q{i}",
        0,
        n * prof.nu_ex(SLOT_S) * rng.uniform(2, 30),
        n,
        Resources(1, 4, 16384),
        Resources(0, 2, 8192),
        prof,
    )
