"""Node state sources: the Slurm commands (on real captured output, both versions, both
formats) and pyslurm (on a stand-in of its documented ``Nodes.load()`` / ``Jobs.load()``
API, injected; the real pyslurm, built for the lab cluster's Slurm, is compared with the
commands in tests/integration/test_pyslurm_parity.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from slurm_mlsched.errors import SlurmError, SlurmUnreachableError
from slurm_mlsched.slurm.nodes import (
    PyslurmSource,
    SlurmCliSource,
    pyslurm_release,
    select_source,
)
from slurm_mlsched.slurm.parse import SQUEUE_COMMENT_FORMAT, SQUEUE_TEXT_FORMAT
from slurm_mlsched.slurm.runner import CommandResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
NOW = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
TEXT_SQUEUE = (
    "squeue",
    "--all",
    "-h",
    "-t",
    "COMPLETING,CONFIGURING,RUNNING,STOPPED,SUSPENDED",
    "-o",
    SQUEUE_TEXT_FORMAT,
)


TEXT_COMMENTS = (*TEXT_SQUEUE[:-1], SQUEUE_COMMENT_FORMAT)
COMMENT = "mlsched:decision=3:0123456789ab|site"


class FixtureRunner:
    """Answers the commands the sources run with a captured scenario's real output."""

    FILES: ClassVar[dict[tuple[str, ...], str]] = {
        ("scontrol", "ping"): "idle/ping.txt",
        ("sinfo", "--version"): "idle/sinfo-version.txt",
        ("sinfo", "-N", "--json"): "{scenario}/sinfo-N.json",
        ("squeue", "--all", "--json"): "{scenario}/squeue.json",
        ("scontrol", "-o", "show", "nodes"): "{scenario}/scontrol-nodes.txt",
        TEXT_SQUEUE: "{scenario}/squeue.txt",
    }

    def __init__(self, version: str, scenario: str) -> None:
        self.version, self.scenario = version, scenario
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        key = tuple(argv)
        self.calls.append(key)
        if key == TEXT_COMMENTS:  # not captured: the captured jobs' ids, one with a comment
            text = (FIXTURES / self.version / self.scenario / "squeue.txt").read_text()
            rows = [line.split("|") for line in text.splitlines() if line.strip()]
            out = "".join(f"{r[0]}|{COMMENT if r[-1] == 'sleeper' else '(null)'}\n" for r in rows)
            return CommandResult(key, 0, out, "")
        path = FIXTURES / self.version / self.FILES[key].format(scenario=self.scenario)
        return CommandResult(key, 0, path.read_text(encoding="utf-8"), "")


def held(state: Any) -> dict[str, list[tuple[str, int, float, int]]]:
    return {
        j.job_id: [(a.node, a.cpus, a.memory_mib, a.gpus) for a in j.allocations]
        for j in state.jobs
    }


@pytest.mark.parametrize("version", ["22.05", "24.11"])
@pytest.mark.parametrize("mode", ["auto", "json", "text"])
def test_cli_source_reads_nodes_and_running_jobs(version: str, mode: str) -> None:
    runner = FixtureRunner(version, "busy")
    state = SlurmCliSource(runner, mode=mode).read(NOW)  # type: ignore[arg-type]
    assert [n.name for n in state.nodes] == ["node1", "node2", "node3", "node4"]
    assert all((n.cpus, n.memory_mib, n.gpus) == (8, 65536.0, 4) for n in state.nodes)
    assert state.slurm_version.startswith(version)
    names = sorted(j.name for j in state.jobs)
    assert names == ["het", "het", "multi", "nolimit", "sleeper"]  # no pending, no finished
    assert runner.calls[0] == ("sinfo", "--version")  # no controller needed for that
    assert runner.calls[1] == ("scontrol", "ping")  # then readiness, before the rest
    if mode == "text":
        comments = {j.name: j.comment for j in state.jobs}
        assert comments["sleeper"] == COMMENT and comments["multi"] == ""
        assert "sinfo -N --json" not in state.source
        assert state.notes and "split evenly" in state.notes[0]
    else:
        assert state.source == "sinfo -N --json, squeue --all --json" and not state.notes


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_cli_source_reports_excluded_nodes_with_the_reason(version: str) -> None:
    state = SlurmCliSource(FixtureRunner(version, "states")).read(NOW)
    assert [n.name for n in state.usable()] == []
    excluded = {node.name: why for node, why in state.excluded()}
    assert excluded == {
        "node1": "draining (fixture: draining)",
        "node2": "drained (fixture: drained)",
        "node3": "down (fixture: down)",
        "node4": "not responding",
    }


