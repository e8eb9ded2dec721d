"""The Slurm plugins (plugins/job_submit.lua, plugins/cli_filter.lua) installed into the
real local slurmctld: an untagged job in partition ``ml`` is refused with the mlsub
command; tagged jobs (plain sbatch, heterogeneous jobs, a real ``mlsub submit``) are
accepted and their accounting rows carry the decision id; jobs in ``debug`` are untouched;
the cli_filter's plan mode fills in a placement; a broken site table is caught by
``mlsub plugins check`` before slurmctld could see it.

The plugins are installed for this module only (:func:`plugins_installed`): the original
slurm.conf (and any Lua scripts it replaced) are put back and slurmctld reconfigured at the
end, also when a test fails. Run it alone with the cluster lock other developers use::

    flock /tmp/mlsched-cluster-tests.lock .venv/bin/pytest tests/integration/test_plugins_live.py
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.plugins import check_plugins
from slurm_mlsched.slurm.hostlist import expand_hostlist
from slurm_mlsched.slurm.runner import LocalRunner
from tests.integration.conftest import ROOT, LabCluster, poll
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub, mlsub_executable, probe_script
from tests.plugins.lua import ensure_lua

pytestmark = pytest.mark.integration

ETC = Path("/etc/slurm")
PLUGINS = ROOT / "plugins"
TAG = "mlsched:decision=42:0123456789ab"
#: What the stand-in for ``mlsub plan --for-sbatch`` answers for a job named plan-me.
PLAN_TAG = "mlsched:decision=77:00000000beef"
PLAN_STUB = f"""#!/bin/sh
# stand-in for `mlsub plan --for-sbatch` (tests/integration/test_plugins_live.py); a job
# named real-plan goes to the real command, with the store of Mlsub(WORK)
case " $* " in
  *" --name plan-me "*) printf 'nodelist=node3\\nnodes=1\\ncomment={PLAN_TAG}\\n' ;;
  *" --name real-plan "*|*" --name queue-plan "*) exec env \\
      MLSUB_DB_URL="sqlite:///$WORK/decisions.db" \\
      MLSUB_CONFIG="$WORK/no-config.toml" MLSUB_SLOT_SECONDS=10 MLSUB_CLUSTER_NAME=lab-it \\
      "$MLSUB" plan --for-sbatch "$@" ;;
  *) echo "plan stub: not planning this job" >&2; exit 3 ;;
