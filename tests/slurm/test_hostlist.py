"""Slurm host lists."""

from __future__ import annotations

import pytest

from slurm_mlsched.slurm.hostlist import expand_hostlist


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node1", ("node1",)),
        ("node[1-3]", ("node1", "node2", "node3")),
        ("node[1-2,5],gpu7", ("node1", "node2", "node5", "gpu7")),
        ("gpu[08-10]", ("gpu08", "gpu09", "gpu10")),
        ("r[1-2]n[1-2]", ("r1n1", "r1n2", "r2n1", "r2n2")),
        ("a-b.c[1]", ("a-b.c1",)),
        ("", ()),
        ("(null)", ()),
    ],
)
def test_expand(text: str, hosts: tuple[str, ...]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["node[1-3", "node1-3]", "node[3-1]", "node[a-b]", "n[[1]]"])
def test_bad_host_lists(text: str) -> None:
    with pytest.raises(ValueError):
        expand_hostlist(text)
