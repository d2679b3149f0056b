# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd_runtime against the real containerd 1.6 of Debian (``containerd`` package).

What containerd itself reads is the proof: ``containerd --config FILE config dump`` prints the
configuration as containerd parsed it (imports merged, schema migrated to its own version 2), and
these tests parse that output. Nothing is faked; ansible-playbook runs on localhost against files in
pytest's temporary directory. ``config dump`` starts no daemon and writes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc
from harness import LOCALHOST, run_playbook
from testpaths import COLLECTIONS_ROOT

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "containerd" / "config_toml"
CONTAINERD = shutil.which("containerd") or "/usr/bin/containerd"
SPEC_PATH = "/etc/containerd/rdma-spec.json"
V2_RUNTIMES = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes")


def read_fixture(name: str) -> str:
    with open(FIXTURES / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def version_1_kind() -> str:
    """The kind config in containerd 1.x's first layout (plugins.cri, no version line), derived here."""
    text = read_fixture("kind-fork_v2_runc_base_runtime_spec.toml")
    return text.replace('"io.containerd.grpc.v1.cri"', "cri").replace("version = 2\n", "")


# schema 1 and 2 inputs that containerd 1.6 reads: (name, text, runtimes it configures)
SCHEMA_1_2 = [
    ("containerd-1.6_config_default_v2.toml", read_fixture("containerd-1.6_config_default_v2.toml"), ["runc"]),
    ("eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml",
     read_fixture("eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml"), ["nvidia"]),
    ("kind-fork_v2_runc_base_runtime_spec.toml", read_fixture("kind-fork_v2_runc_base_runtime_spec.toml"),
     ["runc", "test-handler"]),
    ("kind-fork as version 1 (derived)", version_1_kind(), ["runc", "test-handler"]),
]


def config_dump(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CONTAINERD, "--config", str(path), "config", "dump"], cwd="/", capture_output=True,
                          text=True, timeout=60, check=False)


def dumped_runtimes(path: Path) -> dict:
    proc = config_dump(path)
    assert proc.returncode == 0, proc.stderr
    node = tomllib.loads(proc.stdout)
    assert node["version"] == 2  # containerd 1.6 migrates everything it reads to version 2
    for part in V2_RUNTIMES:
        node = node[part]
    return node


def containerd_label() -> str:
    words = subprocess.run([CONTAINERD, "--version"], capture_output=True, text=True, check=True).stdout.split()
    return "containerd %s" % words[2]


