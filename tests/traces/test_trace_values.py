"""The value parsers every reader shares: Slurm durations and limits, timestamps, TRES,
memory, states."""

from __future__ import annotations

import pytest

from slurm_mlsched.traces.record import JobState
from slurm_mlsched.traces.values import (
    normalize_state,
    parse_pandas_timedelta,
    parse_req_mem,
    parse_slurm_duration,
    parse_slurm_time,
    parse_time_limit,
    parse_time_limit_minutes,
    parse_timestamp,
    tres_resources,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:00:03", 3),  # sacct Elapsed, HH:MM:SS
        ("01:05:00", 3900),
        ("1-02:03:04", 93784),  # D-HH:MM:SS
        ("12-00:00:00", 12 * 86400),
        ("05:30", 330),  # MM:SS
        ("2-12", 216000),  # D-HH
        ("3-04:05", 3 * 86400 + 4 * 3600 + 5 * 60),  # D-HH:MM
        ("30", 1800),  # a bare number is minutes (sbatch -t 30)
        ("00:01.500", 1.5),  # MM:SS.mmm (TotalCPU)
    ],
)
def test_slurm_durations(text: str, seconds: float) -> None:
    assert parse_slurm_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "1:2:3:4", "-5", "1-", "x-01:00:00"])
def test_bad_durations_raise(text: str) -> None:
    with pytest.raises(ValueError, match="not a Slurm duration"):
        parse_slurm_duration(text)


@pytest.mark.parametrize("word", ["UNLIMITED", "Partition_Limit", "INVALID", "", "None"])
def test_time_limit_words_mean_no_limit(word: str) -> None:
    assert parse_time_limit(word) is None
    assert parse_time_limit_minutes(word) is None


def test_time_limits() -> None:
    assert parse_time_limit("00:05:00") == 300
    assert parse_time_limit("1-00:00:00") == 86400
    assert parse_time_limit_minutes("7") == 420  # TimelimitRaw is in minutes


def test_timestamps_with_and_without_zone() -> None:
    assert parse_timestamp("2026-11-29T17:12:59") == 1795972379  # naive: UTC by default
    assert parse_timestamp("2012-12-13 00:00:35+00:00") == 1355356835
    # Philly is US Pacific: 07:01:55 PDT = 14:01:55 UTC (checked with `TZ=… date -d … +%s`)
    assert parse_timestamp("2017-10-09 07:01:55", "America/Los_Angeles") == 1507557715
    with pytest.raises(ValueError, match="unknown time zone"):
        parse_timestamp("2017-10-09 07:01:55", "Mars/Olympus")
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_timestamp("yesterday")


def test_slurm_time_fields() -> None:
    assert parse_slurm_time("None") is None  # Start of a job that never ran
    assert parse_slurm_time("Unknown") is None  # End of a running job
    assert parse_slurm_time("1795972379") == 1795972379  # SLURM_TIME_FORMAT=%s
    assert parse_slurm_time("2026-11-29T17:12:59", "UTC") == 1795972379


def test_pandas_timedelta() -> None:
    assert parse_pandas_timedelta("0 days 00:40:00.000000000") == 2400
    assert parse_pandas_timedelta("2 days 01:00:00") == 2 * 86400 + 3600
    assert parse_pandas_timedelta("NaT") is None
    with pytest.raises(ValueError, match="Timedelta"):
        parse_pandas_timedelta("40 minutes")


def test_tres_with_units_and_gpus() -> None:
    assert tres_resources("billing=2,cpu=2,gres/gpu=2,mem=3G,node=1") == {
        "cpu": 2,
        "gpu": 2,
        "mem": 3072,
        "node": 1,
    }
    assert tres_resources("cpu=1,mem=1500M,node=1")["mem"] == 1500
    assert tres_resources("cpu=1,mem=512K")["mem"] == 0.5
    assert tres_resources("cpu=64,mem=2T")["mem"] == 2 * 1024 * 1024
    assert tres_resources("cpu=4,mem=4000")["mem"] == 4000  # bare number: MiB
    # the untyped total wins; typed entries are not counted twice
    assert tres_resources("cpu=8,gres/gpu=4,gres/gpu:a100=4")["gpu"] == 4
    assert tres_resources("cpu=8,gres/gpu:a100=2,gres/gpu:v100=1")["gpu"] == 3
    assert tres_resources("") == {}
    with pytest.raises(ValueError):
        tres_resources("cpu=two")
    with pytest.raises(ValueError, match="no '='"):
        tres_resources("cpu")


def test_req_mem_old_and_new() -> None:
    assert parse_req_mem("2G") == (2048, "job")
    assert parse_req_mem("4000Mn") == (4000, "node")  # before 21.08: per node
    assert parse_req_mem("1500Mc") == (1500, "cpu")  # before 21.08: per CPU


@pytest.mark.parametrize(
    ("word", "state"),
    [
        ("COMPLETED", JobState.COMPLETED),
        ("CANCELLED by 0", JobState.CANCELLED),
        ("CANCELLED+", JobState.CANCELLED),
        ("TIMEOUT", JobState.TIMEOUT),
        ("NODE_FAIL", JobState.NODE_FAIL),
        ("OUT_OF_MEMORY", JobState.OUT_OF_MEMORY),
        ("PREEMPTED", JobState.PREEMPTED),
        ("RUNNING", JobState.RUNNING),
        ("PENDING", JobState.PENDING),
        ("REQUEUED", JobState.PENDING),
        ("BOOT_FAIL", JobState.NODE_FAIL),
        ("DEADLINE", JobState.TIMEOUT),
        ("failed", JobState.FAILED),
        ("killed", JobState.CANCELLED),
        ("Pass", JobState.COMPLETED),
    ],
)
def test_states(word: str, state: JobState) -> None:
    assert normalize_state(word) is state


def test_unknown_state_word() -> None:
    assert normalize_state("EXPLODED") is None
