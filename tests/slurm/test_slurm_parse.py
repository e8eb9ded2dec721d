"""The parsers, on real output of Slurm 22.05 and 24.11 (tests/fixtures/slurm/, captured by
scripts/slurm-lab/capture-fixtures.sh), then on the edge cases each format allows."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from slurm_mlsched.errors import SlurmOutputError
from slurm_mlsched.slurm.parse import (
    JobRecord,
    NodeAllocation,
    NodeRecord,
    SlurmVersion,
    controller_is_up,
    gres_count,
    parse_duration,
    parse_key_values,
    parse_ping,
    parse_sbatch_parsable,
    parse_scontrol_nodes,
    parse_sinfo_json,
    parse_sinfo_text,
    parse_squeue_json,
    parse_squeue_text,
    parse_tres,
    parse_version,
    split_state,
    tres_gpus,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
VERSIONS = ("22.05", "24.11")
NODES = ("node1", "node2", "node3", "node4")
NOW = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)


def read(version: str, scenario: str, name: str) -> str:
    return (FIXTURES / version / scenario / name).read_text(encoding="utf-8")


def by_name(records: tuple[NodeRecord, ...]) -> dict[str, NodeRecord]:
    return {r.name: r for r in records}


def node_parsers(version: str, scenario: str) -> dict[str, tuple[NodeRecord, ...]]:
    return {
        "sinfo -o": parse_sinfo_text(read(version, scenario, "sinfo-nodes.txt")),
        "sinfo --json": parse_sinfo_json(read(version, scenario, "sinfo.json")),
        "sinfo -N --json": parse_sinfo_json(read(version, scenario, "sinfo-N.json")),
        "scontrol": parse_scontrol_nodes(read(version, scenario, "scontrol-nodes.txt")),
    }


# --- version, ping, sbatch --------------------------------------------------------------


@pytest.mark.parametrize(("version", "micro"), [("22.05", 8), ("24.11", 5)])
def test_version_of_both_commands(version: str, micro: int) -> None:
    major, minor = (int(x) for x in version.split("."))
    for name in ("sinfo-version.txt", "scontrol-version.txt"):
        parsed = parse_version(read(version, "idle", name))
        assert parsed == SlurmVersion(major, minor, micro)
        assert parsed.release == version
        assert parsed.has_json()


def test_version_order_and_json_support() -> None:
    assert parse_version("slurm 20.11.9") < parse_version("slurm-wlm 22.05.8")
    assert not parse_version("slurm 20.11.9").has_json()
    assert parse_version("slurm 21.08.0").has_json()
    with pytest.raises(SlurmOutputError, match="no version number"):
        parse_version("sinfo: command not found")


@pytest.mark.parametrize("version", VERSIONS)
def test_ping_up_and_down(version: str) -> None:
    up = parse_ping(read(version, "idle", "ping.txt"))
    assert [(s.role, s.up) for s in up] == [("primary", True)]
    assert controller_is_up(up)
    down = parse_ping(read(version, "idle", "ping-down.txt"))  # with its *** banner
    assert [(s.role, s.up) for s in down] == [("primary", False)]
    assert not controller_is_up(down)
    assert not controller_is_up(parse_ping(""))


def test_ping_with_a_backup_controller() -> None:
    text = "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    statuses = parse_ping(text)
    assert [(s.role, s.host, s.up) for s in statuses] == [
        ("primary", "ctl1", False),
        ("backup", "ctl2", True),
    ]
    assert controller_is_up(statuses)


@pytest.mark.parametrize("version", VERSIONS)
def test_sbatch_parsable(version: str) -> None:
    text = read(version, "busy", "sbatch-parsable.txt")
    assert parse_sbatch_parsable(text).job_id == int(text.strip())


def test_sbatch_parsable_with_cluster_and_garbage() -> None:
    assert parse_sbatch_parsable("1234;lab\n").job_id == 1234
    assert parse_sbatch_parsable("1234;lab\n").cluster == "lab"
    for bad in ("", "Submitted batch job 12", "12 13"):
        with pytest.raises(SlurmOutputError, match="expected a job id"):
            parse_sbatch_parsable(bad)


# --- nodes ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_idle_nodes_have_the_lab_capacity_in_every_format(version: str) -> None:
    for fmt, records in node_parsers(version, "idle").items():
        nodes = by_name(records)
        assert sorted(nodes) == list(NODES), fmt
        for node in nodes.values():
            assert (node.cpus, node.memory_mib, node.gpus) == (8, 65536.0, 4), fmt
            assert node.state == "IDLE" and node.unusable_reason() is None, fmt


#: busy scenario, per node: (CPUs, MiB, GPUs) held (capture-fixtures.sh)
BUSY_ALLOC = {
    "node1": (2, 4096.0, 2),  # sleeper
    "node2": (4, 3548.0, 1),  # multi (3 CPUs, 2G, 1 GPU) + nolimit (1 CPU, 1500M)
    "node3": (5, 5120.0, 3),  # multi + het+0 (2 CPUs, 3G, 2 GPUs)
    "node4": (1, 1024.0, 1),  # het+1
}


@pytest.mark.parametrize("version", VERSIONS)
def test_busy_nodes_report_what_is_allocated(version: str) -> None:
    parsers = node_parsers(version, "busy")
    for fmt in ("sinfo --json", "sinfo -N --json", "scontrol"):
        nodes = by_name(parsers[fmt])
        for name, (cpus, mem, gpus) in BUSY_ALLOC.items():
            node = nodes[name]
            assert (node.alloc_cpus, node.alloc_memory_mib, node.alloc_gpus) == (
                cpus,
                mem,
                gpus,
            ), (fmt, name)
            assert node.state == "MIXED" and node.unusable_reason() is None, (fmt, name)
    assert all(n.alloc_cpus is None for n in parsers["sinfo -o"])  # that format has none


@pytest.mark.parametrize("version", VERSIONS)
def test_down_drained_and_not_responding_nodes_are_unusable(version: str) -> None:
    expected = {
        "node1": ("MIXED", {"DRAIN"}, "draining"),
        "node2": ("IDLE", {"DRAIN"}, "drained"),
        "node3": ("DOWN", set(), "down"),
        "node4": ("IDLE", {"NOT_RESPONDING"}, "not responding"),
    }
    for fmt, records in node_parsers(version, "states").items():
        for name, (state, flags, why) in expected.items():
            node = by_name(records)[name]
            assert node.state == state, (fmt, name)
            assert flags <= node.flags, (fmt, name)
            reason = node.unusable_reason()
            assert reason is not None and reason.startswith(why), (fmt, name, reason)
            if fmt != "sinfo -o" and name != "node4":  # the reason given to scontrol
                assert reason == f"{why} (fixture: {why})", (fmt, name)


def test_sinfo_json_24_11_groups_nodes_and_per_node_figures_stay_per_node() -> None:
    grouped = parse_sinfo_json(read("24.11", "idle", "sinfo.json"))  # one entry, 4 nodes
    assert [n.name for n in grouped] == list(NODES)
    assert all(n.cpus == 8 and n.alloc_cpus is None for n in grouped)  # not the group's 32


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_node_partitions_from_json_and_scontrol(version: str) -> None:
    for parser, records in node_parsers(version, "idle").items():
        if parser != "sinfo -o":
            assert {n.partitions for n in records} == {("debug",)}, parser


def test_sinfo_json_24_11_merges_a_node_listed_in_two_partitions() -> None:
    data = json.loads(read("24.11", "idle", "sinfo-N.json"))
    extra = copy.deepcopy(data["sinfo"][0])
    extra["partition"]["name"] = "ml"
    data["sinfo"].append(extra)
    nodes = by_name(parse_sinfo_json(json.dumps(data)))
    assert len(nodes) == 4
    name = extra["nodes"]["nodes"][0]
    assert nodes[name].partitions == ("debug", "ml")


def test_scontrol_lists_every_partition_of_a_node() -> None:
    line = read("22.05", "idle", "scontrol-nodes.txt").splitlines()[0]
    (node,) = parse_scontrol_nodes(line.replace("Partitions=debug", "Partitions=debug,ml"))
    assert node.partitions == ("debug", "ml")


def test_sinfo_text_dedupes_nodes_in_several_partitions() -> None:
    text = "node1|idle|8|65536|gpu:4\nnode1|idle|8|65536|gpu:4\nnode2|mixed-|8|65536|(null)\n"
    nodes = parse_sinfo_text(text)
    assert [n.name for n in nodes] == ["node1", "node2"]
    assert nodes[1].gpus == 0 and nodes[1].flags == {"PLANNED"}


@pytest.mark.parametrize(
    "text",
    ["node1|idle|8|65536", "node1|idle|eight|65536|gpu:4", "node1|idle|8|lots|gpu:4"],
)
def test_sinfo_text_rejects_bad_lines(text: str) -> None:
    with pytest.raises(SlurmOutputError, match="line 1"):
        parse_sinfo_text(text)


@pytest.mark.parametrize(
    "text", ["not json", "[]", '{"meta": {}}', '{"nodes": [{"name": "x"}]}', '{"errors": ["e"]}']
)
def test_sinfo_json_rejects_what_it_cannot_read(text: str) -> None:
    with pytest.raises(SlurmOutputError) as info:
        parse_sinfo_json(text)
    assert info.value.exit_code == 6
    assert "sinfo --json" in info.value.message


@pytest.mark.parametrize(
    ("text", "state", "flags"),
    [
        ("idle", "IDLE", set()),
        ("idle*", "IDLE", {"NOT_RESPONDING"}),
        ("down*", "DOWN", {"NOT_RESPONDING"}),
        ("drained", "IDLE", {"DRAIN"}),
        ("draining", "MIXED", {"DRAIN"}),
        ("mixed-", "MIXED", {"PLANNED"}),
        ("idle~", "IDLE", {"POWERED_DOWN"}),
        ("allocated", "ALLOCATED", set()),
        ("MIXED+DRAIN", "MIXED", {"DRAIN"}),
        ("IDLE+NOT_RESPONDING", "IDLE", {"NOT_RESPONDING"}),
        ("DOWN*+DRAIN+NOT_RESPONDING", "DOWN", {"DRAIN", "NOT_RESPONDING"}),
        ("inval", "UNKNOWN", {"INVALID_REG"}),
        ("future", "FUTURE", set()),
    ],
)
def test_split_state(text: str, state: str, flags: set[str]) -> None:
    assert split_state(text) == (state, frozenset(flags))


@pytest.mark.parametrize(
    ("state", "flags", "usable"),
    [
        ("IDLE", set(), True),
        ("MIXED", {"PLANNED"}, True),
        ("ALLOCATED", {"COMPLETING"}, True),
        ("IDLE", {"POWERED_DOWN"}, True),  # Slurm powers it up when a job needs it
        ("FUTURE", set(), False),
        ("UNKNOWN", set(), False),
        ("IDLE", {"FAIL"}, False),
        ("IDLE", {"INVALID_REG"}, False),
    ],
)
def test_usable_states(state: str, flags: set[str], usable: bool) -> None:
    node = NodeRecord("n", state, frozenset(flags), 8, 1024.0, 0)
    assert (node.unusable_reason() is None) is usable


def test_key_values_keep_spaces_inside_values() -> None:
    line = (
        "NodeName=n1 OS=Linux 6.1 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=100 "
        "State=IDLE+DRAIN Reason=disk check [root@2026-11-29T16:54:09] Comment=(null)"
    )
    kv = parse_key_values(line)
    assert kv["OS"] == "Linux 6.1 #1 SMP PREEMPT_DYNAMIC @0"
    assert kv["Reason"] == "disk check [root@2026-11-29T16:54:09]"
    assert kv["RealMemory"] == "100" and kv["Comment"] == "(null)"


def test_scontrol_nodes_without_gpu_tres_fall_back_to_gres() -> None:
    line = (
        "NodeName=a CPUTot=16 RealMemory=1000 Gres=gpu:v100:2,gpu:a100:1 State=ALLOCATED "
        "CfgTRES=cpu=16,mem=1000M,billing=16 AllocTRES=cpu=16 CPUAlloc=16 AllocMem=0 "
        "NodeAddr=10.0.0.1"
    )
    (node,) = parse_scontrol_nodes(line)
    assert (node.cpus, node.memory_mib, node.gpus, node.address) == (16, 1000.0, 3, "10.0.0.1")
    assert node.alloc_gpus is None  # GPUs are no TRES on that cluster: unknown, not 0
    with pytest.raises(SlurmOutputError, match="line 1"):
        parse_scontrol_nodes("NodeName=a State=IDLE")


# --- jobs -------------------------------------------------------------------------------

#: busy scenario: job name -> allocations (node, CPUs, MiB, GPUs); het components by offset
BUSY_JOBS = {
    "sleeper": [("node1", 2, 4096.0, 2)],
    "multi": [("node2", 3, 2048.0, 1), ("node3", 3, 2048.0, 1)],
    "het+0": [("node3", 2, 3072.0, 2)],
    "het+1": [("node4", 1, 1024.0, 1)],
    "nolimit": [("node2", 1, 1500.0, 0)],
}


def running_by_name(jobs: tuple[JobRecord, ...]) -> dict[str, JobRecord]:
    out = {}
    for job in jobs:
        if job.holds_resources:
            suffix = "+" + job.job_id.split("+")[1] if "+" in job.job_id else ""
            out[job.name + suffix] = job
    return out


def allocations(job: JobRecord) -> list[tuple[str, int, float, int]]:
    return [(a.node, a.cpus, a.memory_mib, a.gpus) for a in job.allocations]


@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_json_gives_exact_per_node_allocations(version: str) -> None:
    jobs = parse_squeue_json(read(version, "busy", "squeue.json"))
    running = running_by_name(jobs)
    assert sorted(running) == sorted(BUSY_JOBS)
    for name, expected in BUSY_JOBS.items():
        assert allocations(running[name]) == expected, name
        assert running[name].exact
    pending = [j for j in jobs if j.state == "PENDING"]
    assert [(j.name, j.allocations, j.holds_resources) for j in pending] == [("later", (), False)]
    het0, het1 = running["het+0"], running["het+1"]
    assert het0.job_id.split("+")[0] == het1.job_id.split("+")[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_json_end_times_follow_the_time_limits(version: str) -> None:
    running = running_by_name(parse_squeue_json(read(version, "busy", "squeue.json")))
    ends = {name: job.end_time for name, job in running.items()}
    assert all(end is not None and end.tzinfo is not None for end in ends.values())
    # all submitted within a second: sleeper -t 10, multi -t 5, het -t 7, nolimit none
    sleeper = ends["sleeper"]
    assert sleeper is not None
    for name, minutes in (("multi", 5), ("het+0", 7), ("het+1", 7)):
        end = ends[name]
        assert end is not None
        assert abs((end - sleeper) - timedelta(minutes=minutes - 10)) <= timedelta(seconds=2)
    nolimit = ends["nolimit"]  # Slurm reports no limit as 365 days
    assert nolimit is not None and nolimit - sleeper > timedelta(days=300)


def test_squeue_json_22_05_also_lists_finished_jobs() -> None:
    jobs = parse_squeue_json(read("22.05", "busy", "squeue.json"))
    finished = [j for j in jobs if j.state in ("COMPLETED", "CANCELLED", "FAILED")]
    assert finished and not any(j.holds_resources for j in finished)


@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_text_splits_multi_node_jobs_evenly(version: str) -> None:
    jobs = parse_squeue_text(read(version, "busy", "squeue.txt"), NOW)
    running = running_by_name(jobs)
    assert sorted(running) == sorted(BUSY_JOBS)
    for name, expected in BUSY_JOBS.items():
        assert allocations(running[name]) == expected, name
        assert running[name].exact == (name != "multi")
    sleeper = running["sleeper"].end_time
    assert sleeper is not None and NOW + timedelta(minutes=9) <= sleeper <= NOW + timedelta(
        minutes=10
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_states_scenario_job_on_the_draining_node(version: str) -> None:
    for jobs in (
        parse_squeue_json(read(version, "states", "squeue.json")),
        parse_squeue_text(read(version, "states", "squeue.txt"), NOW),
    ):
        running = running_by_name(jobs)
        assert allocations(running["keep"]) == [("node1", 1, 1024.0, 0)]


def test_squeue_text_name_may_contain_the_separator_and_bad_lines_fail() -> None:
    (job,) = parse_squeue_text("7|RUNNING|n1|1|4|8G|gres/gpu:2|UNLIMITED|a|b c", NOW)
    assert job.name == "a|b c" and job.end_time is None
    assert job.allocations == (NodeAllocation("n1", 4, 8192.0, 2),)
    for bad in ("7|RUNNING|n1", "7|RUNNING|n[1-2]|3|4|8G|N/A|1:00|x", "7|R|n1|1|4|8G|N/A|soon|x"):
        with pytest.raises(SlurmOutputError, match="line 1"):
            parse_squeue_text(bad, NOW)


# --- small grammars ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("gpu:4", 4),
        ("gpu:a100:2", 2),
        ("gpu:4(S:0-1)", 4),
        ("gpu:2(IDX:0-1)", 2),
        ("gpu:2(IDX:0,2)", 2),
        ("gpu:0(IDX:N/A)", 0),
        ("gres:gpu:2", 2),
        ("gres/gpu:2", 2),
        ("gpu:a100:2(S:0),gpu:v100:1,mps:100", 3),
        ("gpu", 1),
        ("gpu:a100", 1),
        ("mps:100", 0),
        ("(null)", 0),
        ("N/A", 0),
        ("", 0),
        (None, 0),
    ],
)
def test_gres_count(text: str | None, count: int) -> None:
    assert gres_count(text) == count


def test_tres() -> None:
    tres = parse_tres("cpu=8,mem=64G,billing=8,gres/gpu=4")
    assert tres == {"cpu": "8", "mem": "64G", "billing": "8", "gres/gpu": "4"}
    assert tres_gpus(tres) == 4
    assert tres_gpus(parse_tres("cpu=1,gres/gpu:a100=2,gres/gpu:v100=1")) == 3
    assert tres_gpus(parse_tres("")) == 0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0:30", 30),
        ("9:59", 599),
        ("1:02:03", 3723),
        ("364-23:59:59", 364 * 86400 + 86399),
        ("1-00:00:00", 86400),
        ("UNLIMITED", None),
        ("NOT_SET", None),
        ("INVALID", None),
    ],
)
def test_duration(text: str, seconds: int | None) -> None:
    parsed = parse_duration(text)
    assert (parsed.total_seconds() if parsed else None) == seconds
