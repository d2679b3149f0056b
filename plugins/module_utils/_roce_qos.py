# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RoCE QoS of each RoCE netdev, read only: ECN per priority, PFC per priority and the trust mode.

Lossless RoCE needs three things to agree on every node of a group: PFC on the priority RDMA uses,
ECN (DCQCN's notification and reaction points) on that priority, and a trust mode that maps the
packets to it (``dscp`` for routed RoCE v2, ``pcp`` with VLANs).

* ECN comes from sysfs: the mlx5 driver's ``/sys/class/net/<if>/ecn/roce_np/enable/<prio>`` (the
  notification point, which sends CNPs) and ``roce_rp/enable/<prio>`` (the reaction point, which slows
  down), one file per priority holding ``0`` or ``1``.
* PFC and trust come from iproute2's ``dcb`` (``dcb -j pfc show``, ``dcb -j app show``, and from
  iproute2 6.2 ``dcb -j apptrust show``) or from NVIDIA's ``mlnx_qos -i <if>``. Both are run only
  through :mod:`_query_commands`, whose shapes hold no setting flag; saved outputs of either are
  read the same way.

The parsers take what people paste: shell prompts, ``+ cmd`` trace lines, comments, CRLF, several
outputs in one text (the last one counts, with a note).
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.rdma.node.plugins.module_utils._ib_common import MAIL_QUOTE_MARKS, is_shell_prompt
from ansible_collections.rdma.node.plugins.module_utils._files import read_text_and_reason
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, reader
from ansible_collections.rdma.node.plugins.module_utils._query_commands import (
    WRITING_WORDS,
    QueryCommandError,
    is_query_argv,
    node_runner,
    query_argv,
)

PRIORITIES = tuple(range(8))
ECN_POINTS = (("np", "roce_np"), ("rp", "roce_rp"))

# iproute2's rt_dsfield names, which ``dcb app show`` prints for DSCP values without -N (dsfield >> 2).
DSCP_NAMES = {"default": 0, "CS1": 8, "AF11": 10, "AF12": 12, "AF13": 14, "CS2": 16, "AF21": 18, "AF22": 20, "AF23": 22,
              "CS3": 24, "AF31": 26, "AF32": 28, "AF33": 30, "CS4": 32, "AF41": 34, "AF42": 36, "AF43": 38, "CS5": 40,
              "EF": 46, "CS6": 48, "CS7": 56}
# dcb's names for PCP values: 0nd..7nd (drop-eligible clear), 0de..7de (set).
PCP_NAMES = {"%d%s" % (pcp, suffix): pcp + (8 if suffix == "de" else 0) for suffix in ("nd", "de") for pcp in range(8)}


class QosTextError(ValueError):
    """Text that is not the output it was given as; the message names the output and what was expected."""


def _lines(text, what):
    if not isinstance(text, str):
        raise QosTextError("%s: expected text, got %s" % (what, type(text).__name__))
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _json_object(text, what):
    """The JSON object in ``text`` (from its first ``{``), or None when it holds none. A paste of several
    runs holds several objects: the last is read, as of mlnx_qos outputs. Mail quote marks ("> ")
    before the lines are read past."""
    text = "\n".join(MAIL_QUOTE_MARKS.sub("", line) for line in text.split("\n"))
    position = text.find("{")
    if position < 0:
        return None
    decoder, objects = json.JSONDecoder(), []
    while position >= 0:
        try:
            loaded, end = decoder.raw_decode(text, position)
        except ValueError as exc:
            if objects:
                break  # text after the last output (a prompt, a shell's "${...}")
            if text.rfind("}") < position:
                raise QosTextError("%s: the output starts like JSON but is not JSON (it ends before its closing brace: cut off?)"
                                   % what) from None
            raise QosTextError("%s: the output starts like JSON but is not JSON (%s)" % (what, exc)) from None
        objects.append(loaded)
        position = text.find("{", end)
    loaded = objects[-1]
    if not isinstance(loaded, dict):
        raise QosTextError("%s: expected a JSON object, got %s" % (what, type(loaded).__name__))
    return loaded


