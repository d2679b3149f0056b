"""The k8s_quarantine role with the real kubernetes.core modules against a FAKE Kubernetes API server.

Real: ansible-playbook, the role and its playbook, the jsonfile fact cache that a check job leaves,
the findings in it (made by the registered ib_inventory checks on facts that rdma.node's own sysfs
reader read from the demo's V100 node root, one port put DOWN on the faulty hosts), and the
``kubernetes.core`` modules with the ``kubernetes`` Python client under them, speaking HTTP.

Fake, and why: there is no Kubernetes API server to be had here. ``tests/fake_k8s_api`` (FakeKubeApi
with its NodeMaintenance extension) serves what the role sends, the way the real server answers:
node merge patches with resourceVersion preconditions (409), ConfigMaps (409 AlreadyExists), pods,
evictions refused by a PodDisruptionBudget (429), the NicClusterPolicy, and a model of the Network
Operator's MOFED driver pod that the scheduler keeps off a node whose NoSchedule taint the policy
does not tolerate. It records every request.

The cluster: ten GPU nodes in two racks (topology.kubernetes.io/zone rack-a and rack-b), the
write-up's NicClusterPolicy (without tolerations). Each scenario starts its own fake server.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import threading

import pytest
import yaml

import harness
import synthetic_fleet
from ansible.plugins.loader import cache_loader
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from fake_k8s_api.maintenance import MOFED_WAIT, NodeMaintenance
from fake_k8s_api.server import FakeKubeApi
from testpaths import COLLECTION_ROOT, FIXTURES

NAMES = ["gpu-%02d" % i for i in range(1, 11)]
ZONE = "topology.kubernetes.io/zone"
LABEL = "rdma.node/quarantined"
RECORD = "rdma.node/quarantine"
TAINT = {"key": "rdma.node/quarantine", "value": "rdma-fault", "effect": "NoSchedule"}
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
POLICY = "/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy"
LEDGER = "/api/v1/namespaces/kube-system/configmaps/rdma-node-quarantine"
LEDGER_CREATE = "/api/v1/namespaces/kube-system/configmaps"


def cluster_node(name, labels=None, unschedulable=False, taints=None):
    """A Node as the API server returns it (the parts the role reads), in its rack."""
    spec = {"podCIDR": "10.244.1.0/24"}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    rack = "rack-a" if NAMES.index(name) < 5 else "rack-b"
    return {"metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name, ZONE: rack, MOFED_WAIT: "false"}, **(labels or {}))},
            "spec": spec, "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def seed_policy():
    """The write-up's NicClusterPolicy, copied byte for byte (no spec.tolerations)."""
    return yaml.safe_load((FIXTURES / "k8s" / "seed_nic_cluster_policy_rdma_shared_dp.yaml").read_text())


@pytest.fixture(scope="module")
def v100_facts(tmp_path_factory):
    """What rdma.node's sysfs reader reads from the demo's V100 node root (both ports ACTIVE), and the
    demo group's ib_inventory parameters."""
    profiles = synthetic_fleet.profile_facts(tmp_path_factory.mktemp("profiles"))
    return {"facts": profiles["v100-node-01"], "params": synthetic_fleet._group_params("ib-v100")["ib_inventory"],
            "down_port": next(p for p in profiles["v100-node-02"]["rdma"]["ports"] if p["state"] == "DOWN")}


