"""The main job on the demo inventory, run as an operator runs it.

Every expected finding appears and no other; the A100 nodes' uncabled HCA is not a finding; the fail
switches fail exactly the faulty hosts; a second job reports from the fact cache alone; the HTML
report renders its host table in a real browser.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from browser import count_near, rendered_dom, screenshot
from playbook import run_playbook
from testpaths import COLLECTION_ROOT, COLLECTIONS_ROOT

CRITICAL_RED = (0xC6, 0x28, 0x28)
OK_GREEN = (0x2E, 0x7D, 0x32)

EXPECTED_FINDINGS = {
    "v100-node-01": [],
    "v100-node-02": [("ib_inventory", "port_down", "critical", "mlx5_1/1")],
    "a100-node-01": [],
    "a100-node-02": [("driver_verify", "dkms_missing_next_boot", "critical", "6.1.0-28-amd64"),
                     ("driver_verify", "dkms_error", "warning", "dkms")],
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A copy of the demo inventory directory without any built tree: the run builds its node roots."""
    base = tmp_path_factory.mktemp("demo")
    inventory = base / "inventory"
    shutil.copytree(COLLECTION_ROOT / "inventories/demo", inventory, ignore=shutil.ignore_patterns(".nodes*"))
    return {"base": base, "inventory": inventory, "args": ["-i", str(inventory)]}


