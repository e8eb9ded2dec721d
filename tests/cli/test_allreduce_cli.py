"""An ``--arch allreduce`` job through the commands (issue 31): planned, reserved and
explained; explain names the architecture and the ring's slowest link."""

from __future__ import annotations

from typing import Any

from tests.cli.store_cli import CLUSTER, ok_json, run

JOB = ["--workers", "4", "--model", "resnet-50", "--epochs", "1", "--batches-per-epoch", "500"]
# eight 4-CPU workers on nodes of 8 CPUs: two a node, over four nodes (examples/cluster.yaml)
WIDE = ["--workers", "8", "--model", "resnet-50", "--batches-per-epoch", "20000"]


def test_an_allreduce_plan_has_no_ps_and_names_its_ring(env: dict[str, str]) -> None:
    plan: dict[str, Any] = ok_json(env, "plan", "--cluster", CLUSTER, "--arch", "allreduce", *JOB)
    assert {r["role"] for r in plan["placement"]} == {"worker"}
    assert plan["arch"] == "allreduce"
    ring = plan["ring"]
    assert ring["workers"] == sum(r["count"] for r in plan["placement"])
    assert ring["nodes"] == len({r["node"] for r in plan["placement"]})
    assert ring["slowest_link"] in {"none", "intra-node", "network"}


def test_a_ps_plan_has_no_ring_keys(env: dict[str, str]) -> None:
    plan: dict[str, Any] = ok_json(env, "plan", "--cluster", CLUSTER, *JOB)
    assert "arch" not in plan and "ring" not in plan


def test_explain_names_the_architecture_and_the_rings_slowest_link(
    env: dict[str, str],
) -> None:
    plan: dict[str, Any] = ok_json(
        env, "plan", "--cluster", CLUSTER, "--reserve", "--arch", "allreduce", *WIDE
    )
    assert [(r["node"], r["count"]) for r in plan["placement"] if r["role"] == "worker"] == [
        (f"node{i}", 2) for i in range(1, 5)
    ]
    explained = ok_json(env, "explain", str(plan["decision_id"]))
    (line,) = [w for w in explained["why"] if w.startswith("architecture allreduce")]
    # the two-level ring (formulation §18.1) on (2, 2, 2, 2): g = 2, k = 4:
    # t = 2·1/2 · 102.2/306.5 + 2·3/4 · 102.2/91.875 + 2·(1 + 3)·50 µs
    #   = 0.33344 + 1.66857 + 0.0004 = 2.00241 s; step = 0.449 + 2.00241 = 2.45141 s
    assert line == (
        "architecture allreduce (no PS): ring of 8 worker(s) on 4 node(s), slowest link "
        "network 91.88 MB/s: all-reduce 2 s, step 2.45 s"
    )
    assert explained["reproduced"] is True, explained


def test_a_ps_plan_explains_as_before(env: dict[str, str]) -> None:
    plan: dict[str, Any] = ok_json(env, "plan", "--cluster", CLUSTER, "--reserve", *JOB)
    explained = ok_json(env, "explain", str(plan["decision_id"]))
    assert not [w for w in explained["why"] if w.startswith("architecture")]


def test_bad_arch_is_exit_3_naming_the_option(env: dict[str, str]) -> None:
    result = run(env, "plan", "--cluster", CLUSTER, "--arch", "ring", *JOB)
    assert result.exit_code == 3, result.stdout + result.stderr
    assert "--arch" in result.stderr and "ps | allreduce" in result.stderr
