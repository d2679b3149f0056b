# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the text the fleet-health checks read besides sysfs: kernel logs (carrier changes of
network devices) and ``rdma system`` (the RDMA network-namespace mode).

Both take what people paste as well as what a task registers: a string or a list of lines, with
shell prompts, comments, indentation and unrelated lines mixed in. Pure functions, standard library
only, so a module on a node can use them as well as a filter on the controller.
"""

from __future__ import annotations

import datetime
import functools
import io
import json
import re

from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile


class HealthTextError(ValueError):
    """Text that is not what the parser was given to read."""


def _lines(data, name):
    if data is None:
        return []
    if isinstance(data, (list, tuple)):
        if not all(isinstance(line, str) for line in data):
            raise HealthTextError("%s: expected a string or a list of strings, got a list holding %s" % (
                name, ", ".join(sorted({type(line).__name__ for line in data if not isinstance(line, str)}))))
        return [line.rstrip("\r\n") for line in data]
    if isinstance(data, str):
        return data.splitlines()
    if isinstance(data, (bytes, bytearray)):
        return bytes(data).decode("utf-8", "replace").splitlines()
    raise HealthTextError("%s: expected a string or a list of strings, got %s" % (name, type(data).__name__))


# ------------------------------------------------------------------------------------ kernel log

# The months as journalctl and syslog print them, in English and, where the locale is another, as its abbreviations
# ("jul" es_ES, "Okt" de_DE, "janv." fr_FR, "giu" it_IT, "out" pt_BR, "mrt" nl_NL): each to its number.
_MONTH_NUMBERS = {name: number for number, names in enumerate((
    "jan ene gen janv", "feb fev févr", "mar mär mrz mrt mars", "apr abr avr", "may mai mag mei", "jun giu juin",
    "jul lug juil", "aug ago août", "sep sept set", "oct okt ott out", "nov", "dec dic dez déc"), start=1) for name in names.split()}
_MONTH = r"(?i:%s)\.?" % "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True))
# A kernel built with CONFIG_PRINTK_CALLER prints the caller after the time: "[  336.527739][ T3356]".
_CALLER = r"(?:\s?\[\s*[TC][0-9]{1,10}\])?"  # util-linux's dmesg puts a space before it: "[    7.370479] [    T179]"
# The PREEMPT_RT patch set of 5.0 to 5.4 ("printk: add processor number to output"), and vendor kernels built on it, print
# the CPU that printed the record after the time, three digits or more and a colon: "[   21.031793] 003: macb ff0b0000.ethernet eth0:
# link down". It is no part of the message, as the caller is not.
_CPU_COLUMN = r"(?: [0-9]{3,4}:(?= ))?"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
# Each record form: (kind, pattern with the groups time/host/tag/message).
_ISO_TIME = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
# dmesg -x (--decode) puts the facility and level first, padded: "kern  :info  : ", "kern  :notice: ".
_DECODED = r"(?:[a-z][a-z0-9]{1,7} *:[a-z]{3,6} *: )?"
# dmesg -d adds the time since the message before: "[  123.456789 <    0.000123>]". Nine digits of seconds
# are 31 years since boot: a longer number in brackets (NetworkManager's "[1703407177.2460]") is a time since 1970,
# unless it is a clock that started below zero and wrapped at 2**64 ns ("[18446744070.569440]", early after resume).
# Amlogic's vendor kernels (TV boxes, LibreELEC/CoreELEC, RDK set-tops) print the CPU after the seconds: "[  553.066682@2]".
_SECONDS = r"\[\s*(?P<seconds>(?:[0-9]{1,9}|1844674[0-9]{4})\.[0-9]{1,9})(?:@[0-9]{1,4}|\s*<\s*[0-9]{1,9}\.[0-9]{1,9}>)?\]"
_RECORD_FORMS = (
    # /dev/kmsg: "prio,seq,usec,flags;message"
    ("kmsg", lazy_compile(r"^(?P<prio>[0-9]{1,9}),(?P<seq>[0-9]{1,20}),(?P<usec>[0-9]{1,20}),[^;]*;(?P<message>.*)$")),
    # journalctl -o short-monotonic: "[  123.456789] host kernel: message"
    ("journal", lazy_compile(r"^" + _SECONDS + r" (?P<host>\S+) (?P<tag>kernel): (?P<message>.*)$")),
    # journalctl -o short-full: "Tue 2024-11-26 10:11:12 UTC host kernel: message" (the zone's name is left out)
    ("journal", lazy_compile(r"^" + _DAY + r" (?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) [A-Z][A-Za-z0-9+-]{0,5} "
                             r"(?P<host>\S+) (?P<tag>[^\s:\[]+)(?:\[\d+\])?: (?P<message>.*)$")),
    # RFC 5424 syslog: "<6>1 2024-11-26T10:11:12.123456+00:00 host kernel - - - message"
    # (rsyslog's own template may put a blank after the priority: "<6> 1 2020-11-20T18:14:19.159524+01:00 ...")
    ("syslog", lazy_compile(r"^<[0-9]{1,3}> ?1 (?P<time>" + _ISO_TIME + r") (?P<host>\S+) (?P<tag>\S+) \S+ \S+ (?:-|\[.*?\]) ?(?P<message>.*)$")),
    # The same fields written to a file without the priority: "2022-12-26T07:44:45.000000+01:00 host kernel - - - message"
    # (a tag without a colon, then a process id, message id and structured data, each "-" where there is none)
    ("syslog", lazy_compile(r"^(?P<time>" + _ISO_TIME + r") (?P<host>\S+) (?P<tag>[^\s:\[]+) (?:-|[0-9]+) \S+ (?:-|\[.*?\]) "
                            r"(?P<message>.*)$")),
    # A log without host names (a container's journal, a cut column): "Jan 31 17:38:44.384098 kernel: message"
    ("journal", lazy_compile(
        r"^(?P<time>" + _ISO_TIME + r") (?P<tag>kernel): (?P<message>.*)$")),
    ("syslog", lazy_compile(
        r"^(?P<time>" + _MONTH + r" [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<tag>kernel): (?P<message>.*)$")),
    # talosctl dmesg: "node-1: kern:    info: [2026-04-24T02:31:03.359109363Z]: message" (its dashboard's log pane
    # leaves the node out)
    ("journal", lazy_compile(
        r"^(?:(?P<host>\S+): )?(?P<facility>kern|user|daemon|syslog|auth):\s+(?P<level>[a-z]+): "
        r"\[(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]: (?P<message>.*)$")),
    # daemontools' multilog over the kernel's log: "2007-01-10 02:40:07.614768500 <6>e1000: eth0: ..." (the level
    # where a host would be)
    ("syslog", lazy_compile(r"^(?P<time>" + _ISO_TIME + r") <[0-9]{1,3}>(?P<message>.*)$")),
    # VMware ESXi 7 and later (vmkernel.log, vobd.log) write the severity and priority where a host would be:
    # "2026-02-10T08:30:43.149Z In(14) vobd[2097764]:  [netCorrelator] ...". No Linux host, and no Linux netdev's message.
    ("syslog", lazy_compile(r"^(?P<time>" + _ISO_TIME + r") (?P<level>[A-Z][a-z]\([0-9]{1,3}\)) (?P<tag>[^\s:\[]+)(?:\[\d+\])?: "
                            r"(?P<message>.*)$")),
    # journalctl -o short-iso / syslog with ISO time: "2024-01-08T10:11:12+0000 host tag[pid]: message"
    ("journal", lazy_compile(
        r"^(?P<time>" + _ISO_TIME + r") (?P<host>\S+) "
        r"(?:(?P<level>[A-Z]+) )?(?P<tag>[^\s:\[]+)(?:\[\d+\])?: (?P<message>.*)$")),
    # OpenWrt logread: "Sun Apr 27 05:48:33 2025 kern.info kernel: message"
    ("syslog", lazy_compile(
        r"^(?P<time>" + _DAY + r" " + _MONTH + r" [ \d]?\d \d\d:\d\d:\d\d \d{4}) (?P<facility>[a-z]+\.[a-z]+) "
        r"(?P<tag>[^\s:\[]+)(?:\[\d+\])?: (?P<message>.*)$")),
    # rsyslog with the year first, as SONiC writes it: "2025 Oct  3 00:45:17.098692 sonic INFO kernel: message"
    ("syslog", lazy_compile(
        r"^(?P<time>\d{4} " + _MONTH + r" [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>\S+) (?:(?P<level>[A-Z]+) )?"
        r"(?P<tag>[^\s:\[]+)(?:\[\d+\])?: (?P<message>.*)$")),
    # netconsole received by rsyslog into a host's file: no tag, the kernel's time stamp right after the host
    # ("Jan 10 10:54:17 pytest-11.local [57253.352107] bond1: link status definitely down ...")
    ("syslog", lazy_compile(
        r"^(?P<time>" + _MONTH + r" [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>[^\s:\[]+) (?P<message>\[\s*[0-9]{1,12}\.[0-9]{1,9}\].*)$")),
    # journalctl short / classic syslog: "Mar 27 15:37:34 host tag[pid]: message", optional level word; BusyBox's
    # syslogd writes the facility and level there: "Jan  1 00:00:30 (none) user.notice kernel: message"
    ("syslog", lazy_compile(
        r"^(?P<time>" + _MONTH + r" [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>\S+) (?:(?P<level>[A-Z]+) |(?P<facility>[a-z]+\.[a-z]+) )?"
        r"(?P<tag>[^\s:\[]+)(?:\[\d+\])?: (?P<message>.*)$")),
    # dmesg -T: "[Mon Jan  8 10:11:12 2024] message"; a node's name glued before it where several nodes' logs were
    # gathered into one ("x4207c7s5b0n0:[Wed Nov  8 13:26:51 2023] message")
    ("dmesg", lazy_compile(
        r"^(?:(?P<host>[A-Za-z][\w.-]*):)?\[(?P<time>" + _DAY + r" " + _MONTH + r" [ \d]?\d \d\d:\d\d:\d\d \d{4})\]" + _CALLER + _CPU_COLUMN
        + r" ?(?P<message>.*)$")),
    # dmesg: "[ 1202.718785] message"; dmesg -r and pstore's dmesg put the level first: "<6>[ 14.952018] message"
    ("dmesg", lazy_compile(r"^(?:<[0-9]{1,3}>)?" + _DECODED + _SECONDS + _CALLER + _CPU_COLUMN + r" ?(?P<message>.*)$")),
    # dmesg -H (--human): the minute once, "[Feb13 11:35] message", then the time since the record before,
    # "[  +0.113671] message"; no time a duration can be measured with.
    ("dmesg", lazy_compile(r"^\[(?P<time>" + _MONTH + r" ?[ \d]?\d \d\d:\d\d)\] ?(?P<message>.*)$")),
    ("dmesg", lazy_compile(r"^\[\s*\+\s*[0-9]{1,12}\.[0-9]{1,9}\] ?(?P<message>.*)$")),
    # dmesg --time-format iso: "2024-11-26T10:11:12,123456+00:00 message" (a comma before the microseconds);
    # with -x, as gpud reads the kernel log: "kern  :info  : 2025-01-17T15:37:28,650514+00:00 message"
    ("dmesg", lazy_compile(r"^" + _DECODED + r"(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d) (?P<message>.*)$")),
    # The same after a prefix of another tool's (a test harness's "INFO - INFO - ", a timestamped
    # console capture): short, without a bracket, before the kernel's own time stamp.
    # Nine digits of seconds at most: a longer number in brackets (NetworkManager's "[1526537213.5872]") is a
    # time since 1970, not since boot.
    ("dmesg", lazy_compile(r"^[^\[\]]{1,60}?\s\[\s*(?P<seconds>[0-9]{1,9}\.[0-9]{1,9})\]" + _CALLER + _CPU_COLUMN + r" ?(?P<message>.*)$")),
    # A console of a kernel built with CONFIG_PRINTK_CALLER and printk times off prints the caller alone where the time
    # would be: "[ T3256] igb 0000:09:00.0 haeth0: igb: haeth0 NIC Link is Down". A record without a time.
    ("dmesg", lazy_compile(r"^(?:<[0-9]{1,3}>)?\[\s*[TC][0-9]{1,10}\] ?(?P<message>.*)$")),
    # The level without a time stamp: dmesg -r (or /proc/kmsg, a 2.4 or 2.6 console) on a kernel built without printk
    # times, "<6>e1000: eth0 NIC Link is Up 100 Mbps Full Duplex". Last, so that every form above with more fields wins.
    ("dmesg", lazy_compile(r"^<[0-9]{1,3}>(?P<message>.*)$")),
    # A journal or syslog line whose clock an author replaced by dots (docs, tickets) keeps its date, host and tag:
    # "Sep 04 ... colima systemd-networkd[416]: docker0: Lost carrier". A record without a time: the date alone gives none.
    ("syslog", lazy_compile(r"^" + _MONTH + r" [ \d]?\d (?:\.{2,}|\u2026) (?P<host>[^\s:\[]+) (?P<tag>[^\s:\[]+)(?:\[[0-9]+\])?: "
                            r"(?P<message>.*)$")),
    # A journal or syslog line whose time was cut off (cut -d' ' -f4-, a paste made anonymous) keeps its host and tag:
    # "host kernel: r8169 0000:02:00.0 enp2s0: Link is Down". Only the kernel's tag or a program's "name[pid]" after
    # the one word: two words before any other colon are prose, not a host and a tag.
    ("syslog", lazy_compile(r"^(?P<host>[A-Za-z0-9][\w.-]*) (?P<tag>kernel|[^\s:\[]+(?=\[[0-9]+\]: ))(?:\[[0-9]+\])?: (?P<message>.*)$")),
)
# A capture tool's bracketed prefix before the kernel's record: "[2026-09-03 05:50:31.887 DebugInfo I] [Thu Sep ...] ..."
_HARNESS_PREFIX = lazy_compile(r"^\[[^\]]{1,80}\]\s+(?=\[)")
# Inside a syslog message the kernel's own time stamp may follow: "kernel: [10601.214044] igb ..."
_KERNEL_SECONDS = lazy_compile(r"^\[\s*(?P<seconds>[0-9]{1,12}\.[0-9]{1,9})\]" + _CALLER + _CPU_COLUMN + r" ?(?P<message>.*)$")
# ifplugd's tag names the interface it watches: "ifplugd(eth0)".
_IFPLUGD_TAG = lazy_compile(r"^ifplugd\([\w.@-]+\)$")
# A program that writes to the kernel log (systemd-networkd, udevd) tags its message: "name[pid]: "; a
# line cut after its host keeps the kernel's or NetworkManager's tag alone: "kernel: ", "NetworkManager: ".
_PROGRAM_TAG = lazy_compile(r"^(?:[\w.-]+\[[0-9]+\]|kernel|NetworkManager|systemd-networkd): ")
# A console that forwards journald's lines may cut the program's name and keep its colon: ": enP5p1s0f1: Lost carrier".
# What follows is read as a bare message, as it would be without the colon.
_CUT_TAG = lazy_compile(r"^: (?=\S)")
# journalctl's own lines between the entries: "-- No entries --", "-- Boot 0f2e... --", "-- Logs begin at ... --".
_JOURNAL_MARKER = lazy_compile(r"^\s*-- .* --\s*$")
# A console that dropped messages prefixes the next one: "11 printk messages dropped ** "
_DROPPED = lazy_compile(r"^\d+ printk messages dropped \*\* ")

_PCI_ADDRESS = lazy_compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")

# Carrier messages, as the kernel (drivers, bonding, IPv6 addrconf) and systemd-networkd write them.
_EVENT_FORMS = (
    # e1000 before 2.6.2x names its function too, "e1000: eth0: e1000_watchdog: NIC Link is Up 100 Mbps ...": first,
    # as the general form below would take the function for the netdev.
    ("driver", lazy_compile(r"^(?P<driver>e1000e?|e100|igb|ixgb|ixgbe): (?P<netdev>[\w.@-]+): \w+_watchdog\w*: "
                            r"(?:NIC\s+Link\s+is|link)\s+(?P<state>up|down)\b",
                            re.IGNORECASE)),
    # mlx5_core 0000:01:00.1 eth1: Link up / ixgbe ... eth11: NIC Link is Down / igb ...: igb: eth0 NIC
    # Link is Down / mt7530-mdio mdio-bus:1f lan: Link is Up - 1Gbps/Full / mlx4_en: eth2: Link Down /
    # r8169 0000:0b:00.0: eth0: link down (older kernels: a colon after the bus id)
    # (an mlx5 subfunction's auxiliary driver has a dot in its name: "mlx5_core.sf mlx5_core.sf.4 enp3s0f0s88: Link up")
    ("driver", lazy_compile(
        r"^(?:(?P<driver>[\w-]+(?:\.[\w-]+)?):? (?:(?P<bus_id>[\w:.@-]*[\w.]):? )?)?(?P<netdev>[\w.@-]+): (?:[\w-]+: (?P=netdev) )?"
        # bnx2 names the medium: "NIC Copper Link is Down", "NIC SerDes Link is Up", "NIC Remote Copper Link is Up";
        # gve (Google's gVNIC) the device: "gve 0000:00:03.0 eth0: Device link is up."
        r"(?:NIC\s+(?:Remote )?(?:Copper |SerDes )?|Device\s+)?Link\s+(?:is\s+)?(?P<state>up|down)\b", re.IGNORECASE)),
    # e1000e before 2.6.30 named the PCI function without the driver: "0000:05:00.1: eth1: Link is Up 100 Mbps Full Duplex"
    ("driver", lazy_compile(r"^(?P<bus_id>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): (?P<netdev>[\w.@-]+): "
                            r"(?:NIC\s+)?Link\s+(?:is\s+)?(?P<state>up|down)\b", re.IGNORECASE)),
    # The older drivers' form, the netdev after the driver's name without a colon: "e1000e: eth1 NIC Link is Down",
    # "bnx2: eth0 NIC Copper Link is Down", "netxen_nic: eth3 NIC Link is up"; atl1c and atl1e print it with dev_info,
    # whose device prefix comes first: "atl1c 0000:01:00.0: atl1c: eth0 NIC Link is Up<10 Mbps Half Duplex>"
    ("driver", lazy_compile(r"^(?:[\w-]+ (?P<bus_id>[\w:.@-]*[\w.]): )?(?P<driver>[\w-]+): (?P<netdev>[\w.@-]+) "
                            r"NIC (?:Remote )?(?:Copper |SerDes )?Link is (?P<state>up|down)\b", re.IGNORECASE)),
    # atl1 (Attansic L1) too, in lower case and without the driver's name again: "atl1 0000:02:00.0: eth0 link is up 100
    # Mbps full duplex", "atl1 0000:02:00.0: eth0 link is down" (the device a PCI function, so that no other device's
    # "... link is up" is taken for a netdev's)
    ("driver", lazy_compile(r"^(?P<driver>[\w-]+) (?P<bus_id>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): "
                            r"(?P<netdev>[\w.@-]+) link is (?P<state>up|down)\b")),
    # Cavium Octeon's octeon_ethernet (cvm_oct_note_carrier) says its carrier coming up without the word link, then the
    # port and queue: "eth1: 1000 Mbps Full duplex, port  1, queue  1" (and going down as the others do: "eth1: Link down").
    # Only that whole line, port and queue included, is read: speed and duplex alone are many drivers' words.
    ("driver", lazy_compile(r"^(?P<netdev>[\w.@-]+): [0-9]+ Mbps (?:Full|Half) duplex, port +[0-9]+, queue +[0-9]+\s*$")),
    # sis900: "eth0: Media Link On 100mbps full-duplex", "eth0: Media Link Off"
    ("driver", lazy_compile(r"^(?P<netdev>[\w.@-]+): Media Link (?P<state>On|Off)\b")),
    # alx (Qualcomm Atheros AR81xx) says its carrier coming up its own way: "alx 0000:05:00.0 enp5s0: NIC Up: 1 Gbps Full"
    # (and going down as the others do: "... enp5s0: Link Down")
    ("driver", lazy_compile(r"^(?P<driver>alx) (?P<bus_id>[\w:.@-]*[\w.]) (?P<netdev>[\w.@-]+): NIC (?P<state>Up|Down)\b")),
    # bond0: link status definitely down for interface eno50, disabling it
    # bond0: (slave ens12f0np0): link status definitely down, disabling slave
    # bond0: link status up again after 0 ms for interface eth2 (back within miimon's down delay)
    # bonding: bond0: link status down for idle  interface eth3, disabling it in 200 ms. (before 3.x)
    ("bonding", lazy_compile(
        r"^(?:bonding: )?(?P<bond>[\w.@-]+): (?:\(slave (?P<slave>[^)]+)\): )?link status (?:definitely )?(?P<state>up|down)"
        r"(?: again after -?[0-9]+ ms)?(?: for (?:idle\s+)?interface (?P<interface>[^,\s]*[^,\s.]))?")),
    # bond1: now running without any active interface! / bond0: active interface up! / bond0: first active
    # interface up! (the bond's own carrier, as the bonding driver turns it off and on)
    ("bonding", lazy_compile(r"^(?:bonding: )?(?P<netdev>[\w.@-]+): (?:now running without any active interface|"
                             r"(?P<up>(?:first )?active interface up!))")),
    # IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready
    ("addrconf", lazy_compile(r"^(?:IPv6: )?ADDRCONF\(NETDEV_CHANGE\): (?P<netdev>[\w.@-]+): link becomes ready")),
    # systemd-networkd: ib0: Lost carrier / ib0: Gained carrier (a real log of Azure's health checks has "lost carrier");
    # before systemd 220 the name padded to 16 columns: "eth0            : gained carrier"
    ("networkd", lazy_compile(r"^(?P<netdev>[\w.@-]+) {0,15}: (?P<state>Lost|Gained) carrier\b", re.IGNORECASE)),
    # NetworkManager, in a syslog: "<info>  (eth0): carrier now OFF (device state 3)" (before 1.0),
    # "<info>  (enp0s3): link disconnected (deferring action for 4 seconds)" and "<info>  [1519094631.2781] device (eno1):
    # link connected" (1.0 to 1.10, without the word carrier), "<info>  [1526537213.5872] device (eth0): carrier: link
    # connected" (later), "device (eth0): carrier: ..." where a document cut its level and time
    ("networkmanager", lazy_compile(r"^(?:<?(?:info|debug|warn|notice)>\s+(?:\[[0-9.]+\]\s+)?(?:device )?|device )"
                                    r"\((?P<netdev>[\w.@-]+)\): "
                                    r"(?:carrier now (?P<now>ON|OFF)\b|(?:carrier: )?link (?P<link>connected|disconnected)\b)")),
    ("driver", lazy_compile(r"^(?P<driver>r8152|r8153_ecm|cdc_ncm|ax88179_178a)(?: (?P<bus_id>[\w:.@-]*[\w.]))? (?P<netdev>[\w.@-]+): "
                            r"carrier (?P<state>on|off)\s*$")),
    ("dhcpcd", lazy_compile(r"^(?P<netdev>[\w.@-]+): carrier (?P<state>lost|acquired)\s*$")),
    # cdc_ncm (and cdc_mbim, huawei_cdc_ncm, which share its handler) says the device's network-connection notification,
    # which sets the netdev's carrier (usbnet_link_change): "cdc_ncm 1-1:2.0 enx002427880815: network connection: disconnected"
    ("driver", lazy_compile(r"^(?P<driver>[\w-]+) (?P<bus_id>[\w:.@-]*[\w.]) (?P<netdev>[\w.@-]+): "
                            r"network connection: (?P<state>connected|disconnected)\s*$")),
    # NXP's dpaa2-eth says the carrier it has just set from the firmware's link state: "fsl_dpaa2_eth dpni.0 eth1: Link Event:
    # state up" (and "... state down")
    ("driver", lazy_compile(r"^(?:(?P<driver>[\w-]+) (?P<bus_id>[\w:.@-]*[\w.]) )?(?P<netdev>[\w.@-]+): "
                            r"Link Event: state (?P<state>up|down)\s*$")),
    # HPE Slingshot's cxi driver, whose Ethernet side follows the link: "cxi_core 0000:c3:00.0: cxi3[hsn3] CXI_EVENT_LINK_DOWN"
    ("driver", lazy_compile(r"^(?P<driver>cxi_core|cxi_ss1) (?P<bus_id>[\w:.]*[\w.]): cxi[0-9]+\[(?P<netdev>[\w.@-]+)\] "
                            r"CXI_EVENT_LINK_(?P<state>UP|DOWN)\b")),
    # ifplugd, its interface in its tag: "ifplugd(swp24)[788559]: Link beat lost.", "...: Link beat detected.",
    # "...: Initialization complete, link beat detected."
    ("ifplugd", lazy_compile(r"^ifplugd\((?P<netdev>[\w.@-]+)\)(?:\[[0-9]+\])?: (?:.*\s)?link\s+beat\s+(?P<state>lost|detected)\b",
                             re.IGNORECASE)),
    # ASIX's USB adapters, the kernel's driver ("ax88179_178a 3-13.2.3.3:1.0 eth0: ax88179 - Link status is: 1") and the
    # vendor's own ("eth0: ax88772b - Link status is: 0"): 1 is the carrier on, 0 off (repeated while it stays off).
    ("driver", lazy_compile(r"^(?:(?P<driver>ax88179_178a|asix)(?: (?P<bus_id>[\w:.@-]*[\w.]))? )?(?P<netdev>[\w.@-]+): "
                            r"ax88\w+ - Link status is: (?P<state>[01])\s*$")),
    # qede (QLogic/Marvell FastLinQ) puts its function and line first: [qede_link_update:2426(p6p4)]Link is down,
    # [qede_unload:2244(p6p4)]Link is down
    ("driver", lazy_compile(r"^\[(?P<driver>qede)_\w+:[0-9]+\((?P<netdev>[\w.@-]+)\)\]\s*Link is (?P<state>up|down)\b",
                            re.IGNORECASE)),
    # atlantic (Aquantia/Marvell AQtion) names the speeds before and after: "atlantic 0000:0a:00.0 eno2: atlantic:
    # link change old 10000 new 0" turns the carrier off, "old 0 new 10000" on; two speeds is a speed change.
    ("driver", lazy_compile(r"^(?P<driver>atlantic) (?:(?P<bus_id>[\w:.@-]*[\w.]) )?(?P<netdev>[\w.@-]+): atlantic: "
                            r"link change old (?P<old>[0-9]+) new (?P<new>[0-9]+)\b")),
    # OpenWrt's netifd, in logread: "daemon.notice netifd: Network device 'eth4' link is down"
    ("netifd", lazy_compile(r"^(?:netifd(?:\[[0-9]+\])?: )?Network device '(?P<netdev>[\w.@-]+)' link is (?P<state>up|down)\b")),
)
# systemd-networkd's "eth0: Link UP" / "eth0: Link DOWN" says the interface was set up or down (IFF_UP), not
# that its carrier changed ("Gained carrier" / "Lost carrier" do): a wlan0 without a carrier is "Link UP" too.
_NETWORKD_ADMIN_STATE = lazy_compile(r"^[\w.@-]+: Link (?:UP|DOWN)\s*$")
# r8152's own words for its carrier: "r8152 4-1.1.3:1.0 enx00e04cf4ead4: carrier off", "... carrier on".
# dhcpcd's, in a syslog: "dhcpcd[505]: wlan0: carrier lost", "wlan0: carrier acquired".
# A console that printed one record into the middle of another ("...dhcp for interfa[  142.361359] bnxt_en ...").
_EMBEDDED_STAMP = lazy_compile(r"\[\s*[0-9]{1,12}\.[0-9]{1,9}\] ")
# A mail that wraps at a blank may wrap such a line inside that record's stamp, after its bracket or after the whole stamp:
# "...dhcp for interfa[" / "142.361359] bnxt_en 0000:3b:00.1 eno3np1: NIC Link is Up, ...". The line then ends in the stamp.
_STAMP_CUT_AT_END = lazy_compile(r"\S\[\s*(?:[0-9]{1,12}\.[0-9]{1,9}\])?$")  # on the line without its trailing blanks
# Only a message whose halves speak of a link or a carrier is tried whole (the cheap test before the others).
_LINK_WORD = lazy_compile(r"link|carrier", re.IGNORECASE)
# Words that make an unmatched record worth a note: it may be a carrier change in a form not known here.
# Messages about a link this parser does not count, noted: mlx5's cable module events ("Port module event:
# module 1, Cable unplugged", "Port module event[error]: ...") say why a link went down, not that it did; ESXi's vobd says a
# vmnic's ("[vob.net.vmnic.linkstate.down] vmnic vmnic4 linkstate down"), which is no Linux netdev's.
_LINKISH = lazy_compile(r"\b(?:link|carrier)\b.*\b(?:down|up|lost|not ready)\b|\b(?:lost|gained) carrier\b|\bcarrier-changed\b"
                        r"|\blink status is\b|\bport module event\b|\bcable (?:unplugged|error)\b|\bmodule is not present\b"
                        r"|\bnetwork connection: (?:dis)?connected\b|\blinkstate (?:down|up)\b", re.IGNORECASE)
# A shell prompt ("$ ", "root@node:~# ", "[user@host ~]$ ", "mysql> "); a kernel tag such as "<mlx4_ib>"
# before a message, or an arrow ("-> cpu: 4"), is not one.
# The match is the prompt itself: what follows it on its line is the command, or a record a console printed there.
_PROMPT = lazy_compile(r"^\s*(?:(?!<)\S*(?:[$#]|(?<!-)>)|\[[^\]]*\][$#])\s+(?=\S)")
# A mail's quote marks before a pasted log (">> [18865.848172] mlx5_core ..."), possibly nested.
_QUOTE_MARKS = lazy_compile(r"^\s*(?:>[ \t]*)+(?=\S)")


def _journal_json(text):
    """``(kind, time text, monotonic seconds, host, message)`` of a ``journalctl -o json`` entry, or None.

    The time is the entry's ``__REALTIME_TIMESTAMP`` (microseconds since the epoch) in ISO form, the
    monotonic seconds its ``__MONOTONIC_TIMESTAMP``; a ``MESSAGE`` journald kept as bytes (an array) is
    no text to read."""
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("MESSAGE"), str):
        return None

    def microseconds(key):
        value = entry.get(key)
        return int(value) if isinstance(value, str) and value.isdigit() and len(value) <= 19 else None

    realtime, monotonic = microseconds("__REALTIME_TIMESTAMP"), microseconds("__MONOTONIC_TIMESTAMP")
    moment = None
    if realtime is not None and realtime < 253402300800 * 10 ** 6:  # before the year 10000
        moment = datetime.datetime.fromtimestamp(realtime / 1e6, datetime.timezone.utc).isoformat()
    host = entry.get("_HOSTNAME") if isinstance(entry.get("_HOSTNAME"), str) else None
    return "journal", moment, monotonic / 1e6 if monotonic is not None else None, host, entry["MESSAGE"]


def _record(line):
    """``(kind, time text, monotonic seconds, host, message)`` of a log line, or None."""
    text = _DROPPED.sub("", line.strip())
    harness = _HARNESS_PREFIX.match(text)
    if harness:  # a tool's own bracketed prefix before a bracketed kernel record (one prefix: no recursion on node text)
        inner = _record_of(text[harness.end():])
        if inner is not None and (inner[1] is not None or inner[2] is not None):
            return inner
        # Only a record with a time follows a tool's prefix: "[    7.370479] [    T179] r8169 ..." is the kernel's stamp
        # and util-linux's caller column, not a prefix before a console's record without a time ("[ T179] r8169 ...").
        return _record_of(text) or inner
    return _record_of(text)


def _record_of(text):
    """:func:`_record` of a line without a capture tool's prefix."""
    if text.startswith("{") and text.endswith("}") and text[1:].lstrip().startswith('"'):
        return _journal_json(text)  # '{"__CURSOR": ...}', or older systemd's '{ "__CURSOR" : ... }'

    for kind, form in _RECORD_FORMS:
        match = form.match(text)
        if not match:
            continue
        fields = match.groupdict()
        seconds = None
        if fields.get("usec"):
            seconds = int(fields["usec"]) / 1e6
        elif fields.get("seconds"):
            seconds = float(fields["seconds"])
        message = fields["message"]
        if _IFPLUGD_TAG.match(fields.get("tag") or ""):
            message = "%s: %s" % (fields["tag"], message)  # ifplugd names its interface in its tag only
        inner = _KERNEL_SECONDS.match(message) if kind in ("syslog", "journal") else None
        if inner:
            seconds, message = float(inner.group("seconds")), inner.group("message")
        if kind in ("dmesg", "kmsg"):
            message = _PROGRAM_TAG.sub("", message, count=1)
        return kind, fields.get("time"), seconds, fields.get("host"), message
    return None


