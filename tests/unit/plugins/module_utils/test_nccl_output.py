"""parse_nccl_log and parse_nccl_tests against real logs and tables (tests/fixtures/nccl/SOURCES.md)."""

from __future__ import annotations

import pytest

from testpaths import FIXTURES

from ansible_collections.rdma.node.plugins.module_utils._nccl_output import (
    NcclOutputError,
    ib_hca_entries,
    parse_nccl_log,
    parse_nccl_tests,
    transport_kind,
)

NCCL = FIXTURES / "nccl"


def log(name):
    return parse_nccl_log((NCCL / name).read_text())


def table(name):
    return parse_nccl_tests((NCCL / name).read_text())


def test_roce_gdrdma_log():
    parsed = log("nccl_info_roce_gdrdma_p2p_ib_hca_sglang_2.27.5.log")
    assert parsed["version"] == "2.27.5+cuda12.9" and parsed["network"] == "IB"
    assert parsed["transports"] == {"net_ib": 64, "p2p": 240}
    assert parsed["gdrdma_channels"] == 64 and parsed["gdr"]["rings"] == [1] * 8
    assert [d["device"] for d in parsed["ib_devices"]] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
    assert {d["link"] for d in parsed["ib_devices"]} == {"RoCE"}
    assert parsed["env"]["NCCL_IB_HCA"] == "mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    assert parsed["hcas_used"] == sorted(["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"])
    assert parsed["other_lines"] > 0, "the shell lines before the log are counted, not read"


def test_socket_fallback_in_a_pod():
    parsed = log("nccl_info_socket_fallback_no_ib_device_k8s_pod_2.27.3.log")
    assert (parsed["network"], parsed["ib_no_device"], parsed["transports"]) == ("Socket", True, {"net_socket": 7})
    assert parsed["socket_interfaces"] == [{"index": 0, "name": "eth0", "address": "10.0.4.51"}]
    assert parsed["gdr"]["rings"] == [0, 0] and parsed["hosts"] == ["llama-3-8b-node-0-0"]
    assert any("aws-ofi-nccl initialization failed" in w for w in parsed["warnings"])


@pytest.mark.parametrize("name, transports, gdrdma, hcas", [
    ("nccl_info_ib_gdrdma_channel_without_subchannel_nccl_issue707.log", {"net_ib": 12}, 12, ["NET/IB/0", "NET/IB/2", "NET/IB/4", "NET/IB/5"]),
    ("nccl_info_ib_without_gdrdma_gdr0_mesh_plugin_issue56.log", {"net_ib": 16}, 0, ["NET/IB/4", "NET/IB/5"]),
    ("nccl_info_socket_p2p_ipc_read_ipoib_bootstrap_nccl_issue952.log", {"net_socket": 2, "p2p": 14}, 0, []),
    # mpirun's "[rank] " before each line, an IB plugin (IBext_v8), GPUDirect RDMA on every channel.
    ("nccl_info_ibext_v8_gdrdma_mpirun_rank_prefix_h100_nccl_issue1453.log", {"net_ib": 12}, 12, ["NET/IBext_v8/7"]),
    # GPUDirect RDMA off for want of its kernel module, on two hosts' lines.
    ("nccl_info_gdr_disabled_no_module_net_ib_two_hosts_nccl_issue899.log", {"net_ib": 7}, 0, ["NET/IB/0"]),
])
def test_channel_formats_of_pastes(name, transports, gdrdma, hcas):
    parsed = log(name)
    assert (parsed["transports"], parsed["gdrdma_channels"], parsed["hcas_used"]) == (transports, gdrdma, hcas)


def test_gpudirect_rdma_per_hca_by_name_or_by_index():
    off = log("nccl_info_gdr_disabled_no_module_net_ib_two_hosts_nccl_issue899.log")
    assert off["gdr"] == {"rings": [], "enabled": [], "disabled": ["mlx5_1", "mlx5_2", "mlx5_3"]}
    assert off["hosts"] == ["21346d5cefce", "6a5a91752e39"]
    text = (NCCL / "nccl_info_gdrdma_enabled_distance_read1_ib_lid_qpn_nccl_tests_issue350.log").read_text()
    # "GPU Direct RDMA Enabled for GPU 81000 / HCA 1": NCCL's index of the HCA, all this log names it by...
    assert parse_nccl_log(text)["gdr"]["enabled"] == ["1"]
    # ... and its device name where the log also has NCCL's device line.
    using = "n013:101855:101885 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.13<0>\n"
    named = parse_nccl_log(using + text)
    assert (named["gdr"]["enabled"], named["hcas_used"]) == (["mlx5_1"], ["mlx5_1"])


def test_the_verbs_providers_completion_error_is_a_warning():
    parsed = log("nccl_tests_all_reduce_mlx5_got_completion_with_error_cqe_dump_roce_gid_nccl_tests_issue24.txt")
    assert parsed["warnings"][0] == "mlx5: gpu5: got completion with error:"
    assert any(w.startswith("NET/IB : Got completion with error 4") for w in parsed["warnings"])


def test_a_completion_error_wrapped_before_its_vendor_error_is_one_warning():
    parsed = log("nccl_warn_net_ib_completion_error12_vendor_err_129_wrapped_after_len_azure.log")
    assert parsed["warnings"] == ["NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len 0, vendor err 129 (Recv)"]
    assert (parsed["lines"], parsed["other_lines"]) == (4, 0)
    # A line after a whole warning, or after another warning, is no part of it.
    whole = parse_nccl_log("h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with error 12, opcode 0, len 0, "
                           "vendor err 129 (Recv)\n0, vendor err 130 (Send)\nh:1:2 [0] NCCL WARN Cuda failure 'out of memory'\n"
                           "0, vendor err 131 (Recv)\n")
    assert len(whole["warnings"]) == 2 and whole["other_lines"] == 2


def test_collnet_lines_name_one_rank_and_their_network_device():
    parsed = log("nccl_info_collnet_sharp_receive_lines_only_ibext_v8_nccl_2.23.4_nccl_tests_issue311.log")
    assert (parsed["transports"], parsed["gdrdma_channels"], parsed["hcas_used"]) == ({"collnet": 4}, 4, ["mlx5_0", "mlx5_2", "mlx5_4"])
    first = [c for c in parsed["channels"] if c["kind"] == "collnet"][0]
    assert (first["src_rank"], first["dst_rank"], first["direction"], first["net"], first["net_device"]) == (0, None, "receive", "SHARP", 1)
    assert transport_kind("COLLNET/SHARP/1/GDRDMA") == (
        "collnet", {"via": "COLLNET/SHARP/1/GDRDMA", "net": "SHARP", "net_device": 1, "gdrdma": True})
    # NCCL 2.7 to 2.11 print the same connection as "Coll %02d : %d [send] via COLLNET/%s/%d%s" (coll_net.cc).
    older = parse_nccl_log("node1:1:2 [0] NCCL INFO Coll 00 : 0 [send] via COLLNET/SHARP/0/GDRDMA\n"
                           "node1:1:2 [0] NCCL INFO Coll 00 : 0 [receive] via COLLNET/SHARP/0/GDRDMA\n")
    assert (older["transports"], older["gdrdma_channels"], older["notes"]) == ({"collnet": 2}, 2, [])


