"""perftest output as people paste it: every real sample of tests/fixtures/perftest with a prompt and
its command line, comments, CRLF, stray terminal lines, rows written with other digits, and text that
is no perftest output at all."""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdma.node.plugins.module_utils._perftest_output import MAX_NOTES, PerftestOutputError, parse_perftest
from testpaths import FIXTURES

SAMPLES = sorted((FIXTURES / "perftest").glob("*.txt"))
# The terminal transcript of the write-up holds shell job lines and prose around the tool's output, as a
# mail with prose does, and a script's own lines around it.
CLEAN = [p for p in SAMPLES if not any(mark in p.name for mark in ("terminal_with_prompts", "mail_with_prose", "with_other_lines"))]


def _facts(parsed):
    """What a paste must not change: everything but the notes."""
    return {key: value for key, value in parsed.items() if key != "notes"}


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: p.name)
def test_real_samples_place_every_line(path):
    text = path.read_text()
    parsed = parse_perftest(text, strict=True)
    assert [n for n in parsed["notes"] if n["line"] is not None] == []
    json.dumps(parsed, allow_nan=False)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_prompt_command_comments_and_crlf_change_nothing(path):
    text = path.read_text()
    pasted = ("[root@gpu-node01 ~]# ib_write_bw -d mlx5_1 --report_gbits 10.0.0.2\n# second try, after the memlock fix\n"
              + text + "\n$ \n").replace("\n", "\r\n")
    assert _facts(parse_perftest(pasted)) == _facts(parse_perftest(text))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_a_stray_line_is_a_note_with_its_number_and_strict_refuses_it(path):
    lines = path.read_text().split("\n")
    # In the middle, or before the line where another test or run starts (the parser stops reading there).
    stops = [n["line"] for n in parse_perftest("\n".join(lines))["notes"] if n["reason"].startswith("another")]
    where = min([len(lines) // 2] + [line - 1 for line in stops])
    pasted = "\n".join(lines[:where] + ["Connection to gpu-node01 closed."] + lines[where:])
    parsed = parse_perftest(pasted)
    assert _facts(parsed) == _facts(parse_perftest("\n".join(lines)))
    assert {"line": where + 1, "text": "Connection to gpu-node01 closed.", "reason": "not perftest output"} in parsed["notes"]
    with pytest.raises(PerftestOutputError):
        parse_perftest(pasted, strict=True)


def test_a_row_written_with_other_digits_is_a_note_never_a_number():
    text = (FIXTURES / "perftest" / "ib_write_bw_s1M_client_IB_MBsec.txt").read_text()
    clean = parse_perftest(text)
    (row_line,) = [line for line in text.split("\n") if line.strip().startswith("1048576")]
    mangled = text.replace(row_line, row_line.translate(str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664"
                                                                                    "\u0665\u0666\u0667\u0668\u0669")))
    parsed = parse_perftest(mangled)
    assert clean["results"] and parsed["results"] == []
    assert parsed["bw_average_gbps"] is None
    assert [n["reason"] for n in parsed["notes"] if n["line"] is not None] == ["not perftest output"]


def test_huge_figures_are_not_read_so_no_infinity():
    text = (FIXTURES / "perftest" / "ib_write_bw_s1M_client_IB_MBsec.txt").read_text()
    (row_line,) = [line for line in text.split("\n") if line.strip().startswith("1048576")]
    parsed = parse_perftest(text.replace(row_line, row_line.replace("11129.09", "9" * 400)))
    assert parsed["results"] == []
    json.dumps(parsed, allow_nan=False)


def test_text_with_nothing_of_perftest_is_refused_unless_it_is_a_run():
    with pytest.raises(PerftestOutputError) as error:
        parse_perftest("total 0\ndrwxr-xr-x 2 root root 40 .\n")
    assert str(error.value) == "nothing in the text is perftest output (line 1: 'total 0')"
    # The output of a run is whatever the run printed: classified, never refused.
    parsed = parse_perftest("Segmentation fault\n", rc=139, role="client")
    assert parsed["failure"]["cause"] == "unknown" and parsed["notes"][0]["line"] == 1


def test_many_unrecognised_lines_are_linear_and_their_notes_capped(no_hang):
    """Issue 24, item 12: each note was compared with every earlier one (600,000 lines: over an hour)."""
    text = (FIXTURES / "perftest" / "ib_write_bw_s1M_client_IB_MBsec.txt").read_text()
    garbage = "".join("stray line %d of a wrapper script\n" % n for n in range(60000))
    parsed = parse_perftest(garbage + text)
    assert _facts(parsed) == _facts(parse_perftest(text))
    assert len(parsed["notes"]) == MAX_NOTES + 1
    assert parsed["notes"][0] == {"line": 1, "text": "stray line 0 of a wrapper script", "reason": "not perftest output"}
    assert parsed["notes"][-1] == {"line": None, "text": None,
                                   "reason": "59900 more notes like these were left out"}


def test_a_mail_quoted_paste_whose_tabs_became_single_blanks_reads_as_the_terminal_showed_it():
    # Every line quoted with "> ", and the mail turned the tab between a header line's two pairs into one blank.
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_a_server_mlx5_ib_mail_quoted_tabs_lost_terminal_with_prompts_qemu_devel_2024.txt").read_text())
    assert (parsed["test"], parsed["kind"], parsed["sides"], len(parsed["results"])) == ("Send BW Test", "bw", 1, 23)
    assert (parsed["device"], parsed["transport_type"], parsed["header"]["Using SRQ"], parsed["header"]["Dual-port"]) == ("mlx5_0", "IB", "OFF", "OFF")
    assert parsed["results"][-1]["bytes"] == 8388608
    # The best average of the rows: 11526.45 MiB/s at 8 KiB.
    assert parsed["bw_average_gbps"] == pytest.approx(11526.45 * 8 * 1.048576 / 1000, rel=1e-6)
    assert [n["text"] for n in parsed["notes"] if n["line"]] == ["^Ciperf3: interrupt - the server has terminated",
                                                                 "1 jwang@ps404a-3.stg:~$ sudo ib_send_bw -F -a"]
    # A send test's receiving side prints 0.00 for the peak it does not measure.
    assert {row["bw_peak_gbps"] for row in parsed["results"]} == {None}


def test_two_different_tests_in_one_paste_are_not_taken_for_the_two_sides_of_one_run():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_atomic_bw_then_ib_atomic_lat_two_tests_wrapped_terminal_with_prompts_mlx4.txt").read_text())
    assert (parsed["test"], parsed["kind"], parsed["sides"]) == ("Atomic FETCH_AND_ADD BW Test", "bw", 1)
    assert [(row["bytes"], row["iterations"]) for row in parsed["results"]] == [(8, 20000)]
    assert parsed["results"][0]["msg_rate_mpps"] == pytest.approx(2.446776)
    assert any("another test's output starts here (Atomic FETCH_AND_ADD Latency Test after Atomic FETCH_AND_ADD BW Test)" in n["reason"]
               for n in parsed["notes"])
    assert not any("sides printed different units" in n["reason"] for n in parsed["notes"])


def test_a_latency_table_after_a_bandwidth_table_is_another_test():
    # [ib_send_bw] and [ib_send_lat] of one mail, each a bare table: not the two sides of one run.
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_then_ib_send_lat_bare_tables_bracket_labels_rxe_patch_mail_with_prose.txt").read_text())
    assert (parsed["kind"], parsed["sides"], parsed["unit"], parsed["units_printed"]) == ("bw", 1, "MB/sec", ["MB/sec"])
    assert [(row["bytes"], row["iterations"]) for row in parsed["results"]] == [(65536, 100000)]
    assert parsed["bw_average_gbps"] == pytest.approx(203.13 * 8 * 1.048576 / 1000)
    assert {"line": 9, "text": parsed["notes"][-1]["text"],
            "reason": "another test's output starts here (a latency table after a bandwidth table): only the first test is read"} in parsed["notes"]
    assert not any("sides printed different units" in n["reason"] for n in parsed["notes"])


@pytest.mark.parametrize("name, reason", [
    # Two client runs, each with its own queue pairs: not the client and the server of one run.
    ("ib_read_bw_hns_2_two_client_runs_kernel_bug_lines_glued_job_number_terminal_with_prompts.txt",
     "another run of the test starts here (its queue pairs are not the first run's peers): only the first run is read"),
    # Three bare tables of three runs at other sizes: perftest has two sides, and they print the same sizes.
    ("ib_send_bw_1GiB_128MiB_1MiB_three_runs_time_output_quoted_mail_with_prose.txt",
     "another run of the test starts here (134217728 bytes, after 1073741824): only the first run is read"),
])
def test_runs_of_one_test_one_after_the_other_are_not_its_sides(name, reason):
    parsed = parse_perftest((FIXTURES / "perftest" / name).read_text())
    assert (parsed["kind"], parsed["sides"], parsed["sides_agree"], len(parsed["results"])) == ("bw", 1, None, 1)
    assert [n["reason"] for n in parsed["notes"] if n["reason"].startswith("another")] == [reason]
    assert not any("differ between the sides" in n["reason"] for n in parsed["notes"])


def test_a_peak_perftest_did_not_measure_is_none_not_zero():
    for name in ("ib_write_bw_use_cuda_dmabuf_D60_q16_rdma_cm_client_mtu_lowered_peak_not_measured_pod_prompt.txt",
                 "ib_send_bw_UD_D10_client_max_msg_size_in_UD_changing_mtu_peak_not_measured.txt"):
        parsed = parse_perftest((FIXTURES / "perftest" / name).read_text(), strict=True)
        assert [row["bw_peak_gbps"] for row in parsed["results"]] == [None]
        assert parsed["bw_average_gbps"] > 90
    measured = parse_perftest(" #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n 65536 1000 0.00 0.00 0.000000\n")
    assert measured["results"][0]["bw_peak_gbps"] == 0.0  # nothing moved at all: a zero, not a missing peak


def test_dc_addresses_carry_their_srq_number_apart():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_a_DC_q2_server_dot_slash_command_srqn_in_addresses.txt").read_text())
    assert [(a["qpn"], a["vaddr"], a["srqn"]) for a in parsed["local_addresses"]][:1] == [("0xc0cb", "0x007f7329067000", "0x00c0ca")]


def test_another_runs_header_keys_are_not_the_first_runs():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_n5_client_then_server_of_another_run_terminal_with_prompts.txt").read_text())
    assert "RX depth" not in parsed["header"] and parsed["header_conflicts"] == {}
    assert {a["qpn"] for a in parsed["local_addresses"]} == {"0x018a"}


def test_a_launchers_label_before_each_line_and_an_rdma_cm_server_without_a_gpu():
    ranks = parse_perftest((FIXTURES / "perftest" / "ib_send_lat_two_sides_rank_labels_before_each_line_h200_modal.txt").read_text())
    assert (ranks["kind"], ranks["sides"], ranks["failure"], ranks["results"][0]["t_avg_usec"]) == ("lat", 2, None, 14.32)
    server = parse_perftest((FIXTURES / "perftest" / "ib_send_lat_server_rxe_ipv6_rdma_cm_waiting_lines_no_gpu_container_prompt.txt")
                            .read_text())
    assert (server["gpu_memory"], server["gpu"]) == (False, None)


def test_two_runs_at_one_size_with_other_message_rates_are_not_two_sides():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_two_runs_same_size_other_message_rates_case1_case2_mail_with_prose.txt")
                            .read_text())
    assert (parsed["sides"], parsed["sides_agree"], parsed["results"][0]["msg_rate_mpps"]) == (1, None, 5.67734)
    assert [n["reason"] for n in parsed["notes"] if n["reason"].startswith("another")] == [
        "another run of the test starts here (1024 bytes again, at 0.942218 Mpps after 5.67734): only the first run is read"]


