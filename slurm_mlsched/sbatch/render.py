"""Render a non-elastic decision into an sbatch script (pure: no I/O but reading the
template, no clock).

Layout (``sbatch_templates/hetjob.sh.j2``):

* one heterogeneous-job component per node the decision uses (Slurm never lets two
  components share a node), ``#SBATCH hetjob`` between components:
  ``#SBATCH --nodelist=NODE --nodes=1 --ntasks=T --cpus-per-task=c --mem=M --gres=gpu:G``
  with T the node's PS + worker tasks, M and G the sums of their memory and GPUs, when
  every task there needs c CPUs. When the roles need different CPU counts the component
  asks for ``--ntasks=1 --cpus-per-task=C`` (C the node's CPU total), which is exact too:
  ``--mincpus`` is ignored once GRES are requested (Slurm 22.05), and ``--ntasks=C
  --cpus-per-task=1`` makes 24.11 warn on every step. Steps may run more tasks than their
  component declares (tested on 22.05 and 24.11);
* one job step per role on a node (``--het-group=K`` only when there are several
  components: srun refuses it in a job that is not heterogeneous):
  ``srun --het-group=K --ntasks=COUNT --exact --cpus-per-task=c --mem=COUNT·m`` with
  ``--gres=gpu:COUNT·g --gpus-per-task=g`` for a worker (each sees only its own GPUs;
  untyped, also when the job names types: the component's ``--gres=gpu:TYPE:G``, with
  the node's GPU type, makes Slurm enforce the type, and the step draws from it) and
  ``--gres=none`` for a PS; all in the background, then ``wait``; the script exits
  non-zero if any step failed;
* every task runs a fixed launcher, ``bash -c "$mlsched_launcher" mlsched-task ROLE
  FIRST_RANK PROGRAM ARGS…``: its rank is FIRST_RANK + ``SLURM_PROCID``; it exports
  ``MLSCHED_ROLE``, ``MLSCHED_RANK``, ``DMLC_ROLE`` (``server``/``worker``) and
  ``TF_CONFIG``, then ``exec``\\ s the program with its arguments verbatim;
* the batch script exports what every task shares: ``MLSCHED_PS_HOSTS`` and
  ``MLSCHED_WORKER_HOSTS`` (``host:port`` by rank; ports ``base_port + i`` for PS i and
  ``base_port + #PS + j`` for worker j, so tasks on one host never collide),
  ``DMLC_PS_ROOT_URI``/``DMLC_PS_ROOT_PORT`` (PS 0), ``DMLC_NUM_WORKER``,
  ``DMLC_NUM_SERVER``, ``MLSCHED_JOB_ID``, ``MLSCHED_DECISION_ID``.

Quoting: the Jinja environment shell-quotes every ``{{ value }}`` (``shlex.quote``), so the
template cannot forget to. ``#SBATCH`` and comment lines are read line by line by sbatch,
which handles quotes but not backslashes like a shell, so the values that go there (job
name, ids, partition, output, node names) must be free of control characters and
backslashes: an :class:`~slurm_mlsched.errors.InputError` otherwise. The program and its
arguments may hold anything (spaces, quotes, ``$(…)``, backticks, newlines).

``--begin`` is written as local time in ``begin_tz`` (default UTC): sbatch reads it in its
own time zone, so run sbatch with ``TZ`` set to that zone (``TZ=UTC``).

An ``--arch allreduce`` job (no PS) is rendered as ONE job instead, by :mod:`.allreduce`
(``sbatch_templates/allreduce.sh.j2``), with the same header, quoting and checks.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from .. import __version__
from ..errors import InputError
from ..model import ClusterSnapshot, Decision, Form, JobRequest, Resources, Role
from ..model.eligibility import GPU_TYPE_NAME, gpu_types_text
from ..model.units import format_mem_mib
from ..ranges import unsafe_in_sbatch_line
from . import allreduce
from .templates import TEMPLATE, load_template

#: First port of a job's tasks when the caller does not choose one.
DEFAULT_BASE_PORT = 29500
#: The ports :func:`port_base` hands out: [PORT_LOW, PORT_HIGH), in blocks of PORT_BLOCK,
#: below Linux's ephemeral range (32768–60999), where outgoing connections take theirs.
PORT_LOW, PORT_HIGH, PORT_BLOCK = 20000, 32768, 64


def port_base(decision_id: int, n_tasks: int) -> int:
    """The first port of a decision's tasks: decisions whose ids differ by less than
    ``(PORT_HIGH − PORT_LOW) / block`` (199 for jobs of up to 64 tasks) get disjoint port
    ranges, so jobs that share a host (several Slurm nodes on one machine, or a node's
    address shared by several jobs) do not collide. A job of more than 64 tasks takes a
    block of the next multiple of 64."""
    block = PORT_BLOCK * max(1, math.ceil(n_tasks / PORT_BLOCK))
    blocks = (PORT_HIGH - PORT_LOW) // block
    return PORT_LOW + (decision_id % blocks) * block


#: The per-task launcher (a constant: no user value is ever pasted into it).
LAUNCHER = """\
role=$1 first=$2
shift 2
rank=$((first + SLURM_PROCID))
if [ "$role" = ps ]; then dmlc=server; else dmlc=worker; fi
export MLSCHED_ROLE="$role" MLSCHED_RANK="$rank" DMLC_ROLE="$dmlc"
export TF_CONFIG="{\\"cluster\\": $MLSCHED_TF_CLUSTER, \\"task\\": \
{\\"type\\": \\"$role\\", \\"index\\": $rank}}"
exec "$@"
"""


@dataclass(frozen=True)
class ScriptSpec:
    """What to run and how to label it; everything else comes from the decision."""

    command: tuple[str, ...]  # the program and its arguments, e.g. ("python3", "train.py")
    job_name: str
    decision_id: str = ""
    comment: str | None = None  # the decision tag (sbatch/tag.py), on every component
    partition: str | None = None
    begin: datetime | None = None  # aware; when the decision starts after now
    time_limit_minutes: int | None = None
    output: str | None = None  # sbatch --output pattern
    base_port: int = DEFAULT_BASE_PORT
    begin_tz: tzinfo = UTC
    sbatch_job: tuple[str, ...] = ()
    """The user's carried sbatch options written once, in the first component (sbatch
    propagates them): ``--account=ml-research``, values already shell-quoted
    (files/sbatch_lines.py)."""
    sbatch_each: tuple[str, ...] = ()
    """The user's carried options Slurm keeps per component: on every component's line."""


@dataclass(frozen=True)
class Step:
    """One role's tasks on one node: a job step of that node's component."""

    role: Role
    count: int
    first_rank: int
    per_task: Resources
    gpu_type: str | None = None  # the node's GPU type, when the job names types

    @property
    def cpus_per_task(self) -> int:
        return max(1, math.ceil(self.per_task.cpu - 1e-9))

    @property
    def mem_mib(self) -> int:
        return math.ceil(self.per_task.mem * self.count - 1e-9)

    @property
    def gpus_per_task(self) -> int:
        """Whole GPUs per task (Slurm allocates no fraction of a GPU)."""
        return math.ceil(self.per_task.gpu - 1e-9)

    @property
    def gpus(self) -> int:
        return self.gpus_per_task * self.count

    @property
    def gpu_options(self) -> str:
        """The step's ``--gres=gpu:N --gpus-per-task=g``, or ``--gres=none`` without GPUs.

        Untyped also for a job that names GPU types: the component's ``#SBATCH`` line asks
        for the type (:attr:`Component.gres`), so the allocation holds only GPUs of that
        type and a step can draw no other. Typing the step breaks it on the lab's Slurm
        22.05 (tests/integration/test_gpu_types_live.py): srun refuses ``gpu:TYPE:N``
        beside an untyped ``--gpus-per-task`` ("Invalid GRES specification (with and
        without type identification)"), and with ``--gpus-per-task=TYPE:g`` a step of
        several tasks got no GPUs (no ``CUDA_VISIBLE_DEVICES``)."""
        if not self.gpus:
            return "--gres=none"
        return f"--gres={gres(None, self.gpus)} --gpus-per-task={self.gpus_per_task}"


def gres(gpu_type: str | None, count: int) -> str:
    """Slurm's GPU GRES: ``gpu:4``, or ``gpu:v100:4`` so that Slurm enforces the type."""
    return f"gpu:{count}" if gpu_type is None else f"gpu:{gpu_type}:{count}"