def test_nccls_messages_pasted_without_prefix_or_tag_are_read_as_its_messages():
    parsed = log("nccl_2.24.3_messages_without_prefix_or_info_tag_ib_sharp_ibext_v8_nccl_issue1584_PARTIAL.log")
    assert (parsed["version"], parsed["network"], parsed["env"]) == (
        "2.24.3+cuda12.2", "IBext_v8", {"NCCL_SOCKET_IFNAME": "eth0", "NCCL_IB_PCI_RELAXED_ORDERING": "1"})
    assert [(d["index"], d["device"], d["link"]) for d in parsed["ib_devices"]] == [(i, "ibp%d" % i, "IB") for i in range(8)]
    assert parsed["notes"][-1]["reason"].startswith("the lines carry neither NCCL's prefix nor its INFO tag")
    # One such line in prose is no log.
    with pytest.raises(NcclOutputError, match="nothing in the text is an NCCL log line"):
        parse_nccl_log("The job printed\nUsing network IB\nand then hung.\n")


def test_a_socket_networks_gpudirect_line_names_no_rdma_adapter():
    parsed = log("nccl_net_socket_gdr_disabled_for_hca_0_lo_ibext_disabled_nccl_issue1053_PARTIAL.log")
    assert (parsed["network"], parsed["gdr"]["disabled"], parsed["gdr"]["enabled"]) == ("Socket", [], [])
    ib = parse_nccl_log("n:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n")
    assert ib["gdr"]["disabled"] == ["mlx5_0"]


def test_a_shortened_list_of_hcas_is_said_to_skip_indexes():
    parsed = log("nccl_2.29_gb300_cx8_rocep_dma_hcas_list_shortened_with_ellipsis_aicr_issue1413_PARTIAL.log")
    assert [(d["index"], d["device"]) for d in parsed["ib_devices"]] == [(0, "rocep161s0_dma"), (7, "rocep202s0_dma")]
    assert ("NET/IB's HCAs in the text skip index(es) 1, 2, 3, 4, 5, 6, which NCCL numbers without a gap (a list shortened, or "
            "lines left out): only the HCAs shown are known") in [note["reason"] for note in parsed["notes"]]


def test_rays_note_on_repeated_lines_is_no_part_of_a_setting():
    parsed = log("rccl_2.26.6_vllm_ray_prefixes_repeated_across_cluster_socket_rocm_issue5656_PARTIAL.log")
    assert parsed["env"]["NCCL_SOCKET_IFNAME"] == "enp165s0f1np1"
    assert (parsed["version"], parsed["verbs_missing"]) == ("2.26.6-HEAD:f224e2c", True)


def test_rccl_2_18_version_line_and_an_rccl_tests_run_that_printed_no_table():
    text = (NCCL / "rccl_2.18.3_bare_version_line_ucx_bnxt_re_reduce_perf_colon_header_no_table_rccl_issue1261.log").read_text()
    assert parse_nccl_log(text)["version"] == "2.18.3+hip5.7"
    tests = parse_nccl_tests(text)
    assert (tests["test"], tests["params"], tests["rows"]) == (
        "reduce_perf", {"nthread": 1, "ngpus": 1, "min_bytes": 1024, "max_bytes": 536870912}, [])
    assert tests["notes"][-1]["reason"] == "no result row: the test printed no table (it failed, or the paste ends before the rows)"


def test_every_datatype_of_one_run_is_one_run_and_float_gives_the_figure():
    parsed = table("all_reduce_perf_datatype_all_12_types_40G_h200_nccl_2.30.4_PARTIAL.txt")
    assert len(parsed["rows"]) == 36 and len({row["type"] for row in parsed["rows"]}) == 12
    assert (parsed["largest"]["size"], parsed["largest"]["type"], parsed["busbw_at_largest"]) == (42949672960, "float", 487.06)
    assert [n["reason"].split(":")[0] for n in parsed["notes"]] == ["12 datatypes at the largest size (int8, uint8, int32, uint32, "
                                                                    "int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2)"]


def test_an_hca_named_on_one_gdr_line_is_that_name_on_a_line_that_gives_its_index():
    parsed = log("nccl_info_gib_gdr_enabled_by_hca_name_then_by_index_ray_prefix_a3ultra_PARTIAL.log")
    assert parsed["gdr"] == {"rings": [], "enabled": ["mlx5_%d" % n for n in range(8)], "disabled": []}


def test_a_channel_line_torn_after_via_is_not_counted():
    parsed = log("nccl_info_vllm_ray_lines_torn_by_interleaving_channel_cut_after_via_PARTIAL.log")
    assert "other" not in parsed["transports"]
    assert [(n["line"], n["reason"]) for n in parsed["notes"] if "cut short" in n["reason"]] == [
        (4, "a channel line cut short before its transport: not counted"),
        (16, "a channel line cut short ('P' after via): not counted")]


def test_a_channel_line_with_another_programs_print_glued_into_it_is_not_counted():
    parsed = log("nccl_info_2.19.3_ibext_channel_lines_torn_by_application_prints_before_and_after_via_slurm_nebius_PARTIAL.log")
    assert parsed["channels"] == [] and parsed["transports"] == {}
    assert [(n["line"], n["reason"]) for n in parsed["notes"] if "cut short" in n["reason"]] == [
        (2, "a channel line cut short ('NET/IBext/6/GDSetting up...' after via): not counted"),
        (66, "a channel line cut short before its transport: not counted")]


def test_old_logs_without_channels():
    socket = log("nccl_info_socket_no_ib_device_nccl_2.7.8_issue447.log")
    assert (socket["version"], socket["network"], socket["ib_no_device"], socket["channels"]) == ("2.7.8+cuda10.2", "Socket", True, [])
    assert socket["notes"][0]["reason"].startswith("no channel line")
    ib = log("nccl_info_ib_mlx4_init_nccl_2.4.2_pytorch_issue25767.log")
    assert ib["ib_devices"] == [{"index": 0, "device": "mlx4_0", "port": 1, "link": "IB"}] and ib["other_lines"] == 4


def test_text_without_nccl_lines_is_one_sentence():
    with pytest.raises(NcclOutputError, match=r"nothing in the text is an NCCL log line .*line 1: 'hello'"):
        parse_nccl_log("hello\nworld\n")


def test_transport_kinds():
    # (3): PXN's proxy rank, whose NIC relays the send.
    assert transport_kind("NET/IB/2(3)/GDRDMA") == ("net_ib", {"net": "IB", "net_device": 2, "proxy_rank": 3, "gdrdma": True, "shared": False})
    assert transport_kind("NET/IB/0/GDRDMA(PCI)") == ("net_ib", {"net": "IB", "net_device": 0, "proxy_rank": None, "gdrdma": True, "shared": False})
    assert transport_kind("NET/IBext_v8/2")[0] == "net_ib"
    assert transport_kind("NET/Socket/0/Shared")[0] == "net_socket"
    assert transport_kind("direct shared memory")[0] == "shm"


def test_ib_hca_syntax():
    assert ib_hca_entries("^=mlx5_0:1,mlx5_1") == {"exclude": True, "entries": [
        {"device": "mlx5_0", "port": 1, "exact": True}, {"device": "mlx5_1", "port": None, "exact": True}]}


