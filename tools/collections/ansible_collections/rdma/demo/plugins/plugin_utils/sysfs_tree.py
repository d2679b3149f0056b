# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated sysfs trees for the demo inventory, the tests and the benchmarks.

A git repository (and ansible-test's ``symlinks`` sanity test) cannot hold what a sysfs tree is made
of: symlinks to directories and dangling symlinks. So trees live in the repository in two text forms
and are materialised on demand:

* ``TreeBuilder`` writes a tree the way the kernel lays one out (devices under
  ``devices/pci0000:xx/<bdf>``, ``class/infiniband`` and ``class/net`` entries as relative symlinks,
  ``device``/``driver``/``physfn``/``master`` links), from a few calls per HCA, port and netdev.
  The demo hosts are described in YAML and built with it (``build`` command).
* ``pack``/``unpack`` keep a real tree byte-for-byte (files without a trailing newline, empty
  directories, dangling symlinks) in a line-oriented archive, for fixtures copied from real systems.

Standard library only, except reading a hardware YAML file, which needs PyYAML (present wherever
Ansible is). The inventory plugin ``rdma.demo.simulated_nodes`` builds the demo's trees with
:func:`ensure_built`; ``tools/sysfs_tree.py`` of the source checkout is the command line over this
module, and ``scripts/simulated_containerd.py`` of this collection starts and stops a node's containerd.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import zlib

ARCHIVE_MAGIC = "# rdma.node sysfs archive v1"

# Part of the hash that keys built trees: bump it when what a build writes changes.
BUILD_FORMAT = "node-root-5"
# The file in every directory ensure_built creates: it removes only directories that carry it.
BUILD_MARKER = ".rdma-demo-node-roots"
BUILD_MARKER_TEXT = ("Node roots built by the inventory plugin rdma.demo.simulated_nodes from a hardware description;\n"
                     "it removes this directory when the description changes.\n")
NAME_MAX_BYTES = 255
# containerd refuses a socket path longer than 104 bytes ("unix socket path too long (> 104)").
UNIX_SOCKET_PATH_MAX = 104

ARPHRD_ETHER = 1
ARPHRD_INFINIBAND = 32


class ArchiveError(ValueError):
    """An archive line that cannot be understood."""


# --------------------------------------------------------------------------------------- archive


def pack(tree: str) -> bytes:
    """Serialise ``tree`` (directories, files, symlinks) into the archive format.

    Records, in sorted path order:
    ``D <path>`` a directory; ``L <path>\\t<target>`` a symlink, kept as written even when dangling;
    ``F <path>\\t<size>`` followed by exactly ``size`` bytes of content and a newline.
    """
    out = [ARCHIVE_MAGIC.encode() + b"\n"]
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, tree)
        entries = sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))])
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        if rel_dir != ".":
            out.append(b"D " + rel_dir.encode() + b"\n")
        for name in entries:
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(path):
                out.append(b"L %s\t%s\n" % (rel.encode(), os.readlink(path).encode()))
            else:
                with open(path, "rb") as handle:
                    data = handle.read()
                out.append(b"F %s\t%d\n" % (rel.encode(), len(data)) + data + b"\n")
    return b"".join(out)


def unpack(data: bytes, dest: str) -> int:
    """Recreate the tree held in archive ``data`` under ``dest``; returns the number of records."""
    lines = data.split(b"\n", 1)
    if lines[0].decode(errors="replace") != ARCHIVE_MAGIC:
        raise ArchiveError("not a sysfs archive: the first line must be %r" % ARCHIVE_MAGIC)
    rest = lines[1] if len(lines) > 1 else b""
    count = 0
    pos = 0
    while pos < len(rest):
        end = rest.index(b"\n", pos)
        header = rest[pos:end].decode()
        pos = end + 1
        kind, spec = header.split(" ", 1) if " " in header else (header, "")
        if kind == "D":
            os.makedirs(_inside(dest, spec), exist_ok=True)
        elif kind == "L":
            rel, target = spec.split("\t", 1)
            path = _inside(dest, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(target, path)
        elif kind == "F":
            rel, size = spec.split("\t", 1)
            path = _inside(dest, rel)
            size = int(size)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(rest[pos:pos + size])
            pos += size + 1
        else:
            raise ArchiveError("unknown record %r" % header)
        count += 1
    return count


def _inside(dest: str, rel: str) -> str:
    path = os.path.normpath(os.path.join(dest, rel))
    if not path.startswith(os.path.normpath(dest) + os.sep):
        raise ArchiveError("path %r leaves the destination" % rel)
    return path


# --------------------------------------------------------------------------------------- PCIe files

# The ACS Capability and Control registers' bits, lowest first (PCIe Base Specification, ACS Extended
# Capability), and the Device/Port Type codes of the PCI Express Capabilities register.
ACS_BITS = ("source_validation", "translation_blocking", "p2p_request_redirect", "p2p_completion_redirect",
            "upstream_forwarding", "p2p_egress_control", "direct_translated_p2p")
PORT_TYPE_CODES = {"endpoint": 0, "root_port": 4, "upstream_port": 5, "downstream_port": 6}
# The error types of the aer_dev_* files in the short names of current kernels (drivers/pci/pcie/aer.c).
AER_TYPES = {
    "correctable": ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF"),
    "fatal": ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP", "ECRC",
              "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"),
}
AER_TYPES["nonfatal"] = AER_TYPES["fatal"]
AER_TOTALS = {"correctable": "TOTAL_ERR_COR", "fatal": "TOTAL_ERR_FATAL", "nonfatal": "TOTAL_ERR_NONFATAL"}


def _acs_register(flags):
    """The register value of ACS bits given by name (a list, or a mapping of name to true/false)."""
    names = {name for name, on in flags.items() if on} if isinstance(flags, dict) else set(flags or ())
    return sum(1 << bit for bit, name in enumerate(ACS_BITS) if name in names)


