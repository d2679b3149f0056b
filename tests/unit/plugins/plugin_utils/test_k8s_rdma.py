"""The cluster-side logic of k8s_rdma: tolerations, mofed.wait, resources, stale patches, device plugin."""

from __future__ import annotations

import json

import pytest
import yaml
from sysfs_tree import build_host, unpack

from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather
from ansible_collections.rdma.node.plugins.plugin_utils._checks.cluster import mofed_wait_findings, resource_findings
from ansible_collections.rdma.node.plugins.plugin_utils._k8s_rdma import (
    K8sRdmaError,
    bond_masters,
    covers,
    describe_taint,
    device_plugin_config,
    escape_pointer_token,
    merge_device_plugin_config,
    merge_tolerations,
    node_expectations,
    node_taints,
    parse_quantity,
    stale_resource_patches,
    tolerates,
    untolerated_taints,
)
from testpaths import FIXTURES

SEED_POLICY = FIXTURES / "k8s" / "seed_nic_cluster_policy_rdma_shared_dp.yaml"
SEED_PATCH = FIXTURES / "k8s" / "seed_remove_stale_hostdev_capacity_patch.json"
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
ACCOUNT = {"key": "crater.raids.io/account", "operator": "Exists", "effect": "NoSchedule"}

# --------------------------------------------------------------------------- toleration matching

ACCOUNT_TAINT = {"key": "crater.raids.io/account", "value": "team-a", "effect": "NoSchedule"}