esac
"""


def with_site(source: str, **settings: str) -> str:
    """``source`` with site-table settings replaced (values are Lua text)."""
    for key, value in settings.items():
        source, n = re.subn(rf"(?m)^(\s*){key} = .*,$", rf"\g<1>{key} = {value},", source, count=1)
        assert n == 1, key
    return source


def _config_value(key: str) -> str:
    out = subprocess.run(
        ["scontrol", "show", "config"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    match = re.search(rf"^{key}\s*=\s*(.*)$", out, re.MULTILINE)
    return match[1].strip() if match else ""


def _reconfigure(job_submit: str, cli_filter: str) -> None:
    subprocess.run(["scontrol", "reconfigure"], capture_output=True, timeout=60, check=True)
    poll(
        f"slurmctld to run with JobSubmitPlugins={job_submit}",
        lambda: (
            _config_value("JobSubmitPlugins") == job_submit
            and _config_value("CliFilterPlugins") == cli_filter
        ),
        timeout=60,
    )


@dataclass(frozen=True)
class Installed:
    stub_dir: Path


@pytest.fixture(scope="module")
def plugins_installed(
    lab_ready: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Installed]:
    """job_submit.lua as shipped (partition ml is ML) and cli_filter.lua in plan mode with
    a stand-in plan command, both checked with ``mlsub plugins check`` first; everything is
    put back afterwards."""
    lua = ensure_lua()
    work = tmp_path_factory.mktemp("plugins")
    stub = work / "plan-stub.sh"
    stub.write_text(
        f"WORK={shlex.quote(str(work))}\nMLSUB={shlex.quote(mlsub_executable())}\n"
        + PLAN_STUB.replace("#!/bin/sh\n", "", 1)
    )
    stub.chmod(0o755)
    staged = {
        "job_submit.lua": (PLUGINS / "job_submit.lua").read_text(),
        "cli_filter.lua": with_site(
            (PLUGINS / "cli_filter.lua").read_text(),
            mode='"plan"',
            plan_command=f'{{ "/bin/sh", "{stub}" }}',
            plan_timeout_s="20",
        ),
    }
    for name, text in staged.items():
        (work / name).write_text(text)
    report = check_plugins([work / n for n in staged], runner=LocalRunner(), lua=lua)
    assert report.ok, report.to_json()

    conf = ETC / "slurm.conf"
    original_conf = conf.read_bytes()
    originals = {n: (ETC / n).read_bytes() if (ETC / n).exists() else None for n in staged}
    try:
        for name in staged:
            (ETC / name).write_text(staged[name])
            (ETC / name).chmod(0o644)
        kept = [
            line
            for line in original_conf.decode().splitlines()
            if not re.match(r"\s*(JobSubmitPlugins|CliFilterPlugins)\s*=", line, re.IGNORECASE)
        ]
        conf.write_text(
            "\n".join([*kept, "JobSubmitPlugins=lua", "CliFilterPlugins=cli_filter/lua", ""])
        )
        _reconfigure("lua", "cli_filter/lua")
        yield Installed(work)
    finally:
        conf.write_bytes(original_conf)
        for name, data in originals.items():
            if data is None:
                (ETC / name).unlink(missing_ok=True)
            else:
                (ETC / name).write_bytes(data)
        before = re.search(rb"(?m)^JobSubmitPlugins\s*=\s*(\S+)", original_conf)
        cli = re.search(rb"(?m)^CliFilterPlugins\s*=\s*(\S+)", original_conf)
        _reconfigure(
            before[1].decode() if before else "(null)", cli[1].decode() if cli else "(null)"
        )


def sbatch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sbatch", "--parsable", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def job_script(path: Path, *sbatch_lines: str, body: str = "true") -> Path:
    path.write_text(
        "#!/bin/bash\n" + "".join(f"#SBATCH {line}\n" for line in sbatch_lines) + body + "\n"
    )
    return path


def submitted(cluster: LabCluster, done: subprocess.CompletedProcess[str]) -> int:
    assert done.returncode == 0, done.stderr
    job = int(done.stdout.strip().split(";")[0])
    cluster.jobs.append(job)
    return job


def show_job(job: int) -> list[dict[str, str]]:
    """``scontrol -o show job``: one dict per component (Key=Value, values without spaces)."""
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", str(job)], capture_output=True, text=True, timeout=30
    ).stdout
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in out.splitlines() if line.strip()]


def sacct_rows(job: int) -> list[tuple[str, ...]]:
    out = subprocess.run(
        ["sacct", "-X", "-n", "-j", str(job), "--parsable2",
         "-o", "JobID,Partition,AdminComment,Comment"],
        capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    return [tuple(line.split("|")) for line in out.splitlines() if line.strip()]


def accounted(job: int, rows: int) -> list[tuple[str, ...]]:
    """The job's sacct rows once all ``rows`` components show every field (accounting lags
    a few seconds; the partition came last in a test)."""
    return poll(
        f"{rows} complete accounting row(s) of job {job}",
        lambda: (r := sacct_rows(job)) and len(r) == rows and all(all(x) for x in r) and r,
        timeout=90,
        every=1,
    )


# --- job_submit.lua ---------------------------------------------------------------------------


def test_untagged_ml_job_is_rejected_with_the_mlsub_command(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    script = job_script(tmp_path / "train.sh", "--partition=ml", "--output=/dev/null")
    done = sbatch(str(script))
    assert done.returncode != 0 and done.stdout == ""
    assert (
        "sbatch: error: mlsched: partition 'ml' is for ML training jobs placed by mlsub, "
        "and this job carries no mlsub decision tag." in done.stderr
    )
    assert f"sbatch: error:     mlsub submit --partition ml {script}\n" in done.stderr
    # cli_filter ran first: its plan command declined, so it printed the hint
    assert (
        "sbatch: lua: mlsched: /bin/sh did not place this job (it exited with status 3)"
        in done.stderr
    )
    assert (
        f"submit it with mlsub, which places the workers and parameter servers: mlsub "
        f"submit --partition ml {script}" in done.stderr
    )

    malformed = sbatch("-p", "ml", "--comment=mlsched:decision=42", "-o", "/dev/null",
                       "--wrap", "true")  # fmt: skip
    assert malformed.returncode != 0
    assert "malformed mlsub decision tag ('mlsched:decision=42'" in malformed.stderr
    assert "mlsub submit --partition ml SCRIPT" in malformed.stderr


def test_tagged_job_is_accepted_and_its_accounting_row_carries_the_decision(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    script = job_script(
        tmp_path / "tagged.sh", "--partition=ml", f"--comment={TAG}", "--output=/dev/null",
        body="srun -n1 true",  # cli_filter runs in this srun too: it must let it through
    )  # fmt: skip
    job = submitted(cluster, sbatch(str(script)))
    (shown,) = show_job(job)
    assert (shown["Partition"], shown["Comment"], shown["AdminComment"]) == (
        "ml",
        TAG,
        "mlsched:decision=42",
    )
    assert cluster.wait_finished(job) == ["COMPLETED"]
    assert accounted(job, 1) == [(str(job), "ml", "mlsched:decision=42", TAG)]


@pytest.mark.parametrize(
    ("where", "partitions"),
    [("every-component", ("ml", "ml", "ml")), ("header-only", ("ml", "debug", "debug"))],
)
def test_every_hetjob_component_is_checked_and_annotated(
    plugins_installed: Installed,
    cluster: LabCluster,
    tmp_path: Path,
    where: str,
    partitions: tuple[str, ...],
) -> None:
    """The comment of the first component reaches every component (sbatch copies it; the
    generator writes it on every component anyway), the partition does not: components
    whose own #SBATCH line names none run in the default partition (22.05)."""
    each = "--partition=ml " if where == "every-component" else ""
    lines = ["--partition=ml", "--output=/dev/null", f"--comment={TAG}"]
    for i, node in enumerate(("node1", "node2", "node3")):
        if i:
            lines.append("hetjob")
        lines.append(f"{each}--nodelist={node} --nodes=1 --ntasks=1 --mem=100M --comment={TAG}")
    script = job_script(tmp_path / "het.sh", *lines, body="srun --het-group=1 true")
    job = submitted(cluster, sbatch(str(script)))
    shown = show_job(job)
    assert [c["Partition"] for c in shown] == list(partitions)
    assert {(c["Comment"], c["AdminComment"]) for c in shown} == {(TAG, "mlsched:decision=42")}
    assert cluster.wait_finished(job) == ["COMPLETED"] * 3
    assert accounted(job, 3) == [
        (f"{job}+{i}", p, "mlsched:decision=42", TAG) for i, p in enumerate(partitions)
    ]

    if where == "every-component":  # the same job without its tags is refused
        bare = [x for x in (re.sub(r" ?--comment=\S+", "", line) for line in lines) if x]
        refused = sbatch(str(job_script(tmp_path / "bare.sh", *bare)))
        assert refused.returncode != 0 and "mlsched: partition 'ml'" in refused.stderr


