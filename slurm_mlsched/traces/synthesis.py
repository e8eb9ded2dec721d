"""Job synthesis (MODEL.md §7): a trace record -> a placement ``JobRequest``.

Traces record submit times, resources and run times, not training structure. This module
is the documented, seeded, versioned model that fills the gap. Version
:data:`SYNTHESIS_VERSION` = ``"1"``; any change to a rule or a table below is a new version
(replays record the version they used). The mapping is pure and depends on nothing but the
record, the parameters and the profile table: each random choice is drawn from a hash of
(version, seed, job id), so a job's synthesis does not depend on the order or the other
records of the trace.

Rules (version 1):

1. **Rejections** (counted by the replay, never dropped silently), in this order:
   ``not-finished`` (state pending or running), ``never-ran`` (no start, not a positive run
   time, and a known state: e.g. cancelled while pending), ``zero-duration`` (ran 0 s),
   ``no-gpus`` (0 or unknown GPUs and ``cpu_jobs`` off), ``no-cpus`` (a CPU-only job with
   no CPU count), ``no-duration`` (no run time and no model to draw one from).
2. **Workers**: the record's ``workers`` when the source knows them (Pollux/Sia
   ``num_replicas``), else its GPUs (one GPU a worker). CPU-only records (``cpu_jobs``):
   ``per-node`` = one worker per node (``nodes``; if unknown or 0, one per
   ``cores_per_worker`` CPUs), ``per-cores`` = one worker per ``cores_per_worker`` CPUs
   (rounded up). The replay's N = min(workers, ``max_workers``) when a cap is set.
3. **Demands** α per worker: 1 GPU (0 for CPU-only jobs); CPUs = ⌈record CPUs / original
   workers⌉ and memory = record memory / original workers when the trace has them, else
   ``worker_cpus`` (4) and ``worker_mem_mb`` (16 GiB), the live defaults. Each PS: β =
   ``ps`` (0 GPU, 2 CPUs, 8 GiB; MODEL.md §2); PS count auto.
4. **Model profile**: the record's ``model`` when it names a profile, directly or through
   :data:`MODEL_ALIASES` (Pollux/Sia names); otherwise drawn from the record's
   **worker-time bucket** (GPU-hours = workers × duration / 3600), with the buckets Pollux
   used to assign its models (:data:`BUCKETS`: < 1 h cifar10/ncf, < 10 h deepspeech2/bert,
   < 100 h yolov3, else imagenet), mapped through :data:`MODEL_ALIASES`; the pick within a
   bucket is uniform by hash.
5. **Duration**: the recorded run time. A record without one (model-driven workloads)
   gets duration model 1: GPU-hours drawn log-uniformly (by hash) in its profile's bucket
   (:data:`PROFILE_GPU_HOURS`) and divided by its workers.
6. **Workload** V: what the original workers do in that duration in the mode the job ran
   in originally, co-located if it fit on one node (``nodes`` = 1, or, when the trace has
   no node count, workers ≤ ``gpus_per_node`` for a GPU job, one worker for a CPU-only
   job) and distributed otherwise:
   V = W_orig × duration / θ_mode, with θ_in = τ + 2g/b_in and θ_ex = τ + 2g/b_ex
   (asynchronous training: a job's progress is its workers × their rate). A capped job
   keeps the V of its original size and so runs longer.
7. **Submit**: seconds after ``origin`` (the replay passes the trace's earliest submit);
   the replay sets the arrival slot (``sim.jobs.arrival_slot``).
8. **Architecture** (issue 31; opt-in, so that version 1's jobs are unchanged): the
   record's ``arch`` when the source says (a column mapped to ``arch``), else
   ``arch_default``: ``ps`` (every job, version 1's reading, the default for now) or
   ``by-gpus`` (a job of two or more GPU workers is ``allreduce``, any other ``ps``). An
   allreduce job has no PS (``ps_count`` 0, no PS demand) and its workload is what its
   original workers do in the duration at the ring's step time (``model/allreduce.py``)
   on its original layout: ``nodes`` nodes when the trace says (the workers split as
   evenly as they go, the first nodes taking one more), else one node while the workers
   fit ``gpus_per_node``, else full nodes of ``gpus_per_node`` and the rest:
   V = W_orig × duration / T_step(layout).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from ..files.job_options import (
    DEFAULT_CPUS_PER_PS,
    DEFAULT_CPUS_PER_WORKER,
    DEFAULT_MEM_PER_PS_MIB,
    DEFAULT_MEM_PER_WORKER_MIB,
)
from ..model import Architecture, JobProfile, JobRequest, Mode, Resources
from ..model import allreduce as ring
from .record import JobState, TraceRecord

SYNTHESIS_VERSION = "1"

#: Model names found in traces -> the DL2 profile used for them (version 1).
#: Pollux/Sia workloads name six models; each maps to the DL2 profile of the closest
#: workload (image classification by network size, NLP and speech by architecture,
#: recommendation to recommendation):
#:
#: * cifar10 (ResNet-18 on CIFAR-10) -> resnext-110 (a CIFAR-scale residual network)
#: * imagenet (ResNet-50 on ImageNet) -> resnet-50 (the same network)
#: * yolov3 (object detection, Darknet-53 backbone, ~240 MB) -> vgg-16 (the large,
#:   communication-heavy vision model)
#: * bert (BERT fine-tuning, a Transformer) -> seq2seq (the sequence-to-sequence model)
#: * deepspeech2 (speech recognition, recurrent) -> wlm (the recurrent language model)
#: * ncf (neural collaborative filtering) -> dssm (embedding-based recommendation)
#:
#: A few spellings of the DL2 names are accepted too; matching ignores case.
MODEL_ALIASES: dict[str, str] = {
    "cifar10": "resnext-110",
    "imagenet": "resnet-50",
    "yolov3": "vgg-16",
    "bert": "seq2seq",
    "deepspeech2": "wlm",
    "ncf": "dssm",
    "resnet50": "resnet-50",
    "resnet": "resnet-50",
    "vgg16": "vgg-16",
    "vgg": "vgg-16",
    "resnext110": "resnext-110",
    "resnext": "resnext-110",
    "inception": "inception-bn",
    "inceptionbn": "inception-bn",
    "cnn-text": "cnn-text-classification",
    "cnntextclassification": "cnn-text-classification",
    "lm": "wlm",
}

#: Worker-time buckets (upper bound in GPU-hours, Pollux model names), as Pollux assigned
#: models to Philly jobs (traces/README.md §2). The last bucket has no upper bound.
BUCKETS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (1.0, ("cifar10", "ncf")),
    (10.0, ("deepspeech2", "bert")),
    (100.0, ("yolov3",)),
    (math.inf, ("imagenet",)),
)

#: Duration model 1: GPU-hour range of each profile, the Pollux bucket of the models that
#: map to it (Pollux kept jobs of >= 60 s and < 1000 GPU-hours). inception-bn and
#: cnn-text-classification, which no Pollux model maps to, take the range of the closest
#: workload (vision like yolov3; small NLP like cifar10/ncf).
PROFILE_GPU_HOURS: dict[str, tuple[float, float]] = {
    "resnext-110": (1.0 / 60.0, 1.0),
    "dssm": (1.0 / 60.0, 1.0),
    "cnn-text-classification": (1.0 / 60.0, 1.0),
    "wlm": (1.0, 10.0),
    "seq2seq": (1.0, 10.0),
    "vgg-16": (10.0, 100.0),
    "inception-bn": (10.0, 100.0),
    "resnet-50": (100.0, 1000.0),
}


class CpuJobs(StrEnum):
    """What to do with records that have no GPUs."""

    OFF = "off"  # reject them (reason no-gpus)
    PER_NODE = "per-node"  # one worker per node
    PER_CORES = "per-cores"  # one worker per cores_per_worker CPUs


class ArchDefault(StrEnum):
    """The architecture of a record whose source does not say (rule 8)."""

    PS = "ps"  # every job: version 1's reading (the default until placement has allreduce)
    BY_GPUS = "by-gpus"  # two or more GPU workers: allreduce; any other job: ps


class Reason(StrEnum):
    """Why a record did not become a job."""

    NOT_FINISHED = "not-finished"
    NEVER_RAN = "never-ran"
    ZERO_DURATION = "zero-duration"
    NO_GPUS = "no-gpus"
    NO_CPUS = "no-cpus"
    NO_DURATION = "no-duration"


@dataclass(frozen=True)
class SynthesisParams:
    """The knobs of synthesis; stored with a replay beside :data:`SYNTHESIS_VERSION`."""

    seed: int = 0
    max_workers: int | None = None  # cap on N; None = the record's own worker count
    gpus_per_node: int = 8  # original-mode rule when the trace has no node count
    cpu_jobs: CpuJobs = CpuJobs.OFF
    cores_per_worker: int = 8
    worker_cpus: float = float(DEFAULT_CPUS_PER_WORKER)  # when the trace has no CPU count
    worker_mem_mb: float = DEFAULT_MEM_PER_WORKER_MIB  # when the trace has no memory
    ps: Resources = field(
        default_factory=lambda: Resources(0.0, float(DEFAULT_CPUS_PER_PS), DEFAULT_MEM_PER_PS_MIB)
    )
    arch_default: ArchDefault = ArchDefault.PS

    def __post_init__(self) -> None:
        if self.max_workers is not None and self.max_workers < 1:
            raise ValueError(f"max_workers must be >= 1 or None, got {self.max_workers}")
        if self.gpus_per_node < 1 or self.cores_per_worker < 1:
            raise ValueError("gpus_per_node and cores_per_worker must be >= 1")

    def as_dict(self) -> dict[str, object]:
        out = self._version_1_dict()
        if self.arch_default is not ArchDefault.PS:  # only when set: version 1's keys stay
            out["arch_default"] = self.arch_default.value
        return out

    def _version_1_dict(self) -> dict[str, object]:
        return {
            "synthesis_version": SYNTHESIS_VERSION,
            "seed": self.seed,
            "max_workers": self.max_workers,
            "gpus_per_node": self.gpus_per_node,
            "cpu_jobs": self.cpu_jobs.value,
            "cores_per_worker": self.cores_per_worker,
            "worker_cpus": self.worker_cpus,
            "worker_mem_mb": self.worker_mem_mb,
            "ps": self.ps.as_dict(),
        }


@dataclass(frozen=True)
class SynthesizedJob:
    """A record turned into a job: the request and how it was made.

    ``request.arrival_slot`` is 0: the replay sets it from ``submit_s``
    (``sim.sim_jobs``); :attr:`entry` is the pair the replay takes.
    """

    request: JobRequest
    submit_s: float
    record: TraceRecord
    original_workers: int
    original_mode: Mode
    duration_s: float
    duration_source: str  # "trace" or "model-1"
    profile_source: str  # "trace-model" or "bucket"
    capped: bool

    @property
    def entry(self) -> tuple[JobRequest, float]:
        return (self.request, self.submit_s)


@dataclass(frozen=True)
class Rejection:
    """A record that did not become a job, and why."""

    record: TraceRecord
    reason: Reason
    detail: str


@dataclass(frozen=True)
class Synthesis:
    """All records of a trace: the jobs, and the records that were not made jobs."""

    jobs: tuple[SynthesizedJob, ...]
    rejected: tuple[Rejection, ...]
    origin: float
    params: SynthesisParams

    def rejected_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.rejected:
            counts[r.reason.value] = counts.get(r.reason.value, 0) + 1
        return counts


def _draw(seed: int, job_id: str, purpose: str) -> float:
    """A number in [0, 1) from (version, seed, job id, purpose): order-independent."""
    key = f"{SYNTHESIS_VERSION}|{seed}|{job_id}|{purpose}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64


def resolve_model(name: str, profiles: Mapping[str, JobProfile]) -> str | None:
    """The profile name a trace's model name maps to, or ``None``."""
    key = name.strip().lower()
    if key in profiles:
        return key
    alias = MODEL_ALIASES.get(key) or MODEL_ALIASES.get(key.replace("-", "").replace("_", ""))
    return alias if alias in profiles else None


