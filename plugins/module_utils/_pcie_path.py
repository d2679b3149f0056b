# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCIe path between each GPU and its nearest HCA: ACS and ATS of every function on it, and the
IOMMU domain of the GPU and the HCA.

GPUDirect RDMA moves data peer to peer: from the HCA to the GPU through the PCIe switch they share,
when nothing on the way sends it up. Two settings decide that:

* **ACS** (Access Control Services, PCIe extended capability 0x000D). A bridge with *P2P Request
  Redirect* or *P2P Completion Redirect* set in its ACS Control register sends peer-to-peer requests
  up to the root complex instead of across the switch; *Egress Control* can block them. Hypervisors
  need that (the IOMMU must see every request to isolate guests); on bare metal it halves GPUDirect
  bandwidth or hangs NCCL, which is why NCCL's troubleshooting guide says to turn ACS off there.
* **ATS** (Address Translation Services, extended capability 0x000F): a device that caches IOMMU
  translations may send pre-translated requests that ACS lets pass. NVIDIA's NICs ship with ATS off
  (``ATS_ENABLED=False``) and turn it on only for VMs.

Both are read from PCI configuration space in sysfs (``config``): the extended capability list starts
at offset 0x100 and only root reads past the first 64 bytes, so an unprivileged read says "not
readable without root" rather than "off". Saved ``lspci -vvv`` text (``ACSCap:``/``ACSCtl:``,
``ATSCap:``/``ATSCtl:``) gives the same facts where sysfs is not at hand.

The IOMMU domain type is ``kernel/iommu_groups/<n>/type`` of the function's ``iommu_group``:
``identity`` is passthrough (``iommu=pt``), ``DMA``/``DMA-FQ`` translate every DMA.
"""

from __future__ import annotations

import os
import re
import struct

from ansible_collections.rdma.node.plugins.module_utils._ib_common import MAIL_QUOTE_MARKS
from ansible_collections.rdma.node.plugins.module_utils._files import FileReadError, read_bytes, read_text_and_reason
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, FactReadError, reader
from ansible_collections.rdma.node.plugins.module_utils._pci_tree import hca_nodes, node_of
from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import gpus, hca_locations, locality

# A saved lspci -vvv of a large GPU server is a few hundred kilobytes.
LSPCI_MAX_BYTES = 16 * 1024 * 1024

# The ACS Capability and Control registers share their bit layout (PCIe Base Spec, ACS Extended
# Capability); the names are lspci's, the keys say what each bit does.
ACS_BITS = (
    ("source_validation", "SrcValid"),
    ("translation_blocking", "TransBlk"),
    ("p2p_request_redirect", "ReqRedir"),
    ("p2p_completion_redirect", "CmpltRedir"),
    ("upstream_forwarding", "UpstreamFwd"),
    ("p2p_egress_control", "EgressCtrl"),
    ("direct_translated_p2p", "DirectTrans"),
)
# The bits that send or block peer-to-peer traffic between functions below one bridge.
P2P_DIVERTING = ("p2p_request_redirect", "p2p_completion_redirect", "p2p_egress_control")

EXT_CAP_START = 0x100
EXT_CAP_ACS = 0x000D
EXT_CAP_ATS = 0x000F
CAP_PCIE = 0x10
CONFIG_HEADER_BYTES = 64
CONFIG_CONVENTIONAL_BYTES = 256
CONFIG_EXTENDED_BYTES = 4096
_MAX_CAPS = 96  # a real function has a dozen; a loop in a corrupt list stops here

# PCI Express Capabilities register, Device/Port Type (bits 7:4).
PORT_TYPES = {0: "endpoint", 1: "legacy_endpoint", 4: "root_port", 5: "upstream_port", 6: "downstream_port",
              7: "pcie_to_pci_bridge", 8: "pci_to_pcie_bridge", 9: "root_complex_endpoint",
              10: "root_complex_event_collector"}
_LSPCI_PORT_TYPES = (("Root Port", "root_port"), ("Downstream Port", "downstream_port"), ("Upstream Port", "upstream_port"),
                     ("Legacy Endpoint", "legacy_endpoint"), ("Root Complex Integrated", "root_complex_endpoint"),
                     ("Endpoint", "endpoint"), ("PCI-Express to PCI/PCI-X Bridge", "pcie_to_pci_bridge"),
                     ("PCI/PCI-X to PCI-Express Bridge", "pci_to_pcie_bridge"),
                     ("Root Complex Event Collector", "root_complex_event_collector"))

# kernel/iommu_groups/<n>/type (Documentation/ABI/testing/sysfs-kernel-iommu_groups).
IOMMU_MODES = {"identity": "passthrough", "DMA": "translated", "DMA-FQ": "translated", "blocked": "blocked",
               "unmanaged": "unmanaged"}
NOT_ROOT = "not readable without root: only %d of the %d bytes of %s could be read (the capabilities past byte 64 need CAP_SYS_ADMIN)"
NO_EXTENDED = ("%s holds %d bytes: no PCIe extended configuration space (a conventional PCI function, or the platform "
               "gives no ECAM access), so no ACS or ATS capability to read")


class LspciTextError(ValueError):
    """Text that holds no ``lspci -vvv`` device and no ACS/ATS line."""


def _flags_from_register(value):
    return {key: bool(value >> bit & 1) for bit, (key, _name) in enumerate(ACS_BITS)}


def parse_config_space(data):
    """ACS, ATS and port type from the bytes of a function's PCI configuration space.

    Returns ``{"port_type", "acs": {"capable": {...}, "control": {...}} or None, "ats": {"invalidate_queue_depth",
    "enabled", "smallest_translation_unit"} or None, "extended": bool, "notes"}``. A list that
    points backwards, outside the data or in a loop ends the walk with a note; nothing raises on
    bytes a device or a fixture can hold.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError("expected the bytes of a PCI configuration space, got %s" % type(data).__name__)
    result = {"port_type": _port_type(data), "acs": None, "ats": None, "extended": len(data) > CONFIG_CONVENTIONAL_BYTES, "notes": []}
    if not result["extended"]:
        return result
    offset, seen = EXT_CAP_START, set()
    while offset and len(seen) < _MAX_CAPS:
        if offset in seen or offset < EXT_CAP_START or offset % 4 or offset + 8 > len(data):
            result["notes"].append("the extended capability list points at 0x%x, which is not a capability; the walk stops there" % offset)
            break
        seen.add(offset)
        header = struct.unpack_from("<I", data, offset)[0]
        if header in (0, 0xFFFFFFFF):
            break
        cap_id, next_offset = header & 0xFFFF, header >> 20
        if cap_id == EXT_CAP_ACS:
            capable, control = struct.unpack_from("<HH", data, offset + 4)
            result["acs"] = {"capable": _flags_from_register(capable), "control": _flags_from_register(control)}
        elif cap_id == EXT_CAP_ATS:
            capability, control = struct.unpack_from("<HH", data, offset + 4)
            result["ats"] = {"invalidate_queue_depth": capability & 0x1F, "enabled": bool(control >> 15 & 1),
                             "smallest_translation_unit": control & 0x1F}
        offset = next_offset
    return result


