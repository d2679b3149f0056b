# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text that RDMA tools print: ``ibstat``, ``ibstatus``, ``ibv_devinfo``,
``ibdev2netdev`` (plain, ``-v`` and the old ``<===>`` style) and ``rdma link``.

Every parser takes the command's output as one string or as a list of lines (``stdout_lines``)
and returns ``{"ports": [...], "notes": [...]}``. ``ports`` has one dict per port, with the field
names of ``ansible_facts.rdma.ports`` (see ``FIELDS``). Every dict carries every field; a field the
output does not show is None. Device fields (``hca_type``, ``fw_ver``, ...) are repeated on each
port of their device. A device listing without ports (``ibstat -l``, ``ibv_devinfo -l``,
``ibstat -s``, a listing cut before its first port) gives one dict for the device with ``port``
None. A device or port printed twice is one entry; the later values win (``rdma link`` notes a port
listed again in another state, so the earlier state is not lost without a word).

The parsers read what people paste, not only what the tools print: indentation by tabs, by
spaces or none at all, ``column -t`` alignment, trailing blanks, CRLF line ends, ANSI colours,
terminal borders (box drawing characters and ``|``), Markdown fences and ``>`` quote marks, shell
prompt lines (``$ ibstat``, ``[root@node ~]# ibstat``), ``#`` comments and the command line itself
are skipped without a note. Output cut off in the middle gives what was seen so far. Unknown keys
inside a block do not stop the parse, so newer tool versions that add a field still parse: in
``ibstat`` and ``ibstatus`` output each is a note (their keys are few and fixed); ``ibv_devinfo -v``
prints dozens of device attributes, so lower-case keys there are taken as attributes not used.

``notes`` lists, in input order, every line that was not placed: ``{"line": N, "text": ...,
"reason": ...}`` with the 1-based line number of the input as given (list items count as lines),
the line without indentation or colours, and why it was not used. Three kinds of lines end up
there: diagnostics of the tools (``ibwarn:``, ``ibpanic:``, ``libibverbs: Warning: ...``),
redaction marks (``...``, ``[snip]``, ``<redacted>``) and lines that fit nowhere. A known field
whose value cannot be read (``Rate: fast``, a number written with other than ASCII digits) keeps
None and gets a note too. Numbers are read from ASCII digits only: ``int()`` also accepts
Arabic-Indic or fullwidth digits and ``_`` separators, and a number pasted in such a form is more
likely a mangled paste than the tool's output.

With ``strict=True`` the first line that fits nowhere raises ``IbTextError`` naming the parser
and quoting the line, e.g. ``parse_ibstat: line 3 is not ibstat output: 'foo bar'`` (the
behaviour before notes existed; diagnostics and redaction marks still only give notes). Without
it, only text in which nothing is recognisable as the tool's output raises, e.g.
``parse_ibstat: nothing in the text is ibstat output (line 1: 'hca_id: mlx5_0')``. Each tool's
block header is distinct, so one tool's output is never taken for another's.

How ``ibdev2netdev`` is read: the word in parentheses after the netdev is that netdev's
carrier as ibdev2netdev prints it (``Up`` when ``/sys/class/net/<netdev>/carrier`` is 1,
``Down`` when 0, ``NA`` when the file is missing); it becomes ``netdev_state`` and the text as
printed is kept in ``netdev_state_raw``. ibdev2netdev never prints two words there: a form like
``(Down/Up)`` (the A100 lines of the Crater write-up) is a person's summary of several nodes
("down on some nodes, up on others"), not one node's carrier, so ``netdev_state`` is None for
it and ``netdev_state_raw`` keeps ``Down/Up``. ``NA`` and an empty ``()`` also give None.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re

from ansible_collections.rdma.node.plugins.module_utils._ib_common import (
    MAX_LINE,
    gid_interface_id,
    is_shell_prompt,
    normalize_guid,
    parse_lid,
    parse_rate,
    phys_state,
    port_state,
)
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

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

_ANSI = lazy_compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Box drawing (U+2500-U+257F), block elements (U+2580-U+259F) and ASCII pipes frame pasted text.
_BORDER_CHARS = "|\u00a6" + "".join(chr(c) for c in range(0x2500, 0x25A0))
_STRIP_CHARS = " \t\f\v\u00a0\ufeff" + _BORDER_CHARS
_DECORATION = lazy_compile(r"^(?:[\s+=_~\-%s]*|(?:```|~~~).*)$" % re.escape(_BORDER_CHARS))
# A quote mark of a mail or Markdown paste ("> "), possibly nested.
_QUOTE_MARKS = lazy_compile(r"^(?:>[ \t]*)+")
# The command line itself, pasted without its prompt.
# Options and their arguments: a device (mlx5_0), a device and port (mlx5_0/1), a port number.
_COMMAND = lazy_compile(
    r"^(?:sudo\s+)?(?:ibstat|ibstatus|ibv_devinfo|ibv_devices|ibdev2netdev|rdma)"
    r"(?:\s+-[-\w=]*|\s+[A-Za-z][\w.:-]*(?:/[0-9]+)?|\s+[0-9]+)*\s*$"
)
# The tools' own error lines (ibstat's ibpanic, libibverbs' and ibv_devinfo's: "Failed to open device").
_NOISE = lazy_compile(
    r"^(?:ib(?:warn|panic|debug|error|info)\s*:|libibverbs:\s*warning|libibverbs:|"
    r"(?:ibstat|ibstatus|ibv_devinfo|ibdev2netdev|rdma)\s*:\s|failed to (?:open device|get ib devices list))",
    re.IGNORECASE,
)
# A value an operator blanked out before pasting ("Node GUID: ...").
_REDACTED_VALUE = lazy_compile(r"^(?:\.{3,}|\u2026+|<\s*(?:redacted|omitted)\s*>|\[\s*(?:redacted|omitted)\s*\]"
                               r"|/\*\s*(?:redacted|omitted|removed)\s*\*/|x{4,}|X{4,})$")
_REDACTED = lazy_compile(
    r"^(?:\.+|\u2026+|\[\s*(?:\.{3}|\u2026|snip(?:ped)?|redacted|cut|truncated|output truncated|omitted)\s*\]"
    r"|<\s*(?:\.{3}|snip(?:ped)?|redacted|cut|truncated|omitted)\s*>|\(\s*(?:snip(?:ped)?|redacted|truncated)\s*\)"
    r"|-+\s*(?:snip|cut)\s*-+|8<-*|-*>8-*|snip)$",
    re.IGNORECASE,
)
# Keys may hold spaces and parentheses (``completion timestamp_mask``, ``max_dm_size (bytes)``).
_KEY_VALUE = lazy_compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_ \[\]()./-]*?)\s*:\s*(?P<value>.*)$")
_DEVICE_NAME = lazy_compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
# A line of a device name listing (ibstat -l): a kernel RDMA device name has lower-case letters
# (mlx5_0, rocep33s0f0, rdmaP23800p0s2); an all-capitals word is ibv_devinfo -v's capability flag.
_LISTED_DEVICE_NAME = lazy_compile(r"^(?=[^a-z]*[a-z])[A-Za-z][A-Za-z0-9_.-]*$")
_TRAILING_CODE = lazy_compile(r"^(?P<text>.*?)\s*\((?P<code>-?[0-9]{1,9})\)$")
_UNKNOWN_WORDS = frozenset(("", "???", "NA", "N/A", "UNKNOWN", "NONE"))
_ASCII_INT = lazy_compile(r"^(?:0x[0-9a-f]{1,16}|[0-9]{1,20})$")


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


