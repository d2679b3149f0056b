"""`rdma.node.site -e rdma_remediate=true` on the demo inventory acts on the simulated nodes only.

The demo's nodes run on this machine (local connection). Their group_vars point the memlock
remediation into each node root: the spec, config.toml and systemd drop-in are the node's, and the
containerd restarted is the node's own (root, state and socket under the node root, restarted by
the development collection rdma.demo's scripts/simulated_containerd.py by its pidfile). The run here is the demo as a new user runs it, on a
copy of inventories/demo without any built tree, with a recording `systemctl` and `journalctl` first
on PATH: the machine's /etc/containerd and /etc/systemd must stay byte-identical and no systemctl
call may reach the machine, while every node gets the three files, a real restart of its containerd,
and the remediation findings in the report.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sysfs_tree

from playbook import run_playbook
from testpaths import COLLECTION_ROOT, demo_inventory_copy

# The remediation acts on the demo's first two nodes of each group (each starts a containerd of its own);
# the nodes 03 and 04 carry the physical layer's faults, which the remediation does not touch.
HOSTS = ["a100-node-01", "a100-node-02", "v100-node-01", "v100-node-02"]
WATCHED = [Path("/etc/containerd"), Path("/etc/systemd")]
RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
exit 1
"""


def snapshot(paths):
    """Every entry under ``paths``: file contents by hash, symlink targets, directories."""
    entries = {}
    for top in paths:
        if not top.exists():
            entries[str(top)] = "absent"
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    entries[path] = "link " + os.readlink(path)
                elif os.path.isdir(path):
                    entries[path] = "dir"
                else:
                    entries[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return entries


@pytest.fixture(scope="module")
def remediated(tmp_path_factory):
    base = tmp_path_factory.mktemp("demo-remediation")
    inventory = base / "inventory"
    demo_inventory_copy(inventory)
    fake_bin = base / "bin"
    fake_bin.mkdir()
    calls = base / "systemctl-calls.log"
    calls.write_text("")
    for tool in ("systemctl", "journalctl"):
        (fake_bin / tool).write_text(RECORDER.format(log=calls))
        (fake_bin / tool).chmod(0o755)
    before = snapshot(WATCHED)
    try:
        run = run_playbook("rdma.node.site", "-i", str(inventory), "--limit", ",".join(HOSTS), "-e", "rdma_remediate=true",
                           "-e", "fleet_report_dir=%s/report" % base,
                           env={"PATH": "%s:%s" % (fake_bin, os.environ["PATH"])})
        after = snapshot(WATCHED)
        nodes = inventory / ".nodes"
        pids = {host: simulated_pid(nodes / host) for host in HOSTS}
        sockets_answer = {host: ctr_plugins(nodes / host) for host in HOSTS}
        report = json.loads((base / "report/fleet-report.json").read_text())
        # A second run finds everything in place: nothing to write, nothing to restart.
        again = run_playbook("rdma.node.site", "-i", str(inventory), "--limit", ",".join(HOSTS), "-e", "rdma_remediate=true",
                             "-e", "fleet_report_dir=%s/report-again" % base,
                             env={"PATH": "%s:%s" % (fake_bin, os.environ["PATH"])})
        yield {"run": run, "before": before, "after": after, "calls": calls.read_text(), "nodes": nodes, "pids": pids,
               "plugins": sockets_answer, "report": report, "again": again, "after_again": snapshot(WATCHED),
               "pids_again": {host: simulated_pid(nodes / host) for host in HOSTS},
               "report_again": json.loads((base / "report-again/fleet-report.json").read_text())}
    finally:
        for host in HOSTS:
            subprocess.run([sys.executable, str(COLLECTION_ROOT / "tools/simulated_containerd.py"), "stop", str(inventory / ".nodes" / host)],
                           capture_output=True, check=False)


def simulated_pid(node_root):
    """The pid of the node's own containerd, when its pidfile names a containerd running with the node's config."""
    try:
        pid = int((node_root / "run/containerd.pid").read_text())
        argv = Path("/proc/%d/cmdline" % pid).read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if str(node_root / "etc/containerd/config.toml").encode() in argv else None


def ctr_plugins(node_root):
    address = sysfs_tree.containerd_sockets(str(node_root))[0]
    return subprocess.run(["ctr", "--address", address, "plugins", "ls"],
                          capture_output=True, text=True, timeout=30, check=False).stdout


def test_the_machine_is_untouched(remediated):
    assert remediated["after"] == remediated["before"] == remediated["after_again"]
    assert remediated["calls"] == "", "systemctl/journalctl reached the machine: %s" % remediated["calls"]


def test_each_node_got_the_three_files_in_its_own_root(remediated):
    for host in HOSTS:
        root = remediated["nodes"] / host
        spec = json.loads((root / "etc/containerd/rdma-spec.json").read_text())
        assert {"type": "RLIMIT_MEMLOCK", "soft": 18446744073709551615, "hard": 18446744073709551615} in spec["process"]["rlimits"]
        config = (root / "etc/containerd/config.toml").read_text()
        assert 'base_runtime_spec = "%s"' % (root / "etc/containerd/rdma-spec.json") in config
        dropin = (root / "etc/systemd/system/containerd.service.d/50-rdma-node-limits.conf").read_text()
        assert "LimitMEMLOCK=infinity" in dropin


def test_each_node_runs_its_own_containerd_with_the_written_config(remediated):
    for host in HOSTS:
        assert remediated["pids"][host], host
        # containerd parsed the spec: its CRI plugin loaded with the base runtime spec set.
        assert any(line.split()[1:2] == ["cri"] and line.split()[-1] == "ok" for line in remediated["plugins"][host].splitlines()), host
    assert len(set(remediated["pids"].values())) == len(HOSTS)


def test_the_report_shows_the_remediation_of_each_node(remediated):
    report = remediated["report"]
    for host in report["hosts"]:
        remediation = {f["check"]: f for f in host["findings"] if f["role"] == "node_remediation"}
        assert {"spec_written", "runtimes_pointed", "dropin_written", "containerd_restarted"} <= set(remediation), (
            host["name"], "\n".join(f["message"] for f in remediation.values() if f["severity"] != "info"))
        restarted = remediation["containerd_restarted"]["message"]
        # The restart command of the demo: the development collection rdma.demo's script, on the node's own root.
        assert "rdma/demo/scripts/simulated_containerd.py restart %s" % (remediated["nodes"] / host["name"]) in restarted
        assert restarted.endswith("it answers again (ctr version) and its CRI plugin is loaded.")
        assert "containerd_not_running" not in remediation and "rolled_back" not in remediation


def test_a_second_run_changes_nothing_and_restarts_nothing(remediated):
    assert remediated["pids_again"] == remediated["pids"]
    for host in remediated["report_again"]["hosts"]:
        checks = sorted(f["check"] for f in host["findings"] if f["role"] == "node_remediation")
        assert checks == ["probe_not_run"], (host["name"], checks)
