"""Job statuses from real squeue/sacct JSON of both Slurm versions, components folded."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm_mlsched.errors import SlurmOutputError
from slurm_mlsched.slurm.jobs import (
    ComponentStatus,
    _exit_code,
    fold_components,
    parse_sacct_status_json,
    parse_squeue_status_json,
    phase_of,
    return_code,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def read(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text(encoding="utf-8")


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_squeue_json_folds_hetjob_components_into_their_leader(version: str) -> None:
    rows = parse_squeue_status_json(read("slurm", version, "busy", "squeue.json"))
    raw = json.loads(read("slurm", version, "busy", "squeue.json"))["jobs"]
    assert len(rows) == len(raw)
    jobs = fold_components(rows, "squeue")
    (leader,) = {r.job_id for r in rows if r.offset == 1 and r.state == "RUNNING"}
    assert sum(1 for r in rows if r.job_id == leader) == 2
    assert len(jobs[leader].nodes) == 2 and jobs[leader].source == "squeue"
    assert jobs[leader].phase == "running"
    assert all(j.submit is not None for j in jobs.values())


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_sacct_json_gives_states_times_and_folded_hetjobs(version: str) -> None:
    rows = parse_sacct_status_json(read("sacct", version, "sacct.json"))
    jobs = fold_components(rows, "sacct")
    het = [r for r in rows if r.offset == 1]
    assert het, "the fixture holds a heterogeneous job"
    for part in het:
        job = jobs[part.job_id]
        assert len(job.nodes) >= 2 and job.phase == "completed"
        assert job.start is not None and job.end is not None and job.end >= job.start
    assert {j.phase for j in jobs.values()} >= {"completed"}
    assert all(j.exit_code != "" for j in jobs.values() if j.phase == "completed")


def comp(offset: int, state: str, **kw: object) -> ComponentStatus:
    base: dict[str, object] = {
        "job_id": "9", "offset": offset, "state": state, "submit": T0, "start": None,
        "end": None, "nodes": (f"node{offset + 1}",), "comment": "",
    }  # fmt: skip
    return ComponentStatus(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("states", "phase"),
    [
        (["RUNNING", "PENDING"], "running"),
        (["PENDING", "PENDING"], "pending"),
        (["COMPLETED", "FAILED"], "failed"),
        (["COMPLETED", "CANCELLED"], "cancelled"),
        (["COMPLETED", "COMPLETED"], "completed"),
        (["TIMEOUT", "COMPLETED"], "failed"),
    ],
)
def test_folding_takes_the_most_telling_component(states: list[str], phase: str) -> None:
    (job,) = fold_components([comp(i, s) for i, s in enumerate(states)], "x").values()
    assert job.phase == phase and job.nodes == ("node1", "node2")


def test_folded_times_span_the_components_and_running_jobs_have_no_end() -> None:
    t1, t2 = T0.replace(hour=1), T0.replace(hour=2)
    done = fold_components(
        [comp(0, "COMPLETED", start=t1, end=t1), comp(1, "COMPLETED", start=t2, end=t2)], "x"
    )["9"]
    assert (done.start, done.end) == (t1, t2)
    running = fold_components([comp(0, "RUNNING", start=t1, end=t2)], "x")["9"]
    assert running.end is None  # squeue's end of a running job is only its time limit


def test_phases() -> None:
    assert [phase_of(s) for s in ("PENDING", "COMPLETING", "OUT_OF_MEMORY", "CANCELLED")] == [
        "pending", "running", "failed", "cancelled",
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["not json", "[]", '{"jobs": [{"nope": 1}]}'])
def test_unreadable_output_is_a_clear_error(text: str) -> None:
    with pytest.raises(SlurmOutputError):
        parse_squeue_status_json(text)
    with pytest.raises(SlurmOutputError):
        parse_sacct_status_json(text)


def test_sacct_json_nothing_found_is_an_empty_answer() -> None:
    # slurmdbd with no job in its database (a fresh cluster) answers sacct --json with
    # error 9003 "Nothing found with query" (seen in CI on a new machine); that is no rows
    text = json.dumps(
        {
            "meta": {},
            "errors": [
                {
                    "description": "Nothing found",
                    "error_number": 9003,
                    "error": "Nothing found with query",
                    "source": "slurmdb_jobs_get",
                }
            ],
            "jobs": [],
        }
    )
    assert parse_sacct_status_json(text) == ()
    assert parse_sacct_status_json(json.dumps({"errors": [{"error_number": 9003}]})) == ()
    other = json.dumps({"errors": [{"error_number": 2017, "error": "Invalid user"}], "jobs": []})
    with pytest.raises(SlurmOutputError, match="Invalid user"):
        parse_sacct_status_json(other)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (0, 0),
        (3 << 8, 3),  # exit 3: what squeue --json of 22.05 gives as 768
        (127 << 8, 127),  # command not found: 32512
        (15, 0),  # killed by SIGTERM: a signal, not a return code
        (137 << 8, 9),  # a shell reporting SIGKILL as 128 + 9
    ],
)
def test_raw_wait_statuses_decode_as_slurm_and_pyslurm_do(raw: int, code: int) -> None:
    assert return_code(raw) == code
    assert _exit_code(raw) == str(code)
    assert _exit_code({"status": ["EXITED"], "return_code": code}) == str(code)  # 24.11 form


def test_an_unknown_exit_code_is_empty_not_zero() -> None:
    """NO_VAL and an unset 24.11 value: not known (slurm/values.py's sentinel policy)."""
    assert _exit_code(0xFFFFFFFE) == "" and _exit_code(None) == ""
    assert _exit_code({"status": [], "return_code": {"set": False, "number": 0}}) == ""
