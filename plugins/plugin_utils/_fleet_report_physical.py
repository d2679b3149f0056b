# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compact views of a host's physical-layer facts for the fleet report: what the report shows and what
the group consensus compares, never the facts themselves.

A host's ``rdma.aer``, ``rdma.pcie_path``, ``rdma.roce_qos`` and ``rdma.link_quality`` hold per-lane
readings, per-type error counts and every bridge's ACS flags; at a thousand hosts copying them into
the report would cost more than the rest of it. So the views are made once, where the report reads a
host's variables (``_fleet_report_hosts``), and only they are kept:

* ``physical``: the HCA temperatures (once per card and sensor), the PCIe AER totals (the functions
  that counted errors, with the rise within the run), the BER and module temperature of each port from
  mlxlink, and the RoCE QoS of each RoCE netdev; a part whose subset was not gathered is None, a part
  that was gathered but read nothing carries its ``reason``;
* ``consensus``: what ``_checks.consensus.consensus_values`` reads of ``rdma`` and ``rdma_driver``.

Texts stay as the node wrote them: the report's renderings escape them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.rdma.node.plugins.module_utils._link_quality import link_is_up
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import KINDS as AER_KINDS
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import function_totals
from ansible_collections.rdma.node.plugins.plugin_utils._checks.consensus import consensus_facts
from ansible_collections.rdma.node.plugins.plugin_utils._checks.health import pcie_slot

# Where the report keeps a host's views among the facts it copies (``_fleet_report_hosts``).
VIEWS_KEY = "rdma_report_views"


def _mapping(value):
    return value if isinstance(value, Mapping) else {}


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def temperatures(temperature):
    """``{"sensors": [{"device", "sensor", "celsius", "crit_celsius"}], "reason"}`` of ``rdma.temperature``:
    one entry per card and sensor (the functions of one card share its ASIC and its module)."""
    sensors, reasons, seen = [], [], set()
    for name, reading in sorted(_mapping(temperature).items()):
        reading = _mapping(reading)
        if not reading.get("sensors"):
            reasons.append("%s: %s" % (name, reading.get("reason") or "no sensor"))
            continue
        for sensor in reading["sensors"]:
            sensor = _mapping(sensor)
            key = (pcie_slot(reading.get("pci_address")) or name, sensor.get("label"))
            if key in seen:
                continue
            seen.add(key)
            sensors.append({"device": name, "sensor": sensor.get("label"), "celsius": _number(sensor.get("input_celsius")),
                            "crit_celsius": _number(sensor.get("crit_celsius"))})
    return {"sensors": sensors, "reason": "; ".join(reasons) if reasons and not sensors else None}


def _aer_who(entry):
    if entry.get("role") == "hca":
        return entry.get("device")
    return "%s above %s" % ("root port" if entry.get("root_port") else "bridge", ", ".join(entry.get("devices_below") or []) or "an HCA")


def aer(aer_facts):
    """``{"functions", "totals": {kind: n}, "counted": [...], "source", "reason"}`` of ``rdma.aer``: the
    totals over every function read, and the functions that counted any error (with the earlier
    totals of this run, where it read twice)."""
    aer_facts = _mapping(aer_facts)
    if not aer_facts.get("available"):
        return {"functions": 0, "totals": None, "counted": [], "source": None, "reason": aer_facts.get("reason") or "no AER counters"}
    earlier = _mapping(_mapping(aer_facts.get("earlier")).get("functions"))
    totals, counted = dict.fromkeys(AER_KINDS, 0), []
    functions = _mapping(aer_facts.get("functions"))
    for address, entry in sorted(functions.items()):
        entry = _mapping(entry)
        now = function_totals(entry)
        for kind, value in now.items():
            totals[kind] += value
        if any(now.values()):
            before = _mapping(earlier.get(address))
            counted.append({"address": address, "who": _aer_who(entry), "totals": now,
                            "earlier": {k: before[k] for k in now if isinstance(before.get(k), int) and before[k] != now[k]} or None})
    return {"functions": len(functions), "totals": totals, "counted": counted,
            "source": "this run" if earlier else None, "reason": None}


def links(link_quality):
    """``{"ports": [{"port", "effective_ber", "raw_ber", "module_celsius", "module_max_celsius", "reason"}], "reason"}``
    of ``rdma.link_quality`` (mlxlink)."""
    link_quality = _mapping(link_quality)
    ports = []
    for name, port in sorted(_mapping(link_quality.get("ports")).items()):
        port = _mapping(port)
        reading = _mapping(_mapping(port.get("module")).get("temperature_c"))
        values = [v for v in reading.get("values") or [] if _number(v) is not None]
        reason = port.get("reason")
        if not reason and port.get("effective_ber") is None and port.get("raw_ber") is None:
            reason = "no link (%s)" % port["physical_state"] if port.get("physical_state") and not link_is_up(port) else "no BER printed"
        ports.append({"port": name, "effective_ber": _number(port.get("effective_ber")), "raw_ber": _number(port.get("raw_ber")),
                      "module_celsius": max(values) if values else None, "module_max_celsius": _number(reading.get("high")),
                      "reason": reason})
    return {"ports": ports, "reason": None if ports else link_quality.get("reason") or "no port read"}


def qos(roce_qos):
    """``{"netdevs": [{"netdev", "bond", "trust", "pfc", "ecn_np", "ecn_rp", "reason"}], "reason"}`` of ``rdma.roce_qos``;
    a value that could not be read is None (its ``reason`` says why)."""
    roce_qos = _mapping(roce_qos)
    netdevs = []
    for name, entry in sorted(_mapping(roce_qos.get("netdevs")).items()):
        entry = _mapping(entry)
        pfc, trust, ecn = _mapping(entry.get("pfc")), _mapping(entry.get("trust")), _mapping(entry.get("ecn"))
        reasons = [r for r in (pfc.get("reason"), trust.get("reason"), ecn.get("reason")) if r]
        netdevs.append({"netdev": name, "bond": entry.get("bond"), "trust": trust.get("mode"), "pfc": pfc.get("enabled_priorities"),
                        "ecn_np": ecn.get("np") if ecn.get("np_read") else None, "ecn_rp": ecn.get("rp") if ecn.get("rp_read") else None,
                        "reason": "; ".join(reasons) or None})
    return {"netdevs": netdevs, "reason": None if netdevs else roce_qos.get("reason")}


def physical_view(rdma):
    """The ``physical`` view of a host's ``ansible_facts.rdma``; None when no physical subset was gathered."""
    rdma = _mapping(rdma)
    view = {"temperature": temperatures(rdma["temperature"]) if "temperature" in rdma else None,
            "aer": aer(rdma["aer"]) if "aer" in rdma else None,
            "links": links(rdma["link_quality"]) if "link_quality" in rdma else None,
            "qos": qos(rdma["roce_qos"]) if _mapping(rdma.get("roce_qos")).get("netdevs") else None}
    return view if any(value is not None for value in view.values()) else None


def report_views(facts):
    """``{"physical", "consensus"}`` of one host's ``ansible_facts``: what the report keeps of them."""
    facts = _mapping(facts)
    return {"physical": physical_view(facts.get("rdma")), "consensus": consensus_facts(facts.get("rdma"), facts.get("rdma_driver"))}


def views_of(facts):
    """The views a host's facts carry (made where the report read them), or made now from full facts."""
    facts = _mapping(facts)
    kept = facts.get(VIEWS_KEY)
    return kept if isinstance(kept, Mapping) else report_views(facts)
