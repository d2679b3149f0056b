# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's RDMA health as Prometheus text format, for node_exporter's textfile collector.

Input is the host's ``ansible_facts`` (``rdma`` from ib_facts, every ``<role>_findings``, the
``node_health_status``, and on the controller that ran it the ``k8s_quarantine_status``); output is
the content of one ``.prom`` file. Every metric is ``rdma_node_*``
with ``# HELP`` and ``# TYPE`` lines, label values escaped as the exposition format says (backslash,
double quote, newline), samples sorted so that two runs on the same facts write the same text.
The file is written by ``ansible.builtin.copy`` (a temporary file renamed into place), so the
collector never reads half of it.
"""

from __future__ import annotations

import math
import time

from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES

PREFIX = "rdma_node_"
# The port states of the kernel, as the value of rdma_node_port_state (IBTA PortState).
PORT_STATES = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}


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
    for port in rdma.get("ports") or []:
        labels = _port_labels(port)
        state.add(labels, PORT_STATES.get(port.get("state"), 0))
        active.add(labels, port.get("state") == "ACTIVE")
        rate.add(labels, port.get("rate_gbps"))
        for name, value in sorted((port.get("counters") or {}).items()):
            if isinstance(value, int) and not isinstance(value, bool):
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
    quarantine = _quarantine_families(facts.get("k8s_quarantine_status"))
    last_run.add({}, float(now if now is not None else time.time()))
    lines = []
    for family in (state, active, rate, counter, counter_rate, saturated, findings) + quarantine + (last_run,):
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
