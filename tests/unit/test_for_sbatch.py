"""``mlsub plan --for-sbatch``: the KEY=VALUE lines the cli_filter plugin reads, and the
decision recorded for the user's own sbatch (fakes for Slurm, a real SQLite store)."""

from __future__ import annotations

import re
from pathlib import Path

from slurm_mlsched.sbatch.tag import find_tags
from slurm_mlsched.services.for_sbatch import plan_for_sbatch
from slurm_mlsched.services.live_queue import tag_of
from slurm_mlsched.services.reconcile import plan_updates
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.slurm.jobs import JobStatus
from slurm_mlsched.storage import DecisionState, SqlDecisionStore
from tests.unit.test_submit_service import (
    JOB,
    NOW,
    FakeSource,
    FakeSubmitter,
    opts,
    store,  # noqa: F401  (fixture)
    wiring,
)

#: What plugins/cli_filter.lua accepts (docs/admin-plugins.md).
VALUE = {
    "nodelist": r"[A-Za-z0-9._,\[\]-]+",
    "nodes": r"\d+",
    "ntasks": r"\d+",
    "begin": r"[A-Za-z0-9:+-]+",
    "comment": r"mlsched:decision=\d+:[0-9a-f]{12}",
    "message": r"[^\n]*",
}


def keyed(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        key, sep, value = line.partition("=")
        assert sep and key in VALUE and re.fullmatch(VALUE[key], value), line
        out[key] = value
    return out


def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.sh"
    path.write_text("#!/bin/bash\n# mlsub: --workers 2\nsrun python3 train.py\n")
    return path


def test_lines_follow_the_plugin_contract_and_the_decision_is_recorded(
    store: SqlDecisionStore,  # noqa: F811
    tmp_path: Path,
) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter())
    placed = plan_for_sbatch(w, opts(workers=2), script(tmp_path))
    values = keyed(placed.lines())
    assert set(values) >= {"nodelist", "nodes", "ntasks", "comment", "message"}
    assert values["ntasks"] == str(sum(r.count for r in placed.plan.decision.placement))
    assert values["nodelist"].split(",") == list(placed.nodes)
    assert "begin" not in values  # room now: no later start
    rec = store.get(placed.record.decision_id)
    assert rec.state == DecisionState.SUBMITTING and rec.script == script(tmp_path).read_text()
    (tag,) = find_tags(values["comment"])
    assert tag == tag_of("lab", rec.summary)
    # the user's sbatch ran: reconcile finds the job by the tag
    found = JobStatus("55", "RUNNING", NOW, NOW, None, ("node1",), f"x {tag}", "", "", "squeue")
    (u,) = plan_updates(list(store.history()), {tag.decision_id: str(tag)}, {"55": found}, now=NOW)
    assert [s.state for s in u.steps] == [DecisionState.SUBMITTED, DecisionState.RUNNING]


def test_a_full_cluster_gives_a_relative_begin(
    store: SqlDecisionStore,  # noqa: F811
    tmp_path: Path,
) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter())
    for _ in range(4):  # four jobs of 4 one-GPU workers fill the four nodes' GPUs
        submit_job(w, opts(), JOB)
    placed = plan_for_sbatch(w, opts(workers=2), script(tmp_path))
    values = keyed(placed.lines())
    assert re.fullmatch(r"now\+\d+", values["begin"])
    assert int(values["begin"][4:]) > 0
