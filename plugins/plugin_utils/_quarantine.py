# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quarantine of nodes with a critical RDMA fault, planned as pure functions.

Controller-side logic of the ``rdma.node.k8s_quarantine`` role. Nothing here talks to a cluster: the
role reads the nodes (one list request with a label selector), the ledger ConfigMap and the
NicClusterPolicy with ``kubernetes.core`` modules, hands them to ``plan()`` with the findings the
checks left on each inventory host, and applies the merge patches the plan holds. The findings about
what was planned and done come from the registered checks of ``_checks/quarantine.py``.

What the plan guarantees:

* **Policy.** A host is faulty when a finding of the configured roles, severities and checks is on it
  (default: any critical finding of ib_inventory, driver_verify, node_health, bandwidth_check). Its
  Kubernetes node is ``k8s_node_name`` or the host's name.
* **Never undo what someone else did.** A node that was cordoned, or carried the quarantine taint,
  before rdma.node quarantined it is recorded as such (``cordon_pre_existing``,
  ``taint_pre_existing`` in the record annotation), and the release leaves that state. An opted-out
  node is never touched. Every node patch carries the node's ``resourceVersion``, so a concurrent
  change makes the server refuse (409) instead of being lost.
* **A breaker that cannot be talked past.** At most ``min(ceil(percent x eligible), max_nodes)``
  nodes are held at once, cluster-wide and per failure domain, counting those rdma.node already holds
  and those another run has reserved in the ledger. A run that would exceed it quarantines none of its
  new nodes. The ledger (a ConfigMap) is patched with its ``resourceVersion`` before any node, so of
  two concurrent runs only one can add nodes.
* **Release** after ``release_after`` consecutive clean runs, counted on the node itself (the record
  annotation), each one only when the host's checks are newer than the last one counted: a fact
  cache read twice is one clean run, not two.

