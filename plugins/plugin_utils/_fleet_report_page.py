# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data that the HTML report's page embeds, and its safe embedding.

The page is one self-contained file: its script renders the host rows from a JSON block and filters
and sorts them in the browser, so a fleet of a thousand hosts is one page, not a thousand templated
rows. The block keeps only what the page shows (the JSON report has the rest), which keeps the file
small: the driver status's check list and summary line, the findings' expected/actual values and the
port rules are left out.
"""

from __future__ import annotations

import json

PORT_KEYS = ("port", "state", "phys_state", "rate_gbps", "expected_rate_gbps", "link_layer", "netdevs", "netdev_state", "verdict")
BANDWIDTH_KEYS = ("port", "peer", "measured_gbps", "expected_gbps", "verdict", "cause")
FINDING_KEYS = ("severity", "role", "check", "subject", "message")
NOT_CHECKED_KEYS = ("role", "check", "subject", "reason")
DRIVER_KEYS = ("kernel", "next_boot_kernel", "ofed_version", "missing_kernels")
POD_PAIR_KEYS = ("port", "peer", "memory", "measured_gbps", "expected_gbps", "verdict", "cause")
POD_KEYS = ("side", "memlock", "ipc_lock", "stuck")
NCCL_KEYS = ("group", "network", "transports")

# In a <script> element the HTML parser ends the element at "</script" and treats "<!--" specially,
# whatever the JSON means: spelling these characters as JSON escapes keeps the text inert.
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def _pick(item, keys):
    item = item if isinstance(item, dict) else {}
    return {key: item.get(key) for key in keys}


def page_host(entry):
    """What the page shows of one host entry of the report."""
    driver = entry.get("driver") or {}
    findings = entry.get("findings") or []
    host = {
        "name": entry.get("name"),
        "status": entry.get("status"),
        "groups": list(entry.get("groups") or []),
        "critical": entry.get("critical") or 0,
        "warning": entry.get("warning") or 0,
        "info": sum(1 for f in findings if f.get("severity") == "info"),
        "ports": [_pick(p, PORT_KEYS) for p in entry.get("ports") or []],
        "hcas": list(entry.get("hcas") or []),
        "bandwidth": [_pick(t, BANDWIDTH_KEYS) for t in entry.get("bandwidth") or []],
        "findings": [_pick(f, FINDING_KEYS) for f in findings],
        "reason": entry.get("reason"),
        "unreachable_time": (entry.get("unreachable") or {}).get("time"),
        "not_checked": [_pick(n, NOT_CHECKED_KEYS) for n in entry.get("not_checked") or []],
        "counter_rises": entry.get("counter_rises"),
        "physical": entry.get("physical"),
        "pod_proof": _pod_proof(entry.get("pod_proof")),
    }
    host.update(_pick(driver, DRIVER_KEYS))
    host["missing_kernels"] = list(host["missing_kernels"] or [])
    return host


def _pod_proof(proof):
    """What the page shows of a host's part in the pod proof, or None where it took none."""
    if not isinstance(proof, dict):
        return None
    return {"pairs": [_pick(t, POD_PAIR_KEYS) for t in proof.get("pairs") or []],
            "pods": [_pick(p, POD_KEYS) for p in proof.get("pods") or []],
            "nccl": [_pick(n, NCCL_KEYS) for n in proof.get("nccl") or []]}


def page_data(report):
    """The page's data: the hosts as the page shows them, and the choices of its filters."""
    hosts = [page_host(entry) for entry in report.get("hosts") or []]
    checks = sorted({"%s/%s" % (row["role"], row["check"]) for row in report.get("findings_by_check") or []})
    return {
        "schema_version": report.get("schema_version"),
        "groups": sorted({group for host in hosts for group in host["groups"]}),
        "checks": checks,
        "hosts": hosts,
    }


def script_json(data):
    """``data`` as JSON text that can sit inside ``<script type="application/json">`` unchanged."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=False).translate(_SCRIPT_ESCAPES)
