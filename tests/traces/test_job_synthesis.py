"""Job synthesis (MODEL.md §7): the documented, seeded, versioned mapping record -> job."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from slurm_mlsched.files.profiles import load_profiles
from slurm_mlsched.model import Mode, Resources
from slurm_mlsched.traces import JobState, Trace, TraceRecord, read_trace
from slurm_mlsched.traces.synthesis import (
    BUCKETS,
    MODEL_ALIASES,
    PROFILE_GPU_HOURS,
    SYNTHESIS_VERSION,
    CpuJobs,
    Reason,
    Rejection,
    SynthesisParams,
    SynthesizedJob,
    model_duration,
    synthesize,
    synthesize_trace,
)
from tests.traces.trace_files import POLLUX, SACCT_FIXTURES, SIA, need

PROFILES = load_profiles()


def rec(**fields: object) -> TraceRecord:
    base: dict[str, object] = {"job_id": "j", "submit": 1000.0, "source": "test", "line": 2}
    base.update(fields)
    return TraceRecord(**base)  # type: ignore[arg-type]


def job(record: TraceRecord, params: SynthesisParams | None = None) -> SynthesizedJob:
    out = synthesize(record, params or SynthesisParams(), PROFILES)
    assert isinstance(out, SynthesizedJob), out
    return out


def test_version_and_tables_are_consistent() -> None:
    assert SYNTHESIS_VERSION == "1"
    assert set(MODEL_ALIASES.values()) <= set(PROFILES)
    assert set(PROFILE_GPU_HOURS) == set(PROFILES)  # every profile has a duration range
    for _, models in BUCKETS:
        assert all(m in MODEL_ALIASES for m in models)
    assert SynthesisParams().as_dict()["synthesis_version"] == "1"


def test_workload_reproduces_the_recorded_duration_colocated() -> None:
    """4 GPUs on one node for 1 h: V = 4 · 3600 / θ_in; 4 workers co-located take 1 h."""
    out = job(rec(gpus=4, nodes=1, duration_s=3600.0, model="imagenet"))
    profile = PROFILES["resnet-50"]
    assert out.request.profile == profile and out.profile_source == "trace-model"
    assert out.original_mode is Mode.COLOCATED
    assert out.request.workload == pytest.approx(4 * 3600 / profile.theta_in)
    hours = out.request.workload / (4 * profile.nu_in(3600.0))
    assert hours == pytest.approx(1.0)
    assert out.request.max_workers == 4
    assert out.request.worker == Resources(1, 4, 16384)  # no CPU/mem in the record: defaults
    assert out.request.ps == Resources(0, 2, 8192)  # MODEL.md §2
    assert out.request.ps_count is None and out.duration_source == "trace"


def test_distributed_when_it_spanned_nodes_or_exceeded_a_node() -> None:
    profile = PROFILES["resnet-50"]
    two_nodes = job(rec(gpus=4, nodes=2, duration_s=100.0, model="resnet-50"))
    assert two_nodes.original_mode is Mode.DISTRIBUTED
    assert two_nodes.request.workload == pytest.approx(4 * 100 / profile.theta_ex)
    # no node count: more GPUs than gpus_per_node means it was distributed
    assert job(rec(gpus=16, duration_s=100.0)).original_mode is Mode.DISTRIBUTED
    assert job(rec(gpus=8, duration_s=100.0)).original_mode is Mode.COLOCATED
    small = SynthesisParams(gpus_per_node=4)
    assert job(rec(gpus=8, duration_s=100.0), small).original_mode is Mode.DISTRIBUTED


def test_demands_split_the_records_resources() -> None:
    out = job(rec(gpus=4, cpus=18, mem_mb=65536.0, duration_s=60.0))
    assert out.request.worker == Resources(1, 5, 16384)  # ⌈18/4⌉ CPUs, 64 GiB / 4


def test_cap_keeps_the_original_workload() -> None:
    full = job(rec(gpus=64, duration_s=600.0))
    capped = job(rec(gpus=64, duration_s=600.0), SynthesisParams(max_workers=16))
    assert capped.request.max_workers == 16 and capped.capped and not full.capped
    assert capped.request.workload == full.request.workload
    assert capped.original_workers == 64


def test_bucket_profiles_are_deterministic_and_order_free() -> None:
    records = [rec(job_id=f"j{i}", gpus=1, duration_s=60.0 * (i + 1)) for i in range(300)]
    params = SynthesisParams(seed=7)
    forward = synthesize_trace(records, params, PROFILES)
    shuffled = records[:]
    random.Random(1).shuffle(shuffled)
    backward = synthesize_trace(shuffled, params, PROFILES)
    pick = {j.request.job_id: j.request.profile.name for j in forward.jobs}
    assert pick == {j.request.job_id: j.request.profile.name for j in backward.jobs}
    other = synthesize_trace(records, SynthesisParams(seed=8), PROFILES)
    assert pick != {j.request.job_id: j.request.profile.name for j in other.jobs}
    for j in forward.jobs:  # the bucket decides the candidates
        gpu_hours = j.duration_s / 3600
        name = j.request.profile.name
        if gpu_hours < 1:
            assert name in ("resnext-110", "dssm")
        elif gpu_hours < 10:
            assert name in ("wlm", "seq2seq")
        else:
            assert name == "vgg-16"
    assert {j.profile_source for j in forward.jobs} == {"bucket"}


def test_model_driven_records_get_duration_model_1() -> None:
    out = job(rec(job_id="bert-7", gpus=4, workers=4, model="bert"))
    assert out.request.profile.name == "seq2seq" and out.duration_source == "model-1"
    low, high = PROFILE_GPU_HOURS["seq2seq"]
    assert low <= out.duration_s * 4 / 3600 < high
    assert out.duration_s == model_duration("seq2seq", 4, 0, "bert-7")
    assert out.request.workload == pytest.approx(4 * out.duration_s / out.request.profile.theta_in)


@pytest.mark.parametrize(
    ("record", "params", "reason"),
    [
        (rec(state=JobState.PENDING), SynthesisParams(), Reason.NOT_FINISHED),
        (rec(state=JobState.RUNNING, start=1.0, gpus=1), SynthesisParams(), Reason.NOT_FINISHED),
        (
            rec(state=JobState.CANCELLED, duration_s=0.0, gpus=1),
            SynthesisParams(),
            Reason.NEVER_RAN,
        ),
        (rec(state=JobState.CANCELLED, end=5.0, gpus=1), SynthesisParams(), Reason.NEVER_RAN),
        (rec(duration_s=0.0, gpus=2), SynthesisParams(), Reason.ZERO_DURATION),
        (rec(duration_s=10.0, gpus=0, cpus=4), SynthesisParams(), Reason.NO_GPUS),
        (rec(duration_s=10.0), SynthesisParams(cpu_jobs=CpuJobs.PER_NODE), Reason.NO_CPUS),
        (rec(gpus=2), SynthesisParams(), Reason.NO_DURATION),
        (rec(gpus=2, model="alexnet"), SynthesisParams(), Reason.NO_DURATION),
    ],
)
def test_rejections(record: TraceRecord, params: SynthesisParams, reason: Reason) -> None:
    out = synthesize(record, params, PROFILES)
    assert isinstance(out, Rejection) and out.reason is reason, out


def test_cpu_only_rules() -> None:
    record = rec(gpus=0, cpus=96, nodes=4, mem_mb=4096.0, duration_s=600.0)
    per_node = job(record, SynthesisParams(cpu_jobs=CpuJobs.PER_NODE))
    assert per_node.original_workers == 4 and per_node.original_mode is Mode.DISTRIBUTED
    assert per_node.request.worker == Resources(0, 24, 1024)
    per_cores = job(record, SynthesisParams(cpu_jobs=CpuJobs.PER_CORES, cores_per_worker=32))
    assert per_cores.original_workers == 3
    no_nodes = job(replace(record, nodes=0), SynthesisParams(cpu_jobs=CpuJobs.PER_NODE))
    assert no_nodes.original_workers == 12  # ⌈96 / 8⌉: one per cores_per_worker
    one = job(rec(cpus=1, duration_s=5.0), SynthesisParams(cpu_jobs=CpuJobs.PER_CORES))
    assert one.original_mode is Mode.COLOCATED


def test_submit_is_relative_to_the_earliest() -> None:
    records = [rec(job_id="b", submit=500.0, gpus=1, duration_s=9.0), rec(job_id="a", submit=200.0)]
    result = synthesize_trace(records, None, PROFILES)
    assert result.origin == 200.0
    assert [j.entry[1] for j in result.jobs] == [300.0]
    assert result.rejected_by_reason() == {"no-gpus": 1}


@pytest.mark.parametrize("path", POLLUX + SIA, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_workload_job_becomes_a_job(path: object) -> None:
    trace: Trace = read_trace(need(path))  # type: ignore[arg-type]
    result = synthesize_trace(trace.records)
    assert len(result.jobs) == 160 and not result.rejected
    for j in result.jobs:
        assert j.profile_source == "trace-model" and j.duration_source == "model-1"
        assert j.request.max_workers == j.record.workers
        assert math.isfinite(j.request.workload) and j.request.workload > 0


@pytest.mark.parametrize(
    ("version", "rejected"),
    [
        ("22.05", {"no-gpus": 7, "never-ran": 1}),
        # 24.11 recorded 0 s for the job that exits at once (22.05: 1 s)
        ("24.11", {"zero-duration": 1, "no-gpus": 6, "never-ran": 1}),
    ],
)
def test_the_captured_sacct_jobs(version: str, rejected: dict[str, int]) -> None:
    trace = read_trace(SACCT_FIXTURES / version / "sacct.json")
    result = synthesize_trace(trace.records)
    names = sorted(j.request.name for j in result.jobs)
    assert names == ["gpu2", "het", "multi"]  # the GPU jobs
    assert result.rejected_by_reason() == rejected
    het = next(j for j in result.jobs if j.request.name == "het")
    assert het.original_workers == 3 and het.original_mode is Mode.DISTRIBUTED  # 2 nodes
    assert het.request.worker == Resources(1, 1, 4096 / 3)
    gpu2 = next(j for j in result.jobs if j.request.name == "gpu2")
    assert gpu2.original_mode is Mode.COLOCATED and gpu2.request.max_workers == 2


def test_philly_synthesis_is_complete(philly: Trace) -> None:
    result = synthesize_trace(philly.records, SynthesisParams(seed=1))
    assert len(result.jobs) + len(result.rejected) == 82_247
    assert not result.rejected
    assert {j.request.profile.name for j in result.jobs} == {
        "resnext-110",
        "dssm",
        "wlm",
        "seq2seq",
        "vgg-16",
        "resnet-50",
    }
