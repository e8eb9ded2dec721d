"""Where a job may run, as its ``#SBATCH`` lines narrow it (pure).

A :class:`NodeFilter` says which nodes a job's tasks may use at all (every task, PS and
worker alike: Slurm applies these options to every component of the job). The live path
leaves the other nodes out of the job's snapshot, each with the reason this filter gives
(``mlsub cluster``'s "excluded" list), so every policy sees only what the job may use;
the queue's re-plan groups the waiting jobs by their filter (``services/replan.py``).

* ``nodelist``: an allowed set (``--nodelist``): only these nodes; mlsub chooses among
  them and need not use them all (Slurm's own reading is "all of these", which mlsub's
  explicit per-component node lists replace);
* ``exclude`` (``--exclude``): never these nodes;
* ``constraint`` (``--constraint``): the node's active features satisfy the expression:
  ``a``, ``a&b`` (all), ``a|b`` (any), ``a,b`` (Slurm's older "and"); no brackets,
  counts or ``!`` (refused when read);
* ``min_mem_mib`` (``--mem``, memory per node), ``min_cpus`` (``--cpus-per-task``,
  ``--mincpus``), ``min_gpus`` (``--gres=gpu:N``): the node's configured capacity is at
  least this much, as Slurm never starts a job on a node smaller than its per-node
  request. What each task gets stays mlsub's ``--mem-per-worker``,
  ``--cpus-per-worker``, ``--gpus-per-worker`` (and the PS ones).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeFilter:
    """The nodes a job may use (see the module docstring); the default allows every node."""

    nodelist: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    constraint: str | None = None
    min_mem_mib: float | None = None
    min_cpus: int | None = None
    min_gpus: int | None = None

    @property
    def narrows(self) -> bool:
        return self != NodeFilter()

    def reason(
        self,
        name: str,
        *,
        cpus: float,
        mem_mib: float,
        gpus: float,
        features: Iterable[str] = (),
    ) -> str | None:
        """Why the job may not use node ``name`` (its capacity and active features), or
        None when it may."""
        if self.nodelist is not None and name not in self.nodelist:
            return "not in the job's --nodelist"
        if name in self.exclude:
            return "in the job's --exclude"
        if self.constraint is not None and not constraint_holds(self.constraint, features):
            return f"its features do not satisfy --constraint={self.constraint}"
        if self.min_mem_mib is not None and mem_mib + 1e-9 < self.min_mem_mib:
            return f"less memory than the job's --mem ({self.min_mem_mib:g} MiB)"
        if self.min_cpus is not None and cpus + 1e-9 < self.min_cpus:
            return f"fewer CPUs than the job's --cpus-per-task ({self.min_cpus})"
        if self.min_gpus is not None and gpus + 1e-9 < self.min_gpus:
            return f"fewer GPUs than the job's --gres=gpu:{self.min_gpus}"
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "nodelist": None if self.nodelist is None else sorted(self.nodelist),
            "exclude": sorted(self.exclude),
            "constraint": self.constraint,
            "min_mem_mib": self.min_mem_mib,
            "min_cpus": self.min_cpus,
            "min_gpus": self.min_gpus,
        }

    @staticmethod
    def from_json(data: dict[str, object] | None) -> NodeFilter:
        """Raises ``TypeError``/``ValueError`` on a malformed value (the store's rows)."""
        if not data:
            return NodeFilter()
        nodes = data.get("nodelist")
        mem, cpus, gpus = data.get("min_mem_mib"), data.get("min_cpus"), data.get("min_gpus")
        constraint = data.get("constraint")
        return NodeFilter(
            nodelist=None if nodes is None else frozenset(str(n) for n in _list(nodes)),
            exclude=frozenset(str(n) for n in _list(data.get("exclude") or [])),
            constraint=None if constraint is None else str(constraint),
            min_mem_mib=None if mem is None else float(str(mem)),
            min_cpus=None if cpus is None else int(str(cpus)),
            min_gpus=None if gpus is None else int(str(gpus)),
        )


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def constraint_holds(expression: str, features: Iterable[str]) -> bool:
    """Whether ``features`` satisfy ``a|b&c`` (``&`` and ``,`` bind tighter than ``|``)."""
    have = set(features)
    return any(
        all(term in have for term in alternative.replace(",", "&").split("&"))
        for alternative in expression.split("|")
    )
