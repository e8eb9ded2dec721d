"""The real local Slurm cluster (scripts/slurm-lab/) for the integration tests.

``make test`` starts it before pytest (scripts/test.sh). Run alone, these tests start it
themselves when they can (root; start-cluster.sh is idempotent) and leave it running
(``make cluster-down`` stops it). When it cannot run (not root, the start fails) they
skip with the reason, except under ``CI=true``, where that is a failure.

Every wait polls the cluster's state (never sleep-then-assert: Slurm's views lag).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

from slurm_mlsched.errors import SlurmError
from slurm_mlsched.slurm.parse import parse_sbatch_parsable, parse_sinfo_text
from slurm_mlsched.slurm.runner import LocalRunner, SlurmCommands
from slurm_mlsched.slurm.transient import is_transient
from tests.conftest import require_or_skip

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "scripts" / "slurm-lab"
NODES = ("node1", "node2", "node3", "node4")
#: Job states after which a job holds nothing any more.
FINISHED = frozenset(
    {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
)

T = TypeVar("T")


def poll(what: str, check: Callable[[], T | None], timeout: float = 30, every: float = 0.2) -> T:
    """Call ``check`` until it returns something truthy; fail after ``timeout`` seconds.

    A transient :class:`SlurmError` raised by ``check`` (``squeue … Socket timed out``
    under load: ``slurm_mlsched.slurm.transient.is_transient``, the rule of the product's
    own polls) counts as "not yet", and the last one is reported if the time runs out;
    any other Slurm error fails at once."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    error: SlurmError | None = None
    while True:
        try:
            last, error = check(), None
        except SlurmError as exc:
            if not is_transient(exc):
                raise
            last, error = None, exc
        if last:
            return last
        if time.monotonic() > deadline:
            said = f"last Slurm error: {error.message}" if error else repr(last)
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} ({said})")
        time.sleep(every)


def _all_nodes_usable(slurm: SlurmCommands) -> bool:
    try:
        nodes = parse_sinfo_text(slurm.run(["sinfo", "-h", "-N", "-o", "%N|%T|%c|%m|%G"]))
    except SlurmError:
        return False
    return sorted(n.name for n in nodes if n.unusable_reason() is None) == list(NODES)


def _cluster_problem() -> str | None:
    """Why the lab cluster cannot be used here, or None once it is up with 4 usable nodes."""
    if os.geteuid() != 0:
        return "not root: the local Slurm cluster (make cluster-up) runs as root"
    if _all_nodes_usable(SlurmCommands(LocalRunner(), timeout=10)):
        return None
    started = subprocess.run(
        ["bash", str(LAB / "start-cluster.sh")], capture_output=True, text=True, timeout=900
    )
    if started.returncode != 0:
        tail = "\n".join((started.stdout + started.stderr).strip().splitlines()[-15:])
        return f"the local Slurm cluster did not start (start-cluster.sh):\n{tail}"
    try:
        poll("4 usable nodes", lambda: _all_nodes_usable(SlurmCommands(LocalRunner())), 60)
    except AssertionError as exc:
        return str(exc)
    return None


@dataclass
class LabCluster:
    """The running cluster, and what one test did to it (undone afterwards)."""

    slurm: SlurmCommands
    jobs: list[int] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)

    def sbatch(self, *args: str) -> int:
        job = parse_sbatch_parsable(self.slurm.run(["sbatch", "--parsable", *args])).job_id
        self.jobs.append(job)
        return job

    def states(self, job: int) -> list[str]:
        """States of the job (all components of a heterogeneous one), finished ones too."""
        out = self.slurm.run(["squeue", "-h", "-t", "all", "-j", str(job), "-o", "%T"])
        return [line.strip() for line in out.splitlines() if line.strip()]

    def wait_finished(self, job: int, timeout: float = 120) -> list[str]:
        return poll(
            f"job {job} to finish",
            lambda: (s := self.states(job)) and all(x in FINISHED for x in s) and s,
            timeout,
        )

    def wait_running(self, job: int, timeout: float = 120) -> list[str]:
        return poll(
            f"job {job} to run",
            lambda: (s := self.states(job)) and all(x == "RUNNING" for x in s) and s,
            timeout,
        )

    def drain(self, node: str, reason: str) -> None:
        self.drained.append(node)
        self.slurm.run(
            ["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"]
        )

    def cleanup(self) -> None:
        if self.jobs:
            self.slurm.run(["scancel", *map(str, self.jobs)])
        for node in self.drained:
            self.slurm.run(["scontrol", "update", f"nodename={node}", "state=resume"])
        self.jobs.clear()
        self.drained.clear()


