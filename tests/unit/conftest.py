"""Shared helpers for module unit tests: run a real module main() and capture its result.

Unit tests run in process: a test that starts ansible or ansible-playbook belongs in
tests/integration (through tests/harness.py), and fails here.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess

import pytest
from ansible.module_utils import _internal as module_internal
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.testing import patch_module_args


class ModuleResult(dict):
    """The JSON a module printed, plus whether it exited through fail_json."""

    @property
    def failed(self) -> bool:
        return bool(self.get("failed"))

    @property
    def warning_messages(self) -> list:
        """Warning texts, whether the core writes them as strings or (2.19+) as event records."""
        return [w if isinstance(w, str) else w["event"]["msg"] for w in self.get("warnings", [])]


@pytest.fixture
def run_module(capsys, monkeypatch):
    """Run ``module.main()`` with ``args`` and return its parsed JSON result.

    Nothing is mocked: the module parses its arguments, does its work and exits as it would on a
    node; the test reads what it printed.
    """

    # ansible-core 2.19 keeps module warnings in one process-wide list, and once controller code is
    # imported in the same pytest process (filters, action plugins) it sends them to the display
    # instead of the module's result. Each run starts clean, on the node's side.
    monkeypatch.setattr(module_internal, "is_controller", False)

    def _run(module, args: dict, check_mode: bool = False, diff: bool = False) -> ModuleResult:
        module_warnings._global_warnings.clear()
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        out = capsys.readouterr().out
        return ModuleResult(json.loads(out))

    return _run


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
                pytest.fail("unit tests run in process; this one starts %s: move it to tests/integration "
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
