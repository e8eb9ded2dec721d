"""Per-job seeds of the online loop (pure).

The online loop itself is the replay engine's (``sim/engine.py``: one event order for
every policy kind); what it shares with the live path is how a job's rounding seed is
derived from a run's seed.
"""

from __future__ import annotations

import hashlib


def derive_seed(base: int, job_id: str) -> int:
    """A per-job seed from a base seed and the job id, stable across runs and platforms."""
    digest = hashlib.blake2b(f"{base}:{job_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF_FFFF_FFFF
