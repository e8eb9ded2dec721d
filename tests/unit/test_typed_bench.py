"""The typed-workload benchmark (bench/typed_bound.py): its rule for the GPU types a job
names, its cluster file (the inventory it says it is scaled from) and one cell, in which
no policy is below the bound with the type rows."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.typed_bound import (
    CLUSTER,
    DATACENTRE,
    EIGHT_GPU_TYPES,
    gpu_types_of,
    rebound,
    run_cell,
    typed,
    workloads,
)
from slurm_mlsched.files.cluster_file import load_cluster
from slurm_mlsched.sim import SimJob
from slurm_mlsched.sim.cluster import cluster_from_inventory
from slurm_mlsched.traces.inventory import load_node_inventory
from tests.conftest import make_job
from tests.traces.trace_files import TRACES, need


def jobs(workers: int, n: int = 2000) -> list[SimJob]:
    return [SimJob(make_job(f"j{k}", workers=workers), 0.0) for k in range(n)]


def test_the_rule_names_types_by_width_in_its_stated_shares() -> None:
    narrow = Counter(gpu_types_of(j, 0) for j in jobs(4))
    assert set(narrow) == {None, frozenset({"A10"}), frozenset({"A100-SXM4-80GB"})}
    assert abs(narrow[frozenset({"A10"})] / 2000 - 0.25) < 0.04
    assert abs(narrow[frozenset({"A100-SXM4-80GB"})] / 2000 - 0.15) < 0.04
    wide = Counter(gpu_types_of(j, 0) for j in jobs(16))
    assert set(wide) == {None, DATACENTRE} and abs(wide[DATACENTRE] / 2000 - 0.5) < 0.05
    widest = Counter(gpu_types_of(j, 0) for j in jobs(48))
    assert set(widest) == {None, EIGHT_GPU_TYPES}  # more GPUs than the data-centre types hold


def test_the_rule_is_one_draw_per_job_and_seed() -> None:
    some = jobs(4, 200)
    assert [j.request.gpu_types for j in typed(some, 3)] == [gpu_types_of(j, 3) for j in some]
    assert typed(some, 3) == typed(some, 3)
    assert [gpu_types_of(j, 3) for j in some] != [gpu_types_of(j, 4) for j in some]


def test_the_cluster_file_is_the_inventory_scaled_as_it_says() -> None:
    inventory = need(TRACES / "alibaba-spot-gpu-2026-nodes" / "node_info_df.csv")
    scaled = cluster_from_inventory(load_node_inventory(inventory), scale=0.006)
    ours = load_cluster(CLUSTER)

    def shapes(machines: object) -> Counter[tuple[str | None, float, float, float]]:
        return Counter(
            (m.gpu_type, m.capacity.gpu, m.capacity.cpu, m.capacity.mem)
            for m in machines  # type: ignore[attr-defined]
        )

    assert shapes(ours.machines) == shapes(scaled.machines)
    assert sum(m.capacity.gpu for m in ours.machines) == 68


def test_one_cell_every_policy_at_or_above_the_typed_bound() -> None:
    trace, label = workloads()[0]
    need(TRACES / trace)
    cell = run_cell(trace, label)  # raises if a policy's avg JCT is below the typed bound
    assert cell["jobs"] == 160 and 0 < cell["typed_jobs"] < 160
    assert cell["bound_h"] > 0 and cell["untyped_bound_h"] > 0
    for policy, got in cell["policies"].items():
        assert got["avg_h"] >= cell["bound_h"] * (1 - 1e-9), policy
        assert got["p50_h"] <= got["p99_h"], policy
    # --rebound: the same jobs rebuilt, the same bounds, every policy checked again
    again = rebound(cell)
    assert again["bound_h"] == pytest.approx(cell["bound_h"], rel=1e-9)
    assert again["untyped_bound_h"] == pytest.approx(cell["untyped_bound_h"], rel=1e-9)
    assert again["policies"] == cell["policies"] and "bounded" in again
    low = {**cell["policies"]["drf"], "avg_h": cell["bound_h"] * 0.99}
    with pytest.raises(AssertionError, match="below the typed bound"):
        rebound({**cell, "policies": {**cell["policies"], "drf": low}})
