"""The bandwidth_check checks: a host's perftest runs judged against the expected rates, as findings.

Facts come from the demo hosts' sysfs trees (built by tools/sysfs_tree.py and read by the real
sysfs reader), GID tables from the real grep over those trees, and perftest results from the real
captured outputs in tests/fixtures/perftest parsed by the perftest module's own parser. Every check
runs through the registry, as rdma.node.evaluate runs it.
"""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan import build_plan, select_ports
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, checks
from ansible_collections.rdma.node.plugins.plugin_utils._checks.bandwidth import evaluate
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import failure_causes
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from bandwidth_demo import demo_hosts, demo_plan, perftest_result


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_hosts(tmp_path_factory.mktemp("demo"))


def loopback_results(plan, host, outputs):
    return [dict(perftest_result(outputs[entry["name"]]), item=entry) for entry in plan["loopback"][host]]


V100_94_7 = "seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt"
A100_183_6 = "seed_ib_write_bw_loopback_report_gbits_mlx5_1_a100.txt"
MEMLOCK = "err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt"
# perftest's own warning in the write-up's V100 capture, as bandwidth_below_expected quotes it.
CPU_WARNING = ('perftest warned "Conflicting CPU frequency values detected: 1000.000000 != 3013.932000. CPU Frequency is not max": '
               "a CPU below its maximum frequency lowers the figure; set the governor to performance (-F only hides the warning).")


@pytest.mark.parametrize("efficiency, verdict", [(0.9, "pass"), (0.947, "pass"), (0.96, "below_expected")])
def test_threshold_of_a_100_gbps_port(demo, efficiency, verdict):
    plan, infos = demo_plan(demo, efficiency=efficiency)
    outputs = {"mlx5_0/1": V100_94_7, "mlx5_1/1": V100_94_7}
    judged = evaluate(plan, "v100-node-01", loopback_results(plan, "v100-node-01", outputs), [], selection=infos["v100-node-01"])
    assert [(t["port"], t["measured_gbps"], t["verdict"]) for t in judged["status"]["loopback"]] == [
        ("mlx5_0/1", 94.71, verdict), ("mlx5_1/1", 94.71, verdict)]
    if verdict == "pass":
        assert [f["check"] for f in judged["findings"]] == ["pair_not_run"]  # the pair test's records are missing
    else:
        below = judged["findings"][0]
        assert below == {
            "role": "bandwidth_check", "check": "bandwidth_below_expected", "severity": "critical", "subject": "mlx5_0/1",
            # The write-up's capture carries perftest's own warning that the CPU ran below its maximum frequency.
            "message": "ib_write_bw loopback on mlx5_0/1 reached 94.71 Gb/s with host memory, below the expected 96.0 Gb/s "
                       "(0.96 x the 100 Gb/s link rate). " + CPU_WARNING,
            "expected": 96.0, "actual": 94.71,
        }


def test_a100_hdr_port_passes_at_0_9(demo):
    plan, infos = demo_plan(demo)
    judged = evaluate(plan, "a100-node-01", loopback_results(plan, "a100-node-01", {"mlx5_1/1": A100_183_6, "mlx5_bond_0/1": V100_94_7}),
                      [], check_mode=True, selection=infos["a100-node-01"])
    assert [(t["port"], t["expected_gbps"], t["measured_gbps"], t["verdict"]) for t in judged["status"]["loopback"]] == [
        ("mlx5_1/1", 180.0, 183.61, "pass"), ("mlx5_bond_0/1", 9.0, 94.71, "pass")]


