"""The pod_proof role's nccl-tests floor (plugins/plugin_utils/_checks/nccl.py) on real nccl-tests outputs
(tests/fixtures/nccl/SOURCES.md)."""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _pod_proof
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from testpaths import FIXTURES

NCCL = FIXTURES / "nccl"


def floor(name, min_busbw=300):
    return floor_of(NCCL / name, min_busbw)


def floor_of(path, min_busbw=300):
    name = path.name
    params = {"nccl": [{"group": "ib-h100", "source": name[:24], "log": "", "tests": path.read_text(), "min_busbw": min_busbw}],
              "nodes": {},
              # No pod pair planned: only the group's NCCL evidence is judged (the role's summary needs a plan).
              "plan": {"tests": [], "bandwidth_plan": {"hosts": []}, "groups": [], "batches": [], "max_pairs": 0, "notes": []},
              "pods": [], "logs": {}, "check_mode": False}
    return evaluate_role(_pod_proof.ROLE, {}, params, subject="cluster/kubernetes", only=["nccl_busbw_below_floor"])


def test_one_rank_jobs_of_a_launch_without_mpi_are_not_checked_against_the_floor_never_critical():
    # nccl-tests issue 294: busbw 0.00 of one-rank jobs is no fabric's figure, so the floor is not judged, and the reason is said.
    result = floor("all_reduce_perf_rows_only_busbw_0_beside_algbw_sizes_twice_unordered_no_mpi_build_nccl_tests_issue294_PARTIAL.txt")
    assert result["findings"] == []
    [not_checked] = result["status"]["not_checked"]
    assert not_checked["check"] == "nccl_busbw_below_floor" and not_checked["subject"] == "ib-h100"
    assert not_checked["reason"].startswith("all_reduce_perf_rows_onl of group ib-h100 gives no bus bandwidth at its largest size "
                                            "(536870912 bytes): ")
    assert not_checked["reason"].endswith("processes that did not form one communicator (nccl-tests built without MPI=1), is not "
                                          "known: no bus bandwidth is read")


def test_a_run_on_one_gpu_on_purpose_is_still_judged_as_printed():
    # One device line, one process (mpirun -np 1 -g 1): its busbw 0.0 is read as before, so a floor still finds it below.
    result = floor("all_reduce_perf_one_gpu_on_purpose_mpirun_np_1_busbw_0_beside_algbw_a10g_aws_batch_mnp_doc_PARTIAL.txt")
    assert [(f["check"], f["severity"], f["actual"]) for f in result["findings"]] == [("nccl_busbw_below_floor", "critical", 0.0)]
    # A group's real figure above its floor gives no finding (GKE's A3 Mega table, 338.82 GB/s at 8 GiB).
    assert floor("all_reduce_perf_h100_2x8_tcpx_8G_a3mega.txt")["findings"] == []


def test_a_run_whose_results_were_wrong_is_not_judged_against_the_floor(tmp_path):
    # Constructed from GKE's A3 Mega table (338.82 GB/s at 8 GiB, above the floor): its last row counting wrong elements, as
    # nccl-tests issue 1184's rows do, and then its "Out of bounds" line saying so. A corrupting run's figure is no pass.
    text = (NCCL / "all_reduce_perf_h100_2x8_tcpx_8G_a3mega.txt").read_text()
    row = "  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0"
    assert row in text
    wrong = text.replace(row, row[:-len("0    47743  179.92  337.35      0")] + "5    47743  179.92  337.35      0")
    (NCCL_COPY := tmp_path / "wrong.txt").write_text(wrong.replace("# Out of bounds values : 0 OK", ""))
    result = floor_of(NCCL_COPY)
    assert result["findings"] == []
    [not_checked] = result["status"]["not_checked"]
    assert "failed nccl-tests' check of its results (#wrong 5 at 8589934592 bytes)" in not_checked["reason"]
    NCCL_COPY.write_text(wrong.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 5 FAILED"))
    [not_checked] = floor_of(NCCL_COPY)["status"]["not_checked"]
    assert "(Out of bounds values: 5)" in not_checked["reason"]
