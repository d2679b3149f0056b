"""The sysfs reader against a real exported tree, the demo hosts and synthetic trees."""

from __future__ import annotations

import os

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather, read_attr
from testpaths import COLLECTION_ROOT, FIXTURES


@pytest.fixture(scope="module")
def procfs_tree(tmp_path_factory):
    dest = tmp_path_factory.mktemp("procfs") / "sys"
    sysfs_tree.unpack((FIXTURES / "sysfs/prometheus-procfs.sysfs").read_bytes(), str(dest))
    return str(dest)


@pytest.fixture(scope="module")
def demo_trees(tmp_path_factory):
    dest = tmp_path_factory.mktemp("demo")
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(dest))
    return {host: gather(str(dest / host / "sys")) for host in os.listdir(dest)}


def port(facts, device, number):
    matches = [p for p in facts["ports"] if p["device"] == device and p["port"] == number]
    assert len(matches) == 1, "expected exactly one %s/%s" % (device, number)
    return matches[0]


# --------------------------------------------------------------------- real tree (hwloc, a 2013 node)

def test_a_connectx3_node_of_2013_as_hwloc_saved_it(tmp_path):
    """A real node's tree (hwloc's test data): ConnectX-3 at FDR on NUMA node 1, IPoIB in connected mode
    (mtu 2044), 32-bit port counters only, a kernel without PCIe link files, a Xeon Phi's dangling link."""
    sysfs_tree.unpack((FIXTURES / "sysfs/hwloc-mlx4.sysfs").read_bytes(), str(tmp_path))
    take_read_warnings()
    facts, warnings = gather(str(tmp_path))
    warnings += take_read_warnings()
    device = facts["devices"]["mlx4_0"]
    assert {key: device[key] for key in ("hca_type", "fw_ver", "board_id", "node_guid", "sys_image_guid", "node_desc",
                                         "pci_address", "numa_node", "driver", "virtual_function")} == {
        "hca_type": "MT4099", "fw_ver": "2.11.500", "board_id": "DEL0A30000019", "node_guid": "0x0002c90300f9bfa0",
        "sys_image_guid": "0x0002c90300f9bfa3", "node_desc": "c412-603 HCA-1", "pci_address": "0000:82:00.0",
        "numa_node": 1, "driver": "mlx4_core", "virtual_function": False}
    first = port(facts, "mlx4_0", 1)
    assert {key: first[key] for key in ("state", "phys_state", "rate_gbps", "width", "speed", "lid", "sm_lid", "lmc",
                                        "cap_mask", "port_guid", "link_layer", "netdevs", "netdev_state")} == {
        "state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 56.0, "width": "4X", "speed": "FDR", "lid": 0x3a4,
        "sm_lid": 1, "lmc": 0, "cap_mask": "0x02514868", "port_guid": "0x0002c90300f9bfa1", "link_layer": "InfiniBand",
        "netdevs": ["ib0"], "netdev_state": "Up"}
    assert facts["netdevs"]["ib0"]["mtu"] == 2044 and facts["netdevs"]["ib0"]["carrier"] is True
    assert warnings == ["%s/class/infiniband/scif0 is a dangling symlink (-> ../../devices/scif_dma_0/infiniband/scif0); skipped"
                        % tmp_path]
    # Its counters are the 32-bit ones (no counters_ext), data in 4-byte words: 5550796 words received.
    facts, warnings = read_ib_facts({"sysfs_root": str(tmp_path), "gather_subset": ["counters", "pcie"]})
    first = port(facts, "mlx4_0", 1)
    assert (first["counters_data_width_bits"], first["counters_ext"], first["counters_saturated"]) == (32, None, [])
    assert (first["counters"]["port_rcv_data_bytes"], first["counters"]["symbol_error"]) == (5550796 * 4, 0)
    # A kernel of 2013 has no PCIe link files: the link is unknown (null), not healthy.
    link = facts["pcie"]["mlx4_0"]
    assert (link["present"], link["current_speed_gts"], link["current_width"], link["speed_below_max"]) == (True, None, None, None)


