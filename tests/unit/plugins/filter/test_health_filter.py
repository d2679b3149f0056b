"""The rdma.node.parse_carrier_events and parse_rdma_system filters: Ansible's own string types and clear
errors. A run through a real playbook: tests/integration/test_filters_through_ansible.py."""

from __future__ import annotations


import pytest
from ansible.errors import AnsibleFilterError
from ansible.template import trust_as_template

from ansible_collections.rdma.node.plugins.filter.health import FilterModule, parse_carrier_events, parse_rdma_system
from testpaths import FIXTURES


def test_filters_are_registered():
    assert FilterModule().filters() == {"parse_carrier_events": parse_carrier_events,
                                        "parse_rdma_system": parse_rdma_system}


def test_ansible_strings_are_read_like_plain_ones():
    """Strings as a template hands them to a filter: tagged (trusted) str, not plain str."""
    text = (FIXTURES / "cmd/kernel_log/pfring_293_syslog_ixgbe_up_down.txt").read_text()
    assert parse_carrier_events(trust_as_template(text)) == parse_carrier_events(text)
    assert parse_carrier_events([trust_as_template(line) for line in text.splitlines()])["netdevs"] == {
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
