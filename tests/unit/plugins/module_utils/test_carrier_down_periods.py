"""How long each netdev's carrier stayed down, from the time stamps of real kernel logs (OpenWrt
logread, Azure's health-check syslog with lower-case "lost carrier", journalctl without a year), for
gpud's flap and drop rule; and the down periods in the kernel_log facts."""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.module_utils._health_collect import kernel_log_facts
from ansible_collections.rdma.node.plugins.module_utils._health_text import carrier_down_periods, event_clock, parse_carrier_events
from testpaths import FIXTURES

LOGS = FIXTURES / "cmd" / "kernel_log"
AZNHC = FIXTURES / "link_down" / "aznhc_1dev_6flap_syslog_lowercase_lost_carrier.txt"


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
