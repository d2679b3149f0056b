# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma.node.containerd_runtime through ansible-playbook on localhost, against files in a temp dir.

The action plugin runs for real (controller side), calls the real node module and the real
ansible.builtin.copy. These tests use validate=false, so they need no containerd; validation with
the real containerd is in tests/integration/test_containerd_runtime_real.py.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import ansible_collections.rdma.node as collection
from ansible_collections.rdma.node.plugins.modules import containerd_runtime as module
from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "config_toml"
COLLECTIONS_ROOT = Path(list(collection.__path__)[0]).parents[2]
KEY_LINE = re.compile(r"^[ \t]*base_runtime_spec[ \t]*=")


def run_play(tmp_path: Path, tasks: list, play_vars: dict | None = None) -> list:
    """Run ``tasks`` on localhost (each registered, errors ignored); return their results in order."""
    results = tmp_path / "results.json"
    remote_tmp = tmp_path / "remote-tmp"
    remote_tmp.mkdir(exist_ok=True)
    play_tasks = []
    for index, task in enumerate(tasks):
        play_tasks.append(dict(task, register="__r%d" % index, ignore_errors=True))
    play_tasks.append({
        "name": "Save the results",
        "ansible.builtin.copy": {
            "content": "{{ [%s] | to_json }}" % ", ".join("__r%d" % i for i in range(len(tasks))),
            "dest": str(results),
        },
        "check_mode": False,
        "diff": False,
    })
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{
        "hosts": "localhost", "gather_facts": False,
        "vars": dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable}, **(play_vars or {})),
        "tasks": play_tasks,
    }]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_ROOT), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
               ANSIBLE_REMOTE_TMP=str(remote_tmp), ANSIBLE_LOCAL_TEMP=str(tmp_path / "local-tmp"))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The candidate files the plugin transferred are gone with Ansible's temporary directory.
    assert list(remote_tmp.iterdir()) == []
    return json.loads(results.read_text())


def fixture_copy(tmp_path: Path, name: str, mode: int = 0o640) -> Path:
    target = tmp_path / "etc" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((FIXTURES / name).read_bytes())
    target.chmod(mode)
    return target


def only_key_lines_differ(before: str, after: str) -> bool:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal" and not all(KEY_LINE.match(line) for line in old[i1:i2] + new[j1:j2]):
            return False
    return True


@pytest.mark.parametrize("name", [
    "kind-fork_v2_runc_base_runtime_spec.toml",
    "eks-ami_containerd2_v3_default_base_runtime_spec.toml",
])
def test_check_apply_again_diff(tmp_path, name):
    config = fixture_copy(tmp_path, name)
    original = config.read_bytes()
    spec = "/etc/containerd/rdma-spec.json"
    task = {"rdma.node.containerd_runtime": {"path": str(config), "base_runtime_spec": spec, "validate": False}}
    backup_task = {"rdma.node.containerd_runtime": dict(task["rdma.node.containerd_runtime"], backup=True)}
    check, after_check, apply, again, again_diff = run_play(tmp_path, [
        dict(task, check_mode=True, diff=True),
        {"ansible.builtin.slurp": {"src": str(config)}},
        dict(backup_task, diff=True),
        task,
        dict(task, diff=True),
    ])
    expected = cc.plan_base_runtime_spec(original.decode(), spec).new_text

    # 1. check mode: reports the change and the diff, writes nothing
    assert check["changed"] is True and check["restart_required"] is True
    assert check["diff"] == {"before": original.decode(), "after": expected,
                             "before_header": str(config), "after_header": str(config)}
    assert base64.b64decode(after_check["content"]) == original
    assert check["validated"] is False and "backup_file" not in check
    # 2. apply: changed, backup of the old bytes, only base_runtime_spec lines differ, mode kept
    assert apply["changed"] is True and apply["restart_required"] is True
    assert apply["diff"]["before"] == original.decode() and apply["diff"]["after"] == expected
    assert apply["runtimes_changed"] == check["runtimes_changed"] and apply["runtimes_changed"]
    assert Path(apply["backup_file"]).read_bytes() == original
    assert config.read_text() == expected
    assert only_key_lines_differ(original.decode(), config.read_text())
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    # 3. again: nothing to do
    for result in (again, again_diff):
        assert result["changed"] is False and result["restart_required"] is False
        assert result["runtimes_changed"] == [] and "diff" not in result
    assert config.read_text() == expected


def test_state_absent_and_the_result_keys(tmp_path):
    config = fixture_copy(tmp_path, "eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml")
    original = config.read_text()
    removed, again = run_play(tmp_path, [
        {"rdma.node.containerd_runtime": {"path": str(config), "state": "absent", "validate": False}},
        {"rdma.node.containerd_runtime": {"path": str(config), "state": "absent", "validate": False}},
    ])
    assert {key: removed[key] for key in ("changed", "config_version", "runtimes_changed", "runtimes_created",
                                          "created", "restart_required", "validated", "path")} == {
        "changed": True, "config_version": 2, "runtimes_changed": ["nvidia"], "runtimes_created": [],
        "created": False, "restart_required": True, "validated": False, "path": str(config)}
    assert "base_runtime_spec" not in config.read_text()
    assert only_key_lines_differ(original, config.read_text())
    assert again["changed"] is False


