"""The readers on the real public traces in ../shared/traces (facts from its README.md,
checked independently where the README gives them)."""

from __future__ import annotations

import csv
import gzip
import shutil
import statistics
from collections import Counter
from pathlib import Path

import pytest

from slurm_mlsched.traces import (
    JobState,
    ReadOptions,
    TimeBase,
    Trace,
    detect_format,
    parse_philly,
    read_trace,
)
from slurm_mlsched.traces.reader import read_head
from tests.traces.trace_files import (
    MUSTANG_LARGE,
    MUSTANG_MIXED,
    PHILLY,
    POLLUX,
    SIA,
    SWF,
    TRACES,
    need,
)

# --- Philly ------------------------------------------------------------------------------


def test_philly_counts(philly: Trace) -> None:
    assert philly.format == "philly"
    assert len(philly) == 82_247
    assert philly.skipped == 0
    assert philly.time_base is TimeBase.EPOCH
    gpus = Counter(r.gpus for r in philly.records)
    # README §1: the GPU-count histogram
    assert gpus == {
        1: 76_627,
        2: 1_818,
        4: 1_870,
        8: 1_643,
        12: 7,
        16: 199,
        24: 7,
        32: 67,
        64: 6,
        128: 3,
    }
    assert len({r.partition for r in philly.records}) == 15  # virtual clusters
    assert statistics.median(r.duration_s or 0 for r in philly.records) == 1144
    assert max(r.duration_s or 0 for r in philly.records) == 4_628_226


def test_philly_rows(philly: Trace) -> None:
    first = philly.records[0]  # 2017-10-09 07:01:55,66.0,1,66.0,11cb48
    assert first.line == 2 and first.job_id == "2"
    assert first.submit == 1507557715  # 07:01:55 US Pacific (PDT)
    assert (first.duration_s, first.gpus, first.partition) == (66.0, 1, "11cb48")
    assert first.start is None and first.state is JobState.UNKNOWN and first.user is None
    last = philly.records[-1]  # 2017-11-08 07:33:10,1896.0,1,1896.0,6c71a0 (PST by then)
    assert last.line == 82_248
    assert last.submit == 1510155190
    # README: range 2017-09-04 10:30:41 … 2017-12-22 08:02:11 Pacific
    assert min(r.submit for r in philly.records) == 1504546241  # 17:30:41 UTC
    assert max(r.submit for r in philly.records) == 1513958531  # 16:02:11 UTC


def test_philly_gpu_time_column_agrees(philly: Trace) -> None:
    """gpu_time = duration × num_gpus on every row (README): our values reproduce it."""
    with PHILLY.open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["timestamp"]]
    assert len(rows) == len(philly)
    for row, rec in zip(rows, philly.records, strict=True):
        assert float(row["gpu_time"]) == (rec.duration_s or 0) * (rec.gpus or 0)


def test_philly_tz_can_be_overridden() -> None:
    with need(PHILLY).open() as f:
        head = [next(f) for _ in range(3)]  # the whole file is read once, by the fixture
    utc = parse_philly(head, ReadOptions(tz="UTC"))
    assert utc.records[0].submit == 1507557715 - 7 * 3600
    assert "read as UTC" in utc.notes[0]


# --- Pollux / Sia ------------------------------------------------------------------------


