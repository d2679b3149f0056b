"""The k8s_rdma checks, run through the registry on what the role reads from a cluster and what its patches give.

The policy is the write-up's NicClusterPolicy and the stale-resource patch the write-up's own
(tests/fixtures/k8s); the nodes are the write-up's cluster after a kernel upgrade, as the fake-API
integration test builds them; the server's answers are shaped as kubernetes.core returns them.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from ansible_collections.rdma.node.plugins.filter.k8s import rdma_shared_device_plugin_config
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._k8s_rdma import stale_resource_patches
from testpaths import FIXTURES

MOFED = "network.nvidia.com/operator.mofed.wait"
SEED_POLICY = yaml.safe_load((FIXTURES / "k8s" / "seed_nic_cluster_policy_rdma_shared_dp.yaml").read_text())
SEED_PATCH = json.loads((FIXTURES / "k8s" / "seed_remove_stale_hostdev_capacity_patch.json").read_text())
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
ACCOUNT = {"key": "crater.raids.io/account", "operator": "Exists", "effect": "NoSchedule"}
GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
RESOURCES = {"ib-v100": "rdma_v100", "ib-a100": "rdma_a100"}
GROUPS = {"ib-v100": ["v100-node-01", "v100-node-02"], "ib-a100": ["a100-node-01", "a100-node-02"]}
PARAMS = {
    "policy_name": "nic-cluster-policy", "tolerations": [UNSCHEDULABLE, ACCOUNT], "mofed_wait_label": MOFED,
    "resources": RESOURCES, "resource_prefix": "rdma", "expected_resource_count": 63, "apply_device_plugin_config": True,
    "inventory_groups": GROUPS, "node_names": {"a100-node-02": "gpu-a100-02", "v100-node-01": ""}, "check_mode": False,
}


def node(name, mofed="false", resources=None, taints=None, unschedulable=False, ready=True):
    capacity = {"cpu": "64", "pods": "110"}
    capacity.update(resources or {})
    spec = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, MOFED: mofed}}, "spec": spec,
            "status": {"capacity": capacity, "allocatable": dict(capacity),
                       "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]}}


def upgraded_nodes():
    """After a kernel upgrade: v100-node-02 cordoned, a100-node-01 with the cluster's own taint."""
    return [
        node("v100-node-01", resources={"rdma/rdma_v100": "63", "nvidia.com/hostdev": "2"}),
        node("v100-node-02", "true", unschedulable=True),
        node("a100-node-01", "true", taints=[{"key": "crater.raids.io/account", "value": "team-a", "effect": "NoSchedule"}]),
        node("gpu-a100-02", resources={"rdma/rdma_a100": "32"}),
    ]


def policy(tolerations=(GPU,)):
    found = copy.deepcopy(SEED_POLICY)
    found["metadata"]["resourceVersion"] = "7"
    if tolerations:
        found["spec"]["tolerations"] = [dict(t) for t in tolerations]
    return found


def cluster(**changes):
    facts = {"policy_api_found": True, "policy": policy(), "nodes": upgraded_nodes(), "tolerations": [GPU],
             "planned_tolerations": [GPU], "mofed_wait": None, "policy_patch": None, "device_plugin": None,
             "stale_dry_runs": [], "stale_patches": []}
    facts.update(changes)
    return facts


def run(facts, **params):
    return evaluate_role("k8s_rdma", {"k8s_cluster": facts}, dict(PARAMS, **params), subject="cluster/prod")


def found(result, *checks):
    return [(f["check"], f["severity"], f["subject"]) for f in result["findings"] if not checks or f["check"] in checks]


def message(result, check_name, subject=None):
    (item,) = [f for f in result["findings"] if f["check"] == check_name and subject in (None, f["subject"])]
    return item["message"]


# ------------------------------------------------------------------------------------ the policy


