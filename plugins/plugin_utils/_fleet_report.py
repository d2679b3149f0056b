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

A host's status says what is known of it, never more: ``critical`` and ``warning`` by its worst
finding; ``unreachable`` when the collection's gather could not reach it (``rdma_unreachable``, with
Ansible's reason); ``no_data`` when no role left results for it (with why, as far as the report can
tell); ``ok`` otherwise. The checks that could not run or could not judge a subject (each role
status's ``skipped_checks`` and ``not_checked``) are listed per host as ``not_checked``, whatever its
status, so that a host whose checks were skipped never reads as plainly ok.
"""

from __future__ import annotations

import datetime

from ansible_collections.rdma.node.plugins.plugin_utils._checks.fleet import ROLE as FLEET_ROLE
from ansible_collections.rdma.node.plugins.plugin_utils._findings import tally
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_physical import views_of
from ansible_collections.rdma.node.plugins.plugin_utils._pod_proof import node_views

# The version of the report's JSON shape; a consumer checks it before reading the rest.
SCHEMA_VERSION = 3
CLUSTER_PREFIX = "cluster/"

# Worst first: a host with a critical finding, then one that could not be reached, then one the roles
# left nothing for, then warnings.
STATUS_ORDER = {"critical": 0, "unreachable": 1, "no_data": 2, "warning": 3, "ok": 4}
# Why a host has no data, as far as the report can tell.
NO_DATA_REMOVED = ("Ansible took this host out of the run before the report (it was unreachable, or a task failed on it), "
                   "and no role of this collection left results for it.")
NO_DATA_NEVER_CHECKED = ("No role of this collection left results for this host: it was not checked in this run, "
                         "and the fact cache, if the run reads one, holds none for it.")
# The fleet-wide checks whose findings mark one value of an HCA as differing from its group's.
DRIFT_CHECKS = {"firmware_drift": ("fw_ver", "fw_expected"), "board_id_drift": ("board_id", "board_expected")}
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


def _findings_of(host, role, value):
    """A role's findings on a host as a list of mappings; ValueError when they are something else (a hand-set
    variable, an edited fact cache), rather than a report that reads them as no findings."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(finding, dict) for finding in value):
        raise ValueError("%s_findings of %s: expected a list of findings (mappings), got %s" % (role, host, repr(value)[:80]))
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


def pair_hosts(subject):
    """The two hosts of a pair test's id ``SERVER:PORT>CLIENT:PORT`` (``a:mlx5_0/1>b:mlx5_0/1``), or None
    for any other subject. A port name has no colon, so a host name may (an IPv6 address)."""
    server, sep, client = str(subject or "").partition(">")
    if not sep or ">" in client:
        return None
    hosts = [side.rpartition(":")[0] for side in (server, client)]
    return hosts if all(hosts) else None


def _node_findings(clusters):
    """Cluster findings by the node they concern (their subject), to show on that host too; a pair test's
    finding (``SERVER:PORT>CLIENT:PORT``) on both of its hosts, since neither node is proven."""
    by_node = {}
    for cluster in clusters:
        for item in cluster["findings"]:
            hosts = pair_hosts(item.get("subject")) or [str(item.get("subject"))]
            for host in dict.fromkeys(hosts):
                by_node.setdefault(host, []).append(item)
    return by_node


def pod_proof_by_host(clusters):
    """``{host: {"pairs", "pods", "nccl", "memlock_capped"}}`` from the pod proof's status in the cluster section
    (``_pod_proof.node_views``): each host's side of its pod pairs, what its pods printed, its groups' NCCL."""
    by_host = {}
    for cluster in clusters:
        status = cluster["roles"].get("pod_proof")
        if isinstance(status, dict):
            findings = [f for f in cluster["findings"] if f.get("role") == "pod_proof"]
            for host, view in node_views(status, findings).items():
                merged = by_host.setdefault(host, {"pairs": [], "pods": [], "nccl": [], "memlock_capped": False})
                for key in ("pairs", "pods", "nccl"):
                    merged[key].extend(view[key])
                merged["memlock_capped"] = merged["memlock_capped"] or view["memlock_capped"]
    return by_host


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


def _text(value):
    return None if value is None else str(value)