@pytest.mark.parametrize("name, rows, largest, busbw, avg", [
    ("all_reduce_perf_h100_2x8_tcpx_8G_a3mega.txt", 31, 8589934592, 338.82, 70.742),
    ("nccl_tests_table_old_error_column_2080ti_nccl_issue340.txt", 12, 134217728, 20.34, 6.6972),
    # A before and an after table of one size: the figures are the last run's (the one "after fix is applied").
    ("all_reduce_perf_no_hash_na_wrong_4G_pytorch_issue117748.txt", 2, 4294967296, 279.78, None),
    ("all_reduce_perf_ring_partial_header_8G_nccl_tests_issue252.txt", 5, 8589934592, 95.1, 95.3009),
    ("all_reduce_perf_shm_info_lines_inside_table_vllm_issue17568.txt", 1, 8, 0.0, None),
    ("all_reduce_perf_nccl_tests_2.18.3_header_h100_nvl_nccl_issue2441.txt", 1, 500000, 3.97, None),
    ("all_reduce_perf_single_row_space_in_host_h100_nccl_tests_issue347.txt", 1, 8589934592, 479.41, None),
    ("all_reduce_perf_hashes_lost_single_a10g_truncated_nccl_tests_issue249.txt", 0, None, None, None),
    # rccl-tests (AMD's port) on 16 ranks: its own version line, UCX warnings among the table.
    ("rccl_tests_all_reduce_perf_2x8_mi355x_ucx_warn_rccl_version_block_16G.txt", 31, 17179869184, 385.98, 129.28),
    # alltoall's empty redop column; a run from -b 1, whose first two rows are both of size 0.
    ("superbench_alltoall_perf_empty_redop_column_old_layout.txt", 34, 8589934592, 224.31, 58.6481),
    ("superbench_all_reduce_perf_min_bytes_1_two_rows_of_size_0_old_layout.txt", 34, 8589934592, 235.26, 68.4048),
])
def test_nccl_tests_tables(name, rows, largest, busbw, avg):
    parsed = table(name)
    assert len(parsed["rows"]) == rows
    assert (parsed["largest"] or {}).get("size") == largest
    assert (parsed["busbw_at_largest"], parsed["avg_busbw"]) == (busbw, avg)


def test_nccl_tests_details():
    a3 = table("all_reduce_perf_h100_2x8_tcpx_8G_a3mega.txt")
    assert a3["test"] == "all_reduce_perf" and a3["hosts"] == ["ztan-mig-235z", "ztan-mig-gq73"] and len(a3["devices"]) == 16
    assert a3["largest"]["in_place"]["busbw"] == 337.35 and a3["busbw_at_largest_gbps"] == 2710.56
    assert a3["out_of_bounds"] == {"count": 0, "ok": True}
    old = table("nccl_tests_table_old_error_column_2080ti_nccl_issue340.txt")
    assert old["test"] is None, "a command after the table does not name it"
    assert table("all_reduce_perf_single_row_space_in_host_h100_nccl_tests_issue347.txt")["hosts"] == ["NODE A"]
    assert table("all_reduce_perf_nccl_tests_2.18.3_header_h100_nvl_nccl_issue2441.txt")["version"] == "2.18.3"


def test_a_collective_without_a_reduction_has_no_redop_and_one_run_is_one_run():
    alltoall = table("superbench_alltoall_perf_empty_redop_column_old_layout.txt")
    assert {row["redop"] for row in alltoall["rows"]} == {None} and {row["type"] for row in alltoall["rows"]} == {"float"}
    assert alltoall["largest"]["in_place"]["busbw"] == 226.16
    assert alltoall["notes"] == []
    assert table("superbench_all_reduce_perf_min_bytes_1_two_rows_of_size_0_old_layout.txt")["notes"] == []


def test_rccl_tests_version_line_a_concluded_test_and_a_failed_one():
    assert table("rccl_tests_alltoall_perf_version_colon_line_two_rows_mi355x_oci.txt")["version"] == "HEAD:e1b8a3a"
    concluded = table("rccl_tests_sendrecv_perf_collective_test_concluded_then_next_test_rccl_pr2075_PARTIAL.txt")
    assert concluded["test"] == "sendrecv_perf" and len(concluded["rows"]) == 9
    failed = table("alltoall_perf_test_cuda_failure_glued_to_a_half_row_nccl_tests_issue355.txt")
    assert failed["rows"] == [] and failed["notes"][0]["reason"] == (
        "the test failed: Test CUDA failure common.cu:389 'an illegal memory access was encountered'")


def test_text_without_a_table_is_one_sentence():
    with pytest.raises(NcclOutputError, match="nothing in the text is nccl-tests output"):
        parse_nccl_tests("the job hung\n")


@pytest.mark.parametrize("name, hosts, warnings", [
    # The paste sits in an unclosed Markdown backtick: the first line starts with "`hostname-test:...".
    ("nccl_warn_ib_plugin_completion_status12_vendor_err_129_then_status5_249_roce_gid_backtick_nccl_issue1814_PARTIAL.log",
     ["hostname-test"], ["status=12 opcode=129 len=65536 vendor err 129", "status=5 opcode=32656 len=32659 vendor err 249"]),
    # Prose and a backtick before the first line: "error log `H100-2:19989:20082 [1] ...".
    ("nccl_warn_net_ib_completion_error4_vendor_err_81_ipoib_fe80_peer_prose_prefix_h100_nccl_issue928_PARTIAL.log",
     ["H100-2", "H100-1", "H100-5"], ["error 4, opcode 32564, len 32564, vendor err 81", "error 4, opcode 32613", "error 4, opcode 32639"]),
])
def test_a_backtick_or_prose_before_a_log_line_is_no_part_of_the_host(name, hosts, warnings):
    parsed = log(name)
    assert parsed["hosts"] == hosts
    for expected in warnings:
        assert any(expected in message for message in parsed["warnings"]), (expected, parsed["warnings"])


def test_a_suite_of_several_tests_in_one_text_is_read_as_all_reduce_perfs_output():
    """Five tests one after another: the figures, the devices and the bounds are all one test's, all_reduce_perf's; the
    earlier all_gather_perf's failure is still said."""
    text = (FIXTURES / "nccl" / "nccl_tests_suite_five_tests_running_lines_all_gather_out_of_bounds_failed_12x_v100_readme.txt").read_text()
    parsed = parse_nccl_tests(text)
    assert (parsed["test"], parsed["busbw_at_largest"], parsed["avg_busbw"], parsed["largest"]["size"]) == (
        "all_reduce_perf", 123.56, 42.5578, 8589934592)
    assert (parsed["out_of_bounds"], len(parsed["devices"]), parsed["tables"]) == ({"count": 0, "ok": True}, 12, 1)
    assert {row["redop"] for row in parsed["rows"]} == {"sum"} and len(parsed["rows"]) == 31
    reasons = [note["reason"] for note in parsed["notes"]]
    assert "all_gather_perf, not read, reported 4 value(s) out of bounds" in reasons
    assert reasons[-1] == ("the text holds the tables of 5 tests (all_gather_perf, all_reduce_perf, broadcast_perf, reduce_perf, "
                           "reduce_scatter_perf): all_reduce_perf's is read")
    # Without all_reduce_perf among them, the last test is read.
    parts = text.split("Running: ")
    without = "Running: ".join(part for part in parts if "./build/all_reduce_perf" not in part)
    assert parse_nccl_tests(without)["test"] == "reduce_scatter_perf"
    assert parse_nccl_tests(without)["avg_busbw"] == 20.3609
    # One test's table then a command naming another, without its output: that table, as before.
    alone = parse_nccl_tests("\n".join(text.splitlines()[:60]))
    assert alone["test"] == "all_gather_perf" and alone["out_of_bounds"] == {"count": 4, "ok": False}


