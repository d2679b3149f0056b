# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text that RDMA tools print: ``ibstat``, ``ibstatus``, ``ibv_devinfo``,
``ibdev2netdev`` (plain, ``-v`` and the old ``<===>`` style) and ``rdma link``.

Every parser takes the command's output as one string or as a list of lines (``stdout_lines``)
and returns a list of dicts, one per port, with the field names of ``ansible_facts.rdma.ports``
(see ``FIELDS``). Every dict carries every field; a field the output does not show is None.
Device fields (``hca_type``, ``fw_ver``, ...) are repeated on each port of their device. A
device listing without ports (``ibstat -l``, ``ibv_devinfo -l``, ``ibstat -s``, a listing cut
before its first port) gives one dict for the device with ``port`` None.

The parsers read what people paste, not only what the tools print: indentation by tabs, by
spaces or none at all, trailing blanks, CRLF line ends, ANSI colours, terminal borders (box
drawing characters and ``|``), shell prompt lines (``$ ibstat``, ``root@node:~# ibstat``) and
diagnostic noise (``ibwarn:``, ``ibpanic:``, ``ibdebug:``, ``iberror:``, ``libibverbs: Warning``)
are skipped. Output cut off in the middle gives what was seen so far. Unknown keys inside a
block are ignored, so newer tool versions that add a field still parse.

Text that is not the command's output raises ``IbTextError`` naming the parser and quoting the
first line it could not place, e.g. ``parse_ibstat: line 3 is not ibstat output: 'foo bar'``.
Each tool's block header is distinct, so one tool's output is never taken for another's.

How ``ibdev2netdev`` is read: the word in parentheses after the netdev is that netdev's
carrier as ibdev2netdev prints it (``Up`` when ``/sys/class/net/<netdev>/carrier`` is 1,
``Down`` when 0, ``NA`` when the file is missing); it becomes ``netdev_state`` and the text as
printed is kept in ``netdev_state_raw``. ibdev2netdev never prints two words there: a form like
``(Down/Up)`` (the A100 lines of the Crater write-up) is a person's summary of several nodes
("down on some nodes, up on others"), not one node's carrier, so ``netdev_state`` is None for
it and ``netdev_state_raw`` keeps ``Down/Up``. ``NA`` and an empty ``()`` also give None.
"""

from __future__ import annotations

import ipaddress
import json
import re

from ansible_collections.rdma.node.plugins.module_utils._ib_common import (
    gid_interface_id,
    normalize_guid,
    parse_lid,
    parse_rate,
    phys_state,
    port_state,
)

# Port fields first, then the device fields repeated on each port.
PORT_FIELDS = (
    "device", "port", "state", "state_code", "phys_state", "phys_state_code", "rate_gbps",
    "width", "speed", "link_layer", "lid", "sm_lid", "lmc", "port_guid", "cap_mask", "gid",
    "subnet_prefix", "netdevs", "netdev_state", "netdev_state_raw", "max_mtu", "active_mtu",
)
DEVICE_FIELDS = (
    "node_type", "hca_type", "fw_ver", "hw_rev", "node_guid", "sys_image_guid", "board_id",
    "pci_address", "transport", "vendor_id", "vendor_part_id", "description", "part_id",
    "num_ports",
)
FIELDS = PORT_FIELDS + DEVICE_FIELDS


class IbTextError(ValueError):
    """The text given to a parser is not the output of that parser's command."""


# ---------------------------------------------------------------------------------------------
# Reading lines: types, borders, prompts, noise
# ---------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Box drawing (U+2500-U+257F), block elements (U+2580-U+259F) and ASCII pipes frame pasted text.
_BORDER_CHARS = "|\u00a6" + "".join(chr(c) for c in range(0x2500, 0x25A0))
_STRIP_CHARS = " \t\f\v\u00a0" + _BORDER_CHARS
_DECORATION = re.compile(r"^[\s+=_~\-%s]*$" % re.escape(_BORDER_CHARS))
_PROMPT = re.compile(r"^(?:\[[^\]]*\]\s?|\S*[@:~]\S*?\s?)?[$#%]\s*(?:\S.*)?$")
_NOISE = re.compile(r"^(?:ib(?:warn|panic|debug|error|info)\s*:|libibverbs:\s*warning)", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_ \[\]./-]*?)\s*:\s*(?P<value>.*)$")
_DEVICE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_TRAILING_CODE = re.compile(r"^(?P<text>.*?)\s*\((?P<code>-?\d+)\)$")
_UNKNOWN_WORDS = frozenset(("", "???", "NA", "N/A", "UNKNOWN", "NONE"))


