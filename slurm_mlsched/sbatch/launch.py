"""What a re-plan needs to submit a queued job again, for the layout it chose then (pure).

Under late binding (``services/replan.py``) a job that cannot start now is submitted held
with a tentative layout. When a re-plan starts it on a different layout, the script is
rendered again from the decision and this :class:`Launch` (stored with the decision,
``decisions.launch_json``), and submitted the way its user submitted it: from the same
working directory, with the environment sbatch saw then (kept in a file private to the
user, ``env_file``; Slurm keeps a pending job's environment the same way).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from .render import ScriptSpec


@dataclass(frozen=True)
class Launch:
    """The script's labels and command (a :class:`ScriptSpec` without its start time), the
    working directory sbatch ran in, and where the submission's environment is kept."""

    spec: ScriptSpec
    workdir: str
    env_file: str | None = None
    narrowing: dict[str, Any] | None = None
    """The job's ``#SBATCH`` node filter (``NodeFilter.to_json``), which the queue's
    re-plan applies to it; None: every node."""

    def script_spec(self, begin: datetime | None = None) -> ScriptSpec:
        return replace(self.spec, begin=begin)

    def to_json(self) -> dict[str, Any]:
        s = self.spec
        return {
            "command": list(s.command),
            "job_name": s.job_name,
            "decision_id": s.decision_id,
            "comment": s.comment,
            "partition": s.partition,
            "time_limit_minutes": s.time_limit_minutes,
            "output": s.output,
            "base_port": s.base_port,
            "sbatch_job": list(s.sbatch_job),
            "sbatch_each": list(s.sbatch_each),
            "workdir": self.workdir,
            "env_file": self.env_file,
            "narrowing": self.narrowing,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Launch:
        """Raises ``KeyError``/``TypeError``/``ValueError`` on a malformed row (the store
        turns those into a StoreError)."""
        limit = data["time_limit_minutes"]
        spec = ScriptSpec(
            command=tuple(str(c) for c in data["command"]),
            job_name=str(data["job_name"]),
            decision_id=str(data["decision_id"]),
            comment=None if data["comment"] is None else str(data["comment"]),
            partition=None if data["partition"] is None else str(data["partition"]),
            time_limit_minutes=None if limit is None else int(limit),
            output=None if data["output"] is None else str(data["output"]),
            base_port=int(data["base_port"]),
            sbatch_job=tuple(str(x) for x in data.get("sbatch_job") or ()),
            sbatch_each=tuple(str(x) for x in data.get("sbatch_each") or ()),
        )
        env = data.get("env_file")
        narrowing = data.get("narrowing")
        if narrowing is not None and not isinstance(narrowing, dict):
            raise TypeError("narrowing must be an object")
        return Launch(spec, str(data["workdir"]), None if env is None else str(env), narrowing)
