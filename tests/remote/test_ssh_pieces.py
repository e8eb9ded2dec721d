"""The pieces of the SSH runner that need no server: quoting for the remote shell, host
key fingerprints and messages, which keys are offered. Keys are real (ssh-keygen)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest

from slurm_mlsched.errors import HostKeyChangedError, HostKeyError, UnknownHostKeyError
from slurm_mlsched.remote.auth import KeyFile, KeysAndAgent, auth_failed, key_files_for
from slurm_mlsched.remote.hostkeys import (
    KnownHosts,
    changed_host_key,
    fingerprint,
    parse_known_hosts,
    preferred_key_types,
    trust_command,
    unknown_host_key,
)
from slurm_mlsched.remote.ssh import remote_command
from slurm_mlsched.remote.target import SshTarget
from tests.remote.sshd import KeyPair, make_key, require_ssh_keygen

WEIRD = [
    "a b",
    "$(touch /tmp/mlsub-quoting-pwned)",
    "`id`",
    "it's",
    'say "hi"',
    "new\nline",
    "",
    "*",
    "~",
    "a;b|c&d",
    "$HOME",
    "\\",
    "-n",
    "tab\there",
    "ünïcødé",
]
TARGET = SshTarget("login", "10.1.2.3", 2222, "alice", known_hosts_files=("/kh", "/etc/kh"))


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, KeyPair]:
    require_ssh_keygen()
    base = tmp_path_factory.mktemp("keys")
    return {
        "a": make_key(base / "a", "a"),
        "b": make_key(base / "b", "b"),
        "encrypted": make_key(base / "enc", "enc", passphrase="correct horse battery"),
        "ecdsa": make_key(base / "ec", "ec", kind="ecdsa"),
    }


# --- quoting ----------------------------------------------------------------------------


def test_plain_arguments_stay_readable() -> None:
    assert remote_command(["sinfo", "-h", "-N", "-o", "%N|%T"]) == "sinfo -h -N -o '%N|%T'"


def test_environment_is_an_env_prefix_with_quoted_values() -> None:
    command = remote_command(["sbatch", "job.sh"], {"SLURM_CONF": "/etc/slurm x/slurm.conf"})
    assert command == "env 'SLURM_CONF=/etc/slurm x/slurm.conf' sbatch job.sh"


@pytest.mark.parametrize("name", ["1X", "A-B", "A B", "", "X;rm"])
def test_bad_environment_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="environment variable name"):
        remote_command(["true"], {name: "v"})


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_every_argument_reaches_the_command_verbatim(shell: str) -> None:
    """What a POSIX login shell does with the command line sshd hands it."""
    line = remote_command(["printf", "%s\\0", *WEIRD], {"V": "x y"})
    out = subprocess.run([shell, "-c", line], capture_output=True, timeout=10, check=True)
    assert out.stdout.decode().split("\0")[:-1] == WEIRD
    assert not Path("/tmp/mlsub-quoting-pwned").exists()


# --- host keys --------------------------------------------------------------------------


def test_fingerprint_is_the_one_ssh_keygen_prints(keys: dict[str, KeyPair]) -> None:
    key = paramiko.PKey.from_path(keys["a"].private)
    shown = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{keys['a'].private}.pub"],
        capture_output=True, text=True, check=True, timeout=10,
    ).stdout.split()  # fmt: skip
    assert fingerprint(key) == shown[1] and fingerprint(key).startswith("SHA256:")


def test_trust_command_pins_the_fingerprint_shown(keys: dict[str, KeyPair]) -> None:
    """The hint names the key it showed, so trusting adds that key, not one fetched again
    (``ssh-keyscan >> known_hosts`` would add whatever answers then)."""
    key = paramiko.PKey.from_path(keys["a"].private)
    fp = fingerprint(key)
    assert (
        trust_command(TARGET, key, "~/.ssh/known_hosts")
        == f"mlsub remote trust login:2222 --fingerprint {fp} --known-hosts ~/.ssh/known_hosts"
    )
    on_22 = SshTarget("h", "h", 22, "u")
    assert (
        trust_command(on_22, key, "/my files/kh")
        == f"mlsub remote trust h --fingerprint {fp} --known-hosts '/my files/kh'"
    )
    v6 = SshTarget("::1", "::1", 2200, "u")
    assert trust_command(v6, key, "/kh").startswith(
        f"mlsub remote trust '[::1]:2200' --fingerprint {fp}"
    )


def test_unknown_host_shows_type_fingerprint_and_how_to_trust(keys: dict[str, KeyPair]) -> None:
    key = paramiko.PKey.from_path(keys["a"].private)
    err = unknown_host_key(TARGET, key, "/kh")
    assert err.code == "host-key-unknown" and err.exit_code == 8
    assert f"ssh-ed25519 {fingerprint(key)}" in err.message
    assert "[10.1.2.3]:2222 is not known" in err.message
    assert (
        f"mlsub remote trust login:2222 --fingerprint {fingerprint(key)} --known-hosts /kh"
        in err.hint
    )
    assert "ssh-keyscan" not in err.hint  # a blind re-fetch would trust whoever answers then
    assert "check that fingerprint" in err.hint and "out of band" not in err.message
    assert err.context["fingerprint"] == fingerprint(key)


def test_changed_host_key_is_loud_and_names_both_keys(keys: dict[str, KeyPair]) -> None:
    old = paramiko.PKey.from_path(keys["a"].private)
    new = paramiko.PKey.from_path(keys["b"].private)
    err = changed_host_key(TARGET, new, old, "/kh")
    assert err.code == "host-key-changed" and err.exit_code == 8
    assert err.message.startswith("WARNING: THE HOST KEY OF [10.1.2.3]:2222 HAS CHANGED")
    assert fingerprint(old) in err.message and fingerprint(new) in err.message
    assert "man-in-the-middle" in err.message
    assert "ssh-keygen -R '[10.1.2.3]:2222' -f /kh" in err.hint


def blob(pair: KeyPair) -> str:
    return pair.public_blob


def known(text: str) -> KnownHosts:
    hosts = KnownHosts()
    parse_known_hosts(text, "/kh", hosts)
    return hosts


def pkey(pair: KeyPair) -> paramiko.PKey:
    return paramiko.PKey.from_path(pair.private)


def hashed(name: str) -> str:
    return paramiko.HostKeys.hash_host(name)


def test_known_hosts_lines_plain_hashed_wildcard_and_negated(keys: dict[str, KeyPair]) -> None:
    a = blob(keys["a"])
    hosts = known(
        f"""# a comment