def test_unnamed_tables_of_two_tests_give_one_tables_figures():
    """all_reduce's table, then alltoall's (rows without an operation), named only in the author's prose: the largest
    size's bus bandwidth and the Avg line are the same table's, the last one, and the text says it holds two."""
    parsed = parse_nccl_tests((FIXTURES / "nccl" / "nccl_tests_all_reduce_then_alltoall_tables_unnamed_old_layout_nccl_tests_issue78_PARTIAL.txt").read_text())
    assert (parsed["busbw_at_largest"], parsed["avg_busbw"], parsed["largest"]["redop"], parsed["tables"]) == (0.51, 0.507636, None, 2)
    assert [note["reason"] for note in parsed["notes"]] == [
        "the text holds 2 tables of different tests (their rows' types and operations differ) and names none: the last table's "
        "figures are read"]


def test_a_run_that_failed_before_its_rows_then_another_run():
    """The first run's four devices, then its CUDA failure before any row; the second run lists its four again (another
    pid) and prints the rows: the devices read are the second run's, and the failure is still said."""
    parsed = parse_nccl_tests((FIXTURES / "nccl" / "nccl_tests_2.19.7_failed_run_no_rows_then_second_run_h200_note.txt").read_text())
    assert [(d["rank"], d["pid"]) for d in parsed["devices"]] == [(rank, 97166) for rank in range(4)]
    assert (parsed["busbw_at_largest"], len(parsed["rows"])) == (353.35, 2)
    reasons = [note["reason"] for note in parsed["notes"]]
    assert any(reason.startswith("the test failed: ") for reason in reasons)
    assert ("another run of the test starts here (its parameters again): the devices, parameters and figures read are the "
            "last run's") in reasons
    # The other way round, the failed run last: no bandwidth is read for it, and the earlier run's is not taken for it.
    lines = (FIXTURES / "nccl" / "nccl_tests_2.19.7_failed_run_no_rows_then_second_run_h200_note.txt").read_text().splitlines()
    failed_last = parse_nccl_tests("\n".join(lines[36:] + lines[:36]))
    assert (failed_last["busbw_at_largest"], failed_last["largest"], len(failed_last["rows"])) == (None, None, 2)
    assert failed_last["notes"][-1]["reason"] == ("the last run printed no result row (it failed, or the text ends before its "
                                                  "rows): no bandwidth is read, the earlier runs' rows are kept")


def test_rows_a_page_rendered_as_a_table_without_outer_pipes_are_the_authors():
    parsed = parse_nccl_tests((FIXTURES / "nccl" / "rccl_tests_mscclpp_rows_rendered_as_table_without_outer_pipes_pr736_PARTIAL.txt").read_text())
    assert parsed["rows"] == [] and parsed["notes"][-1]["reason"] == (
        "no result row: the table is a Markdown table its author made from the output, not the output")


def test_nccl_tests_built_against_nccl_1_list_their_devices_without_a_pid():
    parsed = table("all_reduce_perf_nccl1_layout_bytes_N_op_res_no_pid_failure_p100_nccl_tests_issue5.txt")
    assert parsed["hosts"] == ["node03"]
    assert [(d["rank"], d["device"], d["pid"], d["name"]) for d in parsed["devices"]] == [
        (rank, rank, None, "Tesla P100-PCIE-16GB") for rank in range(8)]
    assert parsed["params"] == {"nthread": 1, "ngpus": 8, "min_bytes": 8, "max_bytes": 134217728}
    assert parsed["rows"] == []


def test_two_tables_side_by_side_give_no_row_and_say_why():
    """rccl-tests' before/after tables printed side by side ("... 0  |  ... 0"): no row fits nccl-tests' columns, so
    no bandwidth is read from either half, and the note says the rows were there."""
    parsed = table("rccl_tests_all_reduce_perf_two_tables_side_by_side_rccl_pr1352_PARTIAL.txt")
    assert (parsed["rows"], parsed["largest"], parsed["busbw_at_largest"]) == ([], None, None)
    assert [n["reason"] for n in parsed["notes"] if n["line"] is None] == [
        "no result row: 2 numeric line(s) fit none of the table's columns (tables side by side, or rows cut or joined), "
        "so no bandwidth is read"]
    assert len([n for n in parsed["notes"] if n["reason"] == "a numeric line that fits no table of the text, ignored"]) == 2


def test_rows_of_two_runs_interleaved_are_kept_and_said():
    parsed = table("all_reduce_perf_two_runs_rows_interleaved_nccl_tests_issue182_PARTIAL.txt")
    assert [row["size"] for row in parsed["rows"]] == [8, 16, 32, 64, 128, 256, 8, 512, 16, 1024]
    assert (parsed["largest"]["size"], parsed["busbw_at_largest"]) == (1024, 0.02)
    assert [(n["line"], n["reason"]) for n in parsed["notes"] if n["reason"].startswith("size ")] == [
        (8, "size 8 is in the table again (first on line 2): the text holds the rows of more than one run, all kept; the "
            "largest size's figures are the last run's")]


def test_collnet_connections_given_up_for_the_point_to_point_network_are_said_so():
    parsed = log("nccl_info_collnet_fallback_sharp_no_resource_pxn_proxy_rank_ibext_v8_cumem_and_all_reduce_table_nccl_tests_issue311_PARTIAL.log")
    assert parsed["transports"]["collnet"] == 4
    assert ("NCCL could not set CollNet up (\"Cannot initialize CollNet, using point-to-point network instead\"): the collnet "
            "connections counted were given up") in [n["reason"] for n in parsed["notes"]]
    hangs = log("nccl_info_collnet_sharp_receive_lines_only_ibext_v8_nccl_2.23.4_nccl_tests_issue311.log")
    assert not any("CollNet up" in n["reason"] for n in hangs["notes"])  # its CollNet was not given up: it hung


def test_a_log_consoles_time_glued_to_the_host_and_its_second_copy_of_the_record_are_left_out():
    parsed = log("nccl_info_2.21.5_cloudwatch_copy_time_glued_to_host_records_twice_aws_ofi_issue889_PARTIAL.log")
    assert parsed["hosts"] == ["ip-10-36-29-253"]
    assert parsed["env"] == {"NCCL_SOCKET_IFNAME": "eth0"}
    assert parsed["version"] == "2.21.5+cuda12.8"


def test_a_log_viewers_frame_and_padding_are_no_part_of_the_transport():
    parsed = log("nccl_info_k9s_frame_padded_lines_net_ib_p2p_nccl_issue719_PARTIAL.log")
    assert parsed["transports"] == {"net_ib": 4, "p2p": 1}
    assert {entry["transport"] for entry in parsed["channels"]} == {"NET/IB/0", "P2P/IPC/read"}
    assert parsed["gdrdma_channels"] == 0 and parsed["notes"] == []


def test_a_net_ib_using_line_wrapped_by_its_author_keeps_every_hca():
    parsed = log("nccl_info_bare_net_ib_using_wrapped_over_three_lines_roce_ib_sharp_b300_guide_PARTIAL.log")
    devices = [(d["index"], d["device"], d["link"]) for d in parsed["ib_devices"]]
    roce = ["mlx5_0", "mlx5_1"] + ["mlx5_1%d" % n for n in range(6)]
    assert devices == [(i, name, "RoCE") for i, name in enumerate(roce)] + [
        (8 + n, "mlx5_1%d" % (6 + n), "IB") for n in range(4)]
    assert parsed["other_lines"] == 0


