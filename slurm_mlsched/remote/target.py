"""Where ``mlsub --remote`` connects: the target text and its ``~/.ssh/config`` entry.

* :func:`parse_target` reads ``[user@]host[:port]`` (also ``[v6::addr]:port`` and
  ``ssh://user@host:port``) into a :class:`TargetSpec`;
* :func:`resolve_target` looks the host up in an already-parsed ``~/.ssh/config``, the way
  ``ssh(1)`` does: the host of the target is a ``Host`` alias; ``HostName``, ``User``,
  ``Port``, ``IdentityFile``, ``IdentitiesOnly``, ``UserKnownHostsFile`` and
  ``GlobalKnownHostsFile`` are honoured; a user or port written in the target wins over the
  file. ``ProxyJump`` / ``ProxyCommand`` are refused (not supported yet) rather than
  silently bypassed.

Both are pure functions of their arguments (the home directory and local user are passed
in); :func:`load_ssh_config` is the one function here that reads a file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, RemoteConfigError

if TYPE_CHECKING:
    from paramiko import SSHConfig

SSH_PORT = 22
#: known_hosts files ssh(1) reads when ~/.ssh/config does not say otherwise.
USER_KNOWN_HOSTS = "~/.ssh/known_hosts"
GLOBAL_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
#: Keys ssh(1) tries when no IdentityFile is configured (the order of OpenSSH).
DEFAULT_IDENTITIES = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
#: ssh_config options that change how the connection is made and that we cannot honour.
UNSUPPORTED_OPTIONS = ("proxyjump", "proxycommand")

_USER = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._@-]*$")
_HOST = re.compile(r"^[A-Za-z0-9_.:%-]+$")
_FORM = "[user@]host[:port], e.g. alice@login.example or login.example:2222"


@dataclass(frozen=True)
class TargetSpec:
    """What the user wrote: ``[user@]host[:port]`` (``None`` = not given)."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and self.port is not None else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{host}{port}"


@dataclass(frozen=True)
class SshTarget:
    """A resolved target: where to connect, as whom, with which keys and known_hosts."""

    alias: str
    """The host as written in the target (the ``Host`` alias looked up in ssh_config)."""
    hostname: str
    """The address connected to (``HostName``, else the alias); known_hosts is keyed by it."""
    port: int
    user: str
    identity_files: tuple[str, ...] = ()
    """Private keys from ``IdentityFile`` (expanded paths), in the order given."""
    identities_only: bool = False
    """``IdentitiesOnly yes``: only the identity files, no agent keys or default keys."""
    known_hosts_files: tuple[str, ...] = ()
    """known_hosts files to check the host key against (user files first, then global)."""

    @property
    def known_hosts_name(self) -> str:
        """The host's name in known_hosts: ``host``, or ``[host]:port`` off port 22."""
        return self.hostname if self.port == SSH_PORT else f"[{self.hostname}]:{self.port}"

    @property
    def ssh_command(self) -> str:
        """``ssh [-p PORT] user@host``: the same login with OpenSSH, for hints."""
        port = "" if self.port == SSH_PORT else f"-p {self.port} "
        return f"ssh {port}{shlex.quote(self.user)}@{shlex.quote(self.hostname)}"

    @property
    def display(self) -> str:
        """``user@host:port`` for messages (the alias too when it differs)."""
        where = f"{self.user}@{self.hostname}:{self.port}"
        return where if self.alias == self.hostname else f"{where} ({self.alias})"


def parse_target(text: str) -> TargetSpec:
    """Parse ``[user@]host[:port]``; raise :class:`InputError` naming what is wrong."""
    raw = text.strip()
    rest = raw.removeprefix("ssh://").rstrip("/")
    if not rest:
        raise _bad(text, "it is empty")
    user: str | None = None
    if "@" in rest:
        user, rest = rest.rsplit("@", 1)
        if not _USER.match(user):
            raise _bad(text, f"{user!r} is not a user name")
    host, port = _split_port(rest, text)
    if not host or host.startswith("-") or not _HOST.match(host):
        raise _bad(text, f"{host!r} is not a host name or address")
    return TargetSpec(host=host, user=user, port=port)


