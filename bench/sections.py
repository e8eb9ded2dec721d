"""docs/benchmarks.md is written by several benchmarks, each owning one marked section:

    <!-- section:NAME -->
    ...
    <!-- /section:NAME -->

:func:`write_section` replaces a section's body (or appends the section), leaving the
others as they are, so one benchmark can be re-run without losing the others' results.
"""

from __future__ import annotations

import re
from pathlib import Path

HEADER = (
    "# Benchmarks\n\nEach section below is written by one benchmark (its command is named in it).\n"
)


def write_section(path: Path, name: str, body: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    start, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