class Unreachable:
    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        if tuple(argv) == ("sinfo", "--version"):
            return CommandResult(tuple(argv), 0, "slurm-wlm 22.05.8\n", "")
        down = (FIXTURES / "22.05" / "idle" / "ping-down.txt").read_text()
        assert tuple(argv) == ("scontrol", "ping"), argv  # nothing else may run
        return CommandResult(tuple(argv), 1, down, "")


def test_cli_source_stops_at_the_readiness_check() -> None:
    with pytest.raises(SlurmUnreachableError):
        SlurmCliSource(Unreachable()).read(NOW)


# --- pyslurm stand-in -------------------------------------------------------------------


class StandInNode:
    """The attributes our adapter reads, named as in pyslurm's ``Node`` (node.pxd)."""

    def __init__(self, name: str, state: str, **kw: Any) -> None:
        self.name, self.state = name, state
        self.total_cpus = kw.get("total_cpus", 8)
        self.real_memory = kw.get("real_memory", 65536)
        self.configured_gres = kw.get("configured_gres", {"gpu": 4})
        self.allocated_gres = kw.get("allocated_gres", {})
        self.allocated_cpus = kw.get("allocated_cpus", 0)
        self.allocated_memory = kw.get("allocated_memory", 0)
        self.address = "127.0.0.1"
        self.reason = kw.get("reason")
        self.partitions = kw.get("partitions", ["gpu"])


class StandInJob:
    """pyslurm's ``Job`` (job.pxd) as far as the adapter reads it."""

    def __init__(self, job_id: int, name: str, state: str, layout: dict[str, Any], **kw: Any):
        self.id, self.name, self.state, self._layout = job_id, name, state, layout
        self.end_time = kw.get("end_time", int(NOW.timestamp()) + 600)
        self.time_limit = kw.get("time_limit", 10)
        self.heterogeneous_id = kw.get("heterogeneous_id")
        self.heterogeneous_offset = kw.get("heterogeneous_offset")
        self.comment = kw.get("comment")

    def get_resource_layout_per_node(self) -> dict[str, Any]:
        return self._layout


class StandInMap:
    """pyslurm 22.5's ``MultiClusterMap``: ``values()``, iterates its keys, not a Mapping."""

    def __init__(self, items: dict[Any, Any]) -> None:
        self._items = items

    def __iter__(self) -> Any:
        return iter(self._items)

    def values(self) -> Any:
        return self._items.values()


def stand_in(
    version: str = "22.5.0", *, as_dict: bool = False, fail: bool = False, real_22_5: bool = False
) -> Any:
    """``real_22_5``: as pyslurm 22.5.3 really answers on Slurm 22.05 (checked against the
    lab cluster by tests/integration/test_pyslurm_parity.py): collections are
    ``MultiClusterMap``s, a partly allocated node is ``ALLOCATED`` (sinfo derives MIXED)
    and ``allocated_gres`` stays empty while jobs hold GPUs."""
    nodes = [
        StandInNode(
            "node1",
            "ALLOCATED" if real_22_5 else "MIXED",
            allocated_cpus=3,
            allocated_memory=6144,
            allocated_gres={} if real_22_5 else {"gpu": {"count": "2", "indexes": "0-1"}},
            partitions=["gpu", "debug"],
        ),
        StandInNode("node2", "IDLE+DRAIN", reason="disk"),
        StandInNode("node3", "IDLE", configured_gres={"gpu:a100": 2, "gpu:v100": 1, "mps": 5}),
    ]
    jobs = [
        StandInJob(
            7,
            "train",
            "RUNNING",
            {"node1": {"cpu_ids": "0-1,4", "gres": {"gpu": {"count": "2"}}, "memory": 6144}},
            heterogeneous_id=7,
            heterogeneous_offset=0,
        ),
        StandInJob(
            8, "forever", "RUNNING", {"node3": {"cpu_ids": "2", "memory": 100}}, time_limit=None
        ),
        StandInJob(9, "queued", "PENDING", {}),
    ]

    def load_nodes() -> Any:
        if fail:
            raise RuntimeError("slurm_load_node: Unable to contact slurm controller")
        if real_22_5:
            return StandInMap({n.name: n for n in nodes})
        return {n.name: n for n in nodes} if as_dict else list(nodes)

    def load_jobs() -> Any:
        by_id = {j.id: j for j in jobs}
        return StandInMap(by_id) if real_22_5 else by_id

    return SimpleNamespace(
        __version__=version,
        Nodes=SimpleNamespace(load=load_nodes),
        Jobs=SimpleNamespace(load=load_jobs),
    )


