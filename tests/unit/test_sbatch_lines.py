"""The user's #SBATCH lines: sbatch's header rules and tokenizer, the one option table."""

from __future__ import annotations

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.job_options import merge_options
from slurm_mlsched.files.sbatch_lines import (
    BY_NAME,
    SBATCH_OPTIONS,
    Kind,
    carried_lines,
    merged_comment,
    parse_sbatch_lines,
    sort_lines,
    split_line,
)
from slurm_mlsched.model.narrowing import NodeFilter, constraint_holds

EXAMPLE = """#!/usr/bin/env python3
#SBATCH --account=ml-research
#SBATCH --qos=high
#SBATCH --mail-type=END
# mlsub: --workers 2 --ps 1 --model resnet-50 --epochs 1 --batches-per-epoch 100
"""


def lines(text: str) -> list[tuple[str, str | None]]:
    return [(p.option.name, p.value) for p in parse_sbatch_lines(text, "t.py")]


def error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_sbatch_lines(text, "t.py")
    assert info.value.exit_code == 3 and info.value.code == "sbatch-line"
    return info.value


def test_the_issue_example() -> None:
    assert lines(EXAMPLE) == [("account", "ml-research"), ("qos", "high"), ("mail-type", "END")]


def test_header_ends_at_the_first_command_comments_and_blanks_between() -> None:
    text = "#!/bin/bash\n\n# a comment\n#SBATCH -A a\n   # indented comment\n#SBATCH -q b\n"
    text += "echo hi\n#SBATCH -t 5\n"
    assert lines(text) == [("account", "a"), ("qos", "b")]


def test_indented_or_spaced_sbatch_is_a_comment_as_for_sbatch() -> None:
    assert lines("  #SBATCH --nodes=4\n# SBATCH --nodes=4\n#SBATCH -A x\n") == [("account", "x")]


def test_a_docstring_ends_the_header() -> None:
    assert lines('#!/usr/bin/env python3\n"""Doc."""\n#SBATCH --nodes=4\n') == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("  --a=1 --b 2", ["--a=1", "--b", "2"]),
        (" --comment='two words'", ["--comment=two words"]),
        (' --comment="it\'s"', ["--comment=it's"]),
        (" --comment=a\\ b", ["--comment=a b"]),
        (" --qos=high # the fast one", ["--qos=high"]),
        (" --comment='a#b'", ["--comment=a#b"]),
        (" --qos=high#x", ["--qos=high"]),
        (" ", []),
    ],
)
def test_the_tokenizer_is_sbatchs(text: str, words: list[str]) -> None:
    assert split_line(text, "t.py", 1) == words


def test_an_unmatched_quote_names_the_line() -> None:
    err = error("#!/bin/sh\n#SBATCH --comment='oops\n")
    assert err.message.startswith("t.py:2:") and "unmatched" in err.message


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("#SBATCH --account=ml", ("account", "ml")),
        ("#SBATCH --account ml", ("account", "ml")),
        ("#SBATCH -A ml", ("account", "ml")),
        ("#SBATCH -Aml", ("account", "ml")),
        ("#SBATCH -q high", ("qos", "high")),
        ("#SBATCH -t 1:00:00", ("time", "1:00:00")),
        ("#SBATCH -J demo", ("job-name", "demo")),
        ("#SBATCH -o out-%j.log", ("output", "out-%j.log")),
        ("#SBATCH -p gpu", ("partition", "gpu")),
        ("#SBATCH --accou=ml", ("account", "ml")),  # a unique abbreviation, as getopt
        ("#SBATCH --requeue", ("requeue", None)),
        ("#SBATCH --exclusive", ("exclusive", None)),
        ("#SBATCH --exclusive=user", ("exclusive", "user")),
    ],
)
def test_option_forms(line: str, expected: tuple[str, str | None]) -> None:
    assert lines(line + "\n") == [expected]


