"""The one error handler: domain errors -> message + exit code; anything else -> exit 1."""

from __future__ import annotations

import pytest
import typer

from slurm_mlsched.cli.errors import handle_errors
from slurm_mlsched.errors import InputError, NeverFitsError


def test_domain_error_becomes_message_and_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as info, handle_errors():
        raise NeverFitsError("too big [gpu=8]", hint="ask for less")
    assert info.value.exit_code == 4
    out, err = capsys.readouterr()
    assert out == ""
    assert "error[never-fits]: too big [gpu=8]" in err  # brackets are not rich markup
    assert "hint: ask for less" in err


def test_error_without_hint(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as info, handle_errors():
        raise InputError("bad")
    assert info.value.exit_code == 3
    assert "hint" not in capsys.readouterr().err


def test_unexpected_exception_is_short_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    secret = "local-variable-value"
    with pytest.raises(typer.Exit) as info, handle_errors():
        raise KeyError(secret[:3])
    assert info.value.exit_code == 1
    err = capsys.readouterr().err
    assert "error[internal]: unexpected KeyError" in err and "MLSUB_DEBUG" in err
    assert "Traceback" not in err and secret not in err


def test_debug_lets_the_exception_through() -> None:
    with pytest.raises(ZeroDivisionError), handle_errors(debug=True):
        _ = 1 / 0


def test_exit_passes_through() -> None:
    with pytest.raises(typer.Exit) as info, handle_errors():
        raise typer.Exit(0)
    assert info.value.exit_code == 0