@dataclass(frozen=True)
class Component:
    """A heterogeneous-job component: one node and the steps on it."""

    index: int
    node: str
    address: str
    steps: tuple[Step, ...]

    @property
    def ntasks(self) -> int:
        return sum(s.count for s in self.steps)

    @property
    def cpus(self) -> int:
        return sum(s.cpus_per_task * s.count for s in self.steps)

    @property
    def uniform_cpus(self) -> bool:
        """Every task on the node needs the same number of CPUs."""
        return len({s.cpus_per_task for s in self.steps}) == 1

    @property
    def slurm_tasks(self) -> int:
        """``--ntasks`` of the component (see the module docstring)."""
        return self.ntasks if self.uniform_cpus else 1

    @property
    def slurm_cpus_per_task(self) -> int:
        return self.steps[0].cpus_per_task if self.uniform_cpus else self.cpus

    @property
    def mem_mib(self) -> int:
        return sum(s.mem_mib for s in self.steps)

    @property
    def gpus(self) -> int:
        return sum(s.gpus for s in self.steps)

    @property
    def gres(self) -> str:
        """The component's ``--gres`` value (typed when its GPU steps are)."""
        kind = next((s.gpu_type for s in self.steps if s.gpus and s.gpu_type), None)
        return gres(kind, self.gpus)