# ------------------------------------------------------------------------------------ ECN


def read_ecn(sysfs_root, netdev):
    """``{"np": [enabled priorities], "rp": [...], "np_read": [...], "rp_read": [...], "reason"}`` of one netdev."""
    base = os.path.join(sysfs_root, "class", "net", netdev, "ecn")
    result = {"np": [], "rp": [], "np_read": [], "rp_read": [], "reason": None}
    if not os.path.isdir(base):
        result["reason"] = "%s does not exist: the driver exposes no ECN settings (not mlx5, or a VF)" % base
        return result
    problems = []
    for key, directory in ECN_POINTS:
        for priority in PRIORITIES:
            path = os.path.join(base, directory, "enable", str(priority))
            text, reason = read_text_and_reason(path, "an ECN enable flag (0 or 1)", 64)
            if reason:
                problems.append(reason)
                continue
            if text is None:
                continue
            value = text.strip()
            if value not in ("0", "1"):
                problems.append("%s holds %r, expected 0 or 1" % (path, value[:20]))
                continue
            result[key + "_read"].append(priority)
            if value == "1":
                result[key].append(priority)
    if not result["np_read"] and not result["rp_read"]:
        result["reason"] = "; ".join(problems) or "%s has no roce_np/enable or roce_rp/enable files" % base
    elif problems:
        result["reason"] = "; ".join(problems)
    return result


# ------------------------------------------------------------------------------------ dcb


def parse_dcb_pfc(text):
    """``dcb [-j] pfc show dev IF`` -> ``{"enabled_priorities", "pfc_cap", "macsec_bypass", "delay"}``."""
    what = "dcb pfc show"
    loaded = _json_object(text, what) if isinstance(text, str) and "{" in text else None
    if loaded is not None:
        flags = loaded.get("prio_pfc")
        if not isinstance(flags, list) or len(flags) != 8 or not all(isinstance(f, bool) for f in flags):
            raise QosTextError("%s: the JSON has no prio_pfc list of 8 true/false values" % what)
        return {"enabled_priorities": [p for p in PRIORITIES if flags[p]], "pfc_cap": loaded.get("pfc_cap"),
                "macsec_bypass": loaded.get("macsec_bypass"), "delay": loaded.get("delay")}
    result = {}
    for line in _lines(text, what):
        words = line.split()
        if "dcb" in words:  # the command itself (after a prompt, or a `set -x` trace): dcb's output never names dcb
            continue
        if "prio-pfc" in words:
            pairs = dict(w.split(":", 1) for w in _words_with_colon(words[words.index("prio-pfc") + 1:]))
            if sorted(pairs) != [str(p) for p in PRIORITIES] or not set(pairs.values()) <= {"on", "off"}:
                raise QosTextError("%s: the prio-pfc line does not give on/off for priorities 0 to 7: %r" % (what, line.strip()[:80]))
            result["enabled_priorities"] = [p for p in PRIORITIES if pairs[str(p)] == "on"]
        # `dcb pfc show dev IF` prints pfc-cap, macsec-bypass and delay on a line of their own; asked for
        # several attributes at once, dcb prints them all on one line with prio-pfc.
        for word, key in (("pfc-cap", "pfc_cap"), ("delay", "delay")):
            if word in words[:-1]:
                result[key] = _int(words[words.index(word) + 1])
        if "macsec-bypass" in words[:-1]:
            result["macsec_bypass"] = {"on": True, "off": False}.get(words[words.index("macsec-bypass") + 1])
    if "enabled_priorities" not in result:
        raise QosTextError("%s: no prio-pfc line (or prio_pfc in JSON): this is not the output of dcb pfc show" % what)
    return {"enabled_priorities": result["enabled_priorities"], "pfc_cap": result.get("pfc_cap"),
            "macsec_bypass": result.get("macsec_bypass"), "delay": result.get("delay")}


