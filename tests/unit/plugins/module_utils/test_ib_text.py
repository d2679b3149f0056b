# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The text parsers against every sample in tests/fixtures/cmd, their messy variants, partial
listings, other tools' output and synthetic outputs written from the tools' print formats."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _ib_text
from ansible_collections.rdma.node.plugins.module_utils._ib_text import FIELDS, IbTextError


def _strict_ports(parser):
    """The parser in strict mode, returning its ports: the contract these tests were written for
    (every line placed or an error naming it). The lenient mode has its own tests below."""

    def parse(data):
        result = parser(data, strict=True)
        assert set(result) == {"ports", "notes"}
        assert all(note["reason"] != "not %s output" for note in result["notes"])
        return result["ports"]

    parse.__name__ = parser.__name__
    return parse


PARSERS = {tool: _strict_ports(parser) for tool, parser in _ib_text.PARSERS.items()}
parse_ibdev2netdev = PARSERS["ibdev2netdev"]
parse_ibstat = PARSERS["ibstat"]
parse_ibstatus = PARSERS["ibstatus"]
parse_ibv_devinfo = PARSERS["ibv_devinfo"]
parse_rdma_link = PARSERS["rdma_link"]

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "cmd"
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*/*.txt") if p.parent.name in PARSERS)
TOOL_NAMES = {"ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo",
              "ibdev2netdev": "ibdev2netdev", "rdma_link": "rdma link"}


def _id(path: Path) -> str:
    return "%s/%s" % (path.parent.name, path.name)


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def _entry(device, port, **fields):
    fields.update(device=device, port=port)
    return fields


# What each fixture says, read off the fixture text by hand. Every entry lists the dicts the parser
# must return, in order; each expected dict is checked field by field (fields not named here are
# checked by the None-checks below where the tool does not show them).
IBSTAT_MLX4_DEVICE0 = dict(node_type="CA", hca_type="MT4099", num_ports=2, fw_ver="2.42.5000", hw_rev="1",
                           node_guid="0xec0d9a03000c8980", sys_image_guid="0xec0d9a03000c8983")
IBSTAT_MLX4_DEVICE1 = dict(IBSTAT_MLX4_DEVICE0, node_guid="0xf45214030033b850",
                           sys_image_guid="0xf45214030033b853")
ACTIVE = dict(state="ACTIVE", state_code=4, phys_state="LinkUp", phys_state_code=5)
DOWN_DISABLED = dict(state="DOWN", state_code=1, phys_state="Disabled", phys_state_code=3)

EXPECTED = {
    "ibdev2netdev/mlx5_cx4_eth_2pf_up.txt": [
        _entry("mlx5_0", 1, netdevs=["enp2s0f0"], netdev_state="Up", netdev_state_raw="Up", state=None),
        _entry("mlx5_1", 1, netdevs=["enp2s0f1"], netdev_state="Up", netdev_state_raw="Up", state=None),
    ],
    "ibdev2netdev/seed_a100_down_up_slash_bond0.txt": [
        _entry("mlx5_0", 1, netdevs=["ibxxxx0"], netdev_state=None, netdev_state_raw="Down/Up"),
        _entry("mlx5_1", 1, netdevs=["ibxxxxx0"], netdev_state=None, netdev_state_raw="Up/Down"),
        _entry("mlx5_bond_0", 1, netdevs=["bond0"], netdev_state="Up", netdev_state_raw="Up"),
    ],
    "ibdev2netdev/seed_v100_prompt_2port_up.txt": [
        _entry("mlx5_0", 1, netdevs=["ibxxxxxx0"], netdev_state="Up"),
        _entry("mlx5_1", 1, netdevs=["ibxxxxxx1"], netdev_state="Up"),
    ],
    "ibdev2netdev/v_mlx5_cx4_eth_pf_active_vf_down_padded.txt": [
        _entry("mlx5_0", 1, pci_address="0000:02:00.0", hca_type="MT4115", part_id="MT1523X04353",
               description="CX456A - ConnectX-4 QSFP", fw_ver="12.23.1020", state="ACTIVE", state_code=4,
               netdevs=["enp2s0f0"], netdev_state="Up"),
        _entry("mlx5_1", 1, pci_address="0000:02:00.1", hca_type="MT4115", part_id="MT1523X04353",
               description="CX456A - ConnectX-4 QSFP", fw_ver="12.23.1020", state="ACTIVE", state_code=4,
               netdevs=["enp2s0f1"], netdev_state="Up"),
        _entry("mlx5_2", 1, pci_address="0000:02:00.5", hca_type="MT4116", part_id=None, description=None,
               fw_ver="12.23.1020", state="DOWN", state_code=1, netdevs=["enp2s0f2"], netdev_state="Down"),
        _entry("mlx5_3", 1, pci_address="0000:02:00.6", hca_type="MT4116", part_id=None, description=None,
               state="DOWN", state_code=1, netdevs=["enp2s0f3"], netdev_state="Down"),
        _entry("mlx5_4", 1, pci_address="0000:02:00.7", hca_type="MT4116", state="DOWN",
               netdevs=["enp2s0f4"], netdev_state="Down"),
        _entry("mlx5_5", 1, pci_address="0000:02:00.2", hca_type="MT4116", state="DOWN",
               netdevs=["enp2s0f5"], netdev_state="Down", netdev_state_raw="Down"),
    ],
    "ibstat/l_list_cas_mlx4.txt": [
        _entry("mlx4_0", None, state=None, hca_type=None),
        _entry("mlx4_1", None, state=None, hca_type=None),
    ],
    "ibstat/mlx4_MT4099_2ca_2port_fdr_all_active_tabs.txt": [
        _entry("mlx4_0", 1, rate_gbps=56.0, width=None, speed=None, lid=10, lmc=0, sm_lid=9,
               cap_mask="0x02514868", port_guid="0xec0d9a03000c8981", link_layer="InfiniBand",
               **dict(ACTIVE, **IBSTAT_MLX4_DEVICE0)),
        _entry("mlx4_0", 2, rate_gbps=56.0, lid=12, lmc=0, sm_lid=9, cap_mask="0x02514868",
               port_guid="0xec0d9a03000c8982", link_layer="InfiniBand", **dict(ACTIVE, **IBSTAT_MLX4_DEVICE0)),
        _entry("mlx4_1", 1, rate_gbps=56.0, lid=1, lmc=0, sm_lid=7, cap_mask="0x02514868",
               port_guid="0xf45214030033b851", link_layer="InfiniBand", **dict(ACTIVE, **IBSTAT_MLX4_DEVICE1)),
        _entry("mlx4_1", 2, rate_gbps=56.0, lid=4, lmc=0, sm_lid=7, cap_mask="0x02514868",
               port_guid="0xf45214030033b852", link_layer="InfiniBand", **dict(ACTIVE, **IBSTAT_MLX4_DEVICE1)),
    ],
    "ibstat/mlx4_MT4099_port1_ib_down_polling_port2_eth_down_disabled.txt": [
        _entry("mlx4_0", 1, state="DOWN", state_code=1, phys_state="Polling", phys_state_code=2, rate_gbps=10.0,
               lid=0, sm_lid=0, lmc=0, cap_mask="0x02594868", port_guid="0xe41d2d03007b4081",
               link_layer="InfiniBand", hca_type="MT4099", node_guid="0xe41d2d03007b4080",
               sys_image_guid="0xe41d2d03007b4083"),
        _entry("mlx4_0", 2, rate_gbps=40.0, lid=0, sm_lid=0, cap_mask="0x00010000",
               port_guid="0xe61d2dfffe7b4082", link_layer="Ethernet", hca_type="MT4099", **DOWN_DISABLED),
    ],
    "ibstat/mlx4_ibwarn_debug_lines_before_CA_partial.txt": [
        _entry("mlx4_0", 1, rate_gbps=10.0, lid=38, sm_lid=13, lmc=0, cap_mask="0x02594868",
               port_guid="0xf4521403007be0e1", link_layer="InfiniBand", hca_type="MT4099", num_ports=2,
               fw_ver="2.42.5000", node_guid="0xf4521403007be0e0", **DOWN_DISABLED),
        # Cut after "Rate: 56": the fields seen so far, the rest None.
        _entry("mlx4_0", 2, rate_gbps=56.0, lid=None, sm_lid=None, lmc=None, cap_mask=None, port_guid=None,
               link_layer=None, hca_type="MT4099", node_guid="0xf4521403007be0e0", **ACTIVE),
    ],
    "ibstat/mlx5_MT4125_cx6dx_2x_eth_active.txt": [
        _entry("mlx5_0", 1, rate_gbps=100.0, lid=0, sm_lid=0, link_layer="Ethernet",
               port_guid="0x0e42a1fffe1dd12a", hca_type="MT4125", num_ports=1, fw_ver="22.32.2004", hw_rev="0",
               node_guid="0x0c42a103001dd12a", sys_image_guid="0x0c42a103001dd12a", **ACTIVE),
        _entry("mlx5_1", 1, rate_gbps=100.0, link_layer="Ethernet", port_guid="0x0e42a1fffe1dd12b",
               node_guid="0x0c42a103001dd12b", sys_image_guid="0x0c42a103001dd12a", **ACTIVE),
    ],
    "ibstat/mlx5_MT4129_cx7_roce_200_2ca_partial.txt": [
        _entry("mlx5_0", 1, rate_gbps=200.0, link_layer="Ethernet", port_guid="0x5aa2e1fffedae626",
               hca_type="MT4129", fw_ver="28.39.1002", node_guid="0x58a2e10300dae626", **ACTIVE),
        _entry("mlx5_1", 1, rate_gbps=200.0, link_layer="Ethernet", port_guid="0x5aa2e1fffedae627",
               hca_type="MT4129", node_guid="0x58a2e10300dae627", sys_image_guid="0x58a2e10300dae626", **ACTIVE),
    ],
    "ibstat/seed_a100_prompt_3ca_rate10_lid65535_bond.txt": [
        _entry("mlx5_0", 1, hca_type="MT4123", rate_gbps=10.0, lid=65535, lmc=0, sm_lid=0,
               link_layer="InfiniBand", num_ports=None, fw_ver=None, port_guid=None, **DOWN_DISABLED),
        _entry("mlx5_1", 1, hca_type="MT4123", rate_gbps=200.0, lid=3, lmc=0, sm_lid=1, link_layer="InfiniBand",
               **ACTIVE),
        _entry("mlx5_bond_0", 1, hca_type="MT4117", rate_gbps=10.0, lid=None, sm_lid=None, lmc=None,
               link_layer="Ethernet", **ACTIVE),
    ],
    "ibstat/seed_v100_prompt_abbreviated_link_layer_only.txt": [
        _entry("mlx5_0", 1, link_layer="InfiniBand", state=None, rate_gbps=None, hca_type=None),
        _entry("mlx5_1", 1, link_layer="InfiniBand", state=None, rate_gbps=None, hca_type=None),
    ],
    # A VF (MT4120) whose header carries the author's "//VF" annotation, and all-zero GUIDs as printed.
    "ibstat/koord_website_cx5_pf_down_vf_MT4120_zero_guid_slash_comment.txt": [
        _entry("mlx5_0", 1, hca_type="MT4119", num_ports=1, fw_ver="16.35.4030", node_guid="0x1070fd0300a4487a",
               sys_image_guid="0x1070fd0300a4487a", rate_gbps=25.0, lid=0, lmc=0, sm_lid=0, cap_mask="0x00010000",
               port_guid="0x1270fdfffea4487a", link_layer="Ethernet", node_type="CA", **ACTIVE),
        _entry("mlx5_1", 1, hca_type="MT4119", node_guid="0x1070fd0300a4487b", sys_image_guid="0x1070fd0300a4487a",
               rate_gbps=25.0, port_guid="0x1270fdfffea4487b", link_layer="Ethernet", **DOWN_DISABLED),
        _entry("mlx5_2", 1, hca_type="MT4120", fw_ver="16.35.4030", node_guid="0x0000000000000000",
               sys_image_guid="0x1070fd0300a4487a", rate_gbps=25.0, lid=0, port_guid="0x0000000000000000",
               link_layer="Ethernet", node_type="CA", **ACTIVE),
    ],
    "ibstat/single_port_query_mlx4_0_port2_unindented.txt": [
        _entry("mlx4_0", 2, rate_gbps=56.0, lid=12, lmc=0, sm_lid=9, cap_mask="0x02514868",
               port_guid="0xec0d9a03000c8982", link_layer="InfiniBand", node_type="CA", hca_type=None,
               num_ports=None, **ACTIVE),
    ],
    # Hexadecimal LIDs, and an Ethernet port whose default GID is "unknown".
    "ibstatus/gpud_a100_azure_8hdr_plus_eth_gid_unknown.txt": [
        *(_entry(device, 1, gid="fe80:0000:0000:0000:0015:5dff:fd34:" + gid_tail, port_guid="0x00155dfffd34" + gid_tail,
                 lid=lid, sm_lid=1, rate_gbps=200.0, width="4X", speed="HDR", link_layer="InfiniBand", **ACTIVE)
          for device, gid_tail, lid in (("mlx5_0", "11eb", 0x33bf), ("mlx5_1", "11ec", 0x33be), ("mlx5_2", "11ed", 0x33cb),
                                        ("mlx5_3", "11ee", 0x33dc), ("mlx5_4", "11ef", 0x33f5), ("mlx5_5", "11f0", 0x33f4),
                                        ("mlx5_6", "11f1", 0x33f6), ("mlx5_7", "11f2", 0x33f9))),
        _entry("mlx5_8", 1, gid=None, port_guid=None, lid=0, sm_lid=0, rate_gbps=40.0, width="4X", speed="QDR",
               link_layer="Ethernet", **ACTIVE),
    ],
    "ibstatus/mlx4_2port_fdr_ib_active_tabs.txt": [
        _entry("mlx4_0", 1, gid="fe80:0000:0000:0000:0002:c903:00a4:e721", port_guid="0x0002c90300a4e721",
               lid=3, sm_lid=3, rate_gbps=56.0, width="4X", speed="FDR", link_layer="InfiniBand", **ACTIVE),
        _entry("mlx4_0", 2, gid="fe80:0000:0000:0000:0002:c903:00a4:e722", port_guid="0x0002c90300a4e722",
               lid=2, sm_lid=2, rate_gbps=56.0, width="4X", speed="FDR", link_layer="InfiniBand", **ACTIVE),
    ],
    "ibv_devinfo/l_list_2hcas.txt": [
        _entry("mlx4_1", None, fw_ver=None),
        _entry("mlx4_0", None, fw_ver=None),
    ],
    "ibv_devinfo/mlx4_MT4099_2port_ib_active_eth_down.txt": [
        _entry("mlx4_0", 1, state="ACTIVE", state_code=4, phys_state=None, max_mtu=4096, active_mtu=4096,
               sm_lid=12, lid=10, lmc=0, link_layer="InfiniBand", transport="InfiniBand", fw_ver="2.42.5000",
               node_guid="0xf45214030091ba10", sys_image_guid="0xf45214030091ba13", vendor_id="0x02c9",
               vendor_part_id=4099, hca_type=None, hw_rev="0x1", board_id="MT_1090110018", num_ports=2),
        _entry("mlx4_0", 2, state="DOWN", state_code=1, max_mtu=4096, active_mtu=1024, sm_lid=0, lid=0, lmc=0,
               link_layer="Ethernet", vendor_part_id=4099, board_id="MT_1090110018"),
    ],
    "ibv_devinfo/mlx5_cx7_4129_ib_port_down_lid65535_block.txt": [
        _entry("mlx5_0", 1, state="DOWN", state_code=1, max_mtu=4096, active_mtu=4096, sm_lid=0, lid=65535,
               lmc=0, link_layer="InfiniBand", transport="InfiniBand", fw_ver="28.39.2048",
               node_guid="0x58a2e103002a09b8", sys_image_guid="0x58a2e103002a09b8", vendor_id="0x02c9",
               vendor_part_id=4129, hw_rev="0x0", board_id="MT_0000000838", num_ports=1),
    ],
    # Quoted twice in a mail, the old "0/1: dev/1:" form; "UNKNOWN" states are no state at all.
    "rdma_link/mail_leon_2020_old_index_form_2port_unknown_quoted.txt": [
        _entry("ibp0s9", 1, netdevs=[], lid=13397, sm_lid=49151, lmc=0, subnet_prefix="fe80:0000:0000:0000", **ACTIVE),
        _entry("ibp0s9", 2, netdevs=[], lid=13397, sm_lid=49151, lmc=0, subnet_prefix="fe80:0000:0000:0000",
               state=None, state_code=None, phys_state=None, phys_state_code=None),
    ],
    "rdma_link/mlx5_cx5_2port_active_np_names.txt": [
        _entry("mlx5_0", 1, netdevs=["enp4s0f0np0"], lid=None, netdev_state=None, **ACTIVE),
        _entry("mlx5_1", 1, netdevs=["enp4s0f1np1"], **ACTIVE),
    ],
    "rdma_link/rxe_softroce_single.txt": [
        _entry("rxe_0", 1, netdevs=["p1p1"], **ACTIVE),
    ],
    # Soft-RoCE: empty "CA type:" and "Firmware version:" lines, a rate of 2.5.
    "ibstat/mail_rxe_empty_type_fw_rate_2.5.txt": [
        _entry("rxe0", 1, hca_type=None, fw_ver=None, hw_rev=None, rate_gbps=2.5, link_layer="Ethernet", lid=0,
               node_guid="0x4a51c5fffef6e159", port_guid="0x4a51c5fffef6e159", cap_mask="0x00010000", **ACTIVE),
    ],
    # "ibstat CA port" of an old mlx4 without a Link layer line, nothing indented.
    "ibstat/code_hardware_ibstat_ca_port_polling_no_linklayer.txt": [
        _entry("mlx4_0", 2, state="DOWN", state_code=1, phys_state="Polling", phys_state_code=2, rate_gbps=10.0,
               link_layer=None, port_guid="0x0002c903005a7b7e", cap_mask="0x02510868", hca_type=None),
    ],
    # CA names from udev's predictable naming (rocep33s0f0, ibp129s0f0).
    "ibstat/issue_ompi9881_predictable_names_rocep_ibp_prompt_partial.txt": [
        _entry("rocep33s0f0", 1, hca_type="MT4117", fw_ver="14.31.1014", rate_gbps=10.0, link_layer="Ethernet",
               port_guid="0x063f72fffeba85ce", **DOWN_DISABLED),
        _entry("ibp129s0f0", 1, hca_type="MT4123", fw_ver="20.31.1014", rate_gbps=100.0, link_layer="InfiniBand",
               lid=19, sm_lid=16, node_guid="0xb8cef603001bc59e", **ACTIVE),
    ],
    # Eight NDR ports and a BlueField-3 (MT41692) RoCE bond, device numbers with gaps.
    "ibstat/gpud_h100_bf3_MT41692_bond_plus_8ib400.txt": [
        _entry(name, 1, hca_type="MT4129", fw_ver="28.41.1000", rate_gbps=400.0, link_layer="InfiniBand", lid=lid, sm_lid=1,
               **ACTIVE)
        for name, lid in (("mlx5_0", 128), ("mlx5_1", 534), ("mlx5_4", 972), ("mlx5_5", 1775), ("mlx5_6", 1494),
                          ("mlx5_7", 717), ("mlx5_8", 774), ("mlx5_9", 2015))
    ] + [
        _entry("mlx5_bond_0", 1, hca_type="MT41692", fw_ver="32.38.3056", hw_rev="1", rate_gbps=200.0, link_layer="Ethernet",
               lid=0, port_guid="0x201d97fffe0056cf", node_guid="0x58a2e10300760398", **ACTIVE),
    ],
    # 400 Gb/s NDR on RoCE ports, hex LIDs, a prompt with a directory.
    "ibstatus/ibstatus_issue_ibexporter26_ndr_roce_prompt.txt": [
        _entry("mlx5_0", 1, rate_gbps=400.0, width="4X", speed="NDR", link_layer="Ethernet", lid=0, sm_lid=0,
               gid="fe80:0000:0000:0000:966d:aeff:feb3:832e", port_guid="0x966daefffeb3832e", **ACTIVE),
        _entry("mlx5_1", 1, rate_gbps=400.0, width="4X", speed="NDR", link_layer="Ethernet",
               gid="fe80:0000:0000:0000:966d:aeff:feec:c6a0", port_guid="0x966daefffeecc6a0", **ACTIVE),
    ],
    # siw (iWARP): no phys_state, no active speed.
    "ibv_devinfo/lkml_jgg_2022_siw0_iwarp_tabs_build_path_prompt.txt": [
        _entry("siw0", 1, transport="iWARP", fw_ver="0.0.0", node_guid="0x7686e2fffe2863fc", sys_image_guid="0x7486e22863fc0000",
               state="ACTIVE", state_code=4, phys_state=None, link_layer="Ethernet", max_mtu=1024, active_mtu=1024,
               rate_gbps=None, vendor_id="0x626d74"),
    ],
    # The author cut the port: line out with four "  ." lines: the device's fields stay, the port's are noted.
    "ibv_devinfo/linux-rdma_2020_bnxt_re2_v_elided_port_line_dots_gid_types.txt": [
        _entry("bnxt_re2", None, transport="InfiniBand", fw_ver="216.0.220.0", node_guid="0xb22628fffed3b0f0",
               sys_image_guid="0xb22628fffed3b0f0", state=None, phys_state=None, gid=None),
    ],
    "ibv_devinfo/pib_2_libibverbs_warnings_no_ib_devices_found.txt": [],
    # `ibv_devinfo | head` cut right after EFA's "port:\t1": the port without a field of its own (a note says so).
    "ibv_devinfo/ozone_ai_efa_notes_ibv_devinfo_pipe_head_cut_at_port_line_efa_0.txt": [
        _entry("efa_0", 1, transport="unspecified", fw_ver="0.0.0.0", node_guid="0x0000000000000000", sys_image_guid="0x0000000000000000",
               vendor_id="0x1d0f", vendor_part_id=61344, hw_rev="0xEFA0", num_ports=1, state=None, phys_state=None, link_layer=None),
    ],
    # siw_0's block stops after its transport line: the device without phys_port_cnt or a port (a note says so).
    "ibv_devinfo/zh_wsl_notes_siw_0_ibv_devinfo_d_prompt_cut_after_transport_author_comment_PARTIAL.txt": [
        _entry("siw_0", None, transport="iWARP", num_ports=None, fw_ver=None, state=None),
    ],
    # ibstatus where /sys/class/infiniband holds no device: its "Fatal error: ... sys files not found".
    "ibstatus/trinity_219_fatal_error_sys_files_not_found_prompt.txt": [],
    # MLNX_OFED 4's ibv_devinfo -d mlx5_3 -v: a RoCE port at 1X 10 Gb/s among its own attribute lines.
    "ibv_devinfo/magnate3_d_mlx5_3_v_ofed4_exp_flags.txt": [
        _entry("mlx5_3", 1, fw_ver="14.27.1016", node_guid="0x08c0eb03003b353c", board_id="MT_2420110004", vendor_part_id=4117,
               link_layer="Ethernet", width="1X", rate_gbps=10.0, max_mtu=4096, active_mtu=1024, cap_mask="0x04010000",
               gid="fe80:0000:0000:0000:0ac0:ebff:fe3b:353c", **ACTIVE),
    ],
    # "Failed to open device" for the other VFs around the one that opened; a "Device ports:" heading.
    "ibv_devinfo/hustcat_8_failed_to_open_device_vf_mlx4_device_ports.txt": [
        _entry("mlx4_2", 1, fw_ver="2.40.7000", node_guid="0x001405008cc6cd0a", sys_image_guid="0x248a070300e53d43",
               vendor_part_id=4100, state="ACTIVE", state_code=4, phys_state=None, link_layer="InfiniBand", lid=1, sm_lid=2,
               max_mtu=4096, active_mtu=4096),
    ],
    # Inside a pod: the VF's netdev renamed net1.
    "ibdev2netdev/sriov_op_382_pod_vf_net1_down_prompts.txt": [
        _entry("mlx5_3", 1, netdevs=["net1"], netdev_state="Down"),
    ],
    "ibdev2netdev/magnate3_srq_cmd_trailing_space_6ports.txt": [
        _entry(name, 1, netdevs=[netdev], netdev_state=state)
        for name, netdev, state in (("mlx5_0", "ens4f0", "Down"), ("mlx5_1", "ens4f1", "Up"), ("mlx5_2", "ens6", "Up"),
                                    ("mlx5_3", "ens14f0", "Up"), ("mlx5_4", "ens14f1", "Down"), ("mlx5_5", "ib0", "Up"))
    ],
    # Padded by column -t, each line with a "# ..." comment of its author.
    "ibdev2netdev/imbue_cluster_health_4_column_t_hash_comments_cx7_cx6.txt": [
        _entry(device, 1, netdevs=[netdev], netdev_state=state)
        for device, netdev, state in (("mlx5_0", "ibp26s0", "Down"), ("mlx5_1", "enp27s0f0np0", "Up"),
                                      ("mlx5_10", "ibp204s0", "Down"), ("mlx5_11", "ibp220s0", "Down"),
                                      ("mlx5_2", "enp27s0f1np1", "Down"), ("mlx5_3", "ibp60s0", "Down"),
                                      ("mlx5_4", "ibp77s0", "Down"), ("mlx5_5", "ibp94s0", "Down"),
                                      ("mlx5_6", "ibp156s0", "Down"), ("mlx5_7", "enp157s0f0np0", "Up"),
                                      ("mlx5_8", "enp157s0f1np1", "Down"), ("mlx5_9", "ibp188s0", "Down"))
    ],
    "rdma_link/lkml_jgg_2022_siw0_iwarp_prompt_trailing_space.txt": [
        _entry("siw0", 1, netdevs=["enp0s31f6"], **ACTIVE),
    ],
    # The old "index/port: dev/port:" form, an IB port with its subnet prefix and LIDs, no netdevs.
    "rdma_link/magnate3_old_index_form_trailing_space_ib_subnet_no_netdev.txt": [
        _entry("mlx5_0", 1, netdevs=[], **DOWN_DISABLED),
        _entry("mlx5_2", 1, netdevs=[], **ACTIVE),
        _entry("mlx5_4", 1, netdevs=[], **DOWN_DISABLED),
        _entry("mlx5_5", 1, netdevs=[], lid=12, sm_lid=4, lmc=0, subnet_prefix="fe80:0000:0000:0000", **ACTIVE),
        _entry("mlx5_3", 1, netdevs=[], **ACTIVE),
        _entry("mlx5_1", 1, netdevs=[], **ACTIVE),
    ],
    # GUIDs and the capability mask replaced by "/* omitted */": left out, not read as values.
    "ibstat/ibstat_cx4_fdr_guids_and_capability_mask_replaced_by_omitted_comments_blog.txt": [
        _entry("mlx5_0", 1, hca_type="MT4115", fw_ver="12.23.1020", node_guid=None, sys_image_guid=None, cap_mask=None,
               port_guid=None, rate_gbps=56.0, lid=13, sm_lid=9, lmc=0, link_layer="InfiniBand", **ACTIVE),
    ],
    # Every indentation a no-break space's UTF-8 bytes read as Latin-1 ("\u00c2\u00a0"): read as blanks.
    "ibstat/ompi_users_2012_mthca0_MT25208_mojibake_nbsp_indent.txt": [
        _entry("mthca0", 1, hca_type="MT25208 (MT23108 compat mode)", fw_ver="4.7.600", hw_rev="a0",
               node_guid="0x0005ad00000c21e0", port_guid="0x0005ad00000c21e1", cap_mask="0x02510a68", rate_gbps=10.0,
               lid=4, sm_lid=2, link_layer="InfiniBand", **ACTIVE),
        _entry("mthca0", 2, rate_gbps=10.0, lid=0, state="DOWN", phys_state="Polling"),
    ],
}

