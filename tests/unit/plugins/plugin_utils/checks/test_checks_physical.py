"""The node_health checks of the physical layer, on facts the real readers make from PCI trees and
from the real samples, called as the registry calls them (facts, params, found)."""

from __future__ import annotations

import json
import shutil

import pytest
import sysfs_tree
from pci_tree import PciTree, aer_text, config_space
from physical_samples import mlxlink_json

from ansible_collections.rdma.node.plugins.module_utils._health_collect import kernel_log_facts
from ansible_collections.rdma.node.plugins.module_utils._link_quality import read_link_quality
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import read_aer, totals_sample
from ansible_collections.rdma.node.plugins.module_utils._pcie_path import read_pcie_path
from ansible_collections.rdma.node.plugins.module_utils._roce_qos import read_roce_qos
from ansible_collections.rdma.node.plugins.plugin_utils import _registry
from ansible_collections.rdma.node.plugins.plugin_utils._checks import physical
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_physical import links as report_links
from testpaths import FIXTURES

HCA_FACTS = {"devices": {"mlx5_0": {"numa_node": 0}}, "ports": [{"device": "mlx5_0", "port": 1, "link_layer": "InfiniBand"}]}
ROOT, UP, DOWN_GPU, DOWN_HCA, GPU, HCA = "0000:3a:00.0", "0000:3b:00.0", "0000:3c:00.0", "0000:3c:08.0", "0000:3e:00.0", "0000:3d:00.0"
REDIRECT = {"source_validation": True, "p2p_request_redirect": True, "p2p_completion_redirect": True, "upstream_forwarding": True}


def judge(check, rdma, **params):
    """Run one registered check the way the registry does and return its findings as tuples."""
    entry = next(c for c in _registry.checks("node_health") if c.name == check)
    found = _registry.Found("node_health", check)
    entry.function({"rdma": rdma}, {name: params.get(name) for name in entry.params}, found)
    # What a check could not judge is no finding; it is shown beside them, as the report shows it.
    return [(f["severity"], f["subject"], f["message"]) for f in found.items] + [
        ("info", entry["subject"], "not checked: %s" % entry["reason"]) for entry in found.unjudged]


def test_checks_declare_the_fact_paths_they_read():
    reads = {c.name: c.reads for c in _registry.checks("node_health") if c.function.__module__.endswith("physical")}
    assert reads == {"pcie_aer": ("rdma.aer",), "pcie_p2p_redirect": ("rdma.pcie_path",), "pcie_ats": ("rdma.pcie_path",),
                     "iommu_mode": ("rdma.pcie_path",), "roce_qos": ("rdma.roce_qos",), "link_ber": ("rdma.link_quality",),
                     "link_module": ("rdma.link_quality",), "link_down_duration": ("rdma.kernel_log",)}


def test_fact_reads_a_dotted_path_of_the_top_level_facts():
    assert physical.fact({"rdma": {"aer": 1}}, "rdma.aer") == 1
    assert physical.fact({"rdma": None}, "rdma.aer") is None


# --------------------------------------------------------------------------- AER


def aer_tree(tmp_path, fatal=0, correctable=0):
    tree = PciTree(tmp_path)
    tree.hca("mlx5_0", [ROOT, HCA], aer={"correctable": aer_text("correctable", RxErr=correctable),
                                         "nonfatal": aer_text("nonfatal"), "fatal": aer_text("fatal", SDES=fatal)})
    return str(tmp_path)


def test_aer_new_fatal_errors_are_critical_and_correctable_over_the_limit_a_warning(tmp_path):
    earlier = read_aer(aer_tree(tmp_path / "a"), HCA_FACTS, now=1000.0)
    later = read_aer(aer_tree(tmp_path / "b", fatal=1, correctable=30), HCA_FACTS, now=1600.0)
    later["earlier"] = totals_sample(earlier)
    findings = judge("pcie_aer", {"aer": later}, aer_correctable_limit="1/min")
    assert [(s, subject) for s, subject, _m in findings] == [("critical", HCA), ("warning", HCA)]
    assert findings[0][2] == ("mlx5_0 (PCI 0000:3d:00.0) counted 1 new fatal PCIe error (0 to 1 between the samples of this run; types "
                              "with counts: SDES): an uncorrectable error on the link, after which the HCA may have reset or lost "
                              "transactions; check the card, slot and riser, and the link partner (errors are counted where they are seen).")
    assert findings[1][2].startswith("mlx5_0 (PCI 0000:3d:00.0) counted correctable PCIe errors at 3 per minute (0 to 30 between the "
                                     "samples of this run), above the limit of 1 per minute")
    assert judge("pcie_aer", {"aer": later}, aer_correctable_limit="5/min")[1:] == []  # 3 per minute is within 5


