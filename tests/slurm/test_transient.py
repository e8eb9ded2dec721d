"""Transient Slurm failures in long polls (slurm/transient.py): ``submit --wait``'s
``wait_for`` and ``replay --on-slurm``'s ``wait_array`` read again after a socket timeout
under load, and stop on any other failure or on too many in a row."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from slurm_mlsched.errors import SlurmError, SlurmOutputError, SlurmUnreachableError
from slurm_mlsched.services.reconcile import wait_for
from slurm_mlsched.services.replay.array import wait_array
from slurm_mlsched.slurm.runner import LocalRunner
from slurm_mlsched.slurm.transient import MAX_CONSECUTIVE, Blips, is_transient
from slurm_mlsched.storage import DecisionState

S = DecisionState
SOCKET = SlurmError(
    "`squeue -h -j 7` failed with exit status 1; it said:\n  squeue: error: "
    "slurm_receive_msg: Socket timed out on send/recv operation"
)


def _stopped_at_timeout() -> SlurmError:
    """What the runner raises when it stops a command at its timeout."""
    try:
        LocalRunner().run(["sleep", "5"], 0.1)
    except SlurmError as err:
        return err
    raise AssertionError("sleep 5 finished within 0.1 s")


STOPPED_AT_TIMEOUT = _stopped_at_timeout()
REFUSED = SlurmError("`squeue -h -j x` failed with exit status 1; it said:\n  Invalid job id")


@pytest.mark.parametrize(
    ("err", "transient"),
    [
        (SOCKET, True),
        (SlurmError("sacct: error: slurm_persist_conn_open_without_init: failed"), True),
        (SlurmError("squeue: error: Unable to contact slurm controller (connect failure)"), True),
        (STOPPED_AT_TIMEOUT, True),
        (SlurmUnreachableError("the controller does not answer"), True),
        (REFUSED, False),
        (SlurmError("cannot run `squeue`: command not found"), False),
        (SlurmOutputError("squeue printed socket timed out garbage"), False),
    ],
)
def test_which_failures_are_transient(err: SlurmError, transient: bool) -> None:
    assert is_transient(err) is transient


def answers(*items: object) -> Callable[[], object]:
    """A read that raises or returns ``items`` in turn."""
    it: Iterator[object] = iter(items)

    def read() -> object:
        item = next(it)
        if isinstance(item, BaseException):
            raise item
        return item

    return read


def test_wait_for_reads_again_after_a_socket_timeout_and_says_so() -> None:
    told: list[int] = []
    sleeps: list[float] = []
    poll = answers(S.RUNNING, SOCKET, SOCKET, S.RUNNING, S.COMPLETED)
    final = wait_for(
        1, poll=poll, sleep=sleeps.append, blips=Blips(notify=lambda e, n: told.append(n))
    )  # type: ignore[arg-type]
    assert final == S.COMPLETED and told == [1, 2] and len(sleeps) == 4


def test_wait_for_stops_on_a_failure_that_is_not_transient() -> None:
    with pytest.raises(SlurmError) as caught:
        wait_for(1, poll=answers(S.RUNNING, REFUSED), sleep=lambda s: None)  # type: ignore[arg-type]
    assert caught.value is REFUSED


def test_too_many_transient_failures_in_a_row_end_the_wait() -> None:
    poll = answers(*([SOCKET] * MAX_CONSECUTIVE), S.COMPLETED)
    with pytest.raises(SlurmError) as caught:
        wait_for(1, poll=poll, sleep=lambda s: None)  # type: ignore[arg-type]
    assert caught.value is SOCKET
    # a success in between starts the count again
    again = answers(*([SOCKET] * (MAX_CONSECUTIVE - 1)), S.RUNNING, SOCKET, S.COMPLETED)
    assert wait_for(1, poll=again, sleep=lambda s: None) == S.COMPLETED  # type: ignore[arg-type]


def test_wait_array_reads_again_after_a_socket_timeout() -> None:
    seen: list[tuple[int, int, int, int]] = []
    read = answers({0: "RUNNING", 1: "PENDING"}, SOCKET, {0: "COMPLETED", 1: "COMPLETED"})
    states = wait_array(
        2,
        read,
        lambda s: None,
        lambda *a: seen.append(a),  # type: ignore[arg-type]
    )
    assert states == {0: "COMPLETED", 1: "COMPLETED"}
    assert seen == [(0, 2, 1, 1), (2, 2, 0, 0)]  # the failed read reported nothing
    with pytest.raises(SlurmError):
        wait_array(2, answers(REFUSED), lambda s: None)  # type: ignore[arg-type]
