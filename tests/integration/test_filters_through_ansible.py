"""The collection's filters by their FQCN in real Ansible runs (localhost, local connection, the venv's
Python): what a play gets, and the sentence an operator sees when the input is wrong.

The filters' own behaviour is unit-tested in process (tests/unit/plugins/filter/); these runs prove
that Ansible resolves them from this tree and passes their errors through unchanged.
"""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.ib_parsers import FilterModule as IbParsers
from ansible_collections.rdma.node.plugins.module_utils._ib_text import PARSERS
from harness import LOCALHOST, run_module, run_playbook
from testpaths import FIXTURES

CMD = FIXTURES / "cmd"
IB_FILTERS = IbParsers().filters()
# One sample per tool, and another tool's sample that each filter must refuse.
SAMPLES = {
    "ibstat": "ibstat/mlx4_MT4099_2ca_2port_fdr_all_active_tabs.txt",
    "ibstatus": "ibstatus/mlx4_2port_fdr_ib_active_tabs.txt",
    "ibv_devinfo": "ibv_devinfo/mlx4_MT4099_2port_ib_active_eth_down.txt",
    "ibdev2netdev": "ibdev2netdev/seed_a100_down_up_slash_bond0.txt",
    "rdma_link": "rdma_link/mlx5_cx5_2port_active_np_names.txt",
}
WRONG_SAMPLES = {
    "ibstat": "ibv_devinfo/mlx5_cx7_4129_ib_port_down_lid65535_block.txt",
    "ibstatus": "ibstat/mlx4_ibwarn_debug_lines_before_CA_partial.txt",
    "ibv_devinfo": "ibstat/seed_a100_prompt_3ca_rate10_lid65535_bond.txt",
    "ibdev2netdev": "rdma_link/rxe_softroce_single.txt",
    "rdma_link": "ibdev2netdev/mlx5_cx4_eth_2pf_up.txt",
}


def refusal(tool, sample):
    """The sentence the filter raises for ``sample`` when called directly."""
    with pytest.raises(AnsibleFilterError) as error:
        IB_FILTERS["parse_%s" % tool]((CMD / sample).read_text(encoding="utf-8"))
    return error.value.message


def local_play(tasks, play_vars=None):
    return [{"name": "Filters on localhost", "hosts": "localhost", "gather_facts": False,
             "vars": play_vars or {}, "tasks": tasks}]


PARSE_TASKS = [
    {"name": "Run a command whose stdout is ibdev2netdev output",
     "ansible.builtin.command": {"argv": ["cat", "{{ fixtures }}/%s" % SAMPLES["ibdev2netdev"]]},
     "register": "ibdev2netdev_out", "changed_when": False},
    {"name": "Parse one sample of every tool",
     "ansible.builtin.set_fact": {"parsed": {
         "ibstat": "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_ibstat }}" % SAMPLES["ibstat"],
         "ibstatus": "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_ibstatus }}" % SAMPLES["ibstatus"],
         "ibv_devinfo": "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_ibv_devinfo }}" % SAMPLES["ibv_devinfo"],
         "ibdev2netdev": "{{ ibdev2netdev_out.stdout_lines | rdma.node.parse_ibdev2netdev }}",
         "rdma_link": "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_rdma_link }}" % SAMPLES["rdma_link"],
     }}},
    {"name": "Use the results the way a role would", "ansible.builtin.assert": {"that": [
        "(parsed.ibstat.ports | selectattr('device', 'eq', 'mlx4_1') | selectattr('port', 'eq', 2) | first).lid == 4",
        "parsed.ibstat.ports | selectattr('state', 'eq', 'ACTIVE') | list | length == 4",
        "parsed.ibdev2netdev.ports | selectattr('netdev_state', 'eq', 'Up') | map(attribute='device') | list == ['mlx5_bond_0']",
        "parsed.rdma_link.ports | map(attribute='netdevs') | flatten == ['enp4s0f0np0', 'enp4s0f1np1']",
    ]}},
    {"name": "Read a messy paste: keep the ports, note the rest",
     "ansible.builtin.set_fact": {"messy": "{{ messy_ibstat | rdma.node.parse_ibstat }}"}},
    {"name": "Refuse the same paste with strict", "block": [
        {"name": "Parse strictly", "ansible.builtin.debug": {"msg": "{{ messy_ibstat | rdma.node.parse_ibstat(strict=true) }}"}},
    ], "rescue": [
        {"name": "Keep the strict refusal", "ansible.builtin.debug": {"var": "ansible_failed_result.msg"}},
    ]},
    {"name": "Return the parsed samples", "ansible.builtin.debug": {"var": "parsed"}},
]
REFUSE_TASKS = [
    {"name": "Parse %s with another tool's output" % tool, "block": [
        {"name": "Parse %s" % tool,
         "ansible.builtin.debug": {"msg": "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_%s }}" % (wrong, tool)}},
        {"name": "Not reached when parse_%s refuses" % tool, "ansible.builtin.fail": {"msg": "parse_%s accepted %s" % (tool, wrong)}},
    ], "rescue": [
        {"name": "Keep the refusal of parse_%s" % tool, "ansible.builtin.debug": {"var": "ansible_failed_result.msg"}},
    ]}
    for tool, wrong in sorted(WRONG_SAMPLES.items())
]


