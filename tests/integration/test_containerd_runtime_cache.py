# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd_runtime's controller cache, through ansible-playbook with the real containerd 1.6.

What the node module really sent is recorded outside the code under test: the host's Python is a
small wrapper script that runs the real interpreter and keeps a copy of every module's output (the
JSON the controller received) with its size. So "the second run received no file text" is read from
the bytes that crossed the connection, not from anything the action plugin says about itself.
Every run is a separate ansible-playbook process, so the cache is what persists between them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc
from harness import run_playbook

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "containerd" / "config_toml"
CONTAINERD = shutil.which("containerd") or "/usr/bin/containerd"
KIND = "kind-fork_v2_runc_base_runtime_spec.toml"
RUNTIMES = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes")
# A comment header that makes the file big enough for its transfer to stand out (2 MB).
HEADER = ("# " + "site notes and licence text " * 3 + "\n") * 23_000


class Node:
    """localhost reached through a recording Python, with a private controller cache."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.outputs = tmp_path / "module-outputs"
        self.outputs.mkdir()
        self.python = tmp_path / "recording-python"
        # Each module's stdout goes to a numbered file first, then to Ansible unchanged.
        self.python.write_text(
            "#!/bin/sh\n"
            'out="%s/$(date +%%s%%N).json"\n'
            '"%s" "$@" > "$out"\n'
            "rc=$?\n"
            'cat "$out"\n'
            "exit $rc\n" % (self.outputs, sys.executable))
        self.python.chmod(0o755)
        self.cache = tmp_path / "controller-cache"
        self.runs = 0

    def run(self, tasks: list, cache: Path | None = None, extra_env: dict | None = None) -> tuple:
        """Run ``tasks`` in a new ansible-playbook; (results, read outputs) of this run's module calls."""
        self.runs += 1
        remote_tmp = self.tmp_path / "remote-tmp"
        remote_tmp.mkdir(exist_ok=True)
        names = ["run %d task %d" % (self.runs, index) for index in range(len(tasks))]
        play = [{"name": "containerd_runtime on localhost", "hosts": "localhost", "gather_facts": False,
                 "tasks": [dict(task, name=name, ignore_errors=True) for name, task in zip(names, tasks)]}]
        inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                     "ansible_python_interpreter": str(self.python)}}}}
        before = set(os.listdir(self.outputs))
        env = {"ANSIBLE_REMOTE_TMP": str(remote_tmp), "ANSIBLE_LOCAL_TEMP": str(self.tmp_path / "local-tmp"),
               "ANSIBLE_PIPELINING": "0", "RDMA_NODE_CONTENT_CACHE": str(cache or self.cache),
               "RDMA_NODE_CONTENT_CACHE_KEY": str(self.tmp_path / "cache.key")}
        run = run_playbook(play, inventory=inventory, cwd=self.tmp_path, env=dict(env, **(extra_env or {})),
                           timeout=300)
        assert run.rc == 0, run.stdout[-3000:] + run.stderr
        new = sorted(set(os.listdir(self.outputs)) - before, key=lambda name: int(name.split(".")[0]))
        calls = []
        for name in new:
            raw = (self.outputs / name).read_bytes()
            output = json.loads(raw)
            if "node" in output:  # the read step of rdma.node.containerd_runtime
                calls.append({"size": len(raw), "node": output["node"],
                              "known_sha256": output["invocation"]["module_args"].get("known_sha256")})
        return [run.result(name, "localhost") for name in names], calls


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runtimes_containerd_reads(path: Path) -> dict:
    proc = subprocess.run([CONTAINERD, "--config", str(path), "config", "dump"], cwd="/", capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    node = tomllib.loads(proc.stdout)
    for part in RUNTIMES:
        node = node[part]
    return {name: runtime.get("base_runtime_spec") for name, runtime in node.items()}


def without_noise(result: dict) -> dict:
    """A task result without the keys that differ between any two runs."""
    return {key: value for key, value in result.items() if key not in ("invocation", "_ansible_no_log")}


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "etc" / "config.toml"
    path.parent.mkdir()
    path.write_text(HEADER + (FIXTURES / KIND).read_text(), newline="")
    return path


def task(config: Path, spec: Path, **options) -> dict:
    return {"rdma.node.containerd_runtime": dict({"path": str(config), "base_runtime_spec": str(spec)}, **options)}


def test_an_unchanged_file_crosses_the_connection_once(tmp_path, config, spec_file):
    node = Node(tmp_path)
    step = task(config, spec_file)
    original = config.read_text()
    assert len(original) > 2_000_000

    # 1. first run, empty cache: the node sends the whole file; the edit is validated and written
    (apply,), calls = node.run([step])
    assert apply["changed"] is True and apply["validated"] is True and apply["runtimes_changed"] == ["runc", "test-handler"]
    (read,) = calls
    assert read["known_sha256"] is None and read["node"]["content"] == original and read["size"] > 2_000_000
    written = config.read_text()
    assert runtimes_containerd_reads(config) == {"runc": str(spec_file), "test-handler": str(spec_file)}

    # 2. again, the file unchanged since the controller wrote it: only its digest comes back
    (again,), calls = node.run([step])
    (read,) = calls
    # offered: the text it wrote (newest first) and the text it read in step 1
    assert read["known_sha256"] == [sha256(config), hashlib.sha256(original.encode()).hexdigest()]
    assert read["node"]["content"] is None and read["node"]["content_known"] is True
    assert read["node"]["sha256"] == sha256(config) and read["size"] < 50_000

    # 3. and again: the plan of step 2 is remembered, so the text is not even read from the cache. The
    #    cached text is spoiled here (same size, other bytes): reading it would fail its digest, and the
    #    node would be asked a second time, for the full text.
    blob = node.cache / "blobs" / sha256(config)
    spoiled = b"#" * blob.stat().st_size
    blob.write_bytes(spoiled)
    (again_no_parse,), calls = node.run([step])
    assert [call["node"]["content"] for call in calls] == [None]
    assert blob.read_bytes() == spoiled  # never read: a read removes an entry that fails its digest

    # The same results as a run without any cache, which reads and parses the whole file
    (uncached,), calls = node.run([step], extra_env={"RDMA_NODE_CONTENT_CACHE_MAX_BYTES": "0"})
    assert calls[0]["known_sha256"] is None and calls[0]["node"]["content"] == written
    assert uncached["changed"] is False and uncached["validated"] is False and uncached["runtimes_changed"] == []
    assert without_noise(again) == without_noise(again_no_parse) == without_noise(uncached)
    assert config.read_text() == written

    # 4. edited behind the controller's back: a new digest, so the whole file is read and planned again
    edited = written.replace('base_runtime_spec = "%s"' % spec_file, 'base_runtime_spec = "/etc/other-spec.json"', 1)
    assert edited != written
    config.write_text(edited, newline="")
    (replanned,), calls = node.run([step])
    (read,) = calls
    # offered the digests the controller holds, none of which is the edited file's
    assert read["known_sha256"] and hashlib.sha256(edited.encode()).hexdigest() not in read["known_sha256"]
    assert read["node"]["content"] == edited and read["node"]["content_known"] is False
    assert replanned["changed"] is True and replanned["validated"] is True and replanned["runtimes_changed"] == ["runc"]
    assert config.read_text() == written  # back to the spec on every runtime, the rest as edited
    assert runtimes_containerd_reads(config) == {"runc": str(spec_file), "test-handler": str(spec_file)}


def test_check_mode_diff_and_backup_from_a_cached_text(tmp_path, config, spec_file):
    node = Node(tmp_path)
    node.run([task(config, spec_file)])  # the controller now holds the file as written
    current = config.read_text()
    other_spec = tmp_path / "other-spec.json"
    shutil.copy(spec_file, other_spec)
    expected = cc.plan_base_runtime_spec(current, str(other_spec)).new_text

    (check,), calls = node.run([dict(task(config, other_spec), check_mode=True, diff=True)])
    assert [call["node"]["content"] for call in calls] == [None]  # the diff's "before" came from the cache
    assert check["changed"] is True and check["validated"] is True
    assert check["diff"] == {"before": current, "after": expected, "before_header": str(config),
                             "after_header": str(config)}
    assert config.read_text() == current

    (apply,), calls = node.run([dict(task(config, other_spec, backup=True), diff=True)])
    assert [call["node"]["content"] for call in calls] == [None]
    assert apply["changed"] is True and apply["diff"]["before"] == current and apply["diff"]["after"] == expected
    assert Path(apply["backup_file"]).read_text() == current
    assert config.read_text() == expected
    assert runtimes_containerd_reads(config) == {"runc": str(other_spec), "test-handler": str(other_spec)}


def test_a_damaged_cache_entry_is_read_again_from_the_node(tmp_path, config, spec_file):
    node = Node(tmp_path)
    node.run([task(config, spec_file)])
    written = config.read_text()
    (blob,) = (node.cache / "blobs").glob(sha256(config))
    blob.write_bytes(blob.read_bytes()[:-100])  # truncated, as a full disk or a killed writer leaves it

    (again,), calls = node.run([task(config, spec_file)])
    # asked with the digest, the cached text fails its digest, so the node is asked again for the text
    assert [call["node"]["content_known"] for call in calls] == [True, False]
    assert calls[1]["known_sha256"] is None and calls[1]["node"]["content"] == written
    assert again["changed"] is False and again["runtimes_changed"] == [] and "warnings" not in again
    assert blob.read_text() == written  # stored again, whole


def test_an_unusable_cache_directory_costs_a_warning_and_nothing_else(tmp_path, config, spec_file):
    node = Node(tmp_path)
    (tmp_path / "a-file").write_text("not a directory")
    unusable = tmp_path / "a-file" / "cache"
    results, calls = node.run([task(config, spec_file), task(config, spec_file)], cache=unusable)
    apply, again = results
    assert apply["changed"] is True and again["changed"] is False
    assert [call["node"]["content"] is not None for call in calls] == [True, True]
    message = ("rdma.node.containerd_runtime cannot use its controller cache (cannot create the cache directory in "
               "%s: Not a directory); the whole file is read from the node every run." % unusable)
    replaced = cc.replaced_spec_warning(str(config), "runc", "/etc/containerd/cri-base.json", str(spec_file))
    assert apply["warnings"] == [replaced, message] and again["warnings"] == [message]
    assert runtimes_containerd_reads(config) == {"runc": str(spec_file), "test-handler": str(spec_file)}


def test_a_remembered_plan_repeats_the_plans_warnings(tmp_path, spec_file):
    # The default runtime is one the file does not configure: the planner warns, on every run.
    config = tmp_path / "etc" / "config.toml"
    config.parent.mkdir()
    config.write_text((FIXTURES / KIND).read_text().replace('default_runtime_name = "runc"',
                                                            'default_runtime_name = "crun"'))
    node = Node(tmp_path)
    step = task(config, spec_file)
    warning = ("%s: the default CRI runtime 'crun' is not configured in the file, so containerd runs it from its "
               "built-in definition without base_runtime_spec; add it to runtimes with create_missing=true to "
               "cover it." % config)
    (apply,), dummy = node.run([step])
    replaced = cc.replaced_spec_warning(str(config), "runc", "/etc/containerd/cri-base.json", str(spec_file))
    assert apply["changed"] is True and apply["warnings"] == [warning, replaced]  # the replacement only while it happens
    (from_text,), calls = node.run([step])  # planned from the cached text
    assert [call["node"]["content"] for call in calls] == [None]
    (from_plan,), calls = node.run([step])  # the remembered plan
    assert [call["node"]["content"] for call in calls] == [None]
    assert from_text["changed"] is False and from_text["warnings"] == [warning]
    assert without_noise(from_plan) == without_noise(from_text)


# -- a hostile node (issue 24, item 1) --------------------------------------------------------------

# Host A's registry password: it must never reach another host, whatever that host answers.
SECRET = "s3cret-of-host-a"
REGISTRY_AUTH = ('\n[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example:5000".auth]\n'
                 '  username = "pull"\n  password = "%s"\n' % SECRET)


def offered_log(stolen: Path) -> Path:
    return stolen.parent / "offered-digests"


def hostile_python(tmp_path: Path, stolen: Path, claim: str | None, keep_text: bool = False) -> Path:
    """A node that lies: it claims to hold the text of a digest, and keeps whatever the controller sends it.

    It runs the real module, then rewrites the read step's answer to "content_known" for the first digest
    it was offered (or for ``claim``, a digest it learned elsewhere), copies every file that the controller
    transferred for the write step (``replace_with``) into ``stolen``, and logs the digests it was offered.
    With ``keep_text`` it sends its own text but reports the claimed digest as that text's.
    """
    script = tmp_path / "hostile-python"
    script.write_text("#!%s\n" % sys.executable + textwrap.dedent("""\
        import json, os, shutil, subprocess, sys
        STOLEN, OFFERED, CLAIM, KEEP_TEXT = %r, %r, %r, %r
        proc = subprocess.run([sys.executable, *sys.argv[1:]], capture_output=True, text=True)
        out = json.loads(proc.stdout)
        args = out.get("invocation", {}).get("module_args", {})
        if args.get("replace_with"):
            shutil.copy(args["replace_with"], "%%s/%%d" %% (STOLEN, len(os.listdir(STOLEN))))
        node = out.get("node")
        if node is not None:
            with open(OFFERED, "a") as log:
                log.write(json.dumps(args.get("known_sha256")) + "\\n")
            claim = (args.get("known_sha256") or [CLAIM])[0]
            if claim and KEEP_TEXT:
                node.update(sha256=claim)
            elif claim:
                node.update(content=None, content_known=True, sha256=claim)
        sys.stdout.write(json.dumps(out))
        sys.stderr.write(proc.stderr)
        sys.exit(proc.returncode)
        """ % (str(stolen), str(offered_log(stolen)), claim, keep_text)))
    script.chmod(0o755)
    return script


def run_as_host(tmp_path: Path, host: str, python: Path, tasks: list, cache: Path) -> list:
    remote_tmp = tmp_path / ("remote-tmp-" + host)
    remote_tmp.mkdir(exist_ok=True)
    play = [{"hosts": host, "gather_facts": False, "tasks": [dict(step, ignore_errors=True) for step in tasks]}]
    inventory = {"all": {"hosts": {host: {"ansible_connection": "local", "ansible_python_interpreter": str(python)}}}}
    env = {"ANSIBLE_REMOTE_TMP": str(remote_tmp), "ANSIBLE_PIPELINING": "0", "RDMA_NODE_CONTENT_CACHE": str(cache),
           "RDMA_NODE_CONTENT_CACHE_KEY": str(tmp_path / "cache.key")}
    run = run_playbook(play, inventory=inventory, cwd=tmp_path, env=env, timeout=300)
    assert run.rc == 0, run.stdout[-3000:] + run.stderr
    return [task_result for play_result in run.data["plays"] for step in play_result["tasks"]
            for name, task_result in step["hosts"].items() if name == host]


@pytest.mark.parametrize("how", ["offered", "learned elsewhere"])
def test_a_hostile_node_never_receives_another_hosts_text(tmp_path, config, spec_file, how):
    cache = tmp_path / "controller-cache"
    config.write_text(config.read_text() + REGISTRY_AUTH, newline="")
    secret_digest = sha256(config)
    # Host A, honest, is planned (the controller now holds its text, credentials included) ...
    (first,) = run_as_host(tmp_path, "host-a", Path(sys.executable), [task(config, spec_file, validate=False)], cache)
    assert first["changed"] is True
    # ... then host B, at the same path, has a file of its own and a Python that lies about it.
    config.write_text((FIXTURES / KIND).read_text(), newline="")
    own = config.read_text()
    stolen = tmp_path / "stolen"
    stolen.mkdir()
    python = hostile_python(tmp_path, stolen, secret_digest if how == "learned elsewhere" else None)
    # B's options differ from A's, so a text of A's would need an edit: planned, and sent to B to write.
    other_spec = tmp_path / "other-spec.json"
    shutil.copy(spec_file, other_spec)

    (result,) = run_as_host(tmp_path, "host-b", python, [task(config, other_spec, validate=False)], cache)

    received = [path.read_text() for path in stolen.iterdir()]
    assert not [text for text in received if SECRET in text]
    assert SECRET not in config.read_text() and SECRET not in json.dumps(result)
    if how == "offered":
        # B was offered nothing (it never sent a text), so it had nothing to claim: its own file was edited.
        assert result["changed"] is True
        assert set(offered_log(stolen).read_text().splitlines()) == {"null"}
        assert config.read_text() == cc.plan_base_runtime_spec(own, str(other_spec)).new_text
    else:
        assert result["failed"] is True and config.read_text() == own
        assert result["msg"] == (
            "%s: the node answered with only the SHA-256 %s, which the controller did not offer it (a host is "
            "offered only digests of texts it sent or was sent); nothing was changed." % (config, secret_digest))


def test_a_hostile_node_cannot_make_the_controller_skip_another_hosts_edit(tmp_path, config, spec_file):
    cache = tmp_path / "controller-cache"
    needs_edit = config.read_text()
    digest = sha256(config)
    # Host B sends a text that needs no change, reported under the digest of host A's file, which does.
    config.write_text(cc.plan_base_runtime_spec(needs_edit, str(spec_file)).new_text, newline="")
    stolen = tmp_path / "stolen"
    stolen.mkdir()
    python = hostile_python(tmp_path, stolen, digest, keep_text=True)
    (lie,) = run_as_host(tmp_path, "host-b", python, [task(config, spec_file, validate=False)], cache)
    assert lie["failed"] is True
    assert lie["msg"].startswith("%s: the node reported the SHA-256 %s but sent a text whose SHA-256 is " % (config, digest))

    # Host A, honest, with that file: its edit is planned from its own text, not skipped.
    config.write_text(needs_edit, newline="")
    (honest,) = run_as_host(tmp_path, "host-a", Path(sys.executable), [task(config, spec_file, validate=False)], cache)
    assert honest["changed"] is True and honest["runtimes_changed"] == ["runc", "test-handler"]
    assert config.read_text() == cc.plan_base_runtime_spec(needs_edit, str(spec_file)).new_text


def test_a_forged_no_change_record_does_not_suppress_an_edit(tmp_path, config, spec_file):
    """Issue 24, item 3: whoever can write the cache directory, but has not the key, decides nothing."""
    node = Node(tmp_path)
    step = task(config, spec_file)
    node.run([step])  # writes the file
    node.run([step])  # unchanged: the plan "no change needed" is remembered for the file as written
    written = config.read_text()
    (record,) = [path for path in (node.cache / "records").iterdir()
                 if json.loads(path.read_bytes().partition(b"\n")[2])["key"].get("plan")]
    # The file is edited behind the controller's back (one runtime loses the spec) ...
    edited = written.replace('base_runtime_spec = "%s"' % spec_file, 'base_runtime_spec = "/etc/other-spec.json"', 1)
    config.write_text(edited, newline="")
    # ... and a "no change needed" record for the edited file is forged from the genuine one: the key
    # names the new digest, the file name and the checksum are computed as a writer without the key can.
    body = json.loads(record.read_bytes().partition(b"\n")[2])
    body["key"]["sha256"] = sha256(config)
    forged = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    name = hashlib.sha256(json.dumps(body["key"], sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    forged_path = node.cache / "records" / name
    forged_path.write_bytes(hashlib.sha256(forged).hexdigest().encode() + b"\n" + forged)

    (result,), calls = node.run([step])
    assert result["changed"] is True and result["runtimes_changed"] == ["runc"]
    assert config.read_text() == written
    assert not forged_path.exists() or forged_path.read_bytes().partition(b"\n")[2] != forged
