"""The pod proof's judgement reads a host's facts from hostvars only when a check asks about that host
(rdma.node.evaluate's node_hosts, _pod_proof.HostFacts), and judges as it did from every host's facts
copied into its parameters."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.rdma.node.plugins.action.evaluate import ActionModule
from ansible_collections.rdma.node.plugins.plugin_utils._pod_proof import HostFacts, host_view
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from bandwidth_demo import DEMO_HOSTS, demo_hosts
from pod_proof_run import GROUPS, pod_proof_run


class RawHostvars(dict):
    """Like Ansible's hostvars: raw_get gives a host's variables unrendered (None here for a host it does not
    know, where Ansible gives an undefined value); a plain lookup would render them. Records what was read."""

    def __init__(self, hosts):
        super().__init__(hosts)
        self.read = []

    def __getitem__(self, name):
        raise AssertionError("the hosts' facts must be read raw")

    def raw_get(self, name):
        self.read.append(name)
        return dict.get(self, name)


# node_remediation's probe on v100-node-02: a new container gets 64 KiB of locked memory.
CAPPED = {"probe": {"ran": True, "rc": 0, "result": "mismatch", "memlock": {"soft": "65536", "hard": "65536"}},
          "containerd": {"pid": 812, "memlock": {"soft": "65536", "hard": "65536"}}}


def test_a_host_is_read_when_asked_for_and_once():
    rdma = {"ports": [{"device": "mlx5_0", "port": 1, "counters": {"symbol_error": 3}}], "aer": {"mlx5_0": {}}}
    hostvars = RawHostvars({"gpu-01": {"ansible_facts": {"rdma": rdma, "rdma_memlock": CAPPED}, "k8s_node_name": "node-a"}})
    facts = HostFacts(hostvars, ["gpu-01", "not-in-inventory", "gpu-01"])
    assert (list(facts), len(facts), hostvars.read) == (["gpu-01", "not-in-inventory"], 2, [])
    assert facts["gpu-01"] == {"rdma": {"ports": [{"device": "mlx5_0", "port": 1}]}, "rdma_memlock": CAPPED}
    assert facts.get("gpu-01") is facts["gpu-01"] and hostvars.read == ["gpu-01"]
    # A named host hostvars does not know has no facts; a host that was not named is not read at all.
    assert facts["not-in-inventory"] == {} and facts.get("elsewhere") is None
    assert hostvars.read == ["gpu-01", "not-in-inventory"]
    assert facts["gpu-01"] == host_view(dict.get(hostvars, "gpu-01"))["ansible_facts"]


def test_a_plain_mapping_of_host_variables_is_read_too():
    assert HostFacts({"gpu-03": {"ansible_facts": {"rdma_memlock": CAPPED}}}, ["gpu-03"])["gpu-03"] == {"rdma_memlock": CAPPED}


@pytest.mark.parametrize("hostvars, said", [(None, "got NoneType"), (["gpu-01"], "got list")])
def test_what_is_not_hostvars_is_one_sentence(hostvars, said):
    with pytest.raises(CheckError, match="^the hosts' facts need Ansible's hostvars, %s$" % said):
        HostFacts(hostvars, ["gpu-01"])
    with pytest.raises(AnsibleActionFail, match="^rdma.node.evaluate: node_hosts: the hosts' facts need Ansible's hostvars, %s$" % said):
        ActionModule._with_node_facts({}, ["gpu-01"], {"hostvars": hostvars})


def test_the_facts_are_given_one_way():
    with pytest.raises(AnsibleActionFail, match="^rdma.node.evaluate: give the hosts' facts as params.nodes or their names as node_hosts, not both$"):
        ActionModule._with_node_facts({"nodes": {}}, ["gpu-01"], {"hostvars": RawHostvars({})})
    params = ActionModule._with_node_facts({"plan": {}}, ["gpu-01"], {"hostvars": RawHostvars({})})
    assert params["plan"] == {} and list(params["nodes"]) == ["gpu-01"]


def test_the_judgement_reads_only_the_hosts_it_asks_about_and_judges_the_same(tmp_path):
    """A finished pod proof on the demo hosts (tests/pod_proof_run.py: v100-node-02's pod capped at 64 KiB, the
    ib-v100 group's NCCL log fell back to sockets), judged once with every host's facts copied into the parameters
    and once with them read from hostvars on demand."""
    demo = demo_hosts(tmp_path / "facts")
    variables = {host: {"ansible_facts": dict({"rdma": demo[host]["rdma"]}, **({"rdma_memlock": CAPPED} if host == "v100-node-02" else {}))}
                 for host in DEMO_HOSTS}
    copied = pod_proof_run(tmp_path / "copied", nodes={host: host_view(variables[host])["ansible_facts"] for host in DEMO_HOSTS})[0]
    hostvars = RawHostvars(variables)
    on_demand = pod_proof_run(tmp_path / "on-demand", nodes=HostFacts(hostvars, DEMO_HOSTS))[0]
    assert on_demand == copied
    # The node's own probe is in the findings it explains: the facts reached the checks.
    said = " ".join(f["message"] for f in copied["pod_proof_findings"])
    assert "a new container on v100-node-02 gets Max locked memory 65536" in said
    # The checks asked about the hosts of the group whose NCCL log shows a fault and of the capped pod, not the a100 group's.
    assert set(hostvars.read) == set(GROUPS["ib-v100"])
