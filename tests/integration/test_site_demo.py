"""The main job on the demo inventory, run as an operator runs it.

Every expected finding appears and no other; the A100 nodes' uncabled HCA is not a finding; the fail
switches fail exactly the faulty hosts; a second job reports from the fact cache alone; the HTML
report renders its host table in a real browser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from browser import count_near, rendered_dom, screenshot
from harness import FactCache, run_playbook
from testpaths import COLLECTIONS_PATH, demo_inventory_copy

CRITICAL_RED = (0xC6, 0x28, 0x28)
OK_GREEN = (0x2E, 0x7D, 0x32)

# Each planted fault of CONTRIBUTING.md's table is exactly one finding on its host; node_health adds one
# GPUDirect verdict per GPU node (info where a path works). The physical layer's faults (issue 20, one
# per item) are on the nodes 03 and 04 of each group.
GPUDIRECT_READY = ("node_health", "gpudirect", "info", "gpudirect")
EXPECTED_FINDINGS = {
    "v100-node-01": [("node_health", "pcie_degraded", "critical", "0000:5e:00"), GPUDIRECT_READY],
    "v100-node-02": [("ib_inventory", "port_down", "critical", "mlx5_1/1"),
                     ("node_health", "link_flapping", "critical", "mlx5_0/1"), GPUDIRECT_READY],
    "v100-node-03": [("node_health", "pcie_aer", "critical", "0000:5e:00.0"),
                     ("node_health", "pcie_p2p_redirect", "warning", "0000:5f:00.0-mlx5_0"), GPUDIRECT_READY],
    "v100-node-04": [("node_health", "link_ber", "critical", "mlx5_0/1"),
                     ("node_health", "link_down_duration", "warning", "mlx5_0/1"), GPUDIRECT_READY],
    "a100-node-01": [("node_health", "counter_rising", "critical", "mlx5_1/1"),
                     ("node_health", "gpudirect", "critical", "gpudirect")],
    "a100-node-02": [("driver_verify", "dkms_missing_next_boot", "critical", "6.1.0-28-amd64"),
                     ("driver_verify", "dkms_error", "warning", "dkms"),
                     ("fleet_consistency", "firmware_drift", "warning", "a100-node-02"), GPUDIRECT_READY],
    "a100-node-03": [("node_health", "roce_qos", "critical", "ens12f1np1"),
                     ("node_health", "counter_rising", "critical", "mlx5_bond_0/1"), GPUDIRECT_READY],
    "a100-node-04": [("node_health", "hca_temperature", "warning", "mlx5_1 asic"),
                     ("fleet_consistency", "group_consensus", "warning", "a100-node-04"), GPUDIRECT_READY],
}
ALL_HOSTS = sorted(EXPECTED_FINDINGS)
# What the demo honestly cannot give, and so the report lists as not checked: the memlock check, which
# needs a containerd of the node's own (node_health_memlock is false: the simulated nodes are
# directories), and the bit error rate of a port without a link (the uncabled mlx5_0 of every A100
# node, v100-node-02's polling mlx5_1), for which mlxlink prints no BER. Everything else the checks read
# (hwmon, AER, config space, ECN, saved dcb and mlxlink outputs, the kernel log) every node gives.
NOT_CHECKED = {(host, "node_health", "effective_memlock", None) for host in ALL_HOSTS} | {
    (host, "node_health", "link_ber", "mlx5_0/1") for host in ("a100-node-01", "a100-node-02", "a100-node-03", "a100-node-04")} | {
    ("v100-node-02", "node_health", "link_ber", "mlx5_1/1")}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A copy of the demo inventory directory without any built tree: the run builds its node roots."""
    base = tmp_path_factory.mktemp("demo")
    inventory = base / "inventory"
    demo_inventory_copy(inventory)
    return {"base": base, "inventory": inventory, "args": ["-i", str(inventory)]}


@pytest.fixture(scope="module")
def site_run(demo):
    cache = demo["base"] / "fact-cache"
    run = run_playbook("rdma.node.site", *demo["args"], "-e", "fleet_report_dir=%s/report" % demo["base"], fact_cache=cache)
    report = json.loads((demo["base"] / "report/fleet-report.json").read_text())
    return run, report


def findings_of(report):
    return {
        host["name"]: sorted((f["role"], f["check"], f["severity"], f["subject"]) for f in host["findings"])
        for host in report["hosts"]
    }


