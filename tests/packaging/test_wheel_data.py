"""The wheel carries the runtime data the code reads through importlib.resources."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_contains_the_profile_table(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert "slurm_mlsched/data/profiles.csv" in names
        table = zf.read("slurm_mlsched/data/profiles.csv").decode()
    assert table.startswith("# profiles_version:")
    assert (ROOT / "slurm_mlsched" / "data" / "profiles.csv").read_text() == table
