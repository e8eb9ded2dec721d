"""What every command shares: the root context object and the one way commands are declared.

* :class:`AppContext` is ``ctx.obj`` of the root command (set by ``app.py``'s callback,
  inherited by every command and sub-command): the clock, the debug switch, the
  configuration and identity (:meth:`AppContext.store_context`) and the store opener
  (:meth:`AppContext.opened`). A command reads it with :func:`app_context`.
* :class:`Commands` collects a module's commands; ``app.py`` adds every module's
  collection to the app (:meth:`Commands.add_to`). Each command is wrapped once, by
  :func:`guarded`, in :func:`~.errors.handle_errors` with the context's debug switch: a
  command body holds no error handling of its own.

Light at import (typer and click only): the clock and the store load when a command asks.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from ..errors import InputError
from .errors import handle_errors

if TYPE_CHECKING:
    from ..api import Clock, StoreContext
    from ..config import Config
    from ..storage import SqlDecisionStore

FIXED_NOW_ENV = "MLSUB_FIXED_NOW"
DEBUG_ENV = "MLSUB_DEBUG"

F = TypeVar("F", bound=Callable[..., Any])

#: The Typer context of the command running now (set by :func:`guarded`).
_RUNNING: ContextVar[typer.Context | None] = ContextVar("mlsub_running_command", default=None)
_CONTEXT_PARAMETER = "mlsub_typer_context"


@dataclass
class AppContext:
    """The root context object of one ``mlsub`` run (``ctx.obj``).

    ``env`` is the process environment the run started with:

    * the clock is the wall clock, or a fixed clock at ``MLSUB_FIXED_NOW`` (ISO 8601; for
      tests and reproducible output), read on first use so that a bad value is that
      command's input error (exit 3), not a crash at start-up;
    * ``MLSUB_DEBUG=1`` lets unexpected exceptions through with their traceback.
    """

    env: Mapping[str, str]
    _clock: Clock | None = field(default=None, repr=False)

    @property
    def debug(self) -> bool:
        return self.env.get(DEBUG_ENV, "") not in ("", "0")

    @property
    def clock(self) -> Clock:
        if self._clock is None:
            self._clock = clock_from(self.env)
        return self._clock

    def config(self, **flags: object) -> Config:
        """The configuration alone (site file, user file, environment, these flags): for a
        command that needs no store and no identity (``plan --cluster``)."""
        from ..config import load_config

        return load_config(self.env, flags)

    def store_context(self, **flags: object) -> StoreContext:
        """Configuration (site file, user file, environment, these flags) and identity."""
        from ..api import store_context as context

        return context(flags)

    def opened(
        self, ctx: StoreContext, *, reading: bool = False
    ) -> AbstractContextManager[SqlDecisionStore]:
        """The configured store for a ``with`` block, closed however the block ends
        (``reading``: a read-only command, which creates no store: ``cli/store.opened``)."""
        from ..api import open_store as opened

        return opened(ctx, reading=reading)


def clock_from(env: Mapping[str, str]) -> Clock:
    """The wall clock, or the fixed clock ``MLSUB_FIXED_NOW`` names."""
    from ..api import FixedClock, WallClock

    fixed = env.get(FIXED_NOW_ENV)
    if not fixed:
        return WallClock()
    try:
        return FixedClock.from_iso(fixed)
    except ValueError:
        raise InputError(
            f"environment variable {FIXED_NOW_ENV} is not an ISO 8601 time, got {fixed!r}",
            hint=f"e.g. {FIXED_NOW_ENV}=2026-01-01T00:00:00Z, or unset it",
            context={"variable": FIXED_NOW_ENV, "value": fixed},
        ) from None


def app_context() -> AppContext:
    """The running command's root context object (one is made if the root callback did
    not run, as when a test invokes a sub-app directly)."""
    ctx = _RUNNING.get()
    root = ctx.find_root() if ctx is not None else None
    if root is not None and isinstance(root.obj, AppContext):
        return root.obj
    made = AppContext(dict(os.environ))
    if root is not None:
        root.obj = made
    return made


def guarded(command: F, *, debug: bool | None = None) -> F:
    """``command`` run inside :func:`~.errors.handle_errors` (debug: the context's switch,
    unless given), with its Typer context known to :func:`app_context`.

    Typer reads the command's own signature plus one ``typer.Context`` parameter, which
    it fills and the wrapper takes off before calling the command."""
    own = inspect.signature(command, eval_str=True)
    params = [
        *own.parameters.values(),
        inspect.Parameter(
            _CONTEXT_PARAMETER, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context
        ),
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        running = _RUNNING.set(kwargs.pop(_CONTEXT_PARAMETER, None))
        try:
            with handle_errors(debug=debug if debug is not None else app_context().debug):
                return command(*args, **kwargs)
        finally:
            _RUNNING.reset(running)

    del wrapper.__wrapped__  # Typer reads the signature below
    wrapper.mlsub_guarded = True  # type: ignore[attr-defined]
    wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    wrapper.__annotations__["return"] = own.return_annotation
    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True)
class _Entry:
    command: Callable[..., Any]
    name: str | None
    debug: bool | None
    options: Mapping[str, Any]


def help_text(doc: str | None) -> str | None:
    """A command's docstring as ``--help`` shows it: each paragraph one flowing line, so
    that the terminal wraps it at its width (Typer prints the source's line breaks)."""
    if not doc:
        return None
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


class Commands:
    """A module's commands, declared with :meth:`command` and added to the app by
    ``app.py`` with :meth:`add_to`; with ``group``, they form ``mlsub GROUP ...``."""

    def __init__(self, group: str | None = None, *, help: str | None = None) -> None:
        self.group = group
        self.help = help
        self._entries: list[_Entry] = []

    def command(
        self, name: str | None = None, *, debug: bool | None = None, **options: Any
    ) -> Callable[[F], F]:
        """Declare a command (Typer's ``command`` options pass through); ``debug=True``
        always lets tracebacks through (a command whose log people read)."""

        def declare(fn: F) -> F:
            self._entries.append(_Entry(fn, name, debug, options))
            return fn

        return declare

    def add_to(self, app: typer.Typer) -> None:
        target = app
        if self.group is not None:
            target = typer.Typer(name=self.group, help=self.help, no_args_is_help=True)
        for e in self._entries:
            options = {"help": help_text(e.command.__doc__), **e.options}
            target.command(e.name, **options)(guarded(e.command, debug=e.debug))
        if self.group is not None:
            app.add_typer(target, name=self.group)
