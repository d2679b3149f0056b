"""The pod proof's plan and pods from the demo hosts' facts (sysfs trees built by tools/sysfs_tree.py and read
by the real readers, locality and gpudirect included): settings given as a survey's text, GPU memory in the pods'
perftest command, and a run without pods judged as not checked."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.filter.pod_proof import pod_proof_host_views
from ansible_collections.rdma.node.plugins.plugin_utils import _pod_proof
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._pod_proof import PodProofError, groups_from_text, plan, pod_manifest
from bandwidth_demo import DEMO_HOSTS, demo_hosts

GROUPS = {"ib-v100": ["v100-node-01", "v100-node-02"], "ib-a100": ["a100-node-01", "a100-node-02"]}
DEFAULTS = {"rdma_resource": None, "gpus": 0, "gpu_mode": "host", "efficiency_host": 0.95, "efficiency_gpu": 0.9,
            "nccl_min_busbw": None, "nccl_log": None, "nccl_tests_output": None}


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    demo = demo_hosts(tmp_path_factory.mktemp("demo"))
    return {host: {"ansible_facts": {"rdma": demo[host]["rdma"]}} for host in DEMO_HOSTS}


def test_the_views_leave_the_ports_counters_out_and_plan_the_same(tmp_path):
    """The hosts' views (rdma.node.pod_proof_host_views) carry each port without its counters, which the
    plan never reads; the plan from them is the plan from the whole facts, GPU memory included."""
    demo = demo_hosts(tmp_path, subsets=("locality", "gpudirect", "counters"))
    assert all(port.get("counters") for host in DEMO_HOSTS for port in demo[host]["rdma"]["ports"])
    whole = {host: {"ansible_facts": {"rdma": demo[host]["rdma"]}} for host in DEMO_HOSTS}
    slim = pod_proof_host_views({host: {"ansible_facts": {"rdma": demo[host]["rdma"]}} for host in DEMO_HOSTS}, DEMO_HOSTS)
    ports = [port for host in DEMO_HOSTS for port in slim[host]["ansible_facts"]["rdma"]["ports"]]
    assert ports and not any(key.startswith(("counters", "hw_counters")) for port in ports for key in port)
    assert all(port["rate_gbps"] and port["device"] and port["link_layer"] for port in ports)
    options = {"groups": {"ib-a100": {"rdma_resource": "rdma/rdma_a100", "gpus": 1, "gpu_mode": "dmabuf"},
                          "ib-v100": {"rdma_resource": "rdma/rdma_v100"}}, "defaults": DEFAULTS}
    planned = plan(slim, GROUPS, DEMO_HOSTS, options)
    assert len(planned["tests"]) == 3
    assert planned == plan(whole, GROUPS, DEMO_HOSTS, options)


def test_groups_from_a_survey_text_replace_the_inventorys(views):
    text = "ib-a100: {rdma_resource: rdma/rdma_a100, gpus: 1, gpu_mode: dmabuf}\n"
    planned = plan(views, GROUPS, DEMO_HOSTS, {"groups": {"ib-a100": {"rdma_resource": "rdma/old"}}, "groups_text": text,
                                               "defaults": DEFAULTS})
    assert planned["settings"]["ib-a100"]["rdma_resource"] == "rdma/rdma_a100"
    assert [t["id"] for t in planned["tests"]] == [
        "a100-node-01:mlx5_1/1>a100-node-02:mlx5_1/1", "a100-node-01:mlx5_bond_0/1>a100-node-02:mlx5_bond_0/1"]
    # JSON is YAML too; an empty text adds nothing.
    assert groups_from_text('{"ib-v100": {"rdma_resource": "rdma/rdma_v100"}}') == {"ib-v100": {"rdma_resource": "rdma/rdma_v100"}}
    assert groups_from_text("  \n") == {}


@pytest.mark.parametrize("text, message", [
    ("ib-a100: {gpus: 1", "pod_proof_groups_text: not YAML or JSON at line 1, column 18 (expected ',' or '}', but got '<stream end>')"),
    ("- ib-a100", "pod_proof_groups_text: expected a mapping of inventory group to settings such as "
                  "{ib-a100: {rdma_resource: rdma/rdma_a100, gpus: 1}}, got list"),
])
def test_a_survey_text_that_is_not_groups_is_one_sentence(text, message):
    with pytest.raises(PodProofError) as error:
        groups_from_text(text)
    assert str(error.value).startswith(message)


def test_the_pods_perftest_uses_the_gpu_nearest_its_hca(views):
    """a100-node-02's cabled HCA (mlx5_1) sits behind the switch of its second GPU in PCI order: --use_cuda=1, with
    DMA-BUF as asked, and CUDA counting in PCI bus order."""
    planned = plan(views, GROUPS, DEMO_HOSTS, {"groups": {"ib-a100": {"rdma_resource": "rdma/rdma_a100", "gpus": 1, "gpu_mode": "dmabuf"}},
                                               "defaults": DEFAULTS})
    test = planned["tests"][0]
    options = {"image": "registry.example.org/perftest-cuda:24.10", "settings": planned["settings"], "tool": planned["tool"]}
    client = pod_manifest(test, "client", options, "run1", 1, server_address="10.244.1.7")
    container = client["spec"]["containers"][0]
    script = container["command"][-1]
    assert "--use_cuda=1 --use_cuda_dmabuf" in script and script.rstrip().endswith("10.244.1.7")
    assert container["env"] == [{"name": "CUDA_DEVICE_ORDER", "value": "PCI_BUS_ID"}]
    assert container["resources"]["limits"] == {"rdma/rdma_a100": 1, "nvidia.com/gpu": 1}
    # The expected rate is the GPU limit: 0.90 of the 200 Gb/s HDR link.
    assert (test["client_memory"]["mode"], test["expected_gbps"]) == ("dmabuf", 180.0)


def test_without_pods_no_pair_is_planned_and_the_pairs_are_not_checked_never_passed(views):
    planned = plan(views, GROUPS, DEMO_HOSTS, {"groups": {"ib-v100": {"rdma_resource": "rdma/rdma_v100"}}, "defaults": DEFAULTS,
                                               "run_pods": False})
    # The group's hosts are known (the NCCL checks read them); no pair, no batch, no note about a host's facts.
    assert (planned["tests"], planned["batches"], planned["notes"]) == ([], [], [])
    assert [h for h in planned["hosts"] if planned["group_of"].get(h) == "ib-v100"] == ["v100-node-01", "v100-node-02"]
    # The hosts' facts are not read at all: without them the plan is the same.
    assert plan({}, GROUPS, DEMO_HOSTS, {"groups": {"ib-v100": {"rdma_resource": "rdma/rdma_v100"}}, "defaults": DEFAULTS,
                                         "run_pods": False})["group_of"] == planned["group_of"]
    params = {"plan": planned, "pods": [], "logs": {}, "check_mode": False, "nodes": {}, "memlock_wanted": "unlimited",
              "leftovers": [], "leftovers_removed": False, "nccl": [], "start_timeout": 120}
    status = evaluate_role(_pod_proof.ROLE, {}, params, subject="cluster/kubernetes")["status"]
    assert (status["ok"], status["warning"]) == (True, 0)
    assert status["not_checked"] == [{"check": "pair_not_run", "subject": "pods", "reason": (
        "pod_proof_run_pods is false: no pod pair was planned or run in the group(s) ib-v100; "
        "only the groups' NCCL evidence was judged (the rdma.node.pod_proof playbook runs the pods)")}]
