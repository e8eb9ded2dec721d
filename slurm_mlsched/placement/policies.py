"""Imports every policy module so that each registers itself."""

from . import baselines, joint, program, yu_rr  # noqa: F401
