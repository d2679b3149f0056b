"""Fleet consistency: HCAs that differ from the rest of their inventory group, and the fleet report
that puts those findings on the odd hosts."""

from __future__ import annotations

import copy

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report
from testpaths import COLLECTION_ROOT, FIXTURES

GROUPS = {"v100-node-01": ["ib-v100"], "v100-node-02": ["ib-v100"], "a100-node-01": ["ib-a100"], "a100-node-02": ["ib-a100"]}


@pytest.fixture(scope="module")
def demo_devices(tmp_path_factory):
    dest = tmp_path_factory.mktemp("demo")
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(dest))
    return {host: gather(str(dest / host / "sys"))[0]["devices"] for host in GROUPS}


def fleet(devices_by_host, groups=None):
    groups = groups or GROUPS
    return {"hosts": {h: {"group_names": groups[h], "devices": d} for h, d in devices_by_host.items()}}


def run(facts):
    return evaluate_role("fleet_consistency", facts, {}, subject="fleet")["findings"]


def test_demo_odd_firmware_is_one_warning_on_a100_node_02(demo_devices):
    findings = run(fleet(demo_devices))
    assert [(f["check"], f["severity"], f["subject"]) for f in findings] == [("firmware_drift", "warning", "a100-node-02")]
    assert findings[0]["message"] == ("a100-node-02: mlx5_1 (MT4123) has firmware 20.37.1014 where 3 of the 4 MT4123 HCAs "
                                      "of ib-a100 have 20.39.1002.")
    assert (findings[0]["expected"], findings[0]["actual"]) == ("20.39.1002", "20.37.1014")


def test_demo_report_puts_it_on_the_odd_host_and_in_the_totals(demo_devices):
    hosts = {h: {"group_names": GROUPS[h], "ansible_facts": {"rdma": {"devices": d}, "node_health_status": {"ok": True}, "node_health_findings": []}}
             for h, d in demo_devices.items()}
    report = build_report(hosts, ["node_health"], generated_at="2026-11-25T00:00:00Z")
    entries = {e["name"]: e for e in report["hosts"]}
    assert [f["check"] for f in entries["a100-node-02"]["findings"]] == ["firmware_drift"]
    assert entries["a100-node-02"]["status"] == "warning"
    assert all(entries[h]["findings"] == [] for h in ("a100-node-01", "v100-node-01", "v100-node-02"))
    assert report["totals"]["findings"] == 1
    assert [(r["role"], r["check"], r["warning"], r["hosts"]) for r in report["findings_by_check"]] == [
        ("fleet_consistency", "firmware_drift", 1, 1)]


def test_h100_board_and_type_drift_across_hosts(tmp_path):
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), str(tmp_path))
    h100 = gather(str(tmp_path))[0]["devices"]
    odd_board = copy.deepcopy(h100)
    odd_board["mlx5_4"]["board_id"] = "MT_0000000970"  # another PSID: another vendor's card
    fewer = {name: d for name, d in copy.deepcopy(h100).items() if name != "mlx5_9"}
    fewer["mlx5_9"] = dict(h100["mlx5_9"], hca_type="MT4125")
    groups = {h: ["gpu-h100"] for h in ("h1", "h2", "h3", "h4")}
    findings = run(fleet({"h1": h100, "h2": h100, "h3": odd_board, "h4": fewer}, groups))
    found = sorted((f["check"], f["subject"]) for f in findings)
    assert found == [("board_id_drift", "h3"), ("hca_type_drift", "h4")]
    kinds = [f for f in findings if f["check"] == "hca_type_drift"][0]
    assert kinds["message"] == "h4 has the HCAs MT4125, 7 x MT4129, MT41692 where 3 of the 4 hosts of gpu-h100 have 8 x MT4129, MT41692."
    assert kinds["actual"] == ["MT4125"] + ["MT4129"] * 7 + ["MT41692"] and "where 3 of the 4 hosts of gpu-h100 have" in kinds["message"]


def test_a_split_without_majority_names_every_host_and_other_groups_do_not_mix(demo_devices):
    devices = {h: copy.deepcopy(demo_devices[h]) for h in ("v100-node-01", "v100-node-02")}
    devices["v100-node-02"]["mlx5_0"]["fw_ver"] = devices["v100-node-02"]["mlx5_1"]["fw_ver"] = "16.36.1010"
    findings = run(fleet(devices))
    assert sorted(f["subject"] for f in findings) == ["v100-node-01", "v100-node-01", "v100-node-02", "v100-node-02"]
    assert "are split with no majority" in findings[0]["message"]
    # The same firmware in another group is that group's business.
    groups = {"v100-node-01": ["ib-v100"], "v100-node-02": ["other"]}
    assert run(fleet(devices, groups)) == []


def test_hosts_without_devices_or_groups_are_quiet():
    assert run({"hosts": {"a": {"group_names": [], "devices": {}}, "b": {"group_names": ["g"], "devices": None}}}) == []