def _port_type(data):
    """The Device/Port Type of the PCI Express capability in the standard list, or None."""
    if len(data) < CONFIG_HEADER_BYTES or not struct.unpack_from("<H", data, 6)[0] & 0x10:  # Status: Capabilities List
        return None
    offset, seen = data[0x34] & 0xFC, set()
    while offset and offset not in seen and offset + 4 <= len(data) and len(seen) < 48:
        seen.add(offset)
        cap_id, next_offset = data[offset], data[offset + 1] & 0xFC
        if cap_id == CAP_PCIE:
            return PORT_TYPES.get(struct.unpack_from("<H", data, offset + 2)[0] >> 4 & 0xF, "other")
        offset = next_offset
    return None


def read_config_space(directory):
    """``(parsed config space, None)`` of a function directory, or ``(None, reason)``."""
    path = os.path.join(directory, "config")
    try:
        size = os.stat(path).st_size
        data = read_bytes(path, "PCI configuration space", CONFIG_EXTENDED_BYTES)
    except FileNotFoundError:
        return None, "%s does not exist" % path
    except OSError as exc:
        return None, "cannot read %s: %s" % (path, exc.strerror or exc)
    except FileReadError as exc:
        return None, str(exc)
    if data is None:
        return None, "%s does not exist" % path
    return config_from_read(data, size, path)


def config_from_read(data, size, path):
    """``(parsed, None)`` or ``(None, reason)`` of the bytes a read of ``path`` (``size`` bytes in sysfs) gave.

    The kernel gives a reader without CAP_SYS_ADMIN only the first 64 bytes (128 for a CardBus bridge)
    of a file whose size says 256 or 4096: that is "not readable without root", not "no capability".
    """
    if size and len(data) < min(size, CONFIG_EXTENDED_BYTES) and len(data) <= CONFIG_HEADER_BYTES * 2:
        return None, NOT_ROOT % (len(data), size, path)
    if data[:4] == b"\xff\xff\xff\xff":
        return None, "%s reads all ones: the function does not answer" % path
    parsed = parse_config_space(data)
    if not parsed["extended"]:
        return None, NO_EXTENDED % (path, len(data))
    return parsed, None


# ------------------------------------------------------------------------------------ lspci -vvv

# A device header; lspci -P and -PP name a function by its path through the bridges above it, "00:1c.4/07:00.0/08:04.0"
# (-PP) or "00:1c.4/00.0/04.0" (-P, whose bus numbers are the bridges' secondary buses).
# An author's arrow after a header ("... Switch (rev b0)    # <-- PCIe Gen5"): lspci never prints one.
_AUTHORS_ARROW = lazy_compile(r"\s+#?\s*<-{1,3}\s.*$")
_HEADER = lazy_compile(r"^(?P<path>(?:[0-9a-fA-F]{4,}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7](?:/(?:[0-9a-fA-F]{2}:)?[0-9a-fA-F]{2}\.[0-7])*)"
                       r"\s+\S[^:]*:")