@pytest.mark.parametrize("name, network, devices", [
    # 2.3: "NET/IB: [0] mlx5_0:1/IB" and "Using internal Network IB".
    ("nccl_info_2.3.7_device_lines_using_internal_network_ib_horovod_issue1097_PARTIAL.log", "IB", [(0, "mlx5_0", 1, "IB")]),
    # 2.27: "NET/IB: [2] mlx5_2:uverbs2:1/RoCE provider=Mlx5 ..." per device, no Using line.
    ("nccl_info_2.27.5_per_device_uverbs_lines_without_using_line_slurmv4_PARTIAL.log", None,
     [(2, "mlx5_2", 1, "RoCE"), (0, "mlx5_0", 1, "RoCE"), (5, "mlx5_5", 1, "RoCE")]),
])
def test_hcas_listed_one_per_line_are_read(name, network, devices):
    parsed = log(name)
    assert parsed["network"] == network
    assert [(d["index"], d["device"], d["port"], d["link"]) for d in parsed["ib_devices"]] == devices


def test_nics_merged_into_virtual_devices_are_each_read_under_their_devices_index():
    parsed = log("nccl_info_merged_virtual_nics_two_vdevs_of_two_roce_ports_ibext_v8_nccl_tests_issue373.log")
    assert [(d["index"], d["device"], d["port"], d["link"]) for d in parsed["ib_devices"]] == [
        (0, "mlx5_2", 1, "RoCE"), (0, "mlx5_3", 1, "RoCE"), (1, "mlx5_0", 1, "RoCE"), (1, "mlx5_1", 1, "RoCE")]
    # Its channels run over the second virtual device: both of its NICs.
    assert parsed["transports"] == {"net_ib": 4}
    assert parsed["hcas_used"] == ["mlx5_0", "mlx5_1"]
    assert {entry["hca"] for entry in parsed["channels"]} == {"mlx5_0+mlx5_1"}


def test_two_runs_in_one_text_give_every_figure_from_the_last_run():
    parsed = table("all_gather_perf_two_runs_16G_then_8G_columns_collapsed_to_one_space_gke_page.txt")
    assert parsed["params"]["max_bytes"] == 8589934592
    assert (parsed["largest"]["size"], parsed["busbw_at_largest"], parsed["avg_busbw"]) == (8589934592, 360.42, 126.85)
    assert len(parsed["rows"]) == 47  # both runs' rows are kept


def test_gpudirect_rdma_lines_of_nccl_2_19_and_later_name_the_way_it_was_found():
    """NCCL 2.19 and later print the mode in brackets and the state in small letters (the HCA's name
    without its closing quote, as net_ib.cc's format has it); the older form is capitalised."""
    parsed = parse_nccl_log(
        "node1:10:10 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'rocep1s0f0\n"
        "node1:10:10 [0] NCCL INFO NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 1 'mlx5_1\n"
        "node1:10:10 [0] NCCL INFO GPU Direct RDMA Disabled for HCA 2 'mlx5_2'\n")
    assert (parsed["gdr"]["enabled"], parsed["gdr"]["disabled"]) == (["rocep1s0f0", "mlx5_1"], ["mlx5_2"])


def test_ring_order_lines_of_the_graph_are_no_torn_channel():
    """NCCL_DEBUG_SUBSYS=GRAPH prints each ring's order of ranks ("Ring 00 : 1 -> 0 -> 1"): complete lines
    without a transport, not channel lines cut short."""
    parsed = log("nccl_2.23.4_trace_graph_ring_order_lines_two_procs_PARTIAL.log")
    assert parsed["channels"] == [] and [n["text"] for n in parsed["notes"]] == [None]  # only "no channel line"
    torn = parse_nccl_log("h:1:2 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1\nh:1:2 [0] NCCL INFO Channel 15/0 : 4[4] -> 12[4] [seSetting up\n")
    assert [n["reason"] for n in torn["notes"]][0] == "a channel line cut short before its transport: not counted"
    assert [n["line"] for n in torn["notes"]][0] == 2


def test_a_line_torn_mid_prefix_gives_the_second_record_its_own_host():
    """Two processes writing one stream: "host:1:2 [1] NChost:3:4 [0] NCCL INFO ..." is the second
    process's record, on host "aig-a100", not "NCaig-a100"."""
    parsed = log("nccl_2.23.4_trace_two_procs_line_torn_mid_prefix_host_glued_to_nc_PARTIAL.log")
    assert parsed["hosts"] == ["aig-a100"]
    assert len(parsed["channels"]) == 5 and {c["transport"] for c in parsed["channels"]} == {"P2P/CUMEM/read"}
    # A host that merely begins with "NC", on a line of its own, keeps its name.
    assert parse_nccl_log("NCnode:1:2 [0] NCCL INFO Using network IB\n")["hosts"] == ["NCnode"]


def test_records_inside_other_records_are_read_each_and_a_torn_thread_id_is_no_host():
    torn = log("nccl_torn_writes_thread_id_glued_to_next_host_and_a_record_inside_a_channel_line_ms_swift_issue3934_PARTIAL.log")
    assert torn["hosts"] == ["g183"]  # not "16169g183": the cut thread id of the record before
    # Rank 1's whole record inside rank 7's cut channel line is read; the cut lines are noted, not counted.
    assert torn["transports"] == {"net_ib": 2, "p2p": 12}
    assert [n["reason"] for n in torn["notes"]] == ["a channel line cut short before its transport: not counted"] * 2
    joined = log("nccl_terminal_copy_records_joined_by_blanks_on_one_line_deepep_issue106_PARTIAL.log")
    assert (joined["hosts"], joined["network"], joined["lines"]) == (["VM-17-82-centos"], "IBext", 2)
    assert {device["device"] for device in joined["ib_devices"]} == {"mlx5_bond_%d" % n for n in range(8)}
    # A record glued into another's message with no padding names no host: what stands before it may be torn text.
    glued = parse_nccl_log("aig-a100:1:2 [0] NCCL INFO ncclPollProxyResponse Recei00:3:4 [1] NCCL INFO Received res=0\n")
    assert glued["hosts"] == ["aig-a100"] and glued["lines"] == 1


def test_an_mpi_launchers_lines_inside_the_table_and_an_authors_markdown_table():
    mpi_text = (NCCL / "all_reduce_perf_openmpi_help_message_lines_inside_the_table_8x_a100_blog.txt").read_text()
    mpi = parse_nccl_tests(mpi_text, strict=True)  # mpirun's lines are no rows that fit no table
    assert (len(mpi["rows"]), mpi["avg_busbw"], mpi["largest"]["size"]) == (30, 72.7724, 4294967296)
    assert {n["reason"] for n in mpi["notes"]} == {"a line of the MPI launcher's own, not of nccl-tests"}
    markdown = table("all_reduce_perf_markdown_table_made_by_the_author_only_readme.txt")
    assert markdown["rows"] == [] and markdown["notes"][-1]["reason"] == (
        "no result row: the table is a Markdown table its author made from the output, not the output")


def test_a_prefix_with_another_record_right_after_it_and_its_message_standing_apart_are_both_read():
    # NCCL 2.3 on 8 GPUs of one host, 8 processes on one stdout: "host:pid:tid [7] NCCL INFO host:pid:tid [6] NCCL INFO Ring 04 : 6[6]
    # -> 5[5] via P2P/IPC" (lines 1, 4, 12), and the first prefix's message later on a line of its own (lines 3, 7, 15).
    parsed = log("nccl_info_2.3_ring_lines_prefix_and_message_written_apart_orphan_ring_lines_nccl_issue147_PARTIAL.log")
    assert parsed["transports"] == {"p2p": 17}
    assert (parsed["hosts"], parsed["lines"], parsed["other_lines"]) == (["learnfair062"], 17, 0)
    connections = [(c["channel"], c["src_rank"], c["dst_rank"], c["line"]) for c in parsed["channels"]]
    assert [c for c in connections if c[3] in (1, 3, 4, 7, 12, 15)] == [
        (4, 6, 5, 1), (4, 7, 3, 3), (4, 4, 6, 4), (4, 3, 2, 7), (5, 6, 5, 12), (5, 5, 1, 15)]
    assert [n["reason"] for n in parsed["notes"]] == [
        "line(s) 1, 4, 12 hold a record's prefix with another record right after it: processes sharing one stream wrote a prefix "
        "and its message apart, so that message stands elsewhere (a later line without prefix) or is lost",
        "channel line(s) 3, 7, 15 stand without NCCL's prefix (written apart from it, another process's output between them): "
        "read as channels whose host is not known"]