@pytest.fixture(scope="module")
def site_run(demo):
    cache = demo["base"] / "fact-cache"
    run = run_playbook("rdma.node.site", *demo["args"], "-e", "fleet_report_dir=%s/report" % demo["base"],
                       env={"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache)})
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
    assert [h["name"] for h in report["hosts"]][:2] == ["a100-node-02", "v100-node-02"]  # worst first
    assert report["totals"] == {"hosts": 4, "critical": 2, "no_data": 0, "warning": 0, "ok": 2, "findings": 3, "cluster_findings": 0}
    assert report["schema_version"] == 2
    assert [(c["role"], c["check"], c["critical"], c["warning"], c["hosts"]) for c in report["findings_by_check"]] == [
        ("driver_verify", "dkms_missing_next_boot", 1, 0, 1), ("ib_inventory", "port_down", 1, 0, 1), ("driver_verify", "dkms_error", 0, 1, 1)]


def test_the_inventory_directory_builds_its_node_roots_without_a_warning(demo, site_run):
    run = site_run[0]
    assert "[WARNING]" not in run.stderr, run.stderr[-3000:]
    nodes = demo["inventory"] / ".nodes"
    assert nodes.is_symlink() and sorted(p.name for p in nodes.iterdir()) == sorted(EXPECTED_FINDINGS)
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
    assert run.failed_hosts == ["a100-node-02", "v100-node-02"]
    assert run.changed_hosts == []


def test_ib_inventory_fail_switch(demo):
    failing = run_playbook("rdma.node.ib_inventory", *demo["args"])
    assert (failing.rc, failing.failed_hosts) == (2, ["v100-node-02"])
    message = failing.task_results("Fail the host when a critical finding remains")["v100-node-02"]["msg"]
    assert message == "1 critical RDMA port finding(s) on v100-node-02: mlx5_1/1 is DOWN (Polling); expected ACTIVE"
    reporting = run_playbook("playbooks/ib_inventory.yml", *demo["args"], "-e", "ib_inventory_fail_on_findings=false")
    assert (reporting.rc, reporting.failed_hosts) == (0, [])
    stats = reporting.data["global_custom_stats"]["rdma_ib_inventory"]
    assert stats["v100-node-02"] == {"ok": False, "findings": ["mlx5_1/1 is DOWN (Polling); expected ACTIVE"]}
    assert stats["a100-node-01"] == {"ok": True, "findings": []}


def test_report_job_reads_the_fact_cache_alone(demo, site_run):
    """A separate job, no gathering, no checks: the same report from the jsonfile cache."""
    cache = demo["base"] / "fact-cache"
    cached_hosts = sorted(p.name.split("_", 1)[1] for p in cache.iterdir())  # files are <prefix>_<host>
    assert cached_hosts == ["a100-node-01", "a100-node-02", "v100-node-01", "v100-node-02"]
    run = run_playbook("playbooks/fleet_report.yml", "-i", str(demo["inventory"]), "-e", "fleet_report_dir=%s/cached-report" % demo["base"],
                       env={"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache)})
    assert run.rc == 0, run.stderr
    cached = json.loads((demo["base"] / "cached-report/fleet-report.json").read_text())
    assert findings_of(cached) == findings_of(site_run[1])
    assert [h["ports"] for h in cached["hosts"]] == [h["ports"] for h in site_run[1]["hosts"]]


def test_markdown_report(demo, site_run):
    text = (demo["base"] / "report/fleet-report.md").read_text()
    assert "**4 hosts**: 2 critical, 0 without data, 0 with warnings, 2 ok; 3 findings." in text
    assert re.search(r"^\| a100-node-02 \| ib-a100 \| CRITICAL \| 2/3 \| 200 Gb/s \| 6\.1\.0-27-amd64 / \*\*6\.1\.0-28-amd64\*\* \(differs\) \| "
                     r"MLNX_OFED_LINUX-23\.10-1\.1\.9\.0 \| - \| this node loses RDMA at its next reboot into 6\.1\.0-28-amd64", text, re.M)
    assert "| v100-node-01 | ib-v100 | OK | 2/2 | 100 Gb/s | 6.1.0-27-amd64 / 6.1.0-27-amd64 | MLNX_OFED_LINUX-23.10-1.1.9.0 | - | - |" in text
    assert "| mlx5_1/1 | DOWN | Polling | 10 | >= 100 | InfiniBand | ibp94s0f1 (Down) | down |" in text
    assert "| `driver_verify/dkms_missing_next_boot` | 1 | 0 | 0 | 1 |" in text
    # The demo's facts have no PCIe link yet: the HCA table says so instead of leaving the cell empty.
    assert "| mlx5_1 | MT4119 | 16.35.2000 | MT_0000000008 | unknown |" in text
    assert not re.search(r"\|[ \t]*\|", text)  # no blank cell anywhere


def test_html_report_renders_the_host_table(demo, site_run, tmp_path):
    page = str(demo["base"] / "report/fleet-report.html")
    dom = rendered_dom(page)
    rows = re.findall(r'<tr class="host (critical|warning|ok|no_data)" data-host="([^"]+)">', dom)
    assert rows == [("critical", "a100-node-02"), ("critical", "v100-node-02"), ("ok", "a100-node-01"), ("ok", "v100-node-01")]
    assert '<div class="port down"' in dom and "mlx5_1/1 DOWN Polling 10/100 ibp94s0f1 (Down)" in dom
    assert '<b>mlx5_0</b> MT4123 fw 20.39.1002 MT_0000000223 PCIe <span class="unknown">unknown</span>' in dom
    assert '<span class="differs" title="the next boot changes the kernel">6.1.0-28-amd64</span>' in dom
    width, height, pixels = screenshot(page, str(tmp_path / "report.png"))
    assert (width, height) == (1300, 900)
    # The critical badges, the row markers and the failed port are drawn in red, healthy ones in green.
    assert count_near(pixels, CRITICAL_RED) > 500
    assert count_near(pixels, OK_GREEN) > 100
    assert len({pixel for row in pixels[::7] for pixel in row[::7]}) > 50  # a real page, not a blank one


def test_html_report_filters_in_the_browser(demo, site_run):
    dom = rendered_dom(str(demo["base"] / "report/fleet-report.html"), "severity=critical&hide_healthy=1")
    assert re.findall(r'<tr class="host (\w+)" data-host="([^"]+)">', dom) == [("critical", "a100-node-02"), ("critical", "v100-node-02")]
    assert '<span id="shown">showing 2 of 4 hosts</span>' in dom
    assert "1 more hidden by the filter" in dom  # a100-node-02's dkms_error warning


@pytest.mark.parametrize("source", ["inventories/demo", "inventories/demo/demo.simulated_nodes.yml"])
def test_ansible_inventory_reads_the_directory_or_the_file_without_a_warning(tmp_path, source):
    inventory = tmp_path / "inventory"
    shutil.copytree(COLLECTION_ROOT / "inventories/demo", inventory, ignore=shutil.ignore_patterns(".nodes*"))
    target = inventory / source.split("inventories/demo", 1)[1].lstrip("/")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_ROOT), ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS="ignore", ANSIBLE_NOCOLOR="1")
    listed = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(target), "--list"],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    data = json.loads(listed.stdout)
    assert data["ib-v100"]["hosts"] == ["v100-node-01", "v100-node-02"] and data["ib-a100"]["hosts"] == ["a100-node-01", "a100-node-02"]
    host = data["_meta"]["hostvars"]["a100-node-02"]
    # Variables an inventory plugin sets are listed as unsafe (never templated): a path is a path.
    assert host["rdma_demo_node_root"] == {"__ansible_unsafe": str(inventory / ".nodes/a100-node-02")}
    assert host["ib_inventory_required_netdevs"] == ["bond0"]  # group_vars beside the file apply
    assert (inventory / ".nodes/a100-node-02/saved/dkms-status.txt").read_text().count("6.1.0-28-amd64") >= 1
