# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``k8s_rdma`` role: the cluster's RDMA side, judged from what the role read and did.

They read one fact, ``k8s_cluster``, that the role hands to ``rdma.node.evaluate``:

* ``policy_api_found`` (false when the cluster serves no NicClusterPolicy API) and ``policy``: the
  NicClusterPolicy as read before any patch, or null;
* ``nodes``: the Node objects as last read (after the wait for mofed.wait, when the role waited);
* ``tolerations``: the policy's tolerations when the nodes were last read, ``planned_tolerations``
  the ones after this run's patch (applied, or planned in check mode);
* ``mofed_wait``: null, or ``{waited_seconds, previously_stuck}`` when the role waited for the
  label (``waited_seconds`` is null when the label cleared in time);
* ``policy_patch``: null when nothing needed patching, else ``{tolerations, config}`` (what the patch
  carried), ``spec`` (its spec), ``dry_run`` and ``patched`` (the ``kubernetes.core.k8s`` results);
* ``device_plugin``: what ``rdma.node.rdma_shared_device_plugin_config`` built from the groups' facts,
  or null;
* ``stale_dry_runs`` and ``stale_patches``: the results of the role's ``k8s_json_patch`` loops that
  remove stale extended resources (each with its ``item``).

Parameters, without the ``k8s_rdma_`` prefix: ``policy_name``, ``tolerations`` (every toleration
the policy must have), ``mofed_wait_label``, ``resources``, ``resource_prefix``,
``expected_resource_count``, ``apply_device_plugin_config``, ``inventory_groups`` (group -> hosts),
``node_names`` (host -> its ``k8s_node_name``) and ``check_mode``.

Findings about a node have the node's name as subject, so the fleet report shows them on the host
of that name as well as in the cluster section.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _registry
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, summary
from ansible_collections.rdma.node.plugins.plugin_utils._k8s_rdma import (
    MOFED_WAIT_LABEL,
    K8sRdmaError,
    merge_tolerations,
    mofed_wait_nodes,
    node_expectations,
    resource_states,
    stale_resource_patches,
    taint_reason,
)

ROLE = "k8s_rdma"
FACTS = ("k8s_cluster",)
POLICY_API = "mellanox.com/v1alpha1 NicClusterPolicy"
PATCH_PARAMS = ("policy_name", "tolerations", "check_mode")
MOFED_PARAMS = ("policy_name", "mofed_wait_label", "check_mode")
RESOURCE_PARAMS = ("resources", "resource_prefix", "expected_resource_count", "mofed_wait_label", "inventory_groups", "node_names")
DEVICE_PLUGIN_PARAMS = ("policy_name", "apply_device_plugin_config", "resources")
MOFED_CHECKS = ("mofed_wait_timeout", "mofed_wait_blocked", "mofed_wait_unblocked", "mofed_wait_unexplained", "mofed_wait_cleared")
RESOURCE_CHECKS = ("resource_missing", "node_not_in_cluster", "resource_count")


def _cluster(facts):
    cluster = facts["k8s_cluster"]
    if not isinstance(cluster, dict):
        raise CheckError("k8s_cluster: expected what the role read from the cluster as a mapping, got %r" % (cluster,))
    return cluster


def _policy_name(params):
    return params.get("policy_name") or "nic-cluster-policy"


def _get(value, *path):
    """``value[path[0]][path[1]]...``, or None where a step is not a mapping or lacks the key."""
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


# ------------------------------------------------------------------------------------ the policy


def _now_tolerations(cluster):
    return _get(cluster, "policy", "spec", "tolerations") or []


