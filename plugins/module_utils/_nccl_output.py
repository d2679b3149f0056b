# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What NCCL says about its own transport, and what nccl-tests measured: read from their text.

Two readers of what people have, a job's log or a paste of it:

* ``parse_nccl_log``: an ``NCCL_DEBUG=INFO`` log. The transport of every channel NCCL connected
  (``via NET/IB/0/GDRDMA``, ``via NET/Socket/0``, ``via P2P/IPC``, ``via SHM/direct/direct``...),
  the network it chose (``Using network IB``), the HCAs it found (``NET/IB : Using [0]mlx5_0:1/IB``)
  or did not (``NET/IB : No device found.``), the environment it reports (``NCCL_IB_HCA set to ...``),
  whether GPUDirect RDMA was on (``GDR 1``), and its warnings. Lines of any launcher's prefix
  (``[1,0]<stdout>:``, Ray's ``(RayWorkerWrapper pid=927)``, time stamps) are read through.
* ``parse_nccl_tests``: the output of an ``nccl-tests`` binary (``all_reduce_perf``...): the devices,
  the result table (out-of-place and in-place time, algorithm and bus bandwidth per size), the
  ``Avg bus bandwidth`` line and the bus bandwidth at the largest size. Pastes that lost their
  ``#`` to Markdown, that carry NCCL INFO lines inside the table, or that start mid-table are read.

Both are pure functions over text with only the standard library, so a module on a node could use
them as well as the controller's filters and checks. Bandwidth stays in GB/s, the unit nccl-tests
prints (gigabytes, 10^9 bytes, per second); ``*_gbps`` fields convert it to Gb/s for comparing with
a link rate.
"""

from __future__ import annotations

import re

from ansible_collections.rdma.node.plugins.module_utils._ib_common import MAX_LINE
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

# ``host:pid:tid [cuda device] NCCL INFO message``; the host may be empty or a placeholder of a
# paste (``<cluster_name>``), and anything may stand before it (a launcher's prefix, a time stamp,
# the backtick or quote mark of a paste in Markdown or prose, which no host name holds, or an ISO 8601
# time a log console glued to the host: ``2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] ...``).
# A WARN names where NCCL raised it, "misc/socket.cc:50", and newer NCCL (2.30.7's log) the function after it as well:
# "host:1:2 [1] misc/strongstream.cc:424 (ncclStrongStreamSynchronize) NCCL WARN ..." (its debug.cc: "%s:%d (%s) NCCL WARN").
_NCCL_LINE = lazy_compile(
    r"(?:^|[\s\]\)>:`'\"]|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r"(?P<host>[^\s:\[\]()`'\"]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<device>\d+)\] "
    r"(?:[^\s]+ (?:\([^\s()]+\) )?)?NCCL (?P<level>INFO|WARN|TRACE|ABORT)\b ?(?P<message>.*)$"
)
# A line of documentation or a bare paste: ``NCCL INFO Channel 00/0 : ...`` without the prefix.
_BARE_LINE = lazy_compile(r"(?:^|\s)NCCL (?P<level>INFO|WARN) (?P<message>.*)$")
_VERSION = lazy_compile(r"\bNCCL version:? (?P<version>[0-9][0-9A-Za-z.+_-]*)")
# NCCL prints its version as major.minor.patch ("2.23.4+cuda12.2"): a figure without its dot is part of one
# ("NCCL version 2 .23.4+cuda12.2", a web page's text that put a blank inside it), not a version.
_WHOLE_VERSION = lazy_compile(r"^[0-9]+\.[0-9]")
# "RCCL version : 2.26.6-..." (2.26 and later), "RCCL version 2.18.3+hip5.7 HEAD:b502725" (before).
_RCCL_VERSION = lazy_compile(r"\bRCCL version(?: :)? (?P<version>[0-9][0-9A-Za-z.+:_-]*)")
# "Using network IB"; before 2.4, "Using internal Network IB".
_USING_NETWORK = lazy_compile(r"^Using (?:internal )?[Nn]etwork (?P<network>.+?)\s*$")
_IB_USING = lazy_compile(r"^NET/IB ?: Using (?P<devices>.*?)\s*(?:;\s*OOB (?P<oob>\S+))?\s*$")
_IB_DEVICE = lazy_compile(r"\[(?P<index>\d+)\](?P<device>[^:\s\[]+):(?P<port>\d+)/(?P<link>[A-Za-z]+)")
# NICs NCCL merged into one virtual device (NCCL_IB_MERGE_NICS): "[1]={[2] mlx5_0:1/RoCE, [3] mlx5_1:1/RoCE}".
_IB_MERGED = lazy_compile(r"\[(?P<index>\d+)\]=\{(?P<members>[^{}]*)\}")
_IB_MEMBER = lazy_compile(r"\[\d+\] ?(?P<device>[^:\s\[,]+):(?P<port>\d+)/(?P<link>[A-Za-z]+)")
# One HCA per line: "NET/IB: [0] mlx5_0:1/IB" (2.3), "NET/IB: [2] mlx5_2:uverbs2:1/RoCE provider=Mlx5 ..." (2.27).
_IB_DEVICE_LINE = lazy_compile(
    r"^NET/IB ?: \[(?P<index>\d+)\] ?(?P<device>[^:\s\[]+):(?:uverbs\d+:)?(?P<port>\d+)/(?P<link>[A-Za-z]+)(?:[\s/]|$)")
# The rest of a "NET/IB : Using" line an author wrapped: only "[4]mlx5_12:1/RoCE ..." items.
_IB_USING_WRAPPED = lazy_compile(r"^\s*(?:\[\d+\][^:\s\[]+:\d+/[A-Za-z/]+\s*)+(?:;\s*OOB\s+\S+\s*)?$")
# A log viewer's frame around each line (k9s: "│ host:pid:tid ... │" padded to the window's width).
_FRAME = " \t\u2502\u2503\u2551"
_IB_NO_DEVICE = lazy_compile(r"^NET/IB ?: No device found", re.IGNORECASE)
_SOCKET_USING = lazy_compile(r"^NET/Socket ?: Using (?P<interfaces>.*?)\s*$")
_SOCKET_INTERFACE = lazy_compile(r"\[(?P<index>\d+)\](?P<name>[^:\s]+):(?P<address>\S+?)(?:<\d+>)?(?=\s|$)")
# Before 2.4 (src/include/socket.h of 2.3.7), findInterfaces() named each interface it picked on a line of its own,
# "NET : Using interface eth0:172.17.0.2<0>" (the <0>: the address's port), for two callers: the socket transport, whose
# "NET/Socket : 1 interfaces found" follows its list, and IB's sideband, whose "NET/IB : Using interface eth0 for sideband
# communication" follows its one interface. Which caller a line was for is known only from the line that follows it.
_LEGACY_INTERFACE = lazy_compile(r"^NET : Using interface (?P<name>[^:\s]+):(?P<address>\S+?)(?:<\d+>)?\s*$")
_SOCKET_FOUND = lazy_compile(r"^NET/Socket ?: (?P<count>\d+) interfaces? found")
_IB_SIDEBAND = lazy_compile(r"^NET/IB ?: Using interface \S+ for sideband communication")
_ENV_SET = lazy_compile(r"^(?P<name>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<value>.*?)\.?\s*$")
_GDR_RING = lazy_compile(r"Connected all rings(?:, use ring PXN (?P<pxn>\d+) GDR (?P<gdr>\d+))?")
# "GPU Direct RDMA Enabled for GPU 8 / HCA 0", and since 2.19 with the way NCCL found it, in small letters:
# "NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'mlx5_0'", "(nvidia-peermem) enabled".
_GDR_LINE = lazy_compile(r"GPU Direct RDMA (?:\([\w-]+\) )?(?P<state>[Ee]nabled|[Dd]isabled) for (?:GPU (?P<gpu>\S+) / )?"
                         r"HCA (?P<hca>\S+)(?: '(?P<name>[^']+)'?)?")
# A socket network's own lines: "NET/Socket : ...", Google's "NET/FastSocket : ...".
_SOCKET_NETWORK = lazy_compile(r"^NET/\w*Socket\w* ?:")
# The verbs provider's own report of a failed work request, printed beside NCCL's lines (then a hex dump
# of the completion entry): "mlx5: gpu5: got completion with error:".
_PROVIDER_COMPLETION_ERROR = lazy_compile(r"^\s*(?:\[\d+\]\s*)?(?P<message>(?:mlx[45]|bnxt_re|irdma|efa|hns): \S+: got completion with error:?)\s*$")
# NET/IB's report of a failed work request, whole ("... with error 12, opcode 0, len 0, vendor err 129 (Recv)", or
# "with status=12 opcode=129 len=65536 vendor err 129 (Recv)" since 2.19): a WARN cut before its vendor error was
# wrapped, and the next line is its end.
_COMPLETION_WARN = lazy_compile(r"Got completion from peer \S+ with (?:error|status)[ =]?\d+.*\bvendor err \d+")
_NO_VERBS = lazy_compile(r"Failed to open libibverbs|NET/IB : No device found|ibvwrap.*Failed to open", re.IGNORECASE)
# ``Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA`` (NCCL >= 2.8), ``Channel 00 : 3[b1000] ->
# 4[18000] [send] via NET/Socket/0`` (2.5-2.7), ``Ring 00 : 1 -> 0 [receive] via NET/Socket/0`` (2.4).
# ``CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA`` names one rank: its connection to the collective network
# (``Coll 00 : 0 [send] via COLLNET/SHARP/0/GDRDMA`` in NCCL 2.7 to 2.11).
_CHANNEL = lazy_compile(
    r"^(?P<kind>Channel|Ring|CollNet|Coll)\s+(?P<channel>\d+)(?:/(?P<sub>\d+))?\s*:\s*(?P<src>\d+)(?:\[(?P<src_dev>[0-9a-fA-Fx]+)\])?"
    r"(?:\s*->\s*(?P<dst>\d+)(?:\[(?P<dst_dev>[0-9a-fA-Fx]+)\])?)?\s*(?:\[(?P<direction>send|receive)\]\s*)?"
    r"via\s+(?P<transport>.+?)\s*$"
)
# Another record's whole prefix right before a host, or its prefix cut in its thread id: the first half of a torn line.
_RECORD_PREFIX_BEFORE = lazy_compile(r"(?:^|\s)[^\s:\[\]]*:\d+:\d+ \[\d+\] $")
_TORN_PREFIX_BEFORE = lazy_compile(r"(?:^|\s)[^\s:\[\]]+:\d+:$")
# The ring's order of ranks, printed with the graph's lines (NCCL_DEBUG_SUBSYS=GRAPH): ``Ring 00 : 1 -> 0 -> 1``.
_RING_ORDER = lazy_compile(r"^Ring\s+\d+\s*:\s*\d+(?:\s*->\s*\d+){2,}\s*$")
# A channel line whose tail another process's output replaced before its "via" (mpirun, Slurm and Ray
# interleave the ranks' writes): ``Channel 15/0 : 4[4] -> 12[4] [seSetting up ...``.
_CHANNEL_TORN_BEFORE_VIA = lazy_compile(r"^(?:Channel|Ring)\s+\d+(?:/\d+)?\s*:\s*\d+(?:\[[0-9a-fA-Fx]+\])?\s*->")
# What newer NCCL appends to a channel line.
_CHANNEL_TAIL = lazy_compile(r"\s+comm 0x[0-9a-fA-F]+.*$")
# Ray's note on a line its log deduplication stands for ("... Using network IB [repeated 14x across cluster]"), with what it
# may add after it: Ray's, not NCCL's, on any message.
_RAY_REPEATED = lazy_compile(r"\s*\[repeated \d+x across cluster\].*$")
# What an author wrote after a message: a comment ("via NET/IB/3/GDRDMA  # cross-node RDMA"), a generated page's citation
# mark ("via NET/gIB/2/GDRDMA [cite: 1734]", "to PIX [cite: 59]"). NCCL's own messages hold neither " # " nor "[cite".
_AUTHOR_REMARK = lazy_compile(r"\s+(?P<remark>#(?:\s.*)?|\[cite(?::[^\]]*)?\].*)$")
# What an author wrote in parentheses after a channel's transport ("via P2P/CUMEM (all 256 connect lines are P2P/CUMEM)"):
# NCCL writes a transport's own parentheses without a blank before them (NET/IB/5(2)/GDRDMA, GDRDMA(PCI)).
_TRANSPORT_REMARK = lazy_compile(r"(?<=\S)\s+(?P<remark>\(.*)$")
# A channel line that ends at its "via": a wrapped line, whose transport may start the next line.
_CHANNEL_CUT_AT_VIA = lazy_compile(r"^(?:Channel|Ring|CollNet|Coll)\s+\d+(?:/\d+)?\s*:.*\svia$")
# NET/IB/0/GDRDMA, NET/IB/5(2)/GDRDMA/Shared (the (2): PXN's proxy rank, whose NIC relays the send),
# NET/IB/0/GDRDMA(PCI) (2.27's mode of GPUDirect RDMA on C2C systems).
_NET_TRANSPORT = lazy_compile(r"^NET/(?P<name>[^/]+)/(?P<device>\d+)(?:\((?P<proxy>\d+)\))?(?P<flags>(?:/[A-Za-z]+(?:\([A-Za-z]+\))?)*)$")
# "NET/Socket" alone: a network's name without the device NCCL always prints after it.
_NET_WITHOUT_DEVICE = lazy_compile(r"^NET/[^/\s]+$")
_COLLNET_TRANSPORT = lazy_compile(r"^COLLNET/(?P<name>[^/]+)/(?P<device>\d+)(?P<flags>(?:/[A-Za-z]+)*)$", re.IGNORECASE)

# NCCL's warning when the collective network it connected could not be used after all.
_COLLNET_FALLBACK = lazy_compile(r"Cannot initialize CollNet, using point-to-point network instead")
TRANSPORT_KINDS = ("net_ib", "net_socket", "net_plugin", "p2p", "shm", "collnet", "nvls", "other")


def _lines(text):
    if text is None:
        return []
    return str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _note(notes, reason, line=None, text=None):
    note = {"line": line, "text": text if text is None or len(text) <= 120 else text[:117] + "...", "reason": reason}
    if note not in notes:
        notes.append(note)


class NcclOutputError(ValueError):
    """Text given to a parser holds nothing of what it reads; the message quotes the first line."""


def transport_kind(transport):
    """``(kind, details)`` of a channel's transport text (``NET/IB/0/GDRDMA`` -> ``net_ib``, GDRDMA on)."""
    text = transport.strip()
    net = _NET_TRANSPORT.match(text)
    if net:
        name = net.group("name")
        flags = [flag.split("(")[0] for flag in net.group("flags").split("/") if flag]  # GDRDMA(PCI) is GDRDMA
        lowered = name.lower()
        if lowered.startswith("ib"):
            kind = "net_ib"
        elif lowered.startswith("socket"):
            kind = "net_socket"
        else:
            kind = "net_plugin"
        return kind, {"net": name, "net_device": int(net.group("device")),
                      "proxy_rank": int(net.group("proxy")) if net.group("proxy") else None,
                      "gdrdma": "GDRDMA" in flags, "shared": "Shared" in flags}
    upper = text.upper()
    if upper.startswith("P2P"):
        return "p2p", {"via": text}
    if upper.startswith("SHM") or "SHARED MEMORY" in upper:
        return "shm", {"via": text}
    if upper.startswith("COLLNET"):
        collnet = _COLLNET_TRANSPORT.match(text)
        if collnet:  # COLLNET/SHARP/1/GDRDMA: the collective network's plugin, its network device, GPUDirect RDMA
            return "collnet", {"via": text, "net": collnet.group("name"), "net_device": int(collnet.group("device")),
                               "gdrdma": "GDRDMA" in collnet.group("flags").upper().split("/")}
        return "collnet", {"via": text}
    if upper.startswith("NVLS"):
        return "nvls", {"via": text}
    return "other", {"via": text}


def _untorn_host(line, match):
    """The host of ``match``, without what a torn write glued to it: two processes writing one stream interleave
    mid-line, so the record read is the second process's, and its host begins with the first one's "NC"
    ("host:1:2 [1] NChost:3:4 [0] NCCL INFO ...") or with the first one's cut thread id ("host:1:16169host:3:4 [7] ...")."""
    host = match.group("host")
    stub = next((len(stub) for stub in ("NCCL", "NCC", "NC", "N") if host.startswith(stub)), 0)
    if stub and _RECORD_PREFIX_BEFORE.search(line, 0, match.start("host")):
        return host[stub:]
    if host[:1].isdigit() and host.lstrip("0123456789") and _TORN_PREFIX_BEFORE.search(line, 0, match.start("host")):
        return host.lstrip("0123456789")
    return host


def _records(line):
    """Every NCCL record of a line, ``[(host, level, message)]``: one, or several where a terminal copy joined them
    with blanks or two processes' writes interleaved (the earlier record's message then ends where the next
    begins, cut short or whole); a bare ``NCCL INFO ...`` of documentation is one record without a host, and so is one
    that stands before a line's first whole record (a copy that starts inside its prefix)."""
    matches, position = [], 0
    while True:
        match = _NCCL_LINE.search(line, position)
        if match is None:
            break
        matches.append(match)
        # The next record may begin right where this one's message would (NCCL 2.3 wrote a prefix and its message apart,
        # so another process's whole record can follow a prefix at once): the search takes in the blank before it.
        position = max(match.start("message") - 1, match.end("level"))
    records = []
    leading = _BARE_LINE.search(line, 0, matches[0].start("host")) if matches else None
    if leading:
        # A record whose prefix the text lost (a copy that starts inside it) before the first whole one: "NCCL INFO Channel
        # 12/0 : 13[5] -> 5[5] [receive] via NET/IBext/5/GDRDMA      host:1:2 [2] NCCL INFO ...": its host is not known.
        records.append((None, leading.group("level"), leading.group("message").strip()))
    for number, (match, following) in enumerate(zip(matches, matches[1:] + [None])):
        message = line[match.start("message"):following.start("host") if following else len(line)]
        host = _untorn_host(line, match)
        if number and host != records[bool(leading)][0] and not line[:match.start("host")].endswith("  "):
            # A record glued into another's message without the padding of a joined copy: its host may have taken in
            # the torn text before it ("... ncclPollProxyResponse Recei00:1622687:..."), so it is not named.
            host = None
        if following is not None and following.group("host", "pid", "tid") == match.group("host", "pid", "tid") \
                and message.rstrip().endswith("|"):
            # A log console's copy that shows each record twice: "... | host:pid:tid [0] NCCL INFO ...".
            records.append((host, match.group("level"), message.rstrip()[:-1].strip()))
            break
        records.append((host, match.group("level"), message.strip()))
    if not records:
        bare = _BARE_LINE.search(line)
        if bare:
            records.append((None, bare.group("level"), bare.group("message").strip()))
    return records


def _message(line):
    """``(host, level, message)`` of the first NCCL record of a line, or None."""
    records = _records(line)
    return records[0] if records else None


def parse_nccl_log(text, strict=False):
    """Read an ``NCCL_DEBUG=INFO`` log into what NCCL decided about its transport.

    Returns (every key always present):

    * ``version``: NCCL's (or RCCL's) version, or None; ``hosts``: the host names of the lines;
    * ``network``: the last ``Using network X`` (``IB``, ``Socket``, a plugin's name), ``networks``:
      every one seen, in order;
    * ``ib_devices``: the HCAs of ``NET/IB : Using`` (``index``, ``device``, ``port``, ``link``:
      ``IB`` or ``RoCE``); ``ib_no_device``: NCCL said ``NET/IB : No device found``;
      ``verbs_missing``: it could not open libibverbs; ``socket_interfaces``: ``NET/Socket : Using``
      (before 2.4: the ``NET : Using interface`` lines that a ``NET/Socket : N interfaces found`` counts);
    * ``env``: the ``NCCL_*`` variables NCCL reports as set (``NCCL_IB_HCA``, ``NCCL_IB_DISABLE``...);
    * ``channels``: one item per connected channel line (also one that stands without NCCL's prefix, which
      processes sharing one stream wrote apart from its message: a note says so), (``channel``, ``sub``, ``src_rank``,
      ``dst_rank``, ``direction``, ``transport`` as printed, ``kind`` among ``net_ib``, ``net_socket``,
      ``net_plugin``, ``p2p``, ``shm``, ``collnet``, ``nvls``, ``other``, and for network channels
      ``net``, ``net_device``, ``gdrdma``, ``hca``: the HCA name when ``ib_devices`` names the index, ``mlx5_0+mlx5_1`` for NICs NCCL
      merged into one virtual device);
    * ``transports``: channel lines per kind; ``net_channels``: those over a network;
      ``gdrdma_channels``: network channels with GPUDirect RDMA;
    * ``hcas_used``: the HCAs of the IB channels; ``gdr``: ``Connected all rings ... GDR 0/1`` and
      ``GPU Direct RDMA Enabled/Disabled`` lines (``rings``: the GDR values, ``enabled``/``disabled``:
      the HCAs named);
    * ``warnings``: NCCL WARN messages and the verbs provider's completion errors (``mlx5: host: got
      completion with error``); ``lines``: NCCL lines read; ``notes``: what was decided.

    A line in the form of NCCL's own message whose prefix and INFO tag an author cut off (``NET/IB : GPU Direct
    RDMA Disabled for HCA 0 'mlx5_0'``) is read as NCCL's, its host not known, with a note.

    Plain text without any NCCL line raises ``NcclOutputError``; with ``strict`` a line that is not
    NCCL's is an error too (a log normally mixes in the application's own lines, so the default keeps
    them out of the result and counts them in ``other_lines``).
    """
    result = {
        "version": None, "hosts": [], "network": None, "networks": [], "ib_devices": [], "ib_no_device": False,
        "verbs_missing": False, "socket_interfaces": [], "env": {}, "channels": [], "transports": {},
        "net_channels": 0, "gdrdma_channels": 0, "hcas_used": [], "gdr": {"rings": [], "enabled": [], "disabled": []},
        "warnings": [], "lines": 0, "other_lines": 0, "notes": [],
    }
    notes = result["notes"]
    first_other = None
    seen_channels = set()
    last_warning = None  # the WARN message of the line before, which a wrap may have cut
    ib_using_open = False  # the lines before were a "NET/IB : Using" line and its wrapped rest
    pending_interfaces = {}  # host -> the "NET : Using interface" lines (before 2.4) that no later line placed yet
    orphans = []  # (number, message) of the channel lines without NCCL's prefix
    bare = []  # (number, message) of the other lines in the form of NCCL's messages, without its prefix and INFO tag
    emptied = []  # the lines of a record whose prefix another record follows at once: its message stands apart
    remarks = []  # (number, remark) of the lines where an author wrote after NCCL's message
    wrapped = None  # (number, host, message) of a channel line that ended at its "via": the next line may start with its transport
    for number, raw in enumerate(_lines(text), start=1):
        line = raw.rstrip(_FRAME)
        if not line.strip():
            continue
        held, wrapped = wrapped, None
        if held is not None:
            line = _join_wrapped_transport(result, held, line, number, seen_channels, pending_interfaces)
            if not line.strip():
                continue
        cut, last_warning = last_warning, None
        if cut is not None and _message(line) is None and _COMPLETION_WARN.search(cut + " " + line.strip()):
            result["warnings"][result["warnings"].index(cut)] = cut + " " + line.strip()
            continue
        if len(line) > MAX_LINE:
            _note(notes, "a line longer than %d characters, not read" % MAX_LINE, number, line)
            continue
        version = _VERSION.search(line) or _RCCL_VERSION.search(line)
        if version and result["version"] is None and _WHOLE_VERSION.match(version.group("version")):
            result["version"] = version.group("version")
        elif version and result["version"] is None:
            _note(notes, "the version line holds no whole version (%r, where NCCL prints major.minor.patch): the version is "
                         "not known" % version.group("version"), number, line)
        records = _records(line)
        parsed = records[0] if records else None
        if parsed is None and ib_using_open and _IB_USING_WRAPPED.match(line):
            _add_ib_devices(result, line)
            continue
        ib_using_open = False
        provider_error = _PROVIDER_COMPLETION_ERROR.match(line) if parsed is None else None
        if provider_error:
            if provider_error.group("message") not in result["warnings"]:
                result["warnings"].append(provider_error.group("message"))
            result["other_lines"] += 1
            continue
        if parsed is None:
            if version:
                continue
            if _CHANNEL.match(line.strip()):
                # A channel message without its prefix: NCCL 2.3 wrote the two apart, and another process's record came
                # between them ("host:1:2 [7] NCCL INFO host:3:4 [6] NCCL INFO Ring 04 : ...", then "Ring 04 : 7[7] -> 3[3]
                # via P2P/IPC" later). Read once the text shows it is an NCCL log; counted among the other lines until then.
                message, remark = _own_message(line.strip())
                if remark:
                    remarks.append((number, remark))
                orphans.append((number, message))
                result["other_lines"] += 1
                continue
            if len(line) <= MAX_LINE and any(form.match(line.strip()) for form in _BARE_OWN_MESSAGES):
                # An author's paste that cut the prefix and tag off some of NCCL's lines and kept them on others ("NET/IB : GPU
                # Direct RDMA Disabled for HCA 0 'rocep1s0f1'", then "NCCL INFO dlvsym failed ..."): read once the text shows
                # it is an NCCL log (a text of such lines alone is read by _tag_bare_messages).
                bare.append((number, _own_message(line.strip())[0]))
                result["other_lines"] += 1
                continue
            result["other_lines"] += 1
            if first_other is None:
                first_other = (number, line)
            if strict:
                raise NcclOutputError("line %d is not an NCCL log line: %r" % (number, line.strip()[:120]))
            continue
        result["lines"] += 1
        if any(not message for dummy, dummy, message in records[:-1]):
            emptied.append(number)
        if records[0][0] is None and len(records) > 1:
            _note(notes, "the line starts inside a record, before its prefix (a copy cut there): that record is read without "
                         "its host", number, line)
        for place, (host, level, message) in enumerate(records, start=1):
            message, remark = _own_message(message)
            if remark:
                remarks.append((number, remark))
            if host and host not in result["hosts"] and not host.startswith("<"):
                result["hosts"].append(host)
            if level == "WARN":
                if message not in result["warnings"]:
                    result["warnings"].append(message)
                    last_warning = None if _COMPLETION_WARN.search(message) else message
                if _NO_VERBS.search(message):
                    result["verbs_missing"] = True
                ib_using_open = False
                continue
            if place == len(records) and _CHANNEL_CUT_AT_VIA.match(message):
                wrapped = (number, host, message)  # read with the next line, which may start with its transport
                continue
            ib_using_open = _read_message(result, message, number, seen_channels, host, pending_interfaces) == "ib_using"
    if wrapped is not None:
        _read_message(result, wrapped[2], wrapped[0], seen_channels, wrapped[1], pending_interfaces)
    if remarks:
        (first, remark), where = remarks[0], _shown_lines([n for n, dummy in remarks])
        _note(notes, "line(s) %s carry an author's remark after NCCL's message (%r on line %d), no part of NCCL's output: "
                     "the messages are read without it" % (where, remark[:40], first))
    if not result["lines"]:
        tagged = _tag_bare_messages(text)
        if tagged is not None:
            result = parse_nccl_log(tagged, strict)
            _note(result["notes"], "the lines carry neither NCCL's prefix nor its INFO tag (an author cut them): "
                                   "the lines in the form of NCCL's own messages are read as its INFO messages")
            return result
        where = (" (line %d: %r)" % (first_other[0], first_other[1].strip()[:120])) if first_other else ""
        raise NcclOutputError("nothing in the text is an NCCL log line (NCCL INFO or NCCL WARN)%s" % where)
    _read_orphans(result, orphans, emptied, seen_channels)
    _read_bare(result, bare, seen_channels)
    _settle(result)
    return result


def _own_message(message):
    """``(message, remark)``: a record's message without Ray's note on repeated lines, and without the remark an author wrote
    after it (None when there is none)."""
    message = _RAY_REPEATED.sub("", message)
    remark = _AUTHOR_REMARK.search(message)
    if remark is None:
        channel = _CHANNEL.match(message)
        remark = _TRANSPORT_REMARK.search(message, channel.start("transport")) if channel else None
    if remark is None:
        return message, None
    return message[:remark.start()], remark.group("remark")


def _join_wrapped_transport(result, held, line, number, seen_channels, pending_interfaces):
    """Read the channel line ``held`` (number, host, message) that ended at its "via", with the transport ``line`` starts with
    where it does (a terminal or a page wrapped the line there: "... [receive] via", then " NET/IBext/4/GDRDMA   host:..."), or
    without (then it is noted as cut before its transport); returns what of ``line`` is left to read."""
    number_held, host, message = held
    words = line.split(None, 1)
    word = words[0] if words else ""
    # Every transport NCCL prints names its kind and more after a slash (NET/IB/0, P2P/IPC, SHM/direct/direct).
    if "/" not in word or transport_kind(word)[0] == "other":
        _read_message(result, message, number_held, seen_channels, host, pending_interfaces)
        return line
    _read_message(result, message + " " + word, number_held, seen_channels, host, pending_interfaces)
    _note(result["notes"], "the channel line %d ends at its \"via\" (the line was wrapped there): its transport %s is read from the "
                           "start of line %d" % (number_held, word, number), number_held, message)
    start = line.index(word)
    return line[:start] + " " * len(word) + line[start + len(word):]


def _shown_lines(numbers):
    """Line numbers as a note gives them: the first ten, then how many more."""
    shown = ", ".join(str(number) for number in numbers[:10])
    return shown + (" and %d more" % (len(numbers) - 10) if len(numbers) > 10 else "")


def _read_orphans(result, orphans, emptied, seen_channels):
    """Read the channel lines that stand without NCCL's prefix, and say which records lost their message."""
    if emptied:
        _note(result["notes"], "line(s) %s hold a record's prefix with another record right after it: processes sharing one "
                               "stream wrote a prefix and its message apart, so that message stands elsewhere (a later line "
                               "without prefix) or is lost" % _shown_lines(emptied))
    if not orphans:
        return
    for number, message in orphans:
        _read_message(result, message, number, seen_channels)
    result["channels"].sort(key=lambda entry: entry["line"])
    result["other_lines"] -= len(orphans)
    result["lines"] += len(orphans)
    _note(result["notes"], "channel line(s) %s stand without NCCL's prefix (written apart from it, another process's output "
                           "between them): read as channels whose host is not known" % _shown_lines([n for n, dummy in orphans]))


# NCCL's own messages, recognisable without its "host:pid:tid [dev] NCCL INFO " (an author may cut it).
_BARE_MESSAGES = (_IB_USING, _USING_NETWORK, _CHANNEL, lazy_compile(r"^NCCL_[A-Z0-9_]+ set by environment to "),
                  lazy_compile(r"^NET/(?:Socket|IB|Plugin) ?: "))
# The same without the channel lines, which _read_orphans reads.
_BARE_OWN_MESSAGES = tuple(form for form in _BARE_MESSAGES if form is not _CHANNEL)


def _read_bare(result, bare, seen_channels):
    """Read the lines in the form of NCCL's messages that stand without its prefix and INFO tag in a log that has them."""
    if not bare:
        return
    for number, message in bare:
        _read_message(result, message, number, seen_channels)
    result["other_lines"] -= len(bare)
    result["lines"] += len(bare)
    _note(result["notes"], "line(s) %s hold NCCL's messages without its prefix and INFO tag (an author cut them) beside lines "
                           "that have them: read as NCCL's INFO messages, their host not known" % _shown_lines([n for n, dummy in bare]))


def _tag_bare_messages(text):
    """The text with "NCCL INFO " before each line in the form of NCCL's messages, where at least two are; else None."""
    lines = _lines(text)
    marked = [any(form.match(line.strip()) for form in _BARE_MESSAGES) if len(line) <= MAX_LINE else False for line in lines]
    if sum(marked) < 2:
        return None
    return "\n".join("NCCL INFO " + line.strip() if mark else line for line, mark in zip(lines, marked))


def _add_ib_device(result, match, index=None):
    item = {"index": int(match.group("index") if index is None else index), "device": match.group("device"),
            "port": int(match.group("port")), "link": match.group("link")}
    if item not in result["ib_devices"]:
        result["ib_devices"].append(item)


def _add_ib_devices(result, text):
    """The HCAs of a ``NET/IB : Using`` list; each NIC of a merged virtual device under that device's index."""
    for merged in _IB_MERGED.finditer(text):
        for member in _IB_MEMBER.finditer(merged.group("members")):
            _add_ib_device(result, member, int(merged.group("index")))
    for device in _IB_DEVICE.finditer(_IB_MERGED.sub(" ", text)):
        _add_ib_device(result, device)


def _read_message(result, message, number, seen_channels, host=None, pending_interfaces=None):
    """Read one NCCL message into ``result``; "ib_using" for a ``NET/IB : Using`` line (its rest may be wrapped).

    ``pending_interfaces`` (host -> interfaces) keeps the ``NET : Using interface`` lines of NCCL before 2.4 until the
    line that follows them says whose they were."""
    tail = _CHANNEL_TAIL.search(message)
    channel = _CHANNEL.match(message[:tail.start()] if tail else message)
    if channel:
        key = (channel.group("channel"), channel.group("sub"), channel.group("src"), channel.group("dst"),
               channel.group("direction"), channel.group("transport"))
        kind, details = transport_kind(channel.group("transport"))
        transport = channel.group("transport")
        if kind == "other" and (len(transport) < 4 or transport.upper().startswith("NET/")):
            # "... via P" whose "2P/IPC/read" another process's output tore off, or "via NET/IBext/6/GD"
            # with that output glued on where "RDMA" was (Ray, mpirun and Slurm interleave the ranks' writes).
            shown = transport if len(transport) <= 24 else transport[:24] + "..."
            if _NET_WITHOUT_DEVICE.match(transport):
                # "via NET/Socket" of a guide's made-up line, or a line that ends there: which device, and whether GPUDirect
                # RDMA was on, is not in the text.
                _note(result["notes"], "a channel line whose transport names no device (%r, where NCCL prints NET/<network>/"
                                       "<device>): not counted" % shown, number, message)
                return
            _note(result["notes"], "a channel line cut short (%r after via): not counted" % shown, number, message)
            return
        entry = {
            "channel": int(channel.group("channel")), "sub": int(channel.group("sub")) if channel.group("sub") else None,
            "src_rank": int(channel.group("src")), "dst_rank": int(channel.group("dst")) if channel.group("dst") else None,
            "direction": channel.group("direction"), "transport": channel.group("transport"), "kind": kind,
            "net": details.get("net"), "net_device": details.get("net_device"), "gdrdma": bool(details.get("gdrdma")),
            "hca": None, "line": number,
        }
        # The same channel line from the same rank is printed again per communicator: count it once
        # per communicator is impossible to tell apart, so the transports count distinct lines.
        if key not in seen_channels:
            seen_channels.add(key)
            result["channels"].append(entry)
        return
    if _RING_ORDER.match(message):
        return  # the ring's order, not a connection: no transport to count
    if _CHANNEL_TORN_BEFORE_VIA.match(message) and " via " not in message:
        _note(result["notes"], "a channel line cut short before its transport: not counted", number, message)
        return
    using = _USING_NETWORK.match(message)
    if using:
        network = using.group("network")
        result["network"] = network
        if network not in result["networks"]:
            result["networks"].append(network)
        return
    if _IB_NO_DEVICE.match(message):
        result["ib_no_device"] = True
        return
    if _LEGACY_INTERFACE.match(message) or _SOCKET_FOUND.match(message) or _IB_SIDEBAND.match(message):
        _read_legacy_interfaces(result, message, number, host, {} if pending_interfaces is None else pending_interfaces)
        return
    ib = _IB_USING.match(message)
    if ib:
        _add_ib_devices(result, ib.group("devices"))
        return "ib_using"
    ib = _IB_DEVICE_LINE.match(message)
    if ib:
        _add_ib_device(result, ib)
        return
    socket = _SOCKET_USING.match(message)
    if socket:
        for interface in _SOCKET_INTERFACE.finditer(socket.group("interfaces")):
            item = {"index": int(interface.group("index")), "name": interface.group("name"), "address": interface.group("address")}
            if item not in result["socket_interfaces"]:
                result["socket_interfaces"].append(item)
        return
    env = _ENV_SET.match(_CHANNEL_TAIL.sub("", message))
    if env:
        result["env"][env.group("name")] = env.group("value").strip()
        return
    if _NO_VERBS.search(message):
        result["verbs_missing"] = True
        return
    ring = _GDR_RING.search(message)
    if ring and ring.group("gdr") is not None:
        result["gdr"]["rings"].append(int(ring.group("gdr")))
        return
    gdr = _GDR_LINE.search(message)
    if gdr and _SOCKET_NETWORK.match(message):
        return  # NCCL asks every network's devices, sockets too ("NET/Socket : ... Disabled for HCA 0 'lo'"): no RDMA adapter
    if gdr:
        if gdr.group("name") and gdr.group("hca").isdigit():
            # "for HCA 0 'mlx5_0'" names the index a later "for GPU 8 / HCA 0" gives alone (gIB prints both).
            result["gdr"].setdefault("names", {})[gdr.group("hca")] = gdr.group("name")
        name = gdr.group("name") or gdr.group("hca")
        bucket = result["gdr"]["enabled" if gdr.group("state").lower() == "enabled" else "disabled"]
        if name not in bucket:
            bucket.append(name)


def _read_legacy_interfaces(result, message, number, host, pending):
    """NCCL 2.2/2.3's interface lines: the ones "NET/Socket : N interfaces found" counts are the socket transport's."""
    legacy = _LEGACY_INTERFACE.match(message)
    if legacy:
        pending.setdefault(host, []).append((legacy.group("name"), legacy.group("address")))
        return
    listed = pending.pop(host, [])
    found = _SOCKET_FOUND.match(message)
    if not found:
        return  # IB's sideband interface, not a socket transport's
    count = int(found.group("count"))
    picked = listed[-count:] if count else []
    whole = len(picked) == count  # else lines of the list are not in the text, and which ones (so each one's index) is not known
    if not whole:
        _note(result["notes"], "NET/Socket found %d interface(s) but the text names %d before it: only those are known, "
                               "not their index" % (count, len(picked)), number, message)
    for index, (name, address) in enumerate(picked):
        item = {"index": index if whole else None, "name": name, "address": address}
        if item not in result["socket_interfaces"]:
            result["socket_interfaces"].append(item)


def _settle(result):
    members = {}  # NCCL's index -> its HCAs (several for a merged virtual device)
    for device in result["ib_devices"]:
        if device["device"] not in members.setdefault(device["index"], []):
            members[device["index"]].append(device["device"])
    missing = sorted(set(range(max(members) + 1)) - set(members)) if members else []
    if missing:
        # NCCL numbers its devices from 0 without a gap: a list that skips some was shortened ("[0]mlx5_0:1/IB ... [7]...").
        _note(result["notes"], "NET/IB's HCAs in the text skip index(es) %s, which NCCL numbers without a gap (a list shortened, "
                               "or lines left out): only the HCAs shown are known" % ", ".join(str(index) for index in missing))
    by_index = {index: "+".join(names) for index, names in members.items()}
    counts = {}
    hcas = []
    for entry in result["channels"]:
        counts[entry["kind"]] = counts.get(entry["kind"], 0) + 1
        if entry["kind"] == "net_ib" or (entry["kind"] == "collnet" and entry["net_device"] is not None):
            # SHARP's collective network runs over the IB devices NCCL numbered in its NET/IB line.
            entry["hca"] = by_index.get(entry["net_device"])
            names = members.get(entry["net_device"]) or [
                "%s/%s/%s" % ("NET" if entry["kind"] == "net_ib" else "COLLNET", entry["net"], entry["net_device"])]
            hcas.extend(name for name in names if name not in hcas)
    result["transports"] = {kind: counts[kind] for kind in TRANSPORT_KINDS if kind in counts}
    result["net_channels"] = sum(counts.get(kind, 0) for kind in ("net_ib", "net_socket", "net_plugin"))
    result["gdrdma_channels"] = sum(1 for entry in result["channels"] if entry["gdrdma"])
    result["hcas_used"] = sorted(hcas)
    for state in ("enabled", "disabled"):
        # "GPU Direct RDMA Enabled for GPU 81000 / HCA 1" names the HCA by NCCL's index: its device name
        # where the "NET/IB : Using [1]mlx5_1:1/IB" line gave one.
        named = result["gdr"].get("names") or {}
        names = [by_index.get(int(hca)) or named.get(hca, hca) if hca.isdigit() else hca for hca in result["gdr"][state]]
        result["gdr"][state] = list(dict.fromkeys(names))
    result["gdr"].pop("names", None)
    if not result["channels"]:
        _note(result["notes"], "no channel line (NCCL INFO Channel ... via ...): the log does not say which transport "
                               "NCCL connected (NCCL_DEBUG=INFO prints them when a communicator is set up)")
    if counts.get("collnet") and any(_COLLNET_FALLBACK.search(warning) for warning in result["warnings"]):
        _note(result["notes"], "NCCL could not set CollNet up (\"Cannot initialize CollNet, using point-to-point network "
                               "instead\"): the collnet connections counted were given up")


def ib_hca_entries(value):
    """The entries of an ``NCCL_IB_HCA`` value: ``[{"device", "port", "exact"}]`` and whether it excludes.

    NCCL's syntax: a comma separated list of ``device[:port]``; a leading ``^`` excludes the listed
    ones, a leading ``=`` matches names exactly (without it, a prefix matches: ``mlx5`` names every
    mlx5 device).
    """
    text = (value or "").strip()
    exclude = text.startswith("^")
    text = text.lstrip("^")
    exact = text.startswith("=")
    text = text.lstrip("=")
    entries = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        device, _sep, port = part.partition(":")
        entries.append({"device": device, "port": int(port) if port.isdigit() else None, "exact": exact})
    return {"exclude": exclude, "entries": entries}


# ------------------------------------------------------------------------------------ nccl-tests

# Open MPI's aggregation of its help messages, printed by mpirun among the ranks' lines: "8 more processes have sent
# help message help-mtl-ofi.txt / OFI call fail".
_MPI_AGGREGATE = lazy_compile(r"^\d+ more process(?:es)? ha(?:s|ve) sent help message\b")
# nccl-tests: "nThread 1 nGpus 8 minBytes 8 maxBytes ..."; rccl-tests: "nThreads: 1 nGpus: 2 nRanks: 1 minBytes: ..."
_TESTS_PARAMS = lazy_compile(r"nThreads?:?\s+(?P<nthread>\d+)\s+nGpus:?\s+(?P<ngpus>\d+)\s+(?:nRanks:?\s+\d+\s+)?"
                             r"minBytes:?\s+(?P<min>\d+)\s+maxBytes:?\s+(?P<max>\d+)")
# "# nccl-tests version 2.17.6 ...", "# rccl-tests version 2.17.9-...", older rccl-tests' "rccl-tests: Version develop:448c4c7".
_TESTS_VERSION = lazy_compile(r"[nr]ccl-tests:? [Vv]ersion (?P<version>\S+)")
# What nccl-tests prints when a test fails: "node0: Test CUDA failure common.cu:389 'an illegal memory access ...'".
_TESTS_FAILURE = lazy_compile(r"\bTest (?:NCCL|CUDA) failure \S+ '[^']*'")
_TESTS_NAME = lazy_compile(r"Collective test (?P<state>starting|concluded): (?P<name>\S+)|"
                           r"\b(?P<binary>(?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|hypercube)_perf)\b")
_TESTS_DEVICE = lazy_compile(
    # Builds against NCCL 1 print no Pid.
    r"Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?(?:Pid\s+(?P<pid>\d+)\s+)?on\s+(?P<host>.+?)\s+device\s+(?P<device>\d+)\s+"
    r"\[(?P<bus>[^\]]+)\]\s*(?P<name>.*?)\s*$"
)
_AVG_BUSBW = lazy_compile(r"Avg bus bandwidth\s*:\s*(?P<value>[0-9]+(?:\.[0-9]+)?)")
_OUT_OF_BOUNDS = lazy_compile(r"Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<state>OK|FAILED)?")
_HEADER_WORDS = ("size", "count", "type")
# nccl-tests' bus bandwidth is algbw times a factor of the ranks (all_reduce 2(n-1)/n, all_gather and alltoall (n-1)/n,
# broadcast 1): at least half of algbw with two ranks or more, 0 with one. An algbw of 0.02 GB/s or more whose busbw is
# printed 0.00 was measured by one rank, where no byte crossed a link.
_ONE_RANK_MIN_ALGBW = 0.02
_NUMBER = lazy_compile(r"^-?[0-9]{1,20}(?:\.[0-9]{1,12})?$")
_GB_TO_GBIT = 8.0


def _number(token):
    if not _NUMBER.match(token):
        return None
    return float(token) if "." in token else int(token)


def _header_columns(line):
    """The column names of a table header line (``size count type redop root time algbw busbw #wrong ...``), or None."""
    tokens = line.replace("#wrong", "wrong").replace("#", " ").split()
    lowered = [token.lower() for token in tokens]
    if not all(word in lowered for word in _HEADER_WORDS) or "busbw" not in lowered:
        return None
    return lowered


def _row(columns, tokens):
    """One result row: ``{size, count, type, redop, root, out_of_place, in_place}`` or None when it does not fit.

    alltoall, sendrecv and the other collectives without a reduction print their ``redop`` column empty:
    a row one token short of a header with ``redop`` has none."""
    if len(tokens) == len(columns) - 1 and "redop" in columns:
        tokens = list(tokens)
        tokens.insert(columns.index("redop"), None)
    if len(tokens) != len(columns):
        return None
    row = {"size": None, "count": None, "type": None, "redop": None, "root": None, "labels": {}}
    groups = []
    current = None
    for name, token in zip(columns, tokens):
        if name in ("size", "count"):
            value = _number(token)
            if not isinstance(value, int):
                return None
            row[name] = value
        elif name in ("type", "redop"):
            row[name] = token  # None for an empty redop
        elif name == "root":
            value = _number(token)
            if not isinstance(value, int):
                return None
            row["root"] = value
        elif name == "time":
            current = {"time_us": _number(token), "algbw": None, "busbw": None, "wrong": None}
            groups.append(current)
            if current["time_us"] is None and token != "N/A":
                return None
        elif name in ("algbw", "busbw"):
            if current is None:
                return None
            value = _number(token)
            if value is None:
                return None
            current[name] = float(value)
        elif name in ("wrong", "error"):
            if current is not None:
                current["wrong"] = None if token == "N/A" else token
        elif row["size"] is None:
            row["labels"][name] = token
        else:
            return None
    if row["size"] is None or not groups:
        return None
    for group in groups:
        for key in ("algbw", "busbw"):
            group[key + "_gbps"] = round(group[key] * _GB_TO_GBIT, 3) if group[key] is not None else None
    row["out_of_place"] = groups[0]
    row["in_place"] = groups[1] if len(groups) > 1 else None
    if not row["labels"]:
        del row["labels"]
    return row


def parse_nccl_tests(text, strict=False):
    """Read the output of an nccl-tests binary.

    Returns (every key always present): ``test`` (``all_reduce_perf`` when the text names it),
    ``version`` (nccl-tests'), ``params`` (``nthread``, ``ngpus``, ``min_bytes``, ``max_bytes``),
    ``devices`` (``rank``, ``group``, ``pid``, ``host``, ``device``, ``bus``, ``name``), ``hosts``,
    ``rows`` (``size``, ``count``, ``type``, ``redop``, ``root``, ``out_of_place`` and ``in_place``
    with ``time_us``, ``algbw``, ``busbw`` in GB/s and ``*_gbps`` in Gb/s, and ``wrong``),
    ``largest`` (the row of the largest size; of the last run where the text holds several, as the
    parameters and ``avg_busbw`` are), ``busbw_at_largest`` (its out-of-place bus bandwidth in
    GB/s, the figure nccl-tests' users quote), ``avg_busbw`` (the ``Avg bus bandwidth`` line, GB/s;
    both None, with a note, where the processes did not form one communicator: see ``_judge_one_rank``),
    ``out_of_bounds`` (``count``, ``ok``), ``tables`` (how many table headers), ``notes`` (one says
    which rows count wrong elements, ``#wrong`` above 0, whose figures are kept as printed).

    Text with neither a table nor any line of nccl-tests raises ``NcclOutputError``; with ``strict``
    a numeric line that fits no table is an error. Text holding the tables of several tests (a suite's
    "Running: ./build/all_gather_perf ...", "Running: ./build/all_reduce_perf ...") is read as one
    test's output: ``all_reduce_perf``'s where it is one of them, else the last; a note names the
    others, and the notes of their lines (a failed test) are kept.
    """
    numbered = list(enumerate(_lines(text), start=1))
    parts = _split_by_test(numbered)
    results = []
    if len(parts) > 1:
        results = [result for result in (_read_part(part, strict) for part in parts) if result and result["rows"]]
    if len(results) < 2:
        return _read_tests(numbered, strict)
    chosen = next((result for result in reversed(results) if result["test"] == "all_reduce_perf"), results[-1])
    notes = [note for result in results for note in result["notes"]]
    for result in results:
        if result is not chosen and result["out_of_bounds"] and not result["out_of_bounds"]["ok"]:
            notes.append({"line": None, "text": None, "reason": "%s, not read, reported %d value(s) out of bounds" % (
                _test_name(result), result["out_of_bounds"]["count"])})
    chosen["notes"] = sorted(notes, key=lambda note: (note["line"] is None, note["line"] or 0))
    _note(chosen["notes"], "the text holds the tables of %d tests (%s): %s's is read" % (
        len(results), ", ".join(_test_name(result) for result in results), _test_name(chosen)))
    return chosen


def _test_name(result):
    """A test's name as a note shows it: the text's own word, cut to a length a note can hold."""
    name = result["test"] or "an unnamed test"
    return name if len(name) <= 60 else name[:57] + "..."


def _split_by_test(numbered):
    """The parts of numbered lines, each from the line that names a test other than the part before's."""
    parts, current, named = [], [], None
    for number, raw in numbered:
        name = _TESTS_NAME.search(raw) if len(raw) <= MAX_LINE else None
        if name and name.group("state") != "concluded":
            test = name.group("name") or name.group("binary")
            if named is not None and test != named and current:
                parts.append(current)
                current = []
            named = test
        current.append((number, raw))
    if current:
        parts.append(current)
    return parts


def _read_part(numbered, strict):
    """One part's reading, or None where it holds nothing of nccl-tests (a command line and its prompt); with
    ``strict``, a part whose numeric line fits no table still raises."""
    try:
        result = _read_tests(numbered, False)
    except NcclOutputError:
        return None
    return _read_tests(numbered, True) if strict else result


def _read_tests(numbered, strict):
    """parse_nccl_tests' reading of one test's lines (``(number, text)``)."""
    result = {
        "test": None, "version": None, "params": None, "devices": [], "hosts": [], "rows": [], "largest": None,
        "busbw_at_largest": None, "busbw_at_largest_gbps": None, "avg_busbw": None, "out_of_bounds": None,
        "tables": 0, "notes": [],
    }
    notes = result["notes"]
    columns = None
    recognised = misfits = markdown = 0
    wrong_rows = []  # (line number, text, row) of the rows whose "#wrong" cells count wrong elements
    sizes_seen, repeated = {}, False  # size -> the line of its first row; whether a size came again
    run_sizes, run_start = set(), 0  # the sizes of the run being read, and where its rows start
    table_starts = [0]  # where the rows of each table header after rows start
    devices_of_an_earlier_run = False  # the devices listed are another run's: the next device line starts the list anew
    # (rank, group) -> the (host, pid) of its first device line, and the first device line that gives a listed rank
    # to another process: the processes did not join one job (each printed its own "Rank 0").
    rank_holders, rank_repeated = {}, None
    params_again = None  # the line where the parameters came again before any row: another run, or another process's header
    another_test_named = False  # a command naming another test came after the rows: what follows is not this test's run
    first = None
    for number, raw in numbered:
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if first is None:
            first = (number, stripped)
        if len(line) > MAX_LINE:
            _note(notes, "a line longer than %d characters, not read" % MAX_LINE, number, line)
            continue
        failure = _TESTS_FAILURE.search(line)
        if failure:
            _note(notes, "the test failed: %s" % failure.group(0), number, line)
        name = _TESTS_NAME.search(line)
        if name and name.group("state") == "concluded":
            # "# Collective test concluded: sendrecv_perf" closes the table above it: that test's.
            result["test"] = result["test"] or name.group("name")
            recognised += 1
            continue
        if name:
            named = name.group("name") or name.group("binary")
            if result["rows"]:
                # A command after the table starts another run: the table is not that test's.
                if named != result["test"]:
                    _note(notes, "%s is named after the table, so the table is not taken for it" % named, number, line)
                    another_test_named = True
            elif result["test"] is None:
                result["test"] = named
        version = _TESTS_VERSION.search(line)
        if version:
            result["version"] = version.group("version")
            recognised += 1
            continue
        params = _TESTS_PARAMS.search(line)
        if params:
            if (result["params"] is not None or result["rows"]) and not another_test_named:
                # The parameters again: another run starts (the first may have failed before its first row). Its devices
                # (where it lists them), parameters and figures are read, as the Avg bus bandwidth line is the last run's.
                devices_of_an_earlier_run = True
                run_sizes, run_start = set(), len(result["rows"])
                if not result["rows"] and params_again is None:
                    params_again = number
                _note(notes, "another run of the test starts here (its parameters again): the devices, parameters and "
                             "figures read are the last run's", number, line)
            result["params"] = {"nthread": int(params.group("nthread")), "ngpus": int(params.group("ngpus")),
                                "min_bytes": int(params.group("min")), "max_bytes": int(params.group("max"))}
            recognised += 1
            continue
        device = _TESTS_DEVICE.search(line)
        if device and devices_of_an_earlier_run:
            result["devices"], result["hosts"], devices_of_an_earlier_run = [], [], False
            rank_holders, rank_repeated = {}, None
        if device:
            entry = {"rank": int(device.group("rank")), "group": int(device.group("group")) if device.group("group") else None,
                     "pid": int(device.group("pid")) if device.group("pid") else None,
                     "host": device.group("host").strip(), "device": int(device.group("device")),
                     "bus": device.group("bus"), "name": device.group("name")}
            holder = rank_holders.setdefault((entry["rank"], entry["group"]), (entry["host"], entry["pid"]))
            if holder != (entry["host"], entry["pid"]) and rank_repeated is None:
                rank_repeated = (number, line, entry["rank"])
            result["devices"].append(entry)
            if entry["host"] not in result["hosts"]:
                result["hosts"].append(entry["host"])
            recognised += 1
            continue
        avg = _AVG_BUSBW.search(line)
        if avg:
            result["avg_busbw"] = float(avg.group("value"))
            recognised += 1
            continue
        bounds = _OUT_OF_BOUNDS.search(line)
        if bounds:
            result["out_of_bounds"] = {"count": int(bounds.group("count")), "ok": bounds.group("state") != "FAILED"}
            recognised += 1
            continue
        header = _header_columns(stripped)
        if header is not None:
            columns = header
            result["tables"] += 1
            if result["rows"] and table_starts[-1] != len(result["rows"]):
                table_starts.append(len(result["rows"]))
            recognised += 1
            continue
        if _message(line) is not None:
            continue  # an NCCL INFO line inside the table (NCCL_DEBUG=INFO): parse_nccl_log reads those
        if _MPI_AGGREGATE.match(stripped):
            _note(notes, "a line of the MPI launcher's own, not of nccl-tests", number, line)
            continue
        if stripped.count("|") >= 5:
            # An author's table made from the output ("| 8 MiB | 2,097,152 | float | 906.10 | ..."), or rows a page rendered
            # as a table without its outer pipes ("1024 | 512 | half | sum | ..."): the author's columns.
            _note(notes, "a Markdown table's row, made from nccl-tests' output by its author: not read", number, line)
            markdown += 1
            continue
        tokens = stripped.split()
        if columns is None:
            columns = _guess_columns(tokens)
            if columns is not None:
                _note(notes, "rows without a table header: columns taken from nccl-tests' layout for %d columns" % len(tokens), number, line)
        row = _row(columns, tokens) if columns else None
        if row is None:
            if any(_number(token) is not None for token in tokens[:1]):
                if strict:
                    raise NcclOutputError("line %d is no row of the nccl-tests table: %r" % (number, stripped[:120]))
                _note(notes, "a numeric line that fits no table of the text, ignored", number, line)
                misfits += 1
            continue
        # A size of 0 repeats within one run: the smallest sizes of a run from -b 1 hold no whole element. A run
        # with -d all prints each size once per datatype.
        seen_as = (row["size"], row["type"], row["redop"])
        if seen_as in run_sizes and row["size"]:
            # Another run: its rows are kept, and the figures of the largest size are taken from the last run,
            # as the parameters and the Avg bus bandwidth line are (each run prints its own after the last).
            run_sizes, run_start = set(), len(result["rows"])
            if not repeated:
                repeated = True
                _note(notes, "size %s is in the table again (first on line %d): the text holds the rows of more than one "
                             "run, all kept; the largest size's figures are the last run's" % (row["size"], sizes_seen[seen_as]),
                      number, line)
        run_sizes.add(seen_as)
        sizes_seen.setdefault(seen_as, number)
        result["rows"].append(row)
        recognised += 1
        if "wrong" in columns and any(wrong_elements(group["wrong"]) for group in (row["out_of_place"], row["in_place"]) if group):
            wrong_rows.append((number, line, row))
    if wrong_rows:
        _note_wrong_rows(notes, wrong_rows)
    if rank_repeated is not None and params_again is not None:
        # Each process printed its own header: the parameters again on that line were the other process's, not a run after.
        rank_repeated += ("; the parameters printed again on line %d are the other process's header" % params_again,)
    if not recognised:
        where = (" (line %d: %r)" % (first[0], first[1][:120])) if first else " (the text is empty)"
        raise NcclOutputError("nothing in the text is nccl-tests output (no table, no Avg bus bandwidth line)%s" % where)
    kinds = [{(row["type"], row["redop"]) for row in result["rows"][start:end]}
             for start, end in zip(table_starts, table_starts[1:] + [len(result["rows"])])]
    if any(kind != kinds[-1] for kind in kinds[:-1]) and table_starts[-1] > run_start:
        # Tables of other collectives (all_reduce's rows sum, alltoall's have no operation), none of them named: the
        # largest size's figures are the last table's, as its Avg bus bandwidth and bounds lines are.
        run_start = table_starts[-1]
        _note(notes, "the text holds %d tables of different tests (their rows' types and operations differ) and names none: "
                     "the last table's figures are read" % len(kinds))
    if result["rows"] and not result["rows"][run_start:]:
        # The last run printed no row (it failed, or the paste ends before its table): an earlier run's figures are
        # not this run's.
        _note(notes, "the last run printed no result row (it failed, or the text ends before its rows): no bandwidth is "
                     "read, the earlier runs' rows are kept")
    elif result["rows"]:
        last_run = result["rows"][run_start:]
        size = max(row["size"] for row in last_run)
        at_size = [row for row in last_run if row["size"] == size]
        # With -d all every datatype has its row at that size: float's is nccl-tests' default.
        largest = next((row for row in at_size if row["type"] == "float"), at_size[0])
        types = list(dict.fromkeys(row["type"] for row in at_size))
        if len(types) > 1:
            _note(notes, "%d datatypes at the largest size (%s): the bus bandwidth at the largest size is %s's" % (
                len(types), ", ".join(str(t) for t in types), largest["type"]))
        result["largest"] = largest
        result["busbw_at_largest"] = largest["out_of_place"]["busbw"]
        result["busbw_at_largest_gbps"] = largest["out_of_place"]["busbw_gbps"]
        _judge_one_rank(result, rank_repeated)
    elif misfits:
        _note(notes, "no result row: %d numeric line(s) fit none of the table's columns (tables side by side, or rows cut or "
                     "joined), so no bandwidth is read" % misfits)
    elif markdown:
        _note(notes, "no result row: the table is a Markdown table its author made from the output, not the output")
    else:
        _note(notes, "no result row: the test printed no table (it failed, or the paste ends before the rows)")
    if rank_repeated is not None and not result["largest"]:
        _note(notes, _rank_repeated(result, rank_repeated), rank_repeated[0], rank_repeated[1])
    return result


def wrong_elements(token):
    """The count of a "#wrong" cell (nccl-tests prints it with %g: "237858", "1.2e+06"); 0 for "0", "N/A" or none.

    The "error" column of the layout before 2.10 is another figure (the largest relative error, "1e-06"): not read here."""
    try:
        return float(token)
    except (TypeError, ValueError):
        return 0


def _note_wrong_rows(notes, wrong_rows):
    """Say which rows counted wrong elements: their bandwidth is that of a run whose results failed nccl-tests' check, which
    the text may not say otherwise (a paste without its "Out of bounds values" line, a run that hung before printing it)."""
    number, line, row = wrong_rows[0]
    places = ((row["out_of_place"], "out-of-place"), (row["in_place"], "in-place"))
    cells = ", ".join("%s %s" % (group["wrong"], place) for group, place in places if group)
    _note(notes, "%d row(s) count wrong elements (#wrong %s at %d bytes, the first): nccl-tests' check of the results failed "
                 "there, so their bandwidth is that of a run that corrupted data" % (len(wrong_rows), cells, row["size"]), number, line)


_RANK_REPEATED = ("rank %d is listed for more than one process (%s): the processes did not form one communicator, each ran "
                  "as a job of its own (nccl-tests built without MPI=1, or started so)")


def _rank_repeated(result, rank_repeated):
    """The note on a rank listed for two processes: ``rank_repeated`` is (line, text, rank[, what else it explains])."""
    holders = ", ".join("%s%s" % (("pid %s on " % d["pid"]) if d["pid"] is not None else "", d["host"])
                        for d in result["devices"] if d["rank"] == rank_repeated[2])
    return _RANK_REPEATED % (rank_repeated[2], holders) + "".join(rank_repeated[3:])


def _judge_one_rank(result, rank_repeated):
    """Leave the bus bandwidth unread where the rows are not one job's across its ranks.

    Two processes that each list themselves as the same rank ran as jobs of their own, and rows whose busbw is 0.00
    beside an algbw that would give at least 0.01 with two ranks were measured by one rank, where no byte crossed a
    link. One device line (one process, one GPU) is a run on one GPU made on purpose: its figures are read as printed."""
    largest = result["largest"]["out_of_place"]
    one_rank = largest["busbw"] == 0 and (largest["algbw"] or 0) >= _ONE_RANK_MIN_ALGBW
    if rank_repeated is None and not (one_rank and len(result["devices"]) != 1):
        return
    line = text = None
    figures = "the rows give busbw 0.00 beside algbw %s GB/s at %d bytes, the figures of one rank" % (
        largest["algbw"], result["largest"]["size"])
    if rank_repeated is not None:
        line, text = rank_repeated[0], rank_repeated[1]
        reason = _rank_repeated(result, rank_repeated)
        reason += ("; %s" % figures) if one_rank else "; the rows are one process's"
    elif result["devices"]:
        reason = "%s, while %d devices are listed: the processes did not form one communicator" % (figures, len(result["devices"]))
    else:
        reason = ("%s, and the text lists no device: one GPU on purpose, or processes that did not form one communicator "
                  "(nccl-tests built without MPI=1), is not known" % figures)
    _note(result["notes"], reason + ": no bus bandwidth is read", line, text)
    result["busbw_at_largest"] = result["busbw_at_largest_gbps"] = result["avg_busbw"] = None


# nccl-tests' own layouts, for rows pasted without their header: since 2.10 (redop and root), before.
_LAYOUTS = {
    13: ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "wrong", "time", "algbw", "busbw", "wrong"],
    12: ["size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"],
    11: ["size", "count", "type", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"],
}


def _guess_columns(tokens):
    layout = _LAYOUTS.get(len(tokens))
    if layout is None or _number(tokens[0]) is None:
        return None
    return layout