def test_no_policy_api_and_no_policy():
    result = run(cluster(policy=None, policy_api_found=False), resources={})
    assert found(result, "policy_api_missing", "policy_missing") == [("policy_api_missing", "critical", "nic-cluster-policy")]
    assert message(result, "policy_api_missing") == (
        "The cluster serves no mellanox.com/v1alpha1 NicClusterPolicy API: the NVIDIA Network Operator is not installed, "
        "so nothing manages the RDMA driver and device plugin.")
    result = run(cluster(policy=None), resources={}, policy_name="ncp")
    assert found(result, "policy_api_missing", "policy_missing") == [("policy_missing", "critical", "ncp")]
    assert message(result, "policy_missing") == (
        "There is no NicClusterPolicy named ncp in the cluster, so its tolerations and device plugin config cannot be managed.")
    assert result["status"]["policy"] is None


V100 = {"ports": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "link_layer": "InfiniBand", "netdevs": ["ibp94s0f0"]}],
        "netdevs": {"ibp94s0f0": {"device": "mlx5_0", "port": 1, "pci_address": "0000:5e:00.0"}}}
A100 = {"ports": [{"device": "mlx5_1", "port": 1, "state": "ACTIVE", "link_layer": "InfiniBand", "netdevs": ["ibp75s0"]}],
        "netdevs": {"ibp75s0": {"device": "mlx5_1", "port": 1, "pci_address": "0000:4b:00.0"}}}
A100_CABLE_OUT = {"ports": [{"device": "mlx5_1", "port": 1, "state": "DOWN", "link_layer": "InfiniBand", "netdevs": ["ibp75s0"]}],
                  "netdevs": {}}


def device_plugin(hostvars=None, current=None):
    """What rdma.node.rdma_shared_device_plugin_config gives the role for the seed policy's config."""
    if hostvars is None:
        hostvars = {"v100-node-01": {"ansible_facts": {"rdma": V100}}, "v100-node-02": {"ansible_facts": {}},
                    "a100-node-01": {"ansible_facts": {"rdma": A100}}, "a100-node-02": {"ansible_facts": {"rdma": A100}}}
    config = SEED_POLICY["spec"]["rdmaSharedDevicePlugin"]["config"] if current is None else current
    return rdma_shared_device_plugin_config(hostvars, RESOURCES, GROUPS, current_config=config, strict=False)


def patched_policy(plugin, tolerations=True, config=True, keep_tolerations=True):
    """The policy as the server would store the role's merge patch."""
    stored = policy()
    if tolerations and keep_tolerations:
        stored["spec"]["tolerations"] = [GPU, UNSCHEDULABLE, ACCOUNT]
    elif not keep_tolerations:
        del stored["spec"]["tolerations"]
    if config:
        stored["spec"]["rdmaSharedDevicePlugin"]["config"] = plugin["policy_config"]
    return stored


def policy_patch(plugin, dry_run, patched, tolerations=True, config=True):
    return {"tolerations": tolerations, "config": config, "spec": {"spec": {"tolerations": [GPU, UNSCHEDULABLE, ACCOUNT]}},
            "dry_run": dry_run, "patched": patched}


def test_the_patch_applied_and_planned():
    plugin = device_plugin()
    stored = patched_policy(plugin)
    applied = cluster(device_plugin=plugin, planned_tolerations=stored["spec"]["tolerations"],
                      policy_patch=policy_patch(plugin, {"result": stored, "changed": True}, {"result": stored, "changed": True}))
    result = run(applied)
    assert found(result, "tolerations_added", "device_plugin_config_updated", "tolerations_planned", "device_plugin_config_planned") == [
        ("tolerations_added", "info", "nic-cluster-policy"), ("device_plugin_config_updated", "info", "nic-cluster-policy")]
    assert message(result, "tolerations_added") == (
        "Added node.kubernetes.io/unschedulable:NoSchedule (Exists), crater.raids.io/account:NoSchedule (Exists) to "
        "spec.tolerations of NicClusterPolicy nic-cluster-policy (server-side dry run first; 1 existing toleration(s) kept).")
    assert message(result, "device_plugin_config_updated") == (
        "Set spec.rdmaSharedDevicePlugin.config of NicClusterPolicy nic-cluster-policy from the gathered facts (rdma_v100: "
        "selectors.ifNames [ibxxxxxx0, ibxxxxxx1] -> [ibp94s0f0]; rdma_a100: selectors.ifNames [ibxxxx0, ibxxxxx0] -> [ibp75s0]).")
    assert result["status"]["policy_patched"] is True and result["status"]["tolerations"] == [GPU, UNSCHEDULABLE, ACCOUNT]
    planned = dict(applied, policy_patch=policy_patch(plugin, {"result": stored, "changed": True}, {"skipped": True}))
    result = run(planned, check_mode=True)
    assert found(result, "tolerations_added", "device_plugin_config_updated", "tolerations_planned", "device_plugin_config_planned") == [
        ("tolerations_planned", "info", "nic-cluster-policy"), ("device_plugin_config_planned", "info", "nic-cluster-policy")]
    assert message(result, "tolerations_planned").startswith("Check mode: would add node.kubernetes.io/unschedulable:NoSchedule (Exists)")
    assert message(result, "device_plugin_config_planned").startswith("Check mode: would set spec.rdmaSharedDevicePlugin.config")
    assert result["status"]["policy_patched"] is False


