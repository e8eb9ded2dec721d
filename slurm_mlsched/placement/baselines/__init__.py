"""Baseline policies of MODEL.md §6, registered under their names: the arrival policies
``fifo-ff``, ``fifo-bf``, ``oasis`` (+ ``oasis-x0.5``, ``oasis-x2``) with the one policy
signature ``(JobRequest, ClusterSnapshot, PlacementParams) -> Decision``, and the
re-allocating policies ``optimus`` and ``drf`` (``placement.reallocation``)."""

from . import drf, fifo, oasis, optimus, qssf, tiresias  # noqa: F401  (register their policies)