def _words_with_colon(words):
    """The ``key:value`` words at the start of ``words`` (a table ends at the next attribute's name)."""
    pairs = []
    for word in words:
        if ":" not in word:
            break
        pairs.append(word)
    return pairs


def _int(text):
    return int(text) if isinstance(text, str) and text.isdigit() else None


def parse_dcb_app(text):
    """``dcb [-j] [-N] app show dev IF`` -> ``{"dscp_prio": {dscp: [prio]}, "pcp_prio": {...}, "default_prio": [...],
    "ethtype_prio", "stream_port_prio", "dgram_port_prio", "port_prio": {value: [prio]}}``.

    DSCP values come as numbers (JSON, ``-N``) or as iproute2's names (``CS3``, ``AF31``); dcb's JSON
    puts a ``" "`` after each pair, which is skipped. EtherTypes are hexadecimal in dcb's text (``8906:3``)
    and decimal in its JSON; ports are decimal (a Broadcom RoCE host maps UDP 4791 with
    ``dgram-port-prio 4791:3``). An empty output is an empty table. Command lines (a setting command
    pasted before its output) are no output; of several ``dcb app show`` outputs, the last is read.
    """
    what = "dcb app show"
    result = _empty_app_table()
    loaded = _json_object(text, what) if isinstance(text, str) and "{" in text else None
    if loaded is not None:
        for _word, key, names, base in _APP_SELECTORS:
            for pair in loaded.get(key) or []:
                values = [v for v in pair if not (isinstance(v, str) and not v.strip())] if isinstance(pair, list) else []
                if len(values) != 2:
                    raise QosTextError("%s: %s holds %r, expected [value, priority] pairs" % (what, key, pair))
                selector, priority = _app_value(values[0], names, what), _app_value(values[1], {}, what)
                result[key].setdefault(selector, []).append(priority)
        result["default_prio"] = [p for p in loaded.get("default_prio") or [] if isinstance(p, int)]
        return _single_prio(result)
    read = False  # whether an output line was read since the last `dcb ... show` command
    read_any, foreign = False, None  # any app line at all; the first line that is neither dcb's nor a prompt
    for line in _lines(text, what):
        words = line.split()
        if "dcb" in words:
            # A command, never output: a setting command (an app replace or add) sets what a later show prints,
            # and a later `dcb app show` prints the table anew (its output replaces an earlier one's).
            if "show" in words and read:
                result, read = _empty_app_table(), False
            continue
        app_line = "default-prio" in words or any(word in words for word, _key, _names, _base in _APP_SELECTORS)
        read, read_any = read or app_line, read_any or app_line
        if not app_line and foreign is None and line.strip() and not is_shell_prompt(MAIL_QUOTE_MARKS.sub("", line).strip()):
            foreign = line.strip()
        for word, key, names, base in _APP_SELECTORS:
            if word in words:
                for pair in words[words.index(word) + 1:]:
                    if ":" not in pair:
                        break
                    selector, priority = pair.rsplit(":", 1)
                    result[key].setdefault(_app_value(selector, names, what, base), []).append(_app_value(priority, {}, what))
        if "default-prio" in words:
            result["default_prio"] = [int(w) for w in words[words.index("default-prio") + 1:] if w.isdigit()]
    if not read_any and foreign is not None:
        # An empty output is an empty table; another tool's text (lldptool's, mlnx_qos's errors) is none.
        raise QosTextError("%s: no app table line (dscp-prio, pcp-prio, default-prio, ethtype-prio or a port's), and %r is not its "
                           "output" % (what, foreign[:80]))
    return _single_prio(result)


# dcb's selectors of the app table: the word of its text, the key of its JSON, the names it prints for
# values and the base of the values in its text (dcb_app.c prints an EtherType with %x).
_APP_SELECTORS = (("dscp-prio", "dscp_prio", DSCP_NAMES, 10), ("pcp-prio", "pcp_prio", PCP_NAMES, 10),
                  ("ethtype-prio", "ethtype_prio", {}, 16), ("stream-port-prio", "stream_port_prio", {}, 10),
                  ("dgram-port-prio", "dgram_port_prio", {}, 10), ("port-prio", "port_prio", {}, 10))