# Fields each tool never prints: the parser must leave them None on every dict.
NOT_SHOWN = {
    "ibstat": ("gid", "netdevs", "netdev_state", "width", "max_mtu", "pci_address", "vendor_part_id"),
    "ibstatus": ("hca_type", "fw_ver", "netdevs", "cap_mask", "lmc", "node_guid"),
    "ibv_devinfo": ("hca_type", "netdevs", "netdev_state", "pci_address", "description"),
    "ibdev2netdev": ("link_layer", "lid", "rate_gbps", "phys_state", "port_guid", "node_guid"),
    "rdma_link": ("hca_type", "link_layer", "rate_gbps", "port_guid", "netdev_state", "fw_ver"),
}


# What a paste holds around a tool's output: a prompt with the command, the bare command, a Markdown
# fence, a redaction mark, the tools' own diagnostics.
_PASTE_LINE = re.compile(r"^(?:\S*[$#] |\[[^\]]*\][$#] |#\s*\S|```|\.\.\.$|(?:sudo )?(?:ibstat|ibstatus|ibv_devinfo|"
                         r"ibdev2netdev|rdma)(?: |$)|ibwarn:|ibpanic:|libibverbs:|Failed to open device)")


def _first_meaningful_line(text: str):
    """The number and text of the first line that is not blank or part of the paste around the output."""
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = re.sub(r"^(?:>[ \t]?)+", "", line.strip()).strip()  # a mail's quote marks, as the parsers drop them
        if stripped and not _PASTE_LINE.match(stripped):
            # and what an operator wrote after the text: the message quotes the line without it
            stripped = re.sub(r"\s(?:#|//).*$", "", stripped).rstrip()
            return number, stripped
    raise AssertionError("fixture without content")


