"""GPU types from every input: Slurm's node Gres, the cluster file, the job option, the
generic trace reader, a node inventory; and the typed GRES the sbatch script asks for."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.cluster_file import parse_cluster
from slurm_mlsched.files.job_options import merge_options, to_request
from slurm_mlsched.model import Decision, Form, Mode, Resources, SlotPlan
from slurm_mlsched.sbatch.render import ScriptSpec, render_sbatch
from slurm_mlsched.sim.cluster import cluster_from_inventory
from slurm_mlsched.slurm.parse import gres_type, parse_scontrol_nodes, parse_sinfo_text
from slurm_mlsched.traces import ReadOptions, parse_column_map, parse_generic
from slurm_mlsched.traces.inventory import parse_node_inventory
from tests.conftest import make_job

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm"
SHARED_NODES = (
    Path(__file__).parents[3] / "shared" / "traces" / "alibaba-spot-gpu-2026-nodes"
) / "node_info_df.csv"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("gpu:v100:4(S:0-1)", "v100"),
        ("gpu:4", None),
        ("gpu:4(S:0)", None),
        ("gpu:a100:2,gpu:v100:1", None),  # mixed types on one node: untyped for the model
        ("gpu:a100:2,mps:100", "a100"),
        ("gres/gpu:v100=4", "v100"),
        ("gres:gpu:p100:2", "p100"),
        ("(null)", None),
        ("", None),
    ],
)
def test_gres_type(text: str, kind: str | None) -> None:
    assert gres_type(text) == kind


def test_the_captured_untyped_lab_nodes_have_no_type() -> None:
    for version in ("22.05", "24.11"):
        text = (FIXTURES / version / "idle" / "scontrol-nodes.txt").read_text()
        nodes = parse_scontrol_nodes(text)
        assert nodes and all(n.gpus == 4 and n.gpu_type is None for n in nodes)


def test_typed_gres_in_scontrol_and_sinfo_lines() -> None:
    # the captured 22.05 line with its Gres and CfgTRES written as a typed node reports them
    line = (FIXTURES / "22.05" / "idle" / "scontrol-nodes.txt").read_text().splitlines()[0]
    typed = line.replace("Gres=gpu:4", "Gres=gpu:v100:4(S:0)").replace(
        "gres/gpu=4", "gres/gpu=4,gres/gpu:v100=4"
    )
    (node,) = parse_scontrol_nodes(typed)
    assert (node.gpus, node.gpu_type) == (4, "v100")
    (row,) = parse_sinfo_text("node1|idle|8|65536|gpu:p100:2\n")
    assert (row.gpus, row.gpu_type) == (2, "p100")


def test_cluster_file_gpu_type() -> None:
    snap = parse_cluster(
        {
            "nodes": [{"name": "v1", "gpus": 4, "cpus": 8, "mem_gb": 64, "gpu_type": "v100"}],
            "groups": [
                {"prefix": "p", "count": 2, "gpus": 2, "cpus": 8, "mem_gb": 64, "gpu_type": "p100"},
                {"prefix": "c", "count": 1, "cpus": 8, "mem_gb": 64},
            ],
        },
        "c.yaml",
    )
    assert [(m.name, m.gpu_type) for m in snap.machines] == [
        ("v1", "v100"),
        ("p1", "p100"),
        ("p2", "p100"),
        ("c1", None),
    ]


@pytest.mark.parametrize(
    ("node", "problem"),
    [
        ({"gpu_type": "v 100", "gpus": 4}, "GPU type name"),
        ({"gpu_type": 100, "gpus": 4}, "GPU type name"),
        ({"gpu_type": "v100"}, "without GPUs"),
    ],
)
def test_cluster_file_refuses_bad_gpu_types(node: dict[str, object], problem: str) -> None:
    with pytest.raises(InputError, match=problem) as err:
        parse_cluster({"nodes": [{"name": "n1", "cpus": 8, "mem_gb": 64, **node}]}, "c.yaml")
    assert "nodes[0] ('n1')" in str(err.value) and "gpu_type" in str(err.value)


def test_job_option_gpu_type() -> None:
    opts = merge_options(["--gpu-type", "v100,p100", "--workers", "2"], {})
    assert opts.gpu_type == frozenset({"v100", "p100"})
    opts = replace(opts, batches_per_epoch=10, model="resnet-50")
    assert to_request(opts, 0).gpu_types == frozenset({"v100", "p100"})
    assert merge_options([], {"gpu_type": "any"}).gpu_type is None
    assert merge_options([], {}).gpu_type is None
    with pytest.raises(InputError, match="--gpu-type") as err:
        merge_options(["--gpu-type", "v100;p100"], {})
    assert "v100,p100" in (err.value.hint or "")


def _decision() -> Decision:
    plan = SlotPlan(0, Mode.DISTRIBUTED, (("v1", 2), ("v2", 2)), (("c1", 1),), 4)
    return Decision("j", "hand", Form.NON_ELASTIC, 0, (plan,), 0, 3, 1.0)


def test_the_script_asks_slurm_for_the_chosen_nodes_type() -> None:
    job = replace(
        make_job("j", workers=4, worker=Resources(1, 2, 4096), ps=Resources(0, 1, 2048)),
        gpu_types=frozenset({"v100", "p100"}),
    )
    spec = ScriptSpec(command=("python3", "t.py"), job_name="j")
    types = {"v1": "v100", "v2": "p100", "c1": None}
    text = render_sbatch(_decision(), job, {}, spec, types).text
    assert "--nodelist=v1 --nodes=1 --ntasks=2 --cpus-per-task=2 --mem=8G --gres=gpu:v100:2" in text
    assert "--nodelist=v2 --nodes=1 --ntasks=2 --cpus-per-task=2 --mem=8G --gres=gpu:p100:2" in text
    # the steps ask untyped: the component's allocation holds only that type, and srun
    # refuses typed --gres beside untyped --gpus-per-task (test_gpu_types_live.py found it)
    steps = [line for line in text.splitlines() if line.startswith("srun ")]
    workers = [line for line in steps if "--gpus-per-task" in line]
    assert len(workers) == 2 and all("--gres=gpu:2 --gpus-per-task=1" in w for w in workers)
    assert "v100" not in "".join(steps) and "p100" not in "".join(steps)
    assert "--nodelist=c1 --nodes=1 --ntasks=1 --cpus-per-task=1 --mem=2G\n" in text
    untyped = render_sbatch(_decision(), replace(job, gpu_types=None), {}, spec, types).text
    assert "--gres=gpu:2 --gpus-per-task=1" in untyped and "v100" not in untyped
    with pytest.raises(InputError, match="GPU type"):  # a node whose type is unknown
        render_sbatch(_decision(), job, {}, spec, {"v1": "v100"})
    with pytest.raises(InputError, match="'k80'"):  # a node of a type the job excludes
        render_sbatch(_decision(), job, {}, spec, {**types, "v2": "k80"})


def test_generic_reader_gpu_type_column() -> None:
    text = (
        "id,t,gpus,spec\n"
        "a,2024-01-01T00:00:00,1,V100M16|V100M32\n"
        "b,2024-01-01T00:01:00,1,\n"
        "c,2024-01-01T00:02:00,2,T4\n"
    )
    cmap = parse_column_map("job_id=id,submit=t,gpus=gpus,gpu_type=spec")
    trace = parse_generic(text.splitlines(keepends=True), ReadOptions(columns=cmap))
    assert [r.gpu_types for r in trace.records] == [
        frozenset({"V100M16", "V100M32"}),
        None,
        frozenset({"T4"}),
    ]
    bad = text + "d,2024-01-01T00:03:00,1,V100 M16\n"
    with pytest.raises(InputError, match="spec"):
        parse_generic(bad.splitlines(keepends=True), ReadOptions(columns=cmap))


INVENTORY = """gpu_model,gpu_capacity_num,cpu_num,node_name
A10,1,128,0
A10,1,128,1
A10,1,128,2
A100-SXM4-80GB,8,128,3
A100-SXM4-80GB,8,128,4
H800,8,192,5
"""


def test_inventory_to_cluster_keeps_types_and_mix() -> None:
    nodes = parse_node_inventory(INVENTORY, "inv.csv")
    full = cluster_from_inventory(nodes)
    assert [(m.gpu_type, m.capacity.gpu) for m in full.machines] == [
        ("A10", 1.0),
        ("A10", 1.0),
        ("A10", 1.0),
        ("A100-SXM4-80GB", 8.0),
        ("A100-SXM4-80GB", 8.0),
        ("H800", 8.0),
    ]
    assert full.machines[0].name == "a10-1" and full.machines[5].capacity.cpu == 192
    half = cluster_from_inventory(nodes, scale=0.5)
    kinds = [m.gpu_type for m in half.machines]
    assert len(kinds) == 3 and kinds.count("A10") == 1  # ⌊1.5⌋ + remainders, largest first
    with pytest.raises(ValueError, match="scale"):
        cluster_from_inventory(nodes, scale=0)
    with pytest.raises(InputError, match="gpu_capacity_num"):
        parse_node_inventory(INVENTORY + "A10,x,128,6\n", "inv.csv")


@pytest.mark.skipif(not SHARED_NODES.is_file(), reason="needs ../shared/traces (not in this clone)")
def test_the_alibaba_2026_inventory_scaled_down() -> None:
    nodes = parse_node_inventory(SHARED_NODES.read_text(encoding="utf-8"), str(SHARED_NODES))
    assert len(nodes) == 4278 and sum(n.gpus for n in nodes) == 10412
    small = cluster_from_inventory(nodes, scale=0.01)
    assert len(small.machines) == 43
    assert {m.gpu_type for m in small.machines} >= {"A10", "GPU-series-1", "A100-SXM4-80GB"}
