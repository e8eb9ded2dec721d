"""The ``policies`` use case: the registered placement policies and what each does."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass

from ..placement import policy_names
from ..placement.registry import live_policy_names, policy_function


@dataclass(frozen=True)
class PolicyInfo:
    """One placement policy ``mlsub policies`` lists: its name (for ``--policy``), the
    first paragraph of its policy function's docstring (or of its module's), as one line,
    and where it runs: ``live`` (``plan``, ``submit`` and ``replay``) or ``replay`` only
    (re-allocating and queue-only policies)."""

    name: str
    summary: str
    runs: str = "live"

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def list_policies() -> tuple[PolicyInfo, ...]:
    """Every registered policy, in the registry's order."""
    out = []
    live = set(live_policy_names())
    for name in policy_names():
        fn = policy_function(name)
        module = sys.modules.get(fn.__module__)
        doc = (fn.__doc__ or (module.__doc__ if module else None) or "").strip()
        first = " ".join(doc.split("\n\n")[0].split())
        runs = "live" if name in live else "replay"
        out.append(PolicyInfo(name, first.replace("``", ""), runs))
    return tuple(out)