def test_aer_against_the_previous_run_and_without_any_earlier_sample(tmp_path):
    earlier = totals_sample(read_aer(aer_tree(tmp_path / "a", fatal=2), HCA_FACTS, now=10.0))
    later = read_aer(aer_tree(tmp_path / "b", fatal=2), HCA_FACTS, now=20.0)
    assert judge("pcie_aer", {"aer": later}, previous_aer_sample=earlier) == []  # no rise: old errors are not new
    alone = judge("pcie_aer", {"aer": later})
    assert alone == [("warning", HCA, "mlx5_0 (PCI 0000:3d:00.0) has counted 2 fatal PCIe errors since the kernel booted (types with "
                                      "counts: SDES); there is no earlier sample to tell whether they are recent.")]


def test_aer_not_available_is_not_checked_with_the_reason(tmp_path):
    PciTree(tmp_path).hca("mlx5_0", [ROOT, HCA])
    findings = judge("pcie_aer", {"aer": read_aer(str(tmp_path), HCA_FACTS)})
    assert findings == [("info", "PCIe AER", "not checked: no AER statistics in sysfs: the kernel is older than 4.19, AER is off "
                                             "(pci=noaer, or the firmware keeps it), or these functions are not AER-capable")]


def test_aer_real_procfs_counts_on_a_root_port(tmp_path):
    tree = PciTree(tmp_path)
    tree.hca("mlx5_0", [ROOT, HCA], aer={"correctable": aer_text("correctable")})
    tree.bridge_files([ROOT], aer={kind: (FIXTURES / ("pcie/aer/procfs_0000-00-1f.6_aer_dev_%s" % kind)).read_text()
                                   for kind in ("correctable", "nonfatal", "fatal")})
    findings = judge("pcie_aer", {"aer": read_aer(str(tmp_path), HCA_FACTS)})
    assert [(s, subject) for s, subject, _m in findings] == [("warning", ROOT), ("warning", ROOT)]
    assert findings[0][2].startswith("the root port 0000:3a:00.0 above mlx5_0 has counted 28 fatal PCIe errors since the kernel booted")
    assert findings[1][2].startswith("the root port 0000:3a:00.0 above mlx5_0 has counted 48 nonfatal PCIe errors")


# --------------------------------------------------------------------------- PCIe path


def switch(tmp_path, gpu_port_acs=None, ats=False, iommu="identity", hca_chain=(ROOT, UP, DOWN_HCA, HCA)):
    tree = PciTree(tmp_path)
    tree.hca("mlx5_0", list(hca_chain), config=config_space(ats_enabled=ats), iommu=(20, iommu))
    tree.gpu([ROOT, UP, DOWN_GPU, GPU], config=config_space(ats_enabled=ats), iommu=(21, iommu))
    tree.bridge_files([ROOT, UP, DOWN_GPU], config=config_space("downstream_port", acs_control=REDIRECT if gpu_port_acs is None else gpu_port_acs))
    tree.bridge_files([ROOT, UP], config=config_space("upstream_port", acs_control={}))
    if hca_chain[:3] == (ROOT, UP, DOWN_HCA):
        tree.bridge_files([ROOT, UP, DOWN_HCA], config=config_space("downstream_port", acs_control={}))
    return read_pcie_path(str(tmp_path), HCA_FACTS)