def config_space(port_type="endpoint", acs_control=None, acs_capable=None, ats_enabled=None, size=4096,
                 vendor=0x15B3, device=0x1021):
    """The bytes of a PCI function's configuration space as the PCIe Base Specification lays it out: the
    standard header (vendor, device, a capabilities list), a PCI Express capability at 0x40 with
    ``port_type``, and in the extended space an ACS capability at 0x100 (when ``acs_control``, the
    names of the control bits set, is not None; ``acs_capable`` defaults to every bit) and an ATS
    capability after it (when ``ats_enabled`` is not None)."""
    data = bytearray(size)
    struct.pack_into("<HH", data, 0, vendor, device)
    struct.pack_into("<H", data, 6, 0x0010)  # Status: Capabilities List
    data[0x34] = 0x40
    data[0x40], data[0x41] = 0x10, 0x00  # PCI Express capability, the last of the list
    struct.pack_into("<H", data, 0x42, 0x0002 | PORT_TYPE_CODES[port_type] << 4)
    if size <= 256:
        return bytes(data)
    capabilities = []
    if acs_control is not None:
        capable = ACS_BITS if acs_capable is None else acs_capable
        capabilities.append((0x000D, struct.pack("<HH", _acs_register(capable), _acs_register(acs_control))))
    if ats_enabled is not None:
        capabilities.append((0x000F, struct.pack("<HH", 0x0000, 0x8000 if ats_enabled else 0x0000)))
    offset = 0x100
    for index, (cap_id, body) in enumerate(capabilities):
        following = offset + 0x40 if index + 1 < len(capabilities) else 0
        struct.pack_into("<I", data, offset, cap_id | 1 << 16 | following << 20)
        data[offset + 4:offset + 4 + len(body)] = body
        offset += 0x40
    return bytes(data)


def aer_text(kind, counts=None):
    """An ``aer_dev_<kind>`` file: one line per error type (the given ``counts``, else 0) and the total."""
    counts = counts or {}
    lines = ["%s %d" % (name, counts.get(name, 0)) for name in AER_TYPES[kind]]
    return "\n".join(lines + ["%s %d" % (AER_TOTALS[kind], sum(counts.values()))]) + "\n"


# --------------------------------------------------------------------------------------- tool outputs


def dcb_outputs(qos):
    """``{file suffix: text}`` of a RoCE netdev's QoS as iproute2 6.1's ``dcb -j`` prints it (dcb/dcb_pfc.c,
    dcb/dcb_app.c: on/off arrays of JSON booleans, each app pair followed by a " " string): ``pfc``
    lists the priorities with PFC on, ``dscp_prio`` maps DSCP values to priorities. iproute2 6.1 has no
    ``dcb apptrust``: the trust mode follows from the DSCP map, as mlx5 sets it."""
    pfc = {"pfc_cap": 8, "macsec_bypass": False, "delay": 0, "prio_pfc": [p in qos.get("pfc", ()) for p in range(8)]}
    app = {"dscp_prio": [[int(dscp), int(prio), " "] for dscp, prio in sorted((qos.get("dscp_prio") or {}).items(), key=lambda i: int(i[0]))],
           "default_prio": [0]}
    return {"dcb_pfc.json": json.dumps(pfc), "dcb_app.json": json.dumps(app)}


IB_SPEEDS = (("NDR", "IB-NDR"), ("HDR", "IB-HDR"), ("EDR", "IB-EDR"), ("FDR", "IB-FDR"), ("QDR", "IB-QDR"))
PHYSICAL_STATES = {"5": "LinkUp", "2": "Polling", "3": "Disabled", "1": "Sleep", "4": "PortConfigurationTraining"}


def mlxlink_output(port, link=None):
    """``mlxlink -d <dev> -p <port> --json --show_module --show_counters`` of one simulated port, in the
    shape mstflint's mlxlink writes (mlxlink_cmd_print.cpp: ``result.output`` with one object per
    section, text values, per-lane values as ``{"values": [...]}``, and ``status``).

    ``port`` is the port's description (its state, physical state and rate); ``link`` what mlxlink
    adds: ``fec``, ``effective_ber``, ``raw_ber`` (as mlxlink prints them, ``15E-255`` for none),
    ``raw_errors_per_lane``, and ``module`` (None: no cable) with ``identifier``, ``vendor``,
    ``part_number``, ``serial_number``, readings with the module's own range (``temperature``:
    ``"44 [-5..75]"``, ``voltage``, ``rx_power``, ``tx_power``, ``bias_current``) and per-lane flags
    (``rx_los``, ``tx_fault``). A port whose link is not up prints no BER (``N/A``)."""
    link = dict(link or {})
    physical = PHYSICAL_STATES.get(str(port.get("phys_state", "5: LinkUp")).split(":", maxsplit=1)[0].strip(), "LinkUp")
    up = physical == "LinkUp"
    rate = str(port.get("rate", "100 Gb/sec (4X EDR)"))
    ethernet = port.get("link_layer") == "Ethernet"
    speed = next((name for key, name in IB_SPEEDS if key in rate), None) if not ethernet else "%sG" % rate.split()[0]
    lanes = [str(n) for n in link.get("raw_errors_per_lane", (0, 0, 0, 0))]
    output = {
        "Operational Info": {"State": "Active" if up else ("Polling" if physical == "Polling" else "Disable"),
                             "Physical state": physical, "Speed": speed if up else "N/A", "Width": "4x" if up else "N/A",
                             "FEC": link.get("fec", "No FEC") if up else "N/A"},
        "Troubleshooting Info": {"Status Opcode": "0", "Group Opcode": "N/A",
                                 "Recommendation": "No issue was observed" if up else "Check the cable and the peer port"},
        "Physical Counters and BER Info": {
            "Time Since Last Clear [Min]": "4371.2", "Effective Physical Errors": str(link.get("effective_errors", 0)) if up else "N/A",
            "Effective Physical BER": link.get("effective_ber", "15E-255") if up else "N/A",
            "Raw Physical Errors Per Lane": {"values": lanes if up else ["N/A"] * 4},
            "Raw Physical BER": link.get("raw_ber", "15E-255") if up else "N/A",
            "Link Down Counter": str(link.get("link_down_counter", 0)), "Link Error Recovery Counter": "0"},
    }
    module = link.get("module", {})
    if module is not None:
        output["Module Info"] = {
            "Identifier": module.get("identifier", "QSFP28"), "Cable Type": module.get("cable_type", "Optical Module"),
            "Vendor Name": module.get("vendor", "Mellanox"), "Vendor Part Number": module.get("part_number", "MFA1A00-E010"),
            "Vendor Serial Number": module.get("serial_number", "MT2004FT01234"),
            "Temperature [C]": module.get("temperature", "44 [-5..75]"), "Voltage [mV]": module.get("voltage", "3287.4 [2970..3630]"),
            "Bias Current [mA]": module.get("bias_current", "6.750,6.750,6.750,6.750 [2..15]"),
            "Rx Power Current [dBm]": module.get("rx_power", "0.512,0.390,0.611,0.455 [-10.41..4.4]"),
            "Tx Power Current [dBm]": module.get("tx_power", "0.811,0.793,0.802,0.820 [-8.4..4.4]"),
            "Rx LOS [per lane]": {"values": [str(v) for v in module.get("rx_los", (0, 0, 0, 0))]},
            "Tx Fault [per lane]": {"values": [str(v) for v in module.get("tx_fault", (0, 0, 0, 0))]},
        }
    return json.dumps({"result": {"output": output}, "status": {"code": 0, "message": "success"}}, indent=3)


