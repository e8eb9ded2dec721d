"""Replay clusters of identical nodes: ``--nodes 64x8`` (pure).

A node with G GPUs gets ``CPUS_PER_GPU`` × G CPUs and ``MEM_GIB_PER_GPU`` × G GiB of memory
(at least one GPU's worth: a 0-GPU node has 8 CPUs and 64 GiB), the shape of an 8-GPU
training server (64 CPUs, 512 GiB). With the replay's default tasks (a worker: 1 GPU,
4 CPUs, 16 GiB; a PS: 2 CPUs, 8 GiB) GPUs are the scarce resource, as on a GPU cluster.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ..model import ClusterSnapshot, Machine, Resources
from ..model.units import gib_to_mib

CPUS_PER_GPU = 8
MEM_GIB_PER_GPU = 64
DEFAULT_SLOT_SECONDS = 600.0

_SPEC = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")


def parse_nodes_spec(text: str) -> tuple[int, int]:
    """``"64x8"`` -> (64, 8): nodes × GPUs per node. Raises ValueError."""
    match = _SPEC.match(text)
    if not match:
        raise ValueError(f"not a node spec: {text!r} (expected NODESxGPUS, e.g. 64x8)")
    nodes, gpus = int(match.group(1)), int(match.group(2))
    if nodes < 1:
        raise ValueError(f"a cluster needs at least one node, got {text!r}")
    return nodes, gpus


def node_grid(
    nodes: int,
    gpus: int,
    slot_seconds: float = DEFAULT_SLOT_SECONDS,
    epoch: datetime | None = None,
) -> ClusterSnapshot:
    """``nodes`` identical nodes ``node001``… with ``gpus`` GPUs each (module docstring)."""
    per = max(gpus, 1)
    cap = Resources(float(gpus), float(CPUS_PER_GPU * per), gib_to_mib(MEM_GIB_PER_GPU * per))
    width = max(3, len(str(nodes)))
    machines = tuple(Machine(f"node{i + 1:0{width}d}", cap) for i in range(nodes))
    return ClusterSnapshot(
        machines,
        slot_seconds=slot_seconds,
        epoch=epoch or datetime(1970, 1, 1, tzinfo=UTC),
    )
