"""The rdma.node.parse_carrier_events and parse_rdma_system filters: Ansible's own string types, clear errors,
and a run through a real playbook."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.yaml.objects import AnsibleUnicode

from ansible_collections.rdma.node.plugins.filter.health import FilterModule, parse_carrier_events, parse_rdma_system
from testpaths import COLLECTIONS_ROOT, FIXTURES


def test_filters_are_registered():
    assert FilterModule().filters() == {"parse_carrier_events": parse_carrier_events,
                                        "parse_rdma_system": parse_rdma_system}


def test_ansible_strings_are_read_like_plain_ones():
    text = (FIXTURES / "cmd/kernel_log/pfring_293_syslog_ixgbe_up_down.txt").read_text()
    assert parse_carrier_events(AnsibleUnicode(text)) == parse_carrier_events(text)
    assert parse_carrier_events([AnsibleUnicode(line) for line in text.splitlines()])["netdevs"] == {
        "eth11": {"down": 1, "up": 1, "losses": 1, "last": "down"}}


@pytest.mark.parametrize("data, message", [
    (3.5, "parse_carrier_events: expected a string or a list of strings, got float"),
])
def test_carrier_errors_are_filter_errors(data, message):
    with pytest.raises(AnsibleFilterError, match=message):
        parse_carrier_events(data)


def test_rdma_system_error_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="parse_rdma_system: line 1 is not rdma system output: 'hello'"):
        parse_rdma_system("hello")


def test_filters_in_a_playbook(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text("""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        losses: "{{ (lookup('file', log) | rdma.node.parse_carrier_events).netdevs.lan.losses }}"
        mode: "{{ lookup('file', system) | rdma.node.parse_rdma_system }}"
    - ansible.builtin.copy:
        content: "{{ {'losses': losses, 'mode': mode} | to_json }}"
        dest: "{{ out }}"
""")
    out = tmp_path / "out.json"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_ROOT))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", "ansible_python_interpreter=" + sys.executable,
         "-e", "log=" + str(FIXTURES / "cmd/kernel_log/openwrt_17351_logread_link_flaps_prompt.txt"),
         "-e", "system=" + str(FIXTURES / "cmd/rdma_system/spiderpool_sriov_exclusive_comment_prompt_indented.txt"),
         "-e", "out=" + str(out), str(playbook)],
        capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(out.read_text()) == {
        "losses": 3, "mode": {"netns_mode": "exclusive", "copy_on_fork": True, "privileged_qkey": None}}
