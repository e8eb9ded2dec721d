"""Shell completion of values (issue 29, item 3): model names, policies, decision ids.

Typer's own completion (``mlsub --install-completion`` / ``--show-completion``, for bash,
zsh and fish) completes commands and options; these functions complete the values of
``--model``, ``--policy`` and a decision id. Each runs only while the shell completes
(``_MLSUB_COMPLETE`` set), imports what it needs then, and fails quietly: a completion
that cannot answer offers nothing rather than printing an error into the prompt.

The decision ids come from the configured store, read-only, the newest
:data:`MAX_IDS` the user may see, with a short busy timeout (:data:`STORE_TIMEOUT_S`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import JobProfile

#: Decision ids offered at most (the newest).
MAX_IDS = 50
#: How long completion waits for a locked SQLite store (PostgreSQL: its connect timeout).
STORE_TIMEOUT_S = 1.0


def models(incomplete: str) -> list[tuple[str, str]]:
    """The profiled models (the shipped profile table), with their description."""
    try:
        from ..files.profiles import load_profiles

        table = load_profiles()
    except Exception:  # completion never fails loudly
        return []
    return [
        (name, _model_help(p)) for name, p in sorted(table.items()) if name.startswith(incomplete)
    ]


def _model_help(profile: JobProfile) -> str:
    return f"{profile.model_size_mb:g} MB model, {profile.step_time_s:g} s/step"


def architectures(incomplete: str) -> list[tuple[str, str]]:
    """``--arch`` values, with what each means."""
    said = {"ps": "parameter servers", "allreduce": "ring all-reduce, no PS (DDP)"}
    return [(name, help) for name, help in said.items() if name.startswith(incomplete)]


def launchers(incomplete: str) -> list[tuple[str, str]]:
    """``--launcher`` values (an allreduce job's), with what each runs."""
    said = {"torchrun": "one torchrun per node (default)", "srun": "one task per rank"}
    return [(name, help) for name, help in said.items() if name.startswith(incomplete)]


def live_policies(incomplete: str) -> list[str]:
    """The policies ``plan`` and ``submit`` can use (the placement registry)."""
    try:
        from ..placement.registry import live_policy_names

        return [p for p in live_policy_names() if p.startswith(incomplete)]
    except Exception:
        return []


def policies(incomplete: str) -> list[str]:
    """Every policy of the placement registry (``replay``)."""
    try:
        from ..placement.registry import policy_names

        return [p for p in policy_names() if p.startswith(incomplete)]
    except Exception:
        return []


def decision_ids(incomplete: str) -> list[tuple[str, str]]:
    """The newest decisions the user may see, newest first: id and "state job-name"."""
    try:
        return _decision_ids(incomplete)
    except Exception:  # a missing or locked store offers nothing
        return []


def _decision_ids(incomplete: str) -> list[tuple[str, str]]:
    from dataclasses import replace

    from ..api import open_store as opened
    from ..api import own_user
    from ..api import store_context as context
    from ..storage import HistoryFilter

    ctx = context({})
    ctx = replace(ctx, config=replace(ctx.config, db_busy_timeout_s=STORE_TIMEOUT_S))
    where = HistoryFilter(user=own_user(ctx.viewer, None), limit=MAX_IDS)
    with opened(ctx, reading=True) as store:
        rows = store.history(where)
    return [
        (str(r.decision_id), f"{r.state.value} {r.job_name}")
        for r in reversed(rows)
        if str(r.decision_id).startswith(incomplete)
    ]


def completing() -> bool:
    """Whether this process answers a shell's completion request."""
    return "_MLSUB_COMPLETE" in os.environ
