"""The wheel carries the runtime data the code reads through importlib.resources."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("*.whl")
    return built


@pytest.mark.slow
def test_wheel_contains_the_profile_table(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert "slurm_mlsched/data/profiles.csv" in names
        table = zf.read("slurm_mlsched/data/profiles.csv").decode()
    assert table.startswith("# profiles_version:")
    assert (ROOT / "slurm_mlsched" / "data" / "profiles.csv").read_text() == table


@pytest.mark.slow
def test_wheel_ships_the_migrations_and_uses_them(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    for source in (ROOT / "migrations").rglob("*.py"):
        assert f"slurm_mlsched/_data/migrations/{source.relative_to(ROOT / 'migrations')}" in names
    assert "slurm_mlsched/_data/migrations/script.py.mako" in names
    probe = (
        "import slurm_mlsched, sys; from slurm_mlsched.storage.database import migrations_dir; "
        "print(slurm_mlsched.__file__); print(migrations_dir()); "
        "from slurm_mlsched.cli.app import main; sys.argv = ['mlsub', 'db', 'upgrade']; main()"
    )
    db = tmp_path / "d.db"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site"), "MLSUB_DB_URL": f"sqlite:///{db}"},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not the checkout: its package would shadow the wheel's
    )
    assert done.returncode == 0, done.stderr
    package, migrations, message = done.stdout.splitlines()
    assert package.startswith(str(tmp_path / "site"))
    assert migrations == str(tmp_path / "site" / "slurm_mlsched" / "_data" / "migrations")
    assert message.endswith("upgraded (empty) -> 0007")


@pytest.mark.slow
def test_wheel_ships_the_sbatch_templates_and_renders_from_them(
    wheel: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    for source in (ROOT / "sbatch_templates").glob("*.j2"):
        assert f"slurm_mlsched/_data/sbatch_templates/{source.name}" in names
    probe = (
        "from slurm_mlsched.model import *; from slurm_mlsched.sbatch import *; "
        "plan = SlotPlan(0, Mode.COLOCATED, (('n1', 1),), (('n1', 1),)); "
        "d = Decision('j', 'hand', Form.NON_ELASTIC, 0, (plan,), 0, 0, 1.0); "
        "job = JobRequest('j', 0, 1.0, 1, Resources(1, 1, 1024), Resources(0, 1, 512), "
        "JobProfile(0.1, 1.0, 10.0, 10.0)); "
        "print(template_dir()); "
        "print(render_sbatch(d, job, {}, ScriptSpec(('true',), 'j')).text.splitlines()[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not the checkout: its package would shadow the wheel's
    )
    assert done.returncode == 0, done.stderr
    where, first_line = done.stdout.splitlines()
    assert where == str(tmp_path / "site" / "slurm_mlsched" / "_data" / "sbatch_templates")
    assert first_line == "#!/bin/bash"


@pytest.mark.slow
def test_wheel_ships_the_slurm_plugins_and_their_check(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "site")
    for name in ("job_submit.lua", "cli_filter.lua", "epilog_slurmctld.sh"):
        assert f"slurm_mlsched/_data/plugins/{name}" in names
    for name in ("check.lua", "slurm_stub.lua"):
        assert f"slurm_mlsched/plugins/lua/{name}" in names
    probe = (
        "from slurm_mlsched.plugins import plugin_dir; "
        "from slurm_mlsched.plugins.files import HARNESS_DIR; "
        "print(plugin_dir()); print(HARNESS_DIR)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not the checkout: its package would shadow the wheel's
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        str(tmp_path / "site" / "slurm_mlsched" / "_data" / "plugins"),
        str(tmp_path / "site" / "slurm_mlsched" / "plugins" / "lua"),
    ]
