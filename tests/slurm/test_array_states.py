"""A job array's task states (slurm/arrays.py) from real 22.05 output, and the reader's
fall-backs: a job squeue no longer knows, tasks only sacct lists, no accounting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from slurm_mlsched.errors import SlurmError
from slurm_mlsched.slurm.arrays import ArrayStatusReader, parse_array_states
from slurm_mlsched.slurm.runner import CommandResult, SlurmCommands

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
ARRAY = FIXTURES / "22.05" / "array"
JOB = (ARRAY / "job_id.txt").read_text().strip()
UP = (FIXTURES / "22.05" / "idle" / "ping.txt").read_text()


def read(name: str) -> str:
    return (ARRAY / name).read_text()


def test_running_and_pending_tasks_one_per_line() -> None:
    got = parse_array_states(read("squeue-running.txt"), JOB)
    assert got == {0: "RUNNING", 1: "RUNNING", 2: "PENDING", 3: "PENDING", 4: "PENDING",
                   5: "PENDING"}  # fmt: skip


def test_folded_pending_tasks_with_a_throttle_are_expanded() -> None:
    got = parse_array_states(read("squeue-folded.txt"), JOB)
    assert got == parse_array_states(read("squeue-running.txt"), JOB)


def test_finished_tasks_from_squeue_and_sacct_agree() -> None:
    queue = parse_array_states(read("squeue-finished.txt"), JOB)
    accounting = parse_array_states(read("sacct-finished.txt"), JOB)
    assert queue == accounting == {0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED",
                                   3: "FAILED", 4: "COMPLETED"}  # fmt: skip
    assert 5 not in queue  # cancelled while pending: listed nowhere


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("77_3|CANCELLED by 0\n", {3: "CANCELLED"}),
        ("77_[0,2-3]|PENDING\n", {0: "PENDING", 2: "PENDING", 3: "PENDING"}),
        ("78_1|RUNNING\n77|COMPLETED\n\n", {}),  # other jobs, a plain job, blank lines
        ("77_1|\n", {1: "UNKNOWN"}),
    ],
)
def test_parser_edge_cases(text: str, expected: dict[int, str]) -> None:
    assert parse_array_states(text, "77") == expected


class Slurm:
    """A fake runner: answers squeue and sacct by their first word."""

    def __init__(self, squeue: CommandResult | str, sacct: CommandResult | str) -> None:
        self.answers = {"squeue": squeue, "sacct": sacct}
        self.calls: list[str] = []

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        self.calls.append(argv[0])
        if argv[0] == "scontrol":
            return CommandResult(tuple(argv), 0, UP, "")
        answer = self.answers[argv[0]]
        if isinstance(answer, CommandResult):
            return answer
        return CommandResult(tuple(argv), 0, answer, "")


def failed(stderr: str) -> CommandResult:
    return CommandResult(("x",), 1, "", stderr)


def test_sacct_is_asked_only_for_tasks_squeue_no_longer_lists() -> None:
    fake = Slurm(read("squeue-finished.txt"), read("sacct-finished.txt"))
    assert ArrayStatusReader(SlurmCommands(fake)).states(JOB, 5) == parse_array_states(
        read("sacct-finished.txt"), JOB
    )
    assert fake.calls == ["scontrol", "squeue"]
    fake = Slurm("", read("sacct-finished.txt"))
    assert ArrayStatusReader(SlurmCommands(fake)).states(JOB, 6)[3] == "FAILED"
    assert fake.calls == ["scontrol", "squeue", "sacct"]


def test_a_job_squeue_forgot_is_read_from_sacct() -> None:
    fake = Slurm(failed(read("squeue-unknown.stderr")), read("sacct-finished.txt"))
    assert len(ArrayStatusReader(SlurmCommands(fake)).states(JOB, 6)) == 5


def test_no_accounting_means_only_what_squeue_says() -> None:
    fake = Slurm(
        read("squeue-running.txt"), failed("sacct: error: Problem talking to the database")
    )
    states = ArrayStatusReader(SlurmCommands(fake)).states(JOB, 8)
    assert set(states) == {0, 1, 2, 3, 4, 5}


def test_other_squeue_failures_are_errors() -> None:
    fake = Slurm(failed("squeue: error: slurm_load_jobs: Socket timed out"), "")
    with pytest.raises(SlurmError, match="Socket timed out"):
        ArrayStatusReader(SlurmCommands(fake)).states(JOB, 2)
