# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``node_health`` role below the port counters: the PCIe link's error reporting, the
PCIe path between GPU and HCA, RoCE QoS, the link's bit errors and optics, and how long links stay
down.

Each check reads one fact (``rdma.aer``, ``rdma.pcie_path``, ``rdma.roce_qos``,
``rdma.link_quality``, ``rdma.kernel_log``) that a reader in ``plugins/module_utils`` fills
(``_pcie_aer``, ``_pcie_path``, ``_roce_qos``, ``_link_quality``, ``_health_collect``). What the
fact could not give (no AER in the kernel, a config space read without root, no ``mlxlink``) is
reported as *not checked* with the reason, never as healthy.

Parameters, without the ``node_health_`` prefix (documented in ``roles/node_health``):
``aer_correctable_limit``, ``previous_aer_sample``, ``acs_redirect_severity``, ``ats_expected``,
``ats_severity``, ``iommu_expected``, ``iommu_severity``, ``roce_pfc_priorities``, ``roce_trust``,
``roce_ecn_priorities``, ``effective_ber_max``, ``raw_ber_max``, ``flap_down_seconds``,
``flap_count``, ``flap_window_hours``, ``drop_down_seconds``.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.module_utils._link_quality import link_is_up
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import function_totals
from ansible_collections.rdma.node.plugins.plugin_utils._rate_limits import judge_rise, parse_rate_limit
from ansible_collections.rdma.node.plugins.plugin_utils._registry import check, parameter

ROLE = "node_health"
DEFAULT_AER_CORRECTABLE_LIMIT = "60/h"
ACS_WORDS = {"p2p_request_redirect": "P2P Request Redirect (ReqRedir+)",
             "p2p_completion_redirect": "P2P Completion Redirect (CmpltRedir+)",
             "p2p_egress_control": "P2P Egress Control (EgressCtrl+)"}
PORT_TYPE_WORDS = {"root_port": "root port", "downstream_port": "switch downstream port", "upstream_port": "switch upstream port"}
# Relations of _sysfs_health.locality where a GPU and its HCA share a bridge below the root complex:
# only there can peer-to-peer traffic turn without going up, so only there does ACS change the route.
SHARED_BRIDGE_RELATIONS = ("same_pcie_switch", "same_root_port")
DEFAULT_EFFECTIVE_BER_MAX = 1e-12
DEFAULT_RAW_BER_MAX = 1e-5
LANE_FAULT_WORDS = {"rx_loss_of_signal": "Rx loss of signal", "tx_loss_of_signal": "Tx loss of signal", "tx_fault": "Tx fault",
                    "rx_cdr_loss_of_lock": "Rx CDR loss of lock", "tx_cdr_loss_of_lock": "Tx CDR loss of lock",
                    "tx_adaptive_eq_fault": "Tx adaptive equalization fault"}
READING_WORDS = {"temperature_c": ("temperature", "°C"), "voltage_mv": ("supply voltage", "mV"),
                 "bias_current_ma": ("laser bias current", "mA"), "rx_power_dbm": ("receive power", "dBm"),
                 "tx_power_dbm": ("transmit power", "dBm")}


def fact(facts, path):
    """The fact at a dotted path (``rdma.aer``) of the top-level facts the registry hands a check."""
    node = facts
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def not_checked(found, subject, reason):
    """Record that ``subject`` could not be judged and why: never a pass."""
    return found.not_checked(subject, reason)


@parameter(ROLE, "previous_aer_sample")
def previous_aer_sample(options, facts):
    """The previous run's AER totals, kept in the fact cache as node_health_status.aer_sample."""
    return (facts.get("node_health_status") or {}).get("aer_sample")


def _severity(params, name, default):
    return params.get(name) or default


# ------------------------------------------------------------------------------------ AER


def _earlier_aer(aer, previous):
    earlier = aer.get("earlier")
    if isinstance(earlier, dict) and isinstance(earlier.get("functions"), dict) and earlier.get("time") is not None:
        return earlier, "this run"
    if isinstance(previous, dict) and isinstance(previous.get("functions"), dict) and previous.get("time") is not None \
            and aer.get("time") is not None and previous["time"] < aer["time"]:
        return previous, "the previous run"
    return None, None