def test_memlock_finding_points_to_node_remediation(demo):
    plan, infos = demo_plan(demo)
    judged = evaluate(plan, "a100-node-02", loopback_results(plan, "a100-node-02", {"mlx5_1/1": A100_183_6, "mlx5_bond_0/1": MEMLOCK}),
                      [], check_mode=True, selection=infos["a100-node-02"])
    (memlock,) = judged["findings"]
    assert (memlock["check"], memlock["severity"], memlock["subject"], memlock["actual"]) == (
        "perftest_failed_memlock", "critical", "mlx5_bond_0/1", "Couldn't allocate MR")
    assert memlock["message"].startswith("ib_write_bw loopback on mlx5_bond_0/1 failed: memlock (Couldn't allocate MR). ")
    assert "Apply rdma.node.node_remediation" in memlock["message"]
    bond = judged["status"]["loopback"][1]
    assert (bond["verdict"], bond["cause"]) == ("failed", "memlock")
    assert "rdma.node.node_remediation" in bond["hint"]
    assert not judged["status"]["ok"]


def test_module_error_is_a_finding(demo):
    plan, infos = demo_plan(demo)
    entry = plan["loopback"]["v100-node-02"][0]
    error = {"item": entry, "cmd": ["ib_write_bw"], "rc": None, "results": [], "failure": None, "bw_average_gbps": None,
             "msg": "ib_write_bw was not found on the node's PATH: install perftest (package perftest)"}
    judged = evaluate(plan, "v100-node-02", [error], [], check_mode=True, selection=infos["v100-node-02"])
    assert [(f["check"], f["message"]) for f in judged["findings"]] == [
        ("perftest_error", "ib_write_bw loopback on mlx5_0/1 failed: error (ib_write_bw was not found on the node's PATH: "
                           "install perftest (package perftest))")]


def test_check_mode_reports_the_plan_without_findings(demo):
    plan, infos = demo_plan(demo)
    skipped = [{"item": entry, "skipped": True, "cmd": ["ib_write_bw", "-d", entry["device"]], "results": []}
               for entry in plan["loopback"]["v100-node-01"]]
    judged = evaluate(plan, "v100-node-01", skipped, [], check_mode=True, selection=infos["v100-node-01"])
    assert judged["findings"] == []
    status = judged["status"]
    assert (status["ok"], status["check_mode"], status["group"]) == (True, True, "ib-v100")
    assert [(t["port"], t["expected_gbps"], t["verdict"], t["cmd"]) for t in status["loopback"]] == [
        ("mlx5_0/1", 90.0, "not_run", ["ib_write_bw", "-d", "mlx5_0"]),
        ("mlx5_1/1", 90.0, "not_run", ["ib_write_bw", "-d", "mlx5_1"])]
    assert [(t["role"], t["peer"], t["port"], t["peer_port"], t["expected_gbps"], t["verdict"]) for t in status["pairs"]] == [
        ("server", "v100-node-02", "mlx5_0/1", "mlx5_0/1", 90.0, "not_run")]
    assert status["verdicts"] == {"tests": 3, "passed": 0, "below_expected": 0, "failed": 0, "not_run": 3}
    assert status["measured"] == ["mlx5_0/1 loopback: not_run of 90.0 expected", "mlx5_1/1 loopback: not_run of 90.0 expected",
                                  "mlx5_0/1 server of v100-node-02:mlx5_0/1: not_run of 90.0 expected"]


def pair_records(test_id, server=None, client=None, listening=True, stopped_by="self"):
    records = []
    if server is not None:
        records.append({"id": test_id, "side": "server", "listening": listening, "stopped_by": stopped_by, "result": server})
    if client is not None:
        records.append({"id": test_id, "side": "client", "result": client})
    return records


V100_PAIR = "v100-node-01:mlx5_0/1>v100-node-02:mlx5_0/1"


def test_pair_passes_and_both_hosts_see_it(demo):
    plan, dummy = demo_plan(demo)
    runs = pair_records(V100_PAIR, perftest_result("ib_write_bw_s1M_server_IB_MBsec.txt", size=1048576),
                        perftest_result("ib_write_bw_s1M_client_IB_MBsec.txt", size=1048576))
    for host, role, peer in (("v100-node-01", "server", "v100-node-02"), ("v100-node-02", "client", "v100-node-01")):
        judged = evaluate(plan, host, [], runs, check_mode=True)
        (pair,) = judged["status"]["pairs"]
        assert (pair["role"], pair["peer"], pair["verdict"], pair["measured_gbps"], pair["server_stopped_by"]) == (
            role, peer, "pass", 93.357573, "self")
        assert judged["findings"] == []


