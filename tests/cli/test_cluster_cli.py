"""``mlsub cluster`` end to end through Typer's CliRunner, against stand-in Slurm commands
(small scripts first on PATH that print real captured output). No module is patched: the
CLI runs its real wiring (LocalRunner, source selection, parsers)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
NOW = "2026-11-29T17:00:00Z"

FAKE = """#!/bin/bash
# stand-in for {name}: prints what Slurm {version} printed in scenario {scenario}
dir={dir}
case "$*" in
  "--version") cat "$dir/idle/sinfo-version.txt" ;;
  "ping") cat "$dir/idle/{ping}"; [ {ping} = ping.txt ] ;;
  "-N --json") cat "$dir/{scenario}/sinfo-N.json" ;;
  "--all --json") cat "$dir/{scenario}/squeue.json" ;;
  "-o show nodes") cat "$dir/{scenario}/scontrol-nodes.txt" ;;
  "--all -h -t "*) cat "$dir/{scenario}/squeue.txt" ;;
  *) echo "{name}: unexpected arguments: $*" >&2; exit 2 ;;
esac
"""


def fake_slurm(
    tmp_path: Path, version: str, scenario: str, ping: str = "ping.txt"
) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sinfo", "squeue", "scontrol"):
        script = bin_dir / name
        script.write_text(
            FAKE.format(
                name=name, version=version, scenario=scenario, dir=FIXTURES / version, ping=ping
            )
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MLSUB_FIXED_NOW": NOW,
        "MLSUB_DEBUG": "",
        # the commands: these fakes answer as they would (a pyslurm installed for the lab
        # cluster's Slurm would read the real cluster instead)
        "MLSUB_SLURM_SOURCE": "cli",
        "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'decisions.db'}",  # the test's own store
        "MLSUB_CONFIG": str(tmp_path / "no-config.toml"),
    }


def invoke(env: dict[str, str], *args: str) -> Any:
    return CliRunner().invoke(app, ["cluster", *args], env=env)


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_cluster_json_on_a_busy_cluster(tmp_path: Path, version: str) -> None:
    result = invoke(fake_slurm(tmp_path, version, "busy"), "--json", "--slot-seconds", "60")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["slurm_version"].startswith(version)
    assert data["now"] == "2026-11-29T17:00:00+00:00" and data["slot_seconds"] == 60
    free = {n["name"]: n["free_now"] for n in data["nodes"]}
    assert free["node3"] == {"gpus": 1.0, "cpus": 3.0, "mem_mib": 65536.0 - 5120}
    assert data["free_now"] == {"gpus": 9.0, "cpus": 20.0, "mem_mib": 262144.0 - 13788}
    assert sorted(j["name"] for j in data["jobs"]) == ["het", "het", "multi", "nolimit", "sleeper"]
    assert len(data["reservations"]) == 6  # multi holds two nodes
    assert data["excluded"] == []


def test_cluster_table_shows_excluded_nodes_and_why(tmp_path: Path) -> None:
    result = invoke(fake_slurm(tmp_path, "24.11", "states"))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for text in (
        "excluded: node1: draining (fixture: draining)",
        "excluded: node2: drained (fixture: drained)",
        "excluded: node3: down (fixture: down)",
        "excluded: node4: not responding",
    ):
        assert text in out.splitlines(), text
    assert "0 usable node(s) of 4;" in out
    assert "mixed+drain (excluded)" in out


def test_text_source_can_be_forced(tmp_path: Path) -> None:
    env = {**fake_slurm(tmp_path, "22.05", "busy"), "MLSUB_SLURM_SOURCE": "text"}
    result = invoke(env, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["source"] == "scontrol -o show nodes, squeue -h -o"
    assert any("split evenly" in note for note in data["notes"])
    bad = invoke({**env, "MLSUB_SLURM_SOURCE": "rest"})
    assert bad.exit_code == 3 and "MLSUB_SLURM_SOURCE" in bad.stderr


def test_unreachable_controller_exit_6_and_nothing_on_stdout(tmp_path: Path) -> None:
    result = invoke(fake_slurm(tmp_path, "22.05", "busy", ping="ping-down.txt"), "--json")
    assert result.exit_code == 6
    assert result.stdout == ""
    assert "error[slurm-unreachable]" in result.stderr
    assert "Slurmctld(primary) at vm is DOWN" in result.stderr
