"""The job array script of ``mlsub replay --on-slurm``: golden files, quoting of hostile
paths (run through bash, and read the way sbatch reads ``#SBATCH`` lines), refusals."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.sbatch.replay_array import ArrayScript, render_replay_array

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "sbatch"
UPDATE = os.environ.get("MLSUB_UPDATE_GOLDEN") == "1"
HOSTILE = '/srv/replays/it\'s a "test" $(touch pwned) `id` #1 50%'


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}: run with MLSUB_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed (MLSUB_UPDATE_GOLDEN=1)"


def directives(script: str) -> dict[str, str]:
    """``#SBATCH --key=value`` lines, the value unquoted as sbatch does (it takes shell
    quotes: checked on the real 22.05 in tests/integration/test_replay_on_slurm.py)."""
    out = {}
    for line in script.splitlines():
        if line.startswith("#SBATCH --"):
            key, _, value = line[len("#SBATCH --") :].partition("=")
            (out[key],) = shlex.split(value)
    return out


def test_golden_plain() -> None:
    spec = ArrayScript("/srv/replays/run1", "/opt/venv/bin/python", tasks=8)
    check_golden("replay_array.sh", render_replay_array(spec))


def test_golden_every_option_and_a_hostile_directory() -> None:
    spec = ArrayScript(
        HOSTILE, "/opt/my venv/bin/python", tasks=3, partition="ml", time_limit="1-02:00:00",
        mem="512M", job_name="replay of 'philly'",
    )  # fmt: skip
    check_golden("replay_array_hostile.sh", render_replay_array(spec))


def test_array_output_and_limits() -> None:
    spec = ArrayScript("/d", "/py", tasks=12, partition="debug,ml", time_limit="30", mem="1G")
    got = directives(render_replay_array(spec))
    assert got == {
        "job-name": "mlsub-replay", "array": "0-11", "output": "/d/cells/%a.log",
        "chdir": "/d", "cpus-per-task": "1", "mem": "1G", "partition": "debug,ml", "time": "30",
    }  # fmt: skip


def test_hostile_directory_reaches_sbatch_and_the_cell_verbatim(tmp_path: Path) -> None:
    """The #SBATCH values unquote to the directory (its % doubled in --output), and bash
    runs the interpreter with the directory and the task index as two plain arguments."""
    stub = tmp_path / "py thon's"
    stub.write_text(
        "#!/bin/sh\nexec python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' \"$@\"\n"
    )
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    script = render_replay_array(ArrayScript(HOSTILE, str(stub), tasks=2))
    got = directives(script)
    assert got["chdir"] == HOSTILE
    assert got["output"] == HOSTILE.replace("%", "%%") + "/cells/%a.log"
    run = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30,
        env={**os.environ, "SLURM_ARRAY_TASK_ID": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == ["-P", "-m", "slurm_mlsched", "replay-cell", HOSTILE, "1"]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"out_dir": "/a\\b"}, "backslash"),
        ({"out_dir": "/a\nb"}, "control character"),
        ({"partition": "debug\tml"}, "control character"),
        ({"python": ""}, "empty"),
        ({"time_limit": "2 hours"}, "--time must be a Slurm time limit"),
        ({"time_limit": "1:2:3:4"}, "--time must be a Slurm time limit"),
        ({"mem": "lots"}, "memory must be a Slurm size"),
        ({"tasks": 0}, "at least one task"),
    ],
)
def test_bad_values_are_input_errors(change: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"out_dir": "/d", "python": "/py", "tasks": 2}
    with pytest.raises(InputError, match=message):
        render_replay_array(ArrayScript(**{**base, **change}))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "limit", ["30", "30:00", "2:00:00", "1-0", "1-02:00", "1-02:00:00", "UNLIMITED"]
)
def test_slurm_time_formats_are_accepted(limit: str) -> None:
    spec = ArrayScript("/d", "/py", tasks=1, time_limit=limit)
    assert directives(render_replay_array(spec))["time"] == limit