@pytest.mark.parametrize("path", POLLUX + SIA, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_workloads_have_160_jobs(path: Path) -> None:
    trace = read_trace(need(path))
    assert trace.format == "pollux"
    assert len(trace) == 160 and trace.skipped == 0
    assert trace.time_base is TimeBase.OFFSET
    with path.open(newline="") as f:
        raw = list(csv.DictReader(f))
    for row, rec in zip(raw, trace.records, strict=True):
        assert rec.job_id == row["name"] and rec.model == row["application"]
        assert rec.workers == rec.gpus == int(row["num_replicas"])
        assert rec.submit == float(row["time"])
        assert rec.duration_s is None  # model-driven: no run time


def test_pollux_and_sia_rows() -> None:
    need(TRACES / "philly-pollux" / "pollux-workloads")  # skip first on a clone without them
    need(TRACES / "helios-saturn-sia")
    assert len(POLLUX) == 8 and len(SIA) == 10
    pollux = read_trace(need(POLLUX[0])).records[0]  # cifar10-0,107,cifar10,6,2048
    assert (pollux.job_id, pollux.submit, pollux.model, pollux.workers) == (
        "cifar10-0",
        107,
        "cifar10",
        6,
    )
    assert pollux.extra_value("batch_size") == "2048"
    sia = read_trace(need(SIA[0])).records[0]  # cifar10-0,401.0,cifar10,12,4096
    assert (sia.job_id, sia.submit, sia.workers) == ("cifar10-0", 401.0, 12)
    models = Counter(r.model for p in SIA for r in read_trace(p).records)
    assert sum(models.values()) == 1600
    assert models["cifar10"] / 1600 == pytest.approx(0.83, abs=0.01)  # README: ~83 % cifar10
    assert set(models) <= {"cifar10", "imagenet", "bert", "yolov3", "deepspeech2", "ncf"}


# --- LANL Mustang ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "jobs", "users", "nodes", "states", "never_started"),
    [
        (
            MUSTANG_LARGE,
            518,
            21,
            (128, 1029),
            {"completed": 353, "cancelled": 101, "timeout": 64},
            24,
        ),
        (
            MUSTANG_MIXED,
            1023,
            44,
            (4, 683),
            {"completed": 666, "timeout": 195, "cancelled": 162},
            39,
        ),
    ],
    ids=["2012-02-07", "2012-12-13"],
)
def test_mustang(
    path: Path,
    jobs: int,
    users: int,
    nodes: tuple[int, int],
    states: dict[str, int],
    never_started: int,
) -> None:
    trace = read_trace(need(path))
    assert trace.format == "mustang" and len(trace) == jobs and trace.skipped == 0
    assert len({r.user for r in trace.records}) == users
    counts = [r.nodes or 0 for r in trace.records]
    assert (statistics.median(counts), max(counts)) == nodes
    assert Counter(r.state.value for r in trace.records) == states
    # jobs cancelled while pending are kept, with no start and no run time
    pending = [r for r in trace.records if r.start is None]
    assert len(pending) == never_started
    assert all(r.state is JobState.CANCELLED and r.duration_s is None for r in pending)
    assert all(r.gpus == 0 for r in trace.records)


def test_mustang_rows() -> None:
    trace = read_trace(need(MUSTANG_MIXED))
    # 72,72,2012-12-13 00:00:35+00:00,2012-12-13 00:00:45+00:00,2012-12-13 00:00:56+00:00,
    # 0 days 00:01:00.000000000,COMPLETED,1,24
    first = trace.records[0]
    assert (first.job_id, first.line, first.user) == ("2", 2, "72")
    assert (first.submit, first.start, first.end) == (1355356835, 1355356845, 1355356856)
    assert (first.duration_s, first.time_limit_s) == (11, 60)
    assert (first.nodes, first.cpus, first.state) == (1, 24, JobState.COMPLETED)
    assert sum(1 for r in trace.records if r.nodes == 0) == 18  # README: a few rows have 0


# --- SWF ---------------------------------------------------------------------------------


def test_swf_gz() -> None:
    trace = read_trace(need(SWF))
    assert trace.format == "swf" and len(trace) == 18_239 and trace.skipped == 0
    assert trace.time_base is TimeBase.EPOCH
    first = trace.records[0]  # "1 0 -1 1451 128 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1"
    assert first.line == 33  # after the 32 header lines
    assert (first.job_id, first.submit, first.duration_s, first.cpus) == ("1", 749458803, 1451, 128)
    assert first.start is None  # wait time -1 (unknown)
    assert (first.user, first.gpus, first.state) == ("1", 0, JobState.UNKNOWN)
    last = trace.records[-1]  # "42264 7948936 -1 86 128 … 12 2 …"
    assert (last.job_id, last.submit, last.duration_s, last.user) == (
        "42264",
        749458803 + 7948936,
        86,
        "12",
    )
    assert any("UnixStartTime 749458803" in n for n in trace.notes)


def test_swf_plain_and_gz_without_suffix(tmp_path: Path) -> None:
    plain = tmp_path / "nasa.swf"
    with gzip.open(need(SWF), "rb") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    disguised = tmp_path / "nasa.log"  # gzip found by its magic bytes, not by its name
    shutil.copy(SWF, disguised)
    for path in (plain, disguised):
        trace = read_trace(path)
        assert trace.format == "swf" and len(trace) == 18_239
        assert trace.records[0].submit == 749458803


# --- auto-detection ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (PHILLY, "philly"),
        (POLLUX[0], "pollux"),
        (SIA[0], "pollux"),
        (MUSTANG_MIXED, "mustang"),
        (MUSTANG_LARGE, "mustang"),
        (SWF, "swf"),
    ],
    ids=["philly", "pollux", "sia", "mustang-mixed", "mustang-large", "swf"],
)
def test_each_real_file_is_detected(path: Path, fmt: str) -> None:
    assert detect_format(read_head(need(path))) == fmt