def test_pair_below_expected_goes_to_both_hosts(demo):
    plan, dummy = demo_plan(demo, efficiency=0.96)
    runs = pair_records(V100_PAIR, perftest_result("ib_write_bw_s1M_server_IB_MBsec.txt", size=1048576),
                        perftest_result("ib_write_bw_s1M_client_IB_MBsec.txt", size=1048576))
    for host in ("v100-node-01", "v100-node-02"):
        (finding,) = evaluate(plan, host, [], runs, check_mode=True)["findings"]
        assert finding["check"] == "bandwidth_below_expected"
        assert finding["subject"] == V100_PAIR
        assert finding["message"] == (
            "ib_write_bw between v100-node-01 (server, mlx5_0/1) and v100-node-02 (client, mlx5_0/1) reached 93.357573 Gb/s "
            "with host memory, below the expected 96.0 Gb/s (0.96 x the 100 Gb/s link rate).")


def test_pair_memlock_on_the_client_explains_the_servers_read_keys_error(demo):
    """The crater write-up's two-pod failure: the client cannot register memory, the server only sees it go."""
    plan, dummy = demo_plan(demo)
    server = perftest_result("seed_err_ib_read_bw_server_ethernet_read_keys.txt")
    client = perftest_result(MEMLOCK)
    assert (server["failure"]["cause"], client["failure"]["cause"]) == ("remote_unreachable", "memlock")
    (finding,) = evaluate(plan, "v100-node-01", [], pair_records(V100_PAIR, server, client), check_mode=True)["findings"]
    assert finding["check"] == "perftest_failed_memlock"
    assert finding["message"].startswith(
        "ib_write_bw between v100-node-01 (server, mlx5_0/1) and v100-node-02 (client, mlx5_0/1) failed on the client side: "
        "memlock (Couldn't allocate MR). Registering memory failed")
    # The other way round: the client only saw the server go, the server's own cause is the one.
    swapped = evaluate(plan, "v100-node-02", [], pair_records(V100_PAIR, client, server), check_mode=True)
    assert [(f["check"], f["message"].split(":")[0]) for f in swapped["findings"]] == [
        ("perftest_failed_memlock", "ib_write_bw between v100-node-01 (server, mlx5_0/1) and v100-node-02 "
                                    "(client, mlx5_0/1) failed on the server side")]


def test_server_that_never_listened(demo):
    plan, dummy = demo_plan(demo)
    port_down = perftest_result("seed_err_ib_write_bw_mlx5_0_port_down_server.txt")
    (finding,) = evaluate(plan, "v100-node-02", [], pair_records(V100_PAIR, port_down, listening=False), check_mode=True)["findings"]
    assert (finding["check"], finding["actual"]) == ("perftest_failed_port_down", "Port number 1 state is Down")
    assert "failed on the server side" in finding["message"]
    stuck = {"cmd": ["ib_write_bw"], "rc": 143, "results": [], "bw_average_gbps": None, "msg": "failed",
             "failure": {"cause": "unknown", "line": "terminated", "hint": "read the output", "side": "server"}}
    (finding,) = evaluate(plan, "v100-node-02", [], pair_records(V100_PAIR, stuck, listening=False, stopped_by="role"),
                          check_mode=True)["findings"]
    assert (finding["check"], finding["actual"]) == (
        "perftest_failed_unknown", "the server did not listen on TCP port 18516; it said: terminated")
    (finding,) = evaluate(plan, "v100-node-02", [], pair_records(V100_PAIR, {}, listening=False, stopped_by="killed"),
                          check_mode=True)["findings"]
    assert finding["actual"] == "the server did not listen on TCP port 18516"


