# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the fleet report's data from what the roles left on each host.

Input per host is a plain mapping of the variables the roles set (``ib_inventory_status``,
``<role>_findings``, ``driver_verify_status``, ``ansible_facts.rdma``...), taken from live hostvars or
from a fact cache. Output is one structure that the JSON, Markdown and HTML renderings share: totals,
counts per group, and hosts ordered worst first.
"""

from __future__ import annotations

import datetime

from ansible_collections.rdma.node.plugins.module_utils._findings import tally

# Roles whose ``<role>_findings`` and ``<role>_status`` the report collects, in report order.
DEFAULT_SOURCES = ("ib_inventory", "driver_verify", "node_remediation", "bandwidth_check")

# Worst first: a host with a critical finding, then one the roles never reached, then warnings.
STATUS_ORDER = {"critical": 0, "no_data": 1, "warning": 2, "ok": 3}
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
HIDDEN_GROUPS = ("all", "ungrouped")


def _lookup(host_vars, name):
    """A role's variable, whether it sits at the top level or (from a fact cache) in ansible_facts."""
    value = host_vars.get(name)
    if value is None:
        value = (host_vars.get("ansible_facts") or {}).get(name)
    return value


def host_entry(name, host_vars, sources=DEFAULT_SOURCES):
    """Everything the report shows about one host."""
    findings = []
    statuses = {}
    for source in sources:
        findings.extend(_lookup(host_vars, source + "_findings") or [])
        status = _lookup(host_vars, source + "_status")
        if status is not None:
            statuses[source] = status
    findings.sort(key=lambda f: (SEVERITY_ORDER.get(f.get("severity"), 3), f.get("role") or "", f.get("subject") or ""))
    counts = tally(findings)
    critical, warning = counts["critical"], counts["warning"]
    if critical:
        status = "critical"
    elif not statuses:
        status = "no_data"
    elif warning:
        status = "warning"
    else:
        status = "ok"
    rdma = (host_vars.get("ansible_facts") or {}).get("rdma") or {}
    inventory = statuses.get("ib_inventory") or {}
    bandwidth = statuses.get("bandwidth_check") or {}
    return {
        "name": name,
        "groups": sorted(g for g in host_vars.get("group_names") or [] if g not in HIDDEN_GROUPS),
        "status": status,
        "critical": critical,
        "warning": warning,
        "summary": inventory.get("summary") or rdma.get("summary"),
        "ports": inventory.get("ports") or [],
        "driver": statuses.get("driver_verify"),
        # Each loopback and pair test: port, peer (pairs), measured and expected Gb/s, verdict, cause.
        "bandwidth": (bandwidth.get("loopback") or []) + (bandwidth.get("pairs") or []),
        "checks": sorted(statuses),
        "findings": findings,
    }


def build_report(hosts, title="RDMA fleet report", generated_at=None, sources=DEFAULT_SOURCES):
    """``hosts`` maps host name to its variables; returns the report structure."""
    entries = [host_entry(name, host_vars or {}, sources) for name, host_vars in hosts.items()]
    entries.sort(key=lambda h: (STATUS_ORDER[h["status"]], -h["critical"], -h["warning"], h["name"]))
    groups = {}
    for entry in entries:
        for group in entry["groups"] or ["ungrouped"]:
            counts = groups.setdefault(group, {"name": group, "hosts": 0, "ok": 0, "warning": 0, "critical": 0, "no_data": 0})
            counts["hosts"] += 1
            counts[entry["status"]] += 1
    totals = {"hosts": len(entries)}
    for status in STATUS_ORDER:
        totals[status] = sum(1 for e in entries if e["status"] == status)
    totals["findings"] = sum(len(e["findings"]) for e in entries)
    return {
        "title": title,
        "generated_at": generated_at or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "totals": totals,
        "groups": [groups[name] for name in sorted(groups)],
        "hosts": entries,
    }
