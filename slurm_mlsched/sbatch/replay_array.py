"""Render the job array of ``mlsub replay --on-slurm`` (pure: no I/O but reading the
template, ``sbatch_templates/replay_array.sh.j2``).

One array task per replay cell (``--array=0-(N−1)``), each on one CPU with a modest
``--mem``; task K runs ``PYTHON -P -m slurm_mlsched replay-cell DIR K`` in ``DIR``
(``--chdir``), with its output in ``DIR/cells/K.log`` (``--output=DIR/cells/%a.log``).
``-P`` keeps ``DIR`` off ``sys.path``: a directory named ``slurm_mlsched`` there cannot
shadow the package.

Quoting: every value is shell-quoted (``shlex.quote``, through the template environment's
finalize). sbatch reads ``#SBATCH`` lines with its own tokenizer, which takes shell
quotes (tested on 22.05: spaces, ``'``, ``"``, ``#``), but a backslash or a control
character cannot be carried there: such values are an
:class:`~slurm_mlsched.errors.InputError`. In ``--output`` a ``%`` is Slurm's pattern
character, so the directory's own ``%`` are written ``%%``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from .. import __version__
from ..errors import InputError
from .templates import load_template

TEMPLATE = "replay_array.sh.j2"
DEFAULT_JOB_NAME = "mlsub-replay"
#: Memory of one cell (``--mem``): a whole-Philly replay of one policy peaks at about
#: 430 MB (docs/benchmarks.md, "Replay scale").
DEFAULT_MEM = "2G"

_TIME = re.compile(
    r"^(?:\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
    r"|UNLIMITED|INFINITE)$",
    re.IGNORECASE,
)
_MEM = re.compile(r"^\d+[KMGT]?$", re.IGNORECASE)


@dataclass(frozen=True)
class ArrayScript:
    """What the array script needs: absolute paths, the number of tasks, the limits."""

    out_dir: str  # DIR, absolute: plan.json and cells/ live there
    python: str  # the interpreter that runs each cell (absolute)
    tasks: int
    partition: str | None = None
    time_limit: str | None = None  # Slurm's --time: MIN, MIN:SEC, H:M:S, D-H, D-H:M, D-H:M:S
    mem: str = DEFAULT_MEM
    job_name: str = DEFAULT_JOB_NAME


def render_replay_array(spec: ArrayScript) -> str:
    """The sbatch script of the array (module docstring). Raises InputError for values that
    cannot go into an ``#SBATCH`` line, a bad ``--time`` or ``--mem``, or no task."""
    check_array_script(spec)
    return load_template(TEMPLATE, finalize=_quote).render(
        mlsub_version=__version__,
        tasks=spec.tasks,
        job_name=spec.job_name,
        last_task=spec.tasks - 1,
        output=spec.out_dir.rstrip("/").replace("%", "%%") + "/cells/%a.log",
        out_dir=spec.out_dir,
        mem=spec.mem,
        partition=spec.partition,
        time_limit=spec.time_limit,
        python=spec.python,
    )


def check_array_script(spec: ArrayScript) -> None:
    """The checks of :func:`render_replay_array`, for callers that want them early."""
    if spec.tasks < 1:
        raise InputError(f"a job array needs at least one task, got {spec.tasks}")
    fields = [
        ("--out directory", "--out", spec.out_dir),
        ("interpreter", "python", spec.python),
        ("partition", "--partition", spec.partition),
        ("job name", "job name", spec.job_name),
    ]
    for label, option, value in fields:
        if value is not None and (not value.strip() or _unsafe_in_header(value)):
            raise InputError(
                f"the {label} {value!r} cannot go into an sbatch script: it is empty, or "
                "holds a control character (newline, tab …) or a backslash",
                hint=f"choose a {label} without them",
                context={"option": option, "value": value},
            )
    if spec.time_limit is not None and not _TIME.match(spec.time_limit):
        raise InputError(
            f"option --time must be a Slurm time limit, got {spec.time_limit!r}",
            hint="MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, "
            "DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (e.g. --time 30 or --time 2:00:00)",
            context={"option": "--time", "value": spec.time_limit},
        )
    if not _MEM.match(spec.mem):
        raise InputError(
            f"the cells' memory must be a Slurm size such as 4G, got {spec.mem!r}",
            context={"option": "mem", "value": spec.mem},
        )


def _unsafe_in_header(value: str) -> bool:
    return "\\" in value or any(ord(ch) < 32 or ord(ch) == 127 for ch in value)


def _quote(value: object) -> str:
    return shlex.quote(str(value))