def test_acs_redirect_on_the_gpus_switch_port_names_the_bridge_and_the_cost(tmp_path):
    findings = judge("pcie_p2p_redirect", {"pcie_path": switch(tmp_path)})
    assert findings == [("warning", "%s-mlx5_0" % GPU,
                         "Peer-to-peer traffic between GPU 0000:3e:00.0 and mlx5_0 (0000:3d:00.0) cannot turn at bridge 0000:3b:00.0: "
                         "the switch downstream port 0000:3c:00.0 has P2P Request Redirect (ReqRedir+) and P2P Completion Redirect "
                         "(CmpltRedir+) set in its ACS control, so GPUDirect RDMA between them goes up to the root complex and back "
                         "(through the IOMMU) instead of across the PCIe switch, which costs bandwidth and latency and can hang NCCL. "
                         "On bare metal turn ACS off in the BIOS or with setpci; under a hypervisor it must stay on (then use ATS).")]
    assert judge("pcie_p2p_redirect", {"pcie_path": switch(tmp_path / "b")}, acs_redirect_severity="critical")[0][0] == "critical"


def test_acs_off_or_no_shared_bridge_is_no_finding(tmp_path):
    assert judge("pcie_p2p_redirect", {"pcie_path": switch(tmp_path / "off", gpu_port_acs={})}) == []
    apart = switch(tmp_path / "apart", hca_chain=("0000:80:00.0", HCA))  # the HCA under another root complex
    assert apart["paths"][0]["relation"] in ("same_numa_node", "cross_numa")
    assert judge("pcie_p2p_redirect", {"pcie_path": apart}) == []


def test_a_path_that_could_not_be_read_is_not_checked_and_no_gpu_is_nothing_to_check(tmp_path):
    switch(tmp_path)
    broken = read_pcie_path(str(tmp_path), HCA_FACTS, lspci_text="no lspci here", lspci_source="/saved/lspci.txt")
    assert judge("pcie_p2p_redirect", {"pcie_path": broken}) == [
        ("info", "GPU-HCA path", "not checked: /saved/lspci.txt: no 'BB:DD.F class: name' device header and no ACSCtl/ATSCtl line: "
                                 "this is not lspci -vvv output")]
    PciTree(tmp_path / "nogpu").hca("mlx5_0", [ROOT, HCA], config=config_space())
    assert judge("pcie_p2p_redirect", {"pcie_path": read_pcie_path(str(tmp_path / "nogpu"), HCA_FACTS)}) == []


def test_acs_unreadable_without_root_is_not_checked(tmp_path):
    facts = switch(tmp_path)
    for address in (DOWN_GPU, UP, DOWN_HCA):
        facts["functions"][address].update(acs=None, unreadable="not readable without root: only 64 of the 4096 bytes")
    assert judge("pcie_p2p_redirect", {"pcie_path": facts}) == [
        ("info", "%s-mlx5_0" % GPU, "not checked: the ACS settings of 3 bridges could not be read: 0000:3c:00.0 (not readable "
                                    "without root: only 64 of the 4096 bytes); 0000:3b:00.0 (not readable without root: only 64 of "
                                    "the 4096 bytes); 0000:3c:08.0 (not readable without root: only 64 of the 4096 bytes)")]


def test_ats_on_bare_metal_and_off_in_a_vm(tmp_path):
    enabled = switch(tmp_path / "on", ats=True)
    findings = judge("pcie_ats", {"pcie_path": enabled})
    assert [(s, subject) for s, subject, _m in findings] == [("warning", HCA), ("warning", GPU)]
    assert findings[0][2].startswith("HCA mlx5_0 (PCI 0000:3d:00.0) has PCIe ATS enabled. On bare metal NVIDIA's network configuration "
                                     "keeps ATS off for GPUDirect RDMA (mlxconfig ATS_ENABLED=False is the NIC default)")
    assert judge("pcie_ats", {"pcie_path": enabled}, ats_expected="enabled") == []
    assert judge("pcie_ats", {"pcie_path": enabled}, ats_expected="any") == []
    disabled = judge("pcie_ats", {"pcie_path": switch(tmp_path / "off")}, ats_expected="enabled", ats_severity="critical")
    assert [(s, subject) for s, subject, _m in disabled] == [("critical", HCA), ("critical", GPU)]


