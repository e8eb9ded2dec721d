"""Baseline policies of MODEL.md §6 (docs/formulation.md §13): the arrival policies
``fifo-ff``, ``fifo-bf``, ``oasis`` (+ ``oasis-x0.5``, ``oasis-x2``) with the one policy
signature ``(JobRequest, ClusterSnapshot, PlacementParams) -> Decision``; the
re-allocating policies ``optimus``, ``drf`` and ``tiresias`` (their data in
:mod:`.reallocation`); the queue policy ``qssf``. The table of
:mod:`slurm_mlsched.placement.policy_table` names them; importing this package loads none."""
