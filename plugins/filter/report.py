# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's data, built from hostvars (live, or loaded from a fact cache)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import DEFAULT_MAX_BYTES, fleet_artifact as _fleet_artifact
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_hosts import report_from_hostvars


def fleet_report_data(host_names, hostvars, title="RDMA fleet report", sources=None, cluster_hosts=("localhost",)):
    """Return the report structure for ``host_names``, reading each host's variables from ``hostvars``.

    ``sources`` are the roles whose ``<role>_findings``/``<role>_status`` are read (default: every role
    of the check registry); ``cluster_hosts`` are where cluster-scope roles (k8s_rdma) ran.
    """
    try:
        return report_from_hostvars(host_names, hostvars, title, sources, cluster_hosts)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rdma.node.fleet_report_data: %s" % exc) from None


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