def _split_port(rest: str, text: str) -> tuple[str, int | None]:
    if rest.startswith("["):  # [v6::addr] or [host]:port
        host, sep, tail = rest[1:].partition("]")
        if not sep or (tail and not tail.startswith(":")):
            raise _bad(text, "a '[' without its matching ']'")
        return host, _port(tail[1:], text) if tail else None
    if rest.count(":") == 1:
        host, port = rest.split(":")
        return host, _port(port, text)
    return rest, None  # no port, or a bare IPv6 address


def _port(value: str, text: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise _bad(text, f"port {value!r} is not a number from 1 to 65535")
    return int(value)


def _bad(text: str, why: str) -> InputError:
    return InputError(
        f"remote target {text!r} is not valid: {why}",
        hint=f"write {_FORM}, or a Host alias from ~/.ssh/config",
        context={"remote": text},
    )


def resolve_target(
    text: str,
    ssh_config: SSHConfig | None,
    *,
    local_user: str,
    home: str,
    config_path: str = "~/.ssh/config",
) -> SshTarget:
    """The target with its ssh_config entry applied (target > ssh_config > defaults).

    ``ssh_config`` is a parsed :class:`paramiko.SSHConfig` (``None``: no file). Raises
    :class:`InputError` for a malformed target or port, and :class:`RemoteConfigError`
    when the entry needs a proxy (``ProxyJump``/``ProxyCommand``), which is not supported.
    """
    spec = parse_target(text)
    entry: Mapping[str, object] = ssh_config.lookup(spec.host) if ssh_config else {}
    for option in UNSUPPORTED_OPTIONS:
        if entry.get(option) and str(entry[option]).lower() != "none":
            raise RemoteConfigError(
                f"{config_path}: Host {spec.host!r} sets {option} {entry[option]}; "
                "mlsub cannot connect through a jump host or proxy yet",
                hint="connect to a login node that is directly reachable, or run mlsub there",
                context={"remote": text, "option": option},
            )
    port = spec.port or _config_port(entry.get("port"), spec.host, config_path)
    files = entry.get("identityfile")
    identities = tuple(_expand(str(f), home) for f in files) if isinstance(files, list) else ()
    return SshTarget(
        alias=spec.host,
        hostname=str(entry.get("hostname") or spec.host),
        port=port,
        user=spec.user or str(entry.get("user") or local_user),
        identity_files=identities,
        identities_only=str(entry.get("identitiesonly", "no")).lower() == "yes",
        known_hosts_files=_known_hosts(entry, home),
    )


def _config_port(value: object, host: str, config_path: str) -> int:
    if value is None:
        return SSH_PORT
    text = str(value)
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise InputError(
            f"{config_path}: Host {host!r} has Port {text!r}, not a number from 1 to 65535",
            hint="fix the Port line of that Host entry",
            context={"remote": host, "port": text},
        )
    return int(text)


def _known_hosts(entry: Mapping[str, object], home: str) -> tuple[str, ...]:
    files: list[str] = []
    for option, default in (
        ("userknownhostsfile", USER_KNOWN_HOSTS),
        ("globalknownhostsfile", GLOBAL_KNOWN_HOSTS),
    ):
        value = entry.get(option)
        words = str(value).split() if value else [default]
        files.extend(_expand(w, home) for w in words if w.lower() != "none")
    return tuple(dict.fromkeys(files))


def _expand(path: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return path


def default_identities(home: str) -> tuple[str, ...]:
    """The private keys ssh(1) tries when none is configured (paths, existing or not)."""
    return tuple(_expand(p, home) for p in DEFAULT_IDENTITIES)


def load_ssh_config(path: Path) -> SSHConfig | None:
    """Parse an ssh_config file; ``None`` when it does not exist."""
    from paramiko import SSHConfig

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(
            f"cannot read {path}: {exc.strerror or exc}",
            hint="fix its permissions",
            context={"file": str(path)},
        ) from None
    try:
        return SSHConfig.from_text(text)
    except Exception as exc:  # paramiko raises ConfigParseError and plain ValueErrors
        raise InputError(
            f"{path} cannot be read as an ssh_config file: {exc}",
            hint="`ssh -G HOST` shows how ssh itself reads it",
            context={"file": str(path)},
        ) from None
