# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that compare gathered facts with a group's expectations, through the check registry."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role


def port_findings(facts, expected_ports=None, allowed_down=None, required_netdevs=None):
    """Findings and per-port verdicts for one host's ``ansible_facts.rdma`` (the ib_inventory checks)."""
    if not isinstance(facts, dict) or not isinstance(facts.get("ports"), list):
        raise AnsibleFilterError("rdma.node.port_findings: expected the rdma facts of rdma.node.ib_facts (a mapping with a 'ports' list)")
    params = {"expected_ports": expected_ports, "allowed_down_ports": allowed_down, "required_netdevs": required_netdevs}
    try:
        result = evaluate_role("ib_inventory", {"rdma": facts}, params)
    except CheckError as exc:
        raise AnsibleFilterError("rdma.node.port_findings: %s" % exc) from None
    status = result["status"]
    return {"ok": status["ok"], "critical": status["critical"], "warning": status["warning"],
            "findings": result["findings"], "ports": status["ports"]}


class FilterModule:
    def filters(self):
        return {"port_findings": port_findings}
