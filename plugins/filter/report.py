# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's data, built from hostvars (live, or loaded from a fact cache)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report, failing_hosts

# The variables of a host the report reads besides the roles' findings and status.
_WANTED = ("group_names", "ansible_facts")


def _names(value, what):
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise AnsibleFilterError("rdma.node.fleet_report_data: expected %s as a list of names, got %r" % (what, value))
    return list(value)


def _host_vars(hostvars, name, wanted):
    try:
        host_vars = hostvars.get(name) or {}
    except Exception:  # hostvars of a host that is not in the inventory (no localhost to read)
        return {}
    return {key: host_vars.get(key) for key in wanted if key in host_vars}


def fleet_report_data(host_names, hostvars, title="RDMA fleet report", sources=None, cluster_hosts=("localhost",)):
    """Return the report structure for ``host_names``, reading each host's variables from ``hostvars``.

    ``sources`` are the roles whose ``<role>_findings``/``<role>_status`` are read (default: every role
    of the check registry); ``cluster_hosts`` are where cluster-scope roles (k8s_rdma) ran.
    """
    host_names = _names(host_names, "the host names")
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("rdma.node.fleet_report_data: expected hostvars as its argument")
    sources = tuple(_names(sources, "sources") if sources else registered_roles())
    wanted = _WANTED + tuple(s + suffix for s in sources for suffix in ("_findings", "_status"))
    hosts = {name: _host_vars(hostvars, name, wanted) for name in host_names}
    extra = [_host_vars(hostvars, name, wanted) for name in _names(list(cluster_hosts or ()), "cluster_hosts") if name not in hosts]
    report = build_report(hosts, sources, title=title, cluster_vars=extra)
    report["failing_hosts"] = failing_hosts(report)
    return report


class FilterModule:
    def filters(self):
        return {"fleet_report_data": fleet_report_data}
