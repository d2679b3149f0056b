"""rdma.node.perftest as Ansible ships it to a node (AnsiballZ, local connection), check mode then a
real run, against the FAKE perftest (tests/fake_tools/perftest), which replays captured outputs: there
is no RDMA hardware here, so the tool is the only thing faked. The module's own cases are unit tests
(tests/unit/plugins/modules/test_perftest.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.rdma.node.plugins.module_utils._perftest import pid_alive
from harness import LOCALHOST, run_playbook
from testpaths import COLLECTION_ROOT, FIXTURES

FAKE = COLLECTION_ROOT / "tests/fake_tools/perftest/fake_perftest.py"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def started_pids(path):
    """Every process the fake started (the tool and its child), from its pid file."""
    found = []
    for line in (path.read_text().splitlines() if path.exists() else []):
        dummy, pid, child = line.split()
        found += [int(pid)] + ([int(child)] if child != "0" else [])
    return found


def alive_after(pids, seconds=3.0):
    """Signals are delivered asynchronously: give the processes a moment to be gone."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(pid_alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if pid_alive(pid)]


@pytest.fixture
def fake(tmp_path):
    """The fake installed under the perftest names, and the environment that puts it first on PATH."""
    subprocess.run([sys.executable, str(FAKE), "--fake-install", str(tmp_path / "bin")], check=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("FAKE_PERFTEST_")}
    env.update({
        "PATH": "%s%s%s" % (tmp_path / "bin", os.pathsep, os.environ["PATH"]),
        "FAKE_PERFTEST_PIDFILE": str(tmp_path / "pids"),
        "FAKE_PERFTEST_ARGV_LOG": str(tmp_path / "argv.log"),
        "FAKE_PERFTEST_CHILD": "1",
        "FAKE_PERFTEST_SERVER_OUTPUT": str(FIXTURES / "perftest/ib_write_bw_s1M_server_IB_MBsec.txt"),
        "FAKE_PERFTEST_CLIENT_OUTPUT": str(FIXTURES / "perftest/ib_write_bw_s1M_client_IB_MBsec.txt"),
    })
    yield env
    for pid in started_pids(tmp_path / "pids"):  # whatever a failing test left running: its own, by pid
        if pid_alive(pid):
            os.kill(pid, 9)


def test_loopback_check_mode_then_real(fake, tmp_path):
    options = {"device": "mlx5_0", "size": "1M", "report_gbits": False, "port": free_port(), "timeout": 30}
    play = [{"name": "perftest on localhost", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Loopback, check mode", "rdma.node.perftest": options, "check_mode": True},
        {"name": "Loopback", "rdma.node.perftest": options},
    ]}]
    # The fake's environment only for this run: ansible-playbook passes it on to the local module.
    run = run_playbook(play, inventory=LOCALHOST, env=dict(fake, ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
                                                           ANSIBLE_REMOTE_TMP=str(tmp_path / "remote")))
    assert run.rc == 0, run.stderr
    stats = run.stats["localhost"]
    assert (stats["ok"], stats["changed"], stats["skipped"], stats["failures"]) == (1, 0, 1, 0)
    checked = run.result("Loopback, check mode", "localhost")
    assert checked.get("skipped") is True and not checked.get("changed")
    measured = run.result("Loopback", "localhost")
    assert measured["changed"] is False and measured["failure"] is None
    assert len(measured["results"]) == 1 and measured["bw_average_gbps"] > 93.3
    assert measured["server"]["killed"] is False
    calls = [json.loads(line) for line in (tmp_path / "argv.log").read_text().splitlines()]
    assert [call["role"] for call in calls] == ["server", "client"]  # check mode started nothing
    assert alive_after(started_pids(tmp_path / "pids")) == []