Bad input raises ``QuarantineError`` with one sentence naming the option.
"""

from __future__ import annotations

import datetime
import json
import math
import re

from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES
from ansible_collections.rdma.node.plugins.plugin_utils._k8s_rdma import (
    UNSCHEDULABLE_KEY,
    describe_taint,
    merge_tolerations,
)
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError

ROLE = "k8s_quarantine"
BY = "rdma.node"
# On every node rdma.node holds in quarantine: the label (what the list's selector finds) and the
# record of what was done and why (JSON).
LABEL = "rdma.node/quarantined"
RECORD = "rdma.node/quarantine"
DEFAULT_ROLES = ("ib_inventory", "driver_verify", "node_health", "bandwidth_check")
DEFAULT_TAINT = {"key": "rdma.node/quarantine", "value": "rdma-fault", "effect": "NoSchedule"}
NVSENTINEL_PREFIX = "k8saas.nvidia.com/"
NVSENTINEL_OPT_OUT = "ManagedByNVSentinel=false"
VOCABULARIES = ("rdma.node", "nvsentinel")
MODES = ("report", "apply")
GUARDS = ("patch", "refuse", "off")
TAINT_EFFECTS = ("NoSchedule", "NoExecute")
# The ledger ConfigMap's key: {node: {"at", "run"}} of every node rdma.node holds or has reserved.
LEDGER_KEY = "nodes"
RECORD_REASONS = 5
REASON_CHARS = 240

_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class QuarantineError(CheckError):
    """Input that cannot be used; the message is one sentence naming the option and what was expected."""


# ------------------------------------------------------------------------------------ settings


def _option(name):
    return "k8s_quarantine_" + name


def _names(value, name, allow_empty=True):
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise QuarantineError("%s: expected a list of names, got %r" % (_option(name), value))
    if not value and not allow_empty:
        raise QuarantineError("%s: expected at least one name" % _option(name))
    return list(value)


def _integer(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise QuarantineError("%s: expected an integer of at least %d, got %r" % (_option(name), minimum, value))
    return value


def _check_patterns(value, name, roles):
    patterns = _names(value, name)
    for pattern in patterns:
        role, _sep, check_name = pattern.partition("/")
        if not check_name or role not in roles:
            raise QuarantineError("%s: %r is not ROLE/CHECK with ROLE one of %s" % (_option(name), pattern, ", ".join(roles)))
    return patterns


def _label_terms(value, name):
    """``key=value`` (or ``key`` for any value) terms, as ``(key, value or None)``."""
    terms = []
    for text in _names(value, name):
        key, sep, wanted = text.partition("=")
        if not _QUALIFIED.match(key) or (sep and not _LABEL_VALUE.match(wanted)):
            raise QuarantineError("%s: %r is not a label KEY=VALUE (or KEY)" % (_option(name), text))
        terms.append((key, wanted if sep else None))
    return terms


def _taint(value):
    if value in (None, {}):
        return None
    if not isinstance(value, dict) or set(value) - {"key", "value", "effect"} or not value.get("key"):
        raise QuarantineError("k8s_quarantine_taint: expected {key, value, effect} (or {} for no taint), got %r" % (value,))
    key, text, effect = value.get("key"), value.get("value") or "", value.get("effect") or "NoSchedule"
    if not isinstance(key, str) or not _QUALIFIED.match(key):
        raise QuarantineError("k8s_quarantine_taint: key %r is not a qualified name such as rdma.node/quarantine" % (key,))
    if not isinstance(text, str) or not _LABEL_VALUE.match(text):
        raise QuarantineError("k8s_quarantine_taint: value %r is not a label value (63 characters of A-Z a-z 0-9 - _ .)" % (text,))
    if effect not in TAINT_EFFECTS:
        raise QuarantineError("k8s_quarantine_taint: effect %r is not NoSchedule or NoExecute (NoExecute evicts every pod that "
                              "does not tolerate it: ask for it explicitly)" % (effect,))
    taint = {"key": key, "effect": effect}
    if text:
        taint["value"] = text
    return taint


def settings(options):
    """The role's options (names without ``k8s_quarantine_``), checked, with their defaults filled in."""
    if not isinstance(options, dict):
        raise QuarantineError("k8s_quarantine: expected the role's options as a mapping, got %r" % (options,))
    get = options.get
    mode = get("mode") or "report"
    if mode not in MODES:
        raise QuarantineError("k8s_quarantine_mode: expected report or apply, got %r" % (mode,))
    roles = _names(get("roles") if get("roles") is not None else list(DEFAULT_ROLES), "roles", allow_empty=False)
    severities = _names(get("severities") if get("severities") is not None else ["critical"], "severities", allow_empty=False)
    unknown = sorted(set(severities) - set(SEVERITIES))
    if unknown:
        raise QuarantineError("k8s_quarantine_severities: %s is not one of %s" % (", ".join(unknown), ", ".join(SEVERITIES)))
    vocabulary = get("vocabulary") or "rdma.node"
    if vocabulary not in VOCABULARIES:
        raise QuarantineError("k8s_quarantine_vocabulary: expected rdma.node or nvsentinel, got %r" % (vocabulary,))
    prefix = get("nvsentinel_label_prefix") or NVSENTINEL_PREFIX
    if not isinstance(prefix, str) or not prefix.endswith("/") or not _DNS_SUBDOMAIN.match(prefix[:-1]):
        raise QuarantineError("k8s_quarantine_nvsentinel_label_prefix: expected a DNS prefix ending in /, such as %s, got %r"
                              % (NVSENTINEL_PREFIX, prefix))
    opt_out = _label_terms(get("opt_out_labels") if get("opt_out_labels") is not None else [LABEL.split("/", 1)[0] + "/quarantine=disabled"],
                           "opt_out_labels")
    if vocabulary == "nvsentinel":
        opt_out += _label_terms([prefix + NVSENTINEL_OPT_OUT], "nvsentinel_label_prefix")
    cordon = get("cordon")
    cordon = True if cordon is None else cordon
    if not isinstance(cordon, bool):
        raise QuarantineError("k8s_quarantine_cordon: expected true or false, got %r" % (cordon,))
    taint = _taint(DEFAULT_TAINT if get("taint") is None else get("taint"))
    if not cordon and taint is None:
        raise QuarantineError("k8s_quarantine_cordon is false and k8s_quarantine_taint is empty: a quarantine needs one of them")
    percent = get("max_percent")
    percent = 10 if percent is None else percent
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 <= percent <= 100:
        raise QuarantineError("k8s_quarantine_max_percent: expected a number from 0 to 100, got %r" % (percent,))
    domain_label = get("domain_label") or ""
    if domain_label and not _QUALIFIED.match(domain_label):
        raise QuarantineError("k8s_quarantine_domain_label: %r is not a label key such as topology.kubernetes.io/zone" % (domain_label,))
    domain_groups = _names(get("domain_groups"), "domain_groups")
    if domain_label and domain_groups:
        raise QuarantineError("k8s_quarantine_domain_label and k8s_quarantine_domain_groups are both set; a failure domain is one or the other")
    approved = get("approved_nodes")
    guard = get("mofed_guard") or "patch"
    if guard not in GUARDS:
        raise QuarantineError("k8s_quarantine_mofed_guard: expected patch, refuse or off, got %r" % (guard,))
    node_names = get("node_names") or {}
    if not isinstance(node_names, dict) or not all(isinstance(v, str) for v in node_names.values()):
        raise QuarantineError("k8s_quarantine_node_names: expected a mapping of inventory host to node name, got %r" % (node_names,))
    return {
        "mode": mode,
        "roles": roles,
        "severities": severities,
        "checks": _check_patterns(get("checks"), "checks", roles),
        "ignore_checks": _check_patterns(get("ignore_checks"), "ignore_checks", roles),
        "cordon": cordon,
        "taint": taint,
        "vocabulary": vocabulary,
        "nvsentinel_label_prefix": prefix,
        "opt_out": opt_out,
        "max_percent": percent,
        "max_nodes": _integer(10 if get("max_nodes") is None else get("max_nodes"), "max_nodes", 0),
        "domain_label": domain_label,
        "domain_groups": domain_groups,
        "release_after": _integer(3 if get("release_after") is None else get("release_after"), "release_after", 1),
        "max_evidence_age": _integer(get("max_evidence_age") or 0, "max_evidence_age", 0),
        "reservation_timeout": _integer(3600 if get("reservation_timeout") is None else get("reservation_timeout"), "reservation_timeout", 60),
        "approved_nodes": None if approved is None else _names(approved, "approved_nodes"),
        "mofed_guard": guard,
        "policy_name": get("policy_name") or "nic-cluster-policy",
        "node_names": dict(node_names),
        "run_id": str(get("run_id") or ""),
        "cluster_name": get("cluster_name") or "kubernetes",
    }


