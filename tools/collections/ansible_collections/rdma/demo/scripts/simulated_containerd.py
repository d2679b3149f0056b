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
    python simulated_containerd.py stop NODE_ROOT
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
    config = os.path.join(node_root, "etc", "containerd", "config.toml")
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


def main(argv: list) -> int:
    if len(argv) != 2 or argv[0] not in ("restart", "stop"):
        sys.stderr.write(__doc__.split("Usage::", 1)[1])
        return 2
    command, node_root = argv[0], os.path.abspath(argv[1])
    try:
        old = _TREE.node_containerd_pid(node_root)
        _TREE.stop_node_containerd(node_root)
        if command == "restart":
            print("restarted the containerd of %s: pid %d (was %s)" % (node_root, start(node_root), old or "not running"))
        else:
            print("stopped the containerd of %s (pid %s)" % (node_root, old) if old else "the containerd of %s was not running" % node_root)
    except OSError as exc:
        sys.stderr.write("simulated_containerd %s %s: %s\n" % (command, node_root, exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
