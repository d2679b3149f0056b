# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side parts of the health facts that are not plain sysfs reads: the port counters with a
second sample taken in the same module call, and the carrier events of the RDMA netdevs in the kernel
log. Their readers (the ``counters`` and ``kernel_log`` subsets) are at the end; the functions above
them are pure, over dicts and text.
"""

from __future__ import annotations

import collections
import datetime
import os
import time

from ansible_collections.rdma.node.plugins.module_utils._capped_command import run_capped
from ansible_collections.rdma.node.plugins.module_utils._files import FileReadError, read_bytes
from ansible_collections.rdma.node.plugins.module_utils._health_text import (
    carrier_down_periods,
    count_carrier,
    iter_carrier_events,
    iter_text_lines,
)
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, FactReadError, reader
from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import HW_ERROR_COUNTERS, PORT_COUNTER_WIDTH_BITS, port_counters

# At most this many carrier events are returned (the newest): the counts per netdev cover them all,
# the list is for a reader, and a fleet's fact cache should not hold a flapping port's whole log.
MAX_EVENTS = 50
# journalctl's output of the window is read up to this size (a saved log file has the same bound) and
# for at most this long: a busy window printed 100 MB and took minutes.
JOURNAL_MAX_BYTES = 64 * 1024 * 1024
JOURNAL_TIMEOUT_SECONDS = 120
KERNEL_LOG_MAX_BYTES = JOURNAL_MAX_BYTES
KERNEL_LOG_WINDOW_MAX_HOURS = 87600  # ten years
COUNTERS_INTERVAL_MAX_SECONDS = 300
# The durations of the carrier periods are taken from at most this many of the newest carrier changes
# of the RDMA netdevs (each kept as a few fields), so a log of nothing but flaps stays bounded.
DURATION_EVENTS = 10000


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
    """A journal ``short-iso`` time stamp as an aware datetime in UTC, or None (also for a time that
    cannot be held in UTC, such as the first hour of year 1 at +01:00)."""
    if not text:
        return None
    value = text.replace(",", ".").replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    if len(value) >= 5 and value[-5] in "+-" and value[-3] != ":":
        value = value[:-2] + ":" + value[-2:]  # +0000 -> +00:00 for fromisoformat on Python 3.6-3.10
    try:
        parsed = datetime.datetime.fromisoformat(value)
        return parsed.astimezone(datetime.timezone.utc) if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)
    except (ValueError, OverflowError):
        return None


def _window_start(until, hours):
    """``hours`` before ``until``, or the earliest time there is when that is before year 1."""
    try:
        return until - datetime.timedelta(hours=hours)
    except OverflowError:
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)


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


def _log_end(end, now):
    """The time of the log's last record, unless it is dated after the node's clock (a copied log's
    stray line must not stretch a link's downtime to the future)."""
    moment = _iso_time((end or {}).get("time"))
    return None if end is None or (moment is not None and moment > now) else end


def down_periods(events, netdevs, limited=False, log_end=None):
    """``{netdev: {"rdma_netdev", "port", "clock", "periods", "reason"}}``: how long each netdev of an
    RDMA port was down each time, for judging flaps and drops by duration (gpud's rule) beside the
    count of losses. Keyed by the netdev that lost carrier (a bond slave stays itself: its periods
    are not its bond's, which stays up while one slave is down). ``limited``: only the newest
    DURATION_EVENTS changes were kept, which ``note`` says. A link still down at the end is counted to
    ``log_end``, the log's last record (see :func:`carrier_down_periods`)."""
    periods = carrier_down_periods(events, log_end=log_end)
    result = {}
    for name, entry in sorted(periods.items()):
        owner_name = next((e["rdma_netdev"] for e in events if e["netdev"] == name), name)
        owner = netdevs.get(owner_name) or {}
        result[name] = dict(entry, rdma_netdev=owner_name,
                            port="%s/%s" % (owner.get("device"), owner.get("port")) if owner.get("device") else None)
        if limited:
            result[name]["note"] = "durations from the newest %d carrier changes of the log" % DURATION_EVENTS
    return result


def kernel_log_facts(data, netdevs, sysfs_root, window_hours, source, windowed_by_reader, now=None,
                     newest_first=False, cut_at_bytes=None):
    """Carrier events of the RDMA netdevs (and their bond slaves) in kernel log ``data`` (bytes or str;
    with ``newest_first`` its last line is the oldest, as ``journalctl --reverse`` prints).

    ``windowed_by_reader``: journalctl already kept only the window. A saved file is judged as of
    its newest carrier change with an ISO time stamp that is not after the node's clock (``now``), so a
    copy of a node's log reads the same tomorrow and one line dated in the future (counted in
    ``future_dated``) cannot move the window past every real loss. When an RDMA netdev's event has no
    such time stamp (dmesg), all of them count, and ``window_applied`` says so.

    ``cut_at_bytes``: the reader kept only the newest this many bytes of the window; ``since`` is then
    the oldest carrier change read and ``cut`` says what was not counted.

    The text is read twice, line by line, keeping only counts and the newest ``MAX_EVENTS`` events:
    the memory a large log costs is its bytes and little more.
    """
    now = now or datetime.datetime.now(datetime.timezone.utc)
    tally = {"lines": 0, "records": 0}
    window_applied = windowed_by_reader
    since = until = start = None
    future_dated = 0
    if not windowed_by_reader:
        newest, all_timed = None, True
        for event in iter_carrier_events(iter_text_lines(data, newest_first), tally):
            moment = _iso_time(event["time"])
            if moment is not None and moment > now:
                future_dated += 1
            elif moment is not None and (newest is None or moment > newest):
                newest = moment
            if moment is None and rdma_netdev_of(event["netdev"], netdevs, sysfs_root) is not None:
                all_timed = False
        if newest is not None and all_timed:
            start = _window_start(newest, window_hours)
            since, until, window_applied = start.isoformat(), newest.isoformat(), True
    summary, kept, total, oldest = {}, collections.deque(maxlen=MAX_EVENTS), 0, None
    timed = collections.deque(maxlen=DURATION_EVENTS)
    tally = {"lines": 0, "records": 0, "unread": 0, "end": None}
    for event in iter_carrier_events(iter_text_lines(data, newest_first), tally):
        oldest = oldest or event["time"]
        owner = rdma_netdev_of(event["netdev"], netdevs, sysfs_root)
        if owner is None:
            continue
        if start is not None:
            moment = _iso_time(event["time"])
            if moment is None or moment < start:
                continue
        total += 1
        # Counted per RDMA netdev: a bond slave's losses are the bond port's.
        count_carrier(summary, owner, event["carrier"])
        kept.append({"netdev": event["netdev"], "rdma_netdev": owner, "carrier": event["carrier"],
                     "time": event["time"], "source": event["source"], "message": event["message"]})
        timed.append({"netdev": event["netdev"], "rdma_netdev": owner, "carrier": event["carrier"], "time": event["time"],
                      "line": event.get("line"), "monotonic_seconds": event.get("monotonic_seconds")})
    for name, entry in summary.items():
        owner = netdevs.get(name) or {}
        entry["port"] = "%s/%s" % (owner.get("device"), owner.get("port")) if owner.get("device") else None
    cut = None
    if cut_at_bytes is not None:
        since = oldest
        cut = ("%s printed more than %d bytes for the window; only its newest %d lines were read, so carrier changes "
               "before %s are not counted" % (source, cut_at_bytes, tally["lines"], oldest or "the newest of them"))
    return {
        "source": source,
        "window_hours": window_hours,
        "window_applied": window_applied,
        "cut": cut,
        "since": since,
        "until": until,
        "future_dated": future_dated,
        "lines": tally["lines"],
        "records": tally["records"],
        "unread_lines": tally["unread"],
        "netdevs": summary,
        "events": list(kept),
        "events_total": total,
        "down_periods": down_periods(list(timed), netdevs, limited=total > DURATION_EVENTS, log_end=_log_end(tally["end"], now)),
    }


def journal_kernel_log(journalctl, netdevs, sysfs_root, hours):
    """The kernel log facts of the window's kernel and systemd-networkd messages in the journal.

    journalctl prints them newest first (``--reverse``), so when the output passes
    ``JOURNAL_MAX_BYTES`` the part read is the newest one; the facts say where the cut fell.
    """
    argv = [journalctl, "-o", "short-iso", "--no-pager", "--reverse", "--since", "-%dh" % hours,
            "_TRANSPORT=kernel", "+", "SYSLOG_IDENTIFIER=systemd-networkd"]
    run = run_capped(argv, JOURNAL_MAX_BYTES, JOURNAL_TIMEOUT_SECONDS)
    out = run.stdout if run.rc == 0 or run.cut else b""
    if run.cut:
        del out[out.rfind(b"\n") + 1:]  # the oldest line read may be a part of one
    result = kernel_log_facts(out, netdevs, sysfs_root, hours, "journalctl", True, newest_first=True,
                              cut_at_bytes=JOURNAL_MAX_BYTES if run.cut else None)
    if run.timed_out:
        result["error"] = "journalctl did not finish within %d s" % JOURNAL_TIMEOUT_SECONDS
    elif run.rc not in (0, None):
        last = run.stderr.strip().splitlines()
        result["error"] = "journalctl exited with %d: %s" % (run.rc, last[-1] if last else "no message")
    return result


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
    if not 0 <= interval <= COUNTERS_INTERVAL_MAX_SECONDS:  # also false for NaN
        raise FactReadError("counters_interval is %s; expected a number of seconds from 0 to %d (0: one sample)"
                            % (interval, COUNTERS_INTERVAL_MAX_SECONDS))
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
    """Carrier changes of the RDMA netdevs (and their bond slaves) in the kernel log window, counted and
    timed: from kernel_log_file, or from journalctl on the node (which keeps only the window itself),
    both read with a bound. Not part of gather_subset all: it runs a command where every other subset
    reads files."""
    hours = params["kernel_log_window_hours"]
    if not 1 <= hours <= KERNEL_LOG_WINDOW_MAX_HOURS:
        raise FactReadError("kernel_log_window_hours is %s; expected a whole number of hours from 1 to %d (ten years)"
                            % (hours, KERNEL_LOG_WINDOW_MAX_HOURS))
    root, netdevs = params["sysfs_root"], facts["netdevs"]
    path = params.get("kernel_log_file")
    if path:
        try:
            data = read_bytes(path, "a saved kernel log", KERNEL_LOG_MAX_BYTES)
        except FileReadError as exc:  # also FileShapeError: one sentence naming the file
            raise FactReadError("kernel_log_file: %s" % exc) from None
        if data is None:
            raise FactReadError("kernel_log_file %s does not exist; expected saved journalctl -k or dmesg output" % path)
        facts["kernel_log"] = kernel_log_facts(data, netdevs, root, hours, path, False)
        return
    journalctl = module.get_bin_path("journalctl") if module is not None else None
    if journalctl is None:
        facts["kernel_log"] = dict(kernel_log_facts("", netdevs, root, hours, None, True), error="journalctl is not installed")
        return
    # Kernel messages and systemd-networkd's carrier lines of the window, read with a bound.
    facts["kernel_log"] = journal_kernel_log(journalctl, netdevs, root, hours)