_PATH_STEP = lazy_compile(r"^(?:(?P<domain>[0-9a-fA-F]{4,}):)?(?:(?P<bus>[0-9a-fA-F]{2}):)?(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])$")
# A bridge's buses: "Bus: primary=00, secondary=07, subordinate=0a, sec-latency=0".
_BRIDGE_BUSES = lazy_compile(r"^Bus:\s*primary=[0-9a-fA-F]{2},\s*secondary=(?P<secondary>[0-9a-fA-F]{2})\b")
# lspci -x/-xxx/-xxxx: a function's configuration space as hex, 16 bytes a line: "f0: 00 00 ... 00".
_HEX_LINE = lazy_compile(r"^(?P<offset>[0-9a-fA-F]{2,3}):(?P<bytes>(?: [0-9a-fA-F]{2}){16})$")
_ACS_LINE = lazy_compile(r"^(?P<field>ACSCap|ACSCtl):\s*(?P<flags>.*)$")
_ACS_FLAG = lazy_compile(r"\b(SrcValid|TransBlk|ReqRedir|CmpltRedir|UpstreamFwd|EgressCtrl|DirectTrans)([+-])")
_ATS_CAP = lazy_compile(r"^ATSCap:\s*Invalidate Queue Depth:\s*(?P<depth>[0-9a-fA-F]+)")
_ATS_CTL = lazy_compile(r"^ATSCtl:\s*Enable(?P<enabled>[+-]),?\s*Smallest Translation Unit:\s*(?P<stu>[0-9a-fA-F]+)")
# "Express (v2) Endpoint, MSI 00"; lspci -v without -vv prints no version: "Express Endpoint, MSI 00".
_EXPRESS = lazy_compile(r"^Capabilities:\s*\[[0-9a-fA-F]+\]\s*Express\s*(?:\([^)]*\)\s*)?(?P<kind>\S.*)$")
# lspci's word for a function whose configuration space reads all ones (gone from the bus, or in reset).
_NO_ANSWER = lazy_compile(r"^!!! (?:Unknown header type|Invalid class)")
# The rest of an ACSCap/ACSCtl line a mail or a terminal broke: nothing but ACS flags.
_ACS_CONTINUATION = lazy_compile(r"^(?:(?:SrcValid|TransBlk|ReqRedir|CmpltRedir|UpstreamFwd|EgressCtrl|DirectTrans)[+-]\s*)+$")
# lspci -t's root of a tree: "-[0000:00]-+-00.0" (a domain and bus in brackets, then a branch).
_TREE = lazy_compile(r"\[[0-9a-fA-F]{4}:[0-9a-fA-F]{2}\]-[-+]")
# "IOMMU group: 20" (lspci -vv), or at the end of lspci -v's "Flags: bus master, ..., IRQ 16, IOMMU group 2".
_IOMMU_GROUP = lazy_compile(r"^(?:IOMMU group:\s*|Flags:.*,\s*IOMMU group\s+)(?P<group>[0-9]+)$")
_CAPABILITY_DENIED = lazy_compile(r"^Capabilities:\s*<access denied>")
# Any capability lspci lists, by its offset: at 0x100 and above, an extended one (ACS and ATS are).
_CAPABILITY_OFFSET = lazy_compile(r"^Capabilities:\s*\[([0-9a-fA-F]{1,4})(?:\s+v[0-9]+)?\]")
# What the capability names of a function (``listed``) also hold: an extended capability, the PCI Express one.
_EXTENDED, _EXPRESS_LISTED = "<extended>", "<express>"
_CAPABILITY_LISTED = lazy_compile(r"^Capabilities:\s*\[[0-9a-fA-F]+(?:\s+v[0-9]+)?\]\s*(?P<name>Access Control Services|Address Translation Service)")
# A capability lspci names, the register lines that must follow it, the function's key they fill and
# the value without which that key says nothing (the ACS control register, ATS on or off).
_LISTED_REGISTERS = (("Access Control Services", "ACSCap/ACSCtl", "acs", "control"),
                     ("Address Translation Service", "ATSCap/ATSCtl", "ats", "enabled"))
_LSPCI_NAMES = {name: key for key, name in ACS_BITS}
# The lines lspci -v/-vv/-vvv prints under a device header: a function with none of them in the text was
# listed on one line (lspci, lspci -nn, lspci | grep), which shows none of its capabilities.
_DETAIL_LINE = lazy_compile(r"^(?:Subsystem|Control|Status|Capabilities|Kernel driver in use|Kernel modules|Flags|Latency|"
                            r"Interrupt|Physical Slot|NUMA node|IOMMU group|Bus|DeviceName|BridgeCtl|Secondary status)\s*:|^Region \d")
