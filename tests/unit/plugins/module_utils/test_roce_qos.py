"""RoCE QoS, read only: ECN from the real sysfs tree of prometheus/procfs, dcb from iproute2's own
examples, a kernel commit's show/set/show session, a one-line several-attribute show and JSON in the
shape dcb's source prints, mlnx_qos from a real script log with two outputs and from pastes of
several MLNX_OFED releases (a priority on two DSCP rows, firmware DCBX, grouped and strict TCs, a
flattened community page), and the combination per netdev with the reasons for what is missing."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.rdma.node.plugins.module_utils._roce_qos import (
    QosTextError,
    parse_dcb_app,
    parse_dcb_apptrust,
    parse_dcb_pfc,
    parse_mlnx_qos,
    qos_of_netdev,
    read_ecn,
    read_roce_qos,
    read_roce_qos_subset,
    roce_netdevs,
    run_queries,
    saved_outputs,
)
from ansible_collections.rdma.node.plugins.module_utils._query_commands import is_query_argv
from testpaths import FIXTURES

QOS = FIXTURES / "roce_qos"
FACTS = {"devices": {"mlx5_2": {}}, "ports": [
    {"device": "mlx5_2", "port": 1, "link_layer": "Ethernet", "netdevs": ["eth0"]},
    {"device": "mlx5_0", "port": 1, "link_layer": "InfiniBand", "netdevs": ["ib0"]}]}


def sysfs_with_ecn(tmp_path, netdev="eth0"):
    target = tmp_path / "class" / "net" / netdev / "ecn"
    shutil.copytree(QOS / "procfs_eth0_ecn", target)
    return str(tmp_path)


# JSON as dcb prints it (dcb/dcb_pfc.c and dcb_app.c of iproute2: on/off arrays as JSON booleans,
# every app pair followed by a " " string). No DCB-capable netdev exists on the test machine, so
# these are built from that source, not recorded; the real dcb's handling of the same argv is in
# tests/integration/test_physical_real_parts.py.
DCB_PFC_JSON = json.dumps({"pfc_cap": 8, "macsec_bypass": False, "delay": 0,
                           "prio_pfc": [False, False, False, True, False, False, False, False]})
DCB_APP_JSON = json.dumps({"dscp_prio": [[26, 3, " "], [48, 6, " "]], "default_prio": [0]})


def test_ecn_of_the_procfs_tree(tmp_path):
    ecn = read_ecn(sysfs_with_ecn(tmp_path), "eth0")
    assert ecn == {"np": [0, 1, 3, 4, 6, 7], "rp": [0, 1, 3, 4, 6], "np_read": list(range(8)), "rp_read": list(range(8)), "reason": None}


def test_ecn_missing_or_garbled_says_why(tmp_path):
    assert read_ecn(str(tmp_path), "eth1")["reason"].endswith("eth1/ecn does not exist: the driver exposes no ECN settings (not mlx5, or a VF)")
    root = sysfs_with_ecn(tmp_path)
    (tmp_path / "class/net/eth0/ecn/roce_np/enable/3").write_text("yes\n")
    ecn = read_ecn(root, "eth0")
    assert 3 not in ecn["np_read"] and ecn["reason"].endswith("roce_np/enable/3 holds 'yes', expected 0 or 1")


def app_table(dscp, default=(), **others):
    """What parse_dcb_app gives: every selector's map (empty unless named), the default priorities."""
    table = {key: {} for key in ("dscp_prio", "pcp_prio", "ethtype_prio", "stream_port_prio", "dgram_port_prio", "port_prio")}
    return dict(table, dscp_prio=dscp, default_prio=list(default), **others)


def test_dcb_pfc_man_page_example_and_json():
    assert parse_dcb_pfc((QOS / "iproute2-man_dcb-pfc_show_prio6-7_prompt.txt").read_text()) == {
        "enabled_priorities": [6, 7], "pfc_cap": 8, "macsec_bypass": False, "delay": 4096}
    assert parse_dcb_pfc(DCB_PFC_JSON)["enabled_priorities"] == [3]