def _variants():
    def spaces_for_tabs(text):
        return text.replace("\t", "        ")

    def no_indentation(text):
        return "\n".join(line.lstrip() for line in text.split("\n"))

    def crlf(text):
        return text.replace("\n", "\r\n")

    def trailing_blanks(text):
        return "\n".join(line + " \t " for line in text.split("\n"))

    def box_border(text):
        lines = text.rstrip("\n").split("\n")
        width = max(len(line) for line in lines) + 2
        body = ["\u2502 " + line.ljust(width) + " \u2502" for line in lines]
        return "\n".join(["\u250c" + "\u2500" * (width + 2) + "\u2510"] + body + ["\u2514" + "\u2500" * (width + 2) + "\u2518"])

    def pipe_border(text):
        lines = text.rstrip("\n").split("\n")
        return "\n".join(["+" + "-" * 60 + "+"] + ["| " + line + " |" for line in lines] + ["+" + "-" * 60 + "+"])

    def noise_lines(text):
        out = []
        for number, line in enumerate(text.split("\n")):
            out.append(line)
            if number % 3 == 0:
                out.append("ibwarn: [4711] umad_get_port: port 1 not found")
                out.append("   \t")
            if number % 5 == 0:
                out.append("ibdebug: [4711] mad_rpc: retry")
        return "ibpanic: [4711] main: stat of IB device 'mlx5_9' failed\n" + "\n".join(out)

    def prompts(text):
        return "root@gpu-node01:~# the-command\n" + text + "\n[root@gpu-node01 ~]# \n$ \n"

    def ansi_colours(text):
        return "\n".join("\x1b[32m" + line + "\x1b[0m" if line.strip() else line for line in text.split("\n"))

    return [spaces_for_tabs, no_indentation, crlf, trailing_blanks, box_border, pipe_border, noise_lines,
            prompts, ansi_colours]


