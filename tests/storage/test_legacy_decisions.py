"""Decisions stored before issue 16 (rounding trials as ``trial<k>:*`` statistics) decode
into the typed ``Decision.rounding``, ``kept_trial`` and ``kept_because``; ``explain``
shows the same trial rows for them as before, and a re-solve still reproduces them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.model import Decision, Form, RoundingTrial
from slurm_mlsched.model.decision import (
    LEGACY_KEPT_BECAUSE,
    earliest_end_reason,
    least_total_completion_reason,
)
from slurm_mlsched.placement import place
from slurm_mlsched.services.decisions import _trials, decision_diff
from slurm_mlsched.storage import codec

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_decisions.json"
FORMS = ("non-elastic", "elastic")


def stored(form: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))[form]
    return data


def legacy_rows(stats: list[list[Any]]) -> dict[int, dict[str, float]]:
    rows: dict[int, dict[str, float]] = {}
    for key, value in stats:
        name, sep, field = key.partition(":")
        if sep and name.startswith("trial"):
            rows.setdefault(int(name[5:]), {})[field] = value
    return rows


@pytest.mark.parametrize("form", FORMS)
def test_trial_statistics_become_typed_trials(form: str) -> None:
    raw = stored(form)["decision"]
    assert "rounding" not in raw and "kept_because" not in raw  # the old shape
    d = codec.decode_decision(raw)
    rows = legacy_rows(raw["stats"])
    assert [t.index for t in d.rounding] == sorted(rows) == list(range(6))
    for t in d.rounding:
        row = rows[t.index]
        assert t.violations == row["violations"] and type(t.violations) is int
        assert t.work_fraction == row["work_fraction"]
        if form == "non-elastic":
            end = int(row["end_slot"])
            assert t.end_slot == (None if end < 0 else end)
            assert (t.start_slot, t.workers) == (row["start_slot"], row["workers"])
            assert t.colocated is bool(row["colocated"])
            assert t.repaired_end_slot == row["repaired_end_slot"]
            assert t.repaired_workers == row["repaired_workers"]
        else:  # the elastic form recorded no shape per trial
            assert (t.start_slot, t.end_slot, t.workers, t.colocated) == (None,) * 4
            assert (t.repaired_end_slot, t.repaired_workers) == (None, None)
    names = [k for k, _ in d.stats]  # the keys read are gone from the statistics
    assert not [k for k in names if k.startswith("trial") and ":" in k]
    assert "kept_trial" not in names
    assert len(names) == len(raw["stats"]) - sum(map(len, rows.values())) - (form == "non-elastic")


def test_a_recorded_kept_trial_is_kept_with_the_rule_of_its_time() -> None:
    data = stored("non-elastic")
    d = codec.decode_decision(data["decision"])
    assert d.kept_trial == dict(map(tuple, data["decision"]["stats"]))["kept_trial"] == 1
    kept = d.rounding[1]
    assert kept.repaired_end_slot is not None
    assert d.kept_because == earliest_end_reason(kept.repaired_end_slot - d.arrival_slot + 1)
    assert not d.kept_rederived


@pytest.mark.parametrize("form", FORMS)
def test_without_a_recorded_kept_trial_the_legacy_rule_picks_it(form: str) -> None:
    raw = dict(stored(form)["decision"])
    raw["stats"] = [s for s in raw["stats"] if s[0] != "kept_trial"]
    d = codec.decode_decision(raw)
    assert d.kept_because == LEGACY_KEPT_BECAUSE and d.kept_rederived
    # fewest violations, then most work, then earliest end, then the lower index
    no_end = 1 << 60
    best = min(
        d.rounding,
        key=lambda t: (
            t.violations,
            -min(t.work_fraction, 1.0),
            no_end if t.end_slot is None else t.end_slot,
            t.index,
        ),
    )
    assert d.kept_trial == best.index
    if form == "non-elastic":  # the fixture was chosen so that the two rules disagree
        assert d.kept_trial != 1


def test_the_legacy_rule_counts_work_up_to_the_whole_workload() -> None:
    """An elastic draw may cover more than V; the elastic policy of that time ranked
    min(work, V): two trials without violations that both cover V tie on work, and the
    lower index wins (an uncapped rule would pick the one that covers more)."""
    raw = dict(stored("elastic")["decision"])
    stats = [s for s in raw["stats"] if not s[0].startswith("trial") and s[0] != "kept_trial"]
    stats += [
        ["trial0:violations", 0.0], ["trial0:work_fraction", 1.0],
        ["trial1:violations", 0.0], ["trial1:work_fraction", 1.4],
    ]  # fmt: skip
    d = codec.decode_decision({**raw, "stats": stats})
    assert [t.index for t in d.rounding] == [0, 1]
    assert d.kept_trial == 0 and d.kept_because == LEGACY_KEPT_BECAUSE


def test_a_legacy_joint_decision_keeps_its_recorded_trial() -> None:
    raw = codec.encode_decision(Decision("q1", "yu-rr", Form.NON_ELASTIC, 7, (), 0, 0, 0.0))
    for key in ("rounding", "kept_trial", "kept_because"):
        del raw[key]
    raw["solver"] = "highs-lp-joint"
    raw["stats"] = [
        ["joint_jobs", 3.0],
        ["kept_trial", 4.0],
        ["distinct_trial_outcomes", 2.0],
        ["trial_total_completion_slots", 17.0],
    ]
    d = codec.decode_decision(raw)
    assert (d.rounding, d.kept_trial) == ((), 4)
    assert d.kept_because == least_total_completion_reason(17, 3)
    assert "17 slots over 3 job(s)" in d.kept_because
    assert [k for k, _ in d.stats] == [
        "joint_jobs",
        "distinct_trial_outcomes",
        "trial_total_completion_slots",
    ]


def test_a_legacy_trial_statistic_that_is_not_whole_is_a_codec_error() -> None:
    raw = dict(stored("non-elastic")["decision"])
    raw["stats"] = [[k, 1.5 if k == "trial0:workers" else v] for k, v in raw["stats"]]
    with pytest.raises(codec.CodecError, match="trial0:workers"):
        codec.decode_decision(raw)


@pytest.mark.parametrize("form", FORMS)
def test_re_encoded_legacy_decisions_decode_to_the_same(form: str) -> None:
    d = codec.decode_decision(stored(form)["decision"])
    text = codec.dumps(codec.encode_decision(d))
    assert '"trial0:' not in text and codec.decode_decision(codec.loads(text)) == d


@pytest.mark.parametrize("form", FORMS)
def test_explain_shows_the_same_trial_rows_as_before(form: str) -> None:
    data = stored(form)
    d = codec.decode_decision(data["decision"])
    snap = codec.decode_snapshot(data["snapshot"])
    rows = [r.to_json() for r in _trials(d, snap, d.arrival_slot)]
    before = data["explain_trials"]
    added = ("kept_because", "trial")  # keys added since that version
    assert [{k: v for k, v in r.items() if k not in added} for r in rows] == before
    assert [r["trial"] for r in rows] == [int(r["kind"].rsplit(" ", 1)[1]) for r in rows]
    assert [r for r in rows if "kept_because" in r] == [r for r in rows if r["kept"]]


@pytest.mark.parametrize("form", FORMS)
def test_a_re_solve_reproduces_a_legacy_decision(form: str) -> None:
    """The policy now records the trials typed and its kept trial itself; a decision of
    the version before decodes to the same values (no spurious difference)."""
    data = stored(form)
    d = codec.decode_decision(data["decision"])
    again = place(
        codec.decode_request(data["request"]),
        codec.decode_snapshot(data["snapshot"]),
        d.policy,
        codec.decode_params(data["params"]),
    )
    assert decision_diff(d, again) == ()
    assert again.rounding == d.rounding
    if form == "non-elastic":  # recorded then too: compared, and equal
        assert (again.kept_trial, again.kept_because) == (d.kept_trial, d.kept_because)
    else:  # re-derived when read: not compared
        assert d.kept_rederived and not again.kept_rederived


def test_a_rederived_kept_trial_is_not_compared_but_a_recorded_one_is() -> None:
    data = stored("non-elastic")
    d = codec.decode_decision(data["decision"])
    other = RoundingTrial(0, 0, 1.0)
    moved = replace(d, kept_trial=0, rounding=(other, *d.rounding[1:]))
    fields = {x.field for x in decision_diff(d, moved)}
    assert fields == {"kept_trial", "rounding"}
    legacy = replace(d, kept_because=LEGACY_KEPT_BECAUSE)
    assert {x.field for x in decision_diff(legacy, moved)} == {"rounding"}