class Fleet:
    """The inventory, the fact cache a check job leaves, and a fake cluster, for one scenario."""

    def __init__(self, tmp, v100, nodes=None, policy=None, pods=(), pdbs=(), configmaps=()):
        self.tmp = tmp
        tmp.mkdir()
        self.v100 = v100
        self.maintenance = NodeMaintenance(pods=pods, pdbs=pdbs, configmaps=configmaps)
        self.api = FakeKubeApi(nodes=nodes or [cluster_node(n) for n in NAMES], policies=[policy or seed_policy()],
                               extensions=[self.maintenance]).start()
        self.kubeconfig = tmp / "kubeconfig"
        self.kubeconfig.write_text(self.api.kubeconfig())
        self.cache = tmp / "fact-cache"
        self.inventory = {"all": {"children": {"ib-v100": {"hosts": dict.fromkeys(NAMES, {})}}}}

    def check_job(self, faulty, checked_at):
        """Write the fact cache as a check job would: each host's facts, findings and status, checked at ``checked_at``."""
        shutil.rmtree(str(self.cache), ignore_errors=True)
        self.cache.mkdir()
        cache = cache_loader.get("jsonfile", _uri=str(self.cache))
        for name in NAMES:
            facts = copy.deepcopy(self.v100["facts"])
            if name in faulty:
                port = next(p for p in facts["rdma"]["ports"] if p["device"] == self.v100["down_port"]["device"])
                port.update({k: self.v100["down_port"][k] for k in ("state", "state_code", "phys_state", "phys_state_code", "netdev_state")})
            facts["rdma"]["counters_time"] = checked_at
            evaluated = evaluate_role("ib_inventory", facts, self.v100["params"], name)
            facts.update(ib_inventory_findings=evaluated["findings"], ib_inventory_status=evaluated["status"])
            cache.set(name, facts)

    def run(self, extra=None, check=False, clear=True):
        """Run the quarantine playbook; return the run, localhost's findings and status, and the requests sent."""
        if clear:
            self.api.clear_log()
        run = harness.run_playbook(
            "rdma.node.quarantine", inventory=self.inventory, fact_cache=self.cache, check=check, cwd=str(self.tmp),
            extra_vars=dict({"k8s_quarantine_kubeconfig": str(self.kubeconfig), "k8s_quarantine_mode": "apply"}, **(extra or {})),
            env={"TMPDIR": str(self.tmp)}, timeout=240)
        facts = {}
        for task in run.tasks:
            facts.update((task["hosts"].get("localhost") or {}).get("ansible_facts") or {})
        return Outcome(run, facts, self.api.recorded() if clear else None)

    def node(self, name):
        return self.api.node(name)

    def record(self, name):
        text = (self.node(name)["metadata"].get("annotations") or {}).get(RECORD)
        return json.loads(text) if text else None

    def stop(self):
        self.api.stop()


class Outcome:
    def __init__(self, run, facts, requests):
        self.run, self.facts, self.requests = run, facts, requests
        self.findings = facts.get("k8s_quarantine_findings") or []
        self.status = facts.get("k8s_quarantine_status") or {}

    def found(self, *checks):
        return sorted((f["check"], f["severity"], f["subject"]) for f in self.findings if not checks or f["check"] in checks)

    def message(self, check_name, subject=None):
        (item,) = [f for f in self.findings if f["check"] == check_name and subject in (None, f["subject"])]
        return item["message"]

    def writes(self):
        return [(r["method"], r["path"]) for r in self.requests if r["method"] not in ("GET", "HEAD")]

    def real_writes(self):
        return [(r["method"], r["path"]) for r in self.requests if r["method"] not in ("GET", "HEAD") and r["query"].get("dryRun") != ["All"]]

    def failed_tasks(self):
        return [(name, result.get("msg")) for name, result in self.run.failed_results("localhost")]


@pytest.fixture
def fleet(tmp_path, v100_facts):
    made = []

    def make(**kwargs):
        made.append(Fleet(tmp_path / ("fleet-%d" % len(made)), v100_facts, **kwargs))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def _taints(node):
    return [(t["key"], t.get("value"), t["effect"]) for t in node["spec"].get("taints") or []]


# ------------------------------------------------------------------------------------ quarantine and release