# A "#" after whitespace starts an operator's comment (a "#" at the start of a line is a prompt or a
# whole-line comment, see is_shell_prompt).
# "#" as in shell, "//" as in C: no tool prints either after a blank.
_TRAILING_COMMENT = lazy_compile(r"(?<=\s)(?:#|//)")


# Inline markup a blog or a rendered page leaves in a pasted listing (<font color="red">DOWN</font>).
_HTML_TAG = lazy_compile(r"</?(?:font|span|b|strong|em|i|u|code|mark)(?:\s[^<>]*)?>", re.IGNORECASE)


def _clean(line):
    """Return a line without colours, markup, borders, quote marks and indentation; '' for a line that says nothing."""
    if "\u00c2\u00a0" in line:  # a no-break space's UTF-8 bytes read as Latin-1 by a mail archive
        line = line.replace("\u00c2\u00a0", " ")
    line = _HTML_TAG.sub("", _ANSI.sub("", line)).strip(_STRIP_CHARS)
    line = _QUOTE_MARKS.sub("", line).strip(_STRIP_CHARS)
    if _DECORATION.match(line):
        return ""
    # A backtick of Markdown's inline code around a whole paste stays on its first and last line ("`$ ibstat",
    # "Link layer: InfiniBand`"); none of the tools prints one.
    return line.strip("`").strip(_STRIP_CHARS) if line[:1] == "`" or line[-1:] == "`" else line


def _shown(line):
    return line if len(line) <= 120 else line[:117] + "..."


# The mark of a line kept as a comment, with one space after it.
_COMMENT_MARK = lazy_compile(r"^[ \t]*# ?")


def _uncommented(text):
    """``text`` without the "#" marks when every non-blank line starts with one (after indentation), else None."""
    lines = re.split(r"\r\n|\r|\n", text)
    if not any(line.strip() for line in lines) or not all(line.lstrip(" \t").startswith("#") for line in lines if line.strip()):
        return None
    return "\n".join(_COMMENT_MARK.sub("", line, count=1) for line in lines)


def _reads_commented_listings(parse):
    """``parse``, which also reads a listing kept as comments (a script's or a recipe's: every line starts
    with "#"). Such lines look like root prompts, so the text is read without the marks, with a note, when
    it gives no port as it stands and, without them, ports with a number or a state (a bare name per line,
    as ibstat -l prints, could be any comment)."""
    @functools.wraps(parse)
    def parse_also_commented(data, strict=False):
        parsed = parse(data, strict)
        if parsed["ports"]:
            return parsed
        text = _uncommented(_input_text(data, parse.__name__))
        if text is None:
            return parsed
        try:
            again = parse(text, strict)
        except IbTextError:
            return parsed
        # A port of a listing has a number or a state; a bare name per line (ibstat -l) may be any comment.
        if not any(port.get("port") is not None or port.get("state") for port in again["ports"]):
            return parsed
        again["notes"].insert(0, {"line": None, "text": None, "reason": "every line is commented out with '#': read without the marks"})
        return again
    return parse_also_commented


