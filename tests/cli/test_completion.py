"""Shell completion (issue 29, item 3), driven as the shells drive it: the real ``mlsub``
process with ``COMP_WORDS`` / ``COMP_CWORD`` and ``_MLSUB_COMPLETE`` (Click's order,
``bash_complete``, and Typer's, ``complete_bash``, which the installed script uses), and
the script ``mlsub --show-completion bash`` prints, sourced by a real bash. Commands,
options, a policy, a model and a decision id (from a real SQLite store) complete; a store
that cannot be read offers no ids and prints nothing."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_mlsched.storage import open_store
from tests.unit.test_metrics_values import several_states

MLSUB = Path(sys.executable).parent / "mlsub"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MLSUB_")}
    return {
        **base,
        "PATH": f"{MLSUB.parent}{os.pathsep}{base.get('PATH', '')}",
        "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'decisions.db'}",
        "MLSUB_CONFIG": str(tmp_path / "none.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }


def complete(env: dict[str, str], line: str, style: str = "bash_complete") -> list[str]:
    """What ``mlsub`` offers for the last word of ``line`` (a trailing space: a new word)."""
    words = line.split(" ")
    done = subprocess.run(
        [str(MLSUB)],
        env={
            **env,
            "_MLSUB_COMPLETE": style,
            "COMP_WORDS": line,
            "COMP_CWORD": str(len(words) - 1),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def test_commands_and_options_complete(env: dict[str, str]) -> None:
    assert {"plan", "plugins", "policies"} <= set(complete(env, "mlsub p"))
    assert "metrics" in complete(env, "mlsub me")
    assert "--reserve" in complete(env, "mlsub plan --res")
    assert set(complete(env, "mlsub metrics --ser")) == {"--serve", "--serve-seconds"}
    # the installed script's (Typer's) order of the request answers the same
    assert complete(env, "mlsub me", style="complete_bash") == complete(env, "mlsub me")


def test_a_policy_and_a_model_complete(env: dict[str, str]) -> None:
    assert complete(env, "mlsub plan --policy yu") == ["yu-rr"]
    # replay offers every policy, plan and submit the live ones only
    assert "optimus" in complete(env, "mlsub replay t.csv -p opt")
    assert "optimus" not in complete(env, "mlsub plan --policy ")
    models = complete(env, "mlsub submit --model res")
    assert "resnet-50" in models and all(m.startswith("res") for m in models)


def test_decision_ids_come_from_the_store(env: dict[str, str], tmp_path: Path) -> None:
    store = open_store(env["MLSUB_DB_URL"], grace_s=0.0)
    try:
        ids = several_states(store, tmp_path)
    finally:
        store.close()
    offered = complete(env, "mlsub show ")
    assert offered == [str(i) for i in reversed(ids)]  # newest first
    assert complete(env, "mlsub explain 9999") == []
    assert str(ids[0]) in complete(env, "mlsub reconcile ")


def test_an_unreadable_store_offers_no_ids_quietly(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "not-a-db"
    bad.write_text("this is no SQLite file\n")
    assert complete({**env, "MLSUB_DB_URL": f"sqlite:///{bad}"}, "mlsub show ") == []
    unreachable = "postgresql://u:p@127.0.0.1:1/none?connect_timeout=1"
    assert complete({**env, "MLSUB_DB_URL": unreachable}, "mlsub show ") == []


def test_the_script_show_completion_prints_completes_in_a_real_bash(
    env: dict[str, str], tmp_path: Path
) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    # run from bash, as a user does: --show-completion detects the shell among its parent
    # processes, so a test run with no shell among its own (a pytest reparented to init)
    # failed with "Shell  not supported"; "; exit $?" keeps bash from exec'ing mlsub
    shown = subprocess.run(
        [bash, "--norc", "-c", f"{shlex.quote(str(MLSUB))} --show-completion; exit $?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    script = shown.stdout
    assert "complete -o default -F _mlsub_completion mlsub" in script
    (tmp_path / "mlsub.bash").write_text(script)
    driver = (
        f"source {tmp_path / 'mlsub.bash'}\n"
        "COMP_WORDS=(mlsub plan --policy yu); COMP_CWORD=3; _mlsub_completion mlsub\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        [bash, "--norc", "-c", driver], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["yu-rr"], done.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_a_script_for_each_shell(env: dict[str, str], shell: str) -> None:
    # --show-completion detects the shell it runs under; Typer's switch to name it instead
    # (its own tests use it) stands for running under each shell here
    done = subprocess.run(
        [str(MLSUB), "--show-completion", shell],
        env={**env, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "_MLSUB_COMPLETE=complete_" + shell in done.stdout


def test_zsh_and_fish_requests_complete_too(env: dict[str, str]) -> None:
    for shell in ("zsh", "fish"):
        extra = {
            "_TYPER_COMPLETE_ARGS": "mlsub plan --policy yu",
            "_MLSUB_COMPLETE": f"complete_{shell}",
        }
        if shell == "fish":
            extra["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
        done = subprocess.run(
            [str(MLSUB)], env={**env, **extra}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and "yu-rr" in done.stdout, (shell, done.stdout, done.stderr)


def test_version_is_a_plain_flag_in_help(env: dict[str, str]) -> None:
    done = subprocess.run(
        [str(MLSUB), "--help"],
        env={**env, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (line,) = [x for x in done.stdout.splitlines() if "--version" in x]
    assert "<bool>" not in line and "Print the version." in line
    assert "--install-completion" in done.stdout and "--show-completion" in done.stdout


def test_install_completion_writes_the_script_and_sources_it_from_bashrc(
    env: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [str(MLSUB), "--install-completion", "bash"],
        env={**env, "HOME": str(home), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    script = home / ".bash_completions" / "mlsub.sh"
    assert str(script) in done.stdout
    assert "_MLSUB_COMPLETE=complete_bash" in script.read_text()
    assert f"source '{script}'" in (home / ".bashrc").read_text()


def test_the_architecture_and_the_launcher_complete(env: dict[str, str]) -> None:
    assert complete(env, "mlsub plan --arch a") == ["allreduce"]
    assert set(complete(env, "mlsub submit --arch ")) >= {"ps", "allreduce"}
    assert complete(env, "mlsub submit --launcher s") == ["srun"]
