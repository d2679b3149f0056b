# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's RDMA health as Prometheus text format, for node_exporter's textfile collector.

Input is the host's ``ansible_facts`` (``rdma`` from ib_facts, every ``<role>_findings``, the
``node_health_status``, and on the controller that ran it the ``k8s_quarantine_status``); output is
the content of one ``.prom`` file. Every metric is ``rdma_node_*``
with ``# HELP`` and ``# TYPE`` lines, label values escaped as the exposition format says (backslash,
double quote, newline), samples sorted so that two runs on the same facts write the same text.
The file is written by ``rdma.node.evaluate``'s node writer (a temporary file renamed into place), so
the collector never reads half of it. A check that did not run for lack of data is exported too
(``rdma_node_check_skipped``), so a dashboard never reads a missing finding as a pass.
"""

from __future__ import annotations

import math
import time

from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES

PREFIX = "rdma_node_"
# The port states of the kernel, as the value of rdma_node_port_state (IBTA PortState).
PORT_STATES = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}
_UINT64_MAX = 2 ** 64 - 1


def escape(value):
    """A label value as the text format wants it."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _Family:
    def __init__(self, name, kind, help_text):
        self.name, self.kind, self.help = PREFIX + name, kind, help_text
        self.samples = {}

    def add(self, labels, value):
        if value is None:
            return
        key = tuple(sorted(labels.items()))
        self.samples[key] = value

    def lines(self):
        if not self.samples:
            return []
        out = ["# HELP %s %s" % (self.name, self.help), "# TYPE %s %s" % (self.name, self.kind)]
        for key in sorted(self.samples):
            labels = ",".join('%s="%s"' % (k, escape(v)) for k, v in key)
            out.append("%s%s %s" % (self.name, "{%s}" % labels if labels else "", _number(self.samples[key])))
        return out


def _port_labels(port):
    return {"device": port.get("device"), "port": str(port.get("port")), "link_layer": port.get("link_layer") or ""}


def _aer_families(rdma):
    aer = _Family("pcie_aer_errors_total", "counter", "PCIe AER errors an HCA function or a bridge above it counted since boot "
                  "(aer_dev_* TOTAL_ERR_* line), by kind: correctable, nonfatal, fatal.")
    for address, entry in sorted(((rdma.get("aer") or {}).get("functions") or {}).items()):
        for kind in ("correctable", "nonfatal", "fatal"):
            counts = entry.get(kind) if isinstance(entry, dict) else None
            if isinstance(counts, dict) and isinstance(counts.get("total"), int):
                aer.add({"address": address, "role": entry.get("role") or "", "device": entry.get("device") or "", "kind": kind},
                        counts["total"])
    return [aer]


def _path_families(rdma):
    redirect = _Family("pcie_acs_p2p_redirect", "gauge", "1 when a bridge between a GPU and its nearest HCA redirects or blocks "
                       "peer-to-peer traffic in its ACS control (ReqRedir, CmpltRedir or EgressCtrl), else 0.")
    ats = _Family("pcie_ats_enabled", "gauge", "1 when PCIe ATS is enabled on an HCA or GPU of a GPU-HCA path, else 0.")
    translated = _Family("iommu_translated", "gauge", "1 when the DMA of an HCA or GPU of a GPU-HCA path is translated by the "
                         "IOMMU (domain DMA or DMA-FQ), 0 in passthrough (identity) or without an IOMMU.")
    for address, entry in sorted(((rdma.get("pcie_path") or {}).get("functions") or {}).items()):
        if not isinstance(entry, dict):
            continue
        labels = {"address": address, "role": entry.get("role") or "", "device": entry.get("device") or ""}
        control = (entry.get("acs") or {}).get("control") or {}
        if entry.get("role") == "bridge" and control:
            redirect.add(labels, any(control.get(bit) for bit in ("p2p_request_redirect", "p2p_completion_redirect", "p2p_egress_control")))
        if entry.get("role") in ("hca", "gpu") and isinstance(entry.get("ats"), dict) and entry["ats"].get("enabled") is not None:
            ats.add(labels, entry["ats"]["enabled"])
        mode = (entry.get("iommu") or {}).get("mode")
        if entry.get("role") in ("hca", "gpu") and mode in ("translated", "passthrough", "off"):
            translated.add(labels, mode == "translated")
    return [redirect, ats, translated]