# Links that are no network device's, in the driver form's shape: a PCIe controller's, named by its device-tree
# node ("imx6q-pcie 33c00000.pcie: Link up", "brcm-pcie fd500000.pcie: link up, 5.0 GT/s PCIe x1"), and a SCSI
# host's Fibre Channel link ("host2: libfc: Link down on port (7500a1)").
# phylink names a MAC that is a device of its own by that device, not by a netdev: an SPI switch's port ("spi0.1"), and an
# NXP DPAA2 MAC, an object of the fsl-mc bus ("fsl_dpaa2_mac dpmac.17: Link is Up - 1Gbps/Full"; the netdev is a dpni's).
_NODE_ADDRESS_NAME = lazy_compile(r"^(?:[0-9a-fA-F]{4,16}\.[\w-]+|spi[0-9]+\.[0-9]+|dp[a-z]{2,6}\.[0-9]+)$")
_SCSI_HOST = lazy_compile(r"^host[0-9]+$")


def _event(message):
    """``(source, netdev, carrier, bond, bus_id)`` of a carrier message, or None."""
    if _NETWORKD_ADMIN_STATE.match(message):
        return None
    for source, form in _EVENT_FORMS:
        match = form.match(message)
        if not match:
            continue
        fields = match.groupdict()
        if source == "bonding" and fields.get("bond") is not None:
            # bonding's link status is always a slave's ("for interface X", or "(slave X)"): a message
            # without one was cut (a wrapped paste) and is not the bond's own.
            netdev = fields.get("slave") or fields.get("interface")
            if netdev is None:
                return None
            return source, netdev, fields["state"], fields["bond"] if netdev != fields["bond"] else None, None
        if source == "bonding":
            return source, fields["netdev"], "up" if fields.get("up") else "down", None, None
        if source == "addrconf":
            return source, fields["netdev"], "up", None, None
        if source in ("networkd", "dhcpcd", "ifplugd"):
            return source, fields["netdev"], "down" if fields["state"].lower() == "lost" else "up", None, None
        if source == "networkmanager":
            return source, fields["netdev"], "up" if fields.get("now") == "ON" or fields.get("link") == "connected" else "down", None, None
        if (_NODE_ADDRESS_NAME.match(fields["netdev"]) or fields["netdev"] == "libfc"
                or _SCSI_HOST.match(fields.get("driver") or "")):
            return None
        if fields.get("new") is not None:
            if (fields["old"] == "0") == (fields["new"] == "0"):
                return None  # from one speed to another (or 0 to 0): the carrier stayed as it was
            return source, fields["netdev"], "down" if fields["new"] == "0" else "up", None, fields.get("bus_id")
        if fields.get("state") is None:  # Octeon's line with the speed, port and queue, printed only as its link comes up
            return source, fields["netdev"], "up", None, fields.get("bus_id")
        state = {"on": "up", "off": "down", "1": "up", "0": "down", "connected": "up", "disconnected": "down"}.get(
            fields["state"].lower(), fields["state"].lower())
        return source, fields["netdev"], state, None, fields.get("bus_id")
    return None


