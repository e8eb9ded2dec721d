"""Job options: the '# mlsub:' header, the merge (defaults < header < flags), to_request."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.job_options import (
    DEFAULT_BW_EX_MBPS,
    DEFAULT_BW_IN_MBPS,
    OPTIONS,
    JobOptions,
    merge_options,
    parse_script_header,
    read_script_header,
    to_request,
)
from slurm_mlsched.files.sbatch_lines import parse_sbatch_lines, sort_lines
from slurm_mlsched.model import Form, Resources

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_resnet.py"
BASE = ["--workers", "4", "--batches-per-epoch", "100", "--model", "resnet-50"]
OPTIONS_BY_FLAG = {flag: name for name, (flag, _) in OPTIONS.items()}


def merged(*header: str, **cli: object) -> JobOptions:
    return merge_options(list(header), cli)


def input_error(fn: object, *args: object, **kwargs: object) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)  # type: ignore[operator]
    assert info.value.exit_code == 3
    return info.value


# --- the header ----------------------------------------------------------------------------


def test_header_after_shebang_over_several_lines() -> None:
    text = (
        "#!/usr/bin/env python3\n"
        "# mlsub: --workers 8 --ps 2\n"
        "\n"
        "# an ordinary comment\n"
        "#mlsub: --name 'my job' --model=vgg-16\n"
        "import os\n"
        "# mlsub: --workers 99\n"
    )
    assert parse_script_header(text, "s.py") == [
        "--workers", "8", "--ps", "2", "--name", "my job", "--model=vgg-16",
    ]  # fmt: skip


def test_header_ends_at_the_first_code_or_docstring() -> None:
    assert parse_script_header('"""Doc."""\n# mlsub: --workers 2\n', "s.py") == []
    assert parse_script_header("x = 1\n# mlsub: --workers 2\n", "s.py") == []
    assert parse_script_header("", "s.py") == []
    assert parse_script_header("# mlsub: --workers 2", "s.py") == ["--workers", "2"]


def test_shebang_is_only_skipped_on_line_one() -> None:
    assert parse_script_header("\n#!/bin/sh\n# mlsub: --seed 1\n", "s.py") == ["--seed", "1"]


def test_unbalanced_quote_names_the_line() -> None:
    err = input_error(parse_script_header, "#!/bin/sh\n\n# mlsub: --name 'oops\n", "s.py")
    assert "s.py line 3" in err.message


def test_example_script_header() -> None:
    opts = merge_options(read_script_header(EXAMPLE), {})
    assert opts.workers == 6 and opts.ps == "auto" and opts.model == "resnet-50"
    assert opts.mem_per_worker == 8192.0 and opts.mem_per_ps == 4096.0
    assert opts.workload == 2 * 2000


def test_missing_script() -> None:
    assert "cannot read job script" in input_error(read_script_header, "/nonexistent.py").message


# --- the merge -----------------------------------------------------------------------------


def test_defaults() -> None:
    opts = merged()
    assert opts.workers is None and opts.batches_per_epoch is None
    assert (opts.gpus_per_worker, opts.cpus_per_worker, opts.mem_per_worker) == (1, 4, 16384.0)
    assert (opts.cpus_per_ps, opts.mem_per_ps) == (2, 8192.0)
    assert (opts.ps, opts.epochs, opts.policy, opts.seed) == ("auto", 1, "yu-rr", 0)
    assert opts.form is Form.NON_ELASTIC


def test_precedence_defaults_header_flags() -> None:
    opts = merged("--workers", "8", "--seed", "3", "--epochs", "5", workers=2, seed=None)
    assert opts.workers == 2  # flag beats header
    assert opts.seed == 3  # header beats default (None = flag not given)
    assert opts.epochs == 5
    assert opts.cpus_per_ps == 2  # default


def test_last_header_value_wins_and_equals_form() -> None:
    assert merged("--workers=3", "--workers", "5").workers == 5


def test_values_are_converted() -> None:
    opts = merged(
        "--ps", "2", "--mem-per-worker", "8G", "--mem-per-ps", "512", "--form", "elastic",
        "--step-time", "0.5", "--model-size", "10",
    )  # fmt: skip
    assert opts.ps == 2 and opts.mem_per_worker == 8192.0 and opts.mem_per_ps == 512.0
    assert opts.form is Form.ELASTIC and opts.step_time == 0.5 and opts.model_size == 10.0
    assert merged(ps="AUTO").ps == "auto"
    assert merged(form=Form.ELASTIC).form is Form.ELASTIC


def test_every_option_has_a_flag() -> None:
    assert {flag for flag, _ in OPTIONS.values()} >= {"--workers", "--ps", "--model"}


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        ("--workers", "0", "from 1 to 10,000"),
        ("--workers", "-2", "from 1 to 10,000"),
        ("--workers", "many", "whole number"),
        ("--gpus-per-worker", "-1", "from 0 to 4,096"),
        ("--cpus-per-worker", "0", "from 1 to 4,096"),
        ("--cpus-per-ps", "-3", "from 1 to 4,096"),
        ("--epochs", "0", "from 1 to 1,000,000,000"),
        ("--batches-per-epoch", "1.5", "whole number"),
        ("--ps", "0", "'auto' or a whole number"),
        ("--ps", "some", "'auto' or a whole number"),
        ("--mem-per-worker", "8X", "memory size"),
        ("--mem-per-ps", "-4G", "memory size"),
        ("--step-time", "0", "> 0"),
        ("--model-size", "big", "number"),
        ("--bw-ex", "-1", "> 0"),
        ("--seed", "-1", "from 0 to"),
        ("--form", "stretchy", "placement form"),
        ("--name", "  ", "non-empty"),
        # upper bounds (issue 15: these were OverflowErrors, or a --mem=0M script)
        ("--workers", "99999999999999999999", "from 1 to 10,000"),
        ("--epochs", "99999999999999999999", "from 1 to 1,000,000,000"),
        ("--batches-per-epoch", "99999999999999999999", "from 1 to 1,000,000,000"),
        ("--ps", "99999999999999999999", "'auto' or a whole number"),
        ("--step-time", "1e308", "<= 86400"),
        ("--model-size", "1e400", "finite number"),
        ("--mem-per-worker", "0", "above 0 and at most 1P"),
        ("--mem-per-ps", "2P", "above 0 and at most 1P"),
        ("--time", "99999999999999999999", "at most a year"),
        ("--interpreter", "a'b", "not a command line"),
    ],
)
def test_bad_values_name_the_option_and_value(flag: str, value: str, problem: str) -> None:
    err = input_error(merge_options, [flag, value], {})
    assert err.message.startswith("'# mlsub:' header: ")  # where it was written
    assert flag in err.message
    assert repr(value) in err.message
    assert problem in err.message
    assert err.context == {"option": flag, "value": value, "file": "'# mlsub:' header"}
    on_the_line = input_error(merge_options, [], {OPTIONS_BY_FLAG[flag]: value})
    assert on_the_line.message == err.message.removeprefix("'# mlsub:' header: ")
    assert on_the_line.context == {"option": flag, "value": value}


def test_bad_flag_values_too() -> None:
    err = input_error(merge_options, [], {"workers": 0})
    assert "--workers" in err.message and "0" in err.message


def test_a_bad_value_names_the_line_it_was_written_on(tmp_path: Path) -> None:
    """A value's error names where it was written: the ``# mlsub:`` line of the script,
    the ``#SBATCH`` line (file:line), or the config's ``[job]`` table; the command line's
    needs no place (its option is where)."""
    script = tmp_path / "train.py"
    script.write_text(
        "#!/usr/bin/env python3\n# mlsub: --model resnet-50 --epochs 1\n"
        "# mlsub: --batches-per-epoch 10\n# mlsub: --name x --workers two\nprint(1)\n"
    )
    source = f"{script} '# mlsub:' header"
    err = input_error(merge_options, read_script_header(script), {}, header_source=source)
    assert err.message.startswith(f"{source} line 4: option --workers must be a whole number")
    assert err.context["file"] == source and err.context["line"] == 4
    # a value the command line overrides is not read, so it is no error
    assert merge_options(read_script_header(script), {"workers": 2}).workers == 2
    sbatch = sort_lines(parse_sbatch_lines("#!/bin/sh\n#SBATCH -J ok\n#SBATCH -t x1\n", "s"), "s")
    err = input_error(merge_options, BASE, {}, sbatch_header=sbatch)
    assert err.message.startswith("s:3: option --time is not a Slurm time limit")
    assert (err.context["file"], err.context["line"]) == ("s", 3)
    err = input_error(merge_options, [], {}, config_defaults={"epochs": "lots"})
    assert err.message.startswith("the config's [job] table: option --epochs")


def test_unknown_header_option_lists_the_valid_ones() -> None:
    err = input_error(merge_options, ["--wrokers", "3"], {}, header_source="s.py header")
    assert "s.py header" in err.message and "--wrokers" in err.message
    assert "--workers" in err.hint and "--batches-per-epoch" in err.hint


def test_header_option_without_value() -> None:
    assert "needs a value" in input_error(merge_options, ["--workers"], {}).message


def test_unknown_override_is_a_bug() -> None:
    with pytest.raises(ValueError):
        merge_options([], {"wrokers": 1})


# --- the request ---------------------------------------------------------------------------


def test_request_from_model() -> None:
    opts = merged(*BASE, "--epochs", "3", "--ps", "2", "--name", "r50")
    req = to_request(opts, arrival_slot=5)
    assert req.job_id == "r50" and req.arrival_slot == 5
    assert req.workload == 300.0 and req.max_workers == 4 and req.ps_count == 2
    assert req.worker == Resources(1, 4, 16384) and req.ps == Resources(0, 2, 8192)
    assert req.profile.name == "resnet-50" and req.profile.step_time_s == 0.449


def test_auto_ps_and_default_job_id() -> None:
    req = to_request(merged(*BASE), 0)
    assert req.ps_count is None and req.job_id == "plan"


def test_custom_profile_uses_default_bandwidths() -> None:
    req = to_request(merged("--workers", "1", "--batches-per-epoch", "10",
                            "--step-time", "0.2", "--model-size", "50"), 0)  # fmt: skip
    p = req.profile
    assert (p.name, p.step_time_s, p.model_size_mb) == ("custom", 0.2, 50.0)
    assert (p.bw_ex_mbps, p.bw_in_mbps) == (DEFAULT_BW_EX_MBPS, DEFAULT_BW_IN_MBPS) == (100, 1000)


def test_bandwidth_flags_override_the_profile() -> None:
    p = to_request(merged(*BASE, "--bw-ex", "1000", "--bw-in", "5000"), 0).profile
    assert (p.name, p.bw_ex_mbps, p.bw_in_mbps, p.step_time_s) == ("resnet-50", 1000, 5000, 0.449)


def test_unknown_model() -> None:
    err = input_error(to_request, merged(*BASE, model="alexnet"), 0)
    assert "'alexnet'" in err.message and "resnet-50" in err.hint
    assert err.context == {"option": "--model", "value": "alexnet"}


def test_model_and_step_time_exclude_each_other() -> None:
    err = input_error(to_request, merged(*BASE, "--step-time", "0.3"), 0)
    assert "--model" in err.message and "--step-time" in err.message


def test_no_profile() -> None:
    err = input_error(to_request, merged("--workers", "1", "--batches-per-epoch", "1",
                                         "--step-time", "1"), 0)  # fmt: skip
    assert "--model-size" in err.message


@pytest.mark.parametrize("missing", ["--workers", "--batches-per-epoch"])
def test_required_options(missing: str) -> None:
    header = {"--workers": "2", "--batches-per-epoch": "10", "--model": "wlm"}
    del header[missing]
    args = [x for kv in header.items() for x in kv]
    err = input_error(to_request, merged(*args), 0)
    assert missing in err.message and "not set" in err.message


def test_more_ps_than_workers() -> None:
    err = input_error(to_request, merged(*BASE, "--ps", "5"), 0)
    assert "--ps 5" in err.message and "--workers 4" in err.message
