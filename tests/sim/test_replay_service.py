"""The replay use case (services/replay/run.py): the summary's shape and the job counts.

``summary.json`` has exactly the keys of issue 3 item 5, and jobs + skipped + unplaceable
is the number of distinct jobs in the input, for a job list and for a trace.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.model import Form
from slurm_mlsched.services.clock import FixedClock
from slurm_mlsched.services.replay import ReplayOptions, run_replay
from slurm_mlsched.sim import SUMMARY_KEYS
from tests.conftest import replay_job_list

CLOCK = FixedClock.from_iso("2026-01-01T00:00:00Z")
TOP_KEYS = {"trace", "jobs", "skipped", "unplaceable", "policies"}


def job_list(tmp_path: Path) -> Path:
    return replay_job_list(tmp_path, 8)


def philly(tmp_path: Path) -> Path:
    rows = [
        "timestamp,duration,num_gpus,gpu_time,cluster",
        "2017-10-09 07:01:55,660.0,1,660.0,a",
        "2017-10-09 07:03:03,2951.0,2,5902.0,a",
        "2017-10-09 07:05:00,0.0,1,0.0,b",  # ran 0 s: skipped by synthesis
        "2017-10-09 07:06:00,1200.0,8,9600.0,b",
        "2017-10-09 07:09:30,300.0,4,1200.0,c",
    ]
    path = tmp_path / "philly.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_summary_has_exactly_the_documented_shape(tmp_path: Path) -> None:
    opts = ReplayOptions(
        trace=job_list(tmp_path), policies=("fifo-ff", "yu-rr"), out_dir=tmp_path / "out",
        nodes="2x8", lp_max_jobs=0,
    )  # fmt: skip
    report = run_replay(opts, CLOCK)
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written == json.loads(json.dumps(report.to_json()))
    assert set(written) == TOP_KEYS
    assert list(written["policies"]) == ["fifo-ff", "yu-rr"]
    for values in written["policies"].values():
        assert tuple(sorted(values)) == tuple(sorted(SUMMARY_KEYS))
        # lp_max_jobs=0: no LP, but the scalable bound (sim/bounds.py) always applies
        assert values["lp_bound_ratio"] is not None and values["lp_bound_ratio"] >= 1.0
        assert values["wall_s"] == 0.0  # the fixed clock measures no time
    assert written["trace"] == "jobs.yaml"
    # 9 distinct jobs: 8 replayed, the 16-GPU worker fits no node
    assert (written["jobs"], written["skipped"], written["unplaceable"]) == (8, 0, 1)
    details = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert details["unplaceable_jobs"][0]["job_id"] == "huge"
    assert details["cluster"]["gpus"] == 16.0 and details["cluster"]["slot_seconds"] == 600.0
    for name in ("jct_cdf.png", "gpu_util.png", "queue_length.png"):
        assert (tmp_path / "out" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "fifo-ff" in page


def test_counts_add_up_on_a_trace(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=philly(tmp_path), policies=("fifo-bf",), nodes="1x4", lp_max_jobs=0)
    summary = run_replay(opts, CLOCK).to_json()
    # 5 rows: one ran 0 s (skipped), the 8-GPU job still fits (fewer workers exist) but
    # fifo rejects it; nothing here is unplaceable
    assert summary["jobs"] + summary["skipped"] + summary["unplaceable"] == 5
    assert (summary["jobs"], summary["skipped"], summary["unplaceable"]) == (4, 1, 0)


def test_malformed_lines_skipped_with_skip_bad_are_counted(tmp_path: Path) -> None:
    path = philly(tmp_path)
    path.write_text(path.read_text() + "2017-10-09 07:10:00,soon,1,1.0,c\n")  # bad duration
    opts = ReplayOptions(trace=path, policies=("fifo-ff",), nodes="1x4", lp_max_jobs=0)
    with pytest.raises(InputError, match="duration"):
        run_replay(opts, CLOCK)
    report = run_replay(replace(opts, skip_bad=True), CLOCK)
    summary = report.to_json()
    assert (summary["jobs"], summary["skipped"], summary["unplaceable"]) == (4, 2, 0)
    assert report.details()["skipped_by_reason"] == {"zero-duration": 1, "malformed": 1}


def test_lp_bound_ratio_on_a_small_replay(tmp_path: Path) -> None:
    opts = ReplayOptions(
        trace=job_list(tmp_path), policies=("yu-rr",), nodes="2x8", limit=4, form=Form.ELASTIC
    )
    report = run_replay(opts, CLOCK)
    assert report.jobs + len(report.unplaceable) == 4
    ratio = report.to_json()["policies"]["yu-rr"]["lp_bound_ratio"]
    assert ratio is not None and ratio >= 1.0 - 1e-6


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=job_list(tmp_path), policies=("yu-rr",), nodes="2x8", seed=5)
    a = run_replay(opts, CLOCK).details()
    b = run_replay(opts, CLOCK).details()
    for d in (a, b):
        for m in d["policies"].values():
            m.pop("decision_p50_ms"), m.pop("decision_p99_ms")
        for m in d["details"].values():
            m.pop("decision_p50_ms"), m.pop("decision_p99_ms")
    assert a == b


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"policies": ("nope",)}, "unknown policy 'nope'"),
        ({"policies": ()}, "no policy"),
        ({"nodes": "eight"}, "not a node spec"),
        ({"limit": 0}, "--limit"),
    ],
)
def test_bad_options_are_input_errors(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"trace": job_list(tmp_path), "policies": ("fifo-ff",), "nodes": "2x8"}
    with pytest.raises(InputError, match=message):
        run_replay(ReplayOptions(**{**base, **change}), CLOCK)


def test_cluster_file_and_nodes_exclude_each_other(tmp_path: Path) -> None:
    cluster = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
    opts = ReplayOptions(
        trace=job_list(tmp_path), policies=("fifo-ff",), nodes="2x8", cluster=cluster
    )
    with pytest.raises(InputError, match="exclude each other"):
        run_replay(opts, CLOCK)
    report = run_replay(
        ReplayOptions(trace=job_list(tmp_path), policies=("fifo-ff",), cluster=cluster), CLOCK
    )
    assert report.cluster_label.endswith("cluster.yaml")
    assert report.cluster.epoch.isoformat() == "2026-02-01T08:00:00+00:00"


def test_job_list_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("jobs:\n  - {id: a, submit: 0, workers: 2, model: resnet-50}\n")
    opts = ReplayOptions(trace=path, policies=("fifo-ff",))
    with pytest.raises(InputError, match=r"jobs\[0\] \('a'\): sets no workload"):
        run_replay(opts, CLOCK)


def test_job_list_errors_name_its_fields_not_the_command_line_options(tmp_path: Path) -> None:
    """A job list is written in fields (``step_time``, ``model``), not ``mlsub submit``'s
    options: its errors and hints say what to write in the file (``mlsub replay`` has no
    ``--model``)."""
    path = tmp_path / "bad.yaml"
    path.write_text("jobs:\n  - {id: a, submit: 0, workers: 2, workload: 100}\n")
    with pytest.raises(InputError) as err:
        run_replay(ReplayOptions(trace=path, policies=("fifo-ff",)), CLOCK)
    assert "field 'step_time' is not set" in err.value.message
    assert "--" not in err.value.message + err.value.hint
    assert "model: NAME" in err.value.hint and "step_time: SECONDS" in err.value.hint
    assert err.value.context["field"] == "step_time" and "option" not in err.value.context
    path.write_text("jobs:\n  - {id: a, submit: 0, workload: 100, model: x, step_time: 1}\n")
    with pytest.raises(InputError) as err:
        run_replay(ReplayOptions(trace=path, policies=("fifo-ff",)), CLOCK)
    assert "--" not in err.value.message + err.value.hint, err.value


def test_the_baselines_write_the_same_summary_shape(tmp_path: Path) -> None:
    policies = ("oasis", "oasis-x0.5", "oasis-x2", "optimus", "drf")
    opts = ReplayOptions(
        trace=job_list(tmp_path), policies=policies, nodes="2x8", lp_max_jobs=0, seed=3
    )
    report = run_replay(opts, CLOCK)
    summary = report.to_json()
    assert list(summary["policies"]) == list(policies)
    for name, values in summary["policies"].items():
        assert tuple(values) == SUMMARY_KEYS, name
        assert values["avg_jct_s"] is not None and values["decision_p50_ms"] is not None
    details = report.details()["details"]
    for name in ("optimus", "drf"):  # re-allocating: nothing rejected, every job placed
        assert (details[name]["placed"], details[name]["rejected"]) == (8, 0)
    oasis = details["oasis"]
    assert oasis["placed"] + oasis["rejected"] == 8
    assert all(r["error"].startswith("rejected: ") for r in oasis["rejected_jobs"])
    # the oracle constants the prepare hook took from the trace are in the notes
    trace_notes = [n for n in report.notes if ": from the trace: " in n]
    assert [n.split(":")[0] for n in trace_notes] == ["oasis", "oasis-x0.5", "oasis-x2"]
    assert "oasis_ln_u = " in trace_notes[0] and "utility_seed = 3" in trace_notes[0]