@dataclass(frozen=True)
class Task:
    """Where one task runs and listens."""

    role: Role
    rank: int
    node: str
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class RenderedScript:
    text: str
    components: tuple[Component, ...]
    tasks: tuple[Task, ...] = field(default=())

    def tasks_of(self, role: Role) -> tuple[Task, ...]:
        return tuple(t for t in self.tasks if t.role == role)


def plan_components(
    decision: Decision,
    request: JobRequest,
    addresses: Mapping[str, str],
    base_port: int = DEFAULT_BASE_PORT,
    gpu_types: Mapping[str, str | None] | None = None,
) -> tuple[tuple[Component, ...], tuple[Task, ...]]:
    """Components and steps of a non-elastic decision, and its tasks (ranks, ports).
    ``gpu_types``: each node's GPU type; a job that names GPU types asks Slurm for its
    node's type (``--gres=gpu:TYPE:N``), so Slurm enforces what the placement chose."""
    _check_decision(decision)
    rows = decision.placement  # sorted by node, PS first
    per_task = {Role.PS: request.ps, Role.WORKER: request.worker}
    next_rank = {Role.PS: 0, Role.WORKER: 0}
    components = []
    for index, node in enumerate(dict.fromkeys(r.node for r in rows)):
        steps = []
        for role in (Role.PS, Role.WORKER):
            count = sum(r.count for r in rows if r.node == node and r.role == role)
            if count:
                kind = _gres_type(request, node, per_task[role], gpu_types)
                steps.append(Step(role, count, next_rank[role], per_task[role], kind))
                next_rank[role] += count
        components.append(Component(index, node, addresses.get(node) or node, tuple(steps)))
    return tuple(components), _tasks(components, base_port, next_rank[Role.PS])


def _gres_type(
    request: JobRequest, node: str, task: Resources, gpu_types: Mapping[str, str | None] | None
) -> str | None:
    """The GPU type to ask Slurm for on ``node`` (None: untyped GRES)."""
    if request.gpu_types is None or task.gpu <= 0:
        return None
    kind = (gpu_types or {}).get(node)
    if kind is None or kind not in request.gpu_types or not GPU_TYPE_NAME.fullmatch(kind):
        raise InputError(
            f"job {request.job_id!r} asks for GPU type(s) {gpu_types_text(request.gpu_types)} "
            f"but its decision puts GPU tasks on node {node!r}, whose GPU type is "
            f"{'unknown' if kind is None else repr(kind)}",
            hint="re-plan the job against the live node state (mlsub replan)",
            context={"node": node, "gpu_type": kind},
        )
    return kind


