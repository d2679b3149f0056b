"""Small PCI trees in sysfs form for the physical-layer readers' tests: functions under a root
complex with their bridges, RDMA device links, GPUs, AER files, IOMMU groups, and configuration
space bytes laid out as the PCIe Base Specification says (standard header, PCI Express capability,
ACS and ATS extended capabilities).

Synthetic by design: real configuration space dumps of switches with ACS set are not public with a
licence to copy; the layout (``sysfs_tree.config_space``) follows the specification, and the real
machine's own config space is read in tests/integration/test_physical_real_parts.py.
"""

from __future__ import annotations

import os

import sysfs_tree

# The configuration space and AER file layouts are the demo simulator's (rdma.demo's sysfs_tree), so the
# readers' tests and the demo's nodes hold the same bytes.
config_space = sysfs_tree.config_space


class PciTree:
    """A sysfs root with ``devices/pciDDDD:BB/...``, ``bus/pci/devices``, ``class/infiniband`` and
    ``kernel/iommu_groups``."""

    def __init__(self, root):
        self.root = str(root)

    def _dir(self, chain):
        domain_bus = chain[0].rsplit(":", 1)[0]
        return os.path.join(self.root, "devices", "pci" + domain_bus, *chain)

    def function(self, chain, vendor="0x15b3", pci_class="0x020700", numa=0, config=None, aer=None, iommu=None):
        """Create the function at the end of ``chain`` (root port first) and every bridge above it."""
        for depth in range(1, len(chain) + 1):
            os.makedirs(self._dir(chain[:depth]), exist_ok=True)
        path = self._dir(chain)
        for name, value in (("vendor", vendor), ("class", pci_class), ("numa_node", str(numa)), ("device", "0x1021")):
            with open(os.path.join(path, name), "w") as handle:
                handle.write(value + "\n")
        if config is not None:
            with open(os.path.join(path, "config"), "wb") as handle:
                handle.write(config)
        for kind, text in (aer or {}).items():
            with open(os.path.join(path, "aer_dev_" + kind), "w") as handle:
                handle.write(text)
        if iommu is not None:
            group, kind = iommu
            group_dir = os.path.join(self.root, "kernel", "iommu_groups", str(group))
            os.makedirs(group_dir, exist_ok=True)
            if kind is not None:
                with open(os.path.join(group_dir, "type"), "w") as handle:
                    handle.write(kind + "\n")
            os.symlink(os.path.relpath(group_dir, path), os.path.join(path, "iommu_group"))
        bus = os.path.join(self.root, "bus", "pci", "devices")
        os.makedirs(bus, exist_ok=True)
        link = os.path.join(bus, chain[-1])
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(path, bus), link)
        return path

    def bridge_files(self, chain, config=None, aer=None):
        """Give the bridge at the end of ``chain`` (already created) a config space and AER files."""
        return self.function(chain, vendor="0x10b5", pci_class="0x060400", config=config, aer=aer)

    def hca(self, name, chain, **kwargs):
        path = self.function(chain, **kwargs)
        device_dir = os.path.join(self.root, "class", "infiniband", name)
        os.makedirs(device_dir, exist_ok=True)
        os.symlink(os.path.relpath(path, device_dir), os.path.join(device_dir, "device"))
        return path

    def gpu(self, chain, **kwargs):
        return self.function(chain, vendor="0x10de", pci_class="0x030200", **kwargs)


def aer_text(kind, **counts):
    """An aer_dev_* file in the short names of current kernels, with its TOTAL_ERR_* line."""
    return sysfs_tree.aer_text(kind, counts)