def _qos_families(rdma):
    pfc = _Family("roce_pfc_enabled", "gauge", "1 when PFC is on for the priority on the RoCE netdev, else 0 (from dcb or mlnx_qos).")
    ecn = _Family("roce_ecn_enabled", "gauge", "1 when ECN (DCQCN) is on for the priority at the notification (np) or reaction (rp) point.")
    trust = _Family("roce_trust_info", "gauge", "The trust mode of the RoCE netdev (dscp or pcp) as a label; always 1.")
    for netdev, entry in sorted(((rdma.get("roce_qos") or {}).get("netdevs") or {}).items()):
        enabled = (entry.get("pfc") or {}).get("enabled_priorities")
        if isinstance(enabled, list):
            for priority in range(8):
                pfc.add({"netdev": netdev, "priority": str(priority)}, priority in enabled)
        ecn_facts = entry.get("ecn") or {}
        for point in ("np", "rp"):
            for priority in ecn_facts.get(point + "_read") or []:
                ecn.add({"netdev": netdev, "point": point, "priority": str(priority)}, priority in (ecn_facts.get(point) or []))
        mode = (entry.get("trust") or {}).get("mode")
        if mode:
            trust.add({"netdev": netdev, "mode": mode}, 1)
    return [pfc, ecn, trust]


def _link_families(rdma):
    effective = _Family("link_effective_ber", "gauge", "Bit error rate after FEC of the port (mlxlink Effective Physical BER).")
    raw = _Family("link_raw_ber", "gauge", "Bit error rate before FEC of the port (mlxlink Raw Physical BER).")
    temperature = _Family("module_temperature_celsius", "gauge", "Temperature of the port's cable or transceiver module.")
    temperature_max = _Family("module_temperature_max_celsius", "gauge", "The module's own upper temperature threshold.")
    fault = _Family("module_lane_fault", "gauge", "1 when the module reports the fault (loss of signal, Tx fault, CDR loss of lock) on the lane.")
    for name, port in sorted(((rdma.get("link_quality") or {}).get("ports") or {}).items()):
        if not isinstance(port, dict) or port.get("reason"):
            continue
        labels = {"device": port.get("device"), "port": str(port.get("port"))}
        effective.add(labels, port.get("effective_ber"))
        raw.add(labels, port.get("raw_ber"))
        module = port.get("module") or {}
        reading = module.get("temperature_c") or {}
        if reading.get("values"):
            temperature.add(labels, max(reading["values"]))
            temperature_max.add(labels, reading.get("high"))
        for kind, lanes in sorted((module.get("lane_faults") or {}).items()):
            for lane, flag in enumerate(lanes):
                if flag is not None:
                    fault.add(dict(labels, fault=kind, lane=str(lane)), flag)
    return [effective, raw, temperature, temperature_max, fault]


def _down_families(rdma):
    longest = _Family("link_down_longest_seconds", "gauge", "The longest time the netdev's carrier stayed down in the kernel log window.")
    periods = _Family("link_down_periods", "gauge", "How many times the netdev's carrier went down in the kernel log window.")
    for netdev, entry in sorted((((rdma.get("kernel_log") or {}).get("down_periods")) or {}).items()):
        spells = entry.get("periods") if isinstance(entry, dict) else None
        if not isinstance(spells, list) or entry.get("clock") is None:
            continue
        labels = {"netdev": netdev, "port": entry.get("port") or ""}
        periods.add(labels, len(spells))
        longest.add(labels, max([p.get("seconds") or 0.0 for p in spells] or [0.0]))
    return [periods, longest]


def physical_families(rdma):
    """The metric families of the physical-layer facts (AER, PCIe path, RoCE QoS, link quality, link downtime)."""
    families = []
    for build in (_aer_families, _path_families, _qos_families, _link_families, _down_families):
        families.extend(build(rdma))
    return families


def _quarantine_families(status):
    """The quarantine's gauges, from the status of k8s_quarantine (on the controller that ran it)."""
    held = _Family("quarantined", "gauge", "1 for each node that rdma.node holds in quarantine (cordoned and/or tainted), by cluster and node.")
    tripped = _Family("quarantine_breaker_tripped", "gauge", "1 when the quarantine's circuit breaker held new nodes in the last run, else 0.")
    if isinstance(status, dict) and str(status.get("subject") or "").startswith("cluster/"):
        cluster = status["subject"][len("cluster/"):]
        for name in status.get("quarantined_nodes") or []:
            held.add({"cluster": cluster, "node": name}, 1)
        tripped.add({"cluster": cluster}, bool(status.get("breaker_tripped")))
    return (held, tripped)


