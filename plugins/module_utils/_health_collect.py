# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side parts of the health facts that are not plain sysfs reads: the port counters with a
second sample taken in the same module call, and the carrier events of the RDMA netdevs in the kernel
log. Their readers (the ``counters`` and ``kernel_log`` subsets) are at the end; the functions above
them are pure, over dicts and text.
"""

from __future__ import annotations

import datetime
import os
import time

from ansible_collections.rdma.node.plugins.module_utils._files import FileReadError, read_bytes
from ansible_collections.rdma.node.plugins.module_utils._health_text import carrier_down_periods, parse_carrier_events, summarize_carrier
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, FactReadError, reader
from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import HW_ERROR_COUNTERS, PORT_COUNTER_WIDTH_BITS, port_counters

KERNEL_LOG_MAX_BYTES = 64 * 1024 * 1024

# At most this many carrier events are returned (the newest): the counts per netdev cover them all,
# the list is for a reader, and a fleet's fact cache should not hold a flapping port's whole log.
MAX_EVENTS = 50


def error_counters(ports):
    """``{"dev/port": {counter: value}}`` of the error counters of gathered ports: the IBTA ones, and
    the mlx5 hw_counters of ``HW_ERROR_COUNTERS`` where the port has them (as the checks' sample does)."""
    sample = {}
    for port in ports:
        counters = port.get("counters")
        if isinstance(counters, dict):
            values = {name: value for name, value in counters.items() if name in PORT_COUNTER_WIDTH_BITS and value is not None}
            hw = port.get("hw_counters") if isinstance(port.get("hw_counters"), dict) else {}
            values.update({name: value for name, value in hw.items() if name in HW_ERROR_COUNTERS and isinstance(value, int) and not isinstance(value, bool)})
            sample["%s/%s" % (port["device"], port["port"])] = values
    return sample


def _iso_time(text):
    """A journal ``short-iso`` time stamp as an aware datetime, or None."""
    if not text:
        return None
    value = text.replace(",", ".").replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    if len(value) >= 5 and value[-5] in "+-" and value[-3] != ":":
        value = value[:-2] + ":" + value[-2:]  # +0000 -> +00:00 for fromisoformat on Python 3.6-3.10
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)


def rdma_netdev_of(name, netdevs, sysfs_root):
    """The RDMA netdev an event's netdev stands for: itself, or the bond it is enslaved to."""
    if name in netdevs:
        return name
    master = os.path.join(sysfs_root, "class", "net", name, "master")
    if os.path.islink(master):
        bond = os.path.basename(os.readlink(master))
        if bond in netdevs:
            return bond
    return None


def down_periods(events, netdevs):
    """``{netdev: {"rdma_netdev", "port", "clock", "periods", "reason"}}``: how long each netdev of an
    RDMA port was down each time, for judging flaps and drops by duration (gpud's rule) beside the
    count of losses. Keyed by the netdev that lost carrier (a bond slave stays itself: its periods
    are not its bond's, which stays up while one slave is down)."""
    periods = carrier_down_periods(events)
    result = {}
    for name, entry in sorted(periods.items()):
        owner_name = next((e["rdma_netdev"] for e in events if e["netdev"] == name), name)
        owner = netdevs.get(owner_name) or {}
        result[name] = dict(entry, rdma_netdev=owner_name,
                            port="%s/%s" % (owner.get("device"), owner.get("port")) if owner.get("device") else None)
    return result


def kernel_log_facts(text, netdevs, sysfs_root, window_hours, source, windowed_by_reader):
    """Carrier events of the RDMA netdevs (and their bond slaves) in kernel log text.

    ``windowed_by_reader``: journalctl already kept only the window. A saved file is judged as of
    its newest carrier change with an ISO time stamp (so a copy of a node's log reads the same
    tomorrow); when an RDMA netdev's event has no such time stamp (dmesg), all of them count, and
    ``window_applied`` says so.
    """
    parsed = parse_carrier_events(text)
    events = []
    for event in parsed["events"]:
        owner = rdma_netdev_of(event["netdev"], netdevs, sysfs_root)
        if owner is not None:
            events.append(dict(event, rdma_netdev=owner))
    window_applied = windowed_by_reader
    since = until = None
    if not windowed_by_reader:
        times = [_iso_time(e["time"]) for e in events]
        # The end of the log: its newest carrier change of any netdev (the parser keeps no other times).
        newest = [t for t in (_iso_time(e["time"]) for e in parsed["events"]) if t]
        if events and all(times):
            until = max(newest)
            start = until - datetime.timedelta(hours=window_hours)
            events = [e for e, t in zip(events, times) if t >= start]
            since, window_applied = start.isoformat(), True
            until = until.isoformat()
    # Counted per RDMA netdev: a bond slave's losses are the bond port's.
    summary = summarize_carrier([dict(e, netdev=e["rdma_netdev"]) for e in events])
    for name, entry in summary.items():
        owner = netdevs.get(name) or {}
        entry["port"] = "%s/%s" % (owner.get("device"), owner.get("port")) if owner.get("device") else None
    return {
        "down_periods": down_periods(events, netdevs),
        "source": source,
        "window_hours": window_hours,
        "window_applied": window_applied,
        "since": since,
        "until": until,
        "lines": parsed["lines"],
        "records": parsed["records"],
        "netdevs": summary,
        "events": [{k: e[k] for k in ("netdev", "rdma_netdev", "carrier", "time", "source", "message")} for e in events[-MAX_EVENTS:]],
        "events_total": len(events),
    }


