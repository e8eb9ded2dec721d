"""The job options on the command line, generated from their one declaration
(``files/job_options.SPECS``): :func:`with_job_options` gives a command one Typer option per
job option and hands the command the given ones as ``job_options`` (field -> value, None
when not given), so ``plan`` and ``submit`` (and the header reader and the config, which
read the same table) cannot drift apart."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..files.job_options import SPECS, JobOptionSpec
from . import completion

PANELS = {
    "job": "Job options (override the script's '# mlsub:' header)",
    "placement": "Placement",
}


#: Shell completion of a job option's values (``cli/completion.py``), by field.
COMPLETERS: dict[str, Callable[[str], Any]] = {
    "model": completion.models,
    "policy": completion.live_policies,
    "arch": completion.architectures,
    "launcher": completion.launchers,
}


def _parameter(spec: JobOptionSpec) -> inspect.Parameter:
    option = typer.Option(
        spec.flag,
        *spec.aliases,
        help=spec.help,
        rich_help_panel=PANELS[spec.panel],
        autocompletion=COMPLETERS.get(spec.field),
    )
    return inspect.Parameter(
        spec.field,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[spec.cli_type | None, option],
    )


def with_job_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command(..., job_options)`` -> a Typer command with every job option as a flag.

    The command's own parameters come first (their annotations resolved); the job options
    follow as keyword-only parameters named after their ``JobOptions`` fields."""
    own = inspect.signature(command, eval_str=True)
    params = [p for p in own.parameters.values() if p.name != "job_options"]
    clash = {p.name for p in params} & {s.field for s in SPECS}
    assert not clash, f"{command.__name__} declares job options itself: {sorted(clash)}"
    params += [_parameter(spec) for spec in SPECS]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        given = {spec.field: kwargs.pop(spec.field) for spec in SPECS}
        return command(**kwargs, job_options=given)

    del wrapper.__wrapped__  # Typer reads the signature below, not the command's
    wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    wrapper.__annotations__["return"] = own.return_annotation
    return wrapper
