"""The sbatch renderer: golden files, the layout, and hostile input.

The rendered scripts are also run here with ``bash`` and a stand-in ``srun`` (first on
PATH) that starts each step's tasks with ``SLURM_PROCID`` set, so the launcher, the
environment and the quoting are checked for real without Slurm. tests/integration/ runs
them on the real cluster.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import stat
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jinja2
import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    Form,
    JobRequest,
    Mode,
    Resources,
    Role,
    SlotPlan,
)
from slurm_mlsched.sbatch import ScriptSpec, begin_time, render_sbatch, template_dir
from slurm_mlsched.sbatch.render import LAUNCHER, plan_components
from slurm_mlsched.sbatch.templates import TEMPLATE, load_template
from tests.conftest import make_cluster, make_job
from tests.task_probe import PROBE, probe_results

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "sbatch"
UPDATE = os.environ.get("MLSUB_UPDATE_GOLDEN") == "1"
ADDRESSES = {"node1": "10.0.0.1", "node2": "10.0.0.2", "node3": "10.0.0.3"}
HOSTILE = [
    "plain",
    "with space",
    "it's",
    'double "quoted"',
    "$(touch MARKER)",
    "`touch MARKER`",
    "$HOME ${PATH}",
    "line\nbreak",
    "back\\slash",
    "; touch MARKER; #",
    "*",
    "",
    "-n",
]


def decision(
    workers: tuple[tuple[str, int], ...],
    ps: tuple[tuple[str, int], ...],
    *,
    mode: Mode = Mode.DISTRIBUTED,
    form: Form = Form.NON_ELASTIC,
    start: int = 0,
) -> Decision:
    plan = SlotPlan(start, mode, workers=workers, ps=ps, length=4)
    return Decision(
        job_id="resnet-1",
        policy="hand",
        form=form,
        seed=0,
        slots=(plan,),
        start_slot=start,
        end_slot=start + 3,
        work_covered=1.0,
    )


JOB = make_job("resnet-1", workers=4, worker=Resources(1, 2, 4096), ps=Resources(0, 1, 2048))
UNIFORM = make_job("resnet-1", workers=4, worker=Resources(1, 2, 4096), ps=Resources(0, 2, 1024))
COLOCATED = decision((("node1", 3),), (("node1", 1),), mode=Mode.COLOCATED)
DISTRIBUTED = decision((("node2", 2), ("node3", 2)), (("node2", 1), ("node3", 1)))


def spec(**kw: Any) -> ScriptSpec:
    base: dict[str, Any] = {
        "command": ("python3", "train.py", "--epochs", "2"),
        "job_name": "resnet50",
        "decision_id": "17",
        "comment": "mlsched:decision=17:0123456789ab",
    }
    return ScriptSpec(**{**base, **kw})


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}: run with MLSUB_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed (MLSUB_UPDATE_GOLDEN=1)"


# --- golden files -----------------------------------------------------------------------


def test_golden_colocated() -> None:
    check_golden("colocated.sh", render_sbatch(COLOCATED, JOB, ADDRESSES, spec()).text)


def test_golden_distributed_with_every_header_option() -> None:
    script = render_sbatch(
        DISTRIBUTED,
        UNIFORM,
        ADDRESSES,
        spec(
            job_name="resnet50 run #2",
            partition="gpu",
            begin=datetime(2026, 3, 1, 10, 30, tzinfo=UTC),
            time_limit_minutes=90,
            output="/tmp/logs/%x-%j.out",
            base_port=31000,
        ),
    )
    check_golden("distributed.sh", script.text)


# --- layout -----------------------------------------------------------------------------


def sbatch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#SBATCH")]


def test_one_component_per_node_with_the_sums_of_its_tasks() -> None:
    script = render_sbatch(DISTRIBUTED, UNIFORM, ADDRESSES, spec(comment=None))
    assert sbatch_lines(script.text)[1:] == [
        "#SBATCH --nodelist=node2 --nodes=1 --ntasks=3 --cpus-per-task=2 --mem=9G --gres=gpu:2",
        "#SBATCH hetjob",
        "#SBATCH --nodelist=node3 --nodes=1 --ntasks=3 --cpus-per-task=2 --mem=9G --gres=gpu:2",
    ]
    steps = [line for line in script.text.splitlines() if line.startswith("srun ")]
    assert steps == [
        "srun --het-group=0 --ntasks=1 --exact --cpus-per-task=2 --mem=1G --gres=none \\",
        "srun --het-group=0 --ntasks=2 --exact --cpus-per-task=2 --mem=8G --gres=gpu:2 "
        "--gpus-per-task=1 \\",
        "srun --het-group=1 --ntasks=1 --exact --cpus-per-task=2 --mem=1G --gres=none \\",
        "srun --het-group=1 --ntasks=2 --exact --cpus-per-task=2 --mem=8G --gres=gpu:2 "
        "--gpus-per-task=1 \\",
    ]


def test_mixed_cpu_counts_on_a_node_ask_for_the_node_total_in_one_task() -> None:
    text = render_sbatch(COLOCATED, JOB, ADDRESSES, spec(comment=None)).text  # PS 1, workers 2
    assert sbatch_lines(text)[1:] == [
        "#SBATCH --nodelist=node1 --nodes=1 --ntasks=1 --cpus-per-task=7 --mem=14G --gres=gpu:3"
    ]
    assert "#SBATCH hetjob" not in text
    assert "srun --het-group" not in text  # srun refuses it in a job that is no hetjob


def test_ranks_hosts_and_ports() -> None:
    script = render_sbatch(DISTRIBUTED, UNIFORM, ADDRESSES, spec(base_port=40000))
    assert [(t.role, t.rank, t.node, t.endpoint) for t in script.tasks] == [
        (Role.PS, 0, "node2", "10.0.0.2:40000"),
        (Role.PS, 1, "node3", "10.0.0.3:40001"),
        (Role.WORKER, 0, "node2", "10.0.0.2:40002"),
        (Role.WORKER, 1, "node2", "10.0.0.2:40003"),
        (Role.WORKER, 2, "node3", "10.0.0.3:40004"),
        (Role.WORKER, 3, "node3", "10.0.0.3:40005"),
    ]
    text = script.text
    assert "export MLSCHED_PS_HOSTS=10.0.0.2:40000,10.0.0.3:40001\n" in text
    assert "export DMLC_PS_ROOT_URI=10.0.0.2\nexport DMLC_PS_ROOT_PORT=40000\n" in text
    assert "export DMLC_NUM_WORKER=4\nexport DMLC_NUM_SERVER=2\n" in text


def test_same_host_tasks_never_share_a_port() -> None:
    _, tasks = plan_components(DISTRIBUTED, UNIFORM, {})  # no addresses: node names
    endpoints = [t.endpoint for t in tasks]
    assert len(set(endpoints)) == len(endpoints)
    assert {t.host for t in tasks} == {"node2", "node3"}


def test_begin_is_written_in_the_given_zone() -> None:
    at = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    utc = render_sbatch(COLOCATED, JOB, {}, spec(begin=at)).text
    assert "#SBATCH --begin=2026-11-29T18:00:00\n" in utc
    tokyo = render_sbatch(COLOCATED, JOB, {}, spec(begin=at, begin_tz=ZoneInfo("Asia/Tokyo")))
    assert "#SBATCH --begin=2026-11-30T03:00:00\n" in tokyo.text
    assert "--begin" not in render_sbatch(COLOCATED, JOB, {}, spec()).text
    with pytest.raises(InputError, match="timezone-aware"):
        render_sbatch(COLOCATED, JOB, {}, spec(begin=datetime(2026, 11, 29, 18)))


def test_begin_time_only_when_the_decision_starts_later() -> None:
    snap = ClusterSnapshot(
        make_cluster(2).machines,
        slot_seconds=600,
        epoch=datetime(2026, 1, 1, tzinfo=UTC),
        now_slot=3,
    )
    assert begin_time(decision((("node1", 1),), (("node1", 1),), start=3), snap) is None
    later = decision((("node1", 1),), (("node1", 1),), start=5)
    assert begin_time(later, snap) == datetime(2026, 1, 1, 0, 50, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"command": ()}, "command to run is empty"),
        ({"job_name": "  "}, "job name is empty"),
        ({"job_name": "a\nb"}, "job name 'a\\\\nb' cannot go into an #SBATCH line"),
        ({"job_name": "a\\b"}, "backslash"),
        ({"partition": "gpu\n#SBATCH --x"}, "partition"),
        ({"output": "/tmp/\tx"}, "output"),
        ({"decision_id": "1\r"}, "decision id"),
        ({"base_port": 65534}, "out of range"),
        ({"base_port": 80}, "out of range"),
        ({"time_limit_minutes": 0}, "time limit"),
    ],
)
def test_bad_specs_are_input_errors(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        render_sbatch(COLOCATED, JOB, ADDRESSES, spec(**kw))


def test_hostile_node_names_from_the_cluster_are_refused() -> None:
    with pytest.raises(InputError, match="node address"):
        render_sbatch(COLOCATED, JOB, {"node1": "10.0.0.1\nrm -rf /"}, spec())


def test_elastic_decisions_cannot_be_scripted() -> None:
    elastic = decision((("node1", 1),), (("node1", 1),), form=Form.ELASTIC)
    with pytest.raises(InputError, match="elastic") as info:
        render_sbatch(elastic, JOB, {}, spec())
    assert "--form non-elastic" in info.value.hint
    changing = Decision(
        job_id="x",
        policy="hand",
        form=Form.NON_ELASTIC,
        seed=0,
        slots=(
            SlotPlan(0, Mode.DISTRIBUTED, (("node1", 1),), (("node1", 1),)),
            SlotPlan(1, Mode.DISTRIBUTED, (("node1", 2),), (("node1", 1),)),
        ),
        start_slot=0,
        end_slot=1,
        work_covered=1.0,
    )
    with pytest.raises(InputError, match="elastic"):
        render_sbatch(changing, JOB, {}, spec())


def test_template_fails_on_an_undefined_variable() -> None:
    assert (template_dir() / TEMPLATE).is_file()
    with pytest.raises(jinja2.UndefinedError):
        load_template(TEMPLATE, finalize=str).render(job_name="x")


# --- hostile input, run for real with bash and a stand-in srun ---------------------------

FAKE_SRUN = """#!/bin/bash
# stand-in srun: reads the options mlsub writes, runs COMMAND --ntasks times
n=1 group=
while [ $# -gt 0 ]; do
  case "$1" in
    --ntasks=*) n=${1#--ntasks=} ;;
    --het-group=*) group=${1#--het-group=} ;;
    --*) ;;
    *) break ;;
  esac
  shift