@pytest.mark.parametrize(("as_dict", "real_22_5"), [(False, False), (True, False), (False, True)])
def test_pyslurm_source_adapts_nodes_and_jobs(as_dict: bool, real_22_5: bool) -> None:
    state = PyslurmSource(stand_in(as_dict=as_dict, real_22_5=real_22_5), "22.05.8").read(NOW)
    nodes = {n.name: n for n in state.nodes}
    assert nodes["node1"].state == "MIXED" and nodes["node1"].partitions == ("debug", "gpu")
    assert (nodes["node1"].cpus, nodes["node1"].memory_mib, nodes["node1"].gpus) == (8, 65536, 4)
    assert (nodes["node1"].alloc_cpus, nodes["node1"].alloc_gpus) == (3, 2)
    assert nodes["node2"].unusable_reason() == "drained (disk)"
    assert nodes["node3"].gpus == 3  # typed GPUs add up; other GRES do not count
    assert held(state) == {"7+0": [("node1", 3, 6144.0, 2)], "8": [("node3", 1, 100.0, 0)]}
    ends = {j.job_id: j.end_time for j in state.jobs}
    assert ends["7+0"] == datetime.fromtimestamp(int(NOW.timestamp()) + 600, tz=UTC)
    assert ends["8"] is None  # no time limit
    assert state.source.startswith("pyslurm 22.5.0")


def test_pyslurm_errors_go_through_the_funnel() -> None:
    with pytest.raises(SlurmError, match="pyslurm failed: RuntimeError: slurm_load_node") as info:
        PyslurmSource(stand_in(fail=True)).read(NOW)
    assert info.value.exit_code == 6


class VersionRunner:
    def __init__(self, text: str) -> None:
        self.text = text

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        assert tuple(argv) == ("sinfo", "--version")
        return CommandResult(tuple(argv), 0, self.text, "")


def test_select_pyslurm_only_when_it_matches_the_cluster_release() -> None:
    module = stand_in("22.5.1")
    choice = select_source(VersionRunner("slurm-wlm 22.05.8\n"), importer=lambda _: module)
    assert isinstance(choice.source, PyslurmSource) and choice.source.module is module
    assert choice.reason == "pyslurm matches the cluster's Slurm 22.05"

    choice = select_source(
        VersionRunner("slurm-wlm 24.11.5\n"), importer=lambda _: stand_in("25.11.0")
    )
    assert isinstance(choice.source, SlurmCliSource)
    assert choice.reason == "pyslurm 25.11.0 is for Slurm 25.11, the cluster runs Slurm 24.11.5"
    # the source carries its reason into what it reads (mlsub cluster's source_reason)
    assert choice.source.reason == choice.reason


def test_a_release_with_a_known_gap_is_not_used() -> None:
    """pyslurm 24.11.0 on Slurm 24.11: imports and matches, but its job layouts are empty
    (found on the real 24.11 cluster by the parity tests)."""
    choice = select_source(
        VersionRunner("slurm-wlm 24.11.5\n"), importer=lambda _: stand_in("24.11.0")
    )
    assert isinstance(choice.source, SlurmCliSource)
    assert choice.reason.startswith("pyslurm 24.11.0: reads no per-node job allocations")


def test_select_cli_when_pyslurm_is_missing_or_broken() -> None:
    def missing(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    def mismatched(name: str) -> Any:
        raise RuntimeError("Slurm version mismatch: requires Slurm 25.11, found 22.5")

    runner = VersionRunner("slurm-wlm 22.05.8\n")
    choice = select_source(runner, importer=missing)
    assert isinstance(choice.source, SlurmCliSource)
    assert choice.reason == "pyslurm is not installed"
    choice = select_source(runner, importer=mismatched)
    assert isinstance(choice.source, SlurmCliSource)
    assert "Slurm version mismatch" in choice.reason


@pytest.mark.parametrize(
    ("text", "release"),
    [("25.11.0", (25, 11)), ("24.5.1", (24, 5)), ("23.2.2", (23, 2)), ("dev", None)],
)
def test_pyslurm_release(text: str, release: tuple[int, int] | None) -> None:
    assert pyslurm_release(text) == release
