"""The GPU-to-HCA PCIe path: ACS and ATS from real lspci -vvv texts (gpud's GPU server, grep'd
pastes from NCCL issues, an elided block, a ConnectX-7 with a pasted group listing after it, lspci
run without root, a grep that kept the capability line only, a mail's quoted-printable lines) and
from configuration space bytes, IOMMU domains, and the reader on PCI trees."""

from __future__ import annotations

import os

import pytest
from pci_tree import PciTree, config_space

from ansible_collections.rdma.node.plugins.module_utils import _pcie_path as path_reader
from ansible_collections.rdma.node.plugins.module_utils._pcie_path import (
    LspciTextError,
    config_from_read,
    parse_config_space,
    parse_lspci_vvv,
    read_iommu,
    read_pcie_path,
)
from testpaths import FIXTURES

LSPCI = FIXTURES / "pcie" / "lspci"
REDIRECT = {"source_validation": True, "p2p_request_redirect": True, "p2p_completion_redirect": True, "upstream_forwarding": True}
ROOT, UP, DOWN_GPU, DOWN_HCA = "0000:3a:00.0", "0000:3b:00.0", "0000:3c:00.0", "0000:3c:08.0"
GPU, HCA = "0000:3e:00.0", "0000:3d:00.0"
FACTS = {"devices": {"mlx5_0": {"numa_node": 0}}, "ports": [{"device": "mlx5_0", "port": 1, "link_layer": "InfiniBand"}]}


def enabled(flags):
    return sorted(name for name, value in (flags or {}).items() if value)


def test_gpud_gpu_server_lspci_gives_the_redirecting_switch_ports():
    parsed = parse_lspci_vvv((LSPCI / "gpud_lspci-vvv.txt").read_text())
    functions = parsed["functions"]
    assert len(functions) == 517 and parsed["unattributed"] == [] and parsed["notes"] == []
    redirecting = sorted(a for a, f in functions.items() if f["acs"] and f["acs"]["control"]["p2p_request_redirect"])
    # The PMC-Sierra switch's downstream ports redirect P2P; the Broadcom PEX890xx ports do not.
    assert redirecting == ["0000:82:00.0", "0000:82:01.0", "0000:82:02.0", "0000:82:03.0"]
    assert functions["0000:82:00.0"]["port_type"] == "downstream_port"
    assert enabled(functions["0000:82:00.0"]["acs"]["control"]) == [
        "p2p_completion_redirect", "p2p_request_redirect", "source_validation", "upstream_forwarding"]
    assert functions["0000:17:00.0"]["description"].startswith("PCI bridge: Broadcom / LSI PEX890xx")
    assert enabled(functions["0000:17:00.0"]["acs"]["control"]) == []
    assert functions["0000:1b:00.0"]["port_type"] == "endpoint" and functions["0000:1b:00.0"]["ats"] is None
    assert functions["0000:6a:01.0"]["ats"] == {"enabled": False, "smallest_translation_unit": 0, "invalidate_queue_depth": 0}


def test_grep_output_has_no_device_to_give_the_lines_to():
    acs = parse_lspci_vvv((LSPCI / "nccl-523_grep_acsctl_prompt_partial.txt").read_text())
    assert acs["functions"] == {} and len(acs["unattributed"]) == 12
    assert acs["unattributed"][0]["line"] == 2 and acs["unattributed"][0]["value"]["p2p_request_redirect"] is True
    ats = parse_lspci_vvv((LSPCI / "nccl-tests-256_grep_ats_vm_cx7_prompt_partial.txt").read_text())
    assert [u["value"] for u in ats["unattributed"] if u["field"] == "ATSCtl"] == [{"enabled": True, "smallest_translation_unit": 0}] * 7


def test_an_elided_block_behind_a_prompt():
    parsed = parse_lspci_vvv((LSPCI / "openvmm-3461_lspci_s_vv_root_port_elided.txt").read_text())
    bridge = parsed["functions"]["0000:00:00.0"]
    assert enabled(bridge["acs"]["capable"]) == ["direct_translated_p2p", "p2p_completion_redirect", "p2p_request_redirect",
                                                 "source_validation", "translation_blocking", "upstream_forwarding"]
    assert enabled(bridge["acs"]["control"]) == [] and bridge["port_type"] is None  # its Express line was elided


