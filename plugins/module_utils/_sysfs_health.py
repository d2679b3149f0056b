# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health facts beside the port facts of ``_sysfs.gather``: counters, PCIe links, GPUs and their
locality to the HCAs, GPUDirect readiness, RoCE (netns mode, GID table) and the HCA's temperature.

Each reader takes the sysfs root (and, for GPUDirect, the procfs root) plus the facts ``gather``
returned, reads only files, and turns whatever is missing or unreadable into ``None``. Nothing here
raises on a messy tree; a node without GPUs or RDMA devices gets empty lists.

The field names are the interface the fleet-health checks read; ``plugins/modules/ib_facts.py``
documents each of them in its RETURN block.
"""

from __future__ import annotations

import collections
import ipaddress
import os
import re

from ansible_collections.rdma.node.plugins.module_utils._files import add_read_warning, read_lenient
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._numbers import parse_int, parse_uint
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, reader
from ansible_collections.rdma.node.plugins.module_utils._sysfs import read_attr

# ------------------------------------------------------------------------------------ counters

# Bit widths of the IBTA PortCounters fields the kernel exposes in ports/N/counters. Source: the
# PORT_PMA_ATTR table of drivers/infiniband/core/sysfs.c (name, counter, width, bit offset), which
# follows the PortCounters attribute of the IBTA spec (vol. 1, PerfMgt chapter). IB counters do not
# wrap: they stop at 2**width - 1, so a counter sitting there no longer moves.
PORT_COUNTER_WIDTH_BITS = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_wait": 32,
}

# mlx5 hw_counters whose rise means failed transfers, as NVSentinel reads them (64 bits: they do not
# saturate); they join the error counter samples so that a limit of node_health_counter_rise_limits
# can judge them.
HW_ERROR_COUNTERS = ("rnr_nak_retry_err", "req_transport_retries_exceeded", "local_ack_timeout_err", "implied_nak_seq_err",
                     "out_of_sequence", "packet_seq_err", "roce_slow_restart")

# Data and packet counters: 32 bits in the base PortCounters, 64 bits when the kernel chose the
# PortCountersExtended table (pma_attrs_ext / pma_attrs_noietf in sysfs.c) because the PMA
# advertises it. Only the full extended table adds the unicast_*/multicast_* files.
TRAFFIC_COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")
EXTENDED_ONLY_COUNTERS = ("unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets",
                          "multicast_rcv_packets")

# PortXmitData/PortRcvData (and the legacy counters_ext *_data_64) count octets divided by 4. The
# facts report bytes: the key gets a ``_bytes`` suffix and the value is multiplied by 4.
DATA_WORD_COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_data_64", "port_rcv_data_64")
BYTES_PER_DATA_WORD = 4

NO_PMA = "N/A (no PMA)"
_UINT32_MAX = 2 ** 32 - 1


def counter_key(name):
    """The fact key of a counter file: data counters say their unit (``port_xmit_data_bytes``)."""
    return name + "_bytes" if name in DATA_WORD_COUNTERS else name


def _parse_counter(text, path):
    """A counter file's text -> int; ``N/A (no PMA)`` and empty -> None; anything but an unsigned
    64-bit number -> None with a warning naming the file."""
    if text is None or text.startswith("N/A"):
        return None
    return parse_uint(text, path)


def _read_counter_dir(path):
    """``{file name: int or None}`` of a counters directory, or None when it does not exist."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    return {name: _parse_counter(read_attr(os.path.join(path, name)), os.path.join(path, name)) for name in names}


def data_width_bits(raw):
    """64 when the port shows the extended PortCounters (its extra files, or a traffic value above
    32 bits, which the base table cannot hold), else 32, the base table's width."""
    if any(name in raw for name in EXTENDED_ONLY_COUNTERS):
        return 64
    if any((raw.get(name) or 0) > _UINT32_MAX for name in TRAFFIC_COUNTERS):
        return 64
    return 32


def saturated_counters(raw, traffic_width):
    """Names (fact keys) of the counters that sit at the maximum of their IBTA width."""
    found = []
    for name, value in raw.items():
        width = PORT_COUNTER_WIDTH_BITS.get(name)
        if width is None and name in TRAFFIC_COUNTERS:
            width = traffic_width
        if width is not None and value is not None and width < 64 and value == 2 ** width - 1:
            found.append(counter_key(name))
    return found


