"""The held-out cells (bench/holdout.py) are what they claim: no sweep or policy-table
cell has their workload, shape, load and seed; Philly's windows lie after the jobs the
sweep replays; each window holds the 2,000 jobs asked."""

from __future__ import annotations

from bench.holdout import HOLDOUT_LOAD, HOLDOUT_SEED, HOLDOUT_SHAPE, PHILLY_SINCE, holdout_cells
from bench.sweep import LOADS, PHILLY_JOBS, cells
from slurm_mlsched.services.replay import prepare_jobs
from slurm_mlsched.traces import read_trace
from slurm_mlsched.traces.window import parse_bound
from tests.traces.trace_files import TRACES, need


def test_no_held_out_cell_is_a_sweep_cell() -> None:
    held = holdout_cells()
    assert len(held) == 24 and len({c.key for c in held}) == 24
    sweep = cells()
    assert not {c.key for c in held} & {c.key for c in sweep}
    assert HOLDOUT_SHAPE not in {c.shape for c in sweep}
    assert HOLDOUT_LOAD not in LOADS and HOLDOUT_SEED not in {c.seed for c in sweep}
    assert all(c.since is None for c in sweep)


def test_phillys_windows_start_after_the_jobs_the_sweep_replays() -> None:
    trace = read_trace(need(TRACES / "philly-pollux" / "philly.csv"))
    submits = sorted(r.submit for r in trace.records)
    last_swept = submits[PHILLY_JOBS - 1]
    for since in PHILLY_SINCE:
        start = parse_bound(
            since, "--since", time_base=trace.time_base, tz=trace.zone, first_submit=submits[0]
        )
        assert start > last_swept + 14 * 86400  # weeks after the sweep's last Philly job
        assert sum(s >= start for s in submits) > PHILLY_JOBS


def test_a_held_out_philly_cell_replays_its_2000_jobs() -> None:
    need(TRACES / "philly-pollux" / "philly.csv")
    cell = next(c for c in holdout_cells() if c.since == PHILLY_SINCE[-1] and c.shape == "6x8")
    prepared = prepare_jobs(cell.options())
    assert len(prepared.admitted) + len(prepared.unplaceable) == PHILLY_JOBS
    assert any("window --since 2017-12-04" in n for n in prepared.data.notes)
