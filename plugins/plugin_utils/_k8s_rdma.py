# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster side of RDMA, as pure functions over Kubernetes objects and gathered facts.

Controller-side logic of the ``rdma.node.k8s_rdma`` role and the ``k8s`` filters:

* taints and tolerations with the scheduler's matching rules, and the merge of the tolerations a
  NicClusterPolicy needs into the ones it has (existing kept, nothing added twice);
* which nodes have their ``network.nvidia.com/operator.mofed.wait`` label stuck at ``true``, and the
  taints that keep the MOFED driver pod away from them;
* which node must advertise which ``rdma/<name>`` resource, and what each one advertises;
* JSON patches that remove stale extended resources from a node's status (RFC 6901 escaping);
* the RDMA shared device plugin's ``configList`` from each group's ``ansible_facts.rdma``, and its
  merge into the config string a NicClusterPolicy already carries.

Nothing here talks to a cluster: the role reads and patches with ``kubernetes.core`` modules and
hands the objects to these functions. The findings are made by the registered checks of
``_checks/cluster.py`` from what these functions compute. Bad input raises ``K8sRdmaError`` with one
sentence.
"""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError

TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A pod is kept off a node only by these; PreferNoSchedule is a preference.
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"
MOFED_WAIT_LABEL = "network.nvidia.com/operator.mofed.wait"

# ansible_facts.rdma link layers -> the device plugin's linkTypes selector values.
LINK_TYPES = {"infiniband": "infiniband", "ethernet": "ether"}

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
_QUANTITY_SCALE = {
    None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class K8sRdmaError(CheckError):
    """Input that cannot be used; the message is one sentence naming what was wrong.

    A CheckError, so that a check given bad input reports the sentence, not a traceback."""


# ------------------------------------------------------------------------------------ tolerations


def normalize_toleration(toleration):
    """A toleration with every matching field present: key/value/effect '', operator 'Equal'."""
    return {
        "key": toleration.get("key") or "",
        "operator": toleration.get("operator") or "Equal",
        "value": toleration.get("value") or "",
        "effect": toleration.get("effect") or "",
        "tolerationSeconds": toleration.get("tolerationSeconds"),
    }


def validate_toleration(toleration, where):
    """Check one toleration the operator asked for; return it in its compact form."""
    if not isinstance(toleration, dict):
        raise K8sRdmaError("%s: expected a toleration mapping (key, operator, value, effect), got %r" % (where, toleration))
    unknown = sorted(set(toleration) - {"key", "operator", "value", "effect", "tolerationSeconds"})
    if unknown:
        raise K8sRdmaError("%s: unknown toleration field(s) %s; expected key, operator, value, effect, tolerationSeconds"
                           % (where, ", ".join(unknown)))
    for field in ("key", "operator", "value", "effect"):
        if toleration.get(field) is not None and not isinstance(toleration[field], str):
            raise K8sRdmaError("%s: %s must be a string, got %r" % (where, field, toleration[field]))
    norm = normalize_toleration(toleration)
    if norm["operator"] not in TOLERATION_OPERATORS:
        raise K8sRdmaError("%s: operator %r is not Exists or Equal" % (where, norm["operator"]))
    if norm["effect"] and norm["effect"] not in TAINT_EFFECTS:
        raise K8sRdmaError("%s: effect %r is not one of %s (or empty for all effects)"
                           % (where, norm["effect"], ", ".join(TAINT_EFFECTS)))
    if not norm["key"] and norm["operator"] != "Exists":
        raise K8sRdmaError("%s: an empty key needs operator Exists (it then tolerates every taint)" % where)
    if norm["operator"] == "Exists" and norm["value"]:
        raise K8sRdmaError("%s: operator Exists takes no value (got %r)" % (where, norm["value"]))
    seconds = norm["tolerationSeconds"]
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise K8sRdmaError("%s: tolerationSeconds must be an integer, got %r" % (where, seconds))
        if norm["effect"] != "NoExecute":
            raise K8sRdmaError("%s: tolerationSeconds applies only to effect NoExecute" % where)
    return compact_toleration(norm)


def compact_toleration(norm):
    """The toleration as it is written into a policy: empty fields left out."""
    out = {}
    for field in ("key", "operator", "value", "effect"):
        if norm.get(field):
            out[field] = norm[field]
    if norm.get("tolerationSeconds") is not None:
        out["tolerationSeconds"] = norm["tolerationSeconds"]
    return out


def tolerates(toleration, taint):
    """The scheduler's rule: does ``toleration`` tolerate ``taint``?

    An empty effect matches every effect; an empty key (with Exists) matches every key; Exists
    ignores the value, Equal (the default operator) compares it.
    """
    tol = normalize_toleration(toleration)
    effect = taint.get("effect") or ""
    if tol["effect"] and tol["effect"] != effect:
        return False
    if tol["key"] and tol["key"] != (taint.get("key") or ""):
        return False
    if tol["operator"] == "Exists":
        return True
    if tol["operator"] == "Equal":
        return tol["value"] == (taint.get("value") or "")
    return False


def covers(existing, wanted):
    """True when ``existing`` tolerates every taint ``wanted`` tolerates, for at least as long."""
    have = normalize_toleration(existing)
    want = normalize_toleration(wanted)
    if have["operator"] not in TOLERATION_OPERATORS:
        return False
    if have["effect"] and have["effect"] != want["effect"]:
        return False
    if have["key"]:
        if have["key"] != want["key"]:
            return False
        if have["operator"] == "Equal" and (want["operator"] != "Equal" or have["value"] != want["value"]):
            return False
    elif have["operator"] != "Exists":
        return False
    if have["tolerationSeconds"] is not None:
        return want["tolerationSeconds"] is not None and want["tolerationSeconds"] <= have["tolerationSeconds"]
    return True


def merge_tolerations(existing, wanted, where="tolerations"):
    """Merge the tolerations ``wanted`` into ``existing``.

    Returns ``{"tolerations": [...], "added": [...], "covered": [{"toleration", "by"}], "added_text"}``: the
    existing ones unchanged and in order, then each wanted toleration that no existing one already
    covers (a toleration is never added twice, and an existing ``operator: Exists`` without a key
    covers everything). ``tolerations`` is what a merge patch must send, because a JSON merge
    patch replaces a list as a whole.
    """
    if existing is None:
        existing = []
    if not isinstance(existing, list) or not all(isinstance(t, dict) for t in existing):
        raise K8sRdmaError("the policy's spec.tolerations is not a list of tolerations: %r" % (existing,))
    if not isinstance(wanted, list):
        raise K8sRdmaError("%s: expected a list of tolerations, got %r" % (where, wanted))
    merged = [copy.deepcopy(t) for t in existing]
    added = []
    covered = []
    for index, toleration in enumerate(wanted):
        clean = validate_toleration(toleration, "%s[%d]" % (where, index))
        by = next((t for t in merged if covers(t, clean)), None)
        if by is not None:
            if clean not in added and all(c["toleration"] != clean for c in covered):
                covered.append({"toleration": clean, "by": copy.deepcopy(by)})
            continue
        merged.append(clean)
        added.append(clean)
    return {"tolerations": merged, "added": added, "covered": covered,
            "added_text": [describe_toleration(t) for t in added]}


def describe_toleration(toleration):
    """``key=value:Effect`` / ``key:Effect (Exists)`` / ``*:NoSchedule (Exists)`` for messages."""
    norm = normalize_toleration(toleration)
    text = norm["key"] or "*"
    if norm["operator"] == "Equal":
        text += "=" + norm["value"]
    text += ":" + (norm["effect"] or "*")
    if norm["operator"] == "Exists":
        text += " (Exists)"
    if norm["tolerationSeconds"] is not None:
        text += " for %ss" % norm["tolerationSeconds"]
    return text


# ------------------------------------------------------------------------------------ taints


def describe_taint(taint):
    """``key=value:Effect`` (``key:Effect`` without a value), as kubectl prints taints."""
    text = taint.get("key") or ""
    if taint.get("value"):
        text += "=" + str(taint["value"])
    return "%s:%s" % (text, taint.get("effect") or "")


def node_taints(node):
    """A node's taints, plus the unschedulable taint a cordoned node has even before it is written."""
    spec = node.get("spec") or {}
    taints = [t for t in (spec.get("taints") or []) if isinstance(t, dict)]
    if spec.get("unschedulable") and not any(
        t.get("key") == UNSCHEDULABLE_KEY and t.get("effect") == "NoSchedule" for t in taints
    ):
        taints.append({"key": UNSCHEDULABLE_KEY, "effect": "NoSchedule"})
    return taints


