#!/usr/bin/env python3
# mlsub: --workers 4 --ps auto --gpus-per-worker 0 --cpus-per-worker 1 --mem-per-worker 1G
# mlsub: --cpus-per-ps 1 --mem-per-ps 1G --step-time 0.05 --model-size 1 --epochs 3
# mlsub: --batches-per-epoch 100 --name ps-train
"""A parameter-server training program: logistic regression over real TCP, numpy only.

Each task learns its part from the environment that mlsub's sbatch script sets:

* ``MLSCHED_ROLE``: ``ps`` or ``worker``; ``MLSCHED_RANK``: its index within the role;
* ``MLSCHED_PS_HOSTS`` / ``MLSCHED_WORKER_HOSTS``: comma-separated ``host:port`` lists.

PS k owns shard k of the weight vector (contiguous slices) and applies the gradients
workers push (asynchronous SGD, as in MODEL.md §2). Worker r trains on its shard of a
dataset generated from a fixed seed; after training, worker 0 pulls the final model and
prints its accuracy on held-out data. PSs exit when every worker said it is done.

Wire format: 1 byte op, 4 byte big-endian length, payload (float64 array bytes).
"""

from __future__ import annotations

import itertools
import os
import socket
import socketserver
import struct
import sys
import threading
import time

import numpy as np

FEATURES = 20
SAMPLES = 20000
TEST_SAMPLES = 4000
DATA_SEED = 20261129
OP_PULL, OP_PUSH, OP_DONE, OP_OK = b"P", b"G", b"D", b"K"


def env_list(name: str) -> list[tuple[str, int]]:
    raw = os.environ.get(name, "")
    out = []
    for item in filter(None, raw.split(",")):
        host, _, port = item.rpartition(":")
        out.append((host, int(port)))
    return out


def make_data(seed: int = DATA_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=FEATURES)
    x = rng.normal(size=(SAMPLES + TEST_SAMPLES, FEATURES))
    y = (x @ w_true + 0.3 * rng.normal(size=len(x)) > 0).astype(np.float64)
    return x[:SAMPLES], y[:SAMPLES], x[SAMPLES:], y[SAMPLES:]


def shard_bounds(n_ps: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, FEATURES + 1, n_ps + 1).astype(int)  # +1: the bias term
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]


def send(sock: socket.socket, op: bytes, payload: bytes = b"") -> None:
    sock.sendall(op + struct.pack(">I", len(payload)) + payload)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return bytes(buf)


def recv(sock: socket.socket) -> tuple[bytes, bytes]:
    head = recv_exact(sock, 5)
    (length,) = struct.unpack(">I", head[1:])
    return head[:1], recv_exact(sock, length)


def run_ps(rank: int, ps_hosts: list[tuple[str, int]], n_workers: int, lr: float) -> None:
    lo, hi = shard_bounds(len(ps_hosts))[rank]
    weights = np.zeros(hi - lo)
    lock = threading.Lock()
    done = threading.Event()
    finished: set[int] = set()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            try:
                while True:
                    op, payload = recv(sock)
                    if op == OP_PULL:
                        with lock:
                            data = weights.tobytes()
                        send(sock, OP_OK, data)
                    elif op == OP_PUSH:
                        grad = np.frombuffer(payload, dtype=np.float64)
                        with lock:
                            weights[:] -= lr * grad
                        send(sock, OP_OK)
                    elif op == OP_DONE:
                        with lock:
                            finished.add(int(payload.decode()))
                            if len(finished) >= n_workers:
                                done.set()
                        send(sock, OP_OK)
                        return
            except ConnectionError:
                return

    class Server(socketserver.ThreadingTCPServer):
        allow_reuse_address = True
        daemon_threads = True

    host, port = ps_hosts[rank]
    with Server(("0.0.0.0", port), Handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(f"ps {rank} serving weights[{lo}:{hi}] on {host}:{port}", flush=True)
        done.wait()
        server.shutdown()
    print(f"ps {rank} done: {n_workers} worker(s) finished", flush=True)


def connect(addr: tuple[str, int], deadline: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(addr, timeout=30)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def pull(socks: list[socket.socket]) -> np.ndarray:
    parts = []
    for s in socks:
        send(s, OP_PULL)
        _, payload = recv(s)
        parts.append(np.frombuffer(payload, dtype=np.float64))
    return np.concatenate(parts)


def run_worker(
    rank: int, ps_hosts: list[tuple[str, int]], n_workers: int, epochs: int, batch: int
) -> None:
    x, y, x_test, y_test = make_data()
    xb = np.hstack([x, np.ones((len(x), 1))])
    mine = np.arange(rank, len(x), n_workers)
    deadline = time.monotonic() + 120
    socks = [connect(addr, deadline) for addr in ps_hosts]
    bounds = shard_bounds(len(ps_hosts))
    rng = np.random.default_rng(DATA_SEED + rank)
    for epoch in range(epochs):
        order = rng.permutation(mine)
        loss = 0.0
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            w = pull(socks)
            p = 1.0 / (1.0 + np.exp(-(xb[idx] @ w)))
            grad = xb[idx].T @ (p - y[idx]) / len(idx)
            loss += float(
                -np.mean(y[idx] * np.log(p + 1e-12) + (1 - y[idx]) * np.log(1 - p + 1e-12))
            ) * len(idx)
            for s, (lo, hi) in zip(socks, bounds, strict=True):
                send(s, OP_PUSH, grad[lo:hi].tobytes())
                recv(s)
        print(f"worker {rank} epoch {epoch + 1}/{epochs} loss={loss / len(order):.4f}", flush=True)
    if rank == 0:
        w = pull(socks)
        xt = np.hstack([x_test, np.ones((len(x_test), 1))])
        acc = float(np.mean(((xt @ w) > 0) == (y_test > 0.5)))
        print(f"accuracy={acc:.4f}", flush=True)
    for s in socks:
        send(s, OP_DONE, str(rank).encode())
        recv(s)
        s.close()


def main() -> int:
    role = os.environ.get("MLSCHED_ROLE", "")
    rank = int(os.environ.get("MLSCHED_RANK", "0"))
    ps_hosts = env_list("MLSCHED_PS_HOSTS")
    workers = env_list("MLSCHED_WORKER_HOSTS")
    if role not in ("ps", "worker") or not ps_hosts or not workers:
        print(
            "ps_train.py: run me through mlsub (MLSCHED_ROLE, MLSCHED_PS_HOSTS and "
            "MLSCHED_WORKER_HOSTS must be set)",
            file=sys.stderr,
        )
        return 2
    epochs = int(os.environ.get("PS_TRAIN_EPOCHS", "3"))
    node = os.environ.get("SLURMD_NODENAME", socket.gethostname())
    print(f"role={role} rank={rank} node={node}", flush=True)
    if role == "ps":
        run_ps(rank, ps_hosts, len(workers), lr=float(os.environ.get("PS_TRAIN_LR", "0.5")))
    else:
        run_worker(rank, ps_hosts, len(workers), epochs, batch=64)
    return 0


if __name__ == "__main__":
    sys.exit(main())
