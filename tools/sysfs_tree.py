# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated sysfs trees on the command line; the code lives in the development collection rdma.demo
(``tools/collections/ansible_collections/rdma/demo/plugins/plugin_utils/sysfs_tree.py``) and is
re-exported here for the tests and benchmarks.

Usage::

    python tools/sysfs_tree.py unpack ARCHIVE DEST
    python tools/sysfs_tree.py pack TREE ARCHIVE
    python tools/sysfs_tree.py build HARDWARE_YAML DEST   # one node root per host: DEST/<host>/sys, ...

HARDWARE_YAML is a mapping of host name to hardware description, or an inventory file of the
``rdma.demo.simulated_nodes`` plugin (its ``hardware`` key).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

# Loaded by its path: no collection loader is needed to use it.
DEMO_COLLECTION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "collections", "ansible_collections", "rdma", "demo")
_SPEC = importlib.util.spec_from_file_location(
    "rdma_demo_sysfs_tree", os.path.join(DEMO_COLLECTION, "plugins", "plugin_utils", "sysfs_tree.py"))
_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MODULE)
globals().update({name: value for name, value in vars(_MODULE).items() if not name.startswith("__")})


def build_hardware_file(path: str, dest: str) -> list:  # noqa: F811  (accepts the inventory file too)
    """Build every host of a hardware YAML file, or of a simulated_nodes inventory file, under ``dest``."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        try:
            data = yaml.safe_load(handle)
        except yaml.YAMLError as exc:
            raise _MODULE.ArchiveError("%s is not valid YAML: %s" % (path, str(exc).replace("\n", " "))) from None
    if isinstance(data, dict) and "plugin" in data:
        data = data.get("hardware")
    return _MODULE.build_hosts(_MODULE.hardware_hosts(data, path), dest)


def main(argv: list) -> int:
    if len(argv) != 3 or argv[0] not in ("pack", "unpack", "build"):
        sys.stderr.write(__doc__.split("Usage::", 1)[1])
        return 2
    command, source, dest = argv
    try:
        if command == "pack":
            with open(dest, "wb") as handle:
                handle.write(_MODULE.pack(source))
        elif command == "unpack":
            # Unpack beside the destination, then swap it in: a bad archive leaves no half tree.
            with open(source, "rb") as handle:
                data = handle.read()
            staging = dest.rstrip("/") + ".unpacking"
            shutil.rmtree(staging, ignore_errors=True)
            try:
                _MODULE.unpack(data, staging)
            except (OSError, _MODULE.ArchiveError, ValueError):
                shutil.rmtree(staging, ignore_errors=True)
                raise
            shutil.rmtree(dest, ignore_errors=True)
            os.rename(staging, dest)
        else:
            for host in build_hardware_file(source, dest):
                print("%s/%s" % (dest, host))
    except (OSError, _MODULE.ArchiveError, KeyError, TypeError, ValueError) as exc:
        sys.stderr.write("sysfs_tree %s %s: %s\n" % (command, source, exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
