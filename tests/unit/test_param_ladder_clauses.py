"""The parameter ladder's render judges issue 28's target with each run's ``yu-rr``
beside every other policy's saved figures (bench/param_ladder.py): a rule that wins on
the mean but costs a tail clause is named (the shrink of 2026-12-05 cost Mustang
2012-12-13 its p99 clause, which the ladder's mean did not show)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.param_ladder import clause_changes, references, render

H = 3600.0


def _cell(fifo_p99_h: float, best_h: float, qssf_h: float, bound_h: float) -> dict[str, Any]:
    row = {"avg_jct_s": best_h * H, "p50_jct_s": 1.0 * H, "p99_jct_s": 30.0 * H}
    rows = {name: dict(row) for name in ("optimus", "drf", "tiresias", "oasis")}
    rows["fifo-bf"] = {"avg_jct_s": 9.0 * H, "p50_jct_s": 2.0 * H, "p99_jct_s": fifo_p99_h * H}
    rows["qssf"] = {"avg_jct_s": qssf_h * H, "p50_jct_s": 1.0 * H, "p99_jct_s": 30.0 * H}
    rows["yu-rr"] = {"avg_jct_s": 0.0, "p50_jct_s": 0.0, "p99_jct_s": 0.0}  # replaced
    return {"rows": rows, "bound_avg_jct_s": bound_h * H}


def _row(avg: float, p50: float, p99: float) -> dict[str, float]:
    return {"avg": avg, "p50": p50, "p99": p99, "wall": 1.0}


def test_a_tail_clause_lost_is_named_though_the_mean_improves() -> None:
    refs = {"mustang2|600": _cell(43.7, best_h=6.0, qssf_h=5.0, bound_h=4.0)}
    base = {"mustang2|600": _row(4.39, 0.5, 38.5)}
    other = {"mustang2|600": _row(4.30, 0.5, 46.1)}  # better mean, p99 past fifo-bf's
    n, met_a, met_b, changed = clause_changes(base, other, refs)
    assert (n, met_a, met_b) == (1, 1, 0)
    assert changed == [("mustang2|600", ["p99 ✓ → ✗ (38.50 → 46.10 h, fifo-bf 43.70 h)"])]


def test_every_clause_is_judged_and_unchanged_cells_are_not_listed() -> None:
    refs = {
        "a": _cell(40.0, best_h=6.0, qssf_h=5.0, bound_h=4.0),  # avg line: 5.4 h; qssf 4.85 h
        "b": _cell(40.0, best_h=6.0, qssf_h=5.0, bound_h=4.0),
    }
    base = {"a": _row(4.80, 1.5, 39.0), "b": _row(4.0, 1.0, 20.0)}
    other = {"a": _row(4.90, 2.5, 39.0), "b": _row(4.0, 1.0, 20.0), "c": _row(1, 1, 1)}
    n, met_a, met_b, changed = clause_changes(base, other, refs)
    assert (n, met_a, met_b) == (2, 2, 1)  # "c" has no saved figures: left out
    assert changed == [
        ("a", ["p50 ✓ → ✗ (1.50 → 2.50 h, fifo-bf 2.00 h)", "qssf ✓ → ✗ (avg 4.800 → 4.900 h)"])
    ]


def test_the_render_states_the_counts_and_the_references_read_both_key_forms(
    tmp_path: Path, monkeypatch: Any
) -> None:
    table = tmp_path / "policies.json"
    sweep = tmp_path / "sweep.json"
    table.write_text(json.dumps({"cells": {"mustang2@600": _cell(43.7, 6.0, 5.0, 4.0)}}))
    sweep.write_text(json.dumps({"cells": {"Sia 1|16x4|load 1|seed 0": _cell(43.7, 6, 5, 4)}}))
    refs = references((table, sweep, tmp_path / "missing.json"))
    assert set(refs) == {"mustang2|600", "Sia 1|16x4|load 1|seed 0"}
    ladder = tmp_path / "ladder"
    ladder.mkdir()
    for tag, p99 in (("base", 38.5), ("other", 46.1)):
        line = {"key": "mustang2|600", **_row(4.39, 0.5, p99)}
        (ladder / f"{tag}.jsonl").write_text(json.dumps(line) + "\n")
    monkeypatch.setattr("bench.param_ladder.OUT", ladder)
    text = render("base", "other", "t", refs)
    assert "met in **1** of 1 cells with `base`, **0** with `other`" in text
    assert "| mustang2 · 600 | p99 ✓ → ✗ (38.50 → 46.10 h, fifo-bf 43.70 h) |" in text


def test_a_reference_run_of_another_policy_is_named_and_runs_are_not_mixed(
    tmp_path: Path, monkeypatch: Any
) -> None:
    refs = {"mustang2|600": _cell(43.7, best_h=6.0, qssf_h=5.0, bound_h=4.0)}
    ladder = tmp_path / "ladder"
    ladder.mkdir()
    (ladder / "base.jsonl").write_text(json.dumps({"key": "mustang2|600", **_row(4.39, 0.5, 38.5)}))
    srtf = {"key": "mustang2|600", "policy": "srtf", **_row(6.0, 0.5, 60.0)}
    (ladder / "ref.jsonl").write_text(json.dumps(srtf) + "\n")
    mixed = {"key": "sia1|600", "policy": "yu-rr", **_row(1.0, 0.5, 20.0)}
    (ladder / "mixed.jsonl").write_text(json.dumps(srtf) + "\n" + json.dumps(mixed) + "\n")
    monkeypatch.setattr("bench.param_ladder.OUT", ladder)
    text = render("base", "ref", "t", refs)
    assert "(`base`: `yu-rr`, `ref`: `srtf`, each at its defaults;" in text
    assert "each run's policy in `yu-rr`'s place (`yu-rr`, `srtf`)" in text
    assert "met in **1** of 1 cells with `base`, **0** with `ref`" in text  # 6.0 h > 5.4 h
    with pytest.raises(SystemExit, match="mixes policies"):
        render("base", "mixed", "t", refs)