# (toleration, taint, tolerated) following the scheduler's ToleratesTaint.
MATCHING = [
    ({"operator": "Exists"}, ACCOUNT_TAINT, True),  # empty key + Exists: every taint
    ({"operator": "Exists", "effect": "NoExecute"}, ACCOUNT_TAINT, False),  # ... of that effect only
    ({"key": "crater.raids.io/account", "operator": "Exists"}, ACCOUNT_TAINT, True),  # empty effect: all effects
    ({"key": "crater.raids.io/account", "operator": "Exists", "effect": "NoSchedule"}, ACCOUNT_TAINT, True),
    ({"key": "crater.raids.io/account", "operator": "Equal", "value": "team-a", "effect": "NoSchedule"}, ACCOUNT_TAINT, True),
    ({"key": "crater.raids.io/account", "value": "team-a"}, ACCOUNT_TAINT, True),  # operator defaults to Equal
    ({"key": "crater.raids.io/account", "operator": "Equal", "value": "team-b"}, ACCOUNT_TAINT, False),
    ({"key": "crater.raids.io/account"}, ACCOUNT_TAINT, False),  # Equal with empty value vs value team-a
    ({"key": "crater.raids.io/account", "operator": "Exists", "effect": "PreferNoSchedule"}, ACCOUNT_TAINT, False),
    ({"key": "crater.raids.io/other", "operator": "Exists"}, ACCOUNT_TAINT, False),
    (UNSCHEDULABLE, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, True),
    ({"key": "node.kubernetes.io/unschedulable", "operator": "Equal"},
     {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, True),  # both values empty
]


@pytest.mark.parametrize("toleration, taint, expected", MATCHING)
def test_tolerates_follows_the_scheduler(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_covers_is_consistent_with_tolerates():
    taints = [ACCOUNT_TAINT, {"key": "crater.raids.io/account", "effect": "NoExecute"},
              {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, {"key": "x", "value": "y", "effect": "NoSchedule"}]
    tolerations = [case[0] for case in MATCHING] + [ACCOUNT, UNSCHEDULABLE]
    for have in tolerations:
        for want in tolerations:
            if covers(have, want):
                for taint in taints:
                    assert not tolerates(want, taint) or tolerates(have, taint), (have, want, taint)


def test_covers_respects_toleration_seconds():
    bounded = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    forever = {"key": "k", "operator": "Exists", "effect": "NoExecute"}
    assert covers(forever, bounded)
    assert not covers(bounded, forever)
    assert covers(bounded, dict(bounded, tolerationSeconds=60))


def test_merge_keeps_existing_and_adds_each_missing_toleration_once():
    existing = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, dict(UNSCHEDULABLE)]
    plan = merge_tolerations(existing, [UNSCHEDULABLE, ACCOUNT, dict(ACCOUNT)])
    assert plan["tolerations"] == existing + [ACCOUNT]
    assert plan["added"] == [ACCOUNT]
    assert plan["added_text"] == ["crater.raids.io/account:NoSchedule (Exists)"]
    assert plan["covered"] == [{"toleration": UNSCHEDULABLE, "by": UNSCHEDULABLE}]
    assert merge_tolerations(plan["tolerations"], [UNSCHEDULABLE, ACCOUNT])["added"] == [], "idempotent"


def test_merge_treats_a_wildcard_toleration_as_covering_everything():
    everything = {"operator": "Exists"}
    plan = merge_tolerations([everything], [UNSCHEDULABLE, ACCOUNT])
    assert plan["added"] == [] and plan["tolerations"] == [everything]
    assert [c["by"] for c in plan["covered"]] == [everything, everything]


def test_merge_writes_compact_tolerations():
    plan = merge_tolerations(None, [{"key": "a", "operator": "Equal", "value": "", "effect": ""}])
    assert plan["added"] == [{"key": "a", "operator": "Equal"}]


@pytest.mark.parametrize("bad, message", [
    ({"key": "a", "operator": "exists"}, "k8s_rdma_tolerations[0]: operator 'exists' is not Exists or Equal"),
    ({"key": "a", "operator": "Exists", "value": "x"}, "k8s_rdma_tolerations[0]: operator Exists takes no value (got 'x')"),
    ({"operator": "Equal", "value": "x"},
     "k8s_rdma_tolerations[0]: an empty key needs operator Exists (it then tolerates every taint)"),
    ({"key": "a", "effect": "NoSchedul"},
     "k8s_rdma_tolerations[0]: effect 'NoSchedul' is not one of NoSchedule, PreferNoSchedule, NoExecute (or empty for all effects)"),
    ({"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30},
     "k8s_rdma_tolerations[0]: tolerationSeconds applies only to effect NoExecute"),
    ({"key": "a", "operater": "Exists"},
     "k8s_rdma_tolerations[0]: unknown toleration field(s) operater; expected key, operator, value, effect, tolerationSeconds"),
    ("node.kubernetes.io/unschedulable",
     "k8s_rdma_tolerations[0]: expected a toleration mapping (key, operator, value, effect), got 'node.kubernetes.io/unschedulable'"),
])
def test_bad_tolerations_are_named(bad, message):
    with pytest.raises(K8sRdmaError) as err:
        merge_tolerations([], [bad], where="k8s_rdma_tolerations")
    assert str(err.value) == message


def test_a_policy_with_non_list_tolerations_is_refused():
    with pytest.raises(K8sRdmaError, match="the policy's spec.tolerations is not a list of tolerations"):
        merge_tolerations({"key": "a"}, [ACCOUNT])


# --------------------------------------------------------------------------- taints and mofed.wait


def _node(name, mofed=None, taints=None, unschedulable=False, ready=True, status=None):
    labels = {} if mofed is None else {"network.nvidia.com/operator.mofed.wait": mofed}
    spec = {}
    if taints is not None:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    node_status = dict(status or {})
    node_status["conditions"] = [{"type": "Ready", "status": "True" if ready else "Unknown"}]
    return {"metadata": {"name": name, "labels": labels}, "spec": spec, "status": node_status}


def test_a_cordoned_node_has_the_unschedulable_taint_even_before_it_is_written():
    assert node_taints(_node("n", unschedulable=True)) == [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    written = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2025-03-02T08:00:00Z"}]
    assert node_taints(_node("n", taints=written, unschedulable=True)) == written


def test_only_noschedule_and_noexecute_taints_keep_a_pod_away():
    taints = [{"key": "soon", "effect": "PreferNoSchedule"}, ACCOUNT_TAINT, {"key": "gone", "effect": "NoExecute"}]
    assert [describe_taint(t) for t in untolerated_taints(_node("n", taints=taints), [ACCOUNT])] == ["gone:NoExecute"]


def test_mofed_wait_blocked_names_the_taint_and_the_policy():
    nodes = [_node("v100-node-02", "true", unschedulable=True), _node("v100-node-01", "false"), _node("cpu-node")]
    result = mofed_wait_findings(nodes, [ACCOUNT])
    assert result["stuck"] == ["v100-node-02"]
    assert result["findings"] == [{
        "role": "k8s_rdma", "check": "mofed_wait_blocked", "severity": "critical", "subject": "v100-node-02",
        "message": 'network.nvidia.com/operator.mofed.wait is "true" on node v100-node-02: node is cordoned '
                   "(node.kubernetes.io/unschedulable) and NicClusterPolicy nic-cluster-policy does not tolerate it, "
                   "so the MOFED driver pod cannot be scheduled there and the node advertises no rdma/* resources.",
        "expected": "false", "actual": "true"}]


def test_mofed_wait_unblocked_by_the_planned_tolerations():
    nodes = [_node("a100-node-01", "true", taints=[ACCOUNT_TAINT])]
    (finding,) = mofed_wait_findings(nodes, [], [ACCOUNT], policy_name="ncp", check_mode=True)["findings"]
    assert finding["check"] == "mofed_wait_unblocked" and finding["severity"] == "warning"
    assert ("node has the taint crater.raids.io/account=team-a:NoSchedule and NicClusterPolicy ncp does not tolerate it; "
            "the tolerations this run would add cover it") in finding["message"]


def test_mofed_wait_without_a_blocking_taint_points_at_the_driver_pod():
    nodes = [_node("gpu-7", "true", taints=[{"key": "soon", "effect": "PreferNoSchedule"}], ready=False)]
    (finding,) = mofed_wait_findings(nodes, [])["findings"]
    assert finding["check"] == "mofed_wait_unexplained"
    assert finding["message"].endswith("--field-selector spec.nodeName=gpu-7. The node is NotReady.")


def test_mofed_wait_after_a_timeout_and_after_recovery():
    nodes = [_node("a", "true", taints=[ACCOUNT_TAINT]), _node("b", "false")]
    result = mofed_wait_findings(nodes, [UNSCHEDULABLE], waited_seconds=900, previously_stuck=["a", "b"])
    assert [(f["check"], f["severity"], f["subject"]) for f in result["findings"]] == [
        ("mofed_wait_timeout", "critical", "a"), ("mofed_wait_cleared", "info", "b")]
    assert result["findings"][0]["message"] == (
        'network.nvidia.com/operator.mofed.wait is "true" on node a after waiting 900 s for it to become "false": '
        "node has the taint crater.raids.io/account=team-a:NoSchedule and NicClusterPolicy nic-cluster-policy "
        "does not tolerate it.")


# --------------------------------------------------------------------------- node resources


@pytest.mark.parametrize("text, value", [("63", 63), ("0", 0), ("1k", 1000), ("2Ki", 2048), ("500m", 0.5), ("x", None), (None, None)])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


GROUPS = {"ib-v100": ["v100-node-01", "v100-node-02", "v100-node-03"], "ib-a100": ["a100-node-02"]}
RESOURCES = {"ib-v100": "rdma_v100", "ib-a100": {"resourceName": "rdma_a100", "rdmaHcaMax": 32}}


def test_resource_checks_capacity_allocatable_and_count():
    names = {"a100-node-02": "gpu-a100-02"}
    expectations = node_expectations(GROUPS, RESOURCES, names.get)
    assert [(e["node"], e["resource"]) for e in expectations] == [
        ("v100-node-01", "rdma/rdma_v100"), ("v100-node-02", "rdma/rdma_v100"), ("v100-node-03", "rdma/rdma_v100"),
        ("gpu-a100-02", "rdma/rdma_a100")]
    nodes = [
        _node("v100-node-01", status={"capacity": {"rdma/rdma_v100": "63"}, "allocatable": {"rdma/rdma_v100": "63"}}),
        _node("v100-node-02", "true", status={"capacity": {"rdma/rdma_v100": "0"}, "allocatable": {}}),
        _node("gpu-a100-02", status={"capacity": {"rdma/rdma_a100": "32"}, "allocatable": {"rdma/rdma_a100": "32"}}),
    ]
    result = resource_findings(nodes, RESOURCES, GROUPS, names, expected_count=63, mofed_label="network.nvidia.com/operator.mofed.wait")
    assert [(f["check"], f["severity"], f["subject"]) for f in result["findings"]] == [
        ("resource_missing", "critical", "v100-node-02"),
        ("node_not_in_cluster", "critical", "v100-node-03"),
        ("resource_count", "warning", "gpu-a100-02"),
    ]
    messages = [f["message"] for f in result["findings"]]
    assert messages[0] == ("Node v100-node-02 (group ib-v100) does not advertise rdma/rdma_v100 in capacity and allocatable "
                           '(capacity: 0, allocatable: absent) while network.nvidia.com/operator.mofed.wait is "true" '
                           "(the device plugin waits for the MOFED driver).")
    assert messages[1].startswith("The inventory host v100-node-03 of group ib-v100 has no Node v100-node-03 in the cluster")
    assert messages[2] == ("Node gpu-a100-02 (group ib-a100) advertises rdma/rdma_a100 with capacity 32 and allocatable 32, "
                           "expected 63 in both.")
    assert [c["ok"] for c in result["checked"]] == [True, False, False]


def test_resource_names_and_groups_are_checked():
    with pytest.raises(K8sRdmaError, match=r"k8s_rdma_resources: the group 'ib-h100' is not in the inventory"):
        node_expectations(GROUPS, {"ib-h100": "rdma_h100"}, lambda h: None)
    with pytest.raises(K8sRdmaError, match=r"resource name 'rdma/rdma_v100' is not a valid name"):
        node_expectations(GROUPS, {"ib-v100": "rdma/rdma_v100"}, lambda h: None)


# --------------------------------------------------------------------------- stale resources


def test_stale_patch_matches_the_write_up_and_removes_allocatable_too():
    seed = json.loads(SEED_PATCH.read_text())
    nodes = [
        _node("xxx-v100-xx", status={"capacity": {"nvidia.com/hostdev": "2", "cpu": "64"}, "allocatable": {"nvidia.com/hostdev": "2"}}),
        _node("xxx-a100-xx", status={"capacity": {"nvidia.com/hostdev": "4"}, "allocatable": {}}),
        _node("cpu-node", status={"capacity": {"cpu": "64"}}),
    ]
    patches = stale_resource_patches(nodes, ["nvidia.com/hostdev"])
    assert patches == [
        {"node": "xxx-a100-xx", "resources": ["nvidia.com/hostdev"], "fields": ["capacity"], "patch": seed},
        {"node": "xxx-v100-xx", "resources": ["nvidia.com/hostdev"], "fields": ["capacity", "allocatable"],
         "patch": seed + [{"op": "remove", "path": "/status/allocatable/nvidia.com~1hostdev"}]},
    ]
    assert stale_resource_patches(nodes, ["nvidia.com/hostdev"], ["cpu-node", "xxx-a100-xx"]) == patches[:1]
    assert stale_resource_patches(nodes, []) == []


def test_pointer_escaping_order():
    assert escape_pointer_token("example.com/a~b") == "example.com~1a~0b"
    assert escape_pointer_token("a~1b") == "a~01b"


@pytest.mark.parametrize("name, message", [
    ("memory", "'memory' is not an extended resource (DOMAIN/NAME such as nvidia.com/hostdev)"),
    ("hugepages-2Mi", "'hugepages-2Mi' is not an extended resource"),
    ("kubernetes.io/batch-cpu", "'kubernetes.io/batch-cpu' is in the kubernetes.io domain"),
    ("node.kubernetes.io/x", "'node.kubernetes.io/x' is in the kubernetes.io domain"),
    ("nvidia.com/", "'nvidia.com/' is not a valid extended resource name"),
    ("Nvidia.com/hostdev", "'Nvidia.com/hostdev' is not a valid extended resource name"),
])
def test_only_extended_resources_are_removed(name, message):
    with pytest.raises(K8sRdmaError) as err:
        stale_resource_patches([], [name])
    assert str(err.value).startswith("k8s_rdma_remove_stale_resources: " + message)


# --------------------------------------------------------------------------- device plugin config


def _v100(guid, second_down=False):
    port2 = {"rate": "100 Gb/sec (4X EDR)", "lid": "0x12", "port_guid": guid + "1"}
    if second_down:
        port2.update({"state": "1: DOWN", "phys_state": "2: Polling", "rate": "10 Gb/sec (4X)"})
    return {
        "devices": {
            "mlx5_0": {"bdf": "0000:5e:00.0", "hca_type": "MT4119", "node_guid": guid + "0",
                       "ports": {1: {"rate": "100 Gb/sec (4X EDR)", "lid": "0x11", "port_guid": guid + "0"}}},
            "mlx5_1": {"bdf": "0000:5e:00.1", "hca_type": "MT4119", "node_guid": guid + "1", "ports": {1: port2}},
        },
        "netdevs": [
            {"name": "ibp94s0f0", "bdf": "0000:5e:00.0", "ipoib_of": "mlx5_0/1"},
            {"name": "ibp94s0f1", "bdf": "0000:5e:00.1", "ipoib_of": "mlx5_1/1", "dev_id": "0x1"},
        ],
    }


# An A100 node as in the write-up: one cabled HDR HCA (ibp75s0) and a RoCE bond whose RDMA device
# mlx5_bond_0 names bond0 as its netdev; its PFs ens12f0np0/ens12f1np1 are bond0's slaves.
A100 = {
    "devices": {
        "mlx5_0": {"bdf": "0000:0c:00.0", "node_guid": "b859:9f03:00d4:0a20",
                   "ports": {1: {"state": "1: DOWN", "phys_state": "3: Disabled", "lid": "0xffff",
                                 "port_guid": "b859:9f03:00d4:0a20"}}},
        "mlx5_1": {"bdf": "0000:4b:00.0", "node_guid": "b859:9f03:00d4:0b70",
                   "ports": {1: {"rate": "200 Gb/sec (4X HDR)", "port_guid": "b859:9f03:00d4:0b70"}}},
        "mlx5_bond_0": {"bdf": "0000:b1:00.0", "hca_type": "MT4117", "node_guid": "0c42:a103:0065:3a9e",
                        "ports": {1: {"rate": "25 Gb/sec (1X EDR)", "link_layer": "Ethernet", "lid": "0x0",
                                      "port_guid": "0e42:a1ff:fe65:3a9e", "ndevs": ["bond0"]}}},
    },
    "netdevs": [
        {"name": "bond0", "address": "0c:42:a1:65:3a:9e", "mtu": 9000},
        {"name": "ens12f0np0", "bdf": "0000:b1:00.0", "master": "bond0"},
        {"name": "ens12f1np1", "bdf": "0000:b1:00.1", "master": "bond0", "dev_port": 1},
        {"name": "ibp12s0", "bdf": "0000:0c:00.0", "ipoib_of": "mlx5_0/1"},
        {"name": "ibp75s0", "bdf": "0000:4b:00.0", "ipoib_of": "mlx5_1/1"},
    ],
}

# A RoCE node without a bond: two ConnectX-6 Dx PFs in Ethernet mode, both up.
ROCE = {
    "devices": {
        "mlx5_2": {"bdf": "0000:31:00.0", "hca_type": "MT4125", "node_guid": "1c34:da03:0078:1e20",
                   "ports": {1: {"link_layer": "Ethernet", "rate": "100 Gb/sec (4X EDR)", "lid": "0x0",
                                 "port_guid": "1e34:daff:fe78:1e20", "ndevs": ["ens3f0np0"]}}},
    },
    "netdevs": [{"name": "ens3f0np0", "bdf": "0000:31:00.0", "address": "1c:34:da:78:1e:20"}],
}


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    """ansible_facts.rdma of simulated hosts, read from their sysfs trees by the real gatherer."""
    root = tmp_path_factory.mktemp("k8s-rdma-sysfs")
    hosts = {"v100-node-01": _v100("9803:9b03:00a1:5c2"), "v100-node-02": _v100("9803:9b03:00a1:6e4", True),
             "a100-node-01": A100, "roce-node-01": ROCE}
    out = {}
    for host, spec in hosts.items():
        build_host(str(root / host), spec)
        out[host] = gather(str(root / host))[0]
    unpack((FIXTURES / "sysfs" / "prometheus-procfs.sysfs").read_bytes(), str(root / "procfs"))
    out["procfs-node"] = gather(str(root / "procfs"))[0]
    return out


def test_bond_masters_are_never_ifnames(facts):
    assert bond_masters(facts["a100-node-01"]) == {"bond0"}
    result = device_plugin_config({"ib-a100": [("a100-node-01", facts["a100-node-01"])]}, {"ib-a100": "rdma_a100"})
    assert result["configList"] == [{"resourceName": "rdma_a100", "rdmaHcaMax": 63,
                                     "selectors": {"ifNames": ["ibp75s0"], "linkTypes": ["infiniband"]}}]
    assert result["groups"]["ib-a100"]["excluded"] == [
        {"host": "a100-node-01", "port": "mlx5_bond_0/1", "netdev": "bond0", "reason": "bond master"}]


def test_a_master_named_by_another_netdev_is_a_bond_master_even_with_a_pci_device():
    facts = {"ports": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "link_layer": "Ethernet", "netdevs": ["team0", "eth2"]}],
             "netdevs": {"team0": {"pci_address": "0000:01:00.0", "master": None},
                         "eth2": {"pci_address": "0000:01:00.1", "master": "team0"}}}
    result = device_plugin_config({"g": [("h", facts)]}, {"g": "rdma_g"})
    assert result["configList"][0]["selectors"] == {"ifNames": ["eth2"], "linkTypes": ["ether"]}


def test_config_list_is_the_union_of_active_ports_per_group(facts):
    groups = {
        "ib-v100": [("v100-node-01", facts["v100-node-01"]), ("v100-node-02", facts["v100-node-02"])],
        "roce": [("roce-node-01", facts["roce-node-01"])],
    }
    result = device_plugin_config(groups, {"ib-v100": "rdma_v100", "roce": {"resourceName": "rdma_roce", "rdmaHcaMax": 16}})
    assert result["configList"] == [
        {"resourceName": "rdma_v100", "rdmaHcaMax": 63,
         "selectors": {"ifNames": ["ibp94s0f0", "ibp94s0f1"], "linkTypes": ["infiniband"]}},
        {"resourceName": "rdma_roce", "rdmaHcaMax": 16, "selectors": {"ifNames": ["ens3f0np0"], "linkTypes": ["ether"]}},
    ]
    assert json.loads(result["config"]) == {"configList": result["configList"]}
    only_down = device_plugin_config({"ib-v100": [("v100-node-02", facts["v100-node-02"])]}, {"ib-v100": "rdma_v100"})
    assert only_down["configList"][0]["selectors"]["ifNames"] == ["ibp94s0f0"], "a DOWN port's netdev is left out"


def test_groups_without_usable_facts_are_problems(facts):
    groups = {"procfs": [("procfs-node", facts["procfs-node"])], "new": [("gpu-9", None)],
              "ib-v100": [("v100-node-01", facts["v100-node-01"]), ("v100-node-03", None)]}
    resources = {"procfs": "rdma_p", "new": "rdma_n", "ib-v100": "rdma_v100"}
    result = device_plugin_config(groups, resources, strict=False)
    assert [e["resourceName"] for e in result["configList"]] == ["rdma_v100"]
    assert result["problems"] == [
        {"group": "procfs", "message": "group procfs: no ACTIVE RDMA port with a usable netdev on procfs-node, "
                                       "so rdma_p would select nothing"},
        {"group": "new", "message": "group new: none of its hosts (gpu-9) has ansible_facts.rdma; gather them first "
                                    "with rdma.node.ib_inventory (in the same run or into a fact cache)"},
    ]
    assert result["groups"]["ib-v100"]["hosts_without_facts"] == ["v100-node-03"]
    with pytest.raises(K8sRdmaError, match="^group procfs: no ACTIVE RDMA port"):
        device_plugin_config(groups, resources)


def test_merge_into_the_write_ups_config_keeps_what_it_does_not_manage():
    seed = yaml.safe_load(SEED_POLICY.read_text())["spec"]["rdmaSharedDevicePlugin"]["config"]
    current = json.loads(seed)
    current["periodicUpdateInterval"] = 300
    current["configList"][1]["selectors"]["vendors"] = ["15b3"]
    current["configList"].append({"resourceName": "rdma_h100", "rdmaHcaMax": 63, "selectors": {"ifNames": ["ib0"]}})
    wanted = [{"resourceName": "rdma_a100", "rdmaHcaMax": 63, "selectors": {"ifNames": ["ibp75s0"], "linkTypes": ["infiniband"]}},
              {"resourceName": "rdma_x", "rdmaHcaMax": 8, "selectors": {"ifNames": ["ib9"], "linkTypes": ["infiniband"]}}]
    merged = merge_device_plugin_config(json.dumps(current), wanted)
    assert merged["changed"]
    result = json.loads(merged["config"])
    assert result["periodicUpdateInterval"] == 300
    assert [e["resourceName"] for e in result["configList"]] == ["rdma_v100", "rdma_a100", "rdma_h100", "rdma_x"]
    assert result["configList"][0] == current["configList"][0]
    assert result["configList"][1]["selectors"] == {"ifNames": ["ibp75s0"], "linkTypes": ["infiniband"], "vendors": ["15b3"]}
    assert [d["summary"] for d in merged["differences"]] == [
        "rdma_a100: selectors.ifNames [ibxxxx0, ibxxxxx0] -> [ibp75s0]", "rdma_x: not in the config yet"]
    again = merge_device_plugin_config(merged["config"], wanted)
    assert not again["changed"] and again["config"] == merged["config"] and again["differences"] == []


def test_reformatting_alone_is_not_a_change():
    seed = yaml.safe_load(SEED_POLICY.read_text())["spec"]["rdmaSharedDevicePlugin"]["config"]
    wanted = json.loads(seed)["configList"]
    result = merge_device_plugin_config(seed, wanted)
    assert result == {"config": seed, "changed": False, "differences": []}


@pytest.mark.parametrize("current, message", [
    ('{"configList": [', "spec.rdmaSharedDevicePlugin.config is not valid JSON (Expecting value: line 1 column 17 (char 16)); "
                         "fix or clear it before the role manages it"),
    ('["rdma_v100"]', "spec.rdmaSharedDevicePlugin.config is not an object with a configList list"),
    ('{"configList": {}}', "spec.rdmaSharedDevicePlugin.config is not an object with a configList list"),
])
def test_a_broken_current_config_is_named(current, message):
    with pytest.raises(K8sRdmaError) as err:
        merge_device_plugin_config(current, [])
    assert str(err.value) == message
