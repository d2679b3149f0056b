"""Health facts (counters, PCIe, GPU locality, GPUDirect, RoCE) on real trees and synthetic edge cases."""

from __future__ import annotations

import os

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils import _sysfs_health as health
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts, wanted_subsets
from ansible_collections.rdma.node.plugins.module_utils._subsets import FactReadError
from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from testpaths import COLLECTION_ROOT, FIXTURES


def facts_of(root, subsets=("all",), proc_root=None):
    return read_ib_facts({"sysfs_root": root, "proc_root": proc_root, "gather_subset": list(subsets)})


def facts_and_read_warnings(root, subsets):
    take_read_warnings()
    facts, warnings = facts_of(root, subsets)
    return facts, warnings + take_read_warnings()


def port(facts, device, number=1):
    return next(p for p in facts["ports"] if p["device"] == device and p["port"] == number)


def raw(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


@pytest.fixture(scope="module")
def h100_tree(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("h100") / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), dest)
    return dest


@pytest.fixture(scope="module")
def procfs_tree(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("procfs") / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/prometheus-procfs.sysfs").read_bytes(), dest)
    return dest


# --------------------------------------------------------------------------- counters, real trees


def test_h100_counters_are_numbers_with_data_in_bytes(h100_tree):
    facts, warnings = facts_of(h100_tree, ["counters"])
    assert warnings == []
    assert len(facts["ports"]) == 9
    mlx5_0 = port(facts, "mlx5_0")
    counters_dir = os.path.join(h100_tree, "class/infiniband/mlx5_0/ports/1/counters")
    assert mlx5_0["counters"]["port_xmit_data_bytes"] == int(raw(os.path.join(counters_dir, "port_xmit_data"))) * 4
    assert mlx5_0["counters"]["port_rcv_data_bytes"] == 922159499729932  # 230539874932483 words
    assert "port_xmit_data" not in mlx5_0["counters"]
    assert mlx5_0["counters"]["port_xmit_wait"] == 2489603687
    assert mlx5_0["counters"]["port_rcv_errors"] == 14
    assert len(mlx5_0["counters"]) == len(os.listdir(counters_dir)) == 21
    assert mlx5_0["counters_data_width_bits"] == 64  # the extended set: unicast_*/multicast_* exist
    assert mlx5_0["counters_ext"] is None


def test_h100_saturated_counters_are_the_real_ones(h100_tree):
    """This H100 reads 15 (the 4-bit maximum) in excessive_buffer_overrun_errors on every port and
    255 (the 8-bit maximum) in link_downed on mlx5_1: those counters no longer move."""
    facts, _warnings = facts_of(h100_tree, ["counters"])
    saturated = {p["device"]: p["counters_saturated"] for p in facts["ports"]}
    assert saturated["mlx5_1"] == ["excessive_buffer_overrun_errors", "link_downed"]
    assert all(names == ["excessive_buffer_overrun_errors"] for dev, names in saturated.items() if dev != "mlx5_1")
    assert port(facts, "mlx5_1")["counters"]["link_downed"] == 255


def test_h100_hw_counters_without_the_lifespan_setting(h100_tree):
    facts, _warnings = facts_of(h100_tree, ["counters"])
    bond = port(facts, "mlx5_bond_0")
    hw_dir = os.path.join(h100_tree, "class/infiniband/mlx5_bond_0/ports/1/hw_counters")
    assert set(bond["hw_counters"]) == set(os.listdir(hw_dir)) - {"lifespan"}
    assert bond["hw_counters_lifespan_ms"] == int(raw(os.path.join(hw_dir, "lifespan")))
    assert all(isinstance(value, int) for value in bond["hw_counters"].values())


def test_procfs_mlx4_traffic_counters_prove_64_bits_without_the_extended_files(procfs_tree):
    facts, _warnings = facts_of(procfs_tree, ["counters"])
    mlx4 = port(facts, "mlx4_0", 1)
    assert "unicast_xmit_packets" not in mlx4["counters"]
    assert mlx4["counters"]["port_xmit_data_bytes"] == 26509113295 * 4  # above 2**32 words
    assert mlx4["counters_data_width_bits"] == 64
    assert port(facts, "hfi1_0")["hw_counters"] is None  # Omni-Path: no hw_counters directory
    assert port(facts, "mlx5_0")["hw_counters_lifespan_ms"] == 10
    assert all(p["counters_saturated"] == [] for p in facts["ports"])


def test_default_subset_adds_nothing(procfs_tree):
    facts, _warnings = facts_of(procfs_tree, ["ports"])
    assert "counters" not in facts["ports"][0]
    assert not {"pcie", "gpus", "locality", "gpudirect", "roce"} & set(facts)


# --------------------------------------------------------------------------- counters, synthetic


def counter_tree(root, counters=None, counters_ext=None, **port_args):
    tree = sysfs_tree.TreeBuilder(root)
    device = tree.hca("mlx4_0", "0000:03:00.0", driver="mlx4_core")
    tree.port(device, 1, counters=counters, counters_ext=counters_ext, **port_args)
    return root


def test_no_pma_is_null_not_an_error_and_junk_is_null_with_a_warning(tmp_path):
    root = counter_tree(str(tmp_path), {"symbol_error": "N/A (no PMA)", "link_downed": "0", "port_rcv_data": "junk"})
    facts, warnings = facts_and_read_warnings(root, ["counters"])
    counters = facts["ports"][0]["counters"]
    assert counters == {"symbol_error": None, "link_downed": 0, "port_rcv_data_bytes": None}
    assert facts["ports"][0]["counters_saturated"] == []
    assert warnings == ["%s/class/infiniband/mlx4_0/ports/1/counters/port_rcv_data holds 'junk', not an unsigned "
                        "whole number of at most 64 bits; read as null." % root]


def test_a_port_without_a_pma_has_no_counter_width(tmp_path):
    # i40iw prints "N/A (no PMA)" in every counter file (node_exporter issue 966): no PortCounters table at all.
    root = counter_tree(str(tmp_path), {"symbol_error": "N/A (no PMA)", "port_rcv_data": "N/A (no PMA)", "port_xmit_data": "N/A (no PMA)"})
    only = facts_of(root, ["counters"])[0]["ports"][0]
    assert only["counters"] == {"symbol_error": None, "port_rcv_data_bytes": None, "port_xmit_data_bytes": None}
    assert only["counters_data_width_bits"] is None


def test_missing_counters_directory_is_null(tmp_path):
    facts, _warnings = facts_of(counter_tree(str(tmp_path)), ["counters"])
    only = facts["ports"][0]
    assert only["counters"] is None and only["counters_ext"] is None and only["hw_counters"] is None
    assert only["counters_saturated"] == [] and only["counters_data_width_bits"] is None


@pytest.mark.parametrize("name, at_max, below", [
    ("local_link_integrity_errors", "15", "14"),
    ("excessive_buffer_overrun_errors", "15", "14"),
    ("link_downed", "255", "254"),
    ("link_error_recovery", "255", "254"),
    ("port_rcv_constraint_errors", "255", "254"),
    ("symbol_error", "65535", "65534"),
    ("VL15_dropped", "65535", "65534"),
    ("port_xmit_wait", "4294967295", "4294967294"),
])
def test_saturation_at_the_ibta_width(tmp_path, name, at_max, below):
    saturated = facts_of(counter_tree(str(tmp_path / "max"), {name: at_max}), ["counters"])[0]
    assert saturated["ports"][0]["counters_saturated"] == [name]
    moving = facts_of(counter_tree(str(tmp_path / "below"), {name: below}), ["counters"])[0]
    assert moving["ports"][0]["counters_saturated"] == []


def test_base_table_data_counter_saturates_at_32_bits(tmp_path):
    root = counter_tree(str(tmp_path), {"port_xmit_data": "4294967295", "port_rcv_data": "7"})
    only = facts_of(root, ["counters"])[0]["ports"][0]
    assert only["counters_data_width_bits"] == 32
    assert only["counters_saturated"] == ["port_xmit_data_bytes"]
    assert only["counters"]["port_xmit_data_bytes"] == 4294967295 * 4


def test_extended_table_data_counter_never_saturates(tmp_path):
    root = counter_tree(str(tmp_path), {"port_xmit_data": "4294967295", "unicast_xmit_packets": "3"})
    only = facts_of(root, ["counters"])[0]["ports"][0]
    assert only["counters_data_width_bits"] == 64
    assert only["counters_saturated"] == []


def test_legacy_counters_ext_data_in_bytes(tmp_path):
    root = counter_tree(str(tmp_path), {"symbol_error": "0"},
                        {"port_xmit_data_64": "10", "port_unicast_xmit_packets": "4"})
    only = facts_of(root, ["counters"])[0]["ports"][0]
    assert only["counters_ext"] == {"port_xmit_data_64_bytes": 40, "port_unicast_xmit_packets": 4}


# --------------------------------------------------------------------------- PCIe


@pytest.mark.parametrize("text, expected", [
    ("16.0 GT/s PCIe", 16.0), ("8.0 GT/s PCIe", 8.0), ("8.0 GT/s", 8.0), ("8 GT/s", 8.0), ("5 GT/s", 5.0),
    ("2.5 GT/s PCIe", 2.5), ("32.0 GT/s PCIe", 32.0), ("Unknown", None), ("Unknown speed", None), ("", None),
    (None, None),
])
def test_link_speed_strings(text, expected):
    assert health.parse_link_speed(text) == expected


@pytest.mark.parametrize("text, expected", [("16", 16), ("8", 8), ("x4", 4), ("0", None), ("", None), (None, None),
                                            ("255", 255)])
def test_link_width_strings(text, expected):
    assert health.parse_link_width(text, "current_link_width") == expected


def pcie_tree(root, link, bdf="0000:3b:00.0"):
    tree = sysfs_tree.TreeBuilder(root)
    tree.hca("mlx5_0", bdf, pcie=link, bridges=["0000:3a:00.0"])
    return tree


def test_degraded_link_is_below_max(tmp_path):
    pcie_tree(str(tmp_path), {"current_speed": "8.0 GT/s PCIe", "max_speed": "16.0 GT/s PCIe",
                              "current_width": "8", "max_width": "16"})
    link = facts_of(str(tmp_path), ["pcie"])[0]["pcie"]["mlx5_0"]
    assert link == {
        "pci_address": "0000:3b:00.0", "present": True, "absent_reason": None, "vendor": "0x15b3",
        "device": "0x101b", "current_speed_gts": 8.0, "max_speed_gts": 16.0, "current_width": 8, "max_width": 16,
        "current_generation": 3, "max_generation": 4, "speed_below_max": True, "width_below_max": True,
    }


def test_missing_max_link_speed_is_unknown_not_degraded(tmp_path):
    pcie_tree(str(tmp_path), {"current_speed": "Unknown", "current_width": "16", "max_width": "16"})
    link = facts_of(str(tmp_path), ["pcie"])[0]["pcie"]["mlx5_0"]
    assert (link["current_speed_gts"], link["max_speed_gts"], link["speed_below_max"]) == (None, None, None)
    assert link["width_below_max"] is False


def test_device_link_that_dangles_is_gone_from_the_bus(tmp_path):
    tree = pcie_tree(str(tmp_path), {"current_width": "16", "max_width": "16"})
    pci = os.path.join(tree.root, "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0")
    device_link = os.path.join(tree.root, "class/infiniband/mlx5_0")
    os.rename(os.path.join(pci, "infiniband"), os.path.join(tree.root, "kept"))
    os.unlink(device_link)
    os.symlink(os.path.relpath(os.path.join(tree.root, "kept/mlx5_0"), os.path.dirname(device_link)), device_link)
    os.unlink(os.path.join(tree.root, "kept/mlx5_0/device"))
    os.symlink("../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", os.path.join(tree.root, "kept/mlx5_0/device"))
    os.rename(pci, pci + ".removed")
    link = facts_of(tree.root, ["pcie"])[0]["pcie"]["mlx5_0"]
    assert link["present"] is False
    assert "gone" in link["absent_reason"]
    assert link["current_width"] is None


def test_function_missing_from_the_bus_list_is_gone(tmp_path):
    tree = pcie_tree(str(tmp_path), {"current_width": "16", "max_width": "16"})
    os.unlink(os.path.join(tree.root, "bus/pci/devices/0000:3b:00.0"))
    link = facts_of(tree.root, ["pcie"])[0]["pcie"]["mlx5_0"]
    assert link["present"] is False
    assert link["absent_reason"] == "0000:3b:00.0 is no longer listed in bus/pci/devices"


def test_config_space_of_all_ones_is_gone(tmp_path):
    tree = pcie_tree(str(tmp_path), {"current_width": "63", "max_width": "16"})
    with open(os.path.join(tree.root, "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/config"), "wb") as handle:
        handle.write(b"\xff" * 64)
    link = facts_of(tree.root, ["pcie"])[0]["pcie"]["mlx5_0"]
    assert link["present"] is False
    assert "all ones" in link["absent_reason"]


def test_tree_without_device_links_says_nothing_about_presence(h100_tree):
    links = facts_of(h100_tree, ["pcie"])[0]["pcie"]
    assert set(links) == {"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"}
    assert all(link["present"] is None and link["pci_address"] is None for link in links.values())


# --------------------------------------------------------------------------- GPUs and locality

SWITCH_A = ["0000:16:00.0", "0000:17:00.0"]
SWITCH_B = ["0000:c8:00.0", "0000:c9:00.0"]


def locality_tree(root, gpus, hcas):
    tree = sysfs_tree.TreeBuilder(root)
    for index, (bdf, numa, bridges) in enumerate(hcas):
        device = tree.hca("mlx5_%d" % index, bdf, numa_node=numa, bridges=bridges)
        tree.port(device, 1)
    for bdf, numa, bridges in gpus:
        tree.gpu(bdf, numa_node=numa, bridges=bridges)
    return tree


def test_gpu_on_another_numa_node_is_cross_numa(tmp_path):
    locality_tree(str(tmp_path), gpus=[("0000:ca:00.0", 1, SWITCH_B)],
                  hcas=[("0000:18:00.0", 0, SWITCH_A)])
    facts = facts_of(str(tmp_path), ["locality"])[0]
    assert facts["gpus"] == [{
        "pci_address": "0000:ca:00.0", "device": "0x20b0", "class": "0x030200", "driver": "nvidia",
        "numa_node": 1, "host_bridge": "pci0000:c8", "pci_path": SWITCH_B,
    }]
    only = facts["locality"]["gpus"][0]
    assert (only["nearest_hca"], only["relation"]) == ("mlx5_0", "cross_numa")


def test_nearest_hca_shares_the_switch(tmp_path):
    locality_tree(str(tmp_path), gpus=[("0000:19:00.0", 0, SWITCH_A + ["0000:18:08.0"])],
                  hcas=[("0000:ca:00.0", 1, SWITCH_B + ["0000:c9:08.0"]),
                        ("0000:1a:00.0", 0, SWITCH_A + ["0000:18:10.0"]),
                        ("0000:2b:00.0", 0, ["0000:16:01.0"])])
    facts = facts_of(str(tmp_path), ["locality"])[0]
    ranked = [(c["device"], c["relation"], c["shared_bridge"]) for c in facts["locality"]["gpus"][0]["candidates"]]
    assert ranked == [("mlx5_1", "same_pcie_switch", "0000:17:00.0"), ("mlx5_2", "same_host_bridge", None),
                      ("mlx5_0", "cross_numa", None)]
    assert facts["locality"]["hcas"]["mlx5_1"]["pci_path"] == SWITCH_A + ["0000:18:10.0"]
    assert facts["locality"]["hcas"]["mlx5_1"]["link_layers"] == ["InfiniBand"]


@pytest.mark.parametrize("gpu, hca, expected", [
    ({"host_bridge": "pci0000:16", "pci_path": ["a", "b", "c"], "numa_node": 0},
     {"host_bridge": "pci0000:16", "pci_path": ["a", "b", "d"], "numa_node": 0}, ("same_pcie_switch", "b")),
    ({"host_bridge": "pci0000:16", "pci_path": ["a", "c"], "numa_node": 0},
     {"host_bridge": "pci0000:16", "pci_path": ["a", "d"], "numa_node": 0}, ("same_root_port", "a")),
    ({"host_bridge": "pci0000:16", "pci_path": ["a"], "numa_node": 0},
     {"host_bridge": "pci0000:16", "pci_path": ["e"], "numa_node": 0}, ("same_host_bridge", None)),
    ({"host_bridge": "pci0000:16", "pci_path": ["a"], "numa_node": 0},
     {"host_bridge": "pci0000:30", "pci_path": ["e"], "numa_node": 0}, ("same_numa_node", None)),
    ({"host_bridge": "pci0000:16", "pci_path": ["a"], "numa_node": 0},
     {"host_bridge": "pci0000:c8", "pci_path": ["e"], "numa_node": 1}, ("cross_numa", None)),
    ({"host_bridge": "pci0000:16", "pci_path": ["a"], "numa_node": -1},
     {"host_bridge": "pci0000:c8", "pci_path": ["e"], "numa_node": -1}, ("unknown", None)),
])
def test_relations(gpu, hca, expected):
    assert health.relation(gpu, hca) == expected


def test_no_gpus_and_other_display_functions_are_not_gpus(tmp_path):
    tree = locality_tree(str(tmp_path), gpus=[], hcas=[("0000:18:00.0", 0, SWITCH_A)])
    tree.pci_device("0000:03:00.0", driver="ast", vendor="0x1a03", pci_class="0x030000")  # BMC VGA
    tree.pci_device("0000:05:00.0", driver=None, vendor="0x10de", pci_class="0x068000")  # NVSwitch
    facts = facts_of(tree.root, ["locality"])[0]
    assert facts["gpus"] == [] and facts["locality"]["gpus"] == []
    assert list(facts["locality"]["hcas"]) == ["mlx5_0"]


def test_demo_gpus_sit_behind_their_hca_switch(tmp_path):
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(tmp_path))
    facts = facts_of(str(tmp_path / "a100-node-01/sys"), ["locality"])[0]
    pairs = {g["gpu"]: (g["nearest_hca"], g["relation"]) for g in facts["locality"]["gpus"]}
    assert pairs == {"0000:0f:00.0": ("mlx5_0", "same_pcie_switch"), "0000:4e:00.0": ("mlx5_1", "same_pcie_switch")}
    bond = [c for c in facts["locality"]["gpus"][0]["candidates"] if c["device"] == "mlx5_bond_0"][0]
    assert bond["relation"] == "cross_numa" and bond["link_layers"] == ["Ethernet"]


