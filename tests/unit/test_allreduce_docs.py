"""docs/formulation.md §18's table of ring step times is what the model computes, for every
profiled model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slurm_mlsched.files.profiles import load_profiles
from slurm_mlsched.model.allreduce import DEFAULT_LATENCY_S, step_seconds

DOC = (Path(__file__).resolve().parents[2] / "docs" / "formulation.md").read_text()
SECTION = DOC[DOC.index("## 18. All-reduce jobs") :]
ROWS = {
    m.group(1): [float(x) for x in m.group(2).split(" | ")]
    for m in re.finditer(r"^\| `([a-z0-9-]+)` \| ([0-9. |]+) \|$", SECTION, flags=re.MULTILINE)
}


def test_every_profiled_model_has_a_row() -> None:
    assert set(ROWS) == set(load_profiles())


@pytest.mark.parametrize("name", sorted(load_profiles()))
def test_each_row_is_what_the_model_computes(name: str) -> None:
    p = load_profiles()[name]
    tau, size, intra, net, one_node, two_nodes, four_four, eight_one, theta_in, theta_ex = ROWS[
        name
    ]
    assert (tau, size, net) == (p.step_time_s, p.model_size_mb, p.bw_ex_mbps)
    assert intra == pytest.approx(p.effective_bw_in, abs=0.01)
    assert one_node == pytest.approx(step_seconds((4,), p), abs=5e-4)
    assert two_nodes == pytest.approx(step_seconds((2, 2), p), abs=5e-4)
    assert four_four == pytest.approx(step_seconds((4, 4), p), abs=5e-4)
    assert eight_one == pytest.approx(step_seconds((1,) * 8, p), abs=5e-4)
    assert (theta_in, theta_ex) == pytest.approx((p.theta_in, p.theta_ex), abs=5e-4)


def test_the_documented_latency_is_the_default() -> None:
    assert "`latency_s = 50e-6`" in SECTION and DEFAULT_LATENCY_S == 50e-6
