"""Remote submission over SSH (``mlsub --remote user@login``): an adapter, like ``slurm/``.

* :func:`connect` → :class:`SshRunner`, a
  :class:`~slurm_mlsched.slurm.runner.CommandRunner` that runs argument lists on the login
  node (quoted for its shell, with timeouts) over one paramiko connection, plus SFTP
  uploads;
* :func:`open_session` → :class:`RemoteSession`: that runner and the per-decision staging
  directory (``~/.mlsub/decisions/<name>/``) for the training and sbatch scripts;
* :class:`RemoteSubmitter`: the submitter of ``mlsub --remote`` (stage, then ``sbatch``
  there);
* :mod:`.target`: ``[user@]host[:port]`` and ``~/.ssh/config`` (pure);
  :mod:`.hostkeys`: known_hosts checks; :mod:`.auth`: keys and ssh-agent, never passwords.

Errors are the ``Remote*`` and ``HostKey*`` classes of :mod:`slurm_mlsched.errors`
(exit code 8); a command that ran remotely and failed is a ``SlurmError`` (exit 6).

The names below are imported on first use: importing paramiko takes about 0.3 s, which
commands that never connect (and ``config``, which only parses the target) should not pay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .session import DEFAULT_STAGING_ROOT, RemoteSession, StagedFiles, open_session
    from .ssh import DEFAULT_CONNECT_TIMEOUT_S, SshRunner, connect, remote_command
    from .submitter import RemoteSubmitter
    from .target import SshTarget, TargetSpec, parse_target, resolve_target

_HOMES = {
    "DEFAULT_STAGING_ROOT": "session",
    "RemoteSession": "session",
    "StagedFiles": "session",
    "open_session": "session",
    "RemoteSubmitter": "submitter",
    "DEFAULT_CONNECT_TIMEOUT_S": "ssh",
    "SshRunner": "ssh",
    "connect": "ssh",
    "remote_command": "ssh",
    "SshTarget": "target",
    "TargetSpec": "target",
    "parse_target": "target",
    "resolve_target": "target",
}

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_STAGING_ROOT",
    "RemoteSession",
    "RemoteSubmitter",
    "SshRunner",
    "SshTarget",
    "StagedFiles",
    "TargetSpec",
    "connect",
    "open_session",
    "parse_target",
    "remote_command",
    "resolve_target",
]


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
