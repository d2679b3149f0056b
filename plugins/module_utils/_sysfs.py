# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read RDMA devices, ports and their netdevs from sysfs, the way ibstat and ibdev2netdev see them.

One pass over ``class/infiniband`` and ``class/net`` under a root (``/sys`` on a node, a fixture tree
in tests), no subprocess. Real trees are messy: entries are symlinks or plain directories, files may
be missing, unreadable (``carrier`` of an interface that is down gives EINVAL), lack a trailing
newline, or hold ``4: ACTIVE`` where ``5: LinkUp`` was expected. Whatever cannot be read becomes
``None``; a dangling symlink is skipped with a warning; nothing raises.
"""

from __future__ import annotations

import os
import re

from ansible_collections.rdma.node.plugins.module_utils._files import add_read_warning, read_lenient, text_names
from ansible_collections.rdma.node.plugins.module_utils._ib_common import (
    gid_interface_id,
    normalize_guid,
    parse_lid,
    parse_rate,
    phys_state,
    port_key,
    port_state,
)
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._numbers import parse_int, parse_uint

_PCI_ADDRESS = lazy_compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_NATURAL_PARTS = lazy_compile(r"([0-9]+)")
_PORT_NUMBER = lazy_compile(r"[0-9]{1,3}", re.ASCII)
_ATTR_MAX_BYTES = 4096
_ARPHRD_INFINIBAND = "32"


def read_attr(path):
    """Return a sysfs attribute without surrounding whitespace, or None when it cannot be read.

    Only regular files are opened (sysfs attributes are), with a bound: a FIFO or device planted
    in a tree reads as None with a warning (``_files.take_read_warnings``), never a hung task.
    """
    data = read_lenient(path, "a sysfs attribute", _ATTR_MAX_BYTES)
    if data is None:
        return None
    return data.decode("utf-8", "replace").strip()


def _read_int(path, base=10):
    """An unsigned number attribute (hex after ``0x``); anything else is null with a warning."""
    return parse_uint(read_attr(path), path, base)


def _read_checked(path, parse, expected):
    """An attribute read with ``parse``; text that is there but not ``expected`` is null with a warning."""
    text = read_attr(path)
    value = parse(text)
    if value is None and text:
        add_read_warning("%s holds %r, not %s; read as null." % (path, text[:40], expected))
    return value


def _read_guid(path):
    return _read_checked(path, normalize_guid, "a 64-bit GUID")


# The kernel prints every hardware address as colon-separated octets (sysfs_format_mac).
_HARDWARE_ADDRESS = lazy_compile(r"^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2})*$")


def _firmware_version(text):
    # Every driver's version has a digit ("20.39.1002", "1.27.0"); a word alone is a placeholder.
    return text if text and any(char.isdigit() for char in text) else None


def _hardware_address(text):
    return text.lower() if text and _HARDWARE_ADDRESS.match(text) else None


def _read_lid(path):
    return _read_checked(path, parse_lid, "a LID (a whole number, hex after 0x)")


def _read_numa_node(path):
    """``numa_node`` is -1 when the firmware does not say."""
    return parse_int(read_attr(path), path)


def _natural_key(name):
    return [int(part) if part.isascii() and part.isdigit() else part for part in _NATURAL_PARTS.split(name)]


def _list_dir(path):
    try:
        return sorted(text_names(path, os.listdir(path)), key=_natural_key)
    except OSError:
        return []


def _link_name(path):
    """The last component of a symlink's target (``driver`` -> ``mlx5_core``), or None."""
    try:
        return os.path.basename(os.readlink(path).rstrip("/")) or None
    except OSError:
        return None