def bucket_profile(
    gpu_hours: float, seed: int, job_id: str, profiles: Mapping[str, JobProfile]
) -> str:
    """The profile drawn for a job of ``gpu_hours`` (rule 4)."""
    for upper, models in BUCKETS:
        if gpu_hours < upper:
            names = [MODEL_ALIASES[m] for m in models]
            pick = names[min(len(names) - 1, int(_draw(seed, job_id, "profile") * len(names)))]
            if pick not in profiles:
                raise ValueError(f"profile table has no {pick!r} (synthesis {SYNTHESIS_VERSION})")
            return pick
    raise AssertionError("the last bucket is unbounded")


def model_duration(profile: str, workers: int, seed: int, job_id: str) -> float:
    """Duration model 1 (rule 5): GPU-hours log-uniform in the profile's range / workers."""
    low, high = PROFILE_GPU_HOURS[profile]
    u = _draw(seed, job_id, "duration")
    gpu_hours = math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    return gpu_hours * 3600.0 / workers


def _rejection(record: TraceRecord, params: SynthesisParams) -> Rejection | None:
    if record.state in (JobState.PENDING, JobState.RUNNING):
        return Rejection(record, Reason.NOT_FINISHED, f"state {record.state.value}")
    positive = record.duration_s is not None and record.duration_s > 0
    if record.start is None and not positive and record.state is not JobState.UNKNOWN:
        return Rejection(record, Reason.NEVER_RAN, f"{record.state.value} before it started")
    if record.duration_s is not None and record.duration_s <= 0:
        return Rejection(record, Reason.ZERO_DURATION, "ran 0 s")
    if not (record.workers or record.gpus) and params.cpu_jobs is CpuJobs.OFF:
        return Rejection(record, Reason.NO_GPUS, "no GPUs and cpu_jobs is off")
    return None


