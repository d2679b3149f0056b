# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``node_health`` role: is an RDMA node healthy right now, beyond its ports being up.

They read ``ansible_facts.rdma`` as ``rdma.node.ib_facts`` gathers it with the ``counters``,
``pcie``, ``gpudirect``, ``locality``, ``roce`` and ``kernel_log`` subsets, ``ansible_facts.rdma_memlock``
(``rdma.node.container_limits``, read-only). The previous run's counter sample (the ``counter_sample``
of ``node_health_status``, kept in the fact cache) comes as the parameter ``previous_sample``, not as
a fact the checks read: a check whose facts are missing is skipped, and a first run must still judge
the in-run sample and the totals.

Parameters, without the ``node_health_`` prefix:

* ``counter_limits``: ``{counter: total}``; a port whose counter total is above it is a warning
  (only when there is no earlier sample to compare: with one, ``counter_rising`` judges what
  happens now, and a total since the last reset mixes old errors with new ones);
* ``counter_rise_limits``: ``{counter: limit}``; a limit carries its unit (``5/min``, ``100/s``,
  ``120/h``; a bare number is per hour, ``0`` any rise) and optionally its severity
  (``{rate: 5/min, severity: warning}``; default critical), see ``_rate_limits``;
* ``carrier_losses_max``: this many carrier losses of a port's netdev in the kernel log window make
  it a flapping link;
* ``gpudirect``: ``auto`` (judge nodes that have NVIDIA GPUs), ``required`` or ``off``;
* ``locality_link_layers``: the link layers of the HCAs that carry GPU traffic;
* ``roce_netns_mode``: the RDMA netns mode the device plugin expects (empty: not checked);
* ``memlock_wanted``: the locked-memory limit containers need (``unlimited`` or bytes, ``64K``...).
"""

from __future__ import annotations

import math

from ansible_collections.rdma.node.plugins.plugin_utils._rate_limits import RateLimitError, judge_rise, parse_rate_limits
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, parameter, summary
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import totals_sample
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RLIM_INFINITY, RlimitError, parse_rlimit_value
from ansible_collections.rdma.node.plugins.module_utils._health_collect import error_counters

ROLE = "node_health"
# The fact paths the checks read, at the grain of ib_facts' subsets (module_utils/_subsets).
COUNTERS = ("rdma.ports[].counters",)
PORTS = ("rdma.ports",)
SECONDS_PER_HOUR = 3600.0
# The counters link_flapping owns: counter_rising leaves them alone so a flap is reported once, and
# those that rise with a flap (a link retrains before it goes down), left alone where link_downed rose.
FLAP_COUNTERS = ("link_downed",)
FLAP_COMPANIONS = ("link_error_recovery",)
_UINT64_MAX = 2 ** 64 - 1


@parameter(ROLE, "previous_sample")
def previous_sample(options, facts):
    """The previous run's counter sample, kept in the fact cache as node_health_status.counter_sample
    (none on a first run)."""
    return (facts.get("node_health_status") or {}).get("counter_sample")


def port_name(port):
    return "%s/%s" % (port.get("device"), port.get("port"))


def _limits(params, name):
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CheckError("node_health_%s: expected a mapping of counter name to a number, got %r" % (name, value))
    limits = {}
    for counter, limit in value.items():
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
            raise CheckError("node_health_%s: the limit of %s must be a number of 0 or more, got %r" % (name, counter, limit))
        limits[str(counter)] = limit
    return limits


def _int_param(params, name, default):
    value = params.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CheckError("node_health_%s: expected a whole number of 1 or more, got %r" % (name, value))
    return value


def _ports_with_counters(rdma):
    return [p for p in rdma.get("ports") or [] if isinstance(p, dict) and isinstance(p.get("counters"), dict)]


def _is_count(value):
    """An IBTA counter value as the node reads it: a whole number of 0 to 2^64-1 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _UINT64_MAX


