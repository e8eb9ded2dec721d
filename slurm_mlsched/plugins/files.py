"""Where the Slurm Lua plugins are, where Slurm reads them, and copying them out.

``plugins/`` sits at the top of the source checkout; the wheel ships it as
``slurm_mlsched/_data/plugins`` (``pyproject.toml``: hatch ``force-include``). Slurm reads
``job_submit.lua`` and ``cli_filter.lua`` from the directory of its ``slurm.conf``
(``/etc/slurm`` on Debian, or the directory of ``$SLURM_CONF``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import InputError, MlschedError
from ..files.atomic import write_atomically

#: The plugin files, as Slurm expects them to be named.
PLUGIN_FILES = ("job_submit.lua", "cli_filter.lua")
#: slurmctld's ``EpilogSlurmctld`` that re-plans mlsub's queue at every job end (issue 19;
#: docs/admin-plugins.md); installed beside the plugins, executable.
EPILOG_FILE = "epilog_slurmctld.sh"
#: The Lua side of ``mlsub plugins check`` (check.lua, slurm_stub.lua).
HARNESS_DIR = Path(__file__).resolve().parent / "lua"
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SLURM_CONF_DIR = Path("/etc/slurm")


def plugin_dir() -> Path:
    """``plugins/``: inside the installed wheel, else the source checkout's."""
    for candidate in (_PACKAGE_ROOT / "_data" / "plugins", _PACKAGE_ROOT.parent / "plugins"):
        if all((candidate / name).is_file() for name in PLUGIN_FILES):
            return candidate
    raise MlschedError(
        "the Slurm plugins (job_submit.lua, cli_filter.lua) are missing from this installation",
        hint="reinstall mlsub; the wheel ships them in slurm_mlsched/_data/plugins",
        code="plugins-missing",
    )


def slurm_conf_dir(env: Mapping[str, str]) -> Path:
    """The directory Slurm reads its plugins' scripts from."""
    conf = env.get("SLURM_CONF", "").strip()
    return Path(conf).parent if conf else DEFAULT_SLURM_CONF_DIR


def installed_plugins(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The plugin files present in Slurm's configuration directory."""
    directory = slurm_conf_dir(env)
    return tuple(directory / name for name in PLUGIN_FILES if (directory / name).is_file())


def install_files(dest: Path, *, force: bool = False) -> tuple[Path, ...]:
    """Copy the shipped plugins into ``dest`` (mode 0644) and the queue's epilog (0755);
    refuse to overwrite unless ``force``. Returns the files written."""
    if not dest.is_dir():
        raise InputError(
            f"{dest} is not a directory",
            hint="create it first, or give another --dest",
            context={"dest": str(dest)},
        )
    targets = tuple(dest / name for name in (*PLUGIN_FILES, EPILOG_FILE))
    links = [str(t) for t in targets if t.is_symlink()]
    if links:
        raise InputError(
            f"{', '.join(links)} is a symbolic link; mlsub never writes through one",
            hint="remove the link (it may point anywhere, e.g. into another user's files), "
            "then install again",
            context={"dest": str(dest)},
        )
    existing = [str(t) for t in targets if t.exists()]
    if existing and not force:
        raise InputError(
            f"{', '.join(existing)} already exist(s); not overwritten",
            hint="copy into an empty staging directory, or pass --force",
            context={"dest": str(dest)},
        )
    source = plugin_dir()
    for target in targets:
        mode = 0o755 if target.name == EPILOG_FILE else 0o644
        write_atomically(target, (source / target.name).read_bytes(), mode=mode)
    return targets