# ------------------------------------------------------------------------------------ evidence


def _lookup(host_vars, name):
    """A role's variable at the top level (this run) or in ansible_facts (a fact cache)."""
    value = host_vars.get(name)
    if value is None and isinstance(host_vars.get("ansible_facts"), dict):
        value = host_vars["ansible_facts"].get(name)
    return value


def check_name(item):
    return "%s/%s" % (item.get("role"), item.get("check"))


def matches(item, cfg):
    """Whether one finding puts its host in quarantine under the policy ``cfg``."""
    if not isinstance(item, dict) or item.get("role") not in cfg["roles"] or item.get("severity") not in cfg["severities"]:
        return False
    name = check_name(item)
    return (not cfg["checks"] or name in cfg["checks"]) and name not in cfg["ignore_checks"]


def _age(seconds):
    hours = seconds / 3600.0
    return "%.0f minutes" % (seconds / 60.0) if hours < 2 else "%.1f hours" % hours


def evidence(host, host_vars, cfg, now):
    """What the checks left on one inventory host, judged by the policy.

    Returns ``{"host", "node", "state", "findings", "ran", "checked_at", "reason", "groups"}``: ``state``
    is ``faulty`` (findings that the policy quarantines on), ``clean`` (statuses of the policy's roles
    and no such finding) or ``not_checked`` (``reason`` says why); ``ran`` maps each role with a
    status to the checks that ran; ``checked_at`` is when the node's counters were read (node_health),
    the newest time the facts carry, or None.
    """
    host_vars = host_vars if isinstance(host_vars, dict) else {}
    node = cfg["node_names"].get(host) or host_vars.get("k8s_node_name") or host
    entry = {"host": host, "node": str(node), "state": "not_checked", "findings": [], "ran": {}, "checked_at": None, "reason": None,
             "groups": list(host_vars.get("group_names") or [])}
    for role in cfg["roles"]:
        status = _lookup(host_vars, role + "_status")
        if isinstance(status, dict):
            entry["ran"][role] = list(status.get("checks") or [])
            entry["findings"].extend(f for f in _lookup(host_vars, role + "_findings") or [] if matches(f, cfg))
    rdma = (host_vars.get("ansible_facts") or {}).get("rdma")
    checked_at = rdma.get("counters_time") if isinstance(rdma, dict) else None
    if isinstance(checked_at, (int, float)) and not isinstance(checked_at, bool):
        entry["checked_at"] = float(checked_at)
    if not entry["ran"]:
        entry["reason"] = "no findings of %s for host %s in this run or the fact cache" % (", ".join(cfg["roles"]), host)
    elif cfg["max_evidence_age"] and entry["checked_at"] is not None and now - entry["checked_at"] > cfg["max_evidence_age"]:
        entry["reason"] = "the findings of host %s are %s old (k8s_quarantine_max_evidence_age is %d s)" % (
            host, _age(now - entry["checked_at"]), cfg["max_evidence_age"])
    else:
        entry["state"] = "faulty" if entry["findings"] else "clean"
    return entry


def reasons(findings):
    """The record's one-line reasons: ``role/check subject: message``, a few, each cut to a length."""
    out = []
    for item in findings[:RECORD_REASONS]:
        text = "%s %s: %s" % (check_name(item), item.get("subject"), item.get("message"))
        out.append(text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "...")
    if len(findings) > RECORD_REASONS:
        out.append("and %d more" % (len(findings) - RECORD_REASONS))
    return out


# ------------------------------------------------------------------------------------ nodes