VARIANTS = _variants()


# ----------------------------------------------------------------------------------------------
# Every fixture
# ----------------------------------------------------------------------------------------------

def test_every_fixture_has_expectations():
    assert sorted(EXPECTED) == [_id(path) for path in FIXTURE_FILES]
    assert set(path.parent.name for path in FIXTURE_FILES) == set(PARSERS)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_fixture_values(path):
    tool = path.parent.name
    result = PARSERS[tool](_text(path))
    expected = EXPECTED[_id(path)]
    assert len(result) == len(expected)
    for got, want in zip(result, expected):
        assert list(got) == list(FIELDS)
        for field, value in want.items():
            assert got[field] == value, "%s %s/%s: %s" % (_id(path), got["device"], got["port"], field)
        for field in NOT_SHOWN[tool]:
            assert got[field] is None, field
        assert isinstance(got["device"], str)
        assert got["port"] is None or isinstance(got["port"], int)
        if got["rate_gbps"] is not None:
            assert isinstance(got["rate_gbps"], float)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_fixture_as_stdout_lines(path):
    parser = PARSERS[path.parent.name]
    text = _text(path)
    assert parser(text.splitlines()) == parser(text)
    assert parser(text.encode("utf-8")) == parser(text)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.__name__)
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_fixture_variants_parse_the_same(path, variant):
    parser = PARSERS[path.parent.name]
    text = _text(path)
    assert parser(variant(text)) == parser(text)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_fixture_cut_at_every_line_gives_what_was_seen(path):
    """A listing cut after any line parses, and every value it gives is the full listing's value."""
    parser = PARSERS[path.parent.name]
    lines = _text(path).split("\n")
    full = parser(_text(path))
    for cut in range(len(lines) + 1):
        partial = parser("\n".join(lines[:cut]))
        assert len(partial) <= len(full)
        for got in partial:
            same = [e for e in full if (e["device"], e["port"]) == (got["device"], got["port"])]
            if got["port"] is None and not same:
                # a device cut before its first port
                same = [e for e in full if e["device"] == got["device"]]
            assert same, (cut, got["device"], got["port"])
            for field, value in got.items():
                if value is not None and field != "port":
                    assert value == same[0][field], (cut, field)


