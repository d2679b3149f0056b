"""The k8s_quarantine checks, run through the registry on a plan and on what kubernetes.core answered.

The plans come from ``_quarantine.plan()`` on hosts and nodes as in test_quarantine.py; the answers are
shaped as kubernetes.core returns them (``result`` with the object on success, ``failed``/``msg`` with
the server's message on a refusal, ``skipped`` for an item a ``when`` left out).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._quarantine import RECORD, plan, settings
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError

from quarantine_cases import NAMES, NOW, TAINT, fleet, held, host, node, policy, reading

PARAMS = {"release_after": 3, "taint": TAINT, "cordon": True}
CONFLICT = ('Failed to patch object: b\'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation '
            'cannot be fulfilled on nodes \\"gpu-03\\": the object has been modified; please apply your changes to the latest '
            'version and try again","reason":"Conflict","code":409}\'')


def quarantine_plan(hosts=None, read=None, **options):
    return plan(hosts or fleet({"gpu-03"}), read or reading(), settings(dict({"mode": "apply", "max_percent": 30}, **options)), NOW)


def answered(the_plan, check_mode=False, node_answer=None, ledger=None, guard=None, drains=None):
    """What the role's tasks give for the plan: each node patch accepted, unless ``node_answer`` says otherwise."""
    patches = []
    for patch in the_plan["patches"]:
        answer = (node_answer or {}).get(patch["node"], {"changed": True, "result": {"metadata": {"name": patch["node"]}}})
        patches.append(dict(answer, item=patch))
    if ledger is None and the_plan["ledger"]:
        ledger = {"changed": True, "result": {"metadata": {"name": "rdma-node-quarantine", "resourceVersion": "12"}}}
    if guard is None and the_plan["guard"]["state"] == "patch":
        guard = {"changed": True, "result": {"spec": the_plan["guard"]["patch"]["spec"]}}
    return {"plan": the_plan, "check_mode": check_mode, "results": {"guard": guard, "ledger": ledger, "patches": patches, "drains": drains or []}}


def evaluate(fact, **params):
    return evaluate_role("k8s_quarantine", {"k8s_quarantine": fact}, dict(PARAMS, **params), subject="cluster/prod")


def found(result, *checks):
    return sorted((f["check"], f["severity"], f["subject"]) for f in result["findings"] if not checks or f["check"] in checks)


def message(result, check_name, subject=None):
    (item,) = [f for f in result["findings"] if f["check"] == check_name and subject in (None, f["subject"])]
    return item["message"]


# ------------------------------------------------------------------------------------ quarantine


def test_report_check_mode_and_apply_say_what_they_do():
    reason = "ib_inventory/port_down mlx5_1/1: mlx5_1/1 is DOWN (Polling); expected ACTIVE"
    reported = evaluate(answered(quarantine_plan(mode="report")))
    assert found(reported) == [("would_quarantine", "warning", "gpu-03")]
    assert message(reported, "would_quarantine") == (
        "Would cordon and taint rdma.node/quarantine=rdma-fault:NoSchedule node gpu-03 for %s." % reason)
    assert reported["status"]["planned"] == {"quarantine": ["gpu-03"], "release": []} and reported["status"]["quarantined_nodes"] == []
    dry = evaluate(answered(quarantine_plan(), check_mode=True))
    assert message(dry, "would_quarantine").startswith("Check mode: would cordon and taint rdma.node/quarantine=rdma-fault:NoSchedule "
                                                       "node gpu-03 (the server-side dry run accepted it) for ")
    assert dry["status"]["quarantined_nodes"] == [], "a dry run holds nothing"
    applied = evaluate(answered(quarantine_plan()))
    assert found(applied) == [("quarantined", "warning", "gpu-03")]
    assert message(applied, "quarantined") == (
        "Quarantined node gpu-03 (cordon and taint rdma.node/quarantine=rdma-fault:NoSchedule) for %s." % reason)
    assert applied["status"]["quarantined_nodes"] == ["gpu-03"] and applied["status"]["ok"]
    assert message(evaluate(answered(quarantine_plan(cordon=False)), cordon=False), "quarantined").startswith(
        "Quarantined node gpu-03 (taint rdma.node/quarantine=rdma-fault:NoSchedule) for ")


