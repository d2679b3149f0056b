"""The rdma.node.rlimit_value filter through its FilterModule (in an ad-hoc Ansible run:
tests/integration/test_filters_through_ansible.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.rlimits import FilterModule

rlimit_value = FilterModule().filters()["rlimit_value"]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("unlimited", 18446744073709551615),
        ("infinity", 18446744073709551615),
        ("64K", 65536),
        ("8M", 8388608),
        ("4M", 4194304),
        ("1G", 1073741824),
        ("2T", 2199023255552),
        (4096, 4096),
        ("4096", 4096),
        (0, 0),
    ],
)
def test_rlimit_value(value, expected):
    assert rlimit_value(value) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        ("-1", "rlimit_value input must not be negative, got '-1'."),
        (-5, "rlimit_value input must not be negative, got -5."),
        ("8MB", "rlimit_value input must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), "
                "got '8MB'."),
        (True, "rlimit_value input must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got True."),
        (2.5, "rlimit_value input must be a whole number, got the fraction 2.5."),
        ("16E", "rlimit_value input '16E' is larger than 18446744073709551615 (unlimited), the largest value an "
                "rlimit can hold."),
    ],
)
def test_rlimit_value_errors(value, message):
    with pytest.raises(AnsibleFilterError) as error:
        rlimit_value(value)
    assert str(error.value) == message