OTHER_TOOL_PAIRS = [(tool, path) for tool in sorted(PARSERS) for path in FIXTURE_FILES if path.parent.name != tool]


@pytest.mark.parametrize("parser_tool, path", OTHER_TOOL_PAIRS, ids=lambda v: _id(v) if isinstance(v, Path) else v)
def test_other_tools_output_is_rejected(parser_tool, path):
    text = _text(path)
    number, line = _first_meaningful_line(text)
    with pytest.raises(IbTextError) as error:
        PARSERS[parser_tool](text)
    assert str(error.value) == "parse_%s: line %d is not %s output: %r" % (
        parser_tool, number, TOOL_NAMES[parser_tool], line)


# ----------------------------------------------------------------------------------------------
# Empty input, wrong types, garbage
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("parser_tool", sorted(PARSERS))
@pytest.mark.parametrize("empty", [
    "", "\n", " \t \n\n", "\r\n\r\n", [], ["", "   "], (), b"",
    "ibwarn: [1] umad_init: umad_init\n\nibdebug: x\n", "$ the-command\n", "\u250c\u2500\u2500\u2510\n\u2514\u2500\u2500\u2518",
], ids=repr)
def test_empty_input_gives_empty_list(parser_tool, empty):
    assert PARSERS[parser_tool](empty) == []


@pytest.mark.parametrize("parser_tool", sorted(PARSERS))
@pytest.mark.parametrize("value, kind", [(None, "NoneType"), (42, "int"), ({"stdout": ""}, "dict")])
def test_wrong_type_names_the_filter_and_type(parser_tool, value, kind):
    with pytest.raises(IbTextError) as error:
        PARSERS[parser_tool](value)
    assert str(error.value) == (
        "parse_%s: expected the command's output as a string or a list of lines (e.g. result.stdout or "
        "result.stdout_lines), got %s" % (parser_tool, kind))


@pytest.mark.parametrize("parser_tool", sorted(PARSERS))
def test_list_with_non_text_item(parser_tool):
    with pytest.raises(IbTextError) as error:
        PARSERS[parser_tool](["ok", 5])
    assert str(error.value).startswith("parse_%s: item 2 of the list is a int, expected a line of text" % parser_tool)


@pytest.mark.parametrize("parser_tool", sorted(PARSERS))
def test_garbage_is_quoted(parser_tool):
    with pytest.raises(IbTextError) as error:
        PARSERS[parser_tool]("\n\n  foo bar  \n")
    assert str(error.value) == "parse_%s: line 3 is not %s output: 'foo bar'" % (parser_tool, TOOL_NAMES[parser_tool])


@pytest.mark.parametrize("parser_tool, fixture, after", [
    ("ibstat", "ibstat/mlx4_MT4099_2ca_2port_fdr_all_active_tabs.txt", 2),
    ("ibstat", "ibstat/mlx4_MT4099_2ca_2port_fdr_all_active_tabs.txt", 12),
    ("ibstatus", "ibstatus/mlx4_2port_fdr_ib_active_tabs.txt", 4),
    ("ibv_devinfo", "ibv_devinfo/mlx4_MT4099_2port_ib_active_eth_down.txt", 4),
    ("ibv_devinfo", "ibv_devinfo/mlx4_MT4099_2port_ib_active_eth_down.txt", 14),
    ("ibv_devinfo", "ibv_devinfo/l_list_2hcas.txt", 2),
    ("ibdev2netdev", "ibdev2netdev/v_mlx5_cx4_eth_pf_active_vf_down_padded.txt", 3),
    ("rdma_link", "rdma_link/mlx5_cx5_2port_active_np_names.txt", 1),
    ("ibstat", "ibstat/l_list_cas_mlx4.txt", 1),
])
def test_garbage_inside_a_listing_names_its_line(parser_tool, fixture, after):
    lines = _text(FIXTURES / fixture).split("\n")
    lines.insert(after, "\tfoo bar")
    with pytest.raises(IbTextError) as error:
        PARSERS[parser_tool]("\n".join(lines))
    assert str(error.value) == "parse_%s: line %d is not %s output: 'foo bar'" % (
        parser_tool, after + 1, TOOL_NAMES[parser_tool])


def test_long_line_is_shortened_and_quotes_are_kept():
    with pytest.raises(IbTextError) as error:
        parse_ibstat("x " * 150)
    message = str(error.value)
    assert message == "parse_ibstat: line 1 is not ibstat output: '%s...'" % ("x " * 59)[:117]
    with pytest.raises(IbTextError) as error:
        parse_rdma_link("Failed to open NETLINK_RDMA socket")
    assert str(error.value) == "parse_rdma_link: line 1 is not rdma link output: 'Failed to open NETLINK_RDMA socket'"
    with pytest.raises(IbTextError) as error:
        parse_ibstatus("IB device 'mlx5_0' not found")
    assert str(error.value) == "parse_ibstatus: line 1 is not ibstatus output: \"IB device 'mlx5_0' not found\""


def test_line_numbers_count_list_items_and_crlf():
    with pytest.raises(IbTextError) as error:
        parse_ibdev2netdev(["mlx5_0 port 1 ==> ib0 (Up)", "", "oops"])
    assert str(error.value) == "parse_ibdev2netdev: line 3 is not ibdev2netdev output: 'oops'"
    with pytest.raises(IbTextError) as error:
        parse_ibdev2netdev("mlx5_0 port 1 ==> ib0 (Up)\r\n\r\noops\r\n")
    assert str(error.value) == "parse_ibdev2netdev: line 3 is not ibdev2netdev output: 'oops'"