def _settle(slurm: SlurmCommands, timeout: float = 90) -> None:
    """Let the previous test's jobs end (cancelled ones may still be completing): a job
    that mlsub finds no room for waits held in its queue (late binding) until a re-plan,
    so a test that expects its job to start now starts from a quiet cluster. Bounded: on a
    cluster other test runs share, the test goes on after ``timeout`` all the same."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            busy = slurm.run(["squeue", "-h", "-t", "running,pending,completing", "-o", "%i"])
        except SlurmError:
            busy = "?"
        if not busy.strip():
            return
        time.sleep(0.5)


#: The lab's GRES knobs (scripts/slurm-lab/start-cluster.sh): a test that restarts the lab
#: with some of them set leaves none of the others set.
GRES_KNOBS = ("SLURM_LAB_GPU_TYPES", "SLURM_LAB_GPU_COUNTS")


def restart_lab(**gres: str) -> None:
    """Start the lab again with these GRES knobs (``SLURM_LAB_GPU_TYPES="v100 …"``,
    ``SLURM_LAB_GPU_COUNTS="4 4 1 1"``) and no other; none given: the default GRES.
    start-cluster.sh restarts slurmctld and the slurmd when the GRES change: first the
    jobs still ending (a test's cancelled ones) are let end (bounded)."""
    _settle(SlurmCommands(LocalRunner()))
    env = {k: v for k, v in os.environ.items() if k not in GRES_KNOBS}
    env.update({k: v for k, v in gres.items() if v})
    started = subprocess.run(
        ["bash", str(LAB / "start-cluster.sh")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if started.returncode != 0:
        tail = "\n".join((started.stdout + started.stderr).strip().splitlines()[-15:])
        raise AssertionError(f"start-cluster.sh ({gres or 'default GRES'}) failed:\n{tail}")


#: What every node of the default lab reports: 4 untyped GPUs (``SLURM_LAB_GPUS``).
DEFAULT_GPUS = (4, None)


def lab_gpus() -> dict[str, tuple[int, str | None]]:
    """Each node's GPU count and type as the running lab's ``sinfo`` reports them (read
    with mlsub's own parser, which knows every Slurm version's ``%G``)."""
    text = SlurmCommands(LocalRunner()).run(["sinfo", "-h", "-N", "-o", "%N|%T|%c|%m|%G"])
    return {n.name: (n.gpus, n.gpu_type) for n in parse_sinfo_text(text)}


@contextmanager
def lab_restarted(
    wanted: Mapping[str, tuple[int, str | None]], what: str, **gres: str
) -> Iterator[None]:
    """The lab restarted with the GRES knobs ``gres`` (:func:`restart_lab`), its nodes then
    reporting ``wanted`` (node → GPU count and type), for the caller's block; unless it had
    them already, the default is put back afterwards. Not root: skip (a failure under
    ``CI=true``)."""
    if os.geteuid() != 0:
        require_or_skip(f"not root: the lab cluster cannot be restarted with {what}")
    had = lab_gpus() == dict(wanted)
    if not had:
        restart_lab(**gres)
    try:
        poll(what, lambda: lab_gpus() == dict(wanted), 60)
        yield
    finally:
        if not had:
            restart_lab()
            poll("the default GPUs again", lambda: set(lab_gpus().values()) == {DEFAULT_GPUS}, 60)


@pytest.fixture(scope="session")
def lab_ready() -> None:
    problem = _cluster_problem()
    if problem:
        require_or_skip(problem)


@pytest.fixture
def cluster(lab_ready: None) -> Iterator[LabCluster]:
    """The lab cluster with 4 usable nodes; the test's jobs and drains are undone after it.

    Other jobs may be running (the cluster is shared by every test run on the machine), so
    the tests assert about their own jobs and never about an empty cluster.
    """
    lab = LabCluster(SlurmCommands(LocalRunner()))
    poll("4 usable nodes", lambda: _all_nodes_usable(lab.slurm), 60)
    _settle(lab.slurm)
    try:
        yield lab
    finally:
        lab.cleanup()
        poll("4 usable nodes again", lambda: _all_nodes_usable(lab.slurm), 60)