# --------------------------------------------------------------------------------------- builder


class TreeBuilder:
    """Writes a kernel-shaped sysfs tree under ``root`` (the directory that stands for ``/sys``)."""

    def __init__(self, root: str, pci=None, later: bool = False):
        """``pci`` maps a PCI address to what its function holds beyond the defaults: ``acs_control``
        (the ACS control bits set on a root or downstream port), ``ats_enabled``, ``aer`` (``{kind:
        {error type: count}}``) and ``aer_later`` (the counts at a later read, used when ``later``)."""
        self.root = root
        self.pci = pci or {}
        self.later = later
        self._pci_dirs = {}
        self._hwmon_count = 0

    # -- low level ----------------------------------------------------------------------------

    def write(self, rel: str, value) -> None:
        """Write one attribute file; ``None`` means the attribute does not exist."""
        if value is None:
            return
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("%s\n" % value)

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write one binary attribute file (a configuration space)."""
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)

    def link(self, rel: str, target_rel: str) -> None:
        """Create ``rel`` as a relative symlink to ``target_rel`` (both relative to the root)."""
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        target = os.path.relpath(os.path.join(self.root, target_rel), os.path.dirname(path))
        os.symlink(target, path)

    def pci_device(self, bdf: str, driver: str = "mlx5_core", numa_node: int = 0, physfn: str = None, *,
                   bridges=(), vendor="0x15b3", device_id=None, pci_class=None, link=None) -> str:
        """Create a PCI function directory and return its path relative to the root.

        ``bridges`` are the BDFs of the PCI bridges from the root port down (a PCIe switch is two:
        its upstream and downstream port); ``link`` the PCIe link attributes (``current_speed``,
        ``max_speed``, ``current_width``, ``max_width``) as the kernel writes them.
        """
        if bdf in self._pci_dirs:
            return self._pci_dirs[bdf]
        first = bridges[0] if bridges else bdf
        parent = "devices/pci%s:%s" % (first.split(":")[0], first.split(":")[1])
        for depth, bridge in enumerate(bridges):
            parent = "%s/%s" % (parent, bridge)
            if not os.path.isdir(os.path.join(self.root, parent)):
                os.makedirs(os.path.join(self.root, parent))
                self.write(parent + "/class", "0x060400")
                self.write(parent + "/numa_node", numa_node)
                # From the root port down: the root port, then a PCIe switch's upstream and downstream ports.
                kind = "root_port" if depth == 0 else ("upstream_port" if depth == 1 else "downstream_port")
                self.pcie_function_files(parent, bridge, kind, 0x8086 if depth == 0 else 0x10B5, 0x1A30 if depth == 0 else 0x8747)
        rel = "%s/%s" % (parent, bdf)
        if physfn:
            rel = "%s/%s" % (self.pci_device(physfn, driver, numa_node), bdf)
        os.makedirs(os.path.join(self.root, rel), exist_ok=True)
        self.link("bus/pci/devices/" + bdf, rel)
        self.pcie_function_files(rel, bdf, "endpoint", int(vendor, 16), int(device_id or "0x1021", 16))
        self.write(rel + "/numa_node", numa_node)
        self.write(rel + "/vendor", vendor)
        self.write(rel + "/device", device_id)
        self.write(rel + "/class", pci_class)
        for key, value in (link or {}).items():
            self.write("%s/%s_link_%s" % (rel, key.split("_")[0], key.split("_", 1)[1]), value)
        if driver:
            self.link(rel + "/driver", "bus/pci/drivers/%s" % driver)
        if physfn:
            parent = self._pci_dirs[physfn]
            self.link(rel + "/physfn", parent)
            index = len([n for n in os.listdir(os.path.join(self.root, parent)) if n.startswith("virtfn")])
            self.link("%s/virtfn%d" % (parent, index), rel)
            self.write(parent + "/sriov_numvfs", index + 1)
        self._pci_dirs[bdf] = rel
        return rel

    def pcie_function_files(self, rel: str, bdf: str, port_type: str, vendor: int, device: int) -> None:
        """The ``config`` (all 4096 bytes, as root reads it) and ``aer_dev_*`` files of a PCIe function: an
        ACS capability on root and downstream ports (control bits from ``pci``, none by default), an
        ATS capability on endpoints (off by default, as NVIDIA's NICs ship), zero AER counts unless given."""
        extra = self.pci.get(bdf) or {}
        acs = extra.get("acs_control", ()) if port_type in ("root_port", "downstream_port") else None
        ats = bool(extra.get("ats_enabled")) if port_type == "endpoint" else None
        self.write_bytes(rel + "/config", config_space(port_type, acs_control=acs, ats_enabled=ats, vendor=vendor, device=device))
        counts = {kind: dict(values) for kind, values in (extra.get("aer") or {}).items()}
        if self.later:
            for kind, values in (extra.get("aer_later") or {}).items():
                counts[kind] = dict(counts.get(kind) or {}, **values)
        for kind in AER_TYPES:
            path = os.path.join(self.root, rel, "aer_dev_" + kind)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(aer_text(kind, counts.get(kind)))

    def hwmon(self, pci_rel: str, sensors) -> None:
        """The mlx5 driver's hwmon device on a PCI function (Linux 6.6+): per sensor (``label``, and
        ``input``, ``highest``, ``crit`` in degrees Celsius) the temp<N>_* files in millidegrees."""
        rel = "%s/hwmon/hwmon%d" % (pci_rel, self._hwmon_count)
        self._hwmon_count += 1
        self.write(rel + "/name", "mlx5")
        for channel, sensor in enumerate(sensors, 1):
            self.write("%s/temp%d_label" % (rel, channel), sensor["label"])
            for key in ("input", "highest", "crit"):
                if sensor.get(key) is not None:
                    self.write("%s/temp%d_%s" % (rel, channel, key), int(round(float(sensor[key]) * 1000)))

    # -- RDMA devices ---------------------------------------------------------------------------

    def hca(self, name: str, bdf: str = None, *, hca_type="MT4123", fw_ver="20.39.1002",
            board_id="MT_0000000223", node_guid="b859:9f03:00d4:0a30", sys_image_guid=None,
            hw_rev="0x0", node_type="1: CA", numa_node=0, driver="mlx5_core", physfn=None,
            bridges=(), pcie=None, pci_device_id="0x101b", hwmon=None, omit=()) -> str:
        """Create an RDMA device (``class/infiniband/<name>``); ``bdf=None`` makes a plain directory
        without a PCI device, as some exported trees have. ``omit`` names attributes to leave out;
        ``bridges``, ``pcie`` (the link attributes) and ``hwmon`` (its temperature sensors) go to its
        PCI function."""
        if bdf:
            pci = self.pci_device(bdf, driver, numa_node, physfn, bridges=bridges, link=pcie,
                                  device_id=pci_device_id, pci_class="0x020700")
            if hwmon:
                self.hwmon(pci, hwmon)
            rel = "%s/infiniband/%s" % (pci, name)
            self.link("class/infiniband/" + name, rel)
            self.link(rel + "/device", pci)
        else:
            rel = "class/infiniband/" + name
        attrs = {
            "node_type": node_type, "hca_type": hca_type, "fw_ver": fw_ver, "board_id": board_id,
            "node_guid": node_guid, "sys_image_guid": sys_image_guid or node_guid, "hw_rev": hw_rev,
            "node_desc": "%s %s" % (os.path.basename(self.root.rstrip("/")), name),
        }
        for key, value in attrs.items():
            if key not in omit:
                self.write("%s/%s" % (rel, key), value)
        os.makedirs(os.path.join(self.root, rel, "ports"), exist_ok=True)
        return rel

    def port(self, device_rel: str, number: int, *, state="4: ACTIVE", phys_state="5: LinkUp",
             rate="100 Gb/sec (4X EDR)", lid="0x1", sm_lid="0x1", lmc=0, sm_sl=0,
             link_layer="InfiniBand", cap_mask="0x2651e848", gid_prefix="fe80:0000:0000:0000",
             port_guid="b859:9f03:00d4:0a31", extra_gids=0, ndevs=None, counters=None, counters_ext=None,
             hw_counters=None, omit=()) -> str:
        """Create ``ports/<number>`` of a device with its GID table.

        ``ndevs`` (RoCE) names the netdev behind each GID; ``extra_gids`` adds that many more
        populated GID entries (with ``gid_attrs``) to fill a table as large as a busy RoCE port's.
        ``counters``, ``counters_ext`` and ``hw_counters`` map file names to the text of those
        directories (``None`` leaves the directory out).
        """
        rel = "%s/ports/%d" % (device_rel, number)
        attrs = {
            "state": state, "phys_state": phys_state, "rate": rate, "lid": lid, "sm_lid": sm_lid,
            "lid_mask_count": lmc, "sm_sl": sm_sl, "link_layer": link_layer, "cap_mask": cap_mask,
        }
        for key, value in attrs.items():
            if key not in omit:
                self.write("%s/%s" % (rel, key), value)
        self.write(rel + "/pkeys/0", "0xffff")
        gids = [gid_prefix + ":" + port_guid] + [
            "0000:0000:0000:0000:0000:ffff:0a%02x:%04x" % (number, index) for index in range(extra_gids)
        ]
        for index, gid in enumerate(gids):
            if "gids" not in omit:
                self.write("%s/gids/%d" % (rel, index), gid)
            if link_layer == "Ethernet" or extra_gids:
                netdev = (ndevs or [""])[min(index, len(ndevs or [""]) - 1)]
                self.write("%s/gid_attrs/ndevs/%d" % (rel, index), netdev)
                self.write("%s/gid_attrs/types/%d" % (rel, index), "RoCE v2" if index % 2 else "IB/RoCE v1")
        for directory, values in (("counters", counters), ("counters_ext", counters_ext), ("hw_counters", hw_counters)):
            for name, value in (values or {}).items():
                self.write("%s/%s/%s" % (rel, directory, name), value)
        return rel

    def gpu(self, bdf: str, *, numa_node=0, bridges=(), device_id="0x20b0", pci_class="0x030200",
            driver="nvidia", pcie=None) -> str:
        """Create an NVIDIA GPU's PCI function (vendor 0x10de) below ``bridges``."""
        return self.pci_device(bdf, driver, numa_node, bridges=bridges, vendor="0x10de", device_id=device_id,
                               pci_class=pci_class, link=pcie)

    # -- network devices ------------------------------------------------------------------------

    def netdev(self, name: str, bdf: str = None, *, address="0c:42:a1:1d:d1:2a", kind=ARPHRD_ETHER,
               carrier=1, operstate="up", mtu=1500, dev_port=0, dev_id="0x0", master=None,
               ecn=None, omit=()) -> str:
        """Create ``class/net/<name>``: under its PCI function, or under devices/virtual (bonds).
        ``ecn`` (``{"np": [priorities], "rp": [...]}``) writes the mlx5 driver's ``ecn/roce_np`` and
        ``ecn/roce_rp`` ``enable/<priority>`` files, 1 on the priorities given and 0 on the others."""
        if bdf:
            pci = self.pci_device(bdf)
            rel = "%s/net/%s" % (pci, name)
            self.link(rel + "/device", pci)
        else:
            rel = "devices/virtual/net/%s" % name
        self.link("class/net/" + name, rel)
        attrs = {
            "address": address, "type": kind, "carrier": carrier, "operstate": operstate, "mtu": mtu,
            "dev_port": dev_port, "dev_id": dev_id, "ifindex": len(os.listdir(os.path.join(self.root, "class/net"))),
        }
        for key, value in attrs.items():
            if key not in omit:
                self.write("%s/%s" % (rel, key), value)
        if master:
            self.link(rel + "/master", "devices/virtual/net/%s" % master)
        for point in ("np", "rp") if ecn is not None else ():
            for priority in range(8):
                self.write("%s/ecn/roce_%s/enable/%d" % (rel, point, priority), int(priority in (ecn.get(point) or ())))
        return rel

    def ipoib_address(self, gid_prefix: str, port_guid: str, qpn: int = 0x1049) -> str:
        """The 20-byte IPoIB hardware address: flags/QPN, then the port's 16-byte GID."""
        hexdigits = "%08x" % qpn + (gid_prefix + port_guid).replace(":", "")
        return ":".join(hexdigits[i:i + 2] for i in range(0, 40, 2))


# --------------------------------------------------------------------------------------- hardware


# What a port or netdev description holds for the node root's saved outputs, not for its sysfs tree.
SAVED_ONLY_PORT_KEYS = ("mlxlink",)
SAVED_ONLY_NETDEV_KEYS = ("qos", "ipv4")


def has_later_sample(spec: dict) -> bool:
    """Whether a host description gives a later read of anything: a port's ``counters_later`` or
    ``hw_counters_later``, a PCI function's ``aer_later``."""
    ports = [port for device in spec.get("devices", {}).values() for port in device.get("ports", {}).values()]
    return any("counters_later" in port or "hw_counters_later" in port for port in ports) or \
        any("aer_later" in (extra or {}) for extra in (spec.get("pci") or {}).values())


def build_host(root: str, spec: dict, later: bool = False) -> None:
    """Build one host's tree from its hardware description (the demo's ``hardware.yml`` format).

    A port's ``counters_later`` and ``hw_counters_later``, and a PCI function's ``aer_later`` (under
    ``pci``), hold what a later read finds; ``later=True`` builds the tree as it looks then, for the
    checks that compare two samples."""
    tree = TreeBuilder(root, pci=spec.get("pci"), later=later)
    os.makedirs(os.path.join(root, "class/net"), exist_ok=True)
    os.makedirs(os.path.join(root, "class/infiniband"), exist_ok=True)
    for netdev in spec.get("netdevs", []):
        if not netdev.get("bdf"):
            tree.netdev(**{key: value for key, value in netdev.items() if key not in SAVED_ONLY_NETDEV_KEYS})
    for name, device in spec.get("devices", {}).items():
        device = dict(device)
        ports = device.pop("ports", {})
        device_rel = tree.hca(name, **device)
        for number, port in ports.items():
            port = {key: value for key, value in port.items() if key not in SAVED_ONLY_PORT_KEYS}
            for kind in ("counters", "hw_counters"):
                values_later = port.pop(kind + "_later", None)
                if later and values_later:
                    port[kind] = dict(port.get(kind) or {}, **values_later)
            tree.port(device_rel, int(number), **port)
    for gpu in spec.get("gpus", []):
        tree.gpu(**gpu)
    for netdev in spec.get("netdevs", []):
        if netdev.get("bdf"):
            netdev = {key: value for key, value in netdev.items() if key not in SAVED_ONLY_NETDEV_KEYS}
            ipoib_of = netdev.pop("ipoib_of", None)
            if ipoib_of:
                device, number = ipoib_of.split("/", 1)
                port = spec["devices"][device]["ports"][int(number)]
                netdev["kind"] = ARPHRD_INFINIBAND
                netdev["address"] = tree.ipoib_address(
                    port.get("gid_prefix", "fe80:0000:0000:0000"), port["port_guid"])
            tree.netdev(**netdev)


def build_saved_outputs(root: str, spec: dict) -> None:
    """The tool outputs a node keeps under ``saved/`` for the readers that cannot run their tool here:
    ``saved/mlxlink/<device>_<port>.json`` for every port of a device on a PCI function (its ``mlxlink``
    description, see :func:`mlxlink_output`), and ``saved/qos/<netdev>_dcb_pfc.json`` /
    ``_dcb_app.json`` for every netdev with a ``qos`` description (``pfc``, ``dscp_prio``)."""
    tree = TreeBuilder(root)
    for name, device in spec.get("devices", {}).items():
        if not device.get("bdf"):
            continue
        for number, port in device.get("ports", {}).items():
            tree.write("saved/mlxlink/%s_%s.json" % (name, number), mlxlink_output(port, port.get("mlxlink")))
    for netdev in spec.get("netdevs", []):
        if netdev.get("qos") is not None:
            for suffix, text in dcb_outputs(netdev["qos"]).items():
                tree.write("saved/qos/%s_%s" % (netdev["name"], suffix), text)


def build_addresses(root: str, netdevs: list) -> None:
    """Write the ``proc/net`` files that give netdevs their IPv4 addresses (``ipv4: [10.1.0.2/24]``
    of a netdev): ``route`` with each connected network and ``fib_trie`` with each local address,
    in the kernel's layout."""
    import ipaddress

    tree = TreeBuilder(root)
    routes = ["Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"]
    trie = ["Main:", "  +-- 0.0.0.0/0 3 0 5"]
    for netdev in netdevs:
        for text in netdev.get("ipv4", []):
            interface = ipaddress.IPv4Interface(text)
            network = interface.network
            routes.append("%s\t%08X\t00000000\t0001\t0\t0\t0\t%08X\t0\t0\t0" % (
                netdev["name"], int.from_bytes(network.network_address.packed, "little"),
                int.from_bytes(network.netmask.packed, "little")))
            trie += ["     +-- %s 2 0 2" % network, "        |-- %s" % network.network_address,
                     "           /%d link UNICAST" % network.prefixlen,
                     "        |-- %s" % interface.ip, "           /32 host LOCAL"]
    tree.write("proc/net/route", "\n".join(routes))
    tree.write("proc/net/fib_trie", "\n".join(trie))


def build_driver_side(root: str, driver: dict) -> None:
    """Write the files driver_facts reads from a node's ``/`` (the ``driver:`` part of a host).

    ``driver`` names the running kernel, the installed ``kernels``, the one GRUB boots by default
    (``boot_default``), the ``modules`` loaded, the OFED release and the ``dkms`` status text; the
    saved command outputs land in ``<root>/saved/``, where simulated hosts point driver_verify.
    """
    tree = TreeBuilder(root)
    running = driver["running_kernel"]
    kernels = driver.get("kernels", [running])
    tree.write("proc/sys/kernel/osrelease", running)
    for kernel in kernels:
        os.makedirs(os.path.join(root, "lib/modules", kernel, "kernel"), exist_ok=True)
        tree.write("boot/vmlinuz-" + kernel, "")
    boot_order = [driver.get("boot_default", running)] + [k for k in kernels if k != driver.get("boot_default", running)]
    menu = ['set default="0"'] + [
        "menuentry 'Linux %s' --class gnu-linux $menuentry_id_option 'gnulinux-%s-simple' {\n"
        "\tlinux\t/boot/vmlinuz-%s root=/dev/sda1 ro quiet\n}" % (k, k, k) for k in boot_order
    ]
    tree.write("boot/grub/grub.cfg", "\n".join(menu))
    modules = driver.get("modules", [])
    tree.write("proc/modules", "\n".join(
        "%s %d %d - Live 0x0000000000000000 (OE)" % (name, 65536 + 4096 * index, 1)
        for index, name in enumerate(modules)))
    for name in modules:
        tree.write("sys/module/%s/version" % name, driver.get("module_version", "23.10-1.1.9"))
        tree.write("sys/module/%s/srcversion" % name, "%024X" % zlib.crc32(name.encode()))
    for index in range(driver.get("uverbs", 0)):
        tree.write("dev/infiniband/uverbs%d" % index, "")
    if "ib_core" in modules:
        # ib_core's netns_mode parameter: Y is shared, the kernel's default.
        tree.write("sys/module/ib_core/parameters/netns_mode", "N" if driver.get("netns_mode") == "exclusive" else "Y")
    nvidia = driver.get("nvidia")
    if nvidia:
        # What the NVIDIA driver shows: its module version, the taint flags (P: proprietary licence)
        # and /proc/driver/nvidia/version, whose first line names the open or proprietary module.
        open_module = nvidia.get("flavour") == "open"
        tree.write("sys/module/nvidia/version", nvidia["version"])
        tree.write("sys/module/nvidia/taint", "OE" if open_module else "POE")
        tree.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX %s  %s  Release Build" % (
            "Open Kernel Module for x86_64" if open_module else "x86_64 Kernel Module", nvidia["version"]))
    if driver.get("memory_peers"):
        os.makedirs(os.path.join(root, "sys/kernel/mm/memory_peers"), exist_ok=True)
    # A node without kernel_log has a quiet log: an empty file, which node_health reads like any saved log.
    tree.write("saved/kernel.log", (driver.get("kernel_log") or "").rstrip("\n"))
    tree.write("saved/dkms-status.txt", (driver.get("dkms") or "").rstrip("\n"))
    tree.write("saved/ofed_info.txt", driver.get("ofed"))