def test_an_operator_without_spec_tolerations_and_a_rejected_config():
    plugin = device_plugin()
    pruned = patched_policy(plugin, keep_tolerations=False)
    pruned["spec"]["rdmaSharedDevicePlugin"]["config"] = "{}"
    facts = cluster(device_plugin=plugin, policy_patch=policy_patch(plugin, {"result": pruned}, {"skipped": True}))
    result = run(facts)
    assert found(result, "tolerations_not_supported", "device_plugin_config_rejected", "tolerations_added", "policy_patch_failed") == [
        ("tolerations_not_supported", "critical", "nic-cluster-policy"), ("device_plugin_config_rejected", "critical", "nic-cluster-policy")]
    assert message(result, "tolerations_not_supported") == (
        "The server-side dry run dropped spec.tolerations from the patch of NicClusterPolicy nic-cluster-policy: this Network "
        "Operator version's CRD has no spec.tolerations (see kubectl explain nicclusterpolicy.spec), so nothing was applied "
        "and node.kubernetes.io/unschedulable:NoSchedule (Exists), crater.raids.io/account:NoSchedule (Exists) stay untolerated.")
    assert message(result, "device_plugin_config_rejected") == (
        "The server-side dry run of the patch of NicClusterPolicy nic-cluster-policy did not keep "
        "spec.rdmaSharedDevicePlugin.config as sent, so nothing was applied.")
    assert result["status"]["policy_patched"] is False


def test_a_refused_dry_run_or_patch():
    plugin = device_plugin()
    conflict = "Failed to patch object: b'{\"kind\":\"Status\",\"reason\":\"Conflict\"}'"
    facts = cluster(device_plugin=plugin, policy_patch=policy_patch(plugin, {"failed": True, "msg": conflict}, {"skipped": True}))
    result = run(facts)
    assert found(result, "policy_patch_failed", "tolerations_not_supported", "tolerations_added") == [
        ("policy_patch_failed", "critical", "nic-cluster-policy")]
    assert message(result, "policy_patch_failed") == (
        "The server-side dry run of merge patch of NicClusterPolicy nic-cluster-policy failed, so nothing was changed: " + conflict)
    stored = patched_policy(plugin)
    facts["policy_patch"] = policy_patch(plugin, {"result": stored}, {"failed": True, "msg": conflict})
    assert message(run(facts), "policy_patch_failed").startswith("The merge patch of NicClusterPolicy nic-cluster-policy failed")


# ------------------------------------------------------------------------------------ device plugin config