class _Reader:
    """The lines of one parse, and what the parse could not place.

    ``lines()`` yields ``(number, text)`` for every line the parser has to place; prompts,
    comments, the command line and decoration are dropped, diagnostics and redaction marks become
    notes. The parser calls ``placed()`` for each line it used and ``unplaced()`` for each it could
    not; ``result()`` decides whether anything was recognisable at all.
    """

    def __init__(self, data, parser, tool, strict):
        self.parser = parser
        self.tool = tool
        self.strict = strict
        self.notes = []
        self.recognised = 0
        self.first_unplaced = None
        self.text = _input_text(data, parser)

    def lines(self, text=None):
        for number, raw in enumerate(re.split(r"\r\n|\r|\n", self.text if text is None else text), start=1):
            if len(raw) > MAX_LINE:
                self.unplaced(number, raw.strip(), "a line longer than %d characters, not read" % MAX_LINE)
                continue
            line = _clean(raw)
            if not line:
                continue
            if is_shell_prompt(line) or _COMMAND.match(line):
                if " ==> " in line or " <===> " in line:
                    # A page that lost its line breaks: ibdev2netdev's records after the command, on its line.
                    self.note(number, line, "ibdev2netdev's records on the command's own line (a paste that lost its line "
                                            "breaks), not read")
                continue
            if _NOISE.match(line):
                self.note(number, line, "a diagnostic message, not part of the listing")
                continue
            if _REDACTED.match(line):
                self.note(number, line, "a redaction mark: the listing around it is incomplete")
                continue
            comment = _TRAILING_COMMENT.search(line)
            if comment:
                # No tool prints " #" or " //"; an operator annotating a paste does ("ib0 (Up)  # rack 3",
                # "CA 'mlx5_2'  //VF").
                self.note(number, line, "a comment after the text, not read")
                line = line[:comment.start()].rstrip()
                if not line or _COMMAND.match(line):
                    continue
                if _REDACTED.match(line):
                    self.note(number, line, "a redaction mark: the listing around it is incomplete")
                    continue
            yield number, line

    def note(self, number, line, reason):
        self.notes.append({"line": number, "text": _shown(line), "reason": reason})

    def placed(self):
        self.recognised += 1

    def unplaced(self, number, line, reason="not %s output", strict_error=True):
        """A line that fits nowhere: an error when strict, else a note."""
        if self.strict and strict_error:
            raise IbTextError("%s: line %d is not %s output: %r" % (self.parser, number, self.tool, _shown(line)))
        if self.first_unplaced is None:
            self.first_unplaced = (number, line)
        self.note(number, line, reason % self.tool if "%s" in reason else reason)

    def bad_value(self, number, line, field):
        """A known key whose value could not be read: the field stays None."""
        self.note(number, line, "a value that cannot be read, left out (numbers are read from ASCII digits only)")

    def redacted_value(self, number, line, value):
        """A value blanked out before the paste: left out, said (True), or not one (False)."""
        if not _REDACTED_VALUE.match(value):
            return False
        self.note(number, line, "a redacted value, left out")
        self.placed()
        return True

    def result(self, ports):
        if not self.recognised and self.first_unplaced is not None:
            number, line = self.first_unplaced
            raise IbTextError("%s: nothing in the text is %s output (line %d: %r)" % (
                self.parser, self.tool, number, _shown(line)))
        return {"ports": ports, "notes": sorted(self.notes, key=lambda note: note["line"])}


def _key(text):
    """``Physical state`` / ``phys_state`` / ``GID[  0]`` -> ``physical state`` / ``phys state``."""
    return re.sub(r"[\s_]+", " ", text.strip().lower())


def _foreign_digits(text):
    """True when text holds digits other than ASCII ones (Arabic-Indic, fullwidth, superscripts)."""
    return any(char.isdigit() and not char.isascii() for char in text)


def _known(text):
    """Return text as printed, or None when the tool says it does not know."""
    if text is None:
        return None
    text = text.strip()
    if text.upper() in _UNKNOWN_WORDS or text.lower().startswith("invalid"):
        return None
    return text


# The link layer as sysfs names it. Old infiniband-diags (OFED 1.5) print "Link layer: IB".
_LINK_LAYER_NAMES = {"ib": "InfiniBand", "infiniband": "InfiniBand", "eth": "Ethernet", "ethernet": "Ethernet"}


def _link_layer(text):
    """The link layer as sysfs names it (``InfiniBand``, ``Ethernet``), other words as printed; None when unknown."""
    text = _known(text)
    return _LINK_LAYER_NAMES.get(text.lower(), text) if text is not None else None


def _int(text):
    """``4099`` or ``0x02c9`` (ASCII digits) as an int; None for anything else."""
    if text is None:
        return None
    text = str(text).strip().lower()
    if not _ASCII_INT.match(text):
        return None
    return int(text, 16) if text.startswith("0x") else int(text, 10)


def _strip_code(text):
    """``InfiniBand (0)`` -> ``InfiniBand``; ``4096 (5)`` -> ``4096``."""
    match = _TRAILING_CODE.match(text.strip())
    return match.group("text") if match else text.strip()


_GUID_DIGITS = lazy_compile(r"[^0-9a-f]")


def _convert(reader, number, line, field, convert, value):
    """Convert a value; a value that is there but cannot be read gives None and a note."""
    converted = convert(value)
    if converted is None and _known(value) is not None:
        reader.bad_value(number, line, field)
    elif convert is normalize_guid and converted is not None and len(_GUID_DIGITS.sub("", value.lower().replace("0x", "", 1))) < 16:
        # The tools print all 16 digits: fewer were cut or masked before the paste (0x000000, 0xbbbbbb).
        reader.note(number, line, "a GUID of fewer than 16 hex digits (cut or masked?), read with leading zeros")
    return converted


# ---------------------------------------------------------------------------------------------
# Collecting devices and ports, then flattening them into one dict per port
# ---------------------------------------------------------------------------------------------

class _Devices:
    """Devices and ports in order of first appearance, each device with its fields and ports.

    The result keeps the order of the output, also for the formats that print one line or block
    per port (``ibstatus``, ``ibdev2netdev``, ``rdma link``), where one device's ports may be
    apart; a device or port printed twice is merged into its first appearance.
    """

    def __init__(self):
        self._order = []
        self._by_name = {}
        self._appearance = []

    def named(self, name):
        """The device of that name; a new one the first time."""
        device = self._by_name.get(name)
        if device is None:
            device = {"name": name, "fields": {}, "ports": []}
            self._order.append(device)
            self._by_name[name] = device
            self._appearance.append((device, None))
        return device

    def port(self, device, number):
        """Port ``number`` of ``device``; a new one the first time."""
        for port in device["ports"]:
            if port["port"] == number:
                return port
        port = {"port": number}
        device["ports"].append(port)
        self._appearance.append((device, port))
        return port

    def all(self):
        return list(self._order)

    def result(self):
        result = []
        for device, port in self._appearance:
            if port is None and device["ports"]:
                continue
            entry = dict.fromkeys(FIELDS)
            entry.update(device["fields"])
            entry.update(port or {})
            entry["device"] = device["name"]
            result.append(entry)
        return result