def run_play(tmp_path: Path, tasks: list, wrapper: list | None = None) -> list:
    """Run ``tasks`` on localhost (errors ignored); return their results in order."""
    remote_tmp = tmp_path / "remote-tmp"
    remote_tmp.mkdir(exist_ok=True)
    names = ["task %d" % index for index in range(len(tasks))]
    play = [{"name": "containerd_runtime on localhost", "hosts": "localhost", "gather_facts": False,
             "tasks": [dict(task, name=name, ignore_errors=True) for name, task in zip(names, tasks)]}]
    run = run_playbook(play, inventory=LOCALHOST, cwd=tmp_path, wrapper=wrapper or (), timeout=300,
                       env={"ANSIBLE_REMOTE_TMP": str(remote_tmp), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local-tmp")})
    assert run.rc == 0, run.stdout[-3000:] + run.stderr
    assert list(remote_tmp.iterdir()) == []  # the transferred candidates went with Ansible's temp dir
    return [run.result(name, "localhost") for name in names]


def task(path: Path, **options) -> dict:
    return {"rdma.node.containerd_runtime": dict({"path": str(path), "base_runtime_spec": SPEC_PATH}, **options)}


def test_containerd_is_1_6():
    assert containerd_label().startswith("containerd 1.6.")


# ------------------------------------------------------------------------------------------------
# The edited files, as containerd reads them
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, runtimes", SCHEMA_1_2, ids=[case[0] for case in SCHEMA_1_2])
def test_containerd_reads_base_runtime_spec_on_every_runtime(tmp_path, name, text, runtimes):
    before, after = tmp_path / "before.toml", tmp_path / "after.toml"
    before.write_text(text, newline="")
    plan = cc.plan_base_runtime_spec(text, SPEC_PATH, source=name)
    assert plan.runtimes_changed == runtimes
    after.write_text(plan.new_text, newline="")

    seen_before, seen_after = dumped_runtimes(before), dumped_runtimes(after)
    assert all(seen_before[rt]["base_runtime_spec"] != SPEC_PATH for rt in runtimes)
    assert {rt: seen_after[rt]["base_runtime_spec"] for rt in runtimes} == {rt: SPEC_PATH for rt in runtimes}
    # everything else containerd reads is the same as before the edit
    for rt in runtimes:
        seen_before[rt].pop("base_runtime_spec")
        seen_after[rt].pop("base_runtime_spec")
    assert seen_before == seen_after


@pytest.mark.parametrize("name, text, runtimes", SCHEMA_1_2, ids=[case[0] for case in SCHEMA_1_2])
def test_containerd_reads_a_created_runtime(tmp_path, name, text, runtimes):
    after = tmp_path / "after.toml"
    plan = cc.plan_base_runtime_spec(text, SPEC_PATH, runtimes=["rdma"], create_missing=True, source=name)
    after.write_text(plan.new_text, newline="")
    rdma = dumped_runtimes(after)["rdma"]
    assert rdma["base_runtime_spec"] == SPEC_PATH and rdma["runtime_type"] == "io.containerd.runc.v2"


def test_containerd_1_6_silently_ignores_a_version_3_file(tmp_path):
    # Why the plugin cannot trust containerd 1.6's exit status for a version 3 file.
    text = read_fixture("eks-ami_containerd2_v3_default_base_runtime_spec.toml")
    edited = tmp_path / "v3.toml"
    edited.write_text(cc.plan_base_runtime_spec(text, SPEC_PATH).new_text, newline="")
    proc = config_dump(edited)
    assert proc.returncode == 0
    assert SPEC_PATH not in proc.stdout and "/usr/sbin/runc" not in proc.stdout


# ------------------------------------------------------------------------------------------------
# Through ansible-playbook, validating with the real containerd
# ------------------------------------------------------------------------------------------------

def test_check_apply_again_with_validation(tmp_path, spec_file):
    config = tmp_path / "config.toml"
    config.write_text(read_fixture("kind-fork_v2_runc_base_runtime_spec.toml"), newline="")
    original = config.read_bytes()
    step = task(config, base_runtime_spec=str(spec_file))
    check, after_check, apply, again = run_play(tmp_path, [
        dict(step, check_mode=True, diff=True),
        {"ansible.builtin.slurp": {"src": str(config)}},
        dict(step, diff=True),
        step,
    ])
    # kind's runc named its own cri-base.json: replaced, and said so.
    assert check["changed"] is True and check["validated"] is True
    assert check["warnings"] == [cc.replaced_spec_warning(str(config), "runc", "/etc/containerd/cri-base.json", str(spec_file))]
    assert base64.b64decode(after_check["content"]) == original
    assert apply["changed"] is True and apply["validated"] is True
    assert apply["diff"]["before"] == original.decode() and apply["diff"]["after"] == config.read_text()
    assert apply["containerd_version"].startswith("containerd github.com/containerd/containerd 1.6.")
    assert again["changed"] is False and again["validated"] is False
    assert {rt: dumped_runtimes(config)[rt]["base_runtime_spec"] for rt in ("runc", "test-handler")} == {
        "runc": str(spec_file), "test-handler": str(spec_file)}


def test_missing_file_starts_from_containerd_config_default(tmp_path, spec_file):
    config = tmp_path / "containerd" / "config.toml"
    config.parent.mkdir()
    default = subprocess.run([CONTAINERD, "config", "default"], capture_output=True, text=True, check=True).stdout
    check, created, again = run_play(tmp_path, [
        dict(task(config, base_runtime_spec=str(spec_file)), check_mode=True, diff=True),
        dict(task(config, base_runtime_spec=str(spec_file)), diff=True),
        task(config, base_runtime_spec=str(spec_file)),
    ])
    expected = cc.plan_base_runtime_spec(default, str(spec_file)).new_text
    assert check["changed"] is True and check["created"] is True
    assert check["diff"]["before"] == "" and check["diff"]["after"] == expected
    assert created["changed"] is True and created["created"] is True and created["validated"] is True
    assert created["runtimes_changed"] == ["runc"] and created["config_version"] == 2
    assert config.read_text() == expected
    assert stat.S_IMODE(config.stat().st_mode) == 0o644
    assert dumped_runtimes(config)["runc"]["base_runtime_spec"] == str(spec_file)
    assert again["changed"] is False and again["created"] is False


def test_version_3_on_containerd_1_6_is_not_validated_and_says_so(tmp_path):
    label = containerd_label()
    skipped_file, required_file = tmp_path / "skipped.toml", tmp_path / "required.toml"
    for path in (skipped_file, required_file):
        path.write_text(read_fixture("eks-ami_containerd2_v3_default_base_runtime_spec.toml"), newline="")
    original = required_file.read_bytes()
    skipped, required = run_play(tmp_path, [task(skipped_file), task(required_file, validate=True)])

    assert skipped["changed"] is True and skipped["validated"] is False and skipped["config_version"] == 3
    assert skipped["warnings"] == [
        cc.replaced_spec_warning(str(skipped_file), "runc", "/etc/containerd/base-runtime-spec.json", SPEC_PATH),
        "%s was not validated: %s on the node reads config versions up to 2 and %s is version 3, which it would "
        "silently ignore." % (skipped_file, label, skipped_file)]
    assert required["failed"] is True
    assert required["msg"] == (
        "cannot validate %s: %s on the node reads config versions up to 2 and %s is version 3, which it would "
        "silently ignore; set validate=false to write it unvalidated." % (required_file, label, required_file))
    assert required_file.read_bytes() == original


def test_validation_failures_leave_the_file_untouched(tmp_path, spec_file):
    label = containerd_label()
    kind = read_fixture("kind-fork_v2_runc_base_runtime_spec.toml")
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    # A drop-in that replaces the whole CRI section (containerd 1.6 merges imports per plugin).
    (conf_d / "10-cri.toml").write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "pause:3.9"\n')
    # A drop-in that does not touch CRI: the relative import must resolve next to config.toml.
    (conf_d / "20-opt.toml").write_text('version = 2\n[plugins."io.containerd.internal.v1.opt"]\n  path = "/opt/x"\n')
    files = {
        "imports-cri.toml": kind.replace("version = 2\n", 'version = 2\nimports = ["conf.d/10-cri.toml"]\n'),
        "imports-opt.toml": kind.replace("version = 2\n", 'version = 2\nimports = ["conf.d/20-opt.toml"]\n'),
        "rejected.toml": kind.replace("version = 2\n", 'version = 2\noom_score = "high"\n'),
        "no-spec.toml": kind,
        "no-spec-check.toml": kind,
        "version-1.toml": version_1_kind(),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, newline="")
    spec = str(spec_file)
    results = run_play(tmp_path, [
        task(tmp_path / "imports-cri.toml", base_runtime_spec=spec),
        task(tmp_path / "imports-opt.toml", base_runtime_spec=spec),
        task(tmp_path / "rejected.toml", base_runtime_spec=spec),
        task(tmp_path / "no-spec.toml", base_runtime_spec=str(tmp_path / "missing.json")),
        dict(task(tmp_path / "no-spec-check.toml", base_runtime_spec=str(tmp_path / "missing.json")), check_mode=True),
        task(tmp_path / "version-1.toml", base_runtime_spec=spec),
    ])
    imports_cri, imports_opt, rejected, no_spec, no_spec_check, version_1 = results

    assert imports_cri["failed"] is True
    assert imports_cri["msg"] == (
        "%s reads %s with base_runtime_spec unset for runtime 'runc', not '%s' (config dump); a file it imports "
        "(%s) probably replaces that section; nothing was changed." % (
            label, tmp_path / "imports-cri.toml", spec, conf_d / "10-cri.toml"))
    assert imports_opt["changed"] is True and imports_opt["validated"] is True
    assert rejected["failed"] is True
    assert rejected["msg"] == (
        "%s rejects the new %s: containerd: failed to unmarshal TOML: (3, 1): Can't convert high(string) to int; "
        "nothing was changed." % (label, tmp_path / "rejected.toml"))
    assert no_spec["failed"] is True
    assert no_spec["msg"] == (
        "base_runtime_spec %s on the node is missing, and containerd's CRI plugin does not start without a "
        "loadable spec; create it first (rdma.node.oci_rlimits), nothing was changed." % (tmp_path / "missing.json"))
    assert no_spec_check["changed"] is True and no_spec_check["warnings"] == [
        cc.replaced_spec_warning(str(tmp_path / "no-spec-check.toml"), "runc", "/etc/containerd/cri-base.json", str(tmp_path / "missing.json")),
        "base_runtime_spec %s on the node is missing, and containerd's CRI plugin does not start without a "
        "loadable spec (check mode: an earlier task may create it)." % (tmp_path / "missing.json")]
    assert version_1["changed"] is True and version_1["config_version"] == 1 and version_1["validated"] is True
    assert any("containerd config version `1` has been deprecated" in warning for warning in version_1["warnings"])

    for name in ("imports-cri.toml", "rejected.toml", "no-spec.toml", "no-spec-check.toml"):
        assert (tmp_path / name).read_text() == files[name], name
    assert sorted(p.name for p in tmp_path.glob("*.toml*")) == sorted(files)  # no backup or temp file left


def test_read_only_directory(tmp_path, spec_file):
    # A read-only bind mount of the config's directory, private to the ansible-playbook process
    # (unshare -m): even root cannot write there. The mount ends with that process.
    etc = tmp_path / "etc"
    etc.mkdir()
    config = etc / "config.toml"
    config.write_text(read_fixture("kind-fork_v2_runc_base_runtime_spec.toml"), newline="")
    original = config.read_bytes()
    wrapper = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"',
               str(etc)]
    apply, check = run_play(tmp_path, [
        task(config, base_runtime_spec=str(spec_file), backup=True),
        dict(task(config, base_runtime_spec=str(spec_file)), check_mode=True),
    ], wrapper=wrapper)
    message = ("cannot write %s: its directory %s is not writable on the node (read-only file system or "
               "permissions); nothing was changed." % (config, etc))
    assert apply["failed"] is True and apply["msg"] == message
    assert check["failed"] is True and check["msg"] == message
    assert config.read_bytes() == original
    assert os.listdir(etc) == ["config.toml"]


# ------------------------------------------------------------------------------------------------
# Schema 1 with only the deprecated default_runtime table (issue 11), and other layouts TOML allows
# ------------------------------------------------------------------------------------------------

V2_DEFAULT_RUNTIME = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "default_runtime")
LEGACY_FIXTURES = ["k8s-the-hard-way-1.21_v1_default_runtime.toml",
                   "k8s-the-hard-way-1.10_v1_default_runtime_untrusted_gvisor.toml"]


