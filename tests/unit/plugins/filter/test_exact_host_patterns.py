"""rdma.node.exact_host_patterns against Ansible's own host pattern matching (InventoryManager.get_hosts,
what a play's ``hosts`` goes through): each name matches its host, and only it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.inventory.manager import InventoryManager

from ansible_collections.rdma.node.plugins.filter.report import exact_host_patterns

ODD = ["v100 node:02", "a100,node-01", "!a100-node-02", "&gpu", "~gpu", "gpu*", "gpu?", "rack[3]", "x]", " lead", "tab\there",
       "ümlaut host", "esc\x1b[31m", "line\nbreak", "emoji 🚀", "db"]
# Hosts that a pattern split at its commas, colons or spaces, or read as a wildcard, would match.
BYSTANDERS = ["v100", "node", "02", "a100", "node-01", "a100-node-02", "gpu", "gpu1", "rack", "rack3", "x", "lead", "tab", "here",
              "esc", "line", "break", "emoji", "plain"]


@pytest.fixture(scope="module")
def inventory():
    manager = InventoryManager(loader=None, sources=[])  # no source: nothing to load
    manager.add_group("fleet")
    for name in ODD + BYSTANDERS:
        manager.add_host(name, group="fleet")
    # A group named like a host: the host's own name still means the host (Ansible looks hosts up first).
    manager.add_group("db")
    manager.add_host("plain", group="db")
    return manager


def matched(inventory, names):
    inventory.clear_pattern_cache()
    return sorted(h.name for h in inventory.get_hosts(exact_host_patterns(names)))


def test_every_odd_name_matches_itself_only(inventory):
    for name in ODD:
        assert matched(inventory, [name]) == [name], repr(name)


def test_all_together_and_with_plain_names(inventory):
    assert matched(inventory, ODD + ["gpu1"]) == sorted(ODD + ["gpu1"])
    assert matched(inventory, {"a100,node-01": "msg", "node": "msg"}) == ["a100,node-01", "node"]


def test_the_patterns_are_plain_names_and_one_expression():
    assert exact_host_patterns(["a100-node-01", "node.example.org"]) == ["a100-node-01", "node.example.org"]
    patterns = exact_host_patterns(["a100-node-01", "v100 node:02", "!x"])
    assert patterns == ["a100-node-01", "~^(v100\\x20node\\x3a02|\\x21x)\\Z"]
    assert exact_host_patterns([]) == [] and exact_host_patterns({}) == []


def test_a_group_named_like_an_odd_host_comes_along():
    """Documented: the play checks inventory_hostname against the names (fail_reported_hosts.yml does)."""
    manager = InventoryManager(loader=None, sources=[])  # no source: nothing to load
    manager.add_host("rack 7")
    manager.add_group("rack 7")
    manager.add_host("other", group="rack 7")
    assert sorted(h.name for h in manager.get_hosts(exact_host_patterns(["rack 7"]))) == ["other", "rack 7"]


@pytest.mark.parametrize("bad", ["a100-node-01", 7, None])
def test_refuses_what_is_not_names(bad):
    with pytest.raises(AnsibleFilterError, match="rdma.node.exact_host_patterns: expected a list of host names or a mapping keyed by them"):
        exact_host_patterns(bad)
