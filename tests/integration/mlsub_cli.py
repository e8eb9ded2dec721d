"""Running the real ``mlsub`` command against the lab cluster, with a store of the test's own.

Each :class:`Mlsub` has its own SQLite file, cluster name and Δ, and runs ``mlsub`` as a
subprocess (a real process: the crash tests kill it) with a clean configuration.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.task_probe import PROBE

#: A job script that writes what each task sees (tests/task_probe.py), then sleeps for
#: ``argv[2]`` seconds (0 when absent), and whose header asks for ``{header}``.
PROBE_SCRIPT = """#!/usr/bin/env python3
# mlsub: {header}
import sys, time
exec({probe!r})
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""

SMALL_TASKS = (
    "--gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 1G --cpus-per-ps 1 "
    "--mem-per-ps 512M --step-time 0.05 --model-size 1"
)


def mlsub_executable() -> str:
    here = Path(sys.executable).parent / "mlsub"
    return str(here) if here.exists() else (shutil.which("mlsub") or "mlsub")


def probe_script(path: Path, header: str) -> Path:
    path.write_text(PROBE_SCRIPT.format(header=header, probe=PROBE))
    return path


@dataclass
class Mlsub:
    """``mlsub`` with its own store; ``run`` returns the finished process."""

    workdir: Path
    slot_seconds: int = 10
    cluster_name: str = "lab-it"
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def db(self) -> Path:
        return self.workdir / "decisions.db"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in [k for k in env if k.startswith("MLSUB_")]:
            del env[key]
        env.update(
            {
                "MLSUB_DB_URL": f"sqlite:///{self.db}",
                "MLSUB_CONFIG": str(self.workdir / "no-config.toml"),
                "MLSUB_SLOT_SECONDS": str(self.slot_seconds),
                "MLSUB_CLUSTER_NAME": self.cluster_name,
                "COLUMNS": "200",
                **self.extra_env,
            }
        )
        return env

    def argv(self, *args: str) -> list[str]:
        return [mlsub_executable(), *args]

    def run(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            self.argv(*args),
            cwd=self.workdir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"mlsub {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str) -> Any:
        """``mlsub ARGS --json`` (``--json`` goes before a ``--``: what follows is the
        program's)."""
        cut = args.index("--") if "--" in args else len(args)
        return json.loads(self.run(*args[:cut], "--json", *args[cut:]).stdout)

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        """Start ``mlsub`` in a session of its own (so a test can kill it with its children)."""
        return subprocess.Popen(
            self.argv(*args),
            cwd=self.workdir,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )


def site_preempting(
    base: Mlsub, *, restart_s: float | None = 5.0, wait_max_s: float = 30.0, **keys: bool
) -> Mlsub:
    """``base`` (same store, cluster name and Δ) as the site's ``mlsub replan`` runs it with
    checkpoint-restart preemption on: ``preempt``, the longest checkpoint wait
    ``wait_max_s``, the site's restart cost ``restart_s`` (None: the default) and each of
    ``keys`` that is true as ``preempt_KEY`` (``resize=True``: ``MLSUB_PREEMPT_RESIZE=1``).
    The variables are root's (``MLSUB_PREEMPT*`` are honoured for root only)."""
    env = {"MLSUB_PREEMPT": "1", "MLSUB_PREEMPT_WAIT_MAX_S": f"{wait_max_s:g}"}
    env.update({f"MLSUB_PREEMPT_{key.upper()}": "1" for key, on in keys.items() if on})
    if restart_s is not None:
        env["MLSUB_RESTART_S"] = f"{restart_s:g}"
    return Mlsub(base.workdir, base.slot_seconds, base.cluster_name, {**base.extra_env, **env})