def test_a_group_listing_pasted_after_lspci_is_not_devices():
    # A ConnectX-7 PF and VF from lspci -vvv, then "IOMMU Group 11 :" lines indented by a tab that
    # look like device headers: only lspci's own headers (the shallowest) are devices.
    parsed = parse_lspci_vvv((LSPCI / "kvm-2025-07-28_clg_cx7-pf-vf_lspci-vvv_tree_groups_partial.txt").read_text())
    assert sorted(parsed["functions"]) == ["0000:b1:00.1", "0000:b1:00.2"]
    pf = parsed["functions"]["0000:b1:00.1"]
    assert (pf["port_type"], pf["iommu_group"], enabled(pf["acs"]["control"]), pf["ats"], pf["unreadable"]) == ("endpoint", 12, [], None, None)
    assert parsed["functions"]["0000:b1:00.2"]["iommu_group"] == 11


def test_lspci_without_root_is_unreadable_not_without_acs():
    parsed = parse_lspci_vvv((LSPCI / "fastfetch-1658_h100-host_lspci-vvv_not-root_access-denied_partial.txt").read_text())
    assert parsed["functions"] and all(f["acs"] is None and f["ats"] is None for f in parsed["functions"].values())
    assert {f["unreadable"] for f in parsed["functions"].values()} == {
        'lspci could not read its capabilities ("Capabilities: <access denied>"): lspci -vvv must run as root'}


def test_a_function_listed_twice_with_other_acs_bits_says_so_and_reads_the_later():
    parsed = parse_lspci_vvv((LSPCI / "hygon_root_port_listed_twice_acs_redirect_on_then_off.txt").read_text())
    assert list(parsed["functions"]) == ["0000:00:01.1"]
    root = parsed["functions"]["0000:00:01.1"]
    assert (root["port_type"], root["unreadable"]) == ("root_port", None)
    assert (root["acs"]["capable"]["p2p_request_redirect"], root["acs"]["control"]["p2p_request_redirect"],
            root["acs"]["control"]["p2p_completion_redirect"]) == (True, False, False)
    (note,) = parsed["notes"]
    assert note.startswith("line ") and note.endswith(" differs from line 78's; the later one is read")
    assert "0000:00:01.1 is listed again and its ACSCtl" in note


def test_a_listing_cut_before_the_extended_capabilities_is_unknown_not_without_acs():
    parsed = parse_lspci_vvv((LSPCI / "rpi-pcie-devices-80_pex8619_upstream_port_cut_after_express_line_partial.txt").read_text())
    switch = parsed["functions"]["0000:01:00.0"]
    assert (switch["port_type"], switch["acs"], switch["ats"]) == ("upstream_port", None, None)
    assert switch["unreadable"] == ("its PCI Express capability is listed but none of its extended capabilities, where ACS and "
                                    "ATS are: the text was cut, or lspci could not read the extended configuration space")


def test_a_whole_block_without_extended_capabilities_has_no_acs_where_lspci_read_others():
    # A C610 chipset root port has no extended capability; its sister port's AER shows lspci read them (root, ECAM).
    parsed = parse_lspci_vvv((LSPCI / "cmlgpu_c610_pch_root_ports_without_extended_capabilities_then_ehci_partial.txt").read_text())
    for address in ("0000:00:1c.0", "0000:00:1c.7"):
        port = parsed["functions"][address]
        assert (port["port_type"], port["acs"], port["ats"], port["unreadable"]) == ("root_port", None, None, None)
    # The same block as the last of a text may have been cut there: unknown.
    alone = parse_lspci_vvv((LSPCI / "cmlgpu_c610_pch_root_ports_without_extended_capabilities_then_ehci_partial.txt").read_text()
                            .split("00:1c.7 ")[0])
    assert alone["functions"]["0000:00:1c.0"]["unreadable"].startswith("its PCI Express capability is listed but none of its extended")


def test_lspci_v_gives_the_iommu_group_in_its_flags_and_an_elided_block_is_unknown():
    parsed = parse_lspci_vvv((LSPCI / "tiny5_m2_riser_19_x710_lspci_v_flags_iommu_group_paren_elision.txt").read_text())
    for address in ("0000:01:00.0", "0000:01:00.1"):
        function = parsed["functions"][address]
        assert (function["iommu_group"], function["acs"], function["ats"]) == (2, None, None)
        assert function["unreadable"].startswith("its lines are cut (an elision such as")


