# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that compare gathered facts with a group's expectations."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.module_utils._port_expectations import ExpectationError, evaluate


def port_findings(facts, expected_ports=None, allowed_down=None, required_netdevs=None):
    """Findings and per-port verdicts for one host's ``ansible_facts.rdma``."""
    try:
        return evaluate(facts, expected_ports, allowed_down, required_netdevs)
    except ExpectationError as exc:
        raise AnsibleFilterError("rdma.node.port_findings: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"port_findings": port_findings}