def test_server_stopped_by_the_role_is_a_warning_when_the_test_passed(demo):
    plan, dummy = demo_plan(demo)
    runs = pair_records(V100_PAIR, {}, perftest_result("ib_write_bw_s1M_client_IB_MBsec.txt", size=1048576), stopped_by="killed")
    judged = evaluate(plan, "v100-node-01", [], runs, check_mode=True)
    assert [(f["check"], f["severity"], f["message"]) for f in judged["findings"]] == [
        ("perftest_server_stopped", "warning",
         "The ib_write_bw server on v100-node-01 (mlx5_0/1, TCP port 18516) did not end after its client was done; "
         "the role stopped it with SIGKILL.")]
    assert (judged["status"]["ok"], judged["status"]["warning"]) == (True, 1)


def test_pair_that_did_not_run_and_no_active_port(demo):
    plan, infos = demo_plan(demo)
    judged = evaluate(plan, "v100-node-02", [], [], selection=infos["v100-node-02"])
    assert [(f["check"], f["severity"]) for f in judged["findings"]] == [
        ("loopback_not_run", "warning"), ("pair_not_run", "warning")]
    empty = build_plan({"n1": {"group": "g", "ports": []}})
    info = select_ports([p for p in demo["v100-node-02"]["ports"] if p["device"] == "mlx5_1"])
    (finding,) = evaluate(empty, "n1", [], [], selection=info)["findings"]
    assert finding["message"] == "n1 has no ACTIVE RDMA port to test (mlx5_1/1: state DOWN, not ACTIVE)."


def test_evaluate_rejects_what_is_not_a_plan():
    with pytest.raises(CheckError, match="^bandwidth_check.no_active_port: expected the plan of rdma.node.bandwidth_plan"):
        evaluate({"steps": []}, "n1")


@pytest.mark.parametrize("role", ["bandwidth_check", "pod_proof"])
def test_every_cause_of_the_perftest_module_has_its_check_in_both_roles(role):
    # A cause without a check of its own would be reported by no check at all: perftest_failed_unknown
    # takes only the causes the module does not name.
    names = [c.name for c in checks(role)]
    assert sorted("perftest_failed_" + cause for cause in failure_causes()) == sorted(n for n in names if n.startswith("perftest_failed_"))


def test_every_cause_of_the_perftest_module_has_its_check():
    names = [c.name for c in checks("bandwidth_check")]
    assert names == ["no_active_port", "loopback_not_run", "bandwidth_below_expected", "perftest_failed_gpu_memory",
                     "perftest_failed_memlock", "perftest_failed_device_not_found", "perftest_failed_port_down",
                     "perftest_failed_device_query", "perftest_failed_qp_create", "perftest_failed_qp_connect", "perftest_failed_completion_error",
                     "perftest_failed_remote_unreachable", "perftest_failed_unknown", "perftest_error", "pair_not_run",
                     "perftest_server_stopped", "gpu_not_nearest"]


def test_device_not_found_on_the_a100_bond(demo):
    plan, infos = demo_plan(demo)
    outputs = {"mlx5_1/1": A100_183_6, "mlx5_bond_0/1": "seed_err_ib_write_bw_mlx5_bond_0_device_not_found.txt"}
    judged = evaluate(plan, "a100-node-01", loopback_results(plan, "a100-node-01", outputs), [], check_mode=True,
                      selection=infos["a100-node-01"])
    (missing,) = judged["findings"]
    assert (missing["check"], missing["severity"], missing["subject"]) == ("perftest_failed_device_not_found", "critical", "mlx5_bond_0/1")
    assert missing["message"].startswith("ib_write_bw loopback on mlx5_bond_0/1 failed: device_not_found (")
    assert missing["expected"] == "a completed test" and missing["actual"] in missing["message"]