def _empty_app_table():
    return dict({key: {} for _word, key, _names, _base in _APP_SELECTORS}, default_prio=[])


def _app_value(value, names, what, base=10):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value in names:
        return names[value]
    if isinstance(value, str) and base == 16:
        digits = value[2:] if value.lower().startswith("0x") else value
        if digits and all(c in "0123456789abcdefABCDEF" for c in digits):
            return int(digits, 16)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise QosTextError("%s: %r is neither a number nor a DSCP/PCP name dcb prints" % (what, value))


def _single_prio(result):
    """A value may map to several priorities (an app entry added twice); keep them all, as lists."""
    table = {key: {str(k): v for k, v in sorted(result[key].items())} for _word, key, _names, _base in _APP_SELECTORS}
    return dict(table, default_prio=result["default_prio"])


def parse_dcb_apptrust(text):
    """``dcb [-j] apptrust show dev IF`` -> ``{"order": ["pcp", "dscp"]}`` (iproute2 6.2 and later)."""
    what = "dcb apptrust show"
    loaded = _json_object(text, what) if isinstance(text, str) and "{" in text else None
    if loaded is not None:
        order = loaded.get("order")
        if not isinstance(order, list) or not all(isinstance(o, str) for o in order):
            raise QosTextError("%s: the JSON has no order list" % what)
        return {"order": [o.strip() for o in order if o.strip()]}
    order = None
    for line in _lines(text, what):
        words = line.split()
        if "order:" in words:  # at the start of dcb's line, or after the command where a paste joined them
            order = words[len(words) - 1 - words[::-1].index("order:") + 1:]
    if order is None:
        raise QosTextError("%s: no 'order:' line: this is not the output of dcb apptrust show" % what)
    return {"order": order}


# ------------------------------------------------------------------------------------ mlnx_qos

_TRUST = lazy_compile(r"^Priority trust (?:state|mode):\s*(?P<trust>\w+)", re.IGNORECASE)
_DCBX = lazy_compile(r"^DCBX mode:\s*(?P<mode>.+?)\s*$")
_DSCP_ROW = lazy_compile(r"^prio:\s*(?P<prio>[0-7])\s+dscp:\s*(?P<dscp>[0-9,\s]*)$")
_DSCP_SEPARATORS = lazy_compile(r"[,\s]+")
_CABLE = lazy_compile(r"^Cable len:\s*(?P<len>[0-9]+)")
_BUFFERS = lazy_compile(r"^Receive buffer size \(bytes\):\s*(?P<sizes>[0-9,]+)(?:max_buffer_size=(?P<max>[0-9]+))?")
_TC = lazy_compile(r"^tc:\s*(?P<tc>[0-9]+)\s+ratelimit:\s*(?P<rate>[^,]+),\s*tsa:\s*(?P<tsa>\w+)(?:,\s*bw:\s*(?P<bw>[0-9]+)%)?")
_TC_PRIO = lazy_compile(r"^priority:\s*(?P<prio>[0-7])$")
_PFC_TITLE = lazy_compile(r"^PFC configuration:\s*$")
# Where an author elided the rest of an output ("...", "... # many other outputs", "[...]", "<snip>"): mlnx_qos prints no
# such line, so the tables after it (the PFC table comes after the DSCP map) are not in the text.
_ELIDED = lazy_compile(r"^(?:\.{3,}|\u2026|\[\s*(?:\.{3}|\u2026|snip(?:ped)?)\s*\]|<\s*(?:\.{3}|snip(?:ped)?)\s*>)(?:\s+#.*)?$",
                       re.IGNORECASE)


