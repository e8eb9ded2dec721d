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


def test_compress_is_the_inverse_for_one_number() -> None:
    from slurm_mlsched.slurm.hostlist import compress_hostlist

    assert compress_hostlist(["node1", "node2", "node3", "node5"]) == "node[1-3,5]"
    assert compress_hostlist(["gpu01", "gpu02", "gpu10"]) == "gpu[01-02,10]"
    assert compress_hostlist(["node4"]) == "node4"
    assert compress_hostlist(["login", "node2", "node1"]) == "login,node[1-2]"
    for names in (["a1", "a2", "b7", "a9"], ["n001", "n002", "n003"], ["x"], ["n1", "n10", "n11"]):
        assert sorted(expand_hostlist(compress_hostlist(names))) == sorted(names)