def test_a_pcie_to_pci_bridge_is_named_so():
    parsed = parse_lspci_vvv((LSPCI / "cmlgpu_renesas_pcie_to_pci_bridge_with_aer_partial.txt").read_text())
    assert parsed["functions"]["0000:09:00.0"]["port_type"] == "pcie_to_pci_bridge"


def test_lspci_k_shows_no_capability_so_acs_is_unknown_not_absent():
    parsed = parse_lspci_vvv((LSPCI / "delaunay_lspci_k_driver_lines_only_pex8747_vega20_cx4lx.txt").read_text())
    switch, nic = parsed["functions"]["0000:04:08.0"], parsed["functions"]["0000:21:00.0"]
    assert "PEX 8747" in switch["description"] and "ConnectX-4 Lx" in nic["description"]
    reasons = {entry["unreadable"] for entry in parsed["functions"].values()}
    assert reasons == {"only its Subsystem and kernel driver lines are in the text (lspci -k, or lspci filtered by grep): its "
                       "capabilities, ACS and ATS, are not shown",
                       "only its one-line listing is in the text (lspci without -vvv, or a listing filtered by grep): its ACS and "
                       "ATS are not shown"}
    assert switch["unreadable"].startswith("only its Subsystem and kernel driver lines")


def test_a_bug_reports_later_listing_does_not_make_a_whole_block_look_cut():
    """nvidia-bug-report: 01:00.1's block (Power Management, MSI, Express; then its hex dump) is whole; that lspci -nn lists
    it again as the report's last line does not make it the end of a cut text."""
    parsed = parse_lspci_vvv((LSPCI / "nvidia_bug_report_quadro_k2200_lspci_v_xxx_then_t_and_nn_audio_function_listed_last.txt").read_text())
    audio = parsed["functions"]["0000:01:00.1"]
    assert (audio["acs"], audio["ats"], audio["unreadable"]) == (None, None, None)


def test_a_grep_that_kept_no_acs_line_leaves_every_function_unknown():
    """lspci -v | grep PCI: headers, and one "Capabilities: [a4] Subsystem" line under a few, without lspci's Flags line."""
    parsed = parse_lspci_vvv((LSPCI / "ubuntuforums_2015_r730_tesla_k10_lspci_v_grep_PCI_pex8747.txt").read_text())
    functions = parsed["functions"]
    assert len(functions) == 20 and all(entry["unreadable"] for entry in functions.values())
    assert functions["0000:04:08.0"]["unreadable"].startswith("its Capabilities lines stand without lspci's Flags (-v) or Control")
    assert functions["0000:00:03.0"]["unreadable"].startswith("only its one-line listing is in the text")


def test_an_acs_capability_without_its_registers_is_unknown():
    parsed = parse_lspci_vvv((LSPCI / "linux-pci_alexw_raptorlake_grep-headers-and-acs-capability-only.txt").read_text())
    functions = parsed["functions"]
    assert functions["0000:00:1c.0"]["unreadable"] is None and functions["0000:00:1c.0"]["acs"] is None  # no ACS listed
    for address in ("0000:00:1c.1", "0000:00:1c.2", "0000:00:1c.3"):
        assert functions[address]["unreadable"] == ("its Access Control Services capability is listed but no complete ACSCap/ACSCtl "
                                                    "lines follow it (lspci -v instead of -vvv, or the text was cut, filtered by grep "
                                                    "or its lines broken)")
    # A mail archive's quoted-printable soft breaks cut the ACS lines of a root port that redirects:
    # noted, and unknown, not "no ACS".
    mail = parse_lspci_vvv((LSPCI / "linux-pci-2023-09-19_schroeder_skylake-rootport_quoted-printable.txt").read_text())
    port = mail["functions"]["0000:64:00.0"]
    assert (port["port_type"], port["acs"]) == ("root_port", None) and port["unreadable"].startswith("its Access Control Services")
    notes = [n.split(": ", 1)[1] for n in mail["notes"]]
    assert notes == ["ACSCap without all seven ACS flags; not read", "ACSCtl without all seven ACS flags; not read"]


LISTED_ONLY = ("only its one-line listing is in the text (lspci without -vvv, or a listing filtered by grep): "
               "its ACS and ATS are not shown")


