"""How long each netdev's carrier stayed down, from the time stamps of real kernel logs (OpenWrt
logread, Azure's health-check syslog with lower-case "lost carrier", journalctl without a year, dmesg
with the printk caller, pstore's dmesg with levels, mailing-list pastes of ConnectX ports that went
down and stayed down, a bond's wrapped lines), for gpud's flap and drop rule; and the down periods in
the kernel_log facts."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.rdma.node.plugins.module_utils._health_collect import kernel_log_facts
from ansible_collections.rdma.node.plugins.module_utils._health_text import carrier_down_periods, event_clock, parse_carrier_events
from testpaths import FIXTURES

LOGS = FIXTURES / "cmd" / "kernel_log"
DOWN = FIXTURES / "link_down"
AZNHC = DOWN / "aznhc_1dev_6flap_syslog_lowercase_lost_carrier.txt"


def periods_of(text):
    return carrier_down_periods(parse_carrier_events(text)["events"])


def test_openwrt_log_uses_the_kernel_clock_and_ends_with_an_open_period():
    result = periods_of((LOGS / "openwrt_17351_logread_link_flaps_prompt.txt").read_text())["lan"]
    assert (result["clock"], result["reason"]) == ("monotonic", None)
    assert [(p["seconds"], p["ongoing"]) for p in result["periods"]] == [(4.301, False), (2.849, False), (0.0, True)]
    assert result["periods"][0]["down_time"] == "Sun Apr 27 05:48:33 2025"


def test_azure_syslog_with_lower_case_lost_carrier_is_one_five_second_loss():
    parsed = parse_carrier_events(AZNHC.read_text())
    assert [e["carrier"] for e in parsed["events"]] == ["down"] * 6 + ["up"] * 6
    assert parsed["netdevs"]["ib6"]["losses"] == 1  # six messages, one loss
    result = carrier_down_periods(parsed["events"])["ib6"]
    assert result["clock"] == "syslog (no year)"
    assert [(p["down_time"], p["up_time"], p["seconds"]) for p in result["periods"]] == [("Aug 17 06:18:01", "Aug 17 06:18:06", 5.0)]


def seconds_of(name):
    return {netdev: [p["seconds"] for p in entry["periods"]] for netdev, entry in periods_of((DOWN / name).read_text()).items()}


def test_the_older_intel_form_with_the_drivers_name_first_counts_its_flaps():
    parsed = parse_carrier_events((DOWN / "ustclug_86_dmesg_T_e1000e_old_form_driver_colon_netdev_partial.txt").read_text())
    assert parsed["netdevs"] == {"eth1": {"down": 6, "up": 7, "losses": 6, "last": "up"},
                                 "eth0": {"down": 2, "up": 2, "losses": 2, "last": "up"}}
    assert seconds_of("ustclug_86_dmesg_T_e1000e_old_form_driver_colon_netdev_partial.txt") == {
        "eth1": [0.0, 3.0, 3.0, 2.0, 0.0, 3.0], "eth0": [3.0, 0.0]}


def test_a_bond_without_an_active_interface_and_back_is_one_short_period():
    assert seconds_of("open_iscsi_2023_quoted_pstore_bond_active_interface_up_igb_slaves_wrapped.txt") == {
        "igb0": [3.464], "bond0": [1.564], "igb1": [3.467], "ice0": []}


def test_networkmanagers_carrier_lines_and_its_bracketed_epoch_time():
    # NetworkManager 0.7 ("carrier now OFF") beside the kernel's e100 lines, every line behind grep's "syslog:".
    assert seconds_of("ubuntuforums_2010_grep_syslog_prefix_e100_networkmanager_carrier_now_off_on.txt") == {"eth0": [2.0]}
    # NetworkManager 1.x ("carrier: link connected") prints seconds since 1970 in brackets: no kernel time, so no end.
    parsed = parse_carrier_events((DOWN / "netdev_2020_tg3_eeh_bare_messages_networkmanager_epoch_brackets.txt").read_text())
    assert [(e["netdev"], e["carrier"], e["source"]) for e in parsed["events"] if e["source"] == "networkmanager"] == [
        ("enP5p1s0f1", "up", "networkmanager"), ("enP5p1s0f0", "up", "networkmanager")]
    assert parsed["end"] is None
    # networkd's lines whose program name a console cut (": enP5p1s0f0: Lost carrier", ": ...: Gained carrier") count too.
    assert parsed["netdevs"]["enP5p1s0f0"] == {"down": 2, "up": 3, "losses": 1, "last": "up"}


def test_a_journal_printed_newest_first_is_read_oldest_first():
    parsed = parse_carrier_events((DOWN / "systemd_12236_journalctl_r_newest_first_networkd_lost_gained_partial.txt").read_text())
    assert parsed["netdevs"]["enp2s0"] == {"down": 1, "up": 1, "losses": 1, "last": "up"}
    assert parsed["end"] == {"time": "Apr 07 12:02:03", "monotonic_seconds": None}
    assert {"line": None, "text": None,
            "reason": "the log is printed newest first (journalctl -r): its events are read from the last line up"} in parsed["notes"]
    assert seconds_of("systemd_12236_journalctl_r_newest_first_networkd_lost_gained_partial.txt") == {
        "tun0": [], "wlp3s0": [4.0, 0.0], "enp2s0": [1.0], "bond1": [2.0, 0.0]}


@pytest.mark.parametrize("name, netdevs, seconds", [
    # bnx2 names the medium ("NIC Copper Link is Down").
    ("blog_2012_syslog_bnx2_nic_copper_link_down_up_10s.txt", {"eth0": {"down": 1, "up": 1, "losses": 1, "last": "up"}},
     {"eth0": [10.0]}),
    # dmesg -H: the time since the record before, which gives no duration.
    ("notes_dmesg_H_relative_stamps_mlx5_vf_link_up_twice.txt", {"enP20912s1": {"down": 0, "up": 2, "losses": 0, "last": "up"}},
     {"enP20912s1": []}),
    # e1000's older forms, with and without its function's name; multilog's stamps before the kernel's level.
    ("lkml_2007_quoted_multilog_level_e1000_watchdog_function_form.txt", {"eth0": {"down": 0, "up": 3, "losses": 0, "last": "up"}},
     {"eth0": []}),
    ("ubuntuforums_2011_dmesg_grep_e1000_e1000e_old_forms_watchdog_task_after_reload.txt",
     {"eth0": {"down": 2, "up": 3, "losses": 2, "last": "up"}, "eth1": {"down": 2, "up": 4, "losses": 2, "last": "up"}},
     {"eth0": [12.193, 8.345], "eth1": [9.536, 5.93]}),
    # A capture tool's bracketed prefix before dmesg --ctime's records.
    ("codespaces_log_bracketed_prefix_dmesg_ctime_mlx5_vf_link_up_partial.txt",
     {"enP43566s1": {"down": 0, "up": 2, "losses": 0, "last": "up"}}, {"enP43566s1": []}),
])
def test_more_record_and_message_forms(name, netdevs, seconds):
    parsed = parse_carrier_events((DOWN / name).read_text())
    assert parsed["netdevs"] == netdevs
    assert seconds_of(name) == seconds
    # Every link line was read: none is left as a note.
    assert not [n["text"] for n in parsed["notes"] if n["text"] and ("Link up" in n["text"] or "Link is Up" in n["text"])]


def test_talosctl_without_its_node_name_and_multilog_stamps_are_records_with_their_times():
    talos = parse_carrier_events((DOWN / "talos_dashboard_log_pane_no_node_prefix_padding_stripped.txt").read_text())
    assert (talos["records"], len(talos["events"]), talos["end"]) == (40, 6, {"time": "2023-09-26T16:44:22.745331265Z", "monotonic_seconds": None})
    multilog = parse_carrier_events((DOWN / "lkml_2007_quoted_multilog_level_e1000_watchdog_function_form.txt").read_text())
    assert (multilog["records"], multilog["events"][0]["host"], multilog["events"][0]["time"]) == (14, None, "2007-01-10 02:40:07.614768500")


def test_networkds_link_up_and_down_are_the_interfaces_state_not_its_carrier():
    parsed = parse_carrier_events((DOWN / "cn_am62xx_notes_journalctl_networkd_link_up_down_beside_lost_gained_carrier.txt").read_text())
    assert {e["source"] for e in parsed["events"]} == {"networkd"}
    assert "wlan0" not in parsed["netdevs"]  # set up, never a carrier


def test_gains_without_losses_have_no_period():
    assert periods_of((LOGS / "cubecos_733_journalctl_mlx5_eth1_link_up_prompt.txt").read_text()) == {
        "eth1": {"clock": "syslog (no year)", "periods": [], "reason": None}}


def test_a_yearless_log_across_new_year_keeps_counting():
    text = "Dec 31 23:59:50 n systemd-networkd[1]: ib0: Lost carrier\nJan  1 00:00:20 n systemd-networkd[1]: ib0: Gained carrier\n"
    assert [p["seconds"] for p in periods_of(text)["ib0"]["periods"]] == [30.0]


def test_a_reboot_restarts_the_kernel_clock_so_wall_time_is_used():
    text = ("2026-11-24T10:00:00+0000 n kernel: [500.0] mlx5_core 0000:3b:00.0 ens1: Link down\n"
            "2026-11-24T10:03:00+0000 n kernel: [12.5] mlx5_core 0000:3b:00.0 ens1: Link up\n")
    result = periods_of(text)["ens1"]
    assert (result["clock"], [p["seconds"] for p in result["periods"]]) == ("wall", [180.0])
    dmesg_only = "[  500.000000] mlx5_core 0000:3b:00.0 ens1: Link down\n[   12.500000] mlx5_core 0000:3b:00.0 ens1: Link up\n"
    assert periods_of(dmesg_only)["ens1"] == {
        "clock": None, "periods": [], "reason": "the kernel's clock goes back between the records (a reboot) and they carry no wall-clock time"}


def test_an_event_without_a_time_stamp_gives_no_duration():
    assert event_clock([{"line": 3, "time": None, "monotonic_seconds": None}]) == (
        None, "line 3 has no time stamp that gives a duration")
    assert event_clock([{"line": 4, "time": "yesterday", "monotonic_seconds": None}])[1] == (
        "line 4 has no time stamp that gives a duration ('yesterday')")
    assert event_clock([]) == (None, "no carrier event")


def test_kernel_log_facts_carry_the_periods_per_netdev_with_their_port(tmp_path):
    lines = ["2026-11-24T10:%02d:00+0000 n systemd-networkd[1]: ib0: %s carrier" % (minute, state)
             for minute, state in ((0, "Lost"), (1, "Gained"), (10, "Lost"), (16, "Gained"), (30, "Lost"))]
    facts = kernel_log_facts("\n".join(lines), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    entry = facts["down_periods"]["ib0"]
    assert (entry["rdma_netdev"], entry["port"], entry["clock"]) == ("ib0", "mlx5_0/1", "wall")
    assert [(p["seconds"], p["ongoing"]) for p in entry["periods"]] == [(60.0, False), (360.0, False), (0.0, True)]
    assert facts["netdevs"]["ib0"]["losses"] == 3  # the count beside it, as before


def test_time_stamps_that_go_back_give_no_duration():
    text = ("2026-11-24T10:05:00+0000 n systemd-networkd[1]: ib0: Lost carrier\n"
            "2026-11-24T10:00:00+0000 n systemd-networkd[1]: ib0: Gained carrier\n")
    assert periods_of(text)["ib0"] == {"clock": None, "periods": [], "reason": "the time stamps go back at line 2 (records out of "
                                                                               "order, or a clock that was set back)"}


def test_a_link_still_down_is_counted_to_the_last_record_of_the_log():
    # dmesg | tail: both ConnectX ports go down at ~18866 s and the log runs on to 36409.7 s.
    parsed = parse_carrier_events((DOWN / "lkml_perf_dmesg_tail_prompt_mlx5_two_ports_down.txt").read_text())
    assert parsed["end"] == {"time": None, "monotonic_seconds": 36409.742619}
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])
    assert [(p["seconds"], p["ongoing"]) for p in periods["enp1s0f0np0"]["periods"]] == [(17543.894, True)]
    assert [(p["seconds"], p["ongoing"]) for p in periods["enp1s0f1np1"]["periods"]] == [(17543.685, True)]
    assert periods["enp5s0"]["periods"] == []  # ixgbe's port only came up
    # Without the end of the log, the last carrier change is the end: what the check would call a blip.
    assert carrier_down_periods(parsed["events"])["enp1s0f1np1"]["periods"][0]["seconds"] == 0.0


def test_wall_clock_logs_end_at_their_last_record_too():
    parsed = parse_carrier_events((DOWN / "linux_block_nvme_rdma_dmesg_T_mlx5_link_down_oops.txt").read_text())
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["ens2f0np0"]
    assert (periods["clock"], [(p["down_time"], p["seconds"], p["ongoing"]) for p in periods["periods"]]) == (
        "wall", [("Tue Feb 14 18:48:25 2023", 7.0, True)])
    # syslog with the kernel's seconds inside: the kernel clock, lower-case "link up/down" of a RoCE port.
    parsed = parse_carrier_events((DOWN / "linux_rdma_hns3_roce_syslog_kernel_ts_link_up_down.txt").read_text())
    assert [(e["netdev"], e["carrier"], e["source"]) for e in parsed["events"]] == [
        ("enp189s0f0", "up", "driver"), ("enp189s0f0", "up", "addrconf"), ("enp189s0f0", "down", "driver")]
    assert carrier_down_periods(parsed["events"], log_end=parsed["end"])["enp189s0f0"]["periods"][0]["seconds"] == 1.53


def test_a_stray_future_line_does_not_stretch_a_downtime(tmp_path):
    lines = ["2026-11-24T10:00:00+0000 n systemd-networkd[1]: ib0: Lost carrier",
             "2026-11-24T10:03:00+0000 n kernel: mlx5_core 0000:3b:00.0: some later message",
             "2031-01-01T00:00:00+0000 n kernel: a line dated in the future"]
    now = datetime.datetime(2026, 11, 24, 11, 0, tzinfo=datetime.timezone.utc)
    facts = kernel_log_facts("\n".join(lines), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False, now=now)
    assert [(p["seconds"], p["ongoing"]) for p in facts["down_periods"]["ib0"]["periods"]] == [(0.0, True)]
    facts = kernel_log_facts("\n".join(lines[:2]), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False, now=now)
    assert [(p["seconds"], p["ongoing"]) for p in facts["down_periods"]["ib0"]["periods"]] == [(180.0, True)]


def test_printk_caller_and_dmesg_levels_are_read():
    parsed = parse_carrier_events((DOWN / "linux_next_printk_caller_id_mlx5_link_down.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in parsed["events"]] == [
        (44, "enp11s0f1np1", "down", 336.527739)]
    # pstore's dmesg (as dmesg -r prints): "<6>[   14.952018] ..." on every record.
    parsed = parse_carrier_events((DOWN / "gpud_pstore_dmesg_prio_prefix_mlx5_cable_unplugged_link_up.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["source"]) for e in parsed["events"][:2]] == [
        (286, "enp65s0f0np0", "up", "driver"), (287, "enp65s0f0np0", "up", "addrconf")]
    assert all(e["monotonic_seconds"] is not None for e in parsed["events"])
    sata = [n for n in parsed["notes"] if "SATA link down" in n["text"]]
    assert len(sata) == 27 and {n["reason"] for n in sata} == {"a link message this filter does not read"}


def test_programs_writing_to_the_kernel_log_and_kmsg_records():
    parsed = parse_carrier_events((DOWN / "systemd_15445_dmesg_networkd_gained_carrier_veth.txt").read_text())
    # networkd's "veth189c614a: Link UP" is the interface set up, not its carrier: only "Gained carrier" counts.
    assert [(e["line"], e["netdev"], e["source"]) for e in parsed["events"]] == [
        (1, "veth7e084358", "networkd"), (7, "veth189c614a", "networkd"), (13, "vethdfe5a742", "networkd")]
    assert [n["line"] for n in parsed["notes"] if n["reason"] == "a link message this filter does not read"] == [6, 12]
    kmsg = parse_carrier_events((DOWN / "gpud_kmsg1_addrconf_ready_only.log").read_bytes())
    assert len(kmsg["events"]) == 27 and {e["carrier"] for e in kmsg["events"]} == {"up"}
    assert {e["log_format"] for e in kmsg["events"]} == {"kmsg"}


def test_a_bonds_wrapped_lines_are_read_whole_and_given_to_the_slave():
    # Every "bond-san: link status ..." line was wrapped by the mail client before "interface ethX": the two
    # halves are one message, so the slave the second half names gets the event, never the bond itself.
    parsed = parse_carrier_events((DOWN / "netdev_bonding_8023ad_dmesg_T_wrapped_mlx4_bond_san.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["bond"]) for e in parsed["events"]] == [
        (10, "bond-san", "up", None), (12, "eth3", "up", "bond-san"), (14, "bond-san", "up", None),  # first active interface up!
        (17, "eth2", "up", None), (18, "eth2", "up", "bond-san"),
        (20, "eth2", "up", "bond-san"), (25, "eth2", "up", None), (26, "eth2", "up", "bond-san"), (29, "eth2", "up", "bond-san"),
        (32, "eth2", "up", None), (33, "eth2", "up", "bond-san"), (35, "eth2", "up", "bond-san")]
    assert parsed["events"][1]["message"] == "bond-san: link status definitely up for interface eth3, 10000 Mbps full duplex"
    # "bond-san: link" / "is not ready" joins into no carrier change: neither half is counted.
    assert not [e for e in parsed["events"] if e["line"] in (7, 8)]


def test_iso_times_with_nine_digits_of_a_second_are_measured_on_every_python():
    # journald and talosctl print up to nine digits; Python before 3.11 reads only three or six.
    log = ("node-1: kern:    info: [2026-04-24T02:31:03.368638727Z]: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down\n"
           "node-1: kern:    info: [2026-04-24T02:31:33.368638727Z]: mlx5_core 0000:01:00.0 enp1s0f0np0: Link up\n")
    result = periods_of(log)["enp1s0f0np0"]
    assert result["reason"] is None
    assert [(p["seconds"], p["ongoing"]) for p in result["periods"]] == [(30.0, False)]


def test_qedes_own_form_with_its_function_and_line_first():
    """qede prints "[qede_link_update:2426(p6p4)]Link is down": in syslog and in dmesg, each a carrier change."""
    parsed = parse_carrier_events((DOWN / "cnbond_qede_var_log_messages_function_prefix_three_flaps_prompt.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["time"]) for e in parsed["events"]] == [
        (4, "p6p4", "down", "Sep 18 20:51:10"), (5, "p6p4", "up", "Sep 18 20:51:10"), (6, "p6p4", "down", "Sep 18 21:00:07"),
        (7, "p6p4", "up", "Sep 18 21:00:07"), (8, "p6p4", "down", "Sep 18 21:00:11"), (9, "p6p4", "up", "Sep 18 21:00:11")]
    assert parsed["netdevs"]["p6p4"]["losses"] == 3
    dmesg = parse_carrier_events((DOWN / "linux_cifs_dmesg_grep_qed_qede_link_update_up_prompt.txt").read_text())
    assert [(e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in dmesg["events"]] == [
        ("enp25s0f0", "up", 8.917308), ("enp25s0f1", "up", 8.947363)]


def test_a_record_a_console_printed_inside_another_line_is_read():
    parsed = parse_carrier_events((DOWN / "lkml_console_bnxt_en_record_inside_another_line.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in parsed["events"]] == [
        (1, "eno2np0", "up", 119.300502), (4, "eno3np1", "up", 142.361359)]
    assert parsed["events"][1]["message"].startswith("bnxt_en 0000:3b:00.1 eno3np1: NIC Link is Up, 25000 Mbps")


def test_carrier_messages_a_mail_wrapped_onto_the_next_line_are_read_whole():
    parsed = parse_carrier_events((DOWN / "linux_nfs_quoted_syslog_wrapped_i40e_tg3_link_up.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["time"], e["pci_address"]) for e in parsed["events"]] == [
        (1, "eth1", "up", "Jun 20 10:23:01", "0000:98:00.0"), (15, "em1", "up", "Jun 20 10:23:10", "0000:04:00.0")]
    assert parsed["events"][1]["message"] == "tg3 0000:04:00.0 em1: Link is up at 1000 Mbps, full duplex"


def test_an_absent_cable_module_is_noted_not_counted():
    parsed = parse_carrier_events((DOWN / "kmm_ice_e810_reload_dmesg_module_not_present.txt").read_text())
    assert [(e["netdev"], e["source"]) for e in parsed["events"]] == [("ens1f1", "driver"), ("ens1f1", "addrconf"), ("ens2f1", "driver")]
    absent = [n["text"] for n in parsed["notes"] if "Module is not present" in n["text"]]
    assert len(absent) == 4 and all(n["reason"] == "a link message this filter does not read"
                                    for n in parsed["notes"] if "Module is not present" in n["text"])


def test_a_pcie_controllers_or_a_scsi_hosts_link_is_no_netdevs_carrier():
    pcie = parse_carrier_events((DOWN / "linux_pci_2022_kmsg_level_imx6q_pcie_controller_link_up_not_a_netdev_qp_decoded.txt").read_text())
    fcoe = parse_carrier_events((DOWN / "linux_scsi_2022_commit_message_fcoe_libfc_host_link_down_not_a_netdev.txt").read_text())
    assert (pcie["events"], pcie["netdevs"], fcoe["events"], fcoe["netdevs"]) == ([], {}, [], {})
    assert {"line": 14, "text": "<6>[    2.537041] imx6q-pcie 33c00000.pcie: Link up",
            "reason": "a link message this filter does not read"} in pcie["notes"]
    board = parse_carrier_events((DOWN / "linux_pci_2023_rpi_cm4_dmesg_pcie_link_up_beside_bcmgenet_eth0_down_up_qp_decoded.txt")
                                 .read_text())
    assert list(board["netdevs"]) == ["eth0"]
    periods = carrier_down_periods(board["events"], log_end=board["end"])["eth0"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(4.099, False)]


def test_networkmanagers_time_since_1970_is_no_kernel_time_and_a_day_may_be_unpadded():
    parsed = parse_carrier_events((DOWN / "linux_nfs_quoted_syslog_wrapped_i40e_tg3_link_up.txt").read_text())
    assert {"line": 4, "text": "[1750414989.6033] manager: startup complete", "reason": "not a log record"} in parsed["notes"]
    assert parsed["end"]["monotonic_seconds"] is None or parsed["end"]["monotonic_seconds"] < 10 ** 9
    # A relay that does not pad the day of the month (the Sandia Thunderbird cluster's published syslog has "Nov 9").
    unpadded = parse_carrier_events("Nov 9 12:10:43 tbird-admin1 kernel: e1000: eth0: e1000_watchdog: NIC Link is Up 1000 Mbps Full Duplex\n")
    assert [(e["netdev"], e["carrier"], e["time"]) for e in unpadded["events"]] == [("eth0", "up", "Nov 9 12:10:43")]


def test_other_drivers_and_tools_words_for_a_carrier_and_dmesgs_spaced_caller():
    def read(name):
        parsed = parse_carrier_events((DOWN / name).read_text())
        return parsed, [(e["netdev"], e["carrier"]) for e in parsed["events"]]

    caller, events = read("linux_acpi_2025_util_linux_dmesg_caller_id_after_a_space_r8169_down_up_qp_decoded_partial.txt")
    assert events == [("enp5s0", "down"), ("enp5s0", "up")]
    assert [p["seconds"] for p in carrier_down_periods(caller["events"], log_end=caller["end"])["enp5s0"]["periods"]] == [3.413]
    usb, events = read("linux_pm_2025_quoted_dmesg_r8152_carrier_on_off_on_partial.txt")
    assert events == [("enx00e04ceb9e75", "up"), ("enx00e04ceb9e75", "down"), ("enx00e04ceb9e75", "up")]
    assert [p["seconds"] for p in carrier_down_periods(usb["events"], log_end=usb["end"])["enx00e04ceb9e75"]["periods"]] == [8.03]
    dhcpcd, events = read("linux_wireless_2019_journal_dhcpcd_carrier_lost_acquired_qp_decoded.txt")
    assert events == [("wlan0", "down"), ("wlan0", "up")] and {e["source"] for e in dhcpcd["events"]} == {"dhcpcd"}
    dsa, events = read("linux_acpi_2021_dsa_probe_bus_id_with_at_sign_and_an_spi_switch_port_without_netdev.txt")
    assert ("eth2", "up") in events and "spi0.1" not in dsa["netdevs"]
    # systemd-networkd's lines quoted without their time and host, then a journal with them.
    gadget, events = read("linux_usb_2020_quoted_bare_networkd_lines_then_journal_usb0_flaps_mail_with_prose.txt")
    assert [(e["line"], e["carrier"], e["time"]) for e in gadget["events"]][:4] == [
        (7, "up", None), (9, "down", None), (10, "up", None), (12, "down", None)]


NEWEST_FIRST = "the log is printed newest first (journalctl -r): its events are read from the last line up"


def test_a_journal_printed_newest_first_is_told_by_all_its_records_times():
    """journalctl -b -2 -r: eighteen records going back from 01:29:39 to 23:44:32, two of them e1000e's carrier
    changes. The records' order says newest first, though two events alone could be one record out of order."""
    parsed = parse_carrier_events((LOGS / "fedora43_upgrade_post_journalctl_b_2_r_newest_first_two_events_e1000e_down_up.txt").read_text())
    assert [(e["line"], e["netdev"], e["carrier"], e["time"]) for e in parsed["events"]] == [
        (6, "eno1", "down", "Oct 31 01:25:20"), (5, "eno1", "up", "Oct 31 01:25:34")]
    assert parsed["netdevs"] == {"eno1": {"down": 1, "up": 1, "losses": 1, "last": "up"}}
    assert parsed["end"] == {"time": "Oct 31 01:29:39", "monotonic_seconds": None}  # the newest record, printed first
    assert [n["reason"] for n in parsed["notes"]] == [NEWEST_FIRST]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eno1"]
    assert [(p["down_time"], p["up_time"], p["seconds"], p["ongoing"]) for p in periods["periods"]] == [
        ("Oct 31 01:25:20", "Oct 31 01:25:34", 14.0, False)]
    # Constructed: a log in order with one record out of order is not newest first, nor are two records going back once.
    in_order = ("Oct 31 01:25:19 h kernel: e1000e 0000:00:1f.6 eno1: NIC Link is Down\n"
                "Oct 31 01:25:34 h kernel: e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex\n"
                "Oct 31 01:25:30 h kernel: a record out of order\nOct 31 01:25:40 h kernel: later\n")
    parsed = parse_carrier_events(in_order)
    assert [e["carrier"] for e in parsed["events"]] == ["down", "up"] and parsed["end"]["time"] == "Oct 31 01:25:40"
    assert NEWEST_FIRST not in [n["reason"] for n in parsed["notes"]]
    two = parse_carrier_events("Oct 31 01:25:34 h kernel: e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex\n"
                               "Oct 31 01:25:20 h kernel: e1000e 0000:00:1f.6 eno1: NIC Link is Down\n")
    assert [e["carrier"] for e in two["events"]] == ["up", "down"] and two["notes"] == []