def untolerated_taints(node, tolerations):
    """The taints that keep a pod with ``tolerations`` off ``node`` (NoSchedule, NoExecute)."""
    return [
        t for t in node_taints(node)
        if t.get("effect") in BLOCKING_EFFECTS and not any(tolerates(tol, t) for tol in tolerations or [])
    ]


def taint_reason(taint, policy_name):
    """One clause saying why the driver pod cannot go to the node."""
    if taint.get("key") == UNSCHEDULABLE_KEY:
        return "node is cordoned (%s) and NicClusterPolicy %s does not tolerate it" % (UNSCHEDULABLE_KEY, policy_name)
    return "node has the taint %s and NicClusterPolicy %s does not tolerate it" % (describe_taint(taint), policy_name)


def _node_name(node):
    return (node.get("metadata") or {}).get("name") or "?"


def _labels(node):
    return (node.get("metadata") or {}).get("labels") or {}


def _not_ready(node):
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") != "True"
    return False


def mofed_wait_nodes(nodes, tolerations, planned_tolerations=None, label=MOFED_WAIT_LABEL):
    """The nodes whose ``label`` is ``"true"``, and what keeps the MOFED driver pod off each.

    ``tolerations`` are the policy's tolerations as they are in the cluster, ``planned_tolerations``
    the ones after this run's patch (applied, or planned in check mode). Returns ``{"stuck": [names],
    "nodes": {name: {"untolerated", "untolerated_after_patch", "not_ready", "blocking", "remaining"}}}``:
    the untolerated taints as ``key=value:Effect`` texts and (``blocking``, ``remaining``) as taints.
    """
    if not isinstance(nodes, list):
        raise K8sRdmaError("expected a list of Node objects, got %r" % (nodes,))
    planned = tolerations if planned_tolerations is None else planned_tolerations
    stuck = []
    details = {}
    for node in sorted(nodes, key=_node_name):
        name = _node_name(node)
        if str(_labels(node).get(label, "")).lower() != "true":
            continue
        stuck.append(name)
        blocking = untolerated_taints(node, tolerations)
        remaining = untolerated_taints(node, planned)
        details[name] = {
            "untolerated": [describe_taint(t) for t in blocking],
            "untolerated_after_patch": [describe_taint(t) for t in remaining],
            "not_ready": _not_ready(node),
            "blocking": blocking,
            "remaining": remaining,
        }
    return {"stuck": stuck, "nodes": details}


