# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parse_* filters: direct calls, and real ansible-playbook runs on localhost that resolve the
filters by their FQCN and show the error message an operator sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.ib_parsers import FilterModule
from ansible_collections.rdma.node.plugins.module_utils._ib_text import PARSERS

COLLECTION_ROOT = Path(__file__).resolve().parents[4]
FIXTURES = COLLECTION_ROOT / "tests" / "fixtures" / "cmd"
FILTERS = FilterModule().filters()
TOOL_NAMES = {"ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo",
              "ibdev2netdev": "ibdev2netdev", "rdma_link": "rdma link"}
# One sample per tool for the playbook runs, and another tool's sample each filter must refuse.
SAMPLES = {
    "ibstat": "ibstat/mlx4_MT4099_2ca_2port_fdr_all_active_tabs.txt",
    "ibstatus": "ibstatus/mlx4_2port_fdr_ib_active_tabs.txt",
    "ibv_devinfo": "ibv_devinfo/mlx4_MT4099_2port_ib_active_eth_down.txt",
    "ibdev2netdev": "ibdev2netdev/seed_a100_down_up_slash_bond0.txt",
    "rdma_link": "rdma_link/mlx5_cx5_2port_active_np_names.txt",
}
WRONG_SAMPLES = {
    "ibstat": ("ibv_devinfo/mlx5_cx7_4129_ib_port_down_lid65535_block.txt", "line 1", "'hca_id: mlx5_0'"),
    "ibstatus": ("ibstat/mlx4_ibwarn_debug_lines_before_CA_partial.txt", "line 5", "\"CA 'mlx4_0'\""),
    "ibv_devinfo": ("ibstat/seed_a100_prompt_3ca_rate10_lid65535_bond.txt", "line 2", "\"CA 'mlx5_0'\""),
    "ibdev2netdev": ("rdma_link/rxe_softroce_single.txt", "line 1",
                     "'link rxe_0/1 state ACTIVE physical_state LINK_UP netdev p1p1'"),
    "rdma_link": ("ibdev2netdev/mlx5_cx4_eth_2pf_up.txt", "line 1", "'mlx5_0 port 1 ==> enp2s0f0 (Up)'"),
}


def _message(tool):
    """What a filter says about another tool's output: nothing in it is recognisable."""
    wrong, line, quoted = WRONG_SAMPLES[tool]
    return "parse_%s: nothing in the text is %s output (%s: %s)" % (tool, TOOL_NAMES[tool], line, quoted)


def _strict_message(tool):
    """What a filter says with strict=true: the first line it cannot place."""
    wrong, line, quoted = WRONG_SAMPLES[tool]
    return "parse_%s: %s is not %s output: %s" % (tool, line, TOOL_NAMES[tool], quoted)


# A paste as it lands in a ticket: the prompt and command, a comment, a redacted middle, a
# diagnostic line, CRLF line ends and a stray line from the terminal.
MESSY_IBSTAT = (
    "[root@gpu-node01 ~]# ibstat mlx4_0\r\n"
    "# first CA only\r\n"
    "ibwarn: [4711] umad_get_port: port 1 not found\r\n"
    "CA 'mlx4_0'\r\n"
    "\tCA type: MT4099\r\n"
    "[snip]\r\n"
    "\tPort 1:\r\n"
    "\t\tState: Active\r\n"
    "\t\tRate: 56\r\n"
    "Connection to gpu-node01 closed.\r\n"
)


def test_filter_names():
    assert sorted(FILTERS) == sorted("parse_%s" % tool for tool in PARSERS)


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("*/*.txt") if p.parent.name in PARSERS),
                         ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_filters_return_what_the_parsers_return(path):
    tool = path.parent.name
    text = path.read_text(encoding="utf-8")
    assert FILTERS["parse_%s" % tool](text) == PARSERS[tool](text)
    assert FILTERS["parse_%s" % tool](text.splitlines()) == PARSERS[tool](text)
    assert FILTERS["parse_%s" % tool](text, strict=True) == PARSERS[tool](text, strict=True)


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_filters_raise_filter_errors(tool):
    wrong = (FIXTURES / WRONG_SAMPLES[tool][0]).read_text(encoding="utf-8")
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](wrong)
    assert error.value.message == _message(tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](wrong, strict=True)
    assert error.value.message == _strict_message(tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](None)
    assert error.value.message.startswith("parse_%s: expected the command's output as a string" % tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool]("", strict="yes")
    assert error.value.message == "rdma.node.parse_%s: strict must be true or false, not 'yes'" % tool


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_filters_give_no_ports_for_empty_output(tool):
    assert FILTERS["parse_%s" % tool]("") == {"ports": [], "notes": []}
    assert FILTERS["parse_%s" % tool]([]) == {"ports": [], "notes": []}


