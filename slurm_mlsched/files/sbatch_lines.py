"""The user's own ``#SBATCH`` lines: read with sbatch's rules, none dropped silently.

**Which lines** (sbatch's header rules, ``src/sbatch/opt.c``): every line that starts
with ``#SBATCH`` in column 1, from the top of the file until the first line that is a
command, i.e. whose first non-blank character is not ``#`` (blank lines, comments,
the ``#!`` line and ``# mlsub:`` lines may sit in between; ``  #SBATCH`` indented or
``# SBATCH`` are comments for sbatch, and for mlsub).

**How a line is split** (sbatch's tokenizer): words are separated by blanks; ``'`` or
``"`` group characters (the quotes are removed; the other kind of quote is literal
inside); a backslash makes the next character literal; an unquoted ``#`` starts a
comment that ends the line. An unmatched quote is an error (sbatch's too).

**What each option does**: :data:`SBATCH_OPTIONS` is the one table, one row per sbatch
long option (and its short letter), each with its class and the reason:

* ``carried``: written into the rendered script as given; ``per_component`` ones on every
  heterogeneous-job component's line (Slurm keeps them per component and does not carry
  them from the first), the others once, in the first component, from which sbatch
  propagates them. ``--comment`` is merged with mlsub's decision tag (the tag is always
  kept). Some rows set one of mlsub's own job options instead (``job_option``:
  ``--job-name`` -> ``--name``, ``--time``, ``--output``, ``--partition``), and take part
  in its precedence: command line > ``# mlsub:`` > ``#SBATCH`` > the config's ``[job]``;
* ``narrows``: limits the nodes the placement may use
  (:class:`~slurm_mlsched.model.narrowing.NodeFilter`);
* ``refused``: contradicts what mlsub decides (the node and task counts, the layout, a
  job array, hetjob components, holding): an error naming the file, the line, the option
  and what mlsub decides instead;
* ``not-applicable``: has no meaning for a job mlsub submits (``--wrap``, ``--help`` …):
  an error too, so the user learns that it does nothing.

An option the table does not know, a value where none is allowed or none where one is
needed, an ambiguous abbreviation, or a word that is not an option is an error naming the
file and line (exit 3, ``error[sbatch-line]``). Long options may be abbreviated as far as
they stay unique (``--acc=x``), as getopt allows; short options take their value
attached (``-Aml``) or as the next word (``-A ml``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Literal

from ..errors import InputError
from ..model.narrowing import NodeFilter
from ..ranges import JOB_MEM_MIB, OutOfRange, memory_mib, unsafe_in_sbatch_line
from ..slurm.hostlist import expand_hostlist
from .script_text import read_script_text

MAGIC = "#SBATCH"
ERROR_CODE = "sbatch-line"


class Kind(StrEnum):
    CARRIED = "carried"
    NARROWS = "narrows"
    REFUSED = "refused"
    NOT_APPLICABLE = "not-applicable"


Arg = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class SbatchOption:
    """One sbatch option: long name (no dashes), short letter, whether it takes a value,
    its class, and what mlsub does with it and why (docs/user-guide.md shows ``why``)."""

    name: str
    kind: Kind
    why: str
    arg: Arg = "required"
    short: str | None = None
    job_option: str | None = None  # the JobOptions field it sets instead of being carried
    per_component: bool = False


C, N, R, X = Kind.CARRIED, Kind.NARROWS, Kind.REFUSED, Kind.NOT_APPLICABLE
_LAYOUT = "mlsub decides the layout: one component per node with its task counts"
_GPU = "mlsub sizes GPUs per task: use --gpus-per-worker (the script writes --gres per node)"
_MEM = "mlsub sizes memory per task: use --mem-per-worker / --mem-per-ps"
_CPU = "mlsub sizes CPUs per task: use --cpus-per-worker / --cpus-per-ps"
_ROOT = "root only, and mlsub submits as you"

#: Every sbatch option (Slurm 22.05 and 24.11), one row each: the single source of truth.
SBATCH_OPTIONS: tuple[SbatchOption, ...] = (
    # --- carried: whole-job options -------------------------------------------------------
    SbatchOption("account", C, "charged account, as given", short="A"),
    SbatchOption("acctg-freq", C, "accounting sampling, as given"),
    SbatchOption("begin", C, "start no earlier than this; the placement does not see it: "
                 "mlsub's own --begin (a later planned start) comes after it and wins",
                 short="b"),
    SbatchOption("bb", C, "burst buffer, as given"),
    SbatchOption("bbf", C, "burst buffer file, as given"),
    SbatchOption("chdir", C, "the job's working directory (relative --output paths start "
                 "there)", short="D"),
    SbatchOption("clusters", R, "mlsub places on the one cluster it reads", short="M"),
    SbatchOption("cluster-constraint", R, "mlsub places on the one cluster it reads"),
    SbatchOption("comment", C, "merged with mlsub's decision tag (the tag is kept) on every "
                 "component", per_component=True),
    SbatchOption("container", C, "OCI container bundle, as given"),
    SbatchOption("container-id", C, "OCI container id, as given"),
    SbatchOption("core-spec", C, "reserved cores per node, as given", short="S",
                 per_component=True),
    SbatchOption("cpu-freq", C, "CPU frequency request, as given"),
    SbatchOption("deadline", C, "removal deadline, as given"),
    SbatchOption("delay-boot", C, "as given"),
    SbatchOption("dependency", C, "start after these jobs; the placement does not see it "
                 "(the nodes it chose wait for the job)", short="d"),
    SbatchOption("error", C, "standard error file pattern", short="e"),
    SbatchOption("exclusive", C, "whole nodes on every component", arg="optional",
                 per_component=True),
    SbatchOption("export", C, "environment exported to the job", arg="required"),
    SbatchOption("get-user-env", C, "as given", arg="optional"),
    SbatchOption("gres-flags", C, "GRES binding flags, on every component",
                 per_component=True),
    SbatchOption("ignore-pbs", C, "as given", arg="none"),
    SbatchOption("input", C, "standard input file", short="i"),
    SbatchOption("kill-on-invalid-dep", C, "as given"),
    SbatchOption("licenses", C, "licenses, on the first component", short="L"),
    SbatchOption("mail-type", C, "mail events, as given"),
    SbatchOption("mail-user", C, "mail address, as given"),
    SbatchOption("mcs-label", C, "as given"),
    SbatchOption("network", C, "as given"),
    SbatchOption("nice", C, "as given", arg="optional"),
    SbatchOption("no-kill", C, "as given", short="k", arg="optional"),
    SbatchOption("no-requeue", C, "as given", arg="none"),
    SbatchOption("open-mode", C, "as given"),
    SbatchOption("parsable", C, "harmless: mlsub runs sbatch --parsable anyway", arg="none"),
    SbatchOption("power", C, "as given"),
    SbatchOption("prefer", C, "soft feature preference, as given"),
    SbatchOption("priority", C, "as given"),
    SbatchOption("profile", C, "as given"),
    SbatchOption("propagate", C, "as given", arg="optional"),
    SbatchOption("qos", C, "quality of service, as given", short="q"),
    SbatchOption("quiet", C, "harmless: only sbatch's own messages", short="Q", arg="none"),
    SbatchOption("reboot", C, "as given", arg="none"),
    SbatchOption("requeue", C, "as given", arg="none"),
    SbatchOption("reservation", C, "the Slurm reservation, on every component (the placement "
                 "does not read reservations' nodes)", per_component=True),
    SbatchOption("signal", C, "as given"),
    SbatchOption("thread-spec", C, "as given", per_component=True),
    SbatchOption("verbose", C, "harmless: only sbatch's own messages", short="v", arg="none"),
    SbatchOption("wckey", C, "as given"),
    # --- mlsub's own job options ------------------------------------------------------------
    SbatchOption("job-name", C, "sets mlsub's --name (the job name and the plan's id)",
                 short="J", job_option="name"),
    SbatchOption("output", C, "sets mlsub's --output", short="o", job_option="output"),
    SbatchOption("time", C, "sets mlsub's --time (the time limit)", short="t",
                 job_option="time_limit"),
    SbatchOption("time-min", C, "as given"),
    # --- narrows where the placement may go --------------------------------------------------
    SbatchOption("partition", N, "sets mlsub's --partition: only that partition's nodes",
                 short="p", job_option="partition"),
    SbatchOption("constraint", N, "only nodes whose active features satisfy it (a, a&b, a|b)",
                 short="C"),
    SbatchOption("exclude", N, "never these nodes", short="x"),
    SbatchOption("nodelist", N, "only these nodes (an allowed set: mlsub chooses among them)",
                 short="w"),
    SbatchOption("mem", N, "only nodes with at least this much memory; each task gets "
                 "--mem-per-worker / --mem-per-ps"),
    SbatchOption("cpus-per-task", N, "only nodes with at least this many CPUs; each task gets "
                 "--cpus-per-worker / --cpus-per-ps", short="c"),
    SbatchOption("mincpus", N, "only nodes with at least this many CPUs"),
    SbatchOption("gres", N, "gpu:N: only nodes with at least N GPUs; gpu:TYPE:N also sets "
                 "mlsub's --gpu-type TYPE; each worker gets --gpus-per-worker"),
    # --- refused: contradicts the placement ---------------------------------------------------
    SbatchOption("nodes", R, "mlsub decides how many nodes (one component per node)",
                 short="N"),
    SbatchOption("ntasks", R, "mlsub decides the task counts (--workers, --ps)", short="n"),
    SbatchOption("ntasks-per-node", R, "mlsub decides the tasks per node"),
    SbatchOption("ntasks-per-core", R, _LAYOUT),
    SbatchOption("ntasks-per-socket", R, _LAYOUT),
    SbatchOption("ntasks-per-gpu", R, _LAYOUT),
    SbatchOption("array", R, "mlsub submits one job per script; submit it once per index",
                 short="a"),
    SbatchOption("het-group", R, "mlsub writes the hetjob components itself"),
    SbatchOption("distribution", R, _LAYOUT, short="m"),
    SbatchOption("spread-job", R, _LAYOUT, arg="none"),
    SbatchOption("use-min-nodes", R, _LAYOUT, arg="none"),
    SbatchOption("contiguous", R, _LAYOUT, arg="none"),
    SbatchOption("switches", R, _LAYOUT),
    SbatchOption("nodefile", R, "give the allowed nodes with --nodelist", short="F"),
    SbatchOption("overcommit", R, _LAYOUT, short="O", arg="none"),
    SbatchOption("oversubscribe", R, _LAYOUT, short="s", arg="none"),
    SbatchOption("extra-node-info", R, _LAYOUT, short="B"),
    SbatchOption("sockets-per-node", R, _LAYOUT),
    SbatchOption("cores-per-socket", R, _LAYOUT),
    SbatchOption("threads-per-core", R, _LAYOUT),
    SbatchOption("hint", R, _LAYOUT),
    SbatchOption("mem-bind", R, _LAYOUT),
    SbatchOption("gpu-bind", R, _GPU),
    SbatchOption("gpu-freq", C, "GPU frequency, as given"),
    SbatchOption("gpus", R, _GPU, short="G"),
    SbatchOption("gpus-per-node", R, _GPU),
    SbatchOption("gpus-per-socket", R, _GPU),
    SbatchOption("gpus-per-task", R, _GPU),
    SbatchOption("cpus-per-gpu", R, _CPU),
    SbatchOption("mem-per-cpu", R, _MEM),
    SbatchOption("mem-per-gpu", R, _MEM),
    SbatchOption("tres-per-task", R, _LAYOUT),
    SbatchOption("tres-bind", R, _LAYOUT),
    SbatchOption("tmp", R, "mlsub does not know the nodes' temporary disk"),
    SbatchOption("hold", R, "mlsub decides whether the job waits held (its queue)", short="H",
                 arg="none"),
    SbatchOption("wait", R, "sbatch would block until the job ends: use mlsub submit --wait",
                 short="W", arg="none"),
    SbatchOption("wait-all-nodes", C, "as given"),
    SbatchOption("test-only", R, "use mlsub plan for a dry run", arg="none"),
    SbatchOption("export-file", R, "mlsub keeps the submission's environment itself (its "
                 "queue re-submits with it): use --export"),
    SbatchOption("uid", R, _ROOT),
    SbatchOption("gid", R, _ROOT),
    SbatchOption("batch", R, "mlsub decides the nodes, so no batch-host features"),
    SbatchOption("extra", R, "mlsub cannot evaluate it when placing"),
    # --- not applicable -------------------------------------------------------------------------
    SbatchOption("wrap", X, "the script itself is the job", arg="required"),
    SbatchOption("help", X, "a command-line request, not a job option", short="h", arg="none"),
    SbatchOption("usage", X, "a command-line request, not a job option", arg="none"),
    SbatchOption("version", X, "a command-line request, not a job option", short="V",
                 arg="none"),
)  # fmt: skip

BY_NAME = {o.name: o for o in SBATCH_OPTIONS}
BY_SHORT = {o.short: o for o in SBATCH_OPTIONS if o.short}
assert len(BY_NAME) == len(SBATCH_OPTIONS), "duplicate sbatch option"


@dataclass(frozen=True)
class SbatchLine:
    """One option read from an ``#SBATCH`` line: where, which option, its value."""

    line: int
    option: SbatchOption
    value: str | None
    written: str  # the word(s) as written, for messages

    @property
    def rendered(self) -> str:
        """``--name=value`` (shell-quoted value) or ``--name``, for the rendered script."""
        if self.value is None:
            return f"--{self.option.name}"
        return f"--{self.option.name}={shlex.quote(self.value)}"


