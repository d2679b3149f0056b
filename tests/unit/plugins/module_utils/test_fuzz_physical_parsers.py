"""Fuzzing the physical-layer parsers with hypothesis: random text, and the real samples mutated the
way pastes get mutated (lines dropped, duplicated, cut, CRLF, foreign lines, prompts). The only
exception each parser raises is its documented one, with a one-line message, and what it returns
is plain JSON."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.rdma.node.plugins.module_utils._health_text import carrier_down_periods, parse_carrier_events
from ansible_collections.rdma.node.plugins.module_utils._link_quality import MlxlinkTextError, parse_mlxlink
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import AerTextError, parse_aer_counters
from ansible_collections.rdma.node.plugins.module_utils._pcie_path import LspciTextError, parse_config_space, parse_lspci_vvv
from ansible_collections.rdma.node.plugins.module_utils._roce_qos import (
    QosTextError,
    parse_dcb_app,
    parse_dcb_apptrust,
    parse_dcb_pfc,
    parse_mlnx_qos,
)
from testpaths import FIXTURES

PARSERS = [
    (lambda text: parse_aer_counters(text, "fatal"), AerTextError,
     ["pcie/aer/procfs_0000-00-1f.6_aer_dev_fatal", "pcie/aer/kernel-doc-4.19_long-names_prompt_aer_dev_correctable.txt"]),
    (parse_lspci_vvv, LspciTextError, ["pcie/lspci/openvmm-3461_lspci_s_vv_root_port_elided.txt",
                                       "pcie/lspci/nccl-523_grep_acsctl_prompt_partial.txt"]),
    (parse_dcb_pfc, QosTextError, ["roce_qos/iproute2-man_dcb-pfc_show_prio6-7_prompt.txt"]),
    (parse_dcb_app, QosTextError, ["roce_qos/iproute2-man_dcb-app_show_dscp_names_prompt.txt"]),
    (parse_dcb_apptrust, QosTextError, []),
    (parse_mlnx_qos, QosTextError, ["roce_qos/netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md",
                                    "roce_qos/cnnotes-ens14f0_pfc-echo_dscp_prio6-two-rows.txt"]),
    (parse_mlxlink, MlxlinkTextError, ["link_quality/sichek_mlxlink_m_osfp_module_text.txt",
                                       "link_quality/lshca-11_mlxlink_json_cx5_ib_edr_prompt_cut.txt"]),
]
SAMPLES = [(FIXTURES / name).read_text() for _p, _e, names in PARSERS for name in names] + [
    (FIXTURES / "link_down/aznhc_1dev_6flap_syslog_lowercase_lost_carrier.txt").read_text(),
    (FIXTURES / "cmd/kernel_log/openwrt_17351_logread_link_flaps_prompt.txt").read_text()]
FOREIGN = ["2026-11-24T10:00:00+0000 n systemd-networkd[1]: ib0: Lost carrier", "Aug 17 06:18:06 n kernel: ib0: Link up",
           "[  12.5] mlx5_core 0000:3b:00.0 ens1: Link down", "$ sudo cat /sys/bus/pci/devices/0000:3b:00.0/aer_dev_fatal",
           "root@node:~# mlnx_qos -i eth0", "{", "}", "[...]",
           "\ttc: 9 ratelimit: , tsa:", "prio-pfc 0:on", "ACSCtl:\tReqRedir+", "Temperature [C] : hot [..]", "TOTAL_ERR_FATAL -1",
           "dscp-prio CS3:", "Module Info", "-----", "ATSCtl:\tEnable+, Smallest Translation Unit: zz", "٣ ٤"]


@st.composite
def pasted(draw):
    lines = draw(st.sampled_from(SAMPLES)).splitlines()
    for _mutation in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["drop", "dup", "cut", "insert", "separator"]))
        if not lines:
            break
        index = draw(st.integers(0, len(lines) - 1))
        if action == "drop":
            del lines[index]
        elif action == "dup":
            lines.insert(index, lines[index])
        elif action == "cut":
            lines[index] = lines[index][:draw(st.integers(0, max(0, len(lines[index]) - 1)))]
        elif action == "separator":
            # A tab or a space where the tool printed a comma or a colon, as a terminal's copy may give.
            lines[index] = lines[index].replace(draw(st.sampled_from([",", ":"])), draw(st.sampled_from(["\t", " "])), 1)
        else:
            lines.insert(index, draw(st.sampled_from(FOREIGN)))
    return ("\r\n" if draw(st.booleans()) else "\n").join(lines)


TEXTS = st.one_of(pasted(), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))


def check(parser, error, text):
    try:
        result = parser(text)
    except error as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    json.dumps(result, allow_nan=False)


@settings(max_examples=250, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_parsers_raise_only_their_error_and_return_plain_json(text):
    for parser, error, _names in PARSERS:
        check(parser, error, text)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(data=st.binary(max_size=4200))
def test_config_space_bytes_never_crash_the_walk(data):
    parsed = parse_config_space(data)
    json.dumps(parsed, allow_nan=False)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(text=TEXTS)
def test_down_periods_of_any_log_are_plain_json(text):
    periods = carrier_down_periods(parse_carrier_events(text)["events"])
    json.dumps(periods, allow_nan=False)
    for entry in periods.values():
        assert all(p["seconds"] >= 0 for p in entry["periods"])