def _input_text(data, parser):
    """Return the output as one string from a string, bytes or a list of lines."""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    if isinstance(data, str):
        return data
    if isinstance(data, (list, tuple)):
        lines = []
        for index, item in enumerate(data):
            if isinstance(item, bytes):
                item = item.decode("utf-8", "replace")
            if not isinstance(item, str):
                raise IbTextError(
                    "%s: item %d of the list is a %s, expected a line of text (use the task's "
                    "stdout or stdout_lines)" % (parser, index + 1, type(item).__name__)
                )
            lines.append(item)
        return "\n".join(lines)
    raise IbTextError(
        "%s: expected the command's output as a string or a list of lines (e.g. result.stdout "
        "or result.stdout_lines), got %s" % (parser, type(data).__name__)
    )


def _clean(line):
    """Return a line without colours, borders and indentation; '' for a line that says nothing."""
    line = _ANSI.sub("", line).strip(_STRIP_CHARS)
    if _DECORATION.match(line):
        return ""
    return line


def _meaningful_lines(data, parser):
    """Yield ``(line_number, text)`` for the lines a parser has to place (1-based numbers)."""
    text = _input_text(data, parser)
    for number, raw in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        line = _clean(raw)
        if not line or _NOISE.match(line) or _PROMPT.match(line):
            continue
        yield number, line


def _not_output(parser, tool, number, line):
    shown = line if len(line) <= 120 else line[:117] + "..."
    return IbTextError("%s: line %d is not %s output: %r" % (parser, number, tool, shown))


def _key(text):
    """``Physical state`` / ``phys_state`` / ``GID[  0]`` -> ``physical state`` / ``phys state``."""
    return re.sub(r"[\s_]+", " ", text.strip().lower())


def _known(text):
    """Return text as printed, or None when the tool says it does not know."""
    if text is None:
        return None
    text = text.strip()
    if text.upper() in _UNKNOWN_WORDS or text.lower().startswith("invalid"):
        return None
    return text


def _int(text):
    """``4099`` or ``0x02c9`` as an int; None for anything else."""
    if text is None:
        return None
    text = str(text).strip().lower()
    try:
        return int(text, 16) if text.startswith("0x") else int(text, 10)
    except ValueError:
        return None


def _strip_code(text):
    """``InfiniBand (0)`` -> ``InfiniBand``; ``4096 (5)`` -> ``4096``."""
    match = _TRAILING_CODE.match(text.strip())
    return match.group("text") if match else text.strip()


# ---------------------------------------------------------------------------------------------
# Collecting devices and ports, then flattening them into one dict per port
# ---------------------------------------------------------------------------------------------

class _Devices:
    """Devices in order of appearance, each with its device fields and its ports."""

    def __init__(self):
        self._order = []

    def new(self, name):
        device = {"name": name, "fields": {}, "ports": []}
        self._order.append(device)
        return device

    def current(self, name):
        """The device of the previous line when it has that name, else a new one (for the formats
        that print one line or block per port), so the result keeps the order of the output."""
        if self._order and self._order[-1]["name"] == name:
            return self._order[-1]
        return self.new(name)

    @staticmethod
    def port(device, number):
        """Start port ``number`` of ``device``."""
        port = {"port": number}
        device["ports"].append(port)
        return port

    def all(self):
        return list(self._order)

    def result(self):
        result = []
        for device in self._order:
            for port in device["ports"] or [{}]:
                entry = dict.fromkeys(FIELDS)
                entry.update(device["fields"])
                entry.update(port)
                entry["device"] = device["name"]
                result.append(entry)
        return result


def _set_state(port, text):
    name, code = port_state(_known(text))
    port["state"], port["state_code"] = name, code


def _set_phys_state(port, text):
    name, code = phys_state(_known(text))
    port["phys_state"], port["phys_state_code"] = name, code


def _set_rate(port, text):
    rate = parse_rate(text)
    port["rate_gbps"] = rate["rate_gbps"]
    port["width"] = rate["width"]
    port["speed"] = rate["speed"]


def _set_gid(port, text):
    """Keep the GID in its full form (as sysfs and ibstatus print it); its low half is the GUID."""
    gid = _known(text)
    if gid is not None:
        try:
            gid = ipaddress.IPv6Address(gid).exploded
        except ValueError:
            pass
    port["gid"] = gid
    port["port_guid"] = gid_interface_id(gid)


