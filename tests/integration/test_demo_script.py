"""scripts/demo.sh as a new user runs it (issue 23, items 3 and 4).

Its output is a summary a person reads: no Ansible error blocks for the planted faults (they are in
Ansible's log, where the hosts still fail), each finding marked planted or not, and a verdict: exit 0
when every failure is planted, non-zero on a real one. With -e rdma_remediate=true it either runs
(containerd and runc at hand) or refuses before running anything, with one sentence: the run is the
README's demo block (test_readme_commands.py), the refusal is here.

The demo writes its report where RDMA_NODE_REPORT_DIR says (here a temporary directory) and builds its
node roots in the checkout's inventories/demo, as it does for a user; the remediation's containerds
are stopped by their node roots afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testpaths import COLLECTION_ROOT

DEMO = str(COLLECTION_ROOT / "scripts/demo.sh")


def demo(tmp_path, *args, path=None):
    env = dict(os.environ, RDMA_NODE_REPORT_DIR=str(tmp_path / "report"))
    if path is not None:
        env["PATH"] = path
    return subprocess.run([DEMO, *args], capture_output=True, text=True, env=env, timeout=900, check=False)


def test_the_demo_prints_a_summary_and_calls_its_planted_faults_intended(tmp_path):
    run = demo(tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "[ERROR]" not in run.stdout and "Task failed" not in run.stdout and "Origin:" not in run.stdout
    assert run.stdout.rstrip().endswith(
        # Seven of the eight demo hosts have a critical planted fault (a100-node-04's are warnings).
        "Every failure is one of the demo's planted faults: 7 of 8 hosts failed their checks as the demo intends "
        "(ansible-playbook exit code 2).")
    assert "  - critical node_health/pcie_degraded (planted): The PCIe link of mlx5_0, mlx5_1 (0000:5e:00)" in run.stdout
    assert "NOT PLANTED" not in run.stdout
    # The groups' saved NCCL logs, judged in the report's cluster section, are shown under their group.
    assert ("What the groups' jobs show (the report's cluster section; no host fails for these):\nib-v100\n"
            "  - critical pod_proof/nccl_socket_fallback (planted): NCCL fell back to TCP sockets") in run.stdout
    # The hosts still fail, in Ansible's own output: the demo only reads it for the person.
    log = (tmp_path / "report/ansible-playbook.log").read_text()
    assert log.count("fatal: [") == 7 and "Fail the host for its critical findings" in log


def test_a_finding_that_is_not_planted_is_a_real_failure(tmp_path):
    run = demo(tmp_path, "-e", "driver_verify_ofed_version=1.0", "--limit", "v100-node-01")
    assert run.returncode == 2
    assert "A REAL FAILURE, not one of the demo's planted faults:" in run.stdout
    assert ("  - v100-node-01: critical finding driver_verify/ofed_version is not a planted fault: The node runs "
            "MLNX_OFED_LINUX-23.10-1.1.9.0, not the expected OFED release 1.0.") in run.stdout
    assert "as the demo intends" not in run.stdout


def test_a_run_that_ends_without_a_report_is_a_real_failure(tmp_path):
    run = demo(tmp_path, "--tags", "no-such-tag-so-nothing-runs", "-e", "fleet_report_formats=[json]")
    report = json.loads((tmp_path / "report/fleet-report.json").read_text()) if (tmp_path / "report/fleet-report.json").exists() else None
    if report is None:
        assert run.returncode != 0 and "the run wrote no fleet report" in run.stdout
    else:  # the report play runs whatever the tags: then no host failed and nothing is planted-only
        assert run.returncode == 0 and "No host failed" in run.stdout


def without_containerd(tmp_path):
    """A PATH with every command of /usr/bin and /bin except containerd, runc and ctr."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        for name in os.listdir(directory):
            if name in ("containerd", "runc", "ctr") or name.startswith("containerd-") or os.path.lexists(bin_dir / name):
                continue
            (bin_dir / name).symlink_to(os.path.join(directory, name))
    return "%s:%s" % (Path(sys.executable).parent, bin_dir)


def test_the_remediation_refuses_first_without_containerd_and_runc(tmp_path):
    run = demo(tmp_path, "-e", "rdma_remediate=true", path=without_containerd(tmp_path))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == ("demo: the remediation (-e rdma_remediate=true) restarts each simulated node's own containerd, and this "
                          "machine lacks containerd and runc: install containerd and runc (apt-get install containerd runc), or run "
                          "the demo as root on Debian so that it installs them; nothing was run.\n")
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("spelling", [["-e", "rdma_remediate=true"], ["--extra-vars", '{"rdma_remediate": true}'], ["-erdma_remediate=yes"]])
def test_every_spelling_of_the_remediation_is_recognised(tmp_path, spelling):
    run = demo(tmp_path, *spelling, path=without_containerd(tmp_path))
    assert run.returncode == 2 and "nothing was run" in run.stderr