def test_every_expected_finding_and_no_other(site_run):
    report = site_run[1]
    assert findings_of(report) == {host: sorted(found) for host, found in EXPECTED_FINDINGS.items()}
    # worst first: by critical findings, then warnings, then name; a100-node-04 has warnings only.
    assert [h["name"] for h in report["hosts"]] == ["a100-node-01", "a100-node-03", "v100-node-02", "a100-node-02", "v100-node-03",
                                                    "v100-node-04", "v100-node-01", "a100-node-04"]
    assert report["totals"] == {"hosts": 8, "critical": 7, "unreachable": 0, "no_data": 0, "warning": 1, "ok": 0, "findings": 23,
                                "cluster_findings": 2, "hosts_not_fully_checked": 8}
    assert report["schema_version"] == 3
    # site's NCCL play judges each group's saved NCCL log (inventories/demo/group_vars/all.yml): ib-v100's job fell back
    # to sockets, ib-a100's used IB without GPUDirect RDMA. They fail no host, and are the cluster section's only findings.
    assert [(f["role"], f["check"], f["severity"], f["subject"]) for c in report["clusters"] for f in c["findings"]] == [
        ("pod_proof", "nccl_socket_fallback", "critical", "ib-v100"), ("pod_proof", "nccl_no_gpudirect", "warning", "ib-a100")]
    assert {(h["name"], n["role"], n["check"], n["subject"]) for h in report["hosts"] for n in h["not_checked"]} == NOT_CHECKED
    assert [(c["role"], c["check"], c["critical"], c["warning"], c["info"], c["hosts"]) for c in report["findings_by_check"]] == [
        ("node_health", "counter_rising", 2, 0, 0, 2), ("node_health", "gpudirect", 1, 0, 7, 8),
        ("driver_verify", "dkms_missing_next_boot", 1, 0, 0, 1), ("ib_inventory", "port_down", 1, 0, 0, 1),
        ("node_health", "link_ber", 1, 0, 0, 1), ("node_health", "link_flapping", 1, 0, 0, 1),
        ("node_health", "pcie_aer", 1, 0, 0, 1), ("node_health", "pcie_degraded", 1, 0, 0, 1), ("node_health", "roce_qos", 1, 0, 0, 1),
        ("pod_proof", "nccl_socket_fallback", 1, 0, 0, 0), ("driver_verify", "dkms_error", 0, 1, 0, 1), ("fleet_consistency", "firmware_drift", 0, 1, 0, 1),
        ("fleet_consistency", "group_consensus", 0, 1, 0, 1), ("node_health", "hca_temperature", 0, 1, 0, 1),
        ("node_health", "link_down_duration", 0, 1, 0, 1), ("node_health", "pcie_p2p_redirect", 0, 1, 0, 1),
        # the cluster section's findings are counted by check too, on no host
        ("pod_proof", "nccl_no_gpudirect", 0, 1, 0, 0)]


