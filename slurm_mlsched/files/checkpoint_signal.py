"""A job's checkpoint signal: its ``#SBATCH --signal=[{R|B}:]SIG[@SECONDS]`` line (pure).

A job that asks Slurm for a warning signal before its time limit says how it wants to be
told to save its state, and how long saving takes. The live queue's checkpoint-restart
preemption (docs/formulation.md §16, "Live"; ``services/preempt.py``) takes that line as
the job's consent and its protocol: a running job whose script has no ``--signal`` is
never preempted; one that has it gets that signal (``scancel --signal=SIG``, the batch
shell alone with ``B:``, as Slurm itself would send it), and is requeued after
``SECONDS`` (Slurm's default 60 when the line gives none), capped by the site.

The line is read from the script mlsub rendered and stored with the decision (the user's
``--signal`` is carried into it as given, ``files/sbatch_lines.py``), with sbatch's own
header rules and tokenizer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from .sbatch_lines import header_lines, split_line

#: Slurm's warning time when ``--signal`` names none (sbatch(1)).
DEFAULT_WARNING_S = 60
_SPEC = re.compile(r"^(?:(?P<flags>[RB]+):)?(?P<sig>[A-Za-z0-9]+)(?:@(?P<time>\d+))?$")
#: The signals a checkpoint may be asked with (a number is taken as it is).
_NAMES = frozenset(
    {"USR1", "USR2", "HUP", "INT", "TERM", "QUIT", "ALRM", "CONT", "URG", "WINCH", "PWR"}
)


@dataclass(frozen=True)
class CheckpointSignal:
    """What ``--signal`` asks for: the signal (a name without ``SIG``, or a number), the
    seconds of warning, and whether only the batch shell is signalled (``B:``)."""

    signal: str
    warning_s: int = DEFAULT_WARNING_S
    batch_only: bool = False

    def scancel_args(self) -> list[str]:
        """``scancel``'s options that deliver it as Slurm would: every job step (the
        training tasks), or with ``B:`` the batch shell alone."""
        return [f"--signal={self.signal}", *(["--batch"] if self.batch_only else [])]


def parse_signal_spec(value: str) -> CheckpointSignal | None:
    """``[{R|B}:]SIG[@SECONDS]`` (sbatch's syntax), or None when it is not one."""
    m = _SPEC.match(value.strip())
    if m is None:
        return None
    sig = m.group("sig").upper().removeprefix("SIG")
    if not (sig.isdigit() and 0 < int(sig) < 65) and sig not in _NAMES:
        return None
    warning = int(m.group("time")) if m.group("time") is not None else DEFAULT_WARNING_S
    return CheckpointSignal(sig, warning, "B" in (m.group("flags") or ""))


def checkpoint_signal(script: str | None) -> CheckpointSignal | None:
    """The ``--signal`` of a stored script's ``#SBATCH`` header (the last one wins, as in
    sbatch), or None when it has none or an unreadable one, or asks ``--no-requeue`` (a
    job Slurm may not requeue cannot be paused): then it is never preempted."""
    found: CheckpointSignal | None = None
    requeue = True
    for number, rest in header_lines(script or ""):
        try:
            words = split_line(rest, "script", number)
        except InputError:  # an unmatched quote: that line says nothing
            continue
        for k, word in enumerate(words):
            if word in ("--requeue", "--no-requeue"):
                requeue = word == "--requeue"
                continue
            if word.startswith("--signal="):
                value: str | None = word.split("=", 1)[1]
            elif word == "--signal" and k + 1 < len(words):
                value = words[k + 1]
            else:
                continue
            if value is not None:
                found = parse_signal_spec(value)
    return found if requeue else None
