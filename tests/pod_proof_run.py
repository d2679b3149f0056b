"""A finished pod proof on the demo hosts, judged by the real checks: for the report and the metrics tests.

The plan comes from the demo hosts' facts (sysfs trees read by the real readers); the Pods are the role's own
manifests with the status a kubelet gives a pod that ran to its end; each pod's log is what its command prints
(its limits and identity, then perftest's real recorded output: tests/fixtures/perftest). Only the API objects'
status is written here, as the FAKE kubelet of tests/fake_k8s_api would."""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _pod_proof
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from bandwidth_demo import DEMO_HOSTS, demo_hosts
from testpaths import FIXTURES

GROUPS = {"ib-v100": ["v100-node-01", "v100-node-02"], "ib-a100": ["a100-node-01", "a100-node-02"]}
DEFAULTS = {"rdma_resource": None, "gpus": 0, "gpu_mode": "host", "efficiency_host": 0.95, "efficiency_gpu": 0.9,
            "nccl_min_busbw": None, "nccl_log": None, "nccl_tests_output": None}
SETTINGS = {"ib-v100": {"rdma_resource": "rdma/rdma_v100", "efficiency_host": 0.9},
            "ib-a100": {"rdma_resource": "rdma/rdma_a100", "gpus": 1, "gpu_mode": "auto"}}
# What the pods printed: perftest's recorded outputs, by side and test (the test's server and its first port).
OUTPUTS = {
    # The write-up's pod-to-pod failure: the client pod could not register memory (64 KiB memlock).
    ("v100-node-01:mlx5_0/1", "server"): "seed_err_ib_read_bw_server_ethernet_read_keys.txt",
    ("v100-node-01:mlx5_0/1", "client"): "err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt",
    # a100-node-02's client in GPU memory: the DMA-BUF run of NVIDIA's documentation, 92.38 Gb/s (on a 200 Gb/s link).
    ("a100-node-01:mlx5_1/1", "server"): "ib_write_bw_s1M_server_IB_MBsec.txt",
    ("a100-node-01:mlx5_1/1", "client"): "ib_write_bw_use_cuda_dmabuf_a_roce_pod_client_rst_indented.txt",
    ("a100-node-01:mlx5_bond_0/1", "server"): "ib_write_bw_s1M_server_IB_MBsec.txt",
    ("a100-node-01:mlx5_bond_0/1", "client"): "ib_write_bw_s1M_client_IB_MBsec.txt",
}
MEMLOCK = {"v100-node-02": "65536"}  # the capped client; the others as the base runtime spec leaves them
NCCL = FIXTURES / "nccl"


def _log(host, output):
    memlock = MEMLOCK.get(host, "unlimited")
    return ("Max locked memory         %s                %s                bytes\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"
            "CapEff:\t0000000000000000\n%s pinning numactl --cpunodebind=0 --membind=0\n%s ib_write_bw\n%s"
            % (memlock, memlock, _pod_proof.MARK, _pod_proof.START_MARK, (FIXTURES / "perftest" / output).read_text()))


def _finished(manifest, exit_code, node):
    pod = dict(manifest)
    pod["spec"] = dict(manifest["spec"], nodeName=node)
    pod["status"] = {"phase": "Succeeded" if exit_code == 0 else "Failed", "podIP": "10.244.0.%d" % (len(node) % 250),
                     "conditions": [{"type": "PodScheduled", "status": "True"}],
                     "containerStatuses": [{"name": _pod_proof.CONTAINER, "state": {"terminated": {"exitCode": exit_code}}}]}
    return pod


def pod_proof_run(tmp_path, nodes=None):
    """``(localhost variables as the role leaves them, the plan)``: pod_proof_status and pod_proof_findings.
    ``nodes`` are the hosts' facts the checks read (none by default: node_remediation has not reported)."""
    demo = demo_hosts(tmp_path)
    views = {host: {"ansible_facts": {"rdma": demo[host]["rdma"]}} for host in DEMO_HOSTS}
    plan = _pod_proof.plan(views, GROUPS, DEMO_HOSTS, {"groups": SETTINGS, "defaults": DEFAULTS})
    options = {"image": "registry.example.org/perftest-cuda:24.10", "settings": plan["settings"], "tool": plan["tool"]}
    pods, logs = [], {}
    for test in plan["tests"]:
        key = test["id"].split(">")[0]
        for side in ("server", "client"):
            output = OUTPUTS[(key, side)]
            manifest = _pod_proof.pod_manifest(test, side, options, "demo1", 1, server_address="10.244.0.9" if side == "client" else None)
            host = test[side]
            pods.append(_finished(manifest, 1 if output.startswith(("err_", "seed_err_")) else 0, test[side + "_node"]))
            logs[manifest["metadata"]["name"]] = _log(host, output)
    nccl = [{"group": "ib-v100", "source": "the saved file ib-v100.log", "log": (NCCL / "nccl_info_socket_no_ib_device_nccl_2.7.8_issue447.log").read_text(),
             "tests": None, "read_error": None, "min_busbw": None, "rdma_resource": "rdma/rdma_v100", "hosts": GROUPS["ib-v100"]}]
    params = {"plan": plan, "pods": pods, "logs": logs, "check_mode": False, "leftovers": [], "leftovers_removed": False,
              "nccl": nccl, "nodes": {} if nodes is None else nodes, "memlock_wanted": "unlimited", "start_timeout": 120}
    result = evaluate_role(_pod_proof.ROLE, {}, params, subject="cluster/kubernetes")
    return {"pod_proof_status": result["status"], "pod_proof_findings": result["findings"]}, plan