def port_counters(port_path):
    """The counter facts of one port directory (``.../ports/N``)."""
    raw = _read_counter_dir(os.path.join(port_path, "counters"))
    ext_raw = _read_counter_dir(os.path.join(port_path, "counters_ext"))
    hw_raw = _read_counter_dir(os.path.join(port_path, "hw_counters"))
    lifespan = hw_raw.pop("lifespan", None) if hw_raw is not None else None
    # No counter read at all (i40iw's "N/A (no PMA)" in every file): no PortCounters table of any width.
    width = data_width_bits(raw) if raw is not None and any(v is not None for v in raw.values()) else None
    return {
        "counters": None if raw is None else {counter_key(n): _scaled(n, v) for n, v in raw.items()},
        "counters_ext": None if ext_raw is None else {counter_key(n): _scaled(n, v) for n, v in ext_raw.items()},
        "hw_counters": hw_raw,
        "hw_counters_lifespan_ms": lifespan,
        "counters_data_width_bits": width,
        "counters_saturated": saturated_counters(raw, width) if raw is not None else [],
    }


def _scaled(name, value):
    if value is not None and name in DATA_WORD_COUNTERS:
        return value * BYTES_PER_DATA_WORD
    return value


# ------------------------------------------------------------------------------------ PCI

_BDF = lazy_compile(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_HOST_BRIDGE = lazy_compile(r"^pci[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}$")
_SPEED = lazy_compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", re.IGNORECASE)

# PCIe generation by transfer rate per lane (GT/s), for messages such as "Gen3 x8 of Gen4 x16".
PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASS_PREFIX = "0x03"  # PCI base class 03: VGA (0x0300xx) and 3D controllers (0x0302xx)


def parse_link_speed(text):
    """``16.0 GT/s PCIe`` / ``8 GT/s`` / ``2.5 GT/s`` -> GT/s as float; ``Unknown`` or junk -> None."""
    match = _SPEED.match(text or "")
    return float(match.group(1)) if match else None


def parse_link_width(text, source):
    """``16`` / ``x16`` -> 16; ``0`` (no link) and unreadable -> None; junk -> None with a warning."""
    text = (text or "").strip()
    width = parse_uint(text[1:] if text[:1] in ("x", "X") else text, source)
    return width or None


def pci_location(real_path):
    """``(host_bridge, [bridge BDFs from the root port down], own BDF)`` of a PCI device path."""
    parts = real_path.split(os.sep)
    for index, part in enumerate(parts):
        if _HOST_BRIDGE.match(part):
            chain = [p for p in parts[index + 1:] if _BDF.match(p)]
            if chain:
                return part, chain[:-1], chain[-1]
            break
    return None, [], None


def _read_config_ids(pci_dir):
    """The first 4 bytes of config space; all ones means the function no longer answers.

    Binary, so not through ``read_attr`` (which decodes text); anyone may read these 4 bytes. Read
    like every other file of a tree: only a regular file, so a planted FIFO cannot hang the module."""
    data = read_lenient(os.path.join(pci_dir, "config"), "PCI config space", 4096)
    return None if data is None else data[:4]


PciFunction = collections.namedtuple("PciFunction", "exists dangling path host_bridge bridges address")


def pci_function(link):
    """What a ``device`` link (or a ``bus/pci/devices`` entry) points at: whether it exists or
    dangles, the real path, its root complex, the bridges above it and its own address."""
    if not os.path.lexists(link):
        return PciFunction(False, False, None, None, [], None)
    real = os.path.realpath(link)
    dangling = not os.path.isdir(real)
    host_bridge, bridges, address = pci_location(real)
    if address is None and _BDF.match(os.path.basename(real)):
        address = os.path.basename(real)
    return PciFunction(True, dangling, None if dangling else real, host_bridge, bridges, address)


def device_link(device_path):
    """What leads from an RDMA device's class directory to its PCI function: its ``device`` link, or,
    in a tree saved without that link, the function directory the class entry itself resolves into
    (``class/infiniband/irdma0 -> ../../devices/pci0000:17/.../0000:1a:00.0/infiniband/irdma0``), as
    the devices' reader finds their PCI addresses."""
    link = os.path.join(device_path, "device")
    if os.path.lexists(link):
        return link
    real = os.path.realpath(device_path)
    holder, function = os.path.dirname(real), os.path.dirname(os.path.dirname(real))
    if os.path.basename(holder) == os.path.basename(os.path.dirname(device_path)) and _BDF.match(os.path.basename(function)) \
            and os.path.isdir(function):
        return function
    return link


def pcie_link(root, device_path):
    """PCIe facts of the PCI function behind one RDMA device directory."""
    function = pci_function(device_link(device_path))
    facts = {
        "pci_address": function.address,
        "present": None,
        "absent_reason": None,
        "vendor": None,
        "device": None,
        "current_speed_gts": None,
        "max_speed_gts": None,
        "current_width": None,
        "max_width": None,
        "current_generation": None,
        "max_generation": None,
        "speed_below_max": None,
        "width_below_max": None,
    }
    if not function.exists:
        return facts  # an exported tree without device links: nothing to say either way
    if function.dangling:
        facts.update(present=False, absent_reason="the device link points at a PCI function that is gone")
        return facts
    pci = function.path
    bus_dir = os.path.join(root, "bus", "pci", "devices")
    if function.address and os.path.isdir(bus_dir) and not os.path.lexists(os.path.join(bus_dir, function.address)):
        facts.update(present=False, absent_reason="%s is no longer listed in bus/pci/devices" % function.address)
    elif _read_config_ids(pci) == b"\xff\xff\xff\xff":
        facts.update(present=False, absent_reason="config space reads all ones: the function does not answer")
    else:
        facts["present"] = True
    current = parse_link_speed(read_attr(os.path.join(pci, "current_link_speed")))
    maximum = parse_link_speed(read_attr(os.path.join(pci, "max_link_speed")))
    current_width = parse_link_width(read_attr(os.path.join(pci, "current_link_width")),
                                     os.path.join(pci, "current_link_width"))
    max_width = parse_link_width(read_attr(os.path.join(pci, "max_link_width")), os.path.join(pci, "max_link_width"))
    facts.update(
        vendor=read_attr(os.path.join(pci, "vendor")),
        device=read_attr(os.path.join(pci, "device")),
        current_speed_gts=current,
        max_speed_gts=maximum,
        current_width=current_width,
        max_width=max_width,
        current_generation=PCIE_GENERATIONS.get(current),
        max_generation=PCIE_GENERATIONS.get(maximum),
        speed_below_max=None if current is None or maximum is None else current < maximum,
        width_below_max=None if current_width is None or max_width is None else current_width < max_width,
    )
    return facts


# ------------------------------------------------------------------------------------ GPUs, locality

def gpus(root):
    """NVIDIA display/3D functions (vendor 0x10de, class 0x03xxxx) listed in ``bus/pci/devices``."""
    found = []
    bus_dir = os.path.join(root, "bus", "pci", "devices")
    try:
        entries = sorted(os.listdir(bus_dir))
    except OSError:
        return found
    for entry in entries:
        path = os.path.join(bus_dir, entry)
        if read_attr(os.path.join(path, "vendor")) != NVIDIA_VENDOR:
            continue
        pci_class = read_attr(os.path.join(path, "class"))
        if not (pci_class or "").startswith(DISPLAY_CLASS_PREFIX):
            continue
        function = pci_function(path)
        driver = os.path.join(path, "driver")
        found.append({
            "pci_address": entry,
            "device": read_attr(os.path.join(path, "device")),
            "class": pci_class,
            "driver": os.path.basename(os.readlink(driver)) if os.path.islink(driver) else None,
            "numa_node": parse_int(read_attr(os.path.join(path, "numa_node")), os.path.join(path, "numa_node")),
            "host_bridge": function.host_bridge,
            "pci_path": function.bridges,
        })
    return found


# From nearest to farthest. The nvidia-smi topo words are the closest equivalents, for readers who
# know them; the names here say what the two devices share.
RELATIONS = (
    "same_pcie_switch",  # share a bridge below the root port (a PCIe switch): nvidia-smi PIX/PXB
    "same_root_port",    # share only the root port: traffic turns in the root complex
    "same_host_bridge",  # same PCI root complex, different root ports: nvidia-smi PHB
    "same_numa_node",    # different root complexes of one NUMA node: nvidia-smi NODE
    "cross_numa",        # different NUMA nodes: nvidia-smi SYS
    "unknown",           # no shared bridge and no NUMA node to compare
)


def relation(gpu, hca):
    """``(relation, deepest shared bridge or None)`` of two PCI devices given as locality dicts."""
    shared = []
    if gpu["host_bridge"] and gpu["host_bridge"] == hca["host_bridge"]:
        for mine, theirs in zip(gpu["pci_path"], hca["pci_path"]):
            if mine != theirs:
                break
            shared.append(mine)
    if len(shared) >= 2:
        return "same_pcie_switch", shared[-1]
    if shared:
        return "same_root_port", shared[-1]
    if gpu["host_bridge"] and gpu["host_bridge"] == hca["host_bridge"]:
        return "same_host_bridge", None
    gpu_numa, hca_numa = gpu["numa_node"], hca["numa_node"]
    if gpu_numa is None or hca_numa is None or gpu_numa < 0 or hca_numa < 0:
        return "unknown", None
    return ("same_numa_node" if gpu_numa == hca_numa else "cross_numa"), None


def hca_locations(devices, ports, root):
    """Locality of every RDMA device on a physical PCI function (VFs sit on their PF's path)."""
    layers = {}
    for port in ports:
        layers.setdefault(port["device"], [])
        if port["link_layer"] and port["link_layer"] not in layers[port["device"]]:
            layers[port["device"]].append(port["link_layer"])
    found = {}
    for name, device in devices.items():
        if device.get("virtual_function"):
            continue
        function = pci_function(device_link(os.path.join(root, "class", "infiniband", name)))
        if not function.path:
            continue
        found[name] = {
            "pci_address": function.address,
            "numa_node": device.get("numa_node"),
            "host_bridge": function.host_bridge,
            "pci_path": function.bridges,
            "link_layers": layers.get(name, []),
        }
    return found


def locality(gpu_list, hcas):
    """For each GPU: every HCA ranked from nearest to farthest, and the nearest one."""
    result = []
    for gpu in gpu_list:
        ranked = []
        for name, hca in hcas.items():
            kind, bridge = relation(gpu, hca)
            shared_depth = 0 if bridge is None else hca["pci_path"].index(bridge) + 1
            ranked.append((RELATIONS.index(kind), -shared_depth, name, kind, bridge))
        ranked.sort()
        candidates = [{"device": name, "relation": kind, "shared_bridge": bridge,
                       "link_layers": hcas[name]["link_layers"]}
                      for _rank, _depth, name, kind, bridge in ranked]
        result.append({
            "gpu": gpu["pci_address"],
            "numa_node": gpu["numa_node"],
            "nearest_hca": candidates[0]["device"] if candidates else None,
            "relation": candidates[0]["relation"] if candidates else None,
            "candidates": candidates,
        })
    return result


# ------------------------------------------------------------------------------------ GPUDirect

PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
DMA_BUF_MIN_KERNEL = (5, 12)  # RDMA dma-buf memory registration (ib_umem_dmabuf) landed in 5.12
_DRIVER_VERSION = lazy_compile(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9]+(?:\.[0-9]+)+)")
_KERNEL_VERSION = lazy_compile(r"^([0-9]{1,9})\.([0-9]{1,9})")


