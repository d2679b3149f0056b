# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's data, built from hostvars (live, or loaded from a fact cache)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import DEFAULT_MAX_BYTES, fleet_artifact as _fleet_artifact
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import DEFAULT_SOURCES, build_report

# The variables of a host the report reads; nothing else is pulled out of hostvars.
_WANTED = ("group_names", "ansible_facts")


def fleet_report_data(host_names, hostvars, title="RDMA fleet report", sources=None):
    """Return the report structure for ``host_names``, reading each host's variables from ``hostvars``."""
    if isinstance(host_names, str) or not isinstance(host_names, (list, tuple)):
        raise AnsibleFilterError("rdma.node.fleet_report_data: expected a list of host names, got %r" % (host_names,))
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("rdma.node.fleet_report_data: expected hostvars as its argument")
    sources = tuple(sources or DEFAULT_SOURCES)
    wanted = _WANTED + tuple(s + suffix for s in sources for suffix in ("_findings", "_status"))
    hosts = {}
    for name in host_names:
        host_vars = hostvars.get(name) or {}
        hosts[name] = {key: host_vars.get(key) for key in wanted if key in host_vars}
    return build_report(hosts, title=title, sources=sources)


def fleet_artifact(report, report_dir=None, files=None, upload_url=None, max_bytes=DEFAULT_MAX_BYTES):
    """Return the ``rdma_fleet`` summary of ``report`` for AWX's artifacts, at most ``max_bytes`` of JSON."""
    location = {"dir": report_dir or None, "files": list(files or []), "upload_url": upload_url or None}
    try:
        return _fleet_artifact(report, location, int(max_bytes))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rdma.node.fleet_artifact: %s" % exc)


class FilterModule:
    def filters(self):
        return {"fleet_report_data": fleet_report_data, "fleet_artifact": fleet_artifact}
