# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the fleet's consistency: HCAs of one inventory group that differ from the rest.

Unlike every other role's checks these judge many hosts at once, so they run where all hosts'
facts meet: the fleet report (``plugin_utils/_fleet_report.build_report``). Their one fact is
``hosts``: ``{host name: {"group_names": [...], "devices": ansible_facts.rdma.devices}}``. Each
finding's subject is the odd host, so the report shows it on that host.

Within a group, HCAs are compared with the others of the same type (``hca_type``): the value most
of them have is the group's, and a host whose HCA has another is odd. When no value has a majority
(two hosts, two firmwares) every host of the split is named, since nothing says which is right.
A host in several groups is judged in the first group, in name order, that shows the difference.
"""

from __future__ import annotations

import collections

from ansible_collections.rdma.node.plugins.plugin_utils._registry import check

ROLE = "fleet_consistency"
FACTS = ("hosts",)
IGNORED_GROUPS = ("all", "ungrouped")


def _groups(hosts):
    groups = {}
    for name, host in sorted((hosts or {}).items()):
        for group in (host or {}).get("group_names") or []:
            if group not in IGNORED_GROUPS:
                groups.setdefault(group, []).append(name)
    return groups


def _physical(host):
    devices = (host or {}).get("devices") or {}
    return {name: d for name, d in sorted(devices.items()) if isinstance(d, dict) and not d.get("virtual_function")}


def _verdict(counter):
    """The value the group has (None when no value has more HCAs than every other)."""
    ranked = counter.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _drift(facts, found, key, what):
    hosts = facts["hosts"]
    reported = set()
    for group, members in sorted(_groups(hosts).items()):
        by_type = {}
        for host in members:
            for device, attrs in _physical(hosts[host]).items():
                if attrs.get(key) is not None and attrs.get("hca_type"):
                    by_type.setdefault(attrs["hca_type"], []).append((host, device, attrs[key]))
        for hca_type, entries in sorted(by_type.items()):
            values = collections.Counter(value for _h, _d, value in entries)
            if len(values) < 2:
                continue
            usual = _verdict(values)
            for host, device, value in entries:
                if value == usual or (host, device) in reported:
                    continue
                reported.add((host, device))
                if usual is None:
                    others = ", ".join("%s on %d" % (v, n) for v, n in sorted(values.items()) if v != value)
                    message = ("%s: %s (%s) has %s %s, and the %s HCAs of %s are split with no majority (%s elsewhere)." % (
                        host, device, hca_type, what, value, hca_type, group, others))
                else:
                    message = "%s: %s (%s) has %s %s where %d of the %d %s HCAs of %s have %s." % (
                        host, device, hca_type, what, value, values[usual], len(entries), hca_type, group, usual)
                found.warning(host, message, usual, value)


@check(ROLE, "firmware_drift", reads=FACTS)
def firmware_drift(facts, params, found):
    """An HCA runs another firmware version than most HCAs of its type in its inventory group."""
    _drift(facts, found, "fw_ver", "firmware")


@check(ROLE, "board_id_drift", reads=FACTS)
def board_id_drift(facts, params, found):
    """An HCA has another board ID (PSID) than most HCAs of its type in its inventory group."""
    _drift(facts, found, "board_id", "board ID")


def _kinds_text(kinds):
    """``MT4125, 7 x MT4129, MT41692``: a host's HCA types, counted."""
    counted = collections.Counter(kinds)
    return ", ".join("%d x %s" % (n, kind) if n > 1 else kind for kind, n in sorted(counted.items()))


@check(ROLE, "hca_type_drift", reads=FACTS)
def hca_type_drift(facts, params, found):
    """A host's set of HCA types differs from what most hosts of its inventory group have."""
    hosts = facts["hosts"]
    reported = set()
    for group, members in sorted(_groups(hosts).items()):
        kinds = {host: tuple(sorted(d.get("hca_type") or "?" for d in _physical(hosts[host]).values())) for host in members}
        kinds = {host: kind for host, kind in kinds.items() if kind}
        counts = collections.Counter(kinds.values())
        if len(counts) < 2:
            continue
        usual = _verdict(counts)
        for host, kind in sorted(kinds.items()):
            if kind == usual or host in reported:
                continue
            reported.add(host)
            shown = _kinds_text(kind)
            if usual is None:
                message = "%s has the HCAs %s, and the hosts of %s are split with no majority." % (host, shown, group)
            else:
                message = "%s has the HCAs %s where %d of the %d hosts of %s have %s." % (
                    host, shown, counts[usual], len(kinds), group, _kinds_text(usual))
            found.warning(host, message, list(usual) if usual else None, list(kind))