def not_checked(statuses):
    """What the roles could not judge on a host: ``[{"role", "check", "subject", "reason"}]``, from each
    role status's ``skipped_checks`` (a check whose facts were not gathered) and ``not_checked`` (a
    check that ran but could not judge one subject)."""
    items = []
    for role in sorted(statuses):
        status = statuses[role] if isinstance(statuses[role], dict) else {}
        for skipped in status.get("skipped_checks") or []:
            if not isinstance(skipped, dict):
                continue
            missing = skipped.get("missing") or skipped.get("missing_facts") or []
            missing = [str(m) for m in missing] if isinstance(missing, list) else [str(missing)]
            reason = skipped.get("reason") or ("the data it reads was not gathered: %s" % ", ".join(missing) if missing
                                               else "the check was skipped")
            items.append({"role": role, "check": _text(skipped.get("check")), "subject": None, "reason": str(reason)})
        for item in status.get("not_checked") or []:
            if isinstance(item, dict):
                items.append({"role": role, "check": _text(item.get("check")), "subject": _text(item.get("subject")),
                              "reason": str(item.get("reason") or "no reason given")})
    return items


def _unreachable(host_vars):
    """``{"reason", "time"}`` when the collection's gather could not reach the host, else None."""
    value = _lookup(host_vars, "rdma_unreachable")
    if not value:
        return None
    if not isinstance(value, dict):
        return {"reason": str(value), "time": None}
    return {"reason": str(value.get("reason") or "no reason given"), "time": _text(value.get("time"))}


def _mark_drift(hcas_of_host, findings):
    """Mark the HCA values that the fleet-wide checks found different from their group's:
    ``fw_expected``/``board_expected`` hold the group's value."""
    for item in findings:
        marked = DRIFT_CHECKS.get(item.get("check")) if item.get("role") == FLEET_ROLE else None
        if marked is None:
            continue
        key, mark = marked
        for hca in hcas_of_host:
            if hca.get(key) is not None and hca.get(key) == item.get("actual"):
                hca[mark] = item.get("expected")


def counter_rises(node_health, rdma):
    """The error counters that rose on a host, per hour, and over which interval they were measured:
    ``{"source", "interval_seconds", "rates": [{"port", "counter", "per_hour"}]}`` or None.

    A rate per hour from a sample of one second is one error times 3600: the interval goes with it."""
    rates = (node_health or {}).get("counter_rates_per_hour")
    if not isinstance(rates, dict):
        return None
    rising = []
    for port in sorted(rates):
        counters = rates[port] if isinstance(rates[port], dict) else {}
        for counter in sorted(counters):
            value = counters[counter]
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                rising.append({"port": str(port), "counter": str(counter), "per_hour": value})
    if not rising:
        return None
    source = node_health.get("counter_rates_source")
    interval = node_health.get("counter_rates_interval_seconds")
    if interval is None and source == "this run":
        interval = (rdma or {}).get("counters_interval_seconds")
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
        interval = None
    return {"source": _text(source), "interval_seconds": interval, "rates": rising}


def host_entry(name, host_vars, sources, node_findings=None, removed=False, pod_proof=None):
    """Everything the report shows about one host; ``removed``: Ansible took it out of the play;
    ``pod_proof``: its part of the pod proof (pod_proof_by_host())."""
    findings = []
    statuses = {}
    for source in sources:
        status = _lookup(host_vars, source + "_status")
        if _is_cluster(status):
            continue
        findings.extend(_findings_of(name, source, _lookup(host_vars, source + "_findings")))
        if status is not None:
            statuses[source] = status
    node_findings = node_findings or {}
    findings.extend(node_findings.get(name) or node_findings.get(name.split(".")[0]) or [])
    findings.sort(key=lambda f: (SEVERITY_ORDER.get(f.get("severity"), 3), f.get("role") or "", f.get("subject") or ""))
    counts = tally(findings)
    critical, warning = counts["critical"], counts["warning"]
    unreachable = _unreachable(host_vars)
    reason = None
    if critical:
        status = "critical"
    elif unreachable:
        status, reason = "unreachable", unreachable["reason"]
    elif not statuses:
        status, reason = "no_data", NO_DATA_REMOVED if removed else NO_DATA_NEVER_CHECKED
    elif warning:
        status = "warning"
    else:
        status = "ok"
    rdma = (host_vars.get("ansible_facts") or {}).get("rdma") or {}
    inventory = statuses.get("ib_inventory") or {}
    bandwidth = statuses.get("bandwidth_check") or {}
    devices = hcas(rdma)
    _mark_drift(devices, findings)
    return {
        "name": name,
        "groups": sorted(g for g in host_vars.get("group_names") or [] if g not in HIDDEN_GROUPS),
        "status": status,
        "reason": reason,
        "unreachable": unreachable,
        "critical": critical,
        "warning": warning,
        "summary": inventory.get("facts_summary") or rdma.get("summary"),
        "ports": inventory.get("ports") or [],
        "hcas": devices,
        "driver": statuses.get("driver_verify"),
        # Each loopback and pair test: port, peer (pairs), measured and expected Gb/s, verdict, cause.
        "bandwidth": (bandwidth.get("loopback") or []) + (bandwidth.get("pairs") or []),
        # Its side of each pod pair of the pod proof, what its pods printed, its groups' NCCL transport.
        "pod_proof": (pod_proof or {}).get(name) or (pod_proof or {}).get(name.split(".")[0]),
        "counter_rises": counter_rises(statuses.get("node_health"), rdma),
        # Temperatures, AER totals, BER and RoCE QoS, compact (None where no physical subset was gathered).
        "physical": views_of(host_vars.get("ansible_facts")).get("physical"),
        "checks": sorted(statuses),
        "not_checked": not_checked(statuses),
        "findings": findings,
    }


