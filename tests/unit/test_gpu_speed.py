"""GPU speed by type (docs/formulation.md §17): the speed table from every input, the rule
(a job runs at the slowest type it may use), the scaling of both architectures, and the
replay and plan that read it. The default table (none) changes nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm_mlsched.config import load_config
from slurm_mlsched.errors import InputError
from slurm_mlsched.files.cluster_file import parse_cluster
from slurm_mlsched.model import Architecture, ClusterSnapshot, JobRequest, Machine, Resources
from slurm_mlsched.model.gpu_speed import (
    at_speed,
    effective_request,
    job_speed,
    parse_speed_text,
    speed_table,
    speed_text,
    with_gpu_speed,
)
from slurm_mlsched.model.speed import worker_rates
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.services.replay.run import prepare_jobs, replay_params, run_replay
from slurm_mlsched.services.replay.types import ReplayOptions
from slurm_mlsched.sim import admit, sim_jobs, simulate
from slurm_mlsched.storage import codec
from tests.conftest import RESNET, make_job

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
TABLE = {"a100": 2.0, "v100": 1.0, "t4": 0.5}


def node(name: str, kind: str | None, gpus: int = 4) -> dict[str, object]:
    out: dict[str, object] = {"name": name, "gpus": gpus, "cpus": 16, "mem_gb": 128}
    if kind is not None:
        out["gpu_type"] = kind
    return out


def mixed(table: object = TABLE, untyped: bool = False) -> ClusterSnapshot:
    nodes = [node("a1", "a100"), node("v1", "v100"), node("t1", "t4")]
    if untyped:
        nodes.append(node("u1", None))
    data: dict[str, object] = {"nodes": nodes}
    if table is not None:
        data["gpu_speed"] = table
    return parse_cluster(data, "c.yaml", now=NOW)


def typed(*types: str) -> JobRequest:
    return replace(make_job(workers=2), gpu_types=frozenset(types) if types else None)


# --- the table ------------------------------------------------------------------------------


def test_the_cluster_file_table_sets_each_machines_factor_by_type() -> None:
    snap = mixed(untyped=True)
    assert {m.name: m.gpu_speed for m in snap.machines} == {
        "a1": 2.0,
        "v1": 1.0,
        "t1": 0.5,
        "u1": 1.0,  # untyped: 1.0 whatever the table says
    }


def test_no_table_and_unlisted_types_are_1() -> None:
    assert {m.gpu_speed for m in mixed(table=None).machines} == {1.0}
    snap = mixed(table={"a100": 3})
    assert {m.name: m.gpu_speed for m in snap.machines} == {"a1": 3.0, "v1": 1.0, "t1": 1.0}


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"a100": 0}, "must be a number > 0"),
        ({"a100": -1.5}, "must be a number > 0"),
        ({"a100": "fast"}, "must be a number"),
        ({"a100": True}, "must be a number"),
        ({"a100": float("inf")}, "must be a number > 0"),
        ({"a100": 5000}, "<= 1000"),
        ({"a 100": 2}, "is not a GPU type name"),
        ({3090: 2}, "is not a GPU type name"),
        ([2.0], "must be a mapping of GPU type to factor"),
    ],
)
def test_a_bad_table_is_exit_3_naming_the_file_and_field(table: object, says: str) -> None:
    with pytest.raises(InputError) as info:
        mixed(table=table)
    err = info.value
    assert err.exit_code == 3 and err.code == "invalid-input"
    assert err.message.startswith("c.yaml: top level: field 'gpu_speed'"), err.message
    assert says in err.message
    assert "gpu_speed: {a100: 2.0, t4: 0.5}" in err.hint
    assert err.context["field"] == "gpu_speed"


def test_the_text_form_round_trips_and_refuses_bad_entries() -> None:
    assert parse_speed_text("a100=2, t4=0.5,") == (("a100", 2.0), ("t4", 0.5))
    assert parse_speed_text("") == ()
    assert speed_text(parse_speed_text("t4=0.5,a100=2")) == "a100=2,t4=0.5"
    for bad, says in (("a100", "not TYPE=FACTOR"), ("a100=2,a100=3", "given twice")):
        with pytest.raises(ValueError, match=says):
            parse_speed_text(bad)
    assert speed_table({"a100": 2}) == (("a100", 2.0),)


def test_the_site_config_table_and_its_environment_form(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text("[gpu_speed]\na100 = 2.0\nt4 = 0.5\n")
    config = load_config({}, system_path=tmp_path / "none.toml", user_path=user)
    assert config.gpu_speed == (("a100", 2.0), ("t4", 0.5))
    env = {"MLSUB_GPU_SPEED": "v100=1.5"}
    config = load_config(env, system_path=tmp_path / "none.toml", user_path=user)
    assert config.gpu_speed == (("v100", 1.5),)  # the environment over the file, whole
    user.write_text("[gpu_speed]\na100 = 0\n")
    with pytest.raises(InputError) as info:
        load_config({}, system_path=tmp_path / "none.toml", user_path=user)
    assert info.value.exit_code == 3
    assert "config key 'gpu_speed'" in info.value.message and "> 0" in info.value.message
    assert "[gpu_speed]" in info.value.hint


# --- the rule -------------------------------------------------------------------------------


def test_a_typed_job_runs_at_its_types_factor() -> None:
    snap = mixed()
    assert job_speed(typed("a100"), snap) == 2.0
    assert job_speed(typed("t4"), snap) == 0.5


def test_a_job_of_several_types_runs_at_the_slowest_of_them() -> None:
    assert job_speed(typed("a100", "v100"), mixed()) == 1.0
    assert job_speed(typed("a100", "t4"), mixed()) == 0.5


def test_a_job_naming_no_type_runs_at_the_slowest_node_untyped_ones_at_1() -> None:
    assert job_speed(typed(), mixed()) == 0.5
    fast_only = mixed(table={"a100": 2.0, "v100": 3.0, "t4": 4.0}, untyped=True)
    assert job_speed(typed(), fast_only) == 1.0  # the untyped node, at 1.0
    assert job_speed(typed(), mixed(table={"a100": 2, "v100": 2, "t4": 2})) == 2.0


def test_a_type_the_cluster_lacks_and_a_job_without_gpus_keep_1() -> None:
    assert job_speed(typed("h100"), mixed()) == 1.0  # never fits: admit reports it
    cpu_job = replace(make_job(), worker=Resources(0, 2, 4096))
    assert job_speed(cpu_job, mixed()) == 1.0
    # a node without GPUs is no machine of the rule: the GPU nodes decide
    machines = (
        Machine("cpu", Resources(0, 64, 1 << 18)),
        Machine("g", Resources(4, 16, 1), "a100"),
    )
    snap = ClusterSnapshot(with_gpu_speed(machines, (("a100", 2.0),)))
    assert job_speed(typed(), snap) == 2.0


def test_a_ps_job_at_f_has_every_time_per_minibatch_divided_by_f() -> None:
    job = typed("a100")
    fast = effective_request(job, mixed())
    assert fast.gpu_speed == 2.0
    assert fast.profile.theta_in == pytest.approx(RESNET.theta_in / 2)
    assert fast.profile.theta_ex == pytest.approx(RESNET.theta_ex / 2)
    assert fast.profile.ps_per_worker == pytest.approx(RESNET.ps_per_worker)  # PS sizing
    nu = worker_rates(job, 600.0)
    assert worker_rates(fast, 600.0) == pytest.approx((2 * nu[0], 2 * nu[1]))


def test_an_allreduce_job_at_f_has_its_compute_time_divided_by_f() -> None:
    job = replace(typed("t4"), ps=Resources(), ps_count=0, arch=Architecture.ALLREDUCE)
    slow = effective_request(job, mixed())
    assert slow.gpu_speed == 0.5
    assert slow.profile.step_time_s == pytest.approx(2 * RESNET.step_time_s)
    assert (slow.profile.bw_ex_mbps, slow.profile.bw_in_mbps) == (
        RESNET.bw_ex_mbps,
        RESNET.bw_in_mbps,
    )  # the ring's links are not the GPU's


def test_a_request_is_scaled_once_and_at_1_not_at_all() -> None:
    job = typed("a100")
    fast = effective_request(job, mixed())
    assert effective_request(fast, mixed()) is fast
    assert effective_request(fast, mixed(table={"a100": 4})) is fast  # it keeps its factor
    assert effective_request(job, mixed(table=None)) is job
    assert at_speed(job, 1.0) is job


def test_the_factor_round_trips_through_the_store_codec() -> None:
    snap = mixed(untyped=True)
    fast = effective_request(typed("a100"), snap)
    assert codec.decode_request(codec.loads(codec.dumps(codec.encode_request(fast)))) == fast
    again = codec.decode_snapshot(codec.loads(codec.dumps(codec.encode_snapshot(snap))))
    assert again == snap
    # at 1.0 nothing is written: older rows and every default row read the same
    plain = codec.encode_request(typed("a100"))
    assert "gpu_speed" not in plain
    assert all("gpu_speed" not in m for m in codec.encode_snapshot(mixed(table=None))["machines"])


# --- replay ---------------------------------------------------------------------------------


def write_inputs(tmp_path: Path, table: dict[str, float] | None) -> tuple[Path, Path]:
    cluster: dict[str, object] = {"nodes": [node("a1", "a100"), node("t1", "t4")]}
    if table is not None:
        cluster["gpu_speed"] = table
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(json.dumps(cluster))
    jobs = [
        {"id": kind, "submit": 0, "workers": 4, "model": "resnet-50", "workload": 60_000,
         "gpu_type": kind}
        for kind in ("a100", "t4")
    ]  # fmt: skip
    job_file = tmp_path / "jobs.json"
    job_file.write_text(json.dumps({"jobs": jobs}))
    return cluster_file, job_file


class _Clock:
    def now(self) -> datetime:
        return NOW

    def monotonic(self) -> float:
        return 0.0


def slots_by_job(tmp_path: Path, table: dict[str, float] | None, **extra: object) -> dict[str, int]:
    cluster_file, job_file = write_inputs(tmp_path, table)
    opts = ReplayOptions(
        trace=job_file,
        policies=("yu-rr",),
        cluster=cluster_file,
        **extra,  # type: ignore[arg-type]
    )
    prepared = prepare_jobs(opts)
    result = simulate(prepared.admitted, prepared.cluster, "yu-rr", PlacementParams())
    return {d.job_id: d.end_slot - d.start_slot + 1 for d in result.decisions}


def test_a_t4_job_takes_twice_the_slots_of_an_a100_job(tmp_path: Path) -> None:
    slots = slots_by_job(tmp_path, {"a100": 2.0, "t4": 1.0})
    assert slots["t4"] == 2 * slots["a100"], slots
    assert slots_by_job(tmp_path, None) == {"a100": slots["t4"], "t4": slots["t4"]}


def test_the_replay_option_replaces_the_files_table(tmp_path: Path) -> None:
    slots = slots_by_job(tmp_path, None, gpu_speed="a100=2,t4=1")
    assert slots["t4"] == 2 * slots["a100"], slots
    with pytest.raises(InputError) as info:
        slots_by_job(tmp_path, None, gpu_speed="a100=fast")
    assert info.value.exit_code == 3 and info.value.context["option"] == "--gpu-speed"
    assert "a100=2,t4=0.5" in info.value.hint
    _, job_file = write_inputs(tmp_path, None)
    with pytest.raises(InputError, match="option --gpu-speed"):  # before any input is read
        replay_params(ReplayOptions(trace=tmp_path / "none", policies=(), gpu_speed="t4"), 0)
    with pytest.raises(InputError, match="needs a cluster with GPU types"):
        prepare_jobs(ReplayOptions(trace=job_file, policies=("yu-rr",), gpu_speed="a100=2"))


def test_the_replay_names_its_speeds_and_its_bound_reads_them(tmp_path: Path) -> None:
    cluster_file, job_file = write_inputs(tmp_path, {"a100": 2.0, "t4": 1.0})
    opts = ReplayOptions(trace=job_file, policies=("yu-rr", "fifo-bf"), cluster=cluster_file)
    report = run_replay(opts, _Clock())
    assert any(n.startswith("GPU speed by type: a100 ×2, t4 ×1") for n in report.notes)
    assert report.bound.value is not None
    for m in report.metrics.values():
        assert m.avg_jct_s is not None


def test_a_table_of_ones_changes_nothing(tmp_path: Path) -> None:
    cluster_file, job_file = write_inputs(tmp_path, None)
    base = prepare_jobs(ReplayOptions(trace=job_file, policies=("yu-rr",), cluster=cluster_file))
    ones = prepare_jobs(
        ReplayOptions(
            trace=job_file, policies=("yu-rr",), cluster=cluster_file, gpu_speed="a100=1,t4=1"
        )
    )
    assert ones.admitted == base.admitted and ones.cluster == base.cluster
    jobs = sim_jobs([(typed("a100"), 0.0), (replace(typed(), job_id="j2"), 300.0)], 600.0)
    admitted, _ = admit(jobs, mixed(table=None))
    assert all(a is j for a, j in zip(admitted, jobs, strict=True))  # the very requests


def test_the_replay_option_travels_in_an_on_slurm_plan_only_when_set(tmp_path: Path) -> None:
    from slurm_mlsched.services.replay.cells import options_as_dict, options_from_dict

    opts = ReplayOptions(trace=tmp_path / "t.csv", policies=("yu-rr",), gpu_speed="a100=2")
    data = json.loads(json.dumps(options_as_dict(opts)))
    assert data["gpu_speed"] == "a100=2" and options_from_dict(data) == opts
    plain = replace(opts, gpu_speed=None)
    assert "gpu_speed" not in options_as_dict(plain)  # plans of the defaults read as before
    assert options_from_dict(options_as_dict(plain)) == plain
