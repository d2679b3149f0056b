# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the quarantine of faulty nodes (role rdma.node.k8s_quarantine): the plan and the pods to evict.

The logic is ``plugins/plugin_utils/_quarantine.py``; these read Ansible's hostvars the way the fleet
report does (only the variables needed, raw, as plain data) and turn its errors into one sentence.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule
from ansible_collections.rdma.node.plugins.plugin_utils._findings import FindingError, plain
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError

_quarantine = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._quarantine")

# What a host's ansible_facts may hold for the plan besides the roles' results: the time of its checks.
HOST_KEYS = ("group_names", "k8s_node_name")


def _call(name, func, *args, **kwargs):
    try:
        return func(*args, **kwargs)
    except (CheckError, FindingError) as exc:  # QuarantineError too
        raise AnsibleFilterError("rdma.node.%s: %s" % (name, exc)) from None


def _raw(hostvars, host):
    """One host's variables without rendering them all (hostvars render on access; these are facts)."""
    try:
        found = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars[host]
    except Exception:  # a host outside the inventory
        return {}
    return found if isinstance(found, Mapping) else {}


def host_inputs(hostvars, host, roles):
    """What the plan reads of one host, as plain data: group names, node name, each role's findings and
    status (at the top level in this run, in ansible_facts from a fact cache) and the counters' time."""
    found = _raw(hostvars, host)
    wanted = [role + suffix for role in roles for suffix in ("_findings", "_status")]
    out = {key: plain(found[key], "%s of %s" % (key, host)) for key in HOST_KEYS + tuple(wanted) if found.get(key) is not None}
    facts = found.get("ansible_facts")
    if isinstance(facts, Mapping):
        kept = {key: plain(facts[key], "ansible_facts.%s of %s" % (key, host)) for key in wanted if facts.get(key) is not None}
        rdma = facts.get("rdma")
        if isinstance(rdma, Mapping) and rdma.get("counters_time") is not None:
            kept["rdma"] = {"counters_time": plain(rdma["counters_time"])}
        out["ansible_facts"] = kept
    return out


def k8s_quarantine_settings(options):
    """The role's options checked, with their defaults: one sentence naming the option when one is wrong."""
    return _call("k8s_quarantine_settings", _quarantine.settings, plain(options, "k8s_quarantine options"))


def k8s_quarantine_plan(hostvars, hosts, reading, options, now=None, guard_failed=None):
    """What to quarantine, keep, count and release, and the requests that do it."""
    name = "k8s_quarantine_plan"
    if not isinstance(hostvars, Mapping) and not hasattr(hostvars, "raw_get"):
        raise AnsibleFilterError("rdma.node.%s: expected hostvars (or a mapping of host to its variables) as input, got %s"
                                 % (name, type(hostvars).__name__))
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("rdma.node.%s: hosts must be a list of inventory host names, got %r" % (name, hosts))
    if not isinstance(reading, Mapping):
        raise AnsibleFilterError("rdma.node.%s: reading must be what the role read from the cluster (a mapping), got %r" % (name, reading))
    cfg = k8s_quarantine_settings(options)
    inputs = {str(h): host_inputs(hostvars, str(h), cfg["roles"]) for h in hosts}
    return _call(name, _quarantine.plan, inputs, plain(dict(reading), "reading"), cfg, time.time() if now is None else float(now),
                 guard_failed=str(guard_failed) if guard_failed else None)


def k8s_quarantine_pods(pods, resources):
    """The pods of a node that use RDMA or GPU resources and can be evicted, and those left out with why."""
    if isinstance(resources, str) or not isinstance(resources, (list, tuple)):
        raise AnsibleFilterError("rdma.node.k8s_quarantine_pods: resources must be a list such as ['rdma/*', 'nvidia.com/gpu'], got %r"
                                 % (resources,))
    return _call("k8s_quarantine_pods", _quarantine.pods_to_evict, plain(pods or [], "pods"), [str(r) for r in resources])


class FilterModule:
    def filters(self):
        return {
            "k8s_quarantine_settings": k8s_quarantine_settings,
            "k8s_quarantine_plan": k8s_quarantine_plan,
            "k8s_quarantine_pods": k8s_quarantine_pods,
        }
