"""Baseline policies of MODEL.md §6, registered under their names with the one policy
signature ``(JobRequest, ClusterSnapshot, PlacementParams) -> Decision``."""

from . import fifo  # noqa: F401  (registers fifo-ff and fifo-bf)
