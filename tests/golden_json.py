"""Golden JSON files: what each command's ``--json`` prints, pinned (issue 16, item 3).

A test builds a typed service result (or runs the command), takes its ``to_json()`` and
calls :func:`assert_golden`. Values that change from run to run (wall times, package
versions, paths under a temporary directory) are named in ``volatile``: their keys stay in
the comparison, their values become ``"<volatile>"``. A key in ``keys_only`` keeps the
keys inside its value (a mapping, or a list of ``[key, value]`` pairs such as a decision's
``stats``) and hides their values. So a golden file pins every key, its nesting and every
stable value: a changed schema fails the test.

To write or refresh a golden file after an intended change: ``MLSUB_UPDATE_GOLDEN=1
pytest tests/...``, then read the diff of ``tests/golden/json`` before committing it.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Collection
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden" / "json"
UPDATE_ENV = "MLSUB_UPDATE_GOLDEN"
VOLATILE = "<volatile>"


def _keys_of(value: object) -> object:
    if isinstance(value, dict):
        return {k: VOLATILE for k in value}
    if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        return [[p[0], VOLATILE] for p in value]
    return VOLATILE


def normalized(
    data: object, volatile: Collection[str] = (), keys_only: Collection[str] = ()
) -> object:
    """``data`` as JSON would give it back, with the values of ``volatile`` keys replaced
    and only the keys kept inside ``keys_only`` values (at any depth)."""
    plain = json.loads(json.dumps(data))

    def walk(node: object) -> object:
        if isinstance(node, dict):
            return {
                k: VOLATILE if k in volatile else _keys_of(v) if k in keys_only else walk(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(plain)


def assert_golden(
    name: str, data: object, *, volatile: Collection[str] = (), keys_only: Collection[str] = ()
) -> None:
    """``data`` (normalized) equals ``tests/golden/json/NAME.json``."""
    path = GOLDEN / f"{name}.json"
    got = normalized(data, volatile, keys_only)
    text = json.dumps(got, indent=2, sort_keys=True) + "\n"
    if os.environ.get(UPDATE_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no golden file {path}: write it with {UPDATE_ENV}=1 and review it")
    want = path.read_text()
    if want != text:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"golden {name}",
                tofile="now",
            )
        )
        pytest.fail(f"JSON of {name} differs from its golden file:\n{diff}")