def dumped(path: Path, table_path) -> dict:
    proc = config_dump(path)
    assert proc.returncode == 0, proc.stderr
    node = tomllib.loads(proc.stdout)
    for part in table_path:
        node = node[part]
    return node


@pytest.mark.parametrize("name", LEGACY_FIXTURES)
def test_containerd_reads_base_runtime_spec_on_the_schema_1_default_runtime(tmp_path, name):
    text = read_fixture(name)
    before, after = tmp_path / "before.toml", tmp_path / "after.toml"
    before.write_text(text)
    plan = cc.plan_base_runtime_spec(text, SPEC_PATH, source=name)
    assert plan.runtimes_changed == ["default_runtime"]
    after.write_text(plan.new_text)
    seen_before, seen_after = dumped(before, V2_DEFAULT_RUNTIME), dumped(after, V2_DEFAULT_RUNTIME)
    # containerd 1.6 reads the table (migrated to version 2's name) with the spec; the runtime_type set
    # here is what makes its CRI plugin run pods with this table (runtimes["default"]).
    assert seen_before["base_runtime_spec"] == "" and seen_after["base_runtime_spec"] == SPEC_PATH
    assert seen_after["runtime_type"] == "io.containerd.runtime.v1.linux"
    seen_after["base_runtime_spec"] = ""
    assert seen_before == seen_after
    untrusted = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "untrusted_workload_runtime")
    assert dumped(after, untrusted) == dumped(before, untrusted)