# ----------------------------------------------------------------------------------------------
# ibstat: forms not among the fixtures, written from ibstat's print format (infiniband-diags)
# ----------------------------------------------------------------------------------------------

IBSTAT_SDR_FDR10 = """CA 'qib0'
\tCA type: InfiniPath_QLE7342
\tNumber of ports: 2
\tFirmware version:\x20
\tHardware version: 2
\tNode GUID: 0x0011750000ff9a3c
\tSystem image GUID: 0x0011750000ff9a3c
\tPort 1:
\t\tState: Initializing
\t\tPhysical state: LinkUp
\t\tRate: 2.5
\t\tBase lid: 0
\t\tLMC: 0
\t\tSM lid: 0
\t\tCapability mask: 0x07610868
\t\tPort GUID: 0x0011750000ff9a3c
\t\tLink layer: InfiniBand
\tPort 2:
\t\tState: Armed
\t\tPhysical state: No state change
\t\tRate: 40 (FDR10)
\t\tBase lid: 7
\t\tLMC: 2
\t\tSM lid: 1
\t\tCapability mask: 0x07610868
\t\tPort GUID: 0x0011750000ff9a3d
\t\tLink layer: InfiniBand
\t\tSome newer field: 42
Switch 'switch0'
\tSwitch type: MT52100
\tNumber of ports: 36
\tPort 0:
\t\tState: ???
\t\tPhysical state: PortConfigurationTraining
"""


def test_ibstat_fractional_rate_fdr10_and_other_states():
    ports = parse_ibstat(IBSTAT_SDR_FDR10)
    assert [(p["device"], p["port"]) for p in ports] == [("qib0", 1), ("qib0", 2), ("switch0", 0)]
    first, second, switch = ports
    assert (first["state"], first["state_code"]) == ("INIT", 2)
    assert (first["rate_gbps"], first["width"], first["speed"]) == (2.5, None, None)
    assert first["fw_ver"] is None  # printed empty
    assert first["hca_type"] == "InfiniPath_QLE7342"
    assert (second["state"], second["state_code"]) == ("ARMED", 3)
    assert (second["phys_state"], second["phys_state_code"]) == ("NoStateChange", 0)
    assert (second["rate_gbps"], second["speed"]) == (40.0, "FDR10")
    assert (second["lid"], second["lmc"], second["sm_lid"]) == (7, 2, 1)
    assert switch["node_type"] == "Switch" and switch["hca_type"] == "MT52100" and switch["num_ports"] == 36
    assert (switch["state"], switch["state_code"]) == (None, None)
    assert (switch["phys_state"], switch["phys_state_code"]) == ("PortConfigurationTraining", 4)


def test_ibstat_short_listing_and_cut_before_ports_give_devices():
    text = "CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\nCA 'mlx5_1'\n\tCA type: MT4123\n"
    devices = parse_ibstat(text)
    assert [(d["device"], d["port"], d["hca_type"]) for d in devices] == [
        ("mlx5_0", None, "MT4123"), ("mlx5_1", None, "MT4123")]
    assert devices[0]["num_ports"] == 1


def test_ibstat_port_guid_listing():
    ports = parse_ibstat("0xec0d9a03000c8981\n0xec0d9a03000c8982\n")
    assert [(p["device"], p["port"], p["port_guid"]) for p in ports] == [
        (None, None, "0xec0d9a03000c8981"), (None, None, "0xec0d9a03000c8982")]
    with pytest.raises(IbTextError, match=r"^parse_ibstat: line 2 is not ibstat output: 'mlx4_0'$"):
        parse_ibstat("0xec0d9a03000c8981\nmlx4_0\n")


def test_ibstat_modes_do_not_mix():
    # A CA header anywhere makes it the full listing: a bare name before it is the line out of place.
    with pytest.raises(IbTextError, match=r"^parse_ibstat: line 1 is not ibstat output: 'mlx4_0'$"):
        parse_ibstat("mlx4_0\nCA 'mlx4_0'\n")
    with pytest.raises(IbTextError, match=r"^parse_ibstat: line 2 is not ibstat output: 'mlx4_1'$"):
        parse_ibstat("CA 'mlx4_0'\nmlx4_1\n")


def test_ibstat_port_field_outside_a_port_is_not_placed():
    with pytest.raises(IbTextError, match=r"^parse_ibstat: line 3 is not ibstat output: 'State: Active'$"):
        parse_ibstat("CA 'mlx4_0'\n\tCA type: MT4099\n\tState: Active\n")
    with pytest.raises(IbTextError, match=r"^parse_ibstat: line 1 is not ibstat output: 'Port 1:'$"):
        parse_ibstat("Port 1:\n\t\tState: Active\n")


# ----------------------------------------------------------------------------------------------
# ibstatus
# ----------------------------------------------------------------------------------------------

def test_ibstatus_spaces_hex_lids_and_missing_link_layer():
    text = (
        "Infiniband device 'mlx5_0' port 1 status:\n"
        "    default gid:     fe80:0000:0000:0000:b859:9f03:00d4:0a31\n"
        "    base lid:        0xffff\n"
        "    sm lid:          0x0\n"
        "    state:           1: DOWN\n"
        "    phys state:      3: Disabled\n"
        "    rate:            10 Gb/sec (4X SDR)\n"
        "\n"
        "Infiniband device 'mlx5_1' port 1 status:\n"
        "    default gid:     fe80:0000:0000:0000:b859:9f03:00d4:0a32\n"
        "    base lid:        0x1a\n"
        "    state:           4: ACTIVE\n"
        "    phys state:      5: LinkUp\n"
        "    rate:            200 Gb/sec (4X HDR)\n"
        "    link_layer:      InfiniBand\n"
    )
    down, active = parse_ibstatus(text)
    assert (down["lid"], down["sm_lid"], down["link_layer"]) == (65535, 0, None)
    assert (down["state"], down["state_code"], down["phys_state"], down["phys_state_code"]) == ("DOWN", 1, "Disabled", 3)
    assert (down["rate_gbps"], down["width"], down["speed"]) == (10.0, "4X", "SDR")
    assert down["port_guid"] == "0xb8599f0300d40a31"
    assert (active["device"], active["lid"], active["rate_gbps"], active["speed"]) == ("mlx5_1", 26, 200.0, "HDR")
    with pytest.raises(IbTextError, match=r"^parse_ibstatus: line 1 is not ibstatus output: 'state: 4: ACTIVE'$"):
        parse_ibstatus("state: 4: ACTIVE\n")


# ----------------------------------------------------------------------------------------------
# ibv_devinfo: -v and -l forms written from ibv_devinfo's print format (libibverbs devinfo.c)
# ----------------------------------------------------------------------------------------------

IBV_DEVINFO_VERBOSE = """hca_id:\tmlx5_0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t16.35.2000
\tnode_guid:\t\t\tb859:9f03:00d4:0a30
\tsys_image_guid:\t\t\tb859:9f03:00d4:0a30
\tvendor_id:\t\t\t0x02c9
\tvendor_part_id:\t\t\t4119
\thw_ver:\t\t\t\t0x0
\tboard_id:\t\t\tMT_0000000010
\tphys_port_cnt:\t\t\t1
\tmax_mr_size:\t\t\t0xffffffffffffffff
\tdevice_cap_flags:\t\t0x25e1361
\t\t\t\t\tBAD_PKEY_CNTR
\t\t\t\t\tBAD_QKEY_CNTR
\t\t\t\t\tUnknown flags: 0xC8400000
\tgeneral_odp_caps:
\t\t\t\t\tODP_SUPPORT
\trc_odp_caps:
\t\t\t\t\tNO SUPPORT
\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff
\thca_core_clock:\t\t\t156250kHZ
\traw packet caps:
\t\t\t\t\tC-VLAN stripping offload
\t\t\t\t\tDelay drop
\ttag matching not supported

\tcq moderation caps:
\t\tmax_cq_count:\t65535
\t\tmax_cq_period:\t4095 us

\tmaximum available device memory:\t131072Bytes

\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t1
\t\t\tport_lid:\t\t12
\t\t\tport_lmc:\t\t0x00
\t\t\tlink_layer:\t\tInfiniBand
\t\t\tmax_msg_sz:\t\t0x40000000
\t\t\tport_cap_flags:\t\t0x2659e848
\t\t\tport_cap_flags2:\t0x0032
\t\t\tmax_vl_num:\t\t4 (3)
\t\t\tactive_width:\t\t4X (2)
\t\t\tactive_speed:\t\t25.0 Gbps (32)
\t\t\tphys_state:\t\tLINK_UP (5)
\t\t\tGID[  0]:\t\tfe80::b859:9f03:d4:a30
\t\t\tGID[  1]:\t\tfe80::1, RoCE v2

"""