def test_a_function_only_in_a_one_line_listing_is_unknown_not_without_acs():
    # A switch's ports shown by lspci -nns only, after the one port shown with -vvv: unknown, not "no ACS".
    switch = parse_lspci_vvv((LSPCI / "kvm_2023_matisse_switch_access_denied_then_root_acs_then_nns_listing.txt").read_text())["functions"]
    redirect = dict(REDIRECT, translation_blocking=False, p2p_egress_control=False, direct_translated_p2p=False)
    assert switch["0000:03:02.0"]["acs"]["control"] == redirect
    assert switch["0000:03:05.0"]["unreadable"].startswith("lspci could not read its capabilities")
    assert sorted(address for address, function in switch.items() if function["unreadable"] == LISTED_ONLY) == [
        "0000:02:00.0", "0000:03:01.0", "0000:03:03.0", "0000:03:06.0", "0000:03:08.0", "0000:03:09.0", "0000:03:0a.0"]
    # lspci | grep MT lists both functions of a ConnectX-5; lspci -s 81:00.0 -vv shows only the first.
    cx5 = parse_lspci_vvv((LSPCI / "lkml_2023_kunpeng_cx5_lspci_grep_listing_then_s_vv_quoted_printable.txt").read_text())["functions"]
    assert (cx5["0000:81:00.0"]["port_type"], cx5["0000:81:00.0"]["unreadable"]) == ("endpoint", None)
    assert (cx5["0000:81:00.1"]["acs"], cx5["0000:81:00.1"]["unreadable"]) == (None, LISTED_ONLY)


def test_mail_pastes_quoted_and_wrapped_are_read_whole():
    # Quoted "> " as in a reply: the endpoint and its ATS (off) are read.
    quoted = parse_lspci_vvv((LSPCI / "linux-pci-2019-08-06_cameron_ccix_quoted-reply_ats-disabled_partial.txt").read_text())
    assert list(quoted["functions"]) == ["0000:03:00.0"]
    assert quoted["functions"]["0000:03:00.0"]["port_type"] == "endpoint"
    assert quoted["functions"]["0000:03:00.0"]["ats"] == {"enabled": False, "invalidate_queue_depth": 0, "smallest_translation_unit": 0}
    # Wrapped at 72 and 80 columns: an ACS line broken before its last flags is joined again.
    wrapped = parse_lspci_vvv((LSPCI / "linux-serial-2019-07-23_bogdanov_skylake_lspci-vv_mail-wrapped-72col_acs-split_partial.txt").read_text())
    root_port = wrapped["functions"]["0000:00:1c.0"]
    assert root_port["port_type"] == "root_port" and root_port["unreadable"] is None and wrapped["notes"] == []
    assert [name for name, on in sorted(root_port["acs"]["capable"].items()) if on] == [
        "p2p_completion_redirect", "p2p_request_redirect", "source_validation", "translation_blocking"]
    assert not any(root_port["acs"]["control"].values())
    assert wrapped["functions"]["0000:00:02.0"]["port_type"] == "root_complex_endpoint"
    hca = parse_lspci_vvv((LSPCI / "netdev-2019-04-30_qiancai_cx4lx_hpe_lspci-vvv_prompt_elision_80col-wrap_acs-split_partial.txt").read_text())
    function = hca["functions"]["0000:0b:00.0"]
    assert (function["port_type"], function["unreadable"]) == ("endpoint", None)
    assert function["acs"]["control"] == {key: False for key in function["acs"]["control"]} and len(function["acs"]["control"]) == 7


def test_a_function_that_no_longer_answers_is_unreadable_not_without_acs():
    parsed = parse_lspci_vvv((LSPCI / "stable-2025-12-23_guo_cx5_link-disabled_unknown-header-7f_quoted-printable_partial.txt").read_text())
    gone = parsed["functions"]["0000:3f:00.0"]
    assert (gone["acs"], gone["ats"]) == (None, None)
    assert gone["unreadable"] == ("the function does not answer configuration reads (lspci: '!!! Unknown header type 7f'): "
                                  "it has fallen off the bus or is held in reset")


def test_lspci_v_names_the_port_type_and_leaves_acs_unknown():
    parsed = parse_lspci_vvv((LSPCI / "netdev-2021-02-23_brouer_cx5ex_lspci-v_capabilities-listed-no-registers_8-space.txt").read_text())
    assert sorted(parsed["functions"]) == ["0000:03:00.0", "0000:03:00.1"]
    for function in parsed["functions"].values():
        assert (function["port_type"], function["acs"]) == ("endpoint", None)
        assert function["unreadable"].startswith("its Access Control Services capability is listed but no complete ACSCap/ACSCtl "
                                                 "lines follow it (lspci -v instead of -vvv")


