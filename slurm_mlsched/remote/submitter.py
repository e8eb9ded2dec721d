"""Submission over SSH: the :class:`~slurm_mlsched.services.submit.Submitter` of
``mlsub --remote``.

For each decision, :class:`RemoteSubmitter`

1. says where the training script will be on the cluster: in the decision's staging
   directory, ``<staging root>/<cluster>-<id>-<token>/<script name>`` (``<id>-<token>``
   is the decision tag's, so two stores that use the same cluster name and the same
   account never share a directory); a dry run shows ``<cluster>-dry-run``;
2. uploads the training script (and no other file of the user's) and the rendered sbatch
   script (:data:`SBATCH_SCRIPT`) there over SFTP, each file whole or absent;
3. runs ``env TZ=UTC sbatch --parsable --chdir=DIR DIR/decision.sbatch`` on the login
   node through the Slurm funnel, so the job (and a relative ``--output``) works in that
   directory.

The directory is never removed by mlsub: it holds the job's output.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..files.job_script import JobScript
from ..sbatch.tag import DecisionTag
from ..slurm.parse import parse_sbatch_parsable
from ..slurm.runner import SBATCH_TIMEOUT_S, SlurmCommands
from .session import StagedFiles

#: The name of the rendered sbatch script in a staging directory.
SBATCH_SCRIPT = "decision.sbatch"
#: The staging directory's name for a dry run (nothing is written there).
DRY_RUN = "dry-run"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class Stager(Protocol):
    """What the submitter needs of a :class:`~slurm_mlsched.remote.session.RemoteSession`."""

    def staging_dir(self, decision_id: str | int) -> str: ...

    def stage(
        self,
        decision_id: str | int,
        files: Mapping[str, Path | bytes],
        *,
        executable: Sequence[str] = (),
    ) -> StagedFiles: ...


class RemoteSubmitter:
    """Stages a decision's files on the login node, then runs sbatch there (module
    docstring). ``slurm`` runs over the same connection as ``stager``.

    Construction resolves the staging root (one SFTP request), so that a login node
    without SFTP, or a home directory that cannot be found, fails before anything is
    planned or recorded, and the paths are known without I/O under the planning lock."""

    def __init__(
        self,
        stager: Stager,
        slurm: SlurmCommands,
        *,
        cluster_name: str,
        timeout: float = SBATCH_TIMEOUT_S,
    ) -> None:
        self.stager = stager
        self.slurm = slurm
        self.prefix = safe_name(cluster_name)
        self.timeout = timeout
        self.stager.staging_dir(self.directory_name(None))

    def directory_name(self, tag: DecisionTag | None) -> str:
        """The decision's staging directory name: ``<cluster>-<id>-<token>``."""
        if tag is None:
            return f"{self.prefix}-{DRY_RUN}"
        return f"{self.prefix}-{tag.decision_id}-{tag.token}"

    def program_path(self, job: JobScript, tag: DecisionTag | None) -> str:
        directory = self.stager.staging_dir(self.directory_name(tag))
        return posixpath.join(directory, program_name(job))

    def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
        name = program_name(job)
        staged = self.stager.stage(
            self.directory_name(tag),
            {name: job.path, SBATCH_SCRIPT: script.encode("utf-8")},
            executable=(name,) if job.executable else (),
        )
        argv = [
            "env", "TZ=UTC", "sbatch", "--parsable", f"--chdir={staged.directory}",
            staged.paths[SBATCH_SCRIPT],
        ]  # fmt: skip
        out = self.slurm.run(argv, timeout=self.timeout)
        return str(parse_sbatch_parsable(out).job_id)


def safe_name(text: str) -> str:
    """``text`` as a remote file name: characters other than letters, digits, ``.``, ``_``
    and ``-`` become ``_``; one starting with ``.`` or ``-`` gets a ``_`` in front."""
    name = _UNSAFE.sub("_", text)
    return f"_{name}" if name[:1] in (".", "-", "") else name


def program_name(job: JobScript) -> str:
    """The training script's name in the staging directory: its own name made safe
    (:func:`safe_name`), never that of the sbatch script."""
    name = safe_name(job.path.name)
    return f"program-{name}" if name == SBATCH_SCRIPT else name
