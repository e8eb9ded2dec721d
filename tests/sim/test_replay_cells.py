"""``mlsub replay --on-slurm`` without Slurm: the cells (services/replay/cells.py) run in
this process, then the merge (services/replay/merge.py).

* one slice and one seed give exactly the local replay's report (summary, per-job JCTs,
  series), except the measured times;
* several seeds give the mean over seeds, each seed's values being a local replay's;
* slices are contiguous chunks, each replayed alone;
* hand-made cells give hand-computed metrics;
* a failed, missing, foreign or inconsistent cell fails the merge loudly and writes nothing.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.errors import InputError, ReplayCellsFailed
from slurm_mlsched.model import Form
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.services.clock import FixedClock
from slurm_mlsched.services.replay import ReplayOptions, prepare_jobs, run_replay
from slurm_mlsched.services.replay.array import (
    SlurmReplayOptions,
    parse_seeds,
    prepare_array,
    submit_array,
    wait_array,
)
from slurm_mlsched.services.replay.cells import (
    ArrayPlan,
    Cell,
    CellDocument,
    absolute_options,
    cell_path,
    log_path,
    options_as_dict,
    options_from_dict,
    plan_cells,
    read_plan,
    run_cell,
    slice_range,
)
from slurm_mlsched.services.replay.merge import (
    REQUIRED_KEYS,
    mean_over_seeds,
    merge_dir,
    metrics_from_cells,
)
from slurm_mlsched.sim import SUMMARY_KEYS, compute_metrics, draw_utilities, simulate
from slurm_mlsched.slurm.arrays import ArrayStatusReader
from slurm_mlsched.slurm.runner import CommandResult, SlurmCommands
from tests.conftest import replay_job_list

CLOCK = FixedClock.from_iso("2026-01-01T00:00:00Z")
TIMED = {"wall_s", "decision_p50_ms", "decision_p99_ms"}
UNTIMED = [k for k in SUMMARY_KEYS if k not in TIMED]


def job_list(tmp_path: Path, n: int = 12) -> Path:
    return replay_job_list(tmp_path, n)


def philly(tmp_path: Path) -> Path:
    rows = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    for i in range(14):
        gpus = (1, 2, 4, 8)[i % 4]
        duration = 0.0 if i == 5 else 300.0 + 977.0 * i  # one ran 0 s: skipped
        rows.append(
            f"2017-10-09 07:{i * 3:02d}:{i:02d},{duration},{gpus},{duration * gpus},c{i % 3}"
        )
    path = tmp_path / "philly.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def on_cells(
    opts: ReplayOptions, seeds: Sequence[int] = (0,), slices: int = 1, run: bool = True
) -> Path:
    """Plan the array into opts.out_dir and run every cell here (what the tasks do)."""
    prepared = prepare_array(
        opts, SlurmReplayOptions(seeds=tuple(seeds), slices=slices), "/usr/bin/python3"
    )
    if run:
        for cell in prepared.plan.cells:
            run_cell(prepared.plan.out_dir, cell.index, CLOCK, {"host": "here"})
    return prepared.plan.out_dir


def untimed(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in TIMED}


def summary_untimed(summary: dict[str, Any]) -> dict[str, Any]:
    return {**summary, "policies": {p: untimed(m) for p, m in summary["policies"].items()}}


# --- planning ---------------------------------------------------------------------------


def test_cells_are_policy_by_seed_by_slice_and_the_first_policy_bounds() -> None:
    cells = plan_cells(("fifo-ff", "yu-rr"), (0, 7), 2)
    assert [(c.index, c.policy, c.seed, c.slice) for c in cells] == [
        (0, "fifo-ff", 0, 0), (1, "fifo-ff", 0, 1), (2, "fifo-ff", 7, 0), (3, "fifo-ff", 7, 1),
        (4, "yu-rr", 0, 0), (5, "yu-rr", 0, 1), (6, "yu-rr", 7, 0), (7, "yu-rr", 7, 1),
    ]  # fmt: skip
    assert [c.bound for c in cells] == [True] * 4 + [False] * 4
    assert cells[5].describe(2) == "cell 5 (yu-rr, seed 0, slice 2/2)"


@pytest.mark.parametrize(
    ("seeds", "slices", "message"),
    [((0, 0), 1, "repeats a seed"), ((), 1, "no seed"), ((0,), 0, "--slices must be >= 1")],
)
def test_bad_cell_plans(seeds: tuple[int, ...], slices: int, message: str) -> None:
    with pytest.raises(InputError, match=message):
        plan_cells(("fifo-ff",), seeds, slices)


def test_slices_tile_the_jobs_in_chunks_differing_by_at_most_one() -> None:
    for jobs in range(0, 40):
        for slices in range(1, 9):
            ranges = [slice_range(jobs, slices, i) for i in range(slices)]
            assert ranges[0][0] == 0 and ranges[-1][1] == jobs
            assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
            sizes = {hi - lo for lo, hi in ranges}
            assert max(sizes) - min(sizes) <= 1


def test_seeds_option() -> None:
    assert parse_seeds("0, 1,2,") == (0, 1, 2)
    for bad in ("", "a,b", "1.5"):
        with pytest.raises(InputError, match="--seeds"):
            parse_seeds(bad)


def test_options_round_trip_with_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.csv").write_text("x")
    (tmp_path / "link.csv").symlink_to(tmp_path / "data" / "real.csv")
    opts = ReplayOptions(
        trace=Path("link.csv"), policies=("yu-rr",), out_dir=Path("out"), cluster=Path("c.yaml"),
        form=Form.ELASTIC, columns="map.yaml", limit=5, tz="UTC",
    )  # fmt: skip
    got = absolute_options(opts)
    assert got.trace == tmp_path / "link.csv"  # the link, not its target: the name is kept
    assert (got.out_dir, got.cluster) == (tmp_path / "out", tmp_path / "c.yaml")
    assert got.columns == str(tmp_path / "map.yaml")
    assert absolute_options(replace(opts, columns="submit=t")).columns == "submit=t"
    assert options_from_dict(json.loads(json.dumps(options_as_dict(got)))) == got
    # an option added later is written only when set, and read back either way
    assert "preempt_max" not in options_as_dict(got)
    capped = replace(got, preempt_max=1000)
    assert options_from_dict(json.loads(json.dumps(options_as_dict(capped)))) == capped


# --- one slice, one seed: the local replay ------------------------------------------------


@pytest.mark.parametrize("kind", ["job-list", "philly"])
def test_one_slice_and_one_seed_give_the_local_report(tmp_path: Path, kind: str) -> None:
    trace = job_list(tmp_path) if kind == "job-list" else philly(tmp_path)
    policies = ("fifo-ff", "fifo-bf", "yu-rr", "drf")
    opts = ReplayOptions(trace=trace, policies=policies, nodes="2x8", seed=3)
    local = run_replay(replace(opts, out_dir=tmp_path / "local"), CLOCK)
    out = on_cells(replace(opts, out_dir=tmp_path / "slurm"), seeds=(3,))
    merged = merge_dir(out, job_id="4242")
    assert summary_untimed(merged.to_json()) == summary_untimed(local.to_json())
    written = json.loads((out / "summary.json").read_text())
    assert written == json.loads(json.dumps(merged.to_json()))
    details = json.loads((out / "metrics.json").read_text())
    mine = json.loads((tmp_path / "local" / "metrics.json").read_text())
    for policy in policies:  # every JCT, the series, the counts: the same
        assert untimed(details["details"][policy]) == untimed(mine["details"][policy])
    assert details["lp_bound"] == mine["lp_bound"]
    if kind == "job-list":
        assert merged.bound.value is not None  # the bound and its ratio were compared too
    assert details["on_slurm"]["job_id"] == "4242"
    assert [c["where"] for c in details["on_slurm"]["cells"]] == [{"host": "here"}] * 4
    distinct = 13 if kind == "job-list" else 14
    assert written["jobs"] + written["skipped"] + written["unplaceable"] == distinct
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "replayed on Slurm" in page


def test_several_seeds_report_the_mean_and_keep_each_seed(tmp_path: Path) -> None:
    opts = ReplayOptions(
        trace=philly(tmp_path), policies=("fifo-ff", "yu-rr"), nodes="2x4", lp_max_jobs=0
    )
    out = on_cells(replace(opts, out_dir=tmp_path / "slurm"), seeds=(0, 1, 2))
    merged = merge_dir(out).to_json()
    per_seed = json.loads((out / "metrics.json").read_text())["on_slurm"]["per_seed"]
    for seed in (0, 1, 2):
        local = run_replay(replace(opts, seed=seed), CLOCK).to_json()
        for policy in ("fifo-ff", "yu-rr"):
            assert untimed(per_seed[policy][str(seed)]) == {
                **untimed(local["policies"][policy]),
                **{k: per_seed[policy][str(seed)][k]
                   for k in ("placed", "rejected", "total_completion_slots")},
            }  # fmt: skip
    for policy in ("fifo-ff", "yu-rr"):
        for key in UNTIMED:
            values = [per_seed[policy][str(s)][key] for s in (0, 1, 2)]
            expected = None if None in values else statistics.fmean(values)
            assert merged["policies"][policy][key] == expected, key
    local0 = run_replay(opts, CLOCK).to_json()
    assert {k: merged[k] for k in ("jobs", "skipped", "unplaceable")} == {
        k: local0[k] for k in ("jobs", "skipped", "unplaceable")
    }


def test_slices_are_contiguous_chunks_replayed_alone(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=job_list(tmp_path, 10), policies=("fifo-ff",), nodes="1x4")
    out = on_cells(replace(opts, out_dir=tmp_path / "slurm"), slices=3)
    merged = merge_dir(out)
    jobs = prepare_jobs(opts)
    expected: list[float] = []
    for part in range(3):
        lo, hi = slice_range(len(jobs.admitted), 3, part)
        chunk = jobs.admitted[lo:hi]
        result = simulate(chunk, jobs.cluster, "fifo-ff", PlacementParams())
        utilities = draw_utilities((j.job_id for j in chunk), 0)
        expected += compute_metrics(result, utilities, None).jct_s
    assert merged.metrics["fifo-ff"].jct_s == tuple(expected)
    assert merged.to_json()["jobs"] == 10 and merged.metrics["fifo-ff"].placed == 10
    ranges = [
        c["range"] for c in json.loads((out / "metrics.json").read_text())["on_slurm"]["cells"]
    ]
    assert ranges == [[0, 3], [3, 6], [6, 10]]
    assert any("contiguous slices" in note for note in merged.notes)


# --- the merge rules on hand-made cells --------------------------------------------------


def doc(rows: list[dict[str, Any]], rejected: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    columns = ("job_id", "submit_s", "arrival", "start", "end", "jct_s", "wait_s", "run_slots",
               "colocated_slots", "decision_ms", "gpu_runs")  # fmt: skip
    return {
        "placed": {c: [r.get(c, 0) for r in rows] for c in columns},
        "rejected": [{"job_id": j, "error": "never-fits: too big"} for j in rejected],
        "latencies_ms": [r["decision_ms"] for r in rows],
        "peak_active_reservations": len(rows),
        **extra,
    }


A = {"job_id": "a", "submit_s": 0.0, "arrival": 0, "start": 0, "end": 1, "run_slots": 2,
     "colocated_slots": 2, "decision_ms": 1.0, "gpu_runs": [[0, 2, 2.0]]}  # fmt: skip
B = {"job_id": "b", "submit_s": 50.0, "arrival": 1, "start": 2, "end": 2, "run_slots": 1,
     "colocated_slots": 0, "decision_ms": 2.0, "gpu_runs": [[2, 3, 1.0]]}  # fmt: skip
C = {"job_id": "c", "submit_s": 1000.0, "arrival": 10, "start": 10, "end": 12, "run_slots": 3,
     "colocated_slots": 0, "decision_ms": 3.0, "gpu_runs": [[10, 13, 4.0]]}  # fmt: skip


def test_the_keys_the_merge_requires_are_keys_of_the_cell_document() -> None:
    assert set(REQUIRED_KEYS) <= set(CellDocument.__annotations__)


def test_hand_made_cells_give_the_hand_computed_metrics() -> None:
    m = metrics_from_cells("p", [doc([A, B]), doc([C])], 100.0, 8.0, seed=0, bound=3.5, wall_s=2.5)
    assert m.jct_s == (200.0, 250.0, 300.0) and m.avg_jct_s == 250.0 and m.p50_jct_s == 250.0
    assert m.avg_wait_s == 50.0  # 0, 150, 0
    assert m.makespan_s == 1300.0  # last finish (12 + 1)·Δ − first submit 0
    assert m.total_completion_slots == 2 + 2 + 3 and m.lp_bound_ratio == 7 / 3.5
    assert m.colocated_share == 2 / 6
    assert m.gpu_util == pytest.approx((2 * 2 + 1 + 4 * 3) / (8 * 13))
    assert m.series.queue[:3] == (0, 1, 0)  # b waits in slot 1
    assert m.series.running[:4] == (1, 1, 1, 0) and m.series.running[10:] == (1, 1, 1)
    assert m.decision_p50_ms == 2.0 and m.wall_s == 2.5 and m.placed == 3
    rejected = metrics_from_cells("p", [doc([A], ["z"]), doc([C])], 100.0, 8.0, 0, 3.5, None)
    assert rejected.lp_bound_ratio is None and rejected.rejected_jobs == (
        ("z", "never-fits: too big"),
    )
    empty = metrics_from_cells("p", [doc([])], 100.0, 8.0, 0, None, None)
    assert (empty.avg_jct_s, empty.makespan_s, empty.gpu_util, empty.colocated_share) == (None,) * 4


def test_mean_over_seeds_needs_every_seed_and_sums_the_counts() -> None:
    one = metrics_from_cells("p", [doc([A, B], ["z"])], 100.0, 8.0, 0, None, 1.0)
    two = metrics_from_cells("p", [doc([C])], 100.0, 8.0, 1, 2.0, 3.0)  # a bound ≤ its 3 slots
    mean = mean_over_seeds({0: one, 1: two})
    assert mean.avg_jct_s == statistics.fmean([one.avg_jct_s or 0, two.avg_jct_s or 0])
    assert mean.wall_s == 2.0
    assert mean.lp_bound_ratio is None  # seed 0 has none (no bound, and a rejection)
    assert (mean.placed, mean.rejected) == (3, 1)
    assert mean.rejected_jobs == (("z (seed 0)", "never-fits: too big"),)
    assert mean.jct_s == one.jct_s  # plots: the first seed's
    assert mean_over_seeds({5: two}) is two


# --- failures ---------------------------------------------------------------------------


def small(tmp_path: Path, **kw: Any) -> Path:
    opts = ReplayOptions(
        trace=job_list(tmp_path, 6), policies=("fifo-ff",), nodes="2x4", out_dir=tmp_path / "o",
        lp_max_jobs=0,
    )  # fmt: skip
    return on_cells(opts, slices=2, **kw)


def merge_error(out: Path, states: dict[int, str] | None = None) -> ReplayCellsFailed:
    with pytest.raises(ReplayCellsFailed) as caught:
        merge_dir(out, states=lambda: states or {}, job_id="77")
    assert not (out / "summary.json").exists() and not (out / "metrics.json").exists()
    assert caught.value.exit_code == 9 and caught.value.code == "replay-cells-failed"
    return caught.value


def test_a_failed_cell_fails_the_merge_with_its_state_and_log(tmp_path: Path) -> None:
    out = small(tmp_path)
    cell_path(out, 1).unlink()
    log_path(out, 1).write_text("cell 1 starting\nTraceback (most recent call last):\n"
                                "error[internal]: boom in cell 1\n")  # fmt: skip
    err = merge_error(out, {0: "COMPLETED", 1: "FAILED"})
    assert "1 of 2 replay cell(s) cannot be merged (Slurm array job 77" in err.message
    assert "cell 1 (fifo-ff, seed 0, slice 2/2): no result file; Slurm state FAILED" in err.message
    assert "boom in cell 1" in err.message and "cell 0 (" not in err.message
    assert f"sbatch --array=1 {out / 'replay-array.sbatch'}" in err.hint
    assert f"mlsub replay --merge {out}" in err.hint


def test_unfinished_and_vanished_cells(tmp_path: Path) -> None:
    out = small(tmp_path, run=False)
    err = merge_error(out, {0: "RUNNING"})
    assert (
        "Slurm state RUNNING" in err.message and "(no log: the task did not start)" in err.message
    )
    assert "have not finished" in err.hint and "squeue -j 77" in err.hint
    err = merge_error(out, {0: "UNKNOWN", 1: "UNKNOWN"})
    assert "Slurm no longer lists it (cancelled before it started?)" in err.message


def test_results_of_another_run_or_another_cell_are_refused(tmp_path: Path) -> None:
    out = small(tmp_path)
    stale = json.loads(cell_path(out, 0).read_text())
    cell_path(out, 0).write_text(json.dumps({**stale, "run_id": "0ld"}))
    assert "written by another run" in merge_error(out).message
    cell_path(out, 0).write_text(json.dumps({**stale, "slice": 1}))
    assert "holds cell" in merge_error(out).message
    cell_path(out, 0).write_text('{"kind": "mlsub-replay-cell", "schema"')
    assert "cannot read" in merge_error(out).message


def test_cells_that_saw_another_input_are_refused(tmp_path: Path) -> None:
    out = small(tmp_path)
    one = json.loads(cell_path(out, 1).read_text())
    one["input"]["skipped"] = 5
    cell_path(out, 1).write_text(json.dumps(one))
    assert "saw another input than cell 0" in merge_error(out).message


def test_a_trace_changed_after_the_cells_ran_is_refused(tmp_path: Path) -> None:
    out = small(tmp_path)
    job_list(tmp_path, 7)  # rewrites the same file with one more job
    with pytest.raises(InputError, match="the input changed since the cells ran"):
        merge_dir(out)


def test_many_failures_are_listed_after_the_first_ones(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=job_list(tmp_path, 8), policies=("fifo-ff",), nodes="2x4",
                         out_dir=tmp_path / "o", lp_max_jobs=0)  # fmt: skip
    out = on_cells(opts, slices=8, run=False)
    err = merge_error(out)
    assert "8 of 8 replay cell(s)" in err.message and "… and 3 more: cells 5, 6, 7" in err.message


# --- preparing and waiting ---------------------------------------------------------------


def test_prepare_writes_the_plan_the_script_and_the_cells_directory(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=job_list(tmp_path), policies=("yu-rr", "yu-rr", "fifo-ff"),
                         nodes="2x8", out_dir=tmp_path / "out dir")  # fmt: skip
    prepared = prepare_array(
        opts, SlurmReplayOptions(seeds=(4, 5), slices=2, partition="ml", time_limit="10"), "/py"
    )
    plan = read_plan(tmp_path / "out dir")
    assert plan == prepared.plan and isinstance(plan, ArrayPlan)
    assert plan.policies == ("yu-rr", "fifo-ff") and plan.options.seed == 4 and len(plan.cells) == 8
    assert plan.cells[0] == Cell(0, "yu-rr", 4, 0, True)
    script = prepared.script_path.read_text()
    assert "#SBATCH --array=0-7" in script and "#SBATCH --partition=ml" in script
    assert (tmp_path / "out dir" / "cells").is_dir()
    assert len(prepared.jobs.admitted) == 12


@pytest.mark.parametrize(
    ("change", "slurm", "message"),
    [
        ({"out_dir": None}, {}, "--on-slurm needs --out DIR"),
        ({"policies": ("nope",)}, {}, "unknown policy 'nope'"),
        ({}, {"slices": 13}, "--slices 13 is more than the 12 job"),
        ({}, {"time_limit": "soon"}, "--time must be a Slurm time limit"),
        ({"limit": 0}, {}, "--limit must be >= 1"),
    ],
)
def test_prepare_refuses_bad_options_before_writing(
    tmp_path: Path, change: dict[str, Any], slurm: dict[str, Any], message: str
) -> None:
    opts = ReplayOptions(trace=job_list(tmp_path), policies=("fifo-ff",), out_dir=tmp_path / "o")
    with pytest.raises(InputError, match=message):
        prepare_array(replace(opts, **change), SlurmReplayOptions(**slurm), "/py")
    assert not (tmp_path / "o" / "plan.json").exists()


def test_a_directory_with_a_submitted_replay_is_refused(tmp_path: Path) -> None:
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "submission.json").write_text('{"job_id": "1"}')
    opts = ReplayOptions(trace=job_list(tmp_path), policies=("fifo-ff",), out_dir=tmp_path / "o")
    with pytest.raises(InputError, match="already holds a replay submitted to Slurm"):
        prepare_array(opts, SlurmReplayOptions(), "/py")


def test_wait_polls_until_every_task_ended() -> None:
    answers = iter([
        {0: "PENDING", 1: "PENDING", 2: "PENDING"},
        {0: "RUNNING", 1: "PENDING", 2: "PENDING"},
        {0: "COMPLETED", 1: "RUNNING", 2: "FAILED"},
        {1: "COMPLETED", 2: "FAILED"},  # task 0 left squeue; sacct does not have it yet
    ])  # fmt: skip
    seen: list[tuple[int, int, int, int]] = []
    sleeps: list[float] = []
    final = wait_array(3, lambda: next(answers), sleeps.append, lambda *a: seen.append(a), 0.5)
    assert final == {0: "UNKNOWN", 1: "COMPLETED", 2: "FAILED"}
    assert seen == [(0, 3, 0, 3), (0, 3, 1, 2), (2, 3, 1, 0), (3, 3, 0, 0)]
    assert sleeps == [0.5, 0.5, 0.5]


class ArraySlurm:
    """A fake Slurm: ``sbatch`` runs every cell of the script's directory here (what the
    array's tasks do), ``squeue`` lists them all COMPLETED."""

    UP = "Slurmctld(primary) at vm is UP\n"

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.tasks = 0

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        self.calls.append(tuple(argv))
        out = self.UP
        if argv[0] == "sbatch":
            out_dir = Path(argv[-1]).parent
            plan = read_plan(out_dir)
            for cell in plan.cells:
                run_cell(out_dir, cell.index, CLOCK, {"host": "fake"})
            self.tasks, out = len(plan.cells), "4242\n"
        elif argv[0] == "squeue":
            out = "".join(f"4242_{i}|COMPLETED\n" for i in range(self.tasks))
        return CommandResult(tuple(argv), 0, out, "")