@dataclass(frozen=True)
class SbatchHeader:
    """What a script's ``#SBATCH`` lines ask for, sorted into the three effects."""

    job_values: dict[str, str] = field(default_factory=dict)  # JobOptions field -> raw value
    carried: tuple[SbatchLine, ...] = ()
    narrowing: NodeFilter = field(default_factory=NodeFilter)
    #: JobOptions field -> (file, line) of the line that set its value (for the value's error)
    lines: dict[str, tuple[str, int]] = field(default_factory=dict)


# --- the tokenizer and the header ---------------------------------------------------------------


def split_line(text: str, source: str, line: int) -> list[str]:
    """The words of what follows ``#SBATCH`` on one line (sbatch's tokenizer, above)."""
    words: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i] == "#":
            return words
        word: list[str] = []
        quote = ""
        while i < n and (quote or not text[i].isspace()):
            ch = text[i]
            if ch == "\\" and i + 1 < n:
                word.append(text[i + 1])
                i += 2
                continue
            if quote:
                if ch == quote:
                    quote = ""
                else:
                    word.append(ch)
            elif ch in "'\"":
                quote = ch
            elif ch == "#":
                break
            else:
                word.append(ch)
            i += 1
        if quote:
            raise _line_error(
                source, line, f"unmatched {quote} quote", "close the quote on that line"
            )
        words.append("".join(word))
        if i < n and text[i] == "#":
            return words


