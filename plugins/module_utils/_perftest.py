# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest (ib_write_bw, ib_read_bw, ib_send_bw and the _lat tools): build command lines and run them.

The runner starts the tools as argv lists, always under a deadline, and always stops a background
server, on every path. Reading their output is ``_perftest_output.py``'s job.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

from ansible_collections.rdma.node.plugins.module_utils._files import DEFAULT_MAX_BYTES, read_lenient
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
BW_TOOLS = tuple(tool for tool in TOOLS if tool.endswith("_bw"))

# perftest's default TCP port for the exchange of connection data (DEF_PORT in perftest_parameters.h).
DEFAULT_TCP_PORT = 18515

# Extra seconds `timeout` waits after SIGTERM before it sends SIGKILL, and that the runner waits
# after its own SIGTERM to a background server's process group.
KILL_AFTER = 5


class PerftestError(Exception):
    """Bad input to a helper of this file; the message is one sentence for the operator."""


# ---------------------------------------------------------------------------------------------
# Command lines


_SIZE = lazy_compile(r"^\s*([0-9]+)\s*([KMG])?(?:i?B)?\s*$", re.IGNORECASE)
_SIZE_FACTORS = {None: 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}


def parse_size(value):
    """Bytes from ``65536``, ``64K``, ``1M`` (perftest's suffixes are powers of 1024)."""
    match = _SIZE.match(str(value))
    if not match:
        raise PerftestError(
            "size %r is not a message size: expected bytes (65536) or a number with K, M or G (64K, 1M)" % (value,)
        )
    size = int(match.group(1)) * _SIZE_FACTORS[(match.group(2) or "").upper() or None]
    if size < 1:
        raise PerftestError("size %r is not a message size: it must be at least 1 byte" % (value,))
    return size


def build_argv(tool, device=None, ib_port=None, gid_index=None, size=None, all_sizes=False, qps=None,
               iterations=None, report_gbits=True, extra_args=None, port=None, server=None, use_cuda=None,
               use_cuda_dmabuf=False):
    """The perftest argv for one side; ``server`` (the address) makes it a client.

    ``use_cuda`` (a CUDA device index) puts the buffers in that GPU's memory (``--use_cuda=N``);
    ``use_cuda_dmabuf`` registers them through DMA-BUF (``--use_cuda_dmabuf``, after ``--use_cuda``:
    perftest refuses it before, linux-rdma/perftest issue 336)."""
    if tool not in TOOLS:
        raise PerftestError("tool %r is not a perftest tool this module runs: expected one of %s" % (tool, ", ".join(TOOLS)))
    if qps is not None and tool not in BW_TOOLS:
        raise PerftestError("qps is only accepted by the bandwidth tools (%s), not by %s" % (", ".join(BW_TOOLS), tool))
    if size is not None and all_sizes:
        raise PerftestError("size and all are mutually exclusive: all runs every size from 2 bytes to 8 MiB")
    if use_cuda is not None and (isinstance(use_cuda, bool) or not isinstance(use_cuda, int) or use_cuda < 0):
        raise PerftestError("use_cuda is the CUDA index of the GPU (0 or more), got %r" % (use_cuda,))
    if use_cuda is not None and tool not in BW_TOOLS:
        raise PerftestError("use_cuda is for the bandwidth tools (%s); %s does not test GPU memory" % (", ".join(BW_TOOLS), tool))
    if use_cuda_dmabuf and use_cuda is None:
        raise PerftestError("use_cuda_dmabuf needs use_cuda, the GPU whose memory DMA-BUF registers")
    argv = [tool]
    if device:
        argv += ["-d", device]
    if ib_port is not None:
        argv += ["-i", str(ib_port)]
    if gid_index is not None:
        argv += ["-x", str(gid_index)]
    if all_sizes:
        argv.append("-a")
    elif size is not None:
        argv += ["-s", str(size)]
    if qps is not None:
        argv += ["-q", str(qps)]
    if iterations is not None:
        argv += ["-n", str(iterations)]
    if port is not None:
        argv += ["-p", str(port)]
    if report_gbits and tool in BW_TOOLS:
        argv.append("--report_gbits")
    if use_cuda is not None:
        argv.append("--use_cuda=%d" % use_cuda)
    if use_cuda_dmabuf:
        argv.append("--use_cuda_dmabuf")
    argv += [str(arg) for arg in (extra_args or [])]
    if server:
        if server.strip().startswith("-"):
            raise PerftestError("server %r is not a host name or address: it starts with '-', which perftest would "
                                "read as an option" % server.strip())
        # "--" ends the options (perftest parses them with getopt_long): the address is never one.
        argv += ["--", server]
    return argv