@pytest.mark.parametrize(
    ("line", "option"),
    [
        ("#SBATCH --nodes=4", "nodes"),
        ("#SBATCH -N 4", "nodes"),
        ("#SBATCH -n 8", "ntasks"),
        ("#SBATCH --ntasks-per-node=2", "ntasks-per-node"),
        ("#SBATCH --array=0-3", "array"),
        ("#SBATCH --gpus=2", "gpus"),
        ("#SBATCH --hold", "hold"),
        ("#SBATCH --wrap=true", "wrap"),
    ],
)
def test_refused_options_name_file_line_option_and_what_mlsub_decides(
    line: str, option: str
) -> None:
    err = error(f"#!/bin/bash\n# hi\n{line}\n")
    assert err.message.startswith("t.py:3: #SBATCH ")
    assert err.context == {"file": "t.py", "line": 3, "option": option}
    assert BY_NAME[option].why in err.message


def test_hetjob_separators_are_refused() -> None:
    err = error("#SBATCH -A x\n#SBATCH hetjob\n")
    assert err.message.startswith("t.py:2:") and "components" in err.message


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("#SBATCH --frobnicate=1", "unknown sbatch option --frobnicate"),
        ("#SBATCH -Z", "unknown sbatch option '-Z'"),
        ("#SBATCH --mem", "needs a value"),
        ("#SBATCH --requeue=yes", "takes no value"),
        ("#SBATCH --n=1", "ambiguous"),
        ("#SBATCH account=x", "is not an option"),
        ("#SBATCH--account=x", "is not an #SBATCH line"),
        ("#SBATCH --comment=a\\\\b", "backslash"),
    ],
)
def test_unknown_or_malformed_lines(line: str, words: str) -> None:
    err = error(line + "\n")
    assert err.message.startswith("t.py:1:") and words in err.message


def test_sorting_job_options_carried_and_narrowing() -> None:
    text = (
        "#SBATCH -J demo -t 90 -p gpu -o o.log\n#SBATCH -A ml --comment='run 7'\n"
        "#SBATCH -x node[3-4] --nodelist=node1,node2,node3 -C 'ib&v100' --mem=32G -c 8\n"
        "#SBATCH --gres=gpu:2\n"
    )
    header = sort_lines(parse_sbatch_lines(text, "t.py"), "t.py")
    assert header.job_values == {
        "name": "demo",
        "time_limit": "90",
        "partition": "gpu",
        "output": "o.log",
    }
    assert [p.rendered for p in header.carried] == ["--account=ml", "--comment='run 7'"]
    assert header.narrowing == NodeFilter(
        nodelist=frozenset({"node1", "node2", "node3"}),
        exclude=frozenset({"node3", "node4"}),
        constraint="ib&v100",
        min_mem_mib=32 * 1024.0,
        min_cpus=8,
        min_gpus=2,
    )


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("#SBATCH --gres=gpu:2:v100", "is not gpu:TYPE:N"),
        ("#SBATCH --gres=gpu:v100:2,gpu:p100:1", "only one GPU request"),
        ("#SBATCH --gres=nic:1", "only one GPU request"),
        ("#SBATCH --constraint='[a*2]'", "only plain features"),
        ("#SBATCH --constraint='a|b&c'", "mixes |"),
        ("#SBATCH --mem=0", "--mem=0"),
        ("#SBATCH -c 0", "whole number"),
        ("#SBATCH -w 'node[1-'", "host list"),
    ],
)
def test_narrowing_values_are_checked(line: str, words: str) -> None:
    with pytest.raises(InputError) as info:
        sort_lines(parse_sbatch_lines(line + "\n", "t.py"), "t.py")
    assert info.value.message.startswith("t.py:1:") and words in info.value.message


def test_filter_reasons() -> None:
    f = NodeFilter(nodelist=frozenset({"a", "b"}), exclude=frozenset({"b"}), min_cpus=8)
    assert f.reason("c", cpus=8, mem_mib=1, gpus=0) == "not in the job's --nodelist"
    assert f.reason("b", cpus=8, mem_mib=1, gpus=0) == "in the job's --exclude"
    assert "fewer CPUs" in (f.reason("a", cpus=4, mem_mib=1, gpus=0) or "")
    assert f.reason("a", cpus=8, mem_mib=1, gpus=0) is None
    assert NodeFilter.from_json(f.to_json()) == f
    assert constraint_holds("a&b", ["a", "b"]) and not constraint_holds("a&b", ["a"])
    assert constraint_holds("a|b", ["b"]) and constraint_holds("a,b", ["b", "a"])


