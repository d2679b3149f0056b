# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``k8s_quarantine`` role: what the quarantine planned and what the cluster made of it.

They read one fact, ``k8s_quarantine``, that the role hands to ``rdma.node.evaluate``:

* ``plan``: what ``_quarantine.plan()`` made of the findings and of what the role read (the nodes,
  the ledger, the NicClusterPolicy): each node's entry (``kind``: quarantine, held, opted_out, keep,
  count, release, pending), the breaker, the guard, the ledger request and the node patches;
* ``check_mode``: whether the run was ``--check`` (only reads and server-side dry runs were sent);
* ``results``: what the ``kubernetes.core`` tasks gave: ``guard`` (the NicClusterPolicy patch),
  ``ledger`` (the ledger ConfigMap), ``patches`` (one per node patch, each with its ``item``) and
  ``drains`` (what ``rdma.node.k8s_evict_pods`` did on each newly quarantined node).

Parameters, without the ``k8s_quarantine_`` prefix: ``release_after``, and ``taint`` and ``cordon`` (to
say what a quarantine does). The mode is the plan's.

A finding about a node has the node's name as subject, so the fleet report shows it on the inventory
host of that name as well as in its cluster section; the cluster-wide ones have ``cluster/<name>``.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils._checks.cluster import _get
from ansible_collections.rdma.node.plugins.plugin_utils._k8s_rdma import describe_taint, describe_toleration
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, summary

ROLE = "k8s_quarantine"
FACTS = ("k8s_quarantine",)
PARAMS = ("release_after", "taint", "cordon")


def _fact(facts):
    fact = facts["k8s_quarantine"]
    if not isinstance(fact, dict) or not isinstance(fact.get("plan"), dict):
        raise CheckError("k8s_quarantine: expected {plan, check_mode, results} as the role builds it, got %r" % (fact,))
    return fact


def _cluster(plan):
    return "cluster/%s" % plan.get("cluster")


def _applying(fact):
    return fact["plan"].get("mode") == "apply"


def _ok(result, *path):
    return isinstance(_get(result, "result", *path), dict)


def _failure(result):
    """The server's answer when a kubernetes.core task failed, in a few words."""
    message = (result or {}).get("msg") or "no answer"
    reason = _get(result, "reason") or _get(result, "error", "reason")
    status = _get(result, "status") or _get(result, "error", "status")
    if status == 409 or "Conflict" in str(reason) or "the object has been modified" in message:
        return "%s (409 Conflict: it changed since it was read; nothing of the other change was lost)" % message
    return message


def ledger_outcome(fact):
    """``(sent, failure)`` of the ledger request: sent is false when none was needed or none was sent."""
    plan, results = fact["plan"], fact.get("results") or {}
    if not plan.get("ledger") or not _applying(fact):
        return False, None
    answer = results.get("ledger")
    if not isinstance(answer, dict) or answer.get("skipped"):
        return False, "not sent"
    return True, None if _ok(answer, "metadata") else _failure(answer)


def guard_outcome(fact):
    """``(state, failure)`` of the NicClusterPolicy patch: ``planned``, ``dry_run``, ``applied`` or ``failed``."""
    guard = fact["plan"].get("guard") or {}
    if guard.get("state") != "patch":
        return None, None
    if not _applying(fact):
        return "planned", None
    answer = (fact.get("results") or {}).get("guard")
    if not isinstance(answer, dict) or answer.get("skipped"):
        return "failed", "the patch was not sent"
    if not _ok(answer, "spec"):
        return "failed", _failure(answer)
    return ("dry_run" if fact.get("check_mode") else "applied"), None


def node_outcomes(fact):
    """``{node: (outcome, failure)}`` for every node with a patch: ``planned`` (report mode),
    ``dry_run`` (check mode, accepted), ``applied``, ``failed`` or ``not_sent`` (and why)."""
    plan = fact["plan"]
    answers = {}
    for result in (fact.get("results") or {}).get("patches") or []:
        node = _get(result, "item", "node")
        if node is not None:
            answers[node] = result
    ledger_sent, ledger_failure = ledger_outcome(fact)
    out = {}
    for patch in plan.get("patches") or []:
        node = patch["node"]
        if not _applying(fact):
            out[node] = ("planned", None)
            continue
        answer = answers.get(node)
        if not isinstance(answer, dict) or answer.get("skipped"):
            why = ("the ledger was not updated: %s" % ledger_failure) if ledger_failure else \
                "the NicClusterPolicy does not tolerate the quarantine" if patch["kind"] == "quarantine" else "it was skipped"
            out[node] = ("not_sent", why)
        elif _ok(answer, "metadata"):
            out[node] = ("dry_run" if fact.get("check_mode") else "applied", None)
        else:
            out[node] = ("failed", _failure(answer))
    return out


