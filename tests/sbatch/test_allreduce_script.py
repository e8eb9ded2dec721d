"""The allreduce job's script (issue 31): golden files, the one-job layout, both launchers
run for real by bash with a stand-in srun, torchrun and scontrol, and hostile input."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.model import (
    Architecture,
    Decision,
    Form,
    JobRequest,
    Launcher,
    Mode,
    Resources,
    Role,
    SlotPlan,
)
from slurm_mlsched.sbatch import ScriptSpec, render_sbatch
from tests.conftest import RESNET

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "sbatch"
UPDATE = os.environ.get("MLSUB_UPDATE_GOLDEN") == "1"
ADDRESSES = {"node1": "10.0.0.1", "node2": "10.0.0.2", "node3": "10.0.0.3"}
HOSTILE = ["with space", "it's", "$(touch MARKER)", "`touch MARKER`", "a\nb", "", "-n", "*"]


def ddp_job(worker: Resources = Resources(1, 4, 16384), **kw: Any) -> JobRequest:
    """An allreduce job of up to 8 ranks (``launcher`` None: torchrun)."""
    return JobRequest(
        "ddp-1", 0, 1000.0, 8, worker, Resources(), RESNET, ps_count=0,
        arch=Architecture.ALLREDUCE, **kw,
    )  # fmt: skip


def decision(*workers: tuple[str, int], ps: tuple[tuple[str, int], ...] = ()) -> Decision:
    plan = SlotPlan(0, Mode.DISTRIBUTED, workers=workers, ps=ps, length=4)
    return Decision(
        job_id="ddp-1", policy="hand", form=Form.NON_ELASTIC, seed=0, slots=(plan,),
        start_slot=0, end_slot=3, work_covered=1.0,
    )  # fmt: skip


EQUAL = decision(("node1", 2), ("node2", 2))
UNEQUAL = decision(("node1", 3), ("node3", 1))


def spec(**kw: Any) -> ScriptSpec:
    base: dict[str, Any] = {
        "command": ("python3", "ddp_train.py", "--epochs", "2"),
        "job_name": "ddp",
        "decision_id": "17",
        "comment": "mlsched:decision=17:0123456789ab",
        "base_port": 29600,
    }
    return ScriptSpec(**{**base, **kw})


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}: run with MLSUB_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed (MLSUB_UPDATE_GOLDEN=1)"


def sbatch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#SBATCH")]


# --- golden files and layout -------------------------------------------------------------


def test_golden_torchrun_equal() -> None:
    check_golden("allreduce_torchrun.sh", render_sbatch(EQUAL, ddp_job(), ADDRESSES, spec()).text)


def test_golden_torchrun_unequal() -> None:
    text = render_sbatch(UNEQUAL, ddp_job(), ADDRESSES, spec()).text
    check_golden("allreduce_torchrun_unequal.sh", text)


def test_golden_srun_unequal_with_header_options() -> None:
    script = render_sbatch(
        UNEQUAL, ddp_job(launcher=Launcher.SRUN), ADDRESSES,
        spec(partition="gpu", time_limit_minutes=90,
             output="/tmp/%x-%j.out", sbatch_job=("--account=ml",), sbatch_each=("--qos=high",)),
    )  # fmt: skip
    check_golden("allreduce_srun_unequal.sh", script.text)


def test_one_job_no_hetjob_with_exact_per_node_counts_when_equal() -> None:
    text = render_sbatch(EQUAL, ddp_job(), ADDRESSES, spec(comment=None)).text
    assert "hetjob" not in text.replace("(no hetjob", "") and "--het-group" not in text
    assert sbatch_lines(text)[1:] == [
        "#SBATCH --nodelist=node1,node2 --nodes=2 --ntasks=4 --ntasks-per-node=2 "
        "--cpus-per-task=4 --mem=32G --gres=gpu:2"
    ]
    assert "--rdzv-backend=c10d" in text and "--nproc-per-node=" in text
    assert "export MLSCHED_RDZV_ENDPOINT=10.0.0.1:29600\n" in text
    assert "scontrol" not in text  # equal counts are exact: nothing to compare


def test_unequal_counts_ask_per_rank_and_say_when_slurm_lays_them_out_otherwise() -> None:
    text = render_sbatch(UNEQUAL, ddp_job(), ADDRESSES, spec(comment=None)).text
    assert sbatch_lines(text)[1:] == [
        "#SBATCH --nodelist=node1,node3 --nodes=2 --ntasks=4 "
        "--cpus-per-task=4 --mem-per-cpu=4096M --gpus-per-task=1"
    ]  # no --ntasks-per-node=3: Slurm would then want 3 ranks' room on node3 too
    assert "export MLSCHED_LAYOUT=node1:3,node3:1\n" in text
    assert "scontrol show hostnames" in text


def test_cpu_only_ranks_ask_for_no_gpus() -> None:
    text = render_sbatch(EQUAL, ddp_job(Resources(0, 1, 1024)), {}, spec()).text
    line = sbatch_lines(text)[1]
    assert "--mem=2G" in line and "gres" not in line and "gpus" not in line


def test_gpu_types_are_asked_for_when_the_nodes_share_one() -> None:
    job = ddp_job(gpu_types=frozenset({"v100", "p100"}))
    same = {"node1": "v100", "node2": "v100", "node3": "p100"}
    assert "--gres=gpu:v100:2" in render_sbatch(EQUAL, job, {}, spec(), same).text
    mixed = render_sbatch(UNEQUAL, job, {}, spec(), same).text  # node1 v100, node3 p100
    assert "--gpus-per-task=1" in mixed and "v100" not in mixed  # the nodelist pins them
    with pytest.raises(InputError, match="GPU type"):
        render_sbatch(EQUAL, job, {}, spec(), {"node1": "v100", "node2": "k80"})


def test_a_typed_unequal_job_asks_the_type_per_rank_and_its_rank_step_untyped(
    tmp_path: Path,
) -> None:
    # the allocation asks the type; the step must not inherit it: on Slurm 22.05 a step
    # under a job's --gpus-per-task=t4:1 gave its ranks no GPUs (test_gpu_types_live.py)
    job = ddp_job(gpu_types=frozenset({"v100"}), launcher=Launcher.SRUN)
    kinds = {"node1": "v100", "node3": "v100"}
    command = (sys.executable, "-c", PROBE)
    text = render_sbatch(UNEQUAL, job, ADDRESSES, spec(command=command, comment=None), kinds).text
    assert sbatch_lines(text)[-1].endswith("--mem-per-cpu=4096M --gpus-per-task=v100:1")
    steps = [line for line in text.splitlines() if line.startswith("srun ")]
    assert steps == ["srun --ntasks=4 --cpus-per-task=4 --kill-on-bad-exit=1 \\"]
    assert text.index("\nunset SLURM_GPUS_PER_TASK\n") < text.index("\nsrun ")
    run_script(text, tmp_path, "3,1", SLURM_GPUS_PER_TASK="v100:1")
    ranks = outputs(tmp_path, "rank-")
    assert len(ranks) == 4 and all(r["env"]["SLURM_GPUS_PER_TASK"] is None for r in ranks)


@pytest.mark.parametrize("launcher", [Launcher.SRUN, Launcher.TORCHRUN])
def test_only_an_unequal_step_over_per_rank_gpus_drops_the_jobs_gpus_per_task(
    launcher: Launcher,
) -> None:
    unset = "unset SLURM_GPUS_PER_TASK"
    assert unset in render_sbatch(UNEQUAL, ddp_job(launcher=launcher), {}, spec()).text
    equal = render_sbatch(EQUAL, ddp_job(launcher=launcher), {}, spec()).text
    assert unset not in equal and "--gpus=" not in equal  # --gres per node
    no_gpus = ddp_job(Resources(0, 1, 1024), launcher=launcher)
    text = render_sbatch(UNEQUAL, no_gpus, {}, spec()).text
    assert unset not in text and "--gpus=" not in text


def test_an_unequal_torchrun_step_asks_all_the_jobs_gpus_untyped_as_a_total(
    tmp_path: Path,
) -> None:
    # one task per node under the job's --gpus-per-task: each node's torchrun got ONE GPU
    # on Slurm 22.05; asking the job's total (--gpus=N*G) gives it all the node's
    job = ddp_job(Resources(2, 4, 16384), gpu_types=frozenset({"v100"}))
    kinds = {"node1": "v100", "node3": "v100"}
    text = render_sbatch(UNEQUAL, job, ADDRESSES, spec(comment=None), kinds).text
    assert sbatch_lines(text)[-1].endswith("--mem-per-cpu=4096M --gpus-per-task=v100:2")
    steps = [line for line in text.splitlines() if line.startswith("srun ")]
    assert steps == ["srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --gpus=8 "
                     "--kill-on-bad-exit=1 \\"]  # fmt: skip
    assert text.index("\nunset SLURM_GPUS_PER_TASK\n") < text.index("\nsrun ")
    run_script(text, tmp_path, "3,1", SLURM_GPUS_PER_TASK="v100:2")
    nodes = outputs(tmp_path, "torchrun-")
    assert [n["gpus_per_task"] for n in nodes] == [None, None]
    assert [n["options"][1] for n in nodes] == ["--nproc-per-node=3", "--nproc-per-node=1"]


def test_tasks_are_the_ranks_with_the_rendezvous_endpoint() -> None:
    script = render_sbatch(UNEQUAL, ddp_job(), ADDRESSES, spec())
    assert [(t.role, t.rank, t.node, t.endpoint) for t in script.tasks] == [
        (Role.WORKER, 0, "node1", "10.0.0.1:29600"),
        (Role.WORKER, 1, "node1", "10.0.0.1:29600"),
        (Role.WORKER, 2, "node1", "10.0.0.1:29600"),
        (Role.WORKER, 3, "node3", "10.0.0.1:29600"),
    ]
    assert script.components == ()


def test_a_decision_with_parameter_servers_is_refused() -> None:
    with pytest.raises(InputError, match="parameter servers for an allreduce job"):
        render_sbatch(decision(("node1", 2), ps=(("node1", 1),)), ddp_job(), {}, spec())


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"job_name": "a\nb"}, "job name"),
        ({"partition": "gpu\n#SBATCH --x"}, "partition"),
        ({"command": ()}, "command to run is empty"),
        ({"base_port": 80}, "out of range"),
    ],
)
def test_bad_specs_are_input_errors(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        render_sbatch(EQUAL, ddp_job(), ADDRESSES, spec(**kw))


def test_hostile_node_addresses_are_refused() -> None:
    with pytest.raises(InputError, match="node address"):
        render_sbatch(EQUAL, ddp_job(), {"node1": "10.0.0.1\nrm -rf /"}, spec())


def test_the_launcher_is_the_requests_and_torchrun_by_default() -> None:
    assert "torch.distributed.run" in render_sbatch(EQUAL, ddp_job(), {}, spec()).text
    srun = render_sbatch(EQUAL, ddp_job(launcher="srun"), {}, spec()).text
    assert "torch.distributed.run" not in srun and 'export RANK="$SLURM_PROCID"' in srun


# --- run for real: bash, a stand-in srun, torchrun and scontrol ---------------------------

#: srun: a step of --ntasks tasks laid out over the job's nodes as MLSCHED_RANKS_PER_NODE
#: says (or one per node with --ntasks-per-node=1), with Slurm's per-task variables.
FAKE_SRUN = r"""#!/bin/bash
n=1 per_node=
while [ $# -gt 0 ]; do
  case "$1" in
    --ntasks=*) n=${1#--ntasks=} ;;
    --ntasks-per-node=*) per_node=${1#--ntasks-per-node=} ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
IFS=, read -r -a counts <<< "$MLSCHED_RANKS_PER_NODE"
procid=0 pids=()
for ((node = 0; node < ${#counts[@]}; node++)); do
  here=${per_node:-${counts[$node]}}
  for ((local = 0; local < here; local++)); do
    SLURM_PROCID=$procid SLURM_LOCALID=$local SLURM_NODEID=$node SLURM_NTASKS=$n \
      SLURMD_NODENAME=node$node "$@" &
    pids+=("$!")
    procid=$((procid + 1))
  done
done
[ "$procid" -eq "$n" ] || { echo "srun: $n tasks asked, $procid laid out" >&2; exit 9; }
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit "$status"
"""

#: torchrun: writes its options and the command it would start to torchrun-NODE.json.
FAKE_TORCHRUN = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
command = args[args.index("--no-python") + 1:]
options = args[:args.index("--no-python")]
path = os.path.join(os.environ["PROBE_DIR"], "torchrun-" + os.environ["SLURM_NODEID"] + ".json")
gpus_per_task = os.environ.get("SLURM_GPUS_PER_TASK")
open(path, "x").write(json.dumps({"options": options, "command": command,
                                  "gpus_per_task": gpus_per_task}))
"""

FAKE_SCONTROL = """#!/bin/bash
printf '%s\\n' node1 node3
"""

#: The program: writes the env PyTorch reads and its arguments to rank-RANK.json.
PROBE = (
    "import json, os, sys; e = os.environ; "
    "open(os.path.join(e['PROBE_DIR'], 'rank-' + e['RANK'] + '.json'), 'x').write(json.dumps("
    "{'env': {k: e.get(k) for k in ('MASTER_ADDR', 'MASTER_PORT', 'WORLD_SIZE', 'RANK', "
    "'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'MLSCHED_ARCH', 'MLSCHED_LAYOUT', "
    "'SLURM_GPUS_PER_TASK')}, "
    "'argv': sys.argv[1:]}))"
)


def run_script(
    text: str, tmp_path: Path, tasks_per_node: str, **slurm_env: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.sh"
    script.write_text(text, encoding="utf-8")
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # python3 without site-packages: the script prefers `python3 -m torch.distributed.run`
    # where python3 has torch (as the venv's does after `make examples-deps`), and that real
    # torchrun would wait on the test's unreachable rendezvous; these tests check the fake's
    python3 = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -S "$@"\n'
    for name, body in (("srun", FAKE_SRUN), ("torchrun", FAKE_TORCHRUN),
                       ("scontrol", FAKE_SCONTROL), ("python3", python3)):  # fmt: skip
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(stat.S_IRWXU)
    (tmp_path / "out").mkdir()
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PROBE_DIR": str(tmp_path / "out"),
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_JOB_NODELIST": "node[1,3]",
        "SLURM_TASKS_PER_NODE": tasks_per_node,
        **slurm_env,
    }
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done


def outputs(tmp_path: Path, prefix: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "out").glob(prefix + "*.json"))]


def test_srun_gives_every_rank_the_env_pytorch_reads(tmp_path: Path) -> None:
    command = (sys.executable, "-c", PROBE, *HOSTILE)
    text = render_sbatch(
        UNEQUAL, ddp_job(launcher=Launcher.SRUN), ADDRESSES, spec(command=command)
    ).text
    done = run_script(text, tmp_path, "3,1")
    ranks = outputs(tmp_path, "rank-")
    assert not (tmp_path / "MARKER").exists()
    assert [r["env"]["RANK"] for r in ranks] == ["0", "1", "2", "3"]
    assert [(r["env"]["LOCAL_RANK"], r["env"]["LOCAL_WORLD_SIZE"]) for r in ranks] == [
        ("0", "3"), ("1", "3"), ("2", "3"), ("0", "1"),
    ]  # fmt: skip
    for r in ranks:
        assert r["argv"] == HOSTILE
        assert (r["env"]["MASTER_ADDR"], r["env"]["MASTER_PORT"]) == ("10.0.0.1", "29600")
        assert (r["env"]["WORLD_SIZE"], r["env"]["MLSCHED_ARCH"]) == ("4", "allreduce")
    assert "laid the ranks out" not in done.stderr  # Slurm's layout is the decision's


def test_srun_follows_slurms_layout_and_says_it_differs(tmp_path: Path) -> None:
    command = (sys.executable, "-c", PROBE)
    text = render_sbatch(
        UNEQUAL, ddp_job(launcher=Launcher.SRUN), ADDRESSES, spec(command=command)
    ).text
    done = run_script(text, tmp_path, "2(x2)")
    ranks = outputs(tmp_path, "rank-")
    assert [(r["env"]["LOCAL_RANK"], r["env"]["LOCAL_WORLD_SIZE"]) for r in ranks] == [
        ("0", "2"), ("1", "2"), ("0", "2"), ("1", "2"),
    ]  # fmt: skip
    assert (
        "mlsub: Slurm laid the ranks out as node1:2,node3:2, the decision as node1:3,node3:1"
        in done.stderr
    )


def test_torchrun_runs_once_per_node_with_that_nodes_ranks(tmp_path: Path) -> None:
    command = ("python3", "ddp_train.py", *HOSTILE)
    text = render_sbatch(UNEQUAL, ddp_job(), ADDRESSES, spec(command=command)).text
    run_script(text, tmp_path, "3,1")
    nodes = outputs(tmp_path, "torchrun-")
    assert not (tmp_path / "MARKER").exists()
    assert [n["options"] for n in nodes] == [
        ["--nnodes=2", f"--nproc-per-node={count}", "--rdzv-backend=c10d",
         "--rdzv-endpoint=10.0.0.1:29600", "--rdzv-id=4242"]
        for count in (3, 1)
    ]  # fmt: skip
    assert all(n["command"] == list(command) for n in nodes)
