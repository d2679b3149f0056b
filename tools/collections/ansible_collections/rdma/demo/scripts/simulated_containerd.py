# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The own containerd of a simulated node: the restart the demo's memlock remediation really does.

A simulated node (inventories/demo) is a directory on this machine. Its containerd runs with the
node's ``etc/containerd/config.toml``, whose root, state and socket are under the node directory, and
its pid is kept in ``run/containerd.pid`` there. node_remediation calls ``restart`` instead of
systemd (node_remediation_restart_command), so the machine's own containerd is never touched.
The inventory plugin rdma.demo.simulated_nodes gives each host this script's path
(``rdma_simulated_containerd``); ``tools/simulated_containerd.py`` of the source checkout runs it.

Usage::

    python simulated_containerd.py restart NODE_ROOT   # stop the node's containerd if it runs, start it again
    python simulated_containerd.py start NODE_ROOT     # start it unless it runs (a node boots with containerd running)
    python simulated_containerd.py stop NODE_ROOT      # also when its pidfile or the whole node root was deleted

A containerd is the node's when its command line says ``--config NODE_ROOT/etc/containerd/config.toml``:
``stop`` finds it by that argument where the pidfile is gone (a deleted copy of a demo inventory), and
says so.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

# Loaded by its path: this script runs as a plain program, not through Ansible's collection loader.
_SPEC = importlib.util.spec_from_file_location(
    "rdma_demo_sysfs_tree", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugins", "plugin_utils", "sysfs_tree.py"))
_TREE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_TREE)


def start(node_root: str) -> int:
    """Start the node's containerd in the background with the node's config; returns its pid."""
    config = _TREE.node_containerd_config(node_root)
    if not os.path.isfile(config):
        raise OSError("%s does not exist: %s is not a simulated node root" % (config, node_root))
    containerd = shutil.which("containerd")
    if not containerd:
        raise OSError("containerd is not installed")
    os.makedirs(os.path.join(node_root, "run"), exist_ok=True)
    os.makedirs(os.path.join(node_root, "var", "log"), exist_ok=True)
    with open(os.path.join(node_root, "var", "log", "containerd.log"), "ab") as log:
        # Its own session: it outlives this command and the Ansible task that ran it.
        process = subprocess.Popen([containerd, "--config", config], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   start_new_session=True, close_fds=True)
    with open(os.path.join(node_root, _TREE.CONTAINERD_PIDFILE), "w", encoding="utf-8") as handle:
        handle.write("%d\n" % process.pid)
    return process.pid


def what_was_stopped(node_root: str, stopped: dict, had_pidfile: bool) -> str:
    """One sentence: which containerd of the node was stopped, and how it was found."""
    pidfile = os.path.join(node_root, _TREE.CONTAINERD_PIDFILE)
    said = []
    if stopped["pidfile"]:
        said.append("pid %d (its pidfile)" % stopped["pidfile"])
    if stopped["orphans"]:
        said.append("%s found by --config %s, which %s" % (
            "pid " + ", ".join(map(str, stopped["orphans"])), _TREE.node_containerd_config(node_root),
            "its pidfile does not name" if had_pidfile else "ran without its pidfile (%s is gone)" % pidfile))
    if said:
        return "stopped the containerd of %s: %s" % (node_root, "; ".join(said))
    return "the containerd of %s was not running: %s, and no containerd runs with --config %s" % (
        node_root, "its pidfile names no running containerd" if had_pidfile else "there is no pidfile %s" % pidfile,
        _TREE.node_containerd_config(node_root))


def main(argv: list) -> int:
    if len(argv) != 2 or argv[0] not in ("restart", "start", "stop"):
        sys.stderr.write(__doc__.split("Usage::", 1)[1])
        return 2
    command, node_root = argv[0], os.path.abspath(argv[1])
    try:
        if command == "start":
            running = _TREE.node_containerd_pid(node_root)
            print("the containerd of %s runs: pid %d" % (node_root, running) if running else
                  "started the containerd of %s: pid %d" % (node_root, start(node_root)))
            return 0
        had_pidfile = os.path.lexists(os.path.join(node_root, _TREE.CONTAINERD_PIDFILE))
        stopped = _TREE.stop_node_containerd(node_root)
        if command == "restart":
            was = stopped["pidfile"] or (stopped["orphans"][0] if stopped["orphans"] else None)
            print("restarted the containerd of %s: pid %d (was %s)" % (node_root, start(node_root), was or "not running"))
        else:
            print(what_was_stopped(node_root, stopped, had_pidfile))
    except OSError as exc:
        sys.stderr.write("simulated_containerd %s %s: %s\n" % (command, node_root, exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
