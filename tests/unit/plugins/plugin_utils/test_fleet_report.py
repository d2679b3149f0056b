"""The report puts the worst hosts first and reads findings wherever the roles left them."""

from __future__ import annotations

import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report, failing_hosts
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_hosts import report_from_hostvars

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


# ---------------------------------------------------------------------------- what is not known is said


UNREACHABLE = {"reason": "Failed to connect to the host via ssh: ssh: connect to host 10.0.7.12 port 22: No route to host",
               "time": "2026-11-26T10:00:00Z"}


def skipped_status(shape):
    """A node_health status with the memlock check skipped, in the registry's earlier shape or its new one."""
    skipped = ({"check": "effective_memlock", "missing_facts": ["rdma_memlock"]} if shape == "earlier"
               else {"check": "effective_memlock", "missing": ["rdma_memlock"], "reason": "node_health_memlock is false: rdma_memlock was not gathered"})
    return {"ok": True, "critical": 0, "warning": 0, "checks": ["pcie_degraded"], "skipped_checks": [skipped, "junk"],
            "not_checked": [{"check": "pcie_degraded", "subject": "0000:5e:00", "reason": "max_link_width could not be read"}, 7]}


def test_unreachable_and_no_data_hosts_say_why():
    hosts = {
        # What the collection's gather leaves on a host it could not reach: the fact, every check skipped.
        "dark": {"group_names": ["ib-a100"], "ansible_facts": {"rdma_unreachable": UNREACHABLE}},
        "dark-live": {"group_names": ["ib-a100"], "rdma_unreachable": UNREACHABLE, "node_health_status": skipped_status("new")},
        "gone": {"group_names": ["ib-a100"]},
        "never": {"group_names": ["ib-a100"]},
    }
    report = build_report(hosts, SOURCES, removed={"gone"})
    entries = {h["name"]: h for h in report["hosts"]}
    assert [h["name"] for h in report["hosts"]] == ["dark", "dark-live", "gone", "never"]
    assert (entries["dark"]["status"], entries["dark"]["reason"], entries["dark"]["unreachable"]) == ("unreachable", UNREACHABLE["reason"], UNREACHABLE)
    assert entries["dark-live"]["status"] == "unreachable"
    assert entries["gone"]["status"] == "no_data" and entries["gone"]["reason"].startswith("Ansible took this host out of the run")
    assert entries["never"]["reason"].startswith("No role of this collection left results for this host")
    assert (report["totals"]["unreachable"], report["totals"]["no_data"]) == (2, 2)
    assert report["groups"] == [{"name": "ib-a100", "hosts": 4, "critical": 0, "unreachable": 2, "no_data": 2, "warning": 0, "ok": 0}]
    # The fail switch fails them too: their checks did not run.
    assert failing_hosts(report) == {name: "%s could not be reached, so none of its checks ran: %s" % (name, UNREACHABLE["reason"])
                                     for name in ("dark", "dark-live")}


def test_a_critical_finding_outranks_unreachable_and_the_reason_stays():
    hosts = {"dark": dict(HOSTS["broken"], rdma_unreachable=UNREACHABLE)}
    entry = build_report(hosts, SOURCES)["hosts"][0]
    assert (entry["status"], entry["unreachable"]) == ("critical", UNREACHABLE)


def test_skipped_and_unjudged_checks_are_listed_in_both_shapes():
    for shape, reason in (("earlier", "the data it reads was not gathered: rdma_memlock"),
                          ("new", "node_health_memlock is false: rdma_memlock was not gathered")):
        report = build_report({"n": {"group_names": ["ib-v100"], "node_health_status": skipped_status(shape)}}, SOURCES)
        entry = report["hosts"][0]
        assert entry["status"] == "ok"  # nothing found; but never plainly ok:
        assert entry["not_checked"] == [
            {"role": "node_health", "check": "effective_memlock", "subject": None, "reason": reason},
            {"role": "node_health", "check": "pcie_degraded", "subject": "0000:5e:00", "reason": "max_link_width could not be read"}]
        assert report["totals"]["hosts_not_fully_checked"] == 1


def test_a_drifted_firmware_is_marked_on_its_hca(tmp_path):
    rdma = rdma_facts_of(tmp_path)
    older = {"devices": {name: dict(device, fw_ver="20.37.1014") if name == "mlx5_0" else device for name, device in rdma["devices"].items()}}
    hosts = {"n%d" % i: {"group_names": ["ib-a100"], "ansible_facts": {"rdma": older if i == 3 else rdma}} for i in range(1, 5)}
    entries = {h["name"]: h for h in build_report(hosts, SOURCES)["hosts"]}
    marked = {(name, hca["name"]): hca.get("fw_expected") for name, entry in entries.items() for hca in entry["hcas"] if "fw_expected" in hca}
    assert marked == {("n3", "mlx5_0"): "20.39.1002"}
    assert [f["check"] for f in entries["n3"]["findings"]] == ["firmware_drift"]


def test_counter_rises_carry_the_interval_they_were_measured_over():
    status = {"ok": False, "critical": 1, "checks": ["counter_rising"], "counter_rates_source": "this run",
              "counter_rates_per_hour": {"mlx5_1/1": {"symbol_error": 1911052.0, "link_downed": 0.0}, "mlx5_0/1": {"symbol_error": 0.0}}}
    facts = {"rdma": {"counters_interval_seconds": 1.01}}
    entry = build_report({"n": {"node_health_status": status, "ansible_facts": facts}}, SOURCES)["hosts"][0]
    assert entry["counter_rises"] == {"source": "this run", "interval_seconds": 1.01,
                                      "rates": [{"port": "mlx5_1/1", "counter": "symbol_error", "per_hour": 1911052.0}]}
    status = dict(status, counter_rates_source="the previous run", counter_rates_interval_seconds=1800.0)
    assert build_report({"n": {"node_health_status": status}}, SOURCES)["hosts"][0]["counter_rises"]["interval_seconds"] == 1800.0
    status = dict(status, counter_rates_interval_seconds=None)
    assert build_report({"n": {"node_health_status": status}}, SOURCES)["hosts"][0]["counter_rises"]["interval_seconds"] is None
    status["counter_rates_per_hour"] = {"mlx5_1/1": {"symbol_error": 0.0}}
    assert build_report({"n": {"node_health_status": status}}, SOURCES)["hosts"][0]["counter_rises"] is None


def test_hostile_names_are_spelled_out_and_the_hosts_to_fail_keep_their_inventory_names():
    evil = "gpu\x1b[31m07"
    hostvars = {evil: {"group_names": ["rack\x1b]0;owned\x07"], "ib_inventory_status": {"ok": False, "critical": 1},
                       "ib_inventory_findings": [finding("ib_inventory", "port_down", "critical", "mlx5_1/1")]},
                "gpu07": {"group_names": ["rack"], "ib_inventory_status": {"ok": True, "critical": 0}, "ib_inventory_findings": []}}
    report = report_from_hostvars([evil, "gpu07"], hostvars, title="Fleet\x1b[2J")
    assert [(h["name"], h["groups"]) for h in report["hosts"]] == [("gpu\\x1b[31m07", ["rack\\x1b]0;owned\\x07"]), ("gpu07", ["rack"])]
    assert report["title"] == "Fleet"
    assert list(report["failing_hosts"]) == [evil]
    assert report["failing_hosts"][evil].startswith("1 critical finding(s) on gpu\\x1b[31m07: ")