def test_a_channel_line_without_prefix_alone_is_still_no_nccl_log():
    # Constructed: one of the fixture's bare lines on its own, and after an application's line: nothing says it is NCCL's.
    with pytest.raises(NcclOutputError):
        parse_nccl_log("Ring 04 : 7[7] -> 3[3] via P2P/IPC\n")
    with pytest.raises(NcclOutputError):
        parse_nccl_log("Epoch 1/24\nRing 04 : 7[7] -> 3[3] via P2P/IPC\n", strict=True)


def test_nccl_2_3s_socket_interface_lines_are_the_socket_transports_where_it_counts_them():
    # "NET : Using interface eth0:172.17.0.2<0>" then "NET/Socket : 1 interfaces found" (NCCL 2.3.7, libibverbs missing).
    parsed = log("nccl_info_2.3.7_no_libibverbs_internal_network_socket_net_using_interface_mpi_tag_horovod_issue1167_PARTIAL.log")
    assert (parsed["network"], parsed["verbs_missing"], parsed["version"]) == ("Socket", True, "2.3.7+cuda9.0")
    assert parsed["socket_interfaces"] == [{"index": 0, "name": "eth0", "address": "172.17.0.2"}]
    assert parsed["warnings"] == ["Failed to open libibverbs.so[.1]"]
    # The same line before "NET/IB : Using interface ib0 for sideband communication" is IB's sideband: no socket interface.
    sideband = log("nccl_info_2.3.7_device_lines_using_internal_network_ib_horovod_issue1097_PARTIAL.log")
    assert (sideband["socket_interfaces"], sideband["ib_devices"]) == ([], [{"index": 0, "device": "mlx5_0", "port": 1, "link": "IB"}])
    assert sideband["notes"] == [{"line": None, "text": None, "reason": "no channel line (NCCL INFO Channel ... via ...): the log does "
                                  "not say which transport NCCL connected (NCCL_DEBUG=INFO prints them when a communicator is set up)"}]


def test_nccl_2_3s_socket_list_then_ib_sideband_pick_and_a_count_above_the_lines_shown():
    # Constructed in the form of NCCL 2.3.7's findInterfaces() lines (src/include/socket.h at v2.3.7-1): the socket transport's three
    # interfaces and their count, then IB's one sideband pick, then a count whose lines the text does not hold.
    prefix = "ml3:32632:32662 [0] NCCL INFO "
    text = "".join(prefix + line + "\n" for line in (
        "NET : Using interface enp0s31f6:10.92.42.96<0>", "NET : Using interface virbr0:192.168.122.1<0>",
        "NET : Using interface br-4e5f60905511:172.18.0.1<0>", "NET/Socket : 3 interfaces found",
        "NET : Using interface enp0s31f6:10.92.42.96<0>", "NET/IB : Using interface enp0s31f6 for sideband communication",
        "Using network Socket"))
    parsed = parse_nccl_log(text)
    assert parsed["socket_interfaces"] == [{"index": 0, "name": "enp0s31f6", "address": "10.92.42.96"},
                                           {"index": 1, "name": "virbr0", "address": "192.168.122.1"},
                                           {"index": 2, "name": "br-4e5f60905511", "address": "172.18.0.1"}]
    assert parsed["ib_devices"] == [] and parsed["network"] == "Socket"
    cut = parse_nccl_log(prefix + "NET : Using interface eth0:10.0.0.1<0>\n" + prefix + "NET/Socket : 2 interfaces found\n")
    assert cut["socket_interfaces"] == [{"index": None, "name": "eth0", "address": "10.0.0.1"}]
    assert cut["notes"][0] == {"line": 2, "text": "NET/Socket : 2 interfaces found",
                               "reason": "NET/Socket found 2 interface(s) but the text names 1 before it: only those are known, not their index"}


def test_rays_note_on_a_repeated_using_network_line_is_no_part_of_the_network():
    # vLLM on Ray, NCCL 2.21.5: every init line deduplicated, "NCCL INFO Using network IB [repeated 14x across cluster]".
    parsed = log("nccl_info_2.21.5_vllm_ray_dedup_note_repeated_across_cluster_on_using_network_and_init_lines_deepseek_v2_5_PARTIAL.log")
    assert (parsed["network"], parsed["networks"], parsed["notes"]) == ("IB", ["IB"], [])
    assert parsed["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_CUMEM_ENABLE": "0"}
    assert [device["device"] for device in parsed["ib_devices"]] == ["mlx5_%d" % n for n in range(8)]
    assert [(c["channel"], c["src_rank"], c["dst_rank"], c["transport"]) for c in parsed["channels"]] == [(23, 6, 7, "P2P/IPC/read")]
    # Constructed in the fixture's form: a socket fallback Ray deduplicated is still the network "Socket".
    socket = parse_nccl_log("(RayWorkerWrapper pid=660) host:660:660 [6] NCCL INFO Using network Socket [repeated 7x across cluster]\n")
    assert socket["network"] == "Socket"


def test_an_authors_remark_after_a_channels_transport_or_a_value_is_left_out_and_the_line_read():
    # A generated page's "[cite: N]" after every line (Ray on GKE, gIB on B200): both GPUDirect RDMA channels are read.
    cited = log("nccl_info_gib_ray_b200_ansi_remnant_cite_marks_after_channel_and_env_lines_dranet_ray_doc_PARTIAL.log")
    assert cited["transports"] == {"net_plugin": 2} and (cited["net_channels"], cited["gdrdma_channels"]) == (2, 2)
    assert [(c["channel"], c["src_rank"], c["dst_rank"], c["direction"], c["transport"], c["net"], c["net_device"], c["line"])
            for c in cited["channels"]] == [(2, 10, 2, "receive", "NET/gIB/2/GDRDMA", "gIB", 2, 14),
                                            (2, 2, 10, "send", "NET/gIB/2/GDRDMA", "gIB", 2, 15)]
    assert cited["env"] == {"NCCL_NET_GDR_LEVEL": "PIX"} and cited["gdr"]["enabled"] == ["mlx5_0"]
    assert cited["notes"] == [{"line": None, "text": None, "reason": (
        "line(s) 3, 4, 7, 10, 11, 14, 15 carry an author's remark after NCCL's message ('[cite: 1887]' on line 3), no part of "
        "NCCL's output: the messages are read without it")}]
    # A guide's "# comment" after each bare line: the IB channel is read, and P2P and SHM keep only their transport.
    annotated = log("nccl_info_bare_lines_author_hash_comments_after_transport_and_network_guide_PARTIAL.log")
    assert annotated["transports"] == {"net_ib": 1, "p2p": 1, "shm": 1} and annotated["gdrdma_channels"] == 1
    assert [c["transport"] for c in annotated["channels"]] == ["P2P/CUMEM", "SHM/direct", "NET/IB/3/GDRDMA"]
    assert (annotated["network"], annotated["networks"]) == ("IBext", ["IBext"])
    # The guide's "via NET/Socket" names no device, which NCCL always prints: said so, not taken for a cut line.
    assert [(n["line"], n["reason"]) for n in annotated["notes"] if n["line"] is not None] == [
        (5, "a channel line whose transport names no device ('NET/Socket', where NCCL prints NET/<network>/<device>): not counted")]
    # Constructed: a channel line whose transport glued another program's words is still cut, whatever follows it.
    torn = parse_nccl_log("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDSetting up # x\n")
    assert torn["channels"] == []
    assert torn["notes"][0]["reason"] == "a channel line cut short ('NET/IB/0/GDSetting up' after via): not counted"


