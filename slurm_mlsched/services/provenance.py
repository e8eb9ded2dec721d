"""Who and what took a decision: package versions, user, host (read once, by the CLI)."""

from __future__ import annotations

import platform
from importlib import metadata

#: Distributions whose versions are stored with every decision.
TRACKED = ("slurm-mlsched", "numpy", "scipy", "highspy", "pulp", "sqlalchemy", "alembic")


def package_versions() -> tuple[tuple[str, str], ...]:
    out = [("python", platform.python_version())]
    for name in TRACKED:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            out.append((name, "not installed"))
    return tuple(out)
