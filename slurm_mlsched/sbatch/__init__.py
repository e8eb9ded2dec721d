"""Pure rendering of a decision into an sbatch script (templates in ``sbatch_templates/``)."""

from .render import (
    DEFAULT_BASE_PORT,
    Component,
    RenderedScript,
    ScriptSpec,
    Step,
    Task,
    begin_time,
    render_sbatch,
)
from .templates import template_dir

__all__ = [
    "DEFAULT_BASE_PORT",
    "Component",
    "RenderedScript",
    "ScriptSpec",
    "Step",
    "Task",
    "begin_time",
    "render_sbatch",
    "template_dir",
]
