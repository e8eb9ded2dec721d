"""sacct readers on REAL output of the lab cluster, captured by
scripts/slurm-lab/capture-sacct.sh into tests/fixtures/sacct/<version>/ (see the README,
VERSION and commands.txt there): Slurm 22.05.8 (Debian 12) and 24.11.5 (Debian 13 userland
in a chroot). Both captures ran the same ten jobs; ids and times differ, names do not.
Plus small hand-written cases for forms the lab cannot produce.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.traces import (
    SACCT_FORMAT,
    JobState,
    ReadOptions,
    Trace,
    TraceRecord,
    detect_format,
    parse_sacct,
    read_trace,
)
from tests.traces.trace_files import SACCT_FIXTURES

VERSIONS = ["22.05", "24.11"]
LAYOUTS = {
    "22.05": "sacct --json layout openapi/dbv0.0.38 (Slurm 22.05.8)",
    "24.11": "sacct --json layout data_parser/v0.0.42 (Slurm 24.11.5)",
}
NAMES = [
    "plain",
    "gpu2",
    "multi",
    "het",
    "perc",
    "fails",
    "killed",
    "later",
    "overrun",
    "arr",
    "arr",
]


def by_name(trace: Trace) -> dict[str, TraceRecord]:
    return {r.name or "": r for r in trace.records}


def by_id(trace: Trace) -> dict[str, TraceRecord]:
    return {r.job_id: r for r in trace.records}


@pytest.fixture(scope="module", params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def parsable2(version: str) -> Trace:
    return read_trace(SACCT_FIXTURES / version / "sacct-parsable2.txt")


def test_the_field_set_is_the_one_captured(version: str) -> None:
    header = (SACCT_FIXTURES / version / "sacct-parsable2.txt").read_text().splitlines()[0]
    assert header == SACCT_FORMAT.replace(",", "|")
    assert f"--format={SACCT_FORMAT}" in (SACCT_FIXTURES / version / "commands.txt").read_text()
    assert f"# Slurm {version}." in (SACCT_FIXTURES / version / "VERSION").read_text()


def test_jobs_steps_and_components_are_folded(parsable2: Trace) -> None:
    assert parsable2.format == "sacct" and parsable2.skipped == 0
    assert [r.name for r in parsable2.records] == NAMES  # 11 jobs from 28 rows
    assert "15 step rows folded into their jobs" in parsable2.notes
    assert "1 heterogeneous jobs folded from their components" in parsable2.notes
    submit = parsable2.records[0].submit
    assert all(r.submit == submit for r in parsable2.records)  # submitted together
    arr = [r.job_id for r in parsable2.records if r.name == "arr"]
    base = arr[0].split("_")[0]
    assert arr == [f"{base}_1", f"{base}_2"]  # array tasks stay separate jobs


def test_plain_gpu_and_multinode_jobs(parsable2: Trace) -> None:
    jobs = by_name(parsable2)
    plain = jobs["plain"]
    assert (plain.user, plain.partition, plain.line) == ("root", "debug", 2)
    assert (plain.gpus, plain.cpus, plain.mem_mb, plain.nodes) == (0, 2, 2048, 1)
    assert plain.start is not None and plain.end is not None and plain.duration_s is not None
    assert plain.end - plain.start == plain.duration_s > 0
    assert (plain.time_limit_s, plain.state) == (300, JobState.COMPLETED)
    assert plain.extra_value("exit_code") == "0:0"
    gpu = jobs["gpu2"]  # --gres=gpu:2
    assert (gpu.gpus, gpu.cpus, gpu.mem_mb, gpu.nodes) == (2, 1, 1024, 1)
    multi = jobs["multi"]  # -N2 --gres=gpu:1 (per node) --cpus-per-task=2 --mem=1G (per node)
    assert (multi.gpus, multi.cpus, multi.mem_mb, multi.nodes) == (2, 4, 2048, 2)
    assert multi.extra_value("node_list") == "node[1-2]"


def test_hetjob_components_are_summed(parsable2: Trace) -> None:
    het = by_name(parsable2)["het"]  # +0: 2 tasks gpu:2 3G; +1: 1 task gpu:1 1G
    assert (het.gpus, het.cpus, het.mem_mb, het.nodes) == (3, 3, 4096, 2)
    assert het.time_limit_s == 420 and het.state is JobState.COMPLETED
    assert het.extra_value("het_components") == "2"
    assert het.line == 11  # the line of component +0
    assert "+" not in het.job_id


def test_states_limits_and_never_ran(parsable2: Trace) -> None:
    jobs = by_name(parsable2)
    assert jobs["perc"].time_limit_s is None  # -t UNLIMITED
    assert jobs["perc"].mem_mb == 1500  # --mem-per-cpu=1500M, one CPU
    fails = jobs["fails"]
    assert (fails.state, fails.extra_value("exit_code")) == (JobState.FAILED, "1:0")
    killed = jobs["killed"]
    assert killed.state is JobState.CANCELLED and (killed.duration_s or 0) > 0
    later = jobs["later"]  # --begin=now+1hour, cancelled while pending: kept, never ran
    assert later.state is JobState.CANCELLED and later.start is None and not later.ran
    assert (later.duration_s, later.time_limit_s) == (0, None)  # Partition_Limit
    assert later.end is not None and later.end >= later.submit
    overrun = jobs["overrun"]
    assert (overrun.state, overrun.time_limit_s) == (JobState.TIMEOUT, 60)
    assert (overrun.duration_s or 0) > 60


def comparable(record: TraceRecord) -> dict[str, object]:
    out = asdict(record)
    for key in ("source", "line", "extra"):
        out.pop(key)
    return out


@pytest.mark.parametrize(
    "name",
    ["sacct-parsable2-epoch.txt", "sacct-parsable.txt", "sacct-parsable2-all.txt", "sacct.json"],
)
def test_every_capture_gives_the_same_jobs(version: str, parsable2: Trace, name: str) -> None:
    """--parsable (trailing '|'), SLURM_TIME_FORMAT=%s, --format=ALL and --json all read to
    the same records as --parsable2 with the recommended fields."""
    other = read_trace(SACCT_FIXTURES / version / name)
    assert other.skipped == 0
    mine, theirs = by_id(parsable2), by_id(other)
    assert sorted(mine) == sorted(theirs)
    for job_id, record in mine.items():
        assert comparable(theirs[job_id]) == comparable(record), job_id


def test_json_layout_and_lines(version: str) -> None:
    trace = read_trace(SACCT_FIXTURES / version / "sacct.json")
    assert trace.format == "sacct-json"
    assert trace.notes[0] == LAYOUTS[version]
    jobs = by_name(trace)
    assert jobs["plain"].line == 1  # index in "jobs"
    assert jobs["fails"].state is JobState.FAILED
    # the job exited 1: 24.11's JSON says so, 22.05's (dbv0.0.38) prints return_code 0 and
    # status SUCCESS for it (while --parsable2 shows ExitCode 1:0); kept as printed
    assert jobs["fails"].extra_value("exit_code") == {"22.05": "0", "24.11": "1"}[version]
    assert jobs["later"].start is None  # 24.11 prints NO_VAL (4294967294) here


def test_default_fields_are_refused_with_the_format_to_use(version: str) -> None:
    with pytest.raises(InputError) as err:
        read_trace(SACCT_FIXTURES / version / "sacct-parsable2-default.txt")
    assert "line 1: missing field(s) Submit" in err.value.message
    assert SACCT_FORMAT in err.value.hint


def test_detection_of_captures(version: str) -> None:
    for name in ("sacct-parsable2.txt", "sacct-parsable.txt", "sacct-parsable2-all.txt"):
        assert detect_format((SACCT_FIXTURES / version / name).read_text()[:4096]) == "sacct"
    head = (SACCT_FIXTURES / version / "sacct.json").read_text()[:4096]
    assert detect_format(head) == "sacct-json"


# --- forms the lab cannot produce (hand-written) ------------------------------------------

HEADER = "JobID|JobName|User|State|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|ReqMem|ReqTRES"


def parse(*rows: str, **opts: object) -> Trace:
    return parse_sacct([HEADER, *rows], ReadOptions(**opts))  # type: ignore[arg-type]


def test_long_durations_typed_gres_and_old_reqmem() -> None:
    trace = parse(
        "10|big|ann|COMPLETED|2024-01-01T00:00:00|2024-01-01T01:00:00|2024-01-03T03:04:05|"
        "2-02:04:05|3-00:00:00|2|16|4000Mn|cpu=16,gres/gpu:a100=8,node=2",
        "11|old|bob|TIMEOUT|2024-01-01T00:00:00|2024-01-01T00:00:10|2024-01-01T12:00:10|"
        "12:00:00|12:00:00|1|4|1500Mc|",
        "12|days|cy|RUNNING|2024-01-01T00:00:00|2024-01-01T00:00:01|Unknown|"
        "1-00:00:00|5-12|1|1|1G|cpu=1,mem=1G,node=1",
    )
    big, old, days = trace.records
    assert (big.duration_s, big.time_limit_s) == (2 * 86400 + 2 * 3600 + 245, 3 * 86400)
    assert (big.gpus, big.cpus, big.nodes, big.mem_mb) == (8, 16, 2, 8000)  # 4000 MiB per node
    assert (old.gpus, old.mem_mb) == (None, 6000)  # no TRES: GPUs unknown; 1500 MiB per CPU
    assert days.time_limit_s == 5 * 86400 + 12 * 3600 and days.end is None
    assert days.state is JobState.RUNNING


def test_tz_orphan_steps_and_duplicates() -> None:
    trace = parse(
        "20|a|u|COMPLETED|2024-07-01T12:00:00|2024-07-01T12:00:00|2024-07-01T12:01:00|"
        "00:01:00|00:10:00|1|1|1G|cpu=1,mem=1G,node=1",
        "20.batch|batch||COMPLETED|2024-07-01T12:00:00|2024-07-01T12:00:00|"
        "2024-07-01T12:01:00|00:01:00||1|1||",
        "21.0|step||COMPLETED|2024-07-01T12:00:00|2024-07-01T12:00:00|"
        "2024-07-01T12:01:00|00:01:00||1|1||",
        "20|a|u|COMPLETED|2024-07-01T12:00:00|2024-07-01T12:05:00|2024-07-01T12:07:00|"
        "00:02:00|00:10:00|1|1|1G|cpu=1,mem=1G,node=1",
        tz="Europe/Paris",
    )
    (job,) = trace.records
    assert job.submit == 1719828000  # 12:00 in Paris (CEST) = 10:00 UTC
    assert job.duration_s == 120  # the last of the duplicate rows
    assert "1 step rows folded into their jobs" in trace.notes
    assert any(
        "1 step rows of 1 jobs without a job row ignored (jobs 21)" in n for n in trace.notes
    )
    assert "1 duplicate job rows (requeued runs): kept the last" in trace.notes
    assert "Submit/Start/End have no zone in sacct's output: read as Europe/Paris" in trace.notes


def test_other_delimiter_and_unknown_state() -> None:
    trace = parse_sacct(
        [
            "JobID;Submit;State",
            "7;2024-01-01T00:00:00;COMPLETED",
            "8;2024-01-01T00:00:00;WEIRD_STATE",
        ]
    )
    assert [r.state for r in trace.records] == [JobState.COMPLETED, JobState.UNKNOWN]
    assert "state words not recognized, kept as 'unknown': 'WEIRD_STATE' ×1" in trace.notes


# --- malformed JSON --------------------------------------------------------------------


def test_json_errors_name_the_entry_and_path(tmp_path: Path) -> None:
    doc = json.loads((SACCT_FIXTURES / "24.11" / "sacct.json").read_text())
    doc["jobs"][1]["time"]["submission"] = "yesterday"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert "job entry 2: field 'time.submission'" in err.value.message
    assert "'yesterday'" in err.value.message and "--skip-bad" in err.value.hint
    trace = read_trace(path, skip_bad=True)
    assert len(trace) == 10 and "gpu2" not in by_name(trace)
    assert trace.skipped == 1 and trace.skipped_lines[0].line == 2
    path.write_text('{"jobs": [')
    with pytest.raises(InputError, match="not valid JSON"):
        read_trace(path)