def _output_starts(lines):
    """Where each mlnx_qos output begins: its ``DCBX mode:`` line, or its trust line when it has none, or,
    from an mlnx_qos that prints neither (MLNX_OFED 3.x), its ``PFC configuration:`` line."""
    starts, previous, headed = [], None, False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if _DCBX.match(stripped) or (_TRUST.match(stripped) and not (previous and _DCBX.match(previous))):
            starts.append(index)
            headed = True
        elif _PFC_TITLE.match(stripped):
            if not headed:
                starts.append(index)
            headed = False
        if stripped:
            previous = stripped
    return starts


def _setting_commands(lines, tool):
    """``(line number, [writing flags])`` of each line that runs ``tool`` with a flag that changes a setting."""
    found = []
    for number, line in enumerate(lines, 1):
        words = line.split()
        if tool in words:
            flags = [w.split("=", 1)[0] for w in words[words.index(tool) + 1:] if w.split("=", 1)[0] in WRITING_WORDS]
            if flags:
                found.append((number, flags))
    return found


def parse_mlnx_qos(text):
    """``mlnx_qos -i IF`` output -> trust, PFC per priority, DSCP map, DCBX mode, cable length, TCs.

    ``{"trust", "dcbx_mode", "enabled_priorities", "pfc_buffer", "dscp_prio", "cable_len",
    "receive_buffers", "receive_buffer_max", "tcs": {tc: {"ratelimit", "tsa", "bw_percent", "priorities"}},
    "notes"}``. Several outputs in one text (a script's log of ``mlnx_qos`` calls) are read as the
    last one. mlnx_qos prints the same table after a command that sets the trust mode or PFC: a saved
    text that holds such a command says so in ``notes``, as it shows what was set, not a read.
    """
    what = "mlnx_qos -i"
    lines = _lines(text, what)
    starts = _output_starts(lines)
    if not starts:
        raise QosTextError("%s: no line starts with 'Priority trust state:', 'DCBX mode:' or 'PFC configuration:' (a text that "
                           "lost its line breaks has none either): this is not mlnx_qos output" % what)
    notes = ["line %d runs mlnx_qos with %s, which writes: the table after it shows what that command set"
             % (number, " ".join(flags)) for number, flags in _setting_commands(lines, "mlnx_qos")]
    first = starts[-1]
    if len(starts) > 1:
        notes.append("the text holds %d mlnx_qos outputs; the last one (from line %d) is read" % (len(starts), first + 1))
    result = {"trust": None, "dcbx_mode": None, "enabled_priorities": None, "pfc_buffer": None, "dscp_prio": {},
              "cable_len": None, "receive_buffers": None, "receive_buffer_max": None, "tcs": {}, "notes": notes}
    current_tc, pfc_header, elided = None, False, None
    for number, line in enumerate(lines[first:], first + 1):
        stripped = line.strip()
        if not stripped:
            continue
        if _ELIDED.match(stripped):
            elided = elided or (number, stripped)
            continue
        for pattern, key in ((_TRUST, "trust"), (_DCBX, "dcbx_mode")):
            match = pattern.match(stripped)
            if match:
                result[key] = match.group(1).strip().lower() if key == "trust" else match.group(1).strip()
        match = _DSCP_ROW.match(stripped)
        if match:
            # Commas between the values, or whitespace where a paste turned one into a tab or a space.
            for dscp in (int(d) for d in _DSCP_SEPARATORS.split(match.group("dscp")) if d):
                if dscp > 63:
                    raise QosTextError("%s: the prio:%s dscp row holds %d, not a DSCP value (0-63): %r"
                                       % (what, match.group("prio"), dscp, stripped[:80]))
                result["dscp_prio"].setdefault(str(dscp), []).append(int(match.group("prio")))
            continue
        match = _CABLE.match(stripped) or _BUFFERS.match(stripped)
        if match and "len" in match.groupdict():
            result["cable_len"] = int(match.group("len"))
        elif match:
            result["receive_buffers"] = [int(s) for s in match.group("sizes").split(",") if s]
            result["receive_buffer_max"] = int(match.group("max")) if match.group("max") else None
        words = stripped.split()
        if words[:1] == ["priority"] and words[1:] == [str(p) for p in PRIORITIES]:
            pfc_header = True
        elif pfc_header and words[:1] in (["enabled"], ["buffer"]):
            values = words[1:]
            if len(values) != 8 or not all(v.isdigit() for v in values):
                raise QosTextError("%s: the PFC %s row does not hold 8 numbers: %r" % (what, words[0], stripped[:80]))
            if words[0] == "enabled":
                result["enabled_priorities"] = [p for p in PRIORITIES if values[p] != "0"]
            else:
                result["pfc_buffer"] = [int(v) for v in values]
        match = _TC.match(stripped)
        if match:
            current_tc = result["tcs"].setdefault(match.group("tc"), {
                "ratelimit": match.group("rate").strip(), "tsa": match.group("tsa"),
                "bw_percent": int(match.group("bw")) if match.group("bw") else None, "priorities": []})
            continue
        match = _TC_PRIO.match(stripped)
        if match and current_tc is not None:
            current_tc["priorities"].append(int(match.group("prio")))
    if result["trust"] is None and result["enabled_priorities"] is None:
        raise QosTextError("%s: neither the trust state nor the PFC 'enabled' row could be read" % what)
    if result["trust"] is None:
        notes.append("the output has no 'Priority trust state:' line (an older mlnx_qos prints none): the trust mode is not in it")
    if result["enabled_priorities"] is None and elided:
        notes.append("line %d (%r) elides the rest of the output: its PFC table is not in the text, so PFC is not known"
                     % (elided[0], elided[1][:60]))
    result["dscp_prio"] = dict(sorted(result["dscp_prio"].items(), key=lambda item: int(item[0])))
    return result