def _entries(fact, *kinds):
    nodes = fact["plan"].get("nodes") or {}
    return [(name, nodes[name]) for name in sorted(nodes) if nodes[name].get("kind") in kinds]


def _what(params):
    parts = []
    if params.get("cordon") is not False:
        parts.append("cordon")
    taint = params.get("taint")
    if isinstance(taint, dict) and taint.get("key"):
        parts.append("taint %s" % describe_taint(taint))
    return " and ".join(parts) or "quarantine"


def _because(entry):
    """The findings that quarantine the node, as the record says them (without a closing full stop)."""
    return ("; ".join(entry.get("reasons") or []) or ", ".join(entry.get("checks") or [])).rstrip(".")


# ------------------------------------------------------------------------------------ the cluster


@check(ROLE, "cluster_not_read", reads=FACTS, params=PARAMS)
def cluster_not_read(facts, params, found):
    """The cluster was not read (k8s_quarantine_read_cluster false, or the read failed): the plan comes from the
    findings alone. Info when not asked to read, a warning when the read failed in report mode, critical in apply mode."""
    plan = _fact(facts)["plan"]
    if plan.get("cluster_read"):
        return
    error = plan.get("read_error")
    alone = ("so the plan comes from the findings alone: the nodes rdma.node already holds, the opt-out labels, the "
             "failure domains of node labels and the breaker's ledger were not considered")
    if plan.get("mode") == "apply":
        found.critical(_cluster(plan), "The cluster could not be read (%s), so nothing was quarantined or released." % (
            error or "k8s_quarantine_read_cluster is false"), "read", None)
    elif error:
        found.warning(_cluster(plan), "The cluster could not be read (%s), %s." % (error, alone), "read", None)
    else:
        found.info(_cluster(plan), "The cluster was not read (k8s_quarantine_read_cluster is false), %s." % alone, "read", None)


@check(ROLE, "breaker_tripped", reads=FACTS)
def breaker_tripped(facts, params, found):
    """The circuit breaker held the new quarantines: with the nodes already held they would exceed
    min(ceil(percent x eligible), max_nodes), cluster-wide or in a failure domain."""
    plan = _fact(facts)["plan"]
    breaker = plan.get("breaker") or {}
    if not breaker.get("tripped"):
        return
    if breaker.get("scope") == "cluster":
        found.critical(_cluster(plan), "The circuit breaker tripped: %s. None of the new nodes was quarantined; it would have "
                       "taken out %s. So many nodes failing at once is usually the fabric or a configuration, not the nodes."
                       % (breaker["message"], ", ".join(breaker["new"])), breaker["limit"], len(plan.get("counted") or []) + len(breaker["new"]))
        return
    for domain, entry in sorted((breaker.get("domains") or {}).items()):
        if entry.get("tripped"):
            found.critical(domain, "The circuit breaker tripped for %s: %s. None of its new nodes was quarantined; it would have "
                           "taken out %s." % (domain, entry["message"], ", ".join(entry["new"])), entry["limit"],
                           len(entry["counted"]) + len(entry["new"]))


@check(ROLE, "ledger_conflict", reads=FACTS)
def ledger_conflict(facts, params, found):
    """The quarantine ledger (a ConfigMap) could not be updated, most often because another run changed it at the
    same time: nothing was quarantined or released by this run, and the breaker still holds."""
    fact = _fact(facts)
    sent, failure = ledger_outcome(fact)
    if sent and failure:
        found.critical(_cluster(fact["plan"]), "The quarantine ledger could not be updated: %s. So this run quarantined and released "
                       "nothing; the next run plans again from what the cluster then holds." % failure, None, None)


