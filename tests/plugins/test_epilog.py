"""plugins/epilog_slurmctld.sh without slurmctld: it runs the configured mlsub detached
with a clean environment, reads its env file without executing anything in it, ignores an
env file others may write, and coalesces triggers. (With the real slurmctld and mlsub:
tests/integration/test_queue_live.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

EPILOG = Path(__file__).resolve().parents[2] / "plugins" / "epilog_slurmctld.sh"

STUB = """#!/bin/sh
# stands in for mlsub: records its arguments and environment, one file per run
n=$(ls {out} | wc -l)
{{ echo "args=$*"; env | sort; }} > {out}/run-$n
sleep {delay}
"""


def setup(tmp_path: Path, delay: float = 0.0, extra: str = "") -> tuple[Path, Path]:
    out = tmp_path / "runs"
    out.mkdir()
    stub = tmp_path / "mlsub"
    stub.write_text(STUB.format(out=out, delay=delay))
    stub.chmod(0o755)
    conf = tmp_path / "epilog.env"
    conf.write_text(
        f"# the site's settings\nMLSUB={stub}\nMLSUB_DB_URL=sqlite:////tmp/x.db\n"
        f"STATE_DIR={tmp_path / 'state'}\nLOG={tmp_path / 'log'}\n{extra}"
    )
    conf.chmod(0o644)
    return conf, out


def trigger(conf: Path, job: str = "7") -> subprocess.CompletedProcess[str]:
    if shutil.which("flock") is None or shutil.which("setsid") is None:
        pytest.skip("util-linux's flock and setsid are needed")
    env = {"PATH": os.environ["PATH"], "MLSUB_EPILOG_ENV": str(conf), "SLURM_JOB_ID": job,
           "SECRET_OF_SLURMCTLD": "x"}  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(["bash", str(EPILOG)], env=env, capture_output=True, text=True,
                          timeout=30)  # fmt: skip
    assert time.monotonic() - started < 5  # it never keeps slurmctld waiting
    return done


def runs(out: Path, n: int, timeout: float = 15) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(out.glob("run-*"))
        if len(found) >= n:
            time.sleep(0.3)
            return [p.read_text() for p in sorted(out.glob("run-*"))]
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} run(s) after {timeout} s: {list(out.iterdir())}")


def test_it_runs_mlsub_replan_detached_with_a_clean_environment(tmp_path: Path) -> None:
    conf, out = setup(tmp_path)
    assert trigger(conf).returncode == 0
    (run,) = runs(out, 1)
    assert "args=replan --json" in run
    assert "MLSUB_DB_URL=sqlite:////tmp/x.db" in run
    assert "SECRET_OF_SLURMCTLD" not in run and "SLURM_JOB_ID" not in run
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
    deadline = time.monotonic() + 10
    while "exit 0" not in ((tmp_path / "log").read_text() if (tmp_path / "log").exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_values_are_read_never_run_and_unknown_names_are_ignored(tmp_path: Path) -> None:
    marker = tmp_path / "INJECTED"
    conf, out = setup(
        tmp_path,
        extra=f"MLSUB_CLUSTER_NAME=$(touch {marker})`touch {marker}`\nPATH=/nowhere\n"
        f"BASH_ENV={marker}\n",
    )
    assert trigger(conf).returncode == 0
    (run,) = runs(out, 1)
    assert not marker.exists()
    assert f"MLSUB_CLUSTER_NAME=$(touch {marker})`touch {marker}`" in run  # verbatim
    assert "PATH=/nowhere" not in run and "BASH_ENV" not in run


@pytest.mark.parametrize("mode", [0o664, 0o646])
def test_an_env_file_others_may_write_is_ignored(tmp_path: Path, mode: int) -> None:
    conf, out = setup(tmp_path)
    conf.chmod(mode)
    assert trigger(conf).returncode == 0
    time.sleep(1.0)
    assert list(out.iterdir()) == [] and not (tmp_path / "state").exists()


def test_no_env_file_or_no_mlsub_does_nothing(tmp_path: Path) -> None:
    assert trigger(tmp_path / "missing.env").returncode == 0
    conf, out = setup(tmp_path)
    conf.write_text("# nothing configured\n")
    conf.chmod(0o644)
    assert trigger(conf).returncode == 0
    time.sleep(0.5)
    assert list(out.iterdir()) == []


def test_a_burst_of_job_ends_costs_a_few_replans_not_one_each(tmp_path: Path) -> None:
    conf, out = setup(tmp_path, delay=1.5)
    for job in range(8):
        assert trigger(conf, str(job)).returncode == 0
    time.sleep(6)
    done = runs(out, 1)
    assert 1 <= len(done) <= 3, len(done)  # the first, then one for every trigger meanwhile


def test_with_metrics_out_each_replan_is_followed_by_mlsub_metrics(tmp_path: Path) -> None:
    prom = tmp_path / "textfile" / "mlsub.prom"
    conf, out = setup(tmp_path, extra=f"METRICS_OUT={prom}\n")
    assert trigger(conf).returncode == 0
    first, second = runs(out, 2)
    assert "args=replan --json" in first
    assert f"args=metrics --out {prom}" in second
    assert "MLSUB_DB_URL=sqlite:////tmp/x.db" in second and "SECRET_OF_SLURMCTLD" not in second