def test_dcb_app_names_and_numbers_read_the_same():
    named = parse_dcb_app((QOS / "iproute2-man_dcb-app_show_dscp_names_prompt.txt").read_text())
    numeric = parse_dcb_app((QOS / "iproute2-man_dcb-app_show_dscp_numeric_prompt.txt").read_text())
    assert named == numeric == app_table({"0": [0], "24": [2, 3], "48": [6]})
    assert parse_dcb_app(DCB_APP_JSON) == app_table({"26": [3], "48": [6]}, default=[0])
    assert parse_dcb_app("") == app_table({})  # an empty table prints nothing


def test_dcb_apptrust_text_and_json():
    assert parse_dcb_apptrust("order: pcp dscp \n") == {"order": ["pcp", "dscp"]}
    assert parse_dcb_apptrust('{"order":["dscp"]}') == {"order": ["dscp"]}


def test_dcb_pfc_commands_between_outputs_are_not_output():
    # hns3's fix: show (all off), a `dcb pfc set` of priorities 0-3, show again (all on: the bug it fixed).
    parsed = parse_dcb_pfc((QOS / "linux-hns3-commit-8c1671e0_dcb-pfc_show-set-show_pfc-cap4.txt").read_text())
    assert parsed == {"enabled_priorities": [0, 1, 2, 3, 4, 5, 6, 7], "pfc_cap": 4, "macsec_bypass": False, "delay": 0}


def test_dcb_app_commands_between_outputs_are_not_output_and_the_last_show_is_read():
    felix = parse_dcb_app((QOS / "netdev-2022-03-11-oltean_felix_dcb-app_show-replace-show_numbered-prompts.txt").read_text())
    assert felix == app_table({"16": [2], "24": [5]}, default=[3])
    # Two `dcb app add` commands, then the shows of eth0 (63:2) and eth1 (63:1 63:2): the last output.
    sparx5 = parse_dcb_app((QOS / "netdev-2023-03-07-machon_sparx5_dcb-app_two-adds-then-shows-of-two-netdevs.txt").read_text())
    assert sparx5 == app_table({"63": [1, 2]})


def test_dcb_app_port_and_ethtype_selectors_are_its_output():
    # A Broadcom RoCE host maps RoCEv2's UDP port (dgram-port-prio 4791:3) with its DSCP; dcb_app.c
    # prints each selector on its own line, an EtherType in hexadecimal (%x:) in text and in decimal in JSON.
    text = "$ dcb app show dev ens1f0np0\nethtype-prio 8906:3\ndscp-prio CS3:3 AF31:3\ndgram-port-prio 4791:3\nport-prio 4791:5\n"
    assert parse_dcb_app(text) == app_table({"24": [3], "26": [3]}, ethtype_prio={"35078": [3]}, dgram_port_prio={"4791": [3]},
                                            port_prio={"4791": [5]})
    assert parse_dcb_app("dgram-port-prio 4791:3\n") == app_table({}, dgram_port_prio={"4791": [3]})
    as_json = '{"ethtype_prio":[[35078,3," "]],"stream_port_prio":[[4791,2," "]],"dgram_port_prio":[[4791,3," "]]}'
    assert parse_dcb_app(as_json) == app_table({}, ethtype_prio={"35078": [3]}, stream_port_prio={"4791": [2]}, dgram_port_prio={"4791": [3]})
    with pytest.raises(QosTextError, match=r"^dcb app show: 'zz' is neither a number nor a DSCP/PCP name dcb prints$"):
        parse_dcb_app("ethtype-prio zz:3\n")


def test_another_tools_text_is_no_empty_dcb_app_table():
    # An empty dcb app table would make the trust mode pcp by inference: lldptool's output must not pass for one.
    with pytest.raises(QosTextError, match=r"^dcb app show: no app table line \(dscp-prio, pcp-prio, default-prio, ethtype-prio or a port's\), "
                                           r"and 'IEEE 8021QAZ PFC TLV' is not its output$"):
        parse_dcb_app((QOS / "netdev-2020-05-29-ciornei_dpaa2_lldptool_pfc_not_dcb_app.txt").read_text())
    assert parse_dcb_app("") == parse_dcb_app("$ dcb app show dev eth0\n") == app_table({})


def test_dcb_several_attributes_on_one_line_and_app_names_in_a_service_log():
    text = (QOS / "talos-roce-dcb-readme_service-log_pfc-one-line_app-names.txt").read_text()
    assert parse_dcb_pfc(text) == {"enabled_priorities": [3], "pfc_cap": 8, "macsec_bypass": None, "delay": 0}
    assert parse_dcb_app(text) == app_table({"26": [3], "48": [6]})
    with pytest.raises(QosTextError, match=r"^dcb apptrust show: no 'order:' line"):  # "trust order on X: dscp pcp" is the log's
        parse_dcb_apptrust(text)