def _device_list(lines, parser, tool):
    """A listing with one device name per line (``ibstat -l``, ``ibv_devinfo -l``)."""
    devices = _Devices()
    for number, line in lines:
        if not _DEVICE_NAME.match(line):
            raise _not_output(parser, tool, number, line)
        devices.new(line)
    return devices.result()


def _chain(first, rest):
    """The line already read, then the others."""
    yield first
    yield from rest


# ---------------------------------------------------------------------------------------------
# ibstat
# ---------------------------------------------------------------------------------------------

_IBSTAT_CA = re.compile(r"^(?P<type>CA|Switch|Router|iWARP RNIC|\?\?\?)\s*:?\s*'(?P<name>[^']+)'$")
_IBSTAT_PORT = re.compile(r"^Port\s+(?P<port>\d+)\s*:$", re.IGNORECASE)
_IBSTAT_GUID = re.compile(r"^0x[0-9a-fA-F]{1,16}$")
_IBSTAT_TYPE_KEYS = frozenset(("ca type", "switch type", "router type", "iwarp rnic type", "??? type"))
_IBSTAT_DEVICE_KEYS = {
    "number of ports": ("num_ports", _int),
    "firmware version": ("fw_ver", _known),
    "hardware version": ("hw_rev", _known),
    "node guid": ("node_guid", normalize_guid),
    "system image guid": ("sys_image_guid", normalize_guid),
}
_IBSTAT_PORT_KEYS = {
    "base lid": ("lid", parse_lid),
    "lmc": ("lmc", parse_lid),
    "sm lid": ("sm_lid", parse_lid),
    "capability mask": ("cap_mask", _known),
    "port guid": ("port_guid", normalize_guid),
    "link layer": ("link_layer", _known),
}


def parse_ibstat(data):
    """Parse ``ibstat``, ``ibstat -s``, ``ibstat -l``, ``ibstat -p`` and ``ibstat CA PORT``."""
    parser, tool = "parse_ibstat", "ibstat"
    lines = _meaningful_lines(data, parser)
    first = next(lines, None)
    if first is None:
        return []
    if _IBSTAT_GUID.match(first[1]):
        return _ibstat_port_guids(_chain(first, lines), parser, tool)
    if _DEVICE_NAME.match(first[1]):
        return _device_list(_chain(first, lines), parser, tool)

    devices = _Devices()
    device = port = None
    for number, line in _chain(first, lines):
        header = _IBSTAT_CA.match(line)
        if header:
            device = devices.new(header.group("name"))
            device["fields"]["node_type"] = header.group("type") if header.group("type") != "???" else None
            port = None
            continue
        port_header = _IBSTAT_PORT.match(line)
        pair = _KEY_VALUE.match(line)
        if device is None or not (port_header or pair):
            raise _not_output(parser, tool, number, line)
        if port_header:
            port = devices.port(device, int(port_header.group("port")))
            continue
        key, value = _key(pair.group("key")), pair.group("value").strip()
        if key in _IBSTAT_TYPE_KEYS:
            device["fields"]["hca_type"] = _known(value)
        elif key in _IBSTAT_DEVICE_KEYS:
            field, convert = _IBSTAT_DEVICE_KEYS[key]
            device["fields"][field] = convert(value)
        elif key in _IBSTAT_PORT_KEYS or key in ("state", "physical state", "rate"):
            if port is None:
                raise _not_output(parser, tool, number, line)
            if key == "state":
                _set_state(port, value)
            elif key == "physical state":
                _set_phys_state(port, value)
            elif key == "rate":
                _set_rate(port, value)
            else:
                field, convert = _IBSTAT_PORT_KEYS[key]
                port[field] = convert(value)
        # Any other key is a field a newer ibstat added: ignored.
    return devices.result()


def _ibstat_port_guids(lines, parser, tool):
    """``ibstat -p``: one port GUID per line; the device is not shown."""
    result = []
    for number, line in lines:
        if not _IBSTAT_GUID.match(line):
            raise _not_output(parser, tool, number, line)
        entry = dict.fromkeys(FIELDS)
        entry["port_guid"] = normalize_guid(line)
        result.append(entry)
    return result


# ---------------------------------------------------------------------------------------------
# ibstatus
# ---------------------------------------------------------------------------------------------