def parse_carrier_events(data):
    """Carrier losses and gains of network devices in kernel-log text.

    Reads ``dmesg`` (plain, ``-T``, ``-d``, ``-x``, ``--time-format iso``), ``/dev/kmsg`` records, ``journalctl``
    (short, short-iso, short-monotonic, short-full and json), syslog (classic and RFC 5424) and OpenWrt
    ``logread`` lines, consoles (also with the printk caller and no time), mixed and with shell prompts. Returns
    ``{"events", "netdevs", "notes", "lines", "records", "end"}``: every carrier change in order; per
    netdev the counts of ``down`` and ``up`` events, ``losses`` (changes from up, or from the start,
    to down; a message repeated while already down is not another loss) and the ``last`` state;
    ``notes`` for lines that are not log records (prompts, pasted noise) and for records that
    speak of a link going down in a form this parser does not know; ``end``, the time of the log's
    last record (``{"time", "monotonic_seconds"}``, None without one), which
    :func:`carrier_down_periods` measures a link still down at the end of the log to; where a host's kernel
    clock goes back between records while the wall clock does not (a reboot), ``end`` also has ``boot_ends`` (see
    :func:`iter_carrier_events`), a note names the line, and a link down before it is measured to the end of its
    boot. A log printed
    newest first (``journalctl -r``), whose records' wall-clock times only go back, is read oldest first, with a note.
    """
    lines = _lines(data, "parse_carrier_events")
    tally = {"lines": 0, "records": 0, "unread": 0, "end": None, "first": None}
    notes = []
    events = list(iter_carrier_events(lines, tally, notes))
    end = tally["end"]
    if _newest_first(events, tally.get("wall_order")):
        events.reverse()
        end = tally["first"]
        notes.append({"line": None, "text": None,
                      "reason": "the log is printed newest first (journalctl -r): its events are read from the last line up"})
    return {"events": events, "netdevs": summarize_carrier(events), "notes": notes, "lines": len(lines),
            "records": tally["records"], "end": end}


