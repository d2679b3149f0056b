"""The judging and publishing stages of rdma.node.evaluate, on plain facts."""

from __future__ import annotations

from ansible.template import Templar

from ansible_collections.rdma.node.plugins.plugin_utils._judge import UNREACHABLE, judge
from ansible_collections.rdma.node.plugins.plugin_utils._publish import publish, republished
from ansible_collections.rdma.node.plugins.plugin_utils._role_options import role_options

# What ib_facts gathers with gather_subset [ports]: no counters on the ports, no health facts.
PORT = {"device": "mlx5_0", "port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "link_layer": "InfiniBand", "rate_gbps": 200.0,
        "netdevs": ["ibp59s0"], "netdev_state": "Up"}
PORTS_ONLY = {"rdma": {"devices": {"mlx5_0": {"hca_type": "MT4123", "ports": [1]}}, "ports": [PORT], "netdevs": {}, "summary": {}}}


def options(role, **variables):
    return role_options(role, variables, Templar(variables=variables).template)


def test_parameters_follow_the_options_and_the_tasks_run_time_values_win():
    got = judge("driver_verify", {"rdma_driver": {"loaded_modules": {}, "infiniband_devices": []}},
                options("driver_verify", driver_verify_require_uverbs=True), {"autoinstall": []}, "node-1")
    assert ("uverbs_missing", "critical") in [(f["check"], f["severity"]) for f in got["findings"]]
    assert "dkms_remediated" in got["status"]["checks"]


def test_a_ports_only_gather_never_reads_as_a_healthy_node():
    got = judge("node_health", PORTS_ONLY, options("node_health"), None, "node-1")
    skipped = {entry["check"]: entry for entry in got["status"]["skipped_checks"]}
    assert {"pcie_degraded", "pcie_device_gone", "counter_rising", "hca_temperature", "gpudirect", "effective_memlock"} <= set(skipped)
    assert skipped["pcie_degraded"] == {"check": "pcie_degraded", "missing": ["pcie"], "reason": "the pcie facts were not gathered"}
    assert not {"pcie_degraded", "counter_rising", "hca_temperature"} & set(got["status"]["checks"])
    assert got["status"]["summary"].startswith("node_health on node-1: no findings; %d check(s) not run for lack of data" % len(skipped))


def test_a_subset_switched_off_by_an_option_says_which_option():
    got = judge("node_health", PORTS_ONLY, options("node_health", node_health_memlock=False), None, "node-1",
                unavailable={"memlock": "node_health_memlock is false"})
    (entry,) = [e for e in got["status"]["skipped_checks"] if e["check"] == "effective_memlock"]
    assert entry["reason"] == "node_health_memlock is false"


def test_an_unreachable_host_is_judged_on_nothing_and_says_why():
    facts = dict(PORTS_ONLY, **{UNREACHABLE: {"reason": "Failed to connect to the host via ssh: Connection refused", "time": "2026-11-26T10:00:00Z"}})
    got = judge("ib_inventory", facts, options("ib_inventory", ib_inventory_expected_ports=[{"port": "mlx5_0/1"}]), None, "node-1")
    assert got["findings"] == [] and got["status"]["checks"] == []
    assert {e["reason"] for e in got["status"]["skipped_checks"]} == {
        "the host could not be reached: Failed to connect to the host via ssh: Connection refused"}


def test_the_operators_checks_come_from_the_roles_option():
    custom = [{"name": "one_port", "severity": "warning", "message": "One port.", "expression": "length(rdma.ports) == `1`"}]
    got = judge("node_health", PORTS_ONLY, options("node_health", node_health_custom_checks=custom), None, "node-1")
    assert ("custom_one_port", "warning") in [(f["check"], f["severity"]) for f in got["findings"]]


def test_publish_keeps_each_roles_result_and_fails_only_where_the_switch_says():
    evaluations = {
        "ib_inventory": judge("ib_inventory", PORTS_ONLY, options("ib_inventory", ib_inventory_expected_ports=[{"port": "mlx5_9/1"}]), None, "n"),
        "driver_verify": judge("driver_verify", {}, options("driver_verify"), None, "n"),
    }
    result = publish("n", evaluations, {"rdma": PORTS_ONLY["rdma"]}, fails_on=lambda role: role == "ib_inventory")
    assert result["failed"] is True and result["failed_roles"] == ["ib_inventory"]
    assert set(result["ansible_facts"]) == {"rdma", "ib_inventory_findings", "ib_inventory_status", "driver_verify_findings", "driver_verify_status"}
    assert set(result["ansible_stats"]["data"]) == {"rdma_ib_inventory", "rdma_driver_verify"}
    assert result["msg"].count(" on n: ") == 2
    assert "ansible_stats" not in publish("n", evaluations, with_stats=False)
    assert "failed" not in publish("n", evaluations, fails_on=lambda role: False)


def test_republish_gives_back_only_the_facts_and_the_statistics():
    failed = {"failed": True, "msg": "m", "ansible_facts": {"x_status": {}}, "ansible_stats": {"data": {"rdma_x": {}}}, "failed_roles": ["x"]}
    assert republished(failed) == {"changed": False, "msg": "m", "ansible_facts": {"x_status": {}}, "ansible_stats": {"data": {"rdma_x": {}}}}
    assert republished({"msg": None}) == {"changed": False, "msg": ""}