def test_planted_faults_say_what_the_readme_says(site_run):
    messages = {(h["name"], f["check"]): f["message"] for h in site_run[1]["hosts"] for f in h["findings"]}
    assert messages[("v100-node-01", "pcie_degraded")].startswith("The PCIe link of mlx5_0, mlx5_1 (0000:5e:00) runs at Gen3 x8, below the Gen3 x16")
    assert messages[("v100-node-02", "link_flapping")].startswith("mlx5_0/1 is flapping: link_downed rose from 3 to 4 in ")
    assert messages[("v100-node-02", "link_flapping")].endswith("the kernel log shows 3 carrier losses of ibp94s0f0.")
    assert "symbol_error rose from 1873 to 2410" in messages[("a100-node-01", "counter_rising")]
    assert messages[("a100-node-01", "gpudirect")].startswith("GPUDirect RDMA has no working path. Peer memory: neither nvidia_peermem")
    drift = "a100-node-02: mlx5_1 (MT4123) has firmware 20.37.1014 where 7 of the 8 MT4123 HCAs of ib-a100 have 20.39.1002."
    assert messages[("a100-node-02", "firmware_drift")] == drift
    # The physical layer's faults, each read from what the simulated node holds.
    assert messages[("v100-node-03", "pcie_aer")].startswith(
        "mlx5_0 (PCI 0000:5e:00.0) counted 2 new nonfatal PCIe errors (1 to 3 between the samples of this run; types with counts: CmpltTO)")
    assert messages[("v100-node-03", "pcie_p2p_redirect")].startswith(
        "Peer-to-peer traffic between GPU 0000:5f:00.0 and mlx5_0 (0000:5e:00.0) cannot turn at bridge 0000:5b:00.0: the switch "
        "downstream port 0000:5c:08.0 has P2P Request Redirect (ReqRedir+) and P2P Completion Redirect (CmpltRedir+) set")
    assert messages[("v100-node-04", "link_ber")].startswith("mlx5_0/1: effective BER 3.1e-11 after FEC is above 1e-12")
    assert messages[("v100-node-04", "link_down_duration")] == (
        "mlx5_0/1 (ibp94s0f0) was down for 6.8 min from 2026-11-24T03:12:44+0000 before it came back: a drop of 240 s or longer.")
    assert messages[("a100-node-03", "roce_qos")].startswith(
        "ens12f1np1 (a slave of bond0) has PFC on priorities none (from dcb pfc show), the group expects 3")
    assert "rnr_nak_retry_err rose from 4 to 6 in " in messages[("a100-node-03", "counter_rising")]
    assert messages[("a100-node-04", "hca_temperature")] == "asic of mlx5_1 is at 98 °C, within 10 °C of its critical 105 °C."
    assert messages[("a100-node-04", "group_consensus")] == (
        "a100-node-04: kernel is 6.1.0-26-amd64 where 3 of the 4 hosts of ib-a100 that report it have 6.1.0-27-amd64.")


def test_the_inventory_directory_builds_its_node_roots_without_a_warning(demo, site_run):
    run = site_run[0]
    assert "[WARNING]" not in run.stderr, run.stderr[-3000:]
    nodes = demo["inventory"] / ".nodes"
    assert nodes.is_symlink() and sorted(p.name for p in nodes.iterdir() if p.is_dir()) == ALL_HOSTS
    # The port the report names DOWN is the one the description planted, read from the tree the run built.
    assert (nodes / "v100-node-02/sys/class/infiniband/mlx5_1/ports/1/state").read_text() == "1: DOWN\n"


def test_uncabled_a100_hca_is_allowed_down(site_run):
    for host in site_run[1]["hosts"]:
        if host["name"].startswith("a100"):
            verdicts = {p["port"]: p["verdict"] for p in host["ports"]}
            assert verdicts["mlx5_0/1"] == "allowed_down"
            assert verdicts["mlx5_bond_0/1"] == "ok"


def test_site_fails_exactly_the_faulty_hosts(site_run):
    run = site_run[0]
    assert run.rc == 2
    assert run.failed_hosts == [host for host in ALL_HOSTS if host != "a100-node-04"]  # warnings only
    # The main job changes nothing; node_health's metrics (each node's textfile directory) are an output.
    assert run.changed_hosts == []
    # One task per host gathers (one node_facts call), checks the three roles and writes the metrics.
    evaluated = run.task_results("run the checks of ib_inventory, driver_verify and node_health")
    assert sorted(h for h, r in evaluated.items() if r.get("metrics_written")) == ALL_HOSTS
    for result in evaluated.values():
        assert {"rdma", "rdma_driver", "ib_inventory_status", "driver_verify_status", "node_health_status"} <= set(result["ansible_facts"])
    per_host_tasks = [task["name"] for task in run.tasks if len(task["hosts"]) > 1]
    assert per_host_tasks == ["Gather the node's RDMA, driver and health facts in one call, run the checks of ib_inventory, driver_verify and "
                              "node_health", "Fail the host for its critical findings"]
    message = run.task_results("Fail the host for its critical findings")["v100-node-02"]["msg"]
    assert message.startswith("2 critical finding(s) on v100-node-02: mlx5_1/1 is DOWN (Polling); expected ACTIVE; ")
    # The job's statistics: the report's summary, sized for AWX, not every host's findings per role.
    assert sorted(run.custom_stats) == ["rdma_fleet", "rdma_fleet_report"]


