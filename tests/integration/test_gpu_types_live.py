"""GPU types (docs/formulation.md §17) end to end on the real lab cluster with typed GPUs.

The module restarts the lab with ``SLURM_LAB_GPU_TYPES="v100 v100 t4 t4"`` (slurm.conf
``Gres=gpu:TYPE:4``, gres.conf ``Type=``, typed TRES in accounting) and puts the untyped
default back afterwards (scripts/slurm-lab/start-cluster.sh restarts slurmctld and the
slurmd when the GRES change). Through the real ``mlsub``: the node types are read from
Slurm by every node-state source; a ``--gpu-type t4`` job is placed on t4 nodes only, its
script asks ``--gres=gpu:t4:N`` and Slurm gives it t4 GPUs there; a script's
``#SBATCH --gres=gpu:v100:1`` puts it on v100 nodes; a type no node has is refused
(``never-fits``, exit 4) with nothing submitted or stored; an untyped job uses both types;
a typed all-reduce job (equal and unequal ranks per node) runs on t4 nodes only and every
rank sees its node's GPUs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabCluster, lab_restarted, poll
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub, probe_script
from tests.task_probe import PROBE, probe_results

pytestmark = pytest.mark.integration

TYPES = {"node1": "v100", "node2": "v100", "node3": "t4", "node4": "t4"}
OF_TYPE = {kind: {n for n, k in TYPES.items() if k == kind} for kind in set(TYPES.values())}
#: A node-state source mlsub may be forced to (``MLSUB_SLURM_SOURCE``); "" = its own choice
#: (pyslurm when it is built for this Slurm, else the commands' JSON).
SOURCES = ("", "json", "text")


@pytest.fixture(scope="module")
def typed_lab(lab_ready: None) -> Iterator[None]:
    """The lab with the GPU types of ``TYPES`` for this module; unless it had them
    already, the untyped default is put back afterwards."""
    wanted = {n: (4, kind) for n, kind in TYPES.items()}
    types = " ".join(TYPES[n] for n in sorted(TYPES))
    with lab_restarted(wanted, "GPU types", SLURM_LAB_GPU_TYPES=types):
        yield


@pytest.fixture
def mlsub(tmp_path: Path) -> Mlsub:
    return Mlsub(tmp_path)


def _submit(mlsub: Mlsub, cluster: LabCluster, script: Path, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = mlsub.json(str(script), "--interpreter", sys.executable, *args)
    assert out["slurm_job_id"], out
    cluster.jobs.append(int(out["slurm_job_id"]))
    return out


def _asked_gres(script: str) -> list[str]:
    """Every GPU ``--gres=`` the rendered script's ``#SBATCH`` lines ask Slurm for (the
    allocation's; the steps inside it ask untyped and draw from it)."""
    lines = "\n".join(line for line in script.splitlines() if line.startswith("#SBATCH"))
    return re.findall(r"--gres=(gpu\S*)", lines)


def _allocated_gres(job: str) -> dict[str, str]:
    """Node -> the GRES Slurm allocated the job there (``scontrol -d show job``; every
    hetjob component; ``""`` on a node where it holds no GRES)."""
    shown = subprocess.run(
        ["scontrol", "-d", "-o", "show", "job", job], capture_output=True, text=True, timeout=30
    )
    return {
        node: gres
        for node, gres in re.findall(r"\bNodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=(\S*)", shown.stdout)
    }


def _gres_while_running(cluster: LabCluster, out: dict[str, Any]) -> dict[str, str]:
    job = out["slurm_job_id"]
    cluster.wait_running(int(job))
    nodes = {p["node"] for p in out["placement"]}

    def allocated() -> dict[str, str] | None:
        gres = _allocated_gres(job)
        return gres if set(gres) == nodes else None

    return poll(f"job {job}'s allocated GRES on {sorted(nodes)}", allocated)


def _worker_nodes(out: dict[str, Any]) -> set[str]:
    return {p["node"] for p in out["placement"] if p["role"] == "worker"}