def load_hardware_file(path: str) -> dict:
    """The hosts of a hardware YAML file (``x-`` keys are YAML anchors only and left out)."""
    import yaml  # controller-side only: PyYAML ships with Ansible

    with open(path, encoding="utf-8") as handle:
        try:
            hosts = yaml.safe_load(handle)
        except yaml.YAMLError as exc:
            raise ArchiveError("%s is not valid YAML: %s" % (path, str(exc).replace("\n", " "))) from None
    return hardware_hosts(hosts, path)


def hardware_hosts(hosts, source: str) -> dict:
    """Check a hardware mapping (host name to description) and drop its ``x-`` anchor keys. Each host
    name becomes the name of its node root's directory, so it must be one path component."""
    if not isinstance(hosts, dict) or not all(isinstance(spec, dict) for name, spec in hosts.items() if not str(name).startswith("x-")):
        raise ArchiveError("%s: expected a mapping of host name to hardware description" % source)
    found = {str(name): spec for name, spec in hosts.items() if not str(name).startswith("x-")}
    for name in found:
        if not one_path_component(name):
            raise ArchiveError("%s: host name %r must be one path component (not empty, '.' or '..', no '/' or NUL, at most %d "
                               "bytes): it names the host's node root directory." % (source, name, NAME_MAX_BYTES))
    return found


