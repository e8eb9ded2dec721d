"""``mlsub plugins check``: would slurmctld (or sbatch) load this Lua plugin?

A broken ``job_submit.lua`` stops slurmctld at start (``fatal: failed to initialize
job_submit plugin``), and on ``scontrol reconfigure`` makes every submission fail; a broken
``cli_filter.lua`` makes every sbatch/srun/salloc fail. The check catches that before the
file is installed, with the Lua interpreter Slurm links (``lua5.1`` on Debian 12 and 13:
``ldd /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so``; ``MLSUB_LUA`` names
another):

1. ``check.lua`` (next to this module, in ``lua/``) loads the file with a stubbed ``slurm``
   table, as Slurm does: a syntax error or an error while loading is reported with Lua's
   ``FILE:LINE: message``;
2. the functions Slurm requires must exist (``slurm_job_submit`` and ``slurm_job_modify``;
   ``slurm_cli_setup_defaults``, ``slurm_cli_pre_submit``, ``slurm_cli_post_submit``) and
   the file must return ``slurm.SUCCESS`` or nothing;
3. for mlsched's own plugins, the site table is validated (types, names, patterns, unknown
   settings: each problem at the line of its setting);
4. sample calls (an untagged and a tagged job, another partition, no fields; sbatch,
   srun, salloc) must neither raise nor log an error. No plan command is ever run.

The interpreter runs through a :class:`~slurm_mlsched.slurm.runner.CommandRunner` (an
argument list and a timeout); :func:`parse_check_output` is pure.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import InputError, LuaMissingError
from ..slurm.runner import CommandRunner
from .files import HARNESS_DIR

LUA_ENV = "MLSUB_LUA"
#: The interpreter of the Lua version Debian's Slurm 22.05 and 24.11 link (liblua5.1).
DEFAULT_LUA = "lua5.1"
CHECK_TIMEOUT_S = 30.0

Severity = Literal["error", "note"]


@dataclass(frozen=True)
class Finding:
    """One problem (or note) in a plugin file; ``line`` is None when no line applies."""

    path: str
    line: int | None
    message: str
    stage: str  # syntax, load, return, missing, site, smoke, interpreter, note
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.severity}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "line": self.line,
            "message": self.message,
            "stage": self.stage,
            "severity": self.severity,
        }


@dataclass(frozen=True)
class PluginReport:
    """What the check found in one file; ``kind`` is job_submit, cli_filter or None."""

    path: str
    kind: str | None
    findings: tuple[Finding, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "ok": self.ok,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(frozen=True)
class CheckReport:
    """``mlsub plugins check``: the Lua interpreter the files were checked with and one
    :class:`PluginReport` per file; ``ok`` when no file has an error."""

    interpreter: str
    files: tuple[PluginReport, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "interpreter": self.interpreter,
            "files": [f.to_json() for f in self.files],
        }


def find_lua(env: Mapping[str, str]) -> str:
    """The interpreter to check with: ``$MLSUB_LUA``, else ``lua5.1`` on PATH."""
    wanted = env.get(LUA_ENV, "").strip() or DEFAULT_LUA
    found = shutil.which(wanted, path=env.get("PATH"))
    if found is None:
        raise LuaMissingError(
            f"the Lua interpreter {wanted!r} is not installed (or not on PATH); the plugin "
            "check runs the plugins with the Lua version Slurm's plugins link",
            hint="Debian 12/13: apt-get install lua5.1 (Slurm links liblua5.1: "
            "ldd /usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_lua.so); "
            f"or point {LUA_ENV} at another interpreter",
            context={"interpreter": wanted},
        )
    return found


def check_plugins(paths: Sequence[Path], *, runner: CommandRunner, lua: str) -> CheckReport:
    """Check each file (see the module docstring)."""
    return CheckReport(lua, tuple(_check_one(path, runner, lua) for path in paths))


def _check_one(path: Path, runner: CommandRunner, lua: str) -> PluginReport:
    try:
        source = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(
            f"cannot read the plugin file {path}: {exc.strerror or exc}",
            hint="give the path of a job_submit.lua or cli_filter.lua",
            context={"path": str(path)},
        ) from None
    harness = HARNESS_DIR / "check.lua"
    result = runner.run([lua, str(harness), str(path)], CHECK_TIMEOUT_S)
    kind, findings = parse_check_output(str(path), source, result.stdout)
    if result.returncode != 0:
        said = (result.stderr.strip() or "(no message)").splitlines()[-1]
        findings += (
            Finding(
                str(path),
                None,
                f"the plugin ended the Lua interpreter (exit status {result.returncode}): {said}",
                "interpreter",
            ),
        )
    return PluginReport(str(path), kind, findings)


# --- reading check.lua's report (pure) ------------------------------------------------------

_LUA_POSITION = re.compile(r"^(?P<chunk>.*?):(?P<line>\d+): (?P<message>.*)$", re.DOTALL)


def parse_check_output(path: str, source: str, text: str) -> tuple[str | None, tuple[Finding, ...]]:
    """Read check.lua's lines (``kind``, ``error``, ``note``; tab-separated) for ``path``,
    whose text is ``source`` (to place site-table problems on their lines)."""
    kind: str | None = None
    findings: list[Finding] = []
    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0] == "kind" and len(fields) == 2:
            kind = fields[1]
        elif fields[0] == "note" and len(fields) == 2:
            findings.append(Finding(path, None, fields[1], "note", "note"))
        elif fields[0] == "error" and len(fields) >= 3:
            findings.append(_error(path, source, fields[1], "\t".join(fields[2:])))
    return kind, tuple(findings)


def _error(path: str, source: str, stage: str, message: str) -> Finding:
    if stage.startswith("site:"):
        setting = stage.removeprefix("site:")
        return Finding(
            path, site_line(source, setting), f"site setting {setting}: {message}", "site"
        )
    if stage in ("syntax", "load"):
        match = _LUA_POSITION.match(message)
        if match and _same_file(match["chunk"], path):
            return Finding(path, int(match["line"]), match["message"], stage)
    return Finding(path, None, message, stage)


def _same_file(chunk: str, path: str) -> bool:
    """Lua names the file as given, shortened to ``...tail`` when long."""
    if chunk.startswith("..."):
        return path.endswith(chunk[3:])
    return chunk == path or Path(chunk).name == Path(path).name


_SITE_START = re.compile(r"^\s*local\s+SITE\s*=")


def site_line(source: str, setting: str) -> int | None:
    """The line of ``setting`` (``ml_partitions[2]`` -> ``ml_partitions``) in the file's site
    table; the table's first line when the setting is not written there; None without one."""
    key = re.match(r"[A-Za-z_]\w*", setting)
    lines = source.splitlines()
    start = next((i for i, line in enumerate(lines) if _SITE_START.match(line)), None)
    if start is None:
        return None
    if key:
        pattern = re.compile(rf"^\s*{re.escape(key[0])}\s*=")
        for i in range(start + 1, len(lines)):
            if pattern.match(lines[i]):
                return i + 1
            if lines[i].startswith("}"):
                break
    return start + 1