def patch_outcome(cluster, params):
    """What became of this run's NicClusterPolicy patch, from the server's answers.

    ``plan`` is the toleration merge, ``answered``: the dry run returned the object it would store,
    ``tolerations_kept``/``config_kept``: that object keeps what was sent, ``failed``: the dry run or
    the patch was refused (with the server's ``message``), ``applied``: the patch is in place (or
    would be, in check mode).
    """
    plan = merge_tolerations(_now_tolerations(cluster), params.get("tolerations") or [], "k8s_rdma_tolerations")
    patch = cluster.get("policy_patch") or {}
    outcome = {"plan": plan, "tolerations": bool(patch.get("tolerations")), "config": bool(patch.get("config")),
               "answered": False, "tolerations_kept": True, "config_kept": True, "failed": False, "message": None,
               "applied": False, "spec": patch.get("spec")}
    if not (outcome["tolerations"] or outcome["config"]):
        return outcome
    dry_run = patch.get("dry_run") or {}
    dry_spec = _get(dry_run, "result", "spec")
    outcome["answered"] = isinstance(dry_spec, dict)
    if outcome["answered"]:
        if outcome["tolerations"]:
            outcome["tolerations_kept"] = not merge_tolerations(dry_spec.get("tolerations") or [], plan["added"])["added"]
        if outcome["config"]:
            wanted = _get(cluster, "device_plugin", "policy_config")
            outcome["config_kept"] = (_get(dry_spec, "rdmaSharedDevicePlugin", "config") or "") == wanted
    patched = patch.get("patched") or {"skipped": True}
    patched_ok = isinstance(_get(patched, "result", "spec"), dict)
    if not outcome["answered"]:
        outcome.update(failed=True, message=dry_run.get("msg") or "no answer")
    elif not patched.get("skipped") and not patched_ok:
        outcome.update(failed=True, message=patched.get("msg") or "no answer")
    dry_run_ok = outcome["answered"] and outcome["tolerations_kept"] and outcome["config_kept"]
    outcome["applied"] = dry_run_ok and (bool(params.get("check_mode")) or patched_ok)
    return outcome


@check(ROLE, "policy_api_missing", reads=FACTS, params=("policy_name",))
def policy_api_missing(facts, params, found):
    """The cluster serves no NicClusterPolicy API: the NVIDIA Network Operator is not installed."""
    cluster = _cluster(facts)
    if cluster.get("policy") is None and cluster.get("policy_api_found") is False:
        found.critical(_policy_name(params), "The cluster serves no %s API: the NVIDIA Network Operator is not installed, so "
                       "nothing manages the RDMA driver and device plugin." % POLICY_API, _policy_name(params), None)


@check(ROLE, "policy_missing", reads=FACTS, params=("policy_name",))
def policy_missing(facts, params, found):
    """The cluster has the NicClusterPolicy API but no policy of the name the role manages."""
    cluster = _cluster(facts)
    if cluster.get("policy") is None and cluster.get("policy_api_found") is not False:
        name = _policy_name(params)
        found.critical(name, "There is no NicClusterPolicy named %s in the cluster, so its tolerations and device plugin "
                       "config cannot be managed." % name, name, None)


@check(ROLE, "policy_patch_failed", reads=FACTS, params=PATCH_PARAMS)
def policy_patch_failed(facts, params, found):
    """The server refused the NicClusterPolicy patch or its dry run (409 when the policy changed meanwhile)."""
    outcome = patch_outcome(_cluster(facts), params)
    if outcome["failed"]:
        found.critical(_policy_name(params), "%s merge patch of NicClusterPolicy %s failed, so nothing was changed: %s" % (
            "The" if outcome["answered"] else "The server-side dry run of", _policy_name(params), outcome["message"]),
            _get(outcome, "spec", "spec"), None)


@check(ROLE, "tolerations_not_supported", reads=FACTS, params=PATCH_PARAMS)
def tolerations_not_supported(facts, params, found):
    """The dry run dropped spec.tolerations: the operator's CRD has none, so nothing was applied."""
    cluster = _cluster(facts)
    outcome = patch_outcome(cluster, params)
    if outcome["answered"] and not outcome["tolerations_kept"]:
        name = _policy_name(params)
        found.critical(name, "The server-side dry run dropped spec.tolerations from the patch of NicClusterPolicy %s: this "
                       "Network Operator version's CRD has no spec.tolerations (see kubectl explain nicclusterpolicy.spec), "
                       "so nothing was applied and %s stay untolerated." % (name, ", ".join(outcome["plan"]["added_text"])),
                       outcome["plan"]["tolerations"], _get(cluster, "policy_patch", "dry_run", "result", "spec", "tolerations"))


@check(ROLE, "device_plugin_config_rejected", reads=FACTS, params=PATCH_PARAMS)
def device_plugin_config_rejected(facts, params, found):
    """The dry run did not keep the device plugin config as sent, so nothing was applied."""
    cluster = _cluster(facts)
    outcome = patch_outcome(cluster, params)
    if outcome["answered"] and not outcome["config_kept"]:
        found.critical(_policy_name(params), "The server-side dry run of the patch of NicClusterPolicy %s did not keep "
                       "spec.rdmaSharedDevicePlugin.config as sent, so nothing was applied." % _policy_name(params),
                       _get(cluster, "device_plugin", "policy_config"),
                       _get(cluster, "policy_patch", "dry_run", "result", "spec", "rdmaSharedDevicePlugin", "config"))