def one_path_component(name) -> bool:
    """Whether ``name`` names an entry of a directory, never the directory itself, its parent or a deeper path."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name
            and len(name.encode("utf-8", "surrogateescape")) <= NAME_MAX_BYTES)


def node_roots_link(inventory_dir: str, nodes_dir) -> str:
    """Where the node roots of an inventory file go: ``nodes_dir``, one name inside the inventory's directory."""
    if not one_path_component(nodes_dir):
        raise ArchiveError("nodes_dir %r must be one name inside the inventory's directory %s (no '/', not empty, '.' or '..'): "
                           "the node roots are built there, and the plugin removes what it built." % (nodes_dir, inventory_dir))
    return os.path.join(inventory_dir, nodes_dir)


def containerd_sockets(node_root: str) -> tuple:
    """The gRPC and ttrpc sockets of a node's own containerd: in the node's ``run/``, or, when that
    path is too long for containerd's sockets (104 bytes), in a short directory under /tmp named by a hash
    of the node root."""
    import hashlib

    run = os.path.join(node_root, "run")
    if len(os.path.join(run, "containerd.ttrpc").encode()) > UNIX_SOCKET_PATH_MAX:
        run = "/tmp/rdma-node-%s" % hashlib.sha256(os.path.abspath(node_root).encode()).hexdigest()[:16]
    return os.path.join(run, "containerd.sock"), os.path.join(run, "containerd.ttrpc")


