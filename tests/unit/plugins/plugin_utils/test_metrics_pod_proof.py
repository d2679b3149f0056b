"""The pod proof's and the bandwidth check's samples in a node's textfile: what a node's facts hold becomes
samples, what was not read becomes none (never a zero), and node data is escaped in labels."""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils._metrics import bandwidth_families, pod_proof_families, render


def _lines(families):
    return [line for family in families for line in family.lines() if not line.startswith("#")]


def test_nothing_read_writes_no_sample():
    assert _lines(pod_proof_families({})) == []
    # A group whose evidence could not be read (no transport, no network) is not "0 channels, no fallback".
    assert _lines(pod_proof_families({"nccl": [{"group": "ib-a100", "transports": None, "network": None}]})) == []
    # A pod that printed no limits and no capability line: no memlock sample, but the node's verdict.
    assert _lines(pod_proof_families({"pods": [{"side": "server", "memlock": None, "ipc_lock": None}], "memlock_capped": False})) == [
        "rdma_node_pod_memlock_capped 0"]
    assert _lines(bandwidth_families(None)) == []


def test_limits_pairs_and_nccl_become_samples():
    view = {"pods": [{"side": "client", "memlock": {"soft": "8388608", "hard": "unlimited"}, "ipc_lock": True}], "memlock_capped": False,
            "pairs": [{"role": "server", "port": "mlx5_0/1", "peer": "v100-node-02", "peer_port": "mlx5_0/1", "memory_mode": "dmabuf",
                       "measured_gbps": 92.38, "expected_gbps": 90.0}],
            "nccl": [{"group": "ib-v100", "transports": {"net_ib": 16, "p2p": 4}, "network": "IB", "gdrdma_channels": 16,
                      "busbw_at_largest": 187.5}]}
    assert _lines(pod_proof_families(view)) == [
        'rdma_node_pod_memlock_bytes{limit="hard",side="client"} +Inf',
        'rdma_node_pod_memlock_bytes{limit="soft",side="client"} 8388608',
        'rdma_node_pod_ipc_lock{side="client"} 1',
        "rdma_node_pod_memlock_capped 0",
        'rdma_node_pod_bandwidth_gbps{memory="dmabuf",peer="v100-node-02:mlx5_0/1",port="mlx5_0/1",role="server"} 92.38',
        'rdma_node_pod_bandwidth_expected_gbps{memory="dmabuf",peer="v100-node-02:mlx5_0/1",port="mlx5_0/1",role="server"} 90.0',
        'rdma_node_nccl_channels{group="ib-v100",transport="net_ib"} 16',
        'rdma_node_nccl_channels{group="ib-v100",transport="p2p"} 4',
        'rdma_node_nccl_gdrdma_channels{group="ib-v100"} 16',
        'rdma_node_nccl_socket_fallback{group="ib-v100"} 0',
        'rdma_node_nccl_busbw_gigabytes_per_second{group="ib-v100"} 187.5',
    ]


def test_node_data_is_escaped_in_labels():
    hostile = 'ib"v100\n} 1\nrdma_node_fake 1'
    text = render({"pod_proof_node": {"nccl": [{"group": hostile, "transports": {"net_socket": 2}, "network": "Socket"}], "time": 5.0}},
                  now=10)
    assert 'rdma_node_nccl_socket_fallback{group="ib\\"v100\\n} 1\\nrdma_node_fake 1"} 1' in text
    assert "\nrdma_node_fake 1" not in text
    assert "rdma_node_pod_proof_timestamp_seconds 5.0" in text


# The main job keeps each group's NCCL verdict on every node of its play (pod_proof_nccl_groups); a pod proof keeps
# each node's own part (pod_proof_node). The metrics show the part, and each of the node's own groups' verdicts where
# newer than the part's.
PART = {"pods": [{"side": "server", "memlock": {"soft": "unlimited", "hard": "unlimited"}, "ipc_lock": True}], "memlock_capped": False,
        "pairs": [], "nccl": [{"group": "ib-v100", "transports": {"net_ib": 16}, "network": "IB", "gdrdma_channels": 16}], "time": 100.0}
KEPT = {"ib-v100": {"group": "ib-v100", "transports": {"net_socket": 7}, "network": "Socket", "gdrdma_channels": 0, "time": 200.0},
        "ib-a100": {"group": "ib-a100", "transports": {"net_ib": 16}, "network": "IB", "gdrdma_channels": 0, "time": 200.0}}


def test_a_newer_group_verdict_replaces_the_parts_nccl_and_keeps_its_pods():
    text = render({"pod_proof_node": PART, "pod_proof_nccl_groups": KEPT}, now=300, groups=["ib-v100", "gpu"])
    assert 'rdma_node_nccl_socket_fallback{group="ib-v100"} 1' in text
    assert 'rdma_node_nccl_channels{group="ib-v100",transport="net_socket"} 7' in text
    assert 'transport="net_ib"' not in text
    assert 'rdma_node_pod_memlock_bytes{limit="soft",side="server"} +Inf' in text
    # Not a group of this node: not shown.
    assert 'group="ib-a100"' not in text
    # The oldest judgement shown: the pods' (100), not the group's (200).
    assert "rdma_node_pod_proof_timestamp_seconds 100.0" in text


def test_an_older_group_verdict_leaves_the_parts_nccl():
    older = {"ib-v100": dict(KEPT["ib-v100"], time=50.0)}
    text = render({"pod_proof_node": PART, "pod_proof_nccl_groups": older}, now=300, groups=["ib-v100"])
    assert 'rdma_node_nccl_channels{group="ib-v100",transport="net_ib"} 16' in text
    assert 'rdma_node_nccl_socket_fallback{group="ib-v100"} 0' in text
    assert "rdma_node_pod_proof_timestamp_seconds 100.0" in text


def test_group_verdicts_alone_and_without_groups():
    alone = render({"pod_proof_nccl_groups": KEPT}, now=300, groups=["ib-a100"])
    assert 'rdma_node_nccl_socket_fallback{group="ib-a100"} 0' in alone
    assert "rdma_node_pod_proof_timestamp_seconds 200.0" in alone
    # Without the host's groups nothing of the kept verdicts is shown (never another group's as this node's).
    none = render({"pod_proof_nccl_groups": KEPT}, now=300)
    assert "rdma_node_nccl_" not in none.replace("# HELP rdma_node_nccl_", "").replace("# TYPE rdma_node_nccl_", "")
    # A verdict without its time: shown, but the age of the samples is not known (no timestamp sample).
    untimed = {"ib-a100": {key: value for key, value in KEPT["ib-a100"].items() if key != "time"}}
    text = render({"pod_proof_node": PART, "pod_proof_nccl_groups": untimed}, now=300, groups=["ib-a100"])
    assert 'rdma_node_nccl_socket_fallback{group="ib-a100"} 0' in text
    assert "\nrdma_node_pod_proof_timestamp_seconds " not in text
