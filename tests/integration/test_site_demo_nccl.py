"""The main job's NCCL play on the demo inventory: each group's saved NCCL log (inventories/demo/*.nccl-log.txt,
real logs) judged on the controller by the pod proof's checks, without a pod, and shown in the report.

ib-v100's log is a Kubernetes pod's NCCL that found no RDMA device and fell back to sockets; ib-a100's used IB
without GPUDirect RDMA, which a100-node-01's planted fault (nvidia_peermem not loaded) explains. The nodes' facts
come from the same run's first play.
"""

from __future__ import annotations

import json

import pytest

from harness import run_playbook
from testpaths import demo_inventory_copy

NCCL_PLAY = "Judge NCCL's transport of each group (no pods)"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("nccl-demo")
    inventory = base / "inventory"
    demo_inventory_copy(inventory)
    return {"base": base, "inventory": inventory}


@pytest.fixture(scope="module")
def site(demo):
    run = run_playbook("rdma.node.site", "-i", str(demo["inventory"]), "-e", "fleet_report_dir=%s/report" % demo["base"],
                       fact_cache=demo["base"] / "fact-cache")
    report = json.loads((demo["base"] / "report/fleet-report.json").read_text())
    return run, report


def test_the_saved_logs_are_judged_in_the_cluster_section(demo, site):
    run, report = site
    (cluster,) = report["clusters"]
    assert cluster["subject"] == "cluster/kubernetes" and list(cluster["roles"]) == ["pod_proof"]
    found = {(f["check"], f["severity"], f["subject"]): f["message"] for f in cluster["findings"]}
    assert sorted(found) == [("nccl_no_gpudirect", "warning", "ib-a100"), ("nccl_socket_fallback", "critical", "ib-v100")]
    fallback = found[("nccl_socket_fallback", "critical", "ib-v100")]
    assert fallback.startswith("NCCL fell back to TCP sockets in the saved file %s/ib-v100.nccl-log.txt (group ib-v100): "
                               "7 channel(s) go over NET/Socket via eth0." % demo["inventory"])
    assert "NCCL found no RDMA device (NET/IB : No device found): the job's pods did not request the group's RDMA resource " \
           "(rdma/rdma_v100)" in fallback
    # The GPUDirect facts that the first play gathered name the node without peer memory, and only that one.
    no_gdr = found[("nccl_no_gpudirect", "warning", "ib-a100")]
    assert "No peer memory: a100-node-01: neither nvidia_peermem nor nv_peer_mem is loaded" in no_gdr
    assert "a100-node-02" not in no_gdr
    # The main job runs no pod: the pairs are not checked, and said so, never passed.
    status = cluster["roles"]["pod_proof"]
    assert (status["run_pods"], status["pairs"], status["pods"]) == (False, [], [])
    assert [(n["check"], n["subject"]) for n in status["not_checked"]] == [("pair_not_run", "pods")]
    assert status["not_checked"][0]["reason"].startswith("pod_proof_run_pods is false: no pod pair was planned or run in the group(s) "
                                                         "ib-a100, ib-v100; only the groups' NCCL evidence was judged")
    assert [(n["group"], n["network"], n["transports"], n["gdrdma_channels"]) for n in status["nccl"]] == [
        ("ib-a100", None, {"net_ib": 16}, 0), ("ib-v100", "Socket", {"net_socket": 7}, 0)]
    assert report["totals"]["cluster_findings"] == 2


def test_nccl_fails_no_host_and_publishes_nothing_of_its_own(site):
    run, report = site
    # The same hosts fail as without the play: a group's log does not say which node is at fault.
    assert run.failed_hosts == sorted(h["name"] for h in report["hosts"] if any(f["severity"] == "critical" for f in h["findings"]))
    assert len(run.failed_hosts) == 7
    assert not [f for h in report["hosts"] for f in h["findings"] if f["role"] == "pod_proof"]
    assert sorted(run.custom_stats) == ["rdma_fleet", "rdma_fleet_report"]
    assert run.changed_hosts == []
    (evaluated,) = [r["localhost"] for r in run.results_of("Judge the pods and NCCL's transport, keep and publish the findings")
                    if "ansible_facts" in r.get("localhost", {})]
    assert "pod_proof_status" in evaluated["ansible_facts"] and "ansible_stats" not in evaluated


def test_each_host_shows_its_groups_nccl_transport(demo, site):
    dummy, report = site
    hosts = {h["name"]: h for h in report["hosts"]}
    assert [(n["group"], n["network"]) for n in hosts["v100-node-02"]["pod_proof"]["nccl"]] == [("ib-v100", "Socket")]
    assert [(n["group"], n["transports"]) for n in hosts["a100-node-01"]["pod_proof"]["nccl"]] == [("ib-a100", {"net_ib": 16})]
    markdown = (demo["base"] / "report/fleet-report.md").read_text()
    assert "| ib-v100 | the saved file %s/ib-v100.nccl-log.txt | Socket | net_socket 7 | 0 | - |" % demo["inventory"] in markdown
    assert "- **not checked** `pod_proof/pair_not_run` (pods): pod_proof_run_pods is false" in markdown
    # The log names its HCAs only by NCCL's device numbers (NET/IB/4, /5).
    assert "NCCL of ib-a100 (the saved file %s/ib-a100.nccl-log.txt): network unknown; channels net_ib 16; 0 with GPUDirect RDMA; " \
           "HCAs NET/IB/4, NET/IB/5." % demo["inventory"] in markdown
    html = (demo["base"] / "report/fleet-report.html").read_text()
    assert "ib-v100: network Socket, net_socket 7; 0 GPUDirect RDMA" in html