# --------------------------------------------------------------------- real tree (prometheus/procfs)


def test_procfs_tree_devices(procfs_tree):
    facts, warnings = gather(procfs_tree)
    assert warnings == []
    assert list(facts["devices"]) == ["hfi1_0", "mlx4_0", "mlx5_0"]
    hfi = facts["devices"]["hfi1_0"]
    assert hfi["hca_type"] is None  # Omni-Path exports no hca_type
    assert hfi["fw_ver"] == "1.27.0"
    assert hfi["board_id"].startswith("HPE 100Gb 1-port OP101")
    mlx5 = facts["devices"]["mlx5_0"]
    # node_guid has no trailing newline in this tree; it must still read whole.
    assert mlx5["node_guid"] == "0x0a7fbc1245efd23b"
    assert mlx5["sys_image_guid"] is None
    assert mlx5["pci_address"] is None  # plain directory, no device link
    assert facts["devices"]["mlx4_0"]["ports"] == [1, 2]


def test_procfs_tree_ports(procfs_tree):
    facts = gather(procfs_tree)[0]
    mlx5 = port(facts, "mlx5_0", 1)
    # phys_state holds "4: ACTIVE": the code decides, as in ibstat.
    assert (mlx5["phys_state"], mlx5["phys_state_code"]) == ("PortConfigurationTraining", 4)
    assert (mlx5["rate_gbps"], mlx5["width"], mlx5["speed"]) == (25.0, "1X", "EDR")
    mlx4 = port(facts, "mlx4_0", 2)
    assert mlx4["link_layer"] == "InfiniBand"  # file ends with an extra blank line
    assert (mlx4["state"], mlx4["state_code"], mlx4["rate_gbps"], mlx4["speed"]) == ("ACTIVE", 4, 40.0, "QDR")
    hfi = port(facts, "hfi1_0", 1)
    assert (hfi["rate_gbps"], hfi["speed"], hfi["lid"], hfi["port_guid"]) == (100.0, "EDR", None, None)
    assert facts["netdevs"] == {}
    assert facts["summary"] == {
        "device_count": 3,
        "port_count": 4,
        "active_ports": ["hfi1_0/1", "mlx4_0/1", "mlx4_0/2", "mlx5_0/1"],
        "down_ports": [],
        "unknown_state_ports": [],
        "max_rate_gbps": 100.0,
    }


# ------------------------------------------------------------------------------- demo hosts


def test_demo_v100_healthy(demo_trees):
    facts, warnings = demo_trees["v100-node-01"]
    assert warnings == []
    assert facts["summary"]["active_ports"] == ["mlx5_0/1", "mlx5_1/1"]
    first = port(facts, "mlx5_0", 1)
    assert first["netdevs"] == ["ibp94s0f0"]  # matched by the GUID in its IPoIB address
    assert first["netdev_state"] == "Up"
    assert (first["lid"], first["sm_lid"], first["rate_gbps"], first["speed"]) == (17, 1, 100.0, "EDR")
    assert first["port_guid"] == "0x98039b0300a15c20"
    device = facts["devices"]["mlx5_1"]
    assert (device["pci_address"], device["driver"], device["numa_node"]) == ("0000:5e:00.1", "mlx5_core", 0)
    assert device["sys_image_guid"] == "0x98039b0300a15c20"
    assert facts["netdevs"]["ibp94s0f1"] == {
        "device": "mlx5_1", "port": 1, "carrier": True, "operstate": "up", "mtu": 2044, "master": None,
        "address": "00:00:10:49:fe:80:00:00:00:00:00:00:98:03:9b:03:00:a1:5c:21",
        "pci_address": "0000:5e:00.1",
    }


def test_demo_v100_polling_fault(demo_trees):
    facts = demo_trees["v100-node-02"][0]
    faulty = port(facts, "mlx5_1", 1)
    assert (faulty["state"], faulty["phys_state"], faulty["phys_state_code"]) == ("DOWN", "Polling", 2)
    assert faulty["netdevs"] == ["ibp94s0f1"]
    assert faulty["netdev_state"] == "Down"
    assert facts["summary"]["down_ports"] == ["mlx5_1/1"]


