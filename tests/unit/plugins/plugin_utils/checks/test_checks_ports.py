"""The ib_inventory checks: group expectations against real facts, every finding and nothing that is not one."""

from __future__ import annotations

import pytest
import sysfs_tree
import yaml

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather
from testpaths import COLLECTION_ROOT

DEMO = COLLECTION_ROOT / "inventories/demo"


@pytest.fixture(scope="module")
def demo_facts(tmp_path_factory):
    dest = tmp_path_factory.mktemp("nodes")
    hosts = sysfs_tree.build_hardware_file(str(DEMO / "demo.simulated_nodes.yml"), str(dest))
    return {host: gather(str(dest / host / "sys"))[0] for host in hosts}


def group_vars(group):
    with open(DEMO / "group_vars" / ("%s.yml" % group), encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    return (data.get("ib_inventory_expected_ports"), data.get("ib_inventory_allowed_down_ports"),
            data.get("ib_inventory_required_netdevs"))


def evaluate(facts, expected_ports=None, allowed_down=None, required_netdevs=None):
    """The role's evaluation of one host, flattened as the port_findings filter returns it."""
    params = {"expected_ports": expected_ports, "allowed_down_ports": allowed_down, "required_netdevs": required_netdevs}
    result = evaluate_role("ib_inventory", {"rdma": facts}, params, subject="node")
    status = result["status"]
    return dict(findings=result["findings"], ports=status["ports"], ok=status["ok"], critical=status["critical"],
                warning=status["warning"], summary=status["summary"])


def checks(result):
    return sorted((f["check"], f["severity"], f["subject"]) for f in result["findings"])


def test_healthy_v100_has_no_finding(demo_facts):
    result = evaluate(demo_facts["v100-node-01"], *group_vars("ib-v100"))
    assert result["findings"] == []
    assert (result["ok"], result["critical"], result["warning"]) == (True, 0, 0)
    assert {p["verdict"] for p in result["ports"]} == {"ok"}


def test_polling_port_is_the_only_finding(demo_facts):
    result = evaluate(demo_facts["v100-node-02"], *group_vars("ib-v100"))
    assert checks(result) == [("port_down", "critical", "mlx5_1/1")]
    assert result["findings"][0]["message"] == "mlx5_1/1 is DOWN (Polling); expected ACTIVE"
    assert result["ok"] is False
    verdicts = {p["port"]: p["verdict"] for p in result["ports"]}
    assert verdicts == {"mlx5_0/1": "ok", "mlx5_1/1": "down"}


def test_a100_uncabled_hca_is_not_a_finding(demo_facts):
    result = evaluate(demo_facts["a100-node-01"], *group_vars("ib-a100"))
    assert result["findings"] == []
    verdicts = {p["port"]: p["verdict"] for p in result["ports"]}
    assert verdicts == {"mlx5_0/1": "allowed_down", "mlx5_1/1": "ok", "mlx5_bond_0/1": "ok"}
    expected_rates = {p["port"]: p["expected_rate_gbps"] for p in result["ports"]}
    assert expected_rates == {"mlx5_0/1": 200.0, "mlx5_1/1": 200.0, "mlx5_bond_0/1": None}


def test_a100_without_any_cabled_hca(demo_facts):
    facts = demo_facts["a100-node-01"]
    broken = dict(facts, ports=[dict(p, state="DOWN", phys_state="Polling") if p["device"] == "mlx5_1" else p
                                for p in facts["ports"]])
    result = evaluate(broken, *group_vars("ib-a100"))
    assert checks(result) == [("too_few_active_ports", "critical", "mlx5_0/1, mlx5_1/1")]
    assert result["findings"][0]["message"] == (
        "0 of mlx5_0/1, mlx5_1/1 are ACTIVE InfiniBand at >= 200 Gb/s; expected at least 1")


def test_every_kind_of_finding(demo_facts):
    facts = demo_facts["a100-node-01"]
    ports = []
    for port in facts["ports"]:
        if port["device"] == "mlx5_1":
            port = dict(port, rate_gbps=100.0)  # a link trained at half width
        if port["device"] == "mlx5_bond_0":
            port = dict(port, link_layer="InfiniBand", netdev_state="Down")
        ports.append(port)
    facts = dict(facts, ports=ports, netdevs={})
    rules = [
        {"port": "mlx5_1/1", "min_rate_gbps": 200},
        {"port": "mlx5_bond_0/1", "link_layer": "Ethernet"},
        {"port": "mlx5_7/1"},
        {"port": "mlx5_1/2"},
    ]
    result = evaluate(facts, rules, [], ["bond0"])
    assert checks(result) == [
        ("missing_device", "critical", "mlx5_7/1"),
        ("missing_netdev", "critical", "bond0"),
        ("missing_port", "critical", "mlx5_1/2"),
        ("netdev_carrier_down", "warning", "mlx5_bond_0/1"),
        ("rate_degraded", "critical", "mlx5_1/1"),
        ("unexpected_port_down", "warning", "mlx5_0/1"),
        ("wrong_link_layer", "critical", "mlx5_bond_0/1"),
    ]
    messages = {f["check"]: f["message"] for f in result["findings"]}
    assert messages["rate_degraded"] == "mlx5_1/1 runs at 100 Gb/s; expected at least 200 Gb/s"
    assert messages["wrong_link_layer"] == "mlx5_bond_0/1 runs InfiniBand; expected Ethernet"
    assert messages["missing_device"] == "device mlx5_7 does not exist; expected it ACTIVE"
    assert messages["netdev_carrier_down"] == "mlx5_bond_0/1 is ACTIVE but its netdev bond0 has no carrier"
    assert (result["critical"], result["warning"]) == (5, 2)


@pytest.mark.parametrize("rules, message", [
    ("mlx5_0/1", "ib_inventory_expected_ports: expected a list of port rules, got str"),
    ([{"port": "mlx5_0"}], "ib_inventory_expected_ports[0].port: expected a port written as DEVICE/PORT such as mlx5_0/1, got 'mlx5_0'"),
    ([{"count": 0}], "ib_inventory_expected_ports[0]: count must be a whole number of ports (1 or more), got 0"),
    ([{"port": "mlx5_0/1", "count": 1}], "ib_inventory_expected_ports[0]: give either 'port' (one port that must be ACTIVE) or 'count' (any N ports)"),
    ([{"port": "mlx5_0/1", "link_layer": "IB"}], "ib_inventory_expected_ports[0]: link_layer must be InfiniBand or Ethernet, got 'IB'"),
    ([{"port": "mlx5_0/1", "min_rate_gbps": "fast"}], "ib_inventory_expected_ports[0]: min_rate_gbps must be a number of Gb/s, got 'fast'"),
    ([{"port": "mlx5_0/1", "speed": "EDR"}], "ib_inventory_expected_ports[0]: unknown keys speed; allowed: port, count, any_of, link_layer, min_rate_gbps"),
])
def test_bad_expectations_name_the_entry(demo_facts, rules, message):
    with pytest.raises(CheckError) as raised:
        evaluate(demo_facts["v100-node-01"], rules)
    # The first check that reads the rules names itself, then the entry.
    assert str(raised.value).startswith("ib_inventory.")
    assert str(raised.value).endswith(": " + message)


def test_facts_that_are_not_facts():
    with pytest.raises(CheckError, match="expected the rdma facts"):
        evaluate({"devices": {}, "ports": "mlx5_0", "netdevs": {}}, [])


def test_host_without_rdma_devices_is_critical():
    result = evaluate({"devices": {}, "ports": [], "netdevs": {}, "summary": {}}, [{"port": "mlx5_0/1"}])
    assert checks(result) == [("missing_device", "critical", "mlx5_0/1"), ("no_rdma_devices", "critical", "rdma")]
    assert "shows no RDMA device" in next(f["message"] for f in result["findings"] if f["check"] == "no_rdma_devices")


def test_group_without_expectations_is_a_warning(demo_facts):
    result = evaluate(demo_facts["v100-node-01"])
    assert checks(result) == [("no_expectations", "warning", "expectations")]
    assert result["summary"].startswith("ib_inventory on node: 1 warning: No port expectations are set")


def test_a_port_whose_state_cannot_be_read_is_not_checked_never_down(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    for index, name in enumerate(("mlx5_0", "mlx5_1")):
        tree.port(tree.hca(name, "0000:%02x:00.0" % (0x3b + index)), 1, omit=("state",))
    facts = gather(str(tmp_path))[0]
    assert (facts["summary"]["down_ports"], facts["summary"]["unknown_state_ports"]) == ([], ["mlx5_0/1", "mlx5_1/1"])
    params = {"expected_ports": [{"port": "mlx5_0/1"}], "allowed_down_ports": None, "required_netdevs": None}
    result = evaluate_role("ib_inventory", {"rdma": facts}, params, subject="node")
    assert result["findings"] == []
    reason = "the state of %s could not be read (its sysfs state file is missing or says nothing known)"
    assert sorted((e["check"], e["subject"], e["reason"]) for e in result["status"]["not_checked"]) == [
        ("port_down", "mlx5_0/1", reason % "mlx5_0/1"), ("unexpected_port_down", "mlx5_1/1", reason % "mlx5_1/1")]
    assert {p["port"]: p["verdict"] for p in result["status"]["ports"]} == {"mlx5_0/1": "not_checked", "mlx5_1/1": "not_checked"}