def _newest_first(events, wall_order=None):
    """Whether a log comes newest first (``journalctl -r``): its records' wall-clock times (``wall_order``, as
    :func:`iter_carrier_events` counts their steps) never go forward and go back at least twice, or, where the
    records do not say so, three or more ``events`` whose wall-clock times only go back. Two times going back once
    could be one record out of order, and the kernel's own clock going back is a reboot."""
    if wall_order and wall_order["forward"] == 0 and wall_order["back"] >= 2:
        return event_clock(events)[0] is None or len({event.get("time") for event in events}) <= 1
    if len(events) < 3 or event_clock(events)[0] is not None:
        return False
    return event_clock(events[::-1])[0] in ("wall", "syslog (no year)")


# A kernel message is at most about 1 KiB (printk) and journald cuts lines at 48 KiB: past this many
# characters a line is read by its start only, so no pattern ever works on megabytes of one line.
MAX_LOG_LINE = 8192


def iter_text_lines(data, backwards=False):
    """The lines of log ``data`` (str, or bytes-like decoded line by line) one at a time.

    For bytes no decoded copy of the whole text is made, so reading a large log costs little more
    than its bytes. ``backwards`` yields the last line first (for output printed newest first).
    Line boundaries are those of ``str.splitlines``.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not backwards:
        for raw in io.BytesIO(data):
            yield from raw.decode("utf-8", "replace").splitlines()
        return
    end = len(data)
    while end > 0:
        start = data.rfind(b"\n", 0, end - 1) + 1
        yield from reversed(bytes(data[start:end]).decode("utf-8", "replace").splitlines())
        end = start


def iter_carrier_events(lines, tally, notes=None):
    """Yield each carrier change of ``lines`` (any iterable of str), in order.

    ``tally`` gets the counts of ``lines``, ``records`` and ``unread`` (lines that are neither a record nor
    blank nor one of journalctl's own ``-- ... --`` lines) and the time of the last record with one
    (``end``), with ``boot_ends`` where a host's kernel clock goes back while the wall clock does not (a reboot):
    per earlier boot the last times the log shows of it, ``{"line", "time", "monotonic_seconds", "host"}``, ``line``
    the next boot's first record; ``notes``, when given, gets the notes
    :func:`parse_carrier_events` returns (a caller that only counts keeps memory flat by not asking).
    Two forms of pasted text are read whole: a carrier message a mail wrapped onto the next line
    ("eth1: NIC" / "Link is Up"), or a narrow column onto the next two, and a record a console printed into the middle of another line, also where a mail
    wrapped that line inside the record's stamp ("...for interfa[" / "142.361359] bnxt_en ... NIC Link is Up").
    """
    numbered = enumerate(lines, 1)
    ahead = next(numbered, None)
    later = next(numbered, None)  # and the line after it: a record a narrow column wrapped twice is read with both
    while ahead is not None:
        number, line = ahead
        ahead, later = later, next(numbered, None)
        tally["lines"] = number
        line = _QUOTE_MARKS.sub("", line[:MAX_LOG_LINE])
        if not line.strip():
            continue
        record = _record(line)
        if record is None:
            # A bare message (pasted without its time stamp) still counts when it is a carrier change.
            bare = _DROPPED.sub("", line.strip())
            found = _event(bare)
            if found is None:  # a program's line pasted without its time and host: "systemd-networkd[525]: usb0: Gained carrier"
                untagged = _PROGRAM_TAG.sub("", bare, count=1)
                untagged = _CUT_TAG.sub("", untagged, count=1) if untagged == bare else untagged
                found = _event(untagged) if untagged != bare else None
                bare = untagged if found is not None else bare
            prompt = _PROMPT.match(bare) if found is None else None
            if prompt:  # a serial console's kernel record printed right after the shell's prompt: "root@host:~# ixgbe ..."
                after = bare[prompt.end():]
                found = _event(after)
                bare = after if found is not None else bare
            embedded = _embedded_record(line) if found is None else None
            if found is None and embedded is None and ahead is not None:
                embedded = _wrapped_embedded_record(bare, ahead[1])
                if embedded is not None:
                    tally["lines"], ahead, later = ahead[0], later, next(numbered, None)
            if found is None and embedded is None:
                if not _JOURNAL_MARKER.match(line):
                    tally["unread"] = tally.get("unread", 0) + 1
                if notes is not None:
                    reason = "a shell prompt" if _PROMPT.match(line) else "not a log record"
                    notes.append({"line": number, "text": line, "reason": reason})
                continue
            record = embedded or (None, None, None, None, bare)
        tally["records"] += 1
        kind, time_text, seconds, host, message = record
        if time_text is not None or seconds is not None:
            if _follow_clocks(tally, number, time_text, seconds, host) and notes is not None:
                notes.append({"line": number, "text": line, "reason": _REBOOT_NOTE})
            if tally.get("first", False) is None:
                tally["first"] = tally["end"]
        found = _event(message)
        if found is None and ahead is not None:
            wrapped = _wrapped_event(message, ahead[1], later[1] if later is not None else None)
            if wrapped is not None:
                found, message, joined = wrapped
                for dummy in range(joined):
                    tally["lines"], ahead, later = ahead[0], later, next(numbered, None)
        if found is None:
            embedded = _embedded_record(message)
            if embedded is None and ahead is not None:
                embedded = _wrapped_embedded_record(message, ahead[1])
                if embedded is not None:
                    tally["lines"], ahead, later = ahead[0], later, next(numbered, None)
            if embedded is not None:
                kind, time_text, seconds, dummy, message = embedded
                if _follow_clocks(tally, number, time_text, seconds, host) and notes is not None:
                    notes.append({"line": number, "text": line, "reason": _REBOOT_NOTE})
                found = _event(message)
        if found is None:
            if notes is not None and _LINKISH.search(message):
                notes.append({"line": number, "text": line, "reason": "a link message this filter does not read"})
            continue
        source, netdev, carrier, bond, bus_id = found
        yield {
            "line": number,
            "netdev": netdev,
            "carrier": carrier,
            "source": source,
            "bond": bond,
            "pci_address": bus_id if bus_id and _PCI_ADDRESS.match(bus_id) else None,
            "time": time_text,
            "monotonic_seconds": seconds,
            "host": host,
            "log_format": kind,
            "message": message,
        }


# A kernel clock printed near 2**64 ns started below zero and wrapped (early after a resume): it says nothing of
# the order of the records around it.
_WRAPPED_SECONDS = 18446740000.0
# printk's time stamps of records from different CPUs can come a little out of order: the kernel's clock going back
# by more than this is a reboot (where the wall clock says so, see _follow_clocks), by less it is not.
_KERNEL_CLOCK_JITTER = 1.0
# The most boots' ends, and hosts whose kernel clock is followed, one log keeps (a log of more is measured as if
# the later ones were not there): what a reader keeps stays small whatever the text.
MAX_BOOT_ENDS = 64
MAX_CLOCK_HOSTS = 1024
_REBOOT_NOTE = ("the kernel's clock goes back here while the wall clock does not (a reboot): a link down before it is "
                "counted down to the last record before it, not through the reboot")


def _follow_clocks(tally, number, time_text, seconds, host):
    """Count the record of line ``number`` (its wall-clock ``time_text``, its kernel ``seconds``, its ``host``) into
    ``tally``; True where it is the first record of the host's next boot.

    ``tally`` gets ``end``, this record's times; ``wall_order``, how often the wall clock went back and forward
    from one record to the next, until it first goes forward (a log printed newest first only goes back; a time is
    read only while that is still open, so a log in order costs little); and ``end["boot_ends"]`` where a host's
    kernel clock goes back while the wall clock does not (a syslog's kernel records of the next boot): per earlier
    boot the last times the log shows before the next, ``{"line", "time", "monotonic_seconds", "host"}``, ``line`` the
    next boot's first record. Without wall-clock times (dmesg) a console that printed a record late cannot be told
    from a reboot, so none is counted there (:func:`carrier_down_periods` still ends a boot where its events' own
    kernel seconds go back).
    """
    clocks = tally.get("clocks")
    if clocks is None:
        clocks = tally["clocks"] = {"text": None, "wall": None, "yearless": None, "kernel": {}, "last_time": None}
        tally["wall_order"] = {"back": 0, "forward": 0}
    order = tally["wall_order"]
    if time_text is not None and time_text != clocks["text"] and order["forward"] == 0:
        wall, yearless = _wall_seconds(time_text)
        if wall is not None:  # a time of another form than the last one's (a year, or none) is not compared with it
            if clocks["wall"] is not None and yearless == clocks["yearless"] and wall != clocks["wall"]:
                order["back" if wall < clocks["wall"] else "forward"] += 1
            clocks.update(text=time_text, wall=wall, yearless=yearless)
    reboot = False
    kernel = clocks["kernel"]  # per host (a central syslog's hosts each have a clock of their own): (latest seconds, time)
    if (seconds is not None and time_text is not None and seconds < _WRAPPED_SECONDS
            and (host in kernel or len(kernel) < MAX_CLOCK_HOSTS)):
        latest, then = kernel.get(host, (None, None))
        if latest is not None and seconds < latest - _KERNEL_CLOCK_JITTER:
            now, before = _wall_seconds(time_text), _wall_seconds(then)
            # A reboot where the wall clock did not go back as well (a log printed newest first, records out of order).
            reboot = now[0] is not None and before[0] is not None and now[1] == before[1] and now[0] >= before[0]
            if reboot and len(tally.setdefault("boot_ends", [])) < MAX_BOOT_ENDS:
                tally["boot_ends"].append({"line": number, "time": clocks["last_time"], "monotonic_seconds": latest, "host": host})
            kernel[host] = (seconds, time_text)
        else:
            kernel[host] = (seconds if latest is None else max(latest, seconds), time_text)
    if time_text is not None:
        clocks["last_time"] = time_text
    tally["end"] = {"time": time_text, "monotonic_seconds": seconds}
    if tally.get("boot_ends"):
        tally["end"]["boot_ends"] = tally["boot_ends"]
    return reboot


def _embedded_record(text):
    """The dmesg record a console printed into the middle of ``text`` (after its first character), or None."""
    match = _EMBEDDED_STAMP.search(text, 1)
    return _record(text[match.start():]) if match else None


def _wrapped_embedded_record(message, following):
    """The record a console printed into the end of ``message`` when a mail wrapped it inside the record's stamp, whole
    with the line after it ("...dhcp for interfa[" / "142.361359] bnxt_en ... eno3np1: NIC Link is Up"), and only where
    that record is a carrier change; None otherwise. The line after must be no record of its own."""
    if not _STAMP_CUT_AT_END.search(message.rstrip()):
        return None
    rest = _QUOTE_MARKS.sub("", following[:MAX_LOG_LINE]).strip()
    if not rest or _record(rest) is not None:
        return None
    embedded = _embedded_record(message.rstrip() + " " + rest)
    return embedded if embedded is not None and _event(embedded[4]) is not None else None


def _wrapped_event(message, following, after=None):
    """``(event, whole message, lines joined)`` when ``message`` and the line after it, a mail's wrap of one carrier message
    ("eth1: NIC" / "Link is Up, 10 Gbps"), make a carrier change together, or with the line ``after`` that as well, where a
    book's narrow column wrapped one record twice ("NetworkManager[689]: <info>" / " [1551214267.8599] device (lo):" /
    "carrier: link connected"); None otherwise. A line joined is no record of its own, and the third no carrier change alone."""
    rest = _QUOTE_MARKS.sub("", following[:MAX_LOG_LINE]).strip()
    last = _QUOTE_MARKS.sub("", after[:MAX_LOG_LINE]).strip() if after is not None else ""
    if not rest or not (_LINK_WORD.search(message) or _LINK_WORD.search(rest) or _LINK_WORD.search(last)):
        return None
    if _record(rest) is not None:
        return None
    whole = message.rstrip() + " " + rest
    found = _event(whole)
    if found is not None:
        return found, whole, 1
    if not last or _record(last) is not None or _event(last) is not None:
        return None
    whole += " " + last
    found = _event(whole)
    return (found, whole, 2) if found is not None else None


def summarize_carrier(events):
    """Per netdev: ``down``, ``up``, ``losses`` (transitions into down) and ``last`` carrier.

    Devices of one name at other PCI addresses (virtual functions named alike in the pods' network
    namespaces: ``net1``) or on other hosts (a central syslog's lines, each with its host) are counted
    under that name, each one's losses apart: one going down after the other is two losses, not a
    message repeated."""
    summary = {}
    carriers = {}  # the last carrier of each (host, name, PCI address)
    hosts = {}  # the host a name was last seen on (a record without one, such as dmesg's, is that host's)
    buses = {}  # the PCI address a (host, name) was last seen with (a message without one is that device's)
    for event in events:
        name = event["netdev"]
        host = hosts[name] = event.get("host") or hosts.get(name)
        known = buses.get((host, name))
        bus = buses[(host, name)] = event.get("pci_address") or known
        if bus and known is None and (host, name, None) in carriers:
            # A message without the address came first (bonding's "link status definitely down" before the
            # driver's "Link down"): the carrier it gave is this device's.
            carriers[(host, name, bus)] = carriers.pop((host, name, None))
        count_carrier(summary, name, event["carrier"], carriers.get((host, name, bus)))
        carriers[(host, name, bus)] = event["carrier"]
    return summary


# ------------------------------------------------------------------------------------ carrier down periods

# Wall-clock forms of the record time stamps; a classic syslog time has no year (see _wall_seconds).
_WALL_FORMS = ("%a %b %d %H:%M:%S %Y",)
_SYSLOG_TIME = lazy_compile(r"^(?P<month>[^\W\d_]{3,5})\.? +(?P<day>\d{1,2}) (?P<clock>\d\d:\d\d:\d\d)(?:\.(?P<fraction>\d+))?$")
_LEAP_YEAR = 2000  # a year with 29 February, for syslog times that carry none
_YEAR_FIRST_TIME = lazy_compile(r"^(?P<year>\d{4}) (?P<month>[^\W\d_]{3,5})\.? +(?P<day>\d{1,2}) (?P<clock>\d\d:\d\d:\d\d)"
                                r"(?:\.(?P<fraction>\d+))?$")
_DAY = 86400.0
_SYSLOG_TIME_STEP = 1.0  # a classic syslog time has whole seconds: two of them may be up to this much off the real gap


_FRACTION = lazy_compile(r"\.([0-9]+)")


def _iso_seconds(text):
    value = text.replace(",", ".").replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    if len(value) >= 5 and value[-5] in "+-" and value[-3] != ":":
        value = value[:-2] + ":" + value[-2:]
    # Python before 3.11 reads 3 or 6 digits of a second only; journald and talosctl print 6 to 9.
    value = _FRACTION.sub(lambda match: "." + (match.group(1) + "00000")[:6], value, count=1)
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def _wall_seconds(text):
    """Seconds of a record's wall-clock time (ISO, ``dmesg -T``/logread with year), or None.

    A classic syslog time (``Mar 27 15:37:34``) has no year: it is read in a leap year and marked,
    and :func:`carrier_down_periods` rolls a log that passes New Year forward.
    """
    if not text:
        return None, False
    year_first = _YEAR_FIRST_TIME.match(text)
    if year_first:
        seconds = _month_day_seconds(int(year_first.group("year")), year_first)
        return seconds, False
    if text[:4].isdigit():
        return _iso_seconds(text), False
    # The syslog form before the others: every record's time is read (see _follow_clocks), and most are syslog's.
    match = _SYSLOG_TIME.match(text)
    if match:
        seconds = _month_day_seconds(_LEAP_YEAR, match)
        return seconds, seconds is not None
    for form in _WALL_FORMS:
        try:
            return datetime.datetime.strptime(" ".join(text.split()), form).replace(tzinfo=datetime.timezone.utc).timestamp(), False
        except ValueError:
            continue
    return None, False


def _month_day_seconds(year, match):
    """Seconds of a time written with the month's name (any locale's in _MONTH_NUMBERS), day and clock, or None."""
    month = _MONTH_NUMBERS.get(match.group("month").lower())
    hours, minutes, seconds = (int(part) for part in match.group("clock").split(":"))
    midnight = _midnight(year, month, int(match.group("day"))) if month is not None else None
    if midnight is None or hours > 23 or minutes > 59 or seconds > 59:
        return None
    return midnight + hours * 3600 + minutes * 60 + seconds + (float("0." + match.group("fraction")) if match.group("fraction") else 0.0)


@functools.lru_cache(maxsize=4096)  # a log's records fall on few days: each day's start is worked out once
def _midnight(year, month, day):
    """Seconds of the start of that day (UTC), or None for a day the month does not have."""
    try:
        return datetime.datetime(year, month, day, tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


def event_clock(events):
    """``(clock, [seconds per event])`` for comparing the times of ``events``, or ``(None, reason)``.

    The kernel's monotonic seconds (dmesg, /dev/kmsg, or the ``[...]`` inside a syslog line) are used
    when every event has them and they never go back (a reboot restarts them); else the wall-clock
    time stamps when every event has one. A record without either cannot give durations.
    """
    if not events:
        return None, "no carrier event"
    monotonic = [e.get("monotonic_seconds") for e in events]
    if all(m is not None for m in monotonic) and all(a <= b for a, b in zip(monotonic, monotonic[1:])):
        return "monotonic", [float(m) for m in monotonic]
    seconds, yearless = [], False
    for event in events:
        value, no_year = _wall_seconds(event.get("time"))
        if value is None and all(m is not None for m in monotonic):
            return None, "the kernel's clock goes back between the records (a reboot) and they carry no wall-clock time"
        if value is None:
            return None, "line %s has no time stamp that gives a duration%s" % (
                event.get("line"), " (%r)" % event["time"] if event.get("time") else "")
        yearless = yearless or no_year
        seconds.append(value)
    clock = "wall"
    if yearless:
        offset, previous, rolled = 0.0, None, []
        for value in seconds:  # a yearless log that passes 31 December continues in the next year
            if previous is not None and value + offset < previous - _DAY:
                offset += 366 * _DAY if offset == 0 else 365 * _DAY
            rolled.append(value + offset)
            previous = value + offset
        clock, seconds = "syslog (no year)", rolled
    for before, after, event in zip(seconds, seconds[1:], events[1:]):
        if after < before:
            return None, "the time stamps go back at line %s (records out of order, or a clock that was set back)" % event.get("line")
    return clock, seconds


def carrier_down_periods(events, until=None, log_end=None):
    """The periods each netdev's carrier was down, from a list of carrier events in log order.

    Returns ``{netdev: {"clock", "periods": [{"down_line", "up_line", "down_time", "up_time", "down_at",
    "up_at", "seconds", "ongoing"}], "reason"}}`` (``down_at``/``up_at`` in seconds of the clock, for
    windows; an ongoing period's ``up_at`` is the end of the log, or of its boot): a period starts at a loss (a repeated down while already down does not
    start another) and ends at the next gain; one still open at the end of the log is ``ongoing``, its
    ``seconds`` counted to ``until`` (seconds in the netdev's clock) or else to ``log_end`` (the time of
    the log's last record, as :func:`parse_carrier_events` returns it, where it reads in the netdev's
    clock: a wall-clock time only, such as a daemon's syslog line, reads in the kernel's clock through an event that
    carries both), else to the last carrier change of the log (where ``log_end`` is a wall-clock time that does not read
    in the kernel's clock, the period's ``note``, present only then, says so). A period with no gain after it that is
    open where the kernel's clock goes back (a reboot: ``log_end["boot_ends"]``, or the events' own kernel seconds) is ``ongoing``
    only to the end of its boot, the last time the log shows before the reboot, not through it (a loss in a later
    boot starts a period of its own; a gain in a later boot ends the period, as the events give it).
    ``reason`` says why a netdev gets no periods (no usable time stamps).
    """
    by_netdev = {}
    for event in events:
        by_netdev.setdefault(event["netdev"], []).append(event)
    result = {}
    clock_all, seconds_all = event_clock(events)
    end_of_log = max(seconds_all) if clock_all and isinstance(seconds_all, list) else None
    for netdev, own in by_netdev.items():
        clock, seconds = event_clock(own)
        entry = {"clock": clock, "periods": [], "reason": None}
        result[netdev] = entry
        if clock is None:
            entry["reason"] = seconds
            continue
        last = until
        if last is None and clock == "monotonic":
            last = _end_of_its_boot(events, own[-1])
        if last is None:
            last = _log_end_seconds(own, clock, log_end)
        short = None
        if last is None:
            short = _unrelated_end(clock, log_end)
            last = end_of_log if clock == clock_all else max(seconds)
        boot_ends = _boot_ends(own, clock, seconds, log_end)
        open_at = None
        for event, moment in zip(own, seconds):
            cut = _boot_end_after(boot_ends, open_at, event.get("line")) if event["carrier"] == "down" else None
            if cut is not None:  # down again in a later boot: the first outage ended with its boot, this one starts anew
                entry["periods"].append(_period(open_at, None, max(cut, open_at[1]), True))
                open_at = None
            if event["carrier"] == "down" and open_at is None:
                open_at = (event, moment)
            elif event["carrier"] == "up" and open_at is not None:
                entry["periods"].append(_period(open_at, event, moment, False))
                open_at = None
        if open_at is not None:
            cut = _boot_end_after(boot_ends, open_at, None)
            entry["periods"].append(_period(open_at, None, max(last if cut is None else cut, open_at[1]), True))
            if cut is None and short:
                entry["periods"][-1]["note"] = short
    return result


def _boot_ends(own, clock, seconds, log_end):
    """``[(line, seconds, host)]``: where each earlier boot of the log ends (``log_end["boot_ends"]``, see
    :func:`iter_carrier_events`) after one of the ``own`` events of its host, in their ``clock``; where the boot's end
    does not read in it, the latest of those events before it (the last time known of that boot)."""
    ends = log_end.get("boot_ends") if isinstance(log_end, dict) else None
    result = []
    for boot_end in ends if isinstance(ends, list) else ():
        line = boot_end.get("line") if isinstance(boot_end, dict) else None
        if not isinstance(line, int):
            continue
        before = [(event, moment) for event, moment in zip(own, seconds) if isinstance(event.get("line"), int)
                  and event["line"] < line and _same_host(event, boot_end)]
        if before:
            moment = _moment_in(clock, [event for event, dummy in before], boot_end)
            result.append((line, max(moment for dummy, moment in before) if moment is None else moment, boot_end.get("host")))
    return result


def _same_host(event, boot_end):
    """Whether a boot's end can be the ``event``'s: the same host, or a record without one (a log of one node)."""
    return event.get("host") is None or boot_end.get("host") is None or event["host"] == boot_end["host"]


def _boot_end_after(boot_ends, open_at, line):
    """The end (seconds) of the first boot of the loss ``open_at``'s host that ends after the loss and before ``line``
    (None: the end of the events), or None where the loss's boot lasts that long."""
    if open_at is None or not isinstance(open_at[0].get("line"), int):
        return None
    for end_line, moment, host in boot_ends:
        if open_at[0]["line"] < end_line and (line is None or end_line <= line) and _same_host(open_at[0], {"host": host}):
            return moment
    return None