def test_device_plugin_problems_hosts_without_facts_and_a_policy_without_the_plugin():
    plugin = device_plugin({"v100-node-01": {"ansible_facts": {"rdma": V100}}, "v100-node-02": {},
                            "a100-node-01": {"ansible_facts": {"rdma": A100_CABLE_OUT}},
                            "a100-node-02": {"ansible_facts": {"rdma": A100_CABLE_OUT}}})
    result = run(cluster(device_plugin=plugin))
    assert found(result, "device_plugin_config_incomplete", "device_plugin_hosts_without_facts") == [
        ("device_plugin_config_incomplete", "critical", "ib-a100"), ("device_plugin_hosts_without_facts", "warning", "ib-v100")]
    assert message(result, "device_plugin_config_incomplete") == (
        "Group ib-a100: no ACTIVE RDMA port with a usable netdev on a100-node-01, a100-node-02, so rdma_a100 would select "
        "nothing. The device plugin config was not applied.")
    assert message(result, "device_plugin_hosts_without_facts") == (
        "Hosts v100-node-02 of group ib-v100 have no ansible_facts.rdma, so the ifNames of rdma_v100 come from v100-node-01 only.")
    reported = run(cluster(device_plugin=plugin), apply_device_plugin_config=False)
    assert found(reported, "device_plugin_config_incomplete") == [("device_plugin_config_incomplete", "warning", "ib-a100")]
    assert message(reported, "device_plugin_config_incomplete").endswith("so rdma_a100 would select nothing.")
    without = policy()
    del without["spec"]["rdmaSharedDevicePlugin"]
    result = run(cluster(policy=without, device_plugin=device_plugin()))
    assert found(result, "device_plugin_not_enabled") == [("device_plugin_not_enabled", "critical", "nic-cluster-policy")]
    assert message(result, "device_plugin_not_enabled") == (
        "NicClusterPolicy nic-cluster-policy has no spec.rdmaSharedDevicePlugin; enable the RDMA shared device plugin "
        "(image, repository, version) first. The device plugin config was not applied.")


def test_device_plugin_config_drift_when_not_applying():
    result = run(cluster(device_plugin=device_plugin()), apply_device_plugin_config=False)
    assert found(result, "device_plugin_config_drift") == [
        ("device_plugin_config_drift", "warning", "rdma_v100"), ("device_plugin_config_drift", "warning", "rdma_a100")]
    assert message(result, "device_plugin_config_drift", "rdma_a100") == (
        "The device plugin config of NicClusterPolicy nic-cluster-policy differs from the gathered facts (rdma_a100: "
        "selectors.ifNames [ibxxxx0, ibxxxxx0] -> [ibp75s0]); set "
        "k8s_rdma_apply_device_plugin_config to true to apply it.")
    assert found(run(cluster(device_plugin=device_plugin())), "device_plugin_config_drift") == [], "applying: no drift to report"
    assert result["status"]["device_plugin_config"][0]["selectors"] == {"ifNames": ["ibp94s0f0"], "linkTypes": ["infiniband"]}


# ------------------------------------------------------------------------------------ mofed.wait


def test_stuck_nodes_blocked_and_unblocked_by_this_runs_tolerations():
    blocked = run(cluster())
    assert found(blocked, "mofed_wait_blocked", "mofed_wait_unblocked") == [
        ("mofed_wait_blocked", "critical", "a100-node-01"), ("mofed_wait_blocked", "critical", "v100-node-02")]
    assert message(blocked, "mofed_wait_blocked", "v100-node-02") == (
        'network.nvidia.com/operator.mofed.wait is "true" on node v100-node-02: node is cordoned (node.kubernetes.io/unschedulable) '
        "and NicClusterPolicy nic-cluster-policy does not tolerate it, so the MOFED driver pod cannot be scheduled there and "
        "the node advertises no rdma/* resources.")
    unblocked = run(cluster(planned_tolerations=[GPU, UNSCHEDULABLE, ACCOUNT]), check_mode=True)
    assert found(unblocked, "mofed_wait_blocked", "mofed_wait_unblocked") == [
        ("mofed_wait_unblocked", "warning", "a100-node-01"), ("mofed_wait_unblocked", "warning", "v100-node-02")]
    assert message(unblocked, "mofed_wait_unblocked", "a100-node-01") == (
        'network.nvidia.com/operator.mofed.wait is "true" on node a100-node-01: node has the taint '
        "crater.raids.io/account=team-a:NoSchedule and NicClusterPolicy nic-cluster-policy does not tolerate it; the "
        "tolerations this run would add cover it, so the operator can schedule the MOFED driver pod again (set "
        "k8s_rdma_wait_mofed to wait for the label).")
    assert unblocked["status"]["mofed_wait_nodes"] == ["a100-node-01", "v100-node-02"]