def test_iommu_translated_where_passthrough_is_expected(tmp_path):
    translated = switch(tmp_path / "t", iommu="DMA-FQ")
    findings = judge("iommu_mode", {"pcie_path": translated})
    assert findings[0] == ("warning", HCA, "The DMA of HCA mlx5_0 (PCI 0000:3d:00.0) is translated by the IOMMU (domain type DMA-FQ, "
                                           "group 20): every GPUDirect RDMA transfer needs an IOMMU translation, and peer-to-peer "
                                           "through the PCIe switch needs ATS; bare-metal GPU nodes run the IOMMU in passthrough "
                                           "(iommu=pt, domain type identity).")
    assert judge("iommu_mode", {"pcie_path": translated}, iommu_expected="translated") == []
    assert judge("iommu_mode", {"pcie_path": switch(tmp_path / "p")}) == []


# --------------------------------------------------------------------------- RoCE QoS


ROCE_FACTS = {"devices": {"mlx5_2": {}}, "ports": [{"device": "mlx5_2", "port": 1, "link_layer": "Ethernet", "netdevs": ["eth4"]}]}


def roce(tmp_path, with_ecn=True, outputs=True):
    if with_ecn:
        shutil.copytree(FIXTURES / "roce_qos/procfs_eth0_ecn", tmp_path / "class/net/eth4/ecn")
    text = (FIXTURES / "roce_qos/netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md").read_text()
    return read_roce_qos(str(tmp_path), ROCE_FACTS, {"eth4": {"mlnx_qos": (text, None)}} if outputs else None)


DEFAULTS = {"roce_pfc_priorities": [3], "roce_trust": "dscp", "roce_ecn_priorities": [3]}


def test_the_real_lossless_configuration_meets_the_default_expectation(tmp_path):
    assert judge("roce_qos", {"roce_qos": roce(tmp_path)}, **DEFAULTS) == []


def test_qos_that_differs_from_the_group(tmp_path):
    qos = roce(tmp_path)
    findings = judge("roce_qos", {"roce_qos": qos}, roce_pfc_priorities=[4], roce_trust="pcp", roce_ecn_priorities=[7])
    assert findings == [
        ("critical", "eth4", "eth4 has PFC on priorities 3 (from mlnx_qos -i), the group expects 4: RoCE traffic on priority 4 is dropped "
                             "instead of paused under congestion"),
        ("critical", "eth4", "eth4 trusts dscp (from mlnx_qos -i), the group expects pcp: packets are classified to the wrong priority, "
                             "so PFC and ECN on the RoCE priority do not protect them."),
        ("warning", "eth4", "eth4 has ECN off on priority 7 for the DCQCN reaction point (slows down on CNPs): congestion is left to PFC "
                            "alone, which spreads pauses through the fabric.")]
    extra = judge("roce_qos", {"roce_qos": qos}, roce_pfc_priorities=[])  # an empty expectation is not checked
    assert extra == []


def test_qos_that_could_not_be_read_is_not_checked(tmp_path):
    findings = judge("roce_qos", {"roce_qos": roce(tmp_path, with_ecn=False, outputs=False)}, **DEFAULTS)
    assert [m.split(":")[0] for _s, _subject, m in findings] == ["not checked"] * 3
    assert findings[0][2].startswith("not checked: PFC of eth4: dcb_pfc was not run and no saved output was given;")
    assert findings[2][2].endswith("eth4/ecn does not exist: the driver exposes no ECN settings (not mlx5, or a VF)")
    assert judge("roce_qos", {"roce_qos": {"available": False, "netdevs": {}}}, **DEFAULTS) == []  # an InfiniBand node


# --------------------------------------------------------------------------- link quality


def quality(tmp_path, **kwargs):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "mlx5_0_1.json").write_text(mlxlink_json(**kwargs))
    return read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]}, saved_dir=str(tmp_path))