def _function_words(address, entry):
    if entry.get("role") == "hca":
        return "%s (PCI %s)" % (entry.get("device"), address)
    kind = "root port" if entry.get("root_port") else "bridge"
    below = ", ".join(entry.get("devices_below") or []) or "an HCA"
    return "the %s %s above %s" % (kind, address, below)


def _types_with_counts(entry, kind):
    counts = entry.get(kind) or {}
    names = [name for name, value in sorted(counts.items()) if name != "total" and isinstance(value, int) and value > 0]
    return ", ".join(names) if names else "no type named"


@check(ROLE, "pcie_aer", reads=("rdma.aer",), params=("aer_correctable_limit", "previous_aer_sample"))
def pcie_aer(facts, params, found):
    """A PCIe function of an HCA, or a bridge above it, reported new fatal or non-fatal errors (any rise), or correctable ones faster than the limit."""
    aer = fact(facts, "rdma.aer") or {}
    if not aer.get("available"):
        not_checked(found, "PCIe AER", aer.get("reason") or "the AER facts were not gathered")
        return
    limit = parse_rate_limit(params.get("aer_correctable_limit") or DEFAULT_AER_CORRECTABLE_LIMIT,
                             "node_health_aer_correctable_limit", default_severity="warning")
    earlier, source = _earlier_aer(aer, params.get("previous_aer_sample"))
    seconds = float(aer["time"]) - float(earlier["time"]) if earlier else None
    for address, entry in sorted((aer.get("functions") or {}).items()):
        for kind, reason in sorted((entry.get("unreadable") or {}).items()):
            not_checked(found, address, "%s AER counters of %s: %s" % (kind, _function_words(address, entry), reason))
        totals = function_totals(entry)
        before = ((earlier or {}).get("functions") or {}).get(address) or {}
        who = _function_words(address, entry)
        for kind in ("fatal", "nonfatal"):
            now = totals.get(kind)
            if now is None:
                continue
            if earlier and isinstance(before.get(kind), int):
                if now > before[kind]:
                    found.critical(address, "%s counted %d new %s PCIe error%s (%d to %d between the samples of %s; types with "
                                   "counts: %s): an uncorrectable error on the link, after which the HCA may have reset or lost "
                                   "transactions; check the card, slot and riser, and the link partner (errors are counted where "
                                   "they are seen)." % (who, now - before[kind], kind, "" if now - before[kind] == 1 else "s",
                                                        before[kind], now, source, _types_with_counts(entry, kind)),
                                   "no new %s errors" % kind, {"before": before[kind], "after": now})
            elif now > 0:
                found.warning(address, "%s has counted %d %s PCIe error%s since the kernel booted (types with counts: %s); "
                              "there is no earlier sample to tell whether they are recent." % (
                                  who, now, kind, "" if now == 1 else "s", _types_with_counts(entry, kind)),
                              "0 %s errors" % kind, now)
        correctable = totals.get("correctable")
        if earlier and correctable is not None and isinstance(before.get("correctable"), int):
            breach = judge_rise(before["correctable"], correctable, seconds, limit)
            if breach:
                found.add(breach["severity"], address, "%s counted correctable PCIe errors at %s (%d to %d between the samples of %s), "
                          "above the limit of %s: the link retries TLPs and loses bandwidth, and a link that degrades "
                          "this way often ends in an uncorrectable error." % (
                              who, breach["text"], before["correctable"], correctable, source, limit.text),
                          "<= %s" % limit.text, breach["text"])


# ------------------------------------------------------------------------------------ PCIe path


def _bridge_words(address, entry):
    return "%s %s" % (PORT_TYPE_WORDS.get(entry.get("port_type"), "bridge"), address)


