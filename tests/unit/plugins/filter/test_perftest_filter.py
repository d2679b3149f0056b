"""rdma.node.parse_perftest: text, lines or a registered result in; bad input gets one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter import perftest as perftest_filter

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perftest"
parse_perftest = perftest_filter.FilterModule().filters()["parse_perftest"]


def text(name):
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("*.txt")))
def test_string_and_lines_give_the_same(name):
    from_text = parse_perftest(text(name))
    assert parse_perftest(text(name).splitlines()) == from_text
    assert from_text["results"] or from_text["failure"]["cause"] in (
        "gpu_memory", "memlock", "port_down", "device_not_found", "device_query", "qp_create", "qp_connect", "completion_error", "remote_unreachable")
    json.dumps(from_text)   # plain JSON types only


def test_registered_result_reads_both_streams_and_rc():
    registered = {
        "changed": False,
        "rc": 1,
        "stdout": text("seed_err_ib_read_bw_server_ethernet_read_keys.txt"),
        "stderr": text("err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt"),
        "stdout_lines": [],
    }
    parsed = parse_perftest(registered)
    assert parsed["failure"]["cause"] == "memlock"
    assert parsed["qps"] == 30 and parsed["device"] == "mlx5_0"


def test_registered_success_and_stdout_lines_only():
    lines = text("seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt").splitlines()
    parsed = parse_perftest({"rc": 0, "stdout_lines": lines})
    assert parsed["failure"] is None
    assert parsed["bw_average_gbps"] == 94.71
    assert parsed["sides_agree"] is True


def test_exit_status_without_output_is_unknown():
    parsed = parse_perftest({"rc": 1, "stdout": "", "stderr": ""})
    assert parsed["failure"]["cause"] == "unknown"
    assert parsed["failure"]["line"] == "exited with status 1"


@pytest.mark.parametrize("value, message", [
    (42, "rdma.node.parse_perftest expects perftest output: a string, a list of lines, or a registered command "
         "result with stdout, not int"),
    ({"rc": 0, "msg": "x"}, "rdma.node.parse_perftest expects perftest output: a string, a list of lines, or a "
                            "registered command result with stdout; this dict has no stdout (keys: msg, rc)"),
    (["line", 3], "rdma.node.parse_perftest: the input must be text or a list of lines, not list"),
    ({"stdout": "", "rc": "one"}, "rdma.node.parse_perftest: rc must be an integer, not 'one'"),
])
def test_bad_input(value, message):
    with pytest.raises(AnsibleFilterError) as err:
        parse_perftest(value)
    assert err.value.message == message