def test_a_refused_patch_and_a_refused_ledger():
    conflicted = evaluate(answered(quarantine_plan(), node_answer={"gpu-03": {"failed": True, "msg": CONFLICT}}))
    assert found(conflicted) == [("patch_failed", "critical", "gpu-03")]
    assert message(conflicted, "patch_failed").startswith("Could not quarantine node gpu-03: Failed to patch object: ")
    assert message(conflicted, "patch_failed").endswith("(409 Conflict: it changed since it was read; nothing of the other change was lost).")
    assert conflicted["status"]["quarantined_nodes"] == []
    the_plan = quarantine_plan()
    fact = answered(the_plan, ledger={"failed": True, "msg": "Failed to patch object: Conflict", "status": 409})
    fact["results"]["patches"] = [{"skipped": True, "item": p} for p in the_plan["patches"]]
    refused = evaluate(fact)
    assert found(refused) == [("ledger_conflict", "critical", "cluster/kubernetes"), ("patch_failed", "critical", "gpu-03")]
    assert message(refused, "ledger_conflict") == (
        "The quarantine ledger could not be updated: Failed to patch object: Conflict (409 Conflict: it changed since it was read; "
        "nothing of the other change was lost). So this run quarantined and released nothing; the next run plans again from "
        "what the cluster then holds.")
    assert message(refused, "patch_failed").startswith("Could not quarantine node gpu-03: the ledger was not updated: Failed to patch object")


def test_the_breaker_names_the_nodes_it_would_have_taken_out():
    tripped = evaluate(answered(quarantine_plan(fleet({"gpu-01", "gpu-04", "gpu-07", "gpu-09"}))))
    assert found(tripped) == [("breaker_tripped", "critical", "cluster/kubernetes")]
    assert message(tripped, "breaker_tripped").endswith(
        "None of the new nodes was quarantined; it would have taken out gpu-01, gpu-04, gpu-07, gpu-09. So many nodes failing at "
        "once is usually the fabric or a configuration, not the nodes.")
    assert tripped["status"]["breaker_tripped"] and tripped["status"]["held_by_breaker"] == ["gpu-01", "gpu-04", "gpu-07", "gpu-09"]
    domain = evaluate(answered(quarantine_plan(fleet({"gpu-01", "gpu-02", "gpu-03", "gpu-07"}), max_percent=40,
                                               domain_label="topology.kubernetes.io/zone")))
    assert found(domain) == [("breaker_tripped", "critical", "topology.kubernetes.io/zone=rack-a"), ("quarantined", "warning", "gpu-07")]


def test_the_guard_findings():
    policy_read = reading(policy=policy(), policy_api_found=True)
    planned = evaluate(answered(quarantine_plan(read=policy_read, mode="report")))
    assert message(planned, "toleration_added").startswith(
        "Apply would first add rdma.node/quarantine:NoSchedule (Exists), node.kubernetes.io/unschedulable:NoSchedule (Exists) to "
        "spec.tolerations of NicClusterPolicy nic-cluster-policy, so the MOFED driver pod still reaches a quarantined node")
    added = evaluate(answered(quarantine_plan(read=policy_read)))
    assert message(added, "toleration_added").startswith("Added rdma.node/quarantine:NoSchedule (Exists)")
    failed_plan = plan(fleet({"gpu-03"}), policy_read, settings({"mode": "apply", "max_percent": 30}), NOW,
                       guard_failed="adding the tolerations to NicClusterPolicy nic-cluster-policy failed: 409")
    failed = evaluate(answered(failed_plan, guard={"failed": True, "msg": "Failed to patch object: Conflict"}))
    assert found(failed) == [("quarantine_held", "warning", "gpu-03"), ("toleration_missing", "critical", "nic-cluster-policy")]
    assert message(failed, "toleration_missing").startswith(
        "Adding the tolerations rdma.node/quarantine:NoSchedule (Exists), node.kubernetes.io/unschedulable:NoSchedule (Exists) to "
        "NicClusterPolicy nic-cluster-policy failed (Failed to patch object: Conflict): a node quarantined without them gets no MOFED "
        "driver pod after its next kernel upgrade")
    assert message(failed, "quarantine_held").startswith(
        "Node gpu-03 was not quarantined (adding the tolerations to NicClusterPolicy nic-cluster-policy failed: 409) despite ib_inventory/port_down")
    unread = evaluate(answered(plan(fleet({"gpu-03"}), reading(read=False), settings({"mode": "report"}), NOW)))
    assert found(unread) == [("cluster_not_read", "info", "cluster/kubernetes"), ("toleration_missing", "info", "cluster/kubernetes"),
                             ("would_quarantine", "warning", "gpu-03")]
    assert message(unread, "cluster_not_read") == (
        "The cluster was not read (k8s_quarantine_read_cluster is false), so the plan comes from the findings alone: the nodes "
        "rdma.node already holds, the opt-out labels, the failure domains of node labels and the breaker's ledger were not considered.")