class _Block:
    """The fields of one port (or device) as one line of its block sets them.

    A second, different value for a field already set in the same block is not taken: such a
    line comes from a block whose header was lost (cut, redacted, or written with other digits),
    and taking it would silently give one port another port's values. It becomes a note.
    """

    def __init__(self, reader, number, line, fields):
        self.reader, self.number, self.line, self.fields = reader, number, line, fields

    def __setitem__(self, field, value):
        known = self.fields.get(field)
        if known is not None and value != known:
            self.reader.note(self.number, self.line, "a second value for %s in the same block (its header may be "
                                                     "missing); the first value is kept" % field)
            return
        self.fields[field] = value


def _set_state(port, text):
    name, code = port_state(_known(text))
    port["state"], port["state_code"] = name, code
    _note_unknown_word(port, "state", name, code)


def _set_phys_state(port, text):
    name, code = phys_state(_known(text))
    port["phys_state"], port["phys_state_code"] = name, code
    _note_unknown_word(port, "physical state", name, code)


def _note_unknown_word(port, what, name, code):
    """A state word that is none of the kernel's (a hand-edited paste's "Activate") is kept as printed,
    without a code, and said: it never passes for a known state."""
    if name is not None and code is None and isinstance(port, _Block):
        port.reader.note(port.number, port.line, "a %s the kernel does not name so, kept as printed without its code" % what)


def _set_rate(reader, number, line, port, text):
    rate = parse_rate(text)
    if rate["rate_gbps"] is None and _known(text) is not None:
        reader.bad_value(number, line, "rate")
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


def _device_list(reader, lines):
    """A listing with one device name per line (``ibstat -l``, ``ibv_devinfo -l``)."""
    devices = _Devices()
    for number, line in lines:
        if not _LISTED_DEVICE_NAME.match(line):
            reader.unplaced(number, line, "not a device name")
            continue
        devices.named(line)
        reader.placed()
    return reader.result(devices.result())


# ---------------------------------------------------------------------------------------------
# ibstat
# ---------------------------------------------------------------------------------------------

# An author's arrow after a value, pointing at it: "Base lid: 1  <--------", "... 0x248a0703005d07f1----->>> see".
_ARROW_NOTE = lazy_compile(r"\s*(?:<-{2,}|-{3,}>*|—{2,}>*|={2,}>)\S*(?:\s.*)?$")
# A paste's author may write after the name ("CA 'mlx4_0'   <---- the first card"), with a quote too many.
_IBSTAT_CA = lazy_compile(r"^(?P<type>CA|Switch|Router|iWARP RNIC|\?\?\?)\s*:?\s*'(?P<name>[^'\s]+)''?(?:\s+(?P<after>\S.*))?$")
_IBSTAT_PORT = lazy_compile(r"^Port\s+(?P<port>[0-9]{1,3})\s*:$", re.IGNORECASE)
# A port header the strict form does not take (other digits, a cut line): it still ends the port before.
_IBSTAT_PORT_LOOSE = lazy_compile(r"^Port(?:\s+\S*)?\s*:?$", re.IGNORECASE)
_IBSTAT_GUID = lazy_compile(r"^0x[0-9a-fA-F]{1,16}$")
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
    "link layer": ("link_layer", _link_layer),
}


@_reads_commented_listings
def parse_ibstat(data, strict=False):
    """Parse ``ibstat``, ``ibstat -s``, ``ibstat -l``, ``ibstat -p`` and ``ibstat CA PORT``."""
    reader = _Reader(data, "parse_ibstat", "ibstat", strict)
    lines = list(reader.lines())
    if not any(_IBSTAT_CA.match(line) for dummy, line in lines):
        # ibstat -p or -l: decided by the first line that is one or the other; lines before it
        # are strays (strict mode stops at the first of them).
        for number, line in lines:
            if _IBSTAT_GUID.match(line):
                return _ibstat_port_guids(reader, lines)
            if _LISTED_DEVICE_NAME.match(line):
                return _device_list(reader, lines)
            if strict:
                break

    devices = _Devices()
    device = port = None
    orphan_port = None  # the line of the first port block before any CA line
    for number, line in lines:
        header = _IBSTAT_CA.match(line)
        if header:
            if header.group("after"):
                reader.note(number, line, "text after the CA's name, not ibstat's, left out")
            device = devices.named(header.group("name"))
            device["fields"]["node_type"] = header.group("type") if header.group("type") != "???" else None
            port = None
            reader.placed()
            continue
        port_header = _IBSTAT_PORT.match(line)
        pair = _KEY_VALUE.match(line)
        if not port_header and device is not None and _IBSTAT_PORT_LOOSE.match(line):
            reader.unplaced(number, line, "a port header that cannot be read; the port's fields are left out")
            port = None
            continue
        if not (port_header or pair):
            reader.unplaced(number, line)
            continue
        if device is None:
            orphan_port = orphan_port or (port_header and number)
            reader.unplaced(number, line, "a field before the first CA header")
            continue
        if port_header:
            port = devices.port(device, int(port_header.group("port")))
            reader.placed()
            continue
        key, value = _key(pair.group("key")), pair.group("value").strip()
        arrow = _ARROW_NOTE.search(value)
        if arrow:
            reader.note(number, line, "an arrow and text after the value, not ibstat's, left out")
            value = value[:arrow.start()]
        if _foreign_digits(value):
            reader.bad_value(number, line, key)
            continue
        if reader.redacted_value(number, line, value):
            continue
        fields = _Block(reader, number, line, device["fields"])
        if key in _IBSTAT_TYPE_KEYS:
            # "MT25208 (MT23108 compat mode)": blanks a paste widened (column -t) are one blank.
            fields["hca_type"] = _known(" ".join(value.split()))
        elif key in _IBSTAT_DEVICE_KEYS:
            field, convert = _IBSTAT_DEVICE_KEYS[key]
            fields[field] = _convert(reader, number, line, field, convert, value)
        elif key in _IBSTAT_PORT_KEYS or key in ("state", "physical state", "rate"):
            if port is None:
                reader.unplaced(number, line, "a port field outside any port block")
                continue
            port_fields = _Block(reader, number, line, port)
            if key == "state":
                _set_state(port_fields, value)
            elif key == "physical state":
                _set_phys_state(port_fields, value)
            elif key == "rate":
                _set_rate(reader, number, line, port_fields, value)
            else:
                field, convert = _IBSTAT_PORT_KEYS[key]
                port_fields[field] = _convert(reader, number, line, field, convert, value)
        else:
            # A field a newer ibstat added is noted (and tolerated by strict mode, as it always was);
            # "word: text: text" is no ibstat line at all (ibstat values never hold ": ").
            if ": " in value:
                reader.unplaced(number, line)
            else:
                reader.unplaced(number, line, "a key ibstat does not print; not used", strict_error=False)
            continue
        reader.placed()
    if orphan_port and not reader.recognised:
        # ibstat | grep Port: the ports are there, the CA lines that name their device are not.
        raise IbTextError("parse_ibstat: port blocks without a CA 'name' line to say whose ports they are (first at line %d); "
                          "the output looks filtered: keep the CA lines" % orphan_port)
    return reader.result(devices.result())