done
for ((i = 0; i < n; i++)); do
  SLURM_PROCID=$i SLURMD_NODENAME=group$group "$@" || exit $?
done
"""


def run_script(text: str, tmp_path: Path) -> list[dict[str, Any]]:
    """``bash -n``, then run ``text`` in ``tmp_path`` with the stand-in srun; what the
    tasks wrote to ``tmp_path/tasks`` (the probe's first argument)."""
    script = tmp_path / "job.sh"
    script.write_text(text, encoding="utf-8")
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "srun").chmod(stat.S_IRWXU)
    out = tmp_path / "tasks"
    out.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PROBE_DIR": str(out),
    }
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return probe_results(out)


def python() -> str:
    exe = shutil.which("python3")
    assert exe
    return exe


def test_every_task_gets_its_role_rank_and_the_arguments_verbatim(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    command = (python(), "-c", PROBE, str(tmp_path / "tasks"), *HOSTILE)
    script = render_sbatch(DISTRIBUTED, UNIFORM, {}, spec(command=command, base_port=30000))
    tasks = run_script(script.text, tmp_path)
    assert not (tmp_path / "MARKER").exists()
    assert len(tasks) == 6
    seen = sorted((t["env"]["MLSCHED_ROLE"], int(t["env"]["MLSCHED_RANK"])) for t in tasks)
    assert seen == [("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1), ("worker", 2),
                    ("worker", 3)]  # fmt: skip
    for task in tasks:
        env, role, rank = task["env"], task["env"]["MLSCHED_ROLE"], int(task["env"]["MLSCHED_RANK"])
        assert task["argv"] == HOSTILE
        assert env["DMLC_ROLE"] == ("server" if role == "ps" else "worker")
        tf = json.loads(env["TF_CONFIG"])
        assert tf["task"] == {"type": role, "index": rank}
        assert tf["cluster"]["ps"] == env["MLSCHED_PS_HOSTS"].split(",")
        assert tf["cluster"]["worker"] == env["MLSCHED_WORKER_HOSTS"].split(",")
        assert env["DMLC_NUM_WORKER"] == "4" and env["DMLC_NUM_SERVER"] == "2"
        assert env["DMLC_PS_ROOT_URI"] == "node2" and env["DMLC_PS_ROOT_PORT"] == "30000"
        assert env["MLSCHED_DECISION_ID"] == "17" and env["MLSCHED_JOB_ID"] == "resnet-1"
        expected_node = {"node2": "group0", "node3": "group1"}
        placed = next(t for t in script.tasks if t.role == role and t.rank == rank)
        assert task["node"] == expected_node[placed.node]


@pytest.mark.parametrize("name", [n for n in HOSTILE if n.strip() and "\n" not in n
                                  and "\\" not in n])  # fmt: skip
def test_hostile_job_names_are_quoted_not_run(name: str, tmp_path: Path) -> None:
    command = ("sh", "-c", 'touch "$PROBE_DIR/$MLSCHED_ROLE-$MLSCHED_RANK.ran"')
    script = render_sbatch(COLOCATED, JOB, {}, spec(job_name=name, command=command))
    lines = [x for x in script.text.splitlines() if x.startswith("#SBATCH --job-name=")]
    assert len(lines) == 1
    run_script(script.text, tmp_path)
    assert len(list((tmp_path / "tasks").glob("*.ran"))) == 4  # all 4 tasks ran
    assert not (tmp_path / "MARKER").exists()


def test_launcher_alone_passes_arguments_verbatim(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "SLURM_PROCID": "2",
        "MLSCHED_TF_CLUSTER": '{"ps": ["h:1"], "worker": ["h:2"]}',
    }
    done = subprocess.run(
        [
            "bash",
            "-c",
            LAUNCHER,
            "mlsched-task",
            "worker",
            "5",
            python(),
            "-c",
            PROBE,
            str(tmp_path),
            "-n",
            *HOSTILE,
        ],
        env={**env, "SLURMD_NODENAME": "n"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    (task,) = probe_results(tmp_path)
    assert task["argv"] == ["-n", *HOSTILE]
    assert task["env"]["MLSCHED_RANK"] == "7" and task["env"]["DMLC_ROLE"] == "worker"
    assert json.loads(task["env"]["TF_CONFIG"]) == {
        "cluster": {"ps": ["h:1"], "worker": ["h:2"]},
        "task": {"type": "worker", "index": 7},
    }
    assert not (tmp_path / "MARKER").exists()


def test_script_exits_non_zero_when_a_step_fails(tmp_path: Path) -> None:
    command = ("bash", "-c", '[ "$MLSCHED_ROLE" = ps ] || exit 3')
    script = tmp_path / "job.sh"
    script.write_text(render_sbatch(COLOCATED, JOB, {}, spec(command=command)).text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "srun").chmod(stat.S_IRWXU)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, timeout=30)
    assert done.returncode == 3


def test_request_type_is_what_the_renderer_reads() -> None:
    # per-task resources come from the request: PS and worker demands
    assert isinstance(JOB, JobRequest)
    components, _ = plan_components(COLOCATED, JOB, {})
    (node1,) = components
    assert [(s.role, s.count, s.cpus_per_task, s.mem_mib, s.gpus) for s in node1.steps] == [
        (Role.PS, 1, 1, 2048, 0),
        (Role.WORKER, 3, 2, 12288, 3),
    ]
    assert (node1.cpus, node1.mem_mib, node1.gpus) == (7, 14336, 3)


def test_port_bases_of_nearby_decisions_never_overlap() -> None:
    from slurm_mlsched.sbatch.render import PORT_HIGH, PORT_LOW, port_base

    ranges = [(port_base(i, 10), port_base(i, 10) + 10) for i in range(1, 150)]
    assert all(lo >= PORT_LOW and hi <= PORT_HIGH for lo, hi in ranges)
    starts = sorted(lo for lo, _ in ranges)
    assert all(b - a >= 64 for a, b in itertools.pairwise(starts))
    big = port_base(7, 200)  # a 200-task job takes a 256-port block
    assert (big - PORT_LOW) % 256 == 0 and big + 200 <= PORT_HIGH
