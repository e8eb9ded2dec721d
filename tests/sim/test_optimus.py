"""optimus (placement/baselines/optimus.py, task_layout.py) on small hand-checked scenarios.

Machines of (4 GPU, 16 CPU, 64 GiB); a worker (1, 1, 8 GiB), a PS (0, 1, 4 GiB); RESNET.
With ``optimus_noise = 0`` the fitted speed model is the time model itself: w/f = θ for
every sample, so θ0 = θ_mode and the other coefficients are 0, and a job's remaining time
is R·θ0/w.
"""

from __future__ import annotations

import numpy as np
import pytest

from slurm_mlsched.model import Mode
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.baselines.optimus import (
    allocate_counts,
    fit_speed_model,
    reallocate_optimus,
    speed,
)
from slurm_mlsched.placement.baselines.reallocation import RunningJob
from slurm_mlsched.placement.baselines.task_layout import fewest_machines
from slurm_mlsched.sim import SimJob, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

EXACT = PlacementParams(optimus_noise=0.0)
CAP = np.array([[4.0, 16.0, 65536.0]])


def running(job_id: str, workers: int, remaining: float, seed: int = 1) -> RunningJob:
    return RunningJob(make_job(job_id, workers=workers, workload=remaining), seed, remaining, None)


def test_noise_free_fit_recovers_the_time_model() -> None:
    dist = fit_speed_model(RESNET, 8, None, 0, 0.25, 3, 10, 0.0)  # every sample distributed
    assert dist[0] == pytest.approx(RESNET.theta_ex) and max(dist[1:]) < 1e-9
    colo = fit_speed_model(RESNET, 8, None, 8, 0.25, 3, 10, 0.0)  # every sample co-located
    assert colo[0] == pytest.approx(RESNET.theta_in)
    assert speed(dist, 2, 6) == pytest.approx(6 / RESNET.theta_ex)
    assert speed(dist, 0, 6) == 0.0


def test_noisy_fit_is_seeded_and_sees_the_loss_of_locality() -> None:
    a = fit_speed_model(RESNET, 16, None, 8, 0.25, 5, 20, 0.05)
    assert a == fit_speed_model(RESNET, 16, None, 8, 0.25, 5, 20, 0.05)
    assert a != fit_speed_model(RESNET, 16, None, 8, 0.25, 6, 20, 0.05)
    assert min(a) >= 0.0  # non-negative least squares
    # beyond 8 workers the job runs distributed: the per-worker speed drops
    assert speed(a, 4, 16) / 16 < speed(a, 1, 2) / 2


def test_greedy_gives_the_next_worker_to_the_largest_drop_per_dominant_share() -> None:
    # both start at 1 worker + 1 PS; drops R·θ(1/w − 1/(w+1)), R_A = 4x, R_B = x: A 1→2
    # (2x·θ), then A 2→3 (0.67x·θ) before B 1→2 (0.5x·θ); then the 4 GPUs are used
    jobs = (running("A", 4, 4000.0), running("B", 4, 1000.0))
    assert allocate_counts(jobs, CAP, EXACT) == [(3, 1), (1, 1)]
    allocs = reallocate_optimus(jobs, make_cluster(1, 4, 16), 0, EXACT)
    assert [(a.mode, a.total_workers, a.total_ps) for a in allocs if a] == [
        (Mode.COLOCATED, 3, 1),
        (Mode.COLOCATED, 1, 1),
    ]


def test_jobs_that_do_not_fit_wait_in_arrival_order() -> None:
    # 4 one-worker jobs and room for 3 worker+PS pairs (CPU: 16 / 2 per pair... GPU: 3)
    jobs = tuple(running(f"j{i}", 1, 100.0) for i in range(4))
    counts = allocate_counts(jobs, np.array([[3.0, 16.0, 65536.0]]), EXACT)
    assert counts == [(1, 1), (1, 1), (1, 1), (0, 0)]


def test_fewest_machines_spread_evenly() -> None:
    room = np.array([[2, 16, 65536], [4, 16, 65536], [4, 16, 65536]], dtype=float)
    alpha, beta = np.array([1.0, 1.0, 8192.0]), np.array([0.0, 1.0, 4096.0])
    got = fewest_machines(room, alpha, 6, beta, 2)  # 2 machines with the most room: 3 + 3
    assert got is not None
    assert got[0].tolist() == [0, 3, 3] and got[1].tolist() == [0, 1, 1]
    one = fewest_machines(room, alpha, 3, beta, 1)
    assert one is not None and one[0].tolist() == [0, 3, 0]  # the machine with the most room
    assert fewest_machines(room, alpha, 11, beta, 3) is None


def test_an_unchanged_job_keeps_its_machines() -> None:
    cluster = make_cluster(2, 4, 16)
    first = reallocate_optimus((running("A", 2, 500.0),), cluster, 0, EXACT)
    assert first[0] is not None
    moved = RunningJob(make_job("A", workers=2, workload=500.0), 1, 400.0, first[0])
    assert reallocate_optimus((moved,), cluster, 3, EXACT)[0] is first[0]


def test_optimus_replay_keeps_capacity_and_finishes_every_job() -> None:
    nu = RESNET.nu_in(600.0)
    jobs = [
        SimJob(make_job(f"j{i}", workers=w, workload=nu * 6 * w, arrival=i), i * 600.0)
        for i, w in enumerate([4, 2, 8, 1, 3, 6])
    ]
    result = simulate(jobs, make_cluster(2, 4, 16), "optimus", PlacementParams(seed=2))
    assert len(result.decisions) == 6 and not result.rejected
    assert capacity_violations(result) == [] and decision_problems(result) == []
    widths = {p.total_workers for d in result.decisions for p in d.slots}
    assert len(widths) > 1  # counts changed as jobs came and went


def test_an_allreduce_job_is_fitted_without_ps_terms() -> None:
    # ps_count 0 (allreduce): samples of the ring formula at the fewest-nodes layout, fitted
    # as w/f = θ0 + θ2·w; θ1 = θ3 = 0 and the speed needs no PS
    theta = fit_speed_model(RESNET, 8, 0, 4, 0.25, 3, 10, 0.0)
    assert theta[1] == 0.0 and theta[3] == 0.0
    assert speed(theta, 0, 4, allreduce=True) > 0.0
    assert speed(theta, 0, 4) == 0.0  # read as a ps job, no PS: no progress
