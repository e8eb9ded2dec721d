"""``--arch`` and ``--launcher`` (issue 31) through the one job-option table: the command
line, the ``# mlsub:`` header and the config's ``[job]`` table, and the request they make."""

from __future__ import annotations

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.job_options import OPTIONS, SPECS, merge_options, to_request
from slurm_mlsched.model import Architecture, Launcher, Resources

BASE = ["--workers", "4", "--batches-per-epoch", "100", "--model", "resnet-50"]


def input_error(*header: str, cli: dict[str, object] | None = None) -> InputError:
    with pytest.raises(InputError) as info:
        to_request(merge_options([*BASE, *header], cli or {}), 0)
    assert info.value.exit_code == 3
    return info.value


def test_both_options_are_in_the_one_table() -> None:
    assert OPTIONS["arch"][0] == "--arch" and OPTIONS["launcher"][0] == "--launcher"
    assert {s.field for s in SPECS} >= {"arch", "launcher"}


def test_the_defaults_are_ps_and_no_launcher() -> None:
    opts = merge_options(BASE, {})
    assert opts.arch is Architecture.PS and opts.launcher is None
    assert opts.launch_with is Launcher.TORCHRUN
    assert to_request(opts, 0).arch is Architecture.PS


@pytest.mark.parametrize(
    ("header", "cli", "config"),
    [
        (["--arch", "allreduce", "--launcher", "srun"], {}, {}),  # the header
        (["--arch=ALLREDUCE", "--launcher= srun"], {}, {}),  # = form, case and spaces
        ([], {"arch": "allreduce", "launcher": "srun"}, {}),  # the command line
        ([], {}, {"arch": "allreduce", "launcher": "srun"}),  # the [job] table
        (["--arch", "ps"], {"arch": "allreduce"}, {"launcher": "torchrun"}),  # flags win
    ],
)
def test_every_source_gives_them(
    header: list[str], cli: dict[str, object], config: dict[str, object]
) -> None:
    opts = merge_options([*BASE, *header], cli, config_defaults=config)
    assert opts.arch is Architecture.ALLREDUCE
    expected = Launcher.TORCHRUN if config.get("launcher") == "torchrun" else Launcher.SRUN
    assert opts.launch_with is expected


def test_an_allreduce_request_has_no_ps() -> None:
    req = to_request(merge_options([*BASE, "--arch", "allreduce", "--cpus-per-ps", "8"], {}), 0)
    assert req.arch is Architecture.ALLREDUCE and req.is_allreduce
    assert req.ps_count == 0 and req.ps == Resources()  # the PS demand is not counted
    assert req.worker == Resources(1, 4, 16384) and req.max_workers == 4
    assert req.launcher is Launcher.TORCHRUN  # the request carries it to the script
    srun = to_request(merge_options([*BASE, "--arch", "allreduce", "--launcher", "srun"], {}), 0)
    assert srun.launcher is Launcher.SRUN
    assert to_request(merge_options(BASE, {}), 0).launcher is None


@pytest.mark.parametrize(
    ("flag", "value", "valid"),
    [("--arch", "ring", "ps | allreduce"), ("--launcher", "mpirun", "torchrun | srun")],
)
def test_bad_values_say_what_where_and_how(flag: str, value: str, valid: str) -> None:
    with pytest.raises(InputError) as info:
        merge_options([flag, value], {})
    err = info.value
    where = "'# mlsub:' header"  # a header value's error says where it was written
    assert err.message.startswith(f"{where}: option {flag} is not a")
    assert repr(value) in err.message
    assert err.hint == f"write {flag} {valid}"
    assert err.context == {"option": flag, "value": value, "file": where}


def test_an_allreduce_job_with_ps_is_refused() -> None:
    err = input_error("--arch", "allreduce", "--ps", "2")
    assert "--ps 2" in err.message and "allreduce" in err.message
    assert "drop --ps" in err.hint and "--arch ps" in err.hint
    assert err.context == {"option": "--ps", "value": 2}


def test_more_ps_than_workers_on_an_allreduce_job_says_it_has_none() -> None:
    err = input_error("--arch", "allreduce", "--ps", "9")
    assert "has none" in err.message


def test_a_launcher_on_a_ps_job_is_refused() -> None:
    err = input_error(cli={"launcher": "srun"})
    assert "--launcher srun" in err.message and "allreduce jobs only" in err.message
    assert "--arch allreduce" in err.hint
