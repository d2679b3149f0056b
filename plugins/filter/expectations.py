# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that compare gathered facts with a group's expectations, through the check registry."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError

_evaluation = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._evaluation")


def port_findings(facts, expected_ports=None, allowed_down=None, required_netdevs=None):
    """Findings and per-port verdicts for one host's ``ansible_facts.rdma`` (the ib_inventory checks)."""
    if not isinstance(facts, dict) or not isinstance(facts.get("ports"), list):
        raise AnsibleFilterError("rdma.node.port_findings: expected the rdma facts of rdma.node.ib_facts (a mapping with a 'ports' list)")
    params = {"expected_ports": expected_ports, "allowed_down_ports": allowed_down, "required_netdevs": required_netdevs}
    try:
        result = _evaluation.evaluate_role("ib_inventory", {"rdma": facts}, params)
    except CheckError as exc:
        raise AnsibleFilterError("rdma.node.port_findings: %s" % exc) from None
    status = result["status"]
    if "ports" not in status:  # the port checks were skipped: no verdict to give, and none is "healthy"
        reasons = sorted({skipped["reason"] for skipped in status["skipped_checks"]})
        raise AnsibleFilterError("rdma.node.port_findings: the port checks did not run (%s); expected the whole ansible_facts.rdma "
                                 "of rdma.node.ib_facts" % "; ".join(reasons))
    return {"ok": status["ok"], "critical": status["critical"], "warning": status["warning"],
            "findings": result["findings"], "ports": status["ports"]}


class FilterModule:
    def filters(self):
        return {"port_findings": port_findings}