def _is_time(value):
    """Seconds since the epoch: a finite positive number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _shown(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def usable_sample(sample, before):
    """``(sample, None)`` when ``sample`` has the shape ``current_sample`` makes and is older than
    ``before``, else ``(None, why)``: ``{"time": seconds, "ports": {"dev/port": {counter: count}}}``.

    Every earlier sample goes through here: this run's first read comes from the node, the previous
    run's from the fact cache, and either may have been tampered with. Nothing of a sample with one
    bad part is used, so a string, a wrong shape or a count of -10^30 can neither fail the host nor
    make a rise that did not happen.
    """
    if not isinstance(sample, dict):
        return None, "is %s, not a mapping" % type(sample).__name__
    if not _is_time(sample.get("time")):
        return None, "has the time %s, not a number of seconds since the epoch" % _shown(sample.get("time"))
    if not sample["time"] < before:
        return None, "was taken at %s, not before this run's read at %s" % (_shown(sample["time"]), _shown(before))
    ports = sample.get("ports")
    if not isinstance(ports, dict):
        return None, "has the ports %s, not a mapping of port to counters" % _shown(ports)
    for name, counters in ports.items():
        if not isinstance(counters, dict):
            return None, "has %s for the port %s, not a mapping of counter to count" % (_shown(counters), name)
        for counter, value in counters.items():
            if not _is_count(value):
                return None, "has %s %s = %s, not a count of 0 to 2^64-1" % (name, counter, _shown(value))
    return sample, None


def current_sample(rdma):
    """``{"time", "ports": {"dev/port": {counter: value}}}`` of the error counters read this run: the
    IBTA counters, and the mlx5 hw_counters of ``_sysfs_health.HW_ERROR_COUNTERS`` where the port has them
    (the sample the node takes first when it reads twice, ``_health_collect.error_counters``)."""
    return {"time": rdma.get("counters_time"), "ports": error_counters(rdma.get("ports") or [])}


def earlier_sample(rdma, previous):
    """``(sample, source, problem)``: the sample to compare with and where it comes from, the in-run one
    (``counters_interval``) when ib_facts took two, else ``previous`` (the last run's, from the fact
    cache), else None; ``problem`` says why a sample that was there is not usable."""
    now = rdma.get("counters_time")
    if not _is_time(now):
        return None, None, None
    earlier = rdma.get("counters_earlier")
    if earlier is not None:
        sample, problem = usable_sample(earlier, now)
        if sample is None:
            return None, None, "this run's first counter read " + problem
        return sample, "this run", None
    if previous is None:
        return None, None, None
    sample, problem = usable_sample(previous, now)
    if sample is None:
        return None, None, "the previous run's counter sample in the fact cache " + problem
    return sample, "the previous run", None


def _compared(rdma, previous):
    """``(port, counter, before, after, seconds)`` of every error counter with a usable earlier value;
    a counter at its maximum no longer counts, so its "rise" is only the way up to the ceiling."""
    earlier, _source, _problem = earlier_sample(rdma, previous)
    if earlier is None:
        return
    now = current_sample(rdma)
    seconds = float(now["time"]) - float(earlier["time"])
    saturated = {port_name(p): set(p.get("counters_saturated") or []) for p in _ports_with_counters(rdma)}
    for name, counters in now["ports"].items():
        before = earlier["ports"].get(name) or {}
        for counter, value in counters.items():
            if counter not in saturated.get(name, ()) and counter in before:
                yield name, counter, before[counter], value, seconds


def counter_deltas(rdma, previous):
    """``{"dev/port": {counter: (before, after, seconds)}}`` of every error counter with an earlier
    value; a counter that went down (see ``counter_drops``) has no delta."""
    deltas = {}
    for name, counter, before, after, seconds in _compared(rdma, previous):
        if after >= before:
            deltas.setdefault(name, {})[counter] = (before, after, seconds)
    return deltas


def counter_drops(rdma, previous):
    """``{"dev/port": [(counter, before, after)]}`` of the error counters lower than in the earlier
    sample: cleared, or reset by a reboot or a driver reload."""
    drops = {}
    for name, counter, before, after, _seconds in _compared(rdma, previous):
        if after < before:
            drops.setdefault(name, []).append((counter, before, after))
    return drops


def per_hour(before, after, seconds):
    return (after - before) * SECONDS_PER_HOUR / seconds


def _duration(seconds):
    if seconds < 120:
        return "%g s" % round(seconds, 1)
    if seconds < 2 * SECONDS_PER_HOUR:
        return "%g min" % round(seconds / 60, 1)
    return "%g h" % round(seconds / SECONDS_PER_HOUR, 1)


@check(ROLE, "counter_threshold", reads=COUNTERS, params=("counter_limits", "previous_sample"))
def counter_threshold(facts, params, found):
    """A port's error counter total is above its limit, and there is no earlier sample to tell whether the errors are recent."""
    limits = _limits(params, "counter_limits")
    deltas = counter_deltas(facts["rdma"], params.get("previous_sample"))
    for port in _ports_with_counters(facts["rdma"]):
        name = port_name(port)
        saturated = port.get("counters_saturated") or []
        over = [(c, port["counters"].get(c), limit) for c, limit in sorted(limits.items())
                if c not in deltas.get(name, {}) and c not in saturated
                and isinstance(port["counters"].get(c), int) and port["counters"][c] > limit]
        if over:
            found.warning(name, "%s: %s since the counters were last cleared." % (
                name, ", ".join("%s is %d (limit %g)" % item for item in over)),
                {c: limit for c, _v, limit in over}, {c: value for c, value, _l in over})


