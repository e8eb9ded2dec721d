"""Start-order agreement between a replay and the record (hand-checked cases)."""

from __future__ import annotations

import pytest

from slurm_mlsched.sim.agreement import start_agreement


def test_the_same_order_agrees_fully_and_a_reversed_one_not_at_all() -> None:
    rec = {"a": 0.0, "b": 10.0, "c": 20.0}
    same = start_agreement(rec, {"a": 5.0, "b": 6.0, "c": 7.0})
    assert (same.pairwise, same.same_rank_share, same.pairs) == (1.0, 1.0, 3)
    rev = start_agreement(rec, {"a": 7.0, "b": 6.0, "c": 5.0})
    assert rev.pairwise == 0.0 and rev.same_rank == 1  # only b keeps its (middle) place


def test_one_swap_and_ties() -> None:
    rec = {"a": 0.0, "b": 10.0, "c": 20.0, "d": 30.0}
    sim = {"a": 0.0, "b": 25.0, "c": 20.0, "d": 30.0}  # b and c swapped
    got = start_agreement(rec, sim)
    assert (got.concordant, got.discordant, got.tied_pairs) == (5, 1, 0)
    assert got.pairwise == pytest.approx(5 / 6) and got.same_rank == 2
    assert got.mean_abs_diff_s == pytest.approx(15 / 4)
    tied = start_agreement(rec, {**sim, "b": 20.0})  # b and c start together in the replay
    assert (tied.concordant, tied.discordant, tied.tied_pairs) == (5, 0, 1)
    assert start_agreement(rec, sim, tie_s=10.0).tied_pairs == 4  # ab, bc, cd; bd in sim


def test_only_jobs_in_both_count() -> None:
    got = start_agreement({"a": 0.0, "b": 1.0, "x": 2.0}, {"a": 0.0, "b": 1.0, "y": 0.0})
    assert got.jobs == 2 and got.pairwise == 1.0
    empty = start_agreement({}, {"a": 1.0})
    assert (empty.pairwise, empty.same_rank_share, empty.mean_abs_diff_s) == (None, None, None)