def containerd_config(node_root: str) -> str:
    """A containerd 1.6 config whose root, state and sockets are under the node root: the simulated
    node's own containerd, which the demo's remediation edits and restarts instead of the machine's."""
    grpc, ttrpc = containerd_sockets(node_root)
    return "\n".join([
        "# The simulated node's own containerd (rdma.demo's scripts/simulated_containerd.py starts it with this file).",
        "version = 2",
        'root = "%s"' % os.path.join(node_root, "var", "lib", "containerd"),
        'state = "%s"' % os.path.join(node_root, "run", "containerd"),
        "",
        "[grpc]",
        '  address = "%s"' % grpc,
        "",
        "[ttrpc]",
        '  address = "%s"' % ttrpc,
        "",
    ])


CONTAINERD_PIDFILE = os.path.join("run", "containerd.pid")


def node_containerd_config(node_root: str) -> str:
    """The config file the node's own containerd runs with (``containerd --config <this>``)."""
    return os.path.join(os.path.abspath(node_root), "etc", "containerd", "config.toml")


def _containerd_config_argument(argv: list):
    """The ``--config``/``-c`` value of a containerd command line (bytes), or None."""
    for index, word in enumerate(argv):
        if word in (b"--config", b"-c") and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith(b"--config="):
            return word[len(b"--config="):]
    return None


