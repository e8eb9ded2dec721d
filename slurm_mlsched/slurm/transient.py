"""Which Slurm failures a poll may try again, and how many in a row it tolerates.

A command that waits on Slurm for a long time (``mlsub submit --wait``, ``mlsub replay
--on-slurm``) reads the queue every few seconds. Under load a single read can fail for a
moment — ``squeue: error: slurm_receive_msg: Socket timed out on send/recv operation``,
``Unable to contact slurm controller (connect failure)``, a command stopped at its
timeout — while the job it waits for runs on unharmed. Such a failure is *transient*
(:func:`is_transient`): the poll counts it and reads again at its next turn
(:class:`Blips`); only :data:`MAX_CONSECUTIVE` transient failures in a row, or any other
failure (a refused option, output mlsub cannot read), end the wait with the error.

Pure: no I/O. The integration tests' poll (tests/integration/conftest.py) uses the same
rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..errors import SlurmError, SlurmOutputError, SlurmUnreachableError

#: Words of Slurm's messages that mark a failure of the moment: the controller or slurmdbd
#: busy, restarting or briefly unreachable.
TRANSIENT_MARKERS = (
    "socket timed out",
    "unable to contact slurm controller",
    "zero bytes were transmitted or received",
    "connection refused",
    "connection reset",
    "connection timed out",
    "resource temporarily unavailable",
    "slurm_persist_conn",
    "communication connection failure",
    "slurmctld is not responding",
)
#: Transient failures in a row a poll tolerates (at its 2 s pace: about a minute).
MAX_CONSECUTIVE = 30

T = TypeVar("T")


def is_transient(err: SlurmError) -> bool:
    """Whether ``err`` is a failure of the moment that the same read may not repeat."""
    if isinstance(err, SlurmOutputError):
        return False  # the command answered; its answer will not read better next time
    if isinstance(err, SlurmUnreachableError) or "timeout_s" in err.context:
        return True  # the controller did not answer, or mlsub stopped the command at its timeout
    text = err.message.lower()
    return any(marker in text for marker in TRANSIENT_MARKERS)


@dataclass
class Blips:
    """A poll's run of transient failures: :meth:`attempt` returns ``read()``'s value, or
    ``None`` after a transient failure (the poll reads again at its next turn); it
    re-raises any other failure, and a transient one once ``limit`` came in a row.
    ``notify`` is told of each tolerated failure (e.g. to print a note)."""

    limit: int = MAX_CONSECUTIVE
    notify: Callable[[SlurmError, int], None] | None = None
    in_a_row: int = 0
    last: SlurmError | None = None

    def attempt(self, read: Callable[[], T]) -> T | None:
        try:
            value = read()
        except SlurmError as err:
            if not is_transient(err) or self.in_a_row + 1 >= self.limit:
                raise
            self.in_a_row += 1
            self.last = err
            if self.notify is not None:
                self.notify(err, self.in_a_row)
            return None
        self.in_a_row, self.last = 0, None
        return value