def test_ber_limits_of_oci_hpc(tmp_path):
    assert judge("link_ber", {"link_quality": quality(tmp_path / "a")}) == []
    bad = judge("link_ber", {"link_quality": quality(tmp_path / "b", effective="3E-11", raw="2E-4")})
    assert [(s, subject) for s, subject, _m in bad] == [("critical", "mlx5_0/1"), ("warning", "mlx5_0/1")]
    assert bad[0][2].startswith("mlx5_0/1: effective BER 3.0e-11 after FEC is above 1e-12: errors get past forward error correction")
    assert bad[1][2] == ("mlx5_0/1: raw BER 2.0e-04 before FEC is above 1e-05: FEC still corrects it, but the link runs close to its margin "
                         "(per-lane raw errors [3, 0, 12, 0]).")
    assert judge("link_ber", {"link_quality": quality(tmp_path / "c", raw="2E-4")}, raw_ber_max=1e-3) == []


def test_lane_faults_and_readings_out_of_the_modules_range(tmp_path):
    findings = judge("link_module", {"link_quality": quality(tmp_path, rx_los=("0", "0", "1", "1"), temperature="81 [-5..75]")})
    assert findings == [
        ("critical", "mlx5_0/1", "mlx5_0/1: NVIDIA MMA4Z00-NS (OSFP) reports Rx loss of signal on lanes 2, 3: that lane carries no good "
                                 "signal; reseat or replace the cable or transceiver, or check the far end."),
        ("critical", "mlx5_0/1", "mlx5_0/1: NVIDIA MMA4Z00-NS (OSFP) temperature 81 °C is outside the module's own range -5..75 °C: an "
                                 "overheating module shuts its lasers down."),
        ("warning", "mlx5_0/1", "mlx5_0/1: NVIDIA MMA4Z00-NS (OSFP) receive power -9 dBm is outside the module's own range -8..6 dBm.")]


def test_real_module_text_is_within_its_ranges(tmp_path):
    (tmp_path / "mlx5_0_1.txt").write_text((FIXTURES / "link_quality/sichek_mlxlink_m_osfp_module_text.txt").read_text())
    facts = read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]}, saved_dir=str(tmp_path))
    assert judge("link_module", {"link_quality": facts}) == []
    # -m alone prints no counters: the BER is not checked, and says why.
    assert judge("link_ber", {"link_quality": facts}) == [
        ("info", "mlx5_0/1", "not checked: %s printed no BER (the link is down, or --show_counters was not given)" % (tmp_path / "mlx5_0_1.txt"))]


PASSIVE_DAC = "csegpu1_cx7_ib_ndr_show_mo_abbrev_trailing_spaces_osfp_passive_dac_rx_los_flags_prompts.txt"


def test_the_lane_flags_of_a_passive_copper_cable_are_no_fault(tmp_path):
    """A real ConnectX-7 port at NDR over a passive OSFP cable: mlxlink prints Rx LOS and CDR LOL bits for lanes
    that carry traffic; such a cable has nothing that could raise them, so nothing is found."""
    text = (FIXTURES / "link_quality" / PASSIVE_DAC).read_text()
    (tmp_path / "mlx5_0_1.txt").write_text(text)
    facts = read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]}, saved_dir=str(tmp_path))
    assert judge("link_module", {"link_quality": facts}) == []
    # The same flags from an active (optical) module are lanes without signal.
    (tmp_path / "mlx5_0_1.txt").write_text(text.replace("Passive copper cable", "Optical Module (separated)")
                                           .replace("Copper cable, passive, unequalized", "850 nm VCSEL"))
    facts = read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]}, saved_dir=str(tmp_path))
    assert [(severity, message.split(" reports ")[1].split(":")[0]) for severity, _s, message in judge("link_module", {"link_quality": facts})] == [
        ("critical", "Rx CDR loss of lock on lanes 0, 1, 2, 3"), ("critical", "Rx loss of signal on lanes 0, 2, 3")]


def test_an_active_ethernet_port_whose_physical_state_is_its_autonegotiation_has_a_link(tmp_path):
    (tmp_path / "mlx5_0_1.txt").write_text((FIXTURES / "link_quality" /
                                            "magnate3_cx6dx_eth_100g_active_physical_state_eth_an_fsm_enable_prompts.txt").read_text())
    facts = read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]}, saved_dir=str(tmp_path))
    assert (facts["ports"]["mlx5_0/1"]["state"], facts["ports"]["mlx5_0/1"]["physical_state"]) == ("Active", "ETH_AN_FSM_ENABLE")
    assert judge("link_ber", {"link_quality": facts}) == [
        ("info", "mlx5_0/1", "not checked: %s printed no BER (the link is down, or --show_counters was not given)" % (tmp_path / "mlx5_0_1.txt"))]
    assert report_links(facts)["ports"][0]["reason"] == "no BER printed"  # the report says the same, no "no link"