def _process_argv(pid: int) -> list:
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        return handle.read().split(b"\0")


def node_containerd_pid(node_root: str):
    """The pid in the node's pidfile when that process is the node's own containerd (a recycled pid is
    never taken for it), else None."""
    try:
        with open(os.path.join(node_root, CONTAINERD_PIDFILE), encoding="ascii") as handle:
            text = handle.read(32).strip()
        pid = int(text) if text.isascii() and text.isdigit() else None
        argv = _process_argv(pid) if pid else []
    except (OSError, ValueError):
        return None
    config = node_containerd_config(node_root).encode()
    return pid if os.path.basename(argv[0]) == b"containerd" and _containerd_config_argument(argv) == config else None


def orphaned_node_containerds(node_root: str) -> list:
    """Pids of containerds that run with the node's config but that its pidfile does not name: their
    pidfile, or their whole node root, was deleted while they ran. Found by their ``--config`` argument."""
    config = node_containerd_config(node_root).encode()
    owned = node_containerd_pid(node_root)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (owned, os.getpid()):
            continue
        try:
            argv = _process_argv(int(entry))
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if argv and os.path.basename(argv[0]) == b"containerd" and _containerd_config_argument(argv) == config:
            found.append(int(entry))
    return sorted(found)


def stop_node_containerd(node_root: str, timeout: float = 10.0) -> dict:
    """Stop the node's own containerd (SIGTERM, then SIGKILL): the pidfile's, and any orphan that runs with
    the node's config. Returns ``{"pidfile": pid or None, "orphans": [pids]}`` of what was stopped."""
    import signal
    import time

    stopped = {"pidfile": node_containerd_pid(node_root), "orphans": orphaned_node_containerds(node_root)}
    pids = ([stopped["pidfile"]] if stopped["pidfile"] else []) + stopped["orphans"]
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_runs_with(pid, node_root) for pid in pids):
        time.sleep(0.05)
    for pid in pids:
        if _runs_with(pid, node_root):
            os.kill(pid, signal.SIGKILL)
    try:
        os.remove(os.path.join(node_root, CONTAINERD_PIDFILE))
    except OSError:
        pass
    return stopped


def _runs_with(pid: int, node_root: str) -> bool:
    """Whether ``pid`` is still a containerd with the node's config (not a zombie, not a recycled pid)."""
    try:
        argv = _process_argv(pid)
    except OSError:
        return False
    return bool(argv) and _containerd_config_argument(argv) == node_containerd_config(node_root).encode()


