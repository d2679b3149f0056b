"""The physical-layer facts in the textfile: AER totals, ACS/ATS/IOMMU of the GPU-HCA path, RoCE QoS
per priority, BER and module readings, link downtime; each family with HELP and TYPE, built from
facts the real readers make."""

from __future__ import annotations

from physical_samples import physical_facts
from test_metrics import parse

from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render


def test_physical_families(tmp_path):
    samples, helps, types = parse(render(physical_facts(tmp_path), now=1.0))
    assert helps == set(types)
    assert types["rdma_node_pcie_aer_errors_total"] == "counter" and types["rdma_node_link_effective_ber"] == "gauge"
    assert samples['rdma_node_pcie_aer_errors_total{address="0000:3d:00.0",device="mlx5_0",kind="fatal",role="hca"}'] == "1"
    assert samples['rdma_node_pcie_aer_errors_total{address="0000:3d:00.0",device="mlx5_0",kind="correctable",role="hca"}'] == "4"
    assert samples['rdma_node_pcie_acs_p2p_redirect{address="0000:3c:00.0",device="",role="bridge"}'] == "1"
    assert samples['rdma_node_pcie_acs_p2p_redirect{address="0000:3c:08.0",device="",role="bridge"}'] == "0"
    assert samples['rdma_node_pcie_ats_enabled{address="0000:3e:00.0",device="",role="gpu"}'] == "1"
    assert samples['rdma_node_iommu_translated{address="0000:3d:00.0",device="mlx5_0",role="hca"}'] == "1"
    assert samples['rdma_node_iommu_translated{address="0000:3e:00.0",device="",role="gpu"}'] == "0"
    assert [samples['rdma_node_roce_pfc_enabled{netdev="eth4",priority="%d"}' % p] for p in range(8)] == ["0", "0", "0", "1", "0", "0", "0", "0"]
    assert samples['rdma_node_roce_ecn_enabled{netdev="eth4",point="rp",priority="7"}'] == "0"
    assert samples['rdma_node_roce_ecn_enabled{netdev="eth4",point="np",priority="7"}'] == "1"
    assert samples['rdma_node_roce_trust_info{mode="dscp",netdev="eth4"}'] == "1"
    assert samples['rdma_node_link_effective_ber{device="mlx5_0",port="1"}'] == "2e-11"
    assert samples['rdma_node_module_temperature_celsius{device="mlx5_0",port="1"}'] == "61.0"
    assert samples['rdma_node_module_temperature_max_celsius{device="mlx5_0",port="1"}'] == "75.0"
    assert samples['rdma_node_module_lane_fault{device="mlx5_0",fault="rx_loss_of_signal",lane="1",port="1"}'] == "1"
    assert samples['rdma_node_link_down_periods{netdev="eth4",port="mlx5_0/1"}'] == "2"
    assert samples['rdma_node_link_down_longest_seconds{netdev="eth4",port="mlx5_0/1"}'] == "300.0"


def test_facts_that_say_not_available_make_no_samples():
    text = render({"rdma": {"aer": {"available": False, "functions": {}}, "link_quality": {"ports": {"mlx5_0/1": {"reason": "no mlxlink"}}},
                            "kernel_log": {"down_periods": {"ib0": {"clock": None, "periods": [], "reason": "no times"}}}}}, now=1.0)
    assert [line for line in text.splitlines() if not line.startswith("rdma_node_last_run") and not line.startswith("#")] == []
