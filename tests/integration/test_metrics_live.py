"""``mlsub metrics`` against the real lab cluster (issue 29, item 2): four jobs fill the lab
and a fifth waits held; ``mlsub metrics`` reads the live cluster for the queue now (its
plan against the lower bound, the re-plan step time) and emits every series the Grafana
dashboard reads; when the first job ends, slurmctld's EpilogSlurmctld re-plans and
rewrites the textfile (``METRICS_OUT``) with no mlsub command from the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_mlsched.services.metrics_export import METRIC_NAMES
from tests.conftest import require_or_skip
from tests.integration.conftest import LabCluster, poll
from tests.integration.mlsub_cli import Mlsub, mlsub_executable
from tests.integration.test_queue_live import LAB_BASE, SCRIPT, idle, submit
from tests.unit.test_metrics_values import dashboard_metrics

pytestmark = pytest.mark.integration


@pytest.fixture
def epilog(cluster: LabCluster, tmp_path: Path) -> Iterator[tuple[Mlsub, Path]]:
    """An mlsub whose store slurmctld's epilog re-plans, then writes metrics for."""
    if "epilog-slurmctld" not in cluster.slurm.run(["scontrol", "show", "config"]):
        require_or_skip(
            "the lab cluster runs without mlsub's EpilogSlurmctld (started before it was "
            "added): restart it with make cluster-down cluster-up"
        )
    mlsub = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-metrics")
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    prom = textfile / "mlsub.prom"
    env_file = LAB_BASE / "mlsub-epilog.env"
    env_file.write_text(
        f"MLSUB={mlsub_executable()}\nMLSUB_DB_URL=sqlite:///{mlsub.db}\n"
        f"MLSUB_CLUSTER_NAME={mlsub.cluster_name}\nMLSUB_SLOT_SECONDS={mlsub.slot_seconds}\n"
        f"STATE_DIR={tmp_path / 'epilog-state'}\nLOG={tmp_path / 'epilog.log'}\n"
        f"METRICS_OUT={prom}\n"
    )
    try:
        yield mlsub, prom
    finally:
        env_file.unlink(missing_ok=True)


def series(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def test_metrics_read_the_live_queue_and_the_epilog_keeps_the_file_fresh(
    cluster: LabCluster, epilog: tuple[Mlsub, Path]
) -> None:
    mlsub, prom = epilog
    release = mlsub.workdir / "release-first-job"
    idle(cluster)
    script = mlsub.workdir / "job.sh"
    script.write_text(SCRIPT)
    running = []
    for k in range(4):  # four 300 s jobs fill the lab; the first ends when the test says
        out = submit(mlsub, script, f"fill{k}", 300, *((release,) if k == 0 else ()))
        cluster.jobs.append(int(out["slurm_job_id"]))
        assert out["state"] == "submitted", out
        running.append(out)
    waiting = []
    for k in range(2):  # two more wait held
        out = submit(mlsub, script, f"waits{k}", 300)
        cluster.jobs.append(int(out["slurm_job_id"]))
        assert out["state"] == "queued", out
        waiting.append(out)

    text = mlsub.run("metrics").stdout
    fams = {f.name for f in text_string_to_metric_families(text)}
    assert fams == set(METRIC_NAMES)  # the live cluster answered: the queue-now series too
    got = series(text)
    lab = (("cluster", "lab-metrics"),)
    assert got[("mlsub_live_cluster_up", lab)] == 1
    assert got[("mlsub_queue_length", lab)] == 2
    started = [got[("mlsub_decisions", (*lab, ("state", s)))] for s in ("submitted", "running")]
    assert sum(started) == 4  # running once a reconcile (a re-plan's) saw them start
    # the queued jobs wait for nodes: no plan beats the bound, which counts the room the
    # four hold until their expected ends; the plan keeps the lab busy
    assert got[("mlsub_queue_plan_bound_ratio", lab)] >= 1.0
    planned = got[("mlsub_queue_planned_completion_seconds", lab)]
    assert planned >= got[("mlsub_queue_bound_completion_seconds", lab)] > 0
    assert 0 < got[("mlsub_queue_busy_ratio", lab)] <= 1
    assert 0 < got[("mlsub_replan_step_duration_seconds", lab)] < 10

    release.touch()  # the first job ends: the epilog re-plans, then writes the textfile
    first_queued = str(waiting[0]["decision_id"])
    poll(
        "the epilog's re-plan to start the first queued job",
        lambda: mlsub.json("show", first_queued)["state"] not in ("queued", "starting"),
        90,
    )
    cluster.jobs.append(int(mlsub.json("show", first_queued)["slurm_job_id"]))
    # a completed run (the first job, once reconcile read sacct) beside a job still
    # queued: every series the dashboard reads is emitted
    first = str(running[0]["decision_id"])
    poll(
        "reconcile to record the first job's end",
        lambda: (
            mlsub.json("reconcile") is not None
            and mlsub.json("show", first)["state"] == "completed"
        ),
        60,
    )
    got = series(mlsub.run("metrics").stdout)
    emitted = {name for name, _ in got}
    assert dashboard_metrics() <= emitted, dashboard_metrics() - emitted
    assert got[("mlsub_runs_measured_total", lab)] >= 1
    assert got[("mlsub_queue_length", lab)] == 1

    # the epilog rewrote the textfile after the re-plan (METRICS_OUT): only when the lab
    # runs this checkout's epilog (a lab started from an older one knows no METRICS_OUT)
    installed = (LAB_BASE / "epilog_slurmctld.sh").read_text()
    if "METRICS_OUT" not in installed:
        require_or_skip(
            "the lab cluster runs an EpilogSlurmctld without METRICS_OUT (started from an "
            "older checkout): restart it with make cluster-down cluster-up"
        )
    state = mlsub.workdir / "epilog-state"
    try:
        written = poll(
            "the epilog to write the metrics textfile",
            lambda: (
                prom.exists()
                and (g := series(prom.read_text())).get(("mlsub_queue_length", lab)) == 1
                and g
            ),
            60,
        )
    except AssertionError as err:
        logs = (mlsub.workdir / "epilog.log", state / "last-metrics.txt", prom)
        said = [f"{p}:\n{p.read_text()}" for p in logs if p.exists()]
        raise AssertionError("\n".join([str(err), *said])) from None
    assert written[("mlsub_live_cluster_up", lab)] == 1
    assert prom.stat().st_mode & 0o777 == 0o644