def _original_workers(record: TraceRecord, params: SynthesisParams) -> int | Rejection:
    if record.workers:
        return record.workers
    if record.gpus:
        return record.gpus
    if not record.cpus:
        return Rejection(record, Reason.NO_CPUS, "a CPU-only job without a CPU count")
    if params.cpu_jobs is CpuJobs.PER_NODE and record.nodes:
        return record.nodes
    return max(1, math.ceil(record.cpus / params.cores_per_worker))


def _original_mode(record: TraceRecord, workers: int, params: SynthesisParams) -> Mode:
    if record.nodes:
        return Mode.COLOCATED if record.nodes == 1 else Mode.DISTRIBUTED
    gpu_job = bool(record.workers or record.gpus)
    one_node = workers <= params.gpus_per_node if gpu_job else workers == 1
    return Mode.COLOCATED if one_node else Mode.DISTRIBUTED


def architecture(record: TraceRecord, workers: int, params: SynthesisParams) -> Architecture:
    """Rule 8: the record's own, else ``arch_default``'s reading of it."""
    if record.arch is not None:
        return record.arch
    gpu_job = bool(record.workers or record.gpus)
    if params.arch_default is ArchDefault.BY_GPUS and gpu_job and workers >= 2:
        return Architecture.ALLREDUCE
    return Architecture.PS