def build_node(node_root: str, spec: dict, final_root: str = None) -> None:
    """Build one host's node root: sysfs in ``sys/`` (and ``later/sys``), the saved tool outputs, the
    driver side, the IPv4 addresses and its own containerd config (whose paths name ``final_root``,
    where the node ends up)."""
    build_host(os.path.join(node_root, "sys"), spec)
    if has_later_sample(spec):
        build_host(os.path.join(node_root, "later", "sys"), spec, later=True)
    build_saved_outputs(node_root, spec)
    if spec.get("driver"):
        build_driver_side(node_root, spec["driver"])
    if any(netdev.get("ipv4") for netdev in spec.get("netdevs", [])):
        build_addresses(node_root, spec["netdevs"])
    # node_exporter's textfile directory as Debian's prometheus-node-exporter creates it.
    os.makedirs(os.path.join(node_root, "var/lib/prometheus/node-exporter"), exist_ok=True)
    TreeBuilder(node_root).write("etc/containerd/config.toml", containerd_config(final_root or node_root).rstrip("\n"))


def build_hosts(hosts: dict, dest: str) -> list:
    """Build every host of a hardware mapping (host name to description) as a node root ``dest/<host>``,
    replacing what was there; returns the host names."""
    hosts = hardware_hosts(hosts, "the hardware description")
    for host, spec in hosts.items():
        node_root = os.path.join(dest, host)
        stop_node_containerd(node_root)
        shutil.rmtree(node_root, ignore_errors=True)
        build_node(node_root, spec)
    return sorted(hosts)


def build_hardware_file(path: str, dest: str) -> list:
    """Build every host of a hardware YAML file as a node root ``dest/<host>`` (sysfs in ``sys/``);
    returns the host names."""
    return build_hosts(load_hardware_file(path), dest)


def description_hash(hosts: dict) -> str:
    """A short hash of a hardware mapping: the trees are rebuilt when it changes."""
    import hashlib
    import json

    text = json.dumps(hosts, sort_keys=True, default=str) + BUILD_FORMAT
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_built(hosts: dict, link: str) -> bool:
    """Make ``link`` (e.g. ``<inventory dir>/.nodes``) hold the node roots of ``hosts``; returns whether it built.

    The trees are built in ``<link>-<hash>`` and ``link`` is a symlink to it, swapped atomically, so
    that concurrent runs never see a half-built tree: one whose hash already matches is used as is.
    Every directory built carries the marker file ``BUILD_MARKER``; older builds (``<link>-<hash>``
    directories with the marker) are removed after the swap, their simulated containerds stopped
    first. Anything else is never removed: ``link`` must be one name in its directory, and where it
    exists it must be this function's own symlink."""
    hosts = hardware_hosts(hosts, "the hardware description")
    parent, name = os.path.split(link)
    if not one_path_component(name):
        raise ArchiveError("%s: the node roots are built under one name in a directory, not %r." % (link, name))
    parent = os.path.abspath(parent or ".")
    link = os.path.join(parent, name)
    build_name = re.compile(re.escape(name) + r"-[0-9a-f]{16}")
    _refuse_unless_own_link(link, build_name)
    target = "%s-%s" % (name, description_hash(hosts))
    if os.path.islink(link) and os.readlink(link) == target and _carries_marker(os.path.join(parent, target)):
        return False
    staging = os.path.join(parent, "%s.building.%d" % (target, os.getpid()))
    if os.path.lexists(staging):
        _remove_own_build(staging)
    os.mkdir(staging)
    try:
        _write_marker(staging)
        for host, spec in hosts.items():
            build_node(os.path.join(staging, host), spec, final_root=os.path.join(parent, name, host))
        try:
            os.rename(staging, os.path.join(parent, target))
        except OSError:
            if not _carries_marker(os.path.join(parent, target)):  # another run built the same hash first: use it
                raise
    finally:
        if os.path.isdir(staging) and not os.path.islink(staging):
            shutil.rmtree(staging)  # created above by this call
    # The old nodes' containerds were started with paths through the link: stop them while it still leads there.
    if os.path.islink(link) and os.path.isdir(link):
        for host in os.listdir(link):
            if os.path.isdir(os.path.join(link, host)):
                stop_node_containerd(os.path.join(link, host))
    new_link = os.path.join(parent, "%s.link.%d" % (name, os.getpid()))
    if os.path.islink(new_link):
        os.remove(new_link)
    os.symlink(target, new_link)
    os.replace(new_link, link)
    for entry in os.listdir(parent):
        if entry != target and build_name.fullmatch(entry) and _carries_marker(os.path.join(parent, entry)):
            shutil.rmtree(os.path.join(parent, entry))
    return True


def _carries_marker(directory: str) -> bool:
    """Whether ``directory`` is a real directory (not a symlink) that ensure_built created."""
    return (os.path.isdir(directory) and not os.path.islink(directory)
            and os.path.isfile(os.path.join(directory, BUILD_MARKER)) and not os.path.islink(os.path.join(directory, BUILD_MARKER)))


def _write_marker(directory: str) -> None:
    with open(os.path.join(directory, BUILD_MARKER), "x", encoding="utf-8") as handle:
        handle.write(BUILD_MARKER_TEXT)


def _remove_own_build(directory: str) -> None:
    if not _carries_marker(directory):
        raise ArchiveError("%s exists and rdma.demo.simulated_nodes did not create it (it has no %s): move it away." % (directory, BUILD_MARKER))
    shutil.rmtree(directory)


def _refuse_unless_own_link(link: str, build_name) -> None:
    """Nothing at ``link``, or the symlink ensure_built made there (to a build beside it): else one sentence."""
    if not os.path.lexists(link):
        return
    if os.path.islink(link):
        target = os.readlink(link)
        if build_name.fullmatch(target):
            return
        what = "a symlink to %s" % target
    else:
        what = "a directory" if os.path.isdir(link) else "a file"
    raise ArchiveError("%s is %s that rdma.demo.simulated_nodes did not create; it builds its node roots only under a name of its "
                       "own: set nodes_dir to another name, or move %s away." % (link, what, link))