def test_grep_pastes_in_other_indentations_and_a_paste_that_starts_inside_a_device():
    mixed = parse_lspci_vvv((LSPCI / "nccl-629_grep-acsctl_mixed_no-prompt_partial.txt").read_text())
    assert mixed["functions"] == {} and len(mixed["unattributed"]) == 15
    assert sum(1 for u in mixed["unattributed"] if u["value"]["p2p_request_redirect"]) == sum(
        1 for line in (LSPCI / "nccl-629_grep-acsctl_mixed_no-prompt_partial.txt").read_text().splitlines() if "ReqRedir+" in line)
    partial = parse_lspci_vvv((LSPCI / "rockchip-pcie-devices-6_plx-pex8725_domain_8-space_partial.txt").read_text())
    assert [u["field"] for u in partial["unattributed"]] == ["ACSCap", "ACSCtl"]  # before any header: nobody's
    assert list(partial["functions"]) == ["0000:02:08.0"]


@pytest.mark.parametrize("text", ["", "just some words\nand more", "ACSCtl: SrcValid+\n"])
def test_text_without_a_device_or_acs_line_is_one_sentence(text):
    if text.startswith("ACSCtl"):
        parsed = parse_lspci_vvv(text)  # an ACS line with too few flags is not read, and said
        assert parsed["unattributed"] == [{"line": 1, "field": "ACSCtl", "value": None}]
        return
    with pytest.raises(LspciTextError, match=r"^no 'BB:DD.F class: name' device header and no ACSCtl/ATSCtl line"):
        parse_lspci_vvv(text)


def test_config_space_acs_ats_and_port_type_round_trip():
    parsed = parse_config_space(config_space("downstream_port", acs_control=REDIRECT, ats_enabled=True))
    assert parsed["port_type"] == "downstream_port" and parsed["extended"] is True and parsed["notes"] == []
    assert enabled(parsed["acs"]["control"]) == sorted(REDIRECT)
    assert enabled(parsed["acs"]["capable"]) == sorted(name for name, _words in path_reader.ACS_BITS)
    assert parsed["ats"] == {"invalidate_queue_depth": 0, "enabled": True, "smallest_translation_unit": 0}
    bare = parse_config_space(config_space("endpoint"))
    assert (bare["acs"], bare["ats"], bare["port_type"]) == (None, None, "endpoint")


def test_a_looping_or_stray_capability_list_ends_with_a_note():
    data = bytearray(config_space("root_port", acs_control={}))
    data[0x102:0x104] = (0x100 << 4).to_bytes(2, "little")  # ACS points back at itself
    looped = parse_config_space(bytes(data))
    assert looped["acs"] is not None
    assert looped["notes"] == ["the extended capability list points at 0x100, which is not a capability; the walk stops there"]
    data[0x102:0x104] = (0xffc << 4 & 0xffff).to_bytes(2, "little")
    stray = parse_config_space(bytes(data))
    assert stray["notes"][0].startswith("the extended capability list points at 0x")


def test_reads_that_say_why_there_is_no_acs():
    assert config_from_read(config_space()[:64], 4096, "/x/config") == (
        None, "not readable without root: only 64 of the 4096 bytes of /x/config could be read (the capabilities past byte 64 need "
              "CAP_SYS_ADMIN)")
    assert config_from_read(config_space(size=256), 256, "/x/config")[1].startswith(
        "/x/config holds 256 bytes: no PCIe extended configuration space")
    assert config_from_read(b"\xff" * 4096, 4096, "/x/config") == (None, "/x/config reads all ones: the function does not answer")


def test_iommu_group_types(tmp_path):
    tree = PciTree(tmp_path)
    translated = tree.function(["0000:00:01.0"], iommu=(7, "DMA-FQ"))
    passthrough = tree.function(["0000:00:02.0"], iommu=(8, "identity"))
    old_kernel = tree.function(["0000:00:03.0"], iommu=(9, None))
    no_iommu = tree.function(["0000:00:04.0"])
    assert read_iommu(translated) == {"group": 7, "type": "DMA-FQ", "mode": "translated", "reason": None}
    assert read_iommu(passthrough)["mode"] == "passthrough"
    assert read_iommu(old_kernel)["mode"] == "unknown" and read_iommu(old_kernel)["reason"].endswith("has no type file (kernel older than 5.11)")
    assert read_iommu(no_iommu)["mode"] == "off"


