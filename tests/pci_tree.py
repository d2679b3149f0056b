"""Small PCI trees in sysfs form for the physical-layer readers' tests: functions under a root
complex with their bridges, RDMA device links, GPUs, AER files, IOMMU groups, and configuration
space bytes laid out as the PCIe Base Specification says (standard header, PCI Express capability,
ACS and ATS extended capabilities).

Synthetic by design: real configuration space dumps of switches with ACS set are not public with a
licence to copy; the layout below follows the specification, and the real machine's own config
space is read in tests/integration/test_physical_real_parts.py.
"""

from __future__ import annotations

import os
import struct

ACS_ORDER = ("source_validation", "translation_blocking", "p2p_request_redirect", "p2p_completion_redirect",
             "upstream_forwarding", "p2p_egress_control", "direct_translated_p2p")
PORT_TYPE_CODES = {"endpoint": 0, "root_port": 4, "upstream_port": 5, "downstream_port": 6}


def _bits(flags):
    return sum(1 << i for i, name in enumerate(ACS_ORDER) if (flags or {}).get(name))


def config_space(port_type="endpoint", acs_control=None, acs_capable=None, ats_enabled=None, size=4096):
    """Bytes of a configuration space: a PCI Express capability at 0x40, ACS at 0x100 and ATS at 0x140
    when asked for (``acs_control``/``ats_enabled`` None leaves the capability out)."""
    data = bytearray(size)
    struct.pack_into("<HH", data, 0, 0x15B3, 0x1021)
    struct.pack_into("<H", data, 6, 0x0010)  # Status: Capabilities List
    data[0x34] = 0x40
    data[0x40], data[0x41] = 0x10, 0x00  # PCI Express capability, last in the list
    struct.pack_into("<H", data, 0x42, 0x0002 | PORT_TYPE_CODES[port_type] << 4)
    if size <= 256:
        return bytes(data)
    caps = []
    if acs_control is not None:
        caps.append((0x000D, struct.pack("<HH", _bits(acs_capable if acs_capable is not None else dict.fromkeys(ACS_ORDER, True)),
                                         _bits(acs_control))))
    if ats_enabled is not None:
        caps.append((0x000F, struct.pack("<HH", 0x0000, 0x8000 if ats_enabled else 0x0000)))
    offset = 0x100
    for index, (cap_id, body) in enumerate(caps):
        next_offset = offset + 0x40 if index + 1 < len(caps) else 0
        struct.pack_into("<I", data, offset, cap_id | 1 << 16 | next_offset << 20)
        data[offset + 4:offset + 4 + len(body)] = body
        offset += 0x40
    return bytes(data)


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
    names = {"correctable": ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"),
             "fatal": ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP", "ECRC",
                       "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked")}
    names["nonfatal"] = names["fatal"]
    total = {"correctable": "TOTAL_ERR_COR", "fatal": "TOTAL_ERR_FATAL", "nonfatal": "TOTAL_ERR_NONFATAL"}[kind]
    lines = ["%s %d" % (name, counts.get(name, 0)) for name in names[kind]]
    return "\n".join(lines + ["%s %d" % (total, sum(counts.values()))]) + "\n"