def test_a_port_without_a_link_has_no_ber_to_judge_and_says_so(tmp_path):
    """The demo simulator's output of a Disabled port (mlxlink prints N/A for every BER without a link)."""
    (tmp_path / "mlx5_0_1.json").write_text(sysfs_tree.mlxlink_output({"state": "1: DOWN", "phys_state": "3: Disabled"}, {"module": None}))
    facts = read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]}, saved_dir=str(tmp_path))
    assert judge("link_ber", {"link_quality": facts}) == [
        ("info", "mlx5_0/1", "not checked: no link to measure: mlxlink shows mlx5_0/1 in the physical state Disabled (%s)" % (
            tmp_path / "mlx5_0_1.json"))]
    assert judge("link_module", {"link_quality": facts}) == []  # no cable, no module to judge


def test_no_mlxlink_is_not_checked(tmp_path):
    facts = read_link_quality("/sys", {"devices": {"mlx5_0": {}}, "ports": [{"device": "mlx5_0", "port": 1}]})
    assert judge("link_ber", {"link_quality": facts}) == [
        ("info", "link quality", "not checked: mlxlink was not run (not installed, or not allowed by node_health_mlxlink) and no saved "
                                 "outputs were given")]


# --------------------------------------------------------------------------- link down durations


def log_facts(tmp_path, events):
    lines = ["2026-11-24T%s+0000 n systemd-networkd[1]: ib0: %s carrier" % (moment, state) for moment, state in events]
    return kernel_log_facts("\n".join(lines), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)


def test_gpuds_flap_rule(tmp_path):
    flapping = log_facts(tmp_path, [("01:00:00", "Lost"), ("01:00:30", "Gained"), ("05:00:00", "Lost"), ("05:01:00", "Gained"),
                                    ("09:00:00", "Lost"), ("09:00:26", "Gained")])
    findings = judge("link_down_duration", {"kernel_log": flapping})
    assert findings == [("critical", "mlx5_0/1", "mlx5_0/1 (ib0) is flapping: it went down for 25 s or longer and came back 3 times "
                                                 "within 12 h (2026-11-24T01:00:00+0000 for 30 s, 2026-11-24T05:00:00+0000 for 60 s, "
                                                 "2026-11-24T09:00:00+0000 for 26 s), gpud's rule for a flapping port.")]
    short = log_facts(tmp_path, [("01:00:00", "Lost"), ("01:00:10", "Gained"), ("02:00:00", "Lost"), ("02:00:24", "Gained"),
                                 ("03:00:00", "Lost"), ("03:00:30", "Gained")])
    assert judge("link_down_duration", {"kernel_log": short}) == []  # two long enough, one 10 s and one 24 s
    assert judge("link_down_duration", {"kernel_log": flapping}, flap_count=4) == []
    apart = log_facts(tmp_path, [("01:00:00", "Lost"), ("01:00:30", "Gained"), ("14:00:00", "Lost"), ("14:01:00", "Gained"),
                                 ("14:30:00", "Lost"), ("14:31:00", "Gained")])
    assert judge("link_down_duration", {"kernel_log": apart}) == []  # the first flap is more than 12 h before the last


