"""Node features (``--constraint`` reads a node's active ones) as each source gives them."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_mlsched.slurm.parse import feature_list, parse_scontrol_nodes, parse_sinfo_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


@pytest.mark.parametrize(
    ("value", "features"),
    [
        ("", ()),
        ("(null)", ()),
        (None, ()),
        ("ib,v100", ("ib", "v100")),
        (["ib", "v100"], ("ib", "v100")),
        ({"total": "ib,v100,big", "active": "ib,v100"}, ("ib", "v100")),
        ({"total": "", "active": ""}, ()),
    ],
)
def test_feature_list(value: object, features: tuple[str, ...]) -> None:
    assert feature_list(value) == features


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_the_lab_nodes_have_no_features(version: str) -> None:
    nodes = parse_sinfo_json((FIXTURES / version / "idle" / "sinfo-N.json").read_text())
    assert nodes and all(n.features == () for n in nodes)


def test_scontrol_active_features() -> None:
    line = (
        "NodeName=gpu1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=8 "
        "AvailableFeatures=ib,v100,big ActiveFeatures=v100,ib Gres=gpu:4 NodeAddr=gpu1 "
        "RealMemory=64000 State=IDLE Partitions=ml"
    )
    (node,) = parse_scontrol_nodes(line)
    assert node.features == ("ib", "v100")