class _Reader:
    """Collects facts and warnings for one sysfs root; every method tolerates missing files."""

    def __init__(self, root):
        self.root = root
        self.warnings = []

    def entries(self, class_dir):
        """Yield ``(name, path)`` of a class directory, skipping dangling symlinks with a warning."""
        base = os.path.join(self.root, class_dir)
        for name in _list_dir(base):
            path = os.path.join(base, name)
            if os.path.isdir(path):
                yield name, path
            elif os.path.islink(path):
                self.warnings.append(
                    "%s is a dangling symlink (-> %s); skipped" % (path, os.readlink(path))
                )

    def pci_function(self, path):
        """Resolve a ``device`` link to ``(pci_address, realpath)``; dangling links are reported.

        Without that link (a tree saved without it), the class entry's own link tells the function too:
        ``class/infiniband/irdma0 -> ../../devices/pci0000:17/.../0000:1a:00.0/infiniband/irdma0``."""
        link = os.path.join(path, "device")
        if not os.path.lexists(link):
            return self._function_above(path)
        real = os.path.realpath(link)
        if not os.path.isdir(real):
            if os.path.islink(link):
                self.warnings.append(
                    "%s is a dangling symlink (-> %s); its PCI details are unknown" % (link, os.readlink(link))
                )
            return None, None
        address = os.path.basename(real)
        return (address if _PCI_ADDRESS.match(address) else None), real

    @staticmethod
    def _function_above(path):
        """``(pci_address, path)`` of the PCI function whose ``<class>/<name>`` directory ``path`` resolves to."""
        real = os.path.realpath(path)
        holder, function = os.path.dirname(real), os.path.dirname(os.path.dirname(real))
        if os.path.basename(holder) != os.path.basename(os.path.dirname(path)) or not _PCI_ADDRESS.match(os.path.basename(function)):
            return None, None
        return (os.path.basename(function), function) if os.path.isdir(function) else (None, None)

    def device(self, name, path):
        node_type_name, node_type_code = _node_type(read_attr(os.path.join(path, "node_type")))
        pci_address, pci_path = self.pci_function(path)
        pci = pci_path or ""
        return {
            "name": name,
            "node_type": node_type_name,
            "node_type_code": node_type_code,
            "hca_type": read_attr(os.path.join(path, "hca_type")),
            "fw_ver": _read_checked(os.path.join(path, "fw_ver"), _firmware_version, "a firmware version"),
            "board_id": read_attr(os.path.join(path, "board_id")),
            "node_guid": _read_guid(os.path.join(path, "node_guid")),
            "sys_image_guid": _read_guid(os.path.join(path, "sys_image_guid")),
            "hw_rev": read_attr(os.path.join(path, "hw_rev")),
            "node_desc": read_attr(os.path.join(path, "node_desc")),
            "pci_address": pci_address,
            "numa_node": _read_numa_node(os.path.join(pci, "numa_node")) if pci else None,
            "driver": _link_name(os.path.join(pci, "driver")) if pci else None,
            "virtual_function": os.path.lexists(os.path.join(pci, "physfn")) if pci else None,
            "physical_function": (
                os.path.basename(os.path.realpath(os.path.join(pci, "physfn")))
                if pci and os.path.lexists(os.path.join(pci, "physfn")) else None
            ),
            "sriov_numvfs": _read_int(os.path.join(pci, "sriov_numvfs")) if pci else None,
            "ports": [],
            "_pci_path": pci_path,
        }

    def port(self, device, number, path):
        state_name, state_code = port_state(read_attr(os.path.join(path, "state")))
        phys_name, phys_code = phys_state(read_attr(os.path.join(path, "phys_state")))
        rate_text = read_attr(os.path.join(path, "rate"))
        gid = read_attr(os.path.join(path, "gids", "0"))
        cap_mask = _read_int(os.path.join(path, "cap_mask"), 16)
        link_layer = read_attr(os.path.join(path, "link_layer"))
        port = {
            "device": device["name"],
            "port": number,
            "state": state_name,
            "state_code": state_code,
            "phys_state": phys_name,
            "phys_state_code": phys_code,
            "rate": rate_text,
            "link_layer": link_layer,
            "lid": _read_lid(os.path.join(path, "lid")),
            "sm_lid": _read_lid(os.path.join(path, "sm_lid")),
            "lmc": _read_int(os.path.join(path, "lid_mask_count")),
            "sm_sl": _read_int(os.path.join(path, "sm_sl")),
            "cap_mask": None if cap_mask is None else "0x%08x" % cap_mask,
            "gid": gid,
            "port_guid": gid_interface_id(gid),
            "netdevs": [],
            "netdev_state": None,
        }
        port.update(parse_rate(rate_text))
        # RoCE ports (and bonds) name their netdev per GID in gid_attrs/ndevs; InfiniBand ports
        # leave those empty, so reading them there would only cost time.
        if link_layer != "InfiniBand":
            port["netdevs"] = self.gid_netdevs(path)
        return port

    def gid_netdevs(self, port_path):
        names = []
        ndevs = os.path.join(port_path, "gid_attrs", "ndevs")
        for index in _list_dir(ndevs):
            name = read_attr(os.path.join(ndevs, index))
            if name and name not in names:
                names.append(name)
        return names

    def netdev(self, name, path):
        return {
            "name": name,
            "type": read_attr(os.path.join(path, "type")),
            "address": _read_checked(os.path.join(path, "address"), _hardware_address, "a hardware address"),
            "carrier": read_attr(os.path.join(path, "carrier")),
            "operstate": read_attr(os.path.join(path, "operstate")),
            "mtu": _read_int(os.path.join(path, "mtu")),
            "dev_port": _read_int(os.path.join(path, "dev_port")),
            "dev_id": _read_int(os.path.join(path, "dev_id"), 16),
            "master": _link_name(os.path.join(path, "master")),
            "pci_path": self.pci_function(path)[1],
        }


def _node_type(text):
    """``1: CA`` -> ("CA", 1); unknown forms keep their text."""
    if not text:
        return None, None
    code, sep, name = text.partition(":")
    if sep and code.strip().isascii() and code.strip().isdigit():
        return name.strip() or None, int(code)
    return text, None


