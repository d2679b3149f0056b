"""The filters' conversion of Ansible's values to plain data, and their one-sentence errors."""

from __future__ import annotations

import types

import pytest
from ansible.errors import AnsibleFilterError
from ansible.template import Templar, trust_as_template

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import call, plain_data
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError


def exact_type(value):
    """The name of the value's own class, not of a class it derives from."""
    return type(value).__name__


class TaggedText(str):
    """A str subclass, as Ansible's tagged strings are."""


def test_plain_containers_come_back_equal_and_plain():
    value = {"ports": [{"device": "mlx5_0", "port": 1, "rate_gbps": 200.0, "up": True, "gid": None}], 7: ("a", "b")}
    plain = plain_data(value)
    assert plain == {"ports": [{"device": "mlx5_0", "port": 1, "rate_gbps": 200.0, "up": True, "gid": None}], "7": ["a", "b"]}
    assert plain is not value and plain["ports"] is not value["ports"]  # a copy: the filters may change it


def test_subclasses_and_other_mappings_become_the_plain_types():
    value = types.MappingProxyType({TaggedText("device"): TaggedText("mlx5_0"), "lanes": (1, 2)})
    plain = plain_data(value)
    assert plain == {"device": "mlx5_0", "lanes": [1, 2]}
    assert [exact_type(plain), exact_type(plain["device"]), *map(exact_type, plain)] == ["dict", "str", "str", "str"]


def test_values_of_a_real_template_become_plain():
    templar = Templar(variables={"ports": [{"device": "mlx5_0"}], "name": "mlx5_0"})
    rendered = templar.template(trust_as_template("{{ {'ports': ports, 'first': name} }}"))
    plain = plain_data(rendered)
    assert plain == {"ports": [{"device": "mlx5_0"}], "first": "mlx5_0"}
    assert [exact_type(plain), exact_type(plain["ports"]), exact_type(plain["ports"][0]), exact_type(plain["first"])] == ["dict", "list", "dict", "str"]


def test_a_check_error_is_one_sentence_naming_the_filter():
    def refuse(_value):
        raise CheckError("pod_proof_groups: expected a mapping, got []")
    with pytest.raises(AnsibleFilterError, match=r"^rdma\.node\.pod_proof_plan: pod_proof_groups: expected a mapping, got \[\]$"):
        call("pod_proof_plan", refuse, [])
