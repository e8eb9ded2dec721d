"""The Slurm Lua plugins that tie plain sbatch use to mlsub (``plugins/`` at the top of the
checkout; docs/admin-plugins.md), and the Python side of them: locating and copying the
files (:mod:`.files`) and checking an edited copy before it reaches slurmctld
(:mod:`.check`, ``mlsub plugins check``)."""

from .check import CheckReport, Finding, PluginReport, check_plugins, find_lua
from .files import PLUGIN_FILES, install_files, installed_plugins, plugin_dir

__all__ = [
    "PLUGIN_FILES",
    "CheckReport",
    "Finding",
    "PluginReport",
    "check_plugins",
    "find_lua",
    "install_files",
    "installed_plugins",
    "plugin_dir",
]
