"""The quarantine plan (plugins/plugin_utils/_quarantine.py): policy, breaker, release, what is kept.

The hosts and nodes are those of tests/quarantine_cases.py.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._quarantine import (
    LABEL,
    RECORD,
    QuarantineError,
    evidence,
    ledger_entries,
    plan,
    pods_to_evict,
    settings,
)
from quarantine_cases import DKMS_NEXT, FLAPPING, NAMES, NOW, PORT_DOWN, TAINT, fleet, held, host, node, policy, reading


def run(hosts, read=None, now=NOW, **options):
    return plan(hosts, read or reading(), settings(dict({"mode": "apply", "max_percent": 30}, **options)), now)


# ------------------------------------------------------------------------------------ options


@pytest.mark.parametrize("options, message", [
    ({"mode": "enforce"}, "k8s_quarantine_mode: expected report or apply, got 'enforce'"),
    ({"taint": {"key": "rdma.node/quarantine", "effect": "PreferNoSchedule"}},
     "k8s_quarantine_taint: effect 'PreferNoSchedule' is not NoSchedule or NoExecute"),
    ({"taint": {}, "cordon": False}, "k8s_quarantine_cordon is false and k8s_quarantine_taint is empty: a quarantine needs one of them"),
    ({"taint": {"key": "Not A Key!"}}, "k8s_quarantine_taint: key 'Not A Key!' is not a qualified name such as rdma.node/quarantine"),
    ({"max_percent": 150}, "k8s_quarantine_max_percent: expected a number from 0 to 100, got 150"),
    ({"max_nodes": -1}, "k8s_quarantine_max_nodes: expected an integer of at least 0, got -1"),
    ({"release_after": 0}, "k8s_quarantine_release_after: expected an integer of at least 1, got 0"),
    ({"checks": ["port_down"]}, "k8s_quarantine_checks: 'port_down' is not ROLE/CHECK with ROLE one of"),
    ({"severities": ["fatal"]}, "k8s_quarantine_severities: fatal is not one of critical, warning, info"),
    ({"domain_label": "zone", "domain_groups": ["rack-07"]},
     "k8s_quarantine_domain_label and k8s_quarantine_domain_groups are both set; a failure domain is one or the other"),
    ({"opt_out_labels": ["bad key=x"]}, "k8s_quarantine_opt_out_labels: 'bad key=x' is not a label KEY=VALUE (or KEY)"),
    ({"mofed_guard": "maybe"}, "k8s_quarantine_mofed_guard: expected patch, refuse or off, got 'maybe'"),
    ({"roles": "node_health"}, "k8s_quarantine_roles: expected a list of names, got 'node_health'"),
])
def test_bad_options_are_one_sentence_naming_the_option(options, message):
    with pytest.raises(QuarantineError) as caught:
        settings(options)
    assert str(caught.value).startswith(message)


def test_defaults():
    cfg = settings({})
    assert (cfg["mode"], cfg["cordon"], cfg["taint"], cfg["max_percent"], cfg["max_nodes"], cfg["release_after"]) == (
        "report", True, TAINT, 10, 10, 3)
    assert cfg["roles"] == ["ib_inventory", "driver_verify", "node_health", "bandwidth_check"] and cfg["severities"] == ["critical"]
    assert cfg["opt_out"] == [("rdma.node/quarantine", "disabled")]
    assert settings({"vocabulary": "nvsentinel"})["opt_out"][-1] == ("k8saas.nvidia.com/ManagedByNVSentinel", "false")


# ------------------------------------------------------------------------------------ evidence


def test_evidence_from_this_run_and_from_a_fact_cache():
    cfg = settings({})
    for variables in (host([PORT_DOWN]), host([PORT_DOWN], cached=True)):
        found = evidence("gpu-01", variables, cfg, NOW)
        assert (found["state"], found["node"], [f["check"] for f in found["findings"]]) == ("faulty", "gpu-01", ["port_down"])
        assert found["checked_at"] == NOW - 60 and found["ran"]["ib_inventory"] == ["port_down", "port_degraded"]
    assert evidence("gpu-01", host([]), cfg, NOW)["state"] == "clean"
    missing = evidence("gpu-01", {"ansible_facts": {}}, cfg, NOW)
    assert missing["state"] == "not_checked" and missing["reason"] == (
        "no findings of ib_inventory, driver_verify, node_health, bandwidth_check for host gpu-01 in this run or the fact cache")
    named = evidence("gpu-01", dict(host([]), k8s_node_name="node-a"), cfg, NOW)
    assert named["node"] == "node-a"
    assert evidence("gpu-01", dict(host([]), k8s_node_name="node-a"), settings({"node_names": {"gpu-01": "node-b"}}), NOW)["node"] == "node-b"


def test_the_policy_picks_roles_checks_and_severities():
    variables = host([PORT_DOWN, FLAPPING, dict(DKMS_NEXT)], roles=("ib_inventory", "node_health", "driver_verify"))

    def checks(**options):
        return [f["check"] for f in evidence("h", variables, settings(options), NOW)["findings"]]

    assert checks() == ["port_down", "dkms_missing_next_boot", "link_flapping"]
    assert checks(ignore_checks=["driver_verify/dkms_missing_next_boot"]) == ["port_down", "link_flapping"]
    assert checks(checks=["node_health/link_flapping"]) == ["link_flapping"]
    assert checks(roles=["driver_verify"]) == ["dkms_missing_next_boot"]
    assert checks(severities=["warning"]) == []


def test_old_findings_are_not_used():
    found = evidence("gpu-01", host([PORT_DOWN], checked_at=NOW - 3 * 86400), settings({"max_evidence_age": 86400}), NOW)
    assert found["state"] == "not_checked"
    assert found["reason"] == "the findings of host gpu-01 are 72.0 hours old (k8s_quarantine_max_evidence_age is 86400 s)"


# ------------------------------------------------------------------------------------ quarantine


def test_a_quarantine_patch_keeps_the_nodes_taints_and_records_why():
    nodes = [node(n, taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] if n == "gpu-03" else None,
                  rv="42" if n == "gpu-03" else "100") for n in NAMES]
    result = run(fleet({"gpu-03"}), reading(nodes), run_id="awx job 9")
    assert result["quarantine"] == ["gpu-03"] and result["release"] == []
    (patch,) = result["patches"]
    body = patch["body"]
    assert body["metadata"]["resourceVersion"] == "42" and body["metadata"]["labels"] == {LABEL: "true"}
    assert body["spec"] == {"unschedulable": True, "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}, TAINT]}
    record = json.loads(body["metadata"]["annotations"][RECORD])
    assert record == {"by": "rdma.node", "since": "2025-10-09T08:53:20Z", "run": "awx job 9", "checks": ["ib_inventory/port_down"],
                      "reasons": ["ib_inventory/port_down mlx5_1/1: mlx5_1/1 is DOWN (Polling); expected ACTIVE"],
                      "cordoned": True, "cordon_pre_existing": False, "taint": TAINT, "taint_pre_existing": False,
                      "clean_runs": 0, "last_counted_check": None}
    ledger = result["ledger"]
    assert ledger["create"] is True and json.loads(ledger["definition"]["data"]["nodes"]) == {"gpu-03": {"at": NOW, "run": "awx job 9"}}


def test_a_cordon_or_taint_already_there_is_recorded_as_someone_elses():
    nodes = [node(n, unschedulable=n == "gpu-03", taints=[dict(TAINT)] if n == "gpu-03" else None) for n in NAMES]
    result = run(fleet({"gpu-03"}), reading(nodes))
    body = result["patches"][0]["body"]
    assert "spec" not in body, "neither the cordon nor the taint is sent again"
    record = json.loads(body["metadata"]["annotations"][RECORD])
    assert (record["cordoned"], record["cordon_pre_existing"], record["taint_pre_existing"]) == (False, True, True)


def test_nvsentinel_labels_only_when_rdma_node_makes_the_cordon():
    nodes = [node(n, unschedulable=n == "gpu-04") for n in NAMES]
    result = run(fleet({"gpu-03", "gpu-04"}), reading(nodes), vocabulary="nvsentinel")
    labels = {p["node"]: p["body"]["metadata"]["labels"] for p in result["patches"]}
    assert labels["gpu-04"] == {LABEL: "true"}
    assert labels["gpu-03"][LABEL] == "true" and labels["gpu-03"]["k8saas.nvidia.com/cordon-by"] == "rdma.node"
    assert labels["gpu-03"]["k8saas.nvidia.com/cordon-reason"] == "rdma.node-ib_inventory.port_down"
    assert labels["gpu-03"]["k8saas.nvidia.com/cordon-timestamp"] == "2025-10-09T08-53-20Z"


def test_opted_out_and_unknown_nodes():
    nodes = [node(n, labels={"k8saas.nvidia.com/ManagedByNVSentinel": "false"} if n == "gpu-05" else None) for n in NAMES[:-1]]
    result = run(fleet({"gpu-05", "gpu-10"}), reading(nodes), vocabulary="nvsentinel")
    assert result["patches"] == [] and result["ledger"] is None
    assert result["nodes"]["gpu-05"]["kind"] == "opted_out" and result["nodes"]["gpu-05"]["note"] == "k8saas.nvidia.com/ManagedByNVSentinel=false"
    assert result["not_found"] == [{"node": "gpu-10", "host": "gpu-10", "checks": ["ib_inventory/port_down"]}]
    assert result["eligible"] == 8, "the opted-out node is not eligible"


# ------------------------------------------------------------------------------------ the breaker


def test_breaker_cluster_wide_holds_every_new_node():
    result = run(fleet({"gpu-01", "gpu-04", "gpu-07", "gpu-09"}), max_percent=30)
    assert result["limit"] == 3 and result["breaker"]["tripped"] and result["breaker"]["scope"] == "cluster"
    assert result["quarantine"] == [] and result["patches"] == [] and result["ledger"] is None
    assert sorted(result["breaker"]["held"]) == ["gpu-01", "gpu-04", "gpu-07", "gpu-09"]
    assert result["breaker"]["message"] == ("0 node(s) already held and 4 new would make 4 of 10 eligible nodes, above the limit of 3 "
                                            "(min(ceil(30% of 10), 10))")
    assert run(fleet({"gpu-01", "gpu-04"}), max_nodes=1)["breaker"]["tripped"], "max_nodes caps the percentage"
    assert not run(fleet({"gpu-01"}), max_percent=1)["breaker"]["tripped"], "ceil: one node of ten at 1%"


def test_breaker_counts_held_nodes_and_live_reservations_of_the_ledger():
    nodes = [held("gpu-02") if n == "gpu-02" else node(n) for n in NAMES]
    hosts = fleet({"gpu-02", "gpu-05"})
    assert run(hosts, reading(nodes), max_nodes=2)["quarantine"] == ["gpu-05"]
    live = {"metadata": {"resourceVersion": "7"}, "data": {"nodes": json.dumps({"gpu-08": {"at": NOW - 60, "run": "awx job 8"}})}}
    result = run(hosts, reading(nodes, ledger=live), max_nodes=2)
    assert result["counted"] == ["gpu-02", "gpu-08"] and result["breaker"]["tripped"]
    stale = {"metadata": {"resourceVersion": "7"}, "data": {"nodes": json.dumps({"gpu-08": {"at": NOW - 7200, "run": "crashed"}})}}
    result = run(hosts, reading(nodes, ledger=stale), max_nodes=2)
    assert result["counted"] == ["gpu-02"] and result["quarantine"] == ["gpu-05"]
    assert result["ledger"]["definition"]["metadata"]["resourceVersion"] == "7"
    assert json.loads(result["ledger"]["definition"]["data"]["nodes"]) == {"gpu-05": {"at": NOW, "run": None}}, "the stale one goes"


def test_breaker_per_failure_domain_by_label_and_by_group():
    result = run(fleet({"gpu-01", "gpu-02", "gpu-03", "gpu-07"}), max_percent=40, domain_label="topology.kubernetes.io/zone")
    assert result["quarantine"] == ["gpu-07"]
    rack_a = result["breaker"]["domains"]["topology.kubernetes.io/zone=rack-a"]
    assert (rack_a["eligible"], rack_a["limit"], rack_a["new"], rack_a["tripped"]) == (5, 2, ["gpu-01", "gpu-02", "gpu-03"], True)
    hosts = {n: host([PORT_DOWN] if n in ("gpu-01", "gpu-02") else [], groups=("ib-v100", "rack-07" if n < "gpu-04" else "rack-08"))
             for n in NAMES}
    result = run(hosts, max_percent=50, domain_groups=["rack-07", "rack-08"])
    assert result["breaker"]["domains"]["group rack-07"]["limit"] == 2 and result["quarantine"] == ["gpu-01", "gpu-02"]
    result = run(hosts, max_percent=30, domain_groups=["rack-07", "rack-08"])
    assert result["quarantine"] == [] and result["breaker"]["domains"]["group rack-07"]["tripped"]


def test_approval_limits_what_apply_does():
    result = run(fleet({"gpu-01", "gpu-02"}), approved_nodes=["gpu-02"])
    assert result["quarantine"] == ["gpu-02"]
    assert result["nodes"]["gpu-01"]["kind"] == "held"
    assert result["nodes"]["gpu-01"]["note"] == "not among the nodes approved for this run (k8s_quarantine_approved_nodes)"


# ------------------------------------------------------------------------------------ the guard


def test_the_guard_patches_refuses_or_has_nothing_to_do():
    hosts = fleet({"gpu-03"})
    patched = run(hosts, reading(policy=policy([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]), policy_api_found=True))
    guard = patched["guard"]
    assert guard["state"] == "patch" and patched["quarantine"] == ["gpu-03"]
    assert guard["patch"] == {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
                              "metadata": {"name": "nic-cluster-policy", "resourceVersion": "5"},
                              "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                                       {"key": "rdma.node/quarantine", "operator": "Exists", "effect": "NoSchedule"},
                                                       {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}}
    refused = run(hosts, reading(policy=policy(), policy_api_found=True), mofed_guard="refuse")
    assert refused["guard"]["state"] == "refuse" and refused["quarantine"] == [] and refused["ledger"] is None
    assert refused["nodes"]["gpu-03"]["note"] == ("NicClusterPolicy nic-cluster-policy does not tolerate rdma.node/quarantine:NoSchedule, "
                                                  "node.kubernetes.io/unschedulable:NoSchedule, and k8s_quarantine_mofed_guard is refuse")
    assert run(hosts, reading(policy=policy([{"operator": "Exists"}]), policy_api_found=True))["guard"]["state"] == "tolerated"
    assert run(hosts, reading(policy_api_found=False))["guard"]["state"] == "no_operator"
    assert run(hosts, reading(policy_api_found=True))["guard"]["state"] == "no_policy"
    assert run(fleet(), reading(policy=policy(), policy_api_found=True))["guard"]["state"] == "not_needed"
    failed = plan(hosts, reading(policy=policy(), policy_api_found=True), settings({"mode": "apply", "max_percent": 30}), NOW,
                  guard_failed="adding the tolerations failed: 409")
    assert failed["quarantine"] == [] and failed["nodes"]["gpu-03"]["note"] == "adding the tolerations failed: 409"


def test_the_guard_also_covers_the_nodes_already_held():
    nodes = [held("gpu-02") if n == "gpu-02" else node(n) for n in NAMES]
    result = run(fleet({"gpu-02"}), reading(nodes, policy=policy(), policy_api_found=True))
    assert result["guard"]["state"] == "patch" and result["quarantine"] == []


# ------------------------------------------------------------------------------------ keep, count, release


def test_a_held_node_with_the_same_findings_is_not_written_again():
    nodes = [held("gpu-02") if n == "gpu-02" else node(n) for n in NAMES]
    result = run(fleet({"gpu-02"}), reading(nodes))
    assert result["nodes"]["gpu-02"]["kind"] == "keep" and result["patches"] == [] and result["ledger"] is None
    both = {n: host([PORT_DOWN, FLAPPING] if n == "gpu-02" else []) for n in NAMES}
    (patch,) = run(both, reading(nodes))["patches"]
    assert json.loads(patch["body"]["metadata"]["annotations"][RECORD])["checks"] == ["ib_inventory/port_down", "node_health/link_flapping"]


def test_a_finding_again_resets_the_count_of_clean_runs():
    nodes = [held("gpu-02", {"clean_runs": 1, "last_counted_check": NOW - 600}) if n == "gpu-02" else node(n) for n in NAMES]
    result = run(fleet({"gpu-02"}), reading(nodes))
    assert result["nodes"]["gpu-02"]["kind"] == "keep" and result["release"] == [] and result["ledger"] is None
    (patch,) = result["patches"]
    record = json.loads(patch["body"]["metadata"]["annotations"][RECORD])
    assert (record["clean_runs"], record["last_counted_check"]) == (0, None)
    assert record["since"] == "2025-10-09T08:53:20Z", "still the same quarantine"
    assert "spec" not in patch["body"], "the cordon and the taint stay as they are"


def test_clean_runs_are_counted_once_each_then_release():
    nodes = [held("gpu-02", {"clean_runs": 1, "last_counted_check": NOW - 600}) if n == "gpu-02" else node(n) for n in NAMES]
    counted = run(fleet(), reading(nodes))
    entry = counted["nodes"]["gpu-02"]
    assert (entry["kind"], entry["clean_runs"]) == ("count", 2)
    record = json.loads(counted["patches"][0]["body"]["metadata"]["annotations"][RECORD])
    assert (record["clean_runs"], record["last_counted_check"]) == (2, NOW - 60)
    again = run(fleet(checked_at=NOW - 600), reading(nodes))
    assert again["nodes"]["gpu-02"]["kind"] == "pending" and again["patches"] == []
    assert again["nodes"]["gpu-02"]["note"] == "the checks of host gpu-02 are the ones already counted (checked at 2025-10-09T08:43:20Z)"
    undated = run(fleet(checked_at=None), reading(nodes))
    assert undated["nodes"]["gpu-02"]["note"].startswith("the facts of host gpu-02 carry no check time")
    partial = run({n: host([], roles=("node_health",)) for n in NAMES}, reading(nodes))
    assert partial["nodes"]["gpu-02"]["note"] == "ib_inventory/port_down did not run on host gpu-02"
    ledger = {"metadata": {"resourceVersion": "9"}, "data": {"nodes": json.dumps({"gpu-02": {"at": NOW - 86400, "run": None}})}}
    released = run(fleet(), reading(nodes, ledger=ledger), release_after=2)
    assert released["release"] == ["gpu-02"]
    body = released["patches"][0]["body"]
    assert body["metadata"]["labels"] == {LABEL: None} and body["metadata"]["annotations"] == {RECORD: None}
    assert body["spec"] == {"unschedulable": None, "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}
    assert json.loads(released["ledger"]["definition"]["data"]["nodes"]) == {}


def test_release_takes_back_only_what_rdma_node_did():
    foreign = [{"key": "example.com/maintenance", "effect": "NoSchedule"}, dict(TAINT)]
    nodes = [held("gpu-02", {"cordoned": False, "cordon_pre_existing": True, "taint_pre_existing": True}, taints=foreign)
             if n == "gpu-02" else node(n) for n in NAMES]
    released = run(fleet(), reading(nodes), release_after=1)
    entry = released["nodes"]["gpu-02"]
    assert "spec" not in entry["patch"], "the cordon and the taint were there before: both stay"
    assert entry["kept"] == ["the cordon (there before the quarantine)", "the taint rdma.node/quarantine=rdma-fault:NoSchedule (there before the quarantine)"]
    lifted = [held("gpu-02", unschedulable=False, taints=[]) if n == "gpu-02" else node(n) for n in NAMES]
    kept = run(fleet({"gpu-02"}), reading(lifted))["nodes"]["gpu-02"]
    assert kept["lifted"] == ["uncordoned", "its taint rdma.node/quarantine=rdma-fault:NoSchedule removed"]
    assert kept["patch"] is None, "rdma.node does not put back what someone lifted"


def test_a_held_node_outside_the_run_is_left_as_it_is():
    nodes = [held("gpu-02") if n == "gpu-02" else node(n) for n in NAMES]
    result = run({n: v for n, v in fleet().items() if n != "gpu-02"}, reading(nodes))
    assert result["nodes"]["gpu-02"]["kind"] == "pending" and result["nodes"]["gpu-02"]["note"] == "host is not among this run's hosts"


# ------------------------------------------------------------------------------------ not read, ledger, pods


def test_without_the_cluster_the_plan_comes_from_the_findings():
    result = plan(fleet({"gpu-03"}), reading(read=False), settings({"mode": "report", "max_percent": 10}), NOW)
    assert result["cluster_read"] is False and result["eligible"] == 10 and result["quarantine"] == ["gpu-03"]
    assert result["patches"] == [] and result["ledger"] is None and result["guard"]["state"] == "not_read"
    applying = plan(fleet({"gpu-03"}), reading(read=False), settings({"mode": "apply"}), NOW)
    assert applying["quarantine"] == [] and applying["nodes"]["gpu-03"]["note"] == "the cluster could not be read"


def test_a_ledger_that_is_not_json_stops_the_plan_with_a_sentence():
    with pytest.raises(QuarantineError) as caught:
        ledger_entries({"data": {"nodes": "{not json"}})
    assert str(caught.value).startswith("the ledger ConfigMap's data.nodes is not JSON (")
    assert ledger_entries(None) == {} and ledger_entries({"data": {}}) == {}


def test_pods_to_evict_are_those_using_rdma_or_gpus():
    def pod(name, resources=None, owner="ReplicaSet", phase="Running", annotations=None):
        container = {"name": "c", "resources": {"limits": resources}} if resources else {"name": "c"}
        return {"metadata": {"name": name, "namespace": "ml", "ownerReferences": [{"kind": owner}], "annotations": annotations or {}},
                "spec": {"containers": [container]}, "status": {"phase": phase}}

    chosen = pods_to_evict([pod("nccl", {"rdma/rdma_v100": "1"}), pod("infer", {"nvidia.com/gpu": "1"}), pod("web", {"cpu": "1"}),
                            pod("exporter", {"rdma/rdma_v100": "1"}, owner="DaemonSet"), pod("done", {"nvidia.com/gpu": "1"}, phase="Succeeded"),
                            pod("static", {"nvidia.com/gpu": "1"}, annotations={"kubernetes.io/config.mirror": "x"})],
                           ["rdma/*", "nvidia.com/gpu"])
    assert [(p["name"], p["resources"]) for p in chosen["evict"]] == [("nccl", ["rdma/rdma_v100"]), ("infer", ["nvidia.com/gpu"])]
    assert [(p["name"], p["reason"]) for p in chosen["skipped"]] == [
        ("exporter", "managed by a DaemonSet (it would come back at once)"),
        ("static", "a mirror pod of a static pod (the API cannot evict it)")]


@pytest.mark.parametrize("annotation, why", [
    ("{not json", "Expecting property name enclosed in double quotes"),
    ('["a list"]', "not a JSON object"),
    ('{"checks": ["port_down"]}', "checks is not a list of ROLE/CHECK"),
    ('{"checks": [], "clean_runs": "two"}', "clean_runs is not a count"),
    ('{"taint": "rdma.node/quarantine"}', "taint is not a mapping"),
])
def test_an_edited_record_is_not_trusted(annotation, why):
    """Anyone can edit an annotation: a record that is not rdma.node's is said so, and the release then
    takes back only the label and the record, never a cordon or taint it cannot vouch for."""
    nodes = [node(n, labels={LABEL: "true"}, annotations={RECORD: annotation}, unschedulable=True, taints=[dict(TAINT)])
             if n == "gpu-02" else node(n) for n in NAMES]
    entry = run(fleet(), reading(nodes), release_after=1)["nodes"]["gpu-02"]
    assert entry["note"].startswith("its rdma.node/quarantine annotation is not rdma.node's record (") and why in entry["note"]
    assert entry["kind"] == "release" and "spec" not in entry["patch"]
    assert entry["patch"]["metadata"]["labels"] == {LABEL: None} and entry["patch"]["metadata"]["annotations"] == {RECORD: None}
    assert entry["kept"] == ["the cordon (the record does not say who made it)",
                             "the taint rdma.node/quarantine=rdma-fault:NoSchedule (the record does not say who made it)"]
