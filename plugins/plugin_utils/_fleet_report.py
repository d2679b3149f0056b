# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the fleet report's data from what the roles left on each host.

Input per host is a plain mapping of the variables the roles set (``<role>_findings`` and
``<role>_status`` of every role of the check registry, ``ansible_facts.rdma``...), taken from live
hostvars or from a fact cache. Cluster-scope roles (``k8s_rdma``) keep theirs on the host they ran on
(usually ``localhost``) with a ``cluster/<name>`` subject: their findings form the cluster section, and
a finding about a node that is an inventory host also shows on that host. Output is one structure
that the JSON, Markdown and HTML renderings share: totals, counts per group, the cluster section, and
hosts ordered worst first.
"""

from __future__ import annotations

import datetime

from ansible_collections.rdma.node.plugins.plugin_utils._checks.fleet import ROLE as FLEET_ROLE
from ansible_collections.rdma.node.plugins.plugin_utils._findings import tally
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role

# The version of the report's JSON shape; a consumer checks it before reading the rest.
SCHEMA_VERSION = 2
CLUSTER_PREFIX = "cluster/"

# Worst first: a host with a critical finding, then one the roles never reached, then warnings.
STATUS_ORDER = {"critical": 0, "no_data": 1, "warning": 2, "ok": 3}
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
HIDDEN_GROUPS = ("all", "ungrouped")
# What the report keeps of an RDMA device (ansible_facts.rdma.devices) and of its PCIe link (the
# ``pcie`` facts of ib_facts, by device name or under the device): enough to identify the card.
HCA_KEYS = ("node_type", "hca_type", "fw_ver", "board_id")
PCIE_KEYS = ("present", "current_speed_gts", "current_width", "current_generation", "max_speed_gts", "max_width", "max_generation")


def _lookup(host_vars, name):
    """A role's variable, whether it sits at the top level or (from a fact cache) in ansible_facts."""
    value = host_vars.get(name)
    if value is None:
        value = (host_vars.get("ansible_facts") or {}).get(name)
    return value


def _is_cluster(status):
    return str((status or {}).get("subject") or "").startswith(CLUSTER_PREFIX)


def cluster_sections(hosts_vars, sources):
    """``{subject: {"subject", "roles", "findings", ...counts}}`` of every cluster-scope result in ``hosts_vars``."""
    clusters = {}
    for host_vars in hosts_vars:
        for source in sources:
            status = _lookup(host_vars, source + "_status")
            if not _is_cluster(status):
                continue
            entry = clusters.setdefault(status["subject"], {"subject": status["subject"], "roles": {}, "findings": []})
            if source not in entry["roles"]:
                entry["roles"][source] = status
                entry["findings"].extend(_lookup(host_vars, source + "_findings") or [])
    for entry in clusters.values():
        entry["findings"].sort(key=lambda f: (SEVERITY_ORDER.get(f.get("severity"), 3), f.get("subject") or ""))
        entry.update(tally(entry["findings"]))
    return [clusters[name] for name in sorted(clusters)]


def _node_findings(clusters):
    """Cluster findings by the node they concern (their subject), to show on that host too."""
    by_node = {}
    for cluster in clusters:
        for item in cluster["findings"]:
            by_node.setdefault(str(item.get("subject")), []).append(item)
    return by_node


def _pcie(device, pcie_facts, name):
    link = device.get("pcie")
    if not isinstance(link, dict):
        link = pcie_facts.get(name) if isinstance(pcie_facts, dict) else None
    if not isinstance(link, dict):
        return None
    return {key: link.get(key) for key in PCIE_KEYS}


def hcas(rdma):
    """One compact entry per RDMA device of ``ansible_facts.rdma``, by name: model, firmware, board and
    PCIe link (``None`` where the facts do not say). SR-IOV virtual functions are left out: they share
    the card of their physical function, and a node can have dozens."""
    devices = rdma.get("devices")
    if not isinstance(devices, dict):
        return []
    pcie_facts = rdma.get("pcie")
    entries = []
    for name in sorted(devices):
        device = devices[name] if isinstance(devices[name], dict) else {}
        if device.get("virtual_function"):
            continue
        entry = {"name": name}
        entry.update((key, device.get(key)) for key in HCA_KEYS)
        entry["pcie"] = _pcie(device, pcie_facts, name)
        entries.append(entry)
    return entries


