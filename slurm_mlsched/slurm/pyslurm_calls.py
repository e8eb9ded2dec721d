"""What every read through pyslurm shares (the node state source and the job queue):
the objects of its collections, and one funnel from its exceptions to ``SlurmError``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import SlurmError


def pyslurm_members(collection: Any) -> list[Any]:
    """The objects of a pyslurm collection: a mapping (name/id -> object; 22.5's and
    later ``MultiClusterMap`` is one without being a ``Mapping``, and iterates its keys)
    or a list in other releases."""
    if callable(getattr(collection, "values", None)):
        return list(collection.values())
    return list(collection)


@contextmanager
def pyslurm_errors(source: str) -> Iterator[None]:
    """pyslurm raises RPCError and friends (and AttributeError when its API drifts): one
    ``SlurmError`` (exit 6) naming ``source``."""
    try:
        yield
    except SlurmError:
        raise
    except Exception as exc:
        raise SlurmError(
            f"pyslurm failed: {type(exc).__name__}: {exc}",
            hint="the error came from the Slurm C library through pyslurm; check "
            "`scontrol ping`, or uninstall pyslurm to use the Slurm commands",
            context={"source": source},
        ) from None
