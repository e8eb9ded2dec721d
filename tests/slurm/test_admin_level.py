"""Parsing sacctmgr's AdminLevel (the live lookup: tests/integration/test_second_user.py)."""

from __future__ import annotations

import pytest

from slurm_mlsched.errors import SlurmError
from slurm_mlsched.slurm.admin_level import at_least, parse_admin_level


@pytest.mark.parametrize(
    ("stdout", "level"),
    [
        ("Administrator\n", "administrator"),
        ("Operator\n", "operator"),
        ("None\n", "none"),
        ("", "none"),  # no association: an ordinary user
        ("Operator\nOperator\n", "operator"),  # one line per association, all alike
    ],
)
def test_levels(stdout: str, level: str) -> None:
    assert parse_admin_level(stdout) == level


@pytest.mark.parametrize("stdout", ["Superuser\n", "Operator\nNone\n", "root|Administrator\n"])
def test_anything_else_is_an_error_not_a_guess(stdout: str) -> None:
    with pytest.raises(SlurmError, match="cannot read an AdminLevel"):
        parse_admin_level(stdout)


def test_order() -> None:
    assert at_least("administrator", "operator") and at_least("operator", "operator")
    assert not at_least("operator", "administrator") and not at_least("none", "operator")