def _moment_in(clock, before, moment):
    """The seconds of ``moment`` (``{"time", "monotonic_seconds"}``) in ``clock``, the clock of the events ``before``
    it, or None where it does not read in that clock."""
    if clock == "monotonic":
        latest = moment.get("monotonic_seconds")
        if latest is not None and latest < before[-1]["monotonic_seconds"]:
            return None  # the kernel's clock went back: a later boot
        # A syslog's last records before its end (or a reboot) are mostly daemons' (NetworkManager, dhclient, systemd),
        # with a wall-clock time only: where that time is later than the kernel's seconds say, it is read in the kernel's
        # clock through an event that carries both. A classic syslog time is cut to the second, so only a wall clock
        # ahead by more than that says more than the kernel's own seconds.
        related = _kernel_seconds_at(before, moment.get("time"))
        if latest is None or (related is not None and related > latest + _SYSLOG_TIME_STEP):
            return related
        return latest
    timed = [dict(event, monotonic_seconds=None) for event in before]
    found, seconds = event_clock(timed + [{"time": moment.get("time"), "monotonic_seconds": None, "line": "end"}])
    return seconds[-1] if found == clock else None


def _end_of_its_boot(events, last):
    """The kernel's latest seconds before its clock goes back after the event ``last`` (a reboot, or
    another boot's dmesg pasted below), where it does; None where it does not or cannot be told."""
    latest, after = last["monotonic_seconds"], False
    for event in events:
        if not after:
            after = event is last
            continue
        seconds = event.get("monotonic_seconds")
        if seconds is None:
            return None
        if seconds < latest:
            return latest
        latest = seconds
    return None


