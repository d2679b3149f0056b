# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The judging stage of ``rdma.node.evaluate``: one role's checks on one host's facts.

The parameters come from the role's options by the registry's one rule (``<role>_<name>``, or the
role's ``@parameter`` function), with what the task gave itself on top; the operators' JMESPath
checks run after the role's own. A host that could not be reached is judged on nothing: every check
is skipped with Ansible's reason.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _registry
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role

UNREACHABLE = "rdma_unreachable"


def judge(role, facts, options=None, params=None, subject="host", only=None, skip=None, custom_checks=None, unavailable=None):
    """``{"findings", "status"}`` of ``role`` on ``facts``.

    ``options`` are the role's typed options when evaluate read them (None otherwise: ``params`` are
    then all the checks get); ``unavailable`` maps a subset to why it was not gathered."""
    params = dict(params or {})
    if options is not None:
        params = dict(_registry.parameters(role, options, facts), **params)
        if custom_checks is None:
            custom_checks = options.get(role + "_custom_checks")
    unreachable = facts.get(UNREACHABLE)
    if unreachable:
        # Nothing was gathered: every check is skipped with Ansible's reason, none is run on stale facts.
        facts = {UNREACHABLE: unreachable}
        unavailable = {_registry.EVERY_SUBSET: "the host could not be reached: %s" % unreachable.get("reason")}
    return evaluate_role(role, facts, params, subject, only, skip, custom_checks or [], unavailable)
