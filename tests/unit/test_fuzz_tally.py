"""``make bench-fuzz``'s table (bench/fuzz_tally.py): each kind's runs counted by exit."""

from __future__ import annotations

from bench.fuzz_tally import KINDS, render

MACHINE = {"cpu": "cpu", "cores": "2", "python": "3.11", "date": "2026-12-07 06:00 UTC"}


def run(counts: dict[str, dict[str, int]], passed: bool = True) -> dict[str, object]:
    last = "3 passed in 1.00s" if passed else "1 failed, 2 passed in 1.00s"
    return {"scale": 25.0, "seed": 7, "wall_s": 1.0, "passed": passed, "pytest": last,
            "counts": counts}  # fmt: skip


def test_each_kind_is_a_row_of_its_exits_and_unknown_codes_are_other() -> None:
    text = render({"machine": MACHINE, "run": run({
        "replay": {"0": 1200, "3": 30},
        "plan options": {"0": 5, "4": 6, "internal": 1, "7": 2},
    })})  # fmt: skip
    rows = [line for line in text.splitlines() if line.startswith("| `mlsub")]
    assert len(rows) == len(KINDS)
    assert rows[0].endswith("| 1,230 | 1,200 | 30 | 0 | 0 | 0 |")
    assert rows[1].endswith("| 14 | 5 | 0 | 6 | 1 | 2 |")
    assert rows[2].endswith("| 0 | 0 | 0 | 0 | 0 | 0 |")  # a kind that never ran says so
    assert "--hypothesis-seed=7" in text and "every test passed" in text


def test_a_failed_run_says_so() -> None:
    text = render({"machine": MACHINE, "run": run({"replay": {"internal": 1}}, passed=False)})
    assert "**a test failed**: 1 failed, 2 passed" in text
