"""Host key verification for SSH: known_hosts only; unknown, changed and revoked keys are
refused before anything is sent.

* :func:`parse_known_hosts` reads OpenSSH known_hosts text (plain, hashed ``|1|`` and
  wildcard host patterns, ``!negation``, ``@revoked``); :func:`read_known_hosts` reads the
  files (the user's, then the system's) into one :class:`KnownHosts`. Nothing is ever
  written to them. ``@cert-authority`` lines are skipped: host certificates are not
  supported, so a host known only through a CA is unknown.
* :meth:`KnownHosts.verify` is OpenSSH's decision: a key listed for the host is accepted;
  a host with a *different* key of the same type raises
  :class:`~slurm_mlsched.errors.HostKeyChangedError` (the loud one); a host with no key of
  that type raises :class:`~slurm_mlsched.errors.UnknownHostKeyError` with the key's type,
  SHA256 fingerprint and the command that trusts it; a revoked key raises
  :class:`~slurm_mlsched.errors.HostKeyError`.
* :class:`VerifyHostKey` plugs that into paramiko (as its missing-host-key policy, with
  the client's own key store left empty so every key goes through it), and
  :func:`preferred_key_types` puts the types already known for the host first in the key
  exchange, as ssh(1) does, so a host known by its ECDSA or RSA key is not "unknown" just
  because it also has an Ed25519 one.

Fingerprints are OpenSSH's ``SHA256:<base64 without padding>`` of the public key blob,
the same string ``ssh-keygen -lf`` and ``ssh`` print.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

from ..errors import HostKeyChangedError, HostKeyError, InputError, UnknownHostKeyError
from .target import SshTarget

#: The RSA signature algorithms negotiated for an ``ssh-rsa`` key, strongest first.
RSA_ALGORITHMS = ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's SHA256 fingerprint of a public key, e.g. ``SHA256:Xy…`` (no padding)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def describe_key(key: paramiko.PKey) -> str:
    """``ssh-ed25519 SHA256:…``: the key type and fingerprint (public data only)."""
    return f"{key.get_name()} {fingerprint(key)}"


def trust_command(target: SshTarget, key: paramiko.PKey, known_hosts_file: str) -> str:
    """The command that adds exactly this key (pinned by its fingerprint) to
    ``known_hosts_file``: ``mlsub remote trust`` (:mod:`.trust`), never a blind re-fetch
    such as ``ssh-keyscan >> known_hosts``."""
    host = f"[{target.alias}]" if ":" in target.alias else target.alias
    where = host if target.port == 22 else f"{host}:{target.port}"
    argv = ["mlsub", "remote", "trust", where, "--fingerprint", fingerprint(key)]
    return f"{shlex.join(argv)} --known-hosts {_shell_path(known_hosts_file)}"


def _shell_path(path: str) -> str:
    """A path for a shell command, keeping a leading ``~/`` unquoted so it expands."""
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:])
    return shlex.quote(path)


# --- known_hosts ------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownKey:
    """One known_hosts line: its host patterns, key, and where it was read."""

    patterns: tuple[str, ...]
    key: paramiko.PKey
    file: str
    line: int

    def matches(self, name: str) -> bool:
        """OpenSSH's host matching: any pattern matches and no ``!pattern`` does."""
        name = name.lower()
        matched = False
        for pattern in self.patterns:
            if pattern.startswith("!"):
                if _glob(pattern[1:], name):
                    return False
            elif _hashed_match(pattern, name) or _glob(pattern, name):
                matched = True
        return matched


def _glob(pattern: str, name: str) -> bool:
    """``*`` and ``?`` wildcards only (``[`` is literal: ``[host]:port`` is a name)."""
    if pattern.startswith("|1|"):
        return False
    regex = re.escape(pattern.lower()).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, name) is not None


def _hashed_match(pattern: str, name: str) -> bool:
    if not pattern.startswith("|1|"):
        return False
    try:
        return paramiko.HostKeys.hash_host(name, pattern) == pattern
    except (binascii.Error, ValueError, AssertionError, IndexError):
        return False


@dataclass
class KnownHosts:
    """The keys of the known_hosts files read, in order, and the revoked keys."""

    keys: list[KnownKey] = field(default_factory=list)
    revoked: list[KnownKey] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: int = 0
    """Lines that could not be used (malformed, unknown key type, ``@cert-authority``)."""

    def for_host(self, name: str) -> list[KnownKey]:
        return [k for k in self.keys if k.matches(name)]

    def verify(self, target: SshTarget, offered: paramiko.PKey, trust_file: str) -> None:
        """Accept ``offered`` for the target, or raise the error that says why not."""
        name = target.known_hosts_name
        blob = offered.asbytes()
        for revoked in self.revoked:
            if revoked.key.asbytes() == blob:
                raise revoked_host_key(target, offered, revoked.file)
        known = self.for_host(name)
        if any(k.key.asbytes() == blob for k in known):
            return
        same_type = [k for k in known if k.key.get_name() == offered.get_name()]
        if same_type:
            raise changed_host_key(target, offered, same_type[0].key, same_type[0].file)
        other_types = sorted({k.key.get_name() for k in known})
        raise unknown_host_key(target, offered, trust_file, other_types)