def _rise_limits(params):
    try:
        return parse_rate_limits(params.get("counter_rise_limits"), "node_health_counter_rise_limits")
    except RateLimitError as exc:
        raise CheckError(str(exc)) from None


@check(ROLE, "counter_rising", reads=COUNTERS, params=("counter_rise_limits", "previous_sample"))
def counter_rising(facts, params, found):
    """An error counter rose faster than its limit (per second, minute or hour; 0: any rise) between two samples (this run's, or the last run's and this)."""
    limits = _rise_limits(params)
    _earlier, source, problem = earlier_sample(facts["rdma"], params.get("previous_sample"))
    if problem:
        found.not_checked("counter sample", "no usable earlier sample: %s; counter rises are judged from the next run on" % problem)
    for name, drops in sorted(counter_drops(facts["rdma"], params.get("previous_sample")).items()):
        drops.sort()
        went = ", ".join(("%s went down from %d to %d" if index == 0 else "%s from %d to %d") % drop
                         for index, drop in enumerate(drops))
        found.info(name, "%s: %s between samples of %s (counters cleared, a reboot or a driver reload); %s rise is "
                   "judged from this sample on." % (name, went, source, "their" if len(drops) > 1 else "its"))
    for name, counters in sorted(counter_deltas(facts["rdma"], params.get("previous_sample")).items()):
        downed = counters.get("link_downed", (0, 0, 0))
        for counter, (before, after, seconds) in sorted(counters.items()):
            limit = limits.get(counter)
            if limit is None or counter in FLAP_COUNTERS:
                continue
            if counter in FLAP_COMPANIONS and downed[1] > downed[0]:
                continue  # the link went down in the same interval: link_flapping reports the port, once
            breach = judge_rise(before, after, seconds, limit)
            if breach is None:
                continue
            bound = "any rise is an error" if limit.count == 0 else "the limit is %s" % limit.text
            found.add(breach["severity"], name, "%s: %s rose from %d to %d in %s (between samples of %s), %s; %s." % (
                name, counter, before, after, _duration(seconds), source, breach["text"], bound),
                "<= %s" % limit.text if limit.count else "no rise", round(breach["rate"], 1))