def render(facts, now=None):
    """The text of the ``.prom`` file for one host's facts."""
    facts = facts or {}
    rdma = facts.get("rdma") or {}
    state = _Family("port_state", "gauge", "IBTA port state of the RDMA port (1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER).")
    active = _Family("port_active", "gauge", "1 when the RDMA port is ACTIVE, else 0.")
    rate = _Family("port_rate_gbps", "gauge", "Link rate of the RDMA port in Gb/s.")
    # promtool's lint wants a counter's name to end in _total and to not contain the word "counter":
    # hence rdma_node_port_total{counter=...} rather than rdma_node_port_counter, and the rate and
    # the saturation named after what they say.
    counter = _Family("port_total", "counter", "Port counters of ports/N/counters by name (data counters in bytes).")
    counter_rate = _Family("port_rise_per_hour", "gauge", "Rise per hour of an error counter between two samples.")
    saturated = _Family("port_saturated", "gauge", "1 when the counter sits at the maximum of its IBTA width and no longer counts.")
    findings = _Family("findings", "gauge", "Findings of the rdma.node checks on this host by role, check and severity.")
    last_run = _Family("last_run_timestamp_seconds", "gauge", "When rdma.node last checked this host (seconds since the epoch).")
    temperature = _Family("hca_temperature_celsius", "gauge", "Temperature of an HCA sensor (ASIC, cable module) from the mlx5 hwmon device.")
    temperature_crit = _Family("hca_temperature_critical_celsius", "gauge", "Critical threshold of that HCA sensor, the sensor's own.")
    skipped = _Family("check_skipped", "gauge",
                      "1 for a check that did not run because its facts were not gathered (missing names the fact subsets).")
    unjudged = _Family("check_not_judged", "gauge", "1 for what a check that ran could not judge for lack of data (subject names it).")
    for port in rdma.get("ports") or []:
        labels = _port_labels(port)
        state.add(labels, PORT_STATES.get(port.get("state"), 0))
        active.add(labels, port.get("state") == "ACTIVE")
        rate.add(labels, port.get("rate_gbps"))
        for name, value in sorted((port.get("counters") or {}).items()):
            # A counter is unsigned and 64 bits wide; anything else (a hostile node, a tampered fact
            # cache) would be a sample Prometheus takes as a reset or a wrap.
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _UINT64_MAX:
                counter.add(dict(labels, counter=name), value)
        for name in port.get("counters_saturated") or []:
            saturated.add(dict(labels, counter=name), 1)
    status = facts.get("node_health_status") or {}
    layers = {"%s/%s" % (p.get("device"), p.get("port")): p.get("link_layer") or "" for p in rdma.get("ports") or []}
    for name, rates in sorted((status.get("counter_rates_per_hour") or {}).items()):
        device, _sep, number = name.rpartition("/")
        for counter_name, value in sorted(rates.items()):
            counter_rate.add({"device": device, "port": number, "link_layer": layers.get(name, ""), "counter": counter_name}, value)
    counts = {}
    for key, value in facts.items():
        if key.endswith("_findings") and isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and item.get("severity") in SEVERITIES:
                    slot = (item.get("role") or key[:-len("_findings")], item.get("check") or "?", item["severity"])
                    counts[slot] = counts.get(slot, 0) + 1
    for (role, check, severity), number in counts.items():
        findings.add({"role": role, "check": check, "severity": severity}, number)
    for name, reading in sorted((rdma.get("temperature") or {}).items()):
        for sensor in (reading or {}).get("sensors") or []:
            labels = {"device": name, "sensor": sensor.get("label") or ""}
            temperature.add(labels, sensor.get("input_celsius"))
            temperature_crit.add(labels, sensor.get("crit_celsius") or None)
    for key, value in facts.items():
        if key.endswith("_status") and isinstance(value, dict):
            role = key[:-len("_status")]
            for entry in value.get("skipped_checks") or []:
                if isinstance(entry, dict):
                    skipped.add({"role": role, "check": entry.get("check") or "?", "missing": ",".join(entry.get("missing") or [])}, 1)
            for entry in value.get("not_checked") or []:
                if isinstance(entry, dict):
                    unjudged.add({"role": role, "check": entry.get("check") or "?", "subject": entry.get("subject") or ""}, 1)
    quarantine = _quarantine_families(facts.get("k8s_quarantine_status"))
    last_run.add({}, float(now if now is not None else time.time()))
    lines = []
    for family in (state, active, rate, counter, counter_rate, saturated, temperature, temperature_crit, *physical_families(rdma),
                   findings, skipped, unjudged, *quarantine, last_run):
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
