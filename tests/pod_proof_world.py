"""Simulated GPU nodes of one group for the pod proof against the FAKE Kubernetes API: their sysfs trees, an
inventory, and a playbook that reads the trees with rdma.node.ib_facts, then runs rdma.node.pod_proof (for the
integration tests and the benchmark)."""

from __future__ import annotations

import json
import sys

from sysfs_tree import build_host

GROUP = "ib-v100"
PLAYBOOK = (
    "- name: Gather the RDMA facts of the GPU nodes (simulated sysfs trees)\n"
    "  hosts: %s\n  gather_facts: false\n  tasks:\n"
    "    - name: Read sysfs\n      rdma.node.ib_facts:\n        sysfs_root: \"{{ rdma_sysfs_root }}\"\n"
    "- name: The pod proof\n  ansible.builtin.import_playbook: rdma.node.pod_proof\n" % GROUP)


def gather_then_pod_proof(directory, hardware, host_vars=None):
    """Build each host's sysfs tree from ``hardware`` (host -> sysfs_tree description) under ``directory``;
    returns ``(inventory, playbook)``: the hosts in group ib-v100 with a local connection (and ``host_vars``
    of their own), and the playbook."""
    hosts = {}
    for host, spec in hardware.items():
        tree = directory / "sysfs" / host
        build_host(str(tree), spec)
        hosts[host] = dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "rdma_sysfs_root": str(tree)},
                           **(host_vars or {}).get(host, {}))
    inventory = directory / "inventory.json"
    inventory.write_text(json.dumps({"all": {"children": {GROUP: {"hosts": hosts}}}}))
    playbook = directory / "gather_then_pod_proof.yml"
    playbook.write_text(PLAYBOOK)
    return inventory, playbook
