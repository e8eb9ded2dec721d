"""The live path with an ``--arch allreduce`` job (issue 31): the stand-ins of
test_submit_service.py (captured node state, a recording submitter, the real store)."""

from __future__ import annotations

from slurm_mlsched.model import Launcher, Role
from slurm_mlsched.sbatch.tag import find_tags
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.storage import SqlDecisionStore
from tests.unit.test_submit_service import JOB, FakeSource, FakeSubmitter, opts, wiring
from tests.unit.test_submit_service import store as store  # the fixture

# 4-CPU ranks on nodes of 8 CPUs: at most two a node, so the job spans nodes (no PS)
WIDE = {"arch": "allreduce", "workers": 8, "cpus_per_worker": 4, "launcher": "srun"}


def test_an_allreduce_job_is_submitted_as_one_job_with_its_launcher(
    store: SqlDecisionStore,
) -> None:
    sub = FakeSubmitter()
    out = submit_job(wiring(store, FakeSource(), sub), opts(**WIDE), JOB)
    assert out.record is not None
    rec = store.get(out.record.decision_id)
    assert rec.request.is_allreduce and rec.request.launcher is Launcher.SRUN
    rows = rec.decision.placement
    assert {r.role for r in rows} == {Role.WORKER} and {r.count for r in rows} == {2}
    nodes, ranks = ",".join(r.node for r in rows), sum(r.count for r in rows)
    script = sub.scripts[0]
    (line,) = [ln for ln in script.splitlines() if ln.startswith("#SBATCH --nodelist")]
    assert "#SBATCH hetjob" not in script
    assert line.startswith(
        f"#SBATCH --nodelist={nodes} --nodes={len(rows)} --ntasks={ranks} --ntasks-per-node=2 "
        "--cpus-per-task=4 --mem=2G --gres=gpu:2 --comment="
    )
    assert find_tags(line) == (out.tag,)
    assert 'export RANK="$SLURM_PROCID"' in script and "torchrun" not in script
    assert "python3 /home/alice/train.py --lr 0.1" in script
