"""What unit tests may not do.

Unit tests need nothing but the venv and Debian's essential packages: a test that starts ansible or
ansible-playbook, or that needs a real tool (ctr, containerd, dkms, journalctl, column, ps, ...),
belongs in tests/integration (Ansible through tests/harness.py). ``scripts/test.sh unit`` runs them
with only those on PATH. Modules run through the ``run_module`` fixture of tests/conftest.py.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
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


@pytest.fixture
def no_hang():
    """Fail the test, instead of hanging the run, when the code under test blocks for 20 s (a read of
    a FIFO, a sleep, an expression that explodes)."""
    def _alarm(signum, frame):
        raise AssertionError("blocked for 20 s")
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def in_child():
    """``in_child(function)``: its result, computed in a forked process that is killed after 10 s, so a
    reader that blocks where no signal reaches it fails the test instead of hanging the run."""
    def run(function, seconds=10):
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=lambda: queue.put(function()))
        child.start()
        child.join(seconds)
        if child.is_alive():
            child.kill()
            child.join()
            raise AssertionError("still running after %d s: the code under test blocked" % seconds)
        assert child.exitcode == 0, "the code under test raised (exit code %s)" % child.exitcode
        return queue.get(timeout=5)
    return run