def iso(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def label_time(seconds):
    """NVSentinel's label timestamp (a label value has no colon): 2006-01-02T15-04-05Z."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H-%M-%SZ")


def _metadata(node):
    return node.get("metadata") if isinstance(node, dict) and isinstance(node.get("metadata"), dict) else {}


def _same_taint(taint, wanted):
    return (taint.get("key") == wanted["key"] and taint.get("effect") == wanted["effect"]
            and (taint.get("value") or "") == (wanted.get("value") or ""))


def read_record(text):
    """The record annotation of a node, checked field by field: anyone can edit an annotation."""
    record = json.loads(text)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    checks = record.get("checks") or []
    if not isinstance(checks, list) or not all(isinstance(c, str) and "/" in c for c in checks):
        raise ValueError("checks is not a list of ROLE/CHECK")
    clean_runs = record.get("clean_runs") or 0
    if isinstance(clean_runs, bool) or not isinstance(clean_runs, int) or clean_runs < 0:
        raise ValueError("clean_runs is not a count")
    last = record.get("last_counted_check")
    if last is not None and (isinstance(last, bool) or not isinstance(last, (int, float))):
        raise ValueError("last_counted_check is not a time")
    if record.get("taint") is not None and not isinstance(record["taint"], dict):
        raise ValueError("taint is not a mapping")
    reasons = record.get("reasons") or []
    if not isinstance(reasons, list):
        raise ValueError("reasons is not a list")
    return dict(record, checks=checks, clean_runs=clean_runs, reasons=[str(r) for r in reasons],
                cordoned=record.get("cordoned") is True, cordon_pre_existing=record.get("cordon_pre_existing") is True,
                taint_pre_existing=record.get("taint_pre_existing") is True)


def node_view(node, cfg):
    """The parts of a Node the plan reads: labels, taints, cordon, and rdma.node's record."""
    meta = _metadata(node)
    spec = node.get("spec") if isinstance(node.get("spec"), dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
    record, record_error = None, None
    if RECORD in annotations:
        try:
            record = read_record(annotations[RECORD])
        except (TypeError, ValueError) as exc:
            record, record_error = None, "its %s annotation is not rdma.node's record (%s)" % (RECORD, exc)
    opted_out = [("%s=%s" % (key, value) if value is not None else key) for key, value in cfg["opt_out"]
                 if key in labels and (value is None or str(labels[key]) == value)]
    return {
        "name": str(meta.get("name") or ""),
        "resource_version": meta.get("resourceVersion"),
        "labels": labels,
        "ours": str(labels.get(LABEL, "")).lower() == "true",
        "record": record,
        "record_error": record_error,
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": taints,
        "our_taint": cfg["taint"] is not None and any(_same_taint(t, cfg["taint"]) for t in taints),
        "opted_out": opted_out,
        "cordon_by": labels.get(cfg["nvsentinel_label_prefix"] + "cordon-by"),
    }


def _domain(view, ev, cfg):
    if cfg["domain_label"]:
        if view is None:
            return None
        value = view["labels"].get(cfg["domain_label"])
        return "%s=%s" % (cfg["domain_label"], value) if value is not None else "%s absent" % cfg["domain_label"]
    if cfg["domain_groups"]:
        groups = (ev or {}).get("groups") or []
        group = next((g for g in cfg["domain_groups"] if g in groups), None)
        return "group %s" % group if group else "in none of the domain groups"
    return None


def _nvsentinel_labels(cfg, findings, now):
    prefix = cfg["nvsentinel_label_prefix"]
    first = sorted(check_name(f) for f in findings)[0] if findings else "rdma"
    reason = re.sub(r"[^A-Za-z0-9_.-]", ".", "rdma.node-" + first)[:63].rstrip("-_.")
    return {prefix + "cordon-by": BY, prefix + "cordon-reason": reason, prefix + "cordon-timestamp": label_time(now)}


def quarantine_patch(view, ev, cfg, now):
    """The merge patch that quarantines a node, and the record it leaves on the node."""
    cordon_pre_existing = view["unschedulable"]
    taint_pre_existing = view["our_taint"]
    record = {
        "by": BY, "since": iso(now), "run": cfg["run_id"] or None,
        "checks": sorted({check_name(f) for f in ev["findings"]}), "reasons": reasons(ev["findings"]),
        "cordoned": cfg["cordon"] and not cordon_pre_existing, "cordon_pre_existing": cordon_pre_existing,
        "taint": cfg["taint"], "taint_pre_existing": taint_pre_existing,
        "clean_runs": 0, "last_counted_check": None,
    }
    labels = {LABEL: "true"}
    if cfg["vocabulary"] == "nvsentinel" and record["cordoned"]:
        # As NVSentinel does: the cordon-by labels only when this quarantine made the cordon.
        labels.update(_nvsentinel_labels(cfg, ev["findings"], now))
    spec = {}
    if record["cordoned"]:
        spec["unschedulable"] = True
    if cfg["taint"] is not None and not taint_pre_existing:
        spec["taints"] = view["taints"] + [dict(cfg["taint"])]
    body = {"metadata": {"name": view["name"], "resourceVersion": view["resource_version"], "labels": labels,
                         "annotations": {RECORD: json.dumps(record, sort_keys=True)}}}
    if spec:
        body["spec"] = spec
    return body, record


def record_patch(view, record):
    """A patch of the record annotation alone (what the checks found, the clean runs counted)."""
    return {"metadata": {"name": view["name"], "resourceVersion": view["resource_version"],
                         "annotations": {RECORD: json.dumps(record, sort_keys=True)}}}


def _recorded_taint(taint):
    return {"key": taint.get("key"), "effect": taint.get("effect"), "value": taint.get("value")}


def release_patch(view, cfg, now):
    """The merge patch that takes back exactly what rdma.node did: its label, record and taint, and
    the cordon only when rdma.node made it. Returns ``(body, kept)``: ``kept`` says what stays."""
    record = view["record"] or {}
    kept = []
    labels = {LABEL: None}
    prefix = cfg["nvsentinel_label_prefix"]
    uncordon = bool(record.get("cordoned")) and not record.get("cordon_pre_existing") and view["unschedulable"]
    if view["cordon_by"] == BY:
        labels.update({prefix + "cordon-by": None, prefix + "cordon-reason": None, prefix + "cordon-timestamp": None})
        if uncordon:
            labels.update({prefix + "uncordon-by": BY, prefix + "uncordon-timestamp": label_time(now)})
    if view["unschedulable"] and not uncordon:
        kept.append("the cordon (%s)" % ("there before the quarantine" if record.get("cordon_pre_existing") else
                                         "not made by rdma.node" if record else "the record does not say who made it"))
    body = {"metadata": {"name": view["name"], "resourceVersion": view["resource_version"], "labels": labels,
                         "annotations": {RECORD: None}}}
    spec = {}
    if uncordon:
        spec["unschedulable"] = None
    taint = record.get("taint") if isinstance(record.get("taint"), dict) else None
    if taint and not record.get("taint_pre_existing"):
        remaining = [t for t in view["taints"] if not _same_taint(t, _recorded_taint(taint))]
        if len(remaining) != len(view["taints"]):
            spec["taints"] = remaining or None
    elif taint and record.get("taint_pre_existing"):
        kept.append("the taint %s (there before the quarantine)" % describe_taint(taint))
    elif not record and view["our_taint"]:
        kept.append("the taint %s (the record does not say who made it)" % describe_taint(cfg["taint"]))
    if spec:
        body["spec"] = spec
    return body, kept


# ------------------------------------------------------------------------------------ ledger


def ledger_entries(configmap):
    """``{node: {"at", "run"}}`` of the ledger ConfigMap (``{}`` when there is none): when each node was
    added (seconds since the epoch) and by which run."""
    if configmap is None:
        return {}
    data = (configmap.get("data") or {}) if isinstance(configmap, dict) else {}
    text = data.get(LEDGER_KEY)
    if not text:
        return {}
    try:
        entries = json.loads(text)
    except ValueError as exc:
        raise QuarantineError("the ledger ConfigMap's data.%s is not JSON (%s); fix or delete it (kubectl -n NAMESPACE edit configmap) "
                              "before rdma.node quarantines again" % (LEDGER_KEY, exc)) from None
    if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
        raise QuarantineError("the ledger ConfigMap's data.%s is not a mapping of node to {since, run}" % LEDGER_KEY)
    return entries


def _stale(entry, now, timeout):
    since = entry.get("at")
    return not isinstance(since, (int, float)) or now - since > timeout


# ------------------------------------------------------------------------------------ guard


def wanted_tolerations(cfg):
    """What the NicClusterPolicy must tolerate so that the MOFED driver pod still reaches a quarantined node."""
    wanted = []
    if cfg["taint"] is not None:
        wanted.append({"key": cfg["taint"]["key"], "operator": "Exists", "effect": cfg["taint"]["effect"]})
    if cfg["cordon"]:
        wanted.append({"key": UNSCHEDULABLE_KEY, "operator": "Exists", "effect": "NoSchedule"})
    return wanted


def guard_plan(reading, cfg, needed):
    """Whether the NicClusterPolicy tolerates the quarantine, and the patch that makes it, when needed.

    ``state``: ``off``, ``not_needed`` (no node quarantined or to quarantine), ``not_read``, ``no_operator`` (no
    NicClusterPolicy API), ``no_policy``, ``tolerated``, ``patch`` (the merge patch in ``patch``) or
    ``refuse`` (mofed_guard is refuse and a toleration lacks).
    """
    out = {"state": "off", "policy": cfg["policy_name"], "missing": [], "tolerations": None, "patch": None}
    if cfg["mofed_guard"] == "off":
        return out
    if not needed:
        out["state"] = "not_needed"
        return out
    if not reading.get("cluster_read"):
        out["state"] = "not_read"
        out["missing"] = [dict(t) for t in wanted_tolerations(cfg)]
        return out
    policy = reading.get("policy")
    if policy is None:
        out["state"] = "no_operator" if reading.get("policy_api_found") is False else "no_policy"
        return out
    existing = (policy.get("spec") or {}).get("tolerations") or []
    merged = merge_tolerations(existing, wanted_tolerations(cfg), where="k8s_quarantine_taint")
    out["missing"] = merged["added"]
    out["tolerations"] = merged["tolerations"]
    if not merged["added"]:
        out["state"] = "tolerated"
    elif cfg["mofed_guard"] == "refuse":
        out["state"] = "refuse"
    else:
        out["state"] = "patch"
        meta = policy.get("metadata") or {}
        out["patch"] = {"apiVersion": policy.get("apiVersion") or "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                        "metadata": {"name": meta.get("name") or cfg["policy_name"], "resourceVersion": meta.get("resourceVersion")},
                        "spec": {"tolerations": merged["tolerations"]}}
    return out


# ------------------------------------------------------------------------------------ the plan


def _limit(percent, eligible, maximum):
    return min(int(math.ceil(percent * eligible / 100.0 - 1e-9)), maximum)


def _classify(ev, view, cfg, now):
    """One node's entry: what the plan does with it and why (before the breaker)."""
    entry = {"node": (view or {}).get("name") or ev["node"], "host": ev["host"] if ev else None, "kind": None, "checks": [],
             "reasons": [], "record": None, "patch": None, "kept": [], "note": None, "domain": None, "clean_runs": None}
    state = ev["state"] if ev else "not_in_run"
    if ev:
        entry["checks"] = sorted({check_name(f) for f in ev["findings"]})
        entry["reasons"] = reasons(ev["findings"])
    if view is not None and view["ours"]:
        return _classify_ours(entry, ev, view, cfg, now, state)
    if state != "faulty":
        return None
    if view is not None and view["opted_out"]:
        entry.update(kind="opted_out", note=", ".join(view["opted_out"]))
    else:
        entry["kind"] = "new"
    return entry


def _classify_ours(entry, ev, view, cfg, now, state):
    record = dict(view["record"] or {})
    entry["record"] = record
    entry["clean_runs"] = record.get("clean_runs") or 0
    lifted = []
    if record.get("cordoned") and not view["unschedulable"]:
        lifted.append("uncordoned")
    if isinstance(record.get("taint"), dict) and not record.get("taint_pre_existing") and not any(
            _same_taint(t, _recorded_taint(record["taint"])) for t in view["taints"]):
        lifted.append("its taint %s removed" % describe_taint(record["taint"]))
    entry["lifted"] = lifted
    if view["record_error"]:
        entry["note"] = view["record_error"]
    if state == "faulty":
        entry["kind"] = "keep"
        # Written again only when the checks that fail changed or clean runs were counted: a message
        # whose figures move each run is not a reason to write the node each run.
        if sorted(record.get("checks") or []) != entry["checks"] or record.get("clean_runs"):
            entry["patch"] = record_patch(view, dict(record, checks=entry["checks"], reasons=entry["reasons"], clean_runs=0,
                                                     last_counted_check=None))
        return entry
    if state == "not_in_run":
        entry.update(kind="pending", note="host is not among this run's hosts")
        return entry
    if state == "not_checked":
        entry.update(kind="pending", note=ev["reason"])
        return entry
    missing = [name for name in record.get("checks") or [] if name.split("/", 1)[1] not in ev["ran"].get(name.split("/", 1)[0], [])]
    if missing:
        entry.update(kind="pending", note="%s did not run on host %s" % (", ".join(missing), ev["host"]))
        return entry
    last = record.get("last_counted_check")
    if ev["checked_at"] is None:
        entry.update(kind="pending", note="the facts of host %s carry no check time (ansible_facts.rdma.counters_time, from "
                                          "node_health), so this clean run is not counted" % ev["host"])
        return entry
    if isinstance(last, (int, float)) and ev["checked_at"] <= last:
        entry.update(kind="pending", note="the checks of host %s are the ones already counted (checked at %s)" % (ev["host"], iso(ev["checked_at"])))
        return entry
    entry["clean_runs"] = entry["clean_runs"] + 1
    if entry["clean_runs"] >= cfg["release_after"]:
        entry["kind"] = "release"
        entry["patch"], entry["kept"] = release_patch(view, cfg, now)
    else:
        entry["kind"] = "count"
        entry["patch"] = record_patch(view, dict(record, clean_runs=entry["clean_runs"], last_counted_check=ev["checked_at"]))
    return entry


def plan(hosts, reading, cfg, now, guard_failed=None):
    """What to quarantine, keep, count and release, and the requests that do it.

    ``hosts`` maps inventory host -> its variables (``<role>_findings``/``_status``, ``group_names``,
    ``k8s_node_name``, ``ansible_facts``). ``reading`` is what the role read: ``cluster_read`` (bool),
    ``read_error`` (why not), ``nodes`` (the Node list), ``ledger`` (the ConfigMap or None),
    ``policy`` and ``policy_api_found``. ``guard_failed``: the reason the policy patch failed in this
    run, when it did; new quarantines are then held.
    """
    evidences = {}
    for host in sorted(hosts):
        ev = evidence(host, hosts[host], cfg, now)
        evidences.setdefault(ev["node"], ev)
    cluster_read = bool(reading.get("cluster_read"))
    views = {}
    if cluster_read:
        for node in reading.get("nodes") or []:
            view = node_view(node, cfg)
            views[view["name"]] = view
    entries = {}
    not_found = []
    for name in sorted(set(evidences) | {n for n, v in views.items() if v["ours"]}):
        ev, view = evidences.get(name), views.get(name)
        if cluster_read and view is None:
            if ev and ev["state"] == "faulty":
                not_found.append({"node": name, "host": ev["host"], "checks": sorted({check_name(f) for f in ev["findings"]})})
            continue
        entry = _classify(ev, view, cfg, now)
        if entry is not None:
            entry["domain"] = _domain(view, ev, cfg)
            entries[name] = entry

    ledger = ledger_entries(reading.get("ledger")) if cluster_read else {}
    live_ledger = {n: e for n, e in ledger.items() if n in views and (views[n]["ours"] or not _stale(e, now, cfg["reservation_timeout"]))}
    held = sorted(n for n, v in views.items() if v["ours"])
    counted = sorted(set(held) | set(live_ledger))
    if cluster_read:
        population = {n: v for n, v in views.items() if not v["opted_out"]}
        domain_of = {n: _domain(v, evidences.get(n), cfg) for n, v in population.items()}
    else:
        population = {n: None for n in evidences}
        domain_of = {n: _domain(None, evidences[n], cfg) for n in population}

    breaker = _breaker(entries, population, domain_of, counted, cfg, cluster_read)
    approved = cfg["approved_nodes"]
    not_approved = "not among the nodes approved for this run (k8s_quarantine_approved_nodes)"
    for name, entry in sorted(entries.items()):
        if entry["kind"] == "new" and cfg["mode"] == "apply" and not cluster_read:
            entry.update(kind="held", note="the cluster could not be read")
        elif entry["kind"] == "new" and approved is not None and name not in approved:
            entry.update(kind="held", note=not_approved)
        elif entry["kind"] == "new" and name in breaker["held"]:
            entry.update(kind="held", note=breaker["held"][name])
        elif entry["kind"] == "release" and approved is not None and name not in approved:
            entry.update(kind="pending", patch=None, note=not_approved)
    # The guard matters for the nodes this run would really quarantine and for those already held (a
    # policy changed since, or a guard turned on later): each carries the quarantine's taint.
    guard = guard_plan(reading, cfg, needed=bool(held) or any(e["kind"] == "new" for e in entries.values()))
    blocked_by_guard = guard_failed
    if guard["state"] == "refuse":
        blocked_by_guard = "NicClusterPolicy %s does not tolerate %s, and k8s_quarantine_mofed_guard is refuse" % (
            guard["policy"], ", ".join(describe_taint({"key": t["key"], "effect": t["effect"]}) for t in guard["missing"]))
    for name, entry in sorted(entries.items()):
        if entry["kind"] != "new":
            continue
        if blocked_by_guard:
            entry.update(kind="held", note=blocked_by_guard)
        else:
            entry["kind"] = "quarantine"
            if views.get(name) is not None:
                entry["patch"], entry["record"] = quarantine_patch(views[name], evidences[name], cfg, now)
            else:
                entry["record"] = {"checks": entry["checks"], "reasons": entry["reasons"]}

    quarantine = sorted(n for n, e in entries.items() if e["kind"] == "quarantine")
    release = sorted(n for n, e in entries.items() if e["kind"] == "release")
    ledger_after = {n: e for n, e in live_ledger.items() if n not in release}
    for name in quarantine:
        ledger_after[name] = {"at": now, "run": cfg["run_id"] or None}
    ledger_request = None
    if cluster_read and ledger_after != ledger:
        meta = _metadata(reading.get("ledger"))
        ledger_request = {"create": reading.get("ledger") is None,
                          "definition": {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": reading.get("ledger_name"), "namespace": reading.get("ledger_namespace")},
                                         "data": {LEDGER_KEY: json.dumps(ledger_after, sort_keys=True)}}}
        if reading.get("ledger") is not None:
            ledger_request["definition"]["metadata"]["resourceVersion"] = meta.get("resourceVersion")
    patches = [{"node": n, "kind": e["kind"], "body": e["patch"]} for n, e in sorted(entries.items()) if e["patch"] is not None]
    return {
        "mode": cfg["mode"], "cluster": cfg["cluster_name"], "cluster_read": cluster_read, "read_error": reading.get("read_error"),
        "eligible": len(population), "limit": breaker["limit"], "held": held, "counted": counted,
        "breaker": breaker, "guard": guard, "nodes": entries, "not_found": not_found,
        "quarantine": quarantine, "release": release,
        "ledger": ledger_request, "patches": patches,
        "safe_patches": [p for p in patches if p["kind"] != "quarantine"],
    }


def _breaker(entries, population, domain_of, counted, cfg, cluster_read):
    """The circuit breaker: which new nodes it holds, cluster-wide and per failure domain."""
    new = sorted(n for n, e in entries.items() if e["kind"] == "new" and (cfg["approved_nodes"] is None or n in cfg["approved_nodes"]))
    limit = _limit(cfg["max_percent"], len(population), cfg["max_nodes"])
    out = {"limit": limit, "new": new, "tripped": False, "scope": None, "held": {}, "domains": {}, "message": None}
    if new and len(counted) + len(new) > limit:
        out.update(tripped=True, scope="cluster")
        figures = (len(counted), len(new), len(counted) + len(new), len(population), limit, _number(cfg["max_percent"]),
                   len(population), cfg["max_nodes"])
        out["message"] = ("%d node(s) already held and %d new would make %d of %d eligible nodes, above the limit of %d "
                          "(min(ceil(%s%% of %d), %d))" % figures)
        out["held"] = {n: "the circuit breaker tripped cluster-wide: " + out["message"] for n in new}
        return out
    if not (cfg["domain_label"] or cfg["domain_groups"]):
        return out
    if cfg["domain_label"] and not cluster_read:
        out["domains"] = None  # the domains are node labels, and the nodes were not read
        return out
    sizes, held_in = {}, {}
    for name, domain in domain_of.items():
        sizes[domain] = sizes.get(domain, 0) + 1
    for name in counted:
        if name in domain_of:
            held_in.setdefault(domain_of[name], []).append(name)
    for name in new:
        domain = entries[name]["domain"]
        out["domains"].setdefault(domain, {"eligible": sizes.get(domain, 0), "counted": sorted(held_in.get(domain, [])), "new": []})
        out["domains"][domain]["new"].append(name)
    for domain, entry in sorted(out["domains"].items()):
        entry["limit"] = _limit(cfg["max_percent"], entry["eligible"], cfg["max_nodes"])
        entry["tripped"] = len(entry["counted"]) + len(entry["new"]) > entry["limit"]
        if entry["tripped"]:
            out.update(tripped=True, scope=out["scope"] or "domain")
            figures = (len(entry["counted"]), len(entry["new"]), len(entry["counted"]) + len(entry["new"]), entry["eligible"], domain,
                       entry["limit"])
            entry["message"] = "%d node(s) already held and %d new would make %d of the %d eligible nodes of %s, above its limit of %d" % figures
            for name in entry["new"]:
                out["held"][name] = "the circuit breaker tripped for %s: %s" % (domain, entry["message"])
    return out


def _number(value):
    return str(int(value)) if float(value).is_integer() else str(value)


# ------------------------------------------------------------------------------------ drain


def _requests(container):
    resources = container.get("resources") or {}
    names = set()
    for part in ("requests", "limits"):
        names.update((resources.get(part) or {}).keys())
    return names


def _resource_matches(name, patterns):
    return any(name == p or (p.endswith("/*") and name.startswith(p[:-1])) for p in patterns)


def pods_to_evict(pods, patterns):
    """The pods of a node that use RDMA or GPU resources (``patterns``: ``rdma/*``, ``nvidia.com/gpu``),
    as ``{"namespace", "name", "resources"}``; DaemonSet and mirror pods and finished ones are left out
    (``skipped`` says which and why)."""
    selected, skipped = [], []
    for pod in pods or []:
        meta = _metadata(pod)
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
        used = sorted({n for c in containers if isinstance(c, dict) for n in _requests(c) if _resource_matches(n, patterns)})
        if not used:
            continue
        item = {"namespace": meta.get("namespace"), "name": meta.get("name"), "resources": used}
        owners = [o.get("kind") for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
        if "DaemonSet" in owners:
            skipped.append(dict(item, reason="managed by a DaemonSet (it would come back at once)"))
        elif "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            skipped.append(dict(item, reason="a mirror pod of a static pod (the API cannot evict it)"))
        elif (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        else:
            selected.append(item)
    return {"evict": selected, "skipped": skipped}
