"""The remote target (``[user@]host[:port]``) and its ~/.ssh/config entry: pure functions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from slurm_mlsched.config import load_config
from slurm_mlsched.errors import InputError, RemoteConfigError
from slurm_mlsched.remote.target import (
    SshTarget,
    TargetSpec,
    default_identities,
    parse_target,
    resolve_target,
)

HOME = "/home/alice"
CONFIG = paramiko.SSHConfig.from_text(
    """
Host login
  HostName login01.cluster.example
  User al
  Port 2200
  IdentityFile ~/.ssh/id_cluster
  IdentityFile /keys/second
  UserKnownHostsFile ~/.ssh/known_hosts_cluster /etc/cluster_hosts
  IdentitiesOnly yes

Host via-jump
  ProxyJump bastion.example

Host proxied
  ProxyCommand ssh -W %h:%p bastion

Host badport
  Port seventy

Host *.example
  User wildcard
"""
)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("login.example", TargetSpec("login.example")),
        ("alice@login.example", TargetSpec("login.example", "alice")),
        ("alice@login.example:2222", TargetSpec("login.example", "alice", 2222)),
        ("login:22", TargetSpec("login", None, 22)),
        ("  bob@10.0.0.5  ", TargetSpec("10.0.0.5", "bob")),
        ("ssh://carol@host:2022", TargetSpec("host", "carol", 2022)),
        ("ssh://host/", TargetSpec("host")),
        ("[::1]:2222", TargetSpec("::1", None, 2222)),
        ("dave@[fe80::1%eth0]", TargetSpec("fe80::1%eth0", "dave")),
        ("::1", TargetSpec("::1")),
        ("first.last@login", TargetSpec("login", "first.last")),
        ("me@corp.example@login", TargetSpec("login", "me@corp.example")),
    ],
)
def test_parse_target(text: str, spec: TargetSpec) -> None:
    assert parse_target(text) == spec


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "it is empty"),
        ("alice@", "'' is not a host"),
        ("@host", "'' is not a user name"),
        ("host:0", "port '0'"),
        ("host:65536", "port '65536'"),
        ("host:ssh", "port 'ssh'"),
        ("host:", "port ''"),
        ("-oProxyCommand=evil", "not a host name"),
        ("bad host", "not a host name"),
        ("a;b@host", "not a user name"),
        ("[::1", "without its matching"),
        ("[::1]x", "without its matching"),
    ],
)
def test_bad_targets_say_what_is_wrong(text: str, needle: str) -> None:
    with pytest.raises(InputError, match="remote target") as info:
        parse_target(text)
    assert needle in info.value.message
    assert "[user@]host[:port]" in info.value.hint and info.value.exit_code == 3


def test_spec_prints_back_as_written() -> None:
    for text in ("alice@login.example:2222", "login", "[::1]:22", "bob@10.0.0.5"):
        assert str(parse_target(text)) == text


def test_without_config_the_defaults_are_the_local_user_and_port_22() -> None:
    target = resolve_target("login.example", None, local_user="alice", home=HOME)
    assert target == SshTarget(
        alias="login.example",
        hostname="login.example",
        port=22,
        user="alice",
        known_hosts_files=(f"{HOME}/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"),
    )
    assert target.known_hosts_name == "login.example"
    assert target.display == "alice@login.example:22"


def test_host_alias_takes_hostname_user_port_keys_and_known_hosts_from_config() -> None:
    target = resolve_target("login", CONFIG, local_user="alice", home=HOME)
    assert target.alias == "login" and target.hostname == "login01.cluster.example"
    assert (target.user, target.port) == ("al", 2200)
    assert target.identity_files[1] == "/keys/second"
    assert target.identity_files[0].endswith("/.ssh/id_cluster")  # ~ expanded
    assert target.identities_only
    assert target.known_hosts_files == (
        f"{HOME}/.ssh/known_hosts_cluster",
        "/etc/cluster_hosts",
        "/etc/ssh/ssh_known_hosts",
    )
    assert target.known_hosts_name == "[login01.cluster.example]:2200"
    assert target.display == "al@login01.cluster.example:2200 (login)"


def test_user_and_port_in_the_target_win_over_the_config() -> None:
    target = resolve_target("bob@login:2022", CONFIG, local_user="alice", home=HOME)
    assert (target.hostname, target.user, target.port) == ("login01.cluster.example", "bob", 2022)


def test_wildcard_entries_apply_to_hosts_not_aliased() -> None:
    target = resolve_target("node.example", CONFIG, local_user="alice", home=HOME)
    assert (target.hostname, target.user, target.port) == ("node.example", "wildcard", 22)
    assert target.identity_files == () and not target.identities_only


@pytest.mark.parametrize(
    ("alias", "option"), [("via-jump", "proxyjump"), ("proxied", "proxycommand")]
)
def test_proxies_are_refused_not_bypassed(alias: str, option: str) -> None:
    with pytest.raises(RemoteConfigError, match="jump host or proxy") as info:
        resolve_target(alias, CONFIG, local_user="a", home=HOME, config_path="/cfg")
    assert info.value.exit_code == 8 and info.value.context["option"] == option
    assert info.value.message.startswith("/cfg: Host ")


def test_a_bad_port_in_the_config_names_the_file_and_host() -> None:
    with pytest.raises(InputError, match="Host 'badport' has Port 'seventy'") as info:
        resolve_target("badport", CONFIG, local_user="a", home=HOME, config_path="/cfg")
    assert info.value.message.startswith("/cfg: ")


def test_known_hosts_none_switches_a_file_off() -> None:
    config = paramiko.SSHConfig.from_text(
        "Host h\n  UserKnownHostsFile /tmp/kh\n  GlobalKnownHostsFile none\n"
    )
    target = resolve_target("h", config, local_user="a", home=HOME)
    assert target.known_hosts_files == ("/tmp/kh",)


def test_default_identities_follow_openssh_order() -> None:
    assert default_identities(HOME) == (
        f"{HOME}/.ssh/id_ed25519",
        f"{HOME}/.ssh/id_ecdsa",
        f"{HOME}/.ssh/id_rsa",
    )


# --- the `remote` config key ------------------------------------------------------------


def test_remote_config_key_from_file_environment_and_flag(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('remote = "alice@login.example:2222"\n')
    none = tmp_path / "none"
    assert load_config({}, system_path=none, user_path=tmp_path / "x").remote == ""
    assert load_config({}, system_path=none, user_path=user).remote == "alice@login.example:2222"
    env = {"MLSUB_REMOTE": "bob@other"}
    assert load_config(env, system_path=none, user_path=user).remote == "bob@other"
    flags = {"remote": "cluster-alias"}
    assert load_config(env, flags, system_path=none, user_path=user).remote == "cluster-alias"


@pytest.mark.parametrize(
    ("text", "needle"), [('remote = "a@b:99999"', "port '99999'"), ("remote = 3", "non-empty")]
)
def test_bad_remote_in_config_names_the_file(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text + "\n")
    with pytest.raises(InputError, match=needle) as info:
        load_config({}, system_path=tmp_path / "none", user_path=path)
    assert str(path) in info.value.message and "'remote'" in info.value.message


def test_config_and_target_parsing_do_not_import_paramiko() -> None:
    """paramiko takes ~0.3 s to import: only connecting may pay for it."""
    code = (
        "import sys, slurm_mlsched.config, slurm_mlsched.remote, slurm_mlsched.remote.target;"
        "assert 'paramiko' not in sys.modules, 'paramiko imported';"
        "slurm_mlsched.remote.connect; assert 'paramiko' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_lazy_package_names_are_all_exported() -> None:
    import slurm_mlsched.remote as remote

    for name in remote.__all__:
        assert getattr(remote, name) is not None
    with pytest.raises(AttributeError):
        remote.no_such_name  # noqa: B018
