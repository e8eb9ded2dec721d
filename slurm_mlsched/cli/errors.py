"""The one place where failures become messages and exit codes (``errors.EXIT_CODES``).

* :class:`~slurm_mlsched.errors.MlschedError`: ``error[code]: message`` and ``hint: …``
  on stderr, exit with the error's ``exit_code``;
* anything else is a bug: a one-line message on stderr and exit 1 (no traceback, no local
  variables; set ``MLSUB_DEBUG=1`` to let the traceback through).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from ..errors import MlschedError
from . import output

INTERNAL_ERROR_EXIT = 1


@contextmanager
def handle_errors(*, debug: bool = False) -> Iterator[None]:
    try:
        yield
    except (typer.Exit, typer.Abort, typer.BadParameter):
        raise
    except MlschedError as err:
        output.show_error(err)
        raise typer.Exit(err.exit_code) from None
    except Exception as exc:
        if debug:
            raise
        output.show_internal_error(exc)
        raise typer.Exit(INTERNAL_ERROR_EXIT) from None