def _ibstat_port_guids(reader, lines):
    """``ibstat -p``: one port GUID per line; the device is not shown."""
    result = []
    for number, line in lines:
        if not _IBSTAT_GUID.match(line):
            reader.unplaced(number, line, "not a port GUID")
            continue
        entry = dict.fromkeys(FIELDS)
        entry["port_guid"] = normalize_guid(line)
        result.append(entry)
        reader.placed()
    return reader.result(result)


# ---------------------------------------------------------------------------------------------
# ibstatus
# ---------------------------------------------------------------------------------------------

_IBSTATUS_HEADER = lazy_compile(
    r"^Infiniband\s+device\s+'(?P<device>[^']+)'\s+port\s+(?P<port>[0-9]{1,3})\s+status\s*:$", re.IGNORECASE
)
_IBSTATUS_HEADER_LOOSE = lazy_compile(r"^Infiniband\s+device\b.*\bstatus\s*:?$", re.IGNORECASE)
# What ibstatus prints where the device (or, for '*', any device) has no sysfs directory.
_IBSTATUS_NONE = lazy_compile(r"^Fatal error:\s+device '(?P<device>[^']*)': sys files not found\b", re.IGNORECASE)
_IBSTATUS_KEYS = {
    "base lid": ("lid", parse_lid),
    "sm lid": ("sm_lid", parse_lid),
    "link layer": ("link_layer", _link_layer),
}


@_reads_commented_listings
def parse_ibstatus(data, strict=False):
    """Parse ``ibstatus`` (the sysfs values as the kernel prints them, LIDs in hex)."""
    reader = _Reader(data, "parse_ibstatus", "ibstatus", strict)
    devices = _Devices()
    port = None
    for number, line in reader.lines():
        header = _IBSTATUS_HEADER.match(line)
        if header:
            port = devices.port(devices.named(header.group("device")), int(header.group("port")))
            reader.placed()
            continue
        if _IBSTATUS_HEADER_LOOSE.match(line):
            reader.unplaced(number, line, "a port header that cannot be read; the port's fields are left out")
            port = None
            continue
        missing = _IBSTATUS_NONE.match(" ".join(line.split()))  # a paste through `column -t` spaces the words out
        if missing:
            name = missing.group("device")
            reader.note(number, line, "ibstatus found no RDMA device" if name == "*" else
                        "ibstatus found no RDMA device named '%s'" % _shown(name))
            reader.placed()
            port = None
            continue
        pair = _KEY_VALUE.match(line)
        if not pair:
            reader.unplaced(number, line)
            continue
        if port is None:
            reader.unplaced(number, line, "a field before the first port header")
            continue
        key, value = _key(pair.group("key")), pair.group("value").strip()
        if _foreign_digits(value):
            reader.bad_value(number, line, key)
            continue
        fields = _Block(reader, number, line, port)
        if key == "default gid":
            _set_gid(fields, value)
        elif key == "state":
            _set_state(fields, value)
        elif key == "phys state":
            _set_phys_state(fields, value)
        elif key == "rate":
            _set_rate(reader, number, line, fields, value)
        elif key in _IBSTATUS_KEYS:
            field, convert = _IBSTATUS_KEYS[key]
            fields[field] = _convert(reader, number, line, field, convert, value)
        else:
            reader.unplaced(number, line, "a key ibstatus does not print; not used", strict_error=False)
            continue
        reader.placed()
    return reader.result(devices.result())


# ---------------------------------------------------------------------------------------------
# ibv_devinfo
# ---------------------------------------------------------------------------------------------

