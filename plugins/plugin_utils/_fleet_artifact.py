# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's summary for AWX: one documented shape, ``rdma_fleet``, with a size budget.

AWX keeps what ``set_stats`` publishes as the job's artifacts, shows them with the job, hands them
to the next nodes of a workflow as extra variables and puts them in notifications. So the summary
must stay small whatever the size of the fleet: it is built to fit ``max_bytes`` of compact JSON
(64 KiB by default, far below AWX's 700,000-byte limit on one event's data, MAX_EVENT_RES_DATA).

Shape (``schema`` 2)::

    {"schema": 2, "title": ..., "generated_at": ...,
     "totals": {"hosts", "critical", "unreachable", "no_data", "warning", "ok", "findings", "cluster_findings",
                "hosts_not_fully_checked"},
     "changes": {"since", "new", "resolved", "still_open", "not_checked"} or null (no earlier report),
     "report": {"dir": ..., "files": [...], "upload_url": ... (user, password and query redacted) or null,
                "upload": {"url", "ok", "files", "error", "not_sent"} or null},
     "hosts": {"<host>": {"status", "critical", "warning", "info"}},      # worst first; "reason" for an
                                                                           # unreachable host or one without
                                                                           # data, "not_checked": n when
                                                                           # checks could not run
     "findings": [{"host", "role", "check", "severity", "subject", "message"}],  # worst first
     "complete": true/false,
     "omitted": {"hosts": n, "findings": {"critical": n, "warning": n, "info": n}},
     "limit_bytes": max_bytes, "size_bytes": size of this document}

When everything does not fit, detail is given up in a fixed order, never cut at an arbitrary byte:
info findings first, then the names of the hosts that are ok (they stay counted in ``totals``),
then warnings, and at last the hosts beyond the worst N (N as large as fits) with their critical findings.
``complete`` is false as soon as anything was left out, and ``omitted`` says how much of each kind.
"""

from __future__ import annotations

import json

SCHEMA_VERSION = 2
DEFAULT_MAX_BYTES = 65536
SEVERITIES = ("critical", "warning", "info")
# What each level of detail keeps: the severities of the findings, and whether ok hosts are listed.
LEVELS = (
    (("critical", "warning", "info"), True),
    (("critical", "warning"), True),
    (("critical", "warning"), False),
    (("critical",), False),
)


def _size(document):
    return len(json.dumps(document, separators=(",", ":"), sort_keys=True).encode("utf-8"))


def _host_counts(host):
    counts = {severity: 0 for severity in SEVERITIES}
    for found in host.get("findings") or []:
        if found.get("severity") in counts:
            counts[found["severity"]] += 1
    entry = {"status": host.get("status"), "critical": counts["critical"], "warning": counts["warning"], "info": counts["info"]}
    # Only where there is something to say, so that a thousand healthy hosts cost no more than before.
    if host.get("reason"):
        entry["reason"] = host["reason"]
    if host.get("not_checked"):
        entry["not_checked"] = len(host["not_checked"])
    return entry


def _changes(report):
    changes = report.get("changes") or {}
    if not changes.get("totals"):
        return None
    return dict({"since": (changes.get("previous") or {}).get("generated_at")},
                **{key: changes["totals"][key] for key in ("new", "resolved", "still_open", "not_checked")})


def _finding(host_name, found):
    return {
        "host": host_name, "role": found.get("role"), "check": found.get("check"), "severity": found.get("severity"),
        "subject": found.get("subject"), "message": found.get("message"),
    }


def _document(report, report_location, hosts, severities, all_counts):
    """The summary keeping ``hosts`` (report entries, worst first) and their findings of ``severities``."""
    findings = []
    for host in hosts:
        findings.extend(_finding(host["name"], f) for f in host.get("findings") or [] if f.get("severity") in severities)
    findings.sort(key=lambda f: SEVERITIES.index(f["severity"]) if f["severity"] in SEVERITIES else len(SEVERITIES))
    kept = {severity: sum(1 for f in findings if f["severity"] == severity) for severity in SEVERITIES}
    omitted_findings = {severity: all_counts[severity] - kept[severity] for severity in SEVERITIES}
    omitted_hosts = len(report.get("hosts") or []) - len(hosts)
    document = {
        "schema": SCHEMA_VERSION,
        "title": report.get("title"),
        "generated_at": report.get("generated_at"),
        "totals": dict(report.get("totals") or {}),
        "changes": _changes(report),
        "report": dict(report_location),
        "hosts": {host["name"]: _host_counts(host) for host in hosts},
        "findings": findings,
        "complete": not omitted_hosts and not any(omitted_findings.values()),
        "omitted": {"hosts": omitted_hosts, "findings": omitted_findings},
    }
    return document


def _finish(document, max_bytes):
    document["limit_bytes"] = max_bytes
    document["size_bytes"] = 0
    # The size field is part of the document: settle it (its own digits can change the size once).
    for _attempt in range(3):
        size = _size(document)
        if document["size_bytes"] == size:
            break
        document["size_bytes"] = size
    return document


def fleet_artifact(report, report_location=None, max_bytes=DEFAULT_MAX_BYTES):
    """Summarise ``report`` (the structure of ``_fleet_report.build_report``) into at most ``max_bytes``.

    ``report_location`` is ``{"dir", "files", "upload_url"}``: where the full report went.
    """
    if not isinstance(report, dict) or not isinstance(report.get("hosts"), list):
        raise ValueError("expected the fleet report's data (a dict with a 'hosts' list), got %s" % type(report).__name__)
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1024:
        raise ValueError("max_bytes must be an integer of at least 1024, got %r" % (max_bytes,))
    location = {"dir": None, "files": [], "upload_url": None, "upload": None}
    location.update(report_location or {})
    hosts = report["hosts"]
    all_counts = {severity: 0 for severity in SEVERITIES}
    for host in hosts:
        for severity, count in _host_counts(host).items():
            if severity in all_counts:
                all_counts[severity] += count

    for severities, list_ok_hosts in LEVELS:
        kept_hosts = hosts if list_ok_hosts else [h for h in hosts if h.get("status") != "ok"]
        document = _finish(_document(report, location, kept_hosts, severities, all_counts), max_bytes)
        if document["size_bytes"] <= max_bytes:
            return document

    # Even the critical findings of every host that is not ok do not fit: keep the worst N hosts,
    # N as large as fits (the report lists hosts worst first). Binary search: sizes grow with N.
    not_ok = [h for h in hosts if h.get("status") != "ok"]
    low, high = 0, len(not_ok)
    best = _finish(_document(report, location, [], ("critical",), all_counts), max_bytes)
    while low < high:
        middle = (low + high + 1) // 2
        candidate = _finish(_document(report, location, not_ok[:middle], ("critical",), all_counts), max_bytes)
        if candidate["size_bytes"] <= max_bytes:
            best, low = candidate, middle
        else:
            high = middle - 1
    if low == 0 and best["size_bytes"] > max_bytes:
        raise ValueError("even the fleet totals do not fit in %d bytes (they take %d)" % (max_bytes, best["size_bytes"]))
    return best
