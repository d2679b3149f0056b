"""A simulated node's own containerd is found and stopped by its --config argument (issue 24, item 19).

The real containerd, started by tools/simulated_containerd.py for a node root built by the demo's
tree builder. A deleted pidfile, or a deleted node root (a removed copy of a demo inventory), leaves
a containerd running: ``stop`` still finds it by ``--config <node root>/etc/containerd/config.toml``
and says how; where nothing runs it says why; a pidfile naming another process never gets that
process signalled.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import sysfs_tree

from testpaths import TOOLS

SCRIPT = str(TOOLS / "simulated_containerd.py")
NODE = {"n1": {"devices": {"mlx5_0": {"bdf": "0000:3b:00.0", "ports": {1: {"port_guid": "b859:9f03:00d4:0a31"}}}}}}


def simulated_containerd(command, node_root):
    return subprocess.run([sys.executable, SCRIPT, command, str(node_root)], capture_output=True, text=True, timeout=60, check=False)


def running(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().split(b"\0")[0].endswith(b"containerd")
    except OSError:
        return False


@pytest.fixture
def node_root(tmp_path):
    sysfs_tree.build_hosts(NODE, str(tmp_path / "nodes"))
    root = tmp_path / "nodes" / "n1"
    started = []
    yield root, started
    for pid in started:  # whatever a failed test left running, by its own id
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def start(node_root, started):
    proc = simulated_containerd("restart", node_root)
    assert proc.returncode == 0, proc.stderr
    pid = int((node_root / "run/containerd.pid").read_text())
    started.append(pid)
    socket = sysfs_tree.containerd_sockets(str(node_root))[0]
    deadline = time.monotonic() + 20
    while not os.path.exists(socket) and time.monotonic() < deadline:  # serving: it keeps running without its files
        time.sleep(0.05)
    assert running(pid) and os.path.exists(socket)
    return pid


def gone(pid, seconds=10):
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def test_stop_by_the_pidfile(node_root):
    root, started = node_root
    pid = start(root, started)
    proc = simulated_containerd("stop", root)
    assert proc.returncode == 0 and proc.stdout.strip() == "stopped the containerd of %s: pid %d (its pidfile)" % (root, pid)
    assert gone(pid) and not (root / "run/containerd.pid").exists()


def test_a_deleted_pidfile_still_finds_the_containerd_by_its_config(node_root):
    root, started = node_root
    pid = start(root, started)
    (root / "run/containerd.pid").unlink()
    proc = simulated_containerd("stop", root)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "stopped the containerd of %s: pid %d found by --config %s/etc/containerd/config.toml, which ran without " \
                                  "its pidfile (%s/run/containerd.pid is gone)" % (root, pid, root, root)
    assert gone(pid)


def test_a_deleted_node_root_still_finds_the_containerd_by_its_config(node_root):
    root, started = node_root
    pid = start(root, started)
    shutil.rmtree(root.parent)  # the whole copy of the inventory's nodes, as `rm -rf` of a demo copy leaves it
    proc = simulated_containerd("stop", root)
    assert proc.returncode == 0 and "pid %d found by --config %s/etc/containerd/config.toml" % (pid, root) in proc.stdout
    assert gone(pid)


def test_a_restart_replaces_an_orphan_instead_of_starting_a_second_containerd(node_root):
    root, started = node_root
    orphan = start(root, started)
    (root / "run/containerd.pid").unlink()
    new = start(root, started)
    assert new != orphan and gone(orphan) and running(new)
    assert simulated_containerd("stop", root).returncode == 0 and gone(new)


def test_nothing_running_says_why(node_root):
    root = node_root[0]
    proc = simulated_containerd("stop", root)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "the containerd of %s was not running: there is no pidfile %s/run/containerd.pid, and no containerd " \
                                  "runs with --config %s/etc/containerd/config.toml" % (root, root, root)


def test_a_pidfile_naming_another_process_never_signals_it(node_root):
    root = node_root[0]
    bystander = subprocess.Popen(["sleep", "30"])  # pylint: disable=consider-using-with
    try:
        (root / "run").mkdir(exist_ok=True)
        (root / "run/containerd.pid").write_text("%d\n" % bystander.pid)
        proc = simulated_containerd("stop", root)
        assert proc.returncode == 0 and "its pidfile names no running containerd" in proc.stdout
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait(10)