# Where Linux lists the NUMA nodes, their CPUs and which of them have memory.
NUMA_NODES = "/sys/devices/system/node"
# CUDA numbers the GPUs fastest first unless told otherwise; the roles count them in PCI bus order.
CUDA_ORDER = "CUDA_DEVICE_ORDER=PCI_BUS_ID"


def _node_list(text):
    """The numbers of a kernel range list such as ``0-3,8``; an empty set for what is not one."""
    numbers = set()
    for part in (text or "").strip().split(","):
        first, _sep, last = part.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        numbers.update(range(int(first), int(last or first) + 1))
    return numbers


def pinning(numa_node, find_bin, nodes_dir=NUMA_NODES):
    """How to pin a test to the HCA's NUMA node: ``{how, detail, prefix}``.

    ``how`` is ``numactl`` (``--cpunodebind`` and, where the node has memory, ``--membind``), ``taskset``
    (the node's CPUs, ``-c``; memory is not bound), or ``none``, with ``detail`` saying why: no NUMA node
    given, a node this machine does not have, or neither tool installed. ``prefix`` goes in front of the
    tool's argv; ``find_bin(name)`` is the path of a program or None (``module.get_bin_path``)."""
    if numa_node is None:
        return {"how": "none", "detail": "no NUMA node was given for the HCA", "prefix": []}
    node = int(numa_node)
    where = os.path.join(nodes_dir, "node%d" % node)
    if node < 0 or not os.path.isdir(where):
        return {"how": "none", "detail": "NUMA node %d does not exist on this machine (%s)" % (node, where), "prefix": []}
    numactl = find_bin("numactl")
    if numactl:
        bind = ["--cpunodebind=%d" % node]
        if node in _node_list(_read_text(os.path.join(nodes_dir, "has_memory"))):
            bind.append("--membind=%d" % node)
        return {"how": "numactl", "detail": " ".join(bind), "prefix": [numactl] + bind}
    cpus = _read_text(os.path.join(where, "cpulist")).strip()
    taskset = find_bin("taskset")
    if taskset and _node_list(cpus):
        return {"how": "taskset", "detail": "-c %s (the CPUs of NUMA node %d; numactl is not installed, so memory is not bound)"
                % (cpus, node), "prefix": [taskset, "-c", cpus]}
    return {"how": "none", "detail": "neither numactl nor taskset is installed (NUMA node %d)" % node, "prefix": []}


def launch_prefix(pinned, gpu, env_bin="env"):
    """What goes in front of the tool's argv: the CUDA device order for a GPU run (coreutils env), then the pinning."""
    return ([env_bin, CUDA_ORDER] if gpu else []) + list(pinned["prefix"])


def uses_rdma_cm_exchange(argv):
    """True when the tool exchanges connection data through rdma_cm instead of a TCP socket."""
    return any(arg in ("-R", "--rdma_cm", "-z", "--com_rdma_cm") for arg in argv)


def with_deadline(timeout_bin, seconds, argv, kill_after=KILL_AFTER):
    """Wrap argv in coreutils timeout: SIGTERM to the tool's process group at the deadline, SIGKILL later.

    timeout puts itself and the tool in a process group of their own and signals the whole group,
    so the deadline holds even if the module itself is killed.
    """
    seconds = max(float(seconds), 1.0)
    text = ("%.3f" % seconds).rstrip("0").rstrip(".")
    return [timeout_bin, "-k", str(kill_after), text] + list(argv)


def timed_out_status(rc):
    """timeout(1) exits 124 when the deadline hit, 128+9 when it had to send SIGKILL."""
    return rc in (124, 137)


# ---------------------------------------------------------------------------------------------
# Background server