@pytest.mark.parametrize("name", [
    "netdev-2024-09-30-idosch_dcb-j-p-app-show-dscp-prio_two-json-outputs_after-app-add.txt",
    # The same, quoted in a reply: "> " before every line.
    "netdev-2024-09-30-gnault-reply_quoted-gt_dcb-j-p-app-show-dscp-prio_two-json-outputs.txt",
])
def test_dcb_json_shown_twice_in_a_mail_is_read_as_its_last_output(name):
    assert parse_dcb_app((QOS / name).read_text()) == app_table({"8": [0], "16": [1]})


def test_dcb_json_of_two_different_runs_reads_the_last_and_a_cut_one_is_refused():
    first = '# dcb -j app show dev swp1\n{"dscp_prio":[[8,0," "]]}\n'
    second = '# dcb -j app show dev swp1\n{"dscp_prio":[[16,1," "]]}\n$ echo ${PS1}\n'
    assert parse_dcb_app(first + second)["dscp_prio"] == {"16": [1]}
    with pytest.raises(QosTextError, match=r"^dcb app show: the output starts like JSON but is not JSON \(it ends before its closing brace"):
        parse_dcb_app('{"dscp_prio":[[8,0," "]')


def test_dcb_apptrust_and_pcp_names_of_the_man_pages_and_a_joined_prompt():
    assert parse_dcb_apptrust((QOS / "iproute2-man_dcb-apptrust_show_prompt.txt").read_text()) == {"order": ["port", "pcp", "ethtype"]}
    joined = (QOS / "netdev-apptrust-cover-letter-v3_show-prompt-and-output-one-line.txt").read_text()
    assert parse_dcb_apptrust(joined) == {"order": ["ethtype", "stream-port", "pcp"]}
    # PCP names with the drop-eligible bit: 1nd is PCP 1, 2de is PCP 2 + 8.
    assert parse_dcb_app((QOS / "iproute2-man_dcb-app_pcp-prio_prompt.txt").read_text())["pcp_prio"] == {"1": [1], "10": [2]}


def test_mlnx_qos_a_priority_on_two_dscp_rows_after_a_setting_command():
    parsed = parse_mlnx_qos((QOS / "cnnotes-ens14f0_pfc-echo_dscp_prio6-two-rows.txt").read_text())
    assert parsed["dscp_prio"]["30"] == [6] and parsed["dscp_prio"]["48"] == [6] and parsed["dscp_prio"]["26"] == [3]
    assert len(parsed["dscp_prio"]) == 64
    assert (parsed["enabled_priorities"], parsed["pfc_buffer"]) == ([3], [0, 2, 5, 7, 1, 2, 3, 6])
    assert parsed["receive_buffers"] == [80256, 80256, 896, 80256, 896, 896, 896, 896] and parsed["receive_buffer_max"] is None
    assert parsed["notes"] == ["line 1 runs mlnx_qos with --pfc, which writes: the table after it shows what that command set"]


@pytest.mark.parametrize("separator", ["\t", " ", ", ", ",\t"])
def test_mlnx_qos_dscp_values_a_paste_separated_with_whitespace_are_still_each_its_own(separator):
    """A tab or a space where mlnx_qos printed a comma (a terminal's copy, an editor's tab) separates two DSCP
    values; it neither joins them (19 18 as DSCP 1918) nor fails the parse."""
    text = (QOS / "cnnotes-ens14f0_pfc-echo_dscp_prio6-two-rows.txt").read_text()
    row = next(line for line in text.splitlines() if line.strip().startswith("prio:3"))
    pasted = text.replace(row, row.replace(",", separator, 2))
    assert pasted != text
    assert parse_mlnx_qos(pasted)["dscp_prio"] == parse_mlnx_qos(text)["dscp_prio"]