@pytest.fixture(scope="module")
def one_healthy_host(tmp_path_factory):
    """The demo with v100-node-01's PCIe fault mended (both HCAs trained at Gen3 x16): a healthy host."""
    base = tmp_path_factory.mktemp("healthy")
    inventory = base / "inventory"
    demo_inventory_copy(inventory)
    description = inventory / "demo.simulated_nodes.yml"
    nodes = yaml.safe_load(description.read_text())
    for device in nodes["hardware"]["v100-node-01"]["devices"].values():
        assert device["pcie"]["current_width"] == 8
        device["pcie"] = dict(device["pcie"], current_width=16)
    description.write_text(yaml.safe_dump(nodes, sort_keys=False))
    cache = base / "fact-cache"
    run = run_playbook("rdma.node.site", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % base, fact_cache=cache)
    return {"base": base, "inventory": inventory, "cache": cache, "run": run}


def test_only_the_failing_hosts_run_a_task_to_fail(one_healthy_host):
    run = one_healthy_host["run"]
    assert run.rc == 2, run.stderr[-3000:]
    assert run.failed_hosts == CRITICAL_HOSTS
    assert run.stats["v100-node-01"]["ok"] > 0
    assert sorted(run.task_results("Fail the host for its critical findings")) == CRITICAL_HOSTS
    report = json.loads((one_healthy_host["base"] / "report/fleet-report.json").read_text())
    assert findings_of(report)["v100-node-01"] == [GPUDIRECT_READY]
    # Report only: the last play has no host, the job succeeds.
    reporting = run_playbook("rdma.node.site", "-i", str(one_healthy_host["inventory"]), "-e", "rdma_fail_on_findings=false",
                             "-e", "fleet_report_dir=%s/report-only" % one_healthy_host["base"], env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert (reporting.rc, reporting.failed_hosts) == (0, []), reporting.stderr[-3000:]
    assert [task["name"] for task in reporting.tasks if len(task["hosts"]) > 1] == [
        "Gather the node's RDMA, driver and health facts in one call, run the checks of ib_inventory, driver_verify and node_health"]


CRITICAL_HOSTS = ["a100-node-01", "a100-node-02", "a100-node-03", "v100-node-02", "v100-node-03", "v100-node-04"]
# The role on every host of a play fails each critical host in its own last task, which every host runs.
ROLE_ON_EVERY_HOST = [{"name": "Report", "hosts": "all", "gather_facts": False, "roles": ["rdma.node.fleet_report"]}]


@pytest.mark.parametrize("playbook, switch, failed, fail_task", [
    ("playbooks/fleet_report.yml", None, [], None),
    # The report job writes the report once; only the failing hosts run a task of their own.
    ("playbooks/fleet_report.yml", "true", CRITICAL_HOSTS, ("Fail the host for its critical findings", CRITICAL_HOSTS)),
    (ROLE_ON_EVERY_HOST, "true", CRITICAL_HOSTS, ("Fail the hosts with a critical finding", ALL_HOSTS)),
], ids=["report-job", "report-job-failing", "role-on-every-host-failing"])
def test_the_report_fails_each_host_with_a_critical_finding_when_asked(one_healthy_host, tmp_path, playbook, switch, failed, fail_task):
    """The report's switch (an AWX survey answer) fails every critical host, not only the first host of the play."""
    extra = ["-e", "fleet_report_fail_on_critical=%s" % switch] if switch else []
    run = run_playbook(playbook, "-i", str(one_healthy_host["inventory"]), "-e", "fleet_report_dir=%s" % tmp_path, *extra,
                       fact_cache=one_healthy_host["cache"])
    assert (run.rc, run.failed_hosts) == (2 if failed else 0, failed), run.stderr[-3000:]
    per_host_tasks = [(task["name"].split(" : ")[-1], sorted(task["hosts"])) for task in run.tasks if len(task["hosts"]) > 1]
    assert [task for task in per_host_tasks if task[0].startswith("Fail")] == ([fail_task] if fail_task else [])
    if playbook == "playbooks/fleet_report.yml":
        assert per_host_tasks == ([fail_task] if fail_task else [])
    assert json.loads((tmp_path / "fleet-report.json").read_text())["totals"]["critical"] == len(CRITICAL_HOSTS)


def test_the_report_job_checks_its_options_against_the_write_entry_point(one_healthy_host, tmp_path):
    """The role's write entry point (tasks_from: write) has its own argument spec: a bad answer stops the job before any file."""
    run = run_playbook("playbooks/fleet_report.yml", "-i", str(one_healthy_host["inventory"]), "-e", "fleet_report_dir=%s/report" % tmp_path,
                       "-e", "fleet_report_fail_on_critical=maybe", fact_cache=one_healthy_host["cache"])
    assert run.rc == 2
    [(task, result)] = run.failed_results(run.failed_hosts[0])
    assert task.endswith("Validating arguments against arg spec 'write' - Write one RDMA report for the whole fleet, once, and name the hosts to fail")
    assert result["argument_errors"][0].startswith("argument 'fleet_report_fail_on_critical' is of type str and we were unable to convert to bool")
    assert not (tmp_path / "report").exists()


def test_ib_inventory_fail_switch(demo):
    failing = run_playbook("rdma.node.ib_inventory", *demo["args"])
    assert (failing.rc, failing.failed_hosts) == (2, ["v100-node-02"])
    message = failing.task_results("Fail the host for its critical findings or for what stopped the check")["v100-node-02"]["msg"]
    assert message == "ib_inventory on v100-node-02: 1 critical: mlx5_1/1 is DOWN (Polling); expected ACTIVE"
    # One task on every host; only the failed host takes the rescue, which keeps and publishes its findings.
    assert [(task["name"].split(" : ")[-1], sorted(task["hosts"])) for task in failing.tasks] == [
        ("Gather the InfiniBand and RoCE facts, check the ports against the group's expectations, keep and publish the findings",
         ALL_HOSTS),
        ("Keep and publish the findings of the failed host", ["v100-node-02"]),
        ("Fail the host for its critical findings or for what stopped the check", ["v100-node-02"])]
    assert [f["check"] for f in failing.custom_stats["rdma_ib_inventory"]["v100-node-02"]["findings"]] == ["port_down"]
    reporting = run_playbook("playbooks/ib_inventory.yml", *demo["args"], "-e", "ib_inventory_fail_on_findings=false")
    assert (reporting.rc, reporting.failed_hosts) == (0, [])
    # One shape for every role: {host: {status, findings}}, the findings whole, the status counted in Python.
    stats = reporting.custom_stats["rdma_ib_inventory"]
    assert sorted(stats) == ALL_HOSTS
    assert [(f["check"], f["severity"], f["subject"]) for f in stats["v100-node-02"]["findings"]] == [("port_down", "critical", "mlx5_1/1")]
    assert (stats["v100-node-02"]["status"]["ok"], stats["v100-node-02"]["status"]["critical"]) == (False, 1)
    assert stats["a100-node-01"]["findings"] == [] and stats["a100-node-01"]["status"]["ok"] is True


def test_site_without_facts_injected_as_variables_finds_the_same(tmp_path, site_run):
    """inject_facts_as_vars = false, the default ansible-core 2.21 announces for 2.24 and the faster setting at
    fleet scale (benchmarks/README.md): rdma.node reads ansible_facts only, so the same hosts fail with the same
    findings, the same things are not checked, and the NCCL play reads the same hosts."""
    inventory = tmp_path / "inventory"
    demo_inventory_copy(inventory)
    cache = tmp_path / "fact-cache"
    run = run_playbook("rdma.node.site", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % tmp_path, fact_cache=cache,
                       env={"ANSIBLE_INJECT_FACT_VARS": "False"})
    assert run.rc == 2, run.stderr
    report = json.loads((tmp_path / "report/fleet-report.json").read_text())
    assert run.failed_hosts == site_run[0].failed_hosts
    assert findings_of(report) == findings_of(site_run[1])
    assert {(h["name"], n["check"], n["subject"]) for h in report["hosts"] for n in h["not_checked"]} == {
        (h["name"], n["check"], n["subject"]) for h in site_run[1]["hosts"] for n in h["not_checked"]}

    def cluster_findings(of):
        return [(f["check"], f["severity"], f["subject"]) for c in of["clusters"] for f in c["findings"]]
    assert cluster_findings(report) == cluster_findings(site_run[1]) == [
        ("nccl_socket_fallback", "critical", "ib-v100"), ("nccl_no_gpudirect", "warning", "ib-a100")]
    # Each group's NCCL verdict was kept in the facts of every node, as with the facts injected.
    assert all(sorted(FactCache(cache).facts(host)["pod_proof_nccl_groups"]) == ["ib-a100", "ib-v100"] for host in ALL_HOSTS)


def test_report_job_reads_the_fact_cache_alone(demo, site_run):
    """A separate job, no gathering, no checks: the same report from the jsonfile cache."""
    cache = demo["base"] / "fact-cache"
    # localhost keeps the cluster-scope results (the NCCL play's pod_proof status and findings).
    assert FactCache(cache).hosts() == sorted(ALL_HOSTS + ["localhost"])
    run = run_playbook("playbooks/fleet_report.yml", "-i", str(demo["inventory"]), "-e", "fleet_report_dir=%s/cached-report" % demo["base"],
                       fact_cache=cache)
    assert run.rc == 0, run.stderr
    cached = json.loads((demo["base"] / "cached-report/fleet-report.json").read_text())
    assert findings_of(cached) == findings_of(site_run[1])
    assert [h["ports"] for h in cached["hosts"]] == [h["ports"] for h in site_run[1]["hosts"]]
    assert cached["clusters"] == site_run[1]["clusters"]


def test_markdown_report(demo, site_run):
    text = (demo["base"] / "report/fleet-report.md").read_text()
    assert ("**8 hosts**: 7 critical, 0 unreachable, 0 without data, 1 with warnings, 0 ok (8 of them with checks that could not run, "
            "listed as not checked); 23 findings; 2 cluster findings.") in text
    assert re.search(r"^\| a100-node-02 \| ib-a100 \| CRITICAL, 2 not checked \| 2/3 \| 200 Gb/s \| 6\.1\.0-27-amd64 / \*\*6\.1\.0-28-amd64\*\* \(differs\) \| "
                     r"MLNX_OFED_LINUX-23\.10-1\.1\.9\.0 \| - \| this node loses RDMA at its next reboot into 6\.1\.0-28-amd64", text, re.M)
    assert ("| v100-node-01 | ib-v100 | CRITICAL, 1 not checked | 2/2 | 100 Gb/s | 6.1.0-27-amd64 / 6.1.0-27-amd64 | MLNX_OFED_LINUX-23.10-1.1.9.0 | - | "
            "The PCIe link of mlx5_0, mlx5_1 (0000:5e:00) runs at Gen3 x8") in text
    assert "| mlx5_1/1 | DOWN | Polling | 10 | >= 100 | InfiniBand | ibp94s0f1 (Down) | down |" in text
    assert "| `driver_verify/dkms_missing_next_boot` | 1 | 0 | 0 | 1 |" in text
    # node_health gathers the PCIe links: v100-node-01's shared link at x8, v100-node-02's at x16.
    assert text.count("| mlx5_1 | MT4119 | 16.35.2000 | MT_0000000008 | Gen3 x8 of Gen3 x16 |") == 1
    assert text.count("| mlx5_1 | MT4119 | 16.35.2000 | MT_0000000008 | Gen3 x16 of Gen3 x16 |") == 3
    assert "| `node_health/pcie_degraded` | 1 | 0 | 0 | 1 |" in text
    # The drifted firmware stands out with the group's; the check that could not run is said on each host.
    assert text.count("| mlx5_1 | MT4123 | **20.37.1014** (differs: the group has 20.39.1002) | MT_0000000223 | Gen4 x16 of Gen4 x16 |") == 1
    assert text.count("- **not checked** `node_health/effective_memlock`: node_health_memlock is false\n") == 8
    # The physical layer's values, each planted one shown once: the hot ASIC, the AER rise, the BER, PFC off.
    assert text.count("| mlx5_1 asic | 98 °C | 105 °C |") == 1 and text.count("| mlx5_1 asic | 61 °C | 105 °C |") == 3
    assert text.count("0 fatal, 3 non-fatal, 0 correctable: 0000:5e:00.0 mlx5_0 non-fatal 1 to 3 (between the samples of this run).") == 1
    assert text.count("PCIe AER on 5 functions (each HCA function and the bridges above it): 0 fatal, 0 non-fatal, 0 correctable.") == 3
    assert text.count("| mlx5_0/1 | 3.1e-11 | 3.1e-11 | 43 °C |") == 1
    assert text.count("| mlx5_0/1 | no link (Disabled) | no link (Disabled) | none |") == 4
    assert text.count("| ens12f1np1 (bond0) | dscp | none | 3 | 3 |") == 1 and text.count("| ens12f1np1 (bond0) | dscp | 3 | 3 | 3 |") == 3
    assert not re.search(r"\|[ \t]*\|", text)  # no blank cell anywhere
    # A finding reads as its message, which names its port, and the check that made it, once.
    assert "- **critical** mlx5_1/1 is DOWN (Polling); expected ACTIVE `ib_inventory/port_down`" in text
    assert "mlx5_1/1: mlx5_1/1" not in text


def test_html_report_renders_the_host_table(demo, site_run, tmp_path):
    page = str(demo["base"] / "report/fleet-report.html")
    dom = rendered_dom(page)
    rows = re.findall(r'<tr class="host (critical|warning|ok|no_data)" data-host="([^"]+)">', dom)
    assert rows == [("critical", host) for host in ("a100-node-01", "a100-node-03", "v100-node-02", "a100-node-02", "v100-node-03", "v100-node-04",
                                                    "v100-node-01")] + [("warning", "a100-node-04")]
    assert '<div class="port down"' in dom and "mlx5_1/1 DOWN Polling 10/100 ibp94s0f1 (Down)" in dom
    assert '<b>mlx5_0</b> MT4123 fw 20.39.1002 MT_0000000223 PCIe Gen4 x16 of Gen4 x16' in dom
    assert dom.count('<b>mlx5_0</b> MT4119 fw 16.35.2000 MT_0000000008 PCIe <span class="below">Gen3 x8</span> of Gen3 x16') == 1
    assert '<span class="differs" title="the next boot changes the kernel">6.1.0-28-amd64</span>' in dom
    assert dom.count('fw <span class="differs" title="differs from its group: 20.39.1002">20.37.1014</span>') == 1
    assert dom.count('<span class="badge not-checked" title="checks that could not run or judge">1 not checked</span>') == 3
    assert dom.count('<span class="badge not-checked" title="checks that could not run or judge">2 not checked</span>') == 5
    # The host detail shows the physical layer: temperatures, AER totals (the rise marked), BER and QoS.
    assert dom.count('<div class="phys">mlx5_1 asic 98 °C (critical 105 °C)</div>') == 1
    assert dom.count('<div class="phys below">0000:5e:00.0 mlx5_0: non-fatal 1 → 3 (this run)</div>') == 1
    assert dom.count('PCIe AER on 5 functions: 0 fatal, 0 non-fatal, 0 correctable') == 3
    assert dom.count('<div class="phys">mlx5_0/1 BER 3.1e-11 effective, 3.1e-11 raw, module 43 °C</div>') == 1
    assert dom.count('<div class="phys">ens12f1np1 (bond0) trust dscp, PFC none, ECN 3/3</div>') == 1
    assert dom.count('<div class="phys">ens12f1np1 (bond0) trust dscp, PFC 3, ECN 3/3</div>') == 3
    width, height, pixels = screenshot(page, str(tmp_path / "report.png"))
    assert (width, height) == (1300, 900)
    # The critical badges, the row markers and the failed port are drawn in red, healthy ones in green.
    assert count_near(pixels, CRITICAL_RED) > 500
    assert count_near(pixels, OK_GREEN) > 100
    assert len({pixel for row in pixels[::7] for pixel in row[::7]}) > 50  # a real page, not a blank one


def test_html_report_filters_in_the_browser(demo, site_run):
    dom = rendered_dom(str(demo["base"] / "report/fleet-report.html"), "severity=critical&hide_healthy=1")
    assert re.findall(r'<tr class="host (\w+)" data-host="([^"]+)">', dom) == [("critical", host) for host in (
        "a100-node-01", "a100-node-03", "v100-node-02", "a100-node-02", "v100-node-03", "v100-node-04", "v100-node-01")]
    assert '<span id="shown">showing 7 of 8 hosts</span>' in dom  # a100-node-04 has warnings only
    # Hidden by the filter: each GPUDirect info, a100-node-02's two warnings, v100-node-03's and v100-node-04's warning.
    assert re.findall(r"(\d+) more hidden by the filter", dom) == ["1", "1", "3", "2", "2", "1"]


@pytest.mark.parametrize("source", ["inventories/demo", "inventories/demo/demo.simulated_nodes.yml"])
def test_ansible_inventory_reads_the_directory_or_the_file_without_a_warning(tmp_path, source):
    inventory = tmp_path / "inventory"
    demo_inventory_copy(inventory)
    target = inventory / source.split("inventories/demo", 1)[1].lstrip("/")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS="ignore", ANSIBLE_NOCOLOR="1")
    listed = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(target), "--list"],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    data = json.loads(listed.stdout)
    assert data["ib-v100"]["hosts"] == ["v100-node-01", "v100-node-02", "v100-node-03", "v100-node-04"]
    assert data["ib-a100"]["hosts"] == ["a100-node-01", "a100-node-02", "a100-node-03", "a100-node-04"]
    host = data["_meta"]["hostvars"]["a100-node-02"]
    # Variables an inventory plugin sets are listed as unsafe (never templated): a path is a path.
    assert host["rdma_demo_node_root"] == {"__ansible_unsafe": str(inventory / ".nodes/a100-node-02")}
    assert host["ib_inventory_required_netdevs"] == ["bond0"]  # group_vars beside the file apply
    assert (inventory / ".nodes/a100-node-02/saved/dkms-status.txt").read_text().count("6.1.0-28-amd64") >= 1