@check(ROLE, "toleration_missing", reads=FACTS)
def toleration_missing(facts, params, found):
    """The NicClusterPolicy does not tolerate the quarantine and was not made to (k8s_quarantine_mofed_guard is refuse,
    or its patch failed): tainting would keep the MOFED driver pod off the node after its next kernel upgrade, so
    no node was quarantined."""
    fact = _fact(facts)
    guard = fact["plan"].get("guard") or {}
    missing = ", ".join(describe_toleration(t) for t in guard.get("missing") or [])
    state, failure = guard_outcome(fact)
    consequence = ("a node quarantined without them gets no MOFED driver pod after its next kernel upgrade, and "
                   "network.nvidia.com/operator.mofed.wait stays \"true\"")
    if guard.get("state") == "refuse":
        found.critical(guard["policy"], "NicClusterPolicy %s lacks the tolerations %s (k8s_quarantine_mofed_guard is refuse): %s. "
                       "No node was quarantined; add them (rdma.node.k8s_rdma with k8s_rdma_tolerations) or set "
                       "k8s_quarantine_mofed_guard to patch." % (guard["policy"], missing, consequence), guard["missing"], None)
    elif state == "failed":
        found.critical(guard["policy"], "Adding the tolerations %s to NicClusterPolicy %s failed (%s): %s. No node was quarantined."
                       % (missing, guard["policy"], failure, consequence), guard["missing"], None)
    elif guard.get("state") == "not_read" and fact["plan"].get("quarantine"):
        found.info(_cluster(fact["plan"]), "Whether the NicClusterPolicy tolerates %s was not checked (the cluster was not read); "
                   "apply adds them first, or refuses." % missing, guard["missing"], None)


@check(ROLE, "toleration_added", reads=FACTS)
def toleration_added(facts, params, found):
    """The tolerations the quarantine needs were merged into the NicClusterPolicy before any node was tainted
    (report mode and check mode: would be)."""
    fact = _fact(facts)
    guard = fact["plan"].get("guard") or {}
    state, dummy = guard_outcome(fact)
    if state not in ("planned", "dry_run", "applied"):
        return
    missing = ", ".join(describe_toleration(t) for t in guard["missing"])
    head = {"planned": "Apply would first add", "dry_run": "Check mode: would first add", "applied": "Added"}[state]
    found.info(guard["policy"], "%s %s to spec.tolerations of NicClusterPolicy %s, so the MOFED driver pod still reaches a "
               "quarantined node after a kernel upgrade (the existing tolerations kept)." % (head, missing, guard["policy"]),
               guard["tolerations"], None)


# ------------------------------------------------------------------------------------ the nodes


def _quarantine_message(name, entry, params, outcome):
    record = entry.get("record") or {}
    extra = ""
    if record.get("cordon_pre_existing"):
        extra = " It was already cordoned: rdma.node keeps that cordon as it is and will not lift it."
    what = _what(params)
    head = {"planned": "Would %s node %s" % (what, name), "dry_run": "Check mode: would %s node %s (the server-side dry run "
            "accepted it)" % (what, name), "applied": "Quarantined node %s (%s)" % (name, what)}[outcome]
    return "%s for %s.%s" % (head, _because(entry), extra)


@check(ROLE, "would_quarantine", reads=FACTS, params=PARAMS)
def would_quarantine(facts, params, found):
    """Report mode and check mode: a node the run would quarantine, and for what."""
    fact = _fact(facts)
    outcomes = node_outcomes(fact)
    for name, entry in _entries(fact, "quarantine"):
        outcome = outcomes.get(name, ("planned", None))[0]
        if outcome in ("planned", "dry_run"):
            found.warning(name, _quarantine_message(name, entry, params, outcome), "quarantined", "schedulable")


@check(ROLE, "quarantined", reads=FACTS, params=PARAMS)
def quarantined(facts, params, found):
    """A node was quarantined (cordoned and/or tainted, its label and record annotation set), for the findings named."""
    fact = _fact(facts)
    outcomes = node_outcomes(fact)
    for name, entry in _entries(fact, "quarantine"):
        if outcomes.get(name, (None,))[0] == "applied":
            found.warning(name, _quarantine_message(name, entry, params, "applied"), "quarantined", "quarantined")