def _kernel_seconds_at(before, time_text):
    """The kernel's seconds at the wall-clock ``time_text``, reckoned from the latest of the events ``before`` it that
    carries both clocks (a syslog line with the kernel's ``[seconds]``); None where none does, or where the two wall-clock
    times do not compare (one with a year and one without, or ``time_text`` earlier)."""
    anchor = next((event for event in reversed(before) if event.get("time") and event.get("monotonic_seconds") is not None), None)
    if anchor is None or not time_text or _wall_seconds(anchor["time"])[1] != _wall_seconds(time_text)[1]:
        return None
    found, seconds = event_clock([{"time": anchor["time"], "line": anchor.get("line")}, {"time": time_text, "line": "end"}])
    return anchor["monotonic_seconds"] + seconds[1] - seconds[0] if found is not None else None


def _unrelated_end(clock, log_end):
    """Why an outage still open at the end is counted short of the log's end, where it is (else None): the end has a
    wall-clock time only, and no event of the netdev relates it to the kernel's clock (see :func:`_moment_in`)."""
    if clock != "monotonic" or not isinstance(log_end, dict) or not log_end.get("time") or log_end.get("monotonic_seconds") is not None:
        return None
    return ("counted to the last kernel time stamp of these carrier changes, not to the log's end (%s): that record has a "
            "wall-clock time only, and none of these changes carries both clocks in a form that compares with it" % log_end["time"])