# A paste's own elision of lines under a header: "(...)", "...", "[...]", "[snip]".
_ELISION = lazy_compile(r"^(?:\(\.{3,}\)|\.{3,}|\[\.{3,}\]|\[snip\])$", re.IGNORECASE)
# The only lines lspci -k (and -nnk) prints under a header: no capability, so nothing of ACS or ATS.
_KERNEL_ONLY_LINE = lazy_compile(r"^(?:Subsystem|Kernel driver in use|Kernel modules|DeviceName)\s*:")


def _lspci_flags(text):
    flags = {_LSPCI_NAMES[name]: sign == "+" for name, sign in _ACS_FLAG.findall(text)}
    return flags if len(flags) == len(ACS_BITS) else None


def parse_lspci_vvv(text):
    """Per PCI function, the ACS and ATS capability lines, port type and IOMMU group of ``lspci -vvv`` text.

    Returns ``{"functions": {address: {"description", "port_type", "acs", "ats", "iommu_group",
    "unreadable"}}, "unattributed": [...], "notes": [...]}``; addresses get domain ``0000`` when lspci
    left it out. ``ACSCtl:``/``ATSCtl:`` lines before any device header (``lspci -vvv | grep ACSCtl``)
    cannot be given to a function: they are listed in ``unattributed`` with their line numbers.
    ``unreadable`` says why a function's ACS or ATS is unknown rather than absent: lspci ran without
    root (``Capabilities: <access denied>``), the capability is listed but its registers are not in
    the text (cut, filtered by grep, lines broken), only lspci -k's lines are there, or a PCI Express
    function shows no extended capability where the text shows no other function's either, or ends
    with it (a whole block where lspci read others' is a function that has none). A function's hex lines
    (lspci -xxxx) are read as its configuration space where its text does not show ACS or ATS; a header
    of lspci -P or -PP names its function by its path through the bridges. Device headers are lspci's, at the text's shallowest
    indentation: a deeper-indented line that looks like one (a pasted group listing) is not a device.
    Shell prompts, comments, indentation (tabs or spaces) and CRLF are fine; text with neither a
    device nor an ACS/ATS line raises :class:`LspciTextError`.
    """
    if not isinstance(text, str):
        raise LspciTextError("expected lspci -vvv text, got %s" % type(text).__name__)
    functions, unattributed, notes, current = {}, [], [], None
    read_at = {}  # (address, field) -> the line it was last read from
    # After a mail's quote marks, the indentation is lspci's: it tells device headers from their lines.
    lines = _joined_acs_lines([MAIL_QUOTE_MARKS.sub("", raw) for raw in text.splitlines()])
    header_indent = min((_indent(raw) for raw in lines if _HEADER.match(raw.strip())), default=0)
    listed = {}  # address -> the capabilities its "Capabilities: [..] <name>" lines name
    kernel_lines, beyond_kernel = set(), set()  # the functions with a line lspci -k prints, and with one it does not
    capability_or_status = set()  # the functions with a Capabilities line, or a Status line that says Cap- (none)
    framed = set()  # the functions with the Flags line of lspci -v or the Control/Status lines of -vv
    elided = set()  # the functions whose lines the paste cut with "(...)", "...", "[...]"
    dumps = {}  # address -> {offset: 16 bytes} of its lspci -x/-xxx/-xxxx hex lines
    text_detail = set()  # the functions with a line of lspci -v's text under their header
    secondary_buses = {}  # a bridge's address -> the bus below it, for lspci -P's paths
    shown = []  # [address, whether a line of lspci -v follows, block] of each device header, in text order
    block = 0  # counts the lines at the headers' indentation that are no header (a prompt, another command's output)
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        header = _HEADER.match(line)
        if header and _indent(raw) == header_indent:
            address = _header_address(header.group("path"), secondary_buses)
            if address is None:  # lspci -P's step below a bridge whose secondary bus the text does not give
                notes.append("line %d: %s names its function by a path whose bus the text does not give; its lines are not "
                             "read" % (number, header.group("path")))
                current = None
                continue
            current = functions.setdefault(address, {"description": _AUTHORS_ARROW.sub("", line.split(" ", 1)[1]).strip(), "port_type": None,
                                                     "acs": None, "ats": None, "iommu_group": None, "unreadable": None})
            shown.append([address, False, block])
            continue
        hex_line = _HEX_LINE.match(line)
        if hex_line and current is not None:
            shown[-1][1] = True
            beyond_kernel.add(address)
            dumps.setdefault(address, {})[int(hex_line.group("offset"), 16)] = bytes.fromhex(hex_line.group("bytes"))
            continue
        if _indent(raw) <= header_indent:
            block += 1
        buses = _BRIDGE_BUSES.match(line)
        if buses and current is not None:
            secondary_buses[address] = buses.group("secondary").lower()
        if current is not None and (_DETAIL_LINE.match(line) or _NO_ANSWER.match(line) or _field(line) is not None):
            shown[-1][1] = True
            text_detail.add(address)
            (kernel_lines if _KERNEL_ONLY_LINE.match(line) else beyond_kernel).add(address)
            # What says the block is whole: a Capabilities line, or a Status line of a function without any (Cap-);
            # "Status: Cap+" with no Capabilities line after it is a block cut before them.
            if line.startswith("Capabilities") or (line.startswith("Status:") and "Cap+" not in line.split()):
                capability_or_status.add(address)
            if line.startswith(("Flags:", "Control:", "Status:")):
                framed.add(address)
        if current is not None and _ELISION.match(line):
            elided.add(address)
        if current is not None and _NO_ANSWER.match(line):
            current["unreadable"] = ("the function does not answer configuration reads (lspci: %r): it has fallen off "
                                     "the bus or is held in reset" % line[:60])
            continue
        if current is not None and _CAPABILITY_DENIED.match(line):
            current["unreadable"] = ("lspci could not read its capabilities (\"Capabilities: <access denied>\"): "
                                     "lspci -vvv must run as root")
            continue
        capability = _CAPABILITY_LISTED.match(line)
        if capability and current is not None:
            listed.setdefault(address, set()).add(capability.group("name"))
        offset = _CAPABILITY_OFFSET.match(line)
        if offset and current is not None:
            if int(offset.group(1), 16) >= CONFIG_CONVENTIONAL_BYTES:
                listed.setdefault(address, set()).add(_EXTENDED)
            elif _EXPRESS.match(line):
                listed.setdefault(address, set()).add(_EXPRESS_LISTED)
        field = _field(line)
        if field is None:
            continue
        name, value = field
        if current is None:
            unattributed.append({"line": number, "field": name, "value": value})
            continue
        if name in ("ACSCap", "ACSCtl"):
            if value is None:
                notes.append("line %d: %s without all seven ACS flags; not read" % (number, name))
                continue
            acs = current["acs"] = current["acs"] or {"capable": None, "control": None}
            key = "capable" if name == "ACSCap" else "control"
            _note_relisted(notes, number, address, name, acs[key], value, read_at)
            acs[key] = value
        elif name == "ATSCap":
            _note_relisted(notes, number, address, name, (current["ats"] or {}).get("invalidate_queue_depth"), value, read_at)
            current["ats"] = dict(current["ats"] or {"enabled": None, "smallest_translation_unit": None}, invalidate_queue_depth=value)
        elif name == "ATSCtl":
            _note_relisted(notes, number, address, name, (current["ats"] or {}).get("enabled"), value["enabled"], read_at)
            current["ats"] = dict(current["ats"] or {"invalidate_queue_depth": None}, **value)
        elif name == "port_type":
            current["port_type"] = value
        elif name == "iommu_group":
            current["iommu_group"] = value
    if not functions and not unattributed:
        if _TREE.search(text):
            raise LspciTextError("this is the tree lspci -t prints, which shows no capability: ACS and ATS need lspci -vvv")
        if any(_DETAIL_LINE.match(line.strip()) for line in text.splitlines()):
            raise LspciTextError("lspci -vvv's capability lines without a 'BB:DD.F class: name' device header and without an "
                                 "ACSCtl/ATSCtl line: nothing to read of a function (a paste cut before its device's header?)")
        raise LspciTextError("no 'BB:DD.F class: name' device header and no ACSCtl/ATSCtl line: this is not lspci -vvv output")
    acs_or_ats_names = {row[0] for row in _LISTED_REGISTERS}
    acs_or_ats_shown = (any(entry["acs"] or entry["ats"] for entry in functions.values())
                        or any(names & acs_or_ats_names for names in listed.values()))
    listing_only = _listing_only(shown, acs_or_ats_shown or not beyond_kernel)
    extended_read = any(_EXTENDED in names for names in listed.values())
    last_detailed = {address: index for index, (address, detailed, dummy) in enumerate(shown) if detailed}
    for address, entry in functions.items():
        if address in dumps and entry["acs"] is None and entry["ats"] is None and entry["unreadable"] is None \
                and _read_hex_dump(entry, dumps[address], address in text_detail):
            continue
        if address in listing_only and entry["unreadable"] is None:
            entry["unreadable"] = ("only its one-line listing is in the text (lspci without -vvv, or a listing filtered by "
                                   "grep): its ACS and ATS are not shown")
            continue
        # lspci -k's text (no function with any other line), or one of its functions among lspci -vvv's.
        if (address in kernel_lines or not beyond_kernel) and address not in beyond_kernel and entry["unreadable"] is None:
            entry["unreadable"] = ("only its Subsystem and kernel driver lines are in the text (lspci -k, or lspci filtered by "
                                   "grep): its capabilities, ACS and ATS, are not shown")
            continue
        if address in elided and address in capability_or_status and entry["unreadable"] is None and entry["acs"] is None \
                and entry["ats"] is None:
            # Some capabilities shown, others cut: ACS or ATS may be among those cut.
            entry["unreadable"] = ("its lines are cut by an elision (such as \"(...)\" or \"[...]\") and no ACS or ATS line is shown: "
                                   "they may be among the lines cut")
            continue
        if (address in elided or (address == shown[-1][0] and address in beyond_kernel)) and address not in capability_or_status \
                and entry["unreadable"] is None and entry["acs"] is None and entry["ats"] is None:
            # lspci -v lists a function's capabilities under its Flags line, -vv says Cap- in Status when it has
            # none: a block cut before either (an elision, or the end of the text) does not say.
            entry["unreadable"] = ("its lines are cut (an elision such as \"(...)\", or the end of the text) before any "
                                   "Capabilities line (its Status, where shown, says Cap+): its ACS and ATS are not shown")
            continue
        names = listed.get(address, set())
        missing = [(capability, registers) for capability, registers, key, needed in _LISTED_REGISTERS
                   if capability in names and (entry[key] or {}).get(needed) is None]
        if not missing and address in capability_or_status and address not in framed and address not in dumps \
                and entry["unreadable"] is None and entry["acs"] is None and entry["ats"] is None:
            # lspci prints Flags (-v) or Control and Status (-vv) above the capabilities: a block of Capabilities lines
            # without them is what a filter (lspci -v | grep PCI) or a trim left, and ACS or ATS may be what it left out.
            entry["unreadable"] = ("its Capabilities lines stand without lspci's Flags (-v) or Control and Status (-vv) lines: "
                                   "the text was filtered (grep) or trimmed, and its ACS and ATS may be among the lines left out")
            continue
        # Where lspci read other functions' extended capabilities, a whole block without any (another header
        # follows its detailed block, or its hex dump, which lspci prints after all its lines, ends it) is a function
        # that has none, as some chipsets' root ports do: no ACS, no ATS.
        whole = extended_read and (address in dumps or last_detailed.get(address, len(shown) - 1) < len(shown) - 1)
        if (_EXPRESS_LISTED in names and _EXTENDED not in names and entry["acs"] is None and entry["ats"] is None
                and entry["unreadable"] is None and not whole):
            entry["unreadable"] = ("its PCI Express capability is listed but none of its extended capabilities, where ACS and ATS "
                                   "are: the text was cut, or lspci could not read the extended configuration space")
            continue
        if missing and entry["unreadable"] is None:
            entry["unreadable"] = "; ".join("its %s capability is listed but no complete %s lines follow it (lspci -v instead of "
                                            "-vvv, or the text was cut, filtered by grep or its lines broken)" % pair
                                            for pair in missing)
    return {"functions": functions, "unattributed": unattributed, "notes": notes}


