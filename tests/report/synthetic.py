"""A synthetic decision store of any size for ``mlsub report`` (tests and bench/).

One real decision is recorded through the live path (stand-ins for Slurm); its solver
inputs are then copied into ``n`` rows with varied users, nodes, states and times, and
their state histories, by bulk inserts (100,000 decisions in seconds). Each completed
run took its prediction × a log-normal factor per model (so the report's errors are not
zero)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, insert, select

from slurm_mlsched.storage import open_store
from slurm_mlsched.storage.codec import dumps
from slurm_mlsched.storage.models import DecisionRow, TransitionRow

T0 = datetime(2026, 11, 1, tzinfo=UTC)
STATES = (
    ["completed"] * 70 + ["failed"] * 5 + ["cancelled"] * 5 + ["running"] * 5
    + ["queued"] * 5 + ["submitted"] * 10
)  # fmt: skip


def synthetic_store(path: Path, n: int, *, seed: int = 0, users: int = 8, nodes: int = 64) -> str:
    """Write ``n`` decisions into a new SQLite store at ``path``; return its URL."""
    from slurm_mlsched.services.submit import submit_job
    from tests.unit.test_submit_service import JOB, FakeSource, FakeSubmitter, opts, wiring

    url = f"sqlite:///{path}"
    store = open_store(url, grace_s=600.0)
    try:
        submit_job(wiring(store, FakeSource(), FakeSubmitter()), opts(name="template"), JOB)
    finally:
        store.close()
    engine = create_engine(url)
    rng = random.Random(seed)
    with engine.begin() as conn:
        template = dict(conn.execute(select(DecisionRow.__table__)).mappings().one())
        conn.execute(DecisionRow.__table__.delete())
        conn.execute(TransitionRow.__table__.delete())
        span = timedelta(days=30).total_seconds()
        rows, steps = [], []
        for k in range(1, n + 1):
            created = T0 + timedelta(seconds=span * k / n)
            state = rng.choice(STATES)
            node = f"node{rng.randint(1, nodes)}"
            workers = rng.randint(1, 4)
            start = created + timedelta(seconds=rng.choice([0, 0, 60, 600, 3600]))
            length = timedelta(seconds=rng.randint(2, 240) * 60)
            placement = [
                {"node": node, "role": "ps", "count": 1},
                {"node": node, "role": "worker", "count": workers},
            ]
            rows.append(
                {
                    **template,
                    "id": k,
                    "created_at": created,
                    "user": f"u{k % users}",
                    "job_name": f"job{k}",
                    "state": state,
                    "state_changed_at": created,
                    "placement_json": dumps(placement),
                    "start_at": start,
                    "end_at": start + length,
                    "slurm_job_id": str(100000 + k),
                }
            )
            steps.append({"decision_id": k, "state": "submitting", "at": created, "detail": ""})
            if state == "queued":
                steps.append({"decision_id": k, "state": "queued", "at": created, "detail": ""})
                continue
            steps.append({"decision_id": k, "state": "submitted", "at": created, "detail": ""})
            if state == "submitted":
                continue
            ran = start + timedelta(seconds=rng.randint(0, 120))
            steps.append({"decision_id": k, "state": "running", "at": ran, "detail": ""})
            if state != "running":
                took = length * rng.lognormvariate(0.3, 0.2)
                steps.append({"decision_id": k, "state": state, "at": ran + took, "detail": ""})
            if len(rows) >= 5000:
                conn.execute(insert(DecisionRow.__table__), rows)
                conn.execute(insert(TransitionRow.__table__), steps)
                rows, steps = [], []
        if rows:
            conn.execute(insert(DecisionRow.__table__), rows)
        if steps:
            conn.execute(insert(TransitionRow.__table__), steps)
    engine.dispose()
    return url
