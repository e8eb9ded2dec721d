#!/usr/bin/env python3
# mlsub: --workers 1 --ps auto --gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 1G
# mlsub: --cpus-per-ps 1 --mem-per-ps 512M --step-time 0.1 --model-size 1 --epochs 1
# mlsub: --batches-per-epoch 600 --name checkpoint-train
# fmt: off
#SBATCH --signal=USR1@10
# fmt: on
"""A training program that checkpoints on a signal and resumes (checkpoint-restart).

The ``#SBATCH --signal=USR1@10`` line above is the job's consent to checkpoint-restart
preemption on mlsub's live queue (docs/formulation.md §16, "Live"; docs/admin-guide.md,
"Preemption"): a re-plan that pauses it sends SIGUSR1 (Slurm itself sends it 10 s before
the time limit too), waits those 10 s, and requeues the job held; a later re-plan starts
it again, and it resumes from its checkpoint. (``# fmt: off`` keeps the code formatter
from turning ``#SBATCH`` into ``# SBATCH``, which sbatch would not read.)

The worker trains logistic regression with numpy SGD, one mini-batch every
``--step-time`` seconds (the pace mlsub's time model predicts), for ``--steps``
mini-batches:

* on SIGUSR1 it writes a checkpoint (the step reached and the weights; atomically: a
  temporary file renamed over the old one) at the end of the current step and trains on;
* on SIGTERM (Slurm stops the job to requeue or cancel it) it writes one and exits;
* when it starts and a checkpoint exists it resumes from it;
* when it is done it prints its accuracy and removes the checkpoint.

The checkpoint is ``checkpoint-<decision id>-rank<rank>.npz`` in the working directory
(``--checkpoint PATH`` names another): the decision id is the job's across its restarts,
also when a re-plan submits it again on another layout (a new Slurm job id). The PS task
of this example has nothing to serve (the worker trains alone) and exits at once.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

import numpy as np

FEATURES = 20
SAMPLES = 4000
DATA_SEED = 20261203


class Flags:
    """What the signal handlers asked for (set in the handler, acted on between steps)."""

    checkpoint = False
    stop = False


def on_usr1(signum: int, frame: FrameType | None) -> None:
    Flags.checkpoint = True


def on_term(signum: int, frame: FrameType | None) -> None:
    Flags.checkpoint = Flags.stop = True


def make_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(DATA_SEED)
    w_true = rng.normal(size=FEATURES + 1)
    x = np.hstack([rng.normal(size=(SAMPLES, FEATURES)), np.ones((SAMPLES, 1))])
    y = (x @ w_true + 0.3 * rng.normal(size=SAMPLES) > 0).astype(np.float64)
    return x, y


def save(path: Path, step: int, weights: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, step=np.array(step), weights=weights)
    os.replace(tmp, path)  # a reader sees the old checkpoint or the new one, never half


def load(path: Path) -> tuple[int, np.ndarray] | None:
    try:
        with np.load(path) as data:
            return int(data["step"]), np.array(data["weights"])
    except (OSError, KeyError, ValueError):
        return None


def train(steps: int, step_time: float, path: Path, batch: int = 64) -> float:
    x, y = make_data()
    weights = np.zeros(FEATURES + 1)
    step = 0
    resumed = load(path)
    if resumed is not None:
        step, weights = resumed
        print(f"resumed from checkpoint {path.name} at step {step}/{steps}", flush=True)
    else:
        print(f"starting at step 0/{steps}", flush=True)
    rng = np.random.default_rng(DATA_SEED + step)
    while step < steps:
        began = time.monotonic()
        idx = rng.integers(0, SAMPLES, size=batch)
        p = 1.0 / (1.0 + np.exp(-(x[idx] @ weights)))
        weights -= 0.5 * x[idx].T @ (p - y[idx]) / batch
        step += 1
        if Flags.checkpoint:
            Flags.checkpoint = False
            save(path, step, weights)
            print(f"checkpointed at step {step}/{steps}", flush=True)
            if Flags.stop:
                print("stopping (SIGTERM) after the checkpoint", flush=True)
                sys.exit(143)
        time.sleep(max(0.0, step_time - (time.monotonic() - began)))
    accuracy = float(np.mean(((x @ weights) > 0) == (y > 0.5)))
    path.unlink(missing_ok=True)
    print(f"done: {steps} steps, accuracy={accuracy:.4f}", flush=True)
    return accuracy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="mini-batches in all")
    parser.add_argument("--step-time", type=float, default=0.1, help="seconds per step")
    parser.add_argument("--checkpoint", type=Path, default=None, help="checkpoint file")
    args = parser.parse_args(argv)
    role = os.environ.get("MLSCHED_ROLE", "worker")
    rank = int(os.environ.get("MLSCHED_RANK", "0"))
    signal.signal(signal.SIGUSR1, on_usr1)  # every task: the default action would kill it
    signal.signal(signal.SIGTERM, on_term)
    if role == "ps":
        print(f"ps {rank}: nothing to serve (the worker trains alone)", flush=True)
        return 0
    decision = os.environ.get("MLSCHED_DECISION_ID", "local")
    path = args.checkpoint or Path.cwd() / f"checkpoint-{decision}-rank{rank}.npz"
    node = os.environ.get("SLURMD_NODENAME", "here")
    job = os.environ.get("SLURM_JOB_ID", "-")
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
    print(f"worker {rank} on {node}, Slurm job {job} (restart {restarts})", flush=True)
    train(args.steps, args.step_time, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
