# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's side of the check registry: every check and every fact reader loaded, a role
evaluated.

The checks are the modules of ``plugin_utils/_checks`` (listed in its ``__init__``); importing that
package registers them in ``plugin_utils/_registry.py``. The fact readers declare their subsets
(``module_utils/_subsets``) where they are written; the node imports them only when asked for, the
controller imports them all here, so a check's fact path always names the subset that fills it.
"""

from __future__ import annotations

# Importing the package registers every check.
from ansible_collections.rdma.node.plugins.plugin_utils import _checks  # noqa: F401 pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils import _container_limits, _driver_collect, _ib_collect  # noqa: F401 pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.plugin_utils import _registry

_ib_collect.load_readers()


def registered_roles():
    """Every role that has checks: the fleet report's sources."""
    return _registry.roles()


def evaluate_role(role, facts, params=None, subject="host", only=None, skip=None, custom_checks=None, unavailable=None):
    """``_registry.evaluate`` with the operators' JMESPath ``custom_checks``."""
    extra = ()
    if custom_checks:
        # Only when used: it needs jmespath, and looking for a library that is not installed searches
        # every path there is, on every host.
        from ansible_collections.rdma.node.plugins.plugin_utils._checks.custom import build_checks

        extra = build_checks(role, custom_checks)
    return _registry.evaluate(role, facts, params, subject, only, skip, extra, unavailable)
