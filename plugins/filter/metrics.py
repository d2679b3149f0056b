# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus textfile of a host's RDMA health. The rendering lives in
``plugin_utils/_metrics.py``; documentation: ``node_health_metrics.yml``."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_metrics = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._metrics")


def node_health_metrics(facts, now=None, groups=None):
    """A host's ``ansible_facts`` (and its ``group_names``) -> the text of node_exporter's ``rdma_node.prom``."""
    if not isinstance(facts, dict):
        raise AnsibleFilterError("node_health_metrics: expected the host's ansible_facts (a mapping), got %s" % type(facts).__name__)
    try:
        if groups is not None and (not isinstance(groups, list) or not all(isinstance(g, str) for g in groups)):
            raise AnsibleFilterError("node_health_metrics: groups must be the host's group_names (a list of names), got %r" % (groups,))
        return _metrics.render(json.loads(json.dumps(facts, default=str)), now, groups)  # Ansible's own types as plain JSON
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("node_health_metrics: %s" % exc) from None


class FilterModule:
    """Prometheus metrics of the RDMA health checks."""

    def filters(self):
        return {"node_health_metrics": node_health_metrics}
