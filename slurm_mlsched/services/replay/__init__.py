"""The ``replay`` use case (docs/replay-guide.md): :mod:`.run` replays a trace through
the policies; :mod:`.report` writes the files; :mod:`.cells`, :mod:`.array` and
:mod:`.merge` run the (policy × seed × slice) cells as a Slurm job array and merge them;
:mod:`.types` holds what they share (no module here imports one that imports it back).
"""

from __future__ import annotations

from .run import load_input, prepare_jobs, replay_cluster, replay_params, run_replay
from .types import InputRows, ReplayFiles, ReplayInput, ReplayJobs, ReplayOptions, ReplayReport

__all__ = [
    "InputRows",
    "ReplayFiles",
    "ReplayInput",
    "ReplayJobs",
    "ReplayOptions",
    "ReplayReport",
    "load_input",
    "prepare_jobs",
    "replay_cluster",
    "replay_params",
    "run_replay",
]