def _tolerations_changed(facts, params, found, in_check_mode):
    cluster = _cluster(facts)
    outcome = patch_outcome(cluster, params)
    if bool(params.get("check_mode")) != in_check_mode or not (outcome["applied"] and outcome["tolerations"]):
        return
    now = _now_tolerations(cluster)
    found.info(_policy_name(params), "%s %s to spec.tolerations of NicClusterPolicy %s (server-side dry run first; %d existing "
               "toleration(s) kept)." % ("Check mode: would add" if in_check_mode else "Added", ", ".join(outcome["plan"]["added_text"]),
                                         _policy_name(params), len(now)), outcome["plan"]["tolerations"], now)


@check(ROLE, "tolerations_added", reads=FACTS, params=PATCH_PARAMS)
def tolerations_added(facts, params, found):
    """The tolerations the policy lacked were merged into spec.tolerations."""
    _tolerations_changed(facts, params, found, in_check_mode=False)


@check(ROLE, "tolerations_planned", reads=FACTS, params=PATCH_PARAMS)
def tolerations_planned(facts, params, found):
    """Check mode: the tolerations the patch would merge into spec.tolerations (its dry run accepted them)."""
    _tolerations_changed(facts, params, found, in_check_mode=True)


def _config_changed(facts, params, found, in_check_mode):
    cluster = _cluster(facts)
    outcome = patch_outcome(cluster, params)
    if bool(params.get("check_mode")) != in_check_mode or not (outcome["applied"] and outcome["config"]):
        return
    differences = "; ".join(d.get("summary") or "" for d in _get(cluster, "device_plugin", "differences") or [])
    found.info(_policy_name(params), "%s spec.rdmaSharedDevicePlugin.config of NicClusterPolicy %s from the gathered facts (%s)." % (
        "Check mode: would set" if in_check_mode else "Set", _policy_name(params), differences),
        _get(cluster, "device_plugin", "policy_config"), _get(cluster, "policy", "spec", "rdmaSharedDevicePlugin", "config"))


@check(ROLE, "device_plugin_config_updated", reads=FACTS, params=PATCH_PARAMS)
def device_plugin_config_updated(facts, params, found):
    """The device plugin config of the policy was set from the gathered facts."""
    _config_changed(facts, params, found, in_check_mode=False)


@check(ROLE, "device_plugin_config_planned", reads=FACTS, params=PATCH_PARAMS)
def device_plugin_config_planned(facts, params, found):
    """Check mode: the device plugin config the patch would set (its dry run accepted it)."""
    _config_changed(facts, params, found, in_check_mode=True)


# ------------------------------------------------------------------------------------ device plugin config


def _device_plugin(cluster):
    """The device plugin config built from the facts, when the role built one (a policy and resources)."""
    return cluster.get("device_plugin") if cluster.get("policy") is not None else None


@check(ROLE, "device_plugin_config_incomplete", reads=FACTS, params=DEVICE_PLUGIN_PARAMS)
def device_plugin_config_incomplete(facts, params, found):
    """A group has no host with facts or no ACTIVE port with a usable netdev, or the policy's config is not
    valid JSON: critical when the role was to apply the config (nothing was applied), else a warning."""
    plugin = _device_plugin(_cluster(facts))
    applying = bool(params.get("apply_device_plugin_config"))
    resources = params.get("resources") or {}
    for problem in (plugin or {}).get("problems") or []:
        message = problem["message"][:1].upper() + problem["message"][1:] + "."
        if applying:
            message += " The device plugin config was not applied."
        group = problem.get("group")
        found.add("critical" if applying else "warning", group or _policy_name(params), message, resources.get(group) if group else None, None)


