#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""FAKE perftest for rdma.node's tests. This is NOT perftest and measures nothing.

There is no RDMA hardware on the test machines, so the tests put this fake on PATH under the
perftest tool names (ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat).
It replays real captured perftest output (tests/fixtures/perftest/) and reproduces the parts of
perftest's behaviour the module depends on, for real:

* the role comes from the arguments as with perftest: a host argument makes it a client;
* the server listens on the TCP port (-p/--port, default 18515) and accepts one connection; the
  client connects to HOST:PORT and, like perftest, prints "Couldn't connect to HOST:PORT" and fails
  when nobody listens;
* it exits with the captured status, and it can hang (never finish) to test the deadlines.

Install it under the tool names (sh wrappers that run this file with the installing Python):

    python fake_perftest.py --fake-install BIN_DIR

Environment (ROLE is SERVER or CLIENT):
    FAKE_PERFTEST_ROLE_OUTPUT  captured file this role replays (FAKE_PERFTEST_OUTPUT for both roles)
    FAKE_PERFTEST_ROLE_RC      exit status; default 1 when the file name starts with err_ or
                               seed_err_ (perftest returns 1 on these failures), else 0
    FAKE_PERFTEST_ROLE_STAGE   connect (default): replay after the TCP exchange (the server after
                               its client closed the connection); early: replay at once and exit
                               without any socket, as perftest does when the device, port or
                               memory fails before establish_connection()
    FAKE_PERFTEST_ROLE_HANG    1: never finish (the server after accepting, the client after
                               connecting, either role at once with STAGE=early, as a tool stuck
                               before its socket); a server without a client never finishes anyway
    FAKE_PERFTEST_CHILD        1: start a child process (sleep) in the same process group, to prove
                               that the whole group is stopped
    FAKE_PERFTEST_PIDFILE      append "ROLE PID CHILD_PID" once started
    FAKE_PERFTEST_ARGV_LOG     append the argv as one JSON line, with the CPUs the process may run on
                               (its affinity, as numactl or taskset left it) and CUDA_DEVICE_ORDER
    FAKE_PERFTEST_BIND         address the server listens on (default 127.0.0.1)
    FAKE_PERFTEST_TOOL         tool name when not called under it (set by the installed wrappers)

The replayed text goes to stdout for status 0, to stderr otherwise.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat")
DEFAULT_PORT = 18515

# perftest options that take a value as the next argument (short and long forms).
_VALUE_OPTIONS = frozenset(
    "-d -i -x -s -q -n -p -m -t -r -u -S -c -I -l -Q -D -f -T -w -y -o -M -E -B -J -j -K -k -W -L".split()
    + [
        "--ib-dev", "--ib-port", "--gid-index", "--size", "--qp", "--iters", "--port", "--mtu", "--tx-depth",
        "--rx-depth", "--qp-timeout", "--sl", "--connection", "--inline_size", "--post_list", "--cq-mod",
        "--duration", "--margin", "--tos", "--limit_bw", "--limit_msgrate", "--outs", "--MGID",
        "--pkey_index", "--rate_limit", "--burst_size", "--rate_units", "--output", "--retry_count",
    ]
)


def install(bin_dir, script=__file__, what="replays captured output"):
    """Put one sh wrapper per perftest tool name in ``bin_dir``, each running ``script`` (this fake,
    or a fake built on it) with the tool's name in FAKE_PERFTEST_TOOL."""
    os.makedirs(bin_dir, exist_ok=True)
    script = os.path.abspath(script)
    for tool in TOOLS:
        path = os.path.join(bin_dir, tool)
        with open(path, "w") as handle:
            handle.write(
                "#!/bin/sh\n# FAKE %s: rdma.node test double, %s (see %s)\n"
                "FAKE_PERFTEST_TOOL=%s exec '%s' '%s' \"$@\"\n" % (tool, what, script, tool, sys.executable, script)
            )
        os.chmod(path, 0o755)
    return 0


def _parse_args(argv):
    """Return (host, port) from perftest-style arguments."""
    host = None
    port = DEFAULT_PORT
    index = 0
    while index < len(argv):
        arg = argv[index]
        value = None
        if arg == "--":  # the end of the options, as getopt_long reads it
            host = host if index + 1 >= len(argv) else argv[index + 1]
            break
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        elif arg in _VALUE_OPTIONS:
            index += 1
            value = argv[index] if index < len(argv) else None
        elif arg.startswith("-"):
            pass
        elif host is None:
            host = arg
        if arg in ("-p", "--port") and value is not None:
            port = int(value)
        index += 1
    return host, port


def _env(role, name, default=None):
    return os.environ.get("FAKE_PERFTEST_%s_%s" % (role, name), os.environ.get("FAKE_PERFTEST_%s" % name, default))


def _replay(path, rc):
    with open(path, "rb") as handle:
        data = handle.read()
    stream = sys.stdout.buffer if rc == 0 else sys.stderr.buffer
    stream.write(data)
    stream.flush()


def _hang():
    while True:
        time.sleep(3600)


def main(argv):
    if len(argv) == 2 and argv[0] == "--fake-install":
        return install(argv[1])
    tool = os.environ.get("FAKE_PERFTEST_TOOL") or os.path.basename(sys.argv[0])
    host, port = _parse_args(argv)
    role = "CLIENT" if host else "SERVER"
    if os.environ.get("FAKE_PERFTEST_ARGV_LOG"):
        with open(os.environ["FAKE_PERFTEST_ARGV_LOG"], "a") as log:
            log.write(json.dumps({"tool": tool, "role": role.lower(), "argv": argv, "cpus": sorted(os.sched_getaffinity(0)),
                                  "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER")}) + "\n")
    output = _env(role, "OUTPUT")
    if not output:
        sys.stderr.write("FAKE %s: set FAKE_PERFTEST_%s_OUTPUT to a captured output file\n" % (tool, role))
        return 2
    name = os.path.basename(output)
    rc = int(_env(role, "RC", "1" if name.startswith(("err_", "seed_err_")) else "0"))
    child = None
    if os.environ.get("FAKE_PERFTEST_CHILD") == "1":
        child = subprocess.Popen(["sleep", "3600"])
    if os.environ.get("FAKE_PERFTEST_PIDFILE"):
        with open(os.environ["FAKE_PERFTEST_PIDFILE"], "a") as pidfile:
            pidfile.write("%s %d %d\n" % (role.lower(), os.getpid(), child.pid if child else 0))
    try:
        if _env(role, "STAGE", "connect") == "early":
            _replay(output, rc)
            if _env(role, "HANG") == "1":
                _hang()
            return rc
        if role == "SERVER":
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((os.environ.get("FAKE_PERFTEST_BIND", "127.0.0.1"), port))
            listener.listen(1)
            connection, dummy = listener.accept()
            listener.close()
            if _env(role, "HANG") == "1":
                _hang()
            while connection.recv(4096):
                pass
            connection.close()
        else:
            try:
                connection = socket.create_connection((host, port), timeout=5)
            except OSError:
                # The two lines perftest prints (ethernet_client_connect() in perftest_communication.c,
                # then write_bw.c and the other tools).
                sys.stderr.write("Couldn't connect to %s:%d\n Unable to init the socket connection\n" % (host, port))
                return 1
            if _env(role, "HANG") == "1":
                _hang()
            _replay(output, rc)
            connection.close()
            return rc
        _replay(output, rc)
        return rc
    finally:
        if child is not None:
            child.kill()
            child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
