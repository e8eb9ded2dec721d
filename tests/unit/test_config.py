"""Config precedence: defaults < /etc < user file < MLSUB_* environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_mlsched.config import (
    DEFAULT_RESERVATION_GRACE_S,
    Config,
    default_db_path,
    load_config,
    user_config_path,
)
from slurm_mlsched.errors import InputError


def test_defaults(tmp_path: Path) -> None:
    cfg = load_config({}, system_path=tmp_path / "none", user_path=tmp_path / "none2")
    assert cfg == Config()
    assert cfg.reservation_grace_s == DEFAULT_RESERVATION_GRACE_S and cfg.db_url == ""
    assert cfg.is_admin("root") and not cfg.is_admin("alice")


def test_precedence(tmp_path: Path) -> None:
    system, user = tmp_path / "system.toml", tmp_path / "user.toml"
    system.write_text('db_url = "sqlite:///site.db"\nadmins = ["ops"]\ncluster_name = "site"\n')
    user.write_text('db_url = "sqlite:///mine.db"\nreservation_grace_s = 60\n')
    env = {"MLSUB_RESERVATION_GRACE_S": "120", "MLSUB_CLUSTER_NAME": "envc"}
    cfg = load_config(env, {"cluster_name": "flagc", "db_url": None},
                      system_path=system, user_path=user)  # fmt: skip
    assert cfg.db_url == "sqlite:///mine.db"  # user file over system file
    assert cfg.admins == ("ops",) and cfg.is_admin("ops")  # system file only
    assert cfg.reservation_grace_s == 120.0  # environment over user file
    assert cfg.cluster_name == "flagc"  # flag over environment
    assert cfg.sources == (str(system), str(user), "environment", "command line")


def test_admins_from_environment(tmp_path: Path) -> None:
    cfg = load_config(
        {"MLSUB_ADMINS": "a, b"}, system_path=tmp_path / "x", user_path=tmp_path / "y"
    )
    assert cfg.admins == ("a", "b")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("db_ulr = 'x'\n", "unknown config key 'db_ulr'"),
        ("reservation_grace_s = -1\n", "seconds >= 0"),
        ("admins = 3\n", "list of user names"),
        ("db_url = \n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=needle) as err:
        load_config({}, system_path=tmp_path / "none", user_path=path)
    assert str(path) in str(err.value)


def test_paths_follow_xdg() -> None:
    env = {"HOME": "/home/a", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c"}
    assert default_db_path(env) == Path("/s/mlsched/decisions.db")
    assert user_config_path(env) == Path("/c/mlsched/config.toml")
    assert default_db_path({"HOME": "/home/a"}) == Path("/home/a/.local/state/mlsched/decisions.db")
    assert user_config_path({"MLSUB_CONFIG": "/x.toml"}) == Path("/x.toml")
