"""The k8s filters as a play calls them: hostvars + groups, or group -> facts; errors as AnsibleFilterError."""

from __future__ import annotations

import json

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.k8s import (
    FilterModule,
    k8s_mofed_wait_findings,
    k8s_node_resource_findings,
    k8s_stale_resource_patches,
    k8s_tolerations_merge,
    rdma_shared_device_plugin_config,
)
from testpaths import FIXTURES

SEED_CONFIG = yaml.safe_load((FIXTURES / "k8s" / "seed_nic_cluster_policy_rdma_shared_dp.yaml").read_text())[
    "spec"]["rdmaSharedDevicePlugin"]["config"]


def _facts(*ports, netdevs=None):
    return {"ports": [dict(device=d, port=1, state=s, link_layer=ll, netdevs=n) for d, s, ll, n in ports],
            "netdevs": netdevs or {}}


def _ib(name, pci):
    return {name: {"device": "mlx5_x", "port": 1, "master": None, "pci_address": pci}}


V100_A = _facts(("mlx5_0", "ACTIVE", "InfiniBand", ["ibp94s0f0"]), ("mlx5_1", "ACTIVE", "InfiniBand", ["ibp94s0f1"]),
                netdevs=dict(_ib("ibp94s0f0", "0000:5e:00.0"), **_ib("ibp94s0f1", "0000:5e:00.1")))
V100_B = _facts(("mlx5_0", "ACTIVE", "InfiniBand", ["ibp94s0f0"]), ("mlx5_1", "DOWN", "InfiniBand", ["ibp94s0f1"]),
                netdevs=dict(_ib("ibp94s0f0", "0000:5e:00.0"), **_ib("ibp94s0f1", "0000:5e:00.1")))
BOND0 = {"device": "mlx5_bond_0", "port": 1, "master": None, "pci_address": None}
A100 = _facts(("mlx5_1", "ACTIVE", "InfiniBand", ["ibp75s0"]), ("mlx5_bond_0", "ACTIVE", "Ethernet", ["bond0"]),
              netdevs=dict(_ib("ibp75s0", "0000:4b:00.0"), bond0=BOND0))

HOSTVARS = {
    "v100-node-01": {"ansible_facts": {"rdma": V100_A}},
    "v100-node-02": {"ansible_facts": {"rdma": V100_B}},
    "a100-node-01": {"ansible_facts": {"rdma": A100}},
    "a100-node-02": {"ansible_facts": {"rdma": A100}, "k8s_node_name": "gpu-a100-02"},
    "a100-node-03": {"ansible_facts": {}},
}
GROUPS = {"all": list(HOSTVARS), "ib-v100": ["v100-node-01", "v100-node-02"],
          "ib-a100": ["a100-node-01", "a100-node-02", "a100-node-03"]}
RESOURCES = {"ib-v100": "rdma_v100", "ib-a100": "rdma_a100"}


def test_filters_are_registered():
    assert sorted(FilterModule().filters()) == [
        "k8s_mofed_wait_findings", "k8s_node_resource_findings", "k8s_stale_resource_patches", "k8s_tolerations_merge",
        "rdma_shared_device_plugin_config"]


def test_device_plugin_config_from_hostvars_and_groups():
    result = rdma_shared_device_plugin_config(HOSTVARS, RESOURCES, GROUPS)
    assert json.loads(result["config"]) == {"configList": [
        {"resourceName": "rdma_v100", "rdmaHcaMax": 63, "selectors": {"ifNames": ["ibp94s0f0", "ibp94s0f1"], "linkTypes": ["infiniband"]}},
        {"resourceName": "rdma_a100", "rdmaHcaMax": 63, "selectors": {"ifNames": ["ibp75s0"], "linkTypes": ["infiniband"]}},
    ]}
    assert result["groups"]["ib-a100"]["hosts_without_facts"] == ["a100-node-03"]
    assert "policy_config" not in result


def test_device_plugin_config_from_a_mapping_of_group_to_facts():
    result = rdma_shared_device_plugin_config({"ib-v100": [V100_A, V100_B], "ib-a100": [A100]}, RESOURCES, rdma_hca_max=32)
    assert [(e["resourceName"], e["rdmaHcaMax"], e["selectors"]["ifNames"]) for e in result["configList"]] == [
        ("rdma_v100", 32, ["ibp94s0f0", "ibp94s0f1"]), ("rdma_a100", 32, ["ibp75s0"])]


def test_device_plugin_config_merged_into_the_policys_config():
    result = rdma_shared_device_plugin_config(HOSTVARS, RESOURCES, GROUPS, current_config=SEED_CONFIG)
    assert result["changed"]
    assert [e["selectors"]["ifNames"] for e in json.loads(result["policy_config"])["configList"]] == [
        ["ibp94s0f0", "ibp94s0f1"], ["ibp75s0"]]
    again = rdma_shared_device_plugin_config(HOSTVARS, RESOURCES, GROUPS, current_config=result["policy_config"])
    assert not again["changed"] and again["policy_config"] == result["policy_config"]


