"""One root context object and one command wrapper (issue 16, item 2).

Every command of ``mlsub`` is declared on a :class:`Commands` and wrapped once by
``guarded``: its errors become messages and exit codes, its body reads the clock, debug
switch and store through the root context object on ``ctx.obj``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from slurm_mlsched.cli import app as app_module
from slurm_mlsched.cli.context import AppContext, Commands, app_context
from slurm_mlsched.errors import InputError
from slurm_mlsched.services.clock import FixedClock

CLI_DIR = Path(app_module.__file__).parent


def _callbacks(app: typer.Typer) -> list[tuple[str, object]]:
    found = [
        (c.name or getattr(c.callback, "__name__", "?"), c.callback)
        for c in app.registered_commands
    ]
    for group in app.registered_groups:
        assert group.typer_instance is not None
        found += [(f"{group.name} {n}", cb) for n, cb in _callbacks(group.typer_instance)]
    return found


def test_every_command_summary_is_one_line() -> None:
    """``mlsub --help`` lists each command by the first paragraph of its docstring; a
    paragraph over two source lines printed a line break in the middle of the list."""
    for name, callback in _callbacks(app_module.app):
        doc = (getattr(callback, "__doc__", None) or "").strip()
        summary = doc.split("\n\n")[0]
        assert summary and "\n" not in summary, (name, summary)
        assert len(summary) <= 88, (name, summary)


def test_help_paragraphs_flow_to_the_terminal_width() -> None:
    """A docstring's line breaks are the source's, not the reader's: ``--help`` prints
    each paragraph as one line that the terminal wraps."""
    result = CliRunner().invoke(app_module.app, ["plan", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert (
        "On the cluster file given with --cluster, or on the live Slurm cluster: a dry run of "
        "submit that shows the decision" in result.output
    ), result.output


def test_every_command_is_wrapped_once() -> None:
    callbacks = _callbacks(app_module.app)
    names = {name for name, _ in callbacks}
    assert {"plan", "submit", "history", "db upgrade", "plugins check", "remote trust"} <= names
    assert len(callbacks) >= 20
    unwrapped = [name for name, cb in callbacks if not getattr(cb, "mlsub_guarded", False)]
    assert unwrapped == []


def test_no_command_module_handles_errors_itself() -> None:
    """handle_errors is called in one place: the wrapper (context.py)."""
    callers = []
    for path in sorted(CLI_DIR.glob("*.py")):
        if path.name in ("context.py", "errors.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and node.id == "handle_errors":
                callers.append(path.name)
    assert callers == []


def _tiny_app(body: object) -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root(ctx: typer.Context) -> None:
        ctx.obj = AppContext({"MLSUB_FIXED_NOW": "2026-03-01T12:00:00Z"})

    commands = Commands()

    @commands.command()
    def probe(count: int = 1) -> None:
        """A probe."""
        assert callable(body)
        body(count)

    commands.add_to(app)
    return app


def test_the_command_reads_the_root_context_object() -> None:
    seen: list[object] = []

    def body(count: int) -> None:
        ctx = app_context()
        seen.append((count, ctx.clock.now().isoformat(), ctx.debug))

    result = CliRunner().invoke(_tiny_app(body), ["probe", "--count", "3"])
    assert result.exit_code == 0, result.output
    assert seen == [(3, "2026-03-01T12:00:00+00:00", False)]


def test_the_wrapper_turns_errors_into_exit_codes() -> None:
    def body(count: int) -> None:
        raise InputError(f"bad count {count}", hint="give another")

    result = CliRunner().invoke(_tiny_app(body), ["probe"])
    assert result.exit_code == 3
    assert "error[invalid-input]: bad count 1" in result.output

    def crash(count: int) -> None:
        raise KeyError("boom")

    result = CliRunner().invoke(_tiny_app(crash), ["probe"])
    assert result.exit_code == 1
    assert "error[internal]" in result.output and "Traceback" not in result.output


def test_a_bad_fixed_clock_is_the_commands_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLSUB_FIXED_NOW", "yesterday-ish")
    result = CliRunner().invoke(app_module.app, ["history", "--since", "1d"])
    assert result.exit_code == 3
    assert "MLSUB_FIXED_NOW is not an ISO 8601 time" in result.output


def test_clock_is_read_once_per_run() -> None:
    ctx = AppContext({"MLSUB_FIXED_NOW": "2026-03-01T12:00:00Z"})
    first = ctx.clock
    assert isinstance(first, FixedClock) and ctx.clock is first
    assert AppContext({"MLSUB_DEBUG": "1"}).debug and not AppContext({"MLSUB_DEBUG": "0"}).debug