login1,10.1.2.3 {a}
[10.1.2.3]:2222 {a}
{hashed("secret-host")} {a}
*.cluster.example,!bad.cluster.example {a}
NODE? {a}
"""
    )
    assert hosts.skipped == 0 and len(hosts.keys) == 5
    for name in ("login1", "10.1.2.3", "[10.1.2.3]:2222", "secret-host", "x.cluster.example",
                 "node7", "Login1"):  # fmt: skip
        assert hosts.for_host(name), name
    for name in ("login2", "[10.1.2.3]:22", "bad.cluster.example", "node77", "[10.1.2.3]"):
        assert not hosts.for_host(name), name
    assert hosts.keys[1].line == 4 and hosts.keys[1].file == "/kh"


def test_markers_and_bad_lines(keys: dict[str, KeyPair]) -> None:
    a, b = blob(keys["a"]), blob(keys["b"])
    hosts = known(
        f"""@cert-authority *.example {a}
@revoked * {b}
login {a}
garbage
login ssh-ed25519 !!!not-base64
login sk-unknown-type@openssh.com AAAA
"""
    )
    assert [k.line for k in hosts.keys] == [3]
    assert [k.line for k in hosts.revoked] == [2]
    assert hosts.skipped == 4  # the CA line, garbage, bad base64, unknown type


TARGET_KH = SshTarget("login", "login", 22, "alice")


def test_verify_accepts_a_listed_key_of_any_listed_type(keys: dict[str, KeyPair]) -> None:
    hosts = known(f"login {blob(keys['b'])}\nlogin {blob(keys['a'])}\n")
    hosts.verify(TARGET_KH, pkey(keys["a"]), "/kh")  # two keys of one type: either is fine


def test_verify_changed_unknown_and_revoked(keys: dict[str, KeyPair]) -> None:
    a, b, ec = keys["a"], keys["b"], keys["ecdsa"]
    with pytest.raises(HostKeyChangedError):
        known(f"login {blob(a)}\n").verify(TARGET_KH, pkey(b), "/kh")
    with pytest.raises(UnknownHostKeyError) as info:
        known(f"login {blob(ec)}\n").verify(TARGET_KH, pkey(a), "/kh")
    assert "lists only ecdsa-sha2-nistp256 keys for login" in info.value.message
    with pytest.raises(UnknownHostKeyError, match="no known_hosts file lists login"):
        known(f"other {blob(a)}\n").verify(TARGET_KH, pkey(a), "/kh")
    with pytest.raises(HostKeyError, match="marked @revoked in /kh") as revoked:
        known(f"login {blob(a)}\n@revoked * {blob(a)}\n").verify(TARGET_KH, pkey(a), "/kh")
    assert revoked.value.code == "host-key-revoked" and revoked.value.exit_code == 8


def test_known_key_types_are_asked_for_first(keys: dict[str, KeyPair]) -> None:
    offered = ["ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"]
    hosts = known(f"login {blob(keys['ecdsa'])}\n")
    assert preferred_key_types(hosts.for_host("login"), offered) == [
        "ecdsa-sha2-nistp256", "ssh-ed25519", "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa",
    ]  # fmt: skip
    assert preferred_key_types([], offered) == offered


# --- keys offered -----------------------------------------------------------------------


def test_key_files_explicit_then_configured_then_defaults_only_without_either() -> None:
    target = SshTarget("h", "h", 22, "u", identity_files=("/c1", "/x"))
    files = key_files_for(target, ["/x", "/e"], ["/d1", "/d2"], look_for_keys=True)
    assert [(f.path, f.source) for f in files] == [
        ("/x", "python-config"),
        ("/e", "python-config"),
        ("/c1", "ssh-config"),
    ]
    bare = SshTarget("h", "h", 22, "u")
    assert [f.path for f in key_files_for(bare, [], ["/d1"], look_for_keys=True)] == ["/d1"]
    assert key_files_for(bare, [], ["/d1"], look_for_keys=False) == []


def test_unusable_keys_are_skipped_with_a_reason(keys: dict[str, KeyPair], tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_text("not a key\n")
    files = [
        KeyFile(str(keys["encrypted"].private), "ssh-config"),
        KeyFile(str(tmp_path / "missing"), "python-config"),
        KeyFile(str(tmp_path / "missing-default"), "implicit-home"),
        KeyFile(str(garbage), "ssh-config"),
        KeyFile(str(keys["a"].private), "ssh-config"),
    ]
    strategy = KeysAndAgent("u", files, agent=None)
    sources = list(strategy.get_sources())
    assert len(sources) == 1  # only the good key
    notes = strategy.notes.skipped
    assert len(notes) == 3  # a missing default key is not worth a note
    assert "encrypted" in notes[0] and f"ssh-add {keys['encrypted'].private}" in notes[0]
    assert "no such file" in notes[1] and "cannot be used as a private key" in notes[2]


def test_auth_failure_without_any_key_says_so() -> None:
    strategy = KeysAndAgent("u", [], agent=None)
    err = auth_failed(TARGET, paramiko.AuthenticationException("x"), strategy.notes)
    assert err.code == "ssh-auth-failed" and err.exit_code == 8
    assert "no usable key to offer" in err.message
    assert "never with a password" in err.hint and "ssh-copy-id -p 2222" in err.hint