# How people paste: the prompt and the command line, a comment, an ibwarn line, a redaction, CRLF, and
# the ssh session's last line, which strict refuses.
MESSY_IBSTAT = ("[root@gpu-node01 ~]# ibstat mlx4_0\r\n# first CA only\r\n"
                "ibwarn: [4711] umad_get_port: port 1 not found\r\nCA 'mlx4_0'\r\n\tCA type: MT4099\r\n[snip]\r\n"
                "\tPort 1:\r\n\t\tState: Active\r\n\t\tRate: 56\r\nConnection to gpu-node01 closed.\r\n")


def test_playbook_resolves_the_ib_parsers_by_fqcn():
    run = run_playbook(local_play(PARSE_TASKS + REFUSE_TASKS), inventory=LOCALHOST,
                       extra_vars={"fixtures": str(CMD), "messy_ibstat": MESSY_IBSTAT})
    assert run.rc == 0, run.stderr
    assert run.stats["localhost"]["failures"] == 0
    assert run.stats["localhost"]["rescued"] == len(WRONG_SAMPLES) + 1
    messy = run.result("Read a messy paste: keep the ports, note the rest", "localhost")["ansible_facts"]["messy"]
    assert messy == PARSERS["ibstat"](MESSY_IBSTAT)
    assert [(p["device"], p["port"], p["state"], p["rate_gbps"]) for p in messy["ports"]] == [("mlx4_0", 1, "ACTIVE", 56.0)]
    assert messy["notes"], "the ibwarn line and the redaction are noted"
    strict = run.result("Keep the strict refusal", "localhost")["ansible_failed_result.msg"]
    assert "parse_ibstat: line 10 is not ibstat output: 'Connection to gpu-node01 closed.'" in strict
    parsed = run.result("Return the parsed samples", "localhost")["parsed"]
    for tool, sample in SAMPLES.items():
        assert parsed[tool] == PARSERS[tool]((CMD / sample).read_text(encoding="utf-8")), tool
    for tool, wrong in sorted(WRONG_SAMPLES.items()):
        message = run.result("Keep the refusal of parse_%s" % tool, "localhost")["ansible_failed_result.msg"]
        assert "rdma.node.parse_%s" % tool in message and refusal(tool, wrong) in message, (tool, message)


def test_a_failing_filter_shows_its_sentence_without_a_traceback():
    tasks = [{"name": "Parse", "ansible.builtin.debug": {
        "msg": "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_ibstat }}" % WRONG_SAMPLES["ibstat"]}}]
    run = run_playbook(local_play(tasks), inventory=LOCALHOST, extra_vars={"fixtures": str(CMD)})
    assert (run.rc, run.failed_hosts) == (2, ["localhost"])
    message = run.result("Parse", "localhost")["msg"]
    assert message.endswith("The filter plugin 'rdma.node.parse_ibstat' failed: " + refusal("ibstat", WRONG_SAMPLES["ibstat"]))
    assert "Traceback" not in run.stdout + run.stderr