def test_a_broken_policy_config_is_an_error_or_a_problem():
    with pytest.raises(AnsibleFilterError, match="^rdma.node.rdma_shared_device_plugin_config: spec.rdmaSharedDevicePlugin.config "
                                                 "is not valid JSON"):
        rdma_shared_device_plugin_config(HOSTVARS, RESOURCES, GROUPS, current_config="{")
    result = rdma_shared_device_plugin_config(HOSTVARS, RESOURCES, GROUPS, current_config="{", strict=False)
    assert result["changed"] is False and result["policy_config"] is None
    assert result["problems"][0]["group"] is None


@pytest.mark.parametrize("call, message", [
    (lambda: rdma_shared_device_plugin_config(["v100-node-01"], RESOURCES, GROUPS),
     "rdma.node.rdma_shared_device_plugin_config: expected hostvars (with groups) or a mapping of group to a list of "
     "ansible_facts.rdma as input, got list"),
    (lambda: rdma_shared_device_plugin_config(HOSTVARS, {"ib-h100": "rdma_h100"}, GROUPS),
     "rdma.node.rdma_shared_device_plugin_config: resources: the group 'ib-h100' is not in the inventory"),
    (lambda: rdma_shared_device_plugin_config(HOSTVARS, {"ib-v100": "rdma v100"}, GROUPS),
     "rdma.node.rdma_shared_device_plugin_config: resources[ib-v100]: resource name 'rdma v100' is not a valid name "
     "(letters, digits, -, _ and .; no prefix)"),
    (lambda: rdma_shared_device_plugin_config(HOSTVARS, {"ib-v100": "rdma_v100"}, {"ib-v100": ["a100-node-03"]}),
     "rdma.node.rdma_shared_device_plugin_config: group ib-v100: none of its hosts (a100-node-03) has ansible_facts.rdma; "
     "gather them first with rdma.node.ib_inventory (in the same run or into a fact cache)"),
    (lambda: rdma_shared_device_plugin_config({"ib-v100": V100_A}, RESOURCES),
     "rdma.node.rdma_shared_device_plugin_config: input[ib-v100] must be a list of ansible_facts.rdma"),
    (lambda: rdma_shared_device_plugin_config(HOSTVARS, RESOURCES, GROUPS, rdma_hca_max=0),
     "rdma.node.rdma_shared_device_plugin_config: rdma_hca_max must be a positive integer, got 0"),
])
def test_device_plugin_config_errors_say_what_was_wrong(call, message):
    with pytest.raises(AnsibleFilterError) as err:
        call()
    assert str(err.value).startswith(message)


def test_tolerations_merge_filter():
    plan = k8s_tolerations_merge([{"key": "nvidia.com/gpu", "operator": "Exists"}],
                                 [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])
    assert len(plan["tolerations"]) == 2 and len(plan["added"]) == 1
    with pytest.raises(AnsibleFilterError, match=r"^rdma.node.k8s_tolerations_merge: tolerations\[0\]: operator 'In' is not"):
        k8s_tolerations_merge([], [{"key": "a", "operator": "In"}])


def test_node_resource_filter_uses_k8s_node_name():
    nodes = [{"metadata": {"name": n}, "status": {"capacity": {r: "63"}, "allocatable": {r: "63"}}}
             for n, r in (("v100-node-01", "rdma/rdma_v100"), ("v100-node-02", "rdma/rdma_v100"),
                          ("a100-node-01", "rdma/rdma_a100"), ("gpu-a100-02", "rdma/rdma_a100"), ("a100-node-03", "rdma/x"))]
    result = k8s_node_resource_findings(nodes, RESOURCES, GROUPS, HOSTVARS, expected_count=63)
    assert [(f["check"], f["subject"]) for f in result["findings"]] == [("resource_missing", "a100-node-03")]
    with pytest.raises(AnsibleFilterError, match="expected_count must be a non-negative integer"):
        k8s_node_resource_findings(nodes, RESOURCES, GROUPS, HOSTVARS, expected_count=-1)


def test_mofed_and_stale_filters():
    node = {"metadata": {"name": "n", "labels": {"network.nvidia.com/operator.mofed.wait": "true"}},
            "spec": {"unschedulable": True}, "status": {"capacity": {"nvidia.com/hostdev": "2"}}}
    assert k8s_mofed_wait_findings([node], [])["findings"][0]["check"] == "mofed_wait_blocked"
    assert k8s_stale_resource_patches([node], ["nvidia.com/hostdev"])[0]["patch"] == [
        {"op": "remove", "path": "/status/capacity/nvidia.com~1hostdev"}]
    with pytest.raises(AnsibleFilterError) as err:
        k8s_stale_resource_patches([node], ["cpu"])
    assert str(err.value) == ("rdma.node.k8s_stale_resource_patches: k8s_rdma_remove_stale_resources: 'cpu' is not an extended "
                              "resource (DOMAIN/NAME such as nvidia.com/hostdev); built-in resources like cpu, memory and "
                              "pods are never removed")