# --------------------------------------------------------------------------- GPUDirect


def gpudirect_root(root, modules=(), memory_peers=False, release="6.1.0-27-amd64", version_text=None, taint=None,
                   initstate=None):
    tree = sysfs_tree.TreeBuilder(root)
    for name in modules:
        tree.write("sys/module/%s/refcnt" % name, 0)
        tree.write("sys/module/%s/initstate" % name, initstate)
    if taint is not None:
        tree.write("sys/module/nvidia/taint", taint)
    if memory_peers:
        os.makedirs(os.path.join(root, "sys/kernel/mm/memory_peers/nv_mem"))
    tree.write("proc/sys/kernel/osrelease", release)
    tree.write("proc/driver/nvidia/version", version_text)
    return health.gpudirect(os.path.join(root, "sys"), os.path.join(root, "proc"))


def test_peermem_path_ready_with_the_proprietary_driver(tmp_path):
    facts = gpudirect_root(str(tmp_path), ["nvidia", "nvidia_peermem"], memory_peers=True, version_text=(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023"))
    assert facts["peermem_module"] == "nvidia_peermem" and facts["peermem_ready"] is True
    assert facts["memory_peer_clients"] == ["nv_mem"]
    assert facts["nvidia_driver_version"] == "535.104.05"
    assert facts["nvidia_kernel_module_flavour"] == "proprietary"
    assert facts["dma_buf_ready"] is False
    assert facts["dma_buf_missing"] == ["the NVIDIA kernel module is proprietary, DMA-BUF needs the open one"]


def test_dma_buf_path_with_the_open_module_on_a_new_kernel(tmp_path):
    facts = gpudirect_root(str(tmp_path), ["nvidia"], release="5.15.0-91-generic", version_text=(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build"))
    assert facts["dma_buf_ready"] is True and facts["dma_buf_missing"] == []
    assert facts["nvidia_driver_version"] == "550.54.15"
    assert facts["peermem_ready"] is False
    assert facts["peermem_missing"] == ["neither nvidia_peermem nor nv_peer_mem is loaded",
                                        "kernel/mm/memory_peers is absent (no peer-memory API in ib_core)"]


def test_old_kernel_and_taint_flags(tmp_path):
    facts = gpudirect_root(str(tmp_path), ["nvidia", "nv_peer_mem"], release="5.4.0-150-generic", taint="OE")
    assert facts["peermem_module"] == "nv_peer_mem"
    assert facts["nvidia_kernel_module_flavour"] == "open"  # no P in the taint flags
    assert facts["dma_buf_missing"] == ["kernel 5.4.0-150-generic is older than 5.12"]


def test_module_still_loading_is_not_loaded(tmp_path):
    facts = gpudirect_root(str(tmp_path), ["nvidia_peermem"], initstate="coming")
    assert facts["peermem_module"] is None
    assert facts["nvidia_module_loaded"] is False


def test_no_module_loaded_and_no_kernel_release(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), "module"))
    facts = health.gpudirect(str(tmp_path), None)
    assert (facts["kernel_release"], facts["nvidia_module_loaded"], facts["reason"]) == (None, False, None)
    assert facts["dma_buf_missing"] == ["the kernel release is unknown", "the nvidia module is not loaded"]


def test_a_tree_without_module_says_the_modules_are_unknown_not_unloaded(tmp_path):
    """A saved /sys that left module/ out (gpud's H100 export, hwloc's test trees) says nothing of the modules."""
    root = str(tmp_path / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), root)
    assert not os.path.exists(os.path.join(root, "module"))
    facts = health.gpudirect(root, None)
    unknown = "which kernel modules are loaded is unknown: %s has no module directory" % root
    assert facts["reason"] == unknown
    assert (facts["nvidia_module_loaded"], facts["peermem_ready"], facts["dma_buf_ready"]) == (None, False, False)
    assert facts["peermem_missing"] == facts["dma_buf_missing"] == [unknown]


# --------------------------------------------------------------------------- RoCE


@pytest.mark.parametrize("value, expected", [("Y", "shared"), ("N", "exclusive"), ("1", "shared"), (None, None)])
def test_netns_mode_from_ib_core(tmp_path, value, expected):
    sysfs_tree.TreeBuilder(str(tmp_path)).write(health.NETNS_PARAMETER, value)
    assert health.netns_mode(str(tmp_path)) == expected


def test_roce_gids_with_netdev_and_address(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_2", "0000:b1:00.0")
    rel = tree.port(device, 1, link_layer="Ethernet", port_guid="0e42:a1ff:fe65:3a9e", extra_gids=2, ndevs=["ens1f0"])
    tree.write(rel + "/gids/3", "0000:0000:0000:0000:0000:0000:0000:0000")
    tree.write(rel + "/gids/4", "fd00:0000:0000:0000:0000:0000:0000:0011")
    tree.write(rel + "/gid_attrs/types/4", "RoCE v2")
    tree.write(rel + "/gid_attrs/ndevs/4", "ens1f0")
    gids = facts_of(str(tmp_path), ["roce"])[0]["roce"]["gids"]
    assert [(g["index"], g["type"], g["netdev"], g["address"], g["address_family"]) for g in gids] == [
        (0, "IB/RoCE v1", "ens1f0", "fe80::e42:a1ff:fe65:3a9e", "ipv6"),
        (1, "RoCE v2", "ens1f0", "10.1.0.0", "ipv4"),
        (2, "IB/RoCE v1", "ens1f0", "10.1.0.1", "ipv4"),
        (4, "RoCE v2", "ens1f0", "fd00::11", "ipv6"),
    ]


def test_infiniband_ports_have_no_roce_gids(h100_tree):
    roce = facts_of(h100_tree, ["roce"])[0]["roce"]
    assert roce == {"netns_mode": None, "netns_mode_source": "module/ib_core/parameters/netns_mode", "gids": [],
                    "netdev_addresses": None}


def names(subsets):
    return [s.name for s in subsets]


def test_subsets_resolve_in_reading_order_with_the_ports_first():
    assert names(wanted_subsets(None)) == ["ports"]
    assert names(wanted_subsets(["counters"])) == ["ports", "counters"]
    everything = names(wanted_subsets(["all"]))
    assert everything[0] == "ports" and {"counters", "pcie", "locality", "gpudirect", "roce", "temperature"} <= set(everything)
    assert "kernel_log" not in everything, "all leaves out the one subset that runs a command"
    assert names(wanted_subsets(["all", "kernel_log"]))[-1] == "kernel_log"


def test_an_unknown_subset_is_one_sentence_naming_the_known_ones():
    with pytest.raises(FactReadError, match=r"^gather_subset: temprature is not a fact subset; expected ports, .*temperature.* or all$"):
        wanted_subsets(["temprature"])


# --------------------------------------------------------------------------- netdev addresses

FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.1.0.0/16 2 0 2
        +-- 10.1.0.0/24 2 0 2
           |-- 10.1.0.0
              /32 link BROADCAST
              /24 link UNICAST
           |-- 10.1.0.2
              /32 host LOCAL
        |-- 10.1.7.9
           /32 host LOCAL
     +-- 127.0.0.0/8 2 0 2
        |-- 127.0.0.1
           /32 host LOCAL
Local:
  +-- 0.0.0.0/0 3 0 5
     |-- 10.1.0.2
        /32 host LOCAL
"""
# Iface, Destination, Gateway, Flags, RefCnt, Use, Metric, Mask, MTU, Window, IRTT (little-endian hex).
ROUTE = """Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eno1\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0
bond0\t0000010A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
ens1f0\t0000010A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
"""
IF_INET6 = """fe800000000000000e42a1fffe653a9e 05 40 20 80    bond0
00000000000000000000000000000001 01 80 10 80       lo
"""


def test_netdev_addresses_from_proc_net(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.write("net/fib_trie", FIB_TRIE)
    tree.write("net/route", ROUTE)
    tree.write("net/if_inet6", IF_INET6)
    # 10.1.0.2 is in bond0's /24 and in ens1f0's /16: the more specific route wins; 10.1.7.9 only in the /16.
    assert health.netdev_ipv4(str(tmp_path)) == {"bond0": ["10.1.0.2"], "ens1f0": ["10.1.7.9"]}
    assert health.netdev_ipv6(str(tmp_path)) == {"bond0": ["fe80::e42:a1ff:fe65:3a9e"], "lo": ["::1"]}
    assert health.roce_netdev_addresses(["bond0", "ens9"], str(tmp_path)) == {
        "bond0": {"ipv4": ["10.1.0.2"], "ipv6": ["fe80::e42:a1ff:fe65:3a9e"]},
        "ens9": {"ipv4": [], "ipv6": []}}


def test_netdev_addresses_unknown_without_proc(tmp_path):
    assert health.roce_netdev_addresses(["bond0"], None) is None
    assert health.roce_netdev_addresses(["bond0"], str(tmp_path)) is None
    sysfs_tree.TreeBuilder(str(tmp_path)).write("net/if_inet6", IF_INET6)
    assert health.roce_netdev_addresses(["bond0"], str(tmp_path)) == {
        "bond0": {"ipv4": None, "ipv6": ["fe80::e42:a1ff:fe65:3a9e"]}}


def test_demo_bond_address_has_its_roce_v2_gid(tmp_path):
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(tmp_path))
    node = tmp_path / "a100-node-01"
    roce = facts_of(str(node / "sys"), ["roce"], str(node / "proc"))[0]["roce"]
    assert roce["netdev_addresses"] == {"bond0": {"ipv4": ["10.1.0.2"], "ipv6": None}}
    v2 = {(g["netdev"], g["address"]) for g in roce["gids"] if g["type"] == "RoCE v2"}
    assert ("bond0", "10.1.0.2") in v2


# --------------------------------------------------------------------------- hostile numbers (issue 24, item 5)


@pytest.mark.parametrize("value", ["²", "٣", "１６", "1_6", "+16", "-16", "99999999999999999999999"])
def test_a_link_width_that_is_not_the_kernels_number_is_null_with_a_warning(tmp_path, value):
    tree = pcie_tree(str(tmp_path), {"current_speed": "8.0 GT/s PCIe", "max_speed": "8.0 GT/s PCIe",
                                     "current_width": value, "max_width": "16"})
    facts, warnings = facts_and_read_warnings(str(tmp_path), ["pcie"])
    link = facts["pcie"]["mlx5_0"]
    assert link["current_width"] is None and link["max_width"] == 16 and link["width_below_max"] is None
    (warning,) = [w for w in warnings if "current_link_width" in w]
    assert warning.endswith("current_link_width holds %r, not an unsigned whole number of at most 64 bits; "
                            "read as null." % value)
    del tree


@pytest.mark.parametrize("value", ["１２", "٣", "1_000", "+5", "-5", str(2 ** 64), "0x1" + "0" * 16, "²"])
def test_a_counter_that_is_not_an_unsigned_64_bit_number_is_null_with_a_warning(tmp_path, value):
    root = counter_tree(str(tmp_path), {"symbol_error": value, "link_downed": "3"})
    facts, warnings = facts_and_read_warnings(root, ["counters"])
    assert facts["ports"][0]["counters"] == {"symbol_error": None, "link_downed": 3}
    (warning,) = warnings
    assert warning.endswith("/ports/1/counters/symbol_error holds %r, not an unsigned whole number of at most 64 "
                            "bits; read as null." % value)


@pytest.mark.parametrize("name", ["²", "٣", "1_0", "+1", "99999999999999999999999"])
def test_a_gid_file_whose_name_is_not_an_index_is_skipped_with_a_warning(tmp_path, name):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_2", "0000:b1:00.0")
    rel = tree.port(device, 1, link_layer="Ethernet", port_guid="0e42:a1ff:fe65:3a9e", ndevs=["ens1f0"])
    tree.write(rel + "/gids/" + name, "fd00:0000:0000:0000:0000:0000:0000:0011")
    facts, warnings = facts_and_read_warnings(str(tmp_path), ["roce"])
    assert [g["index"] for g in facts["roce"]["gids"]] == [0]
    (warning,) = warnings
    assert warning.endswith("/ports/1/gids holds a file named %r, not a GID index; skipped." % name)