# ------------------------------------------------------------------------------------ readers


def _read_port_counters(facts, sysfs_root):
    ib_dir = os.path.join(sysfs_root, "class", "infiniband")
    for port in facts["ports"]:
        port.update(port_counters(os.path.join(ib_dir, port["device"], "ports", str(port["port"]))))


@reader("counters", IB_FACTS, fills=("rdma.ports[].counters", "rdma.counters_time"),
        inputs=("counters_interval", "counters_resample_root"))
def read_counters(facts, params, module):
    """The port counters (counters, counters_ext, hw_counters), time stamped; with counters_interval,
    read a second time after that many seconds (from counters_resample_root when given), so that one
    call yields a rise."""
    interval = params["counters_interval"]
    if interval < 0:
        raise FactReadError("counters_interval is %s; expected a number of seconds of 0 or more (0: one sample)" % interval)
    again_root = params.get("counters_resample_root") or params["sysfs_root"]
    if interval and not os.path.isdir(again_root):
        raise FactReadError("counters_resample_root %s is not a directory; expected a sysfs tree such as /sys" % again_root)
    _read_port_counters(facts, params["sysfs_root"])
    facts["counters_time"] = time.time()
    if not interval:
        return
    facts["counters_earlier"] = {"time": facts["counters_time"], "ports": error_counters(facts["ports"])}
    time.sleep(interval)
    _read_port_counters(facts, again_root)
    facts["counters_time"] = time.time()
    facts["counters_interval_seconds"] = facts["counters_time"] - facts["counters_earlier"]["time"]


@reader("kernel_log", IB_FACTS, fills=("rdma.kernel_log",), inputs=("kernel_log_file", "kernel_log_window_hours"), in_all=False)
def read_kernel_log(facts, params, module):
    """Carrier losses of the RDMA netdevs (and their bond slaves) in the kernel log window: from
    kernel_log_file, or from journalctl -k on the node (which keeps only the window itself). Not part
    of gather_subset all: it runs a command where every other subset reads files."""
    hours = params["kernel_log_window_hours"]
    if hours < 1:
        raise FactReadError("kernel_log_window_hours is %s; expected a whole number of hours of 1 or more" % hours)
    root, netdevs = params["sysfs_root"], facts["netdevs"]
    path = params.get("kernel_log_file")
    if path:
        try:
            data = read_bytes(path, "a saved kernel log", KERNEL_LOG_MAX_BYTES)
        except FileReadError as exc:  # also FileShapeError: one sentence naming the file
            raise FactReadError("kernel_log_file: %s" % exc) from None
        if data is None:
            raise FactReadError("kernel_log_file %s does not exist; expected saved journalctl -k or dmesg output" % path)
        facts["kernel_log"] = kernel_log_facts(data.decode("utf-8", "replace"), netdevs, root, hours, path, False)
        return
    journalctl = module.get_bin_path("journalctl") if module is not None else None
    if journalctl is None:
        facts["kernel_log"] = dict(kernel_log_facts("", netdevs, root, hours, None, True), error="journalctl is not installed")
        return
    # Kernel messages and systemd-networkd's carrier lines, both in the window, oldest first.
    argv = [journalctl, "-o", "short-iso", "--no-pager", "--since", "-%dh" % hours, "_TRANSPORT=kernel", "+",
            "SYSLOG_IDENTIFIER=systemd-networkd"]
    rc, out, err = module.run_command(argv)
    result = kernel_log_facts(out if rc == 0 else "", netdevs, root, hours, "journalctl", True)
    if rc != 0:
        last = (err or "").strip().splitlines()
        result["error"] = "journalctl exited with %d: %s" % (rc, last[-1] if last else "no message")
    facts["kernel_log"] = result
