"""GPU speed by type through the commands (docs/formulation.md §17): a cluster file's
``gpu_speed`` table makes ``mlsub plan`` plan a job at its type's speed, the stored decision
keeps the factor, ``mlsub explain`` names it and reproduces the decision, and a bad table
is exit 3 naming the file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.store_cli import ok_json, run

JOB = ["--workers", "4", "--model", "resnet-50", "--epochs", "1", "--batches-per-epoch", "20000"]
NODES = """nodes:
  - {name: fast1, gpus: 4, cpus: 16, mem_gb: 128, gpu_type: a100}
  - {name: slow1, gpus: 4, cpus: 16, mem_gb: 128, gpu_type: t4}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "typed.yaml"
    path.write_text(NODES + "gpu_speed: {a100: 2.0, t4: 0.5}\n")
    return path


def test_a_plan_runs_at_its_types_speed(env: dict[str, str], cluster: Path) -> None:
    fast: dict[str, Any] = ok_json(env, "plan", "--cluster", cluster, "--gpu-type", "a100", *JOB)
    slow: dict[str, Any] = ok_json(env, "plan", "--cluster", cluster, "--gpu-type", "t4", *JOB)
    assert (fast["job"]["gpu_speed"], slow["job"]["gpu_speed"]) == (2.0, 0.5)
    assert slow["predicted_runtime_s"] == pytest.approx(4 * fast["predicted_runtime_s"], rel=1e-6)
    either: dict[str, Any] = ok_json(env, "plan", "--cluster", cluster, *JOB)
    assert either["job"]["gpu_speed"] == 0.5  # no type named: the slowest node's


def test_a_plan_without_a_table_has_no_speed_key(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(NODES)
    plan: dict[str, Any] = ok_json(env, "plan", "--cluster", path, "--gpu-type", "a100", *JOB)
    assert "gpu_speed" not in plan["job"]


def test_explain_names_the_factor_and_reproduces(env: dict[str, str], cluster: Path) -> None:
    plan: dict[str, Any] = ok_json(
        env, "plan", "--cluster", cluster, "--reserve", "--gpu-type", "a100", *JOB
    )
    explained: dict[str, Any] = ok_json(env, "explain", str(plan["decision_id"]))
    (line,) = [w for w in explained["why"] if w.startswith("GPU speed")]
    assert line == (
        "GPU speed ×2 of GPU type a100 (node fast1), the slowest it may run on: its time "
        "per mini-batch is the profile's ÷ 2"
    )
    assert explained["reproduced"] is True, explained


def test_a_bad_table_is_exit_3_naming_the_file_and_field(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(NODES + "gpu_speed: {a100: -2}\n")
    result = run(env, "plan", "--cluster", path, *JOB)
    assert result.exit_code == 3, result.stdout + result.stderr
    assert f"{path}: top level: field 'gpu_speed'" in result.stderr
    assert "must be a number > 0" in result.stderr


def test_the_plan_table_shows_the_speed_only_when_not_1(env: dict[str, str], cluster: Path) -> None:
    shown = run(env, "plan", "--cluster", cluster, "--gpu-type", "a100", *JOB)
    assert shown.exit_code == 0, shown.stderr
    assert "GPU speed" in shown.stdout and "×2 (the slowest GPU type" in shown.stdout
    plain = cluster.parent / "plain.yaml"
    plain.write_text(NODES)
    shown = run(env, "plan", "--cluster", plain, "--gpu-type", "a100", *JOB)
    assert shown.exit_code == 0 and "GPU speed" not in shown.stdout