def test_report_mode_reads_and_says_what_it_would_do(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    report = cluster.run({"k8s_quarantine_mode": "report"})
    assert report.run.rc == 0, report.failed_tasks()
    assert report.writes() == [], "report mode writes nothing"
    assert not [r for r in report.requests if r["unknown"]]
    assert [r["path"] for r in report.requests if r["path"] == "/api/v1/nodes"] == ["/api/v1/nodes"], "one list request for the nodes"
    assert report.found() == [("toleration_added", "info", "nic-cluster-policy"), ("would_quarantine", "warning", "gpu-03")]
    (cause,) = harness.FactCache(cluster.cache).facts("gpu-03")["ib_inventory_findings"]
    assert report.message("would_quarantine") == (
        "Would cordon and taint rdma.node/quarantine=rdma-fault:NoSchedule node gpu-03 for ib_inventory/port_down mlx5_1/1: %s."
        % cause["message"])
    assert report.message("toleration_added").startswith(
        "Apply would first add rdma.node/quarantine:NoSchedule (Exists), node.kubernetes.io/unschedulable:NoSchedule (Exists) "
        "to spec.tolerations of NicClusterPolicy nic-cluster-policy")
    assert report.run.custom_stats["k8s_quarantine_approved_nodes"] == ["gpu-03"]
    assert report.status["planned"] == {"quarantine": ["gpu-03"], "release": []} and report.status["quarantined_nodes"] == []


def test_check_mode_sends_only_reads_and_dry_runs(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    before = ({n: cluster.node(n) for n in NAMES}, cluster.api.policy("nic-cluster-policy"))
    checked = cluster.run(check=True)
    assert checked.run.rc == 0, checked.failed_tasks()
    assert checked.writes() == [("PATCH", POLICY), ("POST", LEDGER_CREATE), ("PATCH", "/api/v1/nodes/gpu-03")]
    assert checked.real_writes() == [], "every write of check mode is a server-side dry run"
    assert ({n: cluster.node(n) for n in NAMES}, cluster.api.policy("nic-cluster-policy")) == before
    assert cluster.maintenance.configmap("kube-system", "rdma-node-quarantine") is None
    assert checked.found("would_quarantine", "toleration_added") == [
        ("toleration_added", "info", "nic-cluster-policy"), ("would_quarantine", "warning", "gpu-03")]
    assert checked.message("would_quarantine").startswith(
        "Check mode: would cordon and taint rdma.node/quarantine=rdma-fault:NoSchedule node gpu-03 (the server-side dry run accepted it)")


def test_quarantine_then_idempotent_then_release_after_three_clean_runs(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    metrics = cluster.tmp / "textfile" / "rdma_node_quarantine.prom"
    metrics.parent.mkdir()
    first = cluster.run({"k8s_quarantine_run_id": "awx job 4711", "k8s_quarantine_metrics_file": str(metrics)})
    assert first.run.rc == 0, first.failed_tasks()
    text = metrics.read_text()
    assert 'rdma_node_quarantined{cluster="kubernetes",node="gpu-03"} 1' in text.splitlines()
    assert 'rdma_node_quarantine_breaker_tripped{cluster="kubernetes"} 0' in text.splitlines()
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # The ledger is made (empty), the guard makes the policy tolerate the quarantine, the ledger records the
    # node, then the node: nothing is tainted before the policy tolerates it.
    assert first.writes() == [("POST", LEDGER_CREATE), ("PATCH", POLICY), ("PATCH", LEDGER), ("PATCH", "/api/v1/nodes/gpu-03")]
    (node_patch,) = [r for r in first.requests if r["method"] == "PATCH" and r["path"] == "/api/v1/nodes/gpu-03"]
    assert node_patch["content_type"] == "application/merge-patch+json"
    assert node_patch["body"]["metadata"]["resourceVersion"], "the patch is conditional on the node as read"
    node = cluster.node("gpu-03")
    assert node["spec"]["unschedulable"] is True
    assert _taints(node) == [("rdma.node/quarantine", "rdma-fault", "NoSchedule"), (UNSCHEDULABLE, None, "NoSchedule")]
    assert node["metadata"]["labels"][LABEL] == "true"
    record = cluster.record("gpu-03")
    assert record["checks"] == ["ib_inventory/port_down"] and record["run"] == "awx job 4711"
    assert record["reasons"][0].startswith("ib_inventory/port_down mlx5_1/1: mlx5_1/1 is DOWN")
    assert (record["cordoned"], record["cordon_pre_existing"], record["taint_pre_existing"], record["clean_runs"]) == (True, False, False, 0)
    policy = cluster.api.policy("nic-cluster-policy")
    assert policy["spec"]["tolerations"] == [{"key": "rdma.node/quarantine", "operator": "Exists", "effect": "NoSchedule"},
                                             {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"}]
    ledger = cluster.maintenance.configmap("kube-system", "rdma-node-quarantine")
    assert list(json.loads(ledger["data"]["nodes"])) == ["gpu-03"]
    assert first.found() == [("quarantined", "warning", "gpu-03"), ("toleration_added", "info", "nic-cluster-policy")]
    assert first.status["quarantined_nodes"] == ["gpu-03"]
    assert [n for n in NAMES if n != "gpu-03" and (cluster.node(n)["spec"].get("unschedulable") or cluster.node(n)["spec"].get("taints"))] == []

    again = cluster.run()
    assert again.run.rc == 0 and again.writes() == [], "a second run with the same findings writes nothing"
    assert again.found() == [("quarantine_kept", "info", "gpu-03")]
    assert again.run.stats["localhost"]["changed"] == 0

    counted = []
    for checked_at in (2000.0, 2000.0, 3000.0):
        cluster.check_job(set(), checked_at)
        counted.append(cluster.run())
    assert [c.writes() for c in counted] == [[("PATCH", "/api/v1/nodes/gpu-03")], [], [("PATCH", "/api/v1/nodes/gpu-03")]]
    assert counted[0].message("release_pending") == "Node gpu-03 had a clean run: counted 1 of the 3 that release it."
    assert counted[1].message("release_pending") == (
        "Node gpu-03 stays in quarantine: this run is not counted towards its release (the checks of host gpu-03 are the ones "
        "already counted (checked at 1970-01-01T00:33:20Z)); 1 of 3 clean runs so far.")
    assert cluster.record("gpu-03")["clean_runs"] == 2
    cluster.check_job(set(), 4000.0)
    release = cluster.run()
    assert release.run.rc == 0, release.failed_tasks()
    assert release.writes() == [("PATCH", LEDGER), ("PATCH", "/api/v1/nodes/gpu-03")]
    assert release.found() == [("released", "info", "gpu-03")]
    node = cluster.node("gpu-03")
    assert "unschedulable" not in node["spec"] and "taints" not in node["spec"]
    assert LABEL not in node["metadata"]["labels"] and RECORD not in (node["metadata"].get("annotations") or {})
    assert json.loads(cluster.maintenance.configmap("kube-system", "rdma-node-quarantine")["data"]["nodes"]) == {}
    assert release.status["quarantined_nodes"] == []


def test_a_cordon_someone_else_made_is_kept(fleet):
    nodes = [cluster_node(n, unschedulable=(n == "gpu-05")) for n in NAMES]
    cluster = fleet(nodes=nodes)
    cluster.maintenance.change_node("gpu-05", lambda node: None)  # the lifecycle controller adds the unschedulable taint
    cluster.check_job({"gpu-05"}, 1000.0)
    first = cluster.run({"k8s_quarantine_release_after": 1})
    assert first.run.rc == 0, first.failed_tasks()
    (patch,) = [r["body"] for r in first.requests if r["method"] == "PATCH" and r["path"] == "/api/v1/nodes/gpu-05"]
    assert "unschedulable" not in patch["spec"], "rdma.node does not cordon what is cordoned already"
    assert cluster.record("gpu-05")["cordon_pre_existing"] is True and cluster.record("gpu-05")["cordoned"] is False
    assert first.message("kept_foreign_cordon") == (
        "Node gpu-05 was cordoned before rdma.node quarantined it; the cordon is recorded as someone else's and stays when "
        "rdma.node releases the node.")
    cluster.check_job(set(), 2000.0)
    release = cluster.run({"k8s_quarantine_release_after": 1})
    assert release.found("released", "kept_foreign_cordon") == [("kept_foreign_cordon", "info", "gpu-05"), ("released", "info", "gpu-05")]
    assert release.message("kept_foreign_cordon") == (
        "Releasing node gpu-05 keeps the cordon (there before the quarantine), which rdma.node did not make.")
    node = cluster.node("gpu-05")
    assert node["spec"]["unschedulable"] is True and _taints(node) == [(UNSCHEDULABLE, None, "NoSchedule")]
    assert LABEL not in node["metadata"]["labels"]


def test_an_opted_out_node_is_never_touched(fleet):
    nodes = [cluster_node(n, labels={"rdma.node/quarantine": "disabled"} if n == "gpu-07" else None) for n in NAMES]
    cluster = fleet(nodes=nodes)
    cluster.check_job({"gpu-07"}, 1000.0)
    before = cluster.node("gpu-07")
    run = cluster.run()
    assert run.run.rc == 0, run.failed_tasks()
    assert run.writes() == [] and cluster.node("gpu-07") == before
    assert not [r for r in run.requests if r["path"] == "/api/v1/nodes/gpu-07"], "not even read on its own"
    assert run.found() == [("opted_out", "warning", "gpu-07")]
    assert run.message("opted_out").startswith("Node gpu-07 is opted out (rdma.node/quarantine=disabled), so rdma.node does not quarantine it")


# ------------------------------------------------------------------------------------ the breaker


def test_breaker_trips_cluster_wide_and_takes_out_nobody(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-02", "gpu-04", "gpu-06", "gpu-09"}, 1000.0)
    before = {n: cluster.node(n) for n in NAMES}
    run = cluster.run({"k8s_quarantine_max_percent": 20})
    assert run.run.rc == 2, "a tripped breaker is critical, and the role fails after publishing"
    assert run.writes() == [] and {n: cluster.node(n) for n in NAMES} == before
    assert run.found() == [("breaker_tripped", "critical", "cluster/kubernetes")]
    assert run.message("breaker_tripped") == (
        "The circuit breaker tripped: 0 node(s) already held and 4 new would make 4 of 10 eligible nodes, above the limit of 2 "
        "(min(ceil(20% of 10), 10)). None of the new nodes was quarantined; it would have taken out gpu-02, gpu-04, gpu-06, "
        "gpu-09. So many nodes failing at once is usually the fabric or a configuration, not the nodes.")
    published = run.run.custom_stats["rdma_k8s_quarantine"]["cluster/kubernetes"]
    assert published["status"]["breaker_tripped"] is True and published["status"]["held_by_breaker"] == ["gpu-02", "gpu-04", "gpu-06", "gpu-09"]


def test_breaker_trips_per_failure_domain(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-01", "gpu-02", "gpu-03", "gpu-06"}, 1000.0)
    run = cluster.run({"k8s_quarantine_max_percent": 40, "k8s_quarantine_domain_label": ZONE})
    assert run.run.rc == 2
    assert [w for w in run.writes() if w[1].startswith("/api/v1/nodes/")] == [("PATCH", "/api/v1/nodes/gpu-06")]
    assert run.found("breaker_tripped", "quarantined") == [
        ("breaker_tripped", "critical", "topology.kubernetes.io/zone=rack-a"), ("quarantined", "warning", "gpu-06")]
    assert run.message("breaker_tripped") == (
        "The circuit breaker tripped for topology.kubernetes.io/zone=rack-a: 0 node(s) already held and 3 new would make 3 of "
        "the 5 eligible nodes of topology.kubernetes.io/zone=rack-a, above its limit of 2. None of its new nodes was "
        "quarantined; it would have taken out gpu-01, gpu-02, gpu-03.")


# ------------------------------------------------------------------------------------ two runs at once


def _together(cluster, extras):
    outcomes = [None] * len(extras)

    def one(index):
        outcomes[index] = cluster.run(extras[index], clear=False)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(extras))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return outcomes


def test_two_runs_at_once_cannot_both_add_nodes(fleet):
    """Each run sees one faulty host and room for one node; both read the empty ledger (held at a gate
    until both have), both plan a node, and only the first ledger write can succeed."""
    tolerated = seed_policy()
    tolerated["spec"]["tolerations"] = [{"operator": "Exists"}]  # tolerates everything: no guard patch to race on
    emptied = {"metadata": {"name": "rdma-node-quarantine", "namespace": "kube-system"}, "data": {"nodes": "{}"}}  # as a release leaves it
    cluster = fleet(policy=tolerated, configmaps=[emptied])
    cluster.check_job({"gpu-04", "gpu-08"}, 1000.0)
    cluster.api.clear_log()
    cluster.maintenance.gate("GET", LEDGER, 2)
    first, second = _together(cluster, [{"k8s_quarantine_max_nodes": 1, "k8s_quarantine_hosts": ["gpu-04"], "k8s_quarantine_fail_on_findings": False},
                                        {"k8s_quarantine_max_nodes": 1, "k8s_quarantine_hosts": ["gpu-08"], "k8s_quarantine_fail_on_findings": False}])
    held = sorted(n for n in NAMES if LABEL in cluster.node(n)["metadata"]["labels"])
    assert len(held) == 1, "the breaker holds: one node at most"
    assert sorted(r["status"] for r in cluster.api.recorded("PATCH", LEDGER)) == [200, 409]
    loser = first if held == ["gpu-08"] else second
    assert [f[0] for f in loser.found()] == ["ledger_conflict", "patch_failed"]
    assert loser.message("ledger_conflict").startswith("The quarantine ledger could not be updated: ")
    assert "(409 Conflict: it changed since it was read; nothing of the other change was lost)" in loser.message("ledger_conflict")
    assert list(json.loads(cluster.maintenance.configmap("kube-system", "rdma-node-quarantine")["data"]["nodes"])) == held


def test_two_runs_counting_one_node_lose_no_update(fleet):
    """Both read the node with the same resourceVersion (a gate on the node list); the second patch
    is refused with 409 and the first one's count stays."""
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    assert cluster.run().run.rc == 0
    cluster.check_job(set(), 2000.0)
    cluster.api.clear_log()
    cluster.maintenance.gate("GET", "/api/v1/nodes", 2)
    outcomes = _together(cluster, [{"k8s_quarantine_fail_on_findings": False}] * 2)
    statuses = sorted(r["status"] for r in cluster.api.recorded("PATCH", "/api/v1/nodes/gpu-03"))
    assert statuses == [200, 409]
    assert cluster.record("gpu-03")["clean_runs"] == 1, "counted once, and that count was not lost"
    refused = [o for o in outcomes if o.found("patch_failed")]
    assert len(refused) == 1
    assert "409 Conflict: it changed since it was read; nothing of the other change was lost" in refused[0].message("patch_failed")


# ------------------------------------------------------------------------------------ the mofed.wait guard


def test_without_the_guard_mofed_wait_sticks_and_the_guard_clears_it(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    unguarded = cluster.run({"k8s_quarantine_mofed_guard": "off"})
    assert unguarded.run.rc == 0 and ("PATCH", POLICY) not in unguarded.writes()
    cluster.maintenance.kernel_upgrade("gpu-03")
    assert cluster.node("gpu-03")["metadata"]["labels"][MOFED_WAIT] == "true", "the incident: the driver pod cannot come back"
    driver = cluster.maintenance.pod("nvidia-network-operator", "mofed-ubuntu22.04-ds-gpu-03")
    assert driver["status"]["phase"] == "Pending"
    assert "had untolerated taint {rdma.node/quarantine: rdma-fault}" in driver["status"]["conditions"][0]["message"]

    guarded = cluster.run()
    assert guarded.run.rc == 0, guarded.failed_tasks()
    assert guarded.writes() == [("PATCH", POLICY)], "the node stays as it is; only the policy changes"
    assert cluster.node("gpu-03")["metadata"]["labels"][MOFED_WAIT] == "false"
    assert cluster.maintenance.pod("nvidia-network-operator", "mofed-ubuntu22.04-ds-gpu-03")["status"]["phase"] == "Running"
    assert guarded.message("toleration_added").startswith("Added rdma.node/quarantine:NoSchedule (Exists), "
                                                          "node.kubernetes.io/unschedulable:NoSchedule (Exists) to spec.tolerations")


def test_with_the_guard_a_kernel_upgrade_of_a_quarantined_node_goes_through(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    assert cluster.run().run.rc == 0
    cluster.maintenance.kernel_upgrade("gpu-03")
    assert cluster.node("gpu-03")["metadata"]["labels"][MOFED_WAIT] == "false"
    assert cluster.node("gpu-03")["spec"]["unschedulable"] is True, "still quarantined"


def test_refuse_quarantines_nothing_and_says_why(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    run = cluster.run({"k8s_quarantine_mofed_guard": "refuse"})
    assert run.run.rc == 2 and run.writes() == []
    assert run.found() == [("quarantine_held", "warning", "gpu-03"), ("toleration_missing", "critical", "nic-cluster-policy")]
    assert run.message("toleration_missing") == (
        "NicClusterPolicy nic-cluster-policy lacks the tolerations rdma.node/quarantine:NoSchedule (Exists), "
        "node.kubernetes.io/unschedulable:NoSchedule (Exists) (k8s_quarantine_mofed_guard is refuse): a node quarantined "
        "without them gets no MOFED driver pod after its next kernel upgrade, and network.nvidia.com/operator.mofed.wait "
        "stays \"true\". No node was quarantined; add them (rdma.node.k8s_rdma with k8s_rdma_tolerations) or set "
        "k8s_quarantine_mofed_guard to patch.")


# ------------------------------------------------------------------------------------ drain


def _pod(name, node, resources=None, owner="ReplicaSet", labels=None):
    container = {"name": "main", "image": "nccl-tests:2.13"}
    if resources:
        container["resources"] = {"limits": dict(resources), "requests": dict(resources)}
    return {"metadata": {"name": name, "namespace": "training", "labels": labels or {"app": name},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner, "name": name + "-owner"}]},
            "spec": {"nodeName": node, "containers": [container]}, "status": {"phase": "Running"}}


def test_drain_evicts_the_rdma_pods_and_reports_what_a_budget_kept(fleet):
    pods = [_pod("allreduce-0", "gpu-03", {"rdma/rdma_v100": "1", "nvidia.com/gpu": "8"}, labels={"app": "allreduce"}),
            _pod("inference-0", "gpu-03", {"nvidia.com/gpu": "1"}),
            _pod("rdma-monitor", "gpu-03", {"rdma/rdma_v100": "1"}, owner="DaemonSet"),
            _pod("web-0", "gpu-03"),
            _pod("allreduce-1", "gpu-04", {"rdma/rdma_v100": "1"}, labels={"app": "allreduce"})]
    budget = {"metadata": {"name": "allreduce", "namespace": "training"}, "spec": {"selector": {"matchLabels": {"app": "allreduce"}}},
              "status": {"disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2}}
    cluster = fleet(pods=pods, pdbs=[budget])
    cluster.check_job({"gpu-03"}, 1000.0)
    run = cluster.run({"k8s_quarantine_drain": True, "k8s_quarantine_drain_timeout": 10})
    assert run.run.rc == 0, run.failed_tasks()
    evictions = [(r["path"].split("/")[-2], r["status"]) for r in run.requests if r["path"].endswith("/eviction")]
    assert evictions == [("allreduce-0", 429), ("inference-0", 201)]
    assert cluster.maintenance.pods_on("gpu-03") == ["training/allreduce-0", "training/rdma-monitor", "training/web-0"]
    assert run.found("drained", "drain_incomplete") == [("drain_incomplete", "warning", "gpu-03"), ("drained", "info", "gpu-03")]
    assert run.message("drain_incomplete") == (
        "Node gpu-03 is quarantined but 1 pod(s) using RDMA or GPU resources still run there: training/allreduce-0: Cannot "
        "evict pod as it would violate the pod's disruption budget. The disruption budget allreduce needs 2 healthy pods and "
        "has 2 currently.")
    assert cluster.maintenance.pods_on("gpu-04") == ["training/allreduce-1"], "other nodes' pods are not touched"


# ------------------------------------------------------------------------------------ vocabulary, input, no cluster


def test_nvsentinel_vocabulary_and_its_cordon(fleet):
    prefix = "k8saas.nvidia.com/"
    sentinel = {prefix + "cordon-by": "NVSentinel", prefix + "cordon-reason": "GPU-fatal-error-ruleset",
                prefix + "cordon-timestamp": "2026-03-01T10-00-00Z"}
    nodes = [cluster_node(n, labels=sentinel if n == "gpu-06" else None, unschedulable=(n == "gpu-06")) for n in NAMES]
    cluster = fleet(nodes=nodes)
    cluster.check_job({"gpu-03", "gpu-06"}, 1000.0)
    run = cluster.run({"k8s_quarantine_vocabulary": "nvsentinel", "k8s_quarantine_max_percent": 20, "k8s_quarantine_release_after": 1})
    assert run.run.rc == 0, run.failed_tasks()
    labels = cluster.node("gpu-03")["metadata"]["labels"]
    assert labels[prefix + "cordon-by"] == "rdma.node" and labels[prefix + "cordon-reason"] == "rdma.node-ib_inventory.port_down"
    assert labels[prefix + "cordon-timestamp"].endswith("Z") and ":" not in labels[prefix + "cordon-timestamp"]
    assert {k: v for k, v in cluster.node("gpu-06")["metadata"]["labels"].items() if k.startswith(prefix)} == sentinel, \
        "NVSentinel's cordon stays NVSentinel's"
    cluster.check_job(set(), 2000.0)
    second = cluster.run({"k8s_quarantine_vocabulary": "nvsentinel", "k8s_quarantine_release_after": 1})
    assert second.run.rc == 0, second.failed_tasks()
    assert cluster.node("gpu-06")["spec"]["unschedulable"] is True
    assert {k: v for k, v in cluster.node("gpu-06")["metadata"]["labels"].items() if k.startswith(prefix)} == sentinel
    released = cluster.node("gpu-03")["metadata"]["labels"]
    assert prefix + "cordon-by" not in released and released[prefix + "uncordon-by"] == "rdma.node"


def test_bad_input_sends_nothing(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    run = cluster.run({"k8s_quarantine_taint": {"key": "rdma.node/quarantine", "effect": "PreferNoSchedule"}})
    assert run.run.rc == 2 and run.requests == []
    ((task, message),) = run.failed_tasks()
    assert message.endswith("rdma.node.k8s_quarantine_settings: k8s_quarantine_taint: effect 'PreferNoSchedule' is not NoSchedule or "
                            "NoExecute (NoExecute evicts every pod that does not tolerate it: ask for it explicitly)")


def test_apply_without_a_cluster_applies_nothing(fleet):
    cluster = fleet()
    cluster.check_job({"gpu-03"}, 1000.0)
    cluster.kubeconfig.write_text(cluster.api.kubeconfig().replace(cluster.api.url, "http://127.0.0.1:9"))
    run = cluster.run()
    assert run.run.rc == 2 and run.requests == []
    assert run.found() == [("cluster_not_read", "critical", "cluster/kubernetes"), ("quarantine_held", "warning", "gpu-03")]
    message = run.message("cluster_not_read")
    assert message.startswith("The cluster could not be read (") and message.endswith("), so nothing was quarantined or released.")
    assert "Connection refused" in message


def test_the_alert_rules_pass_promtool():
    rules = COLLECTION_ROOT / "extensions" / "prometheus" / "rdma_node_quarantine.rules.yml"
    for argv in (["promtool", "check", "rules", str(rules)], ["promtool", "test", "rules", str(rules.with_name("rdma_node_quarantine.rules.test.yml"))]):
        done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=str(rules.parent))
        assert done.returncode == 0, done.stdout + done.stderr
