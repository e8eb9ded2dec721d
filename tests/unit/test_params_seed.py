"""PlacementParams.with_seed: the replay engine's per-job copy equals ``replace``."""

from __future__ import annotations

from dataclasses import replace

from slurm_mlsched.placement import PlacementParams


def test_params_with_seed_is_the_same_params_but_the_seed() -> None:
    base = PlacementParams(oasis_max_segments=7, seed=3)
    other = base.with_seed(11)
    assert other == replace(base, seed=11) and other.seed == 11 and base.seed == 3
    assert hash(other) == hash(replace(base, seed=11))
    assert other.as_dict() == {**base.as_dict(), "seed": 11}
