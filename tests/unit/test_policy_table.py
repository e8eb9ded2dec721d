"""The benchmarks generator's target (bench/policy_table.py, issue 28 item 1): avg JCT ≤
max(0.90 × the best of optimus, drf, tiresias, oasis, fifo-bf; 1.05 × the lower bound),
p50 and p99 ≤ fifo-bf's, ≤ 0.97 × qssf; every policy ÷ the bound in the tables."""

from __future__ import annotations

from typing import Any

import pytest

from bench.policy_table import partial_runs, provenance, render, verdict

H = 3600.0


def row(avg_h: float, p50_h: float = 1.0, p99_h: float = 5.0) -> dict[str, Any]:
    return {
        "avg_jct_s": avg_h * H,
        "p50_jct_s": p50_h * H,
        "p99_jct_s": p99_h * H,
        "avg_wait_s": 0.1 * H,
        "makespan_s": 10 * H,
        "gpu_util": 0.5,
        "decision_p99_ms": 1.0,
        "wall_s": 1.0,
    }


def cell(ours_h: float, drf_h: float, bound_h: float | None, qssf_h: float = 3.0) -> dict[str, Any]:
    rows = {
        "yu-rr": row(ours_h),
        "qssf": row(qssf_h),
        "fifo-bf": row(4.0, 2.0, 9.0),
        "fifo-ff": row(5.0),
        "oasis": row(3.5),
        "optimus": row(3.0),
        "drf": row(drf_h),
        "tiresias": row(2.9),
    }
    return {
        "label": "W",
        "delta": 600.0,
        "bound_avg_jct_s": None if bound_h is None else bound_h * H,
        "jobs": 10,
        "skipped": 0,
        "unplaceable": 0,
        "rows": rows,
    }


def test_the_target_is_the_baseline_line_when_the_bound_is_far_below() -> None:
    v = verdict(cell(ours_h=1.70, drf_h=2.0, bound_h=1.0))
    assert v["target_s"] == pytest.approx(0.90 * 2.0 * H) and v["target_by"] == "baseline"
    assert v["vs_bound"] == pytest.approx(1.70) and v["avg_ok"] and v["met"]


def test_the_target_is_the_bound_line_when_the_baseline_line_is_below_it() -> None:
    # 0.90 × drf = 1.80 h lies below the bound (1.85 h): the target is 1.05 × bound
    v = verdict(cell(ours_h=1.92, drf_h=2.0, bound_h=1.85))
    assert v["target_s"] == pytest.approx(1.05 * 1.85 * H) and v["target_by"] == "bound"
    assert v["avg_ok"] and v["vs_best"] > 0.90
    missed = verdict(cell(ours_h=1.95, drf_h=2.0, bound_h=1.85))
    assert not missed["avg_ok"] and not missed["met"]


def test_every_line_of_the_target_must_hold() -> None:
    assert not verdict(cell(ours_h=1.70, drf_h=2.0, bound_h=1.0, qssf_h=1.74))["met"]  # > 0.97
    c = cell(ours_h=1.70, drf_h=2.0, bound_h=1.0)
    c["rows"]["yu-rr"]["p99_jct_s"] = 10 * H  # above fifo-bf's 9 h
    assert not verdict(c)["met"]


def test_a_qssf_line_below_the_bound_is_said_to_be_unreachable() -> None:
    """0.97 × qssf = 1.80 h below the bound 1.82 h: no schedule meets that line, and the
    verdict says so (the line is not restated: the cell still fails it)."""
    v = verdict(cell(ours_h=1.84, drf_h=1.85, bound_h=1.82, qssf_h=1.86))
    assert v["qssf_below_bound"] and not v["qssf_ok"] and not v["met"]
    assert not verdict(cell(ours_h=1.84, drf_h=1.85, bound_h=1.70, qssf_h=1.86))["qssf_below_bound"]
    assert not verdict(cell(ours_h=1.70, drf_h=2.0, bound_h=None))["qssf_below_bound"]
    res = {
        "machine": {"cpu": "cpu", "cores": 2, "date": "d"},
        "cells": {"W": cell(ours_h=1.84, drf_h=1.85, bound_h=1.82, qssf_h=1.86)},
    }
    text = render(res)
    assert "0.99 ✗ (below the bound)" in text
    assert "0.97 × `qssf` lies below the lower bound" in text and "W at 600 s" in text