def test_submit_wait_and_merge_through_the_slurm_funnel(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=job_list(tmp_path), policies=("fifo-ff", "yu-rr"), nodes="2x8",
                         out_dir=tmp_path / "o", lp_max_jobs=0)  # fmt: skip
    prepared = prepare_array(opts, SlurmReplayOptions(seeds=(0, 1), slices=2), "/py")
    fake = ArraySlurm()
    slurm = SlurmCommands(fake)
    job_id = submit_array(prepared, slurm, CLOCK).job_id
    assert job_id == "4242" and fake.calls[1] == ("sbatch", "--parsable", str(prepared.script_path))
    submitted = json.loads((tmp_path / "o" / "submission.json").read_text())
    assert submitted["job_id"] == "4242" and submitted["tasks"] == 8
    reader = ArrayStatusReader(slurm)
    states = wait_array(8, lambda: reader.states(job_id, 8), lambda s: None)
    assert set(states.values()) == {"COMPLETED"}
    report = merge_dir(tmp_path / "o", prepared=prepared.jobs, states=lambda: states)
    assert report.jobs == 12 and set(report.metrics) == {"fifo-ff", "yu-rr"}
    on_slurm = json.loads((tmp_path / "o" / "metrics.json").read_text())["on_slurm"]
    assert on_slurm["job_id"] == "4242" and len(on_slurm["cells"]) == 8