def test_mlnx_qos_a_dscp_value_above_63_is_one_sentence():
    text = (QOS / "cnnotes-ens14f0_pfc-echo_dscp_prio6-two-rows.txt").read_text()
    row = next(line for line in text.splitlines() if line.strip().startswith("prio:3"))
    with pytest.raises(QosTextError, match=r"^mlnx_qos -i: the prio:3 dscp row holds 1918, not a DSCP value \(0-63\): 'prio:3 dscp:"):
        parse_mlnx_qos(text.replace(row, row.replace("dscp:", "dscp:1918,", 1)))


def test_mlnx_qos_firmware_dcbx_buffer_limit_and_grouped_tcs():
    parsed = parse_mlnx_qos((QOS / "cnblog-mce0_firmware-dcbx_max-buffer-size_grouped-tcs.txt").read_text())
    assert (parsed["dcbx_mode"], parsed["trust"], parsed["enabled_priorities"]) == ("Firmware controlled", "dscp", [3])
    assert (parsed["receive_buffers"], parsed["receive_buffer_max"]) == ([130944, 130944, 0, 0, 0, 0, 0, 0], 262016)
    assert parsed["tcs"] == {"0": {"ratelimit": "unlimited", "tsa": "ets", "bw_percent": 50, "priorities": [0, 1, 2, 4, 5, 7]},
                             "3": {"ratelimit": "unlimited", "tsa": "ets", "bw_percent": 50, "priorities": [3]},
                             "6": {"ratelimit": "unlimited", "tsa": "vendor", "bw_percent": None, "priorities": [6]}}
    assert parsed["notes"] == []


def test_mlnx_qos_empty_default_priority_and_strict_tcs():
    parsed = parse_mlnx_qos((QOS / "cn3fs-ens4np0_default-priority-empty_pfc5_ets-strict_prompt.txt").read_text())
    assert (parsed["enabled_priorities"], parsed["cable_len"], parsed["receive_buffer_max"]) == ([5], 30, 4151520)
    assert parsed["dscp_prio"]["40"] == [5] and parsed["dscp_prio"]["48"] == [6]
    assert [parsed["tcs"][tc]["tsa"] for tc in "01234567"] == ["ets"] * 4 + ["strict"] * 4
    assert [parsed["tcs"][tc]["bw_percent"] for tc in "0123"] == [9, 1, 80, 10]


def test_mlnx_qos_ofed_4_2_community_page_single_spaced_with_blank_lines():
    parsed = parse_mlnx_qos((QOS / "mellanox-community-DOC-2792_ofed42_eth2_ets_flattened-page.txt").read_text())
    assert (parsed["trust"], parsed["enabled_priorities"], parsed["pfc_buffer"]) == ("dscp", [0, 2, 6, 7], None)
    assert all(tc["priorities"] for tc in parsed["tcs"].values()) and len(parsed["tcs"]) == 8


def test_mlnx_qos_of_an_older_ofed_without_dcbx_and_trust_lines():
    """MLNX_OFED 3.x's mlnx_qos starts at 'PFC configuration:': PFC is read, the trust mode is said to be missing."""
    parsed = parse_mlnx_qos((QOS / "cnrdma-eth35_ofed33_no-dcbx-no-trust_skprio_4space.txt").read_text())
    assert (parsed["trust"], parsed["dcbx_mode"], parsed["enabled_priorities"]) == (None, None, [])
    assert sorted(parsed["tcs"]) == [str(tc) for tc in range(8)] and parsed["tcs"]["1"]["priorities"] == [0]
    assert {tc["tsa"] for tc in parsed["tcs"].values()} == {"vendor"}
    assert parsed["notes"] == ["the output has no 'Priority trust state:' line (an older mlnx_qos prints none): the trust mode is not in it"]
    echoed = parse_mlnx_qos((QOS / "cnrdma-eth35_ofed33_pfc-echo_prio4_row-misaligned.txt").read_text())
    assert echoed["enabled_priorities"] == [4]
    assert echoed["notes"][0] == "line 1 runs mlnx_qos with --pfc, which writes: the table after it shows what that command set"


def test_an_older_mlnx_qos_gives_pfc_and_says_why_the_trust_mode_is_unknown(tmp_path):
    text = (QOS / "cnrdma-eth35_ofed33_no-dcbx-no-trust_skprio_4space.txt").read_text()
    entry = qos_of_netdev(str(tmp_path), "eth35", {"mlnx_qos": (text, None)})
    assert entry["pfc"] == {"enabled_priorities": [], "source": "mlnx_qos -i", "reason": None}
    assert entry["trust"]["mode"] is None and "mlnx_qos -i printed no 'Priority trust state:' line" in entry["trust"]["reason"]