@check(ROLE, "patch_failed", reads=FACTS)
def patch_failed(facts, params, found):
    """A node patch was refused by the server (409 when someone changed the node since it was read) or not sent."""
    fact = _fact(facts)
    entries = dict(_entries(fact, "quarantine", "release", "count", "keep"))
    for name, (outcome, failure) in sorted(node_outcomes(fact).items()):
        if outcome in ("failed", "not_sent"):
            what = {"quarantine": "quarantine", "release": "release", "count": "count a clean run of", "keep": "update the record of"}
            found.critical(name, "Could not %s node %s: %s." % (what.get(entries.get(name, {}).get("kind"), "patch"), name, failure),
                           None, None)


@check(ROLE, "kept_foreign_cordon", reads=FACTS)
def kept_foreign_cordon(facts, params, found):
    """A node rdma.node quarantines or releases keeps a cordon (or taint) that someone else made."""
    fact = _fact(facts)
    outcomes = node_outcomes(fact)
    for name, entry in _entries(fact, "quarantine"):
        if (entry.get("record") or {}).get("cordon_pre_existing") and outcomes.get(name, (None,))[0] != "failed":
            found.info(name, "Node %s was cordoned before rdma.node quarantined it; the cordon is recorded as someone else's and "
                       "stays when rdma.node releases the node." % name, "kept", "cordoned")
    for name, entry in _entries(fact, "release"):
        if entry.get("kept") and outcomes.get(name, (None,))[0] != "failed":
            found.info(name, "Releasing node %s %s %s, which rdma.node did not make." % (
                name, "keeps" if outcomes.get(name, (None,))[0] == "applied" else "would keep", " and ".join(entry["kept"])),
                "kept", entry["kept"])


@check(ROLE, "opted_out", reads=FACTS)
def opted_out(facts, params, found):
    """A node with findings that would quarantine it carries an opt-out label: rdma.node leaves it alone."""
    for name, entry in _entries(_fact(facts), "opted_out"):
        found.warning(name, "Node %s is opted out (%s), so rdma.node does not quarantine it despite %s." % (
            name, entry["note"], _because(entry)), "not touched", entry["note"])


@check(ROLE, "quarantine_held", reads=FACTS)
def quarantine_held(facts, params, found):
    """A node that would be quarantined was held back for another reason than the breaker: not approved for this
    run, or the NicClusterPolicy does not tolerate the quarantine."""
    for name, entry in _entries(_fact(facts), "held"):
        if not str(entry.get("note") or "").startswith("the circuit breaker"):
            found.warning(name, "Node %s was not quarantined (%s) despite %s." % (name, entry["note"], _because(entry)), "quarantined", "held")


@check(ROLE, "node_not_found", reads=FACTS)
def node_not_found(facts, params, found):
    """An inventory host with findings that would quarantine it has no Node of its name among the nodes listed."""
    for item in _fact(facts)["plan"].get("not_found") or []:
        found.warning(item["node"], "Host %s has %s, but the cluster lists no node %s (set k8s_node_name for the host when the names "
                      "differ, or widen k8s_quarantine_node_selector)." % (item["host"], ", ".join(item["checks"]), item["node"]),
                      item["node"], None)


@check(ROLE, "quarantine_kept", reads=FACTS)
def quarantine_kept(facts, params, found):
    """A node rdma.node holds still has the findings: it stays in quarantine (its clean-run count starts again)."""
    for name, entry in _entries(_fact(facts), "keep"):
        since = (entry.get("record") or {}).get("since")
        found.info(name, "Node %s stays in quarantine%s: %s." % (name, " (since %s)" % since if since else "", _because(entry)),
                   "quarantined", "quarantined")


@check(ROLE, "quarantine_lifted", reads=FACTS)
def quarantine_lifted(facts, params, found):
    """Someone uncordoned a node rdma.node holds, or removed its taint: rdma.node does not put it back."""
    for name, entry in _entries(_fact(facts), "keep", "count", "pending", "release"):
        if entry.get("lifted"):
            found.warning(name, "Node %s is held by rdma.node but was %s by someone else; rdma.node does not undo that. Label it "
                          "to opt out, or let it release the node after its clean runs." % (name, " and ".join(entry["lifted"])),
                          "quarantined", entry["lifted"])


