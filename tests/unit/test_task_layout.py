"""Shedding by bisection places exactly what the one-worker-at-a-time scan placed
(placement/baselines/task_layout.py: both layouts only get easier with fewer workers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import example, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import Mode, Resources
from slurm_mlsched.placement.baselines.reallocation import Allocation
from slurm_mlsched.placement.baselines.task_layout import (
    _one_machine,
    _pairs,
    any_layout,
    fewest_machines,
    first_fit,
    least_width,
    place_one,
    ps_for,
    spread_for,
    widest_spread,
)
from slurm_mlsched.placement.program.packing import EPS
from tests.conftest import make_job


def scan(job, workers, ps, room, spread):  # type: ignore[no-untyped-def]
    """The one-at-a-time scan place_one used before (the reference)."""
    alpha, beta = np.asarray(job.worker.as_tuple()), np.asarray(job.ps.as_tuple())
    lo, hi = job.min_distributed_workers(), job.max_distributed_workers()
    for w in range(workers, 0, -1):
        s = ps if w == workers else ps_for(job, w)
        colo = spread(room, alpha, w, beta, 1)
        if colo is not None and (h := _one_machine(*colo)) is not None:
            room[h] -= alpha * w + beta
            return Allocation(Mode.COLOCATED, ((h, w),), ((h, 1),))
        if not lo <= w <= hi:
            continue
        dist = spread(room, alpha, w, beta, max(s, job.ps_needed(w)))
        if dist is None:
            continue
        room -= dist[0][:, None] * alpha + dist[1][:, None] * beta
        if (h := _one_machine(*dist)) is not None:
            room[h] += beta * (int(dist[1][h]) - 1)
            return Allocation(Mode.COLOCATED, ((h, w),), ((h, 1),))
        return Allocation(Mode.DISTRIBUTED, _pairs(dist[0]), _pairs(dist[1]))
    return None


def machine_rooms(most: int) -> st.SearchStrategy[list[tuple[int, int, int]]]:
    """1 to ``most`` machines' free (GPUs, CPUs, GiB of memory)."""
    return st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 32), st.integers(0, 256)),
        min_size=1,
        max_size=most,
    )


@settings(max_examples=300, deadline=None)
@given(
    machine_rooms(12),
    st.integers(1, 40),
    st.integers(0, 4),
    st.integers(1, 8),
    st.integers(0, 2),
    st.sampled_from([None, 1, 2, 3]),
    st.booleans(),
)
@example(  # found by hypothesis: 1 worker and its PS fit only on 3 machines of 3 (k > W + S)
    rooms=[(0, 0, 2), (0, 1, 1), (0, 1, 1)], workers=3, gpu=0, cpu=1, ps_cpu=0,
    ps_count=None, fewest=True,
)  # fmt: skip
def test_bisection_places_what_the_scan_placed(
    rooms: list[tuple[int, int, int]],
    workers: int,
    gpu: int,
    cpu: int,
    ps_cpu: int,
    ps_count: int | None,
    fewest: bool,
) -> None:
    job = make_job(
        "j",
        workers=workers,
        worker=Resources(gpu, cpu, 1024 * cpu),
        ps=Resources(0, ps_cpu, 2048),
        ps_count=ps_count,
    )
    spread = fewest_machines if fewest else first_fit
    room = np.array([[g, c, 1024.0 * m] for g, c, m in rooms], dtype=np.float64)
    ps = ps_for(job, workers)
    want_room, got_room = room.copy(), room.copy()
    want = scan(job, workers, ps, want_room, spread)
    got = place_one(job, workers, ps, got_room, spread)
    assert got == want
    assert np.allclose(got_room, want_room, atol=EPS)


