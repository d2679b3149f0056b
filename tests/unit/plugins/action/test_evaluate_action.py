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