def test_the_cluster_could_not_be_read():
    unreadable = reading(read=False)
    unreadable["read_error"] = "HTTPConnectionPool(host='10.0.0.1', port=6443): Max retries exceeded"
    reported = evaluate(answered(plan(fleet({"gpu-03"}), unreadable, settings({"mode": "report"}), NOW)))
    assert found(reported, "cluster_not_read") == [("cluster_not_read", "warning", "cluster/kubernetes")]
    applying = evaluate(answered(plan(fleet({"gpu-03"}), unreadable, settings({"mode": "apply"}), NOW)))
    assert found(applying) == [("cluster_not_read", "critical", "cluster/kubernetes"), ("quarantine_held", "warning", "gpu-03")]
    assert message(applying, "cluster_not_read") == (
        "The cluster could not be read (HTTPConnectionPool(host='10.0.0.1', port=6443): Max retries exceeded), so nothing was "
        "quarantined or released.")


def test_opted_out_not_found_and_foreign_cordon():
    nodes = [node(n, labels={"rdma.node/quarantine": "disabled"} if n == "gpu-05" else None, unschedulable=n == "gpu-06")
             for n in NAMES[:-1]]
    result = evaluate(answered(quarantine_plan(fleet({"gpu-05", "gpu-06", "gpu-10"}), reading(nodes))))
    assert found(result) == [("kept_foreign_cordon", "info", "gpu-06"), ("node_not_found", "warning", "gpu-10"),
                             ("opted_out", "warning", "gpu-05"), ("quarantined", "warning", "gpu-06")]
    assert message(result, "opted_out") == ("Node gpu-05 is opted out (rdma.node/quarantine=disabled), so rdma.node does not quarantine "
                                            "it despite ib_inventory/port_down mlx5_1/1: mlx5_1/1 is DOWN (Polling); expected ACTIVE.")
    assert message(result, "node_not_found") == (
        "Host gpu-10 has ib_inventory/port_down, but the cluster lists no node gpu-10 (set k8s_node_name for the host when the names "
        "differ, or widen k8s_quarantine_node_selector).")
    assert message(result, "quarantined").endswith(" It was already cordoned: rdma.node keeps that cordon as it is and will not lift it.")


# ------------------------------------------------------------------------------------ held nodes


def test_kept_counted_pending_lifted_and_released():
    nodes = [held("gpu-02") if n == "gpu-02" else
             held("gpu-04", {"clean_runs": 2}, unschedulable=False, taints=[dict(TAINT)]) if n == "gpu-04" else
             held("gpu-06", {"cordoned": False, "cordon_pre_existing": True}) if n == "gpu-06" else
             held("gpu-08") if n == "gpu-08" else node(n) for n in NAMES]
    hosts = fleet({"gpu-02"})
    hosts["gpu-08"] = host([], checked_at=None)
    result = evaluate(answered(quarantine_plan(hosts, reading(nodes))))
    assert found(result) == [("quarantine_kept", "info", "gpu-02"),
                             ("quarantine_lifted", "warning", "gpu-04"), ("release_pending", "info", "gpu-06"),
                             ("release_pending", "info", "gpu-08"), ("released", "info", "gpu-04")]
    assert message(result, "quarantine_kept") == ("Node gpu-02 stays in quarantine (since 2025-10-09T08:53:20Z): ib_inventory/port_down "
                                                  "mlx5_1/1: mlx5_1/1 is DOWN (Polling); expected ACTIVE.")
    assert message(result, "quarantine_lifted").startswith("Node gpu-04 is held by rdma.node but was uncordoned by someone else; "
                                                           "rdma.node does not undo that.")
    assert message(result, "released") == "Released node gpu-04 after 3 clean runs."
    assert message(result, "release_pending", "gpu-06") == "Node gpu-06 had a clean run: counted 1 of the 3 that release it."
    assert message(result, "release_pending", "gpu-08").startswith(
        "Node gpu-08 stays in quarantine: this run is not counted towards its release (the facts of host gpu-08 carry no check time")
    assert result["status"]["quarantined_nodes"] == ["gpu-02", "gpu-06", "gpu-08"]


