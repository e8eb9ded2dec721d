"""Node inventories: a cluster's nodes as a trace publishes them (GPU type, GPUs, CPUs).

The Alibaba 2026 spot-GPU release (``cluster-trace-v2026-spot-gpu/node_info_df.csv``,
``../shared/traces/README.md`` §5) lists one node per row::

    gpu_model,gpu_capacity_num,cpu_num,node_name
    A10,1,128,2

:func:`parse_node_inventory` reads such text (pure; other column names through
``columns``); :func:`slurm_mlsched.sim.cluster.cluster_from_inventory` turns the nodes into
a replay cluster of typed nodes, optionally scaled down.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

from ..errors import InputError
from ..model.cluster import InventoryNode
from ..model.eligibility import GPU_TYPE_NAME

#: field -> column of the Alibaba 2026 spot-GPU node file.
ALIBABA_NODE_COLUMNS: Mapping[str, str] = {
    "gpu_type": "gpu_model",
    "gpus": "gpu_capacity_num",
    "cpus": "cpu_num",
    "name": "node_name",
}


def parse_node_inventory(
    text: str, source: str, columns: Mapping[str, str] = ALIBABA_NODE_COLUMNS
) -> tuple[InventoryNode, ...]:
    """The nodes of an inventory CSV (pure). Every bad row is an :class:`InputError`
    naming the file, the line, the column and the value."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in columns.values() if c not in (reader.fieldnames or ())]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {missing} (the file has {reader.fieldnames})",
            hint="give the inventory's column names for gpu_type, gpus, cpus and name",
            context={"file": source, "columns": missing},
        )
    out = []
    for line, row in enumerate(reader, start=2):
        out.append(_node(row, columns, source, line))
    if not out:
        raise InputError(f"{source}: the inventory lists no node", context={"file": source})
    return tuple(out)


def _node(
    row: Mapping[str, str], columns: Mapping[str, str], source: str, line: int
) -> InventoryNode:
    def bad(field: str, problem: str) -> InputError:
        column = columns[field]
        return InputError(
            f"{source} line {line}: column {column!r} {problem}, got {row[column]!r}",
            hint="fix or drop that row",
            context={"file": source, "line": line, "column": column, "value": row[column]},
        )

    counts = {}
    for field in ("gpus", "cpus"):
        text = (row[columns[field]] or "").strip()
        if not text.isdigit():
            raise bad(field, "must be a whole number >= 0")
        counts[field] = int(text)
    kind = (row[columns["gpu_type"]] or "").strip() or None
    if kind is not None and not GPU_TYPE_NAME.fullmatch(kind):
        raise bad("gpu_type", "is not a GPU type name (letters, digits, '_', '.', '-')")
    name = (row[columns["name"]] or "").strip() or str(line - 1)
    return InventoryNode(name, kind if counts["gpus"] else None, counts["gpus"], counts["cpus"])


def load_node_inventory(
    path: str | Path, columns: Mapping[str, str] = ALIBABA_NODE_COLUMNS
) -> tuple[InventoryNode, ...]:
    """Read and parse the inventory CSV at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(
            f"cannot read the node inventory {path}: {exc.strerror or exc}",
            context={"file": str(path)},
        ) from None
    return parse_node_inventory(text, str(path), columns)
