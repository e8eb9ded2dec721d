"""The remote submitter with stand-ins for the SSH session (no server): which files it
stages where, the sbatch command it runs, and the names it makes safe. The real thing:
tests/remote/test_remote_submit.py."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurm_mlsched.config import DEFAULT_REMOTE_DIR
from slurm_mlsched.files.job_script import JobScript
from slurm_mlsched.remote.session import DEFAULT_STAGING_ROOT, StagedFiles
from slurm_mlsched.remote.submitter import SBATCH_SCRIPT, RemoteSubmitter, safe_name
from slurm_mlsched.sbatch.tag import DecisionTag
from slurm_mlsched.slurm.runner import CommandResult, SlurmCommands

ROOT = "/home/alice/.mlsub/decisions"
TAG = DecisionTag(7, "0123456789ab")
PING = "Slurmctld(primary) at ctl is UP\n"


@dataclass
class FakeStager:
    staged: list[tuple[str, dict[str, Path | bytes], tuple[str, ...]]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def staging_dir(self, decision_id: str | int) -> str:
        self.asked.append(str(decision_id))
        return posixpath.join(ROOT, str(decision_id))

    def stage(
        self,
        decision_id: str | int,
        files: Mapping[str, Path | bytes],
        *,
        executable: Sequence[str] = (),
    ) -> StagedFiles:
        self.staged.append((str(decision_id), dict(files), tuple(executable)))
        directory = self.staging_dir(decision_id)
        return StagedFiles(directory, {n: posixpath.join(directory, n) for n in files})


@dataclass
class FakeRunner:
    commands: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        assert input is None  # the script is a file on the login node, not stdin
        self.commands.append(tuple(argv))
        out = PING if tuple(argv) == ("scontrol", "ping") else "4242\n"
        return CommandResult(tuple(argv), 0, out, "")


def submitter(cluster: str = "gpu-lab") -> tuple[RemoteSubmitter, FakeStager, FakeRunner]:
    stager, runner = FakeStager(), FakeRunner()
    return RemoteSubmitter(stager, SlurmCommands(runner), cluster_name=cluster), stager, runner


def test_stages_the_program_and_the_script_then_runs_sbatch_in_that_directory(
    tmp_path: Path,
) -> None:
    program = tmp_path / "train.py"
    program.write_text("print('hi')\n")
    sub, stager, runner = submitter()
    job = JobScript(program, ("--lr", "0.1"))
    directory = f"{ROOT}/gpu-lab-7-0123456789ab"
    assert sub.program_path(job, TAG) == f"{directory}/train.py"
    assert sub.submit("#!/bin/bash\necho hi\n", job, TAG) == "4242"
    (name, files, executable) = stager.staged[0]
    assert name == "gpu-lab-7-0123456789ab" and executable == ()
    assert files == {"train.py": program, SBATCH_SCRIPT: b"#!/bin/bash\necho hi\n"}
    assert runner.commands[-1] == (
        "env", "TZ=UTC", "sbatch", "--parsable", f"--chdir={directory}",
        f"{directory}/{SBATCH_SCRIPT}",
    )  # fmt: skip


def test_the_staging_root_is_resolved_before_any_decision(tmp_path: Path) -> None:
    sub, stager, _ = submitter()
    assert stager.asked == ["gpu-lab-dry-run"]  # at construction: before planning
    job = JobScript(tmp_path / "train.py")
    assert sub.program_path(job, None) == f"{ROOT}/gpu-lab-dry-run/train.py"
    assert stager.staged == []  # asking where is no upload


def test_an_executable_program_stays_executable(tmp_path: Path) -> None:
    program = tmp_path / "run.sh"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    sub, stager, _ = submitter()
    job = JobScript(program)
    sub.submit("#!/bin/bash\n", job, TAG)
    assert stager.staged[0][2] == ("run.sh",)
    assert job.command(None, sub.program_path(job, TAG)) == (
        f"{ROOT}/gpu-lab-7-0123456789ab/run.sh",
    )


@pytest.mark.parametrize(
    ("cluster", "program", "directory", "name"),
    [
        ("lab", "my train.py", "lab-7-0123456789ab", "my_train.py"),
        ("a/b c", ".hidden.py", "a_b_c-7-0123456789ab", "_.hidden.py"),
        ("-x", "decision.sbatch", "_-x-7-0123456789ab", "program-decision.sbatch"),
    ],
)
def test_names_are_made_safe_for_the_remote_side(
    tmp_path: Path, cluster: str, program: str, directory: str, name: str
) -> None:
    sub, _, _ = submitter(cluster)
    assert sub.program_path(JobScript(tmp_path / program), TAG) == f"{ROOT}/{directory}/{name}"


def test_safe_name() -> None:
    assert safe_name("ok-name_1.py") == "ok-name_1.py"
    assert safe_name("") == "_"
    assert safe_name("ü$x") == "__x"


def test_the_config_default_is_the_session_default() -> None:
    assert DEFAULT_REMOTE_DIR == DEFAULT_STAGING_ROOT