def test_a_stuck_node_without_a_blocking_taint():
    nodes = [node("gpu-7", "true", taints=[{"key": "soon", "effect": "PreferNoSchedule"}], ready=False)]
    result = run(cluster(nodes=nodes), resources={})
    assert found(result) == [("mofed_wait_unexplained", "warning", "gpu-7")]
    assert message(result, "mofed_wait_unexplained") == (
        'network.nvidia.com/operator.mofed.wait is "true" on node gpu-7 but no taint keeps the MOFED driver pod off it: the '
        "pod may still be installing the driver or failing; check it with kubectl -n nvidia-network-operator get pods -o wide "
        "--field-selector spec.nodeName=gpu-7. The node is NotReady.")


def test_after_waiting_timeout_and_cleared():
    nodes = upgraded_nodes()
    nodes[1]["metadata"]["labels"][MOFED] = "false"
    wait = {"waited_seconds": 900, "previously_stuck": ["a100-node-01", "v100-node-02"]}
    result = run(cluster(nodes=nodes, tolerations=[GPU, UNSCHEDULABLE], planned_tolerations=[GPU, UNSCHEDULABLE], mofed_wait=wait))
    assert found(result, "mofed_wait_timeout", "mofed_wait_cleared", "mofed_wait_blocked") == [
        ("mofed_wait_timeout", "critical", "a100-node-01"), ("mofed_wait_cleared", "info", "v100-node-02")]
    assert message(result, "mofed_wait_timeout") == (
        'network.nvidia.com/operator.mofed.wait is "true" on node a100-node-01 after waiting 900 s for it to become "false": '
        "node has the taint crater.raids.io/account=team-a:NoSchedule and NicClusterPolicy nic-cluster-policy does not tolerate it.")
    assert message(result, "mofed_wait_cleared") == 'network.nvidia.com/operator.mofed.wait is "false" again on node v100-node-02.'


# ------------------------------------------------------------------------------------ node resources


def test_node_resources():
    result = run(cluster())
    assert found(result, "resource_missing", "node_not_in_cluster", "resource_count") == [
        ("resource_missing", "critical", "v100-node-02"), ("resource_missing", "critical", "a100-node-01"),
        ("resource_count", "warning", "gpu-a100-02")]
    assert message(result, "resource_missing", "v100-node-02") == (
        "Node v100-node-02 (group ib-v100) does not advertise rdma/rdma_v100 in capacity and allocatable (capacity: absent, "
        'allocatable: absent) while network.nvidia.com/operator.mofed.wait is "true" (the device plugin waits for the MOFED driver).')
    assert message(result, "resource_count") == (
        "Node gpu-a100-02 (group ib-a100) advertises rdma/rdma_a100 with capacity 32 and allocatable 32, expected 63 in both.")
    assert result["status"]["nodes_without_resources"] == ["v100-node-02", "a100-node-01", "gpu-a100-02"]
    renamed = run(cluster(), node_names={})
    assert found(renamed, "node_not_in_cluster") == [("node_not_in_cluster", "critical", "a100-node-02")]
    assert message(renamed, "node_not_in_cluster") == (
        "The inventory host a100-node-02 of group ib-a100 has no Node a100-node-02 in the cluster; set k8s_node_name for it "
        "when the names differ.")


# ------------------------------------------------------------------------------------ stale resources


def stale_runs(nodes, answers, patched):
    """The role's dry-run and patch loop results for ``nodes``: ``answers``/``patched`` map node -> what the server did."""
    plans = stale_resource_patches(nodes, ["nvidia.com/hostdev"])
    dry_runs, patches = [], []
    for plan in plans:
        after = next(n for n in nodes if n["metadata"]["name"] == plan["node"])
        dry = {"item": plan}
        if answers[plan["node"]] == "refused":
            dry.update(failed=True, msg="Failed to apply patch: Unprocessable Entity")
        else:
            stored = copy.deepcopy(after)
            if answers[plan["node"]] == "removes":
                for field in ("capacity", "allocatable"):
                    stored["status"][field].pop("nvidia.com/hostdev", None)
            dry["result"] = stored
        dry_runs.append(dry)
        outcome = patched.get(plan["node"])
        if outcome == "ok":
            patches.append({"item": dry, "result": dry["result"], "changed": True})
        elif outcome == "refused":
            patches.append({"item": dry, "failed": True, "msg": "the server is gone"})
    return dry_runs, patches


