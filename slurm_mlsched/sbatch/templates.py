"""Where the sbatch templates are, and loading them (the only file access of ``sbatch``).

``sbatch_templates/`` sits at the top of the source checkout; the wheel ships it as
``slurm_mlsched/_data/sbatch_templates`` (``pyproject.toml``: hatch ``force-include``).
Templates load with ``StrictUndefined``: a variable the renderer forgot is an error, never
an empty string.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import jinja2

from ..errors import MlschedError

TEMPLATE = "hetjob.sh.j2"
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def template_dir() -> Path:
    """``sbatch_templates/``: inside the installed wheel, else the source checkout's."""
    for candidate in (
        _PACKAGE_ROOT / "_data" / "sbatch_templates",
        _PACKAGE_ROOT.parent / "sbatch_templates",
    ):
        if (candidate / TEMPLATE).is_file():
            return candidate
    raise MlschedError(
        f"the sbatch template {TEMPLATE} is missing from this installation",
        hint="reinstall mlsub; the wheel ships it in slurm_mlsched/_data/sbatch_templates",
        code="template-missing",
    )


@cache
def load_template(name: str, finalize: Callable[[object], str]) -> jinja2.Template:
    """Template ``name``; ``finalize`` is applied to every ``{{ value }}`` it prints."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=finalize,
    )
    return env.get_template(name)
