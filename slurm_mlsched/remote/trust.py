"""``mlsub remote trust``: add a host's key to known_hosts only if it is the key whose
fingerprint the user checked (pinning), never a key fetched blindly.

The unknown-host error shows the fingerprint the server offered; the user checks it with
the cluster's admins, then runs ``mlsub remote trust TARGET --fingerprint SHA256:…``.
That connects again, asks the server for each host key type in turn (each answer is
authenticated by the key exchange: the server proves it holds the private key), and
appends the one whose fingerprint equals the given one. A server that offers no key with
that fingerprint (a different server, an attacker in between, a typo) gets nothing
written, and the error lists what it offered. Nothing is written for a host whose
known_hosts already holds a *different* key of the same type (a changed key is the loud
error of :mod:`.hostkeys`; the user removes the old entry deliberately first).

The line goes to the first known_hosts file of the target (``UserKnownHostsFile`` of its
``~/.ssh/config`` entry, else ``~/.ssh/known_hosts``), created 0600 in a 0700 directory
when missing, appended with ``O_NOFOLLOW`` (a symlink planted there is refused).
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

import paramiko

from ..errors import InputError, RemoteError
from .hostkeys import describe_key, fingerprint, read_known_hosts
from .ssh import connect_failure
from .target import SshTarget

#: Host key algorithms asked for, in ssh(1)'s order; ``rsa-sha2-512`` fetches the RSA key.
KEY_ALGORITHMS = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
)

FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")


@dataclass(frozen=True)
class Trusted:
    """What ``trust`` did: the key, the file, and whether a line was added."""

    host: str
    key_type: str
    fingerprint: str
    file: str
    added: bool

    def to_json(self) -> dict[str, object]:
        return {
            "host": self.host,
            "key_type": self.key_type,
            "fingerprint": self.fingerprint,
            "known_hosts": self.file,
            "added": self.added,
        }


def check_fingerprint(text: str) -> str:
    """``SHA256:`` + 43 base64 characters, as ssh and mlsub print it."""
    value = text.strip()
    if not FINGERPRINT.fullmatch(value):
        raise InputError(
            f"--fingerprint must be an OpenSSH SHA256 fingerprint, got {value!r}",
            hint="copy it as mlsub or ssh-keygen -lf prints it: SHA256: followed by 43 "
            "characters (MD5 fingerprints are not accepted)",
            context={"fingerprint": value},
        )
    return value


def host_keys(target: SshTarget, *, timeout: float, stop_at: str = "") -> list[paramiko.PKey]:
    """The host keys the server proves it holds, one per algorithm it offers (stops early
    at the key whose fingerprint is ``stop_at``). Each connection is bounded by
    ``timeout``; nothing but the key exchange is sent."""
    keys: list[paramiko.PKey] = []
    for algorithm in KEY_ALGORITHMS:
        try:
            sock = socket.create_connection((target.hostname, target.port), timeout=timeout)
        except OSError as exc:
            raise connect_failure(target, exc, timeout) from None
        transport = paramiko.Transport(sock)
        try:
            transport.get_security_options().key_types = (algorithm,)
            transport.banner_timeout = timeout
            transport.start_client(timeout=timeout)
            key = transport.get_remote_server_key()
        except (paramiko.SSHException, EOFError, OSError):
            continue  # the server has no key of this type (or refused this exchange)
        finally:
            transport.close()
        if all(k.asbytes() != key.asbytes() for k in keys):
            keys.append(key)
        if stop_at and fingerprint(key) == stop_at:
            break
    return keys


def trust(target: SshTarget, wanted: str, *, timeout: float) -> Trusted:
    """Append the host's key whose fingerprint is ``wanted`` to its known_hosts file."""
    wanted = check_fingerprint(wanted)
    name = target.known_hosts_name
    offered = host_keys(target, timeout=timeout, stop_at=wanted)
    match = next((k for k in offered if fingerprint(k) == wanted), None)
    if match is None:
        shown = "; ".join(describe_key(k) for k in offered) or "no host key"
        raise RemoteError(
            f"{name} offered no host key with fingerprint {wanted} (it offered: {shown}); "
            "nothing was written",
            hint="this is not the host whose fingerprint you checked, or the fingerprint "
            "was mistyped: check both with the cluster's admins before trusting anything",
            context={"host": name, "fingerprint": wanted},
            code="host-key-mismatch",
        )
    files = target.known_hosts_files or (str(Path.home() / ".ssh" / "known_hosts"),)
    file = files[0]
    known = read_known_hosts(files)
    mine = known.for_host(name)
    result = Trusted(name, match.get_name(), wanted, file, added=False)
    if any(k.key.asbytes() == match.asbytes() for k in mine):
        return result
    other = [k for k in mine if k.key.get_name() == match.get_name()]
    if other:
        raise RemoteError(
            f"{other[0].file}:{other[0].line} already holds a different {match.get_name()} "
            f"key for {name} ({describe_key(other[0].key)}); nothing was written",
            hint="if the host key really changed (ask the cluster's admins), remove the old "
            f"entry first: ssh-keygen -R '{name}' -f {other[0].file}",
            context={"host": name, "known_hosts": other[0].file},
            code="host-key-changed",
        )
    append_line(Path(file), f"{name} {match.get_name()} {match.get_base64()}\n")
    return Trusted(name, match.get_name(), wanted, file, added=True)


def append_line(path: Path, line: str) -> None:
    """Append ``line`` to ``path`` (created 0600, its directory 0700 when missing),
    refusing a symlink at ``path``."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise InputError(
            f"cannot write the known_hosts file {path}: {exc.strerror or exc}"
            + (
                " (it is a symlink; mlsub does not write through links)"
                if path.is_symlink()
                else ""
            ),
            hint="check the file: it must be a regular file you own",
            context={"file": str(path)},
        ) from None
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(line)