def header_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, text after #SBATCH)`` of every ``#SBATCH`` line sbatch reads."""
    out: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(MAGIC):
            out.append((number, line[len(MAGIC) :]))
            continue
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            break  # the first command: sbatch reads no further
    return out


def parse_sbatch_lines(text: str, source: str) -> tuple[SbatchLine, ...]:
    """Every option of the script's ``#SBATCH`` header, in order (pure); raises
    :class:`InputError` (``sbatch-line``, exit 3) for a line that is refused, unknown or
    malformed."""
    out: list[SbatchLine] = []
    for number, rest in header_lines(text):
        if rest and not rest[0].isspace():
            raise _line_error(
                source, number, f"{MAGIC}{rest.split()[0]} is not an {MAGIC} line",
                f"write '{MAGIC} --option=value' (a blank after {MAGIC})",
            )  # fmt: skip
        out.extend(_options(split_line(rest, source, number), source, number))
    for parsed in out:
        _check_allowed(parsed, source)
    return tuple(out)


def _options(words: Sequence[str], source: str, line: int) -> list[SbatchLine]:
    out: list[SbatchLine] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("hetjob", "packjob"):
            raise _line_error(
                source, line, f"'{MAGIC} {word}' separates heterogeneous-job components",
                "remove it: mlsub writes the components itself, one per node it chooses",
                option=word,
            )  # fmt: skip
        if word.startswith("--") and len(word) > 2:
            parsed, i = _long(words, i, source, line)
        elif word.startswith("-") and len(word) > 1:
            parsed, i = _short(words, i, source, line)
        else:
            raise _line_error(
                source, line, f"{word!r} is not an option",
                f"each word of an {MAGIC} line is an option (--name=value) or its value",
            )  # fmt: skip
        out.append(parsed)
    return out


