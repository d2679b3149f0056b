"""ib_facts run as Ansible runs it: arguments in, facts and warnings out."""

from __future__ import annotations

import os

import sysfs_tree

from ansible_collections.rdma.node.plugins.modules import ib_facts
from testpaths import FIXTURES


def test_facts_from_a_real_tree(tmp_path, run_module):
    sysfs_tree.unpack((FIXTURES / "sysfs/prometheus-procfs.sysfs").read_bytes(), str(tmp_path))
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path)}, check_mode=True)
    assert result["changed"] is False
    rdma = result["ansible_facts"]["rdma"]
    assert rdma["summary"]["port_count"] == 4
    assert rdma["devices"]["mlx5_0"]["node_guid"] == "0x0a7fbc1245efd23b"
    assert "warnings" not in result


def test_dangling_link_becomes_a_task_warning(tmp_path, run_module):
    (tmp_path / "class/infiniband").mkdir(parents=True)
    os.symlink("../../devices/gone/infiniband/mlx5_3", str(tmp_path / "class/infiniband/mlx5_3"))
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path)})
    assert result["ansible_facts"]["rdma"]["devices"] == {}
    assert len(result.warning_messages) == 1
    assert "mlx5_3 is a dangling symlink" in result.warning_messages[0]


def test_missing_root_is_one_clear_sentence(tmp_path, run_module):
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path / "nope")})
    assert result.failed
    assert result["msg"] == "sysfs_root %s is not a directory; expected the path of a sysfs tree such as /sys" % (tmp_path / "nope")


def test_gather_subset_all_on_a_demo_node(tmp_path, run_module):
    from testpaths import COLLECTION_ROOT

    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(tmp_path))
    node = tmp_path / "v100-node-01"
    result = run_module(ib_facts, {"sysfs_root": str(node / "sys"), "proc_root": str(node / "proc"),
                                   "gather_subset": ["all"]}, check_mode=True)
    rdma = result["ansible_facts"]["rdma"]
    assert rdma["pcie"]["mlx5_0"]["current_width"] == 8 and rdma["pcie"]["mlx5_0"]["max_width"] == 16
    assert rdma["gpudirect"]["kernel_release"] == "6.1.0-27-amd64"
    assert rdma["gpudirect"]["peermem_module"] == "nvidia_peermem"
    assert [g["relation"] for g in rdma["locality"]["gpus"]] == ["same_pcie_switch", "same_pcie_switch"]
    assert rdma["roce"]["netns_mode"] == "shared"
    assert rdma["ports"][0]["counters"]["symbol_error"] == 0


def test_default_subset_is_todays_facts(tmp_path, run_module):
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), str(tmp_path))
    rdma = run_module(ib_facts, {"sysfs_root": str(tmp_path)})["ansible_facts"]["rdma"]
    assert set(rdma) == {"devices", "ports", "netdevs", "summary"}
    assert "counters" not in rdma["ports"][0]


def test_unknown_subset_is_refused(tmp_path, run_module):
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["counter"]})
    assert result.failed
    assert "gather_subset" in result["msg"] and "counter" in result["msg"]
