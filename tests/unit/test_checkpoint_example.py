"""examples/checkpoint_train.py, run as a real process with real signals: SIGUSR1 makes it
write a checkpoint and train on, SIGTERM makes it write one and stop, and a new run resumes
from the step the checkpoint holds and finishes (docs/formulation.md §16, "Live"). On the
real cluster through mlsub's queue: tests/integration/test_preempt_live.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from slurm_mlsched.files.checkpoint_signal import CheckpointSignal, checkpoint_signal

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "checkpoint_train.py"


def start(tmp_path: Path, steps: int) -> subprocess.Popen[str]:
    env = {**os.environ, "MLSCHED_ROLE": "worker", "MLSCHED_RANK": "0", "MLSCHED_DECISION_ID": "7"}
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--steps", str(steps), "--step-time", "0.02"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_it_checkpoints_on_usr1_stops_on_term_and_resumes(tmp_path: Path) -> None:
    ckpt = tmp_path / "checkpoint-7-rank0.npz"
    proc = start(tmp_path, steps=100_000)  # runs until stopped
    time.sleep(1.0)  # numpy imported, the handlers installed, some steps done
    proc.send_signal(signal.SIGUSR1)
    wait_for(ckpt)
    assert proc.poll() is None  # it trains on after a checkpoint
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 143, out
    lines = out.splitlines()
    marks = [int(ln.split()[3].split("/")[0]) for ln in lines if ln.startswith("checkpointed")]
    assert len(marks) == 2 and 0 < marks[0] < marks[1], out  # USR1's, then TERM's
    assert "stopping (SIGTERM) after the checkpoint" in out

    again = start(tmp_path, steps=marks[1] + 20)  # the rest of a shorter run
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 0, out
    assert f"resumed from checkpoint {ckpt.name} at step {marks[1]}/{marks[1] + 20}" in out
    assert f"done: {marks[1] + 20} steps, accuracy=" in out
    assert not ckpt.exists()  # a finished run needs no checkpoint


def test_its_header_consents_to_preemption_with_usr1() -> None:
    assert checkpoint_signal(EXAMPLE.read_text()) == CheckpointSignal("USR1", 10, False)


def test_its_ps_task_exits_at_once(tmp_path: Path) -> None:
    env = {**os.environ, "MLSCHED_ROLE": "ps", "MLSCHED_RANK": "0"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "nothing to serve" in done.stdout