def test_the_two_sides_of_one_run_are_still_two_sides():
    server = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_s1M_server_IB_MBsec.txt").read_text())
    client = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_s1M_client_IB_MBsec.txt").read_text())
    both = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_s1M_server_IB_MBsec.txt").read_text() + "\n"
                          + (FIXTURES / "perftest" / "ib_write_bw_s1M_client_IB_MBsec.txt").read_text())
    assert server["local_addresses"][0]["qpn"] == client["remote_addresses"][0]["qpn"]
    assert (both["sides"], both["sides_agree"]) == (2, True)
    assert not any(n["reason"].startswith("another") for n in both["notes"])


def test_a_header_that_lost_the_hash_of_iterations_keeps_its_columns():
    """' #bytes     iterations    BW peak[MB/sec] ...': without its "#", iterations is still a count column,
    so BW average is the fourth figure of each row (MB/sec), not the third."""
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_read_bw_a_mlx5_IB_header_lost_hash_of_iterations_prompt_no_space_ucx_issue8852.txt").read_text())
    assert (parsed["unit"], parsed["device"], parsed["link_type"]) == ("MB/sec", "mlx5_1", "IB")
    last = parsed["results"][-1]
    assert (last["bytes"], last["iterations"]) == (128, 1000)
    assert parsed["bw_average_gbps"] == pytest.approx(310.05 * 8 / 1000 * 1.048576, rel=1e-6)