@check(ROLE, "device_plugin_hosts_without_facts", reads=FACTS, params=DEVICE_PLUGIN_PARAMS)
def device_plugin_hosts_without_facts(facts, params, found):
    """Some hosts of a group have no ansible_facts.rdma, so the group's ifNames come from the others only."""
    plugin = _device_plugin(_cluster(facts))
    for group, entry in ((plugin or {}).get("groups") or {}).items():
        if entry.get("included") and entry.get("hosts_without_facts"):
            found.warning(group, "Hosts %s of group %s have no ansible_facts.rdma, so the ifNames of %s come from %s only." % (
                ", ".join(entry["hosts_without_facts"]), group, entry["resourceName"], ", ".join(entry["hosts"])),
                entry["hosts"] + entry["hosts_without_facts"], entry["hosts"])


@check(ROLE, "device_plugin_not_enabled", reads=FACTS, params=DEVICE_PLUGIN_PARAMS)
def device_plugin_not_enabled(facts, params, found):
    """The role is to apply the device plugin config, but the policy has no spec.rdmaSharedDevicePlugin."""
    cluster = _cluster(facts)
    if _device_plugin(cluster) is None or not params.get("apply_device_plugin_config"):
        return
    if _get(cluster, "policy", "spec", "rdmaSharedDevicePlugin") is None:
        name = _policy_name(params)
        found.critical(name, "NicClusterPolicy %s has no spec.rdmaSharedDevicePlugin; enable the RDMA shared device plugin "
                       "(image, repository, version) first. The device plugin config was not applied." % name,
                       "spec.rdmaSharedDevicePlugin", None)


@check(ROLE, "device_plugin_config_drift", reads=FACTS, params=DEVICE_PLUGIN_PARAMS)
def device_plugin_config_drift(facts, params, found):
    """Not applying, and the policy's device plugin config differs from what the gathered facts give."""
    plugin = _device_plugin(_cluster(facts))
    if plugin is None or params.get("apply_device_plugin_config"):
        return
    for difference in plugin.get("differences") or []:
        found.warning(difference["resourceName"], "The device plugin config of NicClusterPolicy %s differs from the gathered "
                      "facts (%s); set k8s_rdma_apply_device_plugin_config to true to apply it." % (
                          _policy_name(params), difference["summary"]), difference["wanted"], difference["current"])


# ------------------------------------------------------------------------------------ mofed.wait


def mofed_state(cluster, params):
    """The nodes stuck at mofed.wait=true as last read, with the taints that block them, and the wait."""
    wait = cluster.get("mofed_wait")
    if wait is not None and not isinstance(wait, dict):
        raise CheckError("k8s_cluster.mofed_wait: expected null or {waited_seconds, previously_stuck}, got %r" % (wait,))
    state = mofed_wait_nodes(cluster.get("nodes") or [], cluster.get("tolerations") or [], cluster.get("planned_tolerations"),
                             params.get("mofed_wait_label") or MOFED_WAIT_LABEL)
    state["waited_seconds"] = (wait or {}).get("waited_seconds")
    state["previously_stuck"] = list((wait or {}).get("previously_stuck") or [])
    return state


def _verdict(state, entry):
    if state["waited_seconds"] is not None:
        return "timeout"
    if entry["remaining"]:
        return "blocked"
    return "unblocked" if entry["blocking"] else "unexplained"


def _stuck(facts, params, verdict):
    """``(name, entry, state)`` of each stuck node whose verdict is ``verdict``."""
    state = mofed_state(_cluster(facts), params)
    return [(name, state["nodes"][name], state) for name in state["stuck"] if _verdict(state, state["nodes"][name]) == verdict]


def _head(params, name):
    return '%s is "true" on node %s' % (params.get("mofed_wait_label") or MOFED_WAIT_LABEL, name)


def _reasons(taints, params):
    return "; ".join(taint_reason(t, _policy_name(params)) for t in taints)


def _seconds(value):
    return int(value) if float(value).is_integer() else value


@check(ROLE, "mofed_wait_timeout", reads=FACTS, params=MOFED_PARAMS)
def mofed_wait_timeout(facts, params, found):
    """A node's mofed.wait label is still "true" after the role waited k8s_rdma_mofed_wait_timeout seconds."""
    for name, entry, state in _stuck(facts, params, "timeout"):
        cause = _reasons(entry["remaining"], params) or "no taint blocks the driver pod, so look at the MOFED driver pod on the node"
        found.critical(name, '%s after waiting %s s for it to become "false": %s.' % (_head(params, name), _seconds(state["waited_seconds"]), cause),
                       "false", "true")