def test_ibv_devinfo_verbose():
    (port,) = parse_ibv_devinfo(IBV_DEVINFO_VERBOSE)
    assert (port["device"], port["port"], port["vendor_part_id"], port["fw_ver"]) == ("mlx5_0", 1, 4119, "16.35.2000")
    assert (port["state"], port["phys_state"], port["phys_state_code"]) == ("ACTIVE", "LinkUp", 5)
    assert (port["rate_gbps"], port["width"], port["speed"]) == (100.0, "4X", "EDR")
    assert port["cap_mask"] == "0x2659e848"
    assert port["gid"] == "fe80:0000:0000:0000:b859:9f03:00d4:0a30"
    assert port["port_guid"] == "0xb8599f0300d40a30"
    assert (port["lid"], port["sm_lid"], port["lmc"], port["max_mtu"]) == (12, 1, 0, 4096)
    assert port["node_guid"] == "0xb8599f0300d40a30" and port["hca_type"] is None


@pytest.mark.parametrize("speed, width, rate, name", [
    ("14.0 Gbps (16)", "4X (2)", 56.0, "FDR"), ("10.0 Gbps (8)", "4X (2)", 40.0, "FDR10"),
    ("50.0 Gbps (64)", "2X (16)", 100.0, "HDR"), ("50.0 Gbps (64)", "4X (2)", 200.0, "HDR"),
    ("100.0 Gbps (128)", "4X (2)", 400.0, "NDR"), ("2.5 Gbps (1)", "1X (1)", 2.5, "SDR"),
    ("invalid speed (0)", "4X (2)", None, None),
])
def test_ibv_devinfo_rate_is_width_times_lane_speed(speed, width, rate, name):
    text = "hca_id: mlx5_0\n\tport: 1\n\t\tactive_width: %s\n\t\tactive_speed: %s\n" % (width, speed)
    (port,) = parse_ibv_devinfo(text)
    assert (port["rate_gbps"], port["speed"]) == (rate, name)


def test_ibv_devinfo_verbose_garbage_in_a_port_is_rejected():
    lines = IBV_DEVINFO_VERBOSE.split("\n")
    at = lines.index("\t\t\tmax_msg_sz:\t\t0x40000000")
    lines.insert(at, "\t\t\tBAD_PKEY_CNTR")  # a flag line belongs to the device attributes only
    with pytest.raises(IbTextError) as error:
        parse_ibv_devinfo("\n".join(lines))
    assert str(error.value) == "parse_ibv_devinfo: line %d is not ibv_devinfo output: 'BAD_PKEY_CNTR'" % (at + 1)


def test_ibv_devinfo_no_devices_and_one_hca():
    assert parse_ibv_devinfo("No IB devices found\n") == []
    assert parse_ibv_devinfo("0 HCAs found:\n\n") == []
    (device,) = parse_ibv_devinfo("1 HCA found:\n\trxe0\n\n")
    assert (device["device"], device["port"]) == ("rxe0", None)
    with pytest.raises(IbTextError, match=r"^parse_ibv_devinfo: line 2 is not ibv_devinfo output: 'port: 1'$"):
        parse_ibv_devinfo("libibverbs: Warning: couldn't load driver 'libfoo-rdmav34.so'\nport: 1\n")


def test_ibv_devinfo_cut_before_ports_gives_device():
    (device,) = parse_ibv_devinfo("hca_id:\tmlx5_3\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t20.1\n")
    assert (device["device"], device["port"], device["transport"], device["fw_ver"]) == ("mlx5_3", None, "InfiniBand", "20.1")


# ----------------------------------------------------------------------------------------------
# ibdev2netdev: the forms of the mlnx-tools script
# ----------------------------------------------------------------------------------------------

def test_ibdev2netdev_old_style_and_carrier_words():
    ports = parse_ibdev2netdev(
        "mlx4_0 port 1 <===> ib0\n"
        "mlx5_2 port 1 ==> ens1f0 (NA)\n"
        "mlx5_3 port 1 ==> ens1f1 ()\n"
        "mlx5_4 port 1 ==> ens1f2 (down)\n"
        "mlx5_5 port 1 ==> ens1f3\n"
    )
    assert [(p["device"], p["netdevs"], p["netdev_state"], p["netdev_state_raw"]) for p in ports] == [
        ("mlx4_0", ["ib0"], None, None),
        ("mlx5_2", ["ens1f0"], None, "NA"),
        ("mlx5_3", ["ens1f1"], None, ""),
        ("mlx5_4", ["ens1f2"], "Down", "down"),
        ("mlx5_5", ["ens1f3"], None, None),
    ]


def test_ibdev2netdev_same_port_twice_is_one_dict():
    ports = parse_ibdev2netdev(
        "mlx4_0 port 1 <===> ib0\nmlx4_0 port 1 <===> ib0.8001\nmlx4_0 port 2 <===> ib1\nmlx4_0 port 1 <===> ib0\n")
    assert [(p["port"], p["netdevs"]) for p in ports] == [(1, ["ib0", "ib0.8001"]), (2, ["ib1"])]


def test_ibdev2netdev_verbose_without_pci_address_and_with_na_fields():
    (port,) = parse_ibdev2netdev(" mlx5_0 (NA - NA)  fw NA port 1 (NA) ==> ib0 (Up)\n")
    assert (port["device"], port["pci_address"], port["hca_type"], port["fw_ver"], port["state"]) == (
        "mlx5_0", None, None, None, None)
    (port,) = parse_ibdev2netdev(
        "0000:3b:00.0 mlx5_0 (MT4123 - MT2028K01234) ConnectX-6       fw 20.31.1014 port 1 (INIT  ) ==> ib0 (Down)")
    assert (port["description"], port["state"], port["state_code"], port["netdev_state"]) == (
        "ConnectX-6", "INIT", 2, "Down")


# ----------------------------------------------------------------------------------------------
# rdma link: the iproute2 forms
# ----------------------------------------------------------------------------------------------

def test_rdma_link_ib_ports_details_and_old_form():
    text = (
        "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 12 sm_lid 1 lmc 0 state ACTIVE "
        "physical_state LINK_UP netdev ib0 netdev_index 5\n"
        "    caps: <SM, CM, IP_BASED_GIDS>\n"
        "1/2: mlx5_1/2: subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN "
        "physical_state POLLING\n"
        "link mlx5_2/1 state DOWN physical_state LINK_ERROR_RECOVER\n"
        "link mlx5_3/1 state INIT physical_state ARMED\n"
    )
    first, second, third, fourth = parse_rdma_link(text)
    assert (first["lid"], first["sm_lid"], first["lmc"], first["subnet_prefix"], first["netdevs"]) == (
        12, 1, 0, "fe80:0000:0000:0000", ["ib0"])
    assert (second["device"], second["port"], second["lid"], second["netdevs"]) == ("mlx5_1", 2, 65535, [])
    assert (second["phys_state"], second["phys_state_code"]) == ("Polling", 2)
    assert (third["phys_state"], third["phys_state_code"]) == ("LinkErrorRecovery", 6)
    # rdma link names physical state 4 "ARMED"; it is PortConfigurationTraining.
    assert (fourth["state"], fourth["phys_state"], fourth["phys_state_code"]) == ("INIT", "PortConfigurationTraining", 4)
    with pytest.raises(IbTextError, match=r"^parse_rdma_link: line 1 is not rdma link output: 'caps: <SM>'$"):
        parse_rdma_link("caps: <SM>\n")