@check(ROLE, "counter_saturated", reads=COUNTERS)
def counter_saturated(facts, params, found):
    """An error counter sits at the maximum of its width: it no longer counts, so rises and rates are blind until it is cleared."""
    for port in _ports_with_counters(facts["rdma"]):
        saturated = list(port.get("counters_saturated") or [])
        if saturated:
            name = port_name(port)
            found.warning(name, "%s: %s at the maximum of %s width and no longer count%s; clear the port's counters "
                          "(perfquery -x -R) to see new errors." % (
                              name, ", ".join("%s=%s" % (c, port["counters"].get(c)) for c in saturated),
                              "its" if len(saturated) == 1 else "their", "s" if len(saturated) == 1 else ""),
                          "below the maximum", {c: port["counters"].get(c) for c in saturated})


def carrier_losses(rdma):
    """``{"dev/port": [(netdev, losses)]}`` from the kernel log facts."""
    log = rdma.get("kernel_log") if isinstance(rdma.get("kernel_log"), dict) else {}
    netdevs = rdma.get("netdevs") if isinstance(rdma.get("netdevs"), dict) else {}
    losses = {}
    entries = log.get("netdevs") if isinstance(log.get("netdevs"), dict) else {}
    for name, entry in sorted(entries.items()):
        if not isinstance(entry, dict) or not _is_count(entry.get("losses")):
            continue  # not what ib_facts writes: nothing in it is counted
        port = entry.get("port")
        if port is None and isinstance(netdevs.get(name), dict):
            port = "%s/%s" % (netdevs[name].get("device"), netdevs[name].get("port"))
        if port and entry.get("losses"):
            losses.setdefault(port, []).append((name, entry["losses"]))
    return losses


@check(ROLE, "link_flapping", reads=COUNTERS, optional=("rdma.kernel_log",), params=("carrier_losses_max", "previous_sample"))
def link_flapping(facts, params, found):
    """A port's link went down between two samples (link_downed rose) or its netdev lost carrier too often in the kernel log window."""
    rdma = facts["rdma"]
    most = _int_param(params, "carrier_losses_max", 5)
    deltas = counter_deltas(facts["rdma"], params.get("previous_sample"))
    _earlier, source, _problem = earlier_sample(facts["rdma"], params.get("previous_sample"))
    losses = carrier_losses(rdma)
    log = rdma.get("kernel_log") if isinstance(rdma.get("kernel_log"), dict) else {}
    window = log.get("window_hours")
    if isinstance(log.get("cut"), str):
        found.info("kernel log", "The kernel log was not read whole: %s." % log["cut"])
    for name in sorted(set(deltas) | set(losses)):
        evidence = []
        before, after, seconds = deltas.get(name, {}).get("link_downed", (0, 0, 0))
        if after > before:
            evidence.append("link_downed rose from %d to %d in %s (between samples of %s)" % (before, after, _duration(seconds), source))
        lost = sum(count for _netdev, count in losses.get(name, []))
        if lost >= most:
            evidence.append("%s lost carrier %d times in the kernel log of the last %s h" % (
                ", ".join(n for n, _c in losses[name]), lost, window))
        elif lost and evidence:
            evidence.append("the kernel log shows %d carrier loss%s of %s" % (lost, "" if lost == 1 else "es", ", ".join(n for n, _c in losses[name])))
        if evidence:
            found.critical(name, "%s is flapping: %s." % (name, "; ".join(evidence)), "a stable link",
                           {"link_downed": [before, after], "carrier_losses": lost})


def pcie_slot(address):
    """``0000:5e:00`` of ``0000:5e:00.1``: the functions of one card share one PCIe link."""
    return address.rpartition(".")[0] if address and "." in address else address


def _link_text(generation, speed, width):
    gen = "Gen%d" % generation if generation else ("%g GT/s" % speed if speed else "unknown speed")
    return "%s x%s" % (gen, width if width else "?")


def _physical_links(rdma):
    devices = rdma.get("devices") or {}
    return [(name, link) for name, link in sorted((rdma.get("pcie") or {}).items())
            if isinstance(link, dict) and not (devices.get(name) or {}).get("virtual_function")]


