"""The report puts the worst hosts first and reads findings wherever the roles left them."""

from __future__ import annotations

import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report, failing_hosts

SOURCES = registered_roles()


def finding(role, check, severity, subject="x"):
    return {"role": role, "check": check, "severity": severity, "subject": subject, "message": "%s %s" % (check, subject),
            "expected": None, "actual": None}


HOSTS = {
    "healthy": {
        "group_names": ["ib-v100"],
        "ib_inventory_status": {"ok": True, "critical": 0, "warning": 0, "ports": [], "facts_summary": {"port_count": 2}},
        "ib_inventory_findings": [],
        "driver_verify_status": {"ok": True, "critical": 0, "warning": 0, "kernel": "6.1.0-27-amd64"},
        "driver_verify_findings": [],
    },
    "warned": {
        "group_names": ["ib-a100"],
        "ib_inventory_status": {"ok": True, "critical": 0, "warning": 1},
        "ib_inventory_findings": [finding("ib_inventory", "netdev_carrier_down", "warning")],
    },
    "broken": {
        "group_names": ["ib-v100", "gpu"],
        "ib_inventory_status": {"ok": False, "critical": 1, "warning": 0},
        "ib_inventory_findings": [finding("ib_inventory", "port_down", "critical", "mlx5_1/1")],
        "driver_verify_status": {"ok": False, "critical": 1, "warning": 1},
        "driver_verify_findings": [finding("driver_verify", "dkms_error", "warning"),
                                   finding("driver_verify", "dkms_missing_next_boot", "critical", "6.1.0-28-amd64")],
    },
    # What a jsonfile fact cache gives a later job: cacheable facts under ansible_facts only.
    "cached": {
        "group_names": ["ib-a100"],
        "ansible_facts": {
            "ib_inventory_status": {"ok": False, "critical": 2},
            "ib_inventory_findings": [finding("ib_inventory", "port_down", "critical", "a"),
                                      finding("ib_inventory", "port_down", "critical", "b")],
            "rdma": {"summary": {"port_count": 3}},
        },
    },
    "unreached": {"group_names": ["ib-a100"]},
}


def test_worst_hosts_first():
    report = build_report(HOSTS, SOURCES, generated_at="2026-11-22T00:00:00Z")
    assert [(h["name"], h["status"]) for h in report["hosts"]] == [
        ("broken", "critical"), ("cached", "critical"), ("unreached", "no_data"), ("warned", "warning"), ("healthy", "ok"),
    ]


def test_findings_sorted_by_severity_and_counted():
    report = build_report(HOSTS, SOURCES)
    broken = next(h for h in report["hosts"] if h["name"] == "broken")
    assert [f["check"] for f in broken["findings"]] == ["dkms_missing_next_boot", "port_down", "dkms_error"]
    assert (broken["critical"], broken["warning"]) == (2, 1)
    assert broken["groups"] == ["gpu", "ib-v100"]
    assert broken["checks"] == ["driver_verify", "ib_inventory"]


def test_fact_cache_layout_is_read():
    cached = next(h for h in build_report(HOSTS, SOURCES)["hosts"] if h["name"] == "cached")
    assert cached["critical"] == 2
    assert cached["summary"] == {"port_count": 3}


def test_totals_and_groups():
    report = build_report(HOSTS, SOURCES)
    assert report["totals"] == {"hosts": 5, "critical": 2, "unreachable": 0, "no_data": 1, "warning": 1, "ok": 1, "findings": 6,
                                "cluster_findings": 0, "hosts_not_fully_checked": 0}
    assert report["schema_version"] == 3
    groups = {g["name"]: g for g in report["groups"]}
    assert groups["ib-a100"] == {"name": "ib-a100", "hosts": 3, "ok": 0, "warning": 1, "critical": 1, "unreachable": 0, "no_data": 1}
    assert groups["ib-v100"]["critical"] == 1 and groups["ib-v100"]["ok"] == 1


def test_sources_are_the_registry_roles():
    assert {"ib_inventory", "driver_verify"} <= set(SOURCES)
    assert build_report(HOSTS, SOURCES)["sources"] == SOURCES


CLUSTER_RUN = {
    # What k8s_rdma leaves on localhost: a cluster subject, findings about nodes and about the policy.
    "k8s_rdma_status": {"ok": False, "critical": 1, "warning": 1, "subject": "cluster/prod"},
    "k8s_rdma_findings": [finding("k8s_rdma", "mofed_wait_blocked", "critical", "broken"),
                          finding("k8s_rdma", "policy_missing", "warning", "nic-cluster-policy")],
}


def test_cluster_findings_form_a_section_and_reach_their_nodes():
    report = build_report(HOSTS, ("ib_inventory", "driver_verify", "k8s_rdma"), cluster_vars=[CLUSTER_RUN])
    assert [(c["subject"], c["critical"], c["warning"]) for c in report["clusters"]] == [("cluster/prod", 1, 1)]
    assert [f["check"] for f in report["clusters"][0]["findings"]] == ["mofed_wait_blocked", "policy_missing"]
    broken = next(h for h in report["hosts"] if h["name"] == "broken")
    assert "mofed_wait_blocked" in [f["check"] for f in broken["findings"]]
    assert broken["critical"] == 3
    healthy = next(h for h in report["hosts"] if h["name"] == "healthy")
    assert healthy["findings"] == []
    assert report["totals"]["cluster_findings"] == 2