def test_rdma_link_json():
    text = json.dumps([
        {"ifindex": 0, "ifname": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP",
         "netdev": "ens1f0np0", "netdev_index": 4},
        {"ifindex": 1, "port": 1, "ifname": "rxe0/1", "lid": 3, "state": "DOWN", "physical_state": "DISABLED"},
    ])
    first, second = parse_rdma_link(text)
    assert (first["device"], first["port"], first["state_code"], first["phys_state"], first["netdevs"]) == (
        "mlx5_0", 1, 4, "LinkUp", ["ens1f0np0"])
    assert (second["device"], second["port"], second["lid"], second["phys_state_code"], second["netdevs"]) == (
        "rxe0", 1, 3, 3, [])
    with pytest.raises(IbTextError, match=r"^parse_rdma_link: item 1 of the JSON is not an rdma link port"):
        parse_rdma_link('[{"name": "x"}]')
    with pytest.raises(IbTextError, match=r"^parse_rdma_link: line 1 is not rdma link output: '\[oops'$"):
        parse_rdma_link("[oops")
    with pytest.raises(IbTextError, match=r"^parse_rdma_link: line 3 is not rdma link output: '\[\{\"ifname\": 1'$"):
        parse_rdma_link('\n  \n[{"ifname": 1\n')


def test_line_per_port_formats_keep_the_order_of_the_output():
    text = ("Infiniband device 'mlx4_0' port 1 status:\n\tstate:\t4: ACTIVE\n"
            "Infiniband device 'mlx4_1' port 1 status:\n\tstate:\t1: DOWN\n"
            "Infiniband device 'mlx4_0' port 2 status:\n\tstate:\t2: INIT\n")
    assert [(p["device"], p["port"], p["state"]) for p in parse_ibstatus(text)] == [
        ("mlx4_0", 1, "ACTIVE"), ("mlx4_1", 1, "DOWN"), ("mlx4_0", 2, "INIT")]
    text = "link mlx5_1/1 state ACTIVE\nlink mlx5_0/1 state DOWN\nlink mlx5_1/2 state INIT\n"
    assert [(p["device"], p["port"]) for p in parse_rdma_link(text)] == [("mlx5_1", 1), ("mlx5_0", 1), ("mlx5_1", 2)]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("nested", ["[" * 100000 + "]" * 100000, '[{"ifname": ' * 50000 + "1" + "}]" * 50000])
def test_rdma_link_json_nested_too_deeply_is_one_sentence(nested, strict):
    """Issue 24, item 11: json.loads raised a RecursionError through the filter."""
    with pytest.raises(IbTextError) as raised:
        _ib_text.parse_rdma_link(nested, strict=strict)
    assert str(raised.value) == "parse_rdma_link: the JSON is nested too deeply to be rdma -j link output"


@pytest.mark.parametrize("cut_before, shown", [("port:   1", 0), ("port:   2", 1)])
def test_ports_that_phys_port_cnt_announces_and_the_text_lacks_are_noted(cut_before, shown):
    text = (FIXTURES / "ibv_devinfo" / "mlx4_MT4099_2port_ib_active_eth_down.txt").read_text()
    result = _ib_text.parse_ibv_devinfo(text[:text.index(cut_before)])
    assert len(result["ports"]) == max(shown, 1)  # a device without a port is one entry, its port None
    assert [(n["line"], n["reason"]) for n in result["notes"]] == [
        (1, "%d of its 2 ports (phys_port_cnt) are in the text (ibv_devinfo -i, or a paste cut short): the others are not read" % shown)]
    assert _ib_text.parse_ibv_devinfo(text)["notes"] == []


def test_fields_of_a_port_whose_port_line_was_cut_are_noted_not_lost():
    result = _ib_text.parse_ibv_devinfo((FIXTURES / "ibv_devinfo" / "linux-rdma_2020_bnxt_re2_v_elided_port_line_dots_gid_types.txt").read_text())
    assert [(n["line"], n["reason"]) for n in result["notes"]] == [
        (number, "a redaction mark: the listing around it is incomplete") for number in (7, 8, 9, 10)] + [
        (number, "a port's field before any port: line (the paste left the port line out): not read") for number in range(11, 16)]


@pytest.mark.parametrize("printed, named", [("IB", "InfiniBand"), ("InfiniBand", "InfiniBand"), ("ETH", "Ethernet"),
                                            ("Ethernet", "Ethernet"), ("Unknown", None)])
def test_the_link_layer_is_named_as_sysfs_names_it(printed, named):
    """Old infiniband-diags (OFED 1.5) print "Link layer: IB" where sysfs and later tools say InfiniBand."""
    text = ("-bash-4.1# ibstat\nCA 'mthca0'\n\tCA type: MT25204\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
            "\t\tPhysical state: LinkUp\n\t\tRate: 20\n\t\tLink layer: %s\n" % printed)
    result = _ib_text.parse_ibstat(text)
    assert [(p["device"], p["state"], p["link_layer"]) for p in result["ports"]] == [("mthca0", "ACTIVE", named)]
    assert result["notes"] == []


def test_ibdev2netdev_an_authors_brackets_after_the_carrier_and_records_on_the_prompt_line():
    guide = _ib_text.parse_ibdev2netdev((FIXTURES / "pastes" / "ibdev2netdev_v_gds_guide_lnet_network_after_carrier_ifconfig_lines_between.txt")
                                        .read_text())
    assert [(p["device"], p["port"], p["netdevs"], p["netdev_state"], p["pci_address"], p["state"]) for p in guide["ports"]] == [
        ("mlx5_13", 1, ["ib4"], "Up", "0000:b8:00.1", "ACTIVE"), ("mlx5_15", 1, ["ib5"], "Up", "0000:bd:00.1", "ACTIVE")]
    assert [(n["line"], n["reason"]) for n in guide["notes"]][:2] == [
        (2, "words in brackets after the carrier, not ibdev2netdev's, left out"), (3, "not ibdev2netdev output")]
    # Records after the command on its own line are not taken for an empty listing in silence.
    flat = _ib_text.parse_ibdev2netdev((FIXTURES / "pastes" / "ibdev2netdev_gds_guide_page_lost_line_breaks_records_on_the_prompt_line.txt")
                                       .read_text())
    assert flat["ports"] == [] and [n["reason"] for n in flat["notes"]] == [
        "ibdev2netdev's records on the command's own line (a paste that lost its line breaks), not read"]
    # The same records without the prompt are refused; one record's brackets after another are no author's words.
    with pytest.raises(IbTextError, match="nothing in the text is ibdev2netdev output"):
        _ib_text.parse_ibdev2netdev("mlx5_0 port 1 ==> ib0 (Up) mlx5_1 port 1 ==> ib1 (Up)\n")
    old = _ib_text.parse_ibdev2netdev((FIXTURES / "pastes" / "ibdev2netdev_old_form_manual_pdf_text_records_on_the_prompt_line.txt").read_text())
    assert old["ports"] == [] and [n["reason"] for n in old["notes"]] == [
        "ibdev2netdev's records on the command's own line (a paste that lost its line breaks), not read"]


def test_a_session_in_inline_code_keeps_no_backtick_in_its_last_value():
    parsed = _ib_text.parse_ibstat((FIXTURES / "pastes" / "ibstat_azhpc_diagnostics_issue59_session_in_inline_code_backticks_ibpanic_then_vf.txt")
                                   .read_text())
    assert [(p["device"], p["state"], p["link_layer"]) for p in parsed["ports"]] == [("mlx5_ib0", "INIT", "InfiniBand")]
    assert _ib_text.parse_ibstat("```shell\nCA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n```\n")["ports"][0]["state"] == "ACTIVE"
