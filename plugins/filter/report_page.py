# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTML fleet report's embedded data, as JSON text that is safe inside a script element."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_fleet_report_page = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_page")


def fleet_report_page_json(report):
    """Return the data the HTML report's page renders, as JSON text for ``<script type="application/json">``."""
    if not isinstance(report, Mapping) or not isinstance(report.get("hosts"), list):
        raise AnsibleFilterError("rdma.node.fleet_report_page_json: expected the report of rdma.node.fleet_report_data (a mapping with a 'hosts' list)")
    return _fleet_report_page.script_json(_fleet_report_page.page_data(report))


class FilterModule:
    def filters(self):
        return {"fleet_report_page_json": fleet_report_page_json}