def test_stale_resources_removed_planned_kept_and_failed():
    nodes = [node(n, resources={"nvidia.com/hostdev": "2"}) for n in ("n1", "n2", "n3", "n4")]
    dry_runs, patches = stale_runs(nodes, {"n1": "removes", "n2": "keeps", "n3": "refused", "n4": "removes"}, {"n1": "ok", "n4": "refused"})
    assert dry_runs[0]["item"]["patch"][0] == SEED_PATCH[0], "the write-up's own patch, plus allocatable"
    result = run(cluster(nodes=nodes, stale_dry_runs=dry_runs, stale_patches=patches), resources={})
    assert found(result, "stale_resource_removed", "stale_resource_planned", "stale_resource_kept", "stale_resource_failed") == [
        ("stale_resource_removed", "info", "n1"), ("stale_resource_kept", "critical", "n2"),
        ("stale_resource_failed", "critical", "n3"), ("stale_resource_failed", "critical", "n4")]
    assert message(result, "stale_resource_removed") == (
        "Removed nvidia.com/hostdev from the status (capacity, allocatable) of node n1 (server-side dry run first).")
    assert message(result, "stale_resource_kept") == (
        "The server-side dry run kept nvidia.com/hostdev in the status of node n2, so nothing was removed there.")
    assert message(result, "stale_resource_failed", "n3") == (
        "Removing nvidia.com/hostdev from the status (capacity, allocatable) of node n3 failed in the server-side dry run: "
        "Failed to apply patch: Unprocessable Entity")
    assert message(result, "stale_resource_failed", "n4").endswith("of node n4 failed: the server is gone")
    assert result["status"]["stale_resource_nodes"] == ["n1", "n2", "n3", "n4"]
    planned = run(cluster(nodes=nodes, stale_dry_runs=dry_runs[:1]), resources={}, check_mode=True)
    assert found(planned, "stale_resource_planned") == [("stale_resource_planned", "info", "n1")]
    assert message(planned, "stale_resource_planned") == (
        "Check mode: would remove nvidia.com/hostdev from the status (capacity, allocatable) of node n1 (the server-side dry "
        "run accepted it).")


# ------------------------------------------------------------------------------------ the whole


def test_a_healthy_cluster_has_no_finding_and_the_status_says_what_it_is():
    nodes = [node("v100-node-01", resources={"rdma/rdma_v100": "63"}), node("v100-node-02", resources={"rdma/rdma_v100": "63"}),
             node("a100-node-01", resources={"rdma/rdma_a100": "63"}), node("gpu-a100-02", resources={"rdma/rdma_a100": "63"})]
    result = run(cluster(nodes=nodes))
    assert result["findings"] == []
    status = result["status"]
    assert (status["ok"], status["subject"], status["policy"], status["mofed_wait_nodes"], status["nodes_without_resources"]) == (
        True, "cluster/prod", "nic-cluster-policy", [], [])
    assert status["summary"] == "k8s_rdma on cluster/prod: no findings."
    assert status["skipped_checks"] == []


def test_without_the_cluster_fact_nothing_runs():
    result = evaluate_role("k8s_rdma", {}, PARAMS, subject="cluster/prod")
    assert result["findings"] == [] and result["status"]["checks"] == []
    assert all(s["missing"] == ["k8s_cluster"] for s in result["status"]["skipped_checks"])


@pytest.mark.parametrize("change, text", [
    ({"tolerations": [{"key": "a", "operator": "In"}]}, "k8s_rdma.policy_patch_failed: k8s_rdma_tolerations[0]: operator 'In' is not Exists or Equal"),
    ({"resources": {"ib-h100": "rdma_h100"}}, "k8s_rdma.resource_missing: k8s_rdma_resources: the group 'ib-h100' is not in the inventory"),
    ({"expected_resource_count": -1}, "k8s_rdma.resource_missing: k8s_rdma_expected_resource_count: expected a non-negative integer, got -1"),
])
def test_bad_parameters_are_one_sentence(change, text):
    with pytest.raises(CheckError) as error:
        run(cluster(), **change)
    assert str(error.value) == text