# /proc/<pid> directories are named by the process id in ASCII digits; a stat line is short.
_PID = lazy_compile(r"[0-9]{1,7}", re.ASCII)
_HEX_PORT = lazy_compile(r"[0-9A-Fa-f]{4}", re.ASCII)
_PROC_FILE_MAX_BYTES = 64 * 1024


def _read_text(path, what="a tool's output", max_bytes=DEFAULT_MAX_BYTES):
    """The text of a regular file (bounded, never a FIFO), or "" when it cannot be read."""
    data = read_lenient(path, what, max_bytes)
    return "" if data is None else data.decode("utf-8", errors="replace")


def _proc_stat_fields(pid, proc_root):
    stat = _read_text(os.path.join(proc_root, str(pid), "stat"), "a process's stat", _PROC_FILE_MAX_BYTES)
    if not stat:
        return None
    # The command name is in parentheses and may contain spaces; the fields after it are fixed.
    return stat[stat.rfind(")") + 2:].split()


def group_pids(pgid, proc_root="/proc"):
    """Live (non-zombie) processes of process group ``pgid``."""
    pids = []
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return pids
    for entry in entries:
        if not _PID.fullmatch(entry):
            continue
        fields = _proc_stat_fields(entry, proc_root)
        if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def pid_alive(pid, proc_root="/proc"):
    """True while ``pid`` exists and is not a zombie."""
    fields = _proc_stat_fields(pid, proc_root)
    return bool(fields) and fields[0] != "Z"


def listening_ports(pids, proc_root="/proc"):
    """TCP ports on which any of ``pids`` holds a LISTEN socket (Linux /proc), or None if unreadable."""
    inodes = set()
    for pid in pids:
        fd_dir = os.path.join(proc_root, str(pid), "fd")
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(os.path.join(fd_dir, name))
            except OSError:
                continue
            match = re.match(r"^socket:\[(\d+)\]$", target)
            if match:
                inodes.add(match.group(1))
    ports = set()
    readable = False
    for table in ("tcp", "tcp6"):
        data = read_lenient(os.path.join(proc_root, "net", table), "a /proc socket table", DEFAULT_MAX_BYTES)
        if data is None:
            continue
        lines = data.decode("utf-8", errors="replace").splitlines()[1:]
        readable = True
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:
                port = fields[1].rsplit(":", 1)[-1]
                if _HEX_PORT.fullmatch(port):
                    ports.add(int(port, 16))
    return ports if readable else None