def test_a_second_table_of_a_one_way_rdma_test_after_a_table_of_all_sizes_is_another_run():
    # The server of a one-way RDMA write or read test prints one row, the client's last: two tables of all
    # sizes are two runs (a patch mail's before and after), whose message rates differ by less than twice.
    runs = parse_perftest((FIXTURES / "perftest" / "ib_read_bw_a_rxe0_two_runs_before_and_after_a_patch_snip_lines_mail_with_prose.txt")
                          .read_text())
    assert (runs["sides"], runs["sides_agree"], len(runs["results"])) == (1, None, 23)
    assert runs["results"][-1]["bw_average_gbps"] == pytest.approx(17.82 * 8 * 1.048576 / 1000)
    assert [n["reason"] for n in runs["notes"] if n["reason"].startswith("another")] == [
        "another run of the test starts here (2 bytes after a table of 23 sizes, where the server of this test prints only "
        "the client's last row): only the first run is read"]
    # The client's table of all sizes and the server's one row, the client's last, are the two sides of one run.
    sides = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_a_loopback_server_and_client_lines_interleaved_superbench.txt")
                           .read_text())
    assert (sides["sides"], sides["sides_agree"], len(sides["results"])) == (2, True, 23)
    assert not any(n["reason"].startswith("another") for n in sides["notes"])