# ------------------------------------------------------------------------------------ resources


def parse_quantity(text):
    """A Kubernetes quantity (``63``, ``1k``, ``2Ki``, ``500m``) as a number, or None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return text
    match = _QUANTITY.match(str(text or "").strip())
    if not match:
        return None
    value = float(match.group(1)) * _QUANTITY_SCALE[match.group(2)]
    return int(value) if value.is_integer() else value


def resource_name(prefix, name, where="k8s_rdma_resources"):
    """``rdma`` + ``rdma_v100`` -> ``rdma/rdma_v100``, checking both parts."""
    if not isinstance(name, str) or not _RESOURCE_NAME.match(name):
        raise K8sRdmaError("%s: resource name %r is not a valid name (letters, digits, -, _ and .; no prefix)" % (where, name))
    if not isinstance(prefix, str) or not prefix or not all(_DNS_LABEL.match(p) for p in prefix.split(".")):
        raise K8sRdmaError("%s: resource prefix %r is not a DNS name such as rdma" % (where, prefix))
    return "%s/%s" % (prefix, name)


def _resource_entry(group, value, where):
    """One k8s_rdma_resources value: a resource name, or {resourceName, rdmaHcaMax}."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"resourceName", "rdmaHcaMax"})
        if unknown or "resourceName" not in value:
            raise K8sRdmaError("%s[%s]: expected a resource name or {resourceName, rdmaHcaMax}, got %r" % (where, group, value))
        name, hca_max = value["resourceName"], value.get("rdmaHcaMax")
    else:
        name, hca_max = value, None
    if hca_max is not None and (isinstance(hca_max, bool) or not isinstance(hca_max, int) or hca_max < 1):
        raise K8sRdmaError("%s[%s]: rdmaHcaMax must be a positive integer, got %r" % (where, group, hca_max))
    resource_name("rdma", name, "%s[%s]" % (where, group))
    return name, hca_max