def test_a_release_keeps_a_cordon_it_did_not_make():
    nodes = [held("gpu-06", {"cordoned": False, "cordon_pre_existing": True, "clean_runs": 2}) if n == "gpu-06" else node(n) for n in NAMES]
    result = evaluate(answered(quarantine_plan(fleet(), reading(nodes))))
    assert found(result) == [("kept_foreign_cordon", "info", "gpu-06"), ("released", "info", "gpu-06")]
    assert message(result, "kept_foreign_cordon") == (
        "Releasing node gpu-06 keeps the cordon (there before the quarantine), which rdma.node did not make.")
    reported = evaluate(answered(quarantine_plan(fleet(), reading(nodes), mode="report")))
    assert message(reported, "kept_foreign_cordon") == (
        "Releasing node gpu-06 would keep the cordon (there before the quarantine), which rdma.node did not make.")
    assert message(reported, "released") == "Would release node gpu-06 after 3 clean runs."


# ------------------------------------------------------------------------------------ drain


def test_drain_outcomes():
    drains = [{"node": "gpu-03", "pods": [
        {"namespace": "ml", "name": "nccl-0", "outcome": "refused",
         "message": "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget nccl needs 2 healthy pods and has 2 currently"},
        {"namespace": "ml", "name": "infer-0", "outcome": "evicted", "message": None}]},
        {"node": "gpu-04", "failure": "Failed to list pods: Forbidden"}]
    result = evaluate(answered(quarantine_plan(fleet({"gpu-03", "gpu-04"})), drains=drains))
    assert found(result, "drained", "drain_incomplete") == [("drain_incomplete", "warning", "gpu-03"), ("drain_incomplete", "warning", "gpu-04"),
                                                            ("drained", "info", "gpu-03")]
    assert message(result, "drain_incomplete", "gpu-03") == (
        "Node gpu-03 is quarantined but 1 pod(s) using RDMA or GPU resources still run there: ml/nccl-0: Cannot evict pod as it would "
        "violate the pod's disruption budget. The disruption budget nccl needs 2 healthy pods and has 2 currently.")
    assert message(result, "drained") == "Evicted ml/infer-0 from node gpu-03 through the Eviction API (PodDisruptionBudgets respected)."
    assert message(result, "drain_incomplete", "gpu-04") == (
        "Node gpu-04 is quarantined but could not be drained of its RDMA and GPU pods: Failed to list pods: Forbidden.")


def test_a_fact_that_is_not_the_roles_is_refused_with_the_check_named():
    with pytest.raises(CheckError) as caught:
        evaluate({"plan": "nothing"})
    assert "k8s_quarantine: expected {plan, check_mode, results} as the role builds it" in str(caught.value)


def test_the_record_in_a_finding_is_the_node_s():
    applied = quarantine_plan()
    record = json.loads(applied["patches"][0]["body"]["metadata"]["annotations"][RECORD])
    assert applied["nodes"]["gpu-03"]["record"] == record


def test_a_release_says_when_the_record_was_not_rdma_nodes():
    nodes = [node(n, labels={"rdma.node/quarantined": "true"}, annotations={RECORD: "{edited"}, unschedulable=True)
             if n == "gpu-02" else node(n) for n in NAMES]
    result = evaluate(answered(quarantine_plan(fleet(), reading(nodes), release_after=1)))
    assert message(result, "released").startswith(
        "Released node gpu-02 after 1 clean runs. Only its label and record are taken back: its rdma.node/quarantine annotation "
        "is not rdma.node's record (")
    assert message(result, "kept_foreign_cordon") == (
        "Releasing node gpu-02 keeps the cordon (the record does not say who made it), which rdma.node did not make.")