class BackgroundServer:
    """A perftest server running in its own session while the client runs.

    AnsibleModule.run_command() waits for the command to end, so it cannot hold a server in the
    background; this class uses subprocess.Popen with start_new_session=True instead (an argv list,
    never a shell), writes the output to files (no pipe can fill up and stall the server), and
    stop() signals the whole process group: SIGTERM, then SIGKILL after KILL_AFTER seconds.
    """

    def __init__(self, argv, workdir, popen=subprocess.Popen, proc_root="/proc"):
        self.argv = list(argv)
        self.stdout_path = os.path.join(workdir, "server.stdout")
        self.stderr_path = os.path.join(workdir, "server.stderr")
        self.popen = popen
        self.proc_root = proc_root
        self.proc = None
        self.killed = False
        self.rc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def start(self):
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            # Not run_command: the server keeps running while the client runs, and it leads a process
            # group of its own so that a timeout stops it with every child.
            self.proc = self.popen(  # pylint: disable=ansible-bad-function
                self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, close_fds=True, start_new_session=True
            )
        return self

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait(self, seconds):
        """Wait up to ``seconds`` for the server to end by itself; True when it did."""
        if self.proc is None:
            return True
        try:
            self.rc = self.proc.wait(timeout=max(seconds, 0))
            return True
        except subprocess.TimeoutExpired:
            return False

    def listening_on(self, port):
        """True/False once known from /proc, None when /proc cannot tell."""
        pids = group_pids(self.proc.pid, self.proc_root) if self.proc is not None else []
        ports = listening_ports(pids, self.proc_root)
        if ports is None:
            return None
        return port in ports

    def stop(self, term_wait=KILL_AFTER):
        """End the server's whole process group, whatever state it is in; safe to call twice."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        if self.proc.poll() is None:
            self.killed = True
        for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, term_wait)):
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and (self.proc.poll() is None or group_pids(pgid, self.proc_root)):
                time.sleep(0.05)
            if self.proc.poll() is not None and not group_pids(pgid, self.proc_root):
                break
        try:
            self.rc = self.proc.wait(timeout=term_wait)
        except subprocess.TimeoutExpired:
            pass

    def output(self):
        return _read_text(self.stdout_path), _read_text(self.stderr_path)


def wait_until_listening(server, port, deadline, rdma_cm=False, startup_delay=2.0, clock=time.monotonic,
                         sleep=time.sleep):
    """Wait until the server listens on ``port``; returns ``listening``, ``exited`` or ``deadline``.

    Readiness comes from /proc (a LISTEN socket owned by the server's process group): probing the
    port with a connection would consume the one connection a perftest server accepts. With an
    rdma_cm exchange, or without /proc, a fixed ``startup_delay`` is all that can be done.
    """
    started = clock()
    while True:
        if not server.running():
            return "exited"
        state = None if rdma_cm else server.listening_on(port)
        if state:
            return "listening"
        now = clock()
        if state is None and now - started >= startup_delay:
            return "listening"
        if now >= deadline:
            return "deadline"
        sleep(0.05)


class _TermAsExit:
    """Turn SIGTERM into SystemExit while a background server runs, so that `finally` still stops it."""

    def __enter__(self):
        self.previous = None
        try:
            self.previous = signal.signal(signal.SIGTERM, self._handler)
        except ValueError:  # not the main thread
            self.previous = None
        return self

    @staticmethod
    def _handler(signum, frame):
        raise SystemExit(128 + signum)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False


def run_loopback(run_command, timeout_bin, server_argv, client_argv, port, timeout, workdir,
                 popen=subprocess.Popen, grace=5.0, startup_delay=2.0, clock=time.monotonic, proc_root="/proc", prefix=()):
    """Run a server in the background and the client against it; the server is always stopped.

    ``run_command(argv)`` returns ``(rc, stdout, stderr)`` (AnsibleModule.run_command). Returns a
    dict with ``server`` and ``client`` parts: ``cmd``, ``rc``, ``stdout``, ``stderr``,
    ``timed_out``, and for the server ``killed`` (still running when the client was done) and
    ``pid``; ``client`` is None when the server failed before it listened. ``prefix`` goes in front
    of both tools' argv, inside the deadline (launch_prefix()).
    """
    start = clock()
    deadline = start + timeout
    prefix = list(prefix)
    server = BackgroundServer(with_deadline(timeout_bin, timeout, prefix + list(server_argv)), workdir, popen=popen, proc_root=proc_root)
    client = None
    readiness = None
    with _TermAsExit():
        try:
            server.start()
            readiness = wait_until_listening(
                server, port, deadline, rdma_cm=uses_rdma_cm_exchange(server_argv), startup_delay=startup_delay,
                clock=clock,
            )
            if readiness == "listening":
                remaining = max(deadline - clock(), 1.0)
                client_started = clock()
                rc, out, err = run_command(with_deadline(timeout_bin, remaining, prefix + list(client_argv)))
                client = {
                    "cmd": list(client_argv),
                    "rc": rc,
                    "stdout": out,
                    "stderr": err,
                    "timed_out": timed_out_status(rc) and clock() - client_started >= remaining - 0.5,
                }
                # A server prints its report after the client's last handshake and ends by itself;
                # after a failed client there is at most an error line to wait for.
                wait = grace if rc == 0 else min(grace, 2.0)
                server.wait(min(wait, max(deadline - clock(), 0)))
        finally:
            server.stop()
    out, err = server.output()
    server_timed_out = (readiness == "deadline") or (
        timed_out_status(server.rc) and not server.killed and clock() - start >= timeout - 0.5
    )
    return {
        "server": {
            "cmd": list(server_argv),
            "rc": server.rc,
            "stdout": out,
            "stderr": err,
            "timed_out": bool(server_timed_out),
            "killed": server.killed,
            "pid": server.pid,
            "readiness": readiness,
        },
        "client": client,
    }
