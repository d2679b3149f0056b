# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the HCAs and GPUs sit in the PCI tree of sysfs, for the readers of the physical layer.

``/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:08.0/0000:3d:00.0`` says it all: the
root complex (``pci0000:3a``), the root port (``0000:3a:00.0``), the bridges of a PCIe switch
(``0000:3b:00.0``, ``0000:3c:08.0``) and the function itself. The readers of AER counters and of
the PCIe path between a GPU and its HCA both walk that chain; this module gives it to them with each
bridge's directory, so that they read files, never run ``lspci``.
"""

from __future__ import annotations

import collections
import os

from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import device_link, pci_function

# One PCI function of interest: its address, its real sysfs directory, and the bridges above it
# from the root port down, each as (address, directory).
PciNode = collections.namedtuple("PciNode", "address path bridges")


def chain_dirs(real_path):
    """``[(bridge address, bridge directory)]`` from the root port down to the function's parent.

    ``real_path`` is the resolved directory of a PCI function; the bridges are its ancestors whose
    names are PCI addresses, below the root complex directory (``pciDDDD:BB``).
    """
    function = pci_function(real_path)
    if not function.path or not function.bridges:
        return []
    dirs, current = [], function.path
    for _bridge in function.bridges:  # each bridge is one directory further up
        current = os.path.dirname(current)
        dirs.append(current)
    dirs.reverse()
    return list(zip(function.bridges, dirs))


def hca_nodes(root, devices):
    """``{device name: PciNode}`` of the RDMA devices on a physical function (a VF sits on its PF's path).

    A device whose PCI function cannot be found (its ``device`` link missing or dangling, and no class
    link into the function) is left out; the readers say so per device.
    """
    found = {}
    for name in sorted(devices or {}):
        device = devices[name] or {}
        if device.get("virtual_function"):
            continue
        function = pci_function(device_link(os.path.join(root, "class", "infiniband", name)))
        if function.path and function.address:
            found[name] = PciNode(function.address, function.path, chain_dirs(function.path))
    return found


def node_of(root, address):
    """The PciNode of the function ``address`` listed in ``bus/pci/devices``, or None."""
    function = pci_function(os.path.join(root, "bus", "pci", "devices", address))
    if not function.path:
        return None
    return PciNode(function.address or address, function.path, chain_dirs(function.path))
