"""Group consensus beyond firmware: per inventory group the value most hosts share, the odd host
warned with that value and how many hold it, a tie said as a tie; hosts without a fact left out."""

from __future__ import annotations

import copy

from ansible_collections.rdma.node.plugins.plugin_utils._checks.consensus import consensus_facts, consensus_values
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role


def host(groups=("ib-h100",), ofed="MLNX_OFED_LINUX-24.10-1.1.4.0", kernel="5.15.0-119-generic", rate=400, width="4X",
         generation=5, lanes=16, iommu="identity", trust="dscp", pfc=(3,), dkms="24.10.OFED.24.10.1.1.4.1"):
    return {
        "group_names": list(groups),
        "rdma_driver": {"ofed_version": ofed, "running_kernel": kernel,
                        "dkms": {"relevant": {"mlnx-ofed-kernel": {"present": True, "versions": [dkms], "kernels": {}}}}},
        "rdma": {
            "devices": {"mlx5_0": {"hca_type": "MT4129"}, "mlx5_1": {"hca_type": "MT4129"}, "mlx5_2": {"hca_type": "MT4129", "virtual_function": True}},
            "ports": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "rate_gbps": rate, "width": width},
                      {"device": "mlx5_1", "port": 1, "state": "ACTIVE", "rate_gbps": 400, "width": "4X"},
                      {"device": "mlx5_2", "port": 1, "state": "ACTIVE", "rate_gbps": 100, "width": "1X"}],
            "pcie": {"mlx5_0": {"current_generation": generation, "current_width": lanes},
                     "mlx5_1": {"current_generation": 5, "current_width": 16}},
            "pcie_path": {"functions": {"0000:3d:00.0": {"role": "hca", "iommu": {"type": iommu, "mode": "passthrough"}},
                                        "0000:3c:00.0": {"role": "bridge", "iommu": {"type": "DMA", "mode": "translated"}}}},
            "roce_qos": {"netdevs": {"eth0": {"pfc": {"enabled_priorities": list(pfc)}, "trust": {"mode": trust},
                                              "ecn": {"np": [3], "np_read": list(range(8))}}}},
        },
    }


def run(hosts):
    result = evaluate_role("fleet_consistency", {"hosts": hosts}, {}, subject="fleet")
    return [(f["check"], f["subject"], f["message"], f["expected"], f["actual"]) for f in result["findings"]]


def test_values_of_one_host():
    assert consensus_values(host()) == {
        "OFED release": "MLNX_OFED_LINUX-24.10-1.1.4.0", "kernel": "5.15.0-119-generic",
        "DKMS mlnx-ofed-kernel version": "24.10.OFED.24.10.1.1.4.1",
        "MT4129 port rate": "400 Gb/s 4X",          # the VF's port is not the card's rate
        "MT4129 PCIe link": "Gen5 x16", "IOMMU mode": "identity",  # a bridge's IOMMU is not a device's mode
        "RoCE QoS": "trust dscp, PFC on 3, ECN on 3"}
    assert consensus_values({}) == {}


def test_the_odd_host_is_warned_with_the_majority_and_its_count():
    hosts = {"n1": host(), "n2": host(), "n3": host(), "n4": host(kernel="5.15.0-122-generic", rate=200, generation=4, lanes=8)}
    findings = run(hosts)
    assert [(check, subject, expected, actual) for check, subject, _m, expected, actual in findings] == [
        ("group_consensus", "n4", "Gen5 x16", "Gen4 x8, Gen5 x16"),
        ("group_consensus", "n4", "400 Gb/s 4X", "200 Gb/s 4X, 400 Gb/s 4X"),
        ("group_consensus", "n4", "5.15.0-119-generic", "5.15.0-122-generic")]
    assert findings[2][2] == "n4: kernel is 5.15.0-122-generic where 3 of the 4 hosts of ib-h100 that report it have 5.15.0-119-generic."


def test_a_tie_is_said_as_a_tie_and_names_every_side():
    findings = run({"n1": host(), "n2": host(trust="pcp", pfc=())})
    assert [subject for _c, subject, _m, _e, _a in findings] == ["n1", "n2"]
    assert findings[1][2] == ("n2: RoCE QoS is trust pcp, PFC on none, ECN on 3, and the 2 hosts of ib-h100 that report it are split "
                              "with no majority (trust dscp, PFC on 3, ECN on 3 on 1; trust pcp, PFC on none, ECN on 3 on 1).")
    assert findings[1][3] is None


def test_groups_are_judged_apart_and_missing_facts_count_for_nobody():
    without_driver = copy.deepcopy(host(groups=("ib-a100",)))
    del without_driver["rdma_driver"]
    hosts = {"h1": host(), "h2": host(), "a1": host(groups=("ib-a100",), ofed="MLNX_OFED_LINUX-5.8-1.0.1.1"),
             "a2": without_driver, "a3": host(groups=("ib-a100",), ofed="MLNX_OFED_LINUX-5.8-1.0.1.1")}
    # The A100 group agrees on 5.8 among the hosts that report an OFED release; a2 reports none.
    assert run(hosts) == []
    hosts["a3"]["rdma_driver"]["ofed_version"] = "MLNX_OFED_LINUX-24.10-1.1.4.0"
    assert [(s, m) for _c, s, m, _e, _a in run(hosts)][0][1].endswith("the 2 hosts of ib-a100 that report it are split with no majority "
                                                                      "(MLNX_OFED_LINUX-24.10-1.1.4.0 on 1; MLNX_OFED_LINUX-5.8-1.0.1.1 on 1).")


def test_the_compact_facts_the_report_keeps_give_the_same_values():
    full = host(kernel="5.15.0-122-generic", pfc=(3, 4))
    full["rdma"]["ports"][0].update(lid=7, counters={"symbol_error": 3}, netdevs=["eth0"])  # read by no consensus setting
    compact = consensus_facts(full["rdma"], full["rdma_driver"])
    assert consensus_values(compact) == consensus_values(full)
    assert "counters" not in compact["rdma"]["ports"][0] and "lid" not in compact["rdma"]["ports"][0]
    assert consensus_values(consensus_facts(None, "not facts")) == {}


def test_a_setting_the_hosts_own_check_found_wrong_is_not_said_again_nor_counted():
    """n4's link trained at x8 (pcie_degraded found it) and n3's QoS misses the group's expectation (roce_qos):
    each fault is one finding, and neither value takes part in the vote; the kernel is no check's, so it is said."""
    hosts = {"n1": host(), "n2": host(), "n3": dict(host(pfc=()), reported=["node_health/roce_qos"]),
             "n4": dict(host(lanes=8, kernel="5.15.0-122-generic"), reported=["node_health/pcie_degraded", "driver_verify/dkms_error"])}
    assert [(subject, expected, actual) for _c, subject, _m, expected, actual in run(hosts)] == [
        ("n4", "5.15.0-119-generic", "5.15.0-122-generic")]
    # Without the hosts' own findings both differences are the consensus' to say.
    for name in ("n3", "n4"):
        hosts[name].pop("reported")
    assert sorted(subject for _c, subject, _m, _e, _a in run(hosts)) == ["n3", "n4", "n4"]
