"""The main job on the demo inventory with its opt-in quarantine step (-e rdma_quarantine=report|apply).

Report: the demo has no Kubernetes API server, so the step plans from the run's findings alone; the
report's cluster section and the faulty host say what would be quarantined, and that the cluster was
not read. Apply: the same job against the FAKE Kubernetes API server of tests/fake_k8s_api (there is
none to be had here), whose nodes are the demo's hosts, quarantines the node the findings name.
"""

from __future__ import annotations

import json

import pytest
import yaml

from fake_k8s_api.maintenance import NodeMaintenance
from fake_k8s_api.server import FakeKubeApi
from harness import run_playbook
from testpaths import FIXTURES, demo_hosts, demo_inventory_copy

HOSTS = demo_hosts()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("demo-quarantine")
    inventory = base / "inventory"
    demo_inventory_copy(inventory)
    return {"base": base, "args": ["-i", str(inventory)]}


def site(demo, name, *args):
    run = run_playbook("rdma.node.site", *demo["args"], "-e", "fleet_report_dir=%s/%s" % (demo["base"], name), *args,
                       env={"TMPDIR": str(demo["base"])})
    return run, json.loads((demo["base"] / name / "fleet-report.json").read_text())


def _cause(report, host):
    """The run's own findings on the host that the demo's policy quarantines on (port down, link flapping)."""
    (entry,) = [h for h in report["hosts"] if h["name"] == host]
    return "; ".join("%s/%s %s: %s" % (f["role"], f["check"], f["subject"], f["message"]) for f in entry["findings"]
                     if (f["role"], f["check"]) in (("ib_inventory", "port_down"), ("node_health", "link_flapping"))).rstrip(".")


def quarantine_findings(cluster):
    """The quarantine's findings of the cluster section (site's NCCL play reports there too, on the groups)."""
    return [f for f in cluster["findings"] if f["role"] == "k8s_quarantine"]


def test_report_mode_shows_what_would_be_quarantined(demo):
    run, report = site(demo, "report", "-e", "rdma_quarantine=report")
    assert run.rc == 2, "the faulty hosts still fail at the end"
    (cluster,) = report["clusters"]
    assert cluster["subject"] == "cluster/kubernetes" and sorted(cluster["roles"]) == ["k8s_quarantine", "pod_proof"]
    assert sorted((f["check"], f["severity"], f["subject"]) for f in quarantine_findings(cluster)) == [
        ("cluster_not_read", "info", "cluster/kubernetes"), ("toleration_missing", "info", "cluster/kubernetes"),
        ("would_quarantine", "warning", "v100-node-02")]
    (would,) = [f for f in quarantine_findings(cluster) if f["check"] == "would_quarantine"]
    assert would["message"] == "Would cordon and taint rdma.node/quarantine=rdma-fault:NoSchedule node v100-node-02 for %s." % _cause(
        report, "v100-node-02")
    (not_read,) = [f for f in quarantine_findings(cluster) if f["check"] == "cluster_not_read"]
    assert not_read["message"].startswith("The cluster was not read (k8s_quarantine_read_cluster is false), so the plan comes from the findings alone")
    on_hosts = {h["name"]: [f["check"] for f in h["findings"] if f["role"] == "k8s_quarantine"] for h in report["hosts"]}
    assert on_hosts == dict(dict.fromkeys(HOSTS, []), **{"v100-node-02": ["would_quarantine"]})
    assert run.custom_stats["k8s_quarantine_approved_nodes"] == ["v100-node-02"]
    status = run.custom_stats["rdma_k8s_quarantine"]["cluster/kubernetes"]["status"]
    assert (status["mode"], status["cluster_read"], status["eligible_nodes"], status["limit"]) == ("report", False, len(HOSTS), 1)


def test_without_the_option_there_is_no_quarantine_step(demo):
    run, report = site(demo, "plain")
    assert [list(c["roles"]) for c in report["clusters"]] == [["pod_proof"]] and "rdma_k8s_quarantine" not in run.custom_stats


def test_apply_against_the_fake_api_quarantines_the_node(demo):
    policy = yaml.safe_load((FIXTURES / "k8s" / "seed_nic_cluster_policy_rdma_shared_dp.yaml").read_text())
    nodes = [{"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": {}} for name in HOSTS]
    with FakeKubeApi(nodes=nodes, policies=[policy], extensions=[NodeMaintenance()]) as api:
        kubeconfig = demo["base"] / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        run, report = site(demo, "apply", "-e", "rdma_quarantine=apply", "-e", "k8s_quarantine_read_cluster=true",
                           "-e", "k8s_quarantine_kubeconfig=%s" % kubeconfig)
        quarantined = api.node("v100-node-02")
        others = [api.node(n) for n in HOSTS if n != "v100-node-02"]
        writes = [(r["method"], r["path"]) for r in api.recorded() if r["method"] != "GET"]
    assert run.rc == 2
    assert quarantined["spec"]["unschedulable"] is True and quarantined["metadata"]["labels"]["rdma.node/quarantined"] == "true"
    assert [t["key"] for t in quarantined["spec"]["taints"]] == ["rdma.node/quarantine", "node.kubernetes.io/unschedulable"]
    assert all(not n["spec"] for n in others)
    assert writes == [("POST", "/api/v1/namespaces/kube-system/configmaps"),
                      ("PATCH", "/apis/mellanox.com/v1alpha1/nicclusterpolicies/nic-cluster-policy"),
                      ("PATCH", "/api/v1/namespaces/kube-system/configmaps/rdma-node-quarantine"),
                      ("PATCH", "/api/v1/nodes/v100-node-02")]
    (cluster,) = report["clusters"]
    assert sorted((f["check"], f["subject"]) for f in quarantine_findings(cluster)) == [
        ("quarantined", "v100-node-02"), ("toleration_added", "nic-cluster-policy")]
    (entry,) = [h for h in report["hosts"] if h["name"] == "v100-node-02"]
    assert ("k8s_quarantine", "quarantined", "warning") in [(f["role"], f["check"], f["severity"]) for f in entry["findings"]]