def test_job_in_another_partition_is_untouched(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    script = job_script(
        tmp_path / "plain.sh", "--partition=debug", '--comment="my own note"',
        "--output=/dev/null", body="srun -n1 true",
    )  # fmt: skip
    done = sbatch(str(script))
    job = submitted(cluster, done)
    assert "mlsched" not in done.stderr  # neither plugin said anything
    (shown,) = show_job(job)
    assert shown["Partition"] == "debug" and "AdminComment" not in shown  # shown only when set
    out = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", str(job), "-o", "%k"],
        capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    assert out.strip() == "my own note"
    assert cluster.wait_finished(job) == ["COMPLETED"]
    row = poll(
        f"job {job} in sacct", lambda: (r := sacct_rows(job)) and r[0][1] and r, timeout=90, every=1
    )
    assert row == [(str(job), "debug", "", "my own note")]


def test_a_real_mlsub_submission_to_the_ml_partition_is_accepted(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    mlsub = Mlsub(tmp_path)
    script = probe_script(
        tmp_path / "train.py", f"--workers 2 --batches-per-epoch 100 {SMALL_TASKS}"
    )
    out = mlsub.json(str(script), "--partition", "ml", "--interpreter", sys.executable,
                     "--", str(tmp_path / "tasks"))  # fmt: skip
    job = int(out["slurm_job_id"])
    cluster.jobs.append(job)
    decision = str(out["decision_id"])
    rows = accounted(job, len(show_job(job)))
    assert {r[2] for r in rows} == {f"mlsched:decision={decision}"}
    assert all(re.fullmatch(rf"mlsched:decision={decision}:[0-9a-f]{{12}}", r[3]) for r in rows)


# --- cli_filter.lua ---------------------------------------------------------------------------


def test_cli_filter_plan_mode_fills_in_the_placement(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    script = job_script(tmp_path / "plan-me.sh", "--partition=ml", "--output=/dev/null")
    done = sbatch("-J", "plan-me", str(script))
    job = submitted(cluster, done)
    assert f"sbatch: lua: mlsched: placed by mlsub: nodes node3, {PLAN_TAG}" in done.stderr
    (shown,) = show_job(job)
    assert (shown["Comment"], shown["AdminComment"]) == (PLAN_TAG, "mlsched:decision=77")
    assert cluster.wait_finished(job) == ["COMPLETED"]
    assert show_job(job)[0]["NodeList"] == "node3"


def test_cli_filter_plan_mode_with_the_real_mlsub_plan_for_sbatch(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    """A plain ``sbatch`` of a script with ``# mlsub:`` lines: the cli_filter runs ``mlsub
    plan --for-sbatch``, which records the decision; the job carries its tag, runs on the
    decided nodes, and ``mlsub reconcile`` follows it to the end."""
    header = "# mlsub: --workers 2 --gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 1G"
    script = tmp_path / "real-plan.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --partition=ml\n#SBATCH --output=/dev/null\n"
        f"{header}\n# mlsub: --cpus-per-ps 1 --mem-per-ps 512M --step-time 0.05\n"
        "# mlsub: --model-size 1 --batches-per-epoch 100\nsrun true\n"
    )
    done = sbatch("-J", "real-plan", str(script))
    job = submitted(cluster, done)
    mlsub = Mlsub(plugins_installed.stub_dir)
    (row,) = [r for r in mlsub.json("history") if r["job_name"] == "real-plan"]
    assert row["state"] == "submitting" and row["slurm_job_id"] is None
    (shown,) = show_job(job)
    tag = re.fullmatch(rf"mlsched:decision={row['decision_id']}:[0-9a-f]{{12}}", shown["Comment"])
    assert tag, shown["Comment"]
    assert shown["AdminComment"] == f"mlsched:decision={row['decision_id']}"
    assert "placed by mlsub: nodes " in done.stderr and tag[0] in done.stderr
    assert cluster.wait_finished(job) == ["COMPLETED"]
    decided = {p["node"] for p in row["placement"]}
    assert set(expand_hostlist(show_job(job)[0]["NodeList"])) == decided
    mlsub.json("reconcile", str(row["decision_id"]))
    final = mlsub.json("show", str(row["decision_id"]))
    assert final["state"] == "completed" and final["slurm_job_id"] == str(job)
    assert final["script"] == script.read_text()  # the user's own script is what ran


def test_cli_filter_plan_mode_on_a_full_cluster_holds_the_job_until_a_replan(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    """Late binding for plain ``sbatch`` (issue 19): on a full cluster the real ``mlsub
    plan --for-sbatch`` says ``hold=1``; the plugin submits the user's job held, holding
    nothing; when room frees up, ``mlsub replan`` (reconcile finds the held job by its tag:
    queued) sets the held job's nodes and task count to the layout it chose then and
    releases it; it runs there, the user's own script."""
    blockers = [
        cluster.sbatch("-p", "debug", "-w", node, "-n", "1", "--gres=gpu:4", "--mem=1G",
                       "-t", "5", "-o", "/dev/null", "--wrap", "sleep 300")
        for node in ("node1", "node2", "node3", "node4")
    ]  # fmt: skip
    for job in blockers:
        cluster.wait_running(job)
    header = "# mlsub: --workers 2 --gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 1G"
    script = tmp_path / "queue-plan.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH --partition=ml\n#SBATCH --output=/dev/null\n"
        f"{header}\n# mlsub: --cpus-per-ps 1 --mem-per-ps 512M --step-time 0.05\n"
        "# mlsub: --model-size 1 --batches-per-epoch 100\nsrun true\n"
    )
    done = sbatch("-J", "queue-plan", str(script))
    job = submitted(cluster, done)
    assert "waits held in mlsub's queue" in done.stderr, done.stderr
    (shown,) = show_job(job)
    assert (shown["JobState"], shown["Reason"]) == ("PENDING", "JobHeldUser"), shown
    mlsub = Mlsub(plugins_installed.stub_dir)
    (row,) = [r for r in mlsub.json("history") if r["job_name"] == "queue-plan"]
    assert mlsub.json("replan")["started"] == []  # still full: it keeps waiting
    assert mlsub.json("show", str(row["decision_id"]))["state"] == "queued"
    cluster.slurm.run(["scancel", *map(str, blockers)])
    for blocker in blockers:
        cluster.wait_finished(blocker)
    report = mlsub.json("replan")
    assert [(s["decision_id"], s["action"]) for s in report["started"]] == [
        (row["decision_id"], "updated")
    ], report
    assert cluster.wait_finished(job) == ["COMPLETED"]
    final = mlsub.json("show", str(row["decision_id"]))
    decided = {p["node"] for p in final["placement"]}
    assert set(expand_hostlist(show_job(job)[0]["NodeList"])) == decided
    assert final["script"] == script.read_text() and final["slurm_job_id"] == str(job)


# --- the check ---------------------------------------------------------------------------------


def test_plugins_check_catches_a_broken_site_table_before_slurmctld(
    plugins_installed: Installed, cluster: LabCluster, tmp_path: Path
) -> None:
    broken = tmp_path / "job_submit.lua"
    broken.write_text(
        (PLUGINS / "job_submit.lua")
        .read_text()
        .replace('ml_partitions = { "ml" },', 'ml_partitions = { "ml" ', 1)
    )
    result = CliRunner().invoke(app, ["plugins", "check", str(broken)])
    assert result.exit_code == 3
    line = next(
        i for i, t in enumerate(broken.read_text().splitlines(), 1) if "ml_job_name_patterns =" in t
    )
    assert result.stdout.startswith(f"{broken}:{line}: error: '}}' expected")
    assert "error[plugin-check-failed]" in result.stderr
    # slurmctld never saw it: the installed plugin still decides
    script = job_script(
        tmp_path / "still.sh", "--partition=ml", f"--comment={TAG}", "--output=/dev/null"
    )
    job = submitted(cluster, sbatch(str(script)))
    assert show_job(job)[0]["AdminComment"] == "mlsched:decision=42"


def test_moving_an_untagged_job_into_the_ml_partition_is_refused(
    plugins_installed: Installed, cluster: LabCluster
) -> None:
    job = submitted(cluster, sbatch("--hold", "-p", "debug", "-o", "/dev/null", "--wrap", "true"))
    moved = subprocess.run(
        ["scontrol", "update", f"jobid={job}", "partition=ml"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    # scontrol shows no message of the plugin's on update (22.05), only slurmctld's log does
    assert (moved.returncode, moved.stderr) == (1, f"Unspecified error for job {job}\n")
    assert show_job(job)[0]["Partition"] == "debug"
    log = Path(_config_value("SlurmctldLogFile")).read_text(errors="replace")
    assert "mlsched: refused moving a job to partition ml (uid 0, tag: none)" in log
    tagged = subprocess.run(
        ["scontrol", "update", f"jobid={job}", "partition=ml", f"comment={TAG}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert tagged.returncode == 0, tagged.stderr
    assert show_job(job)[0]["Partition"] == "ml"
