"""The one decoder of Slurm's JSON numbers (slurm/values.py), and its error policy as the
live readers and the trace reader apply it."""

from __future__ import annotations

import json
import math

import pytest

from slurm_mlsched.errors import SlurmError
from slurm_mlsched.slurm.jobs import parse_squeue_status_json
from slurm_mlsched.slurm.values import SlurmValueError, slurm_number


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (5, 5.0),
        (2.5, 2.5),
        ("17", 17.0),
        ({"set": True, "infinite": False, "number": 8}, 8.0),
        ({"set": False, "infinite": False, "number": 0}, None),  # 24.11: not set
        ({"set": True, "infinite": True, "number": 0}, None),  # 24.11: no limit
        (None, None),
        (0xFFFFFFFE, None),  # NO_VAL
        (0xFFFFFFFF, None),  # INFINITE
        (0xFFFFFFFFFFFFFFFE, None),  # NO_VAL64
        ({"set": True, "number": 0xFFFFFFFE}, None),
    ],
)
def test_layouts_and_sentinels(value: object, number: float | None) -> None:
    assert slurm_number(value) == number


@pytest.mark.parametrize("value", [True, "fast", [1], {"cpus": 3}, math.nan, math.inf])
def test_anything_else_is_an_error_naming_the_field(value: object) -> None:
    with pytest.raises(SlurmValueError, match=r"jobs\.0\.cpus"):
        slurm_number(value, "jobs.0.cpus")


def test_a_live_reader_names_the_command_never_a_silent_none() -> None:
    text = json.dumps({"jobs": [{"job_id": "seven", "job_state": "RUNNING"}]})
    with pytest.raises(SlurmError, match="squeue --all --json"):
        parse_squeue_status_json(text)
