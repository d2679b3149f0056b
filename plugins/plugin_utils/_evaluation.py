# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's side of the check registry: load every check once, evaluate a role.

Checks that need only the standard library live in ``module_utils/_checks_*.py``; checks that need a
controller library (JMESPath, for the operators' own checks) live in ``plugin_utils/_checks_*.py``.
Both register into the one registry of ``module_utils/_checks.py``.
"""

from __future__ import annotations

import os

from ansible_collections.rdma.node.plugins.module_utils import _checks

_LOADED = []


def load_checks():
    """Import every check file of the collection, once per controller process."""
    if not _LOADED:
        _checks.load()
        _checks.load(__name__.rpartition(".")[0], os.path.dirname(__file__))
        _LOADED.append(True)


def registered_roles():
    """Every role that has checks: the fleet report's sources."""
    load_checks()
    return _checks.roles()


def evaluate_role(role, facts, params=None, subject="host", only=None, skip=None, custom_checks=None):
    """``_checks.evaluate`` after loading the checks, with the operators' JMESPath ``custom_checks``."""
    load_checks()
    from ansible_collections.rdma.node.plugins.plugin_utils._checks_custom import build_checks  # needs jmespath: only when used

    extra = build_checks(role, custom_checks) if custom_checks else ()
    return _checks.evaluate(role, facts, params, subject, only, skip, extra)
