# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bit errors and optics of each port from NVIDIA's ``mlxlink``: BER before and after FEC, per-lane
module faults, and the module's temperature, voltage, bias current and optical power against the
thresholds the module itself reports.

``mlxlink -d <dev> -p <port> --json --show_module --show_counters`` prints
``{"result": {"output": {<section>: {<field>: <value>}}}, "status": {"code", "message"}}``; a value
is text (``"48 [-5..75]"``: the reading and the module's alarm range) or, for per-lane fields,
``{"values": [...]}``. The same sections print as ``Section`` / ``-------`` / ``Field : value`` text
without ``--json``, which is what people paste; both are read. The tool runs only where it exists
and an option allows it (:mod:`_query_commands` builds the only argv); otherwise a saved output per
port is read, and without either the port is "not checked" with the reason.
"""

from __future__ import annotations

import json
import os

from ansible_collections.rdma.node.plugins.module_utils._files import read_text_and_reason
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, reader
from ansible_collections.rdma.node.plugins.module_utils._query_commands import QueryCommandError, is_query_argv, node_runner, query_argv

SECTION_OPERATIONAL = "Operational Info"
SECTION_BER = "Physical Counters and BER Info"
SECTION_MODULE = "Module Info"
SECTION_TROUBLESHOOTING = "Troubleshooting Info"
# Section titles read as such without their "-----" line (a paste through grep drops it).
_KNOWN_SECTIONS = frozenset((SECTION_OPERATIONAL, SECTION_BER, SECTION_MODULE, SECTION_TROUBLESHOOTING,
                             "Supported Info", "Tool Information"))
# mlxlink's error lines: "-E- Device not found", "-E- "--show_ber_monitor" option is not supported for HCA".
_ERROR_LINE = lazy_compile(r"^-E-\s*(?P<message>.*)$")
# What of a saved output's error lines goes into the facts and reasons: a file may hold a megabyte of them.
_MAX_ERRORS, _MAX_ERROR_CHARS = 3, 200
# Per-lane module flags (mlxlink's "[per lane]" fields; 1 means the condition is present on that lane).
LANE_FAULTS = {
    "Rx LOS [per lane]": "rx_loss_of_signal",
    "Tx LOS [per lane]": "tx_loss_of_signal",
    "Tx Fault [per lane]": "tx_fault",
    "Rx CDR LOL [per lane]": "rx_cdr_loss_of_lock",
    "Tx CDR LOL [per lane]": "tx_cdr_loss_of_lock",
    "Tx Adaptive EQ Fault [per lane]": "tx_adaptive_eq_fault",
}
# Module readings with the module's own alarm range in brackets.
MODULE_READINGS = {
    "Temperature [C]": "temperature_c",
    "Voltage [mV]": "voltage_mv",
    "Bias Current [mA]": "bias_current_ma",
    "Rx Power Current [dBm]": "rx_power_dbm",
    "Tx Power Current [dBm]": "tx_power_dbm",
}
_RANGE = lazy_compile(r"^(?P<values>[-+0-9.,\s]+?)\s*\[(?P<low>[-+0-9.]+)\.\.(?P<high>[-+0-9.]+)\]$")
# mlxlink colours its values on a terminal (green, yellow, red), and pastes keep the escape sequences.
_ANSI_ESCAPE = lazy_compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TEXT_FIELD = lazy_compile(r"^(?P<key>[^:]+?)\s*:\s?(?P<value>.*)$")
_SAVED_NAMES = ("{device}_{port}.json", "{device}_{port}.txt", "{device}-p{port}.json", "{device}-p{port}.txt")
_MAX_BYTES = 1024 * 1024


class MlxlinkTextError(ValueError):
    """Text that is not mlxlink output; the message says what was expected."""


def _sections_from_json(text):
    start = text.find("{")
    decoder = json.JSONDecoder()
    try:
        loaded, end = decoder.raw_decode(text, start)
    except ValueError as exc:
        raise MlxlinkTextError("the output starts like mlxlink --json but is not complete JSON (%s); "
                               "a cut-off paste or a failed run" % exc) from None
    if not isinstance(loaded, dict):
        raise MlxlinkTextError("expected the JSON object mlxlink --json prints, got %s" % type(loaded).__name__)
    following = text.find("{", end)
    if following >= 0:
        try:
            decoder.raw_decode(text, following)
        except ValueError:
            pass  # a brace in the text after the output, not another output
        else:
            raise _several_outputs("mlxlink --json object")
    output = (loaded.get("result") or {}).get("output") if isinstance(loaded.get("result"), dict) else None
    status = loaded.get("status") if isinstance(loaded.get("status"), dict) else {}
    sections = {}
    for name, fields in (output or {}).items():
        if isinstance(fields, dict):
            sections[name] = {str(k): _json_value(v) for k, v in fields.items()}
    return sections, {"code": status.get("code"), "message": status.get("message")}


def _several_outputs(what, count=None):
    return MlxlinkTextError("the text holds %s %s: a port's saved output is one run of mlxlink for that port"
                            % ("%d outputs, each with its" % count if count else "more than one", what))


def _json_value(value):
    if isinstance(value, dict) and isinstance(value.get("values"), list):
        return [str(v).strip() for v in value["values"]]
    return str(value).strip() if value is not None else None


def _sections_from_text(text):
    sections, current, previous, errors, starts = {}, None, None, [], {}
    unplaced_fields = 0  # "Field : value" lines before any section title

    def start(name):
        starts[name] = starts.get(name, 0) + 1
        return sections.setdefault(name, {})

    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.strip()
        if not line:
            continue
        error = _ERROR_LINE.match(line)
        if error:
            message = error.group("message").strip()
            if len(errors) < _MAX_ERRORS:
                errors.append("-E- " + (message if len(message) <= _MAX_ERROR_CHARS else message[:_MAX_ERROR_CHARS - 3] + "..."))
            previous = None
            continue
        title = line.strip("# ") if line.startswith("#") or line.endswith(" #") else line
        if title in _KNOWN_SECTIONS:  # "Operational Info", or as a web page's heading: "### Operational Info #"
            current, previous = start(title), None
            continue
        if set(line) == {"-"} and previous is not None:
            current, previous = start(previous), None
            continue
        match = _TEXT_FIELD.match(line)
        if match and current is not None:
            current[match.group("key").strip()] = match.group("value").strip()
        elif match:
            unplaced_fields += 1
        previous = line
    repeated = max(starts.values()) if starts else 0
    if repeated > 1:
        raise _several_outputs("'%s' section" % next(name for name, count in starts.items() if count == repeated), repeated)
    if not sections:
        if errors:
            raise MlxlinkTextError("mlxlink printed an error and no section: %s" % errors[0])
        if unplaced_fields:
            raise MlxlinkTextError("%d 'Field : value' line(s) and no section title above them (such as 'Operational Info'): "
                                   "not mlxlink output, or a paste that grep cut down to some fields, which cannot be "
                                   "placed without their sections" % unplaced_fields)
        raise MlxlinkTextError("no 'Section' / '-------' / 'Field : value' block and no JSON: this is not mlxlink output")
    # An error beside the sections (an option this device does not support) leaves what was printed good.
    return sections, {"code": None, "message": "; ".join(errors) or None}


def _number(text):
    if text is None:
        return None
    try:
        return float(str(text).strip())
    except ValueError:
        return None


def _int(text):
    value = _number(text)
    return int(value) if value is not None and value == int(value) else None


def _per_lane(value):
    """A per-lane field: a JSON list, or ``a,b,c,d`` text; ``N/A`` gives None."""
    if isinstance(value, list):
        items = value
    elif isinstance(value, str) and value and value.upper() != "N/A":
        items = [v.strip() for v in value.split(",")]
    else:
        return None
    return items or None


def _text(value):
    """A text field; mlxlink's ``N/A`` (and an empty value) is None."""
    if not isinstance(value, str) or not value.strip() or value.strip().upper() == "N/A":
        return None
    return value.strip()


def _flag(text):
    lowered = str(text).strip().lower()
    if lowered in ("1", "yes", "true", "on"):
        return True
    if lowered in ("0", "no", "false", "off"):
        return False
    return None


def parse_reading(value):
    """``"41 [-5..75]"`` -> ``{"values": [41.0], "low": -5.0, "high": 75.0}``; ``N/A`` or junk -> None.

    A module without monitoring (a passive copper cable) reads ``0 [0..0]``: no reading, None. An
    empty range (low equal to high) is no threshold."""
    if isinstance(value, list):
        value = ",".join(value)
    match = _RANGE.match(str(value or "").strip())
    if not match:
        numbers = [_number(v) for v in str(value or "").split(",")]
        if numbers and all(n is not None for n in numbers):
            return {"values": numbers, "low": None, "high": None}
        return None
    numbers = [_number(v) for v in match.group("values").split(",") if v.strip()]
    if not numbers or any(n is None for n in numbers):
        return None
    low, high = float(match.group("low")), float(match.group("high"))
    if low == high:
        if not any(numbers):
            return None
        low = high = None
    return {"values": numbers, "low": low, "high": high}


def parse_mlxlink(text):
    """mlxlink output (``--json`` or plain) -> the link-quality facts of one port.

    ``{"status", "state", "physical_state", "speed", "width", "fec", "effective_ber", "raw_ber",
    "raw_ber_per_lane", "symbol_ber", "effective_errors", "raw_errors_per_lane", "link_down_counter",
    "link_error_recovery_counter", "time_since_last_clear_min", "recommendation", "module", "sections"}``;
    what the output lacks (or gives as ``N/A``) is None; terminal colours are ignored. ``module``
    holds ``identifier``, ``vendor``, ``part_number``, ``serial_number``, the readings of
    :data:`MODULE_READINGS` and ``lane_faults`` (fault -> per-lane true/false; None on every lane of a
    passive copper cable, which has nothing that could report one).
    """
    if not isinstance(text, str):
        raise MlxlinkTextError("expected mlxlink output as text, got %s" % type(text).__name__)
    stripped = _ANSI_ESCAPE.sub("", text).strip()
    if not stripped:
        raise MlxlinkTextError("the output is empty")
    sections, status = _sections_from_json(stripped) if "{" in stripped[:200] else _sections_from_text(stripped)
    operational = sections.get(SECTION_OPERATIONAL) or {}
    ber = sections.get(SECTION_BER) or {}
    module = sections.get(SECTION_MODULE) or {}
    if not (operational or ber or module) and status.get("code") in (None, 0):
        raise MlxlinkTextError("none of the sections %s, %s, %s is in the output (%s): not the output of a network port"
                               % (SECTION_OPERATIONAL, SECTION_BER, SECTION_MODULE, ", ".join(sorted(sections)) or "no section"))
    lanes = _per_lane(ber.get("Raw Physical Errors Per Lane"))
    lane_ber = _per_lane(ber.get("Raw Physical BER Per Lane"))
    facts = {
        "status": status,
        "state": _text(operational.get("State")),
        "physical_state": _text(operational.get("Physical state")),
        "speed": _text(operational.get("Speed")),
        "width": _text(operational.get("Width")),
        "fec": _text(operational.get("FEC")),
        "effective_ber": _number(ber.get("Effective Physical BER")),
        "raw_ber": _number(ber.get("Raw Physical BER")),
        "raw_ber_per_lane": [_number(v) for v in lane_ber] if lane_ber else None,
        "symbol_ber": _number(ber.get("Symbol BER")),
        "effective_errors": _int(ber.get("Effective Physical Errors")),
        "raw_errors_per_lane": [_int(v) for v in lanes] if lanes else None,
        "link_down_counter": _int(ber.get("Link Down Counter")),
        "link_error_recovery_counter": _int(ber.get("Link Error Recovery Counter")),
        "time_since_last_clear_min": _number(ber.get("Time Since Last Clear [Min]")),
        "recommendation": _text((sections.get(SECTION_TROUBLESHOOTING) or {}).get("Recommendation")),
        "module": _module(module) if module else None,
        "sections": sorted(sections),
    }
    return facts


def _module(fields):
    module = {"identifier": _text(fields.get("Identifier")), "vendor": _text(fields.get("Vendor Name")),
              "part_number": _text(fields.get("Vendor Part Number")), "serial_number": _text(fields.get("Vendor Serial Number")),
              "cable_type": _text(fields.get("Cable Type")), "lane_faults": {}}
    for field, key in MODULE_READINGS.items():
        module[key] = parse_reading(fields.get(field))
    # A passive copper cable has no receiver, laser or clock recovery: the lane flags mlxlink prints for
    # one (Rx LOS and CDR LOL set on a link that is up at full rate) mean nothing, and are None.
    passive = _is_passive_copper(module["cable_type"], fields.get("Cable Technology"))
    for field, key in LANE_FAULTS.items():
        lanes = _per_lane(fields.get(field))
        if lanes:
            module["lane_faults"][key] = [None if passive else _flag(v) for v in lanes]
    return module


def link_is_up(port):
    """Whether mlxlink's facts of a port show a link: its State is Active, or its physical state LinkUp
    (newer firmware prints an Ethernet port's auto-negotiation state there, such as ETH_AN_FSM_ENABLE)."""
    return str(port.get("state") or "").lower() == "active" or str(port.get("physical_state") or "").lower() == "linkup"


def _is_passive_copper(cable_type, technology=None):
    """Whether mlxlink's ``Cable Type`` (or ``Cable Technology``) names a passive copper cable."""
    words = " ".join(str(text).lower() for text in (cable_type, technology) if isinstance(text, str))
    return "passive" in words and "copper" in words


# ------------------------------------------------------------------------------------ collection


def _physical_ports(facts_so_far):
    devices = (facts_so_far or {}).get("devices") or {}
    return [(p["device"], p["port"]) for p in (facts_so_far or {}).get("ports") or []
            if isinstance(p.get("port"), int) and not (devices.get(p.get("device")) or {}).get("virtual_function")]


def _saved_output(saved_dir, device, port):
    for pattern in _SAVED_NAMES:
        path = os.path.join(saved_dir, pattern.format(device=device, port=port))
        text, reason = read_text_and_reason(path, "saved mlxlink output", _MAX_BYTES)
        if text is not None or reason:
            return text, reason, path
    return None, "no saved output for %s port %d in %s (looked for %s)" % (
        device, port, saved_dir, ", ".join(p.format(device=device, port=port) for p in _SAVED_NAMES)), None


def read_link_quality(sysfs_root, facts_so_far, run=None, saved_dir=None):
    """``rdma.link_quality``: ``{"available", "reason", "ports": {"dev/port": {"device", "port", "source",
    "reason", ...parse_mlxlink facts}}}``.

    ``run(argv) -> (rc, stdout, stderr)`` runs mlxlink (None: the tool is not to be run, or is not
    installed; the caller says which through ``saved_dir`` or the reason); ``saved_dir`` holds saved
    outputs named ``<device>_<port>.json`` (or ``.txt``). ``sysfs_root`` is unused: mlxlink reads the
    device, not sysfs; it is taken for the one reader signature.
    """
    del sysfs_root
    ports = _physical_ports(facts_so_far)
    if not ports:
        return {"available": False, "reason": "no RDMA port on a physical function", "ports": {}}
    if run is None and not saved_dir:
        return {"available": False, "ports": {},
                "reason": "mlxlink was not run (not installed, or not allowed by node_health_mlxlink) and no saved outputs were given"}
    result = {}
    for device, port in ports:
        entry = {"device": device, "port": port, "source": None, "reason": None}
        text, reason = None, None
        if run is not None:
            text, reason, entry["source"] = _run_mlxlink(run, device, port)
        if text is None and saved_dir:
            text, saved_reason, path = _saved_output(saved_dir, device, port)
            reason = "; ".join(r for r in (reason, saved_reason) if r) or None
            entry["source"] = path or entry["source"]
        if text is not None:
            try:
                entry.update(parse_mlxlink(text))
                reason = None
                if entry["status"].get("code") not in (None, 0):
                    reason = "mlxlink reported status %s: %s" % (entry["status"]["code"], entry["status"].get("message") or "no message")
            except MlxlinkTextError as exc:
                reason = "%s: %s" % (entry["source"], exc)
        entry["reason"] = reason
        result["%s/%s" % (device, port)] = entry
    judged = [e for e in result.values() if e["reason"] is None]
    return {"available": bool(judged), "ports": result,
            "reason": None if judged else sorted({e["reason"] for e in result.values()})[0]}


def _run_mlxlink(run, device, port):
    try:
        argv = query_argv("mlxlink", device=device, port=port)
    except QueryCommandError as exc:
        return None, str(exc), None
    if not is_query_argv(argv):
        return None, "refused to run %s: not a query" % " ".join(argv), None
    source = " ".join(argv)
    try:
        rc, out, err = run(argv)
    except OSError as exc:
        return None, "mlxlink could not be run: %s" % (exc.strerror or exc), source
    if out and "{" in out:
        return out, None, source  # --json reports its own failures in "status"
    if rc != 0:
        return None, "%s exited with %d: %s" % (source, rc, " ".join((err or "no message").split())[:200]), source
    return out, None, source


@reader("link_quality", IB_FACTS, fills=("rdma.link_quality",), inputs=("mlxlink", "mlxlink_dir"))
def read_link_quality_subset(facts, params, module):
    """Bit error rates, lane faults and module readings of every physical port from mlxlink --json
    (a query, run only where the mlxlink option allows it and the tool is installed) or its saved
    outputs in mlxlink_dir."""
    run = node_runner(module) if params.get("mlxlink") else None
    facts["link_quality"] = read_link_quality(params["sysfs_root"], facts, run, params.get("mlxlink_dir") or None)