def _long(words: Sequence[str], i: int, source: str, line: int) -> tuple[SbatchLine, int]:
    word = words[i]
    name, eq, value = word[2:].partition("=")
    option = _lookup_long(name, source, line)
    if eq:
        if option.arg == "none":
            raise _line_error(
                source, line, f"option --{option.name} takes no value, got {word!r}",
                f"write --{option.name} alone", option=option.name,
            )  # fmt: skip
        return SbatchLine(line, option, value, word), i + 1
    if option.arg == "required":
        if i + 1 >= len(words):
            raise _line_error(
                source, line, f"option --{option.name} needs a value",
                f"write --{option.name}=VALUE", option=option.name,
            )  # fmt: skip
        return SbatchLine(line, option, words[i + 1], f"{word} {words[i + 1]}"), i + 2
    return SbatchLine(line, option, None, word), i + 1


def _short(words: Sequence[str], i: int, source: str, line: int) -> tuple[SbatchLine, int]:
    word = words[i]
    option = BY_SHORT.get(word[1])
    if option is None:
        raise _line_error(
            source, line, f"unknown sbatch option {word[:2]!r}",
            "see the table of sbatch options in docs/user-guide.md", option=word[:2],
        )  # fmt: skip
    attached = word[2:]
    if option.arg == "none":
        if attached:
            raise _line_error(
                source, line, f"option -{option.short} takes no value, got {word!r}",
                f"write -{option.short} alone (one option per word)", option=option.name,
            )  # fmt: skip
        return SbatchLine(line, option, None, word), i + 1
    if attached or option.arg == "optional":
        return SbatchLine(line, option, attached or None, word), i + 1
    if i + 1 >= len(words):
        raise _line_error(
            source, line, f"option -{option.short} needs a value",
            f"write -{option.short} VALUE", option=option.name,
        )  # fmt: skip
    return SbatchLine(line, option, words[i + 1], f"{word} {words[i + 1]}"), i + 2


