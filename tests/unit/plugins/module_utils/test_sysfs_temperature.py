"""The temperature subset of ib_facts: the mlx5 driver's hwmon device under each HCA's PCI function."""

from __future__ import annotations

import os

import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import NO_HWMON, NO_PCI_FUNCTION
from testpaths import FIXTURES

SAMPLE = (FIXTURES / "sysfs/hwmon/mlx5_labels_then_inputs.txt").read_text().split()


def temperatures(root):
    facts, warnings = read_ib_facts({"sysfs_root": str(root), "proc_root": None, "gather_subset": ["temperature"]})
    return facts["temperature"], warnings


def hwmon(tree, pci, channels, name="hwmon3"):
    """Write a hwmon device as the driver does: temp<N>_label/input/highest/crit per channel."""
    for number, channel in enumerate(channels, 1):
        for key, value in channel.items():
            tree.write("%s/hwmon/%s/temp%d_%s" % (pci, name, number, key), value)
    tree.write("%s/hwmon/%s/name" % (pci, name), "mlx5")


def test_the_recorded_labels_and_inputs_read_as_degrees(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:3b:00.0")
    labels, inputs = SAMPLE[:2], SAMPLE[2:]
    hwmon(tree, "devices/pci0000:3b/0000:3b:00.0", [
        {"label": labels[0], "input": inputs[0], "highest": 71000, "crit": 105000},
        {"label": labels[1], "input": inputs[1], "crit": 75000}])
    assert device.endswith("infiniband/mlx5_0")
    got, warnings = temperatures(tmp_path)
    assert warnings == []
    assert got == {"mlx5_0": {"pci_address": "0000:3b:00.0", "reason": None, "sensors": [
        {"hwmon": "hwmon3", "label": "asic", "input_celsius": 65.0, "highest_celsius": 71.0, "crit_celsius": 105.0},
        {"hwmon": "hwmon3", "label": "Module0", "input_celsius": 62.0, "highest_celsius": None, "crit_celsius": 75.0}]}}


def test_a_kernel_without_hwmon_says_why_and_a_vf_is_left_to_its_pf(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.hca("mlx5_0", "0000:3b:00.0")
    tree.hca("mlx5_2", "0000:3b:00.2", physfn="0000:3b:00.0")
    got, _warnings = temperatures(tmp_path)
    assert got == {"mlx5_0": {"pci_address": "0000:3b:00.0", "sensors": [], "reason": NO_HWMON}}


def test_garbled_values_are_null_and_a_device_without_channels_says_so(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.hca("mlx5_0", "0000:3b:00.0")
    tree.hca("mlx5_1", "0000:5e:00.0")
    hwmon(tree, "devices/pci0000:3b/0000:3b:00.0", [{"label": "asic", "input": "²5000", "crit": "1e5", "highest": "-5000"}])
    os.makedirs(os.path.join(str(tmp_path), "devices/pci0000:5e/0000:5e:00.0/hwmon/hwmon4"))
    got, _warnings = temperatures(tmp_path)
    assert got["mlx5_0"]["sensors"] == [{"hwmon": "hwmon3", "label": "asic", "input_celsius": None, "highest_celsius": -5.0,
                                         "crit_celsius": None}]
    assert got["mlx5_1"] == {"pci_address": "0000:5e:00.0", "sensors": [], "reason": "its hwmon device has no temperature channel"}


def test_a_tree_without_device_links_says_there_is_no_pci_function_to_read(tmp_path):
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), str(tmp_path))
    got, _warnings = temperatures(tmp_path)
    assert set(got) >= {"mlx5_0", "mlx5_bond_0"} and all(entry["reason"] == NO_PCI_FUNCTION for entry in got.values())
    # node_exporter's own tree: an Intel iWARP device and an mlx4, neither with a device link.
    sysfs_tree.unpack((FIXTURES / "sysfs/node-exporter.sysfs").read_bytes(), str(tmp_path / "ne"))
    got, _warnings = temperatures(tmp_path / "ne")
    assert got == {name: {"pci_address": None, "sensors": [], "reason": NO_PCI_FUNCTION} for name in ("i40iw0", "mlx4_0")}