_IBSTATUS_HEADER = re.compile(
    r"^Infiniband device\s+'(?P<device>[^']+)'\s+port\s+(?P<port>\d+)\s+status\s*:$", re.IGNORECASE
)
_IBSTATUS_KEYS = {
    "base lid": ("lid", parse_lid),
    "sm lid": ("sm_lid", parse_lid),
    "link layer": ("link_layer", _known),
}


def parse_ibstatus(data):
    """Parse ``ibstatus`` (the sysfs values as the kernel prints them, LIDs in hex)."""
    parser, tool = "parse_ibstatus", "ibstatus"
    devices = _Devices()
    port = None
    for number, line in _meaningful_lines(data, parser):
        header = _IBSTATUS_HEADER.match(line)
        if header:
            device = devices.current(header.group("device"))
            port = devices.port(device, int(header.group("port")))
            continue
        pair = _KEY_VALUE.match(line)
        if port is None or not pair:
            raise _not_output(parser, tool, number, line)
        key, value = _key(pair.group("key")), pair.group("value").strip()
        if key == "default gid":
            _set_gid(port, value)
        elif key == "state":
            _set_state(port, value)
        elif key == "phys state":
            _set_phys_state(port, value)
        elif key == "rate":
            _set_rate(port, value)
        elif key in _IBSTATUS_KEYS:
            field, convert = _IBSTATUS_KEYS[key]
            port[field] = convert(value)
    return devices.result()


# ---------------------------------------------------------------------------------------------
# ibv_devinfo
# ---------------------------------------------------------------------------------------------

_DEVINFO_COUNT = re.compile(r"^(?P<count>\d+)\s+HCAs?\s+found\s*:$", re.IGNORECASE)
_DEVINFO_NONE = re.compile(r"^No IB devices found\.?$", re.IGNORECASE)
_DEVINFO_GID0 = re.compile(r"^gid\[\s*0\s*\]$")
# Lines without a colon that ``ibv_devinfo -v`` prints inside a device's attributes.
_DEVINFO_FLAG = re.compile(
    r"^(?:[A-Z][A-Z0-9_]*(?: [A-Z0-9_]+)*|.* not supported|.* offload|Delay drop)$"
)
# IB lane speeds by the code ibv_devinfo -v prints in parentheses (IBTA PortInfo:LinkSpeedActive
# and LinkSpeedExtActive as libibverbs encodes them).
_SPEED_NAMES = {1: "SDR", 2: "DDR", 4: "QDR", 8: "FDR10", 16: "FDR", 32: "EDR", 64: "HDR",
                128: "NDR", 256: "XDR"}
_LANE_GBPS = {1: 2.5, 2: 5.0, 4: 10.0, 8: 10.0, 16: 14.0, 32: 25.0, 64: 50.0, 128: 100.0, 256: 200.0}
_DEVINFO_DEVICE_KEYS = {
    "fw ver": ("fw_ver", _known),
    "node guid": ("node_guid", normalize_guid),
    "sys image guid": ("sys_image_guid", normalize_guid),
    "vendor id": ("vendor_id", _known),
    "vendor part id": ("vendor_part_id", _int),
    "hw ver": ("hw_rev", _known),
    "board id": ("board_id", _known),
    "phys port cnt": ("num_ports", _int),
}
_DEVINFO_PORT_KEYS = {
    "sm lid": ("sm_lid", parse_lid),
    "port lid": ("lid", parse_lid),
    "port lmc": ("lmc", parse_lid),
    "link layer": ("link_layer", _known),
    "port cap flags": ("cap_mask", _known),
    "max mtu": ("max_mtu", lambda v: _int(_strip_code(v))),
    "active mtu": ("active_mtu", lambda v: _int(_strip_code(v))),
}


def parse_ibv_devinfo(data):
    """Parse ``ibv_devinfo``, ``ibv_devinfo -v`` and ``ibv_devinfo -l``."""
    parser, tool = "parse_ibv_devinfo", "ibv_devinfo"
    lines = _meaningful_lines(data, parser)
    for number, line in lines:
        if _DEVINFO_NONE.match(line):
            continue
        if _DEVINFO_COUNT.match(line):
            return _device_list(lines, parser, tool)
        return _devinfo_blocks(_chain((number, line), lines), parser, tool)
    return []


