# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's RDMA health as Prometheus text format, for node_exporter's textfile collector.

Input is the host's ``ansible_facts`` (``rdma`` from ib_facts, every ``<role>_findings``, the
``node_health_status``, the ``bandwidth_check_status`` and ``pod_proof_node``, the host's part of
the pod proof that the pod_proof role keeps in its facts, and on the controller that ran it the
``k8s_quarantine_status``); output is the content of one ``.prom`` file. Every metric is ``rdma_node_*``
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


def _bytes(value):
    """A limit as ``/proc`` prints it (``unlimited`` or bytes) as a sample value: +Inf for unlimited, None when unreadable."""
    text = str(value if value is not None else "").strip()
    if text == "unlimited":
        return float("inf")
    return int(text) if text.isdigit() else None


def bandwidth_families(status):
    """The measured and expected Gb/s of every bandwidth_check test of the host, labelled with the memory it used."""
    measured = _Family("bandwidth_gbps", "gauge", "Bandwidth a bandwidth_check test (ib_write_bw loopback or pair) measured, in Gb/s, "
                       "by the memory it used (host, cuda, dmabuf).")
    expected = _Family("bandwidth_expected_gbps", "gauge", "Bandwidth that bandwidth_check test must reach: the link rate x the "
                       "efficiency of its memory (0.95 host, 0.90 GPU by default), in Gb/s.")
    status = status if isinstance(status, dict) else {}
    for test, kind in [(t, "loopback") for t in status.get("loopback") or []] + [(t, "pair") for t in status.get("pairs") or []]:
        if not isinstance(test, dict):
            continue
        labels = {"test": kind, "port": test.get("port") or "", "peer": ("%s:%s" % (test.get("peer"), test.get("peer_port"))) if kind == "pair" else "",
                  "memory": test.get("memory") or "host"}
        measured.add(labels, test.get("measured_gbps"))
        expected.add(labels, test.get("expected_gbps"))
    return [measured, expected]


def pod_proof_families(view):
    """The host's part of the pod proof (``pod_proof_node``, kept by the pod_proof role): its pods' memlock,
    each of its pod pairs' Gb/s by memory, and the NCCL transport of its groups."""
    memlock = _Family("pod_memlock_bytes", "gauge", "RLIMIT_MEMLOCK of a pod of the pod proof on this node (what the pod's /proc/self/limits "
                      "said; +Inf for unlimited), by side and limit (soft, hard).")
    ipc_lock = _Family("pod_ipc_lock", "gauge", "1 when CAP_IPC_LOCK was effective in that pod, else 0.")
    capped = _Family("pod_memlock_capped", "gauge", "1 when a pod of the pod proof on this node ran with a capped memlock and no "
                     "CAP_IPC_LOCK (the pod_memlock_capped finding), else 0.")
    measured = _Family("pod_bandwidth_gbps", "gauge", "Bandwidth an ib_write_bw test between pods measured, in Gb/s, by this node's "
                       "role in the pair, its peer, and the memory of this node's pod (host, cuda, dmabuf).")
    expected = _Family("pod_bandwidth_expected_gbps", "gauge", "Bandwidth that pod pair must reach: the link rate x the efficiency of its "
                       "memory, in Gb/s.")
    channels = _Family("nccl_channels", "gauge", "Channel lines of the NCCL log of a group of this node, by transport (net_ib, net_socket, "
                       "p2p, shm, ...).")
    gdrdma = _Family("nccl_gdrdma_channels", "gauge", "Channels of that NCCL log over IB with GPUDirect RDMA (/GDRDMA).")
    fallback = _Family("nccl_socket_fallback", "gauge", "1 when NCCL in that group's log carried inter-node traffic over sockets "
                       "(NET/Socket, Using network Socket), else 0.")
    busbw = _Family("nccl_busbw_gigabytes_per_second", "gauge", "nccl-tests' bus bandwidth at its largest size in that group's output, in GB/s.")
    view = view if isinstance(view, dict) else {}
    for pod in view.get("pods") or []:
        if not isinstance(pod, dict):
            continue
        side = pod.get("side") or ""
        limits = pod.get("memlock") if isinstance(pod.get("memlock"), dict) else {}
        for limit in ("soft", "hard"):
            memlock.add({"side": side, "limit": limit}, _bytes(limits.get(limit)))
        if pod.get("ipc_lock") is not None:
            ipc_lock.add({"side": side}, bool(pod["ipc_lock"]))
    if view.get("pods"):
        capped.add({}, bool(view.get("memlock_capped")))
    for pair in view.get("pairs") or []:
        if not isinstance(pair, dict):
            continue
        labels = {"role": pair.get("role") or "", "port": pair.get("port") or "", "peer": "%s:%s" % (pair.get("peer"), pair.get("peer_port")),
                  "memory": pair.get("memory_mode") or "host"}
        measured.add(labels, pair.get("measured_gbps"))
        expected.add(labels, pair.get("expected_gbps"))
    for nccl in view.get("nccl") or []:
        if not isinstance(nccl, dict):
            continue
        group = {"group": nccl.get("group") or ""}
        transports = nccl.get("transports") if isinstance(nccl.get("transports"), dict) else None
        if transports is None and nccl.get("network") is None:
            continue  # nothing of NCCL's transport was read: not a zero
        for kind, count in sorted((transports or {}).items()):
            channels.add(dict(group, transport=kind), count)
        gdrdma.add(group, nccl.get("gdrdma_channels"))
        fallback.add(group, bool((transports or {}).get("net_socket")) or nccl.get("network") == "Socket")
        busbw.add(group, nccl.get("busbw_at_largest"))
    return [memlock, ipc_lock, capped, measured, expected, channels, gdrdma, fallback, busbw]


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