def switch_tree(tmp_path, gpu_port_acs=None, ats=False, iommu="identity"):
    """A GPU and mlx5_0 on two downstream ports of one PCIe switch under root port 3a:00.0."""
    tree = PciTree(tmp_path)
    tree.hca("mlx5_0", [ROOT, UP, DOWN_HCA, HCA], config=config_space(ats_enabled=ats), iommu=(20, iommu))
    tree.gpu([ROOT, UP, DOWN_GPU, GPU], config=config_space(ats_enabled=ats), iommu=(21, iommu))
    tree.bridge_files([ROOT, UP, DOWN_GPU], config=config_space("downstream_port", acs_control=REDIRECT if gpu_port_acs is None else gpu_port_acs))
    tree.bridge_files([ROOT, UP, DOWN_HCA], config=config_space("downstream_port", acs_control={}))
    tree.bridge_files([ROOT, UP], config=config_space("upstream_port", acs_control={}))
    return tree


def test_reader_finds_the_path_and_reads_every_function_on_it(tmp_path):
    switch_tree(tmp_path)
    facts = read_pcie_path(str(tmp_path), FACTS)
    assert (facts["available"], facts["reason"], facts["source"]) == (True, None, "sysfs config space")
    assert facts["paths"] == [{"gpu": GPU, "hca": "mlx5_0", "hca_address": HCA, "relation": "same_pcie_switch",
                               "bridges": [DOWN_GPU, UP, DOWN_HCA], "shared_bridge": UP}]
    functions = facts["functions"]
    assert {a: f["role"] for a, f in functions.items()} == {GPU: "gpu", HCA: "hca", DOWN_GPU: "bridge", UP: "bridge", DOWN_HCA: "bridge"}
    assert enabled(functions[DOWN_GPU]["acs"]["control"]) == sorted(REDIRECT)
    assert functions[HCA]["device"] == "mlx5_0" and functions[HCA]["iommu"]["mode"] == "passthrough"
    assert functions[GPU]["ats"]["enabled"] is False


def test_reader_from_saved_lspci_text(tmp_path):
    switch_tree(tmp_path)
    text = ("%s PCI bridge: PLX Technology, Inc. PEX 8747\n\tCapabilities: [40] Express (v2) Downstream Port (Slot+), MSI 00\n"
            "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n" % DOWN_GPU[5:])
    facts = read_pcie_path(str(tmp_path), FACTS, lspci_text=text, lspci_source="/saved/lspci.txt")
    assert facts["source"] == "lspci -vvv (/saved/lspci.txt)"
    assert facts["functions"][DOWN_GPU]["port_type"] == "downstream_port"
    assert enabled(facts["functions"][DOWN_GPU]["acs"]["control"]) == sorted(REDIRECT)
    assert facts["functions"][HCA]["unreadable"] == "%s is not in the lspci text" % HCA
    broken = read_pcie_path(str(tmp_path), FACTS, lspci_text="nothing useful", lspci_source="/saved/lspci.txt")
    assert broken["available"] is False and broken["reason"].startswith("/saved/lspci.txt: no 'BB:DD.F class: name' device header")


def test_reader_from_lspci_run_without_root_says_so_for_the_bridge(tmp_path):
    switch_tree(tmp_path)
    text = "%s PCI bridge: PLX Technology, Inc. PEX 8747\n\tCapabilities: <access denied>\n" % DOWN_GPU[5:]
    facts = read_pcie_path(str(tmp_path), FACTS, lspci_text=text, lspci_source="/saved/lspci.txt")
    assert facts["functions"][DOWN_GPU]["acs"] is None
    assert facts["functions"][DOWN_GPU]["unreadable"].endswith("lspci -vvv must run as root")


def test_without_a_gpu_there_is_no_path_and_it_says_so(tmp_path):
    PciTree(tmp_path).hca("mlx5_0", [ROOT, HCA], config=config_space())
    facts = read_pcie_path(str(tmp_path), FACTS)
    assert (facts["available"], facts["applicable"], facts["paths"]) == (False, False, [])
    assert facts["reason"] == "no GPU on this node's PCI tree: no GPU-to-HCA path to check"