def test_mlnx_qos_script_log_reads_the_last_output():
    parsed = parse_mlnx_qos((QOS / "netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md").read_text())
    assert parsed["notes"] == ["line 5 runs mlnx_qos with --trust, which writes: the table after it shows what that command set",
                               "line 42 runs mlnx_qos with --pfc, which writes: the table after it shows what that command set",
                               "the text holds 2 mlnx_qos outputs; the last one (from line 43) is read"]
    assert (parsed["trust"], parsed["dcbx_mode"], parsed["enabled_priorities"], parsed["cable_len"]) == ("dscp", "OS controlled", [3], 7)
    assert parsed["dscp_prio"]["26"] == [3] and len(parsed["dscp_prio"]) == 64
    assert parsed["tcs"]["0"] == {"ratelimit": "unlimited", "tsa": "vendor", "bw_percent": None, "priorities": [1]}


@pytest.mark.parametrize("parser, text, message", [
    (parse_dcb_pfc, "pfc-cap 8 macsec-bypass off delay 0\n", r"^dcb pfc show: no prio-pfc line"),
    (parse_dcb_pfc, "prio-pfc 0:off 1:on\n", r"^dcb pfc show: the prio-pfc line does not give on/off for priorities 0 to 7"),
    (parse_dcb_pfc, '{"prio_pfc": [true]}', r"^dcb pfc show: the JSON has no prio_pfc list of 8 true/false values$"),
    (parse_dcb_pfc, '{"prio_pfc": [tru', r"^dcb pfc show: the output starts like JSON but is not JSON"),
    (parse_dcb_app, "dscp-prio BOGUS:3\n", r"^dcb app show: 'BOGUS' is neither a number nor a DSCP/PCP name dcb prints$"),
    (parse_dcb_apptrust, "Object \"apptrust\" is unknown, try \"dcb help\".", r"^dcb apptrust show: no 'order:' line"),
    (parse_mlnx_qos, "Interface name is required\n", r"^mlnx_qos -i: no line starts with 'Priority trust state:', 'DCBX mode:' or 'PFC configuration:'"),
    # A web page's copy that lost every line break: the words are there, glued, and no line starts with them.
    (parse_mlnx_qos, "[root@l-csi-0835d ~]# mlnx_qos -i enp4s0f1DCBX mode: OS controlledPriority trust state: pcpdefault priority:",
     r"^mlnx_qos -i: no line starts with"),
    (parse_mlnx_qos, "Priority trust state: dscp\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0 1\n",
     r"^mlnx_qos -i: the PFC enabled row does not hold 8 numbers"),
    (parse_mlnx_qos, None, r"^mlnx_qos -i: expected text, got NoneType$"),
])
def test_garbage_is_one_sentence(parser, text, message):
    with pytest.raises(QosTextError, match=message):
        parser(text)


def test_crlf_paste_reads_the_same():
    text = (QOS / "netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md").read_text().replace("\n", "\r\n")
    assert parse_mlnx_qos(text)["enabled_priorities"] == [3]


def test_dcb_wins_and_the_trust_is_inferred_from_its_dscp_map_without_apptrust(tmp_path):
    outputs = {"dcb_pfc": (DCB_PFC_JSON, None), "dcb_app": (DCB_APP_JSON, None),
               "dcb_apptrust": (None, 'dcb -j apptrust show dev eth0 exited with 1: Object "apptrust" is unknown'),
               "mlnx_qos": (None, "mlnx_qos could not be run: No such file or directory")}
    entry = qos_of_netdev(sysfs_with_ecn(tmp_path), "eth0", outputs)
    assert entry["pfc"] == {"enabled_priorities": [3], "source": "dcb pfc show", "reason": None}
    assert entry["trust"] == {"mode": "dscp", "source": "dcb app show", "inferred": True}
    assert entry["dscp_prio"] == {"26": [3], "48": [6]}


