"""OASiS's job utility, as the replay metrics use it: re-exported from
:mod:`slurm_mlsched.placement.utility`, where it lives because the ``oasis`` policy prices
each job against its utility (the core's layers import downwards only)."""

from ..placement.utility import (
    CLASSES,
    GAMMA1,
    GAMMA3,
    Utility,
    draw_utilities,
    draw_utility,
    total_utility,
)

__all__ = [
    "CLASSES",
    "GAMMA1",
    "GAMMA3",
    "Utility",
    "draw_utilities",
    "draw_utility",
    "total_utility",
]