def _log_end_seconds(own, clock, log_end):
    """The log's last record time in the clock of ``own`` events, or None where it does not read in it."""
    if not isinstance(log_end, dict):
        return None
    if clock == "monotonic" and log_end.get("monotonic_seconds") is None:
        return _moment_in(clock, own, log_end)  # a wall-clock time only: read through an event with both clocks
    end_clock, seconds = event_clock(list(own) + [dict(log_end, line="end")])
    if end_clock != clock or not isinstance(seconds, list):
        return None
    return seconds[-1]


def _period(opened, closing, moment, ongoing):
    down_event, down_at = opened
    return {"down_line": down_event.get("line"), "up_line": closing.get("line") if closing else None,
            "down_time": down_event.get("time"), "up_time": closing.get("time") if closing else None,
            "down_at": round(down_at, 3), "up_at": round(moment, 3),
            "seconds": round(moment - down_at, 3), "ongoing": ongoing}


_SAME_DEVICE = object()


def count_carrier(summary, netdev, carrier, previous=_SAME_DEVICE):
    """Add one carrier change to a :func:`summarize_carrier` summary; ``previous``, the carrier the
    device had before (None for none) where the netdev's name covers more than one device."""
    entry = summary.setdefault(netdev, {"down": 0, "up": 0, "losses": 0, "last": None})
    entry[carrier] += 1
    if carrier == "down" and (entry["last"] if previous is _SAME_DEVICE else previous) != "down":
        entry["losses"] += 1
    entry["last"] = carrier


