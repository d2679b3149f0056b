"""mlxlink's link quality: the module section of a real OSFP read (sichek's sample), a real JSON
paste that was cut off (lshca issue 11), JSON in the shape mlxlink's source writes (mstflint
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


@pytest.mark.parametrize("value, reading", [
    ("41 [-5..75]", {"values": [41.0], "low": -5.0, "high": 75.0}),
    ("8.380,8.380,8.380,8.380 [2..15]", {"values": [8.38] * 4, "low": 2.0, "high": 15.0}),
    (["-1.5", "-2"], {"values": [-1.5, -2.0], "low": None, "high": None}),
    ("N/A", None), ("", None), (None, None), ("hot [0..1]", None),
])
def test_readings(value, reading):
    assert parse_reading(value) == reading


@pytest.mark.parametrize("text, message", [
    ("", r"^the output is empty$"),
    ("-E- Device mlx5_9 not found\n", r"^no 'Section' / '-------' / 'Field : value' block and no JSON: this is not mlxlink output$"),
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
