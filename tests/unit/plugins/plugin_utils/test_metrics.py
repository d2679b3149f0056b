"""The Prometheus textfile of a host: every family with HELP and TYPE, escaped labels, sorted samples."""

from __future__ import annotations

import re

import sysfs_tree

from ansible_collections.rdma.node.plugins.filter.metrics import node_health_metrics
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import escape, render
from testpaths import FIXTURES

SAMPLE = re.compile(r'^(rdma_node_[a-z0-9_]+)(\{[^}]*\})? (\S+)$')


def h100_facts(tmp_path):
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), str(tmp_path))
    rdma, _warnings = read_ib_facts({"sysfs_root": str(tmp_path), "gather_subset": ["counters"]})
    return {"rdma": rdma}


def parse(text):
    samples, helps, types = {}, set(), {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helps.add(line.split()[2])
        elif line.startswith("# TYPE "):
            types[line.split()[2]] = line.split()[3]
        else:
            match = SAMPLE.match(line)
            assert match, line
            samples[match.group(1) + (match.group(2) or "")] = match.group(3)
    return samples, helps, types


def test_h100_ports_counters_findings_and_last_run(tmp_path):
    facts = h100_facts(tmp_path)
    facts["node_health_findings"] = [
        {"role": "node_health", "check": "counter_saturated", "severity": "warning", "subject": "mlx5_0/1"},
        {"role": "node_health", "check": "counter_saturated", "severity": "warning", "subject": "mlx5_1/1"},
    ]
    facts["ib_inventory_findings"] = [{"role": "ib_inventory", "check": "port_down", "severity": "critical", "subject": "x"}]
    facts["node_health_status"] = {"counter_rates_per_hour": {"mlx5_1/1": {"symbol_error": 240.0}}}
    text = render(facts, now=1764034512.5)
    samples, helps, types = parse(text)
    assert helps == set(types)
    assert types["rdma_node_port_total"] == "counter" and types["rdma_node_port_state"] == "gauge"
    assert samples['rdma_node_port_state{device="mlx5_0",link_layer="InfiniBand",port="1"}'] == "4"
    assert samples['rdma_node_port_rate_gbps{device="mlx5_0",link_layer="InfiniBand",port="1"}'] == "400.0"
    assert samples['rdma_node_port_total{counter="port_rcv_errors",device="mlx5_0",link_layer="InfiniBand",port="1"}'] == "14"
    assert samples['rdma_node_port_total{counter="port_rcv_data_bytes",device="mlx5_0",link_layer="InfiniBand",port="1"}'] == \
        "922159499729932"
    assert samples['rdma_node_port_saturated{counter="link_downed",device="mlx5_1",link_layer="InfiniBand",port="1"}'] == "1"
    assert samples['rdma_node_port_rise_per_hour{counter="symbol_error",device="mlx5_1",link_layer="InfiniBand",port="1"}'] == \
        "240.0"
    assert samples['rdma_node_findings{check="counter_saturated",role="node_health",severity="warning"}'] == "2"
    assert samples['rdma_node_findings{check="port_down",role="ib_inventory",severity="critical"}'] == "1"
    assert samples["rdma_node_last_run_timestamp_seconds"] == "1764034512.5"
    assert text.endswith("\n") and render(facts, now=1764034512.5) == text


def test_label_values_are_escaped():
    assert escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    text = render({"x_findings": [{"role": "node_health", "check": 'odd"check\\', "severity": "info"}]}, now=1)
    assert 'rdma_node_findings{check="odd\\"check\\\\",role="node_health",severity="info"} 1' in text


def test_no_facts_is_only_the_last_run_and_the_filter_wants_a_mapping():
    assert render({}, now=2) == ("# HELP rdma_node_last_run_timestamp_seconds When rdma.node last checked this host (seconds since the epoch).\n"
                                 "# TYPE rdma_node_last_run_timestamp_seconds gauge\nrdma_node_last_run_timestamp_seconds 2.0\n")
    import pytest
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="node_health_metrics: expected the host's ansible_facts"):
        node_health_metrics("text")


def test_a_counter_outside_the_unsigned_64_bit_range_is_not_exported():
    """Issue 24, item 5: a node (or a tampered fact cache) that sends a negative or oversized counter gets no sample."""
    port = {"device": "mlx5_0", "port": 1, "state": "ACTIVE", "link_layer": "InfiniBand",
            "counters": {"symbol_error": -5, "link_downed": 2 ** 64, "port_rcv_errors": 2 ** 64 - 1, "VL15_dropped": 0}}
    text = render({"rdma": {"ports": [port]}}, now=0)
    samples = [line for line in text.splitlines() if line.startswith("rdma_node_port_total")]
    assert samples == [
        'rdma_node_port_total{counter="VL15_dropped",device="mlx5_0",link_layer="InfiniBand",port="1"} 0',
        'rdma_node_port_total{counter="port_rcv_errors",device="mlx5_0",link_layer="InfiniBand",port="1"} %d'
        % (2 ** 64 - 1)]
