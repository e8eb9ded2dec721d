"""Malformed input: an error names the file, line, field and value and hints at --skip-bad;
with skip_bad the line is skipped, counted and listed. Whole-file problems (unknown
format, missing columns, bad encoding) are never skipped."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.traces import read_trace
from tests.traces.trace_files import SACCT_FIXTURES

PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:01:55,66.0,1,66.0,11cb48
2017-10-09 06:13:03,2951.0,two,2951.0,6214e9
2017-10-09 06:13:36,2759.0,1,2759.0,6214e9
"""
POLLUX = """name,time,application,num_replicas,batch_size
cifar10-0,soon,cifar10,6,2048
ncf-2,135,ncf,1,32768
"""
LIMIT = "0 days 00:01:00.000000000"
MUSTANG = "\n".join(
    [
        "user_ID,group_ID,submit_time,start_time,end_time,wallclock_limit,job_status,"
        "node_count,tasks_requested",
        "72,72,2012-12-13 00:00:35+00:00,2012-12-13 00:00:45+00:00,2012-12-13 00:00:56+00:00,"
        f"{LIMIT},COMPLETED,1,24",
        # one field short
        "72,72,2012-12-13 00:01:18+00:00,2012-12-13 00:01:29+00:00,2012-12-13 00:01:41+00:00,"
        f"{LIMIT},COMPLETED,2",
        "72,72,2012-12-13 00:01:34+00:00,,2012-12-13 00:07:53+00:00,forty minutes,"
        "CANCELLED,100,2400",
        "",
    ]
)
SWF = """; Version: 2.2
; UnixStartTime: 749458803
    1        0     -1   1451  128     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1
    2     1460     -1   3726  128     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1
    3     5198     -1   1067  abc     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1
    4     6269     -1  10927  128     -1    -1   -1     -1    -1  1   2   1  -1 -1 -1 -1 -1
"""
SACCT = """JobID|JobName|State|Submit|Start|End|Elapsed|Timelimit|ReqTRES
1|a|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:00:03|00:00:02|00:05:00|cpu=1,mem=1G,node=1
2|b|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:00:03|1:2:3:4|00:05:00|cpu=1,mem=1G,node=1
3+0|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:00:03|00:00:02|00:05:00|cpu=1,mem=lots,node=1
3+1|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:00:03|00:00:02|00:05:00|cpu=1,mem=1G,node=1
3+1.0|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:00:03|00:00:02||
x9|d|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:00:03|00:00:02|00:05:00|cpu=1
4|e|COMPLETED|2024-01-01T00:00:00
5|f|PENDING|2024-01-01T00:00:00|None|Unknown|00:00:00|Partition_Limit|cpu=1,mem=1G,node=1
"""
GENERIC = """id,queued,gpus
a,1700000100,2
b,1700000200,lots
c,1700000300,
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("name", "text", "fmt", "first_bad", "skipped", "kept", "columns"),
    [
        ("philly.csv", PHILLY, "philly", (3, "num_gpus", "'two'"), [3], 2, None),
        ("w.csv", POLLUX, "pollux", (2, "time", "'soon'"), [2], 1, None),
        ("m.csv", MUSTANG, "mustang", (3, "(row)", "8 fields, the header has 9"), [3, 4], 1, None),
        ("t.swf", SWF, "swf", (4, "(row)", "17 fields, SWF has 18"), [4, 5], 2, None),
        ("s.txt", SACCT, "sacct", (3, "Elapsed", "'1:2:3:4'"), [3, 4, 5, 7, 8], 2, None),
        (
            "g.csv",
            GENERIC,
            "csv",
            (3, "gpus", "'lots'"),
            [3],
            2,
            "job_id=id,submit=queued,gpus=gpus,time_format=epoch",
        ),
    ],
)
def test_first_bad_line_is_named_then_skip_bad_counts(
    tmp_path: Path,
    name: str,
    text: str,
    fmt: str,
    first_bad: tuple[int, str, str],
    skipped: list[int],
    kept: int,
    columns: str | None,
) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(InputError) as err:
        read_trace(path, columns=columns)
    line, field, value = first_bad
    message = err.value.message
    assert message.startswith(f"{path}, line {line}: field '{field}'"), message
    assert value in message
    assert "--skip-bad" in err.value.hint
    assert err.value.context["line"] == line and err.value.context["format"] == fmt
    trace = read_trace(path, columns=columns, skip_bad=True)
    assert trace.format == fmt
    assert [s.line for s in trace.skipped_lines] == skipped
    assert trace.skipped == len(skipped)
    assert len(trace) == kept


def test_sacct_skips_name_the_reason(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, "s.txt", SACCT), skip_bad=True)
    reasons = {s.line: (s.field, s.reason) for s in trace.skipped_lines}
    assert reasons[4][0] == "ReqTRES"  # 3+0: mem=lots
    assert reasons[5] == ("JobID", "another row of this job is malformed")  # 3+1 goes too
    assert reasons[7][0] == "JobID"  # x9
    assert reasons[8] == ("(row)", "4 fields, the header has 9")
    # the job that never ran is kept, with its state: the consumer decides
    assert [r.job_id for r in trace.records] == ["1", "5"]
    assert trace.records[1].start is None


def test_unknown_format_lists_the_formats(tmp_path: Path) -> None:
    path = write(tmp_path, "x.txt", "hello,world\n1,2\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert "cannot tell the trace format" in err.value.message
    for fmt in ("sacct", "sacct-json", "philly", "pollux", "mustang", "swf", "csv"):
        assert fmt in err.value.hint
    with pytest.raises(InputError, match="unknown trace format 'slurm'"):
        read_trace(path, format="slurm")
    with pytest.raises(InputError, match="needs a column map"):
        read_trace(path, format="csv")
    with pytest.raises(InputError, match="--columns applies to --format csv only"):
        read_trace(path, format="philly", columns="submit=hello")


def test_forced_format_with_missing_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "x.csv", "timestamp,duration\n2017-10-09 07:01:55,66\n")
    with pytest.raises(InputError) as err:
        read_trace(path, format="philly", skip_bad=True)  # a whole-file problem: not skipped
    assert "line 1: missing column(s) num_gpus" in err.value.message


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read trace file .*No such file"):
        read_trace(tmp_path / "absent.csv")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(PHILLY.replace("11cb48", "caf\xe9").encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        read_trace(latin, format="philly")
    truncated = tmp_path / "cut.swf.gz"
    truncated.write_bytes(gzip.compress(SWF.encode() * 50)[:-40])
    with pytest.raises(InputError, match="cannot read trace file"):
        read_trace(truncated, format="swf", skip_bad=True)
    empty = write(tmp_path, "empty.txt", "\n\n")
    with pytest.raises(InputError, match="cannot tell the trace format"):
        read_trace(empty)


def test_json_entry_that_is_not_an_object(tmp_path: Path) -> None:
    text = (SACCT_FIXTURES / "22.05" / "sacct.json").read_text()
    path = write(tmp_path, "s.json", text.replace('"jobs": [', '"jobs": [42, ', 1))
    with pytest.raises(InputError, match="job entry 1: field '\\(entry\\)'"):
        read_trace(path)
    assert len(read_trace(path, skip_bad=True)) == 11