@check(ROLE, "pcie_p2p_redirect", reads=("rdma.pcie_path",), params=("acs_redirect_severity",))
def pcie_p2p_redirect(facts, params, found):
    """A bridge between a GPU and its nearest HCA redirects or blocks peer-to-peer traffic (ACS), so GPUDirect RDMA goes through the root complex."""
    path_facts = fact(facts, "rdma.pcie_path") or {}
    if not path_facts.get("paths"):
        if path_facts.get("applicable"):  # a node without GPUs or HCAs has no path to judge
            not_checked(found, "GPU-HCA path", path_facts.get("reason") or "no GPU-HCA path was read")
        return
    severity = _severity(params, "acs_redirect_severity", "warning")
    functions = path_facts.get("functions") or {}
    for path in path_facts["paths"]:
        subject = "%s-%s" % (path["gpu"], path["hca"])
        if path.get("relation") not in SHARED_BRIDGE_RELATIONS:
            continue
        blocking, unread = [], []
        for address in path.get("bridges") or []:
            entry = functions.get(address) or {}
            if entry.get("unreadable"):
                unread.append("%s (%s)" % (address, entry["unreadable"]))
                continue
            control = ((entry.get("acs") or {}).get("control")) or {}
            set_bits = [ACS_WORDS[bit] for bit in ACS_WORDS if control.get(bit)]
            if set_bits:
                blocking.append((address, entry, set_bits))
        for address, entry, set_bits in blocking:
            found.add(severity, subject, "Peer-to-peer traffic between GPU %s and %s (%s) cannot turn at bridge %s: the %s has %s set "
                      "in its ACS control, so GPUDirect RDMA between them goes up to the root complex and back (through the "
                      "IOMMU) instead of across the PCIe switch, which costs bandwidth and latency and can hang NCCL. On bare "
                      "metal turn ACS off in the BIOS or with setpci; under a hypervisor it must stay on (then use ATS)." % (
                          path["gpu"], path["hca"], path["hca_address"], path.get("shared_bridge") or "their shared bridge",
                          _bridge_words(address, entry), " and ".join(set_bits)), "ACS P2P redirect off", set_bits)
        if unread and not blocking:
            not_checked(found, subject, "the ACS settings of %s could not be read: %s" % (
                "bridge " + unread[0] if len(unread) == 1 else "%d bridges" % len(unread), "; ".join(unread)))


def _path_endpoints(facts):
    """``(address, entry, "HCA mlx5_0"/"GPU 0000:3e:00.0")`` of the HCAs and GPUs on GPU-HCA paths."""
    path_facts = fact(facts, "rdma.pcie_path") or {}
    if not path_facts.get("paths"):
        return []
    return [(address, entry, "%s %s" % ("HCA" if entry["role"] == "hca" else "GPU", entry.get("device") or address))
            for address, entry in sorted((path_facts.get("functions") or {}).items()) if entry.get("role") in ("hca", "gpu")]


@check(ROLE, "pcie_ats", reads=("rdma.pcie_path",), params=("ats_expected", "ats_severity"))
def pcie_ats(facts, params, found):
    """An HCA or GPU on a GPU-HCA path has PCIe ATS on where the node should run without it (bare metal), or off where it needs it (VM passthrough)."""
    expected = params.get("ats_expected") or "disabled"
    if expected == "any":
        return
    severity = _severity(params, "ats_severity", "warning")
    for address, entry, who in _path_endpoints(facts):
        if entry.get("unreadable"):
            not_checked(found, address, "ATS of %s: %s" % (who, entry["unreadable"]))
            continue
        ats = entry.get("ats")
        if ats is None:
            if expected == "enabled":
                found.add(severity, address, "%s (PCI %s) has no ATS capability, which GPUDirect RDMA through a passed-through "
                          "device with ACS on needs." % (who, address), "ATS enabled", "no ATS capability")
            continue
        if ats.get("enabled") and expected == "disabled":
            found.add(severity, address, "%s (PCI %s) has PCIe ATS enabled. On bare metal NVIDIA's network configuration keeps ATS "
                      "off for GPUDirect RDMA (mlxconfig ATS_ENABLED=False is the NIC default): ATS costs PCIe performance, which is "
                      "why the mlx5 driver asks for it only where peer-to-peer needs it; set node_health_ats_expected to "
                      "enabled on VMs that rely on it." % (who, address), "ATS disabled", "ATS enabled")
        elif ats.get("enabled") is False and expected == "enabled":
            found.add(severity, address, "%s (PCI %s) has PCIe ATS disabled, but this node is expected to use it (GPUDirect RDMA "
                      "in a VM needs ATS on the NIC and ACS letting translated requests pass): mlxconfig set ATS_ENABLED=true "
                      "and a host reboot." % (who, address), "ATS enabled", "ATS disabled")


