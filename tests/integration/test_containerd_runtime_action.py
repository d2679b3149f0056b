# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma.node.containerd_runtime through ansible-playbook on localhost, against files in a temp dir.

The action plugin runs for real (controller side), calls the real node module and the real
ansible.builtin.copy. These tests use validate=false, so they need no containerd; validation with
the real containerd is in tests/integration/test_containerd_runtime_real.py, the node module's own
inspection in tests/unit/plugins/modules/test_containerd_runtime.py.
"""

from __future__ import annotations

import base64
import difflib
import os
import re
import stat
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc
from harness import LOCALHOST, run_playbook
from testpaths import CONTAINERD_CONFIGS, containerd_config_copy

KEY_LINE = re.compile(r"^[ \t]*base_runtime_spec[ \t]*=")


def run_play(tmp_path: Path, tasks: list, play_vars: dict | None = None) -> list:
    """Run ``tasks`` on localhost (errors ignored); return their results in order."""
    remote_tmp = tmp_path / "remote-tmp"
    remote_tmp.mkdir(exist_ok=True)
    names = ["task %d" % index for index in range(len(tasks))]
    play = [{
        "name": "containerd_runtime on localhost", "hosts": "localhost", "gather_facts": False,
        "vars": play_vars or {},
        "tasks": [dict(task, name=name, ignore_errors=True) for name, task in zip(names, tasks)],
    }]
    run = run_playbook(play, inventory=LOCALHOST, cwd=tmp_path,
                       env={"ANSIBLE_REMOTE_TMP": str(remote_tmp), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local-tmp")})
    assert run.rc == 0, run.stdout[-3000:] + run.stderr
    # The candidate files the plugin transferred are gone with Ansible's temporary directory.
    assert list(remote_tmp.iterdir()) == []
    return [run.result(name, "localhost") for name in names]


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
    config = containerd_config_copy(tmp_path, name)
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
    config = containerd_config_copy(tmp_path, "eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml")
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
    config = containerd_config_copy(tmp_path, "containerd-1.6_config_default_v2.toml")
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
        "syntax.toml": (CONTAINERD_CONFIGS / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes().replace(
            b'[plugins."io.containerd.grpc.v1.cri"]\n', b'[plugins."io.containerd.grpc.v1.cri"\n'),
        "v5.toml": (CONTAINERD_CONFIGS / "eks-ami_containerd2_v3_default_base_runtime_spec.toml").read_bytes().replace(
            b"version = 3", b"version = 5"),
        "nvidia-missing.toml": (CONTAINERD_CONFIGS / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes(),
        "relative.toml": (CONTAINERD_CONFIGS / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes(),
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
        task("v5.toml"),
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
        "%s: 'version = 5' is not a containerd config schema this module knows (expected 1 for containerd 1.x "
        "'plugins.cri', 2 for 'plugins.\"io.containerd.grpc.v1.cri\"', 3 for containerd 2.0-2.2 "
        "'plugins.\"io.containerd.cri.v1.runtime\"' or 4 for containerd 2.3 and later, with the same CRI tables); "
        "nothing was changed." % (etc / "v5.toml"),
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
