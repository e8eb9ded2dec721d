"""``--remote`` on the command line: where it may be written (``shorthand``), what it may
not be combined with, and that a login node that cannot be reached fails with exit 8
before anything is read or recorded. The real SSH path: tests/remote/test_remote_submit.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app, shorthand


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('hi')\n")
    return "train.py"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train.py"], ["submit", "train.py"]),
        (["--remote", "me@login", "train.py", "--wait"],
         ["submit", "--remote", "me@login", "train.py", "--wait"]),
        (["--remote=login", "train.py"], ["submit", "--remote=login", "train.py"]),
        (["--remote", "login", "reconcile", "3"], ["reconcile", "--remote", "login", "3"]),
        (["--remote", "login", "plan", "train.py"], ["plan", "--remote", "login", "train.py"]),
        (["train.py", "--remote", "login"], ["submit", "train.py", "--remote", "login"]),
        # what reads as a path goes to submit, which says it is missing (exit 3)
        (["--remote", "login", "missing.py"], ["submit", "--remote", "login", "missing.py"]),
        (["missing.py"], ["submit", "missing.py"]),
        (["jobs/run"], ["submit", "jobs/run"]),
        (["histroy"], ["histroy"]),  # a bare word: a mistyped command ("did you mean")
        (["--remote"], ["--remote"]),
        (["history"], ["history"]),
    ],
)  # fmt: skip
def test_a_leading_remote_moves_behind_the_command(
    script: str, argv: list[str], expected: list[str]
) -> None:
    assert shorthand(argv) == expected


def test_a_missing_script_is_named_not_taken_for_a_command(script: str) -> None:
    result = CliRunner().invoke(app, shorthand(["nofile.py"]))
    assert result.exit_code == 3, result.output
    assert "nofile.py does not exist" in result.stderr and "No such command" not in result.output


def test_remote_and_a_cluster_file_do_not_mix(script: str) -> None:
    result = CliRunner().invoke(app, ["plan", script, "--cluster", "c.yaml", "--remote", "login"])
    assert result.exit_code == 2 and "--remote" in result.output


@pytest.mark.parametrize(
    "argv",
    [["submit", "train.py"], ["plan", "train.py"], ["reconcile"], ["cluster"]],
    ids=lambda a: a[0],
)
def test_an_unreachable_login_node_is_exit_8_and_records_nothing(
    script: str, tmp_path: Path, argv: list[str]
) -> None:
    env = {
        "HOME": str(tmp_path),  # no ~/.ssh: no config, keys or known hosts of the caller
        "SSH_AUTH_SOCK": "",
        "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'd.db'}",
        "MLSUB_CONFIG": str(tmp_path / "none.toml"),
        "MLSUB_DEBUG": "",
    }
    result = CliRunner().invoke(app, [*argv, "--remote", "root@127.0.0.1:1"], env=env)
    assert result.exit_code == 8, result.output
    assert "error[ssh-connect-failed]" in result.output and "connection refused" in result.output
    assert not (tmp_path / "d.db").exists()  # connected before the store was opened
