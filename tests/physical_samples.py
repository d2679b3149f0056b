"""Outputs in the shape of tools that cannot run here, and one node's physical-layer facts, for the tests.

``mlxlink`` needs an NVIDIA adapter and MFT: its JSON is built in the shape its source writes it
(mstflint, mlxlink/modules/printutil/mlxlink_cmd_print.cpp ``toJsonFormat``: ``result.output`` with
one object per section, text values, per-lane values as ``{"values": [...]}``, and ``status``),
with the field names and value forms of mlxlink_commander.cpp. The real outputs that are public
(tests/fixtures/link_quality) are read beside it.
"""

from __future__ import annotations

import json
import shutil

from pci_tree import PciTree, aer_text, config_space

from ansible_collections.rdma.node.plugins.module_utils._health_collect import kernel_log_facts
from ansible_collections.rdma.node.plugins.module_utils._link_quality import read_link_quality
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import read_aer
from ansible_collections.rdma.node.plugins.module_utils._pcie_path import read_pcie_path
from ansible_collections.rdma.node.plugins.module_utils._roce_qos import read_roce_qos
from testpaths import FIXTURES


def mlxlink_json(effective="15E-255", raw="1E-9", rx_los=("0", "0", "0", "0"), temperature="48 [-5..75]", code=0, message="success"):
    """Output in the shape of mlxlink --json (mstflint's toJsonFormat); values as a ConnectX-7 OSFP prints them."""
    output = {
        "Operational Info": {"State": "Active", "Physical state": "LinkUp", "Speed": "IB-NDR", "Width": "4x", "FEC": "Standard_RS-FEC - (544,514)"},
        "Troubleshooting Info": {"Status Opcode": "0", "Group Opcode": "N/A", "Recommendation": "No issue was observed"},
        "Physical Counters and BER Info": {"Time Since Last Clear [Min]": "5632.5", "Effective Physical Errors": "0",
                                           "Effective Physical BER": effective, "Raw Physical Errors Per Lane": {"values": ["3", "0", "12", "0"]},
                                           "Raw Physical BER": raw, "Link Down Counter": "1", "Link Error Recovery Counter": "0"},
        "Module Info": {"Identifier": "OSFP", "Vendor Name": "NVIDIA", "Vendor Part Number": "MMA4Z00-NS", "Vendor Serial Number": "MT2301FT0000",
                        "Temperature [C]": temperature, "Voltage [mV]": "3273.6 [2970..3630]",
                        "Rx Power Current [dBm]": "0,2,-9,0 [-8..6]", "Rx LOS [per lane]": {"values": list(rx_los)},
                        "Tx Fault [per lane]": {"values": ["0", "0", "0", "0"]}},
    }
    return json.dumps({"result": {"output": output}, "status": {"code": code, "message": message}}, indent=3)


ROOT, UP, DOWN_GPU, DOWN_HCA, GPU, HCA = "0000:3a:00.0", "0000:3b:00.0", "0000:3c:00.0", "0000:3c:08.0", "0000:3e:00.0", "0000:3d:00.0"
FACTS = {"devices": {"mlx5_0": {"numa_node": 0}},
         "ports": [{"device": "mlx5_0", "port": 1, "link_layer": "Ethernet", "netdevs": ["eth4"], "state": "ACTIVE"}]}


def physical_facts(tmp_path):
    """ansible_facts with every physical-layer fact read from one node: a GPU and mlx5_0 under one PCIe switch whose
    GPU port redirects P2P, AER errors on the HCA, the real ECN tree and mlnx_qos log, a saved mlxlink output with a
    lane fault, and a kernel log with a 40 s and a 5 min loss."""
    tree = PciTree(tmp_path)
    tree.hca("mlx5_0", [ROOT, UP, DOWN_HCA, HCA], config=config_space(ats_enabled=False), iommu=(20, "DMA-FQ"),
             aer={"correctable": aer_text("correctable", RxErr=4), "fatal": aer_text("fatal", SDES=1)})
    tree.gpu([ROOT, UP, DOWN_GPU, GPU], config=config_space(ats_enabled=True), iommu=(21, "identity"))
    tree.bridge_files([ROOT, UP, DOWN_GPU], config=config_space("downstream_port", acs_control={"p2p_request_redirect": True}))
    tree.bridge_files([ROOT, UP, DOWN_HCA], config=config_space("downstream_port", acs_control={}))
    tree.bridge_files([ROOT, UP], config=config_space("upstream_port", acs_control={}))
    shutil.copytree(FIXTURES / "roce_qos/procfs_eth0_ecn", tmp_path / "class/net/eth4/ecn")
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "mlx5_0_1.json").write_text(mlxlink_json(effective="2E-11", raw="1E-6", rx_los=("0", "1", "0", "0"), temperature="61 [-5..75]"))
    mlnx_qos = (FIXTURES / "roce_qos/netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md").read_text()
    log = "\n".join("2026-11-24T%s+0000 n systemd-networkd[1]: eth4: %s carrier" % event
                    for event in (("01:00:00", "Lost"), ("01:00:40", "Gained"), ("02:00:00", "Lost"), ("02:05:00", "Gained")))
    rdma = dict(FACTS)
    rdma.update(aer=read_aer(str(tmp_path), FACTS), pcie_path=read_pcie_path(str(tmp_path), FACTS),
                roce_qos=read_roce_qos(str(tmp_path), FACTS, {"eth4": {"mlnx_qos": (mlnx_qos, None)}}),
                link_quality=read_link_quality(str(tmp_path), FACTS, saved_dir=str(saved)),
                kernel_log=kernel_log_facts(log, {"eth4": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False))
    return {"rdma": rdma}