@check(ROLE, "pcie_degraded", reads=("rdma.pcie",))
def pcie_degraded(facts, params, found):
    """An HCA's PCIe link trained below its maximum width or speed (reported once per card, not per PCI function)."""
    slots = {}
    for name, link in _physical_links(facts["rdma"]):
        if link.get("present") is False or not (link.get("width_below_max") or link.get("speed_below_max")):
            continue
        slots.setdefault(pcie_slot(link.get("pci_address")) or name, []).append((name, link))
    for slot, members in sorted(slots.items()):
        link = members[0][1]
        names = ", ".join(n for n, _l in members)
        actual = _link_text(link.get("current_generation"), link.get("current_speed_gts"), link.get("current_width"))
        expected = _link_text(link.get("max_generation"), link.get("max_speed_gts"), link.get("max_width"))
        what = [w for w, flag in (("width", link.get("width_below_max")), ("speed", link.get("speed_below_max"))) if flag]
        found.critical(slot, "The PCIe link of %s (%s) runs at %s, below the %s it can do (%s degraded): the HCA cannot reach its "
                       "line rate; reseat the card or check the slot and riser." % (names, slot, actual, expected, " and ".join(what)),
                       expected, actual)


@check(ROLE, "pcie_device_gone", reads=("rdma.pcie",))
def pcie_device_gone(facts, params, found):
    """An RDMA device's PCI function is gone from the bus (dangling link, not listed, or config space of all ones)."""
    for name, link in _physical_links(facts["rdma"]):
        if link.get("present") is False:
            found.critical(name, "%s (PCI %s) is gone from the PCI bus: %s." % (name, link.get("pci_address") or "?", link.get("absent_reason")),
                           "present", "gone")


@check(ROLE, "hca_temperature", reads=("rdma.temperature",), params=("temperature_margin_celsius",))
def hca_temperature(facts, params, found):
    """An HCA temperature sensor (ASIC or cable module) at or above its critical threshold, or within the margin below it."""
    margin = params.get("temperature_margin_celsius")
    margin = 10.0 if margin is None else float(margin)
    seen = set()
    for name, reading in sorted(facts["rdma"]["temperature"].items()):
        reading = reading if isinstance(reading, dict) else {}
        if not reading.get("sensors"):
            found.not_checked(name, "no temperature of %s: %s" % (name, reading.get("reason") or "its sensors could not be read"))
            continue
        card = pcie_slot(reading.get("pci_address")) or name
        for sensor in reading["sensors"]:
            label = sensor.get("label") or "?"
            if (card, label) in seen:
                continue  # the functions of one card share its ASIC and its cable module: one verdict
            seen.add((card, label))
            now, crit = sensor.get("input_celsius"), sensor.get("crit_celsius")
            subject = "%s %s" % (name, label)
            if now is None or not crit or crit <= 0:
                lacking = "no current temperature" if now is None else "no critical threshold to compare with"
                found.not_checked(subject, "%s of %s gives %s" % (label, name, lacking))
                continue
            if now >= crit:
                found.critical(subject, "%s of %s is at %g °C, at or above its critical %g °C: the card throttles or shuts its "
                               "link down; check the airflow, the fans and the cable module." % (label, name, now, crit),
                               "< %g °C" % crit, now)
            elif now >= crit - margin:
                found.warning(subject, "%s of %s is at %g °C, within %g °C of its critical %g °C." % (label, name, now, margin, crit),
                              "< %g °C" % (crit - margin), now)


