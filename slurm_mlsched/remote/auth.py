"""SSH authentication with keys and the SSH agent only: never a password, never a prompt.

:class:`KeysAndAgent` is a paramiko :class:`~paramiko.auth_strategy.AuthStrategy` that
offers, in order, the configured identity files, the agent's keys and (when no identity
file is configured, as ssh(1) does) the default ``~/.ssh/id_*`` keys. An encrypted key
file is skipped with a note (mlsub never asks for or stores a passphrase: load the key into
ssh-agent); a server asking for a second factor (password, keyboard-interactive) fails
instead of prompting. :func:`auth_failed` turns the outcome into one
:class:`~slurm_mlsched.errors.RemoteAuthError` that lists the keys tried by path or agent
and fingerprint, never their material.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from paramiko.auth_strategy import (
    AuthFailure,
    AuthSource,
    AuthStrategy,
    InMemoryPrivateKey,
    OnDiskPrivateKey,
)

from ..errors import RemoteAuthError
from .hostkeys import describe_key
from .target import SshTarget


@dataclass(frozen=True)
class KeyFile:
    """A private key file to offer, and where it was named (for paramiko's records)."""

    path: str
    source: str  # "ssh-config" | "python-config" | "implicit-home"

    @property
    def explicit(self) -> bool:
        return self.source != "implicit-home"


@dataclass
class KeyNotes:
    """Why some keys were not offered (encrypted, unreadable, missing)."""

    skipped: list[str] = field(default_factory=list)


class KeysAndAgent(AuthStrategy):
    """Offer key files and agent keys in ssh(1)'s order; no password source exists."""

    def __init__(
        self, user: str, key_files: Sequence[KeyFile], agent: paramiko.Agent | None
    ) -> None:
        super().__init__(ssh_config=paramiko.SSHConfig())
        self.user = user
        self.key_files = tuple(key_files)
        self.agent = agent
        self.notes = KeyNotes()

    def get_sources(self) -> Iterator[AuthSource]:
        for key_file in self.key_files:
            pkey = self._load(key_file)
            if pkey is not None:
                yield OnDiskPrivateKey(self.user, key_file.source, Path(key_file.path), pkey)
        if self.agent is not None:
            for agent_key in self.agent.get_keys():
                yield InMemoryPrivateKey(self.user, agent_key)

    def _load(self, key_file: KeyFile) -> paramiko.PKey | None:
        path = key_file.path
        try:
            return paramiko.PKey.from_path(path)
        except FileNotFoundError:
            if key_file.explicit:
                self.notes.skipped.append(f"{path}: no such file")
        except (paramiko.PasswordRequiredException, TypeError):
            # cryptography raises TypeError for an encrypted OpenSSH key without a password
            self.notes.skipped.append(
                f"{path}: encrypted; mlsub never asks for a passphrase: load it into "
                f"ssh-agent (`ssh-add {path}`)"
            )
        except (OSError, paramiko.SSHException, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
            self.notes.skipped.append(f"{path}: cannot be used as a private key ({reason})")
        return None


def key_files_for(
    target: SshTarget, extra: Sequence[str], default_keys: Sequence[str], look_for_keys: bool
) -> list[KeyFile]:
    """The key files to offer: ``extra`` (given by the caller), the target's IdentityFile
    entries, then the default keys when none is configured and ``look_for_keys``."""
    files = [KeyFile(p, "python-config") for p in extra]
    files += [KeyFile(p, "ssh-config") for p in target.identity_files]
    if look_for_keys and not files:
        files += [KeyFile(p, "implicit-home") for p in default_keys]
    unique = {f.path: f for f in reversed(files)}  # keep the first of duplicates
    return [f for f in files if unique[f.path] is f]


def auth_failed(
    target: SshTarget, failure: paramiko.AuthenticationException, notes: KeyNotes
) -> RemoteAuthError:
    """The error for a failed authentication: what was tried, what was skipped, and why."""
    tried = _tried(failure)
    skipped = "; ".join(notes.skipped)
    if tried:
        what = "the server accepted none of the keys offered: " + "; ".join(tried)
    else:
        what = (
            "there was no usable key to offer (no IdentityFile, no ssh-agent key, no ~/.ssh/id_*)"
        )
    if skipped:
        what += f" (not offered: {skipped})"
    return RemoteAuthError(
        f"SSH authentication as {target.user} on {target.display} failed: {what}",
        hint="mlsub logs in with SSH keys and ssh-agent only, never with a password: add your "
        f"public key to ~{target.user}/.ssh/authorized_keys on {target.hostname} "
        f"(e.g. `{target.ssh_command.replace('ssh', 'ssh-copy-id', 1)}`), set "
        "IdentityFile for the host in ~/.ssh/config, or load the key with `ssh-add`",
        context={"remote": target.display, "user": target.user, "keys_tried": len(tried)},
    )


def _tried(failure: paramiko.AuthenticationException) -> list[str]:
    if not isinstance(failure, AuthFailure):
        return []
    tried = []
    for source, result in failure.result:
        if isinstance(source, OnDiskPrivateKey):
            name = f"{source.path} ({describe_key(source.pkey)})"
        elif isinstance(source, InMemoryPrivateKey):
            name = f"agent key {describe_key(source.pkey)}"
        else:
            name = type(source).__name__
        if isinstance(result, Exception) and not isinstance(
            result, paramiko.AuthenticationException
        ):
            name += f" [the connection failed: {type(result).__name__}]"
        tried.append(name)
    return tried