_DEVINFO_COUNT = lazy_compile(r"^(?P<count>[0-9]+)\s+HCAs?\s+found\s*:$", re.IGNORECASE)
_DEVINFO_NONE = lazy_compile(r"^No IB devices found\.?$", re.IGNORECASE)
_DEVINFO_ATTRIBUTE = "a device attribute of ibv_devinfo -v that is not read"
# Keys only ibv_devinfo -v prints.
_DEVINFO_VERBOSE_KEYS = frozenset(("max mr size", "page size cap", "max qp", "device cap flags", "max cqe"))
# The keys ibv_devinfo prints, as _key() gives them: lower case words (``max_qp``, ``completion
# timestamp_mask``, ``cq moderation caps``), ``gid[  0]`` and ``unknown flags``; and their values
# never hold ": " (which a stray "word: text: text" line does).
_DEVINFO_KEY_STYLE = lazy_compile(r"^(?:[a-z][a-z0-9]*(?: [a-z0-9()]+)*|gid\[\s*[0-9]+\s*\])$")
_DEVINFO_GID0 = lazy_compile(r"^gid\[\s*0\s*\]$")
_DEVINFO_GID = lazy_compile(r"^gid\[\s*[0-9]+\s*\]$")
# Lines without a colon that ``ibv_devinfo -v`` prints inside a device's attributes: capability
# flags one per line under their key (``device_cap_flags: 0x...`` then ``BAD_PKEY_CNTR``...),
# ``NO SUPPORT``, ``tag matching not supported``, ``C-VLAN stripping offload``, ``Delay drop``.
_DEVINFO_FLAG = lazy_compile(
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
    "link layer": ("link_layer", _link_layer),
    "port cap flags": ("cap_mask", _known),
    "max mtu": ("max_mtu", lambda v: _int(_strip_code(v))),
    "active mtu": ("active_mtu", lambda v: _int(_strip_code(v))),
}


# The fields ibv_devinfo prints only under a port: line.
_DEVINFO_PORT_ONLY_KEYS = frozenset(_DEVINFO_PORT_KEYS) | {"state", "phys state", "active width", "active speed", "max msg sz"}


@_reads_commented_listings
def parse_ibv_devinfo(data, strict=False):
    """Parse ``ibv_devinfo``, ``ibv_devinfo -v`` and ``ibv_devinfo -l``."""
    reader = _Reader(data, "parse_ibv_devinfo", "ibv_devinfo", strict)
    lines = list(reader.lines())
    blocks = any(_KEY_VALUE.match(line) and _key(_KEY_VALUE.match(line).group("key")) == "hca id" for dummy, line in lines)
    for index, (number, line) in enumerate(lines):
        if _DEVINFO_COUNT.match(line) and not blocks:
            # ibv_devinfo -l; lines before its first line are strays
            for stray_number, stray in lines[:index]:
                reader.unplaced(stray_number, stray)
            reader.placed()
            return _device_list(reader, lines[index + 1:])
    return _devinfo_blocks(reader, lines)


def _devinfo_blocks(reader, lines):
    devices = _Devices()
    device = port = None
    headings = {}  # hca_id -> its line (number, text)
    port_lines = {}  # (hca_id, port) -> its first port: line (number, text)
    fields_without_port = set()  # the hca_ids with a port's field before any port: line (noted as such)
    # ibv_devinfo -v (MLNX_OFED's most of all) prints device attributes in forms of their own
    # ("log atomic arg sizes (mask)   0x8", "Multi-Packet RQ supported", "UMR fixed size:"): in the
    # attributes of a device, before its ports, they are noted as such, and strict mode takes them.
    verbose = any(_key(pair.group("key")) in _DEVINFO_VERBOSE_KEYS
                  for pair in (_KEY_VALUE.match(line) for dummy, line in lines) if pair)
    for number, line in lines:
        pair = _KEY_VALUE.match(line)
        in_attributes = verbose and device is not None and port is None
        if pair is None:
            words = " ".join(line.split())  # a paste through `column -t` spaces the words out
            # ibv_devinfo -v lists capability flags one per line under the device attributes.
            if device is not None and port is None and _DEVINFO_FLAG.match(words):
                reader.placed()
            elif in_attributes:
                reader.unplaced(number, line, _DEVINFO_ATTRIBUTE, strict_error=False)
            elif _DEVINFO_NONE.match(words):
                reader.note(number, line, "ibv_devinfo found no RDMA device")
                reader.placed()
            else:
                reader.unplaced(number, line)
            continue
        key, value = _key(pair.group("key")), pair.group("value").strip()
        if key == "device ports" and not value and device is not None:
            reader.placed()  # the heading before a device's ports
            continue
        printed = pair.group("key").strip()
        devinfo_style = (printed == printed.lower() or key == "unknown flags" or _DEVINFO_GID.match(key)) \
            and _DEVINFO_KEY_STYLE.match(key) and ": " not in value
        if not devinfo_style:
            reader.unplaced(number, line, *((_DEVINFO_ATTRIBUTE, False) if in_attributes else ()))
            continue
        if _foreign_digits(value):
            reader.bad_value(number, line, key)
            continue
        if key == "hca id":
            if not _DEVICE_NAME.match(value):
                reader.unplaced(number, line, "an hca_id that is no device name")
                device = port = None
                continue
            device, port = devices.named(value), None
            headings.setdefault(value, (number, line))
            reader.placed()
            continue
        if device is None:
            reader.unplaced(number, line, "a field before the first hca_id")
            continue
        reader.placed()
        port_fields = _Block(reader, number, line, port) if port is not None else None
        if key == "port":
            if _int(value) is None:
                reader.bad_value(number, line, "port")
                port = None
                continue
            port = devices.port(device, _int(value))
            port_lines.setdefault((device["name"], port["port"]), (number, line))
        elif key == "transport":
            device["fields"]["transport"] = _known(_strip_code(value))
        elif key in _DEVINFO_DEVICE_KEYS and port is None:
            field, convert = _DEVINFO_DEVICE_KEYS[key]
            _Block(reader, number, line, device["fields"])[field] = _convert(reader, number, line, field, convert, value)
        elif port is None:
            if key in _DEVINFO_PORT_ONLY_KEYS or _DEVINFO_GID.match(key):
                reader.note(number, line, "a port's field before any port: line (the paste left the port line out): not read")
                fields_without_port.add(device["name"])
            continue  # otherwise one of the many device attributes of -v; not a port field
        elif key == "state":
            _set_state(port_fields, value)
        elif key == "phys state":
            _set_phys_state(port_fields, value)
        elif key == "active width":
            width = _strip_code(value).upper()
            port_fields["width"] = width if re.match(r"^[0-9]{1,2}X$", width) else None
        elif key == "active speed":
            _devinfo_speed(port_fields, value)
        elif _DEVINFO_GID0.match(key):
            _set_gid(port_fields, value.split(",")[0])
        elif key in _DEVINFO_PORT_KEYS:
            field, convert = _DEVINFO_PORT_KEYS[key]
            port_fields[field] = _convert(reader, number, line, field, convert, value)
    for device in devices.all():
        for port in device["ports"]:
            lanes = _int((port.get("width") or "").rstrip("X"))
            if lanes and port.get("_lane_gbps"):
                port["rate_gbps"] = lanes * port["_lane_gbps"]
            port.pop("_lane_gbps", None)
        announced = device["fields"].get("num_ports")
        if announced and len(device["ports"]) < announced and device["name"] in headings:
            reader.note(*headings[device["name"]], "%d of its %d ports (phys_port_cnt) are in the text (ibv_devinfo -i, or a "
                                                   "paste cut short): the others are not read" % (len(device["ports"]), announced))
        elif announced is None and not device["ports"] and device["name"] in headings and device["name"] not in fields_without_port:
            # ibv_devinfo prints phys_port_cnt in every device block, before the ports: a block without it was cut
            # (`| head`, a paste that stops early), so whether the device has ports, and their state, is not in the text. A
            # port's fields without their port: line are another cut, noted line by line already.
            reader.note(*headings[device["name"]], "the block of %s ends before its phys_port_cnt and its ports (the text is "
                                                   "cut there): its ports are not known" % device["name"])
        for port in device["ports"]:
            if set(port) <= {"port"} and (device["name"], port["port"]) in port_lines:
                # A port: line with no field after it (`ibv_devinfo | head` cut right there): no state was read, not a port
                # without one.
                reader.note(*port_lines[(device["name"], port["port"])], "port %d of %s has no field after its port: line "
                            "(the text is cut there): its state and link layer are not known" % (port["port"], device["name"]))
    return reader.result(devices.result())


