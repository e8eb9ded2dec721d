"""The example really trains when launched through ``mlsub``: parameter servers and workers
find each other from the variables the sbatch script sets, talk TCP, and the trained
logistic regression reaches the stated accuracy (≥ 0.9 on held-out data), co-located on
one node and distributed over two."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, LabCluster
from tests.integration.mlsub_cli import Mlsub

pytestmark = pytest.mark.integration

STATED_ACCURACY = 0.9


@pytest.mark.parametrize(
    ("shape", "mode", "nodes"),
    [
        ((), "colocated", 1),
        # a worker holds a whole node's GPUs: 2 workers and 2 PSs over 2 nodes
        (("--workers", "2", "--ps", "2", "--gpus-per-worker", "4", "--batches-per-epoch", "10000"),
         "distributed", 2),
    ],
)  # fmt: skip
def test_ps_train_reaches_the_stated_accuracy_through_mlsub(
    cluster: LabCluster, tmp_path: Path, shape: tuple[str, ...], mode: str, nodes: int
) -> None:
    mlsub = Mlsub(tmp_path)
    out = mlsub.json(
        str(ROOT / "examples" / "ps_train.py"), "--interpreter", sys.executable, "--wait", *shape
    )
    cluster.jobs.append(int(out["slurm_job_id"]))
    assert out["state"] == "completed", out
    assert out["mode"] == mode and len({p["node"] for p in out["placement"]}) == nodes
    (log,) = tmp_path.glob(f"mlsub-{out['decision_id']}-*.out")
    text = log.read_text()
    accuracy = float(re.findall(r"accuracy=([0-9.]+)", text)[-1])
    assert accuracy >= STATED_ACCURACY, text
    ps = sum(p["count"] for p in out["placement"] if p["role"] == "ps")
    assert text.count("done:") == ps  # every PS saw every worker finish
