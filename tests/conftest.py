"""Shared test helpers: small clusters and jobs (pure data)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

from slurm_mlsched.model import ClusterSnapshot, JobProfile, JobRequest, Machine, Resources
from slurm_mlsched.sim import SimJob, sim_jobs

# Property tests (hypothesis). Under CI (CI=true) the examples are derived from each test's
# own code (``derandomize``), so a CI run tests the same examples every time and a new
# counterexample cannot fail an unrelated commit at random; elsewhere they are random, so
# local runs keep exploring (a failure found there is kept as an @example).
# ``make fuzz`` runs them with fresh random examples FUZZ_RUNS times (the ``fuzz`` profile:
# random, and each failure printed with the blob that reproduces it).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("fuzz", print_blob=True)
settings.load_profile(
    os.environ.get(
        "HYPOTHESIS_PROFILE",
        "ci" if os.environ.get("CI", "").lower() == "true" else "default",
    )
)

RESNET = JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50")


def make_cluster(n: int, gpus: float = 4, cpus: float = 8, mem: float = 65536) -> ClusterSnapshot:
    return ClusterSnapshot(
        tuple(Machine(f"node{i + 1}", Resources(gpus, cpus, mem)) for i in range(n))
    )


def make_job(
    job_id: str = "j1",
    workers: int = 4,
    workload: float = 4000.0,
    arrival: int = 0,
    worker: Resources = Resources(1, 1, 8192),
    ps: Resources = Resources(0, 1, 4096),
    ps_count: int | None = None,
    profile: JobProfile = RESNET,
) -> JobRequest:
    return JobRequest(job_id, arrival, workload, workers, worker, ps, profile, ps_count=ps_count)


def one_node_burst() -> tuple[list[SimJob], ClusterSnapshot]:
    """The key-order probes' case (bench/oracle_order.py, bench/clause_noise.py): on one
    4-GPU node at Δ = 600 s a long 2-worker job, then a burst of short 2- and 4-worker jobs,
    whose outcome moves with the queue order."""
    delta = 600.0
    nu = RESNET.nu_in(delta)
    jobs = sim_jobs(
        [(make_job("long", workers=2, workload=nu * 2 * 30), 0.0)]
        + [
            (make_job(f"w{i}", workers=4, workload=nu * 4 * (2 + i)), 600.0 * (1 + i))
            for i in range(3)
        ]
        + [
            (make_job(f"n{i}", workers=2, workload=nu * 2 * (3 + i)), 900.0 * (1 + i))
            for i in range(3)
        ],
        delta,
    )
    return jobs, ClusterSnapshot((Machine("n0", Resources(4, 16, 65536)),), slot_seconds=delta)


@pytest.fixture
def cluster4() -> ClusterSnapshot:
    return make_cluster(4)


def require_or_skip(reason: str) -> None:
    """A needed service (a real PostgreSQL, Slurm, sshd) is missing: skip the test, except
    under CI (``CI=true``), where a missing service is a failure, never a silent skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def replay_jobs_file(tmp_path: Path) -> Path:
    """A six-job replay job list (jobs.json) shared by the replay CLI tests."""
    jobs = [
        {"id": f"j{i}", "submit": 300 * i, "workers": 1 + i % 3, "model": "seq2seq",
         "duration_s": 1200}
        for i in range(6)
    ]  # fmt: skip
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps({"jobs": jobs}))
    return path


def replay_job_list(tmp_path: Path, n: int) -> Path:
    """``n`` resnet-50 jobs (1–4 workers) and one that can never fit (16 GPUs per worker),
    as a job list with its epoch: the replay service tests' input."""
    jobs: list[dict[str, object]] = [
        {"id": f"j{i}", "submit": 200 * i, "workers": 1 + i % 4, "model": "resnet-50",
         "duration_s": 900 + 300 * i}
        for i in range(n)
    ]  # fmt: skip
    jobs.append({"id": "huge", "submit": 50, "workers": 1, "gpus_per_worker": 16,
                 "model": "vgg-16", "workload": 1000})  # fmt: skip
    path = tmp_path / "jobs.yaml"
    path.write_text(json.dumps({"epoch": "2026-02-01T08:00:00Z", "jobs": jobs}))
    return path