def fleet_findings(hosts, sources=()):
    """``{host: [findings]}`` of the fleet-wide checks (``_checks/fleet.py``: HCAs that differ from the
    rest of their inventory group; ``_checks/consensus.py``: settings that do), which need every host's
    facts at once. They get the compact views of the facts (``_fleet_report_physical``) and the
    ``role/check`` names of each host's own findings of the ``sources`` roles."""
    fleet = {}
    for name, host_vars in hosts.items():
        host_vars = host_vars or {}
        facts = host_vars.get("ansible_facts") or {}
        consensus = views_of(facts).get("consensus") or {}
        reported = {"%s/%s" % (f.get("role"), f.get("check")) for source in sources
                    for f in _lookup(host_vars, source + "_findings") or [] if isinstance(f, dict)}
        fleet[name] = {"group_names": host_vars.get("group_names") or [], "devices": (facts.get("rdma") or {}).get("devices") or {},
                       "rdma": consensus.get("rdma"), "rdma_driver": consensus.get("rdma_driver"), "reported": sorted(reported)}
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


def build_report(hosts, sources, title="RDMA fleet report", generated_at=None, cluster_vars=(), removed=()):
    """``hosts`` maps host name to its variables, ``sources`` names the roles to read (the registry's);
    ``cluster_vars`` are the variables of further hosts that ran cluster-scope roles (``localhost``);
    ``removed`` names the hosts Ansible took out of the play before the report. Returns the report
    structure (``changes`` is None: the caller compares with the previous report, if any)."""
    clusters = cluster_sections(list(hosts.values()) + list(cluster_vars), sources)
    by_node = _node_findings(clusters)
    for name, items in fleet_findings(hosts, sources).items():
        by_node.setdefault(name, []).extend(items)
    removed = set(removed)
    proofs = pod_proof_by_host(clusters)
    entries = [host_entry(name, host_vars or {}, sources, by_node, name in removed, proofs) for name, host_vars in hosts.items()]
    entries.sort(key=lambda h: (STATUS_ORDER[h["status"]], -h["critical"], -h["warning"], h["name"]))
    groups = {}
    for entry in entries:
        for group in entry["groups"] or ["ungrouped"]:
            counts = groups.setdefault(group, dict({"name": group, "hosts": 0}, **dict.fromkeys(STATUS_ORDER, 0)))
            counts["hosts"] += 1
            counts[entry["status"]] += 1
    totals = {"hosts": len(entries)}
    for status in STATUS_ORDER:
        totals[status] = sum(1 for e in entries if e["status"] == status)
    totals["findings"] = sum(len(e["findings"]) for e in entries)
    totals["cluster_findings"] = sum(len(c["findings"]) for c in clusters)
    totals["hosts_not_fully_checked"] = sum(1 for e in entries if e["not_checked"])
    return {
        "schema_version": SCHEMA_VERSION,
        "title": title,
        "generated_at": generated_at or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "totals": totals,
        "changes": None,
        "groups": [groups[name] for name in sorted(groups)],
        "clusters": clusters,
        "findings_by_check": findings_by_check(entries, clusters),
        "sources": list(sources),
        "hosts": entries,
    }


def failing_hosts(report):
    """``{host: message}`` for every host with a critical finding, and every host that could not be
    reached: what the report's fail switch acts on (an unreachable host was not checked, and a job that
    passes over it must not read as a success)."""
    failing = {}
    for entry in report["hosts"]:
        if entry["status"] == "critical":
            failing[entry["name"]] = "%d critical finding(s) on %s: %s" % (
                entry["critical"], entry["name"], "; ".join(f["message"] for f in entry["findings"] if f.get("severity") == "critical"))
        elif entry["status"] == "unreachable":
            failing[entry["name"]] = "%s could not be reached, so none of its checks ran: %s" % (entry["name"], entry["reason"])
    return failing
