# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated RDMA hardware for the molecule hosts, built on the controller.

``python node_trees.py HARDWARE_YAML DEST`` builds, for every host of the hardware file:

* ``DEST/<host>/``: the node root of ``tools/sysfs_tree.py build`` (``sys/`` with ``class/infiniband``,
  ``class/net`` and ``devices/``, plus the driver side under ``proc/``, ``dev/``, ...). Mounted
  read-only at ``/srv/rdma-node`` in the host; the roles read ``/srv/rdma-node/sys``.
* ``DEST/<host>.infiniband/``: ``class/infiniband`` with each device as a plain directory. Mounted at
  ``/sys/class/infiniband`` for the real ``ibstat``: in the tree each device is a symlink into
  ``../../devices/...``, which would point into the host's real ``/sys/devices`` once mounted there.
  The device directories' own ``device`` links (and the cycles behind them) are left out.

Prints the host names, one a line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SYSFS_TREE = os.path.join(HERE, "..", "..", "..", "tools", "sysfs_tree.py")


def flatten_class(class_dir: str, dest: str) -> None:
    """Copy every entry of ``class_dir`` as a real directory, without its ``device`` link."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    for name in sorted(os.listdir(class_dir)):
        source = os.path.realpath(os.path.join(class_dir, name))
        shutil.copytree(source, os.path.join(dest, name), symlinks=True,
                        ignore=lambda directory, names: [n for n in names if n == "device"])


def main(argv: list) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: node_trees.py HARDWARE_YAML DEST\n")
        return 2
    hardware, dest = argv[1], argv[2]
    built = subprocess.run([sys.executable, SYSFS_TREE, "build", hardware, dest],
                           capture_output=True, text=True, check=False)
    if built.returncode != 0:
        sys.stderr.write(built.stderr or built.stdout)
        return built.returncode
    # sysfs_tree prints DEST/<host> for each host it built.
    hosts = [os.path.basename(line.strip()) for line in built.stdout.splitlines() if line.strip()]
    for host in hosts:
        flatten_class(os.path.join(dest, host, "sys", "class", "infiniband"), os.path.join(dest, host + ".infiniband"))
        print(host)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
