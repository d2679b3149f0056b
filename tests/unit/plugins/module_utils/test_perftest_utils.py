"""perftest output: every captured file parses to results or classifies to one cause; the runner
always stops its background server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _perftest as pt
from ansible_collections.rdma.node.plugins.module_utils import _perftest_output as pto

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perftest"
FAKE = Path(__file__).resolve().parents[3] / "fake_tools" / "perftest" / "fake_perftest.py"
MIB_GBPS = 2 ** 20 * 8 / 1e9


def fixture(name):
    return (FIXTURES / name).read_text()


# What each captured file must give: the rows (bytes, bw_average_gbps) or the cause and its line.
EXPECTED = {
    # perror() of the key exchange says "Success" first; the line after it says what failed.
    "err_ib_read_bw_a_server_pib_softib_pp_read_keys_success_couldnt_read_remote_address_pib_issue3.txt": (
        "remote_unreachable", "Couldn't read remote address"),
    "err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt": ("memlock", "Couldn't allocate MR"),
    "err_ib_send_lat_port_state_down_couldnt_set_link_layer.txt": ("port_down", "Port number 1 state is Down"),
    "seed_err_ib_read_bw_server_ethernet_read_keys.txt": (
        "remote_unreachable", "ethernet_read_keys: Couldn't read remote address"),
    "seed_err_ib_write_bw_mlx5_0_port_down_server.txt": ("port_down", "Port number 1 state is Down"),
    "seed_err_ib_write_bw_mlx5_0_port_down_client.txt": ("port_down", "Port number 1 state is Down"),
    "seed_err_ib_write_bw_mlx5_bond_0_device_not_found.txt": ("device_not_found", "IB device mlx5_bond_0 not found"),
    "ib_read_bw_a_mlx4_IB_MBsec.txt": [(2 ** n, None) for n in range(1, 24)],
    "ib_read_bw_a_mlx5_IB_header_lost_hash_of_iterations_prompt_no_space_ucx_issue8852.txt": [
        (size, round(average * MIB_GBPS, 6)) for size, average in
        ((2, 4.67), (4, 9.71), (8, 19.50), (16, 38.95), (32, 77.83), (64, 155.39), (128, 310.05))],
    "ib_write_bw_postlist_report_gbits_roce_tabs_in_rows.txt": [(8, 0.48)],
    "ib_write_bw_s1M_client_IB_MBsec.txt": [(1048576, round(11129.09 * MIB_GBPS, 6))],
    "ib_write_bw_s1M_server_IB_MBsec.txt": [(1048576, round(11129.09 * MIB_GBPS, 6))],
    "seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt": [(65536, 94.71)],
    "seed_ib_write_bw_loopback_report_gbits_mlx5_1_a100.txt": [(65536, 183.61)],
    "seed_ib_write_bw_loopback_terminal_with_prompts_v100.txt": [(65536, 94.71)],
    # GPU memory (--use_cuda, --use_cuda_dmabuf) in pods: the CUDA lines around the table are read.
    "ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_server.txt": [(65536, 10.42)],
    "ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_client.txt": [(65536, 10.42)],
    "ib_write_bw_use_cuda_dmabuf_a_roce_pod_client_rst_indented.txt": [(2 ** n, None) for n in range(1, 24)],
    # GPU memory that could not be registered (no peer memory): "Couldn't allocate MR" after a GPU buffer is
    # not the memlock limit; perftest 4.5-0.20 and later add the errno (14, EFAULT).
    "err_ib_write_bw_use_cuda_client_couldnt_allocate_MR_bad_address_pod_terminal_with_prompts_issue126.txt": ("gpu_memory", "Couldn't allocate MR"),
    "err_ib_write_bw_use_cuda_server_couldnt_allocate_MR_k80_issue31.txt": ("gpu_memory", "Couldn't allocate MR"),
    "err_use_cuda_couldnt_allocate_MR_error14_snippet_issue346.txt": ("gpu_memory", "Couldn't allocate MR with error=14"),
    # Failures of the queue pair itself: created (irdma's default inline size), connected (modify QP to RTR),
    # or a work request that completed with an error status.
    "err_ib_write_lat_server_irdma_unable_to_create_qp_inline_issue139.txt": ("qp_create", "Unable to create QP."),
    # MLNX_OFED's user space on an upstream kernel: the device query fails first, the queue pair errors follow.
    "err_ib_write_bw_server_couldnt_get_device_attributes_then_unable_create_qp_mofed_on_upstream_5_1.txt": (
        "device_query", "Couldn't get device attributes"),
    "err_ib_write_bw_failed_modify_qp_rtr_grh_required_issue393.txt": ("qp_connect", "Failed to modify QP 122273 to RTR"),
    "err_ib_write_bw_use_cuda_bidir_completion_error_status4_syndrom_0x51_issue173.txt": (
        "completion_error", "Completion with error at client"),
    # rdma_cm (-R): the server refused the connection (ECONNREFUSED); a socket exchange that found no server.
    "err_ib_write_bw_rdma_cm_q1026_event_rejected_cxgb4_issue54.txt": ("remote_unreachable", "Event: RDMA_CM_EVENT_REJECTED; error: -111."),
    "err_ib_write_bw_couldnt_connect_unable_init_socket_joined_line_pr228.txt": (
        "remote_unreachable", "Couldn't connect to 192.168.125.211:18515"),
    # Newer perftest (Connected/Completed/Total run time, the sampled CPU clock) on AMD's ionic NICs, 4 QPs, -b -a;
    # one server in GPU memory through ROCm.
    "ib_write_bw_bidir_q4_a_ionic_client_enhanced_reorder.txt": [(2 ** n, None) for n in range(1, 16)] + [(65536, 775.03)] + [
        (2 ** n, None) for n in range(17, 23)] + [(8388608, 779.21)],
    "ib_write_bw_bidir_q4_a_ionic_server_background_terminal_with_prompts_perftest_new.txt": [(2 ** n, None) for n in range(1, 23)] + [
        (8388608, 779.21)],
    "ib_send_bw_a_server_mlx5_ib_mail_quoted_tabs_lost_terminal_with_prompts_qemu_devel_2024.txt": [(2 ** n, None) for n in range(1, 23)] + [
        (8388608, round(11511.01 * MIB_GBPS, 6))],
    "ib_atomic_bw_then_ib_atomic_lat_two_tests_wrapped_terminal_with_prompts_mlx4.txt": [(8, round(18.67 * MIB_GBPS, 6))],
    # Rows of two clients' --run_infinitely runs pasted without their header (perftest issue #130), read in the bandwidth columns.
    "ib_send_bw_run_infinitely_commands_then_rows_without_header_node_b_node_c_issue130_with_other_lines_PARTIAL.txt": [
        (4194304, round(average * MIB_GBPS, 6)) for average in (965.20, 1539.00, 519.20, 1437.20, 2852.20, 1360.20, 491.19, 32.40)],
    # perftest's own "allocated mmap buffer of size ... at ..." before the header of an rdma_cm server.
    "ib_write_bw_rdma_cm_server_allocated_mmap_buffer_line_mlx5_1_go_test_data.txt": [(65536, 344.50)],
    # perftest of 2017 on softiwarp ("Gid index"), in a Markdown fence.
    "err_ib_send_bw_siw_iwarp_old_gid_index_spelling_couldnt_allocate_mr_segfault_fenced_softiwarp_issue23_with_other_lines_PARTIAL.txt": (
        "memlock", "Couldn't allocate MR"),
    "ib_write_bw_bidir_use_rocm_mi355x_ionic_server_prompt.txt": [(2 ** n, None) for n in range(1, 16)] + [(65536, 687.41)] + [
        (2 ** n, None) for n in range(17, 23)] + [(8388608, 697.97)],
    # OFED 1.5-era perftest: UD, no message-rate column, commas between the address fields.
    "ib_send_bw_a_UD_mlx4_old_perftest_commas_in_addresses_no_msgrate.txt": [(2 ** n, None) for n in range(1, 11)] + [
        (2048, round(2919.91 * MIB_GBPS, 6))],
    # --output=latency: one bare figure, the average latency of 2-byte messages (no bandwidth).
    "ib_write_lat_output_latency_bare_figure_taskset_prompts_comments.txt": [(2, None)],
    # [ib_send_bw] and [ib_send_lat] in one mail: the bandwidth test alone is read.
    "ib_send_bw_then_ib_send_lat_bare_tables_bracket_labels_rxe_patch_mail_with_prose.txt": [(65536, round(203.13 * MIB_GBPS, 6))],
    # Two runs of one test, then three: the first run alone is read (the others' figures are not a second side's).
    "ib_read_bw_hns_2_two_client_runs_kernel_bug_lines_glued_job_number_terminal_with_prompts.txt": [(65536, round(9044.77 * MIB_GBPS, 6))],
    "ib_send_bw_1GiB_128MiB_1MiB_three_runs_time_output_quoted_mail_with_prose.txt": [(1073741824, round(6159.46 * MIB_GBPS, 6))],
    # Duration runs (-D), whose peak perftest does not measure; DC with its SRQ numbers; another run's server.
    "ib_write_bw_use_cuda_dmabuf_D60_q16_rdma_cm_client_mtu_lowered_peak_not_measured_pod_prompt.txt": [(65536, 181.46)],
    "ib_send_bw_UD_D10_client_max_msg_size_in_UD_changing_mtu_peak_not_measured.txt": [(4096, 94.691614)],
    "ib_write_bw_a_DC_q2_server_dot_slash_command_srqn_in_addresses.txt": [(8388608, 97.56)],
    "ib_send_bw_n5_client_then_server_of_another_run_terminal_with_prompts.txt": [(1024, 2.222478)],
    # A launcher's label before each line; an rdma_cm latency server; two runs at one size (other message rates).
    "ib_send_lat_two_sides_rank_labels_before_each_line_h200_modal.txt": [(2, None)],
    "ib_send_lat_server_rxe_ipv6_rdma_cm_waiting_lines_no_gpu_container_prompt.txt": [(2, None)],
    "ib_send_bw_two_runs_same_size_other_message_rates_case1_case2_mail_with_prose.txt": [(1024, round(5544.28 * MIB_GBPS, 6))],
    "ib_send_bw_two_runs_same_size_figures_in_markdown_bold_case1_case2_issue65_verbatim_with_other_lines.txt": [(1024, round(5544.28 * MIB_GBPS, 6))],
    # A one-way RDMA test: two tables of all sizes are two runs; a table of all sizes and one row are its two sides.
    "ib_read_bw_a_rxe0_two_runs_before_and_after_a_patch_snip_lines_mail_with_prose.txt": [(2 ** n, None) for n in range(1, 21)] + [
        (2097152, round(24.10 * MIB_GBPS, 6)), (4194304, None), (8388608, round(17.82 * MIB_GBPS, 6))],
    "ib_write_bw_a_loopback_server_and_client_lines_interleaved_superbench.txt": [(2 ** n, None) for n in range(1, 24)],
    # The same one-way test with the server's one row pasted before the client's table.
    "ib_write_bw_a_use_rocm_one_way_server_row_before_client_table_labels_with_other_lines.txt": [
        (2 ** n, None) for n in range(1, 23)] + [(8388608, round(19044.43 * MIB_GBPS, 6))],
    # A test harness's prefix before each line; a latency row with two figures glued; a receiver's peak not measured.
    "ib_send_bw_multicast_client_fragment_avocado_job_log_stdout_prefix_with_other_lines.txt": [(1024, round(1476.74 * MIB_GBPS, 6))],
    "ib_send_lat_rxe0_two_sides_host_labels_t_stdev_and_p99_glued_lab_report_with_other_lines.txt": [(2, None)],
    "ib_send_bw_rxe0_two_sides_host_labels_server_peak_not_measured_lab_report_with_other_lines.txt": [(65536, None)],
    "err_ib_send_lat_siw_couldnt_get_context_for_the_device_twice_ntb_cxl_issue90.txt": (
        "device_query", "Couldn't get context for the device"),
    # Server and client in one terminal: their 1024-byte rows on one line; the first is reported.
    "ib_send_bw_UD_hns_server_and_client_in_one_terminal_rows_glued_on_one_line_kunpeng.txt": [(1024, round(7876.21 * MIB_GBPS, 6))],
    # An author's "#  " before the table's header and row; the commands run after the environment they set.
    "ib_write_bw_bidir_D30_table_lines_commented_with_hash_blog.txt": [(65536, round(5830.79 * MIB_GBPS, 6))],
    "ib_write_bw_bidir_use_cuda_D30_env_prefixed_commands_table_lines_commented_with_hash_blog.txt": [(65536, round(5295.75 * MIB_GBPS, 6))],
    # perftest 2012's -F warnings inside the table.
    "ib_write_bw_F_2012_mail_quoted_test_integrity_may_be_harmed_timestamp_warning_cx3.txt": [(65536, round(937.60 * MIB_GBPS, 6))],
    # A server still waiting for its client where the output ends.
    "ib_write_bw_R_server_waiting_banner_only_after_a_scripts_line_with_other_lines_oci_oke.txt": (
        "remote_unreachable", "no result rows: the server was still waiting for a client where the output ends"),
}


def test_every_fixture_has_an_expectation():
    assert sorted(EXPECTED) == sorted(path.name for path in FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_parses_or_classifies(name):
    parsed = pto.parse_perftest(fixture(name))
    expected = EXPECTED[name]
    if isinstance(expected, tuple):
        cause, line = expected
        assert parsed["results"] == []
        assert parsed["bw_average_gbps"] is None
        assert parsed["failure"]["cause"] == cause
        assert parsed["failure"]["line"] == line
        assert parsed["failure"]["hint"] == pto.hint_for(cause)
    else:
        assert parsed["failure"] is None
        assert [row["bytes"] for row in parsed["results"]] == [size for size, dummy in expected]
        for row, (size, average) in zip(parsed["results"], expected):
            if average is not None:
                assert row["bw_average_gbps"] == pytest.approx(average)


@pytest.mark.parametrize("name, gpu", [
    ("ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_client.txt", {"cuda_index": 0, "bus": "82:00", "devices": {"0": "82:00"}}),
    ("err_ib_write_bw_use_cuda_client_couldnt_allocate_MR_bad_address_pod_terminal_with_prompts_issue126.txt",
     {"cuda_index": 0, "bus": "02:00", "devices": {"0": "02:00"}}),
    # perftest before 4.5 named no PCIe address: "There are 2 devices supporting CUDA, picking first..."
    ("err_ib_write_bw_use_cuda_server_couldnt_allocate_MR_k80_issue31.txt", {"cuda_index": 0, "bus": None, "devices": {}}),
    ("err_use_cuda_couldnt_allocate_MR_error14_snippet_issue346.txt", None),
    ("ib_write_bw_s1M_client_IB_MBsec.txt", None),
])
def test_the_gpu_a_run_used(name, gpu):
    parsed = pto.parse_perftest(fixture(name))
    assert parsed["gpu"] == gpu
    assert parsed["gpu_memory"] is (name != "ib_write_bw_s1M_client_IB_MBsec.txt")


def test_gpu_memory_registration_is_memlock_only_with_enomem():
    """The same failure with errno 12 (ENOMEM, what perftest prints when the locked-memory limit refuses the
    registration) is memlock; the sample of issue 346 with its errno changed from 14 to 12."""
    text = fixture("err_use_cuda_couldnt_allocate_MR_error14_snippet_issue346.txt").replace("error=14", "error=12")
    failure = pto.parse_perftest(text)["failure"]
    assert (failure["cause"], failure["line"]) == ("memlock", "Couldn't allocate MR with error=12")
    gpu = pto.parse_perftest(fixture("err_ib_write_bw_use_cuda_client_couldnt_allocate_MR_bad_address_pod_terminal_with_prompts_issue126.txt"))["failure"]
    assert "nvidia_peermem" in gpu["hint"] and "--use_cuda_dmabuf" in gpu["hint"]


@pytest.mark.parametrize("line", [
    "No such device ID (3) exists in system", "DMA-BUF is not supported on this GPU", " Unsupported memory type",
    "CUDA DMA-BUF cannot be used without CUDA", "There are no available device(s) that support CUDA",
])
def test_cuda_errors_before_any_registration_are_gpu_memory(line):
    # perftest's own messages (src/cuda_memory.c, perftest_parameters.c), each followed by its exit.
    failure = pto.classify_failure("initializing CUDA\n" + line + "\n", rc=1)
    assert (failure["cause"], failure["line"]) == ("gpu_memory", line.strip())


def test_memlock_hint_names_the_remediation():
    hint = pto.parse_perftest(fixture("err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt"))["failure"]["hint"]
    assert "rdma.node.node_remediation" in hint
    assert "RLIMIT_MEMLOCK" in hint


@pytest.mark.parametrize("name", [
    "ib_read_bw_a_mlx4_IB_MBsec.txt", "ib_write_bw_s1M_client_IB_MBsec.txt", "ib_write_bw_s1M_server_IB_MBsec.txt",
])
def test_mb_per_sec_is_two_to_the_twenty_bytes(name):
    # bytes x message rate is the bandwidth whatever the unit; perftest's MB/sec agrees with it
    # when read as 2**20 bytes/s (within rounding), and is 4.9 % off when read as 10**6 bytes/s.
    rows = pto.parse_perftest(fixture(name))["results"]
    for row in rows:
        implied = row["bytes"] * row["msg_rate_mpps"] * 8 / 1000
        assert row["bw_average_gbps"] == pytest.approx(implied, rel=0.01)
        assert abs(row["bw_average_gbps"] / MIB_GBPS * 0.008 / implied - 1) > 0.04


def test_read_bw_all_sizes_header_and_units():
    parsed = pto.parse_perftest(fixture("ib_read_bw_a_mlx4_IB_MBsec.txt"))
    assert parsed["test"] == "RDMA_Read BW Test"
    assert parsed["kind"] == "bw"
    assert (parsed["device"], parsed["link_type"], parsed["qps"], parsed["mtu"]) == ("mlx4_0", "IB", 1, 2048)
    assert (parsed["connection_type"], parsed["transport_type"]) == ("RC", "IB")
    assert parsed["header"]["Outstand reads"] == "16"
    assert parsed["unit"] == "MB/sec"
    assert parsed["units_printed"] == ["MB/sec"]
    assert parsed["sides"] == 1 and parsed["sides_agree"] is None
    assert parsed["results"][0] == {
        "bytes": 2, "iterations": 20000, "msg_rate_mpps": 4.710248,
        "bw_peak_gbps": round(9.12 * MIB_GBPS, 6), "bw_average_gbps": round(8.98 * MIB_GBPS, 6),
    }
    assert parsed["bw_average_gbps"] == round(3669.96 * MIB_GBPS, 6)
    assert parsed["local_addresses"] == [{
        "lid": "0x03", "qpn": "0x33905", "psn": "0xae899d", "out": "0x10", "rkey": "0xb0011b4f",
        "vaddr": "0x007f9fdbd08000",
    }]


def test_tabs_in_rows_and_header_and_paste_from_the_title():
    parsed = pto.parse_perftest(fixture("ib_write_bw_postlist_report_gbits_roce_tabs_in_rows.txt"))
    assert parsed["test"] == "RDMA_Write Post List BW Test"
    assert parsed["results"] == [{
        # More than 20000 iterations: perftest does not measure the peak and prints 0.00.
        "bytes": 8, "iterations": 224958464, "msg_rate_mpps": 7.498617, "bw_peak_gbps": None, "bw_average_gbps": 0.48,
    }]
    assert parsed["unit"] == "Gb/sec"
    assert parsed["header"]["rdma_cm QPs"] == "OFF"      # "rdma_cm QPs\t : OFF"
    assert parsed["header"]["Post List"] == "128"
    assert (parsed["device"], parsed["link_type"], parsed["gid_index"]) == ("ib0", "Ethernet", 2)
    assert [n["reason"] for n in parsed["notes"]] == [
        "the peak bandwidth printed as 0.00 was not measured (a duration run, --run_infinitely, more than 20000 iterations or a "
        "send test's receiving side): no peak"]


def test_address_values_with_spaces():
    parsed = pto.parse_perftest(fixture("ib_write_bw_s1M_server_IB_MBsec.txt"))
    assert parsed["server_banner"] is True
    assert parsed["local_addresses"][0]["rkey"] == "0x1fcc bd"
    assert parsed["remote_addresses"][0] == {
        "lid": "0x2c", "qpn": "0x0088", "psn": "0x6dc93a", "rkey": "0x1fcf be", "vaddr": "0x037f026db4030",
    }


@pytest.mark.parametrize("name, average, peak, cpu", [
    ("seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt", 94.71, 94.72, "1000.000000 != 3013.932000"),
    ("seed_ib_write_bw_loopback_report_gbits_mlx5_1_a100.txt", 183.61, 183.66, "863.109000 != 2300.000000"),
])
def test_loopback_in_one_terminal_counts_rows_once(name, average, peak, cpu):
    parsed = pto.parse_perftest(fixture(name))
    assert parsed["sides"] == 2
    assert parsed["sides_agree"] is True
    assert len(parsed["results"]) == 1
    assert parsed["results"][0]["bw_average_gbps"] == average
    assert parsed["results"][0]["bw_peak_gbps"] == peak
    assert parsed["bw_average_gbps"] == average
    assert parsed["units_printed"] == ["MB/sec", "Gb/sec"]
    assert parsed["unit"] == "Gb/sec"
    assert parsed["test"] == "RDMA_Write BW Test"
    assert (parsed["device"], parsed["qps"], parsed["mtu"]) == ("mlx5_1", 1, 4096)
    assert parsed["header"]["TX depth"] == "128"
    assert parsed["header_conflicts"] == {}
    assert len(parsed["warnings"]) == 1 and cpu in parsed["warnings"][0]
    assert any("counted once" in note for note in (n["reason"] for n in parsed["notes"]))


def test_prompts_and_prose_around_the_output():
    parsed = pto.parse_perftest(fixture("seed_ib_write_bw_loopback_terminal_with_prompts_v100.txt"))
    clean = pto.parse_perftest(fixture("seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt"))
    assert parsed["server_banner"] is True and clean["server_banner"] is False
    for key in ("results", "header", "sides", "sides_agree", "unit", "units_printed", "warnings", "failure"):
        assert parsed[key] == clean[key], key
    assert "xxx-01" not in str(parsed["header"])


def test_gbits_figures_under_a_mb_header_are_recognised():
    # The seed's loopback output without the client's Gb/sec table header (derived in memory from
    # the real file): the rows then sit under the server's MB/sec header, as a server without
    # --report_gbits prints its client's Gb/s figures. Reading them as MB/s would give 0.79 Gb/s.
    text = fixture("seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt")
    text = text.replace(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", "")
    parsed = pto.parse_perftest(text)
    assert parsed["units_printed"] == ["MB/sec"]
    assert parsed["unit"] == "Gb/sec"
    assert parsed["results"][0]["bw_average_gbps"] == 94.71
    assert any("MB/sec header carry Gb/sec figures" in note for note in (n["reason"] for n in parsed["notes"]))


def test_sides_that_disagree_are_reported_not_double_counted():
    text = fixture("seed_ib_write_bw_loopback_report_gbits_mlx5_1_a100.txt")
    last = text.rindex(" 65536      5000             183.66             183.61             0.350214")
    text = text[:last] + text[last:].replace("183.61", "180.00", 1)
    parsed = pto.parse_perftest(text)
    assert parsed["sides_agree"] is False
    assert [row["bw_average_gbps"] for row in parsed["results"]] == [183.61]
    assert any("differ between the sides" in note for note in (n["reason"] for n in parsed["notes"]))


def test_libibverbs_warnings_are_not_header_lines():
    # libibverbs prints these before perftest starts when a provider library is missing; prepended
    # here to a real capture.
    warning = ("libibverbs: Warning: couldn't load driver 'libhfi1verbs-rdmav34.so': "
               "libhfi1verbs-rdmav34.so: cannot open shared object file: No such file or directory")
    text = warning + "\n" + fixture("ib_write_bw_s1M_client_IB_MBsec.txt")
    parsed = pto.parse_perftest(text)
    assert parsed["warnings"] == [warning]
    assert parsed["failure"] is None
    assert parsed["results"] == pto.parse_perftest(fixture("ib_write_bw_s1M_client_IB_MBsec.txt"))["results"]
    assert "libibverbs" not in parsed["header"]


def test_paste_that_starts_inside_the_header():
    lines = fixture("ib_read_bw_a_mlx4_IB_MBsec.txt").splitlines()
    parsed = pto.parse_perftest("\n".join(lines[4:]))   # from " Connection type : RC ..."
    assert parsed["test"] is None
    assert parsed["kind"] == "bw"
    assert parsed["connection_type"] == "RC"
    assert parsed["mtu"] == 2048
    assert len(parsed["results"]) == 23


# Latency output rendered with perftest's own format strings (RESULT_FMT_LAT and REPORT_FMT_LAT of
# src/perftest_parameters.h, tabs included) - no captured _lat result is in the fixtures.
LAT_HEADER = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
              "   99% percentile[usec]   99.9% percentile[usec] ")
LAT_ROW = " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"


def test_latency_columns():
    text = "\n".join([
        "---------------------------------------------------------------------------------------",
        "                    RDMA_Write Latency Test",
        " Dual-port       : OFF\t\tDevice         : mlx5_0",
        " Number of qps   : 1\t\tTransport type : IB",
        "---------------------------------------------------------------------------------------",
        LAT_HEADER,
        "Conflicting CPU frequency values detected: 3295.212000 != 5023.444000. CPU Frequency is not max.",
        LAT_ROW % (2, 1000, 1.24, 5.19, 1.27, 1.28, 0.04, 1.37, 5.19),
        LAT_ROW % (4, 1000, 1.25, 4.10, 1.29, 1.30, 0.05, 1.40, 4.10),
        "---------------------------------------------------------------------------------------",
    ])
    parsed = pto.parse_perftest(text)
    assert parsed["kind"] == "lat"
    assert parsed["unit"] == "usec"
    assert parsed["bw_average_gbps"] is None
    assert parsed["failure"] is None
    assert parsed["results"][0] == {
        "bytes": 2, "iterations": 1000, "t_min_usec": 1.24, "t_max_usec": 5.19, "t_typical_usec": 1.27,
        "t_avg_usec": 1.28, "t_stdev_usec": 0.04, "t_p99_usec": 1.37, "t_p99_9_usec": 5.19,
    }
    assert len(parsed["results"]) == 2


def test_latency_in_cycles_and_duration_columns():
    cycles = LAT_HEADER.replace("usec", "cycles") + "\n" + LAT_ROW % (2, 5, 2000.0, 9000.0, 2100.0, 2200.0, 10.0, 9000.0, 9000.0)
    row = pto.parse_perftest(cycles)["results"][0]
    assert row["t_typical_cycles"] == 2100.0 and "t_typical_usec" not in row
    duration = " #bytes        #iterations       t_avg[usec]    tps average\n" + " %-7d       %d            %-7.2f        %-7.2f" % (
        2, 123456, 1.31, 763358.78)
    assert pto.parse_perftest(duration)["results"] == [
        {"bytes": 2, "iterations": 123456, "t_avg_usec": 1.31, "tps_average": 763358.78}]


def test_classification_priority_and_fallbacks():
    client = fixture("err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt")
    server = fixture("seed_err_ib_read_bw_server_ethernet_read_keys.txt")
    # Both sides in one text: the local memory failure explains the exchange failure.
    assert pto.classify_failure(server + client)["cause"] == "memlock"
    timed = pto.classify_failure("", "", rc=124, timed_out=True, timeout=2, role="server")
    assert timed["cause"] == "remote_unreachable"
    assert timed["line"] == "no client completed a test within 2 s; the server was stopped"
    unknown = pto.classify_failure("some output\n", " Failed to complete run_iter_bw function successfully\n", rc=1)
    assert unknown == {"cause": "unknown", "hint": pto.hint_for("unknown"),
                       "line": "Failed to complete run_iter_bw function successfully"}
    assert pto.classify_failure("", "", rc=0)["line"] == "no output at all"
    assert pto.classify_failure(fixture("ib_write_bw_s1M_client_IB_MBsec.txt"), rc=0, has_results=True) is None
    assert pto.classify_failure("Couldn't connect to 10.0.0.1:18515\n Unable to init the socket connection\n")["cause"] \
        == "remote_unreachable"
    assert pto.failure_causes() == ("gpu_memory", "memlock", "device_not_found", "port_down", "device_query", "qp_create", "qp_connect",
                                    "completion_error", "remote_unreachable", "unknown")


def test_results_and_failure_together():
    # -a runs that fail at a large size keep the rows measured before (the write-up: "1M and above fails").
    lines = fixture("ib_read_bw_a_mlx4_IB_MBsec.txt").splitlines()
    text = "\n".join(lines[:30]) + "\n" + fixture("err_ib_read_bw_client_couldnt_allocate_MR_memlock.txt")
    parsed = pto.parse_perftest(text, rc=1)
    assert [row["bytes"] for row in parsed["results"]][-1] == 8192   # rows 2 .. 8192 B
    assert len(parsed["results"]) == 13
    assert parsed["failure"]["cause"] == "memlock"


@pytest.mark.parametrize("value, expected", [
    ("65536", 65536), ("64K", 65536), ("1M", 1048576), ("1m", 1048576), ("2G", 2 ** 31), (" 8 ", 8), ("4KB", 4096),
])
def test_parse_size(value, expected):
    assert pt.parse_size(value) == expected


@pytest.mark.parametrize("value", ["1X", "", "-5", "1.5M", "0"])
def test_parse_size_rejects(value):
    with pytest.raises(pt.PerftestError) as err:
        pt.parse_size(value)
    assert "size %r is not a message size" % (value,) in str(err.value)


def test_build_argv():
    assert pt.build_argv("ib_write_bw", device="mlx5_1", ib_port=1, gid_index=3, size=65536, qps=2,
                         iterations=5000, port=18600, extra_args=["-F"], server="10.0.0.2") == [
        "ib_write_bw", "-d", "mlx5_1", "-i", "1", "-x", "3", "-s", "65536", "-q", "2", "-n", "5000",
        "-p", "18600", "--report_gbits", "-F", "--", "10.0.0.2"]
    assert pt.build_argv("ib_write_lat", all_sizes=True) == ["ib_write_lat", "-a"]
    assert pt.build_argv("ib_read_bw", report_gbits=False) == ["ib_read_bw"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(tool="ib_send_lat", qps=2),
     "qps is only accepted by the bandwidth tools (ib_write_bw, ib_read_bw, ib_send_bw), not by ib_send_lat"),
    (dict(tool="ib_write_bw", size=2, all_sizes=True),
     "size and all are mutually exclusive: all runs every size from 2 bytes to 8 MiB"),
    (dict(tool="ib_atomic_bw"),
     "tool 'ib_atomic_bw' is not a perftest tool this module runs: expected one of ib_write_bw, ib_read_bw, "
     "ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat"),
])
def test_build_argv_rejects(kwargs, message):
    with pytest.raises(pt.PerftestError) as err:
        pt.build_argv(**kwargs)
    assert str(err.value) == message


@pytest.mark.parametrize("server", ["--run_infinitely", "--out_json_file=/etc/cron.d/x", "-R", "-", " -x"])
def test_a_server_that_would_be_an_option_is_refused(server):
    """Issue 24, item 14: the server address was the last argument, so "--run_infinitely" became an option."""
    with pytest.raises(pt.PerftestError) as err:
        pt.build_argv("ib_write_bw", server=server)
    assert str(err.value) == ("server %r is not a host name or address: it starts with '-', which perftest would "
                              "read as an option" % server.strip())


def test_with_deadline():
    assert pt.with_deadline("/usr/bin/timeout", 30, ["ib_write_bw"]) == ["/usr/bin/timeout", "-k", "5", "30", "ib_write_bw"]
    assert pt.with_deadline("timeout", 2.25, ["x"])[3] == "2.25"
    assert pt.with_deadline("timeout", 0.1, ["x"])[3] == "1"


# --- the runner, with the FAKE perftest (tests/fake_tools/perftest) --------------------------


@pytest.fixture
def fake(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    subprocess.run([sys.executable, str(FAKE), "--fake-install", str(bin_dir)], check=True)
    for key in list(os.environ):
        if key.startswith("FAKE_PERFTEST_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", "%s%s%s" % (bin_dir, os.pathsep, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_PERFTEST_PIDFILE", str(tmp_path / "pids"))
    monkeypatch.setenv("FAKE_PERFTEST_CHILD", "1")
    return tmp_path


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def started_pids(tmp_path):
    path = tmp_path / "pids"
    if not path.exists():
        return []
    pids = []
    for line in path.read_text().splitlines():
        dummy, pid, child = line.split()
        pids += [int(pid)] + ([int(child)] if child != "0" else [])
    return pids


def wait_gone(pids, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(pt.pid_alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if pt.pid_alive(pid)]


def run_argv(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_loopback_runner_success(fake, monkeypatch):
    monkeypatch.setenv("FAKE_PERFTEST_SERVER_OUTPUT", str(FIXTURES / "ib_write_bw_s1M_server_IB_MBsec.txt"))
    monkeypatch.setenv("FAKE_PERFTEST_CLIENT_OUTPUT", str(FIXTURES / "ib_write_bw_s1M_client_IB_MBsec.txt"))
    port = free_port()
    run = pt.run_loopback(run_argv, "timeout", ["ib_write_bw", "-p", str(port)],
                          ["ib_write_bw", "-p", str(port), "127.0.0.1"], port, 20, str(fake))
    assert run["server"]["readiness"] == "listening"
    assert run["server"]["rc"] == 0 and run["server"]["killed"] is False
    assert run["client"]["rc"] == 0 and run["client"]["timed_out"] is False
    assert run["client"]["stdout"] == fixture("ib_write_bw_s1M_client_IB_MBsec.txt")
    assert run["server"]["stdout"] == fixture("ib_write_bw_s1M_server_IB_MBsec.txt")
    assert len(started_pids(fake)) == 4
    assert wait_gone(started_pids(fake)) == []


def test_loopback_runner_stops_the_server_when_the_client_raises(fake, monkeypatch):
    monkeypatch.setenv("FAKE_PERFTEST_SERVER_OUTPUT", str(FIXTURES / "ib_write_bw_s1M_server_IB_MBsec.txt"))
    port = free_port()

    def explode(argv):
        raise RuntimeError("the client could not be started")

    with pytest.raises(RuntimeError):
        pt.run_loopback(explode, "timeout", ["ib_write_bw", "-p", str(port)], ["ib_write_bw", "127.0.0.1"],
                        port, 60, str(fake))
    pids = started_pids(fake)
    assert len(pids) == 2          # the fake server and its child, both in the server's group
    assert wait_gone(pids, 1.0) == []


def test_loopback_runner_stops_the_server_on_sigterm(fake, monkeypatch):
    monkeypatch.setenv("FAKE_PERFTEST_SERVER_OUTPUT", str(FIXTURES / "ib_write_bw_s1M_server_IB_MBsec.txt"))
    port = free_port()
    before = signal.getsignal(signal.SIGTERM)

    def terminated(argv):
        os.kill(os.getpid(), signal.SIGTERM)   # what the module process gets when the task is cancelled
        time.sleep(5)

    with pytest.raises(SystemExit):
        pt.run_loopback(terminated, "timeout", ["ib_write_bw", "-p", str(port)], ["ib_write_bw", "127.0.0.1"],
                        port, 60, str(fake))
    assert signal.getsignal(signal.SIGTERM) is before
    assert wait_gone(started_pids(fake), 1.0) == []


def test_background_server_listening_and_stop(fake, monkeypatch):
    monkeypatch.setenv("FAKE_PERFTEST_SERVER_OUTPUT", str(FIXTURES / "ib_write_bw_s1M_server_IB_MBsec.txt"))
    port = free_port()
    server = pt.BackgroundServer(["ib_write_bw", "-p", str(port)], str(fake)).start()
    try:
        state = pt.wait_until_listening(server, port, time.monotonic() + 10)
        assert state == "listening"
        assert server.listening_on(port) is True
        assert server.listening_on(free_port()) is False
        assert set(started_pids(fake)) <= set(pt.group_pids(server.pid))
    finally:
        server.stop()
    assert server.killed is True
    assert pt.group_pids(server.pid) == []
    assert wait_gone(started_pids(fake), 1.0) == []
    server.stop()   # twice is harmless


# -- a /proc that is not the kernel's (issue 24, items 5 and 7) --------------------------------------


def fake_proc(tmp_path):
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    for pid in ("100", "101"):
        (proc / pid).mkdir()
        (proc / pid / "stat").write_text("%s (ib_write_bw) S 1 100 100 0 -1\n" % pid)
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    (proc / "net" / "tcp").write_text(header + "   0: 00000000:4A39 00000000:0000 0A 00000000:00000000 00:00000000 "
                                               "00000000     0        0 5555 1 0000000000000000 100 0 0 10 0\n")
    (proc / "net" / "tcp6").write_text(header)
    (proc / "100" / "fd").mkdir()
    (proc / "100" / "fd" / "3").symlink_to("socket:[5555]")
    return proc


def test_group_and_ports_of_a_fake_proc(tmp_path):
    proc = fake_proc(tmp_path)
    assert sorted(pt.group_pids(100, str(proc))) == [100, 101]
    assert pt.listening_ports([100], str(proc)) == {0x4A39}


@pytest.mark.parametrize("fifo", ["101/stat", "net/tcp"])
def test_a_fifo_in_proc_does_not_hang_the_readers(tmp_path, fifo, in_child):
    proc = fake_proc(tmp_path)
    (proc / fifo).unlink()
    os.mkfifo(proc / fifo)
    pids = in_child(lambda: sorted(pt.group_pids(100, str(proc))))
    ports = in_child(lambda: pt.listening_ports([100], str(proc)))
    assert pids == ([100] if fifo == "101/stat" else [100, 101])
    assert ports == (set() if fifo == "net/tcp" else {0x4A39})


def test_a_process_directory_named_with_a_unicode_digit_is_not_a_process(tmp_path, in_child):
    proc = fake_proc(tmp_path)
    (proc / "\u00b2").mkdir()
    (proc / "\u00b2" / "stat").write_text("2 (x) S 1 100 100 0 -1\n")
    assert in_child(lambda: sorted(pt.group_pids(100, str(proc)))) == [100, 101]


def _numa_tree(root, nodes, with_memory):
    for node, cpus in nodes.items():
        (root / ("node%d" % node)).mkdir(parents=True)
        (root / ("node%d" % node) / "cpulist").write_text(cpus + "\n")
    (root / "has_memory").write_text(with_memory + "\n")
    return str(root)


@pytest.mark.parametrize("tools, node, expected", [
    ({"numactl": "/usr/bin/numactl", "taskset": "/usr/bin/taskset"}, 1,
     {"how": "numactl", "detail": "--cpunodebind=1 --membind=1", "prefix": ["/usr/bin/numactl", "--cpunodebind=1", "--membind=1"]}),
    # A node without memory of its own (CPU-only nodes of some AMD and CXL systems): CPUs only.
    ({"numactl": "/usr/bin/numactl"}, 2, {"how": "numactl", "detail": "--cpunodebind=2", "prefix": ["/usr/bin/numactl", "--cpunodebind=2"]}),
    ({"taskset": "/usr/bin/taskset"}, 1,
     {"how": "taskset", "detail": "-c 24-47,72-95 (the CPUs of NUMA node 1; numactl is not installed, so memory is not bound)",
      "prefix": ["/usr/bin/taskset", "-c", "24-47,72-95"]}),
    ({}, 1, {"how": "none", "detail": "neither numactl nor taskset is installed (NUMA node 1)", "prefix": []}),
    ({"numactl": "/usr/bin/numactl"}, None, {"how": "none", "detail": "no NUMA node was given for the HCA", "prefix": []}),
])
def test_pinning_to_the_hca_numa_node(tmp_path, tools, node, expected):
    nodes = _numa_tree(tmp_path / "node", {0: "0-23,48-71", 1: "24-47,72-95", 2: "96-99"}, "0-1")
    assert pt.pinning(node, tools.get, nodes) == expected


def test_pinning_to_a_node_the_machine_lacks(tmp_path):
    nodes = _numa_tree(tmp_path / "node", {0: "0-3"}, "0")
    assert pt.pinning(1, {"numactl": "/usr/bin/numactl"}.get, nodes) == {
        "how": "none", "detail": "NUMA node 1 does not exist on this machine (%s/node1)" % nodes, "prefix": []}
    assert pt.launch_prefix(pt.pinning(0, {"numactl": "numactl"}.get, nodes), gpu=True) == [
        "env", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "numactl", "--cpunodebind=0", "--membind=0"]


def test_gpu_arguments_follow_the_order_perftest_needs():
    argv = pt.build_argv("ib_write_bw", device="mlx5_2", size=1048576, use_cuda=3, use_cuda_dmabuf=True, extra_args=["-F"], server="10.0.0.2")
    assert argv == ["ib_write_bw", "-d", "mlx5_2", "-s", "1048576", "--report_gbits", "--use_cuda=3", "--use_cuda_dmabuf", "-F", "--", "10.0.0.2"]


def test_old_perftest_separates_the_address_fields_with_commas():
    parsed = pto.parse_perftest(fixture("ib_send_bw_a_UD_mlx4_old_perftest_commas_in_addresses_no_msgrate.txt"))
    assert parsed["local_addresses"] == [{"lid": "0x02", "qpn": "0x70004b", "psn": "0xc14da8"}]
    assert parsed["remote_addresses"] == [{"lid": "0x0b", "qpn": "0x28004c", "psn": "0xfaa100"}]
    assert (parsed["connection_type"], parsed["mtu"], parsed["kind"]) == ("UD", 2048, "bw")


def test_the_bare_figure_of_output_modes_is_read_from_the_command_line_that_asked_for_it():
    parsed = pto.parse_perftest(fixture("ib_write_lat_output_latency_bare_figure_taskset_prompts_comments.txt"))
    assert (parsed["kind"], parsed["unit"], parsed["results"], parsed["notes"]) == (
        "lat", "usec", [{"bytes": 2, "t_avg_usec": 1.846569}], [])
    bandwidth = pto.parse_perftest("$ ib_write_bw -d mlx5_0 -s 1048576 --output=bandwidth 10.0.0.2\n11129.09\n")
    assert (bandwidth["kind"], bandwidth["results"]) == ("bw", [{"bytes": 1048576, "bw_average_gbps": round(11129.09 * MIB_GBPS, 6)}])
    assert bandwidth["bw_average_gbps"] == round(11129.09 * MIB_GBPS, 6)
    # The command as bash's trace (set -x) prints it, after the environment it sets.
    traced = pto.parse_perftest("+ GPUDIRECT_GPU=0 taskset -c 17 ib_write_bw -s 1048576 --output=bandwidth 10.0.0.2\n11129.09\n")
    assert (traced["results"], traced["notes"]) == ([{"bytes": 1048576, "bw_average_gbps": round(11129.09 * MIB_GBPS, 6)}], [])
    gbits = pto.parse_perftest("$ ib_send_bw --report_gbits --output bandwidth host\n96.42\n")
    assert gbits["results"] == [{"bytes": 65536, "bw_average_gbps": 96.42}]
    rate = pto.parse_perftest("# numactl -N 1 ib_write_bw --output=message_rate -s 64 host\n12.345678\n")
    assert (rate["kind"], rate["unit"], rate["results"]) == ("bw", "Mpps", [{"bytes": 64, "msg_rate_mpps": 12.345678}])
    # Another figure from the same run is noted, not read; a figure with no command line that asked for one is no output.
    twice = pto.parse_perftest("$ ib_read_lat --output=latency h\n2.5\n3.5\n")
    assert twice["results"] == [{"bytes": 2, "t_avg_usec": 2.5}]
    assert twice["notes"][0]["reason"] == "a second figure of one --output=latency run, not read"
    with pytest.raises(pto.PerftestOutputError, match="nothing in the text is perftest output"):
        pto.parse_perftest("$ ib_read_lat h\n2.5\n")


def test_an_authors_markdown_table_is_noted_row_by_row_not_read():
    # (In tests/fixtures/cmd/pastes: not perftest's output, so none of the every-sample tests of perftest's folder holds.)
    parsed = pto.parse_perftest((FIXTURES.parent / "cmd" / "pastes" / "perftest_md_table_made_from_ib_write_bw_and_ib_read_bw_label_rows_notes.txt")
                                .read_text())
    assert parsed["results"] == [] and parsed["sides"] == 0
    assert parsed["failure"]["line"] == "no result rows: the table is a Markdown table its author made from perftest's output, not the output"
    assert {n["reason"] for n in parsed["notes"]} == {"a Markdown table's row, made from perftest's output by its author: not read"}
    warned = pto.parse_perftest(fixture("ib_write_bw_F_2012_mail_quoted_test_integrity_may_be_harmed_timestamp_warning_cx3.txt"))
    assert warned["warnings"].count("Test integrity may be harmed !") == 3 and warned["notes"] == []  # once per warning
