"""A queued job's kept environment (``sbatch --export-file`` of its re-submission): the
file ``mlsub submit`` writes (``submit.keep_environment``), checked before root reads or
removes it, and removed once no re-plan needs it (started, or the decision ended)."""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
from pathlib import Path

from ..sbatch.launch import Launch


def owned_file(path: str | None, owner: str) -> Path | None:
    """``path`` if it is a regular file (not a link) of ``owner``'s, else None: the kept
    environment is read (its ``SBATCH_*``) and removed by root only under that check (the
    path comes from the store, which a user may edit)."""
    if path is None:
        return None
    try:
        info = os.lstat(path)
        uid = pwd.getpwnam(owner).pw_uid
    except (OSError, KeyError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
        return None
    return Path(path)


def drop_kept_environment(launch: Launch | None, owner: str) -> None:
    """Remove the kept environment (it may hold secrets; no re-plan needs it any more)."""
    path = owned_file(None if launch is None else launch.env_file, owner)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()