def test_demo_a100_bond_and_uncabled_hca(demo_trees):
    facts = demo_trees["a100-node-01"][0]
    assert list(facts["devices"]) == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]
    bond = port(facts, "mlx5_bond_0", 1)
    assert bond["link_layer"] == "Ethernet"
    assert bond["netdevs"] == ["bond0"]  # from gid_attrs/ndevs, not the slave on the same PCI function
    assert bond["netdev_state"] == "Up"
    assert facts["netdevs"]["bond0"]["pci_address"] is None  # a bond is a virtual device
    uncabled = port(facts, "mlx5_0", 1)
    assert (uncabled["state"], uncabled["phys_state"], uncabled["lid"]) == ("DOWN", "Disabled", 65535)
    assert facts["summary"]["max_rate_gbps"] == 200.0
    assert facts["summary"]["active_ports"] == ["mlx5_1/1", "mlx5_bond_0/1"]


# ---------------------------------------------------------------------------- synthetic trees


def test_many_hcas_in_natural_order_with_vfs(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    for index in range(12):
        device = tree.hca("mlx5_%d" % index, "0000:%02x:00.0" % (0x10 + index), node_guid="0000:0000:0000:%04x" % index)
        tree.port(device, 1, port_guid="0000:0000:0001:%04x" % index)
    for vf in range(3):
        device = tree.hca("mlx5_vf%d" % vf, "0000:1%d:00.%d" % (0, vf + 1), physfn="0000:10:00.0",
                          node_guid="0000:0000:0002:%04x" % vf)
        tree.port(device, 1, state="1: DOWN", phys_state="3: Disabled", port_guid="0000:0000:0003:%04x" % vf)
    facts, warnings = gather(str(tmp_path))
    assert warnings == []
    names = list(facts["devices"])
    assert names[:12] == ["mlx5_%d" % i for i in range(12)]  # mlx5_2 before mlx5_10
    vf = facts["devices"]["mlx5_vf1"]
    assert (vf["virtual_function"], vf["physical_function"]) == (True, "0000:10:00.0")
    pf = facts["devices"]["mlx5_0"]
    assert (pf["virtual_function"], pf["sriov_numvfs"]) == (False, 3)
    assert facts["summary"]["port_count"] == 15
    assert len(facts["summary"]["down_ports"]) == 3


def test_missing_files_give_null(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("qib0", "0000:03:00.0", omit=("fw_ver", "hca_type", "node_guid", "node_type"))
    tree.port(device, 1, omit=("rate", "state", "lid", "gids", "link_layer"))
    facts, warnings = gather(str(tmp_path))
    assert warnings == []
    info = facts["devices"]["qib0"]
    assert (info["fw_ver"], info["hca_type"], info["node_guid"], info["node_type"]) == (None, None, None, None)
    qib = port(facts, "qib0", 1)
    assert (qib["rate_gbps"], qib["width"], qib["speed"], qib["state"], qib["state_code"]) == (None,) * 5
    assert (qib["lid"], qib["port_guid"], qib["link_layer"]) == (None, None, None)
    assert qib["phys_state"] == "LinkUp"


def test_unreadable_file_gives_null(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:03:00.0")
    port_rel = tree.port(device, 1)
    # Root reads any file whatever its mode, so make the attribute a directory: open() fails as it
    # does for an attribute the kernel refuses to show.
    rate = tmp_path / port_rel / "rate"
    rate.unlink()
    rate.mkdir()
    facts = gather(str(tmp_path))[0]
    assert port(facts, "mlx5_0", 1)["rate_gbps"] is None
    assert read_attr(str(rate)) is None


def test_hex_and_decimal_lids_and_fractional_rate(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx4_0", "0000:03:00.0", hca_type="MT4099")
    tree.port(device, 1, lid="0x1a", sm_lid="0xC", rate="2.5 Gb/sec (1X)")
    tree.port(device, 2, lid="12", sm_lid="0x0", rate="56 Gb/sec (4X FDR)")
    facts = gather(str(tmp_path))[0]
    first, second = port(facts, "mlx4_0", 1), port(facts, "mlx4_0", 2)
    assert (first["lid"], first["sm_lid"]) == (26, 12)
    assert (first["rate_gbps"], first["width"], first["speed"]) == (2.5, "1X", None)
    assert (second["lid"], second["rate_gbps"], second["speed"]) == (12, 56.0, "FDR")


def test_dangling_symlinks_are_skipped_with_a_warning(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.port(tree.hca("mlx5_0", "0000:03:00.0"), 1)
    os.symlink("../../devices/pci0000:99/0000:99:00.0/infiniband/mlx5_9", str(tmp_path / "class/infiniband/mlx5_9"))
    # A device whose PCI function vanished (hot-unplug in progress): kept, PCI fields unknown.
    lone = tree.hca("mlx5_1", None)
    os.symlink("../../../devices/pci0000:77/0000:77:00.0", str(tmp_path / lone / "device"))
    facts, warnings = gather(str(tmp_path))
    assert list(facts["devices"]) == ["mlx5_0", "mlx5_1"]
    assert facts["devices"]["mlx5_1"]["pci_address"] is None
    assert len(warnings) == 2
    assert any("class/infiniband/mlx5_9 is a dangling symlink" in w for w in warnings)
    assert any("mlx5_1/device is a dangling symlink" in w for w in warnings)


def test_roce_netdev_found_through_pci_function_when_gid_attrs_are_absent(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx4_0", "0000:03:00.0", hca_type="MT4099")
    for number in (1, 2):
        rel = tree.port(device, number, link_layer="Ethernet", port_guid="0000:0000:0000:000%d" % number)
        for gid_attrs in ("gid_attrs/ndevs/0", "gid_attrs/types/0"):
            os.unlink(str(tmp_path / rel / gid_attrs))
    tree.netdev("eth2", "0000:03:00.0", dev_port=0)
    tree.netdev("eth3", "0000:03:00.0", dev_port=1, carrier=0, operstate="down")
    facts = gather(str(tmp_path))[0]
    assert port(facts, "mlx4_0", 1)["netdevs"] == ["eth2"]
    second = port(facts, "mlx4_0", 2)
    assert (second["netdevs"], second["netdev_state"]) == (["eth3"], "Down")


def test_unreadable_carrier_means_down(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:03:00.0")
    tree.port(device, 1, link_layer="Ethernet", ndevs=["ens1f0"])
    rel = tree.netdev("ens1f0", "0000:03:00.0")
    carrier = tmp_path / rel / "carrier"
    carrier.unlink()
    carrier.mkdir()  # reading fails, as carrier does with EINVAL on an interface that is down
    facts = gather(str(tmp_path))[0]
    assert port(facts, "mlx5_0", 1)["netdev_state"] == "Down"
    assert facts["netdevs"]["ens1f0"]["carrier"] is None


def test_full_gid_table_lists_each_netdev_once(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:03:00.0")
    tree.port(device, 1, link_layer="Ethernet", extra_gids=255, ndevs=["ens1f0", "ens1f0.100", "ens1f0.200"])
    facts = gather(str(tmp_path))[0]
    assert port(facts, "mlx5_0", 1)["netdevs"] == ["ens1f0", "ens1f0.100", "ens1f0.200"]


def test_a_polling_ports_placeholder_rate_is_not_the_fastest_link(tmp_path):
    """The port files of a real ConnectX-5 whose cable lost its link (host or-condo-c494, as a fleet
    monitor stored each file's content: leereyno/fabric_monitor_sqlite@d3aec466cd95f2adda1ace0d4b90a7e3295b1108,
    database.db); the driver's "10 Gb/sec (4X)" is no link's speed."""
    files = {"hca_type": "MT4119", "fw_ver": "16.27.2008", "board_id": "MT_0000000010",
             "ports/1/state": "1: DOWN", "ports/1/phys_state": "2: Polling", "ports/1/rate": "10 Gb/sec (4X)",
             "ports/1/lid": "0x2de", "ports/1/sm_lid": "0x2", "ports/1/link_layer": "InfiniBand"}
    for name, value in files.items():
        path = tmp_path / "class/infiniband/mlx5_0" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    facts = gather(str(tmp_path))[0]
    polling = port(facts, "mlx5_0", 1)
    assert (polling["state"], polling["phys_state"], polling["rate_gbps"], polling["width"], polling["lid"]) == (
        "DOWN", "Polling", 10.0, "4X", 734)
    assert (facts["summary"]["active_ports"], facts["summary"]["down_ports"]) == ([], ["mlx5_0/1"])
    assert facts["summary"]["max_rate_gbps"] is None


def test_node_without_rdma(tmp_path):
    (tmp_path / "class/net/eth0").mkdir(parents=True)
    facts, warnings = gather(str(tmp_path))
    assert facts == {
        "devices": {}, "ports": [], "netdevs": {},
        "summary": {"device_count": 0, "port_count": 0, "active_ports": [], "down_ports": [], "unknown_state_ports": [],
                    "max_rate_gbps": None},
    }
    assert warnings == []


# --------------------------------------------------------------------------- hostile numbers (issue 24, item 5)


@pytest.mark.parametrize("attribute, value", [
    ("numa_node", "٣"), ("numa_node", "1_0"), ("lid_mask_count", "²"), ("sm_sl", "+1"), ("sm_sl", "-1"),
    ("cap_mask", "0x" + "f" * 17), ("mtu", "１５００"), ("mtu", "4096" * 6), ("dev_port", "²"),
])
def test_a_number_attribute_in_another_form_is_null_with_a_warning(tmp_path, attribute, value):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:03:00.0", numa_node=value if attribute == "numa_node" else 0)
    port_rel = tree.port(device, 1, link_layer="Ethernet", ndevs=["ens1f0"],
                         lmc=value if attribute == "lid_mask_count" else 0, sm_sl=value if attribute == "sm_sl" else 0,
                         cap_mask=value if attribute == "cap_mask" else "0x2651e848")
    tree.netdev("ens1f0", "0000:03:00.0", mtu=value if attribute == "mtu" else 1500,
                dev_port=value if attribute == "dev_port" else 0)
    take_read_warnings()
    facts, warnings = gather(str(tmp_path))
    warnings += take_read_warnings()
    read = {"numa_node": facts["devices"]["mlx5_0"]["numa_node"], "lid_mask_count": port(facts, "mlx5_0", 1)["lmc"],
            "sm_sl": port(facts, "mlx5_0", 1)["sm_sl"], "cap_mask": port(facts, "mlx5_0", 1)["cap_mask"],
            "mtu": (facts["netdevs"].get("ens1f0") or {}).get("mtu")}
    assert attribute == "dev_port" or read[attribute] is None  # dev_port is not a fact: only its warning shows
    expected = "an unsigned whole number of at most 64 bits" if attribute != "numa_node" else "a whole number of 64 bits"
    (warning,) = warnings
    assert warning.endswith("/%s holds %r, not %s; read as null." % (attribute, value, expected))
    del port_rel


def test_guids_and_lids_that_are_not_numbers_are_null_with_a_warning(tmp_path):
    # A tree dumped with placeholders (GCM's health-check fixtures hold each file's own name).
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:03:00.0")
    port_rel = tree.port(device, 1)
    ib = tmp_path / "class/infiniband/mlx5_0"
    for rel, text in (("node_guid", "node_guid\n"), ("sys_image_guid", "0xZZ\n"), (port_rel + "/lid", "lid\n"),
                      (port_rel + "/sm_lid", "0x\u0663\n")):
        ((tmp_path / rel) if rel.startswith(port_rel) else (ib / rel)).write_text(text, encoding="utf-8")
    take_read_warnings()
    facts, warnings = gather(str(tmp_path))
    warnings += take_read_warnings()
    info, first = facts["devices"]["mlx5_0"], port(facts, "mlx5_0", 1)
    assert (info["node_guid"], info["sys_image_guid"], first["lid"], first["sm_lid"]) == (None,) * 4
    assert sorted(w.rsplit("/", 1)[1] for w in warnings) == sorted([
        "node_guid holds 'node_guid', not a 64-bit GUID; read as null.",
        "sys_image_guid holds '0xZZ', not a 64-bit GUID; read as null.",
        "lid holds 'lid', not a LID (a whole number, hex after 0x); read as null.",
        "sm_lid holds '0x\u0663', not a LID (a whole number, hex after 0x); read as null."])


def test_a_firmware_version_or_hardware_address_that_is_a_placeholder_is_null_with_a_warning(tmp_path):
    # GCM's fixtures again: fw_ver holds "fw_version", a netdev's address holds "address".
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.port(tree.hca("mlx5_8", "0000:03:00.0", fw_ver="fw_version"), 1, link_layer="Ethernet", ndevs=["eth6"])
    tree.port(tree.hca("mlx5_9", "0000:04:00.0", fw_ver="20.39.1002"), 1, link_layer="Ethernet", ndevs=["eth7"])
    tree.netdev("eth6", "0000:03:00.0", address="address")
    tree.netdev("eth7", "0000:04:00.0", address="0C:42:A1:1D:D1:2B")
    take_read_warnings()
    facts, warnings = gather(str(tmp_path))
    warnings += take_read_warnings()
    assert (facts["devices"]["mlx5_8"]["fw_ver"], facts["devices"]["mlx5_9"]["fw_ver"]) == (None, "20.39.1002")
    assert (facts["netdevs"]["eth6"]["address"], facts["netdevs"]["eth7"]["address"]) == (None, "0c:42:a1:1d:d1:2b")
    assert sorted(w.rsplit("/", 1)[1] for w in warnings) == [
        "address holds 'address', not a hardware address; read as null.",
        "fw_ver holds 'fw_version', not a firmware version; read as null."]


def test_a_port_directory_whose_name_is_not_a_number_is_skipped_with_a_warning(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    device = tree.hca("mlx5_0", "0000:03:00.0")
    tree.port(device, 1)
    os.makedirs(str(tmp_path / device / "ports" / "²"))
    take_read_warnings()
    facts, warnings = gather(str(tmp_path))
    warnings += take_read_warnings()
    assert facts["devices"]["mlx5_0"]["ports"] == [1]
    (warning,) = warnings
    assert warning.endswith("mlx5_0/ports holds an entry named '²', not a port number; skipped.")


def test_without_device_links_the_class_links_name_each_devices_pci_function(tmp_path):
    """A tree saved as ``ls -lR /sys/class/infiniband`` shows it (node_exporter issue 2846): only the class links,
    no ``device`` link. Each link's target still names the PCI function the device sits on."""
    sysfs_tree.unpack((FIXTURES / "sysfs/node-exporter-issue2846-class-links.sysfs").read_bytes(), str(tmp_path))
    facts, dummy = gather(str(tmp_path))
    assert {name: device["pci_address"] for name, device in facts["devices"].items()} == {
        "irdma0": "0000:1a:00.0", "irdma1": "0000:1a:00.3", "irdma2": "0000:1a:00.1", "irdma3": "0000:1a:00.2",
        "mlx5_0": "0000:3b:00.0"}
    # The functions' own files are not in the listing: what they would give stays unknown.
    assert {(device["numa_node"], device["driver"]) for device in facts["devices"].values()} == {(None, None)}
    # The readers of the PCIe link, the locality and the temperature find the same functions the same way.
    every, dummy = read_ib_facts({"sysfs_root": str(tmp_path), "gather_subset": ["all"]})
    assert {name: (link["pci_address"], link["present"]) for name, link in every["pcie"].items()} == {
        name: (device["pci_address"], True) for name, device in facts["devices"].items()}
    assert sorted(every["locality"]["hcas"]) == sorted(facts["devices"])
    assert {entry["pci_address"] for entry in every["temperature"].values()} == {d["pci_address"] for d in facts["devices"].values()}
    assert not [entry for entry in every["temperature"].values() if "no device link" in (entry["reason"] or "")]