def _gpu_type_of(gres: str) -> str | None:
    """``gpu:t4:4(IDX:0-3)`` -> ``t4``; ``gpu:4(IDX:0-3)`` -> None."""
    match = re.match(r"gpu:([^:(]+):\d+", gres)
    return match.group(1) if match else None


def _ran_where_decided(out: dict[str, Any], tasks_dir: Path) -> None:
    ran = sorted((t["node"], t["env"]["MLSCHED_ROLE"]) for t in probe_results(tasks_dir))
    decided = sorted((p["node"], p["role"]) for p in out["placement"] for _ in range(p["count"]))
    assert ran == decided


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s or "default")
def test_mlsub_cluster_reads_each_nodes_gpu_type_from_slurm(
    typed_lab: None, mlsub: Mlsub, source: str
) -> None:
    if source:
        mlsub.extra_env["MLSUB_SLURM_SOURCE"] = source
    view = mlsub.json("cluster")
    assert {n["name"]: n["gpu_type"] for n in view["nodes"]} == TYPES, view["source"]
    table = mlsub.run("cluster").stdout
    for node, kind in TYPES.items():
        assert re.search(rf"{node}\s.*\b4/4 {kind}\b", table), table


def test_a_t4_job_runs_its_gpu_tasks_on_t4_nodes_with_t4_gpus(
    typed_lab: None, mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    # two workers of 4 GPUs: the two t4 nodes, though the v100 nodes (listed first) are free
    shape = f"{SMALL_TASKS} --workers 2 --gpus-per-worker 4 --batches-per-epoch 10000"
    script = probe_script(tmp_path / "probe.py", shape)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    plan = mlsub.json("plan", str(script), "--gpu-type", "t4")
    assert plan["job"]["gpu_types"] == ["t4"]
    assert _worker_nodes(plan) == OF_TYPE["t4"], plan["placement"]
    out = _submit(mlsub, cluster, script, "--gpu-type", "t4", "--", str(tasks), "3")
    assert _worker_nodes(out) == OF_TYPE["t4"], out["placement"]
    asked = _asked_gres(out["script"])
    assert asked and all(g == "gpu:t4:4" for g in asked), asked
    allocated = _gres_while_running(cluster, out)
    for node in _worker_nodes(out):
        assert _gpu_type_of(allocated[node]) == "t4", allocated
    # a node that holds only the (GPU-less) PS may be of any type, and has no GRES there
    assert all(_gpu_type_of(g) == "t4" for g in allocated.values() if g), allocated
    job = out["slurm_job_id"]
    assert set(cluster.wait_finished(int(job))) == {"COMPLETED"}
    _ran_where_decided(out, tasks)

    def accounted() -> list[list[str]] | None:
        sacct = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", job, "-o", "NodeList,AllocTRES"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        rows = [r.split("|", 1) for r in sacct.stdout.splitlines() if r]
        return rows if len(rows) == len({p["node"] for p in out["placement"]}) else None

    for node, tres in poll("the job's components in sacct", accounted, timeout=60):
        if node in _worker_nodes(out):
            assert "gres/gpu:t4=4" in tres.split(","), (node, tres)
        assert "gres/gpu:v100" not in tres, (node, tres)


SBATCH_V100 = """#!/usr/bin/env python3
#SBATCH --gres=gpu:v100:1
# mlsub: {small} --workers 2 --batches-per-epoch 100
import sys
exec({probe!r})
"""


def test_a_scripts_typed_gres_line_puts_it_on_v100_nodes(
    typed_lab: None, mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    script = tmp_path / "v100.py"
    script.write_text(SBATCH_V100.format(small=SMALL_TASKS, probe=PROBE))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    out = _submit(mlsub, cluster, script, "--", str(tasks))
    assert out["job"]["gpu_types"] == ["v100"]
    assert _worker_nodes(out) and _worker_nodes(out) <= OF_TYPE["v100"], out["placement"]
    asked = _asked_gres(out["script"])
    assert asked and all(re.fullmatch(r"gpu:v100:\d+", g) for g in asked), asked
    assert set(cluster.wait_finished(int(out["slurm_job_id"]))) == {"COMPLETED"}
    _ran_where_decided(out, tasks)
    for task in probe_results(tasks):
        if task["env"]["MLSCHED_ROLE"] == "worker":
            assert task["node"] in OF_TYPE["v100"] and task["env"]["CUDA_VISIBLE_DEVICES"]


def test_a_gpu_type_no_node_has_is_refused_and_nothing_is_submitted_or_stored(
    typed_lab: None, mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    shape = f"{SMALL_TASKS} --workers 1 --batches-per-epoch 100"
    script = probe_script(tmp_path / "a100probe.py", shape)
    proc = mlsub.run(str(script), "--interpreter", sys.executable, "--gpu-type", "a100",
                     check=False)  # fmt: skip
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "error[never-fits]" in proc.stderr and "a100" in proc.stderr, proc.stderr
    assert "the cluster has: t4, v100" in proc.stderr, proc.stderr
    named = cluster.slurm.run(["squeue", "-h", "-t", "all", "-n", "a100probe", "-o", "%i"])
    assert named.strip() == ""
    assert mlsub.json("history") == []


def test_an_untyped_job_may_use_nodes_of_every_type(
    typed_lab: None, mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    # four workers of 4 GPUs: every node, v100 and t4 alike, asked untyped
    shape = f"{SMALL_TASKS} --workers 4 --gpus-per-worker 4 --batches-per-epoch 10000"
    script = probe_script(tmp_path / "probe.py", shape)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    out = _submit(mlsub, cluster, script, "--", str(tasks), "3")
    assert out["job"]["gpu_types"] is None
    assert _worker_nodes(out) == set(TYPES), out["placement"]
    asked = _asked_gres(out["script"])
    assert asked and all(g == "gpu:4" for g in asked), asked
    allocated = _gres_while_running(cluster, out)
    assert {n: _gpu_type_of(g) for n, g in allocated.items()} == TYPES, allocated
    assert set(cluster.wait_finished(int(out["slurm_job_id"]))) == {"COMPLETED"}
    _ran_where_decided(out, tasks)


#: An all-reduce job of up to 8 one-GPU ranks started by srun (no torch); each rank writes
#: its node and the GPUs it sees to ``DIR/rank-RANK.json``.
ALLREDUCE_RANKS = """#!/usr/bin/env python3
# mlsub: --arch allreduce --launcher srun --workers 8 --gpus-per-worker 1 --cpus-per-worker 1
# mlsub: --mem-per-worker 1G --step-time 0.05 --model-size 1 --batches-per-epoch 10000
import json, os, sys
e = os.environ
keys = ("RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES")
with open(os.path.join(sys.argv[1], "rank-" + e["RANK"] + ".json"), "x") as out:
    json.dump({"node": e.get("SLURMD_NODENAME"), **{k: e.get(k) for k in keys}}, out)
"""


@pytest.mark.parametrize("counts", ["equal", "unequal"])
def test_a_typed_allreduce_job_runs_on_t4_nodes_only_and_every_rank_sees_its_gpus(
    typed_lab: None, mlsub: Mlsub, cluster: LabCluster, tmp_path: Path, counts: str
) -> None:
    # 8 one-GPU ranks on the t4 nodes: 4 + 4 on free nodes; with one of node3's GPUs held
    # by another job, 3 + 4 (the job then asks per rank, --gpus-per-task=t4:1)
    held = {"node3": 1} if counts == "unequal" else {}
    for node, gpus in held.items():
        other = cluster.sbatch(
            "-w", node, "-n1", "-c1", "--mem=1G", f"--gres=gpu:t4:{gpus}",
            "-J", "holder", "-o", "/dev/null", "--wrap", "sleep 300",
        )  # fmt: skip
        cluster.wait_running(other)
    script = tmp_path / "ranks.py"
    script.write_text(ALLREDUCE_RANKS)
    ranks_dir = tmp_path / "ranks"
    ranks_dir.mkdir()
    out = _submit(mlsub, cluster, script, "--gpu-type", "t4", "--", str(ranks_dir))
    decided = {p["node"]: p["count"] for p in out["placement"]}
    assert {p["role"] for p in out["placement"]} == {"worker"}, out["placement"]
    want = {"node3": 4 - held.get("node3", 0), "node4": 4}
    assert decided == want, out["placement"]
    (line,) = [ln for ln in out["script"].splitlines() if ln.startswith("#SBATCH --nodelist=")]
    if counts == "equal":
        assert "--ntasks-per-node=4 " in line and "--gres=gpu:t4:4" in line, line
    else:  # the allocation asks the type per rank; the rank step untyped
        assert "--gpus-per-task=t4:1" in line and "--ntasks-per-node" not in line, line
        assert "\nunset SLURM_GPUS_PER_TASK\n" in out["script"]
    assert "v100" not in out["script"]
    job = out["slurm_job_id"]
    assert set(cluster.wait_finished(int(job))) == {"COMPLETED"}
    ranks = [json.loads(p.read_text()) for p in sorted(ranks_dir.glob("rank-*.json"))]
    assert sorted(int(r["RANK"]) for r in ranks) == list(range(sum(want.values()))), ranks
    ran: dict[str, int] = {}
    for r in ranks:
        ran[r["node"]] = ran.get(r["node"], 0) + 1
    assert ran == want, ranks  # on the t4 nodes only, as the decision laid them out
    for r in ranks:
        # every rank sees all the GPUs the job holds on its node, as with torchrun
        seen = (r["CUDA_VISIBLE_DEVICES"] or "").split(",")
        assert r["CUDA_VISIBLE_DEVICES"] and len(set(seen)) == want[r["node"]], r
        assert r["LOCAL_WORLD_SIZE"] == str(want[r["node"]]), r

    def accounted() -> str | None:
        sacct = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", job, "-o", "AllocTRES"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return sacct.stdout.strip() or None

    tres = poll("the job in sacct", accounted, timeout=60).split(",")
    assert f"gres/gpu:t4={sum(want.values())}" in tres, tres
    assert not any(t.startswith("gres/gpu:v100") for t in tres), tres


#: A torchrun stand-in (the interpreter below has a name torchrun's launcher does not take
#: for Python, so the node's ``torchrun`` on ``PATH`` is this): it writes its options and
#: the GPUs it sees to ``DIR/torchrun-NODE.json`` and starts ``--nproc-per-node`` local
#: ranks with torchrun's ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``.
FAKE_TORCHRUN = """#!/bin/bash
for arg in "$@"; do
  case "$arg" in
    --nproc-per-node=*) nproc=${arg#--nproc-per-node=} ;;
    --no-python) break ;;
  esac
done
options=()
while [ "$1" != --no-python ]; do options+=("$1"); shift; done
shift
dir=$3
{ printf '{"node": "%s", "cvd": "%s", "options": [' "$SLURMD_NODENAME" "${CUDA_VISIBLE_DEVICES-}"
  sep=; for o in "${options[@]}"; do printf '%s"%s"' "$sep" "$o"; sep=,; done
  printf ']}'; } > "$dir/torchrun-$SLURMD_NODENAME.json"
pids=()
for ((i = 0; i < nproc; i++)); do
  LOCAL_RANK=$i LOCAL_WORLD_SIZE=$nproc "$@" & pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit "$status"
"""

#: The ranks under torchrun: each writes its node, local rank and GPUs to
#: ``DIR/rank-NODE-LOCAL_RANK.json``.
ALLREDUCE_TORCHRUN = """#!/usr/bin/env python3
# mlsub: --arch allreduce --launcher torchrun --workers 8 --gpus-per-worker 1
# mlsub: --cpus-per-worker 1 --mem-per-worker 1G --step-time 0.05 --model-size 1
# mlsub: --batches-per-epoch 10000
import json, os, sys
e = os.environ
name = "rank-" + e["SLURMD_NODENAME"] + "-" + e["LOCAL_RANK"] + ".json"
keys = ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES")
with open(os.path.join(sys.argv[1], name), "x") as out:
    json.dump({"node": e.get("SLURMD_NODENAME"), **{k: e.get(k) for k in keys}}, out)
"""


def test_a_typed_unequal_torchrun_job_gives_each_nodes_torchrun_that_nodes_gpus(
    typed_lab: None, mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    # 7 one-GPU ranks 3 + 4 on the t4 nodes (one of node3's GPUs held by another job): the
    # job asks --gpus-per-task=t4:1, its one-task-per-node torchrun step --gpus=7 untyped.
    # Inherited, the per-rank request gave each node's torchrun ONE GPU (Slurm 22.05).
    other = cluster.sbatch(
        "-w", "node3", "-n1", "-c1", "--mem=1G", "--gres=gpu:t4:1",
        "-J", "holder", "-o", "/dev/null", "--wrap", "sleep 300",
    )  # fmt: skip
    cluster.wait_running(other)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "torchrun").write_text(FAKE_TORCHRUN)
    (bin_dir / "torchrun").chmod(0o755)
    interpreter = bin_dir / "rank-interpreter"  # not python*: torchrun from PATH
    interpreter.write_text(f'#!/bin/bash\nexec {sys.executable!r} "$@"\n')
    interpreter.chmod(0o755)
    mlsub.extra_env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    script = tmp_path / "ranks.py"
    script.write_text(ALLREDUCE_TORCHRUN)
    ranks_dir = tmp_path / "ranks"
    ranks_dir.mkdir()
    out: dict[str, Any] = mlsub.json(
        str(script), "--interpreter", str(interpreter), "--gpu-type", "t4", "--", str(ranks_dir)
    )
    assert out["slurm_job_id"], out
    cluster.jobs.append(int(out["slurm_job_id"]))
    want = {"node3": 3, "node4": 4}
    assert {p["node"]: p["count"] for p in out["placement"]} == want, out["placement"]
    (line,) = [ln for ln in out["script"].splitlines() if ln.startswith("#SBATCH --nodelist=")]
    assert "--gpus-per-task=t4:1" in line and "--ntasks-per-node" not in line, line
    assert "\nunset SLURM_GPUS_PER_TASK\n" in out["script"]
    assert "--ntasks-per-node=1 --gpus=7 " in out["script"]
    job = out["slurm_job_id"]
    assert set(cluster.wait_finished(int(job))) == {"COMPLETED"}
    nodes = {p.stem: json.loads(p.read_text()) for p in ranks_dir.glob("torchrun-*.json")}
    assert set(nodes) == {f"torchrun-{n}" for n in want}, nodes
    for run in nodes.values():
        # that node's torchrun sees as many GPUs as it starts ranks
        assert f"--nproc-per-node={want[run['node']]}" in run["options"], run
        assert "--nnodes=2" in run["options"], run
        assert len(set(run["cvd"].split(","))) == want[run["node"]], run
    ranks = [json.loads(p.read_text()) for p in ranks_dir.glob("rank-*.json")]
    assert sorted((r["node"], int(r["LOCAL_RANK"])) for r in ranks) == [
        (node, i) for node in sorted(want) for i in range(want[node])
    ], ranks
    for r in ranks:
        seen = set((r["CUDA_VISIBLE_DEVICES"] or "").split(","))
        assert r["CUDA_VISIBLE_DEVICES"] and len(seen) == want[r["node"]], r
        assert r["LOCAL_WORLD_SIZE"] == str(want[r["node"]]), r