def test_the_one_task_of_site_finds_what_the_three_role_playbooks_find(demo, site_run):
    """site.yml checks three roles in one task with one node call; each role's own playbook, run apart
    (its own options, its own fact module), must come to the same findings and status on every host."""
    site_facts = {host: site_run[0].facts(host) for host in EXPECTED_FINDINGS}
    for role in ("ib_inventory", "driver_verify", "node_health"):
        alone = run_playbook("playbooks/%s.yml" % role, *demo["args"], "-e", "%s_fail_on_findings=false" % role,
                             env={"ANSIBLE_CACHE_PLUGIN": "memory"})
        assert (alone.rc, alone.failed_hosts) == (0, []), alone.stderr
        per_host = [task["name"] for task in alone.tasks if len(task["hosts"]) > 1]
        # No separate validation task, no assert: one task per host (driver_verify's remediation include is skipped).
        assert len(per_host) == (2 if role == "driver_verify" else 1), per_host
        for host, published in alone.custom_stats["rdma_" + role].items():
            key = [(f["check"], f["severity"], f["subject"], f["message"]) for f in published["findings"]]
            # The counter deltas differ by the seconds between the two runs' samples: compare their kind only.
            in_site = [(f["check"], f["severity"], f["subject"], f["message"]) for f in site_facts[host][role + "_findings"]]
            assert [k[:3] for k in key] == [k[:3] for k in in_site], (role, host)
            if role != "node_health":
                assert key == in_site, (role, host)
            assert published["status"]["checks"] == site_facts[host][role + "_status"]["checks"], (role, host)


