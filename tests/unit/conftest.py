"""Shared helpers for module unit tests: run a real module main() and capture its result."""

from __future__ import annotations

import json

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
