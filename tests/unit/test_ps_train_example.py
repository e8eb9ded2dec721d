"""The example trainer really trains over TCP (2 PSs + 3 workers on localhost)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ps_train.py"


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_ps_training_reaches_the_stated_accuracy() -> None:
    ports = free_ports(5)
    ps_hosts = ",".join(f"127.0.0.1:{p}" for p in ports[:2])
    worker_hosts = ",".join(f"127.0.0.1:{p}" for p in ports[2:])
    procs = []
    for role, count in (("ps", 2), ("worker", 3)):
        for rank in range(count):
            env = dict(
                os.environ,
                MLSCHED_ROLE=role,
                MLSCHED_RANK=str(rank),
                MLSCHED_PS_HOSTS=ps_hosts,
                MLSCHED_WORKER_HOSTS=worker_hosts,
                PS_TRAIN_EPOCHS="2",
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(EXAMPLE)],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    acc_lines = [
        line for out in outputs for line in out.splitlines() if line.startswith("accuracy=")
    ]
    assert len(acc_lines) == 1
    assert float(acc_lines[0].split("=")[1]) >= 0.9
    assert "ps 1 done: 3 worker(s) finished" in outputs[1]


def test_refuses_to_run_outside_mlsub() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLSCHED_")}
    res = subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True)
    assert res.returncode == 2 and "mlsub" in res.stderr