def test_a_server_still_waiting_where_the_output_ends_says_so():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_R_server_waiting_banner_only_after_a_scripts_line_with_other_lines_oci_oke.txt")
                            .read_text())
    assert (parsed["results"], parsed["server_banner"]) == ([], True)
    assert (parsed["failure"]["cause"], parsed["failure"]["line"]) == (
        "remote_unreachable", "no result rows: the server was still waiting for a client where the output ends")


def test_a_one_way_servers_row_pasted_before_its_clients_table_is_the_other_side_of_one_run():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_a_use_rocm_one_way_server_row_before_client_table_labels_with_other_lines.txt")
                            .read_text())
    assert (parsed["sides"], parsed["sides_agree"], len(parsed["results"])) == (2, True, 23)
    assert [row["bytes"] for row in parsed["results"]] == [2 ** n for n in range(1, 24)]
    assert parsed["bw_average_gbps"] == pytest.approx(19871.68 * 8 * 1.048576 / 1000, rel=1e-5)
    assert not any(n["reason"].startswith("another") for n in parsed["notes"])


def test_both_sides_rows_written_onto_one_line_are_both_read():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_UD_hns_server_and_client_in_one_terminal_rows_glued_on_one_line_kunpeng.txt")
                            .read_text())
    assert (parsed["sides"], parsed["sides_agree"], [row["bytes"] for row in parsed["results"]]) == (2, False, [1024])
    assert parsed["results"][0]["bw_average_gbps"] == pytest.approx(7876.21 * 8 * 1.048576 / 1000, rel=1e-5)
    reasons = [n["reason"] for n in parsed["notes"]]
    assert "two rows of 1024 bytes on line 54 (both sides' output interleaved): both read" in reasons
    assert any(reason.startswith("1024-byte rows differ between the sides") for reason in reasons)


