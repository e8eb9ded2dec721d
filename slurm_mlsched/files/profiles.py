"""The model profile table (MODEL.md §7, Appendix A), shipped as package data.

``slurm_mlsched/data/profiles.csv`` holds one row per model: τ (``step_time_s``), g
(``model_size_mb``), b_ex and b_in (``bw_ex_mbps``, ``bw_in_mbps``), exactly as the DL2
simulator's authors published them. Its first line, ``# profiles_version: …``, versions the
table; a decision that used a profile can record that version. Other ``#`` lines are
comments.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
from collections.abc import Iterable
from importlib import resources

from ..errors import InputError
from ..model import JobProfile

_DATA_PACKAGE = "slurm_mlsched"
_TABLE = "data/profiles.csv"
_VERSION_PREFIX = "# profiles_version:"
_COLUMNS = ("name", "step_time_s", "model_size_mb", "bw_ex_mbps", "bw_in_mbps")


def _read_table_text() -> str:
    return resources.files(_DATA_PACKAGE).joinpath(_TABLE).read_text(encoding="utf-8")


def parse_profile_table(text: str) -> tuple[str, dict[str, JobProfile]]:
    """Parse the table's text into (version, profiles by name). Pure."""
    version = ""
    rows: list[str] = []
    for line in text.splitlines():
        if line.startswith(_VERSION_PREFIX):
            version = line[len(_VERSION_PREFIX) :].strip()
        elif line.strip() and not line.startswith("#"):
            rows.append(line)
    reader = csv.DictReader(io.StringIO("\n".join(rows)))
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise ValueError(f"profile table columns are {reader.fieldnames}, expected {_COLUMNS}")
    profiles: dict[str, JobProfile] = {}
    for row in reader:
        name = row["name"]
        profiles[name] = JobProfile(
            step_time_s=float(row["step_time_s"]),
            model_size_mb=float(row["model_size_mb"]),
            bw_ex_mbps=float(row["bw_ex_mbps"]),
            bw_in_mbps=float(row["bw_in_mbps"]),
            name=name,
        )
    if not version:
        raise ValueError(f"profile table has no '{_VERSION_PREFIX}' line")
    return version, profiles


@functools.cache
def _table() -> tuple[str, dict[str, JobProfile]]:
    return parse_profile_table(_read_table_text())


def load_profiles() -> dict[str, JobProfile]:
    """All model profiles by name (a fresh dict; the profiles are frozen)."""
    return dict(_table()[1])


def profiles_version() -> str:
    """The version of the shipped profile table (its ``# profiles_version:`` line)."""
    return _table()[0]


#: What a job may give instead of a profiled model (``get_profile``'s default hint).
OR_STEP_TIME = "or give --step-time and --model-size instead of --model"


def get_profile(name: str, *, or_else: str = OR_STEP_TIME) -> JobProfile:
    """The profile of model ``name``; :class:`InputError` listing the valid names if unknown
    (and, in its hint, ``or_else``: what else the command accepts; ``""`` for nothing)."""
    profiles = _table()[1]
    try:
        return profiles[name]
    except KeyError:
        close = closest_names(name, profiles)
        guess = f"did you mean {' or '.join(close)}? " if close else ""
        raise InputError(
            f"unknown model {name!r}",
            hint=f"{guess}choose one of: {', '.join(sorted(profiles))}"
            + (f"; {or_else}" if or_else else ""),
            context={"option": "--model", "value": name},
        ) from None


def closest_names(name: str, names: Iterable[str]) -> list[str]:
    """The known names ``name`` was probably meant as: the same letters and digits without
    case and punctuation (``resnet50`` → ``resnet-50``), else close spellings."""

    def bare(text: str) -> str:
        return "".join(ch for ch in text.lower() if ch.isalnum())

    known = sorted(names)
    same = [n for n in known if bare(n) == bare(name)]
    if same:
        return same
    return difflib.get_close_matches(name.lower(), known, n=2, cutoff=0.6)