# ------------------------------------------------------------------------------------ collection


def bond_slaves(sysfs_root):
    """``{bond: [its slaves, sorted]}``: the netdevs whose ``master`` link names another netdev.

    One listing of ``class/net`` for the whole node (a bond is found by its slaves' ``master`` links).
    """
    net = os.path.join(sysfs_root, "class", "net")
    try:
        names = sorted(os.listdir(net))
    except OSError:
        return {}
    slaves = {}
    for name in names:
        master = os.path.join(net, name, "master")
        if os.path.islink(master):
            try:
                slaves.setdefault(os.path.basename(os.readlink(master)), []).append(name)
            except OSError:
                continue
    return slaves


def roce_netdevs(facts_so_far, sysfs_root=None):
    """``{netdev: (device, port, bond)}`` of the Ethernet (RoCE) ports' netdevs in the gathered facts.

    A RoCE LAG port's netdev is a bond, which has no QoS of its own: the bonding driver has neither
    ECN files nor DCB, and NVIDIA has QoS set on each slave. So with ``sysfs_root`` a bond stands
    for its slaves (each with ``bond`` naming it); without, or for any other netdev, ``bond`` is None.
    """
    found = {}
    slaves_of = bond_slaves(sysfs_root) if sysfs_root else {}
    for port in (facts_so_far or {}).get("ports") or []:
        if port.get("link_layer") == "Ethernet":
            for netdev in port.get("netdevs") or []:
                slaves = [name for name in slaves_of.get(netdev, []) if name != netdev]
                for name in slaves or [netdev]:
                    found.setdefault(name, (port.get("device"), port.get("port"), netdev if slaves else None))
    return found


def run_queries(netdev, run, kinds=("dcb_pfc", "dcb_app", "dcb_apptrust", "mlnx_qos")):
    """``{kind: (stdout or None, reason or None)}``: each query of ``kinds`` for one netdev, through ``run``.

    ``run(argv) -> (rc, stdout, stderr)`` executes a command (``module.run_command`` on a node); it
    is handed only argvs that :func:`is_query_argv` accepts. A tool that is missing or fails gives
    None and the reason, never an exception.
    """
    outputs = {}
    for kind in kinds:
        try:
            argv = query_argv(kind, netdev=netdev)
        except QueryCommandError as exc:
            outputs[kind] = (None, str(exc))
            continue
        if not is_query_argv(argv):
            outputs[kind] = (None, "refused to run %s: not a query" % " ".join(argv))
            continue
        try:
            rc, out, err = run(argv)
        except OSError as exc:
            outputs[kind] = (None, "%s could not be run: %s" % (argv[0], exc.strerror or exc))
            continue
        if rc != 0:
            message = " ".join((err or out or "no message").split())[:200]
            outputs[kind] = (None, "%s exited with %d: %s" % (" ".join(argv), rc, message))
            continue
        outputs[kind] = (out, None)
    return outputs


