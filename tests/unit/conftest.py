"""What unit tests may not do.

Unit tests need nothing but the venv and Debian's essential packages: a test that starts ansible or
ansible-playbook, or that needs a real tool (ctr, containerd, dkms, journalctl, column, ps, ...),
belongs in tests/integration (Ansible through tests/harness.py). ``scripts/test.sh unit`` runs them
with only those on PATH. Modules run through the ``run_module`` fixture of tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess

import pytest

ANSIBLE_COMMANDS = frozenset(("ansible", "ansible-playbook", "ansible-pull", "ansible-console"))


@pytest.fixture(autouse=True)
def no_ansible_processes(monkeypatch):
    """Fail a unit test that starts Ansible: subprocess.run, check_output and Popen all go through Popen."""
    real_popen = subprocess.Popen

    class UnitTestPopen(real_popen):  # pylint: disable=too-few-public-methods
        def __init__(self, args, *rest, **kwargs):
            words = args.split() if isinstance(args, (str, bytes)) else [args] if isinstance(args, os.PathLike) else list(args)
            started = [os.path.basename(os.fsdecode(word)) for word in words if isinstance(word, (str, bytes, os.PathLike))]
            if ANSIBLE_COMMANDS.intersection(started):
                pytest.fail("unit tests start no Ansible; this one starts %s: move it to tests/integration "
                            "and run Ansible through tests/harness.py" % " ".join(map(str, words)), pytrace=False)
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", UnitTestPopen)
