"""ib_facts' counters agree with Prometheus' node_exporter on every tree that has counters.

Debian's ``prometheus-node-exporter`` (1.5) reads each tree through ``--path.sysfs`` with only its
infiniband collector enabled, on 127.0.0.1. Every ``node_infiniband_*`` sample it exports is mapped
to the fact that holds the same quantity (node_exporter reports data counters in bytes, as ib_facts
does, and rates in bytes per second) and must be equal; a metric this test cannot map fails it, so a
newer node_exporter that exports more is noticed. In the other direction every counter ib_facts
reports with a value must have been exported, so ``N/A (no PMA)`` (node_exporter skips it, ib_facts
says null) is the only way to be missing.

``promtool check metrics`` lints each exposition first, so what is compared is well-formed.

Values above 2**53 cannot be told apart in the float64 of the exposition format; both sides are
compared as floats, the way Prometheus stores them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import node_exporter
import pytest
import sysfs_tree

from testpaths import COLLECTION_ROOT, FIXTURES

IB_FACTS = COLLECTION_ROOT / "plugins/modules/ib_facts.py"

# node_exporter metric (without node_infiniband_) -> (facts dict of the port, key).
COUNTER_METRICS = {
    "excessive_buffer_overrun_errors_total": ("counters", "excessive_buffer_overrun_errors"),
    "link_downed_total": ("counters", "link_downed"),
    "link_error_recovery_total": ("counters", "link_error_recovery"),
    "local_link_integrity_errors_total": ("counters", "local_link_integrity_errors"),
    "multicast_packets_received_total": ("counters", "multicast_rcv_packets"),
    "multicast_packets_transmitted_total": ("counters", "multicast_xmit_packets"),
    "port_constraint_errors_received_total": ("counters", "port_rcv_constraint_errors"),
    "port_constraint_errors_transmitted_total": ("counters", "port_xmit_constraint_errors"),
    "port_data_received_bytes_total": ("counters", "port_rcv_data_bytes"),
    "port_data_transmitted_bytes_total": ("counters", "port_xmit_data_bytes"),
    "port_discards_received_total": ("counters", "port_rcv_discards"),
    "port_discards_transmitted_total": ("counters", "port_xmit_discards"),
    "port_errors_received_total": ("counters", "port_rcv_errors"),
    "port_packets_received_total": ("counters", "port_rcv_packets"),
    "port_packets_transmitted_total": ("counters", "port_xmit_packets"),
    "port_receive_remote_physical_errors_total": ("counters", "port_rcv_remote_physical_errors"),
    "port_receive_switch_relay_errors_total": ("counters", "port_rcv_switch_relay_errors"),
    "port_transmit_wait_total": ("counters", "port_xmit_wait"),
    "symbol_error_total": ("counters", "symbol_error"),
    "unicast_packets_received_total": ("counters", "unicast_rcv_packets"),
    "unicast_packets_transmitted_total": ("counters", "unicast_xmit_packets"),
    "vl15_dropped_total": ("counters", "VL15_dropped"),
    "legacy_data_received_bytes_total": ("counters_ext", "port_rcv_data_64_bytes"),
    "legacy_data_transmitted_bytes_total": ("counters_ext", "port_xmit_data_64_bytes"),
    "legacy_multicast_packets_received_total": ("counters_ext", "port_multicast_rcv_packets"),
    "legacy_multicast_packets_transmitted_total": ("counters_ext", "port_multicast_xmit_packets"),
    "legacy_packets_received_total": ("counters_ext", "port_rcv_packets_64"),
    "legacy_packets_transmitted_total": ("counters_ext", "port_xmit_packets_64"),
    "legacy_unicast_packets_received_total": ("counters_ext", "port_unicast_rcv_packets"),
    "legacy_unicast_packets_transmitted_total": ("counters_ext", "port_unicast_xmit_packets"),
}
GIGABIT_IN_BYTES = 125000000


def build_edge_tree(root):
    """What no real tree here has: ``N/A (no PMA)``, a base (32-bit) table, legacy counters_ext."""
    tree = sysfs_tree.TreeBuilder(root)
    mlx4 = tree.hca("mlx4_0", "0000:03:00.0", hca_type="MT4099", fw_ver="2.42.5000", driver="mlx4_core")
    tree.port(mlx4, 1, rate="56 Gb/sec (4X FDR)", counters={
        "symbol_error": "65535", "link_downed": "N/A (no PMA)", "port_rcv_errors": "N/A (no PMA)",
        "local_link_integrity_errors": "15", "port_xmit_data": "4294967295", "port_rcv_data": "12345",
        "port_xmit_packets": "77", "port_rcv_packets": "78",
    }, counters_ext={
        "port_xmit_data_64": "90000000000", "port_rcv_data_64": "80000000001", "port_xmit_packets_64": "5000000000",
        "port_rcv_packets_64": "4000000000", "port_unicast_xmit_packets": "4999999000",
        "port_unicast_rcv_packets": "3999999000", "port_multicast_xmit_packets": "1000",
        "port_multicast_rcv_packets": "999",
    })
    tree.port(mlx4, 2, state="1: DOWN", phys_state="3: Disabled", rate="40 Gb/sec (4X QDR)", counters={
        "port_xmit_discards": "3", "port_rcv_remote_physical_errors": "0",
    })


def trees(tmp_root):
    """Every tree with counters: the three real ones, the demo hosts (both samples) and the edge tree."""
    found = {}
    for name in ("gpud-h100", "prometheus-procfs", "node-exporter"):
        path = os.path.join(tmp_root, name, "sys")
        sysfs_tree.unpack((FIXTURES / ("sysfs/%s.sysfs" % name)).read_bytes(), path)
        found[name] = path
    demo = os.path.join(tmp_root, "demo")
    for host in sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), demo):
        found["demo-" + host] = os.path.join(demo, host, "sys")
        if os.path.isdir(os.path.join(demo, host, "later", "sys")):
            found["demo-%s-later" % host] = os.path.join(demo, host, "later", "sys")
    edge = os.path.join(tmp_root, "edge", "sys")
    build_edge_tree(edge)
    found["edge"] = edge
    return found


def scrape(tree):
    """node_exporter's infiniband collector on ``tree``: its /metrics text."""
    return node_exporter.scrape("--path.sysfs=" + tree, "--collector.infiniband", what=tree)