def test_create_missing_nvidia_and_symlinked_path(tmp_path):
    config = fixture_copy(tmp_path, "containerd-1.6_config_default_v2.toml")
    link = tmp_path / "config.toml"
    link.symlink_to(config)
    (created,) = run_play(tmp_path, [
        {"rdma.node.containerd_runtime": {"path": str(link), "base_runtime_spec": "/etc/containerd/rdma-spec.json",
                                          "runtimes": ["nvidia", "runc"], "create_missing": True, "validate": False}},
    ])
    assert created["changed"] is True and created["path"] == str(config)
    assert created["runtimes_changed"] == ["nvidia", "runc"] and created["runtimes_created"] == ["nvidia"]
    assert link.is_symlink() and os.readlink(link) == str(config)  # written through the link
    runtimes = cc.tomllib.loads(config.read_text())["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    assert runtimes["nvidia"]["base_runtime_spec"] == runtimes["runc"]["base_runtime_spec"] == "/etc/containerd/rdma-spec.json"


def test_bad_input_fails_with_one_sentence_and_changes_nothing(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    files = {
        "syntax.toml": (FIXTURES / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes().replace(
            b'[plugins."io.containerd.grpc.v1.cri"]\n', b'[plugins."io.containerd.grpc.v1.cri"\n'),
        "v4.toml": (FIXTURES / "eks-ami_containerd2_v3_default_base_runtime_spec.toml").read_bytes().replace(
            b"version = 3", b"version = 4"),
        "nvidia-missing.toml": (FIXTURES / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes(),
        "relative.toml": (FIXTURES / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes(),
        "latin1.toml": b"version = 2\n# caf\xe9\n",
    }
    for name, data in files.items():
        (etc / name).write_bytes(data)
    (etc / "a-directory.toml").mkdir()
    spec = "/etc/containerd/rdma-spec.json"

    def task(name, **extra):
        return {"rdma.node.containerd_runtime": dict({"path": str(etc / name), "base_runtime_spec": spec,
                                                      "validate": False}, **extra)}

    results = run_play(tmp_path, [
        task("syntax.toml"),
        task("v4.toml"),
        task("nvidia-missing.toml", runtimes=["nvidia"]),
        task("relative.toml", base_runtime_spec="rdma-spec.json"),
        task("latin1.toml"),
        task("a-directory.toml"),
        task("syntax.toml", state="unknown"),
    ])
    messages = [result.get("msg") for result in results]
    assert all(result.get("failed") for result in results), results
    assert messages == [
        "%s is not valid TOML: Expected ']' at the end of a table declaration (at line 28, column 37); nothing was "
        "changed." % (etc / "syntax.toml"),
        "%s: 'version = 4' is not a containerd config schema this module knows (expected 1 for containerd 1.x "
        "'plugins.cri', 2 for 'plugins.\"io.containerd.grpc.v1.cri\"' or 3 for containerd 2.x "
        "'plugins.\"io.containerd.cri.v1.runtime\"'); nothing was changed." % (etc / "v4.toml"),
        "%s: CRI runtime 'nvidia' is not configured under 'plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes' "
        "(configured: runc, test-handler); set create_missing=true to add it." % (etc / "nvidia-missing.toml"),
        "base_runtime_spec must be an absolute path (containerd opens it as given), got 'rdma-spec.json'.",
        "%s is not UTF-8 text (byte 17), so it is not a TOML file." % (etc / "latin1.toml"),
        "%s is a directory, not a regular file; expected containerd's config.toml (TOML text)." % (etc / "a-directory.toml"),
        "value of state must be one of: present, absent, got: unknown",
    ]
    for name, data in files.items():
        assert (etc / name).read_bytes() == data, name
    assert sorted(os.listdir(etc)) == sorted(list(files) + ["a-directory.toml"])  # no backup, no temp file


# ------------------------------------------------------------------------------------------------
# The node half: the module's read-only inspection (stdlib only), run as a module
# ------------------------------------------------------------------------------------------------

def test_node_module_reads_the_file_and_checks_the_spec(run_module, tmp_path):
    config = fixture_copy(tmp_path, "kind-fork_v2_runc_base_runtime_spec.toml")
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
    config = fixture_copy(tmp_path, "kind-fork_v2_runc_base_runtime_spec.toml")
    result = run_module(module, {"path": str(config), "base_runtime_spec": "/nonexistent.json", "validate": False})
    assert result["node"]["spec_status"] is None
    assert "containerd" not in result["node"] and "default_config" not in result["node"]


def test_node_module_reports_a_missing_file(run_module, tmp_path):
    result = run_module(module, {"path": str(tmp_path / "nodir" / "config.toml"), "state": "absent"})
    assert result["node"]["exists"] is False and result["node"]["content"] is None
    assert result["node"]["directory_exists"] is False


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