def _tasks(components: Sequence[Component], base_port: int, n_ps: int) -> tuple[Task, ...]:
    """Every task, PSs then workers by rank; PS i listens on base + i, worker j on
    base + n_ps + j."""
    out = []
    for role, offset in ((Role.PS, 0), (Role.WORKER, n_ps)):
        for c in components:
            for s in c.steps:
                if s.role == role:
                    out += [
                        Task(role, r, c.node, c.address, base_port + offset + r)
                        for r in range(s.first_rank, s.first_rank + s.count)
                    ]
    return tuple(out)


def render_sbatch(
    decision: Decision,
    request: JobRequest,
    addresses: Mapping[str, str],
    spec: ScriptSpec,
    gpu_types: Mapping[str, str | None] | None = None,
) -> RenderedScript:
    """The sbatch script of ``decision`` (see the module docstring). ``addresses`` maps a
    node to its address as Slurm knows it (NodeAddr); a node missing from it is its name.
    ``gpu_types`` maps a node to its GPU type (:func:`plan_components`).

    An allreduce job (``request.arch``) becomes one job (:mod:`.allreduce`).

    Raises :class:`InputError` for an elastic decision, an empty command, a port range
    beyond 65535, or a header value (name, ids, partition, output, node) that holds
    control characters or backslashes.
    """
    if request.is_allreduce:
        return _render_allreduce(decision, request, addresses, spec, gpu_types)
    components, tasks = plan_components(decision, request, addresses, spec.base_port, gpu_types)
    n_ps = sum(1 for t in tasks if t.role == Role.PS)
    n_workers = len(tasks) - n_ps
    _check_spec(spec, decision, [(c.node, c.address) for c in components], len(tasks))
    ps = [t.endpoint for t in tasks if t.role == Role.PS]
    workers = [t.endpoint for t in tasks if t.role == Role.WORKER]
    root = tasks[0] if n_ps else None
    text = load_template(TEMPLATE, finalize=_quote).render(
        mlsub_version=__version__,
        job_id=decision.job_id,
        decision_id=spec.decision_id,
        job_name=spec.job_name,
        comment=spec.comment,
        begin=_begin(spec),
        partition=spec.partition,
        time_limit=spec.time_limit_minutes,
        output=spec.output,
        sbatch_job=[Quoted(line) for line in spec.sbatch_job],
        sbatch_each=[Quoted(line) for line in spec.sbatch_each],
        mode=str(decision.mode),
        components=[_component_view(c) for c in components],
        n_workers=n_workers,
        n_ps=n_ps,
        ps_hosts=",".join(ps),
        worker_hosts=",".join(workers),
        tf_cluster=json.dumps({"ps": ps, "worker": workers}),
        root_uri=root.host if root else "",
        root_port=root.port if root else "",
        launcher=LAUNCHER,
        command=Quoted(shlex.join(spec.command)),
    )
    return RenderedScript(text, components, tasks)


def _render_allreduce(
    decision: Decision,
    request: JobRequest,
    addresses: Mapping[str, str],
    spec: ScriptSpec,
    gpu_types: Mapping[str, str | None] | None,
) -> RenderedScript:
    """One job for an allreduce decision (:mod:`.allreduce`); its tasks are the ranks in
    the decision's order, each with the rendezvous endpoint (first node, base port)."""
    _check_decision(decision)
    ring = allreduce.ring_job(decision, request, addresses, gpu_types)
    _check_spec(spec, decision, [(n.node, n.address) for n in ring.nodes], 1)
    values = allreduce.template_values(
        ring, request.launch_with, spec.base_port, spec.decision_id, decision.job_id
    )
    text = load_template(allreduce.ALLREDUCE_TEMPLATE, finalize=_quote).render(
        **values,
        job_name=spec.job_name,
        comment=spec.comment,
        begin=_begin(spec),
        partition=spec.partition,
        time_limit=spec.time_limit_minutes,
        output=spec.output,
        sbatch_job=[Quoted(line) for line in spec.sbatch_job],
        sbatch_each=[Quoted(line) for line in spec.sbatch_each],
        resources=Quoted(ring.resource_options()),
        command=Quoted(shlex.join(spec.command)),
    )
    first = ring.nodes[0]
    tasks = tuple(
        Task(Role.WORKER, n.first_rank + i, n.node, first.address, spec.base_port)
        for n in ring.nodes
        for i in range(n.ranks)
    )
    return RenderedScript(text, (), tasks)