def _devinfo_speed(port, value):
    """``25.0 Gbps (32)``: the speed of one lane and its code; the link rate is lanes x lane."""
    match = _TRAILING_CODE.match(value.strip())
    code = int(match.group("code")) if match else None
    lane = re.match(r"^([0-9]{1,4}(?:\.[0-9]{1,4})?)\s*Gbps", value.strip(), re.IGNORECASE)
    port["speed"] = _SPEED_NAMES.get(code)
    port["_lane_gbps"] = float(lane.group(1)) if lane else _LANE_GBPS.get(code)


# ---------------------------------------------------------------------------------------------
# ibdev2netdev
# ---------------------------------------------------------------------------------------------

# After the carrier, an author's own words in brackets ("ib4 (Up) (o2ib)": the LNet network): left out with a note.
# Another record after it ("... ==> ib1 (Up)") is no such note: that line lost its breaks and is not read.
_AUTHORS_TAIL = r"(?P<tail>\s+\((?:(?!==>)[^()])*\))?"
_IBDEV2NETDEV = lazy_compile(
    r"^(?P<device>\S+)\s+port\s+(?P<port>[0-9]{1,3})\s*==>\s*(?P<netdev>[^\s()]+)\s*(?:\((?P<carrier>[^()]*)\)" + _AUTHORS_TAIL + r")?$"
)
_IBDEV2NETDEV_OLD = lazy_compile(r"^(?P<device>\S+)\s+port\s+(?P<port>[0-9]{1,3})\s*<===>\s*(?P<netdev>\S+)$")
_IBDEV2NETDEV_VERBOSE = lazy_compile(
    r"^(?:(?P<pci>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?"
    r"(?P<device>\S+)\s+\((?P<devid>[^()]*?)\s+-\s+(?P<part>[^()]*?)\s*\)\s*"
    r"(?P<desc>.*?)\s*\bfw\s+(?P<fw>\S+)\s+port\s+(?P<port>[0-9]{1,3})\s+\((?P<state>[^()]*)\)\s*"
    r"==>\s*(?P<netdev>[^\s()]+)\s*\((?P<carrier>[^()]*)\)" + _AUTHORS_TAIL + r"$"
)
_CARRIER = {"UP": "Up", "DOWN": "Down"}


@_reads_commented_listings
def parse_ibdev2netdev(data, strict=False):
    """Parse ``ibdev2netdev``, ``ibdev2netdev -v`` and the old ``dev port N <===> netdev`` form.

    Lines for the same device and port (several netdevs) give one dict listing every netdev;
    its ``netdev_state`` is the carrier of the first one.
    """
    reader = _Reader(data, "parse_ibdev2netdev", "ibdev2netdev", strict)
    devices = _Devices()
    for number, line in reader.lines():
        match = (_IBDEV2NETDEV_VERBOSE.match(line) or _IBDEV2NETDEV.match(line)
                 or _IBDEV2NETDEV_OLD.match(line))
        if not match:
            reader.unplaced(number, line)
            continue
        reader.placed()
        found = match.groupdict()
        if found.get("tail"):
            reader.note(number, line, "words in brackets after the carrier, not ibdev2netdev's, left out")
        device = devices.named(found["device"])
        port = devices.port(device, int(found["port"]))
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
                description=" ".join(found["desc"].split()) or None,  # column -t widens the gaps
                fw_ver=_known(found["fw"]),
            )
    return reader.result(devices.result())


