"""node_facts: one call gives exactly what ib_facts and driver_facts give for the same node."""

from __future__ import annotations

import sysfs_tree

from ansible_collections.rdma.node.plugins.modules import driver_facts, ib_facts, node_facts
from testpaths import COLLECTION_ROOT


def _demo_node(tmp_path, host):
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(tmp_path))
    return tmp_path / host


def test_one_call_equals_the_two_modules(tmp_path, run_module):
    node = _demo_node(tmp_path, "a100-node-02")
    ib_args = {"sysfs_root": str(node / "sys"), "proc_root": str(node / "proc"), "gather_subset": ["all"]}
    driver_args = {"root": str(node), "dkms_status_file": str(node / "saved/dkms-status.txt"),
                   "ofed_info_file": str(node / "saved/ofed_info.txt"), "run_tools": False}
    both = run_module(node_facts, dict(ib_args, **driver_args), check_mode=True)
    assert both["changed"] is False
    alone = run_module(ib_facts, ib_args)["ansible_facts"]["rdma"]
    # The times the counters and the AER files were read differ between two calls; everything else is the same.
    assert both["ansible_facts"]["rdma"].pop("counters_time") <= alone.pop("counters_time")
    assert both["ansible_facts"]["rdma"]["aer"].pop("time") <= alone["aer"].pop("time")
    assert both["ansible_facts"]["rdma"] == alone
    assert both["ansible_facts"]["rdma_driver"] == run_module(driver_facts, driver_args)["ansible_facts"]["rdma_driver"]
    assert both["ansible_facts"]["rdma_driver"]["next_boot_kernel"] == "6.1.0-28-amd64"


def test_gather_picks_the_namespaces(tmp_path, run_module):
    node = _demo_node(tmp_path, "v100-node-01")
    result = run_module(node_facts, {"sysfs_root": str(node / "sys"), "gather": ["rdma"]})
    assert list(result["ansible_facts"]) == ["rdma"]
    assert result["ansible_facts"]["rdma"]["summary"]["port_count"] == 2


def test_a_bad_root_is_one_sentence(tmp_path, run_module):
    node = _demo_node(tmp_path, "v100-node-01")
    result = run_module(node_facts, {"sysfs_root": str(node / "sys"), "root": str(tmp_path / "missing")})
    assert result.failed
    assert result["msg"] == "root %s is not a directory; expected / or the top of a node's file tree" % (tmp_path / "missing")
