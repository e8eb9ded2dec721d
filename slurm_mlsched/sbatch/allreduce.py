r"""Render an allreduce decision (issue 31) into ONE sbatch job (pure: no I/O but reading the
template, no clock). :func:`~.render.render_sbatch` calls it for an ``--arch allreduce`` job.

Layout (``sbatch_templates/allreduce.sh.j2``):

* one job (no hetjob: an all-reduce job has no roles to keep apart) on exactly the nodes
  the decision chose: ``#SBATCH --nodelist=A,B --nodes=K --ntasks=N --cpus-per-task=c``
  and, per rank, the worker's memory and GPUs:

  - **equal** ranks per node (g on every node): ``--ntasks-per-node=g --mem=g·m
    --gres=gpu:g·G``, exact: Slurm gives every node what the decision booked there;
  - **unequal** ranks per node: ``--cpus-per-task=c --mem-per-cpu=⌈m/c⌉
    --gpus-per-task=G`` (``TYPE:G`` when the job names GPU types and the nodes share one),
    and no ``--ntasks-per-node``. A job that is not heterogeneous has no per-node request
    of its own (``--ntasks-per-node``, ``--mem``, ``--gres`` apply to every node alike), so
    Slurm lays the N ranks out itself, at least one on each of the K nodes and as many as a
    node's free room holds: the decision's layout is one such layout, so the job fits
    wherever the decision does, but Slurm may choose another. (``--ntasks-per-node=max g_j``
    would not fit: on the lab's Slurm 22.05 it makes every node need max g_j ranks' room, so
    a 3 + 4 job whose node of 3 has 3 free GPUs pended for ``Resources`` until that node had
    4, and Slurm's ``SLURM_TASKS_PER_NODE`` then said ``4(x2)`` for 7 ranks.) The launch
    therefore follows the layout Slurm made (``SLURM_TASKS_PER_NODE``), and the script says
    so on stderr when it differs from the decision's (``MLSCHED_LAYOUT``).
    docs/formulation.md §18: the ring's time is the same for every layout of the same n and
    k, so placement loses nothing by preferring equal counts, which are exact;

* the ranks start in one job step over the allocation, never one per node: one step sees
  every node's share of the allocation as Slurm made it, so no per-node count has to be
  pasted into a command line:

  - ``--launcher torchrun`` (default): ``srun --nodes=K --ntasks=K --ntasks-per-node=1``
    runs one torchrun per node, ``torchrun --nnodes=K --nproc-per-node=<that node's ranks>
    --rdzv-backend=c10d --rdzv-endpoint=<first node's address>:<port> --rdzv-id=<Slurm job
    id> --no-python PROGRAM ARGS…`` (``--no-python``: the command is run as given, so
    ``--interpreter`` keeps working). Which torchrun: when the command starts with a Python
    interpreter (``--interpreter``, or ``python3`` for a ``*.py`` script) that has torch,
    that interpreter's own, ``PYTHON -m torch.distributed.run`` (the ranks run with the
    torch they were written for, whatever the node's ``PATH``); else ``torchrun`` on the
    node's ``PATH`` (sbatch propagates the submitting shell's). Ranks may differ per node:
    the c10d rendezvous numbers the ranks from each node's local world size. Each node's
    torchrun sees all the GPUs the job holds on its node, and its ranks with it. With
    unequal counts the script unsets the job's ``SLURM_GPUS_PER_TASK`` and the step asks
    the job's total, untyped: ``--gpus=N·G``; the allocation holds no more, so Slurm gives
    each node's task all it holds there, whatever layout it made. Inherited, the per-rank
    request gave each node's torchrun ONE GPU (Slurm 22.05, typed or not: 3 + 4 ranks ran
    with ``CUDA_VISIBLE_DEVICES=1`` and ``0``), and ``--gpus`` does not override it; a
    step per node with ``--gres=gpu:COUNT`` was refused for the node of 4 ("Invalid
    generic resource (gres) specification") though the job held 4 GPUs there;
  - ``--launcher srun``: ``srun --ntasks=N`` runs every rank, exporting what PyTorch's
    ``env://`` initialization reads: ``MASTER_ADDR`` (the first node's address),
    ``MASTER_PORT``, ``WORLD_SIZE`` (= ``SLURM_NTASKS``), ``RANK`` (= ``SLURM_PROCID``),
    ``LOCAL_RANK`` (= ``SLURM_LOCALID``), ``LOCAL_WORLD_SIZE`` (the node's ranks). Every
    rank sees all of its node's GPUs, as under torchrun (select ``cuda:LOCAL_RANK``). With
    unequal counts the step asks no GPUs of its own: the script unsets the job's
    ``SLURM_GPUS_PER_TASK`` before ``srun``, so the step draws all the allocation holds on
    each node, as with equal counts (the allocation asks the type, the step untyped, as in
    :mod:`.render`). Inherited, it bound each rank to one GPU, and the typed
    ``TYPE:G`` of a job that names GPU types gave the ranks no GPUs at all on the lab's
    Slurm 22.05 (no ``CUDA_VISIBLE_DEVICES``; tests/integration/test_gpu_types_live.py);

* the program and its arguments are passed verbatim to a fixed launcher, ``bash -c
  "$mlsched_launcher" NAME PROGRAM ARGS…``: no user value is pasted into shell code.

Quoting as in :mod:`.render`: the template's environment shell-quotes every ``{{ value }}``;
header values (name, ids, partition, output, nodes) must be free of control characters and
backslashes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .. import __version__
from ..errors import InputError
from ..model import Decision, JobRequest, Launcher, Role
from ..model.eligibility import GPU_TYPE_NAME
from ..model.units import format_mem_mib

#: The allreduce job's template (``sbatch_templates/``).
ALLREDUCE_TEMPLATE = "allreduce.sh.j2"

#: One torchrun per node: ``bash -c "$mlsched_launcher" mlsched-node PROGRAM ARGS…``.
TORCHRUN_LAUNCHER = """\
IFS=, read -r -a counts <<< "$MLSCHED_RANKS_PER_NODE"
mlsched_torchrun=(torchrun)
case "${1##*/}" in
  python*)
    if "$1" -c 'import importlib.util as u, sys; sys.exit(not u.find_spec("torch"))'; then
      mlsched_torchrun=("$1" -m torch.distributed.run)
    fi ;;