@pytest.mark.parametrize("sample, check, cause", [
    ("err_ib_write_bw_failed_modify_qp_rtr_grh_required_issue393.txt", "perftest_failed_qp_connect", "qp_connect"),
    ("err_ib_write_bw_use_cuda_bidir_completion_error_status4_syndrom_0x51_issue173.txt", "perftest_failed_completion_error",
     "completion_error"),
    ("err_ib_write_lat_server_irdma_unable_to_create_qp_inline_issue139.txt", "perftest_failed_qp_create", "qp_create"),
])
def test_failures_of_the_queue_pair_have_their_own_findings(demo, sample, check, cause):
    plan, infos = demo_plan(demo)
    outputs = {"mlx5_1/1": sample, "mlx5_bond_0/1": A100_183_6}
    judged = evaluate(plan, "a100-node-01", loopback_results(plan, "a100-node-01", outputs), [], check_mode=True,
                      selection=infos["a100-node-01"])
    (failed,) = judged["findings"]
    assert (failed["check"], failed["severity"], failed["subject"]) == (check, "critical", "mlx5_1/1")
    assert failed["message"].startswith("ib_write_bw loopback on mlx5_1/1 failed: %s (" % cause)


def test_both_sides_only_saw_the_other_go(demo):
    """The server's read_keys error on both sides: nothing more specific, so remote_unreachable is the cause."""
    plan, dummy = demo_plan(demo)
    gone = perftest_result("seed_err_ib_read_bw_server_ethernet_read_keys.txt")
    (finding,) = evaluate(plan, "v100-node-02", [], pair_records(V100_PAIR, gone, gone), check_mode=True)["findings"]
    assert (finding["check"], finding["severity"], finding["subject"]) == ("perftest_failed_remote_unreachable", "critical", V100_PAIR)
    assert finding["message"].startswith("ib_write_bw between v100-node-01 (server, mlx5_0/1) and v100-node-02 (client, mlx5_0/1) "
                                         "failed on the client side: remote_unreachable (")


def test_a_test_without_a_bandwidth_result_and_an_unnamed_cause(demo):
    plan, infos = demo_plan(demo)
    entry = plan["loopback"]["v100-node-02"][0]
    empty = {"item": entry, "cmd": ["ib_write_bw"], "rc": 0, "results": [{"bytes": 65536}], "failure": None, "bw_average_gbps": None}
    (finding,) = evaluate(plan, "v100-node-02", [empty], [], check_mode=True, selection=infos["v100-node-02"])["findings"]
    assert (finding["check"], finding["severity"], finding["message"], finding["expected"]) == (
        "perftest_failed_unknown", "critical", "ib_write_bw loopback on mlx5_0/1 printed no bandwidth result.", "a bandwidth result")
    odd = dict(empty, failure={"cause": "gpu_direct", "line": "cudaMalloc failed", "hint": None})
    (finding,) = evaluate(plan, "v100-node-02", [odd], [], check_mode=True, selection=infos["v100-node-02"])["findings"]
    assert (finding["check"], finding["message"]) == (
        "perftest_failed_unknown", "ib_write_bw loopback on mlx5_0/1 failed: gpu_direct (cudaMalloc failed)")


def test_through_the_registry_as_the_role_runs_it(demo):
    plan, infos = demo_plan(demo, efficiency=0.96)
    params = {"host": "v100-node-01", "plan": plan, "selection": infos["v100-node-01"], "check_mode": False,
              "loopback_results": loopback_results(plan, "v100-node-01", {"mlx5_0/1": V100_94_7, "mlx5_1/1": V100_94_7}),
              "pair_runs": pair_records(V100_PAIR, perftest_result("ib_write_bw_s1M_server_IB_MBsec.txt", size=1048576),
                                        perftest_result("ib_write_bw_s1M_client_IB_MBsec.txt", size=1048576))}
    result = evaluate_role("bandwidth_check", {}, params, subject="v100-node-01")
    status = result["status"]
    assert (status["ok"], status["critical"], status["subject"], status["skipped_checks"]) == (False, 3, "v100-node-01", [])
    assert status["summary"] == (
        "bandwidth_check on v100-node-01: 3 critical: ib_write_bw loopback on mlx5_0/1 reached 94.71 Gb/s with host memory, below "
        "the expected 96.0 Gb/s (0.96 x the 100 Gb/s link rate). " + CPU_WARNING + " ib_write_bw loopback on mlx5_1/1 reached 94.71 Gb/s "
        "with host memory, below the expected 96.0 Gb/s (0.96 x the 100 Gb/s link rate). " + CPU_WARNING + " ib_write_bw between "
        "v100-node-01 (server, mlx5_0/1) and v100-node-02 (client, mlx5_0/1) reached 93.357573 Gb/s with host memory, below the "
        "expected 96.0 Gb/s (0.96 x the 100 Gb/s link rate).")
    assert status["verdicts"] == {"tests": 3, "passed": 0, "below_expected": 3, "failed": 0, "not_run": 0}
    assert status["measured"][0] == "mlx5_0/1 loopback: below_expected 94.71 Gb/s of 96.0 expected"
    assert (status["tool"], status["group"], status["efficiency"], status["check_mode"]) == ("ib_write_bw", "ib-v100", 0.96, False)