@check(ROLE, "mofed_wait_blocked", reads=FACTS, params=MOFED_PARAMS)
def mofed_wait_blocked(facts, params, found):
    """A node's mofed.wait label is "true" and a NoSchedule/NoExecute taint that the policy does not
    tolerate, even with this run's tolerations, keeps the MOFED driver pod off it."""
    for name, entry, dummy in _stuck(facts, params, "blocked"):
        found.critical(name, "%s: %s, so the MOFED driver pod cannot be scheduled there and the node advertises no rdma/* resources."
                       % (_head(params, name), _reasons(entry["remaining"], params)), "false", "true")


@check(ROLE, "mofed_wait_unblocked", reads=FACTS, params=MOFED_PARAMS)
def mofed_wait_unblocked(facts, params, found):
    """A node's mofed.wait label is "true" because of a taint that this run's tolerations now cover: the operator needs time."""
    verb = "would add" if params.get("check_mode") else "added"
    for name, entry, dummy in _stuck(facts, params, "unblocked"):
        found.warning(name, "%s: %s; the tolerations this run %s cover it, so the operator can schedule the MOFED driver pod again "
                      "(set k8s_rdma_wait_mofed to wait for the label)." % (_head(params, name), _reasons(entry["blocking"], params), verb),
                      "false", "true")


@check(ROLE, "mofed_wait_unexplained", reads=FACTS, params=MOFED_PARAMS)
def mofed_wait_unexplained(facts, params, found):
    """A node's mofed.wait label is "true" but no taint keeps the MOFED driver pod off it (the pod may be failing)."""
    for name, entry, dummy in _stuck(facts, params, "unexplained"):
        found.warning(name, "%s but no taint keeps the MOFED driver pod off it: the pod may still be installing the driver or failing; "
                      "check it with kubectl -n nvidia-network-operator get pods -o wide --field-selector spec.nodeName=%s.%s" % (
                          _head(params, name), name, " The node is NotReady." if entry["not_ready"] else ""), "false", "true")


@check(ROLE, "mofed_wait_cleared", reads=FACTS, params=MOFED_PARAMS)
def mofed_wait_cleared(facts, params, found):
    """A node whose mofed.wait label was "true" before the wait is "false" again."""
    state = mofed_state(_cluster(facts), params)
    for name in sorted(set(state["previously_stuck"]) - set(state["stuck"])):
        found.info(name, '%s is "false" again on node %s.' % (params.get("mofed_wait_label") or MOFED_WAIT_LABEL, name), "false", "false")


# ------------------------------------------------------------------------------------ node resources


def resource_state(cluster, params):
    """What each node of the groups in ``resources`` advertises, or None when no resource is expected."""
    resources = params.get("resources") or {}
    if not resources:
        return None
    names = params.get("node_names") or {}
    count = params.get("expected_resource_count") or 0
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise K8sRdmaError("k8s_rdma_expected_resource_count: expected a non-negative integer, got %r" % (count,))
    expectations = node_expectations(params.get("inventory_groups") or {}, resources, lambda host: names.get(host) or None,
                                     prefix=params.get("resource_prefix") or "rdma")
    return resource_states(cluster.get("nodes") or [], expectations, count, params.get("mofed_wait_label"))


def _amounts(entry):
    return {"capacity": entry["capacity"], "allocatable": entry["allocatable"]}


@check(ROLE, "resource_missing", reads=FACTS, params=RESOURCE_PARAMS)
def resource_missing(facts, params, found):
    """A node of a group lacks its rdma/<name> resource (or has 0) in capacity or allocatable."""
    count = params.get("expected_resource_count") or 0
    for entry in (resource_state(_cluster(facts), params) or {}).get("checked") or []:
        if not entry["missing"]:
            continue
        shown = ", ".join("%s: %s" % (f, "absent" if entry[f] is None else entry[f]) for f in ("capacity", "allocatable"))
        waiting = (' while %s is "true" (the device plugin waits for the MOFED driver)' % params.get("mofed_wait_label")) if entry["waiting"] else ""
        found.critical(entry["node"], "Node %s (group %s) does not advertise %s in %s (%s)%s." % (
            entry["node"], entry["group"], entry["resource"], " and ".join(entry["missing"]), shown, waiting),
            {"capacity": count or ">0", "allocatable": count or ">0"}, _amounts(entry))


