"""Imports every policy module so that each registers itself."""

from . import program, yu_rr  # noqa: F401
