"""``mlsub plan t.py`` (the live dry run, against the stand-in Slurm commands of
tests/cli/test_cluster_cli.py) with the user's own #SBATCH lines: carried into the
script, narrowing the nodes, refused with the file and line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from tests.cli.test_cluster_cli import fake_slurm

EXAMPLE = """#!/usr/bin/env python3
#SBATCH --account=ml-research
#SBATCH --qos=high
#SBATCH --mail-type=END
# mlsub: --workers 2 --ps 1 --model resnet-50 --epochs 1 --batches-per-epoch 100
"""

runner = CliRunner()


def plan(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str]:
    script = tmp_path / "t.py"
    script.write_text(text)
    env = fake_slurm(tmp_path, "22.05", "idle")
    result = runner.invoke(app, ["plan", str(script), *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def header_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if line.startswith("#SBATCH")]


def test_the_issue_example_keeps_account_qos_and_mail_type(tmp_path: Path) -> None:
    code, out, err = plan(tmp_path, EXAMPLE, "--json")
    assert code == 0, err
    lines = header_lines(json.loads(out)["script"])
    assert lines[:4] == [
        "#SBATCH --job-name=t",
        "#SBATCH --account=ml-research",
        "#SBATCH --qos=high",
        "#SBATCH --mail-type=END",
    ]


def test_the_text_output_shows_the_lines_too(tmp_path: Path) -> None:
    code, out, err = plan(tmp_path, EXAMPLE)
    assert code == 0, err
    assert "#SBATCH --account=ml-research" in out and "#SBATCH --qos=high" in out


def test_nodes_is_refused_naming_the_line(tmp_path: Path) -> None:
    text = EXAMPLE.replace("#SBATCH --qos=high\n", "#SBATCH --qos=high\n#SBATCH --nodes=4\n")
    code, out, err = plan(tmp_path, text)
    assert code == 3 and out == ""
    assert f"error[sbatch-line]: {tmp_path / 't.py'}:4: #SBATCH --nodes=4 is refused" in err
    assert "mlsub decides how many nodes" in err


def test_an_unknown_option_is_exit_3_not_internal(tmp_path: Path) -> None:
    code, _, err = plan(tmp_path, "#SBATCH --frobnicate\n" + EXAMPLE)
    assert code == 3 and "t.py:1: unknown sbatch option --frobnicate" in err
    assert "internal" not in err


def test_comment_is_merged_and_per_component_options_repeat(tmp_path: Path) -> None:
    text = EXAMPLE.replace("--model resnet-50", "--step-time 0.5 --model-size 1")
    text += "# mlsub: --gpus-per-worker 4\n"
    text = text.replace("#SBATCH --qos=high\n", "#SBATCH --comment='run 7' --exclusive\n")
    code, out, err = plan(tmp_path, text, "--batches-per-epoch", "100000", "--json")
    assert code == 0, err
    doc = json.loads(out)
    components = [x for x in header_lines(doc["script"]) if "--nodelist=" in x]
    assert len(components) == 2
    for line in components:
        assert line.endswith("--comment='run 7' --exclusive")


def test_command_line_sbatch_option_wins_over_the_script(tmp_path: Path) -> None:
    code, out, err = plan(tmp_path, EXAMPLE, "--sbatch", "--qos=low", "--json")
    assert code == 0, err
    lines = header_lines(json.loads(out)["script"])
    assert "#SBATCH --qos=low" in lines and "#SBATCH --qos=high" not in lines


def test_exclude_and_nodelist_narrow_the_placement(tmp_path: Path) -> None:
    text = (
        "#!/bin/bash\n#SBATCH --nodelist=node[1-3] --exclude=node1,node2\n"
        + EXAMPLE.split("\n", 1)[1]
    )
    code, out, err = plan(tmp_path, text, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert {p["node"] for p in doc["placement"]} == {"node3"}
    excluded = {e["name"]: e["reason"] for e in doc["cluster"]["excluded"]}
    assert excluded["node1"] == "in the job's --exclude"
    assert excluded["node4"] == "not in the job's --nodelist"


def test_a_narrowing_that_leaves_no_node_says_why(tmp_path: Path) -> None:
    code, _, err = plan(tmp_path, "#SBATCH --nodelist=node9\n" + EXAMPLE)
    assert code == 3 and "leave no node" in err and "node1: not in the job's --nodelist" in err


def test_plan_for_sbatch_refuses_the_same_lines_as_plan(tmp_path: Path) -> None:
    """The cli_filter plugin applies only what ``mlsub plan --for-sbatch`` prints, so both
    paths refuse a script's ``#SBATCH --nodes=4`` with the same message (the plugin leaves
    the job unchanged; the user sees mlsub's error on sbatch's stderr)."""
    text = EXAMPLE.replace("#SBATCH --qos=high\n", "#SBATCH --qos=high\n#SBATCH --nodes=4\n")
    code, out, err = plan(tmp_path, text, "--for-sbatch")
    assert code == 3 and out == ""
    assert f"{tmp_path / 't.py'}:4: #SBATCH --nodes=4 is refused" in err
