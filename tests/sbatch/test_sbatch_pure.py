"""Script rendering is core (STYLE.md habit 1): ``sbatch/`` imports no adapter and does no
I/O, except ``sbatch/templates.py``, whose one job is reading the template files."""

from __future__ import annotations

from tests.unit.test_architecture import SRC, Violation, check_source, module_name

OWN_PACKAGE = "(adapter/use-case package slurm_mlsched.sbatch)"  # its modules import each other


def violations(name: str) -> list[Violation]:
    path = SRC / "sbatch" / name
    source = path.read_text(encoding="utf-8")
    found = check_source(source, name, module_name(path), name == "__init__.py")
    return [v for v in found if not v.what.endswith(OWN_PACKAGE)]


def test_renderer_is_pure() -> None:
    assert violations("render.py") == []
    assert violations("replay_array.py") == []  # the job array of replay --on-slurm
    assert violations("__init__.py") == []
    assert violations("launch.py") == []  # what a re-plan renders a queued job from
    assert violations("allreduce.py") == []  # the one job of an --arch allreduce decision


def test_only_the_template_loader_touches_files() -> None:
    assert [v.what for v in violations("templates.py")] == [
        "imports from pathlib (I/O module pathlib)"
    ]
    names = sorted(p.name for p in (SRC / "sbatch").glob("*.py"))
    assert names == [
        "__init__.py",
        "allreduce.py",
        "launch.py",
        "render.py",
        "replay_array.py",
        "tag.py",
        "templates.py",
    ]
