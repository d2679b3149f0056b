# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: perftest
short_description: Run a perftest bandwidth or latency test (ib_write_bw and friends) and parse its result
version_added: 0.1.0
description:
  - Runs one of the perftest tools C(ib_write_bw), C(ib_read_bw), C(ib_send_bw), C(ib_write_lat),
    C(ib_read_lat) or C(ib_send_lat) on the node as a server, as a client of a server elsewhere, or
    as both (O(mode=loopback)). Loopback starts the server in the background, then runs the client
    against C(127.0.0.1), as the write-up does by hand.
  - Every result row is parsed. Bandwidth is reported in Gb/s whatever unit perftest printed.
    perftest's C(MB/sec) is 2^20 bytes per second.
  - A failed run is classified into a cause an operator can act on, with a hint. The causes are
    V(gpu_memory), V(memlock), V(port_down), V(device_not_found), V(device_query), V(qp_create),
    V(qp_connect), V(completion_error), V(remote_unreachable) and V(unknown).
  - With O(use_cuda) the buffers are in a GPU's memory (GPUDirect RDMA), registered through the
    peer-memory API (nvidia_peermem), or through DMA-BUF with O(use_cuda_dmabuf). With O(numa_node) the
    tools run on that NUMA node's CPUs (C(numactl), else C(taskset), where installed; RV(pinning) says
    which, or why neither).
  - Every run has a deadline, O(timeout). Each process runs under coreutils C(timeout) in a process
    group of its own, which ends the whole group at the deadline even if this module itself is killed.
    In loopback mode, the background server is stopped as soon as the client is done or has failed,
    on every path, exceptions included.
  - The module never reports a change. Running it consumes the link for the duration of the test.
  - Needs only the Python standard library, perftest and coreutils C(timeout) on the node.
author: rdma.node developers (!UNKNOWN)
extends_documentation_fragment:
  - rdma.node.attributes
attributes:
  check_mode:
    support: full
    details:
      - In check mode the tool is not run, because a test would load the link. The result has
        RV(skipped=true), the planned RV(cmd), and no results.
  diff_mode:
    support: none
options:
  tool:
    description: The perftest tool to run.
    type: str
    choices: [ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat]
    default: ib_write_bw
  mode:
    description:
      - V(server) waits for one client and ends at the deadline if none comes.
      - V(client) connects to O(server).
      - V(loopback) runs the server in the background and the client against C(127.0.0.1) on the
        same node. It tests one HCA port through the adapter's own loopback.
    type: str
    choices: [server, client, loopback]
    default: loopback
  server:
    description:
      - The server's address (host name or IP) for O(mode=client).
      - It is given to the tool after C(--), the end of its options; an address that starts with C(-) is refused.
    type: str
  device:
    description:
      - The RDMA device, such as V(mlx5_0) (C(-d)). Without it, perftest takes the first device it finds.
    type: str
  ib_port:
    description: The port of the device (C(-i)); perftest's default is V(1).
    type: int
  gid_index:
    description: The GID index (C(-x)), needed for RoCE.
    type: int
  size:
    description:
      - The message size (C(-s)), in bytes, or with a K, M or G suffix (powers of 1024), such as
        V(65536), V(64K) or V(1M).
      - Mutually exclusive with O(all).
    type: str
  all:
    description: Run every size from 2 bytes to 8 MiB (C(-a)).
    type: bool
    default: false
  qps:
    description: The number of queue pairs (C(-q)). Only the bandwidth tools accept it.
    type: int
  iterations:
    description: The number of iterations (C(-n)).
    type: int
  report_gbits:
    description:
      - Have the bandwidth tools print Gb/s (C(--report_gbits)). The latency tools never get this flag.
      - The parsed RV(results) are in Gb/s either way.
    type: bool
    default: true
  extra_args:
    description:
      - More perftest arguments, given to both sides as they are, for example V([-F]) to run despite
        a CPU frequency governor, or V([--run_infinitely]) never (the deadline would end it).
      - Do not put the server address here; use O(server).
      - With C(-R) or C(-z) (exchange through rdma_cm) loopback cannot see the server listen. It
        waits 2 seconds instead.
    type: list
    elements: str
    default: []
  port:
    description: The TCP port of the exchange of connection data (C(-p)); perftest's default is V(18515).
    type: int
  use_cuda:
    description:
      - Put the test's buffers in the memory of the GPU with this CUDA index (C(--use_cuda=N)), to test
        GPUDirect RDMA. perftest must be built with CUDA.
      - The tools run with C(CUDA_DEVICE_ORDER=PCI_BUS_ID), so the index counts the node's GPUs in PCI
        address order (as C(nvidia-smi) lists them), whatever CUDA's own order; a C(CUDA_VISIBLE_DEVICES)
        in the environment would renumber them.
      - Only the bandwidth tools take it.
    type: int
  use_cuda_dmabuf:
    description:
      - Register the GPU memory through the kernel's DMA-BUF (C(--use_cuda_dmabuf)) instead of the
        peer-memory API, which needs the open NVIDIA kernel module and Linux 5.12 or newer. Needs O(use_cuda).
    type: bool
    default: false
  numa_node:
    description:
      - Run the tools on the CPUs of this NUMA node, the HCA's (its C(numa_node) in the facts of
        M(rdma.node.ib_facts)), with C(numactl --cpunodebind=N) and C(--membind=N) where the node has memory,
        else C(taskset -c) with the node's CPUs. Where neither tool is installed, or the node does not exist
        on the machine, the test runs unpinned and RV(pinning) says so.
    type: int
  timeout:
    description:
      - The longest the test may run, in seconds. In loopback mode, this covers the server's start-up
        and the client.
      - At the deadline, the process group gets SIGTERM, then SIGKILL 5 seconds later.
    type: int
    default: 120
  fail_on_error:
    description:
      - Fail the task when the test failed. The message names the classified cause.
      - With V(false) the task succeeds and RV(failure) tells what went wrong.
    type: bool
    default: true