# ------------------------------------------------------------------------------------ rdma system

_SYSTEM_LINE = lazy_compile(r"^netns (?P<netns>shared|exclusive)\b(?P<rest>.*)$")
_ON_OFF = {"on": True, "off": False}


def parse_rdma_system(data):
    """``rdma system`` (or ``rdma -j system``) output -> ``{netns_mode, copy_on_fork, privileged_qkey}``.

    Fields the installed iproute2 does not print are None. Prompt lines (``$ rdma system``),
    ``#`` comments, blank lines and a Markdown fence are skipped, and a mail's quote marks before
    the lines removed. Other lines before the output (a document's commands without prompts) are
    passed over; one after it, or text without the output, fails naming its line.
    """
    lines = [_QUOTE_MARKS.sub("", line) for line in _lines(data, "parse_rdma_system")]
    text = "\n".join(lines).strip()
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except ValueError:
            raise HealthTextError("parse_rdma_system: the output starts like JSON but is not JSON") from None
        except RecursionError:  # rdma -j system prints one flat object
            raise HealthTextError("parse_rdma_system: the JSON is nested too deeply to be rdma -j system output") from None
        netns = loaded.get("netns") if isinstance(loaded, dict) else None
        if netns not in ("shared", "exclusive"):
            raise HealthTextError("parse_rdma_system: the JSON has no netns of shared or exclusive: %s" % text[:80])
        return {"netns_mode": netns, "copy_on_fork": loaded.get("copy-on-fork"),
                "privileged_qkey": loaded.get("privileged-qkey")}
    result = None
    unread = None  # the first line that is not output, while no output line has come
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "```", "~~~")) or _PROMPT.match(line):
            continue
        match = _SYSTEM_LINE.match(stripped)
        if not match:
            if result is not None:
                raise HealthTextError("parse_rdma_system: line %d is not rdma system output: %r" % (number, stripped))
            unread = unread or (number, stripped)
            continue
        words = match.group("rest").split()
        pairs = dict(zip(words[::2], words[1::2]))
        result = {
            "netns_mode": match.group("netns"),
            "copy_on_fork": _ON_OFF.get(pairs.get("copy-on-fork")),
            "privileged_qkey": _ON_OFF.get(pairs.get("privileged-qkey")),
        }
    if result is None:
        if unread:
            raise HealthTextError("parse_rdma_system: line %d is not rdma system output: %r" % unread)
        raise HealthTextError("parse_rdma_system: no 'netns shared' or 'netns exclusive' line in the output")
    return result
