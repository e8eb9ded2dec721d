"""``mlsub remote``: the SSH side of remote submission (docs/user-guide.md, "Remote
submission over SSH").

* ``mlsub remote trust TARGET --fingerprint SHA256:…``: add the login node's host key to
  known_hosts only if it has the fingerprint the user checked (:mod:`..remote.trust`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from . import output
from .context import Commands

commands = Commands("remote", help="Remote submission over SSH: trust a login node's host key.")


@commands.command("trust")
def trust(
    target: Annotated[
        str, typer.Argument(help="[user@]host[:port] or a ~/.ssh/config Host alias.")
    ],
    fingerprint: Annotated[
        str,
        typer.Option(
            "--fingerprint",
            help="The SHA256 fingerprint you checked with the cluster's admins "
            "(as mlsub's unknown-host error and ssh-keygen -lf print it).",
        ),
    ],
    known_hosts: Annotated[
        str | None,
        typer.Option(
            "--known-hosts",
            help="The known_hosts file to add it to (default: the host's UserKnownHostsFile "
            "in ~/.ssh/config, else ~/.ssh/known_hosts).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(min=1, max=120, help="Seconds per connection attempt.")
    ] = 15.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Trust a login node's host key after the server proves it holds it.

    The key is added to known_hosts only if the server proves it holds the key with this
    fingerprint. Nothing is written otherwise."""
    from ..remote.ssh import resolve
    from ..remote.trust import trust as trust_host

    resolved = resolve(target)
    if known_hosts:
        from dataclasses import replace
        from pathlib import Path

        path = str(Path(known_hosts).expanduser())
        resolved = replace(resolved, known_hosts_files=(path, *resolved.known_hosts_files))
    done = trust_host(resolved, fingerprint, timeout=timeout)
    output.show_trusted(done, as_json=as_json)