def test_latency_figures_a_paste_wrote_together_are_read_apart_at_their_two_decimals():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_lat_rxe0_two_sides_host_labels_t_stdev_and_p99_glued_lab_report_with_other_lines.txt")
                            .read_text())
    assert (parsed["sides"], parsed["sides_agree"]) == (2, False)
    assert (parsed["results"][0]["t_min_usec"], parsed["results"][0]["t_stdev_usec"], parsed["results"][0]["t_p99_usec"]) == (
        453.06, 2465.9, 1216.65)
    assert any(n["reason"].startswith("figures written together on line 26 (2465.901216.65)") for n in parsed["notes"])


def test_a_peak_one_side_did_not_measure_is_no_disagreement_and_the_others_is_taken():
    parsed = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_rxe0_two_sides_host_labels_server_peak_not_measured_lab_report_with_other_lines.txt")
                            .read_text())
    assert (parsed["sides"], parsed["sides_agree"]) == (2, True)
    assert parsed["results"][0]["bw_peak_gbps"] == round(3.75 * 8 * 1.048576 / 1000, 6)


def test_figures_an_author_set_in_markdown_bold_are_read_and_two_runs_are_no_two_sides():
    # perftest issue #65 as posted: "**5544.28**" and "**920.13**" in the rows of two runs (Case1, Case2), prose after them.
    bold = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_two_runs_same_size_figures_in_markdown_bold_case1_case2_issue65_verbatim_with_other_lines.txt")
                          .read_text())
    assert (bold["sides"], bold["failure"], bold["unit"]) == (1, None, "MB/sec")
    assert bold["results"] == [{"bytes": 1024, "iterations": 1000, "msg_rate_mpps": 5.67734, "bw_peak_gbps": None,
                                "bw_average_gbps": round(5544.28 * 2 ** 20 * 8 / 1e9, 6)}]
    reasons = [(n["line"], n["reason"]) for n in bold["notes"]]
    assert (7, "figures in the author's Markdown emphasis (**5544.28**) read without it") in reasons
    assert (11, "another run of the test starts here (1024 bytes again, at 0.942218 Mpps after 5.67734): only the first run is read") in reasons
    # The copy of the same description with the stars removed reads the same figures.
    plain = parse_perftest((FIXTURES / "perftest" / "ib_send_bw_two_runs_same_size_other_message_rates_case1_case2_mail_with_prose.txt")
                           .read_text())
    assert {key: value for key, value in plain.items() if key != "notes"} == {key: value for key, value in bold.items() if key != "notes"}
    assert not any("emphasis" in n["reason"] for n in plain["notes"])


def test_stars_around_a_figure_are_read_only_in_a_row_of_figures():
    # Constructed from the fixture's row: a word in stars, or a figure glued to a word in stars, leaves the row unread.
    header = "#bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    for row in ("1024       1000             0.00               **fast**\t\t   5.677340",
                "1024       1000             0.00               **5544.28*\t\t   5.677340"):
        parsed = parse_perftest(header + row + "\n")
        assert parsed["results"] == [] and parsed["failure"]["cause"] == "unknown"