def test_check_mode_with_a_limit_checks_the_limited_hosts_and_writes_no_metrics(demo, tmp_path):
    run = run_playbook("rdma.node.site", *demo["args"], "--check", "--limit", "ib-a100", "-e", "fleet_report_dir=%s" % tmp_path,
                       "-e", "node_health_metrics_dir=%s/metrics" % tmp_path, env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert run.rc == 2 and run.failed_hosts == ["a100-node-01", "a100-node-02", "a100-node-03"]
    evaluated = run.task_results("run the checks of ib_inventory, driver_verify and node_health")
    assert sorted(evaluated) == ["a100-node-01", "a100-node-02", "a100-node-03", "a100-node-04"]
    assert not any(result["metrics_written"] for result in evaluated.values())
    report = json.loads((tmp_path / "fleet-report.json").read_text())
    assert findings_of(report) == {host: sorted(found) for host, found in EXPECTED_FINDINGS.items() if host.startswith("a100")}


def test_a_gather_switch_that_is_neither_true_nor_false_is_one_sentence(demo):
    plays = [{"name": "Check the ports", "hosts": "v100-node-01", "gather_facts": False,
              "tasks": [{"name": "Evaluate", "rdma.node.evaluate": {"role": "ib_inventory", "gather": "perhaps"}}]}]
    run = run_playbook(plays, *demo["args"], env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert run.rc == 2
    message = run.task_results("Evaluate")["v100-node-01"]["msg"]
    assert message == "rdma.node.evaluate: gather is 'perhaps'; expected true, false or a dict with module and args"
