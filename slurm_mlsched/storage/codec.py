"""JSON codec of the model types: the one place they become text and come back (pure).

Every ``encode_*`` returns plain JSON data; every ``decode_*`` rebuilds an object equal to
the original, floats included: numbers are written by :func:`json.dumps`, whose float
``repr`` round-trips exactly, and ints stay ints. Enums are written as their values and
times as ISO 8601 text (with their offset). :func:`dumps` is the canonical text form (keys
sorted, no spaces) that the store writes and digests (:func:`digest`).

A decoder given data of the wrong shape raises :class:`CodecError` naming what is wrong.

Stored JSON carries no schema version. The one older shape still read is a decision
whose rounding trials are ``trial<k>:*`` statistics (no ``rounding`` field; decisions
stored before issue 16): :func:`_legacy_rounding`, the only place that knows it, turns
them into the typed fields, so such a decision is re-encoded in the current shape.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from ..model import (
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
from ..model.decision import (
    LEGACY_KEPT_BECAUSE,
    TrialRule,
    earliest_end_reason,
    kept_reason,
    least_total_completion_reason,
)
from ..placement.params import (
    AGING_UNITS,
    MACHINE_PRICES,
    PREEMPT_GAINS,
    Binding,
    PlacementParams,
)

Json = Any
_T = TypeVar("_T", int, float)
_E = TypeVar("_E", Form, Mode, Binding)


class CodecError(ValueError):
    """Stored data does not decode into the model type it should hold."""


def dumps(data: Json) -> str:
    """Canonical JSON text: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str) -> Json:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodecError(f"not JSON: {exc}") from None