@check(ROLE, "node_not_in_cluster", reads=FACTS, params=RESOURCE_PARAMS)
def node_not_in_cluster(facts, params, found):
    """An inventory host of a group in k8s_rdma_resources has no Node of its name (k8s_node_name sets another)."""
    for want in (resource_state(_cluster(facts), params) or {}).get("absent") or []:
        found.critical(want["node"], "The inventory host %s of group %s has no Node %s in the cluster; set k8s_node_name for it when "
                       "the names differ." % (want["host"], want["group"], want["node"]), want["node"], None)


@check(ROLE, "resource_count", reads=FACTS, params=RESOURCE_PARAMS)
def resource_count(facts, params, found):
    """A node advertises its resource with another amount than k8s_rdma_expected_resource_count."""
    count = params.get("expected_resource_count") or 0
    for entry in (resource_state(_cluster(facts), params) or {}).get("checked") or []:
        if entry["wrong_count"]:
            found.warning(entry["node"], "Node %s (group %s) advertises %s with %s, expected %d in both." % (
                entry["node"], entry["group"], entry["resource"],
                " and ".join("%s %s" % (f, entry[f]) for f in ("capacity", "allocatable")), count),
                {"capacity": count, "allocatable": count}, _amounts(entry))


# ------------------------------------------------------------------------------------ stale resources


def stale_outcomes(cluster, params):
    """Each node the role cleaned of stale extended resources: ``(entry, outcome, kept, failure)``.

    ``outcome`` is ``removed``, ``planned`` (check mode), ``kept`` (the server-side dry run kept a
    resource, listed in ``kept``) or ``failed`` (the dry run or the patch was refused; ``failure``
    ends the message with where it failed and the server's message).
    """
    patches = {}
    for result in cluster.get("stale_patches") or []:
        node = _get(result, "item", "item", "node")
        if node is not None:
            patches[node] = result
    outcomes = []
    for dry_run in cluster.get("stale_dry_runs") or []:
        entry = dry_run.get("item") if isinstance(dry_run, dict) else None
        if not isinstance(entry, dict) or not entry.get("node"):
            continue
        answer = _get(dry_run, "result")
        answered = isinstance(_get(answer, "status"), dict)
        kept = stale_resource_patches([answer], list(entry.get("resources") or [])) if answered else []
        real = patches.get(entry["node"]) or {"skipped": True}
        if not answered:
            outcome, failure = "failed", " in the server-side dry run: %s" % (dry_run.get("msg") or "no answer")
        elif kept:
            outcome, failure = "kept", None
        elif params.get("check_mode"):
            outcome, failure = "planned", None
        elif isinstance(_get(real, "result", "status"), dict):
            outcome, failure = "removed", None
        else:
            outcome, failure = "failed", ": %s" % (real.get("msg") or "no answer")
        outcomes.append((entry, outcome, kept[0]["resources"] if kept else [], failure))
    return outcomes


def _where(entry):
    return "%s from the status (%s) of node %s" % (", ".join(entry["resources"]), ", ".join(entry["fields"]), entry["node"])


def _stale(facts, params, wanted):
    return [(entry, kept, failure) for entry, outcome, kept, failure in stale_outcomes(_cluster(facts), params) if outcome == wanted]


@check(ROLE, "stale_resource_removed", reads=FACTS, params=("check_mode",))
def stale_resource_removed(facts, params, found):
    """A stale extended resource was removed from a node's status (after a server-side dry run)."""
    for entry, dummy, dummy2 in _stale(facts, params, "removed"):
        found.info(entry["node"], "Removed %s (server-side dry run first)." % _where(entry), entry["patch"], entry["resources"])


@check(ROLE, "stale_resource_planned", reads=FACTS, params=("check_mode",))
def stale_resource_planned(facts, params, found):
    """Check mode: a stale extended resource the role would remove (the server-side dry run accepted it)."""
    for entry, dummy, dummy2 in _stale(facts, params, "planned"):
        found.info(entry["node"], "Check mode: would remove %s (the server-side dry run accepted it)." % _where(entry),
                   entry["patch"], entry["resources"])


@check(ROLE, "stale_resource_kept", reads=FACTS, params=("check_mode",))
def stale_resource_kept(facts, params, found):
    """The server-side dry run kept a stale resource in the node's status, so nothing was removed there."""
    for entry, kept, dummy in _stale(facts, params, "kept"):
        found.critical(entry["node"], "The server-side dry run kept %s in the status of node %s, so nothing was removed there." % (
            ", ".join(kept), entry["node"]), entry["patch"], entry["resources"])


