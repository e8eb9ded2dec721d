"""``mlsub report`` opened in a real headless Chromium (Debian's ``chromium``): a store
filled by real runs on the local cluster, and a synthetic store of 100,000 decisions.

What is checked in the page the browser built: a screenshot is taken; the timeline's
bars are there; the detail of a chosen decision (``#d=ID``) shows its placement and
Slurm job id; a filter applied through the page's own control (the page's self-test,
``#selftest=KEY:VALUE``, sets the ``<select>`` and fires its ``change`` event, as a
user's choice does) changes the bars drawn as the data says it should."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.integration.conftest import LabCluster
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub, probe_script
from tests.integration.test_queue_live import idle
from tests.report.chromium import body_data, dump_dom, ensure_chromium, screenshot
from tests.report.synthetic import synthetic_store

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def chromium() -> str:
    return ensure_chromium()


def test_report_of_real_runs_in_chromium(
    cluster: LabCluster, tmp_path: Path, chromium: str
) -> None:
    idle(cluster)  # the previous tests' jobs have ended: both jobs can start at once
    mlsub = Mlsub(tmp_path)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 10"
    )
    done = mlsub.json(str(script), "--interpreter", "python3", "--wait", "--", str(tasks), "0")
    later = tmp_path / "tasks-long"  # its own directory: the probe never overwrites a file
    later.mkdir()
    long = mlsub.json(str(script), "--interpreter", "python3", "--", str(later), "120")
    cluster.jobs.append(int(long["slurm_job_id"]))
    cluster.wait_running(int(long["slurm_job_id"]))
    cluster.slurm.run(["scancel", long["slurm_job_id"]])
    cluster.wait_finished(int(long["slurm_job_id"]))
    mlsub.json("reconcile")
    out = tmp_path / "report"
    out.mkdir()
    result = mlsub.json("report", "--out", str(out))
    page = Path(result["path"])
    assert result["decisions"] == 2

    shot = tmp_path / "shot.png"
    screenshot(chromium, page, shot)
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    dom = dump_dom(chromium, page, f"d={done['decision_id']}")
    bars = re.findall(r'<rect class="bar ([a-z -]+)"[^>]*data-id="(\d+)"', dom)
    assert {int(i) for _, i in bars} == {done["decision_id"], long["decision_id"]}
    detail = re.search(rf'<dl id="detail-{done["decision_id"]}">(.*?)</dl>', dom, re.S)
    assert detail is not None, dom[-2000:]
    text = detail.group(1)
    assert done["slurm_job_id"] in text and "completed" in text
    node = done["placement"][0]["node"]
    assert node in text  # its placement

    tested = body_data(dump_dom(chromium, page, "selftest=state:completed"))
    assert tested["selftest"] == "done"
    per_state = {s: sum(1 for c, _ in bars if s in c.split()) for s in ("completed", "cancelled")}
    assert int(tested["bars-before"]) == len(bars)
    assert int(tested["bars-after"]) == per_state["completed"] < len(bars)


def test_report_of_100000_decisions_in_chromium(tmp_path: Path, chromium: str) -> None:
    url = synthetic_store(tmp_path / "big.db", 100_000)
    mlsub = Mlsub(tmp_path, cluster_name="lab", extra_env={"MLSUB_DB_URL": url})
    out = tmp_path / "report"
    out.mkdir()
    started = time.monotonic()
    result = json.loads(mlsub.run("report", "--out", str(out), "--json", timeout=300).stdout)
    took = time.monotonic() - started
    assert result["decisions"] == 100_000, result
    page = Path(result["path"])
    data = json.loads(
        re.search(
            r'<script id="report-data" type="application/json">(.*?)</script>',
            page.read_text(),
            re.S,
        ).group(1)  # type: ignore[union-attr]
    )
    on_node7 = sum(1 for d in data["decisions"] if "node7" in d["n"])
    assert 0 < on_node7 < data["max_bars"]
    tested = body_data(dump_dom(chromium, page, "selftest=node:node7", budget_ms=20000))
    assert tested["selftest"] == "done"
    assert int(tested["bars-before"]) == data["max_bars"]  # capped: the newest drawn
    assert int(tested["bars-after"]) == on_node7
    print(f"100,000 decisions: mlsub report {took:.1f} s, page {page.stat().st_size >> 20} MiB")