REBOOT = ("the kernel's clock goes back here while the wall clock does not (a reboot): a link down before it is counted down "
          "to the last record before it, not through the reboot")


def test_an_outage_open_at_a_reboot_ends_with_its_boot():
    """A syslog whose kernel records go from [3076.06] at 00:58:38 to [230.2] at 01:05:49: a reboot. networkd's
    "Lost carrier" of the boot before has no time of the kernel's own, but its outage ends with that boot."""
    parsed = parse_carrier_events(
        (LOGS / "ubuntuforums_2018_syslog_networkd_lost_carrier_bridge_vlan_macvtap_e1000e_reset_two_boots_PARTIAL.txt").read_text())
    assert parsed["end"] == {"time": "Oct 29 01:24:09", "monotonic_seconds": 1329.787086, "boot_ends": [
        {"line": 5, "time": "Oct 29 00:58:39", "monotonic_seconds": 3076.063464, "host": "home-server"}]}
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [(5, REBOOT)]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])
    assert {netdev: [(p["down_time"], p["seconds"], p["ongoing"]) for p in entry["periods"]] for netdev, entry in periods.items()} == {
        "enp4s0f0": [("Oct 29 00:58:38", 1.0, True)], "br10": [("Oct 29 00:58:39", 0.0, True)],  # to the boot's last record
        "enp4s0f1": [("Oct 29 01:22:04", 125.0, True)], "vlan10": [("Oct 29 01:22:04", 125.0, True)],
        "vlan30": [("Oct 29 01:22:04", 125.0, True)], "br30": [("Oct 29 01:22:05", 124.0, True)],
        "enp3s0f0": [("Oct 29 01:22:49", 80.0, True)], "macvtap0": [("Oct 29 01:22:49", 80.0, True)]}