@check(ROLE, "stale_resource_failed", reads=FACTS, params=("check_mode",))
def stale_resource_failed(facts, params, found):
    """Removing a stale resource failed, in the server-side dry run or in the patch."""
    for entry, dummy, failure in _stale(facts, params, "failed"):
        found.critical(entry["node"], "Removing %s failed%s" % (_where(entry), failure), entry["patch"], entry["resources"])


# ------------------------------------------------------------------------------------ status


@summary(ROLE, reads=FACTS, params=PATCH_PARAMS + RESOURCE_PARAMS)
def cluster_summary(facts, params, findings):
    """The policy, its tolerations after this run, whether it was patched, the stuck nodes, the nodes
    without their resource, the nodes cleaned of stale resources and the device plugin configList."""
    cluster = _cluster(facts)
    resources = resource_state(cluster, params)
    plugin = _device_plugin(cluster)
    return {
        "policy": _policy_name(params) if cluster.get("policy") is not None else None,
        "tolerations": cluster.get("planned_tolerations") if cluster.get("planned_tolerations") is not None else cluster.get("tolerations") or [],
        "policy_patched": patch_outcome(cluster, params)["applied"] and not params.get("check_mode"),
        "mofed_wait_nodes": mofed_state(cluster, params)["stuck"],
        "nodes_without_resources": list(dict.fromkeys(e["node"] for e in resources["checked"] if not e["ok"])) if resources else [],
        "stale_resource_nodes": [entry["node"] for entry, dummy, dummy2, dummy3 in stale_outcomes(cluster, params)],
        "device_plugin_config": plugin.get("configList") if plugin is not None else None,
    }


# ------------------------------------------------------------------------------------ the filters' entry points


def mofed_wait_findings(nodes, tolerations, planned_tolerations=None, policy_name="nic-cluster-policy", label=MOFED_WAIT_LABEL,
                        waited_seconds=None, previously_stuck=None, check_mode=False):
    """The mofed.wait checks on ``nodes`` alone (the k8s_mofed_wait_findings filter).

    Returns ``{"stuck": [names], "nodes": {name: {untolerated, untolerated_after_patch, not_ready}}, "findings": [...]}``.
    """
    if not isinstance(nodes, list):
        raise K8sRdmaError("expected a list of Node objects, got %r" % (nodes,))
    wait = None
    if waited_seconds is not None or previously_stuck:
        wait = {"waited_seconds": waited_seconds, "previously_stuck": list(previously_stuck or [])}
    cluster = {"nodes": nodes, "tolerations": tolerations or [], "planned_tolerations": planned_tolerations, "mofed_wait": wait}
    params = {"policy_name": policy_name, "mofed_wait_label": label, "check_mode": check_mode}
    evaluated = _registry.evaluate(ROLE, {"k8s_cluster": cluster}, params, subject="cluster", only=MOFED_CHECKS)
    state = mofed_state(cluster, params)
    details = {name: {key: entry[key] for key in ("untolerated", "untolerated_after_patch", "not_ready")} for name, entry in state["nodes"].items()}
    return {"stuck": state["stuck"], "nodes": details, "findings": evaluated["findings"]}


def resource_findings(nodes, resources, inventory_groups, node_names=None, prefix="rdma", expected_count=0, mofed_label=None):
    """The node resource checks on ``nodes`` alone (the k8s_node_resource_findings filter).

    Returns ``{"findings": [...], "checked": [{node, group, resource, capacity, allocatable, ok}]}``.
    """
    cluster = {"nodes": nodes}
    params = {"resources": resources, "inventory_groups": inventory_groups, "node_names": node_names or {}, "resource_prefix": prefix,
              "expected_resource_count": expected_count, "mofed_wait_label": mofed_label}
    evaluated = _registry.evaluate(ROLE, {"k8s_cluster": cluster}, params, subject="cluster", only=RESOURCE_CHECKS)
    state = resource_state(cluster, params) or {"checked": []}
    checked = [{key: entry[key] for key in ("node", "group", "resource", "capacity", "allocatable", "ok")} for entry in state["checked"]]
    return {"findings": evaluated["findings"], "checked": checked}