def test_unreadable_config_space_everywhere_is_the_reason(tmp_path):
    switch_tree(tmp_path)
    for address in (GPU, HCA, DOWN_GPU, DOWN_HCA, UP):
        os.unlink(os.path.realpath(os.path.join(tmp_path, "bus", "pci", "devices", address, "config")))
    facts = read_pcie_path(str(tmp_path), FACTS)
    assert (facts["available"], facts["applicable"]) == (False, True) and facts["reason"].endswith("/config does not exist")


def test_the_tree_of_lspci_t_is_refused_with_what_to_run_instead():
    with pytest.raises(LspciTextError, match=r"^this is the tree lspci -t prints, which shows no capability: ACS and ATS need lspci -vvv$"):
        parse_lspci_vvv((LSPCI / "lkml-2024-01-29_icelake_h800_lspci-tv_tree_partial.txt").read_text())


def test_lspci_PP_names_a_function_behind_bridges_by_its_path():
    parsed = parse_lspci_vvv((LSPCI / "linux_pci_2026_lspci_PP_nnvvv_path_headers_navi_switch_titan_ridge_thunderbolt_switch_iommu_groups.txt")
                             .read_text())
    functions = parsed["functions"]
    assert len(functions) == 33 and parsed["notes"] == []
    assert (functions["0000:00:1f.5"]["port_type"], functions["0000:00:1f.5"]["acs"], functions["0000:00:1f.5"]["iommu_group"]) == (None, None, 10)
    navi_switch = functions["0000:02:00.0"]
    assert (navi_switch["port_type"], navi_switch["iommu_group"]) == ("downstream_port", 1)
    assert enabled(navi_switch["acs"]["control"]) == [
        "p2p_completion_redirect", "p2p_request_redirect", "source_validation", "upstream_forwarding"]
    thunderbolt = functions["0000:08:04.0"]
    assert enabled(thunderbolt["acs"]["control"]) == ["source_validation", "upstream_forwarding"]
    assert (functions["0000:03:00.0"]["port_type"], functions["0000:03:00.0"]["ats"]["enabled"]) == ("legacy_endpoint", False)


def test_lspci_P_takes_a_steps_bus_from_the_bridge_above_it():
    text = ("00:1c.4 PCI bridge: Intel Corporation Device a33c (rev f0) (prog-if 00 [Normal decode])\n"
            "\tBus: primary=00, secondary=07, subordinate=0a, sec-latency=0\n"
            "00:1c.4/00.0 PCI bridge: Intel Corporation JHL7540 Thunderbolt 3 Bridge (rev 06)\n"
            "\tCapabilities: [100 v1] Access Control Services\n"
            "\t\tACSCap:\tSrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-\n"
            "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-\n"
            "00:1d.0/00.0 Non-Volatile memory controller: Sandisk Corp Device 5006\n"
            "\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n")
    parsed = parse_lspci_vvv(text)
    assert sorted(parsed["functions"]) == ["0000:00:1c.4", "0000:07:00.0"]
    assert enabled(parsed["functions"]["0000:07:00.0"]["acs"]["control"]) == ["source_validation", "upstream_forwarding"]
    assert parsed["notes"] == ["line 7: 00:1d.0/00.0 names its function by a path whose bus the text does not give; its lines are "
                               "not read"]
    assert [entry["line"] for entry in parsed["unattributed"]] == [8]


def test_a_block_an_elision_cut_is_unknown_even_with_a_capability_shown():
    parsed = parse_lspci_vvv((LSPCI / "linux_pci_2021_hand_made_comparison_bracket_elisions_root_port_acs_cut.txt").read_text())
    root_port = parsed["functions"]["0000:00:1d.0"]
    assert root_port["acs"] is None and root_port["unreadable"].startswith("its lines are cut by an elision")


