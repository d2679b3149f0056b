"""The paths of modules and parsers that call a real tool of the node, run with that tool.

The unit tests need only Debian's essential packages; what needs more lives here, each with the
package that brings the tool: ``ctr`` and ``systemctl`` (containerd, systemd) for container_limits,
``journalctl`` (systemd) for ib_facts' kernel log, ``column -t`` (bsdextrautils) over pasted outputs,
``ps`` (procps) for bandwidth_check's job processes. scripts/setup.sh installs them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._ib_text import PARSERS
from ansible_collections.rdma.node.plugins.modules import container_limits, ib_facts
from ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan import JOB_ENV, job_processes
from testpaths import FIXTURES

PASTED = sorted(p for p in (FIXTURES / "cmd").glob("*/*.txt") if p.parent.name in PARSERS)


# ------------------------------------------------------------------------- container_limits: ctr, systemctl


def test_read_only_run_where_neither_systemd_nor_containerd_runs(run_module, tmp_path):
    result = run_module(container_limits, {"address": str(tmp_path / "containerd.sock")})
    assert not result.failed and result["changed"] is False
    facts = result["ansible_facts"]["rdma_memlock"]
    containerd = facts["containerd"]
    assert containerd["unit"] == "containerd.service" and containerd["pid"] == 0 and containerd["memlock"] is None
    # systemctl is installed, systemd is not PID 1 on this machine.
    assert containerd["error"].startswith("systemctl show containerd.service failed with rc 1: ")
    assert facts["socket"] is False and facts["containers"] == [] and facts["probe"] is None
    assert facts["containers_error"] == "containerd's socket %s does not exist" % (tmp_path / "containerd.sock")


def test_check_mode_starts_no_test_container(run_module, tmp_path):
    result = run_module(container_limits, {"address": str(tmp_path / "c.sock"), "namespaces": [], "probe_spec": str(tmp_path / "spec.json"),
                                           "probe_rootfs": str(tmp_path)}, check_mode=True)
    probe = result["ansible_facts"]["rdma_memlock"]["probe"]
    assert probe["not_run"] == "check mode starts no container" and probe["ran"] is False and probe["spec"] == str(tmp_path / "spec.json")
    assert result["ansible_facts"]["rdma_memlock"]["containers_error"] is None


# ------------------------------------------------------------------------------ ib_facts: journalctl


def test_ib_facts_reads_the_journal_when_no_file_is_given(run_module, tmp_path):
    """journalctl of this machine (it may hold no journal: then no events and no error)."""
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.port(tree.hca("mlx5_bond_0", "0000:3b:00.0"), 1, link_layer="Ethernet", ndevs=["bond1"])
    tree.netdev("bond1")
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["kernel_log"], "kernel_log_window_hours": 2})
    assert not result.failed, result
    log = result["ansible_facts"]["rdma"]["kernel_log"]
    assert (log["source"], log["window_hours"], log["window_applied"]) == ("journalctl", 2, True)
    assert "error" not in log


# ---------------------------------------------------------------------------- pasted outputs: column -t


@pytest.mark.parametrize("path", PASTED, ids=lambda path: "%s/%s" % (path.parent.name, path.name))
def test_column_t_alignment_by_the_real_column(path):
    parser = PARSERS[path.parent.name]
    text = path.read_text(encoding="utf-8")
    clean = parser(text)
    aligned = subprocess.run(["column", "-t"], input=text, capture_output=True, text=True, check=True).stdout
    result = parser(aligned)
    assert result["ports"] == clean["ports"]
    assert len(result["notes"]) == len(clean["notes"])


# ------------------------------------------------------------------------ bandwidth_check's jobs: ps


def test_job_processes_from_the_real_ps():
    """A deadline process with the job's variable and its child, found by the value, not by a name."""
    job = "server-%s-1-18515" % uuid.uuid4().hex[:12]
    env = dict(os.environ, **{JOB_ENV: job})
    proc = subprocess.Popen(["timeout", "60", "sleep", "60"], env=env)  # pylint: disable=consider-using-with
    other = subprocess.Popen(["timeout", "60", "sleep", "60"], env=dict(env, **{JOB_ENV: job + "0"}))  # pylint: disable=consider-using-with
    try:
        found = []
        for dummy in range(50):
            listing = subprocess.run(["ps", "e", "-e", "-ww", "-o", "pid=,pgid=,args="], capture_output=True, text=True,
                                     check=True).stdout
            found = job_processes(listing, job)
            if len(found) == 2:
                break
        assert sorted((p["command"], p["deadline"], p["pgid"]) for p in found) == [
            ("sleep", False, proc.pid), ("timeout", True, proc.pid)]  # timeout(1) leads its own group
        assert [p["pid"] for p in found if p["deadline"]] == [proc.pid]
    finally:
        for started in (proc, other):
            started.send_signal(signal.SIGTERM)
            started.wait(10)