def test_precedence_command_line_over_header_over_sbatch_over_config(tmp_path: object) -> None:
    header = sort_lines(
        parse_sbatch_lines("#SBATCH -A from-sbatch -q q1 -t 10 -J sb --mail-type=END\n", "t"),
        "t",
    )
    opts = merge_options(
        ["--sbatch", "--qos=q2", "--time", "20"],
        {"sbatch": "--mail-type=FAIL"},
        sbatch_header=header,
        config_defaults={"sbatch": "--account=cfg --wckey=w", "time_limit": "5", "name": "c"},
    )
    assert opts.sbatch == ("--wckey=w", "--account=from-sbatch", "--qos=q2", "--mail-type=FAIL")
    assert opts.time_limit == 20 and opts.name == "sb"


def test_a_typed_gres_names_the_gpu_type_below_the_command_line() -> None:
    header = sort_lines(parse_sbatch_lines("#SBATCH --gres=gpu:v100:2\n", "t"), "t")
    assert header.job_values == {"gpu_type": "v100"}
    assert header.narrowing == NodeFilter(min_gpus=2)
    assert merge_options([], {}, sbatch_header=header).gpu_type == frozenset({"v100"})
    # `# mlsub:` (and the command line) win over the #SBATCH line, as for every option
    mine = merge_options([], {"gpu_type": "a100,h100"}, sbatch_header=header)
    assert mine.gpu_type == frozenset({"a100", "h100"})
    typed = sort_lines(parse_sbatch_lines("#SBATCH --gres=gpu:t4\n", "t"), "t")
    assert typed.job_values == {"gpu_type": "t4"} and typed.narrowing == NodeFilter(min_gpus=1)


def test_sbatch_option_takes_carried_options_only() -> None:
    for value, words in [
        ("--nodes=2", "refused"),
        ("--exclude=node1", "write it as an #SBATCH line"),
        ("--time=10", "use mlsub's own option --time"),
        ("--comment=mlsched:decision=1:0123456789ab", "decision tag"),
    ]:
        with pytest.raises(InputError) as info:
            merge_options([], {"sbatch": value})
        assert words in info.value.message


def test_carried_lines_split_for_the_renderer() -> None:
    out = carried_lines(("--account=ml", "--comment='run 7'", "--exclusive", "--qos=high"))
    assert out.job_wide == ("--account=ml", "--qos=high")
    assert out.per_component == ("--exclusive",)
    assert out.comment == "run 7"
    assert merged_comment("run 7", "mlsched:decision=1:0123456789ab") == (
        "run 7;mlsched:decision=1:0123456789ab"
    )
    assert merged_comment(None, None) is None


def test_every_option_has_a_class_and_a_reason() -> None:
    assert {o.kind for o in SBATCH_OPTIONS} == set(Kind)
    assert all(o.why for o in SBATCH_OPTIONS)
    shorts = [o.short for o in SBATCH_OPTIONS if o.short]
    assert len(shorts) == len(set(shorts))


def test_the_live_snapshot_keeps_only_the_nodes_the_lines_allow() -> None:
    from datetime import UTC, datetime

    from slurm_mlsched.services.cluster_state import build_cluster_state
    from slurm_mlsched.slurm.nodes import NodeState
    from slurm_mlsched.slurm.parse import NodeRecord

    def node(name: str, features: tuple[str, ...], mem: float = 65536.0) -> NodeRecord:
        return NodeRecord(name, "IDLE", frozenset(), 8, mem, 4, features=features)

    state = NodeState(
        (node("a", ("ib", "v100")), node("b", ("ib",)), node("c", ("ib", "v100"), 8192.0)),
        (),
        "test",
    )
    filt = NodeFilter(constraint="v100&ib", min_mem_mib=16384.0)
    grid = build_cluster_state(state, now=datetime(2026, 3, 1, tzinfo=UTC), narrowing=filt)
    assert [m.name for m in grid.snapshot.machines] == ["a"]
    reasons = {n.record.name: n.reason for n in grid.nodes}
    assert reasons["b"] == "its features do not satisfy --constraint=v100&ib"
    assert reasons["c"] == "less memory than the job's --mem (16384 MiB)"
