"""The pod proof in the fleet report: its section in the cluster part, a pair's finding on both of its hosts,
and each host's pods, pairs and NCCL transport, in the JSON, Markdown and HTML renderings (tests/pod_proof_run.py
judges a finished proof on the demo hosts with the real checks)."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.action.write_fleet_report import render
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report, pair_hosts
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_page import page_data
from pod_proof_run import DEMO_HOSTS, GROUPS, pod_proof_run

A100_PAIR = "a100-node-01:mlx5_1/1>a100-node-02:mlx5_1/1"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    localhost, dummy = pod_proof_run(tmp_path_factory.mktemp("demo"))
    hosts = {host: {"group_names": [g for g, members in GROUPS.items() if host in members],
                    "ib_inventory_status": {"ok": True, "critical": 0, "warning": 0}, "ib_inventory_findings": []} for host in DEMO_HOSTS}
    return build_report(hosts, registered_roles(), generated_at="2026-11-26T00:00:00Z", cluster_vars=[localhost])


def test_pair_ids_name_their_two_hosts():
    assert pair_hosts(A100_PAIR) == ["a100-node-01", "a100-node-02"]
    assert pair_hosts("fe80::1:mlx5_0/1>fe80::2:mlx5_0/1") == ["fe80::1", "fe80::2"]
    for subject in ("v100-node-02", "ib-v100", "mlx5_0/1", "a>b", None):
        assert pair_hosts(subject) is None


def test_a_pair_finding_shows_on_both_hosts_of_the_pair(report):
    by_host = {h["name"]: sorted((f["check"], f["subject"]) for f in h["findings"]) for h in report["hosts"]}
    # The GPU-memory client reached 92.38 of 200 Gb/s: below 0.90 x 200, on both hosts, since neither node is proven.
    assert by_host["a100-node-01"] == by_host["a100-node-02"] == [("bandwidth_below_expected", A100_PAIR)]
    # The capped pod's finding is about its node only; its pair's memlock failure is not repeated.
    assert by_host["v100-node-02"] == [("pod_memlock_capped", "v100-node-02")]
    assert by_host["v100-node-01"] == []
    # NCCL's socket fallback concerns the group: the cluster section has it, no host is failed for it.
    (cluster,) = report["clusters"]
    assert sorted((f["check"], f["subject"]) for f in cluster["findings"]) == [
        ("bandwidth_below_expected", A100_PAIR), ("nccl_socket_fallback", "ib-v100"), ("pod_memlock_capped", "v100-node-02")]
    assert {h["name"]: h["status"] for h in report["hosts"]} == {
        "a100-node-01": "critical", "a100-node-02": "critical", "v100-node-02": "critical", "v100-node-01": "ok"}
    # Counted once in the table of checks, on the two hosts it concerns.
    row = next(r for r in report["findings_by_check"] if r["check"] == "bandwidth_below_expected")
    assert (row["critical"], row["hosts"]) == (1, 2)


def test_each_host_shows_its_side_of_the_pod_proof(report):
    hosts = {h["name"]: h for h in report["hosts"]}
    a100 = hosts["a100-node-02"]["pod_proof"]
    # auto: peer memory on a100-node-02 (DMA-BUF needs the open module), host memory on a100-node-01 (no path); the pod's
    # best row of the -a run is 92.46 Gb/s.
    assert [(t["port"], t["role"], t["peer"], t["memory"], t["measured_gbps"], t["expected_gbps"], t["verdict"]) for t in a100["pairs"]] == [
        ("mlx5_1/1", "client", "a100-node-01", "GPU memory (cuda)", 92.46, 180.0, "below_expected"),
        ("mlx5_bond_0/1", "client", "a100-node-01", "GPU memory (cuda)", 93.357573, 9.0, "pass")]
    capped = hosts["v100-node-02"]["pod_proof"]["pods"]
    assert [(p["side"], p["memlock"], p["ipc_lock"], p["uid"]) for p in capped] == [("client", {"soft": "65536", "hard": "65536"}, False, 1000)]
    assert [(n["group"], n["network"]) for n in hosts["v100-node-01"]["pod_proof"]["nccl"]] == [("ib-v100", "Socket")]
    assert hosts["a100-node-01"]["pod_proof"]["nccl"] == []


def test_the_renderings_show_the_pod_proof(report):
    texts = render(report, ["markdown", "html"])
    markdown = texts["markdown"]
    # The cluster section's pairs (">" escaped for Markdown), NCCL per group, then each host's part.
    assert "| a100-node-01:mlx5_1/1\\>a100-node-02:mlx5_1/1 | GPU memory (cuda) | 92.46 | 180 | below_expected | - |" in markdown
    assert "| ib-v100 | the saved file ib-v100.log | Socket | none | 0 | - |" in markdown
    part = markdown.split("## Pod proof", 1)[1].split("## Findings", 1)[0]
    v100 = part.split("### v100-node-02", 1)[1].split("###", 1)[0]
    assert "| mlx5_0/1 | client of v100-node-01:mlx5_0/1 | host memory | - | 90 | failed | memlock |" in v100
    assert "| rdma-pod-proof-demo1-1-client | client | Failed | 1000 | 65536/65536 | no | numactl |" in v100
    assert "NCCL of ib-v100 (the saved file ib-v100.log): network Socket" in v100
    page = page_data(report)
    shown = {h["name"]: h["pod_proof"] for h in page["hosts"]}
    assert shown["v100-node-02"]["pods"] == [{"side": "client", "memlock": {"soft": "65536", "hard": "65536"}, "ipc_lock": False, "stuck": None}]
    html = texts["html"]
    assert "podProofLines(host)" in html and "NCCL's transport per group" in html
    assert "a100-node-01:mlx5_1/1&gt;a100-node-02:mlx5_1/1 GPU memory (cuda) 92.46/180 below_expected" in html