@check(ROLE, "iommu_mode", reads=("rdma.pcie_path",), params=("iommu_expected", "iommu_severity"))
def iommu_mode(facts, params, found):
    """The DMA of an HCA or GPU on a GPU-HCA path is translated by the IOMMU where passthrough is expected (or the other way round)."""
    expected = params.get("iommu_expected") or "passthrough"
    if expected == "any":
        return
    severity = _severity(params, "iommu_severity", "warning")
    for address, entry, who in _path_endpoints(facts):
        iommu = entry.get("iommu") or {}
        mode = iommu.get("mode")
        if mode in (None, "unknown"):
            not_checked(found, address, "IOMMU mode of %s: %s" % (who, iommu.get("reason") or "not read"))
            continue
        effective = "passthrough" if mode in ("passthrough", "off") else mode
        if expected == "passthrough" and effective != "passthrough":
            found.add(severity, address, "The DMA of %s (PCI %s) is %s by the IOMMU (domain type %s, group %s): every GPUDirect RDMA "
                      "transfer needs an IOMMU translation, and peer-to-peer through the PCIe switch needs ATS; bare-metal GPU "
                      "nodes run the IOMMU in passthrough (iommu=pt, domain type identity)." % (
                          who, address, effective, iommu.get("type"), iommu.get("group")), "passthrough", effective)
        elif expected == "translated" and effective != "translated":
            why = iommu.get("reason") or "domain type %s" % iommu.get("type")
            found.add(severity, address, "The DMA of %s (PCI %s) is not translated by an IOMMU (%s), but this node is expected to "
                      "isolate devices (node_health_iommu_expected: translated)." % (who, address, why), "translated", effective)


# ------------------------------------------------------------------------------------ RoCE QoS


def _priorities_text(values):
    return ", ".join(str(v) for v in values) if values else "none"


@check(ROLE, "roce_qos", reads=("rdma.roce_qos",), params=("roce_pfc_priorities", "roce_trust", "roce_ecn_priorities"))
def roce_qos(facts, params, found):
    """A RoCE netdev's PFC priorities, trust mode or ECN priorities differ from the group's expectation (lossless RoCE needs all three)."""
    qos = fact(facts, "rdma.roce_qos") or {}
    if not qos.get("netdevs"):
        return  # no RoCE port: nothing to judge (an InfiniBand node)
    want_pfc = params.get("roce_pfc_priorities")
    want_trust = params.get("roce_trust")
    want_ecn = params.get("roce_ecn_priorities")
    for netdev, entry in sorted(qos["netdevs"].items()):
        pfc, trust, ecn = entry.get("pfc") or {}, entry.get("trust") or {}, entry.get("ecn") or {}
        who = "%s (a slave of %s)" % (netdev, entry["bond"]) if entry.get("bond") else netdev
        if want_pfc:
            have = pfc.get("enabled_priorities")
            if have is None:
                not_checked(found, netdev, "PFC of %s: %s" % (netdev, pfc.get("reason") or "no output"))
            elif sorted(have) != sorted(want_pfc):
                missing = sorted(set(want_pfc) - set(have))
                found.add("critical" if missing else "warning", netdev,
                          "%s has PFC on priorities %s (from %s), the group expects %s: %s" % (
                              who, _priorities_text(sorted(have)), pfc.get("source"), _priorities_text(sorted(want_pfc)),
                              "RoCE traffic on priority %s is dropped instead of paused under congestion" % _priorities_text(missing)
                              if missing else "extra lossless priorities can spread pause frames to other traffic"),
                          sorted(want_pfc), sorted(have))
        if want_trust:
            mode = trust.get("mode")
            if mode is None:
                not_checked(found, netdev, "trust mode of %s: %s" % (netdev, trust.get("reason") or "no output"))
            elif mode != want_trust:
                found.critical(netdev, "%s trusts %s%s (from %s), the group expects %s: packets are classified to the wrong "
                               "priority, so PFC and ECN on the RoCE priority do not protect them." % (
                                   who, mode, " (inferred from its DSCP map)" if trust.get("inferred") else "",
                                   trust.get("source"), want_trust), want_trust, mode)
        if want_ecn:
            if ecn.get("reason") and not (ecn.get("np_read") or ecn.get("rp_read")):
                not_checked(found, netdev, "ECN of %s: %s" % (netdev, ecn["reason"]))
                continue
            for point, words in (("np", "notification point (sends CNPs)"), ("rp", "reaction point (slows down on CNPs)")):
                missing = sorted(p for p in want_ecn if p in (ecn.get(point + "_read") or []) and p not in (ecn.get(point) or []))
                unread = sorted(p for p in want_ecn if p not in (ecn.get(point + "_read") or []))
                if missing:
                    found.warning(netdev, "%s has ECN off on priority %s for the DCQCN %s: congestion is left to PFC alone, "
                                  "which spreads pauses through the fabric." % (who, _priorities_text(missing), words),
                                  "ECN on %s" % _priorities_text(sorted(want_ecn)), "off on %s" % _priorities_text(missing))
                if unread:
                    not_checked(found, netdev, "ECN %s of %s on priority %s: no roce_%s/enable file" % (
                        point, netdev, _priorities_text(unread), point))