def test_schema_1_default_runtime_through_the_action_with_validation(tmp_path, spec_file):
    config = tmp_path / "config.toml"
    config.write_text(read_fixture(LEGACY_FIXTURES[0]))
    apply, again = run_play(tmp_path, [task(config, base_runtime_spec=str(spec_file), validate=True),
                                       task(config, base_runtime_spec=str(spec_file))])
    assert apply["changed"] is True and apply["validated"] is True and apply["config_version"] == 1
    assert apply["runtimes_changed"] == ["default_runtime"]
    assert dumped(config, V2_DEFAULT_RUNTIME)["base_runtime_spec"] == str(spec_file)
    assert again["changed"] is False


LAYOUT_TEXTS = {
    "runtimes table after runc": (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'),
    "dotted keys": ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                    '  runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'),
    "inline table": ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
                     '  runc = { runtime_type = "io.containerd.runc.v2" }\n'),
}


@pytest.mark.parametrize("name", sorted(LAYOUT_TEXTS))
def test_containerd_reads_the_spec_in_every_layout(tmp_path, name):
    config = tmp_path / "config.toml"
    config.write_text(cc.plan_base_runtime_spec(LAYOUT_TEXTS[name], SPEC_PATH).new_text)
    assert dumped_runtimes(config)["runc"]["base_runtime_spec"] == SPEC_PATH