def _header_address(path, secondary_buses):
    """The address of a device header's function: its path's last step, whose bus lspci -P leaves out (the
    secondary bus of the bridge before it); None where the text does not give that bus."""
    steps = [_PATH_STEP.match(step) for step in path.split("/")]
    domain = (steps[0].group("domain") or "0000").lower()
    address = None
    for step in steps:
        bus = step.group("bus")
        if bus is None:
            bus = secondary_buses.get(address)
            if bus is None:
                return None
        address = "%s:%s:%s.%s" % (domain, bus.lower(), step.group("dev").lower(), step.group("fn"))
    return address


def _read_hex_dump(entry, rows, text_shown):
    """Fill a function's port type, ACS and ATS from its lspci -x/-xxx/-xxxx hex lines, where its text did not;
    False where the dump, without the extended space, leaves that to the lines of lspci -v's text."""
    data = bytearray()
    while len(data) in rows:  # the lines from offset 0 on, as long as none is missing
        data += rows[len(data)]
    parsed = parse_config_space(bytes(data))
    entry["port_type"] = entry["port_type"] or parsed["port_type"]
    if data[:4] == b"\xff\xff\xff\xff":
        entry["unreadable"] = "its hex dump reads all ones: the function does not answer configuration reads"
    elif len(data) >= CONFIG_EXTENDED_BYTES and parsed["notes"] and parsed["acs"] is None and parsed["ats"] is None:
        entry["unreadable"] = "its hex dump's list of extended capabilities is broken (%s)" % parsed["notes"][0]
    elif len(data) >= CONFIG_EXTENDED_BYTES:
        entry["acs"], entry["ats"] = parsed["acs"], parsed["ats"]
    elif len(data) >= CONFIG_CONVENTIONAL_BYTES and parsed["port_type"] is None:
        pass  # its whole list of capabilities holds no PCI Express one: a conventional PCI function, no extended space
    elif text_shown:
        return False
    else:
        entry["unreadable"] = ("its hex dump holds %d bytes of configuration space (lspci -x or -xxx): ACS and ATS are in the "
                               "extended space past byte 256, which lspci -xxxx shows" % len(data))
    return True