@check(ROLE, "gpudirect", reads=("rdma.gpudirect",), optional=("rdma.gpus",), params=("gpudirect",))
def gpudirect(facts, params, found):
    """Which GPUDirect RDMA path works (peer memory, DMA-BUF), or exactly what each one lacks."""
    mode = params.get("gpudirect") or "auto"  # its choices are the role specification's
    rdma = facts["rdma"]
    state = rdma.get("gpudirect")
    if mode == "off" or not isinstance(state, dict):
        return
    if mode == "auto" and not rdma.get("gpus") and not state.get("nvidia_module_loaded"):
        return
    if state.get("reason"):
        found.not_checked("gpudirect", state["reason"])
        return
    paths = []
    if state.get("peermem_ready"):
        paths.append("peer memory (%s)" % state.get("peermem_module"))
    if state.get("dma_buf_ready"):
        paths.append("DMA-BUF (open NVIDIA kernel module, kernel %s)" % state.get("kernel_release"))
    if paths:
        found.info("gpudirect", "GPUDirect RDMA is ready via %s." % " and ".join(paths), "a working path", paths)
        return
    missing = {"peer memory": state.get("peermem_missing") or [], "DMA-BUF": state.get("dma_buf_missing") or []}
    found.critical("gpudirect", "GPUDirect RDMA has no working path. Peer memory: %s. DMA-BUF: %s." % (
        _lacks(missing["peer memory"]), _lacks(missing["DMA-BUF"])), "peer memory or DMA-BUF", missing)


def _lacks(reasons):
    return "not ready, for a reason the facts do not give" if not reasons else "; ".join(reasons)


def _compute_hcas(rdma, layers):
    active = {p.get("device") for p in rdma.get("ports") or [] if p.get("state") == "ACTIVE" and p.get("link_layer") in layers}
    return active


@check(ROLE, "gpu_hca_locality", reads=("rdma.locality",) + PORTS, params=("locality_link_layers",))
def gpu_hca_locality(facts, params, found):
    """A GPU whose nearest active compute HCA is only reachable across NUMA nodes (nvidia-smi SYS)."""
    rdma = facts["rdma"]
    layers = params.get("locality_link_layers") or ["InfiniBand", "Ethernet"]
    compute = _compute_hcas(rdma, layers)
    for gpu in (rdma.get("locality") or {}).get("gpus") or []:
        usable = [c for c in gpu.get("candidates") or [] if c.get("device") in compute]
        if not usable or usable[0].get("relation") != "cross_numa":
            continue
        best = usable[0]
        offered = ", ".join("%s (%s)" % (c["device"], c["relation"]) for c in gpu.get("candidates") or [])
        found.warning(gpu.get("gpu"), "GPU %s on NUMA node %s reaches its nearest active compute HCA %s only across NUMA nodes "
                      "(nvidia-smi SYS), so its RDMA traffic crosses the inter-socket link; the node offers it: %s." % (
                          gpu.get("gpu"), gpu.get("numa_node"), best["device"], offered), "an HCA on the GPU's NUMA node",
                      best["device"])


@check(ROLE, "roce_netns_mode", reads=("rdma.roce",), params=("roce_netns_mode",))
def roce_netns_mode(facts, params, found):
    """The RDMA subsystem's netns mode is not the one the RDMA shared device plugin expects."""
    wanted = params.get("roce_netns_mode")
    rdma = facts["rdma"]
    actual = (rdma.get("roce") or {}).get("netns_mode")
    if not wanted or not rdma.get("devices") or actual is None or actual == wanted:
        return
    found.critical("netns_mode", "The RDMA netns mode is %s, but the RDMA shared device plugin expects %s: pods do not see the RDMA "
                   "devices as it assumes (rdma system set netns %s, or ib_core netns_mode=%d)." % (
                       actual, wanted, wanted, 1 if wanted == "shared" else 0), wanted, actual)


@check(ROLE, "roce_gid_missing", reads=("rdma.roce",))
def roce_gid_missing(facts, params, found):
    """An address of a RoCE port's netdev has no RoCE v2 GID: RoCE v2 traffic cannot use it."""
    roce = facts["rdma"].get("roce") or {}
    have = {(g.get("netdev"), g.get("address")) for g in roce.get("gids") or [] if g.get("type") == "RoCE v2"}
    for netdev, families in sorted((roce.get("netdev_addresses") or {}).items()):
        for family in ("ipv4", "ipv6"):
            for address in (families or {}).get(family) or []:
                if (netdev, address) not in have:
                    found.warning(netdev, "%s has the address %s but no RoCE v2 GID for it: RoCE v2 connections to it fail "
                                  "(the GID table is filled when the address is added; check the port's gid_attrs)." % (netdev, address),
                                  "a RoCE v2 GID", None)


