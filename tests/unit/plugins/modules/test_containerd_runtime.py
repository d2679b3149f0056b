# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node half of rdma.node.containerd_runtime: the module's read-only inspection (stdlib only), run
in process. The action plugin through ansible-playbook: tests/integration/test_containerd_runtime_action.py."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.modules import containerd_runtime as module
from testpaths import containerd_config_copy


def test_node_module_reads_the_file_and_checks_the_spec(run_module, tmp_path):
    config = containerd_config_copy(tmp_path, "kind-fork_v2_runc_base_runtime_spec.toml")
    good, bad, array = tmp_path / "good.json", tmp_path / "bad.json", tmp_path / "array.json"
    good.write_text('{"ociVersion": "1.0.2-dev", "process": {"rlimits": []}}')
    bad.write_text('{"ociVersion": ')
    array.write_text("[]")
    statuses = {}
    for spec in (good, bad, array, tmp_path / "missing.json"):
        result = run_module(module, {"path": str(config), "base_runtime_spec": str(spec)}, check_mode=True)
        assert result["changed"] is False
        node = result["node"]
        assert node["content"] == config.read_text() and node["exists"] is True
        assert node["directory_exists"] is True and node["directory_writable"] is True
        statuses[spec.name] = node["spec_status"]
    assert statuses == {
        "good.json": "ok",
        "bad.json": "not valid JSON (Expecting value: line 1 column 16 (char 15))",
        "array.json": "not a JSON object",
        "missing.json": "missing",
    }


def test_node_module_skips_containerd_and_spec_without_validation(run_module, tmp_path):
    config = containerd_config_copy(tmp_path, "kind-fork_v2_runc_base_runtime_spec.toml")
    result = run_module(module, {"path": str(config), "base_runtime_spec": "/nonexistent.json", "validate": False})
    assert result["node"]["spec_status"] is None
    assert "containerd" not in result["node"] and "default_config" not in result["node"]


def test_node_module_reports_a_missing_file(run_module, tmp_path):
    result = run_module(module, {"path": str(tmp_path / "nodir" / "config.toml"), "state": "absent"})
    assert result["node"]["exists"] is False and result["node"]["content"] is None
    assert result["node"]["directory_exists"] is False


def test_node_module_sends_only_the_digest_of_a_content_the_controller_knows(run_module, tmp_path):
    import hashlib

    config = containerd_config_copy(tmp_path, "kind-fork_v2_runc_base_runtime_spec.toml")
    digest = hashlib.sha256(config.read_bytes()).hexdigest()
    other = hashlib.sha256(b"another content").hexdigest()
    args = {"path": str(config), "base_runtime_spec": "/etc/containerd/rdma-spec.json", "validate": False}
    known = run_module(module, dict(args, known_sha256=[other, digest]))["node"]
    assert known["content"] is None and known["content_known"] is True
    assert known["sha256"] == digest and known["exists"] is True and known["path"] == str(config)
    unknown = run_module(module, dict(args, known_sha256=[other]))["node"]
    assert unknown["content"] == config.read_text() and unknown["content_known"] is False
    assert unknown["sha256"] == digest
    # a missing file is never "known", not even for the digest the module reports for it ("")
    missing = run_module(module, dict(args, path=str(tmp_path / "missing.toml"), known_sha256=[""]))["node"]
    assert missing["exists"] is False and missing["content_known"] is False


def test_a_crash_on_the_node_is_reported_with_its_reason():
    from ansible_collections.rdma.node.plugins.action import containerd_runtime as action

    crashed = {"failed": True, "msg": "MODULE FAILURE: No start of json char found\nSee stdout/stderr for the exact error",
               "module_stderr": "Traceback (most recent call last):\n  File \"x\", line 1\nMemoryError: out of memory\n",
               "rc": 1}
    assert action._node_failure(crashed) == "rdma.node.containerd_runtime failed on the node: MemoryError: out of memory"
    assert action._node_failure({"failed": True, "msg": "/etc/x is a FIFO (named pipe), not a regular file."}) == \
        "/etc/x is a FIFO (named pipe), not a regular file."
    assert action._node_failure({"failed": True, "rc": 137}) == \
        "rdma.node.containerd_runtime failed on the node without a message (rc 137)."


