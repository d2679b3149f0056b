# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest output (ib_write_bw, ib_read_bw, ib_send_bw and the _lat tools): parse and classify.

The parser reads what people actually have: one tool's output, a server and a client printing into
the same terminal (the loopback run of the write-up, where both headers and both tables interleave),
pastes that start at the title line, tabs inside rows, warnings inside the table. Failures are
classified into causes an operator can act on, each with a hint.

This file only reads text; running the tools lives in ``_perftest.py``, so that the
``parse_perftest`` filter on the controller loads no process handling.
"""

from __future__ import annotations

import re

from ansible_collections.rdma.node.plugins.module_utils._ib_common import MAIL_QUOTE_MARKS, MAX_LINE, is_shell_prompt
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

# Gb/s per printed bandwidth unit.
#
# perftest's "MB/sec" is 2**20 bytes per second, not 10**6. Its print_report_bw()
# (src/perftest_parameters.c) computes
#     format_factor = (user_param->report_fmt == MBS) ? 0x100000 : 125000000;
#     bw_avg = (size * iterations * cycles_to_units) / (test_cycles * format_factor);
# so a MB/sec figure is bytes/s / 2**20 and a Gb/sec figure is bytes/s / 1.25e8 (bits/s / 10**9).
# The --report_gbits help text says the same ("MB=2^20 byte, while Gb=10^9 bits",
# Factor=10^9/(2^20*8)=119.2), and linux-rdma/perftest pull request #257 (2024) renamed the column
# to MiB/sec for that reason. The captured outputs agree: 1048576 B x 0.011123 Mpps is 11123 MiB/s
# (11663 MB/s in powers of ten) against 11129.09 printed.
MIB_PER_SEC_IN_GBPS = 2 ** 20 * 8 / 1e9
_GBPS_PER_UNIT = {"gb/sec": 1.0, "mb/sec": MIB_PER_SEC_IN_GBPS, "mib/sec": MIB_PER_SEC_IN_GBPS}

_DASHES = lazy_compile(r"^\s*-{10,}\s*$")
# What perftest prints around a GPU-memory run (--use_cuda, --use_cuda_dmabuf) and an rdma_cm exchange
# (src/cuda_memory.c, perftest_communication.c): read, so that a paste of one places every line.
_CUDA = lazy_compile(
    r"^(?:initializing CUDA|Listing all CUDA devices in system:|CUDA device \d+: PCIe address is \S+|Picking device No\. \d+|"
    r"There are \d+ devices supporting CUDA, picking first\.*|\[pid = \d+, dev = \d+\] device name = \[.*\]|"
    r"creating CUDA Ctx|making it the current CUDA Ctx|cuMemAlloc\(\) of a \d+ bytes GPU buffer|CUDA device integrated: \w+|"
    r"allocated GPU buffer address at \S+ pointer=\S+|allocated GPU buffer of a \d+ address at \S+ for type \w+|"
    r"deallocating (?:RX )?GPU buffer \S+|destroying current CUDA Ctx|Finding PCIe BUS \S+|Picking GPU number \d+|"
    r"Got PCIe address of: \S+|Starting GPU touching process|stopping CUDA gpu touch running kernel|"
    r"Calling (?:ibv_reg_dmabuf_mr|mlx5dv_reg_dmabuf_mr|ibv_reg_mr_ex with dmabuf)\(.*\).*|using DMA-BUF for GPU buffer address at .*|"
    r"Perftest doesn't supports CUDA tests with inline messages: inline size set to 0|"
    r"Using ROCm Device with ID: \d+, .*|allocated \d+ bytes of GPU buffer at \S+)\s*$"
)
# What newer perftest prints around a run (the clock it measured, when it connected and finished), and
# what it prints before a completion error (src/perftest_resources.c: the send and completion counts).
_INFO = lazy_compile(
    r"^(?:Using sampled CPU speed \d+ MHz over reported speed \d+ MHz|(?:Connected|Completed): .+|Total run time: [0-9.]+\s*s|"
    r"scnt=\d+, ccnt=\d+|rcnt=\d+|Min msg size for RawEth is \d+B - changing msg size to \d+|Inline data is used up to \d+ bytes message|"
    # An MTU perftest lowered (perftest_parameters.c, perftest_communication.c), a device it did not find.
    r"Requested mtu is higher than active mtu|Changing to active mtu - \d+|Max msg size in UD is MTU \d+|Changing to this MTU|"
    r"If device exists, check if driver is up|"
    # An rdma_cm server waiting (-R): no GPU in it.
    r"Waiting for client rdma_cm QP to connect|Please run the same command with the IB/RoCE interface IP|"
    # The buffer of a run in a mapped file (--mmap, src/mmap_memory.c): host memory, no GPU.
    r"allocated mmap buffer of size \d+ at \S+|"
    # raw_ethernet's box around the Ethernet header it sends (raw_ethernet_resources.c).
    r"\*+raw ethernet header\**|\|[-| ]*\||\|[\w .:|-]*\|)\s*$"
)
# Which GPU a run used: perftest lists the CUDA devices with their PCIe bus, then the one it picked.
_CUDA_DEVICE = lazy_compile(r"^CUDA device (?P<index>\d+): PCIe address is (?P<bus>[0-9A-Fa-f]+):(?P<slot>[0-9A-Fa-f]+)\s*$")
_CUDA_PICKED = lazy_compile(r"^Picking (?:device No\.|GPU number) (?P<index>\d+)\s*$")
_CUDA_FIRST = lazy_compile(r"^There are \d+ devices supporting CUDA, picking first")
_STARS = lazy_compile(r"^\s*\*+\s*$")
_BANNER = lazy_compile(r"Waiting for client to connect", re.IGNORECASE)
# A one-way RDMA write or read bandwidth test, whose server only waits and then prints the client's last row.
_ONE_WAY_RDMA_TITLE = lazy_compile(r"^RDMA_(?:Write|Read) (?:Post List )?BW Test$")
_TITLE = lazy_compile(r"^\s*((?:[A-Za-z_]+ )+(?:BW|Latency|Lat) Test)\s*$")
_ADDRESS = lazy_compile(r"^\s*(local|remote) address:\s*(.*?)\s*$")
_ADDRESS_KEYS = lazy_compile(r"\b(LID|QPN|PSN|OUT|RKey|VAddr|SRQ[Nn])\b")
_GID = lazy_compile(r"^\s*GID:\s*(\S+)\s*$")
# Figures are read from ASCII digits only (float() and int() also take Arabic-Indic or fullwidth
# digits, "_" separators, "inf" and "nan"), and at most 15 digits before the point, so that every
# figure and every product of figures is a finite float: a result never holds Infinity or NaN.
_NUMBER = lazy_compile(r"^-?[0-9]{1,15}(?:\.[0-9]{1,12})?$")
_INTEGER = lazy_compile(r"^[0-9]{1,15}$")
_WARNING = lazy_compile(
    r"\bwarning\b|conflicting cpu frequency|might be too big|current tx depth is|"
    r"not recognized to implement|disabling dynamic polling|CPU Utilization works only with Duration mode|"
    r"test integrity may be harmed",
    re.IGNORECASE,
)
# ERRNO: perftest's rdma_cm exchange prints strerror() on a line of its own (perftest_communication.c); its key
# exchange prints perror()'s "pp_read_keys: Success" before the "Couldn't read remote address" that says what failed.
_ERRORISH = lazy_compile(r"couldn'?t|unable|failed|error|not found|cannot|refused|^\s*ERRNO:|^\s*\w+_read_keys:", re.IGNORECASE)
# What a paste carries besides the output: a shell prompt (``$ ib_write_bw ...``,
# ``[root@node ~]# ...``), a ``#`` comment, the tool's command line itself (after the environment it sets,
# ``GPUDIRECT_GPU=0 ./ib_write_bw ...``) or as bash's trace shows it (``set -x``: ``+ taskset -c 17 ib_send_bw ...``).
_PERFTEST_COMMAND = lazy_compile(r"^(?:\+{1,8} )?(?:[A-Za-z_][A-Za-z0-9_]{0,63}=\S*\s+){0,8}(?:sudo\s+)?(?:(?:numactl|taskset)\s+\S.*?\s)?(?:\S*/)?"
                                 r"(?:ib_(?:write|read|send|atomic)_(?:bw|lat)|"
                                 r"raw_ethernet_\w+)(?:\s.*)?$")
_COLUMN_UNIT = lazy_compile(r"^(?P<name>.*?)\[(?P<unit>[^\]]*)\]$")
# A perftest run in a command line (after taskset, numactl, sudo...), and what it asks for: perftest's
# --output=latency|bandwidth|message_rate prints one bare figure instead of the report
# (perftest_parameters.c): the average latency in usec, the average bandwidth in the report's unit
# (MB/sec, Gb/sec with --report_gbits) or the message rate in Mpps, of one message size (-s, --size;
# 2 bytes by default for a latency test, 65536 for a bandwidth test).
_PERFTEST_RUN = lazy_compile(r"(?:^|[\s/])(?:ib_(?:write|read|send|atomic)_(?P<kind>bw|lat)|raw_ethernet_(?P<raw>bw|lat))(?:\s|$)")
_OUTPUT_MODE = lazy_compile(r"(?:^|\s)--output[= ](?P<mode>latency|bandwidth|message_rate)\b")
_SIZE_OPTION = lazy_compile(r"(?:^|\s)(?:--size[= ]|-s\s*)(?P<bytes>[0-9]{1,12})\b")
_BARE_FIGURE = lazy_compile(r"^[0-9]{1,15}\.[0-9]{1,12}$")
_DEFAULT_BYTES = {"lat": 2, "bw": 65536}

# Header keys perftest prints, accepted even outside a header block (a paste may start mid-header).
_HEADER_KEYS = (
    "Dual-port", "Device", "Number of qps", "Transport type", "Connection type", "Using SRQ",
    "PCIe relax order", "ibv_wr* API", "TX depth", "RX depth", "CQ Moderation", "CQE Poll Batch",
    "Mtu", "Link type", "GID index", "Max inline data", "rdma_cm QPs", "Data ex. method",
    "Outstand reads", "Post List", "Lock-free", "Using Enhanced Reorder", "Using DDP",
)
_KNOWN_HEADER_KEYS = frozenset(key.lower() for key in _HEADER_KEYS)
# "Key : value" pairs, two to a line; a key starts the line or follows a tab or two spaces, so that
# "root@host:~#" or "see: this" inside other text is no header. A key perftest prints may also follow
# one space: a mail or a web page turns the tabs between the two pairs of a line into one blank.
_PAIR = lazy_compile(r"(?:^|(?<=\s\s)|(?<=\t)|(?<=\S )(?=(?:%s)\s*:))\s*([A-Za-z][\w.*/()\- ]*?)\s*:\s*(\S+)"
                     % "|".join(re.escape(key) for key in sorted(_HEADER_KEYS, key=len, reverse=True)))

_HINTS = {
    "memlock": (
        "Registering memory failed: the process's locked-memory limit (RLIMIT_MEMLOCK, `ulimit -l`) is "
        "too low - 64 KiB by default inside containerd pods. Apply rdma.node.node_remediation (a "
        "base_runtime_spec with RLIMIT_MEMLOCK and LimitMEMLOCK=infinity for containerd), then recreate "
        "the pod; on a bare node raise the limit of the session that runs the test."
    ),
    "device_not_found": (
        "The RDMA device does not exist on this node: compare the device name with `ibv_devices` or "
        "ansible_facts.rdma.devices (rdma.node.ib_facts); a RoCE bond such as mlx5_bond_0 exists only "
        "while the bond is configured, and inside a pod only the devices handed to it are visible."
    ),
    "port_down": (
        "The port is not ACTIVE (see `ibstat`, State and Physical state): check the cable and the "
        "switch port, a subnet manager for an InfiniBand port stuck in Init, or test an active port "
        "(ib_port, or another device)."
    ),
    "device_query": (
        "The verbs library could not open or query the device (\"Couldn't get context for the device\": ibv_open_device "
        "failed, \"Couldn't get device attributes\": ibv_query_device failed) before any queue pair was made: inside "
        "a pod, its /dev/infiniband/uverbs* file was not handed to it; else the user-space RDMA libraries do not match "
        "the kernel's driver (MLNX_OFED's libraries and tools on a kernel without MLNX_OFED's modules, or the "
        "reverse), or the device's provider library is missing. Run `ibv_devinfo -v` with the same libraries, and "
        "use the libraries that came with the node's driver (driver_verify reports the OFED release and the loaded "
        "modules)."
    ),
    "qp_create": (
        "The HCA refused the queue pair perftest asked for: an inline size the device does not support "
        "(--inline_size=0; irdma and some iWARP devices take none by default), too many or too deep queues "
        "(-q, --tx-depth, --rx-depth), or a device out of resources; the lines before it name the attribute."
    ),
    "qp_connect": (
        "The queue pair could not be connected (modify QP to RTR/RTS failed): the two sides disagree on how "
        "to reach each other. On RoCE use a GID index both ports have, of the same type (-x; a RoCE v2 GID "
        "for routed traffic, see ansible_facts.rdma roce), and an MTU both take (--mtu); on InfiniBand check "
        "that both ports are ACTIVE with a LID from the subnet manager."
    ),
    "completion_error": (
        "A work request completed with an error status (\"Failed status N\", ibv_wc_status): 12 (transport retry "
        "exceeded) means the path drops packets - check node_health's counters, PFC and ECN on RoCE, the cable "
        "and the MTU; 13 (RNR retry exceeded) a receiver without posted buffers; 4 (local protection) a memory "
        "registration the HCA cannot use, with GPU memory the peer-memory or DMA-BUF path; 5 is only the flush "
        "that follows an earlier error."
    ),
    "remote_unreachable": (
        "The two perftest sides could not exchange connection data over TCP (or, with -R, through the RDMA "
        "connection manager): check that the server is running and reachable at that address and port "
        "(-p, default 18515; firewalls, the pod network; with -R the address of the server's RDMA interface), "
        "and read the peer's own output - it may have failed first, for example with memlock."
    ),
    "gpu_memory": (
        "perftest could not use GPU memory. With --use_cuda the HCA registers the GPU's memory through the "
        "peer-memory API: nvidia_peermem must be loaded (modprobe nvidia-peermem, or the GPU Operator's "
        "driver.rdma.enabled) with an ib_core that has it (MLNX_OFED, or Linux's own since 5.x with the open "
        "module's DMA-BUF instead); with --use_cuda_dmabuf the open NVIDIA kernel module and Linux 5.12 or newer. "
        "A registration error 12 (ENOMEM) is the memlock limit instead. node_health's gpudirect finding says "
        "which path the node lacks; a CUDA error before any registration means perftest was built without "
        "CUDA, or the GPU index does not exist."
    ),
    "unknown": (
        "perftest failed for a reason this collection does not recognise: read stdout/stderr, run the "
        "same command by hand, and check `ibv_devinfo` and `ulimit -l` on the node."
    ),
}

# Causes in priority order: a local failure explains the exchange failure its peer reports. A GPU run
# that cannot set up its GPU memory (src/cuda_memory.c, the memory type checks of
# perftest_parameters.c) fails before anything else.
_FAILURE_RULES = (
    (
        "gpu_memory",
        lazy_compile(
            r"There are no available device\(s\) that support CUDA|No such device ID \(\d+\) exists|"
            r"Couldn'?t init GPU context|DMA-BUF is not supported on this GPU|cuInit\(0\) returned|"
            r"cuMemAlloc(?:Host|Managed)? error|cuMemGetHandleForAddressRange error|cuCtxCreate\(\) error|"
            r"cuDeviceGetByPCIBusId failed|CUDA DMA-BUF cannot be used without CUDA|"
            r"DMABUF requested but not supported in this build|^\s*Unsupported memory type",
            re.IGNORECASE,
        ),
    ),
    ("memlock", lazy_compile(r"couldn'?t allocate MR|failed to create mr|ibv_reg_mr", re.IGNORECASE)),
    (
        "device_not_found",
        lazy_compile(
            r"IB device \S+ not found|Unable to find the Infiniband/RoCE device|No IB devices found|"
            r"Did not detect devices",
            re.IGNORECASE,
        ),
    ),
    ("port_down", lazy_compile(r"Port number \d+ state is \w+|Couldn'?t set the link layer", re.IGNORECASE)),
    # perftest queries the device before it makes a queue pair; when that fails, the queue pair errors that
    # follow are its consequence.
    ("device_query", lazy_compile(r"Couldn'?t get device attributes|Couldn'?t get context for the device", re.IGNORECASE)),
    ("qp_create", lazy_compile(r"Unable to create QP|Failed to create QP|Couldn'?t create QP", re.IGNORECASE)),
    (
        "qp_connect",
        lazy_compile(r"Failed to modify QP \S+ to (?:RTR|RTS)|Unable to Connect the HCA'?s through the link", re.IGNORECASE),
    ),
    (
        "completion_error",
        # "Failed status 12: wr_id ..." before perftest 25.07; "Failed status-transport retry counter exceeded (12): ..." after.
        lazy_compile(r"Completion with error at (?:client|server)|Failed status(?: \d+|-[\w ]+\(\d+\))|got completion with error",
                     re.IGNORECASE),
    ),
    (
        "remote_unreachable",
        lazy_compile(
            r"Couldn'?t connect to|Connection refused|Connection timed out|No route to host|"
            r"ethernet_read_keys|Couldn'?t read remote address|Unable to read (?:to|from) socket|"
            r"Failed to exchange data between server and client|Unable to init the socket connection|"
            r"Name or service not known|Problem in resolving basic address|"
            r"RDMA_CM_EVENT_(?:REJECTED|UNREACHABLE|ADDR_ERROR|ROUTE_ERROR|CONNECT_ERROR)",
            re.IGNORECASE,
        ),
    ),
)


# A run with its buffers in GPU memory: the lines perftest prints once it allocated one.
_GPU_BUFFER = lazy_compile(
    r"^(?:cuMemAlloc\(\) of a|allocated GPU buffer|allocated \d+ bytes of GPU buffer|using DMA-BUF for GPU buffer|Calling ibv_reg_dmabuf_mr)"
)
# Memory registration that failed for lack of locked memory (ENOMEM), which perftest 4.5-0.20 and later
# print as "Couldn't allocate MR with error=12".
_MR_ENOMEM = lazy_compile(r"error=12\b|Cannot allocate memory", re.IGNORECASE)


def failure_causes():
    """The causes classify_failure() can return, in priority order, then ``unknown``."""
    return tuple(cause for cause, dummy in _FAILURE_RULES) + ("unknown",)


def hint_for(cause):
    return _HINTS[cause]


def _text_lines(text):
    if text is None:
        return []
    # No line of perftest's starts with ">" or "[": mail quote marks go, and so does a launcher's label of the
    # process that printed it ("[rank 1]  #bytes ...", "[pod/server]"), and the comment mark an author put
    # before the table's lines ("#  #bytes ...", "#  65536  279928 ...").
    return [_COMMENTED_TABLE.sub("", _LAUNCHER_LABEL.sub("", MAIL_QUOTE_MARKS.sub("", _HARNESS_STREAM.sub("", line))))
            for line in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")]


_LAUNCHER_LABEL = lazy_compile(r"^\[[A-Za-z][\w ./:-]{0,40}\]\s+")
# A row of a Markdown table: cells between pipes, the first or second a figure or the header's "#bytes" (raw_ethernet's
# own boxed header holds MAC and IP addresses, ports and words, never such a figure).
_MARKDOWN_ROW = lazy_compile(r"^\|(?:[^|]*\|)?\s*(?:#?bytes\b|[0-9][0-9,]*(?:\.[0-9]+)?\s*\|)[^\n]*\|\s*$", re.IGNORECASE)


def _is_markdown_row(line):
    """Whether ``line`` is a row of an author's Markdown table: four cells at least (raw_ethernet's boxes have fewer)."""
    return line.count("|") >= 5 and _MARKDOWN_ROW.match(line) is not None


# A "#" and blanks before the table's header or a row of figures: neither is a root prompt's command.
_COMMENTED_TABLE = lazy_compile(r"^\s*#[ \t]+(?=#bytes\b|[0-9]+[ \t]+[0-9])")
# A test harness's prefix of each line the tool printed: "2019-07-16 03:43:24,134 process L0458 DEBUG| [stdout] ".
_HARNESS_STREAM = lazy_compile(r"^.{0,120}?\| ?\[(?:stdout|stderr)\] ?")
# Two figures of two decimals each with nothing between them.
# A figure an author set in Markdown emphasis ("**5544.28**", "*5.67*", "__920.13__"): perftest prints no "*" or "_" in a row.
_EMPHASISED_FIGURE = lazy_compile(r"^(\*\*|\*|__|_)(?P<figure>[0-9]{1,15}(?:\.[0-9]{1,12})?)\1$")
_GLUED_FIGURES = lazy_compile(r"^([0-9]+\.[0-9]{2})([0-9]+\.[0-9]{2})$")


_COUNT_COLUMNS = ("bytes", "iterations")


def _column_names(header_line):
    """Split a table header into column names; names may contain spaces (``BW peak[MB/sec]``)."""
    columns = []
    pending = []
    for token in header_line.split():
        # A paste can lose a "#" ("#bytes     iterations    BW peak[MB/sec]"): the counts are known by name.
        if (token.startswith("#") or token.lower() in _COUNT_COLUMNS) and not pending:
            columns.append("#" + token.lstrip("#"))
            continue
        pending.append(token)
        if "]" in token:
            columns.append(" ".join(pending))
            pending = []
    if pending:
        columns.append(" ".join(pending))
    return columns


def _snake(text):
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _column_key(column):
    """Map a printed column to (key, kind, unit); kind is count, bw, rate, time or other."""
    if column.startswith("#"):
        name = column[1:].lower()
        return name, "count", None
    match = _COLUMN_UNIT.match(column)
    name, unit = (match.group("name").strip(), match.group("unit").strip()) if match else (column.strip(), None)
    lowered = name.lower()
    if lowered.startswith("bw"):
        return _snake(name), "bw", unit
    if lowered.startswith("msgrate"):
        return _snake(name.replace("MsgRate", "msg_rate")) + "_mpps", "rate", unit
    if unit in ("usec", "cycles"):
        if lowered.endswith("percentile"):
            return "t_p" + lowered.split("%")[0].replace(".", "_") + "_" + unit, "time", unit
        return _snake(name) + "_" + unit, "time", unit
    if unit == "%":
        return _snake(name) + "_percent", "other", unit
    return _snake(name), "other", unit


def _number(token):
    if not _NUMBER.match(token):
        return None
    if _INTEGER.match(token):
        return int(token)
    return float(token)


def _parse_address(rest):
    parts = _ADDRESS_KEYS.split(rest)
    address = {}
    for index in range(1, len(parts) - 1, 2):
        # Older perftest separates the fields with commas ("LID 0x02, QPN 0x70004b, PSN 0xc14da8").
        address[parts[index].lower()] = " ".join(parts[index + 1].split()).rstrip(",").rstrip()
    return address


def _output_mode_run(command):
    """``{mode, kind, bytes, unit}`` of a perftest command line that asks for one bare figure
    (``--output=...``), None for any other command line."""
    run = _PERFTEST_RUN.search(command)
    mode = _OUTPUT_MODE.search(command) if run else None
    if not mode:
        return None
    kind = run.group("kind") or run.group("raw")
    size = _SIZE_OPTION.search(command)
    everything = re.search(r"(?:^|\s)(?:-a|--all)(?:\s|$)", command)
    return {"mode": mode.group("mode"), "kind": "lat" if mode.group("mode") == "latency" else kind,
            "bytes": None if everything else int(size.group("bytes")) if size else _DEFAULT_BYTES[kind],
            "unit": "Gb/sec" if re.search(r"(?:^|\s)--report_gbits\b", command) else "MB/sec"}


def _figure_row(run, value):
    """The result row of the bare figure ``value`` printed by ``run`` (see _output_mode_run)."""
    if run["mode"] == "latency":
        return {"bytes": run["bytes"], "t_avg_usec": value}
    if run["mode"] == "message_rate":
        return {"bytes": run["bytes"], "msg_rate_mpps": value}
    return {"bytes": run["bytes"], "bw_average_gbps": round(value * _GBPS_PER_UNIT[run["unit"].lower()], 6)}


class _Table:
    def __init__(self, columns):
        self.columns = columns
        self.keys = [_column_key(column) for column in columns]
        self.bw_unit = None
        self.time_unit = None
        for dummy, kind, unit in self.keys:
            if kind == "bw" and self.bw_unit is None:
                self.bw_unit = unit
            if kind == "time" and self.time_unit is None:
                self.time_unit = unit
        self.kind = "bw" if self.bw_unit else ("lat" if self.time_unit else None)
        self.first_bytes = None  # the message size of its first row, once read
        self.first_rate = None  # and its message rate (Mpps)
        self.rows = 0  # how many rows it has given
        self.last_bytes = None  # and the message size of the last


_TABLE_KINDS = {"bw": "bandwidth", "lat": "latency"}
# perftest's bandwidth table (print_report_bw(), src/perftest_parameters.c), for its rows pasted without their header: a
# --run_infinitely run prints the header once and then a row every interval, so a paste of a while of it is rows only.
_BW_COLUMNS = ("#bytes", "#iterations", "BW peak[%s]", "BW average[%s]", "MsgRate[Mpps]")


def _headerless_unit(values):
    """The unit of a row of five figures pasted without its table header, where it is perftest's bandwidth row: the unit
    (MB/sec or Gb/sec) in which its average is its bytes x message rate, within the rounding of the printed rate (six
    decimals) and of the average (two) and 1 %; None where it is not (a latency row, another tool's figures)."""
    if len(values) != 5 or not isinstance(values[0], int) or not isinstance(values[1], int) or values[0] <= 0:
        return None
    size, dummy, dummy, average, rate = values
    if average <= 0 or rate <= 0:
        return None
    implied = size * rate * 8 / 1000.0  # Gb/s
    for unit in ("MB/sec", "Gb/sec"):
        factor = _GBPS_PER_UNIT[unit.lower()]
        slack = size * 0.0000005 * 8 / 1000.0 + 0.005 * factor + implied * 0.01
        if abs(average * factor - implied) <= slack:
            return unit
    return None


# At most this many notes are kept (then one more says how many were left out): pasted output with
# hundreds of thousands of stray lines must not become as many notes, nor as many warnings.
MAX_NOTES = 100


class PerftestOutputError(ValueError):
    """Text given to the parser is not perftest output; the message quotes the line."""


class _Notes(list):
    """The parser's notes: each one once (a set remembers them, so adding is not a scan of the list),
    at most ``MAX_NOTES``, and a count of the others."""

    def __init__(self):
        super().__init__()
        self.seen = set()
        self.left_out = 0

    def add(self, line, text, reason):
        key = (line, text, reason)
        if key in self.seen:
            return
        if len(self) >= MAX_NOTES:
            self.left_out += 1
            return
        self.seen.add(key)
        self.append({"line": line, "text": text, "reason": reason})

    def result(self):
        notes = list(self)
        if self.left_out:
            notes.append({"line": None, "text": None, "reason": "%d more notes like these were left out" % self.left_out})
        return notes


def _note(notes, reason, line=None, text=None):
    """Add ``{line, text, reason}`` once: ``line`` and ``text`` name the input line when there is one."""
    notes.add(line, _shown(text) if text is not None else None, reason)


def _shown_lines(numbers):
    """Line numbers as a note gives them: the first ten, then how many more."""
    shown = ", ".join(str(number) for number in numbers[:10])
    return shown + (" and %d more" % (len(numbers) - 10) if len(numbers) > 10 else "")


def _shown(line):
    line = line.strip()
    return line if len(line) <= 120 else line[:117] + "..."


def _row(table, values, notes):
    """Build one result row; bandwidth converted to Gb/s (the unit checked against the message rate)."""
    row = {}
    raw_bw = {}
    for (key, kind, unit), value in zip(table.keys, values):
        if kind == "count":
            row[key] = int(value) if isinstance(value, int) else value
        elif kind == "bw":
            raw_bw[key] = value
        else:
            row[key] = value
    unit = table.bw_unit
    if raw_bw:
        unit = _checked_unit(table.bw_unit, row.get("bytes"), raw_bw.get("bw_average"), row.get("msg_rate_mpps"), notes)
        factor = _GBPS_PER_UNIT.get((unit or "").lower())
        for key, value in raw_bw.items():
            row[key + "_gbps"] = round(value * factor, 6) if factor is not None else None
        if raw_bw.get("bw_peak") == 0 and (raw_bw.get("bw_average") or 0) > 0:
            # perftest prints 0.00 for a peak it did not measure (a duration run, --run_infinitely, many
            # iterations, a send test's receiver): no peak, rather than a peak of 0 under an average above it.
            row["bw_peak_gbps"] = None
            _note(notes, "the peak bandwidth printed as 0.00 was not measured (a duration run, --run_infinitely, more than "
                         "20000 iterations or a send test's receiving side): no peak")
    return row, unit


def _checked_unit(printed, size, average, msg_rate, notes):
    """The unit the bandwidth figures are really in, judged by bytes x message rate.

    perftest's server prints the client's figures under its own header (write_bw.c: the server calls
    print_full_bw_report() with the report it received), so a server started without --report_gbits
    prints Gb/s figures under a MB/sec header. The message rate does not depend on the unit:
    bytes x Mpps x 8 / 1000 is the bandwidth in Gb/s, so the unit that agrees with it is the real one.
    """
    factor = _GBPS_PER_UNIT.get((printed or "").lower())
    if factor is None or not size or not average or not msg_rate or average <= 0 or msg_rate <= 0:
        return printed
    implied = size * msg_rate * 8 / 1000.0

    def agrees(candidate_factor):
        ratio = average * candidate_factor / implied
        return 0.5 <= ratio <= 2.0

    if agrees(factor):
        return printed
    other = "Gb/sec" if printed.lower() != "gb/sec" else "MiB/sec"
    if agrees(_GBPS_PER_UNIT[other.lower()]):
        note = (
            "rows printed under a %s header carry %s figures (checked against bytes x message rate; "
            "a perftest server prints the client's figures under its own header)" % (printed, other)
        )
        _note(notes, note)
        return other
    _note(notes, "the %s figures of %s-byte rows do not agree with their message rate" % (printed, size))
    return printed


def _other_rate(first_rate, row):
    """Whether ``row``'s message rate is not the first table's first row's: more than twice or less than half."""
    rate = row.get("msg_rate_mpps")
    if not first_rate or not rate or first_rate <= 0 or rate <= 0:
        return False
    return max(rate, first_rate) / min(rate, first_rate) > 2


def _not_peers(local_addresses, remote_addresses, second_block):
    """Whether the two blocks of addresses (split where the second title's block starts) are two runs
    rather than the two sides of one: each side's remote queue pairs are the other side's local ones."""
    second_block = second_block[:2]

    def qpns(addresses):
        return {address.get("qpn") for address in addresses if address.get("qpn")}

    first_local, second_local = qpns(local_addresses[:second_block[0]]), qpns(local_addresses[second_block[0]:])
    first_remote, second_remote = qpns(remote_addresses[:second_block[1]]), qpns(remote_addresses[second_block[1]:])
    if not (first_local and first_remote and second_local and second_remote):
        return False
    return first_local != second_remote or first_remote != second_local


def _same_figures(row, other):
    return all(row[key] == other[key] for key in row if key in other and None not in (row[key], other[key]))


def _merge_sides(rows, sides, notes):
    """Collapse the identical rows both sides print; report disagreements instead of double counting."""
    if sides < 2:
        return rows, None
    order = []
    groups = {}
    for row in rows:
        key = (row.get("bytes"), row.get("sl"))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(row)
    merged = []
    agree = None
    for key in order:
        group = groups[key]
        merged.append(group[0])
        if len(group) < 2:
            continue
        # A figure one side did not measure (a receiver's peak printed as 0.00) is no disagreement: the other's is taken.
        same = all(_same_figures(other, group[0]) for other in group[1:])
        agree = same if agree is None else (agree and same)
        if same:
            measured = {name: value for other in group[1:] for name, value in other.items()
                        if group[0].get(name) is None and value is not None}
            merged[-1] = dict(group[0], **measured)
            _note(notes, "%s-byte row printed by %d sides with the same figures; counted once" % (key[0], len(group)))
        else:
            _note(notes, "%s-byte rows differ between the sides; the first is reported: %s"
                  % (key[0], "; ".join(str(other) for other in group[1:])))
    return merged, agree


def _header_facts(header):
    # Keys are read in any letter case: older perftest printed "Gid index" where newer prints "GID index".
    header = {key.lower(): value for key, value in header.items()}

    def integer(key):
        value = header.get(key.lower())
        if value is None:
            return None
        match = re.match(r"^([0-9]{1,9})", value)
        return int(match.group(1)) if match else None

    return {
        "device": header.get("device"),
        "link_type": header.get("link type"),
        "transport_type": header.get("transport type"),
        "connection_type": header.get("connection type"),
        "qps": integer("Number of qps"),
        "mtu": integer("Mtu"),
        "gid_index": integer("GID index"),
        "exchange_method": header.get("data ex. method"),
    }


def _ends_waiting(lines):
    """Whether the output ends with a server's waiting banner (nothing after it but its rules of ``*`` or ``-``
    and a shell's prompt)."""
    for line in reversed(lines):
        if _BANNER.search(line):
            return True
        if line.strip("*- ") and not is_shell_prompt(line):
            return False
    return False


def classify_failure(stdout, stderr="", rc=None, timed_out=False, has_results=False, timeout=None, role=None):
    """Return ``{cause, hint, line}`` for a failed run, or None when nothing failed.

    ``rc`` None means unknown (text given to the filter); ``role`` is ``server`` or ``client``.
    """
    lines = [line.strip() for line in _text_lines(stdout) + _text_lines(stderr)]
    lines = [line for line in lines if line]
    gpu_buffer = any(_GPU_BUFFER.match(line) for line in lines)
    for cause, pattern in _FAILURE_RULES:
        for line in lines:
            if pattern.search(line):
                if cause == "memlock" and gpu_buffer and not any(_MR_ENOMEM.search(other) for other in lines):
                    # The buffer is GPU memory: its registration fails when the peer-memory or DMA-BUF path
                    # is missing (EFAULT, "Bad address"), which the locked-memory limit has nothing to do with.
                    cause = "gpu_memory"
                return {"cause": cause, "hint": _HINTS[cause], "line": line}
    if timed_out:
        seconds = "%s s" % timeout if timeout is not None else "the timeout"
        if role == "server" and not has_results:
            line = "no client completed a test within %s; the server was stopped" % seconds
        else:
            line = "the %s did not finish within %s and was stopped" % (role or "tool", seconds)
        return {"cause": "remote_unreachable", "hint": _HINTS["remote_unreachable"], "line": line}
    if rc in (None, 0) and not has_results and _ends_waiting(lines):
        # As a server the run stopped while waiting: no client reached it (the role says so on its timeout too).
        return {"cause": "remote_unreachable", "hint": _HINTS["remote_unreachable"],
                "line": "no result rows: the server was still waiting for a client where the output ends"}
    if rc not in (None, 0) or not has_results:
        err_lines = [line for line in (x.strip() for x in _text_lines(stderr)) if line]
        out_lines = [line for line in (x.strip() for x in _text_lines(stdout)) if line]
        if err_lines:
            line = err_lines[-1]
        elif rc not in (None, 0):
            line = "exited with status %s%s" % (rc, " after: " + out_lines[-1] if out_lines else "")
        elif any(_is_markdown_row(line) for line in out_lines):
            line = "no result rows: the table is a Markdown table its author made from perftest's output, not the output"
        elif out_lines:
            line = "no result rows in the output; last line: " + out_lines[-1]
        else:
            line = "no output at all"
        return {"cause": "unknown", "hint": _HINTS["unknown"], "line": line}
    return None


def parse_perftest(stdout, stderr="", rc=None, timed_out=False, timeout=None, role=None, strict=False):
    """Parse perftest output into header facts, result rows (bandwidth in Gb/s) and a failure.

    Both streams are read (perftest prints results on stdout, errors and some warnings on stderr).
    ``notes`` lists what the parser decided and every line it could not place, as
    ``{"line": N, "text": ..., "reason": ...}`` (``line`` counts from 1 in its stream, the reason
    says ``on stderr`` for a line of stderr; decisions about several rows have ``line`` None).
    Shell prompts, ``#`` comments and the tool's command line are skipped; error lines count as
    placed, because they make the ``failure``.

    With ``strict`` the first line that cannot be placed raises ``PerftestOutputError``. Text
    given on its own (no ``rc`` and no ``role``, as the filter gets plain text) in which nothing
    at all is perftest output raises it too; a run's own output never does, it is classified.
    """
    titles = []
    tables = []
    header = {}
    header_conflicts = {}
    local_addresses = []
    remote_addresses = []
    warnings = []
    notes = _Notes()
    raw_rows = []
    server_row_first = False  # a one-way test's server (its one row) was pasted before its client
    units = []
    banner = False
    in_header = False
    table = None
    last_address = None
    recognised = 0
    first_unplaced = None
    gpu_lines = []
    figure_run = None  # the last command line that asked for a bare figure (--output=...)
    figures = []  # (run, row) of the bare figures it printed
    headerless = {}  # unit -> the bandwidth table that rows pasted without their header were read in
    headerless_lines = []  # the numbers of those rows' lines
    unread_rows = False  # a numeric row without a table header that could not be read
    # Where each title's block starts: in local_addresses and remote_addresses, and the header read before it.
    blocks = []

    def drop_later_blocks():
        """Forget what the blocks after the first added (another run's title, addresses and header keys)."""
        del titles[1:]
        if len(blocks) > 1:
            locals_at, remotes_at, header_then, conflicts_then = blocks[1]
            del local_addresses[locals_at:], remote_addresses[remotes_at:]
            header.clear()
            header.update(header_then)
            header_conflicts.clear()
            header_conflicts.update(conflicts_then)

    numbered = [(number, raw, "") for number, raw in enumerate(_text_lines(stdout), start=1)]
    numbered += [(number, raw, " on stderr") for number, raw in enumerate(_text_lines(stderr), start=1)]
    for number, raw, stream in numbered:
        line = raw.rstrip()
        if not line.strip() or _DASHES.match(line) or _STARS.match(line):
            continue
        if len(line) > MAX_LINE:
            if strict:
                raise PerftestOutputError("line %d%s is longer than %d characters: not perftest output" % (
                    number, stream, MAX_LINE))
            first_unplaced = first_unplaced or (number, stream, line)
            _note(notes, "a line longer than %d characters%s, not read" % (MAX_LINE, stream), number, line)
            continue
        stripped = line.strip()
        if not stripped.startswith("#bytes") and (is_shell_prompt(stripped) or _PERFTEST_COMMAND.match(stripped)):
            if _PERFTEST_RUN.search(stripped):
                figure_run = _output_mode_run(stripped)
            continue
        if figure_run is not None and _BARE_FIGURE.match(stripped):
            recognised += 1
            if figures and figures[-1][0] is figure_run:
                if figures[-1][1] != _figure_row(figure_run, _number(stripped)):
                    _note(notes, "a second figure of one --output=%s run%s, not read" % (figure_run["mode"], stream), number, line)
                continue
            figures.append((figure_run, _figure_row(figure_run, _number(stripped))))
            continue
        recognised += 1
        if _BANNER.search(line):
            banner = True
            continue
        if _CUDA.match(stripped):
            gpu_lines.append(stripped)
            continue
        if _is_markdown_row(stripped):
            # An author's table made from the output ("| 65536 | 5000 | 6057.11 | ..."): its columns are the author's.
            recognised -= 1
            first_unplaced = first_unplaced or (number, stream, line)
            _note(notes, "a Markdown table's row%s, made from perftest's output by its author: not read" % stream, number, line)
            continue
        if _INFO.match(stripped):
            continue
        title = _TITLE.match(line)
        if title:
            if titles and " ".join(title.group(1).split()) != " ".join(titles[0].split()):
                # Both sides of one run print the same title: another title is another run.
                _note(notes, "another test's output starts here (%s after %s): only the first test is read"
                      % (" ".join(title.group(1).split()), " ".join(titles[0].split())), number, line)
                break
            titles.append(title.group(1))
            blocks.append((len(local_addresses), len(remote_addresses), dict(header),
                           {key: list(values) for key, values in header_conflicts.items()}))
            in_header = True
            continue
        if _WARNING.search(line):
            warnings.append(line.strip())
            continue
        address = _ADDRESS.match(line)
        if address:
            parsed = _parse_address(address.group(2))
            (local_addresses if address.group(1) == "local" else remote_addresses).append(parsed)
            last_address = parsed
            in_header = False
            continue
        gid = _GID.match(line)
        if gid and last_address is not None:
            last_address["gid"] = gid.group(1)
            continue
        if "#bytes" in line:
            if len(tables) == 1 and len(blocks) > 1 and _not_peers(local_addresses, remote_addresses, blocks[1]):
                _note(notes, "another run of the test starts here (its queue pairs are not the first run's peers): only the "
                      "first run is read", number, line)
                drop_later_blocks()
                break
            table = _Table(_column_names(line))
            if tables and None not in (tables[0].kind, table.kind) and table.kind != tables[0].kind:
                # The two sides of one run print tables of one kind: a latency table after a bandwidth
                # one (or the reverse) is another test, such as [ib_send_bw] and [ib_send_lat] in one mail.
                _note(notes, "another test's output starts here (a %s table after a %s table): only the first test is read"
                      % (_TABLE_KINDS[table.kind], _TABLE_KINDS[tables[0].kind]), number, line)
                break
            tables.append(table)
            in_header = False
            continue
        tokens = line.split()
        emphasised = [token for token in tokens if _EMPHASISED_FIGURE.match(token)]
        if emphasised and all(_number(token) is not None or token in emphasised for token in tokens):
            # A row whose figure its author made bold in a Markdown paste: the figure is perftest's, the stars are not.
            tokens = [_EMPHASISED_FIGURE.match(token).group("figure") if token in emphasised else token for token in tokens]
            _note(notes, "figures in the author's Markdown emphasis (%s) read without it" % ", ".join(emphasised), number, line)
        values = [_number(token) for token in tokens]
        glued = [token for token, value in zip(tokens, values) if value is None]
        if table is not None and glued and all(_GLUED_FIGURES.match(token) for token in glued):
            # perftest prints each latency figure with two decimals between tabs a paste can lose:
            # "2465.901216.65" is t_stdev 2465.90 and the 99% percentile 1216.65.
            tokens = [part for token in tokens
                      for part in (_GLUED_FIGURES.match(token).groups() if token in glued else (token,))]
            values = [_number(token) for token in tokens]
            _note(notes, "figures written together on line %d (%s) read apart at their two decimals"
                  % (number, ", ".join(glued)))
        if tokens and all(value is not None for value in values) and isinstance(values[0], int):
            one_way_server_then_client = (
                len(tables) == 2 and table is tables[1] and table.first_bytes is None and tables[0].rows == 1
                and titles and _ONE_WAY_RDMA_TITLE.match(" ".join(titles[0].split())))
            headerless_unit = _headerless_unit(values) if table is None and not tables else None
            if headerless_unit is not None:
                # Rows pasted without their header whose figures prove perftest's bandwidth columns (their unit too).
                if headerless_unit not in headerless:
                    headerless[headerless_unit] = _Table([column.replace("%s", headerless_unit) for column in _BW_COLUMNS])
                raw_rows.append(_row(headerless[headerless_unit], values, notes)[0])
                headerless_lines.append(number)
                if headerless_unit not in units:
                    units.append(headerless_unit)
            elif table is None:
                unread_rows = True
                _note(notes, "a numeric row without a table header%s, ignored" % stream, number, line)
            elif len(values) < len(table.columns):
                _note(notes, "a row with %d of %d columns%s, ignored" % (len(values), len(table.columns), stream),
                      number, line)
            elif (len(tables) == 2 and table is tables[1] and table.first_bytes is None and tables[0].rows > 1
                  and values[0] != tables[0].last_bytes and titles
                  and _ONE_WAY_RDMA_TITLE.match(" ".join(titles[0].split()))):
                # The server of a one-way RDMA write or read test prints one row, the client's last: after a table
                # of several sizes, a table that starts at another size is another run (a mail's before and after).
                _note(notes, "another run of the test starts here (%s bytes after a table of %d sizes, where the server of "
                      "this test prints only the client's last row): only the first run is read"
                      % (values[0], tables[0].rows), number, line)
                del tables[1:]
                drop_later_blocks()
                break
            elif (len(tables) == 2 and table is tables[1] and table.first_bytes is None and not one_way_server_then_client
                  and tables[0].first_bytes not in (None, values[0])):
                # Both sides of one run print the same sizes: a second table that starts at another size is
                # another run, such as three runs of one test pasted one after the other.
                _note(notes, "another run of the test starts here (%s bytes, after %s): only the first run is read"
                      % (values[0], tables[0].first_bytes), number, line)
                del tables[1:]
                drop_later_blocks()
                break
            else:
                # The server of a one-way test prints only the client's last row: a client's table after that
                # one row is the other side of the run, whatever size it starts at.
                server_row_first = server_row_first or one_way_server_then_client
                row, unit = _row(table, values[: len(table.columns)], notes)
                if (len(tables) == 2 and table is tables[1] and table.first_bytes is None and not one_way_server_then_client
                        and _other_rate(tables[0].first_rate, row)):
                    # Both sides of one run report one message rate: another at the same size is another run.
                    _note(notes, "another run of the test starts here (%s bytes again, at %s Mpps after %s): only the first run "
                          "is read" % (values[0], row.get("msg_rate_mpps"), tables[0].first_rate), number, line)
                    del tables[1:]
                    drop_later_blocks()
                    break
                if table.first_bytes is None:
                    table.first_bytes, table.first_rate = values[0], row.get("msg_rate_mpps")
                raw_rows.append(row)
                glued = values[len(table.columns):]
                if glued and len(glued) == len(table.columns) and glued[0] == values[0]:
                    # Server and client started in one terminal ("&") wrote their rows onto one line.
                    raw_rows.append(_row(table, glued, notes)[0])
                    _note(notes, "two rows of %s bytes on line %d (both sides' output interleaved): both read"
                          % (values[0], number))
                elif glued:
                    _note(notes, "%d values after the row's %d columns, not read" % (len(glued), len(table.columns)),
                          number, line)
                table.rows += 1
                table.last_bytes = values[0]
                if unit and unit not in units:
                    units.append(unit)
            continue
        if _ERRORISH.search(line) or any(pattern.search(line) for dummy, pattern in _FAILURE_RULES):
            continue  # an error line: classify_failure() reads it
        pairs = _PAIR.findall(line)
        known = pairs and all(" ".join(key.split()).lower() in _KNOWN_HEADER_KEYS for key, dummy in pairs)
        if not pairs or (not known and not in_header):
            recognised -= 1
            if strict:
                raise PerftestOutputError("line %d%s is not perftest output: %r" % (number, stream, _shown(line)))
            first_unplaced = first_unplaced or (number, stream, line)
            _note(notes, "not perftest output%s" % stream, number, line)
            continue
        for key, value in pairs:
            key = " ".join(key.split())
            if key in header and header[key] != value:
                header_conflicts.setdefault(key, [header[key]])
                if value not in header_conflicts[key]:
                    header_conflicts[key].append(value)
                continue
            header[key] = value

    if not recognised and first_unplaced is not None and rc is None and role is None and not timed_out:
        number, stream, line = first_unplaced
        raise PerftestOutputError("nothing in the text is perftest output (line %d%s: %r)" % (number, stream, _shown(line)))

    sides = max(len(titles), len(tables))
    if headerless_lines:
        where = _shown_lines(headerless_lines)
        _note(notes, "rows without their table header on line(s) %s: read in perftest's bandwidth columns (#bytes #iterations "
                     "BW peak BW average MsgRate) in %s, which each row's bytes x message rate confirms" % (where, " and ".join(headerless)))
    if server_row_first:  # keep the client's order of sizes: the server's row is its last
        raw_rows = raw_rows[1:] + raw_rows[:1]
    rows, sides_agree = _merge_sides(raw_rows, sides, notes)
    if figures and not rows:
        rows = [row for dummy, row in figures]
        units.append("usec" if figures[0][0]["mode"] == "latency" else
                     "Mpps" if figures[0][0]["mode"] == "message_rate" else figures[0][0]["unit"])
    units_printed = []
    for tbl in tables:
        unit = tbl.bw_unit or tbl.time_unit
        if unit and unit not in units_printed:
            units_printed.append(unit)
    if len(units_printed) > 1:
        _note(notes, "the sides printed different units (%s): a perftest server prints the client's figures under "
              "its own header, so each row's unit was checked against bytes x message rate" % ", ".join(units_printed))
    if len(units) == 1:
        unit = units[0]
    elif len(units) > 1:
        unit = "mixed"
        _note(notes, "rows in more than one unit: %s (all converted to Gb/s)" % ", ".join(units))
    else:
        unit = units_printed[-1] if units_printed else None
    kind = None
    if titles:
        kind = "lat" if re.search(r"Lat(ency)? Test$", titles[0]) else "bw"
    elif tables:
        kind = tables[-1].kind
    elif headerless:
        kind = "bw"
    elif figures:
        kind = figures[0][0]["kind"]
    averages = [row["bw_average_gbps"] for row in rows if row.get("bw_average_gbps") is not None]

    result = {
        "test": titles[0] if titles else None,
        "kind": kind,
        "sides": sides,
        "sides_agree": sides_agree,
        "server_banner": banner,
        "unit": unit,
        "units_printed": units_printed,
        "results": rows,
        "bw_average_gbps": max(averages) if averages else None,
        "header": header,
        "header_conflicts": header_conflicts,
        "local_addresses": local_addresses,
        "remote_addresses": remote_addresses,
        "warnings": warnings,
        "notes": notes.result(),
        "gpu_memory": bool(gpu_lines),
        "gpu": cuda_device(gpu_lines),
    }
    result.update(_header_facts(header))
    result["failure"] = classify_failure(
        stdout, stderr, rc=rc, timed_out=timed_out, has_results=bool(rows) or unread_rows, timeout=timeout, role=role
    )
    return result


def cuda_device(lines):
    """Which GPU a ``--use_cuda`` run used, from perftest's own lines: ``{cuda_index, bus, devices}`` (``bus``
    as perftest prints it, ``bus:device`` in lower case, such as ``82:00``), or None when it printed none."""
    devices = {}
    picked = None
    for line in lines or []:
        device = _CUDA_DEVICE.match(line)
        if device:
            devices[int(device.group("index"))] = "%s:%s" % (device.group("bus").lower(), device.group("slot").lower())
            continue
        chosen = _CUDA_PICKED.match(line)
        if chosen:
            picked = int(chosen.group("index"))
        elif _CUDA_FIRST.match(line):
            picked = 0
    if picked is None and not devices:
        return None
    return {"cuda_index": picked, "bus": devices.get(picked) if picked is not None else None,
            "devices": {str(index): bus for index, bus in sorted(devices.items())}}


def average_for(results, size=None):
    """Best average bandwidth over the rows, or that of the row of ``size`` bytes when present."""
    if size is not None:
        for row in results:
            if row.get("bytes") == size and row.get("bw_average_gbps") is not None:
                return row["bw_average_gbps"]
    averages = [row["bw_average_gbps"] for row in results if row.get("bw_average_gbps") is not None]
    return max(averages) if averages else None