def test_mlnx_qos_alone_gives_pfc_and_trust(tmp_path):
    text = (QOS / "netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md").read_text()
    entry = qos_of_netdev(str(tmp_path), "eth0", {"mlnx_qos": (text, None)})
    assert entry["pfc"]["source"] == entry["trust"]["source"] == "mlnx_qos -i"
    assert entry["notes"][-1] == "the text holds 2 mlnx_qos outputs; the last one (from line 43) is read"
    assert entry["ecn"]["reason"].endswith("ecn does not exist: the driver exposes no ECN settings (not mlx5, or a VF)")


def test_nothing_answered_says_every_reason(tmp_path):
    entry = qos_of_netdev(str(tmp_path), "eth0", {})
    assert entry["pfc"]["enabled_priorities"] is None
    assert entry["pfc"]["reason"] == ("dcb_pfc was not run and no saved output was given; dcb_app was not run and no saved output was "
                                      "given; dcb_apptrust was not run and no saved output was given; mlnx_qos was not run and no "
                                      "saved output was given")


def test_runner_passes_only_queries_and_keeps_failures_as_reasons():
    seen = []

    def run(argv):
        seen.append(argv)
        if argv[0] == "mlnx_qos":
            raise FileNotFoundError(2, "No such file or directory")
        if argv[2] == "apptrust":
            return 255, "", 'Object "apptrust" is unknown, try "dcb help".\n'
        return 0, DCB_PFC_JSON if argv[2] == "pfc" else DCB_APP_JSON, ""

    outputs = run_queries("eth0", run)
    assert seen == [["dcb", "-j", "pfc", "show", "dev", "eth0"], ["dcb", "-j", "app", "show", "dev", "eth0"],
                    ["dcb", "-j", "apptrust", "show", "dev", "eth0"], ["mlnx_qos", "-i", "eth0"]]
    assert outputs["dcb_apptrust"] == (None, 'dcb -j apptrust show dev eth0 exited with 255: Object "apptrust" is unknown, try "dcb help".')
    assert outputs["mlnx_qos"] == (None, "mlnx_qos could not be run: No such file or directory")
    assert run_queries("eth0 --pfc 0", run)["mlnx_qos"] == (None, "mlnx_qos: 'eth0 --pfc 0' is not a network interface name")


def test_saved_outputs_fill_what_the_tools_did_not_give(tmp_path):
    saved = tmp_path / "saved"
    saved.mkdir()
    shutil.copy(QOS / "netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md", saved / "eth0_mlnx_qos.txt")
    outputs = saved_outputs(str(saved), "eth0", {"dcb_pfc": (DCB_PFC_JSON, None), "mlnx_qos": (None, "mlnx_qos is not installed")})
    assert outputs["dcb_pfc"] == (DCB_PFC_JSON, None)
    assert outputs["mlnx_qos"][1] is None and outputs["mlnx_qos"][0].startswith("```")
    assert outputs["dcb_app"] == (None, "no saved eth0_dcb_app.json or eth0_dcb_app.txt in %s" % saved)


def test_reader_covers_the_roce_netdevs_only(tmp_path):
    root = sysfs_with_ecn(tmp_path)
    facts = read_roce_qos(root, FACTS, {"eth0": {"dcb_pfc": (DCB_PFC_JSON, None)}})
    assert facts["available"] is True and sorted(facts["netdevs"]) == ["eth0"]
    assert (facts["netdevs"]["eth0"]["device"], facts["netdevs"]["eth0"]["port"]) == ("mlx5_2", 1)
    ib_only = read_roce_qos(root, {"ports": [{"device": "mlx5_0", "port": 1, "link_layer": "InfiniBand", "netdevs": ["ib0"]}]})
    assert ib_only == {"available": False, "reason": "no RoCE (Ethernet link layer) port with a netdev", "netdevs": {}}
    os.makedirs(tmp_path / "empty")
    nothing = read_roce_qos(str(tmp_path / "empty"), FACTS)
    assert nothing["available"] is False
    assert nothing["reason"] == "neither ECN in sysfs nor a PFC/trust output for any RoCE netdev"


class ToolsOnPath:
    """The two module methods the query runner uses: every tool found, each argv answered by ``answer``
    (no DCB-capable netdev exists here; the real dcb is run in tests/integration/test_physical_real_parts.py)."""

    def __init__(self, answer):
        self.answer = answer

    def get_bin_path(self, name):
        return "/usr/sbin/" + name

    def run_command(self, argv, environ_update=None):
        return self.answer([argv[0].rsplit("/", 1)[-1]] + list(argv[1:]))