def begin_time(decision: Decision, snapshot: ClusterSnapshot) -> datetime | None:
    """When to ask Slurm to start: the start slot's beginning, if after the current slot."""
    if decision.start_slot <= snapshot.now_slot:
        return None
    return snapshot.slot_start(decision.start_slot)


# --- template ----------------------------------------------------------------------------


class Quoted(str):
    """A string that is already shell-quoted (the finalize leaves it alone)."""


def _quote(value: object) -> str:
    if isinstance(value, Quoted):
        return str(value)
    return shlex.quote(str(value))


def _component_view(c: Component) -> dict[str, object]:
    return {
        "index": c.index,
        "node": c.node,
        "ntasks": c.slurm_tasks,
        "cpus_per_task": c.slurm_cpus_per_task,
        "mem": format_mem_mib(c.mem_mib),
        "gpus": c.gpus,
        "gres": c.gres,
        "steps": [
            {
                "role": str(s.role),
                "count": s.count,
                "first_rank": s.first_rank,
                "cpus_per_task": s.cpus_per_task,
                "mem": format_mem_mib(s.mem_mib),
                "gpu_options": Quoted(s.gpu_options),
            }
            for s in c.steps
        ],
    }


def _begin(spec: ScriptSpec) -> str | None:
    if spec.begin is None:
        return None
    if spec.begin.tzinfo is None:
        raise InputError(
            "the begin time must be timezone-aware", context={"begin": str(spec.begin)}
        )
    return spec.begin.astimezone(spec.begin_tz).strftime("%Y-%m-%dT%H:%M:%S")


# --- checks ------------------------------------------------------------------------------


def _check_decision(decision: Decision) -> None:
    if decision.form != Form.NON_ELASTIC or any(
        not p.same_tasks(decision.slots[0]) for p in decision.slots
    ):
        raise InputError(
            f"decision {decision.job_id!r} is elastic: Slurm runs constant task counts",
            hint="plan with --form non-elastic (the default) to submit",
            context={"job_id": decision.job_id, "form": str(decision.form)},
        )
    if not decision.placement:
        raise InputError(
            f"decision {decision.job_id!r} places no task", context={"job_id": decision.job_id}
        )


def _check_spec(
    spec: ScriptSpec, decision: Decision, nodes: Sequence[tuple[str, str]], n_tasks: int
) -> None:
    """The header values and the ports; ``nodes``: (node, address) of each node used."""
    if not spec.command or not all(isinstance(a, str) for a in spec.command):
        raise InputError(
            "the command to run is empty", hint="give the training program (and its arguments)"
        )
    header: list[tuple[str, str | None]] = [
        ("job name", spec.job_name),
        ("job id", decision.job_id),
        ("decision id", spec.decision_id),
        ("comment", spec.comment or ""),
        ("partition", spec.partition),
        ("output", spec.output),
    ]
    header += [("sbatch option", line) for line in (*spec.sbatch_job, *spec.sbatch_each)]
    header += [("node", node) for node, _ in nodes]
    header += [("node address", address) for _, address in nodes]
    for label, value in header:
        if value is not None and unsafe_in_sbatch_line(value):
            raise InputError(
                f"the {label} {value!r} cannot go into an #SBATCH line: it holds a control "
                "character (newline, tab …) or a backslash",
                hint=f"choose a {label} without them",
                context={"field": label, "value": value},
            )
    if not spec.job_name.strip():
        raise InputError("the job name is empty", hint="give the job a name (--name)")
    last = spec.base_port + n_tasks - 1
    if spec.base_port < 1024 or last > 65535:
        raise InputError(
            f"ports {spec.base_port}..{last} for {n_tasks} task(s) are out of range (1024..65535)",
            hint="choose a lower base port",
            context={"base_port": spec.base_port, "tasks": n_tasks},
        )
    if spec.time_limit_minutes is not None and spec.time_limit_minutes < 1:
        raise InputError(
            f"the time limit must be >= 1 minute, got {spec.time_limit_minutes}",
            context={"time_limit_minutes": spec.time_limit_minutes},
        )
