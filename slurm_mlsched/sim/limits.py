"""Size limits of the replay's LP lower bound and the replay's default cluster (plain
constants: the CLI declares its defaults with them without loading the engine)."""

from __future__ import annotations

#: The LP relaxation of all the jobs is solved only up to this many jobs …
LP_MAX_JOBS = 60
#: … and this many variables (``sim.metrics.lower_bound``).
LP_MAX_VARIABLES = 40_000
#: ``mlsub replay`` without ``--nodes`` or ``--cluster``: 64 nodes of 8 GPUs.
DEFAULT_NODES = "64x8"
