"""Site and user configuration, loaded once per command, typed (STYLE.md habit 10).

Precedence, lowest first::

    defaults < /etc/mlsched/config.toml < $XDG_CONFIG_HOME/mlsched/config.toml
             < MLSUB_* environment variables < command-line flags

The files are TOML with these keys (every key optional; unknown keys are errors)::

    db_url = "postgresql+psycopg://mlsub@dbhost/mlsub"  # default: SQLite under XDG state
    admins = ["alice", "bob"]          # may see every user's decisions (root always may)
    slurm_admin_level = "operator"     # and so may users with this Slurm AdminLevel or more
    cluster_name = "default"           # the name reservations are kept under
    reservation_grace_s = 600          # see RESERVATION_GRACE_DOC
    db_busy_timeout_s = 30             # how long to wait for the database lock
    slot_seconds = 60                  # Δ of live planning (submit, plan without --cluster)
    remote = "alice@login.example"     # run Slurm commands on this login node over SSH
    remote_dir = ".mlsub/decisions"    # where remote submissions stage their files there
    preempt = true                     # mlsub replan may checkpoint-restart running jobs
                                       # that consent (#SBATCH --signal); site file only
    preempt_wait_max_s = 120           # the longest wait for a job's checkpoint (site only)
    preempt_resize = true              # and resize them by checkpoint-restart: start a job
                                       # narrow, grow it (needs preempt; site file only)
    preempt_defrag = true              # and move a job to a node with fewer GPUs when that
                                       # lets a waiting job start co-located (needs preempt)
    preempt_regather = true            # and restart a spread job ahead of the queue on one
                                       # node before the queue is placed (needs resize)
    restart_s = 30                     # what one checkpoint-restart costs a job here, the
                                       # cost a pause or resize must beat (site file only)

    [gpu_speed]                        # throughput per GPU type for live planning
    a100 = 2.0                         # (1.0 = the profiles' reference GPU; unlisted
    t4 = 0.5                           # types and untyped nodes 1.0; formulation §17)

    [job]                              # job option defaults (below the script header and
    partition = "gpu"                  # the command line); names as in JobOptions
    mem_per_worker = "16G"

``admins``, ``slurm_admin_level``, ``preempt``, ``preempt_wait_max_s``,
``preempt_resize``, ``preempt_defrag``, ``preempt_regather`` and ``restart_s`` are the
site's alone: only ``/etc/mlsched/config.toml``
sets them, and only when that file is owned by root and writable by nobody else; a user's
file that sets one is an error, and ``MLSUB_ADMINS`` and ``MLSUB_SLURM_ADMIN_LEVEL`` are
honoured for root only (docs/admin-guide.md, trust model). ``slurm_admin_level``
(``operator`` or ``administrator``; empty = off) makes a user whose Slurm ``AdminLevel``
(``sacctmgr show user``, read from slurmdbd) is at least that an admin of mlsub too.

Environment: ``MLSUB_DB_URL``, ``MLSUB_ADMINS``, ``MLSUB_SLURM_ADMIN_LEVEL``,
``MLSUB_PREEMPT``, ``MLSUB_PREEMPT_WAIT_MAX_S``, ``MLSUB_PREEMPT_RESIZE``,
``MLSUB_PREEMPT_DEFRAG``, ``MLSUB_PREEMPT_REGATHER`` and ``MLSUB_RESTART_S`` (root
only),
``MLSUB_CLUSTER_NAME``,
``MLSUB_RESERVATION_GRACE_S``, ``MLSUB_DB_BUSY_TIMEOUT_S``, ``MLSUB_SLOT_SECONDS``,
``MLSUB_REMOTE``, ``MLSUB_REMOTE_DIR``, ``MLSUB_GPU_SPEED`` (``a100=2,t4=0.5``).
``MLSUB_CONFIG`` names the user config file instead of the XDG one.

:func:`load_config` is a function of its inputs (the environment, the flags and the two
paths); it reads the two files and nothing else.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

from .errors import InputError
from .placement.params import PlacementParams

SYSTEM_CONFIG = Path("/etc/mlsched/config.toml")
DEFAULT_RESERVATION_GRACE_S = 600.0
DEFAULT_BUSY_TIMEOUT_S = 30.0
DEFAULT_CLUSTER_NAME = "default"
#: Δ of live planning: short enough that a job waiting for another starts soon after it.
DEFAULT_LIVE_SLOT_SECONDS = 60.0
#: Where ``mlsub --remote`` stages each decision's files, relative to the remote home.
DEFAULT_REMOTE_DIR = ".mlsub/decisions"
#: ``mlsub reconcile``: where the submitting process cannot be checked (another host, or a
#: decision recorded without it), a ``submitting`` decision younger than this may still be
#: inside its sbatch.
DEFAULT_STALE_AFTER_S = 3600.0
#: ``mlsub replan`` with ``preempt``: the longest wait for a job's checkpoint.
DEFAULT_PREEMPT_WAIT_MAX_S = 120.0
#: The restart cost of the placement's time model: ``PlacementParams.restart_s``'s default,
#: read from it so that the live default and the replay's cannot drift apart.
DEFAULT_RESTART_S: float = PlacementParams.restart_s

RESERVATION_GRACE_DOC = (
    "after its predicted end, a decision that is not yet in a terminal state (the job may "
    "be running late) keeps holding the resources of its last slot for this many seconds; "
    "after that it no longer reserves anything"
)

ENV_PREFIX = "MLSUB_"


@dataclass(frozen=True)
class Config:
    """The settled configuration (see the module docstring for the sources)."""

    db_url: str = ""
    """SQLAlchemy URL of the decision store; empty = the default SQLite file."""
    admins: tuple[str, ...] = ()
    """Users who may see and manage every user's decisions (root always may)."""
    slurm_admin_level: str = ""
    """``operator`` or ``administrator``: users whose Slurm AdminLevel is at least this are
    admins too (looked up with sacctmgr only for users not already admin); empty = off."""
    cluster_name: str = DEFAULT_CLUSTER_NAME
    """Reservations and the planning lock are kept per cluster name."""
    reservation_grace_s: float = DEFAULT_RESERVATION_GRACE_S
    """Seconds a non-terminal decision keeps its last slot's resources after its end."""
    db_busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
    """Seconds to wait for the database lock before failing."""
    remote: str = ""
    """``[user@]host[:port]`` or a ``~/.ssh/config`` Host alias of a login node: Slurm
    commands run there over SSH (docs/user-guide.md); empty = on this machine."""
    remote_dir: str = DEFAULT_REMOTE_DIR
    """The directory on the login node under which each remote submission gets its staging
    directory (relative to the remote home unless absolute); the compute nodes must see it."""
    slot_seconds: float = DEFAULT_LIVE_SLOT_SECONDS
    """Slot length Δ (seconds) when planning against the live cluster."""
    preempt: bool = False
    """``mlsub replan`` may pause running jobs that consent (their ``#SBATCH --signal``)
    by checkpoint-restart (docs/formulation.md §16, "Live"); the site's choice."""
    preempt_wait_max_s: float = DEFAULT_PREEMPT_WAIT_MAX_S
    """The longest a re-plan waits for a signalled job to checkpoint (its ``--signal``
    warning time, at most this) before it requeues it."""
    preempt_resize: bool = False
    """With ``preempt``: ``mlsub replan`` also resizes by checkpoint-restart (the replay's
    ``preempt_resize``, docs/formulation.md §16): a job that waits for its width starts
    narrow, and a running job that consents and runs slower than its fastest shape is
    paused and started again wider when that ends it sooner; the site's choice."""
    preempt_defrag: bool = False
    """With ``preempt``: ``mlsub replan`` also moves a running job that consents from a node
    to an idle one with fewer GPUs (a checkpoint-restart there) when that lets a waiting
    job start co-located on the node it leaves and the queue ends sooner in total (the
    replay's ``preempt_defrag``, docs/formulation.md §16, "Moves to a smaller node"); only
    on a cluster whose nodes have differing GPU counts; the site's choice."""
    preempt_regather: bool = False
    """With ``preempt_resize``: ``mlsub replan`` also restarts a running job that consents,
    runs spread over nodes slower than its fastest shape and has less work left than every
    waiting job (by the queue's key), co-located on one node *before* the queue is placed,
    when that ends it more than the restart cost sooner (the replay's
    ``preempt_regather``, on there by default; docs/formulation.md §16, "Regather before
    the re-plan"); the site's choice."""
    restart_s: float = DEFAULT_RESTART_S
    """What one checkpoint-restart costs a job on this site (seconds: the checkpoint, the
    requeue, the start again): the restart cost ``mlsub replan``'s preemption rule weighs
    a pause or a resize against (the replay's ``restart_s``, ``--restart-cost``)."""
    gpu_speed: tuple[tuple[str, float], ...] = ()
    """The speed table of live planning: (GPU type, throughput factor) sorted by type; ()
    = every type at 1.0 (docs/formulation.md §17)."""
    job: tuple[tuple[str, object], ...] = ()
    """Job option defaults from the ``[job]`` table (field name, raw value)."""
    sources: tuple[str, ...] = ()
    """The files and layers that set something (for ``mlsub db current`` and errors)."""

    def is_admin(self, user: str) -> bool:
        return user == "root" or user in self.admins


