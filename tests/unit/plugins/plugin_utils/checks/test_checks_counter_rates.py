"""counter_rising with limits that carry their unit and severity (NVSentinel's defaults), on the real
H100 tree of gpud: any rise of rnr_nak_retry_err (an mlx5 hw_counter), link_error_recovery above 5 per
minute and port_xmit_discards above 100 per second as warnings, and link_error_recovery left to the
flap check where the link also went down."""

from __future__ import annotations

import pytest
import sysfs_tree
import yaml

from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from testpaths import COLLECTION_ROOT, FIXTURES

DEFAULTS = {key[len("node_health_"):]: value for key, value in
            yaml.safe_load((COLLECTION_ROOT / "roles/node_health/defaults/main.yml").read_text()).items()}


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("h100") / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), dest)
    return dest


def facts_at(root, at):
    facts, _warnings = read_ib_facts({"sysfs_root": root, "proc_root": None, "gather_subset": ["all"]})
    facts["counters_time"] = at
    return facts


def rising(rdma, previous, **params):
    result = evaluate_role("node_health", {"rdma": rdma}, dict(DEFAULTS, previous_sample=previous, **params), subject="node")
    return [(f["severity"], f["subject"], f["message"]) for f in result["findings"] if f["check"] == "counter_rising"]


def test_the_sample_carries_the_hw_error_counters(h100):
    previous = evaluate_role("node_health", {"rdma": facts_at(h100, 1000.0)}, DEFAULTS, subject="node")["status"]["counter_sample"]
    assert previous["ports"]["mlx5_0/1"]["rnr_nak_retry_err"] == 0 and "rx_write_requests" not in previous["ports"]["mlx5_0/1"]


def bump(rdma, device, counter, value, where="counters"):
    port = next(p for p in rdma["ports"] if p["device"] == device)
    port[where][counter] = value


def test_nvsentinel_limits_with_their_units_and_severities(h100):
    previous = evaluate_role("node_health", {"rdma": facts_at(h100, 1000.0)}, DEFAULTS, subject="node")["status"]["counter_sample"]
    rdma = facts_at(h100, 1060.0)                                        # one minute later; every counter was 0
    bump(rdma, "mlx5_0", "rnr_nak_retry_err", 1, where="hw_counters")  # one exhausted RNR retry: any rise
    bump(rdma, "mlx5_4", "link_error_recovery", 6)                      # 6 per minute, above 5
    bump(rdma, "mlx5_5", "link_error_recovery", 5)                      # 5 per minute: at the limit, not above
    bump(rdma, "mlx5_6", "port_xmit_discards", 6001)                    # 100.02 per second, above 100
    bump(rdma, "mlx5_7", "port_xmit_discards", 6000)                    # 100 per second: at the limit
    assert rising(rdma, previous) == [
        ("critical", "mlx5_0/1", "mlx5_0/1: rnr_nak_retry_err rose from 0 to 1 in 60 s (between samples of the previous run), "
                                 "60 per hour; any rise is an error."),
        ("warning", "mlx5_4/1", "mlx5_4/1: link_error_recovery rose from 0 to 6 in 60 s (between samples of the previous run), "
                                "6 per minute; the limit is 5 per minute."),
        ("warning", "mlx5_6/1", "mlx5_6/1: port_xmit_discards rose from 0 to 6001 in 60 s (between samples of the previous run), "
                                "100.02 per second; the limit is 100 per second.")]


def test_units_judge_the_same_rise_differently(h100):
    previous = evaluate_role("node_health", {"rdma": facts_at(h100, 1000.0)}, DEFAULTS, subject="node")["status"]["counter_sample"]
    rdma = facts_at(h100, 1600.0)                                # ten minutes later
    before = previous["ports"]["mlx5_4/1"]["port_rcv_errors"]
    bump(rdma, "mlx5_4", "port_rcv_errors", before + 60)  # 6 per minute (a count below zero in a sample is refused)
    assert rising(rdma, previous, counter_rise_limits={"port_rcv_errors": "5/min"})[0][2].endswith(
        "port_rcv_errors rose from %d to %d in 10 min (between samples of the previous run), 6 per minute; the limit is 5 per minute." % (
            before, before + 60))
    assert rising(rdma, previous, counter_rise_limits={"port_rcv_errors": "10/min"}) == []
    assert rising(rdma, previous, counter_rise_limits={"port_rcv_errors": 360}) == []            # 360 per hour is the same rate
    assert rising(rdma, previous, counter_rise_limits={"port_rcv_errors": {"rate": "300/h", "severity": "info"}})[0][0] == "info"


def test_link_error_recovery_with_a_flap_is_the_flaps(h100):
    previous = evaluate_role("node_health", {"rdma": facts_at(h100, 1000.0)}, DEFAULTS, subject="node")["status"]["counter_sample"]
    rdma = facts_at(h100, 1060.0)
    # The rises are made on this run's read: a count below zero in a sample is refused.
    before = previous["ports"]["mlx5_6/1"]
    bump(rdma, "mlx5_6", "link_error_recovery", before["link_error_recovery"] + 20)
    assert [p for _s, p, _m in rising(rdma, previous)] == ["mlx5_6/1"]
    bump(rdma, "mlx5_6", "link_downed", before["link_downed"] + 1)               # it also went down: one flap finding
    assert rising(rdma, previous) == []
    result = evaluate_role("node_health", {"rdma": rdma}, dict(DEFAULTS, previous_sample=previous), subject="node")
    assert [f["subject"] for f in result["findings"] if f["check"] == "link_flapping"] == ["mlx5_6/1"]
