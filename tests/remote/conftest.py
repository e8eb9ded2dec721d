"""Fixtures for the SSH tests: generated keys, a real sshd on 127.0.0.1 (tests/remote/sshd.py),
a connected runner, and the lab Slurm cluster of tests/integration for Slurm over SSH.

Without root (or when sshd cannot be installed or started) the sshd tests skip with the
reason, and fail under ``CI=true``, as the Slurm and PostgreSQL tests do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from slurm_mlsched.remote.ssh import SshRunner
from tests.integration.conftest import cluster, lab_ready  # noqa: F401  (Slurm fixtures)
from tests.remote.sshd import Keys, Sshd, require_ssh_keygen, running_sshd


@pytest.fixture(scope="session")
def ssh_keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    require_ssh_keygen()
    return Keys.generate(tmp_path_factory.mktemp("ssh-keys"))


@pytest.fixture(scope="session")
def sshd(ssh_keys: Keys) -> Iterator[Sshd]:
    """One sshd for the whole session (tests must not stop it: use ``doomed_sshd``)."""
    with running_sshd(ssh_keys) as server:
        yield server


@pytest.fixture
def doomed_sshd(ssh_keys: Keys) -> Iterator[Sshd]:
    """An sshd of this test's own, which the test may kill."""
    with running_sshd(ssh_keys) as server:
        yield server


@pytest.fixture
def ssh(sshd: Sshd) -> Iterator[SshRunner]:
    """A runner logged in to ``sshd`` as root; closed after the test."""
    with sshd.connect() as runner:
        yield runner
