"""mlxlink's link quality: real outputs (rdma_exporter's MFT 4.34 --json -m -c of a ConnectX-7 OSFP
port, with FEC/SerDes/eye sections, and of a PCIe port; a BlueField-3 text read of a copper cable
without monitoring; sichek's coloured counters and OSFP module text; an NVLink port's default
sections; a JSON paste that was cut off), JSON in the shape mlxlink's source writes (mstflint
mlxlink_cmd_print.cpp: sections of text fields, per-lane fields as {"values": [...]}), and the
collection that runs the tool only through the query gate or reads saved outputs."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.module_utils._link_quality import (
    MlxlinkTextError,
    parse_mlxlink,
    parse_reading,
    read_link_quality,
)
from physical_samples import mlxlink_json
from testpaths import FIXTURES

LINK = FIXTURES / "link_quality"
FACTS = {"devices": {"mlx5_0": {}, "mlx5_1": {}, "mlx5_2": {"virtual_function": True}},
         "ports": [{"device": "mlx5_0", "port": 1}, {"device": "mlx5_1", "port": 1}, {"device": "mlx5_2", "port": 1}]}


def test_real_module_text_with_the_modules_own_ranges():
    facts = parse_mlxlink((LINK / "sichek_mlxlink_m_osfp_module_text.txt").read_text())
    module = facts["module"]
    assert (module["identifier"], module["vendor"], module["part_number"]) == ("OSFP", "CLT", "T-F4GS-BV0")
    assert module["temperature_c"] == {"values": [54.0], "low": -5.0, "high": 75.0}
    assert module["rx_power_dbm"] == {"values": [1.886, 1.989, 2.281, 1.976], "low": -10.41, "high": 6.0}
    assert module["lane_faults"] == {}  # this output has no per-lane fault fields
    assert (facts["effective_ber"], facts["raw_ber"], facts["sections"]) == (None, None, ["Module Info"])


def test_real_json_paste_cut_off_is_one_sentence():
    with pytest.raises(MlxlinkTextError, match=r"^the output starts like mlxlink --json but is not complete JSON \(.*\); "
                                               r"a cut-off paste or a failed run$"):
        parse_mlxlink((LINK / "lshca-11_mlxlink_json_cx5_ib_edr_prompt_cut.txt").read_text())


def test_fields_that_grep_kept_without_their_sections_are_one_sentence_saying_so():
    with pytest.raises(MlxlinkTextError, match=r"^3 'Field : value' line\(s\) and no section title above them \(such as "
                                               r"'Operational Info'\): not mlxlink output, or a paste that grep cut down"):
        parse_mlxlink((LINK / "mlxlink_grep_speed_three_fields_without_section_titles_bare_command.txt").read_text())


def test_a_section_title_a_web_page_made_a_heading_is_still_its_title():
    facts = parse_mlxlink((LINK / "blog_cx6_eth_200g_operational_info_as_web_heading_no_underline.txt").read_text())
    assert (facts["sections"], facts["state"], facts["physical_state"], facts["speed"], facts["width"], facts["fec"]) == (
        ["Operational Info"], "Active", "ETH_AN_FSM_ENABLE", "200G", "4x", "Standard RS-FEC (544,514)")
    assert facts["effective_ber"] is None and facts["module"] is None


def test_json_ber_faults_and_readings():
    facts = parse_mlxlink(mlxlink_json(effective="2E-10", raw="3E-5", rx_los=("0", "1", "0", "1")))
    assert (facts["state"], facts["speed"], facts["effective_ber"], facts["raw_ber"]) == ("Active", "IB-NDR", 2e-10, 3e-5)
    assert (facts["raw_errors_per_lane"], facts["link_down_counter"], facts["time_since_last_clear_min"]) == ([3, 0, 12, 0], 1, 5632.5)
    assert facts["module"]["lane_faults"] == {"rx_loss_of_signal": [False, True, False, True], "tx_fault": [False] * 4}
    assert facts["module"]["rx_power_dbm"] == {"values": [0.0, 2.0, -9.0, 0.0], "low": -8.0, "high": 6.0}
    assert facts["status"] == {"code": 0, "message": "success"}


def test_prompt_before_the_json_and_na_values():
    facts = parse_mlxlink("root@node:~# mlxlink -d mlx5_0 --json -m -c\n" + mlxlink_json(effective="N/A", temperature="N/A"))
    assert facts["effective_ber"] is None and facts["module"]["temperature_c"] is None


def test_real_json_of_a_400g_osfp_port_with_per_lane_ber():
    facts = parse_mlxlink((LINK / "rdma_exporter_mft4341_json_m_c_osfp_400g_dr4.json").read_text())
    assert (facts["state"], facts["speed"], facts["width"], facts["fec"]) == ("Active", "400G", "4x", "Standard_RS-FEC - (544,514)")
    # "15E-255" is how mlxlink writes a BER too small to measure: 1.5e-254, nothing over any limit.
    assert (facts["effective_ber"], facts["raw_ber"], facts["effective_errors"]) == (1.5e-254, 5e-10, 0)
    assert facts["raw_ber_per_lane"] == [1e-10, 1e-9, 4e-10, 5e-10]
    assert facts["raw_errors_per_lane"] == [3017647, 15132549, 7368641, 9233545]
    module = facts["module"]
    assert (module["identifier"], module["cable_type"]) == ("OSFP", "Optical Module (separated)")
    assert module["temperature_c"] == {"values": [61.0], "low": -10.0, "high": 80.0}
    assert module["rx_power_dbm"] == {"values": [3.583, 3.253, 3.233, 2.658], "low": -9.914, "high": 6.999}
    assert module["lane_faults"]["rx_cdr_loss_of_lock"] == [False] * 4 and len(module["lane_faults"]) == 6
    assert facts["status"] == {"code": 0, "message": "success"}


def test_real_json_with_fec_serdes_and_eye_sections_reads_the_same_fields():
    facts = parse_mlxlink((LINK / "rdma_exporter_mft4341_json_m_c_fec_serdes_eye_reindented.json").read_text())
    assert {"EYE Opening Info", "Histogram of FEC Errors", "Serdes Tuning Transmitter Info"} <= set(facts["sections"])
    assert (facts["raw_ber"], facts["time_since_last_clear_min"], facts["module"]["vendor"]) == (5e-10, 5710.4, "SAKURA")


def test_a_pcie_port_output_is_one_sentence_naming_its_sections():
    with pytest.raises(MlxlinkTextError, match=r"^none of the sections Operational Info, Physical Counters and BER Info, Module Info "
                                               r"is in the output \(EYE Opening Info \(PCIe\), PCIe Operational \(Enabled\) Info\): "
                                               r"not the output of a network port$"):
        parse_mlxlink((LINK / "rdma_exporter_mft4341_json_pcie_eye.json").read_text())


def test_real_text_of_a_copper_cable_without_monitoring():
    facts = parse_mlxlink((LINK / "sigcomm26_bf3_mlxlink_m_c_qsfp28_dac_text.txt").read_text())
    assert (facts["state"], facts["physical_state"], facts["speed"]) == ("Active", "LinkUp", "100G")
    assert (facts["effective_ber"], facts["raw_ber"], facts["raw_errors_per_lane"]) == (1.5e-254, 1.5e-254, [0, 0, 0, 0])
    module = facts["module"]
    assert (module["identifier"], module["vendor"], module["cable_type"]) == ("QSFP28", "FS", "Passive copper cable")
    # A passive cable reports no readings (N/A) and no per-lane flags: none, rather than zeros.
    assert [module[key] for key in ("temperature_c", "voltage_mv", "bias_current_ma", "rx_power_dbm", "tx_power_dbm")] == [None] * 5
    assert module["lane_faults"] == {}


def test_the_lane_flags_of_a_real_passive_copper_osfp_cable_are_none():
    text = (LINK / "csegpu1_cx7_ib_ndr_show_mo_abbrev_trailing_spaces_osfp_passive_dac_rx_los_flags_prompts.txt").read_text()
    facts = parse_mlxlink(text)
    assert (facts["state"], facts["physical_state"], facts["speed"], facts["width"]) == ("Active", "LinkUp", "IB-NDR", "4x")
    module = facts["module"]
    assert (module["identifier"], module["vendor"], module["part_number"], module["cable_type"]) == (
        "OSFP", "FS", "OSFPFL-400G-PC01", "Passive copper cable")
    assert "Rx LOS [per lane]                  : 1,0,1,1" in text
    assert module["lane_faults"] == {key: [None] * 4 for key in (
        "rx_loss_of_signal", "tx_loss_of_signal", "tx_fault", "rx_cdr_loss_of_lock", "tx_cdr_loss_of_lock", "tx_adaptive_eq_fault")}
    # The cable's technology alone says it as well (an mlxlink that prints no Cable Type).
    no_type = parse_mlxlink(text.replace("Cable Type                         : Passive copper cable\n", ""))["module"]
    assert no_type["cable_type"] is None and no_type["lane_faults"]["rx_loss_of_signal"] == [None] * 4
    # An active copper cable has electronics that report: its flags are read.
    active = parse_mlxlink(text.replace("Passive copper cable", "Active copper cable").replace("passive, unequalized", "active, equalized"))
    assert active["module"]["lane_faults"]["rx_loss_of_signal"] == [True, False, True, True]


def test_colours_of_a_terminal_are_ignored():
    facts = parse_mlxlink((LINK / "sichek_mlxlink_c_counters_ansi_text.txt").read_text())
    assert "\x1b" in (LINK / "sichek_mlxlink_c_counters_ansi_text.txt").read_text()
    assert (facts["effective_ber"], facts["raw_ber"], facts["time_since_last_clear_min"]) == (1.5e-254, 2e-9, 348349.5)
    assert facts["raw_errors_per_lane"] == [3946476397, 5120336064, 7692183445, 3026261414]
    assert (facts["state"], facts["module"], facts["sections"]) == (None, None, ["Physical Counters and BER Info"])


def test_an_nvlink_port_says_na_for_its_physical_state():
    facts = parse_mlxlink((LINK / "cluster_toolkit_b200_nvlink_xdr_mlxlink_default_text.txt").read_text())
    assert (facts["state"], facts["physical_state"], facts["speed"], facts["width"]) == ("Active", None, "NVLink-XDR", "2x")
    assert (facts["effective_ber"], facts["module"], facts["recommendation"]) == (None, None, "No issue was observed")


@pytest.mark.parametrize("value, reading", [
    ("41 [-5..75]", {"values": [41.0], "low": -5.0, "high": 75.0}),
    ("8.380,8.380,8.380,8.380 [2..15]", {"values": [8.38] * 4, "low": 2.0, "high": 15.0}),
    (["-1.5", "-2"], {"values": [-1.5, -2.0], "low": None, "high": None}),
    ("N/A", None), ("", None), (None, None), ("hot [0..1]", None),
    ("0 [0..0]", None), ("0,0,0,0 [0..0]", None),  # a module without monitoring: no reading, not 0 degrees
    ("35 [0..0]", {"values": [35.0], "low": None, "high": None}),  # a reading without thresholds
])
def test_readings(value, reading):
    assert parse_reading(value) == reading


@pytest.mark.parametrize("text, message", [
    ("", r"^the output is empty$"),
    ("-E- Device mlx5_9 not found\n", r"^mlxlink printed an error and no section: -E- Device mlx5_9 not found$"),
    ("Operational Info\n", r"^none of the sections"),
    ('{"result": {"output": {}}, "status": {"code": 0}}', r"^none of the sections Operational Info, Physical Counters and BER Info, Module Info"),
    ("[1, 2]", r"^no 'Section'"),
])
def test_garbage_is_one_sentence(text, message):
    with pytest.raises(MlxlinkTextError, match=message):
        parse_mlxlink(text)


def test_runner_runs_queries_only_and_reads_saved_outputs_for_the_rest(tmp_path):
    seen = []

    def run(argv):
        seen.append(argv)
        if argv[2] == "mlx5_1":
            return 1, "", "-E- Failed to open device\n"
        return 0, mlxlink_json(), ""

    (tmp_path / "mlx5_1_1.json").write_text(mlxlink_json(effective="1E-8"))
    facts = read_link_quality("/sys", FACTS, run=run, saved_dir=str(tmp_path))
    assert seen == [["mlxlink", "-d", "mlx5_0", "-p", "1", "--json", "--show_module", "--show_counters"],
                    ["mlxlink", "-d", "mlx5_1", "-p", "1", "--json", "--show_module", "--show_counters"]]
    assert sorted(facts["ports"]) == ["mlx5_0/1", "mlx5_1/1"]  # the VF's port is its PF's: not queried
    assert facts["ports"]["mlx5_0/1"]["source"] == "mlxlink -d mlx5_0 -p 1 --json --show_module --show_counters"
    assert facts["ports"]["mlx5_1/1"]["source"] == str(tmp_path / "mlx5_1_1.json")
    assert facts["ports"]["mlx5_1/1"]["effective_ber"] == 1e-8 and facts["ports"]["mlx5_1/1"]["reason"] is None
    assert facts["available"] is True


def test_a_failed_status_in_the_json_is_the_reason():
    facts = read_link_quality("/sys", FACTS, run=lambda argv: (1, mlxlink_json(code=1, message="Port is not active"), ""))
    assert facts["ports"]["mlx5_0/1"]["reason"] == "mlxlink reported status 1: Port is not active"
    assert facts["available"] is False


def test_without_tool_or_saved_outputs_nothing_is_claimed(tmp_path):
    assert read_link_quality("/sys", FACTS) == {
        "available": False, "ports": {},
        "reason": "mlxlink was not run (not installed, or not allowed by node_health_mlxlink) and no saved outputs were given"}
    missing = read_link_quality("/sys", FACTS, saved_dir=str(tmp_path))
    assert missing["ports"]["mlx5_0/1"]["reason"].startswith("no saved output for mlx5_0 port 1 in %s (looked for mlx5_0_1.json" % tmp_path)
    garbled = tmp_path / "mlx5_0_1.json"
    garbled.write_text("<html>502 Bad Gateway</html>")
    assert read_link_quality("/sys", FACTS, saved_dir=str(tmp_path))["ports"]["mlx5_0/1"]["reason"] == (
        "%s: no 'Section' / '-------' / 'Field : value' block and no JSON: this is not mlxlink output" % garbled)


# ----------------------------------------------------------------------------------------------
# Pastes of several ports, through grep, with mlxlink's own errors
# ----------------------------------------------------------------------------------------------

SIGCOMM_TWO_PORTS = "sigcomm26_bf3_readme_mst_status_then_two_ports_mlxlink_m_c_prompts.txt"


def _first_port(text):
    """The first mlxlink run of the README's block: from its prompt to the next prompt."""
    lines = text.split("\n")
    prompts = [index for index, line in enumerate(lines) if "$ sudo mlxlink " in line]
    return "\n".join(lines[prompts[0] + 1:prompts[1]])