def host_entry(name, host_vars, sources, node_findings=None):
    """Everything the report shows about one host."""
    findings = []
    statuses = {}
    for source in sources:
        status = _lookup(host_vars, source + "_status")
        if _is_cluster(status):
            continue
        findings.extend(_lookup(host_vars, source + "_findings") or [])
        if status is not None:
            statuses[source] = status
    node_findings = node_findings or {}
    findings.extend(node_findings.get(name) or node_findings.get(name.split(".")[0]) or [])
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
        "summary": inventory.get("facts_summary") or rdma.get("summary"),
        "ports": inventory.get("ports") or [],
        "hcas": hcas(rdma),
        "driver": statuses.get("driver_verify"),
        # Each loopback and pair test: port, peer (pairs), measured and expected Gb/s, verdict, cause.
        "bandwidth": (bandwidth.get("loopback") or []) + (bandwidth.get("pairs") or []),
        "checks": sorted(statuses),
        "findings": findings,
    }


def fleet_findings(hosts):
    """``{host: [findings]}`` of the fleet-wide checks (``_checks_fleet``: HCAs that differ from
    the rest of their inventory group), which need every host's facts at once."""
    fleet = {name: {"group_names": (host_vars or {}).get("group_names") or [],
                    "devices": ((host_vars or {}).get("ansible_facts") or {}).get("rdma", {}).get("devices") or {}}
             for name, host_vars in hosts.items()}
    by_host = {}
    for item in evaluate_role(FLEET_ROLE, {"hosts": fleet}, subject="fleet")["findings"]:
        by_host.setdefault(item["subject"], []).append(item)
    return by_host


def findings_by_check(entries, clusters):
    """Per check (``role``/``check``) that found something: how many findings of each severity, and
    on how many of the reported hosts. A cluster finding about a node counts once, though that node's
    entry lists it too."""
    table = {}

    def row_of(item):
        key = (item.get("role") or "?", item.get("check") or "?")
        if key not in table:
            table[key] = {"role": key[0], "check": key[1], "critical": 0, "warning": 0, "info": 0, "hosts": set()}
        return table[key]

    counted = set()
    for cluster in clusters:
        for item in cluster["findings"]:
            counted.add(id(item))
            if item.get("severity") in SEVERITY_ORDER:
                row_of(item)[item["severity"]] += 1
    for entry in entries:
        for item in entry["findings"]:
            row = row_of(item)
            row["hosts"].add(entry["name"])
            if id(item) not in counted and item.get("severity") in SEVERITY_ORDER:
                row[item["severity"]] += 1
    rows = [dict(row, hosts=len(row["hosts"])) for row in table.values()]
    rows.sort(key=lambda r: (-r["critical"], -r["warning"], -r["info"], r["role"], r["check"]))
    return rows


def build_report(hosts, sources, title="RDMA fleet report", generated_at=None, cluster_vars=()):
    """``hosts`` maps host name to its variables, ``sources`` names the roles to read (the registry's);
    ``cluster_vars`` are the variables of further hosts that ran cluster-scope roles (``localhost``).
    Returns the report structure."""
    clusters = cluster_sections(list(hosts.values()) + list(cluster_vars), sources)
    by_node = _node_findings(clusters)
    for name, items in fleet_findings(hosts).items():
        by_node.setdefault(name, []).extend(items)
    entries = [host_entry(name, host_vars or {}, sources, by_node) for name, host_vars in hosts.items()]
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
    totals["cluster_findings"] = sum(len(c["findings"]) for c in clusters)
    return {
        "schema_version": SCHEMA_VERSION,
        "title": title,
        "generated_at": generated_at or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "totals": totals,
        "groups": [groups[name] for name in sorted(groups)],
        "clusters": clusters,
        "findings_by_check": findings_by_check(entries, clusters),
        "sources": list(sources),
        "hosts": entries,
    }


def failing_hosts(report):
    """``{host: message}`` for every host with a critical finding: what the report's fail switch acts on."""
    return {
        entry["name"]: "%d critical finding(s) on %s: %s" % (
            entry["critical"], entry["name"], "; ".join(f["message"] for f in entry["findings"] if f.get("severity") == "critical"))
        for entry in report["hosts"] if entry["status"] == "critical"
    }
