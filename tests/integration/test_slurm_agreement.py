"""A replay of a real sacct log of jobs run on the local cluster: ``fifo-ff``'s start order
is compared with the order Slurm started them (bench/slurm_agreement.py, smaller burst).
The full run's figures are in docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.slurm_agreement import LAB_CLUSTER, burst, compare, submit_burst, wait_accounted
from tests.integration.conftest import LabCluster

pytestmark = pytest.mark.integration

#: fifo-ff is what Slurm's FIFO scheduler does; with these jobs the orders should nearly
#: coincide (the full run measured 0.98). Below this something is wrong in the reader,
#: the synthesis of run times, or the replay.
MIN_PAIRWISE = 0.8


def test_fifo_ff_start_order_agrees_with_slurm(cluster: LabCluster, tmp_path: Path) -> None:
    jobs = burst(12, seed=7)
    ids = submit_burst(jobs, "agree-it")
    cluster.jobs.extend(int(i) for i in ids)
    log = tmp_path / "sacct.txt"
    log.write_text(wait_accounted(ids, timeout_s=300))
    lab = tmp_path / "lab.yaml"
    lab.write_text(LAB_CLUSTER)
    result = compare(log, lab)
    assert (result["jobs"], result["unplaceable"]) == (12, 0)
    fifo = result["policies"]["fifo-ff"]
    assert fifo["jobs"] == 12  # every job compared: ids and start times read back
    assert fifo["pairwise_agreement"] >= MIN_PAIRWISE, result
    assert fifo["mean_abs_start_diff_s"] < 5.0, result