def original_layout(record: TraceRecord, workers: int, params: SynthesisParams) -> ring.Layout:
    """Rule 8: the workers per node the job ran with originally."""
    if record.nodes:
        k = min(record.nodes, workers)
        base, extra = divmod(workers, k)
        return tuple(base + (1 if j < extra else 0) for j in range(k))
    full, rest = divmod(workers, params.gpus_per_node)
    return (params.gpus_per_node,) * full + ((rest,) if rest else ())


def synthesize(
    record: TraceRecord,
    params: SynthesisParams,
    profiles: Mapping[str, JobProfile],
    origin: float = 0.0,
) -> SynthesizedJob | Rejection:
    """One record -> a job (rules 1–7 of the module docstring), or why not."""
    if (rejected := _rejection(record, params)) is not None:
        return rejected
    workers = _original_workers(record, params)
    if isinstance(workers, Rejection):
        return workers
    profile_name = resolve_model(record.model, profiles) if record.model else None
    profile_source = "trace-model"
    duration = record.duration_s
    if profile_name is None:
        if duration is None:
            detail = f"unknown model {record.model!r}" if record.model else "no model"
            return Rejection(record, Reason.NO_DURATION, f"no run time and {detail}")
        profile_name = bucket_profile(
            workers * duration / 3600.0, params.seed, record.job_id, profiles
        )
        profile_source = "bucket"
    duration_source = "trace"
    if duration is None:
        duration = model_duration(profile_name, workers, params.seed, record.job_id)
        duration_source = f"model-{SYNTHESIS_VERSION}"
    profile = profiles[profile_name]
    mode = _original_mode(record, workers, params)
    arch = architecture(record, workers, params)
    if arch is Architecture.ALLREDUCE:
        theta = ring.step_seconds(original_layout(record, workers, params), profile)
    else:
        theta = profile.theta_in if mode is Mode.COLOCATED else profile.theta_ex
    workload = workers * duration / theta
    cap = params.max_workers
    n = min(workers, cap) if cap is not None else workers
    gpu = 1.0 if (record.workers or record.gpus) else 0.0
    cpus = math.ceil(record.cpus / workers) if record.cpus else params.worker_cpus
    mem = record.mem_mb / workers if record.mem_mb else params.worker_mem_mb
    request = JobRequest(
        job_id=record.job_id,
        arrival_slot=0,
        workload=workload,
        max_workers=n,
        worker=Resources(gpu, float(cpus), float(mem)),
        ps=Resources() if arch is Architecture.ALLREDUCE else params.ps,
        profile=profile,
        ps_count=0 if arch is Architecture.ALLREDUCE else None,
        name=record.name or "",
        gpu_types=record.gpu_types if gpu > 0 else None,
        arch=arch,
    )
    return SynthesizedJob(
        request=request,
        submit_s=record.submit - origin,
        record=record,
        original_workers=workers,
        original_mode=mode,
        duration_s=duration,
        duration_source=duration_source,
        profile_source=profile_source,
        capped=n < workers,
    )


def synthesize_trace(
    records: Iterable[TraceRecord],
    params: SynthesisParams | None = None,
    profiles: Mapping[str, JobProfile] | None = None,
) -> Synthesis:
    """Every record -> a job or a rejection; submit times relative to the earliest submit.

    ``profiles`` defaults to the shipped table (``slurm_mlsched/data/profiles.csv``).
    """
    params = params or SynthesisParams()
    if profiles is None:
        from ..files.profiles import load_profiles

        profiles = load_profiles()
    items = tuple(records)
    origin = min((r.submit for r in items), default=0.0)
    jobs: list[SynthesizedJob] = []
    rejected: list[Rejection] = []
    for record in items:
        result = synthesize(record, params, profiles, origin)
        if isinstance(result, Rejection):
            rejected.append(result)
        else:
            jobs.append(result)
    return Synthesis(tuple(jobs), tuple(rejected), origin, params)