def _devinfo_blocks(lines, parser, tool):
    devices = _Devices()
    device = port = None
    for number, line in lines:
        pair = _KEY_VALUE.match(line)
        if pair is None:
            # ibv_devinfo -v lists capability flags one per line under the device attributes.
            if device is not None and port is None and _DEVINFO_FLAG.match(line):
                continue
            raise _not_output(parser, tool, number, line)
        key, value = _key(pair.group("key")), pair.group("value").strip()
        if key == "hca id":
            if not _DEVICE_NAME.match(value):
                raise _not_output(parser, tool, number, line)
            device, port = devices.new(value), None
            continue
        if device is None:
            raise _not_output(parser, tool, number, line)
        if key == "port":
            if _int(value) is None:
                raise _not_output(parser, tool, number, line)
            port = devices.port(device, _int(value))
        elif key == "transport":
            device["fields"]["transport"] = _known(_strip_code(value))
        elif key in _DEVINFO_DEVICE_KEYS and port is None:
            field, convert = _DEVINFO_DEVICE_KEYS[key]
            device["fields"][field] = convert(value)
        elif port is None:
            continue  # one of the many device attributes of -v; not a port field
        elif key == "state":
            _set_state(port, value)
        elif key == "phys state":
            _set_phys_state(port, value)
        elif key == "active width":
            width = _strip_code(value).upper()
            port["width"] = width if re.match(r"^\d+X$", width) else None
        elif key == "active speed":
            _devinfo_speed(port, value)
        elif _DEVINFO_GID0.match(key):
            _set_gid(port, value.split(",")[0])
        elif key in _DEVINFO_PORT_KEYS:
            field, convert = _DEVINFO_PORT_KEYS[key]
            port[field] = convert(value)
    for device in devices.all():
        for port in device["ports"]:
            lanes = _int((port.get("width") or "").rstrip("X"))
            if lanes and port.get("_lane_gbps"):
                port["rate_gbps"] = lanes * port["_lane_gbps"]
            port.pop("_lane_gbps", None)
    return devices.result()


def _devinfo_speed(port, value):
    """``25.0 Gbps (32)``: the speed of one lane and its code; the link rate is lanes x lane."""
    match = _TRAILING_CODE.match(value.strip())
    code = int(match.group("code")) if match else None
    lane = re.match(r"^(\d+(?:\.\d+)?)\s*Gbps", value.strip(), re.IGNORECASE)
    port["speed"] = _SPEED_NAMES.get(code)
    port["_lane_gbps"] = float(lane.group(1)) if lane else _LANE_GBPS.get(code)


# ---------------------------------------------------------------------------------------------
# ibdev2netdev
# ---------------------------------------------------------------------------------------------

_IBDEV2NETDEV = re.compile(
    r"^(?P<device>\S+)\s+port\s+(?P<port>\d+)\s*==>\s*(?P<netdev>[^\s()]+)\s*(?:\((?P<carrier>[^()]*)\))?$"
)
_IBDEV2NETDEV_OLD = re.compile(r"^(?P<device>\S+)\s+port\s+(?P<port>\d+)\s*<===>\s*(?P<netdev>\S+)$")
_IBDEV2NETDEV_VERBOSE = re.compile(
    r"^(?:(?P<pci>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?"
    r"(?P<device>\S+)\s+\((?P<devid>[^()]*?)\s+-\s+(?P<part>[^()]*?)\s*\)\s*"
    r"(?P<desc>.*?)\s*\bfw\s+(?P<fw>\S+)\s+port\s+(?P<port>\d+)\s+\((?P<state>[^()]*)\)\s*"
    r"==>\s*(?P<netdev>[^\s()]+)\s*\((?P<carrier>[^()]*)\)$"
)
_CARRIER = {"UP": "Up", "DOWN": "Down"}


def parse_ibdev2netdev(data):
    """Parse ``ibdev2netdev``, ``ibdev2netdev -v`` and the old ``dev port N <===> netdev`` form.

    Lines for the same device and port (several netdevs) give one dict listing every netdev;
    its ``netdev_state`` is the carrier of the first one.
    """
    parser, tool = "parse_ibdev2netdev", "ibdev2netdev"
    devices = _Devices()
    seen = {}
    for number, line in _meaningful_lines(data, parser):
        match = (_IBDEV2NETDEV_VERBOSE.match(line) or _IBDEV2NETDEV.match(line)
                 or _IBDEV2NETDEV_OLD.match(line))
        if not match:
            raise _not_output(parser, tool, number, line)
        found = match.groupdict()
        key = (found["device"], int(found["port"]))
        if key not in seen:
            device = devices.current(found["device"])
            seen[key] = (device, devices.port(device, key[1]))
        device, port = seen[key]
        if "netdevs" not in port:
            carrier = found.get("carrier")
            raw = carrier.strip() if carrier is not None else None
            port.update(netdevs=[], netdev_state=_CARRIER.get((raw or "").upper()), netdev_state_raw=raw)
        if found["netdev"] not in port["netdevs"]:
            port["netdevs"].append(found["netdev"])
        if "devid" in found:
            _set_state(port, found["state"])
            device["fields"].update(
                pci_address=found["pci"],
                hca_type=_known(found["devid"]),
                part_id=_known(found["part"]),
                description=found["desc"].strip() or None,
                fw_ver=_known(found["fw"]),
            )
    return devices.result()


