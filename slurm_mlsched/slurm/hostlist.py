"""Slurm host lists: ``node[1-3,5]`` <-> ``node1,node2,node3,node5`` (pure).

Supports what Slurm prints: comma-separated items, each with any number of bracket
groups holding numbers and ranges, zero padding kept (``gpu[01-03]`` -> gpu01 … gpu03),
and several groups in one name (``r[1-2]n[1-2]`` -> r1n1, r1n2, r2n1, r2n2).
"""

from __future__ import annotations

import itertools
import re

_GROUP = re.compile(r"\[([^\[\]]*)\]")


def expand_hostlist(text: str) -> tuple[str, ...]:
    """All host names in ``text``, in order; ``""`` and ``(null)`` give none.

    Raises ValueError on unbalanced brackets or a bad range.
    """
    text = text.strip()
    if not text or text in ("(null)", "None", "N/A"):
        return ()
    out: list[str] = []
    for item in _split_top_level(text):
        out.extend(_expand_item(item))
    return tuple(out)


def _split_top_level(text: str) -> list[str]:
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in host list {text!r}")
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced '[' in host list {text!r}")
    items.append("".join(current))
    return [i.strip() for i in items if i.strip()]


def _expand_item(item: str) -> list[str]:
    parts = _GROUP.split(item)  # text, group, text, group, …, text
    if "[" in parts[-1] or "]" in parts[-1] or any("[" in p or "]" in p for p in parts[::2]):
        raise ValueError(f"bad host list item {item!r}")
    choices: list[list[str]] = []
    for i, part in enumerate(parts):
        choices.append(_expand_group(part, item) if i % 2 else [part])
    return ["".join(combo) for combo in itertools.product(*choices)]


def _expand_group(group: str, item: str) -> list[str]:
    out: list[str] = []
    for spec in group.split(","):
        spec = spec.strip()
        lo, sep, hi = spec.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"bad range {spec!r} in host list item {item!r}")
        if not sep:
            out.append(lo)
            continue
        first, last = int(lo), int(hi)
        if last < first:
            raise ValueError(f"descending range {spec!r} in host list item {item!r}")
        width = len(lo) if lo.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(first, last + 1))
    return out


_TAIL = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: list[str] | tuple[str, ...]) -> str:
    """The inverse of :func:`expand_hostlist` for one trailing number: names sharing a
    prefix and a number width (digits) become ``prefix[1-3,5]`` (zero padding kept); the
    rest stay as they are. Order: first appearance of each prefix; numbers ascending within it."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for name in dict.fromkeys(names):
        m = _TAIL.match(name)
        if m is None:
            plain.append(name)
            order.append(name)
            continue
        key = (m.group(1), len(m.group(2)))  # one group per prefix and number width
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m.group(2)))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width = item
        nums = sorted(groups[item])
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs: list[str] = []
        start = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            runs.append(
                f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}"
            )
            if n is not None:
                start = prev = n
        out.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(out)
