# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe Advanced Error Reporting counters of each HCA function and of the bridges above it.

Since Linux 4.19 every AER-capable function has three files in sysfs
(Documentation/ABI/testing/sysfs-bus-pci-devices-aer-stats): ``aer_dev_correctable``,
``aer_dev_nonfatal`` and ``aer_dev_fatal``, one ``<error type> <count>`` line per error type and a
``TOTAL_ERR_COR`` / ``TOTAL_ERR_NONFATAL`` / ``TOTAL_ERR_FATAL`` line. The kernel counts errors
"as seen by the device": a bad HCA link often shows at the root port or switch port above it while
the HCA itself reads 0, so the bridges on the path are read too.

The first kernels (4.19 to 5.x) printed long names (``Receiver Error 2``, ``RELAY_NUM Rollover 0``),
later ones short ones (``RxErr 2``, ``Rollover 0``); both are read and given the short name, so that
two kernels of one fleet compare. ``TOTAL_ERR_*`` can be lower than the sum (one message may carry
several errors), so the total is taken as printed, never summed.
"""

from __future__ import annotations

import os
import time

from ansible_collections.rdma.node.plugins.module_utils._files import read_text_and_reason
from ansible_collections.rdma.node.plugins.module_utils._ib_common import is_shell_prompt
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._pci_tree import hca_nodes
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, reader

KINDS = ("correctable", "nonfatal", "fatal")
FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}
TOTALS = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}
_MAX_BYTES = 16 * 1024  # a few hundred bytes in practice

# The long names of the first kernels with AER statistics, and the short names that replaced them
# (aer_correctable_error_string / aer_uncorrectable_error_string in drivers/pci/pcie/aer.c).
LONG_NAMES = {
    "Receiver Error": "RxErr",
    "Bad TLP": "BadTLP",
    "Bad DLLP": "BadDLLP",
    "RELAY_NUM Rollover": "Rollover",
    "Replay Timer Timeout": "Timeout",
    "Advisory Non-Fatal": "NonFatalErr",
    "Corrected Internal Error": "CorrIntErr",
    "Header Log Overflow": "HeaderOF",
    "Data Link Protocol": "DLP",
    "Surprise Down Error": "SDES",
    "Poisoned TLP": "TLP",
    "Flow Control Protocol": "FCP",
    "Completion Timeout": "CmpltTO",
    "Completer Abort": "CmpltAbrt",
    "Unexpected Completion": "UnxCmplt",
    "Receiver Overflow": "RxOF",
    "Malformed TLP": "MalfTLP",
    "Unsupported Request": "UnsupReq",
    "ACS Violation": "ACSViol",
    "Uncorrectable Internal Error": "UncorrIntErr",
    "MC Blocked TLP": "BlockedTLP",
    "AtomicOp Egress Blocked": "AtomicOpBlocked",
    "TLP Prefix Blocked Error": "TLPBlockedErr",
}

# An error bit the kernel has no name for is printed by its array and number, when it counted: "dev_cor_errs_bit[11] 3".
_COUNTER = lazy_compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_ /.-]*?(?:\[[0-9]{1,2}\])?)\s+(?P<count>[0-9]{1,20})$")
# The file's lines joined by blanks (``echo $(cat aer_dev_correctable)``): "RxErr 0 BadTLP 0 ... TOTAL_ERR_COR 0".
_FLATTENED = lazy_compile(r"^(?:[A-Za-z][\w\[\]]* [0-9]{1,20} )+[A-Za-z][\w\[\]]* [0-9]{1,20}$")
_FLATTENED_PAIR = lazy_compile(r"([A-Za-z][\w\[\]]*) ([0-9]{1,20})")
# The lines glued with nothing between them (a recording that lost the line breaks): "RxErr 0BadTLP 0...TOTAL_ERR_COR 0".
_GLUED = lazy_compile(r"^(?:[A-Za-z][\w\[\]]* [0-9]{1,20})+$")
_COUNT_THEN_NAME = lazy_compile(r"[0-9][A-Za-z]")
# A shell prompt before the command that printed the file: "host /sys/.../0000:00:1c.0 # cat aer_dev_fatal".
_PROMPT = lazy_compile(r"(?:^|\s)[#$>]\s*(?:sudo\s+)?(?:cat|grep|head|tail|less|more)\s")
# The command pasted without its prompt: "cat /sys/bus/pci/devices/0000:98:00.0/aer_dev_fatal".
_BARE_COMMAND = lazy_compile(r"^(?:sudo\s+)?(?:cat|grep|head|tail|less|more)\s+\S*aer_")
# `grep . .../aer_dev_correctable` puts the file's path before each line.
_GREP_PATH = lazy_compile(r"^(?P<path>\S*aer_\w+):")
# An operator's note after a count: "RxErr 0    # receiver errors".
_TRAILING_COMMENT = lazy_compile(r"\s+#.*$")
_ABSENT = ("no AER statistics in sysfs: the kernel is older than 4.19, AER is off (pci=noaer, or the "
           "firmware keeps it), or these functions are not AER-capable")


class AerTextError(ValueError):
    """Text that is not an ``aer_dev_*`` file; the message names what was expected."""


def parse_aer_counters(text, kind=None):
    """``{error type: count, ..., "total": n}`` of one ``aer_dev_*`` file's text.

    ``kind`` (``correctable``/``nonfatal``/``fatal``) names the file, to check the total line's
    label; a mismatch is kept as the total with a note. Shell prompts (``# cat aer_dev_fatal``,
    ``user@host:~$ grep . .../aer_dev_fatal``), the command without one, the file's path that
    ``grep .`` prints before each line, ``#`` comments (also after a count), indentation and CRLF are skipped; anything else that is not ``<name> <count>``
    raises :class:`AerTextError` naming its line. Returns ``{"counts", "total", "notes"}``;
    ``total`` is None when the file has no ``TOTAL_ERR_*`` line.
    """
    if not isinstance(text, str):
        raise AerTextError("expected the text of an aer_dev_* file, got %s" % type(text).__name__)
    counts, total, notes, files = {}, None, [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or _PROMPT.search(line) or _BARE_COMMAND.match(line) or is_shell_prompt(line):
            continue
        path = _GREP_PATH.match(line)
        if path:
            if path.group("path") not in files:
                files.append(path.group("path"))
            if len(files) > 1:
                raise AerTextError("line %d is from %s, line before from %s: the text holds several aer_* files (grep over a "
                                   "directory); expected one file's text" % (number, files[-1], files[0]))
            line = line[path.end():]
        line = _TRAILING_COMMENT.sub("", line)
        words = " ".join(line.split())
        if _FLATTENED.match(words):
            pairs = [(name, int(count)) for name, count in _FLATTENED_PAIR.findall(words)]
        elif _COUNT_THEN_NAME.search(words) and _GLUED.match(words):
            pairs = [(name, int(count)) for name, count in _FLATTENED_PAIR.findall(words)]
            notes.append("line %d holds the file's lines glued together (their line breaks lost): read pair by pair" % number)
        else:
            match = _COUNTER.match(line)
            if not match:
                raise AerTextError("line %d is not '<error type> <count>' as in an aer_dev_* file: %r" % (number, line[:80]))
            pairs = [(" ".join(match.group("name").split()), int(match.group("count")))]
        for name, count in pairs:
            if name.startswith("TOTAL_ERR_"):
                if kind in TOTALS and name != TOTALS[kind]:
                    notes.append("the total line says %s in the %s file; read as its total" % (name, FILES[kind]))
                total = count
                continue
            counts[LONG_NAMES.get(name, name)] = count
    if not counts and total is None:
        raise AerTextError("no '<error type> <count>' line: this is not the text of an aer_dev_* file")
    return {"counts": counts, "total": total, "notes": notes}


def read_function_aer(directory):
    """The three AER files of one PCI function directory.

    Returns ``{kind: {type: count, ..., "total": n} or None}`` plus ``unreadable`` (kind -> reason)
    and ``notes``; a kind whose file does not exist is None and not unreadable. Only the error types
    that counted are kept (a type not named counted none): a healthy function is three totals of 0,
    not some forty zeros, which every host's facts would carry through the run and the fact cache.
    """
    entry = {"unreadable": {}, "notes": []}
    for kind in KINDS:
        path = os.path.join(directory, FILES[kind])
        text, reason = read_text_and_reason(path, "an AER statistics file", _MAX_BYTES)
        entry[kind] = None
        if reason:
            entry["unreadable"][kind] = reason
            continue
        if text is None:
            continue
        try:
            parsed = parse_aer_counters(text, kind)
        except AerTextError as exc:
            entry["unreadable"][kind] = "%s: %s" % (path, exc)
            continue
        entry[kind] = {name: count for name, count in parsed["counts"].items() if count}
        entry[kind]["total"] = parsed["total"]
        entry["notes"].extend("%s: %s" % (path, note) for note in parsed["notes"])
    return entry


def read_aer(sysfs_root, facts_so_far, now=None):
    """``rdma.aer``: the AER counters of every HCA function and of the bridges on its path to the root port.

    ``{"available", "reason", "time", "functions": {address: {"role", "device", "devices_below",
    "root_port", "correctable", "nonfatal", "fatal", "unreadable", "notes"}}}``; ``time`` (``now``, by
    default the clock at the read) is what a later sample's rise is measured against. ``role`` is ``hca`` or ``bridge``;
    ``device`` names the RDMA device of an HCA function, ``devices_below`` the RDMA devices under a
    bridge. Nothing raises: a tree without AER files gives ``available: false`` and the reason.
    """
    nodes = hca_nodes(sysfs_root, (facts_so_far or {}).get("devices"))
    if not nodes:
        return {"available": False, "reason": "no RDMA device on a PCI function was found under %s" % sysfs_root,
                "time": None, "functions": {}}
    now = time.time() if now is None else now
    functions = {}
    for name, node in sorted(nodes.items()):
        # An HCA function is an endpoint, never the root port, even where no bridge is above it (a
        # function on the root bus: a VM's passed-through HCA, a root-complex integrated endpoint).
        hca = functions.setdefault(node.address, dict(read_function_aer(node.path), role="hca", device=name, devices_below=[],
                                                      root_port=False))
        if hca["device"] != name:  # two RDMA devices on one function (a bond's first port): keep the first name
            hca["notes"].append("%s is on this function too" % name)
        for index, (address, directory) in enumerate(node.bridges):
            bridge = functions.get(address)
            if bridge is None:
                bridge = functions[address] = dict(read_function_aer(directory), role="bridge", device=None,
                                                   devices_below=[], root_port=index == 0)
            if name not in bridge["devices_below"]:
                bridge["devices_below"].append(name)
    readable = [f for f in functions.values() if any(f[kind] is not None for kind in KINDS)]
    if not readable:
        unreadable = sorted({reason for f in functions.values() for reason in f["unreadable"].values()})
        reason = "; ".join(unreadable) if unreadable else _ABSENT
        return {"available": False, "reason": reason, "time": now, "functions": functions}
    return {"available": True, "reason": None, "time": now, "functions": functions}


def function_totals(entry):
    """``{kind: total}`` of one function's AER entry: the printed total, or the sum where none was printed."""
    totals = {}
    for kind in KINDS:
        counts = entry.get(kind)
        if isinstance(counts, dict):
            total = counts.get("total")
            totals[kind] = total if isinstance(total, int) else sum(v for k, v in counts.items() if k != "total" and isinstance(v, int))
    return totals


def totals_sample(aer):
    """``{"time", "functions": {address: {kind: total}}}`` of an ``rdma.aer`` fact: what a later read
    compares with (the earlier sample of a call, or the previous run's in the fact cache); None when
    the fact has no time (nothing was read)."""
    if not isinstance(aer, dict) or aer.get("time") is None:
        return None
    return {"time": aer["time"], "functions": {a: function_totals(f) for a, f in sorted((aer.get("functions") or {}).items())}}


def read_aer_again(facts, params, root):
    """The second AER read of a call that samples twice: ``rdma.aer`` becomes that read, with the
    first one's totals as its ``earlier`` sample, so that a rise within the call is judged."""
    first = facts.get("aer")
    later = read_aer(root, facts)
    earlier = totals_sample(first) if isinstance(first, dict) and first.get("available") else None
    if earlier is not None:
        later["earlier"] = earlier
    facts["aer"] = later


@reader("aer", IB_FACTS, fills=("rdma.aer",), again=read_aer_again)
def read_aer_subset(facts, params, module):
    """The PCIe AER counters of every HCA function and of the bridges on its path to the root port;
    read again with the counters' second sample when counters_interval asks for two."""
    facts["aer"] = read_aer(params["sysfs_root"], facts)
