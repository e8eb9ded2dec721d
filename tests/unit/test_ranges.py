"""One set of value ranges and converters for every edge (slurm_mlsched/ranges.py): the
converters' answers, and that job options, cluster files and trace records use them."""

from __future__ import annotations

import math

import pytest

from slurm_mlsched import ranges
from slurm_mlsched.errors import InputError
from slurm_mlsched.files.job_options import OPTIONS
from slurm_mlsched.ranges import OutOfRange, Range


def test_whole_numbers() -> None:
    rng = Range(1, 10)
    assert ranges.whole("4", rng) == 4 and ranges.whole(4.0, rng) == 4 and ranges.whole(10, rng)
    for bad, says in (("x", "whole"), (True, "whole"), (2.5, "whole"), (0, "from 1 to 10"),
                      (11, "from 1 to 10"), ("1" + "0" * 30, "from 1 to 10")):  # fmt: skip
        with pytest.raises(OutOfRange, match=says):
            ranges.whole(bad, rng)


def test_numbers_are_finite_and_bounded() -> None:
    rng = Range(0, 5, above=True)
    assert ranges.number("0.5", rng) == 0.5
    for bad in (0, -1, 6, "nan", "inf", math.inf, 10**400, "x", None, False):
        with pytest.raises(OutOfRange):
            ranges.number(bad, rng)


def test_memory() -> None:
    assert ranges.memory_mib("8G", ranges.JOB_MEM_MIB) == 8192
    assert ranges.memory_mib(512, ranges.JOB_MEM_MIB) == 512
    for bad, says in (("0", "above 0 and at most 1P"), ("2P", "above 0 and at most 1P"),
                      ("8Q", "not a memory size"), (True, "memory size")):  # fmt: skip
        with pytest.raises(OutOfRange, match=says):
            ranges.memory_mib(bad, ranges.JOB_MEM_MIB)


def test_every_edge_uses_the_same_ranges(tmp_path: object) -> None:
    from pathlib import Path

    from slurm_mlsched.files.cluster_file import load_cluster
    from slurm_mlsched.traces.bounds import check
    from slurm_mlsched.traces.record import TimeBase, TraceRecord
    from slurm_mlsched.traces.rows import BadField

    # job options: one more worker than TASKS allows is refused with its words
    flag, convert = OPTIONS["workers"]
    with pytest.raises(InputError, match=ranges.TASKS.words(whole=True)):
        convert(flag, int(ranges.TASKS.hi) + 1)
    assert convert(flag, int(ranges.TASKS.hi)) == ranges.TASKS.hi
    # cluster files: a group of more nodes than GROUP_NODES
    path = Path(str(tmp_path)) / "c.yaml"
    too_many = int(ranges.GROUP_NODES.hi) + 1
    path.write_text(f"groups:\n  - {{prefix: n, count: {too_many}, gpus: 1, cpus: 1, mem_gb: 1}}\n")
    with pytest.raises(InputError, match=ranges.GROUP_NODES.words(whole=True)):
        load_cluster(path)
    # trace records: one GPU more than TRACE_COUNT
    rec = TraceRecord("j", 1.0e9, "x", 1, gpus=int(ranges.TRACE_COUNT.hi) + 1)
    with pytest.raises(BadField, match="1,000,000"):
        check(rec, TimeBase.EPOCH)
    check(
        TraceRecord("j", ranges.DATES.lo, "x", 1, gpus=int(ranges.TRACE_COUNT.hi)), TimeBase.EPOCH
    )
