"""The parts of the rdma.node.evaluate action that decide before anything runs on the node."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.rdma.node.plugins.action.evaluate import ActionModule


@pytest.mark.parametrize("module", ["rdma.node.systemd_limits", "rdma.node.oci_rlimits", "rdma.node.containerd_runtime",
                                    "rdma.node.perftest", "ansible.builtin.shell", "rdma.node.evaluate"])
def test_gather_runs_only_the_collections_fact_modules(module):
    with pytest.raises(AnsibleActionFail, match=r"gather.module must be one of the collection's fact modules \(rdma.node.container_limits, "
                                                r"rdma.node.driver_facts, rdma.node.ib_facts, rdma.node.node_facts\), got '%s'" % module):
        ActionModule._plan({"module": module, "args": {}}, {}, {}, [], [])


def test_gather_of_a_fact_module_is_run_as_given():
    assert ActionModule._plan({"module": "rdma.node.ib_facts", "args": {"sysfs_root": "/srv/sys"}}, {}, {}, [], []) == (
        [("rdma.node.ib_facts", {"sysfs_root": "/srv/sys"})], {})


@pytest.mark.parametrize("gather, expected", [({"modul": "x"}, "gather takes module and args, got modul"),
                                              ("sometimes", "gather is 'sometimes'; expected true, false or a dict with module and args")])
def test_a_malformed_gather_is_one_sentence(gather, expected):
    with pytest.raises(AnsibleActionFail, match=expected):
        ActionModule._plan(gather, {}, {}, [], [])


def test_a_module_crash_is_passed_on_with_its_reason():
    crash = {"failed": True, "msg": "MODULE FAILURE See stdout/stderr for the exact error", "rc": 1,
             "module_stderr": "Traceback (most recent call last):\n  File \"x\", line 1\nValueError: invalid literal for int()"}
    assert ActionModule._module_failure(crash).endswith("ValueError: invalid literal for int()")
    assert ActionModule._module_failure({"failed": True, "msg": "sysfs_root /x is not a directory"}) == "sysfs_root /x is not a directory"
    assert ActionModule._module_failure({"failed": True, "rc": 137}) == "it gave no reason (rc 137)"


def test_a_nodes_failure_reaches_the_terminal_as_text():
    assert ActionModule._module_failure({"failed": True, "msg": "bad \x1b]0;owned\x07read\x1b[2J\nof /sys"}) == "bad read of /sys"
    assert ActionModule._module_failure({"failed": True, "module_stderr": "\x1b[31mTraceback\x1b[0m\nOSError"}) == "Traceback OSError"


class _Shell:
    tmpdir = None


class _Connection:
    _shell = _Shell()


def _gather_from(returned, module="rdma.node.node_facts"):
    """The action's gather with the node's module answer ``returned``: the node is the fake here, and only its answer."""
    action = ActionModule.__new__(ActionModule)
    action._connection = _Connection()
    action._remove_tmp_path = lambda path: None
    action._execute_module = lambda module_name, module_args, task_vars: returned
    result = {}
    return action._gather([(module, {})], {}, result), result


def test_a_node_cannot_set_facts_its_module_does_not_fill():
    """A node answers for its own reads only: not for a role's findings, another play's facts or the controller's."""
    rdma, driver = {"ports": []}, {"running_kernel": "6.1.0-27-amd64"}
    gathered, result = _gather_from({"changed": False, "ansible_facts": {
        "rdma": rdma, "rdma_driver": driver, "bandwidth_check_findings": [], "pod_proof_node": {"nccl": "ok"},
        "ib_inventory_status": {"ok": True}, "\x1b[31mred": 1}})
    assert gathered == {"rdma_unreachable": None, "rdma": rdma, "rdma_driver": driver}
    assert result["warnings"] == ["rdma.node.evaluate: rdma.node.node_facts returned facts it does not fill, left out: "
                                  "\\x1b[31mred, bandwidth_check_findings, ib_inventory_status, pod_proof_node"]


def test_each_fact_module_keeps_what_it_fills():
    memlock = {"limit": "unlimited"}
    assert _gather_from({"ansible_facts": {"rdma_memlock": memlock, "rdma": {}}}, "rdma.node.container_limits") == (
        {"rdma_unreachable": None, "rdma_memlock": memlock},
        {"warnings": ["rdma.node.evaluate: rdma.node.container_limits returned facts it does not fill, left out: rdma"]})
    assert _gather_from({"ansible_facts": "not a mapping"}, "rdma.node.ib_facts") == ({"rdma_unreachable": None}, {})


@pytest.mark.parametrize("warnings, shown", [
    (["reads \x1b]0;owned\x07fine\x1b[2J"], ["reads fine"]),
    ("one warning, not a list", ["one warning, not a list"]),
    ([7], ["7"]),
])
def test_a_nodes_warnings_reach_the_terminal_as_text(warnings, shown):
    rdma = {"ports": []}
    gathered, result = _gather_from({"ansible_facts": {"rdma": rdma}, "warnings": warnings}, "rdma.node.ib_facts")
    assert (gathered, result) == ({"rdma_unreachable": None, "rdma": rdma}, {"warnings": shown})