def node_expectations(groups, resources, node_name_of, prefix="rdma", where="k8s_rdma_resources"):
    """Which node must advertise which resource: one entry per (inventory host, group).

    ``groups`` maps group -> host names (Ansible's ``groups``), ``resources`` group -> resource
    name, ``node_name_of(host)`` gives the host's Node name (``k8s_node_name``) or None.
    """
    if not isinstance(resources, dict):
        raise K8sRdmaError("%s: expected a mapping of inventory group to resource name, got %r" % (where, resources))
    expectations = []
    for group, value in resources.items():
        name = _resource_entry(group, value, where)[0]
        if group not in groups:
            raise K8sRdmaError("%s: the group %r is not in the inventory" % (where, group))
        for host in groups[group]:
            expectations.append({
                "host": host, "node": node_name_of(host) or host, "group": group,
                "resource": resource_name(prefix, name, where),
            })
    return expectations


def resource_states(nodes, expectations, expected_count=0, mofed_label=None):
    """What each expected node advertises, in capacity and allocatable.

    Returns ``{"checked": [...], "absent": [...]}``: ``absent`` holds the expectations whose node is not
    in the cluster; each ``checked`` entry has ``node``, ``group``, ``resource``, ``capacity``,
    ``allocatable`` (as advertised), ``ok``, ``missing`` (the fields without a positive amount),
    ``wrong_count`` (the fields whose amount is not ``expected_count``, when it is set) and ``waiting``
    (the node's ``mofed_label`` is ``"true"``).
    """
    by_name = {_node_name(n): n for n in nodes or []}
    checked, absent = [], []
    for want in expectations:
        node = by_name.get(want["node"])
        if node is None:
            absent.append(want)
            continue
        status = node.get("status") or {}
        raw = {field: (status.get(field) or {}).get(want["resource"]) for field in ("capacity", "allocatable")}
        value = {field: parse_quantity(raw[field]) for field in raw}
        missing = [f for f in ("capacity", "allocatable") if not value[f] or value[f] <= 0]
        wrong = [f for f in ("capacity", "allocatable") if expected_count and value[f] != expected_count] if not missing else []
        checked.append({
            "node": want["node"], "group": want["group"], "resource": want["resource"],
            "capacity": raw["capacity"], "allocatable": raw["allocatable"], "ok": not missing and not wrong,
            "host": want["host"], "missing": missing, "wrong_count": wrong,
            "waiting": bool(mofed_label) and str(_labels(node).get(mofed_label, "")).lower() == "true",
        })
    return {"checked": checked, "absent": absent}


# ------------------------------------------------------------------------------------ stale resources


def escape_pointer_token(token):
    """RFC 6901: ``~`` -> ``~0`` first, then ``/`` -> ``~1`` (``nvidia.com/hostdev`` -> ``nvidia.com~1hostdev``)."""
    return token.replace("~", "~0").replace("/", "~1")


def validate_extended_resource(name, where="k8s_rdma_remove_stale_resources"):
    """Only extended resources (``domain/name`` outside kubernetes.io) may be removed."""
    if not isinstance(name, str) or "/" not in name:
        raise K8sRdmaError("%s: %r is not an extended resource (DOMAIN/NAME such as nvidia.com/hostdev); built-in "
                           "resources like cpu, memory and pods are never removed" % (where, name))
    domain, short = name.split("/", 1)
    if not short or "/" in short or not _RESOURCE_NAME.match(short) or not all(_DNS_LABEL.match(p) for p in domain.split(".")):
        raise K8sRdmaError("%s: %r is not a valid extended resource name (DOMAIN/NAME)" % (where, name))
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        raise K8sRdmaError("%s: %r is in the kubernetes.io domain, which holds no extended resources" % (where, name))
    return name


