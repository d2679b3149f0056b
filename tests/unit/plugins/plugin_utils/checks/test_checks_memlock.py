"""The node_remediation checks (plugins/plugin_utils/_checks/memlock.py) on limits recorded on this machine and on the
results the role's change modules return."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.module_utils._container_limits import parse_container_labels, parse_limits
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from testpaths import FIXTURES

MEMLOCK = FIXTURES / "memlock"
SPEC = "/etc/containerd/rdma-spec.json"
CONFIG = "/etc/containerd/config.toml"
DROPIN = "/etc/systemd/system/containerd.service.d/50-rdma-node-limits.conf"
UNIT = "containerd.service"
PARAMS = {
    "unit": UNIT, "spec_path": SPEC, "memlock": "4M", "nofile": 16384, "require_cri": True, "check_mode": False,
    "spec": {}, "config": {}, "dropin": {}, "restart": {"ran": False}, "rollback": None,
}


def limits(name):
    return parse_limits((MEMLOCK / name).read_text())


def labels(name):
    return parse_container_labels((MEMLOCK / name).read_text())


SYSTEMD_4M = {"LimitMEMLOCK": "4194304", "LimitMEMLOCKSoft": "4194304", "LimitNOFILE": "16384", "LimitNOFILESoft": "16384"}
CONTAINERD_4M = dict(limits("proc_limits_container_memlock_4m_nofile_16384.txt"), unit=UNIT, pid=812, active_state="active",
                     systemd=SYSTEMD_4M, error=None)
PROBE_4M = dict(limits("ctr_run_memlock_4m.stdout"), spec=SPEC, source="rootfs", root="/srv/root", ran=True, rc=0, error=None,
                not_run=None, missing=False)


def facts(containerd=None, probe=None, containers=()):
    return {"rdma_memlock": {"containerd": containerd or CONTAINERD_4M, "socket": True, "namespaces": ["k8s.io"],
                             "containers": list(containers), "containers_error": None, "probe": probe}}


def run(gathered, **params):
    return evaluate_role("node_remediation", gathered, dict(PARAMS, **params), subject="gpu-07")


def found(result, check=None):
    return [(f["check"], f["severity"], f["subject"]) for f in result["findings"] if check is None or f["check"] == check]


def message(result, check):
    return next(f["message"] for f in result["findings"] if f["check"] == check)


def test_a_remediated_node_with_a_good_probe_has_only_the_probe_ok():
    result = run(facts(probe=PROBE_4M))
    assert found(result) == [("probe_ok", "info", SPEC)]
    assert message(result, "probe_ok") == ("A test container started by containerd with %s got Max locked memory 4194304/4194304, "
                                           "Max open files 16384/16384 (soft/hard), as the spec sets." % SPEC)
    item = result["findings"][0]
    assert (item["expected"], item["actual"]) == (4194304, ["4194304", "4194304"])
    status = result["status"]
    assert status["ok"] is True and status["changed"] == [] and status["restarted"] is False and status["rolled_back"] is None
    assert status["probe"] == {"source": "rootfs", "root": "/srv/root", "result": "ok", "memlock": {"soft": "4194304", "hard": "4194304"},
                               "nofile": {"soft": "16384", "hard": "16384"}, "error": None, "note": None}
    assert status["containerd"] == {"pid": 812, "memlock": {"soft": "4194304", "hard": "4194304"},
                                    "nofile": {"soft": "16384", "hard": "16384"}, "systemd": SYSTEMD_4M}
    assert status["pods_to_recreate"] == [] and status["check_mode"] is False


CHANGES = {
    "spec": {"changed": True, "path": SPEC, "created": True, "backup_file": None},
    "config": {"changed": True, "path": CONFIG, "runtimes_changed": ["nvidia", "runc"], "runtimes_created": ["runc"]},
    "dropin": {"changed": True, "path": DROPIN, "limits": {"LimitMEMLOCK": "4M", "LimitNOFILE": "16384"}, "overridden_by": [],
               "masked_by": None},
}


@pytest.mark.parametrize("check_mode, prefix", [(False, "Wrote "), (True, "Check mode: would write ")])
def test_what_changed(check_mode, prefix):
    result = run(facts(probe=PROBE_4M), check_mode=check_mode, restart={"ran": True}, **CHANGES)
    assert [f for f in found(result) if f[0] != "probe_ok"] == [
        ("spec_written", "info", SPEC), ("runtimes_pointed", "info", CONFIG), ("dropin_written", "info", DROPIN),
        ("containerd_restarted", "info", UNIT)]
    assert message(result, "spec_written") == prefix + "the base runtime spec %s (from ctr oci spec) with RLIMIT_MEMLOCK 4M and RLIMIT_NOFILE 16384." % SPEC
    assert message(result, "runtimes_pointed") == (prefix + "base_runtime_spec = %s for the CRI runtime(s) nvidia, runc in %s (added: runc)."
                                                   % (SPEC, CONFIG))
    assert message(result, "dropin_written") == prefix + "%s with LimitMEMLOCK=4M, LimitNOFILE=16384." % DROPIN
    assert message(result, "containerd_restarted") == ("Check mode: containerd.service would be restarted." if check_mode else
                                                       "Restarted containerd.service; it answers again (ctr version) and its CRI plugin is loaded.")
    assert result["status"]["changed"] == [SPEC, CONFIG, DROPIN]
    assert result["status"]["restarted"] is (not check_mode)
    assert result["status"]["check_mode"] is check_mode
    # In check mode no test container runs, so there is no probe finding at all.
    assert ("probe_ok" in [f[0] for f in found(result)]) is (not check_mode)


def test_changes_that_failed_or_did_not_change_are_not_reported():
    result = run(facts(probe=PROBE_4M), spec={"changed": False, "path": SPEC}, nofile=None, restart={"ran": True}, require_cri=False,
                 config={"failed": True, "changed": True, "path": CONFIG, "msg": "not TOML"}, dropin=dict(CHANGES["dropin"], changed=False))
    assert found(result) == [("containerd_restarted", "info", UNIT), ("probe_ok", "info", SPEC)]
    assert message(result, "containerd_restarted") == "Restarted containerd.service; it answers again (ctr version)."
    spec = run(facts(probe=PROBE_4M), spec=dict(CHANGES["spec"], created=False), nofile=None)
    assert message(spec, "spec_written") == "Wrote the base runtime spec %s with RLIMIT_MEMLOCK 4M." % SPEC


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_restart_by_command_names_the_command(check_mode):
    command = ["/usr/bin/python3", "/c/tools/simulated_containerd.py", "restart", "/inv/.nodes/n1"]
    result = run(facts(probe=PROBE_4M), check_mode=check_mode, restart={"ran": True, "command": command}, **CHANGES)
    how = "with `/usr/bin/python3 /c/tools/simulated_containerd.py restart /inv/.nodes/n1`"
    assert message(result, "containerd_restarted") == (
        "Check mode: containerd.service would be restarted %s." % how if check_mode else
        "Restarted containerd.service %s; it answers again (ctr version) and its CRI plugin is loaded." % how)


def test_drop_ins_that_win_over_ours():
    dropin = dict(CHANGES["dropin"], changed=False, masked_by="/etc/systemd/system.control/containerd.service.d/50-rdma-node-limits.conf",
                  overridden_by=[{"path": "/run/systemd/system/containerd.service.d/60-vendor.conf", "line": 2,
                                  "directive": "LimitMEMLOCK", "value": "64M"}])
    result = run(facts(probe=PROBE_4M), dropin=dropin)
    assert found(result, "limit_overridden") == [("limit_overridden", "warning", "/run/systemd/system/containerd.service.d/60-vendor.conf")]
    assert message(result, "limit_overridden") == (
        "/run/systemd/system/containerd.service.d/60-vendor.conf line 2 sets LimitMEMLOCK=64M and applies after %s, so containerd gets "
        "that value instead." % DROPIN)
    overridden = next(f for f in result["findings"] if f["check"] == "limit_overridden")
    assert (overridden["expected"], overridden["actual"]) == ("4M", "64M")
    assert found(result, "dropin_masked") == [("dropin_masked", "warning", dropin["masked_by"])]
    assert message(result, "dropin_masked") == (
        "%s has the same name as %s and comes first on systemd's search path, so systemd never reads ours." % (dropin["masked_by"], DROPIN))


def test_containerd_not_running():
    stopped = dict(CONTAINERD_4M, pid=0, memlock=None, nofile=None, active_state="failed")
    result = run(facts(containerd=stopped))
    assert found(result, "containerd_not_running") == [("containerd_not_running", "critical", UNIT)]
    assert message(result, "containerd_not_running") == "containerd.service is not running (MainPID 0), so no pod can start on this node."
    assert result["status"]["ok"] is False
    unknown = dict(stopped, error="systemctl show containerd.service failed with rc 1: Failed to connect to bus: Host is down")
    assert message(run(facts(containerd=unknown)), "containerd_not_running") == (
        "containerd.service is not running (MainPID 0) (systemctl show containerd.service failed with rc 1: Failed to connect to bus: "
        "Host is down), so no pod can start on this node.")


def test_containerd_memlock_clamped_by_systemd():
    """infinity in the drop-in, 8 MiB in the process: what systemd does without CAP_SYS_RESOURCE on this machine."""
    clamped = dict(CONTAINERD_4M, memlock=limits("proc_limits_debian12_process_memlock_8m_nofile_20000.txt")["memlock"],
                   systemd={"LimitMEMLOCK": "infinity", "LimitMEMLOCKSoft": "infinity"})
    result = run(facts(containerd=clamped))
    assert found(result, "containerd_memlock") == [("containerd_memlock", "warning", UNIT)]
    assert message(result, "containerd_memlock") == (
        "containerd (pid 812) runs with Max locked memory 8388608 (soft) / 8388608 (hard), not the LimitMEMLOCK=infinity systemd has "
        "for it: systemd lowers a limit to what it may grant itself (it lacks CAP_SYS_RESOURCE), or containerd has not been restarted "
        "since the drop-in changed.")
    item = next(f for f in result["findings"] if f["check"] == "containerd_memlock")
    assert (item["expected"], item["actual"]) == ("infinity/infinity", "8388608/8388608")
    # The same values agree when written differently (/proc's unlimited, systemd's infinity).
    init = dict(CONTAINERD_4M, memlock=limits("proc_limits_debian12_init_memlock_unlimited.txt")["memlock"],
                systemd={"LimitMEMLOCK": "infinity", "LimitMEMLOCKSoft": "infinity"})
    assert found(run(facts(containerd=init)), "containerd_memlock") == []
    # Without a soft value systemd's hard one counts for both; no systemd value, nothing to compare.
    assert found(run(facts(containerd=dict(clamped, systemd={"LimitMEMLOCK": "8388608"}))), "containerd_memlock") == []
    assert found(run(facts(containerd=dict(clamped, systemd={}))), "containerd_memlock") == []
    # Check mode with a pending drop-in change: systemd does not have it yet.
    assert found(run(facts(containerd=clamped), check_mode=True, dropin=CHANGES["dropin"]), "containerd_memlock") == []
    assert found(run(facts(containerd=clamped), check_mode=True), "containerd_memlock") != []


def test_probe_mismatch():
    old = dict(PROBE_4M, **limits("proc_limits_container_memlock_64k_nofile_1024.txt"))
    result = run(facts(probe=old))
    assert found(result) == [("probe_mismatch", "critical", SPEC)]
    assert message(result, "probe_mismatch") == (
        "A test container started by containerd with %s got Max locked memory 65536/65536, Max open files 1024/1024 (soft/hard), not the "
        "spec's RLIMIT_MEMLOCK 4M and RLIMIT_NOFILE 16384." % SPEC)
    assert result["status"]["probe"]["result"] == "mismatch" and result["status"]["ok"] is False
    # Only the open-files limit differs: still a mismatch; without a wanted nofile it is fine.
    nofile_only = dict(PROBE_4M, nofile={"soft": "1024", "hard": "1024"})
    assert found(run(facts(probe=nofile_only))) == [("probe_mismatch", "critical", SPEC)]
    assert found(run(facts(probe=nofile_only), nofile=None)) == [("probe_ok", "info", SPEC)]


def test_probe_failed_on_rlimit_and_otherwise():
    stderr = (MEMLOCK / "ctr_run_memlock_unlimited_without_cap_sys_resource.stderr").read_text().strip()
    failed = dict(PROBE_4M, rc=1, memlock=None, nofile=None, error=stderr)
    result = run(facts(probe=failed), memlock="unlimited")
    assert found(result) == [("probe_failed", "critical", SPEC)]
    assert message(result, "probe_failed") == (
        "A test container could not start with %s: %s. The runtime cannot set a limit above containerd's own hard limit without "
        "CAP_SYS_RESOURCE, so every new container from this spec fails the same way." % (SPEC, stderr))
    item = result["findings"][0]
    assert (item["expected"], item["actual"]) == (18446744073709551615, None)
    assert result["status"]["probe"]["error"] == stderr
    silent = run(facts(probe=dict(failed, rc=0, error=None)))
    assert message(silent, "probe_failed") == ("A test container could not start with %s: rc 0, no message. New containers from this "
                                               "spec may fail the same way." % SPEC)


def test_probe_error_and_not_run():
    error = dict(PROBE_4M, ran=False, rc=None, memlock=None, nofile=None, source="image", root="busybox:1.36",
                 error="ctr images mount busybox:1.36 failed: ctr: mount: permission denied")
    result = run(facts(probe=error))
    assert found(result) == [("probe_error", "warning", SPEC)]
    assert message(result, "probe_error") == (
        "No test container was started: ctr images mount busybox:1.36 failed: ctr: mount: permission denied. The limits a new container "
        "gets from %s were not checked on this node." % SPEC)

    nothing = dict(PROBE_4M, ran=False, rc=None, memlock=None, nofile=None, source="none", root=None,
                   not_run="no image or root file system is configured")
    result = run(facts(probe=nothing))
    assert found(result) == [("probe_not_run", "info", SPEC)]
    assert message(result, "probe_not_run") == (
        "No test container was started (no image or root file system is configured), so the limits a new container gets from %s were "
        "not checked on this node." % SPEC)
    assert result["status"]["probe"]["note"] == "no image or root file system is configured"
    missing = dict(nothing, not_run="the directory /srv/root does not exist", missing=True)
    assert found(run(facts(probe=missing))) == [("probe_not_run", "warning", SPEC)]
    # Check mode starts no container and says nothing about it; no probe asked for, no finding either.
    check = run(facts(probe=dict(nothing, not_run="check mode starts no container")), check_mode=True)
    assert found(check) == [] and check["status"]["probe"]["result"] == "not_run"
    assert found(run(facts(probe=None))) == []


def container(entry_id, pid, limits_name, labels_name):
    return {"namespace": "k8s.io", "id": entry_id, "pid": pid, "memlock": limits(limits_name)["memlock"],
            "labels": labels(labels_name) if labels_name else None}


def test_pods_to_recreate():
    running = [
        container("sandbox0", 30855, "proc_limits_container_memlock_64k_nofile_1024.txt", "ctr_containers_info_cri_labels_sandbox.json"),
        container("bench0", 30920, "proc_limits_container_memlock_64k_nofile_1024.txt", "ctr_containers_info_cri_labels_container.json"),
        container("bench1", 30990, "proc_limits_container_memlock_4m_nofile_16384.txt", None),
        container("plain0", 31053, "proc_limits_container_memlock_64k_nofile_1024.txt", "ctr_containers_info_no_labels.json"),
        dict(container("gone", 31111, "proc_limits_container_memlock_64k_nofile_1024.txt", None)),  # labels could not be read
    ]
    result = run(facts(probe=PROBE_4M, containers=running))
    assert found(result, "pod_restart_required") == [
        ("pod_restart_required", "warning", "rdma-jobs/ib-bench-0"), ("pod_restart_required", "warning", "k8s.io/plain0")]
    assert message(result, "pod_restart_required") == (
        "Pod rdma-jobs/ib-bench-0 (container bench, id bench0) runs with Max locked memory 65536/65536 (soft/hard), not the spec's 4M: "
        "it started before the change. Recreate it (kubectl delete pod -n rdma-jobs ib-bench-0) so it starts from the new spec; this "
        "role never deletes pods.")
    plain = [f for f in result["findings"] if f["subject"] == "k8s.io/plain0"][0]
    assert plain["message"] == (
        "Container plain0 in containerd namespace k8s.io (no pod labels) runs with Max locked memory 65536/65536 (soft/hard), not the "
        "spec's 4M: it started before the change. Recreate it so it starts from the new spec; this role never deletes pods.")
    assert (plain["expected"], plain["actual"]) == (4194304, "65536/65536")
    assert result["status"]["pods_to_recreate"] == [
        {"pod": "ib-bench-0", "namespace": "rdma-jobs", "container": "bench", "container_id": "bench0", "containerd_namespace": "k8s.io",
         "pid": 30920, "memlock": {"soft": "65536", "hard": "65536"}},
        {"pod": None, "namespace": None, "container": None, "container_id": "plain0", "containerd_namespace": "k8s.io",
         "pid": 31053, "memlock": {"soft": "65536", "hard": "65536"}},
    ]


def rollback(cause, **values):
    description = {
        "cause": cause, "host": "gpu-07", "restarted": cause == "containerd_not_back", "containerd_running": True, "not_back_reason": "",
        "reason": "the restart failed: Unable to restart service containerd.service: Job for containerd.service failed.",
        "containerd_said": "containerd: load required plugin io.containerd.grpc.v1.cri: failed to create CRI service",
        "results": [
            {"item": {"path": SPEC, "backup_file": SPEC + ".1751.2026-11-22@06:15:49~"}, "failed": False, "msg": None},
            {"item": {"path": CONFIG, "backup_file": CONFIG + ".1751.2026-11-22@06:15:49~"}, "failed": False, "msg": None},
            {"item": {"path": DROPIN, "backup_file": None}, "failed": False, "msg": None},
        ],
    }
    description.update(values)
    return description


def test_rolled_back_when_containerd_did_not_come_back():
    result = run(facts(), rollback=rollback("containerd_not_back"), restart={"ran": True}, **CHANGES)
    assert [f for f in found(result) if f[1] != "info"] == [("rolled_back", "critical", UNIT)]
    # The files are back as they were: only the rollback speaks of them.
    assert found(result) == [("rolled_back", "critical", UNIT)]
    assert message(result, "rolled_back") == (
        "containerd did not come back after the memlock change on gpu-07: the restart failed: Unable to restart service "
        "containerd.service: Job for containerd.service failed containerd said: containerd: load required plugin "
        "io.containerd.grpc.v1.cri: failed to create CRI service. Rolled back: restored %s from %s.1751.2026-11-22@06:15:49~; restored "
        "%s from %s.1751.2026-11-22@06:15:49~; removed %s (this run created it). containerd runs again with the previous "
        "configuration. The rollout stops here." % (SPEC, SPEC, CONFIG, CONFIG, DROPIN))
    item = next(f for f in result["findings"] if f["check"] == "rolled_back")
    assert (item["expected"], item["actual"]) == ("running with the new limits", "containerd_not_back")
    status = result["status"]
    assert status["ok"] is False and status["restarted"] is True
    assert status["rolled_back"]["restored"] == [
        "restored %s from %s.1751.2026-11-22@06:15:49~" % (SPEC, SPEC), "restored %s from %s.1751.2026-11-22@06:15:49~" % (CONFIG, CONFIG),
        "removed %s (this run created it)" % DROPIN]
    assert status["rolled_back"]["containerd_running"] is True and status["rolled_back"]["cause"] == "containerd_not_back"


def test_rolled_back_still_down_and_a_stopped_change():
    down = run(facts(), rollback=rollback("containerd_not_back", containerd_running=False, containerd_said="",
                                          not_back_reason="its socket /run/containerd/containerd.sock did not appear within 90s"))
    assert message(down, "rolled_back").endswith(
        "containerd is still not back after the rollback (its socket /run/containerd/containerd.sock did not appear within 90s); the node "
        "needs attention. The rollout stops here.")
    assert " containerd said:" not in message(down, "rolled_back")
    stopped = run(facts(), rollback=rollback(
        "change_failed", reason="Point containerd's CRI runtimes at the spec failed: /etc/containerd/config.toml is not valid TOML.",
        containerd_said="", results=[{"item": {"path": SPEC, "backup_file": None}, "failed": False, "msg": None}]))
    assert message(stopped, "rolled_back") == (
        "The memlock change stopped on gpu-07: Point containerd's CRI runtimes at the spec failed: /etc/containerd/config.toml is not "
        "valid TOML. Rolled back: removed %s (this run created it). containerd was not restarted. The rollout stops here." % SPEC)
    assert stopped["status"]["rolled_back"]["containerd_running"] is None
    failed_restore = run(facts(), rollback=rollback("change_failed", results=[
        {"item": {"path": CONFIG, "backup_file": CONFIG + ".1~"}, "failed": True, "msg": "Source /etc/containerd/config.toml.1~ not found"}]))
    assert "Rolled back: could not restore %s: Source /etc/containerd/config.toml.1~ not found." % CONFIG in message(failed_restore, "rolled_back")
    nothing = run(facts(), rollback=rollback("change_failed", results=[]))
    assert "Rolled back: nothing had been written." in message(nothing, "rolled_back")


def test_bad_parameters_name_the_check():
    with pytest.raises(CheckError, match=r"node_remediation.spec_written: spec: expected the registered result"):
        run(facts(), spec="changed")
    with pytest.raises(CheckError, match=r"node_remediation_memlock must be an integer"):
        run(facts(probe=PROBE_4M), memlock="lots")
    with pytest.raises(CheckError, match=r"rollback: expected the role's description"):
        run(facts(), rollback="yes")


def test_without_the_facts_only_the_change_checks_run():
    result = evaluate_role("node_remediation", {}, dict(PARAMS, rollback=rollback("change_failed")), subject="gpu-07")
    assert found(result) == [("rolled_back", "critical", UNIT)]
    assert {s["check"] for s in result["status"]["skipped_checks"]} >= {"containerd_not_running", "probe_ok", "pod_restart_required"}


def test_site_reports_a_failed_role_and_a_stopped_rollout():
    failure = {"host": "gpu-07", "task": "Stop when containerd is not installed", "msg": "containerd is not installed on gpu-07."}
    failed = evaluate_role("node_remediation", {}, {"failure": failure}, subject="gpu-07", only=["remediation_failed"])
    assert found(failed) == [("remediation_failed", "critical", "gpu-07")]
    assert message(failed, "remediation_failed") == ("The memlock remediation failed on gpu-07 in the task 'Stop when containerd is not "
                                                     "installed': containerd is not installed on gpu-07. The rollout stops here.")
    stopped = evaluate_role("node_remediation", {}, {"stopped_by": ["gpu-07"]}, subject="gpu-08", only=["rollout_stopped"])
    assert found(stopped) == [("rollout_stopped", "warning", "node_remediation")]
    assert message(stopped, "rollout_stopped") == ("The memlock remediation did not run on this node: the rollout stopped after it "
                                                   "failed on gpu-07.")
    assert stopped["status"]["ok"] is True
