# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What changed since the previous report: per host, the findings that are new, resolved, still open.

The previous report is the JSON report that the last run left in the same directory. A finding is
the same finding when its role, check and subject are the same; its message is not compared, as it
carries numbers that change from run to run (a counter's rise, a measured rate).

A finding of the previous report that is gone is *resolved* only when this run judged it again: the
host was reached, the role reported on it, and the check was neither skipped nor unable to judge
that subject. Otherwise it is *not checked*, never resolved by omission. A host that is no longer in
the report keeps its previous findings as not checked.
"""

from __future__ import annotations

import json
import os
import stat

from ansible_collections.rdma.node.plugins.plugin_utils._checks.fleet import ROLE as FLEET_ROLE
from ansible_collections.rdma.node.plugins.plugin_utils._safe_text import clean

# A report of a thousand hosts is a few megabytes; a file far larger is not one of ours.
PREVIOUS_MAX_BYTES = 256 * 1024 * 1024
FIRST_REPORT = "This is the first report in this directory: there is no earlier report to compare with."
NOT_JUDGED = ("unreachable", "no_data")
SUMMARY_KEYS = ("severity", "role", "check", "subject", "message")


def read_previous(path):
    """``(report, None)`` for the JSON report at ``path``, or ``(None, note)`` saying why there is none."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, FIRST_REPORT
    except OSError as exc:
        return None, "The earlier report %s cannot be read (%s): nothing is compared." % (path, exc.strerror or exc)
    if not stat.S_ISREG(info.st_mode):
        return None, "The earlier report %s is not a regular file: nothing is compared." % path
    if info.st_size > PREVIOUS_MAX_BYTES:
        return None, "The earlier report %s has %d bytes, more than any report of this collection: nothing is compared." % (
            path, info.st_size)
    try:
        with open(path, encoding="utf-8") as handle:
            previous = json.load(handle)
    except (OSError, ValueError, RecursionError) as exc:
        return None, "The earlier report %s is not a JSON report (%s): nothing is compared." % (path, str(exc).splitlines()[0][:200])
    hosts = previous.get("hosts") if isinstance(previous, dict) else None
    if not isinstance(hosts, list) or not all(isinstance(h, dict) and isinstance(h.get("name"), str) for h in hosts):
        return None, "The earlier report %s has no list of hosts with names: nothing is compared." % path
    return clean(previous), None


def _identity(item):
    return (str(item.get("role")), str(item.get("check")), str(item.get("subject")))


def _findings_of(entry):
    """``{identity: summary}`` of a host entry's findings (malformed ones are left out)."""
    found = {}
    for item in entry.get("findings") or []:
        if isinstance(item, dict) and item.get("role") and item.get("check"):
            found.setdefault(_identity(item), {key: item.get(key) for key in SUMMARY_KEYS})
    return found


def _judged(entry, cluster_roles):
    """Whether this run judged the finding ``identity`` on ``entry``'s host: a predicate."""
    if entry.get("status") in NOT_JUDGED:
        return lambda identity: False
    roles = set(entry.get("checks") or ()) | set(cluster_roles) | ({FLEET_ROLE} if entry.get("hcas") else set())
    skipped = set()
    unjudged = set()
    for item in entry.get("not_checked") or []:
        if item.get("subject") is None:
            skipped.add((item.get("role"), item.get("check")))
        else:
            unjudged.add((item.get("role"), item.get("check"), item.get("subject")))
    return lambda identity: identity[0] in roles and identity[:2] not in skipped and identity not in unjudged


def compare(previous, report, note=None):
    """The ``changes`` section of ``report`` against ``previous`` (a report, or None with ``note``)."""
    if previous is None:
        return {"previous": None, "note": note or FIRST_REPORT, "totals": None, "hosts": []}
    cluster_roles = {role for cluster in report.get("clusters") or [] for role in cluster.get("roles") or {}}
    before = {entry["name"]: entry for entry in previous["hosts"]}
    rows = []
    totals = dict.fromkeys(("new", "resolved", "still_open", "not_checked", "hosts_changed"), 0)
    current_names = set()
    for entry in report["hosts"]:
        current_names.add(entry["name"])
        now = _findings_of(entry)
        earlier_entry = before.get(entry["name"])
        earlier = _findings_of(earlier_entry) if earlier_entry is not None else {}
        judged = _judged(entry, cluster_roles)
        gone = [earlier[key] for key in earlier if key not in now]
        row = {
            "name": entry["name"],
            "status": entry["status"],
            "note": "new in this report" if earlier_entry is None else None,
            "new": [now[key] for key in now if key not in earlier],
            "resolved": [item for item in gone if judged(_identity(item))],
            "still_open": sum(1 for key in now if key in earlier),
            "not_checked": [item for item in gone if not judged(_identity(item))],
        }
        rows.append(row)
    for name in sorted(set(before) - current_names):
        rows.append({"name": name, "status": None, "note": "not in this report", "new": [], "resolved": [], "still_open": 0,
                     "not_checked": list(_findings_of(before[name]).values())})
    changed = []
    for row in rows:
        for key in ("new", "resolved", "not_checked"):
            totals[key] += len(row[key])
        totals["still_open"] += row["still_open"]
        if row["new"] or row["resolved"] or row["not_checked"] or row["note"]:
            changed.append(row)
    totals["hosts_changed"] = len(changed)
    return {
        "previous": {"generated_at": previous.get("generated_at"), "schema_version": previous.get("schema_version")},
        "note": None,
        "totals": totals,
        "hosts": changed,
    }
