"""examples/ddp_train.py really trains with PyTorch DDP over gloo (issue 31): under torchrun
on this machine, and through mlsub's rendered script with each launcher (a stand-in srun
starts the tasks; the real torchrun and the real program run). Skipped without torch."""

from __future__ import annotations

import importlib.util
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_mlsched.files.job_options import merge_options, read_script_header, to_request
from slurm_mlsched.model import Architecture, Launcher, Mode, SlotPlan
from slurm_mlsched.model.decision import Decision, Form
from slurm_mlsched.sbatch import ScriptSpec, render_sbatch
from tests.sbatch.test_allreduce_script import FAKE_SRUN

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ddp_train.py"
TORCHRUN = Path(sys.executable).with_name("torchrun")
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (pip install torch==2.13.0, the CPU wheel)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_training(output: str, world: int) -> None:
    for rank in range(world):
        assert f"rank {rank}/{world} epoch 2/2: loss" in output, output
    (accuracy,) = [line for line in output.splitlines() if line.startswith("accuracy=")]
    assert float(accuracy.split("=")[1]) >= 0.88, output
    assert f"ranks in sync: {world}" in output


def without_dist_env() -> dict[str, str]:
    names = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    return {k: v for k, v in os.environ.items() if k not in names} | {"DDP_TRAIN_EPOCHS": "2"}


@needs_torch
def test_two_processes_under_torchrun_reach_the_accuracy() -> None:
    done = subprocess.run(
        [str(TORCHRUN), "--standalone", "--nnodes", "1", "--nproc-per-node", "2", str(EXAMPLE)],
        env=without_dist_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    check_training(done.stdout, 2)


def rendered(launcher: Launcher, tmp_path: Path) -> Path:
    """mlsub's script for two ranks on one node (address 127.0.0.1), the example as its
    program, and the stand-in srun first on PATH."""
    opts = merge_options(read_script_header(EXAMPLE), {"workers": 2, "launcher": launcher})
    request = to_request(opts, 0)
    plan = SlotPlan(0, Mode.COLOCATED, workers=(("node1", 2),), ps=(), length=1)
    decision = Decision(
        job_id="ddp", policy="hand", form=Form.NON_ELASTIC, seed=0, slots=(plan,),
        start_slot=0, end_slot=0, work_covered=1.0,
    )  # fmt: skip
    spec = ScriptSpec(
        command=(sys.executable, str(EXAMPLE)), job_name="ddp", base_port=free_port(),
    )  # fmt: skip
    script = tmp_path / "job.sh"
    script.write_text(render_sbatch(decision, request, {"node1": "127.0.0.1"}, spec).text)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text(FAKE_SRUN)
    (tmp_path / "bin" / "srun").chmod(stat.S_IRWXU)
    return script


def run_rendered(script: Path) -> str:
    path = f"{script.parent / 'bin'}{os.pathsep}{TORCHRUN.parent}{os.pathsep}{os.environ['PATH']}"
    env = without_dist_env() | {
        "PATH": path,
        "SLURM_JOB_ID": "77",
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_JOB_NODELIST": "node1",
        "SLURM_TASKS_PER_NODE": "2",
    }
    done = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@needs_torch
@pytest.mark.parametrize("launcher", list(Launcher))
def test_the_rendered_script_trains_with_each_launcher(launcher: Launcher, tmp_path: Path) -> None:
    check_training(run_rendered(rendered(launcher, tmp_path)), 2)


def test_its_header_is_an_allreduce_job() -> None:
    opts = merge_options(read_script_header(EXAMPLE), {})
    assert opts.arch is Architecture.ALLREDUCE and opts.launch_with is Launcher.TORCHRUN
    request = to_request(opts, 0)
    assert request.is_allreduce and request.ps_count == 0 and request.max_workers == 4


@needs_torch
def test_refuses_to_run_outside_a_launcher() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], env=without_dist_env(), capture_output=True, text=True
    )
    assert done.returncode == 2 and "torchrun" in done.stderr and "mlsub" in done.stderr
