"""Make this working tree importable as ``ansible_collections.rdma.node`` for pytest, put the
tests' own helpers (tests/) and the shared tools (tools/) on the import path, and run modules.

``run_module`` runs a module as Ansible runs it on a node: in a Python process of its own, its
arguments handed in as ``{"ANSIBLE_MODULE_ARGS": ...}`` (the way ansible-core documents for invoking
a module directly), its result the JSON it prints. Nothing of the controller is loaded in that
process, so its warnings land in its result, whatever controller code the test process imported.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from testpaths import COLLECTIONS_ROOT, TOOLS  # noqa: E402  (needs the line above)

for path in (COLLECTIONS_ROOT, TOOLS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

MODULE_TIMEOUT = 120


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
def run_module(tmp_path_factory):
    """Run ``module`` (an imported module of plugins/modules) with ``args`` and return its parsed JSON result.

    Nothing is mocked: the module parses its arguments, does its work and exits as it would on a
    node, in the test's working directory and environment (a test's ``monkeypatch.setenv`` applies).
    """
    counter = itertools.count()
    args_dir = tmp_path_factory.mktemp("module-args")  # not the test's tmp_path, whose listing tests compare

    def _run(module, args: dict, check_mode: bool = False, diff: bool = False) -> ModuleResult:
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        args_file = args_dir / ("%d.json" % next(counter))
        args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(COLLECTIONS_ROOT), os.environ.get("PYTHONPATH")))))
        proc = subprocess.run([sys.executable, module.__file__, str(args_file)], capture_output=True, text=True,
                              env=environment, timeout=MODULE_TIMEOUT, check=False)
        try:
            return ModuleResult(json.loads(proc.stdout))
        except ValueError:
            raise AssertionError("%s printed no JSON result (rc %d): %s %s" % (
                module.__name__, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])) from None

    return _run
