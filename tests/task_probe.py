"""A stand-in training task for rendered sbatch scripts: ``python3 -c PROBE DIR ARGS...``
writes what the task sees to ``DIR/<role>-<rank>.json``: the node, the mlsub environment,
its GPUs and its arguments. One file per task: steps run concurrently, and their lines
could interleave on a shared stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROBE = (
    "import json, os, sys; e = os.environ; "
    "path = os.path.join(sys.argv[1], e['MLSCHED_ROLE'] + '-' + e['MLSCHED_RANK'] + '.json'); "
    "open(path, 'x').write(json.dumps({'node': e.get('SLURMD_NODENAME'), "
    "'env': {k: v for k, v in e.items() "
    "if k.startswith(('MLSCHED_', 'DMLC_', 'TF_CONFIG', 'CUDA_VISIBLE_DEVICES'))}, "
    "'argv': sys.argv[2:]}))"
)


def probe_results(directory: Path) -> list[dict[str, Any]]:
    """What each task wrote, in file name order (``ps-0``, ``ps-1``, ``worker-0`` …)."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
