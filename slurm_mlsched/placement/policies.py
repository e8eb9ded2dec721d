"""Imports every policy module so that each registers itself."""

from . import baselines, program, yu_rr  # noqa: F401