def _without_underlines(text):
    """As grep leaves mlxlink's text: no "-----" line under a section title."""
    return "\n".join(line for line in text.split("\n") if set(line.strip()) != {"-"})


@pytest.mark.parametrize("transform", [str, _without_underlines], ids=["as_published", "through_grep"])
def test_several_ports_in_one_text_are_refused_never_merged(transform):
    with pytest.raises(MlxlinkTextError) as error:
        parse_mlxlink(transform((LINK / SIGCOMM_TWO_PORTS).read_text()))
    assert str(error.value) == ("the text holds 2 outputs, each with its 'Operational Info' section: a port's saved output is "
                                "one run of mlxlink for that port")


def test_one_port_through_grep_without_its_underlines_reads_as_the_port_does():
    first = _first_port((LINK / SIGCOMM_TWO_PORTS).read_text())
    facts = parse_mlxlink(first)
    assert (facts["module"]["serial_number"], facts["time_since_last_clear_min"]) == ("S2202655321-1", 25074.8)
    assert parse_mlxlink(_without_underlines(first)) == facts


def test_an_error_line_beside_the_sections_is_kept_in_the_status_and_the_values_read():
    # mlxlink asked for an option the HCA lacks prints its output, then (as a real 8x ConnectX-6 paste shows):
    first = _first_port((LINK / SIGCOMM_TWO_PORTS).read_text()) + '\n \n-E- "--show_ber_monitor" option is not supported for HCA\n'
    facts = parse_mlxlink(first)
    assert facts["status"] == {"code": None, "message": '-E- "--show_ber_monitor" option is not supported for HCA'}
    assert (facts["state"], facts["speed"], facts["width"]) == ("Active", "100G", "4x")


def test_error_lines_reach_the_facts_and_the_reason_bounded():
    first = _first_port((LINK / SIGCOMM_TWO_PORTS).read_text())
    flood = "".join("\n-E- %s" % ("x" * 5000) for dummy in range(1000))
    message = parse_mlxlink(first + flood)["status"]["message"]
    assert message == "; ".join(["-E- " + "x" * 197 + "..."] * 3)
    with pytest.raises(MlxlinkTextError) as error:
        parse_mlxlink(flood)
    assert str(error.value) == "mlxlink printed an error and no section: -E- " + "x" * 197 + "..."


def test_two_json_outputs_in_one_text_are_refused():
    single = (LINK / "rdma_exporter_mft4341_json_m_c_osfp_400g_dr4.json").read_text()
    with pytest.raises(MlxlinkTextError, match=r"^the text holds more than one mlxlink --json object"):
        parse_mlxlink(single + "\n" + single)
    # A brace in the text after the output is not another output.
    assert parse_mlxlink(single + "\n$ echo ${HOSTNAME}\n")["speed"] == parse_mlxlink(single)["speed"]