# ---------------------------------------------------------------------------------------------
# rdma link
# ---------------------------------------------------------------------------------------------

_RDMA_LINK = re.compile(r"^(?:link\s+|\d+/\d+:\s+)(?P<device>[^\s/]+)/(?P<port>\d+):?(?:\s+(?P<rest>.*))?$")
_RDMA_CAPS = re.compile(r"^caps\s*:\s*<[^>]*>?$")
# rdma link's own names for the IBTA physical states (iproute2 rdma/link.c).
_RDMA_PHYS_CODES = {"NOP": 0, "SLEEP": 1, "POLLING": 2, "DISABLED": 3, "ARMED": 4, "LINK_UP": 5,
                    "LINK_ERROR_RECOVER": 6, "PHY_TEST": 7, "OPA_OFFLINE": 9, "OPA_TEST": 11}


def parse_rdma_link(data):
    """Parse ``rdma link show`` (also the older ``1/1: mlx5_0/1: ...`` form, ``-d`` and ``-j``)."""
    parser, tool = "parse_rdma_link", "rdma link"
    text = _input_text(data, parser)
    if text.strip().startswith("["):
        return _rdma_link_json(text, parser, tool)
    devices = _Devices()
    port = None
    for number, line in _meaningful_lines(text, parser):
        if port is not None and _RDMA_CAPS.match(line):
            continue
        match = _RDMA_LINK.match(line)
        if not match:
            raise _not_output(parser, tool, number, line)
        port = devices.port(devices.current(match.group("device")), int(match.group("port")))
        words = (match.group("rest") or "").split()
        _rdma_link_fields(port, dict(zip(words[0::2], words[1::2])))
    return devices.result()


def _rdma_link_fields(port, values):
    port["netdevs"] = [values["netdev"]] if values.get("netdev") else []
    if "state" in values:
        _set_state(port, values["state"])
    if "physical_state" in values:
        printed = values["physical_state"]
        code = _RDMA_PHYS_CODES.get(printed.upper())
        name, code = phys_state(str(code) if code is not None else _known(printed))
        port["phys_state"], port["phys_state_code"] = name or printed, code
    for key, field in (("lid", "lid"), ("sm_lid", "sm_lid"), ("lmc", "lmc")):
        if key in values:
            port[field] = parse_lid(values[key])
    if "subnet_prefix" in values:
        port["subnet_prefix"] = values["subnet_prefix"]


def _rdma_link_json(text, parser, tool):
    """``rdma -j link show``: a JSON list with one object per port."""
    try:
        items = json.loads(text)
    except ValueError:
        number, line = next((n, l.strip()) for n, l in enumerate(text.splitlines(), start=1) if l.strip())
        raise _not_output(parser, tool, number, line) from None
    devices = _Devices()
    for index, item in enumerate(items if isinstance(items, list) else [items]):
        name = item.get("ifname") if isinstance(item, dict) else None
        if not isinstance(name, str):
            raise IbTextError("%s: item %d of the JSON is not an rdma link port (no ifname)" % (parser, index + 1))
        number = item.get("port")
        if "/" in name:
            name, _sep, number = name.partition("/")
        if _int(number) is None:
            raise IbTextError("%s: item %d of the JSON is not an rdma link port (no port)" % (parser, index + 1))
        port = devices.port(devices.current(name), _int(number))
        _rdma_link_fields(port, {key: str(value) for key, value in item.items() if value is not None})
    return devices.result()


PARSERS = {
    "ibstat": parse_ibstat,
    "ibstatus": parse_ibstatus,
    "ibv_devinfo": parse_ibv_devinfo,
    "ibdev2netdev": parse_ibdev2netdev,
    "rdma_link": parse_rdma_link,
}
