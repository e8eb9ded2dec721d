"""Options several commands declare alike (light: typer only, so that every command module
can use them at import time)."""

from __future__ import annotations

from typing import Annotated

import typer

#: The ``--remote`` option of the commands that talk to Slurm.
RemoteOption = Annotated[
    str | None,
    typer.Option(
        "--remote",
        help="Run the Slurm commands on this login node over SSH: [user@]host[:port] or a "
        "~/.ssh/config Host alias (default: config 'remote', MLSUB_REMOTE).",
        show_default=False,
    ),
]