SAVED_NAMES = {"dcb_pfc": ("{netdev}_dcb_pfc.json", "{netdev}_dcb_pfc.txt"), "dcb_app": ("{netdev}_dcb_app.json", "{netdev}_dcb_app.txt"),
               "dcb_apptrust": ("{netdev}_dcb_apptrust.json", "{netdev}_dcb_apptrust.txt"), "mlnx_qos": ("{netdev}_mlnx_qos.txt",)}


def saved_outputs(saved_dir, netdev, missing_only=None):
    """``{kind: (text, reason)}`` of the saved outputs of one netdev in ``saved_dir`` (names in :data:`SAVED_NAMES`).

    ``missing_only`` (a :func:`run_queries` result) limits the reading to the kinds it has no text for,
    keeping its reason beside the saved file's when neither is there.
    """
    outputs = dict(missing_only or {})
    for kind, names in SAVED_NAMES.items():
        if outputs.get(kind, (None, None))[0] is not None:
            continue
        earlier = outputs.get(kind, (None, None))[1]
        found = None
        for name in names:
            path = os.path.join(saved_dir, name.format(netdev=netdev))
            text, reason = read_text_and_reason(path, "a saved %s output" % kind, 1024 * 1024)
            if text is not None or reason:
                found = (text, reason)
                break
        if found is None:
            found = (None, "; ".join(r for r in (earlier, "no saved %s in %s" % (" or ".join(n.format(netdev=netdev) for n in names), saved_dir)) if r))
        outputs[kind] = found
    return outputs


def qos_of_netdev(sysfs_root, netdev, outputs):
    """The ``rdma.roce_qos.netdevs`` entry of one netdev from sysfs ECN and the query outputs.

    ``outputs`` maps ``dcb_pfc``/``dcb_app``/``dcb_apptrust``/``mlnx_qos`` to ``(text, reason)``
    (run now, or read from saved files); PFC and trust come from ``dcb`` where it answered, else from
    ``mlnx_qos``. Each value says its source, or why it is missing.
    """
    entry = {"ecn": read_ecn(sysfs_root, netdev), "pfc": None, "trust": None, "dscp_prio": None, "notes": []}
    parsed, reasons = {}, []
    for kind, parser in (("dcb_pfc", parse_dcb_pfc), ("dcb_app", parse_dcb_app), ("dcb_apptrust", parse_dcb_apptrust),
                         ("mlnx_qos", parse_mlnx_qos)):
        text, reason = (outputs or {}).get(kind, (None, "%s was not run and no saved output was given" % kind))
        if text is None:
            reasons.append(reason)
            continue
        try:
            parsed[kind] = parser(text)
        except QosTextError as exc:
            reasons.append(str(exc))
    if "dcb_pfc" in parsed:
        entry["pfc"] = {"enabled_priorities": parsed["dcb_pfc"]["enabled_priorities"], "source": "dcb pfc show", "reason": None}
    elif "mlnx_qos" in parsed and parsed["mlnx_qos"]["enabled_priorities"] is not None:
        entry["pfc"] = {"enabled_priorities": parsed["mlnx_qos"]["enabled_priorities"], "source": "mlnx_qos -i", "reason": None}
    if "dcb_apptrust" in parsed:
        order = parsed["dcb_apptrust"]["order"]
        entry["trust"] = {"mode": order[0] if len(order) == 1 else " ".join(order) or None, "source": "dcb apptrust show", "inferred": False}
    elif "mlnx_qos" in parsed and parsed["mlnx_qos"]["trust"]:
        entry["trust"] = {"mode": parsed["mlnx_qos"]["trust"], "source": "mlnx_qos -i", "inferred": False}
    elif "dcb_app" in parsed:
        # mlx5 turns DSCP trust on with the first dscp-prio entry and off with the last one.
        entry["trust"] = {"mode": "dscp" if parsed["dcb_app"]["dscp_prio"] else "pcp", "source": "dcb app show", "inferred": True}
    if "dcb_app" in parsed and parsed["dcb_app"]["dscp_prio"]:
        entry["dscp_prio"] = parsed["dcb_app"]["dscp_prio"]
    elif "mlnx_qos" in parsed and parsed["mlnx_qos"]["dscp_prio"]:
        entry["dscp_prio"] = parsed["mlnx_qos"]["dscp_prio"]
    if "mlnx_qos" in parsed:
        entry["notes"].extend(parsed["mlnx_qos"]["notes"])
        if not parsed["mlnx_qos"]["trust"]:
            reasons.append("mlnx_qos -i printed no 'Priority trust state:' line")
        if parsed["mlnx_qos"]["enabled_priorities"] is None:
            # A saved output cut before its PFC table (elided, or a paste that stops early): PFC was not read, not off.
            reasons.append("the mlnx_qos -i output is cut before its PFC table")
    if entry["pfc"] is None:
        entry["pfc"] = {"enabled_priorities": None, "source": None, "reason": "; ".join(r for r in reasons if r) or "no PFC output"}
    if entry["trust"] is None:
        entry["trust"] = {"mode": None, "source": None, "inferred": False,
                          "reason": "; ".join(r for r in reasons if r) or "no trust output"}
    return entry


