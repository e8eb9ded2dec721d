"""The architecture of trace jobs (issue 31): an ``arch`` column of the generic reader, and
synthesis rule 8 (``arch_default``), opt-in so that version 1's jobs stay as they were."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.profiles import load_profiles
from slurm_mlsched.model import Architecture, Resources
from slurm_mlsched.traces import ReadOptions, TraceRecord, parse_column_map, parse_generic
from slurm_mlsched.traces.synthesis import (
    ArchDefault,
    CpuJobs,
    SynthesisParams,
    SynthesizedJob,
    original_layout,
    synthesize,
)

PROFILES = load_profiles()
BY_GPUS = SynthesisParams(arch_default=ArchDefault.BY_GPUS)
CSV = """id,t,gpus,secs,model,kind
a,0,4,3600,resnet-50,allreduce
b,10,4,3600,resnet-50,PS
c,20,4,3600,resnet-50,
"""
CMAP = parse_column_map("job_id=id,submit=t,gpus=gpus,duration=secs,model=model,arch=kind,"
                        "time_format=offset")  # fmt: skip


def rec(**fields: object) -> TraceRecord:
    base: dict[str, object] = {
        "job_id": "j", "submit": 0.0, "source": "test", "line": 2, "gpus": 4,
        "duration_s": 3600.0, "model": "resnet-50",
    }  # fmt: skip
    return TraceRecord(**{**base, **fields})  # type: ignore[arg-type]


def job(record: TraceRecord, params: SynthesisParams) -> SynthesizedJob:
    out = synthesize(record, params, PROFILES)
    assert isinstance(out, SynthesizedJob), out
    return out


def test_the_generic_reader_reads_an_arch_column() -> None:
    trace = parse_generic(CSV.splitlines(keepends=True), ReadOptions(columns=CMAP))
    assert [r.arch for r in trace.records] == [Architecture.ALLREDUCE, Architecture.PS, None]


def test_a_bad_arch_names_the_line_the_column_and_the_valid_words() -> None:
    bad = CSV.replace("a,0,4,3600,resnet-50,allreduce", "a,0,4,3600,resnet-50,ring")
    with pytest.raises(InputError) as info:
        parse_generic(bad.splitlines(keepends=True), ReadOptions(columns=CMAP))
    text = f"{info.value.message} {info.value.hint}"
    assert "line 2" in text and "kind" in text and "'ring'" in text and "ps or allreduce" in text


def test_the_default_reads_every_job_as_version_1_did() -> None:
    default = job(rec(), SynthesisParams())
    assert default.request.arch is Architecture.PS and default.request.ps_count is None
    # the same request as a record that never had the field: version 1's jobs are unchanged
    assert default.request == job(rec(arch=None), SynthesisParams()).request
    assert "arch_default" not in SynthesisParams().as_dict()
    assert BY_GPUS.as_dict()["arch_default"] == "by-gpus"


def test_by_gpus_reads_a_multi_gpu_job_as_allreduce_on_one_node() -> None:
    out = job(rec(), BY_GPUS)  # 4 GPUs, no node count, 8 GPUs a node: one node, (4,)
    req = out.request
    assert req.arch is Architecture.ALLREDUCE and req.ps_count == 0 and req.ps == Resources()
    # T_step = 0.449 + 2·3/4·102.2/306.5 + 6·50e-6 = 0.9494631321 s;
    # V = 4 workers × 3600 s / T_step = 15,166.47 mini-batches
    assert req.workload == pytest.approx(14400 / 0.9494631321)


def test_by_gpus_over_two_nodes_uses_the_network() -> None:
    # layout (2, 2), two-level ring: t = 1·102.2/306.5 + 1·102.2/91.875 + 4·50 µs
    #   = 1.4460230 s; T_step = 0.449 + 1.4460230 = 1.8950230 s
    out = job(rec(nodes=2), BY_GPUS)
    assert out.request.workload == pytest.approx(14400 / 1.8950230)


def test_by_gpus_keeps_single_gpu_and_cpu_jobs_ps() -> None:
    assert job(rec(gpus=1), BY_GPUS).request.arch is Architecture.PS
    cpu = replace(BY_GPUS, cpu_jobs=CpuJobs.PER_CORES)
    assert job(rec(gpus=0, cpus=32), cpu).request.arch is Architecture.PS


@pytest.mark.parametrize("params", [SynthesisParams(), BY_GPUS])
def test_the_records_own_arch_wins(params: SynthesisParams) -> None:
    assert job(rec(arch=Architecture.ALLREDUCE), params).request.arch is Architecture.ALLREDUCE
    assert job(rec(arch=Architecture.PS), params).request.arch is Architecture.PS


@pytest.mark.parametrize(
    ("workers", "nodes", "layout"),
    [(4, None, (4,)), (12, None, (8, 4)), (16, None, (8, 8)), (5, 2, (3, 2)), (2, 4, (1, 1))],
)
def test_original_layouts(workers: int, nodes: int | None, layout: tuple[int, ...]) -> None:
    assert original_layout(rec(nodes=nodes), workers, SynthesisParams()) == layout
