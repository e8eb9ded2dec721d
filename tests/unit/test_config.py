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


def test_admins_from_environment_for_root_only(tmp_path: Path) -> None:
    paths = {"system_path": tmp_path / "x", "user_path": tmp_path / "y"}
    cfg = load_config({"MLSUB_ADMINS": "a, b"}, euid=0, **paths)
    assert cfg.admins == ("a", "b")
    with pytest.raises(InputError, match="MLSUB_ADMINS is honoured for root only"):
        load_config({"MLSUB_ADMINS": "mallory"}, euid=1000, **paths)


def test_a_users_own_config_cannot_make_them_admin(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('admins = ["mallory"]\n')
    with pytest.raises(InputError, match="may only be set in the site file") as err:
        load_config({}, system_path=tmp_path / "none", user_path=user, euid=1000)
    assert err.value.context["key"] == "admins"


def test_admins_in_a_site_file_others_can_write_are_not_trusted(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text('admins = ["ops"]\n')
    site.chmod(0o666)
    with pytest.raises(InputError, match="not trusted"):
        load_config({}, system_path=site, user_path=tmp_path / "none")
    site.chmod(0o644)
    assert load_config({}, system_path=site, user_path=tmp_path / "none").admins == ("ops",)


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
    path.chmod(0o644)
    site = text.startswith("admins")  # a site-only key: checked in the site file
    paths = {"system_path": path, "user_path": tmp_path / "none"} if site else {
        "system_path": tmp_path / "none", "user_path": path}  # fmt: skip
    with pytest.raises(InputError, match=needle) as err:
        load_config({}, **paths)
    assert str(path) in str(err.value)


def test_paths_follow_xdg() -> None:
    env = {"HOME": "/home/a", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c"}
    assert default_db_path(env) == Path("/s/mlsched/decisions.db")
    assert user_config_path(env) == Path("/c/mlsched/config.toml")
    assert default_db_path({"HOME": "/home/a"}) == Path("/home/a/.local/state/mlsched/decisions.db")
    assert user_config_path({"MLSUB_CONFIG": "/x.toml"}) == Path("/x.toml")


def test_slurm_admin_level_is_the_sites_alone(tmp_path: Path) -> None:
    paths = {"system_path": tmp_path / "x", "user_path": tmp_path / "y"}
    assert (
        load_config({"MLSUB_SLURM_ADMIN_LEVEL": "Operator"}, euid=0, **paths).slurm_admin_level
        == "operator"
    )
    with pytest.raises(InputError, match="MLSUB_SLURM_ADMIN_LEVEL is honoured for root only"):
        load_config({"MLSUB_SLURM_ADMIN_LEVEL": "operator"}, euid=1000, **paths)
    user = tmp_path / "user.toml"
    user.write_text('slurm_admin_level = "operator"\n')
    with pytest.raises(InputError, match="may only be set in the site file") as err:
        load_config({}, system_path=tmp_path / "none", user_path=user, euid=1000)
    assert err.value.context["key"] == "slurm_admin_level"
    site = tmp_path / "site.toml"
    site.write_text('slurm_admin_level = "administrator"\n')
    site.chmod(0o644)
    cfg = load_config({}, system_path=site, user_path=tmp_path / "none")
    assert cfg.slurm_admin_level == "administrator"
    site.write_text('slurm_admin_level = "root"\n')
    with pytest.raises(InputError, match="must be operator, administrator or empty"):
        load_config({}, system_path=site, user_path=tmp_path / "none")


@pytest.mark.parametrize("key", ["preempt_resize", "preempt_defrag"])
def test_resize_and_moves_are_the_sites_alone_and_need_preempt(tmp_path: Path, key: str) -> None:
    paths = {"system_path": tmp_path / "x", "user_path": tmp_path / "y"}
    variable = f"MLSUB_{key.upper()}"
    env = {"MLSUB_PREEMPT": "1", variable: "true"}
    assert getattr(load_config(env, euid=0, **paths), key) is True
    assert getattr(Config(), key) is False
    with pytest.raises(InputError, match=f"{variable} is honoured for root only"):
        load_config({variable: "1"}, euid=1000, **paths)
    user = tmp_path / "user.toml"
    user.write_text(f"preempt = true\n{key} = true\n")
    with pytest.raises(InputError, match="may only be set in the site file"):
        load_config({}, system_path=tmp_path / "none", user_path=user, euid=1000)
    site = tmp_path / "site.toml"
    site.write_text(f"{key} = true\n")
    site.chmod(0o644)
    with pytest.raises(InputError, match="needs preemption") as err:
        load_config({}, system_path=site, user_path=tmp_path / "none")
    assert err.value.context["key"] == key and f"'{key}'" in err.value.message
    site.write_text(f'preempt = true\n{key} = "maybe"\n')
    with pytest.raises(InputError, match="must be true or false"):
        load_config({}, system_path=site, user_path=tmp_path / "none")


def test_regather_is_the_sites_alone_and_needs_preempt_and_resize(tmp_path: Path) -> None:
    """``preempt_regather`` is a resize decided before the queue's re-plan: the site's
    key, with ``preempt`` and ``preempt_resize`` beside it; each missing one is named."""
    paths = {"system_path": tmp_path / "x", "user_path": tmp_path / "y"}
    full = {"MLSUB_PREEMPT": "1", "MLSUB_PREEMPT_RESIZE": "1", "MLSUB_PREEMPT_REGATHER": "1"}
    assert load_config(full, euid=0, **paths).preempt_regather is True
    assert Config().preempt_regather is False
    with pytest.raises(InputError, match="MLSUB_PREEMPT_REGATHER is honoured for root only"):
        load_config({"MLSUB_PREEMPT_REGATHER": "1"}, euid=1000, **paths)
    user = tmp_path / "user.toml"
    user.write_text("preempt_regather = true\n")
    with pytest.raises(InputError, match="may only be set in the site file"):
        load_config({}, system_path=tmp_path / "none", user_path=user, euid=1000)
    site = tmp_path / "site.toml"
    site.write_text("preempt_regather = true\n")
    site.chmod(0o644)
    with pytest.raises(InputError, match="needs preemption") as err:
        load_config({}, system_path=site, user_path=tmp_path / "none")
    assert err.value.context["key"] == "preempt_regather"
    site.write_text("preempt = true\npreempt_regather = true\n")
    with pytest.raises(InputError, match="'preempt_resize' is not true") as err:
        load_config({}, system_path=site, user_path=tmp_path / "none")
    assert err.value.context["key"] == "preempt_regather"
    assert "preempt_resize = true" in (err.value.hint or "")
    site.write_text("preempt = true\npreempt_resize = true\npreempt_regather = true\n")
    cfg = load_config({}, system_path=site, user_path=tmp_path / "none")
    assert (cfg.preempt, cfg.preempt_resize, cfg.preempt_regather) == (True, True, True)


def test_the_sites_restart_cost_defaults_to_the_time_models(tmp_path: Path) -> None:
    from slurm_mlsched.placement import PlacementParams

    paths = {"system_path": tmp_path / "x", "user_path": tmp_path / "y"}
    assert load_config({}, **paths).restart_s == PlacementParams().restart_s == 30.0
    assert load_config({"MLSUB_RESTART_S": "5"}, euid=0, **paths).restart_s == 5.0
    with pytest.raises(InputError, match="MLSUB_RESTART_S is honoured for root only"):
        load_config({"MLSUB_RESTART_S": "5"}, euid=1000, **paths)
    with pytest.raises(InputError, match="restart_s"):
        load_config({"MLSUB_RESTART_S": "-1"}, euid=0, **paths)