def parse_metrics(text):
    """``[(name, labels dict, float value)]`` of the node_infiniband_* samples."""
    samples = []
    for line in text.splitlines():
        if not line.startswith("node_infiniband_"):
            continue
        head, value = line.rsplit(" ", 1)
        name, _brace, label_text = head.partition("{")
        labels = {}
        for item in label_text.rstrip("}").split('",'):
            if item:
                key, _eq, raw = item.partition('="')
                labels[key] = raw.rstrip('"')
        samples.append((name[len("node_infiniband_"):], labels, float(value)))
    return samples


def ib_facts(tree, tmp_path):
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"sysfs_root": tree, "gather_subset": ["counters"]}}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, str(IB_FACTS), str(args)], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["ansible_facts"]["rdma"]


def compare(samples, facts):
    """Assert every sample equals its fact; return how many values were compared."""
    ports = {(p["device"], str(p["port"])): p for p in facts["ports"]}
    compared = 0
    exported = set()
    for name, labels, value in samples:
        if name == "info":
            device = facts["devices"][labels["device"]]
            assert labels["board_id"] == (device["board_id"] or ""), labels
            assert labels["firmware_version"] == (device["fw_ver"] or ""), labels
            assert labels["hca_type"] == (device["hca_type"] or ""), labels
            compared += 3
            continue
        port = ports[(labels["device"], labels["port"])]
        if name == "state_id":
            assert value == port["state_code"], (labels, name)
        elif name == "physical_state_id":
            assert value == port["phys_state_code"], (labels, name)
        elif name == "rate_bytes_per_second":
            assert value == port["rate_gbps"] * GIGABIT_IN_BYTES, (labels, name)
        else:
            assert name in COUNTER_METRICS, "node_exporter exports %s, which this test does not map" % name
            group, key = COUNTER_METRICS[name]
            ours = (port[group] or {}).get(key)
            assert ours is not None and float(ours) == value, (labels, name, value, ours)
            exported.add((labels["device"], labels["port"], group, key))
        compared += 1
    for (device, number), port in ports.items():
        for group, key in COUNTER_METRICS.values():
            if (port[group] or {}).get(key) is not None:
                assert (device, number, group, key) in exported, "%s/%s %s.%s not exported" % (device, number, group, key)
    return compared


