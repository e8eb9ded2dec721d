"""No database password in any output (issue 17 item 1): a table of good and malformed URLs
that carry a password, given by ``--db-url`` and by ``MLSUB_DB_URL``, through every store
command, human and ``--json``; the password must appear in neither stdout nor stderr, and
the failure must be a store or input error (never ``error[internal]``)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.storage.database import display_url, mask_passwords

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "cluster.yaml"
SCRIPT = ROOT / "examples" / "train_resnet.py"
SECRET = "S3cretPW"
runner = CliRunner()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


PORT = closed_port()
URLS = [
    f"postgresql+psycopg://mlsub:{SECRET}@127.0.0.1:{PORT}/mlsub",  # good, nobody listens
    f"postgresql+psycopg://mlsub:{SECRET}@127.0.0.1:notaport/mlsub",  # non-numeric port
    f"postgresql+psycopg://mlsub:{SECRET}x@y@127.0.0.1:{PORT}/mlsub",  # '@' in the password
    f"postgresql+psycopg://mlsub@127.0.0.1:{PORT}/mlsub?password={SECRET}",  # as a parameter
    f"nosuchdb+driver://mlsub:{SECRET}@127.0.0.1/mlsub",  # unknown dialect
    f"postgresql+psycopg://mlsub:{SECRET}@[::1/mlsub",  # broken IPv6 host
    f"mlsub:{SECRET}@127.0.0.1/mlsub",  # no scheme at all
]
COMMANDS = [
    ["history"],
    ["show", "1"],
    ["explain", "1"],
    ["export"],
    ["release", "1"],
    ["db", "current"],
    ["db", "upgrade"],
    ["plan", str(SCRIPT), "--cluster", str(CLUSTER), "--reserve"],
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_password_never_appears_in_any_output(url: str, how: str, tmp_path: Path) -> None:
    env = {
        "MLSUB_FIXED_NOW": "2026-03-01T10:07:30Z",
        "MLSUB_DEBUG": "",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "MLSUB_AS_USER": "",
        "MLSUB_ADMINS": "",
        "MLSUB_DB_BUSY_TIMEOUT_S": "2",
        "MLSUB_DB_URL": url if how == "env" else f"sqlite:///{tmp_path / 'unused.db'}",
    }
    for command in COMMANDS:
        machine = ["--format", "json"] if command == ["export"] else ["--json"]
        for as_json in ([], machine):
            args = [*command, *as_json] + (["--db-url", url] if how == "flag" else [])
            result = runner.invoke(app, args, env=env)
            said = result.stdout + result.stderr
            assert SECRET not in said, (args, said)
            assert result.exit_code in (3, 7), (args, result.exit_code, said)
            assert "error[internal]" not in said, (args, said)


def test_masking_covers_user_info_parameters_and_text_around_urls() -> None:
    text = f"a postgresql://u:{SECRET}@h/d and mysql://v:{SECRET}@h/e?password={SECRET}"
    masked = mask_passwords(text)
    assert SECRET not in masked and masked.count("***") == 3
    assert display_url(f"postgresql://u:{SECRET}@h/d") == "postgresql://u:***@h/d"
    assert display_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"  # nothing to hide