def test_lspci_xxxx_hex_is_read_as_configuration_space():
    fiji = parse_lspci_vvv((LSPCI / "pciutils_tests_cap_rebar_fiji_gpu_lspci_xxxx_hex_only_ats_enabled.txt").read_text())
    gpu = fiji["functions"]["0000:09:00.0"]
    assert (gpu["port_type"], gpu["acs"], gpu["ats"]["enabled"], gpu["unreadable"]) == ("legacy_endpoint", None, True, None)
    # Its text lists no extended capability, its dump proves there is none: no ACS, no ATS, nothing unknown.
    bridge = parse_lspci_vvv((LSPCI / "pciutils_tests_cap_exp_rev_slot_pci_x_to_pcie_bridge_vvv_and_4096_byte_dump_no_extended_caps.txt")
                             .read_text())["functions"]["0000:01:0a.0"]
    assert (bridge["port_type"], bridge["acs"], bridge["ats"], bridge["unreadable"]) == ("pci_to_pcie_bridge", None, None, None)
    broken = parse_lspci_vvv((LSPCI / "pciutils_tests_broken_ecaps_host_bridge_lspci_xxxx_hex_only_corrupt_extended_list.txt")
                             .read_text())["functions"]["0000:00:00.0"]
    assert broken["acs"] is None and broken["unreadable"].startswith("its hex dump's list of extended capabilities is broken")
    # lspci -xxx's 256 bytes end before the extended space: ACS and ATS are unknown, not absent.
    short = "\n".join(fiji_text_line for fiji_text_line in
                      (LSPCI / "pciutils_tests_cap_rebar_fiji_gpu_lspci_xxxx_hex_only_ats_enabled.txt").read_text().splitlines()[:17])
    first_256 = parse_lspci_vvv(short)["functions"]["0000:09:00.0"]
    assert (first_256["port_type"], first_256["ats"]) == ("legacy_endpoint", None)
    assert first_256["unreadable"].startswith("its hex dump holds 256 bytes of configuration space")


def test_an_express_line_a_mail_wrapped_inside_the_port_type_still_names_it():
    parsed = parse_lspci_vvv((LSPCI / "pdx86_2025_alder_lake_igpu_express_rciep_line_wrapped_by_mail_partial.txt").read_text())
    assert parsed["functions"]["0000:00:02.0"]["port_type"] == "root_complex_endpoint"


def test_a_256_byte_dump_without_a_pci_express_capability_is_a_conventional_function():
    parsed = parse_lspci_vvv((LSPCI / "pciutils_tests_tree_fujitsu_lspci_xxxx_4096_byte_bridge_then_256_byte_conventional_graphics_partial.txt")
                             .read_text())
    for address in ("0000:00:02.0", "0000:00:02.1"):  # no extended space, so no ACS and no ATS: known, not unreadable
        assert {key: parsed["functions"][address][key] for key in ("port_type", "acs", "ats", "unreadable")} == {
            "port_type": None, "acs": None, "ats": None, "unreadable": None}


def test_capability_lines_cut_before_their_header_are_said_to_be_so():
    """lspci -vvv's own lines with nothing to attribute them to: refused, but as a cut paste, not as another tool's text."""
    with pytest.raises(LspciTextError, match=r"^lspci -vvv's capability lines without a 'BB:DD.F class: name' device header and without "
                                             r"an ACSCtl/ATSCtl line: nothing to read of a function \(a paste cut before its device's header\?\)$"):
        parse_lspci_vvv((LSPCI / "popos-gcc-132_capability_lines_cut_before_the_header_pcilib_vpd_error_partial.txt").read_text())
    with pytest.raises(LspciTextError, match=r"this is not lspci -vvv output$"):
        parse_lspci_vvv("hello world\n")


def test_a_block_whose_status_says_cap_plus_cut_before_its_capabilities_is_not_read_as_without_acs():
    functions = parse_lspci_vvv((LSPCI / "sbsa-acs-515_qemu_sbsa_ref_82574l_status_cap_plus_block_cut_in_its_regions_partial.txt")
                                .read_text())["functions"]
    entry = functions["0000:00:01.0"]
    assert (entry["acs"], entry["ats"], entry["iommu_group"]) == (None, None, 1)
    assert entry["unreadable"].startswith("its lines are cut (an elision such as \"(...)\", or the end of the text) before any Capabilities line")


def test_an_authors_arrow_after_a_header_is_no_part_of_the_description():
    functions = parse_lspci_vvv((LSPCI / "zh-blog-h20_pex890xx_cx6lx_listing_author_arrows_after_headers.txt").read_text())["functions"]
    assert functions["0000:c1:00.0"]["description"] == "PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)"
    assert not any("<--" in entry["description"] for entry in functions.values())
