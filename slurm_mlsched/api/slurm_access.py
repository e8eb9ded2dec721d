"""Where the Slurm commands run: on this machine, or on a login node over SSH.

:func:`slurm_access` is the one place the command runner is chosen. With a ``remote``
target (``--remote`` > ``MLSUB_REMOTE`` > the config files' ``remote``) every Slurm
command of the mlsub command runs on that login node through one
:class:`~slurm_mlsched.remote.SshRunner`: the connection is opened first, so that a
connection, host key or login failure (exit 8) comes before anything is planned or
recorded, and it is closed when the command ends. Without one, a
:class:`~slurm_mlsched.slurm.runner.LocalRunner` runs them here. The decision store stays
local either way.

The node state source is chosen here too (:func:`node_state_source`): pyslurm when it
matches the cluster's Slurm, else the Slurm commands; over SSH always the commands
(pyslurm would talk to this machine's Slurm). ``MLSUB_SLURM_SOURCE`` overrides it: ``cli``
(the Slurm commands, JSON where the version has it), ``json`` or ``text``.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import DEFAULT_REMOTE_DIR
from ..errors import InputError
from ..slurm.jobs import JobStatusReader
from ..slurm.nodes import Mode, NodeStateSource, PyslurmSource, SlurmCliSource, select_source
from ..slurm.runner import LocalRunner, SlurmCommands

if TYPE_CHECKING:  # paramiko is imported only when a remote target is used
    from ..remote.session import RemoteSession
    from ..services.live_queue import Submitter

SOURCE_ENV = "MLSUB_SLURM_SOURCE"

_CLI_MODES: dict[str, Mode] = {"cli": "auto", "json": "json", "text": "text"}


@dataclass(frozen=True)
class SlurmAccess:
    """The Slurm funnel of one mlsub command, and the SSH session under it (if remote)."""

    slurm: SlurmCommands
    session: RemoteSession | None = None
    target: str = ""
    """The remote target as the user gave it (empty: this machine)."""

    @functools.cached_property
    def _source(self) -> NodeStateSource:
        return node_state_source(self.slurm, remote=self.session is not None)

    def node_state_source(self) -> NodeStateSource:
        """The node state source, chosen once per command."""
        return self._source

    def job_status_reader(self) -> JobStatusReader:
        """Job states from the same source as the node state: the queue through pyslurm
        when that source is pyslurm, else ``squeue``; accounting always through sacct."""
        source = self._source
        return JobStatusReader(
            self.slurm, source.module if isinstance(source, PyslurmSource) else None
        )

    def submitter(self, cluster_name: str) -> Submitter:
        """sbatch here with the script on stdin, or the remote submitter that stages the
        decision's files on the login node first."""
        if self.session is None:
            from ..services.submit import SbatchSubmitter

            return SbatchSubmitter(self.slurm)
        from ..remote.submitter import RemoteSubmitter

        return RemoteSubmitter(self.session, self.slurm, cluster_name=cluster_name)

    @property
    def reconcile_command(self) -> str:
        """How the user runs ``mlsub reconcile`` against the same Slurm."""
        if not self.target:
            return "mlsub reconcile"
        return f"mlsub reconcile --remote {shlex.quote(self.target)}"


@contextmanager
def slurm_access(remote: str, *, remote_dir: str = DEFAULT_REMOTE_DIR) -> Iterator[SlurmAccess]:
    """The runner for ``remote`` (empty: this machine), the controller already pinged; an
    SSH connection is open for the ``with`` block only. ``remote_dir`` is where remote
    submissions stage their files."""
    if not remote:
        slurm = SlurmCommands(LocalRunner())
        # the controller first: every command here needs it, and an unresponsive one is
        # reported within the ping's bound, before a store is opened or a planner imported
        slurm.ensure_reachable()
        yield SlurmAccess(slurm)
        return
    from ..remote.session import open_session

    with open_session(remote, staging_root=remote_dir) as session:
        slurm = SlurmCommands(session.runner)
        slurm.ensure_reachable()
        yield SlurmAccess(slurm, session, remote)


def node_state_source(
    slurm: SlurmCommands | None = None, *, remote: bool = False
) -> NodeStateSource:
    """The one place the live node state source is chosen (module docstring)."""
    slurm = slurm or SlurmCommands(LocalRunner())
    forced = os.environ.get(SOURCE_ENV, "").strip().lower()
    if forced in _CLI_MODES:
        return SlurmCliSource(slurm, mode=_CLI_MODES[forced], reason=f"{SOURCE_ENV}={forced}")
    if forced not in ("", "auto"):
        raise InputError(
            f"environment variable {SOURCE_ENV} must be auto, cli, json or text, got {forced!r}",
            hint=f"unset {SOURCE_ENV} to pick the source automatically",
            context={"variable": SOURCE_ENV, "value": forced},
        )
    if remote:
        return SlurmCliSource(slurm, reason="over SSH: the Slurm commands on the login node")
    return select_source(slurm).source