def test_a_channel_line_wrapped_right_after_via_takes_its_transport_from_the_next_line():
    # A terminal copy of joined records (DeepEP issue 106), wrapped at "... [receive] via" with " NET/IBext/4/GDRDMA" on line 2,
    # and a first record whose prefix the copy lost.
    parsed = log("nccl_terminal_copy_channel_wrapped_after_via_leading_record_without_prefix_deepep_issue106_turn6_PARTIAL.log")
    assert parsed["transports"] == {"net_ib": 9} and parsed["gdrdma_channels"] == 9
    connections = [(c["channel"], c["src_rank"], c["dst_rank"], c["transport"], c["line"]) for c in parsed["channels"]]
    assert (12, 13, 5, "NET/IBext/5/GDRDMA", 1) in connections and (15, 12, 4, "NET/IBext/4/GDRDMA", 1) in connections
    assert (parsed["hosts"], parsed["lines"], parsed["other_lines"]) == (["VM-17-82-centos"], 2, 0)
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [
        (1, "the line starts inside a record, before its prefix (a copy cut there): that record is read without its host"),
        (1, "the channel line 1 ends at its \"via\" (the line was wrapped there): its transport NET/IBext/4/GDRDMA is read from "
            "the start of line 2")]
    # Constructed: a line after "via" that does not start with a transport is read as it is, and the channel is still cut.
    cut = parse_nccl_log("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via\nh:1:2 [0] NCCL INFO Using network IB\n")
    assert (cut["channels"], cut["network"], cut["lines"]) == ([], "IB", 2)
    assert cut["notes"][0] == {"line": 1, "text": "Channel 00/0 : 0[0] -> 1[0] [send] via",
                               "reason": "a channel line cut short before its transport: not counted"}


def test_a_version_a_page_split_with_a_blank_is_not_known_not_its_first_figure():
    # Google Cloud's gIB page as text: "NCCL INFO NCCL version 2 .23.4+cuda12.2".
    parsed = log("nccl_gib_doc_page_text_version_split_2_space_dot_23_gcloud_doc_PARTIAL.log")
    assert parsed["version"] is None
    assert parsed["notes"][0] == {"line": 3, "text": "... NCCL INFO NCCL version 2 .23.4+cuda12.2", "reason": (
        "the version line holds no whole version ('2', where NCCL prints major.minor.patch): the version is not known")}
    # A whole version after it is read (constructed).
    both = parse_nccl_log("h:1:2 [0] NCCL INFO NCCL version 2 .23.4\nh:1:2 [0] NCCL INFO NCCL version 2.23.4+cuda12.2\n")
    assert both["version"] == "2.23.4+cuda12.2"


def test_processes_that_did_not_form_one_communicator_leave_the_bus_bandwidth_unread():
    # nccl-tests issue 294: 16 processes of a binary built without MPI=1, each a one-rank job; rows only, busbw 0.00.
    rows_only = table("all_reduce_perf_rows_only_busbw_0_beside_algbw_sizes_twice_unordered_no_mpi_build_nccl_tests_issue294_PARTIAL.txt")
    assert (len(rows_only["rows"]), rows_only["largest"]["size"], rows_only["largest"]["out_of_place"]["algbw"]) == (5, 536870912, 637.23)
    assert (rows_only["busbw_at_largest"], rows_only["busbw_at_largest_gbps"], rows_only["avg_busbw"]) == (None, None, None)
    assert rows_only["notes"][-1] == {"line": None, "text": None, "reason": (
        "the rows give busbw 0.00 beside algbw 637.23 GB/s at 536870912 bytes, the figures of one rank, and the text lists no "
        "device: one GPU on purpose, or processes that did not form one communicator (nccl-tests built without MPI=1), is not "
        "known: no bus bandwidth is read")}
    # nccl-tests issue 17: the old layout, and an Avg bus bandwidth line of 0, which is the same one rank's figure.
    old = table("all_reduce_perf_old_layout_row_busbw_0_avg_bus_bandwidth_0_no_hash_nccl_tests_issue17.txt")
    assert (old["busbw_at_largest"], old["avg_busbw"], old["out_of_bounds"], old["largest"]["in_place"]["algbw"]) == (
        None, None, {"count": 0, "ok": True}, 139715.53)
    assert old["notes"][-1]["reason"].startswith("the rows give busbw 0.00 beside algbw 60.0 GB/s at 134217728 bytes")
    # The same thread's next comment: both processes list themselves as rank 0.
    devices = table("all_reduce_perf_two_processes_both_rank_0_devices_only_no_hash_nccl_tests_issue17_comment.txt")
    assert [(d["rank"], d["host"]) for d in devices["devices"]] == [(0, "ip-172-31-6-103"), (0, "ip-172-31-12-213")]
    assert devices["notes"][-1] == {"line": 3, "text": "#   Rank  0 on ip-172-31-12-213 device  0 [0x00] Tesla M60", "reason": (
        "rank 0 is listed for more than one process (ip-172-31-6-103, ip-172-31-12-213): the processes did not form one "
        "communicator, each ran as a job of its own (nccl-tests built without MPI=1, or started so)")}
    # nccl-tests issue 107: each process printed its header, so the parameters come twice before the two "Rank 0" lines.
    twice = table("all_reduce_perf_header_printed_twice_two_processes_both_rank_0_no_rows_nccl_tests_issue107_PARTIAL.txt")
    assert [(d["rank"], d["pid"]) for d in twice["devices"]] == [(0, 1320), (0, 2066)] and twice["busbw_at_largest"] is None
    assert twice["notes"][-1]["line"] == 9 and twice["notes"][-1]["reason"] == (
        "rank 0 is listed for more than one process (pid 1320 on ip-172-31-20-228, pid 2066 on ip-172-31-22-230): the processes "
        "did not form one communicator, each ran as a job of its own (nccl-tests built without MPI=1, or started so); the "
        "parameters printed again on line 5 are the other process's header")
    # Constructed: issue 17's two device lines, then its row: one note says both, and no figure is read.
    joined = parse_nccl_tests(
        (NCCL / "all_reduce_perf_two_processes_both_rank_0_devices_only_no_hash_nccl_tests_issue17_comment.txt").read_text()
        + (NCCL / "all_reduce_perf_old_layout_row_busbw_0_avg_bus_bandwidth_0_no_hash_nccl_tests_issue17.txt").read_text())
    assert (joined["busbw_at_largest"], joined["avg_busbw"]) == (None, None)
    assert joined["notes"][-1]["reason"].endswith("; the rows give busbw 0.00 beside algbw 60.0 GB/s at 134217728 bytes, the "
                                                  "figures of one rank: no bus bandwidth is read")
    # Constructed: two processes of two GPUs each (-g 2), each its own job: its busbw is not 0, but it is one process's.
    header = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
    pair = "".join("#  Rank %2d Group  0 Pid %d on %s device %2d [0x%02x] NVIDIA H800\n" % (rank, pid, host, rank, rank)
                   for pid, host in ((798, "hw14"), (2311, "hw15")) for rank in (0, 1))
    row = "8589934592 2147483648 float sum -1 60000 143.17 143.17 0 60000 143.17 143.17 0\n"
    split = parse_nccl_tests(pair + header + row)
    assert split["busbw_at_largest"] is None and split["notes"][-1]["reason"].endswith("; the rows are one process's: no bus bandwidth is read")
    # Constructed: the same four GPUs as one job's ranks 0-3, each listed once, keep their figures and make no note.
    job = "".join("#  Rank %2d Group  0 Pid %d on %s device %2d [0x%02x] NVIDIA H800\n" % (rank, pid, host, rank % 2, rank)
                  for rank, pid, host in ((0, 798, "hw14"), (1, 799, "hw14"), (2, 2311, "hw15"), (3, 2312, "hw15")))
    one_job = parse_nccl_tests(job + header + row)
    assert (one_job["busbw_at_largest"], one_job["notes"]) == (143.17, [])