def test_eight_parallel_runs_each_adding_a_runtime_all_land_or_fail_visibly(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(read_fixture("kind-fork_v2_runc_base_runtime_spec.toml"))
    remote_tmp = tmp_path / "remote-tmp"
    remote_tmp.mkdir()
    hosts = ["node%d" % n for n in range(8)]
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {host: {} for host in hosts}, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    results = tmp_path / "results"
    results.mkdir()
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{
        "hosts": "all", "gather_facts": False, "tasks": [
            {"rdma.node.containerd_runtime": {"path": str(config), "base_runtime_spec": SPEC_PATH,
                                              "runtimes": ["rt-{{ inventory_hostname }}"], "create_missing": True,
                                              "validate": False},
             "register": "__edit", "ignore_errors": True},
            {"ansible.builtin.copy": {"content": "{{ __edit | to_json }}",
                                      "dest": str(results) + "/{{ inventory_hostname }}.json"}},
        ]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_ROOT), ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="8",
               ANSIBLE_REMOTE_TMP=str(remote_tmp), ANSIBLE_LOCAL_TEMP=str(tmp_path / "local-tmp"),
               ANSIBLE_HOST_KEY_CHECKING="false",
               # the forks share containerd_runtime's controller cache, as they would in production
               RDMA_NODE_CONTENT_CACHE=str(tmp_path / "local-tmp" / "content-cache"))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                           str(playbook)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcome = {host: json.loads((results / ("%s.json" % host)).read_text()) for host in hosts}
    present = dumped_runtimes(config)
    for host, result in outcome.items():
        if result.get("failed"):  # allowed only as a visible failure that says why
            assert "kept changing on the node while this task edited it" in result["msg"], result
            assert "rt-%s" % host not in present
        else:
            assert result["changed"] is True and result["runtimes_created"] == ["rt-%s" % host]
            assert present["rt-%s" % host]["base_runtime_spec"] == SPEC_PATH  # never a lost update
    landed = [host for host in hosts if not outcome[host].get("failed")]
    print("parallel edits landed: %d of 8" % len(landed))
    assert landed  # at least the first writer lands
    assert sorted(os.listdir(tmp_path)) == ["config.toml", "hosts.json", "local-tmp", "play.yml", "remote-tmp",
                                            "results"]


def test_a_byte_order_mark_is_read_as_containerd_reads_it_and_kept(tmp_path, spec_file):
    """Issue 24, item 15: containerd reads a config.toml that starts with a UTF-8 BOM; so does the action."""
    config = tmp_path / "config.toml"
    config.write_bytes(b"\xef\xbb\xbf" + read_fixture("kind-fork_v2_runc_base_runtime_spec.toml").encode())
    assert dumped_runtimes(config)["runc"]["base_runtime_spec"] == "/etc/containerd/cri-base.json"  # containerd reads it
    step = task(config, base_runtime_spec=str(spec_file))
    apply, again = run_play(tmp_path, [step, step])
    assert apply["changed"] is True and apply["validated"] is True and apply["runtimes_changed"] == ["runc", "test-handler"]
    assert again["changed"] is False
    assert config.read_bytes().startswith(b"\xef\xbb\xbf") and not config.read_bytes().startswith(b"\xef\xbb\xbf" * 2)
    assert {rt: dumped_runtimes(config)[rt]["base_runtime_spec"] for rt in ("runc", "test-handler")} == {
        "runc": str(spec_file), "test-handler": str(spec_file)}