# ---------------------------------------------------------------------------------------------
# rdma link
# ---------------------------------------------------------------------------------------------

_RDMA_LINK = lazy_compile(
    r"^(?:link\s+|[0-9]{1,6}/[0-9]{1,3}:\s+)(?P<device>[^\s/]+)/(?P<port>[0-9]{1,3}):?(?:\s+(?P<rest>.*))?$"
)
_RDMA_CAPS = lazy_compile(r"^caps\s*:\s*<[^>]*>?$")
# rdma link's own names for the IBTA physical states (iproute2 rdma/link.c).
_RDMA_PHYS_CODES = {"NOP": 0, "SLEEP": 1, "POLLING": 2, "DISABLED": 3, "ARMED": 4, "LINK_UP": 5,
                    "LINK_ERROR_RECOVER": 6, "PHY_TEST": 7, "OPA_OFFLINE": 9, "OPA_TEST": 11}


@_reads_commented_listings
def parse_rdma_link(data, strict=False):
    """Parse ``rdma link show`` (also the older ``1/1: mlx5_0/1: ...`` form, ``-d`` and ``-j``)."""
    reader = _Reader(data, "parse_rdma_link", "rdma link", strict)
    items = _json_list(reader.text)
    if items is not None:
        return _rdma_link_json(reader, items)
    devices = _Devices()
    port = None
    read_at = {}  # (device, port) -> the line its state was last read from
    for number, line in reader.lines():
        if port is not None and _RDMA_CAPS.match(line):
            reader.placed()
            continue
        match = _RDMA_LINK.match(line)
        if not match:
            reader.unplaced(number, line)
            continue
        reader.placed()
        port = devices.port(devices.named(match.group("device")), int(match.group("port")))
        rest = match.group("rest") or ""
        arrow = _ARROW_NOTE.search(rest)
        if arrow:  # "... DISABLED  <---should not display": the paste's author, not rdma
            reader.note(number, line, "an arrow and text after the values, not rdma's, left out")
            rest = rest[:arrow.start()]
        words = rest.split()
        earlier = (port.get("state"), port.get("phys_state"))
        _rdma_link_fields(port, dict(zip(words[0::2], words[1::2])))
        _note_relisted_state(reader, number, line, "%s/%s" % (match.group("device"), match.group("port")), earlier,
                             (port.get("state"), port.get("phys_state")), read_at)
    return reader.result(devices.result())


def _note_relisted_state(reader, number, line, name, earlier, now, read_at):
    """A port listed again (``rdma link`` run before and after ``ip link set ... up``) in another state: the later
    listing is read, as the docstring of the module says, and the note keeps the earlier state from being lost."""
    where = read_at.get(name)
    read_at[name] = number
    if where is not None and None not in earlier and earlier != now:
        reader.note(number, line, "%s is listed again and its state differs from line %d's (%s); the later one is read"
                    % (name, where, "/".join(earlier)))


def _json_list(text):
    """The items of ``rdma -j link`` output, or None when the text is not JSON."""
    if not text.strip().startswith(("[", "{")):
        return None
    try:
        items = json.loads(text, parse_constant=lambda name: None)
    except ValueError:
        return None
    except RecursionError:  # rdma -j link prints a list of flat objects: three levels at most
        raise IbTextError("parse_rdma_link: the JSON is nested too deeply to be rdma -j link output") from None
    if isinstance(items, dict):
        return [items]
    return items if isinstance(items, list) else None


def _rdma_link_fields(port, values):
    # A port listed again (rdma link in another network namespace, where its netdev is not) keeps the netdev it showed.
    if values.get("netdev"):
        port["netdevs"] = [values["netdev"]]
    else:
        port.setdefault("netdevs", [])
    if "state" in values:
        _set_state(port, values["state"])
    if "physical_state" in values:
        printed = values["physical_state"]
        code = _RDMA_PHYS_CODES.get(printed.upper())
        name, code = phys_state(str(code) if code is not None else _known(printed))
        # A word the kernel may add later is kept as printed; its "UNKNOWN" is no state at all.
        port["phys_state"], port["phys_state_code"] = name or _known(printed), code
    for key, field in (("lid", "lid"), ("sm_lid", "sm_lid"), ("lmc", "lmc")):
        if key in values:
            port[field] = parse_lid(values[key])
    if "subnet_prefix" in values:
        port["subnet_prefix"] = values["subnet_prefix"]


def _rdma_link_json(reader, items):
    """``rdma -j link show``: a JSON list with one object per port."""
    devices = _Devices()
    for index, item in enumerate(items):
        name = item.get("ifname") if isinstance(item, dict) else None
        number = item.get("port") if isinstance(item, dict) else None
        if isinstance(name, str) and "/" in name:
            name, _sep, number = name.partition("/")
        if not isinstance(name, str) or not name or isinstance(number, bool) or _int(number) is None:
            if reader.strict:
                raise IbTextError("%s: item %d of the JSON is not an rdma link port (no ifname and port)" % (
                    reader.parser, index + 1))
            reader.first_unplaced = reader.first_unplaced or (index + 1, json.dumps(item)[:120])
            reader.note(None, json.dumps(item), "item %d of the JSON is not an rdma link port (no ifname and port)" % (
                index + 1))
            continue
        reader.placed()
        port = devices.port(devices.named(name), _int(number))
        _rdma_link_fields(port, {key: str(value) for key, value in item.items() if value is not None})
    return reader.result(devices.result())


PARSERS = {
    "ibstat": parse_ibstat,
    "ibstatus": parse_ibstatus,
    "ibv_devinfo": parse_ibv_devinfo,
    "ibdev2netdev": parse_ibdev2netdev,
    "rdma_link": parse_rdma_link,
}