def _rlimit(text, where):
    try:
        return parse_rlimit_value(text, where)
    except RlimitError as exc:
        raise CheckError(str(exc)) from None


def _limit_text(value):
    return "unlimited" if value == RLIM_INFINITY else str(value)


def _below(pair, wanted):
    """The soft/hard values of a /proc pair below ``wanted``; text /proc would not print counts as below."""
    low = {}
    for key in ("soft", "hard"):
        try:
            value = parse_rlimit_value((pair or {}).get(key))
        except RlimitError:
            value = None
        if value is None or value < wanted:
            low[key] = (pair or {}).get(key)
    return low


@check(ROLE, "effective_memlock", reads=("rdma_memlock",), params=("memlock_wanted",))
def effective_memlock(facts, params, found):
    """containerd's process or a new container has a lower locked-memory limit than RDMA needs (read-only; the fix is node_remediation)."""
    wanted = _rlimit(str(params.get("memlock_wanted") or "unlimited"), "node_health_memlock_wanted")
    limits = facts["rdma_memlock"]
    containerd = limits.get("containerd") or {}
    if containerd.get("pid") and containerd.get("memlock"):
        low = _below(containerd["memlock"], wanted)
        if low:
            found.warning(containerd.get("unit") or "containerd", "containerd (pid %s) runs with Max locked memory %s/%s (soft/hard), below "
                          "the %s RDMA needs: containers it starts cannot get more unless their runtime may raise it; run "
                          "rdma.node.node_remediation." % (containerd["pid"], containerd["memlock"].get("soft"),
                                                           containerd["memlock"].get("hard"), _limit_text(wanted)),
                          _limit_text(wanted), containerd["memlock"])
    probe = limits.get("probe") or {}
    if probe.get("ran") and probe.get("memlock"):
        low = _below(probe["memlock"], wanted)
        if low:
            found.critical("new container", "A new container gets Max locked memory %s/%s (soft/hard), below the %s RDMA needs: "
                           "verbs applications in pods fail with \"Couldn't allocate MR\"; run rdma.node.node_remediation." % (
                               probe["memlock"].get("soft"), probe["memlock"].get("hard"), _limit_text(wanted)),
                           _limit_text(wanted), probe["memlock"])


@summary(ROLE, reads=PORTS, params=("previous_sample",))
def health_summary(facts, params, findings):
    """The counter sample the next run compares with (kept in the fact cache), the counter rates per
    hour of this run with the interval they were measured over, and what the kernel log and GPUDirect
    facts said."""
    rdma = facts["rdma"]
    rates = {}
    for name, counters in counter_deltas(facts["rdma"], params.get("previous_sample")).items():
        rates[name] = {c: round(per_hour(b, a, s), 3) for c, (b, a, s) in counters.items()}
    earlier, source, _problem = earlier_sample(facts["rdma"], params.get("previous_sample"))
    sample = current_sample(rdma)
    # The rates are extrapolated to an hour from this interval: a report must say it with them.
    interval = float(sample["time"]) - float(earlier["time"]) if earlier is not None and sample["time"] is not None else None
    return {
        "counter_sample": sample if sample["time"] is not None else None,
        "counter_rates_per_hour": rates,
        "counter_rates_source": source,
        "counter_rates_interval_seconds": interval,
        "carrier_losses": {port: sum(c for _n, c in items) for port, items in carrier_losses(rdma).items()},
        # What the next run's pcie_aer compares with, as counter_sample is for the counters.
        "aer_sample": totals_sample(rdma.get("aer")),
    }
