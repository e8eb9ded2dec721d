"""Replay clusters of identical nodes: ``--nodes 64x8`` (pure); typed clusters from a node
inventory (:func:`cluster_from_inventory`).

A node with G GPUs gets ``CPUS_PER_GPU`` × G CPUs and ``MEM_GIB_PER_GPU`` × G GiB of memory
(at least one GPU's worth: a 0-GPU node has 8 CPUs and 64 GiB), the shape of an 8-GPU
training server (64 CPUs, 512 GiB). With the replay's default tasks (a worker: 1 GPU,
4 CPUs, 16 GiB; a PS: 2 CPUs, 8 GiB) GPUs are the scarce resource, as on a GPU cluster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from ..model import ClusterSnapshot, Machine, Resources
from ..model.cluster import InventoryNode
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


def cluster_from_inventory(
    nodes: Sequence[InventoryNode],
    scale: float = 1.0,
    slot_seconds: float = DEFAULT_SLOT_SECONDS,
    mem_gib_per_gpu: float = MEM_GIB_PER_GPU,
) -> ClusterSnapshot:
    """A replay cluster of typed nodes from a node inventory (pure).

    Each node keeps its GPU type, GPUs and CPUs; memory is ``mem_gib_per_gpu`` per GPU (at
    least one GPU's worth; inventories such as Alibaba's give none). ``scale`` (0 < scale ≤ 1)
    keeps that share of the nodes while keeping the mix: the nodes are grouped by shape
    (type, GPUs, CPUs), each shape keeps ⌊count × scale⌋ nodes, and the nodes left to reach
    round(total × scale) (at least one) go to the shapes with the largest remainders (ties:
    the larger shape, then the earlier in the file). Deterministic: no draw. Nodes are
    named ``<type>-<k>`` (``gpu-<k>`` untyped) in shape order.
    """
    if not 0 < scale <= 1:
        raise ValueError(f"scale must be in (0, 1], got {scale!r}")
    shapes: dict[tuple[str | None, int, int], int] = {}
    for n in nodes:
        key = (n.gpu_type, n.gpus, n.cpus)
        shapes[key] = shapes.get(key, 0) + 1
    target = max(1, round(len(nodes) * scale))
    keep = {k: int(c * scale) for k, c in shapes.items()}
    order = sorted(
        range(len(shapes)),
        key=lambda i: (-(list(shapes.values())[i] * scale % 1), -list(shapes)[i][1], i),
    )
    for i in order[: max(0, target - sum(keep.values()))]:
        keep[list(shapes)[i]] += 1
    machines: list[Machine] = []
    seen: dict[str, int] = {}
    for (kind, gpus, cpus), count in keep.items():
        mem = gib_to_mib(mem_gib_per_gpu * max(gpus, 1))
        for _ in range(count):
            prefix = (kind or "gpu").lower()
            seen[prefix] = seen.get(prefix, 0) + 1
            cap = Resources(float(gpus), float(cpus), mem)
            machines.append(Machine(f"{prefix}-{seen[prefix]}", cap, kind))
    return ClusterSnapshot(tuple(machines), slot_seconds=slot_seconds)
