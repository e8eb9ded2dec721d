"""Which process is submitting a decision, and whether it is still there.

``mlsub submit`` records the decision as ``submitting`` before it runs sbatch, with its own
identity: ``pid=<PID> start=<TICKS> boot=<BOOT_ID>`` (Linux: the process's start time in
clock ticks since boot, field 22 of ``/proc/<pid>/stat``, and the kernel's boot id), on the
decision's ``host``. ``mlsub reconcile`` on the same host then knows for certain whether
that submission is still in progress: the process is alive when ``/proc/<PID>/stat``
exists with the same start time and the boot id is unchanged. A reused pid (another process
started later) or a reboot reads as gone. Without ``/proc`` the start time is not recorded
and liveness is ``os.kill(pid, 0)``.

From another host nothing can be told (:func:`alive` returns ``None``); reconcile then
leaves the decision to the host that made it, or to its age bound (docs/admin-guide.md).
A submission over SSH (``via=ssh``) has a second process, the sbatch on the login host,
which may outlive a dropped connection: such a decision is failed only once the local
process is gone and :data:`REMOTE_SETTLE_S` have passed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_BOOT_ID = _PROC / "sys" / "kernel" / "random" / "boot_id"
_TEXT = re.compile(r"pid=(\d+)(?: start=(\d+))?(?: boot=([0-9a-f-]+))?(?: (via=ssh))?")


@dataclass(frozen=True)
class ProcessId:
    """One process on one host, told apart from a later one with the same pid."""

    pid: int
    start: int | None = None
    boot: str | None = None
    remote: bool = False
    """Its sbatch runs on another host over SSH: when this process is gone, that sbatch may
    still be running there for a while (reconcile waits :data:`REMOTE_SETTLE_S`)."""

    def __str__(self) -> str:
        parts = [f"pid={self.pid}"]
        if self.start is not None:
            parts.append(f"start={self.start}")
        if self.boot is not None:
            parts.append(f"boot={self.boot}")
        if self.remote:
            parts.append("via=ssh")
        return " ".join(parts)

    @classmethod
    def parse(cls, text: str | None) -> ProcessId | None:
        """The identity :meth:`__str__` wrote, or ``None`` for anything else."""
        m = _TEXT.fullmatch((text or "").strip())
        if m is None:
            return None
        start = None if m.group(2) is None else int(m.group(2))
        return cls(int(m.group(1)), start, m.group(3), m.group(4) is not None)


#: A remote submission's sbatch may outlive the local process that started it (the SSH
#: connection dropped while it ran): its decision is not failed before this many seconds
#: (sbatch retries the controller for about a minute at most: MessageTimeout x retries).
REMOTE_SETTLE_S = 120.0


def this_process(*, remote: bool = False) -> ProcessId:
    """The identity of the running process (``remote``: it submits over SSH)."""
    pid = os.getpid()
    return ProcessId(pid, _start_ticks(pid), boot_id(), remote)


def alive(who: ProcessId, *, same_host: bool) -> bool | None:
    """Whether ``who`` still runs: ``True``/``False`` on its own host, ``None`` elsewhere."""
    if not same_host:
        return None
    if who.boot is not None and boot_id() not in (None, who.boot):
        return False  # the machine rebooted since
    if who.start is not None:
        now = _start_ticks(who.pid)
        if now is not None or _PROC.joinpath("self").exists():
            return now == who.start
    try:
        os.kill(who.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def _start_ticks(pid: int) -> int | None:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ")"
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 overall: starttime
    except (IndexError, ValueError):
        return None


def boot_id() -> str | None:
    """This machine's boot id (a process identity with the same one ran on this host)."""
    try:
        return _BOOT_ID.read_text().strip() or None
    except OSError:
        return None
