"""rdma.node.pod_proof_host_views: what the pod proof reads of each host, from hostvars read raw."""

from __future__ import annotations

import time

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.pod_proof import pod_proof_group_nccl, pod_proof_host_views, pod_proof_node_views


class RawHostvars(dict):
    """Like Ansible's hostvars: raw_get gives a host's variables unrendered; a plain lookup would render them."""

    def __getitem__(self, name):
        raise AssertionError("the filter must read hostvars raw")

    def raw_get(self, name):
        return dict.__getitem__(self, name) if name in self else None


def test_only_the_rdma_facts_the_proof_reads_are_taken():
    rdma = {"ports": [{"device": "mlx5_0", "port": 1}], "devices": {"mlx5_0": {}}, "gpus": [], "locality": {}, "gpudirect": {"ready": True},
            "aer": {"mlx5_0": {"fatal": {}}}, "pcie_path": {"paths": []}, "link_quality": {}, "counters_time": 1.0}
    hostvars = RawHostvars({"gpu-01": {"ansible_facts": {"rdma": rdma, "rdma_memlock": {"soft": "unlimited"}}, "k8s_node_name": "node-a",
                                       "rdma": {"ports": "a stale top-level copy, not read"}}})
    views = pod_proof_host_views(hostvars, ["gpu-01"])
    assert views == {"gpu-01": {"k8s_node_name": "node-a", "ansible_facts": {
        "rdma": {"ports": [{"device": "mlx5_0", "port": 1}], "devices": {"mlx5_0": {}}, "gpus": [], "locality": {}, "gpudirect": {"ready": True}},
        "rdma_memlock": {"soft": "unlimited"}}}}


def test_injected_facts_and_unknown_hosts():
    hostvars = RawHostvars({"gpu-02": {"rdma": {"ports": [], "kernel_log": {}}}})
    assert pod_proof_host_views(hostvars, ["gpu-02", "not-in-inventory"]) == {
        "gpu-02": {"ansible_facts": {"rdma": {"ports": []}}}, "not-in-inventory": {"ansible_facts": {}}}


def test_a_plain_mapping_of_host_variables_is_read_too():
    hostvars = {"gpu-03": {"ansible_facts": {"rdma": {"gpudirect": {"ready": False}, "aer": {}}}}}
    assert pod_proof_host_views(hostvars, ["gpu-03", "gone"]) == {
        "gpu-03": {"ansible_facts": {"rdma": {"gpudirect": {"ready": False}}}}, "gone": {"ansible_facts": {}}}


@pytest.mark.parametrize("hostvars, hosts, said", [
    (None, ["a"], "expected hostvars, got NoneType"),
    (["gpu-01"], ["gpu-01"], "expected hostvars, got list"),
    (RawHostvars(), "gpu-01", "expected a list of inventory hosts, got str"),
])
def test_bad_input_is_one_sentence(hostvars, hosts, said):
    with pytest.raises(AnsibleFilterError, match=said):
        pod_proof_host_views(hostvars, hosts)


# A pod proof's status as the role leaves it (pod_proof_status), cut to what the group views read: the NCCL evidence of
# two groups, one with the hosts it was judged for.
STATUS = {"nccl": [
    {"group": "ib-v100", "source": "the saved file /srv/ib-v100.log", "network": "Socket", "transports": {"net_socket": 7},
     "hcas_used": [], "gdrdma_channels": 0, "busbw_at_largest": None, "min_busbw": None, "hosts": ["v100-node-01", "v100-node-02"],
     "findings": ["not kept"]},
    {"group": "ib-a100", "source": "the saved file /srv/ib-a100.log", "network": "IB", "transports": {"net_ib": 16},
     "hcas_used": ["mlx5_0"], "gdrdma_channels": 0, "busbw_at_largest": 181.2, "min_busbw": 180, "hosts": ["a100-node-01"]},
    "not an entry", {"group": None}]}


def test_group_nccl_keeps_each_groups_evidence_without_its_hosts():
    views = pod_proof_group_nccl(STATUS, 1700000000)
    assert sorted(views) == ["ib-a100", "ib-v100"]
    assert views["ib-v100"] == {"group": "ib-v100", "source": "the saved file /srv/ib-v100.log", "network": "Socket",
                                "transports": {"net_socket": 7}, "hcas_used": [], "gdrdma_channels": 0, "busbw_at_largest": None,
                                "min_busbw": None, "time": 1700000000.0}
    assert views["ib-a100"]["busbw_at_largest"] == 181.2
    # The same for every node: no host list, nothing of one node.
    assert all("hosts" not in view for view in views.values())
    assert pod_proof_group_nccl({}, 1.0) == {} and pod_proof_group_nccl(None, 1.0) == {}


def test_group_nccl_stamps_now_by_default():
    before = time.time()
    stamp = pod_proof_group_nccl(STATUS)["ib-v100"]["time"]
    assert before <= stamp <= time.time()


@pytest.mark.parametrize("stamp", ["yesterday", True, [1]])
def test_a_time_that_is_not_a_number_is_one_sentence(stamp):
    for call in (lambda: pod_proof_group_nccl(STATUS, stamp), lambda: pod_proof_node_views(STATUS, [], stamp)):
        with pytest.raises(AnsibleFilterError, match=r"^rdma\.node\.pod_proof_(group_nccl|node_views): time: expected seconds since the "
                                                     r"epoch \(a number\), got "):
            call()