def digest(text: str) -> str:
    """sha256 hex digest of canonical JSON text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- leaves --------------------------------------------------------------------------------


def encode_resources(r: Resources) -> Json:
    return {"gpu": r.gpu, "cpu": r.cpu, "mem": r.mem}


def decode_resources(d: Json) -> Resources:
    m = _obj(d, "resources")
    return Resources(_num(m, "gpu"), _num(m, "cpu"), _num(m, "mem"))


def encode_time(t: datetime) -> str:
    return t.isoformat()


def decode_time(text: Json) -> datetime:
    if not isinstance(text, str):
        raise CodecError(f"time must be ISO 8601 text, got {text!r}")
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise CodecError(f"not an ISO 8601 time: {text!r}") from None


# --- cluster snapshot ----------------------------------------------------------------------


def encode_reservation(r: Reservation) -> Json:
    return {
        "machine": r.machine,
        "start_slot": r.start_slot,
        "end_slot": r.end_slot,
        "usage": encode_resources(r.usage),
        "job_id": r.job_id,
    }


def decode_reservation(d: Json) -> Reservation:
    m = _obj(d, "reservation")
    return Reservation(
        _str(m, "machine"),
        _int(m, "start_slot"),
        _int(m, "end_slot"),
        decode_resources(m.get("usage")),
        _str(m, "job_id"),
    )


def encode_snapshot(s: ClusterSnapshot) -> Json:
    return {
        "machines": [_encode_machine(x) for x in s.machines],
        "reservations": [encode_reservation(r) for r in s.reservations],
        "slot_seconds": s.slot_seconds,
        "epoch": encode_time(s.epoch),
        "now_slot": s.now_slot,
    }


def _encode_machine(x: Machine) -> Json:
    """A machine; ``gpu_type`` and ``gpu_speed`` only when set (older rows have neither:
    untyped, at 1.0)."""
    out: dict[str, Any] = {"name": x.name, "capacity": encode_resources(x.capacity)}
    if x.gpu_type is not None:
        out["gpu_type"] = x.gpu_type
    if x.gpu_speed != 1.0:
        out["gpu_speed"] = x.gpu_speed
    return out


def _decode_machine(x: Json) -> Machine:
    gpu_type = x.get("gpu_type")
    return Machine(
        _str(x, "name"),
        decode_resources(x.get("capacity")),
        None if gpu_type is None else _str(x, "gpu_type"),
        _num(x, "gpu_speed") if "gpu_speed" in x else 1.0,
    )


def decode_snapshot(d: Json) -> ClusterSnapshot:
    m = _obj(d, "snapshot")
    try:
        machines = tuple(_decode_machine(_obj(e, "machine")) for e in _list(m, "machines"))
        return ClusterSnapshot(
            machines=machines,
            reservations=tuple(decode_reservation(r) for r in _list(m, "reservations")),
            slot_seconds=_num(m, "slot_seconds"),
            epoch=decode_time(m.get("epoch")),
            now_slot=_int(m, "now_slot"),
        )
    except ValueError as exc:
        raise CodecError(f"snapshot: {exc}") from None


# --- job request ---------------------------------------------------------------------------


def encode_profile(p: JobProfile) -> Json:
    return {
        "step_time_s": p.step_time_s,
        "model_size_mb": p.model_size_mb,
        "bw_ex_mbps": p.bw_ex_mbps,
        "bw_in_mbps": p.bw_in_mbps,
        "ps_bw_mbps": p.ps_bw_mbps,
        "name": p.name,
    }


def decode_profile(d: Json) -> JobProfile:
    m = _obj(d, "profile")
    ps_bw = m.get("ps_bw_mbps")
    try:
        return JobProfile(
            _num(m, "step_time_s"),
            _num(m, "model_size_mb"),
            _num(m, "bw_ex_mbps"),
            _num(m, "bw_in_mbps"),
            None if ps_bw is None else _num(m, "ps_bw_mbps"),
            _str(m, "name"),
        )
    except ValueError as exc:
        raise CodecError(f"profile: {exc}") from None


def encode_request(j: JobRequest) -> Json:
    out = {
        "job_id": j.job_id,
        "arrival_slot": j.arrival_slot,
        "workload": j.workload,
        "max_workers": j.max_workers,
        "worker": encode_resources(j.worker),
        "ps": encode_resources(j.ps),
        "profile": encode_profile(j.profile),
        "ps_count": j.ps_count,
        "name": j.name,
    }
    if j.gpu_types is not None:  # only when set: older rows have none (any type)
        out["gpu_types"] = sorted(j.gpu_types)
    if j.arch is not Architecture.PS:  # only when set: older rows are all ps
        out["arch"] = j.arch.value
    if j.launcher is not None:
        out["launcher"] = j.launcher.value
    if j.gpu_speed != 1.0:  # only when set: older rows are at the reference GPU
        out["gpu_speed"] = j.gpu_speed
    return out


def decode_request(d: Json) -> JobRequest:
    m = _obj(d, "request")
    ps_count = m.get("ps_count")
    types = m.get("gpu_types")
    try:
        return JobRequest(
            job_id=_str(m, "job_id"),
            arrival_slot=_int(m, "arrival_slot"),
            workload=_num(m, "workload"),
            max_workers=_int(m, "max_workers"),
            worker=decode_resources(m.get("worker")),
            ps=decode_resources(m.get("ps")),
            profile=decode_profile(m.get("profile")),
            ps_count=None if ps_count is None else _int(m, "ps_count"),
            name=_str(m, "name"),
            gpu_types=None if types is None else _gpu_types(types),
            arch=Architecture(_str(m, "arch")) if "arch" in m else Architecture.PS,
            launcher=Launcher(_str(m, "launcher")) if "launcher" in m else None,
            gpu_speed=_num(m, "gpu_speed") if "gpu_speed" in m else 1.0,
        )
    except ValueError as exc:
        raise CodecError(f"request: {exc}") from None


def _gpu_types(value: object) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise CodecError(f"request.gpu_types: expected a list of strings, got {value!r}")
    return frozenset(value)


# --- parameters ----------------------------------------------------------------------------


def encode_params(p: PlacementParams) -> Json:
    return p.as_dict()


def decode_params(d: Json) -> PlacementParams:
    m = dict(_obj(d, "params"))
    known = set(PlacementParams.__dataclass_fields__)
    unknown = sorted(set(m) - known)
    if unknown:
        raise CodecError(f"params: unknown field(s) {unknown}")
    if "form" in m:
        m["form"] = _enum(Form, m["form"], "params.form")
    if "tiresias_thresholds_s" in m:
        m["tiresias_thresholds_s"] = tuple(float(x) for x in m["tiresias_thresholds_s"])
    if "binding" in m:
        m["binding"] = _enum(Binding, m["binding"], "params.binding")
    # a decision stored before the field existed was priced by load (the rule until then)
    m.setdefault("machine_price", "load")
    if m["machine_price"] not in MACHINE_PRICES:
        raise CodecError(
            f"params.machine_price: {m['machine_price']!r} is not one of {list(MACHINE_PRICES)}"
        )
    # nor was the queue's aging counted in the cluster's size (the rule until then)
    m.setdefault("aging_unit", "machine")
    if m["aging_unit"] not in AGING_UNITS:
        raise CodecError(
            f"params.aging_unit: {m['aging_unit']!r} is not one of {list(AGING_UNITS)}"
        )
    # a decision stored before ``reserve_depth`` existed held the head's plan alone
    m.setdefault("reserve_depth", 1)
    # nor was a pause's gain estimated by anything but the exchange (the rule until then)
    m.setdefault("preempt_gain", "exchange")
    if m["preempt_gain"] not in PREEMPT_GAINS:
        raise CodecError(
            f"params.preempt_gain: {m['preempt_gain']!r} is not one of {list(PREEMPT_GAINS)}"
        )
    # nor did a pause stand when the paused job started again at once (a migration)
    m.setdefault("preempt_migrate", False)
    # nor did a running job move to a smaller node for a wide waiting one
    m.setdefault("preempt_defrag", False)
    # nor did a pause restart its job narrower on its own machines (a shrink)
    m.setdefault("preempt_shrink", False)
    # nor were running jobs sharing a machine paused together
    m.setdefault("preempt_group", False)
    # nor did a pause's rollout count the arrivals the recent past forecasts
    m.setdefault("preempt_forecast", False)
    # nor did a spread job regather on a free node before the re-plan
    m.setdefault("preempt_regather", False)
    # nor were a pause's jobs found around the reserved heads, nor did a pause stand for
    # the jobs the re-plan started in its room other than its own
    m.setdefault("preempt_heads", False)
    m.setdefault("preempt_room", False)
    # the look-ahead held back a job's narrow start though a pause could take it back
    m.setdefault("lookahead_pausable", True)
    # a width look-ahead stored before ``widths_forecast`` existed weighed the forecast
    m.setdefault("widths_forecast", True)
    # nor did narrow starts have a guard (0 = none, the rule until then)
    m.setdefault("narrow_regret", 0.0)
    regret = m["narrow_regret"]
    if (
        isinstance(regret, bool)
        or not isinstance(regret, int | float)
        or not (0 <= regret < math.inf)
    ):
        raise CodecError(f"params.narrow_regret: expected a finite number >= 0, got {regret!r}")
    return PlacementParams(**m)


# --- decision ------------------------------------------------------------------------------


def encode_slot_plan(p: SlotPlan) -> Json:
    return {
        "slot": p.slot,
        "mode": p.mode.value,
        "workers": [[n, c] for n, c in p.workers],
        "ps": [[n, c] for n, c in p.ps],
        "length": p.length,
    }


def decode_slot_plan(d: Json) -> SlotPlan:
    m = _obj(d, "slot plan")
    return SlotPlan(
        slot=_int(m, "slot"),
        mode=_enum(Mode, m.get("mode"), "slot plan mode"),
        workers=_pairs(m, "workers", int),
        ps=_pairs(m, "ps", int),
        length=_int(m, "length"),
    )


def encode_decision(x: Decision) -> Json:
    return {
        "job_id": x.job_id,
        "policy": x.policy,
        "form": x.form.value,
        "seed": x.seed,
        "slots": [encode_slot_plan(p) for p in x.slots],
        "start_slot": x.start_slot,
        "end_slot": x.end_slot,
        "work_covered": x.work_covered,
        "arrival_slot": x.arrival_slot,
        "lp_deadline": x.lp_deadline,
        "lp_value": x.lp_value,
        "trials": x.trials,
        "repair_actions": list(x.repair_actions),
        "solver": x.solver,
        "solver_version": x.solver_version,
        "timings_ms": [[k, v] for k, v in x.timings_ms],
        "notes": list(x.notes),
        "stats": [[k, v] for k, v in x.stats],
        "rounding": [encode_rounding_trial(t) for t in x.rounding],
        "kept_trial": x.kept_trial,
        "kept_because": x.kept_because,
    }


def encode_rounding_trial(t: RoundingTrial) -> Json:
    return {
        "index": t.index,
        "violations": t.violations,
        "work_fraction": t.work_fraction,
        "start_slot": t.start_slot,
        "end_slot": t.end_slot,
        "workers": t.workers,
        "colocated": t.colocated,
        "repaired_end_slot": t.repaired_end_slot,
        "repaired_workers": t.repaired_workers,
    }


def decode_rounding_trial(d: Json) -> RoundingTrial:
    m = _obj(d, "rounding trial")
    colocated = m.get("colocated")
    if colocated is not None and not isinstance(colocated, bool):
        raise CodecError(f"field 'colocated' must be true, false or null, got {colocated!r}")
    return RoundingTrial(
        index=_int(m, "index"),
        violations=_int(m, "violations"),
        work_fraction=_num(m, "work_fraction"),
        start_slot=_opt_int(m, "start_slot"),
        end_slot=_opt_int(m, "end_slot"),
        workers=_opt_int(m, "workers"),
        colocated=colocated,
        repaired_end_slot=_opt_int(m, "repaired_end_slot"),
        repaired_workers=_opt_int(m, "repaired_workers"),
    )


def decode_decision(d: Json) -> Decision:
    m = _obj(d, "decision")
    deadline, value = m.get("lp_deadline"), m.get("lp_value")
    stats = _pairs(m, "stats", float)
    if "rounding" in m:
        rounding = tuple(decode_rounding_trial(t) for t in _list(m, "rounding"))
        kept = _opt_int(m, "kept_trial")
        because = _str(m, "kept_because")
    else:  # stored before decisions held their trials: read them from the statistics
        rounding, kept, because, stats = _legacy_rounding(
            stats, _str(m, "solver"), _int(m, "arrival_slot")
        )
    return Decision(
        job_id=_str(m, "job_id"),
        policy=_str(m, "policy"),
        form=_enum(Form, m.get("form"), "decision form"),
        seed=_int(m, "seed"),
        slots=tuple(decode_slot_plan(p) for p in _list(m, "slots")),
        start_slot=_int(m, "start_slot"),
        end_slot=_int(m, "end_slot"),
        work_covered=_num(m, "work_covered"),
        arrival_slot=_int(m, "arrival_slot"),
        lp_deadline=None if deadline is None else _int(m, "lp_deadline"),
        lp_value=None if value is None else _num(m, "lp_value"),
        trials=_int(m, "trials"),
        repair_actions=tuple(_strs(m, "repair_actions")),
        solver=_str(m, "solver"),
        solver_version=_str(m, "solver_version"),
        timings_ms=_pairs(m, "timings_ms", float),
        notes=tuple(_strs(m, "notes")),
        stats=stats,
        rounding=rounding,
        kept_trial=kept,
        kept_because=because,
    )


_LEGACY_INT_FIELDS = (
    "violations",
    "start_slot",
    "end_slot",
    "workers",
    "repaired_end_slot",
    "repaired_workers",
)


def _legacy_rounding(
    stats: tuple[tuple[str, float], ...], solver: str, arrival_slot: int
) -> tuple[tuple[RoundingTrial, ...], int | None, str, tuple[tuple[str, float], ...]]:
    """A decision stored before ``rounding``/``kept_trial``/``kept_because`` existed:
    its trials from the ``trial<k>:<field>`` statistics (an end slot of −1: the trial
    placed nothing), its kept trial from the ``kept_trial`` statistic (what yu-rr's
    non-elastic form and the joint program recorded; the rule follows from the solver),
    or, where none was recorded (the elastic form, and older decisions), re-derived by
    the rule of the policies of that time: fewest violations, then most work by D up to
    the whole workload, then earliest end, ties to the lower index
    (:data:`LEGACY_KEPT_BECAUSE`). Returns the trials, the
    kept index, why, and the statistics without the keys read."""
    by_trial: dict[int, dict[str, float]] = {}
    rest: list[tuple[str, float]] = []
    recorded: float | None = None
    for key, value in stats:
        name, sep, field = key.partition(":")
        if sep and name.startswith("trial") and name[5:].isdigit():
            by_trial.setdefault(int(name[5:]), {})[field] = value
        elif key == "kept_trial":
            recorded = value
        else:
            rest.append((key, value))
    trials = tuple(_legacy_trial(k, by_trial[k]) for k in sorted(by_trial))
    kept: int | None = None
    because = ""
    if recorded is not None:
        kept = _whole(recorded, "kept_trial")
        if solver == "highs-lp-joint":
            st = dict(rest)
            because = least_total_completion_reason(
                st.get("trial_total_completion_slots", 0.0),
                int(st.get("joint_jobs", 0.0)),
            )
        else:
            row = next((t for t in trials if t.index == kept), None)
            end = None if row is None else row.repaired_end_slot
            because = (
                kept_reason(TrialRule.EARLIEST_END)
                if end is None
                else earliest_end_reason(end - arrival_slot + 1)
            )
    elif trials:
        # the rule of the policies of that time: fewest violations, most work by D counted
        # up to the whole workload (an elastic draw may cover more than V; the elastic
        # policy ranked min(work, V)), earliest end, lower index
        no_end = 1 << 60
        best = min(
            trials,
            key=lambda t: (
                t.violations,
                -min(t.work_fraction, 1.0),
                no_end if t.end_slot is None else t.end_slot,
                t.index,
            ),
        )
        kept, because = best.index, LEGACY_KEPT_BECAUSE
    return trials, kept, because, tuple(rest)


def _legacy_trial(k: int, t: Mapping[str, float]) -> RoundingTrial:
    n = {f: _whole(t[f], f"trial{k}:{f}") for f in _LEGACY_INT_FIELDS if f in t}
    end = n.get("end_slot")
    return RoundingTrial(
        index=k,
        violations=n.get("violations", 0),
        work_fraction=t.get("work_fraction", 0.0),
        start_slot=n.get("start_slot"),
        end_slot=None if end is None or end < 0 else end,
        workers=n.get("workers"),
        colocated=None if "colocated" not in t else bool(t["colocated"]),
        repaired_end_slot=n.get("repaired_end_slot"),
        repaired_workers=n.get("repaired_workers"),
    )


def _whole(value: float, what: str) -> int:
    if not float(value).is_integer():
        raise CodecError(f"stats: {what} must be a whole number, got {value!r}")
    return int(value)


# --- checked access --------------------------------------------------------------------------


def _obj(d: Json, what: str) -> Mapping[str, Json]:
    if not isinstance(d, Mapping):
        raise CodecError(f"{what} must be a JSON object, got {type(d).__name__}")
    return d


def _get(m: Mapping[str, Json], key: str) -> Json:
    if key not in m:
        raise CodecError(f"missing field {key!r}")
    return m[key]


def _num(m: Mapping[str, Json], key: str) -> float:
    v = _get(m, key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise CodecError(f"field {key!r} must be a number, got {v!r}")
    return v


def _int(m: Mapping[str, Json], key: str) -> int:
    v = _get(m, key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise CodecError(f"field {key!r} must be an integer, got {v!r}")
    return v


def _opt_int(m: Mapping[str, Json], key: str) -> int | None:
    return None if m.get(key) is None else _int(m, key)


def _str(m: Mapping[str, Json], key: str) -> str:
    v = _get(m, key)
    if not isinstance(v, str):
        raise CodecError(f"field {key!r} must be a string, got {v!r}")
    return v


def _list(m: Mapping[str, Json], key: str) -> list[Json]:
    v = _get(m, key)
    if not isinstance(v, list):
        raise CodecError(f"field {key!r} must be a list, got {v!r}")
    return v


def _strs(m: Mapping[str, Json], key: str) -> list[str]:
    items = _list(m, key)
    if not all(isinstance(s, str) for s in items):
        raise CodecError(f"field {key!r} must be a list of strings")
    return items


def _pairs(m: Mapping[str, Json], key: str, kind: type[_T]) -> tuple[tuple[str, _T], ...]:
    out: list[tuple[str, _T]] = []
    for item in _list(m, key):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise CodecError(f"field {key!r} must hold [name, number] pairs, got {item!r}")
        value = item[1]
        ok = isinstance(value, int) if kind is int else isinstance(value, int | float)
        if isinstance(value, bool) or not ok:
            raise CodecError(f"field {key!r}: {item[0]!r} has a bad value {value!r}")
        out.append((item[0], value))
    return tuple(out)


def _enum(kind: type[_E], value: Json, what: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        valid = ", ".join(e.value for e in kind)
        raise CodecError(f"{what} must be one of {valid}, got {value!r}") from None