def test_a_file_that_keeps_changing_fails_visibly_after_the_last_attempt():
    # The plan and write steps are replaced by stand-ins: every write finds the file changed.
    from ansible.errors import AnsibleActionFail

    from ansible_collections.rdma.node.plugins.action import containerd_runtime as action

    attempts = []
    plugin = action.ActionModule.__new__(action.ActionModule)
    plugin._plan = lambda args, task_vars: ({"path": "/etc/containerd/config.toml"}, "new", {
        "path": "/etc/containerd/config.toml", "sha256": "abc"})
    plugin._write = lambda path, text, backup, digest, task_vars: attempts.append(digest)
    with pytest.raises(AnsibleActionFail) as caught:
        plugin._containerd_runtime({"backup": False}, {})
    assert len(attempts) == action._CAS_ATTEMPTS == 10
    assert str(caught.value).startswith(
        "/etc/containerd/config.toml kept changing on the node while this task edited it (10 attempts")


def test_the_plan_key_holds_everything_the_plan_depends_on():
    from ansible_collections.rdma.node.plugins.action import containerd_runtime as action

    node = {"path": "/etc/containerd/config.toml", "sha256": "a" * 64, "base_runtime_spec": "/etc/containerd/spec.json",
            "containerd_version": "containerd github.com/containerd/containerd 1.6.20~ds1",
            "default_config": "version = 2\n"}
    args = {"path": "/etc/containerd/config.toml", "base_runtime_spec": "/etc/containerd/spec.json", "runtimes": None,
            "state": "present", "create_missing": False, "backup": False, "validate": None}
    key = action.ActionModule._plan_key(node, args)
    assert action.ActionModule._plan_key(dict(node), dict(args)) == key
    node_changes = {"path": "/etc/containerd/other.toml", "sha256": "b" * 64, "base_runtime_spec": "/root/spec.json",
                    "containerd_version": "containerd github.com/containerd/containerd 2.0.0",
                    "default_config": "version = 3\n"}
    option_changes = {"path": "config.toml", "base_runtime_spec": "~/spec.json", "runtimes": ["runc"],
                      "state": "absent", "create_missing": True, "backup": True, "validate": False}
    for name, value in node_changes.items():
        assert action.ActionModule._plan_key(dict(node, **{name: value}), args) != key, name
    for name, value in option_changes.items():
        assert action.ActionModule._plan_key(node, dict(args, **{name: value})) != key, name
    # and the planner's own code: the same key from other planner code is another key
    assert key["planner"] == action._planner_identity() and len(key["planner"]) == 64


def test_a_remembered_plan_that_is_not_well_formed_is_not_used(tmp_path):
    from ansible_collections.rdma.node.plugins.action import containerd_runtime as action
    from ansible_collections.rdma.node.plugins.plugin_utils._content_cache import ContentCache

    plugin = action.ActionModule.__new__(action.ActionModule)
    plugin._cache = ContentCache(str(tmp_path / "cache"), key_path=str(tmp_path / "cache.key"))
    for value in (None, [], {"config_version": "2", "warnings": []}, {"config_version": 2}, {"warnings": []}):
        plugin._cache.put_record({"k": 1}, value)
        assert plugin._cached_plan({"k": 1}) is None, value
    plugin._cache.put_record({"k": 1}, {"config_version": 2, "warnings": ["w"]})
    plan = plugin._cached_plan({"k": 1})
    assert plan.changed is False and plan.config_version == 2 and plan.warnings == ["w"]
    assert plan.runtimes_changed == [] and plan.runtimes_created == []
