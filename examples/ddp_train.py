#!/usr/bin/env python3
# mlsub: --arch allreduce --launcher torchrun --workers 4 --gpus-per-worker 0
# mlsub: --cpus-per-worker 1 --mem-per-worker 2G --step-time 0.02 --model-size 0.02
# mlsub: --epochs 4 --batches-per-epoch 160 --name ddp-train
"""A data-parallel training program: PyTorch DDP over ``gloo`` on CPU (issue 31).

Each process is one rank of a ring all-reduce. It learns its place from the environment
that PyTorch's ``env://`` initialization reads, which both of mlsub's launchers set:

* ``--launcher torchrun``: torchrun sets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
  ``MASTER_ADDR`` and ``MASTER_PORT`` for the processes it starts;
* ``--launcher srun``: mlsub's script sets ``MASTER_ADDR``/``MASTER_PORT`` (the first node)
  and each task's ``RANK`` (``SLURM_PROCID``), ``LOCAL_RANK`` (``SLURM_LOCALID``) and
  ``WORLD_SIZE``.

The data are generated from a fixed seed (no download): points in 20 dimensions labelled by
a fixed random two-layer network, so a small MLP can learn them but a linear model cannot
quite. Every rank trains on its shard (``DistributedSampler``); DDP averages the gradients
with an all-reduce at every step, so every rank holds the same weights, which the program
checks at the end. Rank 0 prints the accuracy on held-out data (``accuracy=0.9…``).

Locally: ``torchrun --nnodes 1 --nproc-per-node 2 examples/ddp_train.py [EPOCHS]``. The
number of epochs (default 4) is the first argument, else ``DDP_TRAIN_EPOCHS``. The header
declares the work to mlsub as it is: an epoch is 8,000 samples in mini-batches of 50, 160
mini-batches summed over the ranks (``--batches-per-epoch 160``); give ``--epochs E`` with
the argument ``E`` (``mlsub examples/ddp_train.py --epochs 40 -- 40``).
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

FEATURES = 20
HIDDEN = 64
SAMPLES = 8000
TEST_SAMPLES = 2000
DATA_SEED = 20261203
MODEL_SEED = 7
BATCH = 50  # per rank
LEARNING_RATE = 0.1
REQUIRED = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def make_data(seed: int = DATA_SEED) -> tuple[TensorDataset, TensorDataset]:
    """The same data on every rank: labels from a fixed random two-layer network."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES + TEST_SAMPLES, FEATURES, generator=gen)
    w1 = torch.randn(FEATURES, 8, generator=gen)
    w2 = torch.randn(8, generator=gen)
    y = (torch.tanh(x @ w1) @ w2 > 0).long()
    return (
        TensorDataset(x[:SAMPLES], y[:SAMPLES]),
        TensorDataset(x[SAMPLES:], y[SAMPLES:]),
    )


def make_model() -> nn.Module:
    torch.manual_seed(MODEL_SEED)  # the same start on every rank (DDP broadcasts rank 0's too)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 2))


def accuracy(model: nn.Module, data: TensorDataset) -> float:
    x, y = data.tensors
    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())


def in_sync(model: nn.Module, world: int) -> bool:
    """Whether every rank holds the same weights: their flat vectors all-gathered."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    return all(torch.equal(gathered[0], g) for g in gathered[1:])


def train(rank: int, world: int, epochs: int) -> float | None:
    train_set, test_set = make_data()
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, seed=DATA_SEED)
    loader = DataLoader(train_set, batch_size=BATCH, sampler=sampler)
    model = DistributedDataParallel(make_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        started, total, steps = time.perf_counter(), 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            total, steps = total + loss.item(), steps + 1
        print(
            f"rank {rank}/{world} epoch {epoch + 1}/{epochs}: loss {total / steps:.4f}, "
            f"{steps} steps, {time.perf_counter() - started:.2f} s",
            flush=True,
        )
    if not in_sync(model.module, world):
        raise RuntimeError(f"rank {rank}: the ranks' weights differ after training")
    return accuracy(model.module, test_set) if rank == 0 else None


def main() -> int:
    missing = [name for name in REQUIRED if name not in os.environ]
    if missing:
        print(
            f"ddp_train.py: {', '.join(missing)} not set: run me through mlsub "
            "(--arch allreduce) or torchrun (torchrun --nproc-per-node 2 ddp_train.py)",
            file=sys.stderr,
        )
        return 2
    torch.set_num_threads(1)
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("DDP_TRAIN_EPOCHS", "4"))
    dist.init_process_group("gloo", init_method="env://")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        local = os.environ.get("LOCAL_RANK", "?")
        print(f"rank {rank}/{world} (local {local}) on {os.uname().nodename}", flush=True)
        result = train(rank, world, epochs)
        if result is not None:
            print(f"ranks in sync: {world}", flush=True)
            print(f"accuracy={result:.4f}", flush=True)
        dist.barrier()  # no rank tears its connections down while rank 0 still evaluates
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without the interpreter's teardown: a gloo thread still joinable while C++
    # statics are destroyed aborts the process ("terminate called without an active
    # exception", SIGABRT) after training has ended; seen once in 6 runs on the lab cluster.
    os._exit(code)
