"""parse_mem_mib: Slurm memory sizes -> MiB (bare number = MiB, K/M/G/T/P are powers of 1024)."""

from __future__ import annotations

import math

import pytest

from slurm_mlsched.model.units import format_mem_mib, gib_to_mib, parse_mem_mib


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("8G", 8192.0),
        ("8g", 8192.0),
        ("8GB", 8192.0),
        ("8GiB", 8192.0),
        (" 16G ", 16384.0),
        ("512M", 512.0),
        ("512", 512.0),
        ("1.5G", 1536.0),
        ("1024K", 1.0),
        ("1T", 1024.0**2),
        ("1P", 1024.0**3),
        ("0", 0.0),
        (100, 100.0),
        (2.5, 2.5),
    ],
)
def test_parses_slurm_sizes(text: str | int | float, mib: float) -> None:
    assert parse_mem_mib(text) == pytest.approx(mib)


@pytest.mark.parametrize(
    "bad", ["", "abc", "8X", "-1G", "G", "8 G B x", "1e3G", True, -5, math.inf, math.nan]
)
def test_rejects_what_is_not_a_size(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_mem_mib(bad)  # type: ignore[arg-type]


def test_round_trips_through_format() -> None:
    assert format_mem_mib(parse_mem_mib("64G")) == "64G"
    assert format_mem_mib(parse_mem_mib("1500M")) == "1500M"
    assert gib_to_mib(64) == 65536.0