KEYS = tuple(f.name for f in fields(Config) if f.name != "sources")
#: Keys only the files set (a table has no environment form).
FILE_ONLY = frozenset({"job"})
#: Keys only the site file sets: who is an admin is the site's to say, never a user's
#: (``MLSUB_ADMINS`` is honoured for root only, for tests and support).
SITE_ONLY = frozenset(
    {
        "admins",
        "slurm_admin_level",
        "preempt",
        "preempt_wait_max_s",
        "preempt_resize",
        "preempt_defrag",
        "preempt_regather",
        "restart_s",
    }
)


def default_db_path(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/mlsched/decisions.db`` (``~/.local/state/...`` by default)."""
    state = env.get("XDG_STATE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local/state")
    return Path(state) / "mlsched" / "decisions.db"


def user_config_path(env: Mapping[str, str]) -> Path:
    if env.get("MLSUB_CONFIG"):
        return Path(env["MLSUB_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "mlsched" / "config.toml"


def load_config(
    env: Mapping[str, str],
    flags: Mapping[str, object] | None = None,
    *,
    system_path: Path = SYSTEM_CONFIG,
    user_path: Path | None = None,
    euid: int | None = None,
) -> Config:
    """Merge the layers in precedence order; ``flags`` maps field names to values
    (``None`` = not given). Raises :class:`InputError` naming the layer and key.

    ``admins`` (:data:`SITE_ONLY`) comes from the site file alone, and only when that file
    is owned by root (or by the running user ``euid``) and writable by nobody else; in the
    user's file it is refused, and ``MLSUB_ADMINS`` is refused unless ``euid`` is 0."""
    uid = os.geteuid() if euid is None else euid
    config = Config()
    sources: list[str] = []
    for path, site in ((system_path, True), (user_path or user_config_path(env), False)):
        layer = _read_file(path)
        if layer:
            _check_site_keys(layer, path, site=site, euid=uid)
            config = _apply(config, layer, str(path))
            sources.append(str(path))
    for key in sorted(SITE_ONLY):
        variable = ENV_PREFIX + key.upper()
        if env.get(variable) and uid != 0:
            raise InputError(
                f"{variable} is honoured for root only: {key} is the site's setting",
                hint=f"unset {variable}; an admin sets {key} in {SYSTEM_CONFIG} (root-owned)",
                context={"variable": variable},
            )
    from_env = {
        key: env[ENV_PREFIX + key.upper()]
        for key in KEYS
        if key not in FILE_ONLY and env.get(ENV_PREFIX + key.upper())
    }
    if from_env:
        config = _apply(config, from_env, "environment")
        sources.append("environment")
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    if given:
        config = _apply(config, given, "command line")
        sources.append("command line")
    for key, what in (
        ("preempt_resize", "resizes running jobs"),
        ("preempt_defrag", "moves running jobs to smaller nodes"),
        ("preempt_regather", "restarts spread running jobs on one node"),
    ):
        if getattr(config, key) and not config.preempt:
            raise InputError(
                f"config key '{key}' {what} by checkpoint-restart, which needs preemption, "
                "but 'preempt' is not true",
                hint=f"set preempt = true beside it in the site file, or remove {key}",
                context={"key": key, "sources": ", ".join(sources)},
            )
    if config.preempt_regather and not config.preempt_resize:
        raise InputError(
            "config key 'preempt_regather' restarts a running job in a faster shape, a "
            "resize by checkpoint-restart, but 'preempt_resize' is not true",
            hint="set preempt = true and preempt_resize = true beside it in the site file, "
            "or remove preempt_regather",
            context={"key": "preempt_regather", "sources": ", ".join(sources)},
        )
    return replace(config, sources=tuple(sources))


def _check_site_keys(layer: Mapping[str, object], path: Path, *, site: bool, euid: int) -> None:
    """Site-only keys only in a site file nobody else can write (see :func:`load_config`)."""
    keys = sorted(SITE_ONLY & set(layer))
    if not keys:
        return
    if not site:
        raise InputError(
            f"{path}: {', '.join(keys)} may only be set in the site file {SYSTEM_CONFIG}",
            hint="remove it from your config; ask an admin to list you there",
            context={"file": str(path), "key": keys[0]},
        )
    info = path.stat()
    if info.st_uid not in (0, euid) or info.st_mode & 0o022:
        raise InputError(
            f"{path} sets {', '.join(keys)} but is not trusted: it must be owned by root and "
            "writable by nobody else",
            hint=f"chown root:root {path} && chmod 644 {path}",
            context={"file": str(path), "key": keys[0]},
        )


def _read_file(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(
            f"cannot read config file {path}: {exc.strerror or exc}",
            hint="fix its permissions or remove it",
            context={"file": str(path)},
        ) from None
    import tomllib  # here: every mlsub start imports this module, few read a file

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            f"config file {path} is not valid TOML: {exc}",
            hint="fix the syntax there (key = value, strings in quotes)",
            context={"file": str(path)},
        ) from None


def _apply(config: Config, layer: Mapping[str, object], source: str) -> Config:
    values: dict[str, object] = {}
    for key, raw in layer.items():
        if key not in KEYS:
            raise InputError(
                f"{source}: unknown config key {key!r}",
                hint=f"valid keys: {', '.join(KEYS)}",
                context={"source": source, "key": key},
            )
        values[key] = _CONVERT[key](raw, f"{source}: config key {key!r}")
    return replace(config, **values)  # type: ignore[arg-type]


def _text(raw: object, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InputError(f"{where} must be a non-empty string, got {raw!r}", context={})
    return raw.strip()


def _names(raw: object, where: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        items: list[object] = [p for p in raw.split(",") if p.strip()]
    elif isinstance(raw, list | tuple):
        items = list(raw)
    else:
        raise InputError(f"{where} must be a list of user names, got {raw!r}", context={})
    return tuple(_text(item, where) for item in items)


def _remote(raw: object, where: str) -> str:
    from .remote.target import parse_target  # urllib: only when a remote is configured

    text = _text(raw, where)
    try:
        parse_target(text)
    except InputError as err:
        raise InputError(f"{where}: {err.message}", hint=err.hint, context={}) from None
    return text


def _seconds(raw: object, where: str) -> float:
    try:
        value = float(raw) if isinstance(raw, str | int | float) and raw is not True else -1.0
    except ValueError:
        value = -1.0
    if raw is False or not (value >= 0 and math.isfinite(value)):
        raise InputError(
            f"{where} must be a number of seconds >= 0, got {raw!r}",
            hint="write e.g. 600",
            context={},
        )
    return value


def _positive_seconds(raw: object, where: str) -> float:
    value = _seconds(raw, where)
    if value <= 0:
        raise InputError(f"{where} must be > 0 seconds, got {raw!r}", hint="write e.g. 60")
    return value


def _job_table(raw: object, where: str) -> tuple[tuple[str, object], ...]:
    from .files.job_options import OPTIONS  # the job option names (a pure module)

    if not isinstance(raw, Mapping):
        raise InputError(
            f"{where} must be a table of job options, got {raw!r}",
            hint='write a [job] section with lines such as: partition = "gpu"',
        )
    for key in raw:
        if key not in OPTIONS:
            raise InputError(
                f"{where}: unknown job option {key!r}",
                hint=f"valid names: {', '.join(sorted(OPTIONS))}",
                context={"key": key},
            )
    return tuple(sorted((str(k), v) for k, v in raw.items()))


def _gpu_speed(raw: object, where: str) -> tuple[tuple[str, float], ...]:
    from .model.gpu_speed import parse_speed_text, speed_table

    hint = (
        "write a [gpu_speed] table of GPU type = factor (a number > 0, 1.0 = the profiles' "
        "reference GPU), e.g. a100 = 2.0, or MLSUB_GPU_SPEED=a100=2,t4=0.5"
    )
    try:
        if isinstance(raw, str):
            return parse_speed_text(raw)
        if isinstance(raw, Mapping):
            return speed_table(raw)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}", hint=hint, context={}) from None
    raise InputError(f"{where} must be a table of GPU type = factor, got {raw!r}", hint=hint)


def _admin_level(raw: object, where: str) -> str:
    text = raw.strip().lower() if isinstance(raw, str) else None
    if text not in ("", "operator", "administrator"):
        raise InputError(
            f"{where} must be operator, administrator or empty (off), got {raw!r}",
            hint='write slurm_admin_level = "operator" (Slurm Operators and Administrators '
            'are mlsub admins) or "administrator"',
            context={},
        )
    return text or ""


def _flag(raw: object, where: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = raw.strip().lower() if isinstance(raw, str) else None
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InputError(
        f"{where} must be true or false, got {raw!r}",
        hint="write preempt = true (TOML) or MLSUB_PREEMPT=1",
        context={},
    )


_CONVERT = {
    "db_url": _text,
    "admins": _names,
    "slurm_admin_level": _admin_level,
    "cluster_name": _text,
    "reservation_grace_s": _seconds,
    "db_busy_timeout_s": _seconds,
    "slot_seconds": _positive_seconds,
    "job": _job_table,
    "remote": _remote,
    "remote_dir": _text,
    "preempt": _flag,
    "preempt_wait_max_s": _seconds,
    "preempt_resize": _flag,
    "preempt_defrag": _flag,
    "preempt_regather": _flag,
    "restart_s": _seconds,
    "gpu_speed": _gpu_speed,
}