def parse_known_hosts(text: str, file: str, into: KnownHosts) -> None:
    """Add the usable lines of one known_hosts text to ``into`` (pure)."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        marker = ""
        if line.startswith("@"):
            marker, _, line = line.partition(" ")
            line = line.strip()
        try:
            entry = HostKeyEntry.from_line(line, number)
        except (InvalidHostKey, paramiko.SSHException, ValueError, TypeError):
            entry = None
        if entry is None or marker not in ("", "@revoked"):
            into.skipped += 1
            continue
        known = KnownKey(tuple(entry.hostnames), entry.key, file, number)
        (into.revoked if marker else into.keys).append(known)


def read_known_hosts(files: Sequence[str]) -> KnownHosts:
    """Read every existing known_hosts file, in order (a missing file is no keys)."""
    known = KnownHosts()
    for name in files:
        path = Path(name)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(
                f"cannot read the known_hosts file {path}: {exc.strerror or exc}",
                hint="fix its permissions (mlsub only reads it)",
                context={"file": str(path)},
            ) from None
        parse_known_hosts(text, str(path), known)
        known.files.append(str(path))
    return known


def preferred_key_types(known: Sequence[KnownKey], offered: Sequence[str]) -> list[str]:
    """``offered`` (paramiko's host key algorithms) with the types known for the host first."""
    first: list[str] = []
    for key in known:
        name = key.key.get_name()
        for algorithm in RSA_ALGORITHMS if name == "ssh-rsa" else (name,):
            if algorithm in offered and algorithm not in first:
                first.append(algorithm)
    return first + [t for t in offered if t not in first]


class VerifyHostKey(paramiko.MissingHostKeyPolicy):
    """paramiko's hook, called for every host key (the client's own store stays empty)."""

    def __init__(self, target: SshTarget, known: KnownHosts, trust_file: str) -> None:
        self.target = target
        self.known = known
        self.trust_file = trust_file

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        self.known.verify(self.target, key, self.trust_file)


# --- the errors -------------------------------------------------------------------------


def unknown_host_key(
    target: SshTarget,
    key: paramiko.PKey,
    known_hosts_file: str,
    other_types: Sequence[str] = (),
) -> UnknownHostKeyError:
    name = target.known_hosts_name
    listed = (
        f"known_hosts lists only {', '.join(other_types)} keys for {name}"
        if other_types
        else f"no known_hosts file lists {name}"
    )
    return UnknownHostKeyError(
        f"the host key of {name} is not known: the server offered {describe_key(key)}, "
        f"and {listed}; mlsub refuses unknown hosts",
        hint="check that fingerprint with the cluster's admins or its documentation (never "
        "trust it just because it is shown here), then trust the host with:\n  "
        + trust_command(target, key, known_hosts_file)
        + f"\n(or run `{target.ssh_command}` once and answer 'yes' if the fingerprint "
        "matches)",
        context={
            "host": name,
            "key_type": key.get_name(),
            "fingerprint": fingerprint(key),
            "known_hosts": known_hosts_file,
        },
    )


def changed_host_key(
    target: SshTarget, offered: paramiko.PKey, expected: paramiko.PKey, known_hosts_file: str
) -> HostKeyChangedError:
    name = target.known_hosts_name
    remove = f"ssh-keygen -R {shlex.quote(name)} -f {_shell_path(known_hosts_file)}"
    return HostKeyChangedError(
        f"WARNING: THE HOST KEY OF {name} HAS CHANGED. known_hosts ({known_hosts_file}) "
        f"holds {describe_key(expected)}, but the server offered {describe_key(offered)}. "
        "Someone could be intercepting the connection (a man-in-the-middle attack), or the "
        "host was reinstalled. mlsub refused to connect and sent nothing",
        hint="ask the cluster's admins whether the host key really changed and what its "
        "new fingerprint is; only if it did, remove the old entry with\n  "
        + remove
        + "\nand trust the new key after checking its fingerprint:\n  "
        + trust_command(target, offered, known_hosts_file),
        context={
            "host": name,
            "known_hosts": known_hosts_file,
            "expected_key_type": expected.get_name(),
            "expected_fingerprint": fingerprint(expected),
            "offered_key_type": offered.get_name(),
            "offered_fingerprint": fingerprint(offered),
        },
    )


def revoked_host_key(target: SshTarget, key: paramiko.PKey, file: str) -> HostKeyError:
    name = target.known_hosts_name
    return HostKeyError(
        f"the host key of {name} ({describe_key(key)}) is marked @revoked in {file}; "
        "mlsub refused to connect and sent nothing",
        hint="the key was revoked on purpose: ask the cluster's admins for the host's current key",
        context={"host": name, "fingerprint": fingerprint(key), "known_hosts": file},
        code="host-key-revoked",
    )