notes:
  - perftest's server prints the client's figures under its own table header. A server started
    without C(--report_gbits) therefore shows Gb/s figures under a C(MB/sec) header when its client
    asked for Gb/s. Each row's unit is checked against bytes times message rate, which does not depend
    on the unit.
  - Only one test can use a TCP port at a time. Run tests in parallel with distinct O(port) values.
seealso:
  - name: perftest
    description: The perftest tools.
    link: https://github.com/linux-rdma/perftest
"""

EXAMPLES = r"""
- name: Loopback bandwidth of mlx5_1, port 1 (as in the write-up)
  rdma.node.perftest:
    tool: ib_write_bw
    mode: loopback
    device: mlx5_1
    size: 64K
    timeout: 60
  register: loopback

- name: Compare with the link rate
  ansible.builtin.assert:
    that: loopback.bw_average_gbps >= 0.9 * 100

- name: Server on one node for one client, never longer than 2 minutes
  rdma.node.perftest:
    mode: server
    device: mlx5_0
    all: true
    qps: 2
    port: 18600
    timeout: 120
  async: 150
  poll: 0
  register: perftest_server

- name: Client on its peer
  rdma.node.perftest:
    mode: client
    server: "{{ hostvars[peer].ansible_host }}"
    device: mlx5_0
    all: true
    qps: 2
    port: 18600
    fail_on_error: false
  register: perftest_client

- name: GPUDirect RDMA loopback from the memory of GPU 1, on the HCA's NUMA node
  rdma.node.perftest:
    mode: loopback
    device: mlx5_2
    size: 1M
    use_cuda: 1
    use_cuda_dmabuf: "{{ ansible_facts.rdma.gpudirect.dma_buf_ready }}"
    numa_node: "{{ ansible_facts.rdma.devices.mlx5_2.numa_node }}"
  register: gpudirect

- name: Tell the operator what to do
  ansible.builtin.debug:
    msg: "{{ perftest_client.failure.cause }}: {{ perftest_client.failure.hint }}"
  when: perftest_client.failure
"""

RETURN = r"""
cmd:
  description:
    - The perftest command of the client (modes V(client) and V(loopback)) or of the server (mode
      V(server)). The module runs it under coreutils C(timeout).
    - The first item is the path of the tool that ran; in check mode, its name.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/ib_write_bw, -d, mlx5_1, -s, "65536", --report_gbits, "--", 127.0.0.1]
rc:
  description:
    - Exit status of that command; V(124) or V(137) when the deadline ended it.
    - V(null) in check mode, and in loopback mode when the server failed before the client started.
  returned: always
  type: int
stdout:
  description: Standard output of that command.
  returned: always
  type: str
stderr:
  description: Standard error of that command.
  returned: always
  type: str
timed_out:
  description: Whether the deadline O(timeout) ended that command.
  returned: always
  type: bool