def test_filter_keeps_what_it_recognises_and_notes_the_rest():
    result = FILTERS["parse_ibstat"](MESSY_IBSTAT)
    assert [(p["device"], p["port"], p["hca_type"], p["state"], p["rate_gbps"]) for p in result["ports"]] == [
        ("mlx4_0", 1, "MT4099", "ACTIVE", 56.0)]
    assert result["notes"] == [
        {"line": 3, "text": "ibwarn: [4711] umad_get_port: port 1 not found",
         "reason": "a diagnostic message, not part of the listing"},
        {"line": 6, "text": "[snip]", "reason": "a redaction mark: the listing around it is incomplete"},
        {"line": 10, "text": "Connection to gpu-node01 closed.", "reason": "not ibstat output"},
    ]
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_ibstat"](MESSY_IBSTAT, strict=True)
    assert error.value.message == "parse_ibstat: line 10 is not ibstat output: 'Connection to gpu-node01 closed.'"


# ----------------------------------------------------------------------------------------------
# Real ansible-playbook runs (localhost, local connection, the venv's Python)
# ----------------------------------------------------------------------------------------------

PLAYBOOK = """\
- name: Parse command output with the rdma.node filters
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run a command whose stdout is ibdev2netdev output
      ansible.builtin.command:
        argv: [cat, "{{ fixtures }}/%(ibdev2netdev)s"]
      register: ibdev2netdev_out
      changed_when: false

    - name: Parse one sample of every tool
      ansible.builtin.set_fact:
        parsed:
          ibstat: "{{ lookup('ansible.builtin.file', fixtures ~ '/%(ibstat)s') | rdma.node.parse_ibstat }}"
          ibstatus: "{{ lookup('ansible.builtin.file', fixtures ~ '/%(ibstatus)s') | rdma.node.parse_ibstatus }}"
          ibv_devinfo: "{{ lookup('ansible.builtin.file', fixtures ~ '/%(ibv_devinfo)s') | rdma.node.parse_ibv_devinfo }}"
          ibdev2netdev: "{{ ibdev2netdev_out.stdout_lines | rdma.node.parse_ibdev2netdev }}"
          rdma_link: "{{ lookup('ansible.builtin.file', fixtures ~ '/%(rdma_link)s') | rdma.node.parse_rdma_link }}"

    - name: Use the results the way a role would
      ansible.builtin.assert:
        that:
          - (parsed.ibstat.ports | selectattr('device', 'eq', 'mlx4_1') | selectattr('port', 'eq', 2) | first).lid == 4
          - parsed.ibstat.ports | selectattr('state', 'eq', 'ACTIVE') | list | length == 4
          - parsed.ibdev2netdev.ports | selectattr('netdev_state', 'eq', 'Up') | map(attribute='device') | list == ['mlx5_bond_0']
          - parsed.rdma_link.ports | map(attribute='netdevs') | flatten == ['enp4s0f0np0', 'enp4s0f1np1']
          - parsed.values() | map(attribute='notes') | flatten | length == 0

    - name: Parse a messy paste, then the same paste strictly
      ansible.builtin.set_fact:
        messy: "{{ messy_ibstat | rdma.node.parse_ibstat }}"

    - name: The paste's port is there and its stray lines are notes
      ansible.builtin.assert:
        that:
          - messy.ports | map(attribute='state') | list == ['ACTIVE']
          - messy.notes | map(attribute='line') | list == [3, 6, 10]

    - name: Strict parsing refuses the stray line
      block:
        - name: Parse strictly
          ansible.builtin.debug:
            msg: "{{ messy_ibstat | rdma.node.parse_ibstat(strict=true) }}"
        - name: Not reached
          ansible.builtin.fail:
            msg: strict parse_ibstat accepted a stray line
      rescue:
        - name: Keep the strict refusal
          ansible.builtin.set_fact:
            strict_refusal: "{{ ansible_failed_result.msg }}"

    - name: Feed each filter another tool's output (refuse.yml records each refusal)
      ansible.builtin.include_tasks: refuse.yml
      loop: "{{ wrong_samples }}"
      loop_control:
        label: "{{ item.tool }}"

    - name: Write the results for the test to read
      ansible.builtin.copy:
        content: "{{ {'parsed': parsed, 'refused': refused | default([]), 'strict_refusal': strict_refusal} | to_json }}"
        dest: "{{ out_dir }}/results.json"
        mode: "0644"
"""

