"""The submitting process's identity and its liveness check (services/process_id.py)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from slurm_mlsched.services.process_id import ProcessId, alive, this_process


def test_the_identity_round_trips_through_its_text() -> None:
    me = this_process()
    assert ProcessId.parse(str(me)) == me
    remote = this_process(remote=True)
    assert str(remote).endswith(" via=ssh") and ProcessId.parse(str(remote)) == remote
    for junk in (None, "", "pid=", "pid=12 start=x", "hello"):
        assert ProcessId.parse(junk) is None


def test_this_process_is_alive_here_and_unknown_elsewhere() -> None:
    me = this_process()
    assert alive(me, same_host=True) is True
    assert alive(me, same_host=False) is None


def test_an_exited_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)
    assert alive(ProcessId(child.pid), same_host=True) is False


@pytest.mark.skipif(this_process().start is None, reason="no /proc: start times not recorded")
def test_a_reused_pid_or_a_reboot_reads_as_gone() -> None:
    me = this_process()
    assert me.start is not None
    assert alive(replace(me, start=me.start + 1), same_host=True) is False  # a later process
    assert alive(replace(me, boot="00000000-0000-0000-0000-000000000000"), same_host=True) is False