def test_parse_perftest_in_a_play(tmp_path):
    """A fixture copied next to the playbook, read with the file lookup as an operator would."""
    (tmp_path / "loopback.txt").write_bytes((FIXTURES / "perftest/seed_ib_write_bw_loopback_report_gbits_mlx5_1_a100.txt").read_bytes())
    play = [{"name": "parse_perftest", "hosts": "localhost", "gather_facts": False,
             "vars": {"parsed": "{{ lookup('ansible.builtin.file', 'loopback.txt') | rdma.node.parse_perftest }}"},
             "tasks": [
                 {"name": "The A100 loopback of the write-up", "ansible.builtin.debug": {"var": "parsed"}},
                 {"name": "A bad input fails with the filter's sentence", "block": [
                     {"name": "Parse a number", "ansible.builtin.debug": {"msg": "{{ 42 | rdma.node.parse_perftest }}"}},
                     {"name": "Not reached", "ansible.builtin.fail": {"msg": "the filter accepted 42"}},
                 ], "rescue": [{"name": "The sentence", "ansible.builtin.debug": {"var": "ansible_failed_result.msg"}}]},
             ]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps(play))
    run = run_playbook(playbook, inventory=LOCALHOST)
    assert run.rc == 0, run.stderr
    assert (run.stats["localhost"]["failures"], run.stats["localhost"]["rescued"]) == (0, 1)
    parsed = run.result("The A100 loopback of the write-up", "localhost")["parsed"]
    assert parsed["bw_average_gbps"] == 183.61 and parsed["device"] == "mlx5_1"
    assert len(parsed["results"]) == 1 and parsed["results"][0]["msg_rate_mpps"] == 0.350214
    assert parsed["sides"] == 2 and parsed["sides_agree"] and parsed["failure"] is None
    assert "rdma.node.parse_perftest expects perftest output" in run.result("The sentence", "localhost")["ansible_failed_result.msg"]


def test_rlimit_value_ad_hoc():
    """``ansible localhost -m debug`` resolves rdma.node.rlimit_value from this tree and gets integers."""
    expression = "{{ ['unlimited' | rdma.node.rlimit_value, '64K' | rdma.node.rlimit_value, 4096 | rdma.node.rlimit_value] }}"
    run = run_module("ansible.builtin.debug", {"msg": expression})
    assert run.rc == 0, run.stderr
    assert run.result["msg"] == [18446744073709551615, 65536, 4096]
    refused = run_module("ansible.builtin.debug", {"msg": "{{ '-1' | rdma.node.rlimit_value }}"})
    assert refused.rc != 0 and refused.failed
    assert "rlimit_value input must not be negative, got '-1'." in refused.result["msg"]


def test_health_filters_in_a_play():
    plays = local_play([{
        "name": "Parse a pasted kernel log and rdma system output",
        "ansible.builtin.set_fact": {
            "losses": "{{ (lookup('file', log) | rdma.node.parse_carrier_events).netdevs.lan.losses }}",
            "mode": "{{ lookup('file', system) | rdma.node.parse_rdma_system }}",
        },
    }], {"log": str(CMD / "kernel_log/openwrt_17351_logread_link_flaps_prompt.txt"),
         "system": str(CMD / "rdma_system/spiderpool_sriov_exclusive_comment_prompt_indented.txt")})
    run = run_playbook(plays, inventory=LOCALHOST)
    assert run.rc == 0, run.stderr
    facts = run.result("Parse a pasted kernel log and rdma system output", "localhost")["ansible_facts"]
    assert facts == {"losses": 3, "mode": {"netns_mode": "exclusive", "copy_on_fork": True, "privileged_qkey": None}}
