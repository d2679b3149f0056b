"""playbooks/site.yml when the memlock remediation fails on a node: the report is still written, with every host.

The demo's simulated nodes run on this machine (local connection), so the remediation is pointed at a
temporary directory and made to fail before it could reach anything of the machine's own:

* v100-node-01 (the first batch): its config.toml is not TOML. The role writes the spec (from the real
  ``ctr oci spec``) into the temporary directory, the config change fails, the spec is removed again,
  nothing is restarted, and the node is reported with the ``rolled_back`` finding.
* a100-node-02 (the next batch): the rollout has stopped, so the role does not run there; the node is
  reported with ``rollout_stopped``. Its spec path is relative, which would fail the role's first task
  had it run, so even a broken stop could not write anything.

The machine's /etc/containerd and systemd are never touched, and no service is restarted.
"""

from __future__ import annotations

import json

import pytest

from playbook import run_playbook
from testpaths import demo_inventory_copy

BROKEN_TOML = '[plugins]\nversion = 2\n[plugins]\nx = 1\n'


@pytest.fixture(scope="module")
def failed_rollout(tmp_path_factory):
    base = tmp_path_factory.mktemp("site-failure")
    inventory = base / "inventory"
    demo_inventory_copy(inventory)
    containerd = base / "etc-containerd"
    containerd.mkdir()
    (containerd / "config.toml").write_text(BROKEN_TOML)
    (inventory / "host_vars").mkdir()
    (inventory / "host_vars/v100-node-01.yml").write_text(json.dumps({
        "node_remediation_spec_path": str(containerd / "rdma-spec.json"),
        "node_remediation_containerd_config": str(containerd / "config.toml"),
    }))
    (inventory / "host_vars/a100-node-02.yml").write_text(json.dumps({"node_remediation_spec_path": "relative/rdma-spec.json"}))
    # The demo's first two nodes of each group: their planted faults are the report's besides the rollout's
    # (the nodes 03 and 04 carry the physical layer's faults).
    run = run_playbook("rdma.node.site", "-i", str(inventory), "--limit", "v100-node-01,v100-node-02,a100-node-01,a100-node-02",
                       "-e", "fleet_report_dir=%s/report" % base, "-e", "rdma_remediate=true",
                       "-e", "node_remediation_hosts=v100-node-01,a100-node-02", "-e", "node_remediation_serial=1")
    report_file = base / "report/fleet-report.json"
    assert report_file.exists(), run.stderr[-3000:]
    return {"run": run, "report": json.loads(report_file.read_text()), "containerd": containerd}


def findings(report):
    return {host["name"]: sorted((f["role"], f["check"], f["severity"]) for f in host["findings"]) for host in report["hosts"]}


def test_the_report_has_every_host_with_its_findings(failed_rollout):
    report = failed_rollout["report"]
    # Besides the remediation's findings, the demo's planted faults (node_health, fleet_consistency).
    gpudirect_ready = ("node_health", "gpudirect", "info")
    assert findings(report) == {
        "v100-node-01": [gpudirect_ready, ("node_health", "pcie_degraded", "critical"),
                         ("node_remediation", "containerd_not_running", "critical"), ("node_remediation", "rolled_back", "critical")],
        "v100-node-02": [("ib_inventory", "port_down", "critical"), gpudirect_ready, ("node_health", "link_flapping", "critical")],
        "a100-node-01": [("node_health", "counter_rising", "critical"), ("node_health", "gpudirect", "critical")],
        "a100-node-02": [("driver_verify", "dkms_error", "warning"), ("driver_verify", "dkms_missing_next_boot", "critical"),
                         ("fleet_consistency", "firmware_drift", "warning"), gpudirect_ready,
                         ("node_remediation", "rollout_stopped", "warning")],
    }
    assert report["totals"]["hosts"] == 4 and report["totals"]["critical"] == 4
    checks = {host["name"]: host["checks"] for host in report["hosts"]}
    assert checks["v100-node-01"] == ["driver_verify", "ib_inventory", "node_health", "node_remediation"]
    assert checks["v100-node-02"] == ["driver_verify", "ib_inventory", "node_health"]  # not in the rollout


def test_the_failed_host_is_reported_with_its_failure(failed_rollout):
    host = next(h for h in failed_rollout["report"]["hosts"] if h["name"] == "v100-node-01")
    rolled_back = next(f for f in host["findings"] if f["check"] == "rolled_back")
    spec = failed_rollout["containerd"] / "rdma-spec.json"
    assert rolled_back["message"].startswith(
        "The memlock change stopped on v100-node-01: Point containerd's CRI runtimes at the spec failed: %s is not valid TOML"
        % (failed_rollout["containerd"] / "config.toml"))
    assert rolled_back["message"].endswith(
        "Rolled back: removed %s (this run created it). containerd was not restarted. The rollout stops here." % spec)
    stopped = next(h for h in failed_rollout["report"]["hosts"] if h["name"] == "a100-node-02")
    assert [f["message"] for f in stopped["findings"] if f["check"] == "rollout_stopped"] == [
        "The memlock remediation did not run on this node: the rollout stopped after it failed on v100-node-01."]


def test_nothing_is_left_behind_and_the_run_fails_the_critical_hosts(failed_rollout):
    assert sorted(p.name for p in failed_rollout["containerd"].iterdir()) == ["config.toml"]
    assert (failed_rollout["containerd"] / "config.toml").read_text() == BROKEN_TOML
    run = failed_rollout["run"]
    assert run.rc == 2
    assert run.failed_hosts == ["a100-node-01", "a100-node-02", "v100-node-01", "v100-node-02"]
    # The role ran on the first batch only; the stopped host never reached its first task.
    role_hosts = run.task_results("Find out whether this run is in check mode")
    assert sorted(role_hosts) == ["v100-node-01"]
    stats = run.data["global_custom_stats"]["rdma_node_remediation"]
    assert sorted(stats) == ["a100-node-02", "v100-node-01"]
    assert stats["v100-node-01"]["status"]["rolled_back"]["restored"] == [
        "removed %s (this run created it)" % (failed_rollout["containerd"] / "rdma-spec.json")]