def stale_resource_patches(nodes, names, node_names=None):
    """One JSON patch per node that still carries any of ``names`` in status capacity/allocatable.

    Nodes without them get no patch. ``node_names`` limits the nodes (empty: every node given).
    Each entry is ``{"node", "resources", "fields", "patch"}``; the patch removes exactly the keys
    present, ``fields`` says where they were (capacity, allocatable).
    """
    if not isinstance(names, list):
        raise K8sRdmaError("k8s_rdma_remove_stale_resources: expected a list of resource names, got %r" % (names,))
    names = [validate_extended_resource(n) for n in names]
    wanted_nodes = set(node_names or [])
    patches = []
    for node in sorted(nodes or [], key=_node_name):
        name = _node_name(node)
        if wanted_nodes and name not in wanted_nodes:
            continue
        status = node.get("status") or {}
        operations, present, fields = [], [], []
        for resource in names:
            for field in ("capacity", "allocatable"):
                if resource in (status.get(field) or {}):
                    operations.append({"op": "remove", "path": "/status/%s/%s" % (field, escape_pointer_token(resource))})
                    if resource not in present:
                        present.append(resource)
                    if field not in fields:
                        fields.append(field)
        if operations:
            patches.append({"node": name, "resources": present, "fields": fields, "patch": operations})
    return patches


# ------------------------------------------------------------------------------------ device plugin


def bond_masters(facts):
    """Netdevs that are bond (or team/bridge) masters: named as ``master`` by another netdev, or
    backed by no PCI device (``bond0`` of a RoCE bond)."""
    netdevs = facts.get("netdevs") or {}
    masters = {n.get("master") for n in netdevs.values() if isinstance(n, dict) and n.get("master")}
    for name, netdev in netdevs.items():
        if isinstance(netdev, dict) and not netdev.get("pci_address"):
            masters.add(name)
    return masters


def host_selectors(facts, host="?"):
    """The netdevs and link types of one host's ACTIVE ports, and what was left out and why."""
    if not isinstance(facts, dict):
        raise K8sRdmaError("host %s: ansible_facts.rdma is not a mapping (got %r)" % (host, facts))
    netdevs = facts.get("netdevs") or {}
    masters = bond_masters(facts)
    names, link_types, excluded = [], [], []
    for port in facts.get("ports") or []:
        if not isinstance(port, dict) or port.get("state") != "ACTIVE":
            continue
        where = "%s/%s" % (port.get("device"), port.get("port"))
        link_type = LINK_TYPES.get(str(port.get("link_layer") or "").lower())
        for netdev in port.get("netdevs") or []:
            reason = None
            if netdev in masters:
                reason = "bond master"
            elif netdev not in netdevs:
                reason = "not among the host's netdevs"
            elif link_type is None:
                reason = "unknown link layer %r" % port.get("link_layer")
            if reason:
                excluded.append({"host": host, "port": where, "netdev": netdev, "reason": reason})
                continue
            if netdev not in names:
                names.append(netdev)
            if link_type not in link_types:
                link_types.append(link_type)
    return {"ifNames": names, "linkTypes": link_types, "excluded": excluded}


def device_plugin_config(group_hosts, resources, rdma_hca_max=63, strict=True):
    """The RDMA shared device plugin's ``configList``, one resource per inventory group.

    ``group_hosts`` maps group -> list of ``(host, facts)`` where facts is the host's
    ``ansible_facts.rdma`` or None when it has none; ``resources`` maps group -> resource name (or
    ``{resourceName, rdmaHcaMax}``). ifNames is the sorted union of the netdevs of the group's
    ACTIVE ports (bond masters never), linkTypes their link layers. A group that yields no ifName
    is a problem: an error when ``strict``, else left out of configList and listed in ``problems``
    (``{"group", "message"}``).
    """
    if not isinstance(resources, dict) or not resources:
        raise K8sRdmaError("resources: expected a non-empty mapping of inventory group to resource name, got %r" % (resources,))
    if isinstance(rdma_hca_max, bool) or not isinstance(rdma_hca_max, int) or rdma_hca_max < 1:
        raise K8sRdmaError("rdma_hca_max must be a positive integer, got %r" % (rdma_hca_max,))
    config_list, groups, problems = [], {}, []
    for group, value in resources.items():
        name, hca_max = _resource_entry(group, value, "resources")
        if group not in group_hosts:
            raise K8sRdmaError("resources: the group %r is not in the inventory" % group)
        members = list(group_hosts[group])
        with_facts = [(h, f) for h, f in members if f is not None]
        without = [h for h, f in members if f is None]
        names, link_types, excluded = [], [], []
        for host, facts in with_facts:
            found = host_selectors(facts, host)
            names.extend(n for n in found["ifNames"] if n not in names)
            link_types.extend(t for t in found["linkTypes"] if t not in link_types)
            excluded.extend(found["excluded"])
        entry = {
            "resourceName": name,
            "rdmaHcaMax": hca_max or rdma_hca_max,
            "selectors": {"ifNames": sorted(names), "linkTypes": sorted(link_types)},
        }
        groups[group] = {"resourceName": name, "hosts": [pair[0] for pair in with_facts], "hosts_without_facts": without,
                         "excluded": excluded, "included": bool(names)}
        if not with_facts:
            problems.append({"group": group, "message": (
                "group %s: none of its hosts (%s) has ansible_facts.rdma; gather them first with "
                "rdma.node.ib_inventory (in the same run or into a fact cache)" % (group, ", ".join(without) or "none"))})
        elif not names:
            problems.append({"group": group, "message": (
                "group %s: no ACTIVE RDMA port with a usable netdev on %s, so %s would select nothing"
                % (group, ", ".join(pair[0] for pair in with_facts), name))})
        else:
            config_list.append(entry)
    if problems and strict:
        raise K8sRdmaError(problems[0]["message"])
    return {
        "configList": config_list,
        "config": json.dumps({"configList": config_list}, indent=2) + "\n",
        "groups": groups,
        "problems": problems,
    }


