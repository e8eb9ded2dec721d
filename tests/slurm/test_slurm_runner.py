"""The command runner and the one funnel for Slurm failures.

``LocalRunner`` is tested on real processes (``sh``, ``sleep``); ``SlurmCommands`` on a
fake runner that answers by argument list, with Slurm's real output where it matters.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from slurm_mlsched.errors import SlurmError, SlurmUnreachableError
from slurm_mlsched.slurm.runner import CommandResult, LocalRunner, SlurmCommands, command_failed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


class FakeRunner:
    """Answers each argument list from a table; records every call."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult | Exception]) -> None:
        self.answers = answers
        self.calls: list[tuple[tuple[str, ...], float]] = []

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        key = tuple(argv)
        self.calls.append((key, timeout))
        answer = self.answers[key]
        if isinstance(answer, Exception):
            raise answer
        return answer


def result(argv: Sequence[str], stdout: str = "", stderr: str = "", rc: int = 0) -> CommandResult:
    return CommandResult(tuple(argv), rc, stdout, stderr)


PING = ("scontrol", "ping")
UP = (FIXTURES / "22.05" / "idle" / "ping.txt").read_text()
DOWN = (FIXTURES / "24.11" / "idle" / "ping-down.txt").read_text()


# --- LocalRunner ------------------------------------------------------------------------


def test_local_runner_returns_status_and_both_streams() -> None:
    out = LocalRunner().run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert (out.returncode, out.stdout, out.stderr, out.ok) == (3, "out\n", "err\n", False)
    assert out.argv == ("sh", "-c", "echo out; echo err >&2; exit 3")


def test_local_runner_passes_arguments_verbatim_and_stdin() -> None:
    weird = ["a b", "$(touch /nonexistent)", "`id`", "it's", "new\nline", ""]
    out = LocalRunner().run(["printf", "%s|", *weird], timeout=10)
    assert out.stdout == "|".join(weird) + "|"
    echo = LocalRunner().run(["cat"], timeout=10, input="from stdin\n")
    assert echo.stdout == "from stdin\n"


def test_local_runner_overlays_environment() -> None:
    out = LocalRunner(env={"SLURM_CONF": "/x/slurm.conf"}).run(
        ["sh", "-c", 'echo "$SLURM_CONF:$PATH"'], timeout=10
    )
    conf, path = out.stdout.strip().split(":", 1)
    assert conf == "/x/slurm.conf" and path  # PATH still inherited


def test_local_runner_times_out_fast_with_a_slurm_error() -> None:
    started = time.monotonic()
    with pytest.raises(SlurmError, match=r"did not finish within 0\.3 s") as info:
        LocalRunner().run(["sleep", "30"], timeout=0.3)
    assert time.monotonic() - started < 5
    assert info.value.exit_code == 6
    assert info.value.context["command"] == "sleep 30"


def test_local_runner_missing_command() -> None:
    with pytest.raises(SlurmError, match="command not found") as info:
        LocalRunner().run(["sinfo-does-not-exist"], timeout=5)
    assert "slurm-client" in info.value.hint


@pytest.mark.parametrize("argv", ["sinfo -N", [], ["sinfo", 3]])
def test_local_runner_takes_only_argument_lists(argv: object) -> None:
    with pytest.raises(TypeError):
        LocalRunner().run(argv, timeout=5)  # type: ignore[arg-type]


def test_local_runner_needs_a_positive_timeout() -> None:
    with pytest.raises(ValueError, match="timeout"):
        LocalRunner().run(["true"], timeout=0)


# --- the funnel -------------------------------------------------------------------------


def test_ping_comes_first_and_only_once() -> None:
    runner = FakeRunner(
        {
            PING: result(PING, UP),
            ("sinfo", "--json"): result(["sinfo", "--json"], "{}"),
            ("squeue", "--json"): result(["squeue", "--json"], "[]"),
        }
    )
    slurm = SlurmCommands(runner, timeout=12, ping_timeout=2)
    assert slurm.run(["sinfo", "--json"]) == "{}"
    assert slurm.run(["squeue", "--json"], timeout=3) == "[]"
    assert runner.calls == [(PING, 2), (("sinfo", "--json"), 12), (("squeue", "--json"), 3)]


def test_version_needs_no_controller_and_is_cached() -> None:
    argv = ("sinfo", "--version")
    runner = FakeRunner({argv: result(argv, "slurm-wlm 24.11.5\n")})
    slurm = SlurmCommands(runner)
    assert str(slurm.version()) == "24.11.5"
    assert str(slurm.version()) == "24.11.5"
    assert runner.calls == [(argv, 30.0)]


def test_controller_down_is_one_clear_error_and_nothing_else_runs() -> None:
    runner = FakeRunner({PING: result(PING, DOWN, rc=1)})
    with pytest.raises(SlurmUnreachableError) as info:
        SlurmCommands(runner).run(["sbatch", "--parsable", "job.sh"])
    err = info.value
    assert err.exit_code == 6 and err.code == "slurm-unreachable"
    assert "Slurmctld(primary) at vm is DOWN" in err.message
    assert "RESTORE" not in err.message  # the banner is not the message
    assert "make cluster-up" in err.hint and "SLURM_CONF" in err.hint
    assert [c for c, _ in runner.calls] == [PING]


def test_ping_that_hangs_is_unreachable_too() -> None:
    runner = FakeRunner({PING: SlurmError("`scontrol ping` did not finish within 5 s")})
    with pytest.raises(SlurmUnreachableError, match="did not finish within 5 s"):
        SlurmCommands(runner).ping()


def test_no_scontrol_says_what_to_install_not_that_the_controller_is_down() -> None:
    missing = SlurmError(
        "cannot run `scontrol`: command not found", hint="install the Slurm client commands"
    )
    with pytest.raises(SlurmError) as info:
        SlurmCommands(FakeRunner({PING: missing})).ping()
    assert info.value is missing and not isinstance(info.value, SlurmUnreachableError)


def test_failed_command_says_which_status_and_stderr_and_that_it_came_from_slurm() -> None:
    argv = ("sbatch", "--parsable", "my job.sh")
    stderr = (FIXTURES / "22.05" / "busy" / "sbatch-invalid-node.stderr").read_text()
    runner = FakeRunner({PING: result(PING, UP), argv: result(argv, "", stderr, rc=1)})
    with pytest.raises(SlurmError) as info:
        SlurmCommands(runner).run(list(argv))
    err = info.value
    assert err.code == "slurm-command-failed" and err.exit_code == 6
    assert "`sbatch --parsable 'my job.sh'` failed with exit status 1" in err.message
    assert "Batch job submission failed: Invalid node name specified" in err.message
    assert "came from the subprocess `sbatch`, not from mlsub" in err.message
    assert err.context["exit_status"] == 1
    assert err.as_dict()["error"] == "slurm-command-failed"


def test_failure_quotes_only_the_end_of_a_long_stderr() -> None:
    noise = "\n".join(f"line {i}" for i in range(100))
    err = command_failed(result(["squeue"], "", noise, rc=2))
    assert "line 99" in err.message and "line 10\n" not in err.message
    empty = command_failed(result(["squeue"], "", "", rc=2))
    assert "(no output)" in empty.message