def test_rows_of_a_run_infinitely_pasted_without_their_header_are_read_where_their_figures_prove_the_columns():
    # perftest issue #130: two clients' "ib_send_bw -s 4194304 -D 20 --run_infinitely" rows under "Node B output:" and
    # "Node C output:", no header; each BW average (MB/sec) is its bytes x message rate.
    name = "ib_send_bw_run_infinitely_commands_then_rows_without_header_node_b_node_c_issue130_with_other_lines_PARTIAL.txt"
    parsed = parse_perftest((FIXTURES / "perftest" / name).read_text())
    assert (parsed["failure"], parsed["kind"], parsed["unit"], parsed["units_printed"], parsed["sides"]) == (None, "bw", "MB/sec", [], 0)
    assert [(row["bytes"], row["iterations"], row["bw_peak_gbps"], row["bw_average_gbps"], row["msg_rate_mpps"]) for row in parsed["results"]] == [
        (4194304, iterations, None, round(average * 2 ** 20 * 8 / 1e9, 6), rate) for iterations, average, rate in (
            (4826, 965.20, 0.000241), (7695, 1539.00, 0.000385), (2596, 519.20, 0.000130), (7186, 1437.20, 0.000359),
            (14261, 2852.20, 0.000713), (6801, 1360.20, 0.000340), (2456, 491.19, 0.000123), (162, 32.40, 0.000008))]
    assert [round(row["bw_average_gbps"], 2) for row in parsed["results"][:6]] == [8.10, 12.91, 4.36, 12.06, 23.93, 11.41]
    assert {"line": None, "text": None, "reason": "rows without their table header on line(s) 16, 17, 18, 19, 20, 21, 23, 24: read in perftest's "
            "bandwidth columns (#bytes #iterations BW peak BW average MsgRate) in MB/sec, which each row's bytes x message rate "
            "confirms"} in parsed["notes"]
    assert {"line": 22, "text": "Node C output:", "reason": "not perftest output"} in parsed["notes"]
    # Constructed: five figures whose average is not bytes x rate (a latency row's) are not read, and no failure is made up.
    latency = parse_perftest(" 2       1000          0.95           3.20         1.50\n")
    assert (latency["results"], latency["failure"]) == ([], None)
    assert latency["notes"] == [{"line": 1, "text": "2       1000          0.95           3.20         1.50",
                                 "reason": "a numeric row without a table header, ignored"}]
    # Constructed: the same row under its header reads as before, with the header's unit.
    header = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    row = " 4194304    4826             0.00               965.20 \t\t   0.000241\n"
    assert parse_perftest(header + row)["results"] == parse_perftest(row)["results"]
    assert parse_perftest(header + row)["units_printed"] == ["MB/sec"]


def test_perftests_own_mmap_buffer_line_is_its_output_and_an_older_gid_index_spelling_is_read():
    # An rdma_cm server (a Go test's captured output): "allocated mmap buffer of size 131072 at 0x7f37a7356000" (src/mmap_memory.c).
    mmap = parse_perftest((FIXTURES / "perftest" / "ib_write_bw_rdma_cm_server_allocated_mmap_buffer_line_mlx5_1_go_test_data.txt")
                          .read_text(), strict=True)
    assert (mmap["notes"], mmap["failure"], mmap["gpu_memory"], mmap["gid_index"]) == ([], None, False, 3)
    assert [(row["bytes"], row["bw_average_gbps"]) for row in mmap["results"]] == [(65536, 344.5)]
    # softiwarp issue #23: perftest of 2017 printed " Gid index       : 0".
    name = "err_ib_send_bw_siw_iwarp_old_gid_index_spelling_couldnt_allocate_mr_segfault_fenced_softiwarp_issue23_with_other_lines_PARTIAL.txt"
    siw = parse_perftest((FIXTURES / "perftest" / name).read_text())
    assert (siw["gid_index"], siw["header"]["Gid index"], siw["transport_type"], siw["device"]) == (0, "0", "IW", "siw_ens33")
    assert (siw["failure"]["cause"], siw["failure"]["line"]) == ("memlock", "Couldn't allocate MR")