def fewest_reference(room, alpha, workers, beta, ps):  # type: ignore[no-untyped-def]
    """fewest_machines' definition searched literally: k = 1, 2, …, every machine, one at a
    time (it stopped at the job's task count until 2026-12-05, which broke monotonicity)."""
    from slurm_mlsched.placement.program.packing import fit_counts

    h = room.shape[0]
    order = np.lexsort((np.arange(h), -fit_counts(room, alpha)))
    for k in range(1, h + 1):
        sel = order[:k]
        w = np.full(k, workers // k, dtype=np.int64)
        w[: workers % k] += 1
        s = np.full(k, ps // k, dtype=np.int64)
        if ps % k:
            s[k - ps % k :] += 1
        need = w[:, None] * alpha + s[:, None] * beta
        if (room[sel] >= need - EPS).all():
            out_w = np.zeros(h, dtype=np.int64)
            out_s = np.zeros(h, dtype=np.int64)
            out_w[sel], out_s[sel] = w, s
            return out_w, out_s
    return None


def spread_cases(
    machines: int, cpus: int, mem: int, workers: tuple[int, int], ps: int
) -> tuple[st.SearchStrategy[Any], ...]:
    """(rooms, workers, PSs, worker GPUs, worker CPUs, PS CPUs) for :func:`fewest_machines`:
    up to ``machines`` rooms of at most 8 GPUs, ``cpus`` CPUs and ``mem`` memory."""
    rooms = st.tuples(st.integers(0, 8), st.integers(0, cpus), st.integers(0, mem))
    return (
        st.lists(rooms, min_size=1, max_size=machines),
        st.integers(*workers),
        st.integers(0, ps),
        st.integers(0, 4),
        st.integers(0, 8),
        st.integers(0, 2),
    )


def vectors(
    rooms: list[tuple[int, int, int]], gpu: int, cpu: int, ps_cpu: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The room, a worker's demand α and a PS's β of a :func:`spread_cases` case."""
    alpha = np.array([gpu, cpu, 2.0 * cpu], dtype=np.float64)
    beta = np.array([0.0, ps_cpu, 3.0])
    return np.array(rooms, dtype=np.float64), alpha, beta


@settings(max_examples=400, deadline=None)
@given(*spread_cases(80, 32, 64, (1, 120), 40))
@example(rooms=[(0, 0, 3), (0, 1, 2), (0, 1, 2)], workers=1, ps=1, gpu=0, cpu=1, ps_cpu=0)
def test_fewest_machines_in_blocks_is_the_one_at_a_time_search(
    rooms: list[tuple[int, int, int]], workers: int, ps: int, gpu: int, cpu: int, ps_cpu: int
) -> None:
    room, alpha, beta = vectors(rooms, gpu, cpu, ps_cpu)
    got = fewest_machines(room, alpha, workers, beta, ps)
    want = fewest_reference(room, alpha, workers, beta, ps)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert (got[0] == want[0]).all() and (got[1] == want[1]).all()


@settings(max_examples=300, deadline=None)
@given(*spread_cases(24, 16, 32, (2, 30), 6))
@example(rooms=[(0, 0, 3), (0, 1, 2), (0, 1, 2)], workers=2, ps=1, gpu=0, cpu=1, ps_cpu=0)
def test_fewest_machines_fits_fewer_workers_wherever_it_fits_more(
    rooms: list[tuple[int, int, int]], workers: int, ps: int, gpu: int, cpu: int, ps_cpu: int
) -> None:
    """Monotone in the job's size (what the shedding's bisection needs): if W workers and S
    PSs fit, W - 1 workers with S or S - 1 PSs fit too."""
    room, alpha, beta = vectors(rooms, gpu, cpu, ps_cpu)
    if fewest_machines(room, alpha, workers, beta, ps) is None:
        return
    for fewer_ps in {ps, max(ps - 1, 0)}:
        assert fewest_machines(room, alpha, workers - 1, beta, fewer_ps) is not None


def test_fewest_machines_puts_the_ps_past_the_job_s_task_count_when_only_there_it_fits() -> None:
    """One worker (1 CPU) and one PS (2 GB): the two machines with CPU room have 1 GB each;
    only the third (no CPU, 2 GB) holds the PS, so k = 3 > W + S."""
    room = np.array([[0.0, 0.0, 2048.0], [0.0, 1.0, 1024.0], [0.0, 1.0, 1024.0]])
    alpha, beta = np.array([0.0, 1.0, 1024.0]), np.array([0.0, 0.0, 2048.0])
    got = fewest_machines(room, alpha, 1, beta, 1)
    assert got is not None
    assert got[0].tolist() == [0, 1, 0] and got[1].tolist() == [1, 0, 0]


def test_the_fallback_lays_out_only_a_job_no_even_spread_ever_holds() -> None:
    capacity = np.array([[1.0, 4.0, 16384.0]] * 3)
    # two 1-CPU workers and a fixed two 4-CPU PSs: no even spread over 1-3 of these
    # machines holds them (a machine with a PS has no CPU left), first fit does
    odd = make_job(
        "odd", workers=2, workload=100.0, worker=Resources(0, 1, 1024),
        ps=Resources(0, 4, 1024), ps_count=2,
    )  # fmt: skip
    assert spread_for(odd, capacity, fewest_machines, first_fit) is first_fit
    room = capacity.copy()
    placed = place_one(odd, 2, 2, room, spread_for(odd, capacity, fewest_machines, first_fit))
    assert placed is not None and placed.total_workers == 2 and placed.total_ps == 2
    assert place_one(odd, 2, 2, capacity.copy(), fewest_machines) is None  # the stall
    # a job an even spread holds at some width keeps the policy's own spread, also when
    # the room now holds it at no width
    plain = make_job("plain", workers=2, workload=100.0, worker=Resources(1, 1, 1024))
    assert spread_for(plain, capacity, fewest_machines, first_fit) is fewest_machines
    full = np.zeros_like(capacity)
    assert spread_for(plain, full, fewest_machines, first_fit) is first_fit  # other cluster
    assert spread_for(plain, capacity, fewest_machines, first_fit) is fewest_machines


def test_the_least_width_is_the_fewest_workers_a_job_can_run_with() -> None:
    capacity = np.array([[0.0, 2.0, 16384.0]] * 3)
    fixed = make_job(
        "fixed", workers=3, workload=100.0, worker=Resources(0, 1, 1024),
        ps=Resources(0, 2, 1024), ps_count=2,
    )  # fmt: skip
    # one worker: co-located only (3 CPUs > 2); two: both on one node, a PS on each other
    assert least_width(fixed, capacity, first_fit, any_layout) == 2
    auto = make_job("auto", workers=3, workload=100.0, worker=Resources(0, 1, 1024))
    assert least_width(auto, capacity, first_fit, any_layout) == 1


@settings(max_examples=200, deadline=None)
@given(machine_rooms(8), st.integers(1, 24), st.integers(0, 4), st.integers(1, 8), st.booleans())
def test_the_widest_spread_is_the_most_workers_a_spread_holds(
    rooms: list[tuple[int, int, int]], workers: int, gpu: int, cpu: int, fewest: bool
) -> None:
    """``widest_spread`` (srtf's distributed shape) places the largest count a one-at-a-
    time scan down from ``workers`` finds a distributed layout for, where the scan places
    it, and reduces the room by what it placed."""
    job = make_job("j", workers=workers, worker=Resources(gpu, cpu, 1024 * cpu))
    spread = fewest_machines if fewest else first_fit
    room = np.array([[g, c, 1024.0 * m] for g, c, m in rooms], dtype=np.float64)
    alpha, beta = np.asarray(job.worker.as_tuple()), np.asarray(job.ps.as_tuple())
    lo, hi = job.min_distributed_workers(), job.max_distributed_workers()
    most = next(
        (
            w
            for w in range(min(workers, hi), lo - 1, -1)
            if spread(room, alpha, w, beta, max(ps_for(job, w), job.ps_needed(w))) is not None
        ),
        0,
    )
    got_room = room.copy()
    got = widest_spread(job, workers, got_room, spread)
    if most < 1:
        assert got is None and np.array_equal(got_room, room)
        return
    want_room = room.copy()
    want = place_one(job, most, ps_for(job, workers) if most == workers else ps_for(job, most),
                     want_room, spread, shed=False)  # fmt: skip
    assert got is not None and got.total_workers == most
    assert got == want
    assert np.allclose(got_room, want_room, atol=EPS)
