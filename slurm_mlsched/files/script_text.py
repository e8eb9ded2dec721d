"""The text of a user's job script, read once for its header lines (``# mlsub:`` and
``#SBATCH``): the one place those readers touch the file."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError


def read_script_text(path: str | Path) -> str:
    """The script's text (undecodable bytes replaced); an unreadable file is an input error
    naming it."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(
            f"cannot read job script {path}: {exc.strerror or exc}",
            hint="check the SCRIPT path",
            context={"file": str(path)},
        ) from None