@check(ROLE, "release_pending", reads=FACTS, params=PARAMS)
def release_pending(facts, params, found):
    """A node rdma.node holds had a clean run (counted towards its release), or one that could not be counted."""
    fact = _fact(facts)
    outcomes = node_outcomes(fact)
    needed = params.get("release_after") or 3
    for name, entry in _entries(fact, "count", "pending"):
        if entry["kind"] == "count":
            outcome = outcomes.get(name, (None,))[0]
            verb = "counted" if outcome == "applied" else "would count"
            if outcome == "failed":
                continue
            found.info(name, "Node %s had a clean run: %s %d of the %d that release it." % (name, verb, entry["clean_runs"], needed),
                       needed, entry["clean_runs"])
        else:
            found.info(name, "Node %s stays in quarantine: this run is not counted towards its release (%s); %d of %d clean runs so far."
                       % (name, entry["note"], entry.get("clean_runs") or 0, needed), needed, entry.get("clean_runs") or 0)


@check(ROLE, "released", reads=FACTS)
def released(facts, params, found):
    """A node was released after its clean runs: rdma.node removed only its own label, record and taint, and
    uncordoned it only if it had cordoned it (report and check mode: would be)."""
    fact = _fact(facts)
    outcomes = node_outcomes(fact)
    for name, entry in _entries(fact, "release"):
        outcome = outcomes.get(name, (None,))[0]
        head = {"applied": "Released", "dry_run": "Check mode: would release", "planned": "Would release"}.get(outcome)
        if head:
            doubt = " Only its label and record are taken back: %s." % entry["note"] if entry.get("note") else ""
            found.info(name, "%s node %s after %d clean runs.%s" % (head, name, entry["clean_runs"], doubt), "schedulable", "released")


@check(ROLE, "drain_incomplete", reads=FACTS)
def drain_incomplete(facts, params, found):
    """Pods that use RDMA or GPU resources on a newly quarantined node could not be evicted (a PodDisruptionBudget
    refused, the timeout passed, or the eviction failed)."""
    for drain in (_fact(facts).get("results") or {}).get("drains") or []:
        if drain.get("failure"):
            found.warning(drain["node"], "Node %s is quarantined but could not be drained of its RDMA and GPU pods: %s." % (
                drain["node"], drain["failure"]), "drained", None)
            continue
        left = [p for p in drain.get("pods") or [] if p.get("outcome") not in ("evicted", "gone", "dry_run")]
        if left:
            pods = "; ".join("%s/%s: %s" % (p["namespace"], p["name"], p.get("message") or p["outcome"]) for p in left)
            found.warning(drain["node"], "Node %s is quarantined but %d pod(s) using RDMA or GPU resources still run there: %s." % (
                drain["node"], len(left), pods), 0, len(left))


@check(ROLE, "drained", reads=FACTS)
def drained(facts, params, found):
    """Pods that use RDMA or GPU resources were evicted from a newly quarantined node (check mode: the dry runs)."""
    for drain in (_fact(facts).get("results") or {}).get("drains") or []:
        done = [p for p in drain.get("pods") or [] if p.get("outcome") in ("evicted", "gone", "dry_run")]
        if done:
            verb = "Check mode: would evict" if all(p["outcome"] == "dry_run" for p in done) else "Evicted"
            found.info(drain["node"], "%s %s from node %s through the Eviction API (PodDisruptionBudgets respected)." % (
                verb, ", ".join("%s/%s" % (p["namespace"], p["name"]) for p in done), drain["node"]), None, len(done))


# ------------------------------------------------------------------------------------ status


@summary(ROLE, reads=FACTS)
def quarantine_summary(facts, params, findings):
    """The mode, whether the cluster was read, the breaker's numbers, what was planned and the nodes
    held in quarantine after the run."""
    fact = _fact(facts)
    plan = fact["plan"]
    outcomes = node_outcomes(fact)
    released_now = {n for n in plan.get("release") or [] if outcomes.get(n, (None,))[0] == "applied"}
    added_now = {n for n in plan.get("quarantine") or [] if outcomes.get(n, (None,))[0] == "applied"}
    breaker = plan.get("breaker") or {}
    return {
        "mode": plan.get("mode"),
        "check_mode": bool(fact.get("check_mode")),
        "cluster_read": bool(plan.get("cluster_read")),
        "eligible_nodes": plan.get("eligible"),
        "limit": plan.get("limit"),
        "breaker_tripped": bool(breaker.get("tripped")),
        "held_by_breaker": sorted((breaker.get("held") or {}).keys()),
        "planned": {"quarantine": plan.get("quarantine") or [], "release": plan.get("release") or []},
        "quarantined_nodes": sorted((set(plan.get("held") or []) - released_now) | added_now),
    }