def _stamp(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def proof_view(facts, groups=None):
    """``(view, time)``: what the metrics show of the pod proof on this host. The node's part of a pod proof
    (``pod_proof_node``: its pods, its pod pairs, its groups' NCCL) and, for each of the host's ``groups``
    (its ``group_names``), the group's NCCL verdict the main job keeps on every node (``pod_proof_nccl_groups``)
    where that is newer than the part's. ``time`` is the oldest judgement shown: the part's, where its pods or
    pairs are shown, and each group's NCCL verdict's."""
    part = facts.get("pod_proof_node") if isinstance(facts.get("pod_proof_node"), dict) else {}
    kept = facts.get("pod_proof_nccl_groups") if isinstance(facts.get("pod_proof_nccl_groups"), dict) else {}
    part_time = _stamp(part.get("time"))
    nccl, times = {}, {}
    for entry in part.get("nccl") or []:
        if isinstance(entry, dict):
            nccl[str(entry.get("group") or "")] = entry
            times[str(entry.get("group") or "")] = part_time
    for group in groups or []:
        entry = kept.get(group) if isinstance(group, str) else None
        if not isinstance(entry, dict):
            continue
        newer = _stamp(entry.get("time"))
        if group not in nccl or (newer is not None and (times[group] is None or newer > times[group])):
            nccl[group], times[group] = entry, newer
    view = dict(part, nccl=[nccl[group] for group in sorted(nccl)])
    shown = list(times.values()) + ([part_time] if part.get("pods") or part.get("pairs") else [])
    known = [t for t in shown if t is not None]
    return view, (min(known) if known and len(known) == len(shown) else None)


def render(facts, now=None, groups=None):
    """The text of the ``.prom`` file for one host's facts; ``groups`` are its inventory groups (``group_names``),
    whose NCCL verdicts the main job kept on every node (``proof_view``)."""
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
    proof, judged = proof_view(facts, groups)
    proof_time = _Family("pod_proof_timestamp_seconds", "gauge", "When the oldest of the pod_* and nccl_* samples of this node was judged "
                         "(seconds since the epoch): its pods and pod pairs by the pod proof, each group's NCCL log by the pod proof or "
                         "the main job.")
    proof_time.add({}, judged)
    lines = []
    for family in (state, active, rate, counter, counter_rate, saturated, temperature, temperature_crit, *physical_families(rdma),
                   *bandwidth_families(facts.get("bandwidth_check_status")), *pod_proof_families(proof), proof_time,
                   findings, skipped, unjudged, *quarantine, last_run):
        lines.extend(family.lines())
    return "\n".join(lines) + "\n"