def merge_device_plugin_config(current, config_list, where="spec.rdmaSharedDevicePlugin.config"):
    """Put ``config_list`` into the device plugin config string ``current``.

    Entries of other resources and other top-level keys (``periodicUpdateInterval``) are kept; in
    the entry of a managed resource only ``rdmaHcaMax`` and ``selectors.ifNames``/``linkTypes``
    change (its other keys and selectors stay), new entries are appended. Returns
    ``{"config": text, "changed": bool, "differences": [...]}``; ``changed`` compares the parsed
    JSON, so reformatting alone is not a change.
    """
    if current in (None, ""):
        parsed = {}
    elif isinstance(current, str):
        try:
            parsed = json.loads(current)
        except ValueError as exc:
            raise K8sRdmaError("%s is not valid JSON (%s); fix or clear it before the role manages it" % (where, exc)) from None
    else:
        raise K8sRdmaError("%s must be a JSON string, got %r" % (where, current))
    if not isinstance(parsed, dict) or not isinstance(parsed.get("configList", []), list):
        raise K8sRdmaError("%s is not an object with a configList list" % where)
    merged = copy.deepcopy(parsed)
    entries = merged.setdefault("configList", [])
    differences = []
    for wanted in config_list:
        position = next((i for i, e in enumerate(entries)
                         if isinstance(e, dict) and e.get("resourceName") == wanted["resourceName"]), None)
        before = None if position is None else entries[position]
        if position is None:
            after = copy.deepcopy(wanted)
            entries.append(after)
        else:
            # Only the managed fields change; other keys (more selectors, a resourcePrefix) stay.
            after = copy.deepcopy(before)
            after["rdmaHcaMax"] = wanted["rdmaHcaMax"]
            selectors = after.get("selectors") if isinstance(after.get("selectors"), dict) else {}
            selectors.update(copy.deepcopy(wanted["selectors"]))
            after["selectors"] = selectors
            entries[position] = after
        if before != after:
            differences.append({"resourceName": wanted["resourceName"], "current": before, "wanted": after,
                                "summary": _describe_difference(before, after)})
    changed = merged != parsed
    text = json.dumps(merged, indent=2) + "\n" if changed else current
    return {"config": text, "changed": changed, "differences": differences}


def _describe_difference(before, wanted):
    """``rdma_v100: selectors.ifNames [a, b] -> [c]`` for a report."""
    if before is None:
        return "%s: not in the config yet" % wanted["resourceName"]
    changes = []
    for path in (("rdmaHcaMax",), ("selectors", "ifNames"), ("selectors", "linkTypes")):
        old, new = before, wanted
        for key in path:
            old = old.get(key) if isinstance(old, dict) else None
            new = new.get(key) if isinstance(new, dict) else None
        if old != new:
            changes.append("%s %s -> %s" % (".".join(path), _short(old), _short(new)))
    return "%s: %s" % (wanted["resourceName"], "; ".join(changes) or "changed")


def _short(value):
    if value is None:
        return "absent"
    if isinstance(value, list):
        return "[%s]" % ", ".join(str(v) for v in value)
    return str(value)
