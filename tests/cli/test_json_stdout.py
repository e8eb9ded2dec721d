"""``--json`` stdout is pure JSON even when a solver library writes to file descriptor 1.

HiGHS prints its banner from C++ to fd 1 the first time a process builds a
``highspy.Highs()`` (PuLP's HiGHS API does, for ``--policy exact``). CliRunner only swaps
``sys.stdout``, and the banner appears once per process, so these tests run ``mlsub`` in
a fresh interpreter and read its real stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "cluster.yaml"
MLSUB = "import sys; from slurm_mlsched.cli.app import main; sys.argv[0] = 'mlsub'; main()"
ENV = {**os.environ, "MLSUB_FIXED_NOW": "2026-03-01T10:07:30Z", "MLSUB_DEBUG": ""}
BANNER = "Running HiGHS"


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize("policy", ["exact", "yu-rr"])
def test_plan_json_stdout_parses_as_json_in_a_fresh_process(policy: str) -> None:
    proc = run_python(
        MLSUB,
        "plan",
        "--cluster",
        str(CLUSTER),
        "--workers",
        "2",
        "--batches-per-epoch",
        "100",
        "--model",
        "resnet-50",
        "--policy",
        policy,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert BANNER not in proc.stdout
    data = json.loads(proc.stdout)
    assert data["policy"] == policy


def test_silencing_uses_up_the_banner_and_keeps_later_output() -> None:
    unguarded = run_python("import highspy; highspy.Highs(); print('after')")
    if BANNER not in unguarded.stdout:
        pytest.skip("this highspy prints no banner: silence_highs_banner() is moot")
    guarded = run_python(
        "from slurm_mlsched.cli.highs_banner import silence_highs_banner\n"
        "print('before', flush=True)\n"
        "silence_highs_banner(); silence_highs_banner()\n"
        "import highspy; highspy.Highs(); print('after')"
    )
    assert guarded.returncode == 0, guarded.stderr
    assert guarded.stdout == "before\nafter\n"
