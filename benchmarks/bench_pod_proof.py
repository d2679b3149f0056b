"""What the pod proof costs the controller for N pod pairs, against the FAKE Kubernetes API (tests/fake_k8s_api).

Builds 2N simulated GPU nodes of one group (the V100 hardware of the pod-proof tests, one port each tested, so the
group's cover round is N pairs), starts the FAKE API server with its FAKE scheduler and kubelet (each pod's real
command runs at once, the FAKE perftest replaying the write-up's pod-to-pod capture), and runs the pod_proof playbook
with the real kubernetes.core modules, for each number of pairs in flight, and once without pods (the plan, the
evidence and the judgement alone). It prints, per run:

* the pod proof play's wall time, and the CPU time of the whole ansible-playbook run with everything it started (its
  workers and their module runs, the facts' gathering included; the fake's pods are the benchmark's own children and
  not counted), from ``wait4``: the run without pods is the baseline;
* the pods created and the pod API requests per pair, by method (the fake records every request);
* where the play's time went: the polls of the batches (waiting for servers to listen and clients to end, bounded
  below by ``pod_proof_poll_interval``), the rest of the pod lifecycle, and the judgement.

Usage::

    python benchmarks/bench_pod_proof.py [--pairs 8] [--in-flight 4 8] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from testpaths import COLLECTIONS_ROOT, FIXTURES  # noqa: E402  (tests/)

sys.path.insert(0, str(COLLECTIONS_ROOT))  # the working tree as ansible_collections.rdma.node

import harness  # noqa: E402  (tests/)
from fake_k8s_api.pods import FakePods, NodeScenario  # noqa: E402  (tests/)
from fake_k8s_api.server import FakeKubeApi  # noqa: E402  (tests/)
from pod_proof_world import gather_then_pod_proof  # noqa: E402  (tests/)

SERVER_OK = str(FIXTURES / "perftest" / "ib_write_bw_s1M_server_IB_MBsec.txt")
CLIENT_OK = str(FIXTURES / "perftest" / "ib_write_bw_s1M_client_IB_MBsec.txt")
# The play of playbooks/pod_proof.yml, which the benchmark's playbook imports after gathering the facts.
PROOF_PLAY = "Prove RDMA between pods of each group, and NCCL's own transport"
POLL_TASKS = ("Wait until the servers listen, or cannot start", "Wait until the tests end (or the test timeout passes)")


def _node_hardware(number):
    guid = "9803:9b03:%04x:%03x" % (number, number)
    port = {"rate": "100 Gb/sec (4X EDR)", "lid": "0x%x" % (number + 16), "sm_lid": "0x1"}
    return {"devices": {"mlx5_0": {"bdf": "0000:5e:00.0", "hca_type": "MT4119", "node_guid": guid + "0",
                                   "ports": {1: dict(port, port_guid=guid + "0")}}},
            "netdevs": [{"name": "ibp94s0f0", "bdf": "0000:5e:00.0", "ipoib_of": "mlx5_0/1", "mtu": 2044}]}


def _k8s_node(name):
    capacity = {"cpu": "64", "memory": "527957044Ki", "pods": "110", "rdma/rdma_v100": "63"}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": dict(capacity), "allocatable": dict(capacity),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def build_world(work, pairs):
    hosts = ["gpu-node-%02d" % (index + 1) for index in range(2 * pairs)]
    inventory, playbook = gather_then_pod_proof(work, {host: _node_hardware(index + 1) for index, host in enumerate(hosts)})
    return hosts, inventory, playbook


def _seconds(duration):
    start = duration["start"].replace("Z", "+00:00")
    end = duration["end"].replace("Z", "+00:00")
    from datetime import datetime  # pylint: disable=import-outside-toplevel
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def run_once(work, hosts, inventory, playbook, in_flight, run_pods):
    pods = FakePods(work / ("kubelet-%s-%s" % (in_flight, run_pods)), default=NodeScenario(server_output=SERVER_OK, client_output=CLIENT_OK))
    api = FakeKubeApi(nodes=[_k8s_node(host) for host in hosts], extensions=[pods])
    api.start()
    try:
        kubeconfig = work / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        extra = {"pod_proof_image": "registry.example.org/perftest:24.10", "pod_proof_kubeconfig": str(kubeconfig),
                 "pod_proof_groups": {"ib-v100": {"rdma_resource": "rdma/rdma_v100", "efficiency_host": 0.9}},
                 "pod_proof_ports": ["mlx5_0/1"], "pod_proof_memlock_wanted": "8M", "pod_proof_poll_interval": 1,
                 "pod_proof_start_timeout": 60, "pod_proof_timeout": 60, "pod_proof_fail_on_findings": False,
                 "pod_proof_max_pairs_in_flight": in_flight, "pod_proof_run_pods": run_pods}
        argv = [harness.ANSIBLE_PLAYBOOK, "-i", str(inventory), str(playbook), "-e", json.dumps(extra)]
        env = harness.ansible_environment({"TMPDIR": str(work), "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp")})
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.monotonic()
            process = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=str(work))  # pylint: disable=consider-using-with
            _pid, status, usage = os.wait4(process.pid, 0)
            wall = time.monotonic() - started
            process.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            data = json.loads(out.read().decode())
        requests = [r for r in api.recorded() if "/pods" in r["path"]]
        created = len(pods.created)
    finally:
        pods.stop()
        api.stop()
    play = next(p for p in data["plays"] if p["play"]["name"] == PROOF_PLAY)
    tasks = [(t["task"]["name"], _seconds(t["task"]["duration"])) for t in play["tasks"]]
    status = {}
    for task in reversed(play["tasks"]):
        facts = (task["hosts"].get("localhost") or {}).get("ansible_facts") or {}
        if "pod_proof_status" in facts:
            status = facts["pod_proof_status"]
            break
    polls = sum(seconds for name, seconds in tasks if name.endswith(POLL_TASKS))
    judged = sum(seconds for name, seconds in tasks if "Judge" in name or "Keep each node" in name)
    return {"rc": process.returncode, "wall": wall, "play": _seconds(play["play"]["duration"]),
            "cpu": usage.ru_utime + usage.ru_stime, "created": created, "requests": requests, "polls": polls, "judged": judged,
            "pairs": len(status.get("pairs") or []), "passed": (status.get("verdicts") or {}).get("pass"),
            "batches": status.get("batches")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-pod-proof-"))
    try:
        hosts, inventory, playbook = build_world(work, args.pairs)
        cases = [(flight, True) for flight in args.in_flight] + [(max(args.in_flight), False)]
        results = {case: [] for case in cases}
        for dummy in range(args.rounds):
            for case in cases:  # alternating, so that the machine's load falls on every case alike
                results[case].append(run_once(work, hosts, inventory, playbook, *case))
        print("%d pairs of %d hosts (one port each), %d round(s); the machine is shared, so the times are what it gave then.\n"
              % (args.pairs, len(hosts), args.rounds))
        print("| pods | in flight | batches | pairs passed | play s (median) | of which polls s | judgement s | CPU s, whole run | "
              "pods created | POST/pair | GET/pair | DELETE/pair |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for (flight, run_pods), runs in results.items():
            last = runs[-1]
            per_pair = {method: sum(1 for r in last["requests"] if r["method"] == method) / float(args.pairs)
                        for method in ("POST", "GET", "DELETE")}
            print("| %s | %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %d | %.2f | %.2f | %.2f |" % (
                "yes" if run_pods else "no (plan, evidence, judgement)", flight if run_pods else "-", last["batches"] if run_pods else "-",
                "%s/%s" % (last["passed"], last["pairs"]) if run_pods else "-",
                statistics.median(r["play"] for r in runs), statistics.median(r["polls"] for r in runs),
                statistics.median(r["judged"] for r in runs), statistics.median(r["cpu"] for r in runs), last["created"],
                per_pair["POST"], per_pair["GET"], per_pair["DELETE"]))
            if any(r["rc"] != 0 for r in runs):
                print("  (ansible-playbook exited with %s)" % sorted({r["rc"] for r in runs}))
    finally:
        shutil.rmtree(str(work), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