# ------------------------------------------------------------------------------------ link quality


@check(ROLE, "link_ber", reads=("rdma.link_quality",), params=("effective_ber_max", "raw_ber_max"))
def link_ber(facts, params, found):
    """A port's bit error rate after FEC (effective) or before it (raw) is above its limit (mlxlink)."""
    quality = fact(facts, "rdma.link_quality") or {}
    if not quality.get("ports"):
        not_checked(found, "link quality", quality.get("reason") or "the mlxlink facts were not gathered")
        return
    effective_max = params.get("effective_ber_max") or DEFAULT_EFFECTIVE_BER_MAX
    raw_max = params.get("raw_ber_max") or DEFAULT_RAW_BER_MAX
    for name, port in sorted(quality["ports"].items()):
        if port.get("reason"):
            not_checked(found, name, port["reason"])
            continue
        effective, raw = port.get("effective_ber"), port.get("raw_ber")
        if effective is None and raw is None:
            state = port.get("physical_state")
            if state and not link_is_up(port):
                not_checked(found, name, "no link to measure: mlxlink shows %s in the physical state %s (%s)" % (
                    name, state, port.get("source") or "mlxlink"))
            else:
                not_checked(found, name, "%s printed no BER (the link is down, or --show_counters was not given)" % (
                    port.get("source") or "mlxlink"))
            continue
        if effective is not None and effective > effective_max:
            found.critical(name, "%s: effective BER %.1e after FEC is above %.0e: errors get past forward error correction and "
                           "packets are lost (%s effective errors); replace the cable or transceiver%s." % (
                               name, effective, effective_max, port.get("effective_errors"), _advice(port)),
                           "<= %g" % effective_max, effective)
        if raw is not None and raw > raw_max:
            found.warning(name, "%s: raw BER %.1e before FEC is above %.0e: FEC still corrects it, but the link runs close to "
                          "its margin (per-lane raw errors %s)%s." % (name, raw, raw_max, port.get("raw_errors_per_lane"), _advice(port)),
                          "<= %g" % raw_max, raw)


def _advice(port):
    advice = port.get("recommendation")
    return "; mlxlink recommends: %s" % advice.rstrip(".") if advice and "no issue" not in advice.lower() else ""


@check(ROLE, "link_module", reads=("rdma.link_quality",))
def link_module(facts, params, found):
    """A port's cable or transceiver reports a lane fault (loss of signal, Tx fault, CDR loss of lock) or a reading outside its own thresholds."""
    quality = fact(facts, "rdma.link_quality") or {}
    for name, port in sorted((quality.get("ports") or {}).items()):
        module = port.get("module")
        if port.get("reason") or not module:
            continue  # link_ber already says why the port was not checked
        what = " ".join(w for w in (module.get("vendor"), module.get("part_number")) if w) or "the module"
        for fault, lanes in sorted((module.get("lane_faults") or {}).items()):
            bad = [str(lane) for lane, flag in enumerate(lanes) if flag]
            if bad:
                found.critical(name, "%s: %s (%s) reports %s on lane%s %s: that lane carries no good signal; reseat or replace "
                               "the cable or transceiver, or check the far end." % (
                                   name, what, module.get("identifier") or "module", LANE_FAULT_WORDS.get(fault, fault),
                                   "s" if len(bad) > 1 else "", ", ".join(bad)), "no %s" % fault, {fault: lanes})
        for key, (words, unit) in READING_WORDS.items():
            reading = module.get(key)
            if not reading or reading.get("low") is None or reading.get("high") is None:
                continue
            outside = [v for v in reading["values"] if v < reading["low"] or v > reading["high"]]
            if not outside:
                continue
            hot = key == "temperature_c" and max(outside) > reading["high"]
            found.add("critical" if hot else "warning", name, "%s: %s (%s) %s %s %s is outside the module's own range %g..%g %s%s." % (
                name, what, module.get("identifier") or "module", words, ", ".join("%g" % v for v in outside), unit,
                reading["low"], reading["high"], unit,
                ": an overheating module shuts its lasers down" if hot else ""),
                [reading["low"], reading["high"]], outside)


