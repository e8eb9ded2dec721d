"""The generic CSV reader and its column map (string or YAML/TOML file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.traces import (
    JobState,
    ReadOptions,
    TimeBase,
    column_map,
    parse_column_map,
    parse_generic,
    read_trace,
)

EXPORT = """job,queued_at,began,ended,gpu_count,cores,ram_gb,status,who,model
a1,2024-03-01 10:00:00,2024-03-01 10:05:00,2024-03-01 11:05:00,4,16,64,success,ann,resnet-50
a2,2024-03-01 10:30:00,,2024-03-01 10:31:00,8,32,,killed,bob,
"""


def test_column_map_string() -> None:
    cmap = parse_column_map(
        "submit=queued_at, start=began,gpus=gpu_count,time_unit=ms,tz=Asia/Tokyo"
    )
    assert cmap.columns == (("submit", "queued_at"), ("start", "began"), ("gpus", "gpu_count"))
    assert (cmap.time_unit, cmap.tz, cmap.time_format) == ("ms", "Asia/Tokyo", "iso")
    assert (
        cmap.describe() == "submit=queued_at,start=began,gpus=gpu_count,time_unit=ms,tz=Asia/Tokyo"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("start=began", "needs submit=COLUMN"),
        ("submit=a,colour=b", "unknown key 'colour'"),
        ("submit", "is not KEY=VALUE"),
        ("submit=a,submit=b", "'submit' is given twice"),
        ("submit=a,time_format=weekly", "time_format must be one of"),
        ("submit=a,time_unit=fortnight", "time_unit must be one of"),
        ("submit=a,mem_unit=Q", "mem_unit must be one of"),
        ("submit=a,delimiter=::", "delimiter must be one character"),
        ("submit=", "empty column name"),
    ],
)
def test_column_map_errors(text: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        parse_column_map(text)
    assert problem in err.value.message
    assert "submit=queued_at" in err.value.hint  # the hint shows the syntax


def test_read_an_export_through_a_map(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text(EXPORT)
    columns = (
        "job_id=job,submit=queued_at,start=began,end=ended,gpus=gpu_count,cpus=cores,"
        "mem=ram_gb,mem_unit=G,state=status,user=who,model=model"
    )
    trace = read_trace(path, columns=columns)  # format auto + columns = csv
    assert trace.format == "csv" and trace.time_base is TimeBase.EPOCH
    a1, a2 = trace.records
    assert (a1.job_id, a1.submit, a1.start, a1.end) == ("a1", 1709287200, 1709287500, 1709291100)
    assert (a1.duration_s, a1.gpus, a1.cpus, a1.mem_mb) == (3600, 4, 16, 64 * 1024)
    assert (a1.state, a1.user, a1.model) == (JobState.COMPLETED, "ann", "resnet-50")
    assert a2.start is None and a2.duration_s is None and a2.mem_mb is None
    assert a2.state is JobState.CANCELLED and a2.model is None and a2.line == 3


def test_yaml_and_toml_maps(tmp_path: Path) -> None:
    data = tmp_path / "export.csv"
    data.write_text(EXPORT.replace(",", ";"))
    yml = tmp_path / "map.yaml"
    yml.write_text(
        "columns:\n  submit: queued_at\n  end: ended\n  gpus: gpu_count\n"
        "delimiter: semicolon\ntz: Europe/Berlin\n"
    )
    toml = tmp_path / "map.toml"
    toml.write_text(
        'submit = "queued_at"\nend = "ended"\ngpus = "gpu_count"\ndelimiter = ";"\n'
        'tz = "Europe/Berlin"\n'
    )
    for spec in (str(yml), str(toml), yml, column_map(toml)):
        trace = read_trace(data, columns=spec)
        first = trace.records[0]
        assert first.submit == 1709283600  # 10:00 CET = 09:00 UTC
        assert first.gpus == 4 and first.duration_s is None  # no start: no run time
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(InputError, match="expected a mapping"):
        column_map(str(bad))
    with pytest.raises(InputError, match="cannot read the column map"):
        column_map(str(tmp_path / "missing.yaml"))


def test_numeric_times_offsets_patterns_and_slurm_durations() -> None:
    lines = [
        "t,run,limit,n",
        "1500,90,UNLIMITED,2",
        "3000,1-00:00:00,2:00:00,1",
    ]
    offset = parse_generic(
        lines,
        ReadOptions(
            columns=parse_column_map(
                "submit=t,duration=run,time_limit=limit,gpus=n,time_format=offset,"
                "time_unit=ms,duration_unit=min"
            )
        ),
    )
    assert offset.time_base is TimeBase.OFFSET
    first, second = offset.records
    assert (first.submit, first.duration_s, first.time_limit_s) == (1.5, 5400, None)
    assert (second.duration_s, second.time_limit_s) == (86400, 7200)
    pattern = parse_generic(
        ["when,g", "01/03/2024 10:00,1"],
        ReadOptions(columns=parse_column_map("submit=when,gpus=g,time_format=%d/%m/%Y %H:%M")),
    )
    assert pattern.records[0].submit == 1709287200


def test_columns_must_exist_and_times_must_match(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text(EXPORT)
    with pytest.raises(InputError) as err:
        read_trace(path, columns="submit=queued,gpus=gpu_count")
    assert "column(s) queued of the column map are not in the header" in err.value.message
    with pytest.raises(InputError) as err:
        read_trace(path, columns="submit=queued_at,time_format=epoch")
    assert "line 2: field 'queued_at'" in err.value.message
    assert "time_format=epoch" in err.value.message