def test_only_a_hosts_own_kernel_clock_going_back_with_the_wall_clock_on_is_a_reboot(tmp_path):
    # Constructed: a loss in the boot before and another in the next boot are two periods, the first to its boot's end.
    text = ("2026-11-24T10:00:00+0000 n systemd-networkd[1]: ib0: Lost carrier\n"
            "2026-11-24T10:00:05+0000 n kernel: [3000.0] mlx5_core 0000:3b:00.0: last record of the boot\n"
            "2026-11-24T10:04:00+0000 n kernel: [12.5] mlx5_core 0000:3b:00.0: first record of the next\n"
            "2026-11-24T10:04:10+0000 n systemd-networkd[1]: ib0: Lost carrier\n"
            "2026-11-24T10:05:10+0000 n kernel: [82.5] the log's last record\n")
    parsed = parse_carrier_events(text)
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["ib0"]["periods"]
    assert [(p["down_line"], p["seconds"], p["ongoing"]) for p in periods] == [(1, 5.0, True), (4, 60.0, True)]
    # The module's facts measure the same way (their events keep the line, their end the boots' ends).
    facts = kernel_log_facts(text, {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert [(p["seconds"], p["ongoing"]) for p in facts["down_periods"]["ib0"]["periods"]] == [(5.0, True), (60.0, True)]
    # A gain in the next boot ends the period as before, through the reboot (test_a_reboot_restarts_the_kernel_clock...).
    back_up = text.replace("ib0: Lost carrier\n2026-11-24T10:05", "ib0: Gained carrier\n2026-11-24T10:05")
    parsed = parse_carrier_events(back_up)
    assert [(p["seconds"], p["ongoing"]) for p in carrier_down_periods(parsed["events"], log_end=parsed["end"])["ib0"]["periods"]] == [
        (250.0, False)]
    # Two hosts of a central syslog each have a kernel clock of their own; a dmesg's clock going back without a wall
    # clock (a console that printed a record late) is no reboot either: no boot's end, no note.
    hosts = ("2026-11-24T10:00:00+0000 a kernel: [3000.0] x\n2026-11-24T10:00:01+0000 b kernel: [12.0] y\n"
             "2026-11-24T10:00:02+0000 a kernel: [3002.0] z\n")
    late = "[  119.437573] x\n[   90.064220] printed late\n[  120.0] y\n"
    for quiet in (hosts, late):
        parsed = parse_carrier_events(quiet)
        assert "boot_ends" not in parsed["end"] and parsed["notes"] == []


def test_an_outage_open_at_a_syslogs_end_is_measured_to_its_last_daemons_line(tmp_path):
    """A syslog's last records are mostly daemons', with a wall-clock time only: SONiC's igb "NIC Link is Down" at
    21:05:38.106121 [10601.214044], then orchagent's lines to 21:05:38.126648. The kernel's clock is related to the wall
    clock through the event, which carries both, so the outage lasts to the last line, not 0 s."""
    sonic = (LOGS / "sonic_7310_syslog_igb_link_down_among_daemons.txt").read_text()
    parsed = parse_carrier_events(sonic)
    assert parsed["end"] == {"time": "Apr  9 21:05:38.126648", "monotonic_seconds": None}
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eth0"]
    assert periods["clock"] == "monotonic"
    assert [(p["down_at"], p["up_at"], p["seconds"], p["ongoing"]) for p in periods["periods"]] == [(10601.214, 10601.235, 0.021, True)]
    assert "note" not in periods["periods"][0]
    facts = kernel_log_facts(sonic, {"eth0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert [(p["seconds"], p["ongoing"]) for p in facts["down_periods"]["eth0"]["periods"]] == [(0.021, True)]
    # An ASUS laptop's r8169 "link down" at 18:04:52 [750.913832], NetworkManager's deferred action at 18:04:56. The kernel's
    # own event alone (a reader of kernel lines only) is measured to that line as well: 4 s.
    asus = parse_carrier_events((LOGS / "ubuntuforums_2017_syslog_nm_1_4_deferring_before_r8169_link_down_PARTIAL.txt").read_text())
    kernel_only = [e for e in asus["events"] if e["source"] == "driver"]
    assert [(e["line"], e["time"], e["monotonic_seconds"]) for e in kernel_only] == [(2, "Apr 28 18:04:52", 750.913832)]
    periods = carrier_down_periods(kernel_only, log_end=asus["end"])["enp2s0"]
    assert (periods["clock"], [(p["down_at"], p["seconds"], p["ongoing"]) for p in periods["periods"]]) == (
        "monotonic", [(750.914, 4.0, True)])
    # With NetworkManager's own lines (1.4: "device (enp2s0): link disconnected (deferring action for 4 seconds)"), the wall clock.
    periods = carrier_down_periods(asus["events"], log_end=asus["end"])["enp2s0"]
    assert [(p["down_line"], p["down_time"], p["seconds"], p["ongoing"]) for p in periods["periods"]] == [(1, "Apr 28 18:04:52", 4.0, True)]
    # A Satellite's atl1c down at 22:00:19 [483.916481], NetworkManager's lines to 22:00:23, the next boot at 22:10:56 [4.68]:
    # 4 s to the boot's last line, in either clock.
    satellite = parse_carrier_events(
        (LOGS / "ubuntuforums_2017_syslog_atl1c_down_nm_1_8_deferring_then_reboot_renamed_PARTIAL.txt").read_text())
    assert satellite["end"]["boot_ends"] == [
        {"line": 6, "time": "Dec 10 22:00:23", "monotonic_seconds": 483.916481, "host": "jerrod-Satellite-C655D"}]
    for events, clock in ((satellite["events"], "syslog (no year)"), ([e for e in satellite["events"] if e["source"] == "driver"], "monotonic")):
        periods = carrier_down_periods(events, log_end=satellite["end"])["enp6s0"]
        assert (periods["clock"], [(p["down_line"], p["seconds"], p["ongoing"]) for p in periods["periods"]]) == (clock, [(2, 4.0, True)])


def test_an_end_the_kernels_clock_cannot_be_related_to_is_said_and_the_kernels_own_end_wins():
    # Constructed: a dmesg record (kernel seconds only), then a daemon's syslog line (a wall-clock time only): nothing relates
    # the two clocks, so the outage is counted to the kernel's last time, and the period says why.
    text = ("[  750.913832] r8169 0000:02:00.0 enp2s0: link down\n"
            "Apr 28 18:04:56 h NetworkManager[810]: <info>  [1493373896.1299] policy: set 'Sharon' (wlp3s0) as default\n")
    parsed = parse_carrier_events(text)
    period = carrier_down_periods(parsed["events"], log_end=parsed["end"])["enp2s0"]["periods"][0]
    assert (period["seconds"], period["ongoing"]) == (0.0, True)
    assert period["note"] == ("counted to the last kernel time stamp of these carrier changes, not to the log's end (Apr 28 18:04:56): "
                              "that record has a wall-clock time only, and none of these changes carries both clocks in a form that compares with it")
    # Constructed: a syslog time has no year, an ISO one has: they do not compare, so they relate no clocks either.
    mixed = ("Apr 28 18:04:52 h kernel: [  750.913832] r8169 0000:02:00.0 enp2s0: link down\n"
             "2017-04-28T18:04:56+0000 h NetworkManager[810]: <info>  [1493373896.1299] policy: set 'Sharon' (wlp3s0) as default\n")
    parsed = parse_carrier_events(mixed)
    period = carrier_down_periods(parsed["events"], log_end=parsed["end"])["enp2s0"]["periods"][0]
    assert period["seconds"] == 0.0 and period["note"].startswith(
        "counted to the last kernel time stamp of these carrier changes, not to the log's end (2017-04-28T18:04:56+0000): ")
    # Constructed: where the log's last record has the kernel's seconds, they are its end, not its whole-second wall time.
    text = ("Apr 28 18:04:52 h kernel: [  750.913832] r8169 0000:02:00.0 enp2s0: link down\n"
            "Apr 28 18:04:53 h kernel: [  751.100000] proc_thermal 0000:00:04.0: Unsupported event [0x84]\n")
    parsed = parse_carrier_events(text)
    period = carrier_down_periods(parsed["events"], log_end=parsed["end"])["enp2s0"]["periods"][0]
    assert (period["seconds"], period["ongoing"], "note" in period) == (0.186, True, False)


def test_octeons_up_line_without_the_word_link_ends_each_outage():
    """An EdgeRouter Lite (octeon_ethernet): "eth1: Link down", then "eth1: 1000 Mbps Full duplex, port  1, queue  1" as the
    link comes back, the driver's only up line. Twelve outages of eth1 and two of eth0, up at the end."""
    parsed = parse_carrier_events((LOGS / "linux_mips_2013_donenfeld_edgerouter_octeon_link_down_then_mbps_full_duplex_port_queue_up_PARTIAL.txt")
                                  .read_text())
    assert parsed["netdevs"] == {"eth1": {"down": 12, "up": 12, "losses": 12, "last": "up"},
                                 "eth0": {"down": 2, "up": 2, "losses": 2, "last": "up"}}
    assert parsed["events"][1] == {"line": 2, "netdev": "eth1", "carrier": "up", "source": "driver", "bond": None, "pci_address": None,
                                   "time": None, "monotonic_seconds": 23458.40367, "host": None, "log_format": "dmesg",
                                   "message": "eth1: 1000 Mbps Full duplex, port  1, queue  1"}
    assert parsed["notes"] == []  # "Port 1 receive error code 13, packet dropped" is a record, no link message
    assert seconds_of_log(parsed) == {
        "eth1": [(13.0, False), (51.05, False), (9.01, False), (4455.058, False), (8.0, False), (24880.68, False), (8.0, False),
                 (3.0, False), (8.0, False), (3.0, False), (1.0, False), (9.0, False)],
        "eth0": [(2.0, False), (2.0, False)]}
    patch = parse_carrier_events((LOGS / "linux_mips_2013_koskinen_patch_edgerouter_lite_octeon_link_down_then_1000_mbps_full_duplex_PARTIAL.txt")
                                 .read_text())
    assert seconds_of_log(patch) == {"eth0": [(3.0, False)]}
    # Constructed: speed and duplex without the port and queue, or with words after them, are not Octeon's line.
    other = parse_carrier_events("[ 5.0] eth0: 1000 Mbps Full duplex\n[ 6.0] eth0: 1000 Mbps Full duplex, port 0, queue 0 (SFP+ up)\n")
    assert other["events"] == []


def seconds_of_log(parsed):
    return {netdev: [(p["seconds"], p["ongoing"]) for p in entry["periods"]]
            for netdev, entry in carrier_down_periods(parsed["events"], log_end=parsed["end"]).items()}
