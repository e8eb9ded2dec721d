"""The decision tag mlsub puts in a job's ``--comment`` (pure).

Format (the field contract with ``plugins/job_submit.lua`` and ``mlsub reconcile``; see
docs/admin-plugins.md)::

    mlsched:decision=<ID>:<TOKEN>

``ID`` is the decision's id in its store (decimal); ``TOKEN`` is 12 lower-case hex digits,
``sha256("<cluster>\\0<ID>\\0<created_at>\\0<user>\\0<host>")[:12]``, the creation time in
ISO 8601, UTC, whole seconds (so a database that keeps no microseconds gives the same). Decision ids
are only unique within one store, and users may keep their own SQLite stores; the token
tells a store's own jobs from another store's job with the same id, without a lookup
table. It is not a secret: it only has to be unique.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime

PREFIX = "mlsched:decision="
TOKEN_HEX = 12
#: The whole run of hex digits after the colon must be 12 lower-case ones (as the plugins
#: read it: ``…0123456789abCD`` is no tag).
_TAG = re.compile(r"mlsched:decision=(\d+):([0-9a-f]{12})(?![0-9A-Fa-f])")


@dataclass(frozen=True, order=True)
class DecisionTag:
    decision_id: int
    token: str

    def __str__(self) -> str:
        return f"{PREFIX}{self.decision_id}:{self.token}"


def tag_token(*, cluster: str, decision_id: int, created_at: datetime, user: str, host: str) -> str:
    """The token of a decision (see the module docstring)."""
    when = created_at.astimezone(UTC).replace(microsecond=0).isoformat()
    text = "\0".join([cluster, str(decision_id), when, user, host])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:TOKEN_HEX]


def decision_tag(
    *, cluster: str, decision_id: int, created_at: datetime, user: str, host: str
) -> DecisionTag:
    token = tag_token(
        cluster=cluster, decision_id=decision_id, created_at=created_at, user=user, host=host
    )
    return DecisionTag(decision_id, token)


def find_tags(comment: str | None) -> tuple[DecisionTag, ...]:
    """Every well-formed tag in a job comment (other text around it is allowed)."""
    if not comment:
        return ()
    return tuple(DecisionTag(int(m.group(1)), m.group(2)) for m in _TAG.finditer(comment))