def read_roce_qos(sysfs_root, facts_so_far, outputs_by_netdev=None):
    """``rdma.roce_qos``: ``{"available", "reason", "netdevs": {netdev: {"device", "port", "bond", "ecn", "pfc",
    "trust", "dscp_prio", "notes"}}}`` of every RoCE netdev (the slaves of a RoCE bond, see
    :func:`roce_netdevs`). ``outputs_by_netdev`` maps a netdev to :func:`run_queries`'s result (or
    saved outputs of the same shape)."""
    netdevs = roce_netdevs(facts_so_far, sysfs_root)
    if not netdevs:
        return {"available": False, "reason": "no RoCE (Ethernet link layer) port with a netdev", "netdevs": {}}
    result = {}
    for netdev, (device, port, bond) in sorted(netdevs.items()):
        result[netdev] = dict(qos_of_netdev(sysfs_root, netdev, (outputs_by_netdev or {}).get(netdev)), device=device, port=port, bond=bond)
    known = [e for e in result.values() if e["ecn"]["reason"] is None or e["pfc"]["source"] or e["trust"]["source"]]
    return {"available": bool(known), "netdevs": result,
            "reason": None if known else "neither ECN in sysfs nor a PFC/trust output for any RoCE netdev"}


@reader("roce_qos", IB_FACTS, fills=("rdma.roce_qos",), inputs=("roce_qos_tools", "roce_qos_dir"))
def read_roce_qos_subset(facts, params, module):
    """ECN per priority from sysfs, PFC per priority and the trust mode from dcb or mlnx_qos (queries
    only, where roce_qos_tools allows them) or their saved outputs in roce_qos_dir, per RoCE netdev
    (each slave of a RoCE bond)."""
    run = node_runner(module) if params.get("roce_qos_tools") else None
    outputs = {}
    for netdev in roce_netdevs(facts, params["sysfs_root"]):
        found = run_queries(netdev, run) if run is not None else None
        if params.get("roce_qos_dir"):
            found = saved_outputs(params["roce_qos_dir"], netdev, found)
        if found is not None:
            outputs[netdev] = found
    facts["roce_qos"] = read_roce_qos(params["sysfs_root"], facts, outputs)
