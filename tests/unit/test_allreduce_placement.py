"""Where an allreduce job goes (issue 31 item 1): on the example cluster, the layout every
arrival policy gives is the best one the ring formula knows, found here independently by
enumerating every layout the nodes hold.

examples/cluster.yaml has 4 nodes × (4 GPUs, 8 CPUs, 64 GiB). A worker of 1 GPU, 2 CPUs and
16 GiB fits 4 to a node. ``--workers`` is the most workers (N, at most), as for a ps job, so
the best layout is the fastest of every layout of 1 … N workers.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from slurm_mlsched.files.cluster_file import load_cluster
from slurm_mlsched.model import Architecture, ClusterSnapshot, JobProfile, JobRequest, Resources
from slurm_mlsched.model.allreduce import rate
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.placement.program.verify import check_decision

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
INCEPTION = JobProfile(0.815, 42.1, 145.875, 1082.125, name="inception-bn")
RESNET = JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50")
V = 20_000.0


@pytest.fixture(scope="module")
def example() -> ClusterSnapshot:
    return load_cluster(EXAMPLE, now=None).at_slot(0)


def ddp(profile: JobProfile, cpus: int = 2, workers: int = 8) -> JobRequest:
    return JobRequest(
        "ddp", 0, V, workers, Resources(1, cpus, 16384), Resources(), profile,
        ps_count=0, arch=Architecture.ALLREDUCE,
    )  # fmt: skip


def best_by_enumeration(job: JobRequest, per_node: int, nodes: int) -> tuple[int, tuple[int, ...]]:
    """(fewest slots, its layouts' largest-first form) over every per-node count vector."""
    best: dict[int, set[tuple[int, ...]]] = {}
    for counts in itertools.product(range(per_node + 1), repeat=nodes):
        used = tuple(sorted((c for c in counts if c), reverse=True))
        if not used or sum(used) > job.max_workers:
            continue
        slots = math.ceil(V / rate(used, job.profile, 600.0) - 1e-9)
        best.setdefault(slots, set()).add(used)
    fewest = min(best)
    (layout,) = best[fewest]  # the cases below have one fastest layout
    return fewest, layout


def layout(decision_workers: tuple[tuple[str, int], ...]) -> tuple[int, ...]:
    return tuple(sorted((c for _, c in decision_workers if c), reverse=True))


@pytest.mark.parametrize("policy", ["yu-rr", "fifo-ff", "fifo-bf"])
def test_eight_workers_go_four_and_four_on_two_nodes(example: ClusterSnapshot, policy: str) -> None:
    job = ddp(INCEPTION)
    slots, best = best_by_enumeration(job, per_node=4, nodes=4)
    assert best == (4, 4)  # not 8 × 1, not 2 × 4: B_intra/B_net = 7.4 > k1·k2/n
    d = place(job, example, policy, PlacementParams(time_limit_s=30.0))
    assert check_decision(d, job, example) == []
    assert [layout(p.workers) for p in d.slots] == [(4, 4)]
    assert all(p.total_ps == 0 for p in d.slots)
    # the predicted end is the formula's: ⌈V / rate(4, 4)⌉ slots from slot 0
    assert d.end_slot == slots - 1
    assert d.work_covered == pytest.approx(slots * rate((4, 4), INCEPTION, 600.0))


def test_one_node_of_four_when_communication_dominates(example: ClusterSnapshot) -> None:
    # resnet-50: T(4,) = 0.449 + 1.5·102.2/306.5 = 0.949 s for 4 workers, T(4,4) = 2.062 s
    # for 8: 4/0.949 = 4.21 > 8/2.062 = 3.88 mini-batches per second
    job = ddp(RESNET)
    slots, best = best_by_enumeration(job, per_node=4, nodes=4)
    assert best == (4,)
    d = place(job, example, "yu-rr", PlacementParams())
    assert [layout(p.workers) for p in d.slots] == [(4,)] and d.end_slot == slots - 1


def test_the_default_cpus_hold_two_workers_a_node(example: ClusterSnapshot) -> None:
    # 4 CPUs a worker: 2 to a node; the fastest of every layout is then 2 + 2 + 2 + 2
    job = ddp(INCEPTION, cpus=4)
    slots, best = best_by_enumeration(job, per_node=2, nodes=4)
    assert best == (2, 2, 2, 2)
    d = place(job, example, "yu-rr", PlacementParams())
    assert check_decision(d, job, example) == []
    assert [layout(p.workers) for p in d.slots] == [best] and d.end_slot == slots - 1


def test_exact_is_the_optimum_of_the_linear_floors_only(example: ClusterSnapshot) -> None:
    # `exact` solves the integer program at the per-worker floors (docs/formulation.md
    # §18.2), elastic, then its runs are re-laid and timed by the formula: valid, no PS,
    # and never earlier than the best constant layout (nothing beats it on an empty cluster)
    job = ddp(INCEPTION)
    slots, _ = best_by_enumeration(job, per_node=4, nodes=4)
    d = place(job, example, "exact", PlacementParams(time_limit_s=30.0))
    assert check_decision(d, job, example) == []
    assert all(p.total_ps == 0 for p in d.slots)
    assert d.end_slot >= slots - 1


VGG = JobProfile(0.535, 553.4, 233.0, 427.75, name="vgg-16")


@pytest.mark.parametrize("policy", ["yu-rr", "fifo-ff", "fifo-bf"])
def test_a_heavy_model_runs_on_fewer_workers_when_that_is_faster(
    example: ClusterSnapshot, policy: str
) -> None:
    # vgg-16, 4 workers on one node: T = 0.535 + 2·(3/4)·553.4/427.75 + 6α = 2.4759 s,
    # 4·600/2.4759 = 969.3 a slot; one worker: 600/0.535 = 1121.5 (allreduce_shrink)
    job = ddp(VGG, workers=4)
    slots, best = best_by_enumeration(job, per_node=4, nodes=4)
    assert best == (1,)
    d = place(job, example, policy, PlacementParams())
    assert check_decision(d, job, example) == []
    assert [layout(p.workers) for p in d.slots] == [(1,)] and d.end_slot == slots - 1
    kept = place(job, example, policy, PlacementParams(allreduce_shrink=False))
    assert check_decision(kept, job, example) == []
    assert kept.end_slot > d.end_slot  # every worker kept: slower
