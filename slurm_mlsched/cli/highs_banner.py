"""Keep HiGHS's start-up banner off stdout (an adapter: it touches file descriptor 1).

The first ``highspy.Highs()`` of a process (the Python wrapper; PuLP's HiGHS API builds
one for ``exact`` and ``lp-bound``) prints "Running HiGHS …" from C++ straight to file
descriptor 1, before PuLP can set ``output_flag`` off. That would corrupt
``mlsub … --json``. HiGHS prints the banner once per process, so building one wrapper
here with fd 1 pointed at /dev/null uses it up; later solvers stay silent.

This lives in the CLI layer, not in the solver code: the CLI owns stdout, and it calls
this once at start-up, before any solve and before any other thread exists, so the brief
redirection cannot swallow anyone else's output. The pure core stays free of fd I/O.
"""

from __future__ import annotations

import os
import sys
from functools import cache


@cache
def silence_highs_banner() -> None:
    """Build one ``highspy.Highs()`` with fd 1 on /dev/null (once per process; idempotent).

    Best effort: if fd 1 cannot be duplicated (closed, or no /dev/null), do nothing.
    """
    import highspy  # here, not at import: the CLI's start-up stays light

    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        os.close(saved)
        return
    try:
        os.dup2(devnull, 1)
        highspy.Highs()  # type: ignore[no-untyped-call]  # the banner goes to fd 1 here
    finally:
        os.dup2(saved, 1)
        os.close(devnull)
        os.close(saved)