def test_an_old_cell_without_a_bound_keeps_the_baseline_line() -> None:
    v = verdict(cell(ours_h=1.70, drf_h=2.0, bound_h=None))
    assert v["target_s"] == pytest.approx(1.8 * H) and v["vs_bound"] is None


def test_the_tables_give_every_policy_over_the_bound() -> None:
    res = {
        "machine": {"cpu": "cpu", "cores": 2, "date": "d"},
        "cells": {"a": cell(1.70, 2.0, 1.0), "b": cell(1.95, 2.0, 1.85)},
    }
    text = render(res)
    assert "max(0.90 × best" in text and "1.05 × bound" in text
    head = next(line for line in text.splitlines() if line.startswith("| workload |"))
    col = [x.strip() for x in head.split("|")].index("yu-rr ÷ bound")
    summary = [line for line in text.splitlines() if line.startswith("| W | 600 |")]
    assert [[x.strip() for x in line.split("|")][col] for line in summary] == ["1.700", "1.054"]
    assert "✓ | baseline | ✓ |" in summary[0] and "✗ | bound | ✗ |" in summary[1]
    tables = text.split("### W, Δ = 600 s")[1]
    header = next(line for line in tables.splitlines() if line.startswith("| policy |"))
    assert "÷ bound" in header
    drf = next(line for line in tables.splitlines() if line.startswith("| drf |"))
    assert "| 2.00 |" in drf  # 2.0 h ÷ 1.0 h
    assert "Met in this run: the target in 1 of 2 cells" in text


def test_each_policies_run_keeps_its_own_date_in_the_provenance() -> None:
    """Two ``--policies`` runs after a whole run: each row names the run that measured it;
    a policy measured again leaves its earlier run, and a run left empty is dropped."""
    first = partial_runs(None, ["yu-rr", "qssf"], "2026-12-05 09:49 UTC", "2026-12-04 18:43 UTC")
    second = partial_runs(first, ["optimus", "tiresias"], "2026-12-05 10:26 UTC", "ignored")
    assert second == {
        "runs": [
            {"policies": ["yu-rr", "qssf"], "run": "2026-12-05 09:49 UTC"},
            {"policies": ["optimus", "tiresias"], "run": "2026-12-05 10:26 UTC"},
        ],
        "others": "2026-12-04 18:43 UTC",
    }
    said = provenance(second)
    assert (
        "rows of yu-rr, qssf re-measured by `--policies` in the run begun 2026-12-05 09:49" in said
    )
    assert (
        "rows of optimus, tiresias re-measured by `--policies` in the run begun 2026-12-05 10:26"
        in said
    )
    assert said.endswith("every other row from the run ending 2026-12-04 18:43 UTC")
    third = partial_runs(second, ["qssf", "yu-rr"], "2026-12-05 11:00 UTC", "ignored")
    assert [r["policies"] for r in third["runs"]] == [["optimus", "tiresias"], ["qssf", "yu-rr"]]


def test_a_file_from_before_the_runs_were_listed_reads_as_one_run() -> None:
    old = {"policies": ["yu-rr"], "run": "2026-12-05 07:10 UTC", "others": "2026-12-04 18:43 UTC"}
    assert provenance(old).startswith("rows of yu-rr re-measured by `--policies` in the run begun")
    new = partial_runs(old, ["drf"], "2026-12-05 08:00 UTC", "ignored")
    assert [r["policies"] for r in new["runs"]] == [["yu-rr"], ["drf"]]


def test_the_clairvoyant_reference_is_reported_but_never_the_best_baseline() -> None:
    # srtf at 1.0 h is better than every row, but the target's best stays drf's 2.0 h
    c = cell(ours_h=1.70, drf_h=2.0, bound_h=1.0)
    c["rows"]["srtf"] = row(1.0)
    v = verdict(c)
    assert v["best"] == "drf" and v["target_s"] == pytest.approx(0.90 * 2.0 * H)
    res = {"machine": {"cpu": "cpu", "cores": 2, "date": "d"}, "cells": {"W": c}}
    text = render(res)
    assert "`yu-rr` ÷ the clairvoyant `srtf`: min 1.70, median 1.70, max 1.70 (1 cells)" in text
    assert any(line.startswith("| srtf | 1.00 |") for line in text.splitlines())
    without = render({**res, "cells": {"W": cell(1.70, 2.0, 1.0)}})
    assert "÷ the clairvoyant `srtf`" not in without