def test_a_saved_log_in_a_form_the_reader_does_not_know_is_not_checked_not_quiet(tmp_path):
    # Not one record among its lines (a format no form reads): no carrier change is no evidence of a stable link.
    unread = kernel_log_facts("ib0 went down at noon\nib0 came back\n", {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24,
                              "saved", False)
    assert (unread["lines"], unread["records"], unread["unread_lines"]) == (2, 0, 2)
    assert judge("link_down_duration", {"kernel_log": unread}) == [
        ("info", "kernel log", "not checked: none of the 2 lines of the saved kernel log is a kernel log record in a form the reader "
                               "knows (dmesg, /dev/kmsg, journalctl, syslog), so its carrier changes were not read")]
    # A log read whole without a carrier change of the RDMA netdevs is a quiet link, and an empty window nothing to
    # say, also when journalctl says so in its own words.
    quiet = log_facts(tmp_path, [])
    assert judge("link_down_duration", {"kernel_log": quiet}) == []
    nothing = kernel_log_facts("-- No entries --\n", {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "journalctl", True)
    assert (nothing["lines"], nothing["records"], nothing["unread_lines"]) == (1, 0, 0)
    assert judge("link_down_duration", {"kernel_log": nothing}) == []
    other = kernel_log_facts("[  12.5] eth9: Link is Down\n", {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert other["records"] == 1 and judge("link_down_duration", {"kernel_log": other}) == []


def test_an_outage_counted_short_of_the_logs_end_is_not_checked_not_short(tmp_path):
    # The down line has the kernel's clock only and the log's last record a wall-clock time only: how long the link has
    # been down is not known, so no "not a drop" is said.
    log = kernel_log_facts("[  100.000000] mlx5_core 0000:01:00.0 ib0: Link down\nNov 24 01:00:05 n systemd[1]: Started x.\n",
                           {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    note = log["down_periods"]["ib0"]["periods"][0]["note"]
    assert judge("link_down_duration", {"kernel_log": log}) == [
        ("info", "mlx5_0/1", "not checked: how long ib0 has been down since line 1: %s" % note)]


def test_drops_ongoing_and_over(tmp_path):
    facts = log_facts(tmp_path, [("01:00:00", "Lost"), ("01:05:00", "Gained"), ("02:00:00", "Lost"), ("02:10:00", "Lost")])
    # The open loss is measured to the log's last time stamp, 02:10 (a repeated loss is the same loss).
    findings = judge("link_down_duration", {"kernel_log": facts})
    assert findings == [
        ("warning", "mlx5_0/1", "mlx5_0/1 (ib0) was down for 5 min from 2026-11-24T01:00:00+0000 before it came back: a drop of 240 s "
                                "or longer."),
        ("critical", "mlx5_0/1", "mlx5_0/1 (ib0) has been down since 2026-11-24T02:00:00+0000, 10 min by the end of the log: a dropped "
                                 "link (down 240 s or longer), not a flap.")]


def test_real_openwrt_flaps_are_too_short_and_a_log_without_times_is_not_checked(tmp_path):
    text = (FIXTURES / "cmd/kernel_log/openwrt_17351_logread_link_flaps_prompt.txt").read_text()
    facts = kernel_log_facts(text, {"lan": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert judge("link_down_duration", {"kernel_log": facts}) == []
    bare = kernel_log_facts("ib0: Lost carrier\nib0: Gained carrier\n", {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert judge("link_down_duration", {"kernel_log": bare}) == [
        ("info", "mlx5_0/1", "not checked: durations of ib0's carrier losses: line 1 has no time stamp that gives a duration")]
    assert judge("link_down_duration", {"kernel_log": {"error": "journalctl is not installed"}}) == [
        ("info", "kernel log", "not checked: journalctl is not installed")]


@pytest.mark.parametrize("check", ["pcie_aer", "pcie_p2p_redirect", "pcie_ats", "iommu_mode", "link_ber", "link_module",
                                   "link_down_duration"])
def test_every_check_finds_its_planted_fault_and_the_findings_survive_json(check, tmp_path):
    rdma = {"aer": read_aer(aer_tree(tmp_path, fatal=1), HCA_FACTS), "pcie_path": switch(tmp_path / "s", ats=True, iommu="DMA"),
            "link_quality": quality(tmp_path / "q", effective="1E-9", rx_los=("1", "0", "0", "0")),
            "kernel_log": log_facts(tmp_path, [("01:00:00", "Lost"), ("01:06:00", "Lost")])}
    entry = next(c for c in _registry.checks("node_health") if c.name == check)
    found = _registry.Found("node_health", check)
    entry.function({"rdma": rdma}, dict.fromkeys(entry.params), found)
    assert found.items and all(f["severity"] in ("critical", "warning") for f in found.items)
    assert json.loads(json.dumps(found.items, allow_nan=False)) == found.items