def test_node_exporter_agrees_with_ib_facts_on_every_counter(tmp_path):
    assert shutil.which(node_exporter.EXPORTER), "prometheus-node-exporter is missing: scripts/setup.sh installs it"
    assert shutil.which("promtool"), "promtool is missing: scripts/setup.sh installs prometheus"
    counts = {}
    for name, tree in trees(str(tmp_path / "trees")).items():
        facts = ib_facts(tree, tmp_path)
        exposition = scrape(tree)
        lint = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True,
                              timeout=60, check=False)
        assert lint.returncode == 0, "promtool check metrics on %s: %s" % (name, lint.stdout + lint.stderr)
        samples = parse_metrics(exposition)
        assert samples, "node_exporter exported nothing for %s" % name
        counts[name] = compare(samples, facts)
        assert counts[name] == values_in_files(tree), name
    print("values compared with node_exporter:", counts, "total", sum(counts.values()))
    assert all(count > 0 for count in counts.values())


def values_in_files(tree):
    """How many values the comparison must have covered, counted from the tree's own files: every
    numeric counter file, three gauges per port (state, physical state, rate) and three info labels
    per device. H100: 9 ports x (21 counters + 3) + 9 x 3 = 243."""
    total = 0
    ib_dir = os.path.join(tree, "class/infiniband")
    for device in os.listdir(ib_dir):
        total += 3
        ports_dir = os.path.join(ib_dir, device, "ports")
        for port in os.listdir(ports_dir):
            total += 3
            for group in ("counters", "counters_ext"):
                group_dir = os.path.join(ports_dir, port, group)
                for name in os.listdir(group_dir) if os.path.isdir(group_dir) else []:
                    with open(os.path.join(group_dir, name), encoding="utf-8") as handle:
                        total += handle.read().strip().isdigit()
    return total


@pytest.mark.parametrize("text, expected", [
    ('node_infiniband_link_downed_total{device="mlx5_0",port="1"} 255',
     [("link_downed_total", {"device": "mlx5_0", "port": "1"}, 255.0)]),
    ('node_infiniband_info{board_id="X",device="m",firmware_version="1.2",hca_type=""} 1',
     [("info", {"board_id": "X", "device": "m", "firmware_version": "1.2", "hca_type": ""}, 1.0)]),
    ("# HELP node_infiniband_info x\nnode_scrape_collector_success 1", []),
])
def test_metric_lines_are_read_as_exported(text, expected):
    assert parse_metrics(text) == expected


RULES = COLLECTION_ROOT / "extensions/prometheus/rdma_node_health.rules.yml"


def test_alert_rules_pass_promtool_and_name_metrics_node_exporter_exports(tmp_path):
    """The alert rules shipped for node_exporter users: valid, their unit tests pass, and every
    metric they read is one node_exporter really exports."""
    for argv in (["promtool", "check", "rules", str(RULES)],
                 ["promtool", "test", "rules", str(RULES.with_name("rdma_node_health.rules.test.yml"))]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=str(RULES.parent))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    tree = str(tmp_path / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), tree)
    exported = {"node_infiniband_" + name for name, _labels, _value in parse_metrics(scrape(tree))}
    used = set(re.findall(r"node_infiniband_\w+", RULES.read_text()))
    assert used and used <= exported, used - exported