def _note_relisted(notes, number, address, field, earlier, value, read_at):
    """A function listed twice (lspci run again after a change) whose ``field`` differs: the later listing is
    read, and said so, as the earlier state is lost."""
    where = read_at.get((address, field))
    read_at[(address, field)] = number
    if where is not None and earlier is not None and earlier != value:
        notes.append("line %d: %s is listed again and its %s differs from line %d's; the later one is read"
                     % (number, address, field, where))


def _listing_only(shown, filter_keeps_acs_or_ats):
    """The addresses whose every header stands among headers without a line of their own (a one-line listing:
    lspci, lspci -nn). Where the text shows ACS or ATS lines, a header without lines next to one with lines, with
    nothing else between them, is a function a filter left bare (lspci -vvv | grep -e ^0 -e ACSCtl): what the
    filter keeps, it does not have. A filter that kept no such line (lspci -v | grep PCI) says nothing of them;
    lspci -k's listing (``filter_keeps_acs_or_ats`` true there too) is told by its own lines later."""
    bare = set()
    described = set()
    for index, (address, detailed, block) in enumerate(shown):
        neighbours = [other for dummy, other, where in shown[max(index - 1, 0):index + 2] if where == block]
        (described if detailed or (filter_keeps_acs_or_ats and any(neighbours)) else bare).add(address)
    return bare - described


