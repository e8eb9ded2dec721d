"""The JSON codec round-trips every model type exactly, floats and ints included."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import (
    Architecture,
    ClusterSnapshot,
    Decision,
    Form,
    JobProfile,
    JobRequest,
    Launcher,
    Machine,
    Mode,
    Reservation,
    Resources,
    RoundingTrial,
    SlotPlan,
)
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.storage import codec

finite = st.floats(allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False)
amount = st.one_of(st.integers(0, 10**6), st.floats(0, 1e12, allow_nan=False))
names = st.text(min_size=1, max_size=12)
times = st.datetimes(timezones=st.just(UTC))

resources = st.builds(Resources, amount, amount, amount)
reservations = st.builds(
    Reservation, names, st.integers(-100, 100), st.integers(-100, 100), resources, st.text()
)


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    machine_names = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    machines = tuple(Machine(n, draw(resources)) for n in machine_names)
    return ClusterSnapshot(
        machines,
        tuple(draw(st.lists(reservations, max_size=4))),
        slot_seconds=draw(positive),
        epoch=draw(times),
        now_slot=draw(st.integers(-(2**40), 2**40)),
    )


profiles = st.builds(
    JobProfile, positive, st.floats(0, 1e9), positive, positive,
    st.one_of(st.none(), positive), names,
)  # fmt: skip
requests = st.builds(
    JobRequest, names, st.integers(0, 10**6), positive, st.integers(1, 1000), resources,
    resources, profiles, st.one_of(st.none(), st.integers(1, 100)), st.text(max_size=8),
)  # fmt: skip
pairs = st.lists(st.tuples(names, st.integers(0, 64)), max_size=4).map(tuple)
plans = st.builds(
    SlotPlan, st.integers(0, 10**6), st.sampled_from(Mode), pairs, pairs, st.integers(1, 100)
)
stats = st.lists(st.tuples(names, finite), max_size=4).map(tuple)
maybe_slot = st.one_of(st.none(), st.integers(-(10**6), 10**6))
rounding_trials = st.builds(
    RoundingTrial, st.integers(0, 1000), st.integers(0, 10**4), finite, maybe_slot, maybe_slot,
    st.one_of(st.none(), st.integers(0, 1000)), st.one_of(st.none(), st.booleans()), maybe_slot,
    st.one_of(st.none(), st.integers(0, 1000)),
)  # fmt: skip
decisions = st.builds(
    Decision,
    job_id=names, policy=names, form=st.sampled_from(Form), seed=st.integers(0, 2**63 - 1),
    slots=st.lists(plans, max_size=3).map(tuple), start_slot=st.integers(0, 10**6),
    end_slot=st.integers(0, 10**6), work_covered=finite, arrival_slot=st.integers(0, 10**6),
    lp_deadline=st.one_of(st.none(), st.integers(0, 10**6)),
    lp_value=st.one_of(st.none(), finite), trials=st.integers(0, 1000),
    repair_actions=st.lists(st.text(), max_size=3).map(tuple), solver=st.text(),
    solver_version=st.text(), timings_ms=stats, notes=st.lists(st.text(), max_size=2).map(tuple),
    stats=stats, rounding=st.lists(rounding_trials, max_size=3).map(tuple),
    kept_trial=st.one_of(st.none(), st.integers(0, 1000)), kept_because=st.text(max_size=8),
)  # fmt: skip
params = st.builds(
    PlacementParams, form=st.sampled_from(Form), seed=st.integers(0, 2**63 - 1),
    trials=st.integers(1, 100), scale=positive, time_limit_s=positive, time_weight=finite,
    tight_links=st.booleans(),
)  # fmt: skip

CASES = [
    (snapshots(), codec.encode_snapshot, codec.decode_snapshot),
    (requests, codec.encode_request, codec.decode_request),
    (decisions, codec.encode_decision, codec.decode_decision),
    (params, codec.encode_params, codec.decode_params),
]


@pytest.mark.parametrize(("strategy", "encode", "decode"), CASES, ids=lambda c: "")
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip_through_canonical_text(strategy, encode, decode, data) -> None:  # type: ignore[no-untyped-def]
    value = data.draw(strategy)
    text = codec.dumps(encode(value))
    again = decode(codec.loads(text))
    assert again == value
    assert codec.dumps(encode(again)) == text  # bit for bit, types included
    assert json.loads(text) == encode(value)


def test_ints_stay_ints_and_floats_stay_floats() -> None:
    r = codec.decode_resources(
        codec.loads(codec.dumps(codec.encode_resources(Resources(4, 0.1, 3.0))))
    )
    assert (type(r.gpu), type(r.cpu), type(r.mem)) == (int, float, float)
    assert r.cpu == 0.1


def test_canonical_text_and_digest_are_stable() -> None:
    text = codec.dumps({"b": 1, "a": [0.1, "é"]})
    assert text == '{"a":[0.1,"é"],"b":1}'
    assert codec.digest(text) == codec.digest('{"a":[0.1,"é"],"b":1}')


@pytest.mark.parametrize(
    ("decode", "data", "needle"),
    [
        (codec.decode_resources, {"gpu": 1, "cpu": 1}, "missing field 'mem'"),
        (codec.decode_resources, {"gpu": "1", "cpu": 1, "mem": 1}, "'gpu' must be a number"),
        (codec.decode_params, {"sed": 1}, "unknown field"),
        (codec.decode_params, {"machine_price": "cheap"}, "machine_price"),
        (codec.decode_params, {"narrow_regret": -1}, "narrow_regret"),
        (codec.decode_params, {"narrow_regret": "2"}, "narrow_regret"),
        (codec.decode_params, {"aging_unit": "gpu"}, "aging_unit"),
        (codec.decode_slot_plan, {"slot": 0, "mode": "x", "workers": [], "ps": [], "length": 1},
         "mode"),
        (codec.decode_time, "yesterday", "ISO 8601"),
        (codec.decode_snapshot, [], "JSON object"),
        (codec.decode_rounding_trial, {"index": 0, "violations": 1.0, "work_fraction": 1},
         "'violations' must be an integer"),
        (codec.decode_rounding_trial,
         {"index": 0, "violations": 0, "work_fraction": 1, "colocated": 1}, "'colocated'"),
    ],
)  # fmt: skip
def test_bad_data_is_a_codec_error(decode, data, needle) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(codec.CodecError, match=needle):
        decode(data)


def test_times_keep_their_instant() -> None:
    t = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert codec.decode_time(codec.encode_time(t)) == t


def test_an_allreduce_request_keeps_its_architecture_and_a_ps_request_writes_none() -> None:
    profile = JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50")
    ddp = JobRequest(
        "ddp", 0, 100.0, 4, Resources(1, 4, 1024), Resources(), profile, ps_count=0,
        arch=Architecture.ALLREDUCE, launcher=Launcher.SRUN,
    )  # fmt: skip
    encoded = codec.encode_request(ddp)
    assert (encoded["arch"], encoded["launcher"]) == ("allreduce", "srun")
    assert codec.decode_request(json.loads(json.dumps(encoded))) == ddp
    ps = JobRequest("ps", 0, 100.0, 4, Resources(1, 4, 1024), Resources(0, 1, 1), profile)
    assert not {"arch", "launcher"} & set(codec.encode_request(ps))  # older rows unchanged
    bad = {**encoded, "arch": "ring"}
    with pytest.raises(codec.CodecError, match="request"):
        codec.decode_request(bad)


def test_params_stored_before_the_machine_price_decode_to_the_load_price() -> None:
    """A decision stored before ``machine_price`` existed was priced by load: it decodes
    so (a re-solve reproduces it), while a new decision carries its own."""
    old = codec.encode_params(PlacementParams())
    del old["machine_price"]
    assert codec.decode_params(old).machine_price == "load"
    assert PlacementParams().machine_price == "fit"
    again = codec.decode_params(codec.encode_params(PlacementParams()))
    assert again.machine_price == "fit"


def test_params_stored_before_the_narrow_regret_decode_to_no_guard() -> None:
    """A decision stored before ``narrow_regret`` existed had no guard on a narrow start:
    it decodes as 0 (none), while a new decision carries its own."""
    old = codec.encode_params(PlacementParams())
    del old["narrow_regret"]
    assert codec.decode_params(old).narrow_regret == 0.0
    assert codec.decode_params(codec.encode_params(PlacementParams())).narrow_regret == 2.0


def test_params_stored_before_the_aging_unit_decode_to_aging_in_machines() -> None:
    """A decision stored before ``aging_unit`` existed aged its queue by γ machines (0.3
    then): it decodes with the unit ``machine``, so a re-solve orders the queue as it did;
    a new decision carries its own unit."""
    old = {**codec.encode_params(PlacementParams()), "aging": 0.3}
    del old["aging_unit"]
    decoded = codec.decode_params(old)
    assert (decoded.aging, decoded.aging_unit) == (0.3, "machine")
    again = codec.decode_params(codec.encode_params(PlacementParams()))
    assert (again.aging, again.aging_unit) == (0.01875, "cluster")


def test_params_stored_before_reserve_depth_decode_to_the_head_alone() -> None:
    """``reserve_depth`` came with late binding at 1 (the head's plan alone); a decision
    stored without it decodes as 1, not as today's default, while a new decision carries
    its own."""
    old = codec.encode_params(PlacementParams())
    del old["reserve_depth"]
    assert codec.decode_params(old).reserve_depth == 1
    assert codec.decode_params(codec.encode_params(PlacementParams())).reserve_depth == 2


def test_params_stored_before_the_preempt_gain_decode_to_the_exchange() -> None:
    """A decision stored before ``preempt_gain`` existed weighed its pauses by the
    exchange: it decodes so, a new decision carries its own, and an unknown value is a
    codec error naming the field."""
    old = codec.encode_params(PlacementParams(preempt_gain="rollout"))
    assert codec.decode_params(old).preempt_gain == "rollout"
    del old["preempt_gain"]
    assert codec.decode_params(old).preempt_gain == "exchange"
    with pytest.raises(codec.CodecError, match=r"params\.preempt_gain"):
        codec.decode_params({**old, "preempt_gain": "guess"})


def test_params_stored_before_preempt_defrag_decode_without_moves() -> None:
    """A decision stored before ``preempt_defrag`` existed never moved a running job to a
    smaller node: it decodes with the rule off."""
    new = codec.encode_params(PlacementParams(preempt_defrag=True))
    assert codec.decode_params(new).preempt_defrag is True
    del new["preempt_defrag"]
    assert codec.decode_params(new).preempt_defrag is False


def test_params_stored_before_preempt_migrate_decode_without_migration() -> None:
    """A decision stored before ``preempt_migrate`` existed dropped a pause whose job
    started again at once: it decodes so, and a new decision carries its own."""
    new = codec.encode_params(PlacementParams(preempt_migrate=True))
    assert codec.decode_params(new).preempt_migrate is True
    del new["preempt_migrate"]
    assert codec.decode_params(new).preempt_migrate is False


def test_params_stored_before_widths_forecast_decode_with_the_forecast() -> None:
    """A decision stored before ``widths_forecast`` existed weighed its widths against the
    forecast (the only width rule then): it decodes with ``widths_forecast`` on."""
    new = codec.encode_params(PlacementParams(lookahead_widths=True))
    assert codec.decode_params(new).widths_forecast is False
    del new["widths_forecast"]
    old = codec.decode_params(new)
    assert old.lookahead_widths is True and old.widths_forecast is True


def test_params_stored_before_lookahead_pausable_decode_with_every_job_held_back() -> None:
    """A decision stored before ``lookahead_pausable`` existed was made by a look-ahead
    that held back every narrow start, pausable or not: it decodes so."""
    new = codec.encode_params(PlacementParams())
    assert codec.decode_params(new).lookahead_pausable is False
    del new["lookahead_pausable"]
    assert codec.decode_params(new).lookahead_pausable is True