# ------------------------------------------------------------------------------------- GPU memory


def test_gpu_memory_that_cannot_be_registered_names_what_the_node_lacks(demo):
    """perftest issue 126's client ("Couldn't allocate MR" after its GPU buffer) on a node whose facts say peer memory is
    not there: a gpu_memory failure with the facts' reason, never the memlock hint."""
    plan, infos = demo_plan(demo, gpu_mode="cuda")
    entry = plan["loopback"]["a100-node-01"][0]
    failed = dict(perftest_result("err_ib_write_bw_use_cuda_client_couldnt_allocate_MR_bad_address_pod_terminal_with_prompts_issue126.txt"),
                  item=entry)
    findings = evaluate(plan, "a100-node-01", [failed], [], check_mode=True, selection=infos["a100-node-01"])["findings"]
    (finding,) = [f for f in findings if f["subject"] == "mlx5_1/1"]
    assert (finding["check"], finding["severity"], finding["actual"]) == ("perftest_failed_gpu_memory", "critical", "Couldn't allocate MR")
    assert finding["message"].startswith("ib_write_bw loopback on mlx5_1/1 failed: gpu_memory (Couldn't allocate MR). perftest could not use GPU memory.")
    assert finding["message"].endswith("The test used GPU memory (cuda, GPU 0000:4e:00.0); the facts say peer memory is not ready: "
                                       "neither nvidia_peermem nor nv_peer_mem is loaded.")
    assert "node_remediation" not in finding["message"]


def test_the_gpu_perftest_used_against_the_nearest_one(demo):
    plan, infos = demo_plan(demo, gpu_mode="cuda")
    # The T4 run names CUDA device 0 at 82:00; a100-node-02's mlx5_1 is nearest 0000:4e:00.0.
    named = {"mlx5_1/1": "ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_client.txt",
             "mlx5_bond_0/1": "ib_write_bw_use_cuda_dmabuf_a_roce_pod_client_rst_indented.txt"}
    judged = evaluate(plan, "a100-node-02", loopback_results(plan, "a100-node-02", named), [], check_mode=True,
                      selection=infos["a100-node-02"])
    (other,) = [f for f in judged["findings"] if f["check"] == "gpu_not_nearest"]
    assert (other["severity"], other["subject"], other["expected"], other["actual"]) == ("warning", "mlx5_1/1", "0000:4e:00.0", "82:00")
    # The DMA-BUF run of the GPU Operator's documentation printed no CUDA lines: which GPU it used is not known, and said.
    assert [(n["check"], n["subject"]) for n in judged["status"]["not_checked"]] == [("gpu_not_nearest", "mlx5_bond_0/1")]
    statuses = {t["port"]: t for t in judged["status"]["loopback"]}
    assert (statuses["mlx5_bond_0/1"]["verdict"], statuses["mlx5_bond_0/1"]["expected_gbps"]) == ("pass", 9.0)
    assert judged["status"]["measured"][0] == "mlx5_1/1 loopback (cuda): below_expected 10.42 Gb/s of 180.0 expected"
    assert judged["status"]["efficiency_gpu"] == 0.9