esac
exec "${mlsched_torchrun[@]}" --nnodes="$SLURM_JOB_NUM_NODES" \\
  --nproc-per-node="${counts[$SLURM_NODEID]}" --rdzv-backend=c10d \\
  --rdzv-endpoint="$MLSCHED_RDZV_ENDPOINT" --rdzv-id="$MLSCHED_RDZV_ID" --no-python "$@"
"""

#: One task per rank: ``bash -c "$mlsched_launcher" mlsched-rank PROGRAM ARGS…``.
SRUN_LAUNCHER = """\
IFS=, read -r -a counts <<< "$MLSCHED_RANKS_PER_NODE"
export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" WORLD_SIZE="$SLURM_NTASKS"
export LOCAL_WORLD_SIZE="${counts[$SLURM_NODEID]}" GROUP_RANK="$SLURM_NODEID"
exec "$@"
"""


@dataclass(frozen=True)
class RankNode:
    """The ranks of one node: ``ranks`` of them from ``first_rank`` (the decision's)."""

    node: str
    address: str
    ranks: int
    first_rank: int


@dataclass(frozen=True)
class RingJob:
    """What the template needs of an allreduce decision: its nodes and per-rank demand."""

    nodes: tuple[RankNode, ...]
    cpus_per_rank: int
    mem_per_rank_mib: int
    gpus_per_rank: int
    gpu_type: str | None  # one type for every node's GPUs, when the job names types

    @property
    def world_size(self) -> int:
        return sum(n.ranks for n in self.nodes)

    @property
    def equal(self) -> bool:
        return len({n.ranks for n in self.nodes}) == 1

    @property
    def max_per_node(self) -> int:
        return max(n.ranks for n in self.nodes)

    @property
    def layout(self) -> str:
        """``node1:4,node2:2``: the decision's ranks per node (``MLSCHED_LAYOUT``)."""
        return ",".join(f"{n.node}:{n.ranks}" for n in self.nodes)

    def resource_options(self) -> str:
        """The ``#SBATCH`` resources after ``--ntasks`` (module docstring)."""
        if self.equal:
            per_node = self.max_per_node
            out = f"--ntasks-per-node={per_node} --cpus-per-task={self.cpus_per_rank}"
            out += f" --mem={format_mem_mib(per_node * self.mem_per_rank_mib)}"
            if self.gpus_per_rank:
                out += f" --gres={_gres(self.gpu_type, per_node * self.gpus_per_rank)}"
            return out
        per_cpu = math.ceil(self.mem_per_rank_mib / self.cpus_per_rank)
        out = f"--cpus-per-task={self.cpus_per_rank} --mem-per-cpu={per_cpu}M"
        if self.gpus_per_rank:
            kind = f"{self.gpu_type}:" if self.gpu_type else ""
            out += f" --gpus-per-task={kind}{self.gpus_per_rank}"
        return out


def _gres(gpu_type: str | None, count: int) -> str:
    return f"gpu:{count}" if gpu_type is None else f"gpu:{gpu_type}:{count}"


def ring_job(
    decision: Decision,
    request: JobRequest,
    addresses: Mapping[str, str],
    gpu_types: Mapping[str, str | None] | None = None,
) -> RingJob:
    """The nodes and per-rank demand of an allreduce ``decision`` (placement order)."""
    if any(r.role is Role.PS for r in decision.placement):
        raise InputError(
            f"decision {decision.job_id!r} places parameter servers for an allreduce job",
            hint="the policy placed PSs for a job that has none: placement must treat "
            "--arch allreduce jobs as PS-free (a placement bug; re-planning gives the same)",
            context={"job_id": decision.job_id},
        )
    nodes, first = [], 0
    for row in decision.placement:
        nodes.append(RankNode(row.node, addresses.get(row.node) or row.node, row.count, first))
        first += row.count
    worker = request.worker
    return RingJob(
        nodes=tuple(nodes),
        cpus_per_rank=max(1, math.ceil(worker.cpu - 1e-9)),
        mem_per_rank_mib=math.ceil(worker.mem - 1e-9),
        gpus_per_rank=math.ceil(worker.gpu - 1e-9),
        gpu_type=_one_type(request, [n.node for n in nodes], gpu_types),
    )


def _one_type(
    request: JobRequest, nodes: list[str], gpu_types: Mapping[str, str | None] | None
) -> str | None:
    """The GPU type to ask Slurm for: the nodes' one type when the job names types (the
    nodelist pins the nodes in any case; a single job cannot ask for a type per node)."""
    if request.gpu_types is None or request.worker.gpu <= 0:
        return None
    kinds = {(gpu_types or {}).get(n) for n in nodes}
    named = {k for k in kinds if k is not None and GPU_TYPE_NAME.fullmatch(k)}
    if named != kinds or not named <= request.gpu_types:
        raise InputError(
            f"job {request.job_id!r} asks for GPU type(s) {', '.join(sorted(request.gpu_types))} "
            f"but its decision uses nodes {', '.join(nodes)} whose GPU types are "
            f"{', '.join(sorted(str(k) for k in kinds))}",
            hint="re-plan the job against the live node state (mlsub replan)",
            context={"nodes": nodes},
        )
    return named.pop() if len(named) == 1 else None


def template_values(
    ring: RingJob, launcher: Launcher, port: int, decision_id: str, job_id: str
) -> dict[str, object]:
    """The allreduce template's variables but the header's and the command (:mod:`.render`
    adds those, quoted its way)."""
    first = ring.nodes[0]
    return {
        "mlsub_version": __version__,
        "job_id": job_id,
        "decision_id": decision_id,
        "launcher_name": launcher.value,
        "world_size": ring.world_size,
        "n_nodes": len(ring.nodes),
        "nodelist": ",".join(n.node for n in ring.nodes),
        "equal": ring.equal,
        "per_rank_gpus": not ring.equal and ring.gpus_per_rank > 0,
        "step_gpus": ring.world_size * ring.gpus_per_rank,
        "layout": ring.layout,
        "master_addr": first.address,
        "master_port": port,
        "rdzv_endpoint": f"{first.address}:{port}",
        "cpus_per_rank": ring.cpus_per_rank,
        "launcher": TORCHRUN_LAUNCHER if launcher is Launcher.TORCHRUN else SRUN_LAUNCHER,
        "torchrun": launcher is Launcher.TORCHRUN,
    }
