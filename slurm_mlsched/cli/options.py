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


DB_URL_HELP = "Decision store URL (default: config, MLSUB_DB_URL, SQLite)."

#: The decision store of the commands that read or write it (one declaration, one help).
DbUrl = Annotated[str | None, typer.Option("--db-url", help=DB_URL_HELP)]

#: ``--json`` of every command that reports.
AsJson = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