def test_the_play_is_left_out_on_request(demo, tmp_path):
    run = run_playbook("rdma.node.site", "-i", str(demo["inventory"]), "-e", "fleet_report_dir=%s" % tmp_path, "-e", "rdma_nccl=false",
                       env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert run.rc == 2
    assert NCCL_PLAY in [t["name"] for t in run.tasks]
    assert not [t for t in run.tasks if t["name"].startswith("rdma.node.pod_proof")]
    assert json.loads((tmp_path / "fleet-report.json").read_text())["clusters"] == []


# A node's part of an earlier pod proof (a pod and its limits, ib-v100's NCCL over IB), as rdma.node.pod_proof keeps it.
EARLIER_PROOF = {"pairs": [], "memlock_capped": False, "time": 1000.0,
                 "pods": [{"name": "rdma-proof-1-server", "side": "server", "memlock": {"soft": "unlimited", "hard": "unlimited"},
                           "ipc_lock": True}],
                 "nccl": [{"group": "ib-v100", "network": "IB", "transports": {"net_ib": 8}, "gdrdma_channels": 8}]}
KEEP_A_PROOF = """
- name: What a pod proof left on a node
  hosts: v100-node-02
  gather_facts: false
  tasks:
    - name: Keep the node's part of the proof
      ansible.builtin.set_fact:
        pod_proof_node: "{{ earlier }}"
        cacheable: true
"""


def test_the_nodes_keep_each_groups_verdict_and_the_next_run_writes_it_to_their_metrics(demo, site):
    """The main job keeps each group's NCCL verdict in the facts of its nodes (the fact cache), in one task, and
    leaves a node's part of a pod proof as that job left it; node_health writes the verdicts of the node's own
    groups to its textfile in the next run, which reads the cache, beside the pod proof's pods."""
    run, dummy = site
    kept = run.facts("v100-node-02")["pod_proof_nccl_groups"]
    assert sorted(kept) == ["ib-a100", "ib-v100"] and kept["ib-v100"]["network"] == "Socket"
    assert run.facts("a100-node-01")["pod_proof_nccl_groups"] == kept
    assert kept["ib-a100"]["transports"] == {"net_ib": 16}
    assert not any("pod_proof_node" in run.facts(host) for host in ("v100-node-02", "a100-node-01"))
    # One task for the fleet, not a delegated set_fact per node: the role's has nothing to loop over.
    (per_node,) = [t for t in run.tasks if t["name"].endswith("Keep each node's part of the proof in its facts")]
    assert [(result.get("skipped"), result.get("results")) for result in per_node["hosts"].values()] == [(True, [])]
    (per_fleet,) = [t for t in run.tasks if t["name"] == "Keep each group's NCCL verdict in the facts of the nodes"]
    assert len(per_fleet["hosts"]) == 1
    playbook = demo["base"] / "earlier_proof.yml"
    playbook.write_text(KEEP_A_PROOF)
    earlier = run_playbook(str(playbook), "-i", str(demo["inventory"]), "-e", json.dumps({"earlier": EARLIER_PROOF}),
                           fact_cache=demo["base"] / "fact-cache")
    assert earlier.rc == 0, earlier.stderr
    again = run_playbook("rdma.node.site", "-i", str(demo["inventory"]), "-e", "fleet_report_dir=%s/report-again" % demo["base"],
                         fact_cache=demo["base"] / "fact-cache")
    assert again.rc == 2
    # The pod proof's part is still there after a second main job.
    assert again.facts("v100-node-02")["pod_proof_node"] == EARLIER_PROOF
    prom = demo["inventory"] / ".nodes" / "v100-node-02" / "var/lib/prometheus/node-exporter/rdma_node.prom"
    text = prom.read_text()
    # The group's verdict the first main job kept is newer than the pod proof's NCCL: it is shown, with the pod.
    assert 'rdma_node_nccl_socket_fallback{group="ib-v100"} 1' in text
    assert 'rdma_node_nccl_channels{group="ib-v100",transport="net_socket"} 7' in text
    assert 'transport="net_ib"' not in text and 'group="ib-a100"' not in text
    assert 'rdma_node_pod_memlock_bytes{limit="soft",side="server"} +Inf' in text
    # The oldest judgement shown: the pod's.
    assert "rdma_node_pod_proof_timestamp_seconds 1000.0" in text
    a100 = (demo["inventory"] / ".nodes" / "a100-node-01" / "var/lib/prometheus/node-exporter/rdma_node.prom").read_text()
    assert 'rdma_node_nccl_socket_fallback{group="ib-a100"} 0' in a100 and 'rdma_node_nccl_gdrdma_channels{group="ib-a100"} 0' in a100
    assert "rdma_node_pod_proof_timestamp_seconds %r" % kept["ib-a100"]["time"] in a100
    assert 'group="ib-v100"' not in a100
