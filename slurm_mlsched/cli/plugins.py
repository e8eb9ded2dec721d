"""``mlsub plugins``: the Slurm Lua plugins (docs/admin-plugins.md).

* ``mlsub plugins check [PATH...]``: would slurmctld / sbatch load these files? (default:
  the plugins installed next to ``slurm.conf``). Problems are printed as ``FILE:LINE:
  error: …``; any problem exits with code 3 (``plugin-check-failed``).
* ``mlsub plugins install-files --dest DIR``: copy the shipped plugins into DIR, to edit
  their site tables and check them before installing.

Wiring: the interpreter is ``$MLSUB_LUA`` or ``lua5.1``; it runs through a
:class:`~slurm_mlsched.slurm.runner.LocalRunner`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError, PluginCheckError
from . import output
from .context import Commands

commands = Commands(
    "plugins",
    help="The Slurm plugins that tie plain sbatch use to mlsub (docs/admin-plugins.md).",
)


@commands.command("check")
def check(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Plugin files (job_submit.lua, cli_filter.lua); default: those next to "
            "slurm.conf.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check Lua plugins before slurmctld or sbatch loads them.

    Syntax, loading, the required functions and the site table."""
    from ..plugins import check_plugins, find_lua, installed_plugins
    from ..plugins.files import slurm_conf_dir
    from ..slurm.runner import LocalRunner

    env = dict(os.environ)
    files = list(paths or installed_plugins(env))
    if not files:
        raise InputError(
            f"no plugin to check: {slurm_conf_dir(env)} holds no job_submit.lua or cli_filter.lua",
            hint="give the files to check: mlsub plugins check PATH...",
        )
    report = check_plugins(files, runner=LocalRunner(), lua=find_lua(env))
    output.show_plugin_check(report, as_json=as_json)
    if not report.ok:
        bad = [f.path for f in report.files if not f.ok]
        raise PluginCheckError(
            f"{', '.join(bad)}: not safe to install (see the problems above)",
            hint="fix them and check again; slurmctld does not start with a broken "
            "job_submit.lua, and a broken cli_filter.lua breaks every sbatch and srun",
            context={"files": ",".join(bad)},
        )


@commands.command("install-files")
def install(
    dest: Annotated[
        Path, typer.Option("--dest", help="Directory to copy the plugins into.", show_default=False)
    ],
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Copy the shipped job_submit.lua and cli_filter.lua into DEST (to edit and check)."""
    from ..plugins import install_files

    written = install_files(dest, force=force)
    output.show_installed_plugins([str(p) for p in written])
