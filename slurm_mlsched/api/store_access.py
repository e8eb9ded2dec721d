"""Wiring of the decision store: configuration, identity and the store itself.

* configuration: :func:`slurm_mlsched.config.load_config` over ``os.environ`` and the
  command's flags, once per command;
* identity: the effective Unix user (``pwd``, not ``$USER``). Root may act as another
  user with ``MLSUB_AS_USER=name`` (as ``runuser`` would; for tests and support); anyone
  else setting it is refused;
* the store: :func:`opened`, :func:`slurm_mlsched.storage.open_store` at the configured
  URL (default: the SQLite file under the XDG state directory), for a ``with`` block.
"""

from __future__ import annotations

import os
import pwd
import shlex
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import Config, default_db_path, load_config
from ..errors import InputError

if TYPE_CHECKING:  # the store (SQLAlchemy) loads when a command opens it
    from ..services.viewer import Viewer
    from ..storage import SqlDecisionStore

AS_USER_ENV = "MLSUB_AS_USER"


@dataclass(frozen=True)
class StoreContext:
    config: Config
    url: str
    viewer: Viewer
    host: str
    upgrade_command: str


def context(flags: Mapping[str, object] | None = None) -> StoreContext:
    from ..services.viewer import Viewer

    env = dict(os.environ)
    config = load_config(env, flags)
    url = config.db_url or f"sqlite:///{default_db_path(env)}"
    user = _user(env)
    upgrade = "mlsub db upgrade"
    if flags and flags.get("db_url"):
        from ..storage.database import display_url  # loads SQLAlchemy: only for a given URL

        given = str(flags["db_url"])
        shown = display_url(given)
        upgrade += f" --db-url {shlex.quote(shown)}"
        if shown != given:
            upgrade += " (with your password for ***)"
    is_admin = config.is_admin(user)
    if not is_admin and config.slurm_admin_level:
        is_admin = slurm_admin(user, config.slurm_admin_level)
    return StoreContext(config, url, Viewer(user, is_admin), _host(), upgrade)


def slurm_admin(user: str, required: str) -> bool:
    """Whether Slurm's AdminLevel of ``user`` is ``required`` or above (the site's
    ``slurm_admin_level``). When slurmdbd cannot say, the user acts as an ordinary user
    and a warning says why (never an admin by default)."""
    from ..errors import SlurmError
    from ..slurm.admin_level import admin_level, at_least
    from ..slurm.runner import LocalRunner, SlurmCommands

    try:
        return at_least(admin_level(user, SlurmCommands(LocalRunner())), required)
    except SlurmError as err:
        print(
            f"warning: cannot read your Slurm AdminLevel ({err.message}); "
            "acting as an ordinary user",
            file=sys.stderr,
        )
        return False


@contextmanager
def opened(ctx: StoreContext, *, reading: bool = False) -> Iterator[SqlDecisionStore]:
    """The configured store for a ``with`` block, closed however the block ends.

    ``reading``: a command that only reads (history, show, explain, export, report). When
    the store is an SQLite file that does not exist yet, it reads an empty store in memory
    instead of creating the file and its directories (a mistyped ``--db-url`` path leaves
    nothing behind)."""
    from ..storage import open_store

    url = ctx.url
    if reading and _missing_sqlite_file(url):
        url = "sqlite://"  # empty, in memory: nothing to read, nothing created
    store = open_store(
        url,
        grace_s=ctx.config.reservation_grace_s,
        busy_timeout_s=ctx.config.db_busy_timeout_s,
        upgrade_command=ctx.upgrade_command,
    )
    try:
        yield store
    finally:
        store.close()


def _missing_sqlite_file(url: str) -> bool:
    from ..storage.database import is_sqlite, parse_url, sqlite_path

    parsed = parse_url(url)
    path = sqlite_path(parsed) if is_sqlite(parsed) else None
    return path is not None and not path.exists()


def _user(env: Mapping[str, str]) -> str:
    euid = os.geteuid()
    return resolve_user(env, euid=euid, name=pwd.getpwuid(euid).pw_name)


def resolve_user(env: Mapping[str, str], *, euid: int, name: str) -> str:
    """Who runs the command: ``name`` (of the effective uid ``euid``), or the user root
    names in ``MLSUB_AS_USER``; anyone else setting it is refused."""
    as_user = env.get(AS_USER_ENV, "").strip()
    if not as_user:
        return name
    if euid != 0:
        raise InputError(
            f"only root may set {AS_USER_ENV} (you are {name!r})",
            hint=f"unset {AS_USER_ENV}",
            context={"variable": AS_USER_ENV, "value": as_user},
        )
    return as_user


def _host() -> str:
    import socket

    return socket.gethostname()