results:
  description:
    - One item per result row, rows printed by both sides of a loopback run counted once.
    - Bandwidth tools have V(bytes), V(iterations), V(bw_peak_gbps), V(bw_average_gbps) and
      V(msg_rate_mpps). V(bw_peak_gbps) is V(null) where perftest printed 0.00 for a peak it did not
      measure (a duration run, C(--run_infinitely), a send test's receiving side).
    - Latency tools have V(bytes), V(iterations) and the latency columns in microseconds
      (V(t_min_usec), V(t_max_usec), V(t_typical_usec), V(t_avg_usec), V(t_stdev_usec), V(t_p99_usec),
      V(t_p99_9_usec)), or V(t_avg_usec) and V(tps_average) for duration runs. With C(-C), the time
      columns end in V(_cycles) instead.
  returned: always
  type: list
  elements: dict
  sample:
    - {bytes: 65536, iterations: 5000, bw_peak_gbps: 94.72, bw_average_gbps: 94.71, msg_rate_mpps: 0.18064}
bw_average_gbps:
  description:
    - The average bandwidth of the O(size) row, or the best average over all rows. V(null) for
      latency tests and failed runs.
  returned: always
  type: float
  sample: 94.71
failure:
  description: V(null) when the test passed, else what failed.
  returned: always
  type: dict
  contains:
    cause:
      description:
        - One of V(gpu_memory), V(memlock), V(port_down), V(device_not_found), V(device_query), V(qp_create),
          V(qp_connect), V(completion_error), V(remote_unreachable), V(unknown).
        - V(gpu_memory) is a CUDA error, or memory registration that failed after perftest placed its buffer
          in GPU memory without the errno of the locked-memory limit (12), so no peer memory or DMA-BUF path.
      type: str
      sample: memlock
    hint:
      description: What to do about it.
      type: str
    line:
      description: The output line that shows the cause (or what happened, for a deadline).
      type: str
      sample: Couldn't allocate MR
    side:
      description: V(server) or V(client), the process whose output shows the cause.
      type: str
  sample:
    cause: port_down
    line: Port number 1 state is Down
    side: server
    hint: "The port is not ACTIVE (see `ibstat`, State and Physical state): ..."
pinning:
  description:
    - How the tools were pinned to O(numa_node). The module runs them as C(timeout ... [env CUDA_DEVICE_ORDER=PCI_BUS_ID]
      [PINNING] TOOL ...).
    - V(null) in check mode.
  returned: always
  type: dict
  contains:
    how:
      description: V(numactl), V(taskset) or V(none).
      type: str
    detail:
      description: The pinning's arguments, or why there is none.
      type: str
  sample: {how: numactl, detail: "--cpunodebind=1 --membind=1"}
parsed:
  description:
    - What else the output says. Keys include V(test) (such as V(RDMA_Write BW Test)), V(kind)
      (V(bw) or V(lat)), V(device), V(link_type), V(transport_type), V(connection_type), V(qps), V(mtu),
      V(gid_index), V(header) (every header key as printed), V(unit) (the unit of the figures, such as
      V(Gb/sec) or V(MB/sec)), V(units_printed), V(sides), V(sides_agree), V(warnings) (such as
      C(Conflicting CPU frequency)), V(notes) (what the parser decided and the output lines it could
      not place, each with V(line), V(text) and V(reason), as the P(rdma.node.parse_perftest#filter)
      filter returns them; each unplaced line is also a warning of the task), V(local_addresses),
      V(remote_addresses), V(gpu_memory) (the output shows a GPU buffer) and V(gpu) (the GPU perftest used,
      with V(cuda_index), V(bus) as it prints it, such as V(82:00), and V(devices); or V(null)).
  returned: always
  type: dict
server:
  description:
    - The background server of a loopback run. It has V(cmd), V(rc), V(stdout), V(stderr), V(timed_out),
      V(killed) (still running when the client was done, so it was stopped), and V(results).
  returned: when O(mode=loopback) and not in check mode
  type: dict
sides_agree:
  description:
    - For a loopback run, whether the server's rows match the client's. The server prints the
      figures it received from the client.
    - V(null) when there is nothing to compare.
  returned: when O(mode=loopback)
  type: bool
skipped:
  description: V(true) in check mode, where nothing was run.
  returned: when in check mode
  type: bool
"""

import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._files import cap_warnings
from ansible_collections.rdma.node.plugins.module_utils._perftest import (
    DEFAULT_TCP_PORT,
    TOOLS,
    PerftestError,
    build_argv,
    launch_prefix,
    parse_size,
    pinning,
    run_loopback,
    timed_out_status,
    with_deadline,
)
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import (
    average_for,
    classify_failure,
    hint_for,
    parse_perftest,
)

LOOPBACK_ADDRESS = "127.0.0.1"


def _split(parsed):
    info = dict(parsed)
    results = info.pop("results")
    failure = info.pop("failure")
    info.pop("bw_average_gbps")
    return results, failure, info


def _warn_unplaced(module, parsed, side):
    """Tell the operator about output lines the parser could not place (a newer perftest, a wrapper)."""
    warnings = ["perftest %s output line %d was not understood (%s): %r" % (side, note["line"], note["reason"], note["text"])
                for note in parsed["notes"] if note["line"] is not None]
    for warning in cap_warnings(warnings):
        module.warn(warning)


def _side_failure(failure, side):
    if failure is None:
        return None
    failure = dict(failure)
    failure["side"] = side
    return failure


def _run_single(module, timeout_bin, argv, timeout, role, prefix):
    rc, out, err = module.run_command(with_deadline(timeout_bin, timeout, prefix + argv))
    timed_out = timed_out_status(rc)
    parsed = parse_perftest(out, err, rc=rc, timed_out=timed_out, timeout=timeout, role=role)
    _warn_unplaced(module, parsed, role)
    results, failure, info = _split(parsed)
    return {
        "cmd": argv,
        "rc": rc,
        "stdout": out,
        "stderr": err,
        "timed_out": timed_out,
        "results": results,
        "failure": _side_failure(failure, role),
        "parsed": info,
    }


def _run_loopback(module, timeout_bin, server_argv, client_argv, port, timeout, prefix):
    workdir = tempfile.mkdtemp(prefix="perftest-", dir=module.tmpdir)
    run = None
    try:
        run = run_loopback(module.run_command, timeout_bin, server_argv, client_argv, port, timeout, workdir, prefix=prefix)
    except OSError as exc:
        module.fail_json(msg="could not start the background server %s: %s" % (" ".join(server_argv), exc))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    server = run["server"]
    server_parsed = parse_perftest(
        server["stdout"], server["stderr"], rc=None if server["killed"] else server["rc"],
        timed_out=server["timed_out"], timeout=timeout, role="server",
    )
    _warn_unplaced(module, server_parsed, "server")
    server_results, server_failure, server_info = _split(server_parsed)
    server_part = {
        "cmd": server["cmd"],
        "rc": server["rc"],
        "stdout": server["stdout"],
        "stderr": server["stderr"],
        "timed_out": server["timed_out"],
        "killed": server["killed"],
        "results": server_results,
    }
    client = run["client"]
    if client is None:
        # The server failed, or never listened, before the client could start.
        if server["timed_out"]:
            # Stuck before its socket: an error line it printed still says why, if there is one.
            server_failure = classify_failure(server["stdout"], server["stderr"], has_results=True)
            if server_failure is None:
                line = "the server did not listen on TCP port %s within %s s" % (port, timeout)
                server_failure = {"cause": "unknown", "hint": hint_for("unknown"), "line": line}
        elif server_failure is None:
            line = "the server exited with status %s before it listened on TCP port %s" % (server["rc"], port)
            server_failure = {"cause": "unknown", "hint": hint_for("unknown"), "line": line}
        return {
            "cmd": client_argv,
            "rc": None,
            "stdout": "",
            "stderr": "",
            "timed_out": False,
            "results": [],
            "failure": _side_failure(server_failure, "server"),
            "parsed": server_info,
            "server": server_part,
            "sides_agree": None,
        }
    parsed = parse_perftest(
        client["stdout"], client["stderr"], rc=client["rc"], timed_out=client["timed_out"], timeout=timeout,
        role="client",
    )
    _warn_unplaced(module, parsed, "client")
    results, failure, info = _split(parsed)
    failure = _side_failure(failure, "client")
    if failure is not None and failure["cause"] == "remote_unreachable" and server_failure is not None \
            and server_failure["cause"] not in ("remote_unreachable", "unknown"):
        # The server failed first (its port, device or memory); the client only saw it go away.
        failure = _side_failure(server_failure, "server")
    sides_agree = None
    if results and server_results:
        sides_agree = results == server_results
    return {
        "cmd": client_argv,
        "rc": client["rc"],
        "stdout": client["stdout"],
        "stderr": client["stderr"],
        "timed_out": client["timed_out"],
        "results": results,
        "failure": failure,
        "parsed": info,
        "server": server_part,
        "sides_agree": sides_agree,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tool=dict(type="str", default="ib_write_bw", choices=list(TOOLS)),
            mode=dict(type="str", default="loopback", choices=["server", "client", "loopback"]),
            server=dict(type="str"),
            device=dict(type="str"),
            ib_port=dict(type="int"),
            gid_index=dict(type="int"),
            size=dict(type="str"),
            all=dict(type="bool", default=False),
            qps=dict(type="int"),
            iterations=dict(type="int"),
            report_gbits=dict(type="bool", default=True),
            extra_args=dict(type="list", elements="str", default=[]),
            port=dict(type="int"),
            use_cuda=dict(type="int"),
            use_cuda_dmabuf=dict(type="bool", default=False),
            numa_node=dict(type="int"),
            timeout=dict(type="int", default=120),
            fail_on_error=dict(type="bool", default=True),
        ),
        required_if=[("mode", "client", ["server"])],
        supports_check_mode=True,
    )
    params = module.params
    tool = params["tool"]
    mode = params["mode"]
    if params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, got %s" % params["timeout"])
    if params["port"] is not None and not 1 <= params["port"] <= 65535:
        module.fail_json(msg="port must be a TCP port from 1 to 65535, got %s" % params["port"])
    # Checked by hand: mutually_exclusive would also refuse size with an explicit all=false.
    if params["size"] is not None and params["all"]:
        module.fail_json(msg="size and all=true exclude each other: all runs every size from 2 bytes to 8 MiB")
    if mode != "client" and params["server"]:
        module.fail_json(msg="server is the address a client connects to; mode %s does not take it" % mode)
    try:
        size = parse_size(params["size"]) if params["size"] is not None else None
        common = dict(
            device=params["device"], ib_port=params["ib_port"], gid_index=params["gid_index"], size=size,
            all_sizes=params["all"], qps=params["qps"], iterations=params["iterations"],
            report_gbits=params["report_gbits"], extra_args=params["extra_args"], port=params["port"],
            use_cuda=params["use_cuda"], use_cuda_dmabuf=params["use_cuda_dmabuf"],
        )
        server_argv = build_argv(tool, **common)
        client_argv = build_argv(tool, server=params["server"] if mode == "client" else LOOPBACK_ADDRESS, **common)
    except PerftestError as exc:
        module.fail_json(msg=str(exc))

    main_argv = server_argv if mode == "server" else client_argv
    result = dict(
        changed=False, cmd=main_argv, rc=None, stdout="", stderr="", timed_out=False, results=[],
        bw_average_gbps=None, failure=None, parsed={}, pinning=None,
    )
    if mode == "loopback":
        result["sides_agree"] = None
    if module.check_mode:
        result["skipped"] = True
        result["msg"] = "check mode: %s was not run (a test would load the link)" % tool
        # Explicit, or Ansible would take the rc key for a failure (it does for any rc other than 0).
        module.exit_json(failed=False, **result)

    tool_path = module.get_bin_path(tool)
    if tool_path is None:
        module.fail_json(msg="%s was not found on the node's PATH: install perftest (package perftest)" % tool, **result)
    timeout_bin = module.get_bin_path("timeout", required=True)
    # Run the binary that was found (PATH, then the sbin directories), and show that one in cmd.
    server_argv[0] = client_argv[0] = tool_path
    main_argv = server_argv if mode == "server" else client_argv
    pinned = pinning(params["numa_node"], module.get_bin_path)
    result["pinning"] = {"how": pinned["how"], "detail": pinned["detail"]}
    prefix = launch_prefix(pinned, params["use_cuda"] is not None, module.get_bin_path("env", required=True))

    if mode == "loopback":
        run = _run_loopback(module, timeout_bin, server_argv, client_argv, params["port"] or DEFAULT_TCP_PORT,
                            params["timeout"], prefix)
    else:
        run = _run_single(module, timeout_bin, main_argv, params["timeout"], mode, prefix)
    result.update(run)
    result["bw_average_gbps"] = average_for(result["results"], size)

    failure = result["failure"]
    if failure is not None:
        where = params["device"] or "the default device"
        side = " (%s side)" % failure["side"] if mode == "loopback" and failure.get("side") == "server" else ""
        message = "%s on %s failed%s: %s - %s" % (tool, where, side, failure["cause"], failure["line"])
        if params["fail_on_error"]:
            module.fail_json(msg=message, **result)
        result["msg"] = message
    else:
        result["msg"] = "%s on %s: %s" % (
            tool, params["device"] or "the default device",
            "%s Gb/s" % result["bw_average_gbps"] if result["bw_average_gbps"] is not None
            else "%d result rows" % len(result["results"]),
        )
    module.exit_json(failed=False, **result)


if __name__ == "__main__":
    main()
