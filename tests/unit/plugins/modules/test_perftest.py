"""rdma.node.perftest runs for real against the FAKE perftest (tests/fake_tools/perftest), which replays
captured outputs: there is no RDMA hardware here, so the tool is the only thing faked."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils._perftest import group_pids, listening_ports, pid_alive
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import hint_for
from ansible_collections.rdma.node.plugins.modules import perftest

TESTS = Path(__file__).resolve().parents[3]
FIXTURES = TESTS / "fixtures" / "perftest"
FAKE = TESTS / "fake_tools" / "perftest" / "fake_perftest.py"
MIB_GBPS = 2 ** 20 * 8 / 1e9


class Fake:
    def __init__(self, root, monkeypatch):
        self.root = root
        self.bin = root / "bin"
        self.monkeypatch = monkeypatch
        self.port = free_port()

    def outputs(self, server=None, client=None):
        if server:
            self.monkeypatch.setenv("FAKE_PERFTEST_SERVER_OUTPUT", str(FIXTURES / server))
        if client:
            self.monkeypatch.setenv("FAKE_PERFTEST_CLIENT_OUTPUT", str(FIXTURES / client))

    def env(self, **values):
        for key, value in values.items():
            self.monkeypatch.setenv("FAKE_PERFTEST_" + key, value)

    def calls(self):
        path = self.root / "argv.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def pids(self):
        path = self.root / "pids"
        found = []
        for line in (path.read_text().splitlines() if path.exists() else []):
            dummy, pid, child = line.split()
            found += [int(pid)] + ([int(child)] if child != "0" else [])
        return found

    def alive_after(self, seconds=3.0):
        """Signals are delivered asynchronously: give the processes a moment to be gone."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and any(pid_alive(pid) for pid in self.pids()):
            time.sleep(0.05)
        return [pid for pid in self.pids() if pid_alive(pid)]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    subprocess.run([sys.executable, str(FAKE), "--fake-install", str(tmp_path / "bin")], check=True)
    for key in list(os.environ):
        if key.startswith("FAKE_PERFTEST_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", "%s%s%s" % (tmp_path / "bin", os.pathsep, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_PERFTEST_PIDFILE", str(tmp_path / "pids"))
    monkeypatch.setenv("FAKE_PERFTEST_ARGV_LOG", str(tmp_path / "argv.log"))
    monkeypatch.setenv("FAKE_PERFTEST_CHILD", "1")
    handle = Fake(tmp_path, monkeypatch)
    yield handle
    # Whatever a failing test left running: its own processes only, by pid.
    for pid in handle.pids():
        if pid_alive(pid):
            os.kill(pid, 9)


def test_loopback_success(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt", client="ib_write_bw_s1M_client_IB_MBsec.txt")
    result = run_module(perftest, {
        "device": "mlx5_0", "size": "1M", "report_gbits": False, "port": fake.port, "timeout": 30,
    })
    assert not result.failed, result.get("msg")
    assert result["changed"] is False
    assert result["cmd"] == [str(fake.bin / "ib_write_bw"), "-d", "mlx5_0", "-s", "1048576", "-p", str(fake.port), "--", "127.0.0.1"]
    assert result["rc"] == 0 and result["timed_out"] is False
    row = {"bytes": 1048576, "iterations": 5000, "msg_rate_mpps": 0.011123,
           "bw_peak_gbps": round(11133.60 * MIB_GBPS, 6), "bw_average_gbps": round(11129.09 * MIB_GBPS, 6)}
    assert result["results"] == [row]
    assert result["bw_average_gbps"] == pytest.approx(93.357573)
    assert result["failure"] is None
    assert result["sides_agree"] is True
    assert result["server"]["results"] == [row]
    assert result["server"]["rc"] == 0 and result["server"]["killed"] is False
    assert result["server"]["cmd"] == [str(fake.bin / "ib_write_bw"), "-d", "mlx5_0", "-s", "1048576", "-p", str(fake.port)]
    assert result["parsed"]["test"] == "RDMA_Write BW Test" and result["parsed"]["unit"] == "MB/sec"
    assert result["msg"] == "ib_write_bw on mlx5_0: 93.357573 Gb/s"
    assert [(call["role"], call["argv"]) for call in fake.calls()] == [
        ("server", result["server"]["cmd"][1:]), ("client", result["cmd"][1:])]
    assert fake.alive_after() == []


def test_gpu_memory_on_the_hca_numa_node(fake, run_module):
    """A GPUDirect loopback: --use_cuda and --use_cuda_dmabuf on both sides, CUDA's devices in PCI bus order,
    both tools pinned to NUMA node 0 by the real numactl (or taskset), the GPU perftest names read back."""
    fake.outputs(server="ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_server.txt", client="ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_client.txt")
    result = run_module(perftest, {"device": "mlx5_0", "size": "64K", "port": fake.port, "timeout": 30,
                                   "use_cuda": 0, "use_cuda_dmabuf": True, "numa_node": 0})
    assert not result.failed, result.get("msg")
    assert result["cmd"][-5:] == ["--report_gbits", "--use_cuda=0", "--use_cuda_dmabuf", "--", "127.0.0.1"]  # the address after --
    calls = fake.calls()
    assert [c["role"] for c in calls] == ["server", "client"]
    assert all(c["cuda_device_order"] == "PCI_BUS_ID" for c in calls)
    node0 = _cpu_list(Path("/sys/devices/system/node/node0/cpulist").read_text())
    assert all(c["cpus"] == node0 for c in calls)
    assert result["pinning"]["how"] in ("numactl", "taskset")
    if result["pinning"]["how"] == "numactl":
        assert result["pinning"]["detail"].startswith("--cpunodebind=0")
    assert result["bw_average_gbps"] == pytest.approx(10.42)
    assert result["parsed"]["gpu"] == {"cuda_index": 0, "bus": "82:00", "devices": {"0": "82:00"}}
    assert fake.alive_after() == []


def test_a_numa_node_the_machine_lacks_runs_unpinned_and_says_so(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt", client="ib_write_bw_s1M_client_IB_MBsec.txt")
    result = run_module(perftest, {"device": "mlx5_0", "size": "1M", "port": fake.port, "timeout": 30, "numa_node": 4095})
    assert not result.failed, result.get("msg")
    assert result["pinning"] == {"how": "none", "detail": "NUMA node 4095 does not exist on this machine "
                                                          "(/sys/devices/system/node/node4095)"}
    assert all(c["cuda_device_order"] is None for c in fake.calls())


def test_gpu_memory_that_cannot_be_registered(fake, run_module):
    """The client of perftest issue 126: "Couldn't allocate MR" after its GPU buffer is no peer memory, not memlock."""
    fake.outputs(server="seed_err_ib_read_bw_server_ethernet_read_keys.txt",
                 client="err_ib_write_bw_use_cuda_client_couldnt_allocate_MR_bad_address_pod_terminal_with_prompts_issue126.txt")
    result = run_module(perftest, {"device": "mlx5_0", "port": fake.port, "use_cuda": 0, "fail_on_error": False})
    assert result["failure"]["cause"] == "gpu_memory" and result["failure"]["side"] == "client"
    assert result["msg"] == "ib_write_bw on mlx5_0 failed: gpu_memory - Couldn't allocate MR"
    assert fake.alive_after() == []


@pytest.mark.parametrize("args, message", [
    ({"use_cuda_dmabuf": True}, "use_cuda_dmabuf needs use_cuda, the GPU whose memory DMA-BUF registers"),
    ({"use_cuda": -1}, "use_cuda is the CUDA index of the GPU (0 or more), got -1"),
    ({"use_cuda": 0, "tool": "ib_write_lat"},
     "use_cuda is for the bandwidth tools (ib_write_bw, ib_read_bw, ib_send_bw); ib_write_lat does not test GPU memory"),
])
def test_gpu_settings_it_cannot_use(fake, run_module, args, message):
    result = run_module(perftest, dict({"device": "mlx5_0", "port": fake.port}, **args))
    assert result.failed and result["msg"] == message
    assert fake.calls() == []


def _cpu_list(text):
    cpus = []
    for part in text.strip().split(","):
        first, _sep, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def test_loopback_memlock_is_classified(fake, run_module):
    # The write-up's failure: the client cannot register memory, its server loses the client.
    fake.outputs(server="seed_err_ib_read_bw_server_ethernet_read_keys.txt",
                 client="err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt")
    result = run_module(perftest, {"tool": "ib_read_bw", "device": "mlx5_0", "qps": 30, "port": fake.port})
    assert result.failed
    assert result["msg"] == "ib_read_bw on mlx5_0 failed: memlock - Couldn't allocate MR"
    assert result["failure"] == {"cause": "memlock", "hint": hint_for("memlock"), "line": "Couldn't allocate MR",
                                 "side": "client"}
    assert "rdma.node.node_remediation" in result["failure"]["hint"]
    assert result["rc"] == 1 and result["results"] == [] and result["bw_average_gbps"] is None
    assert result["cmd"] == [str(fake.bin / "ib_read_bw"), "-d", "mlx5_0", "-q", "30", "-p", str(fake.port),
                             "--report_gbits", "--", "127.0.0.1"]
    assert result["server"]["rc"] == 1
    assert "ethernet_read_keys: Couldn't read remote address" in result["server"]["stderr"]
    assert result["sides_agree"] is None
    assert fake.alive_after() == []


@pytest.mark.parametrize("fail_on_error", [True, False])
def test_loopback_port_down(fake, run_module, fail_on_error):
    fake.outputs(server="seed_err_ib_write_bw_mlx5_0_port_down_server.txt",
                 client="seed_err_ib_write_bw_mlx5_0_port_down_client.txt")
    fake.env(SERVER_STAGE="early", CLIENT_STAGE="early")
    result = run_module(perftest, {"device": "mlx5_0", "port": fake.port, "fail_on_error": fail_on_error})
    message = "ib_write_bw on mlx5_0 failed (server side): port_down - Port number 1 state is Down"
    assert result.failed is fail_on_error
    assert result["msg"] == message
    assert result["failure"]["cause"] == "port_down" and result["failure"]["side"] == "server"
    assert result["rc"] is None                      # the client never ran: its server was gone
    assert [call["role"] for call in fake.calls()] == ["server"]
    assert result["server"]["rc"] == 1
    assert result["server"]["stderr"] == (FIXTURES / "seed_err_ib_write_bw_mlx5_0_port_down_server.txt").read_text()
    assert fake.alive_after() == []


def test_loopback_client_fails_early_and_the_waiting_server_is_stopped(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt",
                 client="seed_err_ib_write_bw_mlx5_bond_0_device_not_found.txt")
    fake.env(CLIENT_STAGE="early")
    started = time.monotonic()
    result = run_module(perftest, {"device": "mlx5_bond_0", "port": fake.port, "timeout": 60})
    assert time.monotonic() - started < 15
    assert result.failed
    assert result["msg"] == "ib_write_bw on mlx5_bond_0 failed: device_not_found - IB device mlx5_bond_0 not found"
    assert result["server"]["killed"] is True        # it was still waiting for a client
    pids = fake.pids()
    assert len(pids) == 4                             # server, its child, client, its child
    assert fake.alive_after() == []


def test_server_timeout_kills_the_hanging_server(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt")
    started = time.monotonic()
    result = run_module(perftest, {"mode": "server", "device": "mlx5_0", "port": fake.port, "timeout": 2})
    elapsed = time.monotonic() - started
    assert 2 <= elapsed < 9
    assert result.failed
    assert result["timed_out"] is True and result["rc"] == 124
    assert result["failure"]["cause"] == "remote_unreachable"
    assert result["msg"] == ("ib_write_bw on mlx5_0 failed: remote_unreachable - no client completed a test "
                             "within 2 s; the server was stopped")
    server_pid, child_pid = fake.pids()
    assert fake.alive_after() == []
    assert not pid_alive(server_pid) and not pid_alive(child_pid)


def test_loopback_server_that_never_listens(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt", client="ib_write_bw_s1M_client_IB_MBsec.txt")
    fake.env(SERVER_STAGE="early", SERVER_HANG="1")
    result = run_module(perftest, {"device": "mlx5_0", "port": fake.port, "timeout": 2})
    assert result.failed
    assert result["msg"] == ("ib_write_bw on mlx5_0 failed (server side): unknown - the server did not listen on "
                             "TCP port %d within 2 s" % fake.port)
    assert result["rc"] is None and result["server"]["timed_out"] is True
    assert [call["role"] for call in fake.calls()] == ["server"]
    assert fake.alive_after() == []


def test_loopback_hanging_client_is_stopped_with_its_server(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt", client="ib_write_bw_s1M_client_IB_MBsec.txt")
    fake.env(CLIENT_HANG="1")
    result = run_module(perftest, {"port": fake.port, "timeout": 3, "fail_on_error": False})
    assert not result.failed, result
    assert result["timed_out"] is True and result["rc"] == 124, result
    assert result["failure"]["cause"] == "remote_unreachable", result
    assert result["failure"]["line"] == "the client did not finish within 3 s and was stopped"
    # The server's own deadline (it started first) or the runner stopped it, whichever came first.
    assert result["server"]["timed_out"] or result["server"]["killed"]
    assert len(fake.pids()) == 4
    assert fake.alive_after() == []


def test_client_mode(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt", client="ib_write_bw_s1M_client_IB_MBsec.txt")
    server = subprocess.Popen([str(fake.bin / "ib_write_bw"), "-p", str(fake.port)], stdout=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and fake.port not in (listening_ports(group_pids(server.pid)) or set()):
            time.sleep(0.05)
        result = run_module(perftest, {"mode": "client", "server": "127.0.0.1", "device": "mlx5_0", "size": "1048576",
                                       "port": fake.port, "timeout": 20, "report_gbits": False})
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 9)
            server.wait()
    assert not result.failed, result.get("msg")
    assert result["cmd"] == [str(fake.bin / "ib_write_bw"), "-d", "mlx5_0", "-s", "1048576", "-p", str(fake.port), "--", "127.0.0.1"]
    assert result["bw_average_gbps"] == pytest.approx(93.357573)
    assert "server" not in result and "sides_agree" not in result
    assert fake.alive_after() == []


def test_client_without_server_is_remote_unreachable(fake, run_module):
    fake.outputs(client="ib_write_bw_s1M_client_IB_MBsec.txt")
    result = run_module(perftest, {"mode": "client", "server": "127.0.0.1", "port": fake.port, "timeout": 10})
    assert result.failed
    assert result["msg"] == ("ib_write_bw on the default device failed: remote_unreachable - "
                             "Couldn't connect to 127.0.0.1:%d" % fake.port)
    assert result["rc"] == 1 and result["timed_out"] is False


def test_latency_tool_client(fake, run_module):
    fake.outputs(client="err_ib_send_lat_port_state_down_couldnt_set_link_layer.txt")
    fake.env(CLIENT_STAGE="early")
    result = run_module(perftest, {"tool": "ib_send_lat", "mode": "client", "server": "10.0.0.2", "size": "64",
                                   "iterations": 1000, "fail_on_error": False})
    assert result["cmd"] == [str(fake.bin / "ib_send_lat"), "-s", "64", "-n", "1000", "--", "10.0.0.2"]  # no --report_gbits
    assert result["failure"]["cause"] == "port_down"
    assert result["msg"] == "ib_send_lat on the default device failed: port_down - Port number 1 state is Down"


def test_check_mode_runs_nothing(fake, run_module):
    fake.outputs(server="ib_write_bw_s1M_server_IB_MBsec.txt", client="ib_write_bw_s1M_client_IB_MBsec.txt")
    result = run_module(perftest, {"device": "mlx5_1", "size": "64K", "port": fake.port}, check_mode=True)
    assert not result.failed
    assert result["changed"] is False and result["skipped"] is True
    assert result["cmd"] == ["ib_write_bw", "-d", "mlx5_1", "-s", "65536", "-p", str(fake.port), "--report_gbits",
                             "--", "127.0.0.1"]
    assert result["results"] == [] and result["rc"] is None
    assert result["msg"] == "check mode: ib_write_bw was not run (a test would load the link)"
    assert fake.calls() == []


@pytest.mark.parametrize("args, message", [
    ({"size": "1X"}, "size '1X' is not a message size: expected bytes (65536) or a number with K, M or G (64K, 1M)"),
    ({"tool": "ib_write_lat", "qps": 2},
     "qps is only accepted by the bandwidth tools (ib_write_bw, ib_read_bw, ib_send_bw), not by ib_write_lat"),
    ({"mode": "client"}, "mode is client but all of the following are missing: server"),
    ({"server": "10.0.0.2"}, "server is the address a client connects to; mode loopback does not take it"),
    ({"mode": "client", "server": "--run_infinitely"},  # issue 24, item 14
     "server '--run_infinitely' is not a host name or address: it starts with '-', which perftest would read as an option"),
    ({"size": "64K", "all": True}, "size and all=true exclude each other: all runs every size from 2 bytes to 8 MiB"),
    ({"timeout": 0}, "timeout must be at least 1 second, got 0"),
    ({"port": 70000}, "port must be a TCP port from 1 to 65535, got 70000"),
])
def test_bad_input_is_one_clear_sentence(fake, run_module, args, message):
    result = run_module(perftest, args)
    assert result.failed
    assert result["msg"] == message
    assert fake.calls() == []


def test_size_with_an_explicit_all_false_runs(fake, run_module):
    """A role that passes every option, all=false included, must not be refused."""
    result = run_module(perftest, {"size": "64K", "all": False}, check_mode=True)
    assert not result.failed
    assert "65536" in result["cmd"] and "-a" not in result["cmd"]


def test_tool_not_installed(tmp_path, monkeypatch, run_module):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_module(perftest, {"tool": "ib_read_lat"})
    assert result.failed
    assert result["msg"] == "ib_read_lat was not found on the node's PATH: install perftest (package perftest)"