REFUSE_TASKS = """\
- name: Parse {{ item.tool }} with another tool's output
  block:
    - name: Parse
      ansible.builtin.debug:
        msg: >-
          {{ (text | rdma.node.parse_ibstat) if item.tool == 'ibstat'
             else (text | rdma.node.parse_ibstatus) if item.tool == 'ibstatus'
             else (text | rdma.node.parse_ibv_devinfo) if item.tool == 'ibv_devinfo'
             else (text | rdma.node.parse_ibdev2netdev) if item.tool == 'ibdev2netdev'
             else (text | rdma.node.parse_rdma_link) }}
      vars:
        text: "{{ lookup('ansible.builtin.file', fixtures ~ '/' ~ item.wrong) }}"
    - name: Not reached when the filter refuses
      ansible.builtin.fail:
        msg: "parse_{{ item.tool }} accepted {{ item.wrong }}"
  rescue:
    - name: Keep the refusal
      ansible.builtin.set_fact:
        refused: "{{ (refused | default([])) + [ansible_failed_result.msg] }}"
"""

FAILING_PLAYBOOK = """\
- name: An operator parses ibv_devinfo output with the ibstat filter
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Parse
      ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.file', fixtures ~ '/%s') | rdma.node.parse_ibstat }}"
"""


def _ansible_playbook(tmp_path: Path, playbook: str, extra_vars: dict):
    """Run the venv's ansible-playbook with this tree installed as rdma.node in a private path."""
    collections = tmp_path / "collections"
    (collections / "ansible_collections" / "rdma").mkdir(parents=True)
    (collections / "ansible_collections" / "rdma" / "node").symlink_to(COLLECTION_ROOT)
    (tmp_path / "playbook.yml").write_text(playbook, encoding="utf-8")
    (tmp_path / "refuse.yml").write_text(REFUSE_TASKS, encoding="utf-8")
    extra_vars = dict(extra_vars, ansible_python_interpreter=sys.executable, fixtures=str(FIXTURES),
                      out_dir=str(tmp_path))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(collections),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_DEPRECATION_WARNINGS="0",
    )
    env.pop("ANSIBLE_CONFIG", None)
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
               "-e", json.dumps(extra_vars), str(tmp_path / "playbook.yml")]
    return subprocess.run(command, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_playbook_resolves_the_filters_by_fqcn(tmp_path):
    wrong = [{"tool": tool, "wrong": WRONG_SAMPLES[tool][0]} for tool in sorted(PARSERS)]
    run = _ansible_playbook(tmp_path, PLAYBOOK % SAMPLES, {"wrong_samples": wrong, "messy_ibstat": MESSY_IBSTAT})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "failed=0" in run.stdout and "rescued=%d" % (len(wrong) + 1) in run.stdout
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    for tool, sample in SAMPLES.items():
        assert results["parsed"][tool] == PARSERS[tool]((FIXTURES / sample).read_text(encoding="utf-8")), tool
    assert len(results["refused"]) == len(wrong)
    for tool, message in zip(sorted(PARSERS), results["refused"]):
        assert "rdma.node.parse_%s" % tool in message and _message(tool) in message, (tool, message)
    assert "parse_ibstat: line 10 is not ibstat output: 'Connection to gpu-node01 closed.'" in results["strict_refusal"]


def test_playbook_failure_shows_the_message(tmp_path):
    run = _ansible_playbook(tmp_path, FAILING_PLAYBOOK % WRONG_SAMPLES["ibstat"][0], {})
    assert run.returncode == 2, run.stdout + run.stderr
    assert "fatal: [localhost]: FAILED!" in run.stdout
    assert "The filter plugin 'rdma.node.parse_ibstat' failed: %s" % _message("ibstat") in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
