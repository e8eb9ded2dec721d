"""A remote session: the one SSH connection an ``mlsub --remote`` command uses, with its
command runner (for :class:`~slurm_mlsched.slurm.runner.SlurmCommands`) and the
per-decision staging directory on the login node.

A submission stages the training script and the rendered sbatch script into
``~/.mlsub/decisions/<decision id>/`` on the remote side (created with mode 0700), then
runs ``sbatch`` there through :attr:`RemoteSession.runner`.
"""

from __future__ import annotations

import posixpath
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from ..errors import InputError, RemoteStagingError
from .ssh import DEFAULT_CONNECT_TIMEOUT_S, SshRunner, connect
from .target import SshTarget

#: Where decisions are staged, relative to the remote home directory.
DEFAULT_STAGING_ROOT = ".mlsub/decisions"
STAGING_DIR_MODE = 0o700
FILE_MODE = 0o644

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class StagedFiles:
    """Files written for one decision: the directory and each file's absolute path."""

    directory: str
    paths: Mapping[str, str] = field(default_factory=dict)


class RemoteSession:
    """One SSH connection for a whole command: :attr:`runner` runs the Slurm commands,
    :meth:`upload` and :meth:`stage` write files. Close it (or use ``with``) at the end."""

    def __init__(self, runner: SshRunner, *, staging_root: str = DEFAULT_STAGING_ROOT) -> None:
        self.runner = runner
        self.staging_root = staging_root

    @property
    def target(self) -> SshTarget:
        return self.runner.target

    def upload(self, source: Path | bytes, remote_path: str, mode: int = FILE_MODE) -> str:
        """Write a file over SFTP (see :meth:`SshRunner.upload`); return its absolute path."""
        return self.runner.upload(source, remote_path, mode)

    def staging_dir(self, decision_id: str | int) -> str:
        """The absolute remote directory of one decision (not created here)."""
        name = _checked_name(str(decision_id), "decision id")
        return self.runner.absolute(posixpath.join(self.staging_root, name))

    def stage(
        self,
        decision_id: str | int,
        files: Mapping[str, Path | bytes],
        *,
        executable: Sequence[str] = (),
    ) -> StagedFiles:
        """Create the decision's directory and upload ``files`` (name → local path or
        bytes) into it; names in ``executable`` get mode 0755, the others 0644."""
        for name in files:
            _checked_name(name, "file name")
        directory = self.runner.mkdir_p(self.staging_dir(decision_id), STAGING_DIR_MODE)
        self._check_private(self.runner.absolute(self.staging_root))
        self._check_private(directory)
        paths = {
            name: self.upload(
                source,
                posixpath.join(directory, name),
                0o755 if name in executable else FILE_MODE,
            )
            for name, source in files.items()
        }
        return StagedFiles(directory, paths)

    def _check_private(self, directory: str) -> None:
        """Refuse a staging directory another user could write into (as OpenSSH refuses
        such a ``~/.ssh``): it must be a real directory, owned by the remote user (the
        owner of the remote home), and writable by nobody else; otherwise the job's
        script could be swapped between upload and sbatch."""
        uid, mode = self.runner.owner_and_mode(directory)
        home_uid, _ = self.runner.owner_and_mode(self.runner.home())
        problem = ""
        if not stat.S_ISDIR(mode):
            problem = "is not a directory (a symbolic link?)"
        elif uid != home_uid:
            problem = f"is owned by uid {uid}, not by you (uid {home_uid})"
        elif mode & 0o022:
            problem = f"is writable by others (mode {stat.S_IMODE(mode):04o})"
        if problem:
            raise RemoteStagingError(
                f"the staging directory {directory} on {self.target.display} {problem}; "
                "nothing was uploaded",
                hint=f"fix it on the login node (chmod 700 {directory}), or choose another "
                "remote_dir / MLSUB_REMOTE_DIR",
                context={"directory": directory, "remote": self.target.display},
            )

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> RemoteSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _checked_name(name: str, what: str) -> str:
    if not _SAFE_NAME.match(name):
        raise InputError(
            f"{what} {name!r} cannot name a remote file: use letters, digits, '.', '_', '-' "
            "(no '/', not starting with '.' or '-')",
            context={what: name},
        )
    return name


def open_session(
    target: str,
    *,
    staging_root: str = DEFAULT_STAGING_ROOT,
    known_hosts: Sequence[str | Path] | None = None,
    ssh_config: Path | None = None,
    identity_files: Sequence[str | Path] = (),
    allow_agent: bool = True,
    look_for_keys: bool = True,
    timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> RemoteSession:
    """Connect (:func:`~slurm_mlsched.remote.ssh.connect`, same arguments) and return the
    session; ``staging_root`` is relative to the remote home unless absolute."""
    runner = connect(
        target,
        known_hosts=known_hosts,
        ssh_config=ssh_config,
        identity_files=identity_files,
        allow_agent=allow_agent,
        look_for_keys=look_for_keys,
        timeout=timeout,
        env=env,
    )
    return RemoteSession(runner, staging_root=staging_root)