def test_failing_hosts_name_their_critical_findings():
    failing = failing_hosts(build_report(HOSTS, SOURCES))
    assert sorted(failing) == ["broken", "cached"]
    assert failing["cached"] == "2 critical finding(s) on cached: port_down a; port_down b"


# ---------------------------------------------------------------------------- HCAs and findings by check


def rdma_facts_of(tmp_path):
    """ib_facts' rdma facts of a real tree: a ConnectX-6 with two SR-IOV VFs, and a QLogic qib that has
    neither fw_ver nor hca_type."""
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:0c:00.0", hca_type="MT4123", fw_ver="20.39.1002", board_id="MT_0000000223")
    tree.port(device, 1)
    for vf in range(2):
        device = tree.hca("mlx5_%d" % (vf + 1), "0000:0c:00.%d" % (vf + 1), physfn="0000:0c:00.0")
        tree.port(device, 1)
    device = tree.hca("qib0", "0000:03:00.0", omit=("fw_ver", "hca_type", "board_id"))
    tree.port(device, 1)
    facts, warnings = gather(str(tmp_path))
    assert warnings == []
    return facts


# The shape of ansible_facts.rdma.pcie[device] that ib_facts' pcie subset documents.
PCIE_X8_OF_X16 = {"pci_address": "0000:0c:00.0", "present": True, "vendor": "0x15b3", "device": "0x101b",
                  "current_speed_gts": 16.0, "max_speed_gts": 16.0, "current_width": 8, "max_width": 16,
                  "current_generation": 4, "max_generation": 4, "speed_below_max": False, "width_below_max": True}


def test_hcas_are_the_physical_devices_with_firmware_board_and_pcie(tmp_path):
    rdma = rdma_facts_of(tmp_path)
    rdma["pcie"] = {"mlx5_0": PCIE_X8_OF_X16}
    report = build_report({"node": {"group_names": ["ib-a100"], "ansible_facts": {"rdma": rdma}}}, SOURCES)
    hcas = report["hosts"][0]["hcas"]
    assert [h["name"] for h in hcas] == ["mlx5_0", "qib0"]  # the VFs mlx5_1 and mlx5_2 share mlx5_0's card
    assert hcas[0] == {"name": "mlx5_0", "node_type": "CA", "hca_type": "MT4123", "fw_ver": "20.39.1002", "board_id": "MT_0000000223",
                       "pcie": {"present": True, "current_speed_gts": 16.0, "current_width": 8, "current_generation": 4,
                                "max_speed_gts": 16.0, "max_width": 16, "max_generation": 4}}
    assert (hcas[1]["fw_ver"], hcas[1]["hca_type"], hcas[1]["board_id"], hcas[1]["pcie"]) == (None, None, None, None)


def test_pcie_under_the_device_is_read_too(tmp_path):
    rdma = rdma_facts_of(tmp_path)
    rdma["devices"]["qib0"]["pcie"] = dict(PCIE_X8_OF_X16, present=False, current_width=None)
    hcas = build_report({"node": {"ansible_facts": {"rdma": rdma}}}, SOURCES)["hosts"][0]["hcas"]
    assert hcas[1]["pcie"]["present"] is False and hcas[1]["pcie"]["current_width"] is None
    assert hcas[0]["pcie"] is None  # no pcie facts for mlx5_0: unknown, not a guess


def test_hosts_without_device_facts_have_no_hcas():
    report = build_report(HOSTS, SOURCES)
    assert all(h["hcas"] == [] for h in report["hosts"])
    odd = build_report({"node": {"ansible_facts": {"rdma": {"devices": ["mlx5_0"]}}}}, SOURCES)
    assert odd["hosts"][0]["hcas"] == []


def test_findings_by_check_count_each_finding_once():
    report = build_report(HOSTS, ("ib_inventory", "driver_verify", "k8s_rdma"), cluster_vars=[CLUSTER_RUN])
    rows = {(r["role"], r["check"]): (r["critical"], r["warning"], r["info"], r["hosts"]) for r in report["findings_by_check"]}
    assert rows == {
        ("ib_inventory", "port_down"): (3, 0, 0, 2),  # broken once, cached twice
        ("driver_verify", "dkms_missing_next_boot"): (1, 0, 0, 1),
        ("k8s_rdma", "mofed_wait_blocked"): (1, 0, 0, 1),  # in the cluster section and on broken's row: one finding
        ("driver_verify", "dkms_error"): (0, 1, 0, 1),
        ("ib_inventory", "netdev_carrier_down"): (0, 1, 0, 1),
        ("k8s_rdma", "policy_missing"): (0, 1, 0, 0),  # about the cluster's policy, no host
    }
    assert [(r["role"], r["check"]) for r in report["findings_by_check"]][:2] == [("ib_inventory", "port_down"), ("driver_verify", "dkms_missing_next_boot")]
    total = sum(r["critical"] + r["warning"] + r["info"] for r in report["findings_by_check"])
    assert total == report["totals"]["findings"] + report["totals"]["cluster_findings"] - 1  # mofed_wait_blocked is in both