def test_a_roce_bond_is_judged_by_its_slaves_whose_qos_the_queries_and_saved_outputs_give(tmp_path):
    """RoCE LAG: the port's netdev is bond0, which has no ECN files and no DCB; its slaves carry the QoS."""
    root = tmp_path / "sys"
    for slave in ("ens1f0np0", "ens1f1np1"):
        sysfs_with_ecn(root, slave)
        os.symlink("../bond0", root / "class" / "net" / slave / "master")
    os.makedirs(root / "class" / "net" / "bond0")
    bond_facts = {"ports": [{"device": "mlx5_bond_0", "port": 1, "link_layer": "Ethernet", "netdevs": ["bond0"]}]}
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "ens1f0np0_dcb_pfc.json").write_text(DCB_PFC_JSON)
    asked = []
    module = ToolsOnPath(lambda argv: asked.append(argv) or (0, DCB_PFC_JSON if argv[2] == "pfc" else DCB_APP_JSON, ""))
    facts = {"ports": bond_facts["ports"]}
    read_roce_qos_subset(facts, {"sysfs_root": str(root), "roce_qos_tools": True, "roce_qos_dir": str(saved)}, module)
    qos = facts["roce_qos"]
    assert sorted(qos["netdevs"]) == ["ens1f0np0", "ens1f1np1"]
    assert {n: (e["device"], e["port"], e["bond"]) for n, e in qos["netdevs"].items()} == {
        "ens1f0np0": ("mlx5_bond_0", 1, "bond0"), "ens1f1np1": ("mlx5_bond_0", 1, "bond0")}
    assert qos["netdevs"]["ens1f1np1"]["ecn"]["np"] == [0, 1, 3, 4, 6, 7]
    assert qos["netdevs"]["ens1f1np1"]["pfc"]["enabled_priorities"] == [3]
    # Only queries, and only of the slaves: never of the bond, which would answer nothing.
    assert {argv[-1] for argv in asked} == {"ens1f0np0", "ens1f1np1"} and all(is_query_argv(argv) for argv in asked)
    # Without a sysfs root to find the slaves (or for a netdev that is no bond) the netdev stands for itself.
    assert roce_netdevs(bond_facts) == {"bond0": ("mlx5_bond_0", 1, None)}


def test_mlnx_qos_elided_after_its_dscp_map_says_pfc_is_cut_not_missing(tmp_path):
    # Husky's README: mlnx_qos -i rdma0 up to the DSCP map, then "... # many other outputs" where the PFC table would be.
    text = (QOS / "husky-readme_rdma0_dscp-map-then-ellipsis-many-other-outputs_tilde-fence.txt").read_text()
    parsed = parse_mlnx_qos(text)
    assert (parsed["trust"], parsed["dcbx_mode"], parsed["enabled_priorities"], parsed["tcs"]) == ("dscp", "OS controlled", None, {})
    assert parsed["dscp_prio"] == {str(dscp): [dscp // 8] for dscp in range(64)}
    assert parsed["notes"] == ["line 14 ('... # many other outputs') elides the rest of the output: its PFC table is not in the text, "
                               "so PFC is not known"]
    entry = qos_of_netdev(str(tmp_path), "rdma0", {"mlnx_qos": (text, None), "dcb_pfc": (None, None), "dcb_app": (None, None),
                                                   "dcb_apptrust": (None, None)})
    assert entry["pfc"] == {"enabled_priorities": None, "source": None, "reason": "the mlnx_qos -i output is cut before its PFC table"}
    assert entry["trust"] == {"mode": "dscp", "source": "mlnx_qos -i", "inferred": False}


def test_mlnx_qos_an_elision_before_the_pfc_table_is_only_a_gap():
    # Constructed from the netarbiter fixture: a "..." line in its last output before its PFC table; PFC is still read, no note.
    text = (QOS / "netarbiter_setup-nic-lossless-layer3_xtrace_two_outputs.md").read_text()
    head, pfc, tail = text.rpartition("PFC configuration:")
    parsed = parse_mlnx_qos(head + "...\n" + pfc + tail)
    assert parsed["enabled_priorities"] == parse_mlnx_qos(text)["enabled_priorities"] == [3]
    assert not any("elides" in note for note in parsed["notes"])
