"""The k8s_rdma role with the real kubernetes.core modules against a FAKE Kubernetes API server.

Real: ansible-playbook, the role, rdma.node.ib_facts reading simulated sysfs trees, the fact cache,
and the ``kubernetes.core`` modules with the ``kubernetes`` Python client underneath them, speaking
HTTP to an API server.

Fake, and why: there is no Kubernetes API server to be had on these machines. So the API server is
``tests/fake_k8s_api`` (FakeKubeApi), a small HTTP server on 127.0.0.1 that implements only what
the role uses, the way the real one answers, and records every request. The NVIDIA Network Operator
is faked too, by ``FakeOperator`` below: a thread that, once the policy tolerates a stuck node's
taints, sets its ``mofed.wait`` label back to ``false`` and lets it advertise its RDMA resource.

The runs build on each other, in this order: a check-mode run that also gathers the facts with
ib_facts in the same run (and leaves them in a jsonfile fact cache), an applying run that reads the
facts from that cache and waits for the fake operator, and a second applying run. Two more runs use
their own fake servers: an operator version whose CRD has no spec.tolerations, and bad input.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time

import pytest
import yaml

import harness
from fake_k8s_api.server import FakeKubeApi
from sysfs_tree import build_host
from testpaths import FIXTURES

K8S_FIXTURES = FIXTURES / "k8s"
MOFED = "network.nvidia.com/operator.mofed.wait"
POLICY = "/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy"

# The write-up's cluster, as simulated sysfs trees: V100 nodes with a dual-port 100 Gb/s EDR HCA
# (one mlx5 device per PCI function), A100 nodes with two 200 Gb/s HDR HCAs of which one is cabled,
# plus mlx5_bond_0, RoCE over bond0. v100-node-02's second port is down; on a100-node-02 the other
# HCA is the cabled one, so each group's ifNames is a union over its hosts.


def _v100(guid, second_down=False):
    port2 = {"rate": "100 Gb/sec (4X EDR)", "lid": "0x12", "sm_lid": "0x1", "port_guid": guid + "1"}
    if second_down:
        port2.update({"state": "1: DOWN", "phys_state": "2: Polling", "rate": "10 Gb/sec (4X)", "lid": "0x0"})
    return {
        "devices": {
            "mlx5_0": {"bdf": "0000:5e:00.0", "hca_type": "MT4119", "node_guid": guid + "0",
                       "ports": {1: {"rate": "100 Gb/sec (4X EDR)", "lid": "0x11", "sm_lid": "0x1", "port_guid": guid + "0"}}},
            "mlx5_1": {"bdf": "0000:5e:00.1", "hca_type": "MT4119", "node_guid": guid + "1", "ports": {1: port2}},
        },
        "netdevs": [
            {"name": "ibp94s0f0", "bdf": "0000:5e:00.0", "ipoib_of": "mlx5_0/1", "mtu": 2044},
            {"name": "ibp94s0f1", "bdf": "0000:5e:00.1", "ipoib_of": "mlx5_1/1", "mtu": 2044, "dev_id": "0x1"},
        ],
    }


def _a100(guid, cabled="mlx5_1"):
    def port(name, lid):
        if name != cabled:
            return {"state": "1: DOWN", "phys_state": "3: Disabled", "rate": "10 Gb/sec (4X)", "lid": "0xffff",
                    "sm_lid": "0x0", "port_guid": guid + lid}
        return {"rate": "200 Gb/sec (4X HDR)", "lid": "0x3", "sm_lid": "0x1", "port_guid": guid + lid}

    return {
        "devices": {
            "mlx5_0": {"bdf": "0000:0c:00.0", "hca_type": "MT4123", "node_guid": guid + "a", "ports": {1: port("mlx5_0", "a")}},
            "mlx5_1": {"bdf": "0000:4b:00.0", "hca_type": "MT4123", "node_guid": guid + "b", "ports": {1: port("mlx5_1", "b")}},
            "mlx5_bond_0": {"bdf": "0000:b1:00.0", "hca_type": "MT4117", "node_guid": "0c42:a103:0065:3a9e",
                            "ports": {1: {"rate": "25 Gb/sec (1X EDR)", "link_layer": "Ethernet", "lid": "0x0", "sm_lid": "0x0",
                                          "port_guid": "0e42:a1ff:fe65:3a9e", "ndevs": ["bond0"]}}},
        },
        "netdevs": [
            {"name": "bond0", "address": "0c:42:a1:65:3a:9e", "mtu": 9000},
            {"name": "ens12f0np0", "bdf": "0000:b1:00.0", "address": "0c:42:a1:65:3a:9e", "mtu": 9000, "master": "bond0"},
            {"name": "ens12f1np1", "bdf": "0000:b1:00.1", "address": "0c:42:a1:65:3a:9e", "mtu": 9000, "master": "bond0",
             "dev_port": 1},
            {"name": "ibp12s0", "bdf": "0000:0c:00.0", "ipoib_of": "mlx5_0/1", "mtu": 2044},
            {"name": "ibp75s0", "bdf": "0000:4b:00.0", "ipoib_of": "mlx5_1/1", "mtu": 2044},
        ],
    }


HARDWARE = {
    "v100-node-01": _v100("9803:9b03:00a1:5c2"),
    "v100-node-02": _v100("9803:9b03:00a1:6e4", second_down=True),
    "a100-node-01": _a100("b859:9f03:00d4:0a2"),
    "a100-node-02": _a100("b859:9f03:00d4:0c2", cabled="mlx5_0"),
}
GROUPS = {"ib-v100": ["v100-node-01", "v100-node-02"], "ib-a100": ["a100-node-01", "a100-node-02"]}
NODE_NAMES = {"a100-node-02": "gpu-a100-02"}  # k8s_node_name: the node is named differently

CUSTOM_TOLERATION = {"key": "crater.raids.io/account", "operator": "Exists", "effect": "NoSchedule"}
UNSCHEDULABLE_TOLERATION = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
EXISTING_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

ROLE_VARS = {
    "k8s_rdma_tolerations": [CUSTOM_TOLERATION],
    "k8s_rdma_resources": {"ib-v100": "rdma_v100", "ib-a100": "rdma_a100"},
    "k8s_rdma_expected_resource_count": 63,
    "k8s_rdma_apply_device_plugin_config": True,
    "k8s_rdma_remove_stale_resources": ["nvidia.com/hostdev"],
    "k8s_rdma_fail_on_findings": False,
}


def node(name, mofed="false", resources=None, stale=None, taints=None, unschedulable=False):
    """A Node as the API server returns it (the parts the role reads)."""
    capacity = {"cpu": "64", "memory": "527957044Ki", "pods": "110"}
    allocatable = dict(capacity)
    for key, (cap, alloc) in dict(resources or {}, **(stale or {})).items():
        if cap is not None:
            capacity[key] = cap
        if alloc is not None:
            allocatable[key] = alloc
    spec = {"podCIDR": "10.244.1.0/24"}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, MOFED: mofed,
                                              "feature.node.kubernetes.io/pci-15b3.present": "true"}},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }


def cluster_nodes():
    """After a kernel upgrade: one V100 node cordoned, one A100 node with the cluster's own taint."""
    return [
        node("v100-node-01", resources={"rdma/rdma_v100": ("63", "63")}, stale={"nvidia.com/hostdev": ("2", "2")}),
        node("v100-node-02", mofed="true", unschedulable=True,
             taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2025-03-02T08:00:00Z"}]),
        node("a100-node-01", mofed="true",
             taints=[{"key": "crater.raids.io/account", "value": "team-a", "effect": "NoSchedule"}]),
        node("gpu-a100-02", resources={"rdma/rdma_a100": ("63", "63")},
             taints=[{"key": "example.com/maintenance-soon", "effect": "PreferNoSchedule"}]),
        node("cpu-node-01"),
    ]


def seed_policy(with_existing_toleration=True):
    """The write-up's NicClusterPolicy (copied byte-for-byte), plus one toleration it already has."""
    policy = yaml.safe_load((K8S_FIXTURES / "seed_nic_cluster_policy_rdma_shared_dp.yaml").read_text())
    if with_existing_toleration:
        policy["spec"]["tolerations"] = [dict(EXISTING_TOLERATION)]
    return policy


class FakeOperator:
    """FAKE NVIDIA Network Operator: once the policy tolerates a stuck node's taints, the driver pod
    "runs" for ``delay`` seconds, then it sets mofed.wait=false and lets the device plugin advertise
    the node's resource. So that the test sees the role really wait, the delay starts no earlier
    than the role's first look at the label."""

    def __init__(self, api, resources, delay=2.0):
        self.api = api
        self.resources = resources  # node -> resource name
        self.delay = delay
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-network-operator", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)

    def _tolerated(self, name):
        keys = {t.get("key") for t in self.api.policy("nic-cluster-policy")["spec"].get("tolerations") or []}
        return all(t["key"] in keys for t in self.api.node(name)["spec"].get("taints") or [] if t["effect"] == "NoSchedule")

    def _run(self):
        pending = dict(self.resources)
        seen = {}
        while pending and not self._stop.wait(0.1):
            polled = any(r["query"].get("labelSelector") == [MOFED + "=true"] for r in self.api.recorded("GET", "/api/v1/nodes"))
            for name in list(pending):
                if polled and self._tolerated(name):
                    seen.setdefault(name, time.monotonic())
                    if time.monotonic() - seen[name] >= self.delay:
                        current = self.api.node(name)
                        current["metadata"]["labels"][MOFED] = "false"
                        for field in ("capacity", "allocatable"):
                            current["status"][field][pending[name]] = "63"
                        self.api.put_node(current)
                        del pending[name]


# ------------------------------------------------------------------------------------ running


def run_playbook(ctx, playbook, extra_vars, check=False, inventory=None):
    """Run ansible-playbook; return the run, its stats, localhost's result variables, the requests sent."""
    ctx["api"].clear_log()
    run = harness.run_playbook(
        str(playbook), inventory=inventory or ctx["inventory"], check=check, fact_cache=ctx["cache"], cwd=str(ctx["tmp"]),
        extra_vars=dict({"k8s_rdma_kubeconfig": str(ctx["kubeconfig"])}, **extra_vars), timeout=180,
        env={"ANSIBLE_PIPELINING": "1", "ANSIBLE_LOCAL_TEMP": str(ctx["tmp"] / "ansible-tmp"),
             # kubernetes.core keeps its discovery cache in the temp directory: keep it in ours.
             "TMPDIR": str(ctx["tmp"])})
    facts = {}
    for task in run.tasks:
        result = task["hosts"].get("localhost") or {}
        facts.update(result.get("ansible_facts") or {})
    return {"run": run, "stats": run.stats, "output": run.data, "facts": facts,
            "requests": ctx["api"].recorded(), "global_stats": run.custom_stats}


def failed_messages(run):
    """Messages of the tasks that failed the run (not those whose failure the role ignores and reports)."""
    out = []
    for play in run["output"]["plays"]:
        for task in play["tasks"]:
            for result in task["hosts"].values():
                if result.get("failed") and not task["task"].get("ignore_errors") and "attempts" not in result:
                    out.append(result.get("msg"))
    return out


def findings(run, check=None, severity=None):
    return [f for f in run["facts"]["k8s_rdma_findings"]
            if (check is None or f["check"] == check) and (severity is None or f["severity"] == severity)]


def patches(run, path=None, dry_run=None):
    out = []
    for r in run["requests"]:
        if r["method"] != "PATCH" or (path is not None and r["path"] != path):
            continue
        is_dry = r["query"].get("dryRun") == ["All"]
        if dry_run is None or dry_run == is_dry:
            out.append(r)
    return out


def write_inventory(path, hosts_with_trees=None):
    hosts = {}
    for group, members in GROUPS.items():
        hosts[group] = {"hosts": {}}
        for host in members:
            host_vars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
            if host in NODE_NAMES:
                host_vars["k8s_node_name"] = NODE_NAMES[host]
            if hosts_with_trees:
                host_vars["rdma_sysfs_root"] = str(hosts_with_trees[host])
            hosts[group]["hosts"][host] = host_vars
    path.write_text(json.dumps({"all": {"children": hosts}}))
    return path


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """The FAKE API server with the write-up's cluster, sysfs trees, an inventory and a fact cache."""
    tmp = tmp_path_factory.mktemp("k8s-rdma")
    trees = {}
    for host, spec in HARDWARE.items():
        trees[host] = tmp / "sysfs" / host
        build_host(str(trees[host]), spec)
    api = FakeKubeApi(nodes=cluster_nodes(), policies=[seed_policy()]).start()
    try:
        kubeconfig = tmp / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        gather = tmp / "gather_then_k8s_rdma.yml"
        gather.write_text(
            "- name: Gather the RDMA facts of the GPU nodes (simulated sysfs trees)\n"
            "  hosts: ib-v100:ib-a100\n  gather_facts: false\n  tasks:\n"
            "    - name: Read sysfs\n      rdma.node.ib_facts:\n        sysfs_root: \"{{ rdma_sysfs_root }}\"\n"
            "- name: The cluster side\n  ansible.builtin.import_playbook: rdma.node.k8s_rdma\n"
        )
        yield {
            "tmp": tmp, "api": api, "kubeconfig": kubeconfig,
            "cache": tmp / "fact-cache", "gather_playbook": gather,
            "inventory": write_inventory(tmp / "inventory.json", trees),
        }
    finally:
        api.stop()
        shutil.rmtree(str(tmp), ignore_errors=True)


@pytest.fixture(scope="module")
def check_run(ctx):
    """--check, with ib_facts gathering in the same run (its facts land in the fact cache)."""
    before = {"policy": ctx["api"].policy("nic-cluster-policy"), "nodes": {n: ctx["api"].node(n) for n in ctx["api"].nodes}}
    run = run_playbook(ctx, ctx["gather_playbook"], ROLE_VARS, check=True)
    # The fact cache as this run left it, for a later report job (the applying runs rewrite the cache).
    run["cache"] = ctx["tmp"] / "fact-cache-after-check"
    shutil.copytree(str(ctx["cache"]), str(run["cache"]))
    run["before"] = before
    run["after"] = {"policy": ctx["api"].policy("nic-cluster-policy"), "nodes": {n: ctx["api"].node(n) for n in ctx["api"].nodes}}
    return run


@pytest.fixture(scope="module")
def apply_run(ctx, check_run):
    """Applying, facts from the fact cache only, waiting for the fake operator to clear mofed.wait."""
    assert check_run["run"].rc == 0
    operator = FakeOperator(ctx["api"], {"v100-node-02": "rdma/rdma_v100", "a100-node-01": "rdma/rdma_a100"})
    with operator:
        run = run_playbook(ctx, "rdma.node.k8s_rdma", dict(ROLE_VARS, k8s_rdma_wait_mofed=True,
                                                           k8s_rdma_mofed_wait_interval=1, k8s_rdma_mofed_wait_timeout=30))
    run["policy"] = ctx["api"].policy("nic-cluster-policy")
    run["nodes"] = {n: ctx["api"].node(n) for n in ctx["api"].nodes}
    return run


@pytest.fixture(scope="module")
def second_run(ctx, apply_run):
    assert apply_run["run"].rc == 0
    return run_playbook(ctx, "rdma.node.k8s_rdma", ROLE_VARS)


# ------------------------------------------------------------------------------------ check mode


def test_check_mode_sends_only_reads_and_dry_runs(check_run):
    assert check_run["run"].rc == 0, failed_messages(check_run)
    assert not [r for r in check_run["requests"] if r["unknown"]], "requests the fake does not serve"
    writes = [r for r in check_run["requests"] if r["method"] != "GET"]
    assert writes, "the dry runs are sent in check mode too"
    assert all(r["method"] == "PATCH" and r["query"] == {"dryRun": ["All"]} for r in writes)
    assert check_run["after"] == check_run["before"], "the fake cluster changed in check mode"
    changed = {t["task"]["name"].split(" : ", 1)[1] for p in check_run["output"]["plays"] for t in p["tasks"]
               if t["hosts"].get("localhost", {}).get("changed")}
    assert changed == {"Dry-run the NicClusterPolicy patch on the server (dryRun=All)",
                       "Dry-run the removals on the server (dryRun=All)"}, "check mode shows what would change"


def test_check_mode_reports_what_it_would_do(check_run):
    checks = sorted((f["check"], f["subject"]) for f in check_run["facts"]["k8s_rdma_findings"])
    assert checks == sorted([
        ("tolerations_planned", "nic-cluster-policy"),
        ("device_plugin_config_planned", "nic-cluster-policy"),
        ("mofed_wait_unblocked", "a100-node-01"),
        ("mofed_wait_unblocked", "v100-node-02"),
        ("resource_missing", "a100-node-01"),
        ("resource_missing", "v100-node-02"),
        ("stale_resource_planned", "v100-node-01"),
    ])
    (planned,) = findings(check_run, "tolerations_planned")
    assert planned["message"].startswith(
        "Check mode: would add node.kubernetes.io/unschedulable:NoSchedule (Exists), "
        "crater.raids.io/account:NoSchedule (Exists) to spec.tolerations of NicClusterPolicy nic-cluster-policy")
    (cordoned,) = findings(check_run, "mofed_wait_unblocked")[1:]
    assert cordoned["message"].startswith(
        'network.nvidia.com/operator.mofed.wait is "true" on node v100-node-02: node is cordoned '
        "(node.kubernetes.io/unschedulable) and NicClusterPolicy nic-cluster-policy does not tolerate it; "
        "the tolerations this run would add cover it")
    (missing,) = [f for f in findings(check_run, "resource_missing") if f["subject"] == "a100-node-01"]
    assert missing["message"] == ("Node a100-node-01 (group ib-a100) does not advertise rdma/rdma_a100 in capacity and "
                                  "allocatable (capacity: absent, allocatable: absent) while "
                                  'network.nvidia.com/operator.mofed.wait is "true" (the device plugin waits for the MOFED driver).')
    status = check_run["facts"]["k8s_rdma_status"]
    assert status["critical"] == 2 and not status["ok"] and status["policy_patched"] is False


def test_check_mode_publishes_one_shape_keyed_by_the_cluster(check_run):
    published = check_run["global_stats"]["rdma_k8s_rdma"]
    assert list(published) == ["cluster/kubernetes"]
    assert published["cluster/kubernetes"]["findings"] == check_run["facts"]["k8s_rdma_findings"]
    status = published["cluster/kubernetes"]["status"]
    assert status == check_run["facts"]["k8s_rdma_status"]
    assert status["subject"] == "cluster/kubernetes" and status["mofed_wait_nodes"] == ["a100-node-01", "v100-node-02"]
    assert status["summary"].startswith("k8s_rdma on cluster/kubernetes: 2 critical, 2 warning, 3 info: ")


def test_a_report_job_shows_the_cluster_and_its_nodes_on_their_hosts(ctx, check_run):
    """A later fleet report job, reading the fact cache the check-mode run left, has a clusters section with
    the k8s findings, and a finding about a node shows on the inventory host of that name."""
    report_dir = ctx["tmp"] / "report"
    run = run_playbook(dict(ctx, cache=check_run["cache"]), "rdma.node.fleet_report", {"fleet_report_dir": str(report_dir)})
    assert run["run"].rc == 0, failed_messages(run)
    report = json.loads((report_dir / "fleet-report.json").read_text())
    (cluster,) = report["clusters"]
    assert cluster["subject"] == "cluster/kubernetes"
    assert sorted((f["check"], f["subject"]) for f in cluster["findings"]) == sorted(
        (f["check"], f["subject"]) for f in check_run["facts"]["k8s_rdma_findings"])
    assert (cluster["critical"], cluster["warning"], cluster["info"]) == (2, 2, 3)
    hosts = {h["name"]: h for h in report["hosts"]}
    assert sorted(hosts) == ["a100-node-01", "a100-node-02", "v100-node-01", "v100-node-02"]
    on_host = {name: sorted((f["role"], f["check"], f["severity"]) for f in h["findings"]) for name, h in hosts.items()}
    assert on_host == {
        "v100-node-02": sorted([("k8s_rdma", "resource_missing", "critical"), ("k8s_rdma", "mofed_wait_unblocked", "warning")]),
        "a100-node-01": sorted([("k8s_rdma", "resource_missing", "critical"), ("k8s_rdma", "mofed_wait_unblocked", "warning")]),
        "v100-node-01": [("k8s_rdma", "stale_resource_planned", "info")],
        "a100-node-02": [],  # its node is gpu-a100-02, which has no finding
    }
    assert (hosts["v100-node-02"]["status"], hosts["a100-node-02"]["status"]) == ("critical", "no_data")
    assert report["totals"]["cluster_findings"] == 7


def test_facts_of_the_same_run_feed_the_device_plugin_config(check_run):
    config = check_run["facts"]["k8s_rdma_status"]["device_plugin_config"]
    assert config == [
        {"resourceName": "rdma_v100", "rdmaHcaMax": 63,
         "selectors": {"ifNames": ["ibp94s0f0", "ibp94s0f1"], "linkTypes": ["infiniband"]}},
        {"resourceName": "rdma_a100", "rdmaHcaMax": 63,
         "selectors": {"ifNames": ["ibp12s0", "ibp75s0"], "linkTypes": ["infiniband"]}},
    ]


# ------------------------------------------------------------------------------------ apply


def test_apply_dry_runs_each_patch_before_sending_it(apply_run):
    assert apply_run["run"].rc == 0, failed_messages(apply_run)
    assert not [r for r in apply_run["requests"] if r["unknown"]]
    sent = [(r["path"], r["query"].get("dryRun") == ["All"]) for r in apply_run["requests"] if r["method"] == "PATCH"]
    status_paths = ["/api/v1/nodes/v100-node-01/status"]
    assert sent == [(POLICY, True), (POLICY, False)] + [(p, True) for p in status_paths] + [(p, False) for p in status_paths]
    for path in [POLICY] + status_paths:
        dry, real = patches(apply_run, path)
        assert dry["body"] == real["body"], "the patch sent is the one that was dry-run"
    changed = {t["task"]["name"].split(" : ", 1)[1] for p in apply_run["output"]["plays"] for t in p["tasks"]
               if t["hosts"].get("localhost", {}).get("changed")}
    assert changed == {"Patch the NicClusterPolicy", "Remove the stale extended resources"}


def test_policy_patch_is_a_merge_keeping_existing_tolerations(apply_run, check_run):
    (real,) = patches(apply_run, POLICY, dry_run=False)
    assert real["content_type"] == "application/merge-patch+json"
    body = real["body"]
    assert body["metadata"] == {"name": "nic-cluster-policy",
                                "resourceVersion": check_run["before"]["policy"]["metadata"]["resourceVersion"]}
    assert body["spec"]["tolerations"] == [EXISTING_TOLERATION, UNSCHEDULABLE_TOLERATION, CUSTOM_TOLERATION]
    assert sorted(body["spec"]) == ["rdmaSharedDevicePlugin", "tolerations"]
    assert list(body["spec"]["rdmaSharedDevicePlugin"]) == ["config"]
    stored = apply_run["policy"]
    assert stored["spec"]["tolerations"] == [EXISTING_TOLERATION, UNSCHEDULABLE_TOLERATION, CUSTOM_TOLERATION]
    assert stored["spec"]["ofedDriver"] == check_run["before"]["policy"]["spec"]["ofedDriver"]
    assert json.loads(stored["spec"]["rdmaSharedDevicePlugin"]["config"]) == {"configList": [
        {"resourceName": "rdma_v100", "rdmaHcaMax": 63,
         "selectors": {"ifNames": ["ibp94s0f0", "ibp94s0f1"], "linkTypes": ["infiniband"]}},
        {"resourceName": "rdma_a100", "rdmaHcaMax": 63,
         "selectors": {"ifNames": ["ibp12s0", "ibp75s0"], "linkTypes": ["infiniband"]}},
    ]}


def test_stale_resources_removed_with_the_exact_json_patch(apply_run):
    seed_op = json.loads((K8S_FIXTURES / "seed_remove_stale_hostdev_capacity_patch.json").read_text())
    # The write-up's patch removes the resource from capacity only; allocatable must go too.
    expected = {"v100-node-01": seed_op + [{"op": "remove", "path": "/status/allocatable/nvidia.com~1hostdev"}]}
    for name, ops in expected.items():
        (real,) = patches(apply_run, "/api/v1/nodes/%s/status" % name, dry_run=False)
        assert real["content_type"] == "application/json-patch+json"
        assert real["body"] == ops
        status = apply_run["nodes"][name]["status"]
        assert "nvidia.com/hostdev" not in status["capacity"] and "nvidia.com/hostdev" not in status["allocatable"]
    for name in ("v100-node-02", "a100-node-01", "gpu-a100-02"):
        assert not patches(apply_run, "/api/v1/nodes/%s/status" % name), "no patch for a node without the resource"
    assert not [r for r in apply_run["requests"] if r["path"].startswith("/api/v1/nodes/") and not r["path"].endswith("/status")]


def test_apply_waits_for_mofed_and_reports_the_recovery(apply_run):
    polls = [r for r in apply_run["requests"]
             if r["path"] == "/api/v1/nodes" and r["query"].get("labelSelector") == [MOFED + "=true"]]
    assert len(polls) >= 2, "the role polled until the fake operator cleared the label"
    checks = sorted((f["check"], f["subject"], f["severity"]) for f in apply_run["facts"]["k8s_rdma_findings"])
    assert checks == sorted([
        ("tolerations_added", "nic-cluster-policy", "info"),
        ("device_plugin_config_updated", "nic-cluster-policy", "info"),
        ("mofed_wait_cleared", "a100-node-01", "info"),
        ("mofed_wait_cleared", "v100-node-02", "info"),
        ("stale_resource_removed", "v100-node-01", "info"),
    ])
    status = apply_run["facts"]["k8s_rdma_status"]
    assert status["ok"] and status["policy_patched"] and status["mofed_wait_nodes"] == []
    assert status["nodes_without_resources"] == []
    assert apply_run["global_stats"]["rdma_k8s_rdma"]["cluster/kubernetes"]["status"]["ok"] is True


def test_second_run_sends_no_patch(second_run):
    assert second_run["run"].rc == 0, failed_messages(second_run)
    assert [r for r in second_run["requests"] if r["method"] != "GET"] == []
    assert second_run["facts"]["k8s_rdma_findings"] == []
    assert second_run["stats"]["localhost"]["changed"] == 0


# ------------------------------------------------------------------------------------ other clusters


def test_operator_without_spec_tolerations_and_mofed_timeout(ctx):
    """An older operator: its CRD prunes spec.tolerations, so the dry run shows it would be lost."""
    cluster = [n for n in cluster_nodes() if n["metadata"]["name"] != "gpu-a100-02"]
    with FakeKubeApi(nodes=cluster, policies=[seed_policy(False)], policy_supports_tolerations=False) as api:
        own = dict(ctx, api=api, kubeconfig=ctx["tmp"] / "kubeconfig-old-operator")
        own["kubeconfig"].write_text(api.kubeconfig())
        started = time.monotonic()
        run = run_playbook(own, "rdma.node.k8s_rdma", {
            "k8s_rdma_tolerations": [CUSTOM_TOLERATION], "k8s_rdma_wait_mofed": True,
            "k8s_rdma_mofed_wait_interval": 1, "k8s_rdma_mofed_wait_timeout": 1})
        elapsed = time.monotonic() - started
        stored = api.policy("nic-cluster-policy")
    assert run["run"].rc == 2, "k8s_rdma_fail_on_findings fails the run"
    assert [(p["path"], p["query"]) for p in patches(run)] == [(POLICY, {"dryRun": ["All"]})]
    assert "tolerations" not in stored["spec"]
    (dropped,) = findings(run, "tolerations_not_supported", "critical")
    assert "dropped spec.tolerations" in dropped["message"]
    timeouts = {f["subject"]: f["message"] for f in findings(run, "mofed_wait_timeout", "critical")}
    assert timeouts == {
        "v100-node-02": 'network.nvidia.com/operator.mofed.wait is "true" on node v100-node-02 after waiting 1 s for it '
                        'to become "false": node is cordoned (node.kubernetes.io/unschedulable) and NicClusterPolicy '
                        "nic-cluster-policy does not tolerate it.",
        "a100-node-01": 'network.nvidia.com/operator.mofed.wait is "true" on node a100-node-01 after waiting 1 s for it '
                        'to become "false": node has the taint crater.raids.io/account=team-a:NoSchedule and '
                        "NicClusterPolicy nic-cluster-policy does not tolerate it.",
    }
    (failure,) = failed_messages(run)
    assert failure.startswith("k8s_rdma on cluster/kubernetes: 3 critical: ") and "v100-node-02" in failure
    published = run["global_stats"]["rdma_k8s_rdma"]
    assert list(published) == ["cluster/kubernetes"], "one shape: the cluster is the key"
    assert published["cluster/kubernetes"]["findings"] == run["facts"]["k8s_rdma_findings"]
    assert published["cluster/kubernetes"]["status"]["critical"] == 3
    assert elapsed < 60


def test_bad_input_fails_before_anything_is_sent(ctx):
    with FakeKubeApi(nodes=cluster_nodes(), policies=[seed_policy()]) as api:
        own = dict(ctx, api=api, kubeconfig=ctx["tmp"] / "kubeconfig-bad-input")
        own["kubeconfig"].write_text(api.kubeconfig())
        before = (api.policy("nic-cluster-policy"), [api.node(n) for n in sorted(api.nodes)])
        run = run_playbook(own, "rdma.node.k8s_rdma", dict(ROLE_VARS, k8s_rdma_remove_stale_resources=["memory"]))
        after = (api.policy("nic-cluster-policy"), [api.node(n) for n in sorted(api.nodes)])
    assert run["run"].rc == 2
    (message,) = failed_messages(run)
    assert message.endswith("rdma.node.k8s_stale_resource_patches: k8s_rdma_remove_stale_resources: 'memory' is not an "
                            "extended resource (DOMAIN/NAME such as nvidia.com/hostdev); built-in resources like cpu, "
                            "memory and pods are never removed")
    assert run["requests"] == [], "nothing is asked of the cluster with bad input"
    assert after == before


def test_the_fake_answers_like_an_api_server():
    """What the tests rely on in the FAKE server, checked over HTTP without Ansible."""
    import urllib.error
    import urllib.request

    def send(api, method, path, body=None, content_type="application/merge-patch+json"):
        request = urllib.request.Request(api.url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, json.loads(answer.read()), answer.headers.get_all("Warning") or []
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read()), []

    with FakeKubeApi(nodes=cluster_nodes(), policies=[seed_policy(False)], policy_supports_tolerations=False) as api:
        version = api.policy("nic-cluster-policy")["metadata"]["resourceVersion"]
        patch = {"metadata": {"resourceVersion": version}, "spec": {"tolerations": [CUSTOM_TOLERATION], "x": 1}}
        code, body, warnings = send(api, "PATCH", POLICY + "?dryRun=All", patch)
        assert code == 200 and body["spec"]["x"] == 1 and "tolerations" not in body["spec"]
        assert warnings == ['299 - "unknown field \\"spec.tolerations\\""']
        assert "x" not in api.policy("nic-cluster-policy")["spec"], "a dry run stores nothing"
        assert send(api, "PATCH", POLICY, patch, "application/strategic-merge-patch+json")[0] == 415
        assert send(api, "PATCH", POLICY, {"metadata": {"resourceVersion": "1"}, "spec": {"x": 1}})[1]["reason"] == "Conflict"
        assert send(api, "PATCH", POLICY, patch)[0] == 200 and api.policy("nic-cluster-policy")["metadata"]["generation"] == 2
        # Node status: only via the subresource, only status changes, a missing path is refused.
        ops = [{"op": "remove", "path": "/status/capacity/nvidia.com~1hostdev"}, {"op": "add", "path": "/spec/unschedulable", "value": True}]
        assert send(api, "PATCH", "/api/v1/nodes/v100-node-01", ops, "application/json-patch+json")[0] == 404
        code, body, _warnings = send(api, "PATCH", "/api/v1/nodes/v100-node-01/status", ops, "application/json-patch+json")
        assert code == 200 and "nvidia.com/hostdev" not in body["status"]["capacity"] and "unschedulable" not in body["spec"]
        assert send(api, "PATCH", "/api/v1/nodes/v100-node-01/status", ops[:1], "application/json-patch+json")[0] == 422
        code, body, _warnings = send(api, "GET", "/api/v1/nodes?labelSelector=%s%%3Dtrue" % MOFED)
        assert [n["metadata"]["name"] for n in body["items"]] == ["a100-node-01", "v100-node-02"]
        assert [r["unknown"] for r in api.recorded("PATCH", "/api/v1/nodes/v100-node-01")] == [True]