def _joined_acs_lines(lines):
    """The lines with each ACSCap/ACSCtl line broken in two (a mail wrapped at 72 columns) made whole again;
    the emptied continuation keeps its place, so line numbers stay those of the text."""
    joined = list(lines)
    for index in range(len(joined) - 1):
        line, following = joined[index].strip(), joined[index + 1].strip()
        if _ACS_LINE.match(line) and len(_ACS_FLAG.findall(line)) < len(ACS_BITS) and _ACS_CONTINUATION.match(following):
            joined[index], joined[index + 1] = joined[index].rstrip() + " " + following, ""
    return joined


def _indent(raw):
    return len(raw.expandtabs(8)) - len(raw.expandtabs(8).lstrip())


def _field(line):
    """``(name, value)`` of an ACS/ATS/Express/IOMMU line of lspci, or None for any other line."""
    match = _ACS_LINE.match(line)
    if match:
        return match.group("field"), _lspci_flags(match.group("flags"))
    match = _ATS_CAP.match(line)
    if match:
        return "ATSCap", int(match.group("depth"), 16)
    match = _ATS_CTL.match(line)
    if match:
        return "ATSCtl", {"enabled": match.group("enabled") == "+", "smallest_translation_unit": int(match.group("stu"), 16)}
    match = _EXPRESS.match(line)
    if match:
        kind = next((key for words, key in _LSPCI_PORT_TYPES if words in match.group("kind")), "other")
        return "port_type", kind
    match = _IOMMU_GROUP.match(line)
    if match:
        return "iommu_group", int(match.group("group"))
    return None


# ------------------------------------------------------------------------------------ IOMMU


def read_iommu(directory):
    """``{"group", "type", "mode", "reason"}`` of a function's IOMMU domain from sysfs."""
    link = os.path.join(directory, "iommu_group")
    if not os.path.islink(link) and not os.path.isdir(link):
        return {"group": None, "type": None, "mode": "off",
                "reason": "no iommu_group: the IOMMU is off or absent (DMA goes untranslated)"}
    group_dir = os.path.realpath(link)
    group = os.path.basename(group_dir)
    text, reason = read_text_and_reason(os.path.join(group_dir, "type"), "an IOMMU domain type", 256)
    if text is None:
        return {"group": int(group) if group.isdigit() else None, "type": None, "mode": "unknown",
                "reason": reason or "%s has no type file (kernel older than 5.11)" % group_dir}
    kind = text.strip()
    return {"group": int(group) if group.isdigit() else None, "type": kind, "mode": IOMMU_MODES.get(kind, "unknown"),
            "reason": None if kind in IOMMU_MODES else "unknown IOMMU domain type %r" % kind[:40]}


# ------------------------------------------------------------------------------------ reader


def _path_bridges(gpu_node, hca_node):
    """The bridges between a GPU and an HCA: each side's below their deepest shared bridge, and that bridge."""
    gpu_chain, hca_chain = [a for a, _d in gpu_node.bridges], [a for a, _d in hca_node.bridges]
    shared = 0
    while shared < min(len(gpu_chain), len(hca_chain)) and gpu_chain[shared] == hca_chain[shared]:
        shared += 1
    middle = [gpu_chain[shared - 1]] if shared else []
    return list(reversed(gpu_chain[shared:])) + middle + hca_chain[shared:], (gpu_chain[shared - 1] if shared else None)