# ------------------------------------------------------------------------------------ flaps by duration


@check(ROLE, "link_down_duration", reads=("rdma.kernel_log",),
       params=("flap_down_seconds", "flap_count", "flap_window_hours", "drop_down_seconds"))
def link_down_duration(facts, params, found):
    """How long links stayed down in the kernel log (gpud's rule): down 25 s or more and back, 3 times in 12 h, is flapping; 4 min or more is a drop."""
    log = fact(facts, "rdma.kernel_log") or {}
    periods = log.get("down_periods")
    if periods is None:
        not_checked(found, "kernel log", log.get("error") or "the kernel log's carrier changes were not gathered")
        return
    unread = log.get("unread_lines")
    if isinstance(unread, int) and not isinstance(unread, bool) and unread > 0 and log.get("records") == 0:
        # A saved log in a form the reader does not know gives no carrier change: that is not a quiet link.
        not_checked(found, "kernel log", "none of the %d lines of %s is a kernel log record in a form the reader knows "
                    "(dmesg, /dev/kmsg, journalctl, syslog), so its carrier changes were not read" % (
                        unread, "the saved kernel log" if log.get("source") != "journalctl" else "journalctl's output"))
        return
    flap_seconds = params.get("flap_down_seconds") or 25
    flap_count = params.get("flap_count") or 3
    window = (params.get("flap_window_hours") or 12) * 3600.0
    drop_seconds = params.get("drop_down_seconds") or 240
    for netdev, entry in sorted(periods.items()):
        subject = entry.get("port") or netdev
        if entry.get("reason"):
            not_checked(found, subject, "durations of %s's carrier losses: %s" % (netdev, entry["reason"]))
            continue
        spells = entry.get("periods") or []
        if not spells:
            continue
        end = max(p["up_at"] for p in spells)
        flaps = [p for p in spells if not p["ongoing"] and p["seconds"] >= flap_seconds and p["up_at"] >= end - window]
        if len(flaps) >= flap_count:
            found.critical(subject, "%s (%s) is flapping: it went down for %d s or longer and came back %d times within %g h "
                           "(%s), gpud's rule for a flapping port." % (
                               subject, netdev, flap_seconds, len(flaps), window / 3600.0,
                               ", ".join("%s for %s" % (p["down_time"] or "line %s" % p["down_line"], _duration(p["seconds"])) for p in flaps[-5:])),
                           "fewer than %d flaps in %g h" % (flap_count, window / 3600.0), len(flaps))
        for spell in spells:
            if spell["seconds"] < drop_seconds:
                if spell["ongoing"] and spell.get("note"):
                    # Counted short of the log's end (its last record has a wall-clock time only): "not a drop" is not known.
                    not_checked(found, subject, "how long %s has been down since line %s: %s" % (netdev, spell["down_line"], spell["note"]))
                continue
            if spell["ongoing"]:
                since = spell["down_time"] or "line %s" % spell["down_line"]
                found.critical(subject, "%s (%s) has been down since %s, %s by the end of the log: a dropped link (down %d s or "
                               "longer), not a flap." % (subject, netdev, since, _duration(spell["seconds"]), drop_seconds),
                               "up", "down for %s" % _duration(spell["seconds"]))
            else:
                found.warning(subject, "%s (%s) was down for %s from %s before it came back: a drop of %d s or longer." % (
                    subject, netdev, _duration(spell["seconds"]), spell["down_time"] or "line %s" % spell["down_line"], drop_seconds),
                    "down less than %d s" % drop_seconds, spell["seconds"])


def _duration(seconds):
    if seconds < 120:
        return "%g s" % round(seconds, 1)
    if seconds < 7200:
        return "%g min" % round(seconds / 60.0, 1)
    return "%g h" % round(seconds / 3600.0, 1)