def _port_number(name):
    """A port directory's number: 0 (a switch's management port) to 255 (8 bits), in ASCII digits."""
    return int(name) if _PORT_NUMBER.fullmatch(name) and int(name) < 256 else None


def _ipoib_guid(address):
    """The port GUID inside a 20-byte IPoIB hardware address (its last 8 bytes)."""
    octets = (address or "").split(":")
    if len(octets) != 20:
        return None
    return normalize_guid("".join(octets[12:]))


def _port_of_netdev(netdev):
    """The port a PCI netdev belongs to, the way ibdev2netdev counts: dev_port, else dev_id, plus 1."""
    index = netdev["dev_port"] or netdev["dev_id"] or 0
    return index + 1


def _carrier_state(netdev):
    """``Up``/``Down`` as ibdev2netdev prints it: an unreadable carrier means the link is down."""
    return "Up" if netdev["carrier"] == "1" else "Down"


def gather(root="/sys"):
    """Return ``(facts, warnings)`` for the RDMA devices under ``root``.

    ``facts`` has the ``ansible_facts.rdma`` shape: ``devices`` (by name), flat ``ports``,
    ``netdevs`` (the ones that belong to a port, by name) and ``summary``.
    """
    reader = _Reader(root)
    devices = {}
    ports = []
    for name, path in reader.entries("class/infiniband"):
        device = reader.device(name, path)
        ports_dir = os.path.join(path, "ports")
        for entry in _list_dir(ports_dir):
            number = _port_number(entry)
            if number is None:
                add_read_warning("%s holds an entry named %r, not a port number; skipped." % (ports_dir, entry[:40]))
                continue
            ports.append(reader.port(device, number, os.path.join(ports_dir, entry)))
            device["ports"].append(number)
        devices[name] = device

    netdevs = {}
    if devices:
        netdevs = {name: reader.netdev(name, path) for name, path in reader.entries("class/net")}
    _attach_netdevs(devices, ports, netdevs)

    used = {}
    for port in ports:
        for name in port["netdevs"]:
            if name in netdevs and name not in used:
                used[name] = _public_netdev(netdevs[name], port)
    for device in devices.values():
        device.pop("_pci_path")
    facts = {"devices": devices, "ports": ports, "netdevs": used, "summary": summarize(devices, ports)}
    return facts, reader.warnings


def _attach_netdevs(devices, ports, netdevs):
    """Give each port its netdevs: gid_attrs (RoCE, bonds), then IPoIB by GUID, then PCI function."""
    by_guid = {}
    by_pci = {}
    for name, netdev in netdevs.items():
        if netdev["type"] == _ARPHRD_INFINIBAND:
            guid = _ipoib_guid(netdev["address"])
            if guid:
                by_guid.setdefault(guid, []).append(name)
        if netdev["pci_path"]:
            by_pci.setdefault(netdev["pci_path"], []).append(name)
    for port in ports:
        if not port["netdevs"] and port["port_guid"]:
            port["netdevs"] = list(by_guid.get(port["port_guid"], []))
        if not port["netdevs"]:
            pci_path = devices[port["device"]]["_pci_path"]
            port["netdevs"] = [
                name for name in by_pci.get(pci_path, [])
                if _port_of_netdev(netdevs[name]) == port["port"]
            ]
        first = netdevs.get(port["netdevs"][0]) if port["netdevs"] else None
        port["netdev_state"] = _carrier_state(first) if first else None


def _public_netdev(netdev, port):
    carrier = netdev["carrier"]
    return {
        "device": port["device"],
        "port": port["port"],
        "carrier": None if carrier not in ("0", "1") else carrier == "1",
        "operstate": netdev["operstate"],
        "mtu": netdev["mtu"],
        "master": netdev["master"],
        "address": netdev["address"],
        "pci_address": os.path.basename(netdev["pci_path"]) if netdev["pci_path"] else None,
    }


def summarize(devices, ports):
    """Counts an operator reads first: devices, ports, which ports are ACTIVE, the fastest link.

    The fastest link is an ACTIVE port's: a port without a link still shows a rate (the driver's
    "10 Gb/sec (4X)" of a Polling port), which is no link's speed."""
    rates = [port["rate_gbps"] for port in ports if port["rate_gbps"] is not None and port["state"] == "ACTIVE"]
    return {
        "device_count": len(devices),
        "port_count": len(ports),
        "active_ports": [port_key(p["device"], p["port"]) for p in ports if p["state"] == "ACTIVE"],
        "down_ports": [port_key(p["device"], p["port"]) for p in ports if p["state"] not in ("ACTIVE", None)],
        # A port whose state file is missing or unreadable is neither active nor down.
        "unknown_state_ports": [port_key(p["device"], p["port"]) for p in ports if p["state"] is None],
        "max_rate_gbps": max(rates) if rates else None,
    }
