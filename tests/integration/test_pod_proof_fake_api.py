"""The pod_proof role with the real kubernetes.core modules against a FAKE Kubernetes API server.

Real: ansible-playbook, the role, rdma.node.ib_facts reading simulated sysfs trees, the
``kubernetes.core`` modules (k8s, k8s_info, k8s_log) and the ``kubernetes`` client speaking HTTP, the
pods' own shell command (what the role puts in each Pod), run by ``/bin/sh`` as uid 1000 without
capabilities under the node's memlock limit, reading the real ``/proc``.

Fake, and why: there is no Kubernetes API server, scheduler, kubelet or RDMA hardware to be had here.
``tests/fake_k8s_api`` (FakeKubeApi with its FakePods extension) answers the API on 127.0.0.1 and
plays the scheduler and the kubelet; the FAKE perftest (``tests/fake_tools/perftest``) on the pods'
PATH replays real recorded outputs (``tests/fixtures/perftest``): the write-up's pod-to-pod
``ib_write_bw -s 1M`` (93.36 Gb/s on a 100 Gb/s EDR port) and its ``Couldn't allocate MR``.
This machine cannot raise a memlock limit above 8 MiB, so the pods of a "remediated" node cannot be
faked with an unlimited limit: the passing runs ask for what this machine gives (8 MiB).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

import harness
from fake_k8s_api.pods import FakePods, NodeScenario
from fake_k8s_api.server import FakeKubeApi
from pod_proof_world import gather_then_pod_proof
from testpaths import FIXTURES

PERFTEST = FIXTURES / "perftest"
NCCL = FIXTURES / "nccl"
SERVER_OK = str(PERFTEST / "ib_write_bw_s1M_server_IB_MBsec.txt")
CLIENT_OK = str(PERFTEST / "ib_write_bw_s1M_client_IB_MBsec.txt")
CLIENT_MEMLOCK = str(PERFTEST / "err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt")
SERVER_PEER_GONE = str(PERFTEST / "seed_err_ib_read_bw_server_ethernet_read_keys.txt")


def _v100(guid):
    port = {"rate": "100 Gb/sec (4X EDR)", "lid": "0x11", "sm_lid": "0x1"}
    return {
        "devices": {
            "mlx5_0": {"bdf": "0000:5e:00.0", "hca_type": "MT4119", "node_guid": guid + "0", "ports": {1: dict(port, port_guid=guid + "0")}},
            "mlx5_1": {"bdf": "0000:5e:00.1", "hca_type": "MT4119", "node_guid": guid + "1", "ports": {1: dict(port, port_guid=guid + "1")}},
        },
        "netdevs": [
            {"name": "ibp94s0f0", "bdf": "0000:5e:00.0", "ipoib_of": "mlx5_0/1", "mtu": 2044},
            {"name": "ibp94s0f1", "bdf": "0000:5e:00.1", "ipoib_of": "mlx5_1/1", "mtu": 2044, "dev_id": "0x1"},
        ],
    }


HARDWARE = {"v100-node-01": _v100("9803:9b03:00a1:5c2"), "v100-node-02": _v100("9803:9b03:00a1:6e4"),
            "v100-node-03": _v100("9803:9b03:00a1:7a1"), "v100-node-04": _v100("9803:9b03:00a1:8b2")}
# What node_remediation left in the fact cache of v100-node-02 (the shape of its status; containerd
# capped at 8 MiB by systemd, the spec never probed).
NODE_02_REMEDIATION = {
    "ok": True, "check_mode": False, "changed": [], "restarted": False, "rolled_back": None,
    "containerd": {"pid": 812, "memlock": {"soft": "8388608", "hard": "8388608"}, "nofile": {"soft": "1048576", "hard": "1048576"},
                   "systemd": {"LimitMEMLOCK": "8388608"}},
    "probe": {"source": "none", "root": "", "result": "not_run", "memlock": None, "nofile": None, "error": None,
              "note": "no test container image is configured"},
    "pods_to_recreate": [],
}


def node(name, resources=None):
    capacity = {"cpu": "64", "memory": "527957044Ki", "pods": "110"}
    capacity.update(resources or {})
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": dict(capacity), "allocatable": dict(capacity),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def cluster(without_resource=()):
    return [node(name, None if name in without_resource else {"rdma/rdma_v100": "63"}) for name in HARDWARE] + [node("cpu-node-01")]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pod-proof")
    inventory, playbook = gather_then_pod_proof(tmp, HARDWARE, {"v100-node-02": {"node_remediation_status": NODE_02_REMEDIATION}})
    yield {"tmp": tmp, "inventory": inventory, "playbook": playbook}
    shutil.rmtree(str(tmp), ignore_errors=True)


class Cluster:
    """A FAKE API server with FAKE pods, started for one test and stopped with its processes."""

    def __init__(self, tmp, scenarios, default=None, without_resource=()):
        self.pods = FakePods(tmp / "kubelet", scenarios=scenarios, default=default)
        self.api = FakeKubeApi(nodes=cluster(without_resource), extensions=[self.pods])
        self.kubeconfig = tmp / "kubeconfig"

    def __enter__(self):
        self.api.start()
        self.kubeconfig.write_text(self.api.kubeconfig())
        return self

    def __exit__(self, *exc):
        self.pods.stop()
        self.api.stop()


BASE_VARS = {
    "pod_proof_image": "registry.example.org/perftest:24.10",
    "pod_proof_groups": {"ib-v100": {"rdma_resource": "rdma/rdma_v100", "efficiency_host": 0.9}},
    # What this machine can give a container (its hard limit): see the module docstring.
    "pod_proof_memlock_wanted": "8M",
    "pod_proof_poll_interval": 1,
    "pod_proof_start_timeout": 20,
    "pod_proof_timeout": 20,
    "pod_proof_fail_on_findings": False,
}


def run(world, fake, extra_vars=None, check=False, name="run"):
    cache = world["tmp"] / ("cache-" + name)
    fake.api.clear_log()
    started = time.monotonic()
    result = harness.run_playbook(
        str(world["playbook"]), inventory=world["inventory"], check=check, fact_cache=cache, cwd=str(world["tmp"]), timeout=300,
        extra_vars=dict(BASE_VARS, pod_proof_kubeconfig=str(fake.kubeconfig), **(extra_vars or {})),
        env={"ANSIBLE_LOCAL_TEMP": str(world["tmp"] / "ansible-tmp"), "TMPDIR": str(world["tmp"])})
    elapsed = time.monotonic() - started
    facts = {}
    for task in result.tasks:
        facts.update((task["hosts"].get("localhost") or {}).get("ansible_facts") or {})
    return {"run": result, "facts": facts, "requests": fake.api.recorded(), "elapsed": elapsed, "stats": result.custom_stats}


def findings(outcome, check=None):
    return [f for f in outcome["facts"].get("pod_proof_findings", []) if check is None or f["check"] == check]


def pod_requests(outcome, method=None):
    return [r for r in outcome["requests"] if "/pods" in r["path"] and (method is None or r["method"] == method)]


# ------------------------------------------------------------------------------------------------


def test_a_pair_passes_and_every_pod_is_removed(world):
    ok = NodeScenario(server_output=SERVER_OK, client_output=CLIENT_OK)
    with Cluster(world["tmp"] / "pass", {}, default=ok) as fake:
        outcome = run(world, fake, name="pass")
        assert outcome["run"].rc == 0, outcome["run"].stdout[-3000:]
        assert not [r for r in outcome["requests"] if r["unknown"]], "requests the fake does not serve"
        status = outcome["facts"]["pod_proof_status"]
        assert status["ok"], status["summary"]
        # The write-up's pod-to-pod run: 11129.09 MiB/s = 93.36 Gb/s, judged at 0.9 of the 100 Gb/s EDR rate.
        assert [(p["id"], p["verdict"], round(p["measured_gbps"], 2)) for p in status["pairs"]] == [
            ("v100-node-01:mlx5_0/1>v100-node-04:mlx5_0/1", "pass", 93.36),
            ("v100-node-01:mlx5_1/1>v100-node-04:mlx5_1/1", "pass", 93.36),
            ("v100-node-02:mlx5_0/1>v100-node-03:mlx5_0/1", "pass", 93.36),
            ("v100-node-02:mlx5_1/1>v100-node-03:mlx5_1/1", "pass", 93.36),
        ]
        assert sorted(p["verdict"] for p in status["pairs"]) == ["pass"] * 4
        assert all(p["expected_gbps"] == 90.0 for p in status["pairs"])
        # What each pod printed of itself: non-root, no capability, this machine's 8 MiB.
        for pod in status["pods"]:
            assert (pod["uid"], pod["capabilities"], pod["ipc_lock"], pod["memlock"]) == (1000, [], False, {"soft": "8388608", "hard": "8388608"})
        created = pod_requests(outcome, "POST")
        assert len(created) == 8 and all(r["status"] == 201 for r in created)
        bodies = [r["body"] for r in created]
        assert {b["spec"]["securityContext"]["runAsUser"] for b in bodies} == {1000}
        assert all(b["spec"]["securityContext"]["runAsNonRoot"] for b in bodies)
        assert all(b["spec"]["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]} for b in bodies)
        assert all(b["spec"]["containers"][0]["resources"]["limits"] == {"rdma/rdma_v100": 1} for b in bodies)
        pinned = {(b["metadata"]["annotations"]["rdma.node/inventory-host"],
                   b["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                   ["matchFields"][0]["values"][0]) for b in bodies}
        assert all(host == node_ for host, node_ in pinned)
        # Two batches of at most 4 pairs: the ports of one HCA are never in two tests at once.
        assert fake.pods.running() == []
        assert fake.pods.pods == {}, "every pod was deleted"
        assert sorted(fake.pods.deleted) == sorted(fake.pods.created)
        published = outcome["stats"]["rdma_pod_proof"]
        assert list(published) == ["cluster/kubernetes"]
        world["pass_outcome"] = outcome


def test_api_requests_per_pair(world):
    outcome = world.get("pass_outcome")
    if outcome is None:
        pytest.fail("the passing run did not complete")
    pairs = len(outcome["facts"]["pod_proof_status"]["pairs"])
    per_pair = {method: len(pod_requests(outcome, method)) / pairs for method in ("POST", "GET", "DELETE")}
    print("pod API requests per pair: %s; run %.1f s for %d pairs" % (per_pair, outcome["elapsed"], pairs))
    assert per_pair["POST"] == 2 and per_pair["DELETE"] == 2


def test_a_memlock_capped_pod_names_the_node_state(world):
    scenarios = {"v100-node-03": NodeScenario(server_output=SERVER_OK, client_output=CLIENT_MEMLOCK, memlock=65536),
                 }
    ok = NodeScenario(server_output=SERVER_PEER_GONE, client_output=CLIENT_OK)
    with Cluster(world["tmp"] / "memlock", scenarios, default=ok) as fake:
        outcome = run(world, fake, {"pod_proof_max_pairs_in_flight": 1, "pod_proof_ports": ["mlx5_0/1"]}, name="memlock")
        assert outcome["run"].rc == 0
        capped = [f for f in findings(outcome, "pod_memlock_capped") if f["subject"] == "v100-node-03"]
        assert capped, findings(outcome)
        message = capped[0]["message"]
        assert "runs as uid 1000 with Max locked memory 64 KiB (soft) / 64 KiB (hard) and without an effective CAP_IPC_LOCK" in message
        assert "ib_write_bw failed with Couldn't allocate MR" in message
        assert "node_remediation has not reported on v100-node-03" in message
        assert capped[0]["severity"] == "critical"
        # The perftest error itself is not reported a second time as a bare perftest failure.
        assert not findings(outcome, "perftest_failed_memlock")
        assert fake.pods.pods == {}


def test_a_pod_that_never_starts_says_why(world):
    ok = NodeScenario(server_output=SERVER_OK, client_output=CLIENT_OK)
    with Cluster(world["tmp"] / "unschedulable", {}, default=ok, without_resource=("v100-node-04",)) as fake:
        outcome = run(world, fake, {"pod_proof_ports": ["mlx5_0/1"], "pod_proof_start_timeout": 4}, name="unschedulable")
        stuck = findings(outcome, "pod_not_started")
        assert [f["subject"] for f in stuck] == ["v100-node-04"], findings(outcome)
        assert "0/5 nodes are available: 1 Insufficient rdma/rdma_v100" in stuck[0]["message"]
        assert fake.pods.pods == {}


def test_a_socket_fallback_log_fails_with_its_cause(world):
    with Cluster(world["tmp"] / "nccl", {}) as fake:
        groups = {"ib-v100": {"rdma_resource": "rdma/rdma_v100", "nccl_log": str(NCCL / "nccl_info_socket_fallback_no_ib_device_k8s_pod_2.27.3.log")}}
        outcome = run(world, fake, {"pod_proof_groups": groups, "pod_proof_run_pods": False}, name="nccl")
        (fallback,) = findings(outcome, "nccl_socket_fallback")
        assert fallback["severity"] == "critical" and fallback["subject"] == "ib-v100"
        assert fallback["message"].startswith("NCCL fell back to TCP sockets in the saved file ")
        assert "7 channel(s) go over NET/Socket via eth0" in fallback["message"]
        assert "NCCL found no RDMA device (NET/IB : No device found)" in fallback["message"]
        assert not pod_requests(outcome), "pod_proof_run_pods false runs no pod"


def test_cleanup_after_a_timeout(world):
    hangs = NodeScenario(server_output=SERVER_OK, client_output=CLIENT_OK, client_hang=True)
    with Cluster(world["tmp"] / "timeout", {}, default=hangs) as fake:
        outcome = run(world, fake, {"pod_proof_ports": ["mlx5_0/1"], "pod_proof_timeout": 4}, name="timeout")
        assert outcome["run"].rc == 0
        verdicts = [p["verdict"] for p in outcome["facts"]["pod_proof_status"]["pairs"]]
        assert verdicts == ["failed", "failed"], outcome["facts"]["pod_proof_status"]["pairs"]
        assert fake.pods.pods == {} and fake.pods.running() == []
        assert len(pod_requests(outcome, "DELETE")) == 4


def test_cleanup_after_an_interrupted_run_and_check_mode_creates_nothing(world):
    hangs = NodeScenario(server_output=SERVER_OK, client_output=CLIENT_OK, server_hang=True)
    with Cluster(world["tmp"] / "interrupted", {}, default=hangs) as fake:
        argv = [harness.ANSIBLE_PLAYBOOK, "-i", str(world["inventory"]), str(world["playbook"]),
                "-e", json.dumps(dict(BASE_VARS, pod_proof_kubeconfig=str(fake.kubeconfig), pod_proof_ports=["mlx5_0/1"]))]
        env = harness.ansible_environment({"TMPDIR": str(world["tmp"]), "ANSIBLE_LOCAL_TEMP": str(world["tmp"] / "ansible-tmp")})
        process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while len(fake.pods.pods) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert len(fake.pods.pods) == 2, "the run created its server pods"
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the interruption: the play never reaches its cleanup
            process.wait(timeout=30)
        left = sorted(fake.pods.pods)
        assert len(left) == 2

        checked = run(world, fake, {"pod_proof_ports": ["mlx5_0/1"]}, check=True, name="check")
        assert [r for r in checked["requests"] if r["method"] != "GET"] == [], "check mode sends no write"
        assert sorted(fake.pods.pods) == left
        (would,) = findings(checked, "leftover_pods")
        assert would["severity"] == "warning" and "would remove 2 pod(s)" in would["message"]

        fake.pods.default = NodeScenario(server_output=SERVER_OK, client_output=CLIENT_OK)
        again = run(world, fake, {"pod_proof_ports": ["mlx5_0/1"]}, name="again")
        (removed,) = findings(again, "leftover_pods")
        assert removed["severity"] == "info" and "Removed 2 pod(s)" in removed["message"]
        assert fake.pods.pods == {} and fake.pods.running() == []