def test_a_run_on_one_gpu_on_purpose_keeps_its_bus_bandwidth_of_0_as_printed():
    # mpirun -np 1 ... -g 1 on one A10G: one device line, one process, busbw 0.00 as nccl-tests defines it for one rank.
    alone = table("all_reduce_perf_one_gpu_on_purpose_mpirun_np_1_busbw_0_beside_algbw_a10g_aws_batch_mnp_doc_PARTIAL.txt")
    assert [(d["rank"], d["pid"], d["host"]) for d in alone["devices"]] == [(0, 1428, "ip-10-0-139-244")]
    assert (len(alone["rows"]), alone["largest"]["size"], alone["largest"]["out_of_place"]["algbw"]) == (25, 134217728, 243.09)
    assert (alone["busbw_at_largest"], alone["avg_busbw"], alone["notes"]) == (0.0, 0.0, [])


def test_warn_lines_that_name_the_function_after_file_and_line_keep_their_host():
    # NVIDIA/nccl issue 2303 (NCCL 2.30.7 on GB200): NCCL's time stamp before each WARN, and the function in parentheses
    # after its file and line ("misc/strongstream.cc:424 (ncclStrongStreamSynchronize) NCCL WARN ...").
    parsed = log("nccl_2.30.7_warn_time_stamp_and_function_in_parentheses_gb200_teardown_nccl_issue2303_PARTIAL.log")
    assert (parsed["hosts"], parsed["lines"], parsed["other_lines"]) == (["watchtower-navy-cn13"], 4, 0)
    assert parsed["warnings"] == ["Cuda failure 'unspecified launch failure'",
                                  "commDestroySync: comm 0x3a0f7f50 rank 1 sync deviceStream error 1",
                                  "commReclaim: cleanup comm 0x3a0f7f50 rank 1 failed in destroy/abort, error 1"]
    # Constructed: the form without the function reads as before.
    older = parse_nccl_log("h1:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer\n")
    assert (older["hosts"], older["warnings"]) == (["h1"], ["socketProgress: Connection closed by remote peer"])


def test_an_authors_remark_in_parentheses_after_a_channels_transport_is_left_out():
    # The same issue's run B: "via P2P/CUMEM (all 256 connect lines are P2P/CUMEM)", the author's words after the transport.
    parsed = log("nccl_info_2.30.7_channel_transport_then_authors_remark_in_parentheses_mnnvl_off_nccl_issue2303_PARTIAL.log")
    assert [(c["channel"], c["sub"], c["transport"], c["kind"]) for c in parsed["channels"]] == [(0, 0, "P2P/CUMEM", "p2p")]
    assert (parsed["env"], parsed["lines"], parsed["other_lines"]) == ({"NCCL_CUMEM_ENABLE": "1", "NCCL_MNNVL_ENABLE": "0"}, 5, 4)
    assert parsed["notes"] == [{"line": None, "text": None, "reason": (
        "line(s) 6 carry an author's remark after NCCL's message ('(all 256 connect lines are P2P/CUMEM)' on line 6), no part "
        "of NCCL's output: the messages are read without it")}]
    # Constructed: the same remark after a network transport leaves it counted; NCCL's own parentheses (PXN's proxy
    # rank, written without a blank) stay part of the transport.
    net = parse_nccl_log("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA (all of them)\n"
                         "h:1:2 [0] NCCL INFO Channel 01/0 : 3[3] -> 8[0] [send] via NET/IB/5(2)/GDRDMA/Shared\n")
    assert [(c["transport"], c["kind"], c["net_device"], c["gdrdma"]) for c in net["channels"]] == [
        ("NET/IB/0/GDRDMA", "net_ib", 0, True), ("NET/IB/5(2)/GDRDMA/Shared", "net_ib", 5, True)]


def test_a_prefix_less_nccl_message_beside_tagged_lines_is_read_without_a_host():
    # A guide's "two lines that explain it": NET/IB's GPUDirect RDMA line cut to its message, NCCL's INFO tag kept on the next.
    parsed = log("nccl_bare_gdr_disabled_line_beside_one_tagged_info_line_rocep_gb10_vllm_guide_PARTIAL.log")
    assert parsed["gdr"] == {"rings": [], "enabled": [], "disabled": ["rocep1s0f1"]}
    assert (parsed["lines"], parsed["other_lines"], parsed["hosts"]) == (2, 1, [])
    assert parsed["notes"][0] == {"line": None, "text": None, "reason": (
        "line(s) 1 hold NCCL's messages without its prefix and INFO tag (an author cut them) beside lines that have them: "
        "read as NCCL's INFO messages, their host not known")}
    # Constructed: such a line alone is still no NCCL log.
    with pytest.raises(NcclOutputError):
        parse_nccl_log("NET/IB : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f1'\n")


def test_rows_that_count_wrong_elements_say_the_check_of_the_results_failed():
    # NVIDIA/nccl issue 1184 (NCCL 2.18.3, NCCL_PROTO=SIMPLE, DGX-H100 to DGX-A100): #wrong 237858 at 512 KiB, and no
    # "Out of bounds values" line in the paste.
    name = "all_reduce_perf_rows_count_wrong_elements_no_bounds_line_proto_simple_dgx_h100_nccl_issue1184_PARTIAL.txt"
    parsed = table(name)
    assert [row["size"] for row in parsed["rows"]] == [8, 262144, 524288]
    assert (parsed["busbw_at_largest"], parsed["out_of_bounds"], parsed["largest"]["in_place"]["wrong"]) == (0.79, None, "238038")
    assert parsed["notes"] == [{"line": 7, "text": (NCCL / name).read_text().splitlines()[6], "reason": (
        "1 row(s) count wrong elements (#wrong 237858 out-of-place, 238038 in-place at 524288 bytes, the first): nccl-tests' "
        "check of the results failed there, so their bandwidth is that of a run that corrupted data")}]
    # The layout before 2.10: its "error" column holds the largest relative error (2e-07), no count of wrong elements.
    old = table("nccl_tests_all_reduce_then_alltoall_tables_unnamed_old_layout_nccl_tests_issue78_PARTIAL.txt")
    assert any(row["out_of_place"]["wrong"] not in ("0e+00", None) for row in old["rows"])
    assert not any("wrong elements" in note["reason"] for note in old["notes"])
