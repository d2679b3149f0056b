"""The quarantine filters: hostvars read as the fleet report reads them, one sentence on bad input."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.quarantine import host_inputs, k8s_quarantine_pods, k8s_quarantine_plan, k8s_quarantine_settings
from quarantine_cases import NAMES, NOW, PORT_DOWN, fleet, host, reading


class RawHostvars(dict):
    """Like Ansible's hostvars: raw_get gives a host's variables unrendered; a plain lookup would render them."""

    def __getitem__(self, name):
        raise AssertionError("the filter must read hostvars raw")

    def raw_get(self, name):
        return dict.__getitem__(self, name)


def test_only_what_the_plan_reads_is_taken_from_a_host():
    variables = host([PORT_DOWN], cached=True)
    variables["ansible_facts"]["rdma"].update(ports=[{"device": "mlx5_0"}], devices={"mlx5_0": {}})
    variables["ansible_facts"]["ansible_hostname"] = "gpu-01"
    taken = host_inputs(RawHostvars({"gpu-01": variables}), "gpu-01", ["ib_inventory"])
    assert taken["ansible_facts"]["rdma"] == {"counters_time": NOW - 60}
    assert sorted(taken["ansible_facts"]) == ["ib_inventory_findings", "ib_inventory_status", "rdma"]
    assert host_inputs(RawHostvars(), "not-a-host", ["ib_inventory"]) == {}


def test_the_plan_filter_on_hostvars():
    result = k8s_quarantine_plan(RawHostvars(fleet({"gpu-03"})), NAMES, reading(), {"mode": "report", "max_percent": 10}, now=NOW)
    assert result["quarantine"] == ["gpu-03"] and result["mode"] == "report"


@pytest.mark.parametrize("call, message", [
    (lambda: k8s_quarantine_plan(RawHostvars(), "gpu-01", reading(), {}), "rdma.node.k8s_quarantine_plan: hosts must be a list"),
    (lambda: k8s_quarantine_plan(RawHostvars(), [], None, {}), "rdma.node.k8s_quarantine_plan: reading must be what the role read"),
    (lambda: k8s_quarantine_plan(42, [], reading(), {}), "rdma.node.k8s_quarantine_plan: expected hostvars"),
    (lambda: k8s_quarantine_settings({"max_nodes": "ten"}), "rdma.node.k8s_quarantine_settings: k8s_quarantine_max_nodes: expected an integer"),
    (lambda: k8s_quarantine_pods([], "rdma/*"), "rdma.node.k8s_quarantine_pods: resources must be a list"),
])
def test_bad_input_is_one_sentence(call, message):
    with pytest.raises(AnsibleFilterError) as caught:
        call()
    assert str(caught.value).startswith(message)