def _lookup_long(name: str, source: str, line: int) -> SbatchOption:
    if name in BY_NAME:
        return BY_NAME[name]
    matches = [o for o in SBATCH_OPTIONS if o.name.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(f"--{o.name}" for o in matches)
        raise _line_error(
            source, line, f"option --{name} is ambiguous ({names})",
            "write the option's full name", option=name,
        )  # fmt: skip
    raise _line_error(
        source, line, f"unknown sbatch option --{name}",
        "see the table of sbatch options in docs/user-guide.md", option=name,
    )  # fmt: skip


def _check_allowed(parsed: SbatchLine, source: str) -> None:
    option = parsed.option
    if option.kind == Kind.REFUSED:
        raise _line_error(
            source, parsed.line, f"{MAGIC} {parsed.written} is refused: {option.why}",
            "remove that line; mlsub decides it (see the sbatch option table in "
            "docs/user-guide.md)", option=option.name,
        )  # fmt: skip
    if option.kind == Kind.NOT_APPLICABLE:
        raise _line_error(
            source, parsed.line, f"{MAGIC} {parsed.written} does not apply: {option.why}",
            "remove that line", option=option.name,
        )  # fmt: skip
    if parsed.value is not None and unsafe_in_sbatch_line(parsed.value):
        raise _line_error(
            source, parsed.line, f"the value of --{option.name} holds a backslash or a "
            "control character, which cannot be written back into an #SBATCH line",
            "write the value without them", option=option.name,
        )  # fmt: skip


def _line_error(
    source: str, line: int, problem: str, hint: str, *, option: str | None = None
) -> InputError:
    context: dict[str, object] = {"file": source, "line": line}
    if option is not None:
        context["option"] = option
    return InputError(f"{source}:{line}: {problem}", hint=hint, context=context, code=ERROR_CODE)


# --- what the lines ask for ---------------------------------------------------------------------


def sort_lines(lines: Sequence[SbatchLine], source: str) -> SbatchHeader:
    """The lines' effects: job-option values (last wins), carried lines (in order) and the
    node filter."""
    job_values: dict[str, str] = {}
    where: dict[str, tuple[str, int]] = {}
    carried: list[SbatchLine] = []
    filt = NodeFilter()
    for parsed in lines:
        option = parsed.option
        if option.job_option is not None:
            job_values[option.job_option] = parsed.value or ""
            where[option.job_option] = (source, parsed.line)
        elif option.kind == Kind.CARRIED:
            carried.append(parsed)
        elif option.kind == Kind.NARROWS:
            filt = _narrow(filt, parsed, source)
            if option.name == "gres":  # a typed request also names the GPU type (last wins)
                typed, _ = gres_gpus(parsed.value or "", _no_error)
                if typed is not None:
                    job_values["gpu_type"] = typed
                    where["gpu_type"] = (source, parsed.line)
    return SbatchHeader(job_values, tuple(carried), filt, where)


def _narrow(filt: NodeFilter, parsed: SbatchLine, source: str) -> NodeFilter:
    name, value = parsed.option.name, parsed.value or ""

    def bad(problem: str, hint: str) -> InputError:
        return _line_error(source, parsed.line, f"--{name}={value}: {problem}", hint, option=name)

    if name in ("nodelist", "exclude"):
        try:
            nodes = frozenset(expand_hostlist(value))
        except ValueError as exc:
            raise bad(f"not a host list ({exc})", "write node1,node2 or node[1-3]") from None
        if not nodes:
            raise bad("names no node", "write node1,node2 or node[1-3]")
        if name == "exclude":
            return replace(filt, exclude=filt.exclude | nodes)
        return replace(filt, nodelist=nodes)
    if name == "constraint":
        if any(ch in value for ch in "[]*!()") or not value.strip():
            raise bad(
                "only plain features joined by & (all) or | (any) are supported",
                "write --constraint=a, a&b or a|b",
            )
        if "|" in value and ("&" in value or "," in value):
            raise bad("mixes | with & (no order of evaluation is defined)", "use one kind")
        if any(not term for term in value.replace(",", "&").replace("|", "&").split("&")):
            raise bad("has an empty feature", "write --constraint=a&b")
        return replace(filt, constraint=value)
    if name == "mem":
        try:
            mib = memory_mib(value, JOB_MEM_MIB)
        except OutOfRange as err:
            raise bad(err.problem, "write a size such as 16G (a bare number is MiB)") from None
        return replace(filt, min_mem_mib=mib)
    if name in ("cpus-per-task", "mincpus"):
        if not value.isdigit() or int(value) < 1:
            raise bad("is not a whole number >= 1", f"write --{name}=4")
        return replace(filt, min_cpus=max(int(value), filt.min_cpus or 0))
    return replace(filt, min_gpus=_gpus(value, bad))


def _gpus(value: str, bad: Callable[[str, str], InputError]) -> int:
    """``gpu:N`` / ``gpu`` / ``gpu:TYPE:N`` / ``gpu:TYPE`` -> N (one without a count)."""
    return gres_gpus(value, bad)[1]


def gres_gpus(value: str, bad: Callable[[str, str], InputError]) -> tuple[str | None, int]:
    """``--gres``'s GPU type (None: untyped) and count: ``gpu``, ``gpu:N``, ``gpu:TYPE``,
    ``gpu:TYPE:N`` (sbatch's forms); any other GRES, or several, is an error."""
    parts = value.split(":")
    hint = "write --gres=gpu:N or gpu:TYPE:N, or leave it out (mlsub writes each node's --gres)"
    if "," in value or parts[0] != "gpu" or len(parts) > 3 or any(not p for p in parts):
        raise bad("only one GPU request (gpu:N or gpu:TYPE:N) is understood", hint)
    if len(parts) == 1:
        return None, 1
    if len(parts) == 2:
        return (None, int(parts[1])) if parts[1].isdigit() else (parts[1], 1)
    if not parts[2].isdigit() or parts[1].isdigit():
        raise bad("is not gpu:TYPE:N (a type, then a whole number)", hint)
    return parts[1], int(parts[2])


def _no_error(problem: str, hint: str) -> InputError:  # pragma: no cover - checked before
    return InputError(problem, hint=hint)


def read_sbatch_header(path: str | Path) -> SbatchHeader:
    """Read ``path`` and sort its ``#SBATCH`` lines (see :func:`sort_lines`)."""
    source = str(path)
    text = read_script_text(path)
    return sort_lines(parse_sbatch_lines(text, source), source)


# --- carried options from mlsub's own sources (--sbatch) and their rendering ---------------------


def parse_carried(text: str, source: str) -> tuple[SbatchLine, ...]:
    """The options of an ``--sbatch '--qos=high --account=ml'`` value (the command line,
    the ``# mlsub:`` header or the config's ``[job]`` table): carried options only."""
    lines = _options(split_line(text, source, 0), source, 0)
    for parsed in lines:
        _check_allowed(parsed, source)
        option = parsed.option
        if option.job_option is not None:
            flag = {"name": "--name", "time_limit": "--time"}.get(
                option.job_option, f"--{option.job_option}"
            )
            raise InputError(
                f"{source}: --sbatch --{option.name}: use mlsub's own option {flag}",
                hint=f"write {flag} VALUE instead", context={"option": option.name},
                code=ERROR_CODE,
            )  # fmt: skip
        if option.kind != Kind.CARRIED:
            raise InputError(
                f"{source}: --sbatch --{option.name} narrows the placement: write it as an "
                f"{MAGIC} line in the script",
                hint=f"add '{MAGIC} {parsed.written}' to the script's header",
                context={"option": option.name}, code=ERROR_CODE,
            )  # fmt: skip
    return tuple(lines)


def merge_carried(layers: Sequence[Sequence[SbatchLine]]) -> tuple[str, ...]:
    """The carried lines of several sources, lowest first: an option given in a higher
    source replaces every line of that option from the lower ones (within one source the
    lines stay in order, as sbatch reads them). ``--comment`` may not hold a decision tag."""
    merged: list[SbatchLine] = []
    for layer in layers:
        names = {p.option.name for p in layer}
        merged = [p for p in merged if p.option.name not in names] + list(layer)
    for p in merged:
        if p.option.name == "comment" and p.value and "mlsched:decision" in p.value:
            raise InputError(
                f"--comment {p.value!r} holds 'mlsched:decision', mlsub's decision tag",
                hint="leave the tag to mlsub: it adds it to your comment",
                context={"option": "comment"}, code=ERROR_CODE,
            )  # fmt: skip
    return tuple(p.rendered for p in merged)


@dataclass(frozen=True)
class CarriedLines:
    """Carried options as the renderer writes them: once (in the first component), on
    every component, and the user's comment (merged with the tag)."""

    job_wide: tuple[str, ...] = ()
    per_component: tuple[str, ...] = ()
    comment: str | None = None


def carried_lines(rendered: Sequence[str]) -> CarriedLines:
    """Sort ``--name=value`` strings (from :func:`merge_carried`) for the renderer."""
    job_wide: list[str] = []
    per_component: list[str] = []
    comment: str | None = None
    for text in rendered:
        parsed = _options(split_line(text, "carried", 0), "carried", 0)[0]
        if parsed.option.name == "comment":
            comment = parsed.value
        elif parsed.option.per_component:
            per_component.append(text)
        else:
            job_wide.append(text)
    return CarriedLines(tuple(job_wide), tuple(per_component), comment)


def merged_comment(user: str | None, tag: str | None) -> str | None:
    """The job's ``--comment``: the user's text, then mlsub's tag (``run 7;mlsched:…``),
    joined as the cli_filter plugin joins them (``apply_plan``)."""
    parts = [p for p in (user, tag) if p]
    return ";".join(parts) if parts else None