def kernel_version(release):
    match = _KERNEL_VERSION.match(release or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _module_loaded(root, name):
    """A module is loaded when ``module/<name>`` exists and, where the kernel says, is ``live``."""
    path = os.path.join(root, "module", name)
    if not os.path.isdir(path):
        return False
    state = read_attr(os.path.join(path, "initstate"))
    return state in (None, "live")


def gpudirect(root, proc_root):
    """Which GPUDirect RDMA path the node offers, and what each one lacks.

    A tree without ``module`` (a saved copy of a node's ``/sys`` that left it out; a running kernel
    always has it) does not say which modules are loaded: neither path is ready, ``reason`` says why,
    and it is the one thing each path is said to lack."""
    if not os.path.isdir(os.path.join(root, "module")):
        unknown = "which kernel modules are loaded is unknown: %s has no module directory" % root
        return {"nvidia_module_loaded": None, "nvidia_driver_version": None, "nvidia_kernel_module_flavour": None,
                "peermem_module": None, "memory_peers": None, "memory_peer_clients": [], "kernel_release": None,
                "peermem_ready": False, "peermem_missing": [unknown], "dma_buf_ready": False, "dma_buf_missing": [unknown],
                "reason": unknown}
    peermem = next((name for name in PEERMEM_MODULES if _module_loaded(root, name)), None)
    try:
        peers = sorted(os.listdir(os.path.join(root, "kernel", "mm", "memory_peers")))
    except OSError:
        peers = None
    release = read_attr(os.path.join(proc_root, "sys", "kernel", "osrelease")) if proc_root else None
    version_text = read_attr(os.path.join(proc_root, "driver", "nvidia", "version")) if proc_root else None
    nvidia_loaded = _module_loaded(root, "nvidia")
    driver_version = read_attr(os.path.join(root, "module", "nvidia", "version"))
    if driver_version is None and version_text:
        match = _DRIVER_VERSION.search(version_text)
        driver_version = match.group(1) if match else None
    flavour = None
    if version_text and "Open Kernel Module" in version_text:
        flavour = "open"
    elif version_text and "Kernel Module" in version_text:
        flavour = "proprietary"
    elif nvidia_loaded:
        taint = read_attr(os.path.join(root, "module", "nvidia", "taint"))
        if taint is not None:
            flavour = "proprietary" if "P" in taint else "open"
    kernel = kernel_version(release)

    peermem_missing = []
    if not nvidia_loaded:
        peermem_missing.append("the nvidia module is not loaded")
    if peermem is None:
        peermem_missing.append("neither nvidia_peermem nor nv_peer_mem is loaded")
    if peers is None:
        peermem_missing.append("kernel/mm/memory_peers is absent (no peer-memory API in ib_core)")
    dma_buf_missing = []
    if kernel is None:
        dma_buf_missing.append("the kernel release is unknown")
    elif kernel < DMA_BUF_MIN_KERNEL:
        dma_buf_missing.append("kernel %s is older than 5.12" % release)
    if not nvidia_loaded:
        dma_buf_missing.append("the nvidia module is not loaded")
    elif flavour != "open":
        dma_buf_missing.append("the NVIDIA kernel module is %s, DMA-BUF needs the open one" % (flavour or "of unknown flavour"))
    return {
        "nvidia_module_loaded": nvidia_loaded,
        "nvidia_driver_version": driver_version,
        "nvidia_kernel_module_flavour": flavour,
        "peermem_module": peermem,
        "memory_peers": peers is not None,
        "memory_peer_clients": peers or [],
        "kernel_release": release,
        "peermem_ready": not peermem_missing,
        "peermem_missing": peermem_missing,
        "dma_buf_ready": not dma_buf_missing,
        "dma_buf_missing": dma_buf_missing,
        "reason": None,
    }


# ------------------------------------------------------------------------------------ RoCE

NETNS_PARAMETER = "module/ib_core/parameters/netns_mode"
_ZERO_GID = lazy_compile(r"^[0:]+$")
# The kernel names GID table entries by their index, 0 to the table's size (at most a few thousand).
_GID_INDEX = lazy_compile(r"[0-9]{1,9}", re.ASCII)


def netns_mode(root):
    """``shared``/``exclusive`` from ib_core's ``netns_mode`` parameter, or None.

    The parameter is bound to the variable ``rdma system set netns`` changes
    (``ib_devices_shared_netns`` in drivers/infiniband/core/device.c), so it shows the current
    mode, not only the boot-time one.
    """
    value = read_attr(os.path.join(root, NETNS_PARAMETER))
    if value in ("Y", "1"):
        return "shared"
    if value in ("N", "0"):
        return "exclusive"
    return None


def gid_address(gid):
    """``(address, family)`` a RoCE GID stands for: IPv4-mapped GIDs give the IPv4 address."""
    try:
        address = ipaddress.IPv6Address(gid)
    except ValueError:
        return None, None
    if address.ipv4_mapped:
        return str(address.ipv4_mapped), "ipv4"
    return str(address), "ipv6"


def roce_gids(port_path, device, number):
    """The populated GID entries of one Ethernet port with their type and netdev."""
    entries = []
    gids_dir = os.path.join(port_path, "gids")
    try:
        names = os.listdir(gids_dir)
    except OSError:
        return entries
    indexes = []
    for name in names:
        if _GID_INDEX.fullmatch(name):
            indexes.append(int(name))
        else:
            shown = name if len(name) <= 40 else name[:40] + "..."
            add_read_warning("%s holds a file named %r, not a GID index; skipped." % (gids_dir, shown))
    indexes.sort()
    for index in indexes:
        gid = read_attr(os.path.join(gids_dir, str(index)))
        if not gid or _ZERO_GID.match(gid):
            continue
        address, family = gid_address(gid)
        entries.append({
            "device": device,
            "port": number,
            "index": index,
            "gid": gid,
            "type": read_attr(os.path.join(port_path, "gid_attrs", "types", str(index))),
            "netdev": read_attr(os.path.join(port_path, "gid_attrs", "ndevs", str(index))) or None,
            "address": address,
            "address_family": family,
        })
    return entries


def _proc_lines(proc_root, *parts):
    data = read_lenient(os.path.join(proc_root, *parts), "a /proc file", 16 * 1024 * 1024)
    return None if data is None else data.decode("utf-8", "replace").splitlines()


def _le_ipv4(hex_text):
    """A /proc/net/route address: 8 hex digits of a little-endian 32-bit value."""
    return ipaddress.IPv4Address(int.from_bytes(bytes.fromhex(hex_text), "little"))


def netdev_ipv4(proc_root):
    """``{netdev: [IPv4 addresses]}``: the local (``/32 host LOCAL``) entries of ``net/fib_trie``,
    each given to the interface whose connected route (no gateway) in ``net/route`` holds it, the
    most specific one winning. No command, no netlink."""
    trie, routes = _proc_lines(proc_root, "net", "fib_trie"), _proc_lines(proc_root, "net", "route")
    if trie is None or routes is None:
        return None
    local, candidate = [], None
    for line in trie:
        stripped = line.strip()
        if stripped.startswith("|--"):
            candidate = stripped[3:].strip()
        elif stripped == "/32 host LOCAL" and candidate and candidate not in local:
            local.append(candidate)
    connected = []
    for line in routes[1:]:
        fields = line.split()
        try:
            if len(fields) >= 8 and int(fields[2], 16) == 0:
                connected.append((fields[0], ipaddress.IPv4Network("%s/%s" % (_le_ipv4(fields[1]), _le_ipv4(fields[7])))))
        except ValueError:
            continue
    found = {}
    for text in local:
        try:
            address = ipaddress.IPv4Address(text)
        except ValueError:
            continue
        holders = [(net.prefixlen, name) for name, net in connected if address in net and net.prefixlen > 0]
        if holders:
            found.setdefault(max(holders)[1], []).append(text)
    return found


def netdev_ipv6(proc_root):
    """``{netdev: [IPv6 addresses]}`` from ``net/if_inet6`` (address, index, prefix, scope, flags, name)."""
    lines = _proc_lines(proc_root, "net", "if_inet6")
    if lines is None:
        return None
    found = {}
    for line in lines:
        fields = line.split()
        if len(fields) == 6 and len(fields[0]) == 32:
            try:
                address = ipaddress.IPv6Address(int(fields[0], 16))
            except ValueError:
                continue
            found.setdefault(fields[5], []).append(str(address))
    return found


def roce_netdev_addresses(netdevs, proc_root):
    """IP addresses of the given netdevs, for comparing them with the RoCE GIDs; None when unknown."""
    if not proc_root:
        return None
    ipv4, ipv6 = netdev_ipv4(proc_root), netdev_ipv6(proc_root)
    if ipv4 is None and ipv6 is None:
        return None
    return {name: {"ipv4": (ipv4 or {}).get(name, []) if ipv4 is not None else None,
                   "ipv6": (ipv6 or {}).get(name, []) if ipv6 is not None else None} for name in netdevs}


# ------------------------------------------------------------------------------------ temperature

# The mlx5 driver registers a hwmon device named "mlx5" on each PCI function from Linux 6.6
# (drivers/net/ethernet/mellanox/mlx5/core/hwmon.c): one temperature channel per ASIC/platform sensor
# ("asic"), plus the cable module's when it reports one ("Module0"). Each channel has temp<N>_input,
# temp<N>_highest (the highest since the last reset) and temp<N>_crit (the sensor's high threshold),
# in millidegrees Celsius, and temp<N>_label.
NO_HWMON = "the kernel exposes no hwmon temperature for it (of the RDMA drivers, mlx5 registers one, from Linux 6.6)"
NO_PCI_FUNCTION = "it has no PCI function in this sysfs tree (no device link), so no hwmon device to read"
_TEMP_INPUT = lazy_compile(r"^temp([0-9]{1,3})_input$")
_MILLIDEGREES = lazy_compile(r"^-?[0-9]{1,7}$")


def _celsius(text):
    """A hwmon millidegree value as degrees Celsius; None for anything else."""
    if text is None or not _MILLIDEGREES.match(text):
        return None
    return int(text) / 1000.0


def hwmon_temperatures(pci_dir):
    """``(sensors, reason)`` of the hwmon devices of one PCI function: each sensor's label and its
    current, highest and critical temperature in degrees Celsius; ``reason`` says why there are none."""
    try:
        devices = sorted(name for name in os.listdir(os.path.join(pci_dir, "hwmon")) if name.startswith("hwmon"))
    except OSError:
        return [], NO_HWMON
    sensors = []
    for device in devices:
        directory = os.path.join(pci_dir, "hwmon", device)
        try:
            channels = sorted(int(m.group(1)) for m in map(_TEMP_INPUT.match, os.listdir(directory)) if m)
        except OSError:
            continue
        for channel in channels:
            prefix = os.path.join(directory, "temp%d_" % channel)
            sensors.append({
                "hwmon": device,
                "label": read_attr(prefix + "label") or "temp%d" % channel,
                "input_celsius": _celsius(read_attr(prefix + "input")),
                "highest_celsius": _celsius(read_attr(prefix + "highest")),
                "crit_celsius": _celsius(read_attr(prefix + "crit")),
            })
    if not sensors:
        return [], "its hwmon device has no temperature channel"
    return sensors, None


# ------------------------------------------------------------------------------------ readers
# Each reader fills one fact subset of rdma.node.ib_facts (see _subsets); _ib_collect runs them.


@reader("pcie", IB_FACTS, fills=("rdma.pcie",))
def read_pcie(facts, params, module):
    """The PCIe link of each RDMA device's PCI function: current and maximum speed and width, or gone."""
    root = params["sysfs_root"]
    ib_dir = os.path.join(root, "class", "infiniband")
    facts["pcie"] = {name: pcie_link(root, os.path.join(ib_dir, name)) for name in facts["devices"]}


@reader("locality", IB_FACTS, fills=("rdma.gpus", "rdma.locality"))
def read_locality(facts, params, module):
    """The NVIDIA GPUs and, for each, the RDMA devices ranked from nearest to farthest on the PCI tree."""
    root = params["sysfs_root"]
    gpu_list = gpus(root)
    hcas = hca_locations(facts["devices"], facts["ports"], root)
    facts["gpus"] = gpu_list
    facts["locality"] = {"hcas": hcas, "gpus": locality(gpu_list, hcas)}


@reader("gpudirect", IB_FACTS, fills=("rdma.gpudirect",), inputs=("proc_root",))
def read_gpudirect(facts, params, module):
    """Which GPUDirect RDMA path the node offers (peer memory, DMA-BUF) and what each one lacks."""
    facts["gpudirect"] = gpudirect(params["sysfs_root"], params["proc_root"])


@reader("roce", IB_FACTS, fills=("rdma.roce",), inputs=("proc_root",))
def read_roce(facts, params, module):
    """The RDMA netns mode, the RoCE GID table of the Ethernet ports and their netdevs' addresses."""
    root = params["sysfs_root"]
    ib_dir = os.path.join(root, "class", "infiniband")
    gids, netdevs = [], []
    for port in facts["ports"]:
        if port["link_layer"] == "Ethernet":
            port_path = os.path.join(ib_dir, port["device"], "ports", str(port["port"]))
            gids.extend(roce_gids(port_path, port["device"], port["port"]))
            netdevs.extend(name for name in port["netdevs"] if name not in netdevs)
    facts["roce"] = {"netns_mode": netns_mode(root), "netns_mode_source": NETNS_PARAMETER, "gids": gids,
                     "netdev_addresses": roce_netdev_addresses(netdevs, params["proc_root"])}


@reader("temperature", IB_FACTS, fills=("rdma.temperature",))
def read_temperature(facts, params, module):
    """The HCA's temperatures from the mlx5 driver's hwmon device (ASIC, cable module), per RDMA device."""
    ib_dir = os.path.join(params["sysfs_root"], "class", "infiniband")
    temperatures = {}
    for name, device in facts["devices"].items():
        if device.get("virtual_function"):
            continue  # a VF has no sensors of its own: its PF reports the card
        pci_dir = device_link(os.path.join(ib_dir, name))
        sensors, reason = hwmon_temperatures(pci_dir) if os.path.exists(pci_dir) else ([], NO_PCI_FUNCTION)
        temperatures[name] = {"pci_address": device.get("pci_address"), "sensors": sensors, "reason": reason}
    facts["temperature"] = temperatures