def read_pcie_path(sysfs_root, facts_so_far, lspci_text=None, lspci_source=None):
    """``rdma.pcie_path``: ACS/ATS of every function between each GPU and its nearest HCA, and IOMMU modes.

    ``{"available", "applicable", "reason", "source", "functions": {address: {"role", "device",
    "port_type", "acs", "ats", "iommu", "unreadable"}}, "paths": [{"gpu", "hca", "hca_address",
    "relation", "bridges", "shared_bridge"}], "notes"}``. With ``lspci_text`` (saved ``lspci -vvv``)
    ACS and ATS come from it; otherwise from each function's ``config``. A node without GPUs or HCAs
    has nothing to check (``applicable: false``, and the reason); one with both whose path could not
    be read is ``applicable`` but not ``available``.
    """
    facts_so_far = facts_so_far or {}
    devices, ports = facts_so_far.get("devices") or {}, facts_so_far.get("ports") or []
    nodes = hca_nodes(sysfs_root, devices)
    gpu_list = gpus(sysfs_root)
    result = {"available": False, "applicable": bool(gpu_list and nodes), "reason": None, "source": None, "functions": {},
              "paths": [], "notes": []}
    if not gpu_list or not nodes:
        result["reason"] = "no %s on this node's PCI tree: no GPU-to-HCA path to check" % ("GPU" if not gpu_list else "RDMA device on a PCI function")
        return result
    parsed_lspci = None
    if lspci_text is not None:
        try:
            parsed_lspci = parse_lspci_vvv(lspci_text)
        except LspciTextError as exc:
            result["reason"] = "%s: %s" % (lspci_source or "the lspci text", exc)
            return result
        result["notes"].extend(parsed_lspci["notes"])
        if parsed_lspci["unattributed"]:
            result["notes"].append("%d ACS/ATS lines come before any device header (lspci output filtered by grep?) and "
                                   "belong to no function" % len(parsed_lspci["unattributed"]))
    result["source"] = "lspci -vvv (%s)" % (lspci_source or "saved text") if parsed_lspci else "sysfs config space"
    hcas = hca_locations(devices, ports, sysfs_root)
    name_of = {node.address: name for name, node in nodes.items()}
    for entry in locality(gpu_list, hcas):
        hca = entry["nearest_hca"]
        gpu_node = node_of(sysfs_root, entry["gpu"])
        if hca is None or gpu_node is None or hca not in nodes:
            continue
        bridges, shared = _path_bridges(gpu_node, nodes[hca])
        result["paths"].append({"gpu": entry["gpu"], "hca": hca, "hca_address": nodes[hca].address,
                                "relation": entry["relation"], "bridges": bridges, "shared_bridge": shared})
        directories = dict(gpu_node.bridges + nodes[hca].bridges)
        members = [(entry["gpu"], gpu_node.path, "gpu"), (nodes[hca].address, nodes[hca].path, "hca")]
        members += [(address, directories[address], "bridge") for address in bridges]
        for address, directory, role in members:
            if address not in result["functions"]:
                result["functions"][address] = _function_facts(address, directory, role, name_of.get(address), parsed_lspci)
    readable = [f for f in result["functions"].values() if not f["unreadable"]]
    result["available"] = bool(result["paths"]) and bool(readable)
    if not result["paths"]:
        result["reason"] = "no GPU has an HCA on a PCI function to pair with"
    elif not readable:
        result["reason"] = sorted({f["unreadable"] for f in result["functions"].values()})[0]
    return result


def _function_facts(address, directory, role, device, parsed_lspci):
    entry = {"role": role, "device": device, "port_type": None, "acs": None, "ats": None,
             "iommu": read_iommu(directory), "unreadable": None}
    if parsed_lspci is not None:
        listed = parsed_lspci["functions"].get(address)
        if listed is None:
            entry["unreadable"] = "%s is not in the lspci text" % address
            return entry
        entry.update(port_type=listed["port_type"], acs=listed["acs"], ats=listed["ats"], unreadable=listed["unreadable"])
        return entry
    config, reason = read_config_space(directory)
    if config is None:
        entry["unreadable"] = reason
        return entry
    entry.update(port_type=config["port_type"], acs=config["acs"], ats=config["ats"])
    return entry


@reader("pcie_path", IB_FACTS, fills=("rdma.pcie_path",), inputs=("lspci_file",))
def read_pcie_path_subset(facts, params, module):
    """ACS and ATS of every PCI function between each GPU and its nearest HCA, and their IOMMU modes:
    from config space in sysfs, or from saved lspci -vvv text (lspci_file)."""
    path, text = params.get("lspci_file"), None
    if path:
        text, reason = read_text_and_reason(path, "saved lspci -vvv output", LSPCI_MAX_BYTES)
        if text is None:
            raise FactReadError("lspci_file: %s" % (reason or "%s does not exist; expected saved lspci -vvv output" % path))
    facts["pcie_path"] = read_pcie_path(params["sysfs_root"], facts, text, path)
