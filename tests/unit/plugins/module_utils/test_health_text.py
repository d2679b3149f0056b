"""parse_carrier_events and parse_rdma_system on real logs and outputs, and on what people paste."""

from __future__ import annotations

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._health_text import (
    HealthTextError,
    carrier_down_periods,
    event_clock,
    parse_carrier_events,
    parse_rdma_system,
)
from testpaths import COLLECTION_ROOT, FIXTURES

LOGS = FIXTURES / "cmd/kernel_log"


def read(name):
    return (LOGS / name).read_text(encoding="utf-8")


def brief(result):
    return [(e["line"], e["netdev"], e["carrier"], e["source"]) for e in result["events"]]


def test_journalctl_mlx5_link_up_with_prompt():
    result = parse_carrier_events(read("cubecos_733_journalctl_mlx5_eth1_link_up_prompt.txt"))
    assert brief(result) == [(2, "eth1", "up", "driver"), (4, "eth1", "up", "driver"), (6, "eth1", "up", "driver"),
                             (8, "eth1", "up", "driver")]
    first = result["events"][0]
    assert (first["time"], first["host"], first["pci_address"], first["log_format"]) == (
        "Mar 27 15:37:34", "cc1", "0000:01:00.1", "syslog")
    assert result["netdevs"] == {"eth1": {"down": 0, "up": 4, "losses": 0, "last": "up"}}
    assert result["notes"] == [{"line": 1, "text": "[cc1 ~]# journalctl -f  | grep eth", "reason": "a shell prompt"}]
    assert (result["lines"], result["records"]) == (8, 7)


def test_dmesg_bond_slaves_definitely_down_and_a_bond_without_slaves():
    result = parse_carrier_events(read("coreos_2515_dmesg_bond_definitely_down.txt"))
    assert [(e["netdev"], e["carrier"], e["bond"], e["monotonic_seconds"]) for e in result["events"]] == [
        ("eno50", "down", "bond0", 1202.718785), ("ens3f1", "down", "bond1", 1203.422721),
        ("ens3f0", "down", "bond1", 1203.445599), ("bond1", "down", None, 1203.467563)]
    assert result["netdevs"]["bond1"]["losses"] == 1
    assert result["notes"] == []


def test_a_dmesg_quoted_in_a_mail_is_read_past_its_quote_marks():
    result = parse_carrier_events(read("lkml_2024-12-11_kanliang_reply_double-quoted_dmesg_tail_mlx5_two_down.txt"))
    assert brief(result) == [(2, "enp5s0", "up", "driver"), (3, "enp1s0f0np0", "down", "driver"),
                             (4, "enp1s0f1np1", "down", "driver")]
    assert [(e["pci_address"], e["monotonic_seconds"]) for e in result["events"]] == [
        ("0000:05:00.0", 18865.729882), ("0000:01:00.0", 18865.848172), ("0000:01:00.1", 18866.05799)]
    assert result["notes"][0] == {"line": 1, "text": "root@number:/tmp# dmesg | tail", "reason": "a shell prompt"}
    assert result["records"] == 10


def test_two_virtual_functions_of_one_name_lose_their_link_apart():
    # The E810's VFs in two pods are both llsm1 (0000:10:09.2 and .3): two devices, two losses.
    result = parse_carrier_events(read("intel-wired-lan_2023_e810_ice_iavf_quoted_two_vfs_one_name_cut_line.txt"))
    assert [(e["netdev"], e["pci_address"], e["carrier"]) for e in result["events"]] == [
        ("ens1f1", "0000:10:00.1", "down"), ("net1", "0000:10:09.1", "down"), ("llsm1", "0000:10:09.2", "down"),
        ("llsm1", "0000:10:09.3", "down"), ("ens1f2", "0000:10:00.2", "up"), ("llsm2", "0000:10:11.1", "up"),
        ("net2", "0000:10:11.2", "up"), ("llsm2", "0000:10:11.3", "up")]
    assert result["netdevs"]["llsm1"] == {"down": 2, "up": 0, "losses": 2, "last": "down"}
    assert result["netdevs"]["llsm2"] == {"down": 0, "up": 2, "losses": 0, "last": "up"}


def test_hosts_of_a_central_syslog_lose_their_links_apart():
    # Three hosts' mlx5 port of one name and PCI address went down at once: three losses, not one repeated.
    result = parse_carrier_events(read("okd-notes_iso-z_three-hosts_same-netdev_mlx5_down_then_condensed-host-up.txt"))
    assert [(e["host"], e["netdev"], e["pci_address"], e["carrier"]) for e in result["events"]] == [
        ("node4", "enp1s0f0np0", "0000:01:00.0", "down"), ("node5", "enp1s0f0np0", "0000:01:00.0", "down"),
        ("node6", "enp1s0f0np0", "0000:01:00.0", "down"), ("node{4,5,6}", "enp1s0f0np0", "0000:01:00.0", "up")]
    assert result["netdevs"] == {"enp1s0f0np0": {"down": 3, "up": 1, "losses": 3, "last": "up"}}


@pytest.mark.parametrize("lines, counts", [
    # Whether its messages carry its PCI address or not.
    (["[1.0] iavf 0000:10:09.2 llsm1: NIC Link is Down", "[2.0] iavf 0000:10:09.2 llsm1: NIC Link is Down",
      "[3.0] IPv6: ADDRCONF(NETDEV_CHANGE): llsm1: link becomes ready", "[4.0] iavf 0000:10:09.2 llsm1: NIC Link is Down"],
     {"llsm1": {"down": 3, "up": 1, "losses": 2, "last": "down"}}),
    # A record without a host (dmesg's) between a host's syslog lines is that host's.
    (["2026-08-07T09:24:35Z node4 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",
      "[ 12.5] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",
      "2026-08-07T09:24:36Z node4 kernel: mlx5_core 0000:01:00.0 enp1s0f0np0: Link down"],
     {"enp1s0f0np0": {"down": 3, "up": 0, "losses": 1, "last": "down"}}),
], ids=["pci_address", "host"])
def test_one_device_repeating_its_loss_is_one_loss(lines, counts):
    assert parse_carrier_events("\n".join(lines) + "\n")["netdevs"] == counts


def test_dmesg_decoded_with_facility_and_level_before_the_iso_time():
    result = parse_carrier_events(read("gpud_dmesg_decode_iso_facility_level_prefix_mlx5_link_down_bootnet_up_PARTIAL.txt"))
    assert (result["lines"], result["records"], result["notes"]) == (243, 240, [])  # three blank lines (messages that ended in a newline)
    assert brief(result)[:7] == [(161, "enp157s0f1np1", "down", "driver"), (162, "enp157s0f0np0", "down", "driver"),
                                 (163, "enp27s0f1np1", "down", "driver"), (164, "bootnet", "up", "driver"),
                                 (165, "bootnet", "up", "addrconf"), (166, "eno8303", "up", "driver"), (169, "eno8303", "up", "addrconf")]
    first = result["events"][0]
    assert (first["time"], first["pci_address"], first["log_format"]) == ("2025-01-17T15:37:28,650514+00:00", "0000:9d:00.1", "dmesg")
    assert result["end"] == {"time": "2025-01-20T09:08:49,163335+00:00", "monotonic_seconds": None}
    assert result["netdevs"]["enp157s0f1np1"] == {"down": 1, "up": 0, "losses": 1, "last": "down"}
    # The bracketed time of dmesg -x without --time-format.
    assert brief(parse_carrier_events("kern  :info  : [ 6213.959196] mlx5_core 0000:9d:00.1 ib0: Link down\n")) == [
        (1, "ib0", "down", "driver")]


def test_a_line_of_many_bracketed_prefixes_is_read_without_recursion():
    # A node's log line of thousands of "[a] " before a record: one capture tool's prefix is read past, never more
    # (the record inside the line is still found, as a record a console printed into another line).
    result = parse_carrier_events("[a] " * 2000 + "[ 1.0] mlx5_core 0000:01:00.0 eth0: Link down\n")
    assert (result["records"], brief(result)) == (1, [(1, "eth0", "down", "driver")])
    prefixed = parse_carrier_events("[2026-09-03 05:50:31.887 Debug I] [ 1.0] mlx5_core 0000:01:00.0 eth0: Link down\n")
    assert brief(prefixed) == [(1, "eth0", "down", "driver")]


def test_a_kernel_tag_in_angle_brackets_is_no_shell_prompt():
    result = parse_carrier_events(read("centos64_serial_console_mofed20_mlx4_ib0_no_stamps_80col_wrap_initscripts.txt"))
    assert brief(result) == [(29, "ib0", "up", "addrconf")]
    tagged = [note for note in result["notes"] if note["text"].startswith("<mlx4_ib> mlx4_ib_add:")]
    assert [note["reason"] for note in tagged] == ["not a log record"]
    assert not [note for note in result["notes"] if note["reason"] == "a shell prompt"]
    assert parse_carrier_events("mysql> select 1;")["notes"][0]["reason"] == "a shell prompt"
    assert parse_carrier_events("-> cpu: 4")["notes"][0]["reason"] == "not a log record"  # hfi1's trace, quoted-printable


def test_a_cable_module_event_is_noted_as_a_link_message_not_read():
    # mlx5 says why a link went down ("Port module event: module 1, Cable unplugged"), not that it did: noted.
    result = parse_carrier_events(read("netdev_2020_cx4lx_caller_id_quoted_printable_port_module_cable_unplugged.txt"))
    assert result["events"] == []
    assert [(n["line"], n["reason"]) for n in result["notes"] if "link" in n["reason"]] == [
        (10, "a link message this filter does not read"), (17, "a link message this filter does not read")]
    whole = parse_carrier_events("[  230.026346] mlx5_core 0000:0b:00.1: Port module event: module 1, Cable unplugged\n")
    assert whole["notes"][0]["reason"] == "a link message this filter does not read"


@pytest.mark.parametrize("log, time, seconds, host", [
    # dmesg -d: the time since the message before, after the time stamp.
    ("[  123.456789 <    0.000123>] mlx5_core 0000:3b:00.0 ens1f0np0: Link down", None, 123.456789, None),
    # dmesg --time-format iso: a comma before the microseconds.
    ("2024-11-26T10:11:12,123456+00:00 mlx5_core 0000:3b:00.0 ens1f0np0: Link down", "2024-11-26T10:11:12,123456+00:00", None, None),
    # journalctl -o short-monotonic, -o short-full (the zone's name is left out of the time).
    ("[  123.456789] node1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link down", None, 123.456789, "node1"),
    ("Tue 2024-11-26 10:11:12 UTC node1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link down", "2024-11-26 10:11:12", None, "node1"),
    # RFC 5424 syslog (rsyslog's RSYSLOG_SyslogProtocol23Format).
    ("<6>1 2024-11-26T10:11:12.123456+00:00 node1 kernel - - - mlx5_core 0000:3b:00.0 ens1f0np0: Link down",
     "2024-11-26T10:11:12.123456+00:00", None, "node1"),
    # journalctl -o json: the times in microseconds, the realtime one given in ISO form.
    ('{"__REALTIME_TIMESTAMP":"1732615872123456","__MONOTONIC_TIMESTAMP":"123456789","_HOSTNAME":"node1",'
     '"MESSAGE":"mlx5_core 0000:3b:00.0 ens1f0np0: Link down","_TRANSPORT":"kernel"}',
     "2024-11-26T10:11:12.123456+00:00", 123.456789, "node1"),
])
def test_the_time_formats_of_dmesg_journalctl_and_syslog(log, time, seconds, host):
    result = parse_carrier_events(log + "\n")
    assert [(e["netdev"], e["carrier"], e["pci_address"], e["time"], e["monotonic_seconds"], e["host"]) for e in result["events"]] == [
        ("ens1f0np0", "down", "0000:3b:00.0", time, seconds, host)]
    assert result["notes"] == []


def test_journal_json_entries_that_hold_no_text_are_noted_not_read():
    # journald keeps a message that is not UTF-8 as an array of bytes; a cut or nested-too-deep line is no entry.
    entries = '{"MESSAGE":[109,108,120]}\n{"MESSAGE":"ib0: Link is Down"\n{"' + "[" * 9000 + "}\n"
    result = parse_carrier_events(entries)
    assert result["events"] == [] and [n["reason"] for n in result["notes"]] == ["not a log record"] * 3


def test_a_prefix_of_another_tool_before_the_kernels_time_stamp_is_read_past():
    # A test harness's "INFO - INFO - " before every dmesg line of a switch's mlxsw_spectrum ports.
    result = parse_carrier_events(read("dentos_11_harness_prefix_info_info_mlxsw_spectrum_lowercase_link_down_up_trailing_space_partial.txt"))
    assert [(e["netdev"], e["carrier"], e["source"], e["monotonic_seconds"]) for e in result["events"]] == [
        ("swp1", "down", "driver", 6213.959196), ("swp2", "up", "driver", 6218.812883), ("swp1", "up", "driver", 6218.817993),
        ("swp2", "up", "addrconf", 6218.823277), ("swp2", "down", "driver", 6224.148715), ("swp1", "down", "driver", 6224.154005)]
    assert result["events"][0]["pci_address"] == "0000:01:00.0"
    assert (result["records"], result["notes"]) == (17, [])


def test_a_journal_without_host_names_and_the_older_bonding_prefix():
    # "Jan 31 17:38:44.384098 kernel: bond0: ...": the first word after the time is the tag, not a host.
    result = parse_carrier_events(read("flatcar_mantle44_journal_short_precise_no_host_bond_link_up_repeated.txt"))
    assert {(e["netdev"], e["carrier"], e["bond"], e["host"]) for e in result["events"]} == {("enp0s20f0", "up", "bond0", None)}
    assert len(result["events"]) == 11 and result["events"][0]["time"] == "Jan 31 17:38:44.384098"
    # Kernels before 3.x: "bonding: bond0: ...", and "r8169 0000:0b:00.0: eth0: link down" (a colon after the bus id).
    result = parse_carrier_events(read("ubuntuforums_1110_kernlog_old_bonding_prefix_r8169_defdown_before_up.txt"))
    assert brief(result) == [(6, "eth0", "down", "driver"), (10, "eth1", "down", "driver"), (15, "eth0", "down", "bonding"),
                             (16, "bond0", "down", "bonding"), (17, "eth1", "down", "bonding"), (21, "eth0", "up", "driver"),
                             (22, "eth1", "up", "driver")]
    assert [e["pci_address"] for e in result["events"] if e["source"] == "driver"] == ["0000:0b:00.0", "0000:0d:00.0"] * 2
    assert result["netdevs"]["bond0"] == {"down": 1, "up": 0, "losses": 1, "last": "down"}
    assert result["netdevs"]["eth0"] == {"down": 2, "up": 1, "losses": 1, "last": "up"}


def test_the_2_6_bonding_wording_for_an_idle_interface_and_a_final_period():
    result = parse_carrier_events(read("ubuntuforums_hardy_syslog_old_bonding_prefix_starfire_link_flap.txt"))
    eth3 = [(e["line"], e["carrier"], e["source"], e["bond"]) for e in result["events"] if e["netdev"] == "eth3"]
    assert eth3[:6] == [(9, "down", "driver", None), (10, "down", "bonding", "bond0"), (11, "down", "bonding", "bond0"),
                        (12, "up", "driver", None), (13, "up", "bonding", "bond0"), (14, "up", "bonding", "bond0")]
    # "for interface eth3." ends a sentence: the period is not part of the name.
    assert set(result["netdevs"]) == {"eth1", "eth2", "eth3", "eth4"}
    assert all(entry["losses"] == 1 and entry["last"] == "up" for entry in result["netdevs"].values())


def test_talosctl_dmesg_records_with_nanosecond_iso_times():
    result = parse_carrier_events(read("talos13203_talosctl_dmesg_bond_enslave_backup_down_link.txt"))
    # Seven records, none a carrier change ("Enslaving as a backup interface with a down link" is not one).
    assert (result["records"], result["events"], result["notes"]) == (7, [], [])
    assert result["end"] == {"time": "2026-04-24T02:31:03.368638727Z", "monotonic_seconds": None}
    event = parse_carrier_events("kube-master-1: kern:    info: [2026-04-24T02:31:05.5Z]: "
                                 "mlx5_core 0000:01:00.0 enp1s0f0np0: Link down")["events"][0]
    assert (event["host"], event["netdev"], event["carrier"], event["time"]) == (
        "kube-master-1", "enp1s0f0np0", "down", "2026-04-24T02:31:05.5Z")


def test_repeated_link_up_and_link_not_ready_note():
    result = parse_carrier_events(read("coreos_2374_dmesg_bond_link_up_repeated_not_ready.txt"))
    assert result["netdevs"] == {"enp0s20f0": {"down": 0, "up": 6, "losses": 0, "last": "up"}}
    assert result["notes"] == [{"line": 4, "text": "[   26.606606] IPv6: ADDRCONF(NETDEV_UP): bond0: link is not ready",
                                "reason": "a link message this filter does not read"}]


def test_printk_dropped_prefix_and_a_pending_bond_down():
    result = parse_carrier_events(read("coreos_2508_console_printk_dropped_bond_down.txt"))
    assert brief(result) == [(1, "enp1s0f0", "down", "bonding")]
    assert result["events"][0]["monotonic_seconds"] == 737.350162


def test_syslog_with_level_word_and_daemon_noise():
    result = parse_carrier_events(read("sonic_7310_syslog_igb_link_down_among_daemons.txt"))
    assert brief(result) == [(2, "eth0", "down", "driver")]
    event = result["events"][0]
    assert (event["time"], event["host"], event["monotonic_seconds"], event["pci_address"]) == (
        "Apr  9 21:05:38.106121", "str-s6100-acs-4", 10601.214044, "0000:00:14.0")
    assert event["message"] == "igb 0000:00:14.0 eth0: igb: eth0 NIC Link is Down"
    assert result["records"] == 5 and result["notes"] == []


def test_openwrt_logread_flaps_count_losses():
    result = parse_carrier_events(read("openwrt_17351_logread_link_flaps_prompt.txt"))
    assert [e["carrier"] for e in result["events"]] == ["down", "up", "down", "up", "down"]
    assert result["netdevs"] == {"lan": {"down": 3, "up": 2, "losses": 3, "last": "down"}}
    assert result["events"][0]["pci_address"] is None  # mdio-bus:1f is not a PCI address
    assert result["notes"][0]["reason"] == "a shell prompt"


def test_ixgbe_up_then_down():
    result = parse_carrier_events(read("pfring_293_syslog_ixgbe_up_down.txt"))
    assert brief(result) == [(1, "eth11", "up", "driver"), (2, "eth11", "down", "driver")]
    assert result["netdevs"]["eth11"]["losses"] == 1


def test_kmsg_records_without_carrier_changes():
    result = parse_carrier_events(read("gpud_kmsg_peermem_no_carrier.log"))
    # Eight records, the last one gpud's test marker without a newline; none is a carrier change and
    # none speaks of a link, so there is nothing to note either.
    assert result["events"] == []
    assert (result["lines"], result["records"], result["notes"]) == (8, 8, [])


def test_demo_kernel_log_of_the_flapping_port(tmp_path):
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(tmp_path))
    result = parse_carrier_events((tmp_path / "v100-node-02/saved/kernel.log").read_text())
    assert result["netdevs"] == {"ibp94s0f0": {"down": 3, "up": 6, "losses": 3, "last": "up"}}
    assert {e["source"] for e in result["events"]} == {"networkd", "addrconf"}
    assert result["events"][0]["time"] == "2026-11-24T21:14:07+0000"


@pytest.mark.parametrize("line, expected", [
    ("mlx4_en: eth2: Link Down", ("eth2", "down", "driver")),
    ("mlx5_core 0000:b1:00.0 ens12f0np0: Link down", ("ens12f0np0", "down", "driver")),
    ("bond0: (slave ens12f0np0): link status definitely down, disabling slave", ("ens12f0np0", "down", "bonding")),
    ("IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready", ("ib0", "up", "addrconf")),
    ("bond0: link status definitely up for", None),  # cut before its interface: not the bond's own
    ("mlx5_core 0000:3b:00.0: Port module event: module 0, Cable unplugged", None),
])
def test_bare_messages(line, expected):
    result = parse_carrier_events([line])
    if expected is None:
        assert result["events"] == [] and result["notes"][0]["reason"] == "not a log record"
        assert result["end"] is None
    else:
        assert brief(result) == [(1,) + expected]


def test_empty_input_and_bad_types():
    assert parse_carrier_events("") == {"events": [], "netdevs": {}, "notes": [], "lines": 0, "records": 0, "end": None}
    assert parse_carrier_events(b"mlx4_en: eth2: Link Down\n\xff")["events"][0]["netdev"] == "eth2"  # bytes, a bad byte replaced
    with pytest.raises(HealthTextError, match="parse_carrier_events: expected a string or a list of strings, got int"):
        parse_carrier_events(42)
    with pytest.raises(HealthTextError, match="a list holding dict"):
        parse_carrier_events(["ok", {}])


def test_a_bonding_message_without_the_address_before_the_drivers_is_one_device():
    parsed = parse_carrier_events(read("ru_notes_2026_bond_slave_down_before_mlx5_link_down_ib_port_lines_PARTIAL.txt"))
    assert parsed["netdevs"]["enp83s0f0np0"] == {"down": 7, "up": 4, "losses": 3, "last": "down"}
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["enp83s0f0np0"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(13.333, False), (6.35, False), (0.085, True)]


def test_an_outage_open_at_the_end_of_a_boot_is_not_measured_into_the_next_boot_pasted_below():
    parsed = parse_carrier_events(read("cn_notes_2022_cx6_two_boots_pasted_down_at_end_of_first_boot.txt"))
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])
    assert [(p["down_at"], p["up_at"], p["ongoing"]) for p in periods["enp4s0np0"]["periods"]] == [(5.203, 5.203, True)]
    assert [(p["seconds"], p["ongoing"]) for p in periods["enp1s0np0"]["periods"]] == [(15.94, False)]


def test_kernel_and_networkmanager_tags_left_without_time_or_host_are_read():
    parsed = parse_carrier_events(read("bond_doc_kernel_and_networkmanager_tags_without_time_or_host.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"]) for e in parsed["events"]] == [
        (1, "ens192", "up", "driver"), (3, "ens192", "up", "networkmanager")]
    # The author's "<bond>" in place of the bond's name is not a netdev: those lines are said, not read.
    assert [note["line"] for note in parsed["notes"]] == [2, 4]


def test_atlantics_link_change_from_and_to_speed_zero_is_its_carrier():
    parsed = parse_carrier_events(read("aqtion_issue5_journal_atlantic_link_change_old_new_three_boots_PARTIAL.txt"))
    assert parsed["netdevs"] == {"eno2": {"down": 3, "up": 6, "losses": 3, "last": "up"}}
    assert {event["pci_address"] for event in parsed["events"]} == {"0000:0a:00.0"}
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eno2"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(8.0, False)] * 3


def test_an_older_systemds_spaced_journal_json_is_read():
    parsed = parse_carrier_events(read("journalctl_o_json_older_systemd_spaced_keys_two_records.txt"))
    assert (parsed["records"], parsed["events"], parsed["notes"]) == (2, [], [])
    assert parsed["end"] == {"time": "2020-09-08T05:10:04.961820+00:00", "monotonic_seconds": 108101.455807}


def test_openwrts_netifd_link_lines_are_carrier_changes():
    parsed = parse_carrier_events(read("openwrt_logread_netifd_link_down_up_then_e1000e_up_omr_issue530.txt"))
    assert parsed["netdevs"] == {"eth4": {"down": 1, "up": 2, "losses": 1, "last": "up"}}
    assert [event["source"] for event in parsed["events"]] == ["netifd", "netifd", "driver"]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eth4"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(2.0, False)]


def test_sonics_year_first_rsyslog_keeps_its_time_and_host():
    parsed = parse_carrier_events(read("sonic_issue24202_rsyslog_year_first_level_word_igb_link_up_PARTIAL.txt"))
    assert [(e["netdev"], e["carrier"], e["host"], e["log_format"], e["time"]) for e in parsed["events"]] == [
        ("eth0", "up", "sonic", "syslog", "2025 Oct  3 00:45:17.098692"), ("eth0", "up", "sonic", "syslog", "2025 Oct  3 00:45:17.098724")]
    # The five lines of ifupdown2 are records too (one a link command, noted as not read), the heading is not.
    assert parsed["records"] == 10 and [n["line"] for n in parsed["notes"]] == [1, 5]
    events = [dict(e, monotonic_seconds=None) for e in parsed["events"]]  # the wall-clock time alone: the year is known
    clock, seconds = event_clock(events)
    assert clock == "wall" and seconds[0] == pytest.approx(1759452317.098692, abs=1e-5)  # 2025-10-03T00:45:17.098692Z


def test_networkd_names_padded_before_their_colon_are_carrier_changes():
    # systemd-networkd before 220 padded the name to 16 columns: "eth0            : gained carrier".
    parsed = parse_carrier_events(read("coreos_issue414_networkd_names_padded_to_16_columns_gained_lost_carrier_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"]) for e in parsed["events"]] == [
        (4, "eth0", "up", "networkd"), (8, "veth61fb524", "up", "networkd"), (9, "docker0", "up", "networkd"),
        (11, "veth61fb524", "down", "networkd")]
    assert parsed["netdevs"]["veth61fb524"] == {"down": 1, "up": 1, "losses": 1, "last": "down"}
    # A carrier line it cannot read is noted, not passed over ("lost carrier" names the carrier before the state).
    odd = parse_carrier_events("Mar 19 21:44:51 h systemd-networkd[471]: veth0 (weird) : lost carrier\n")
    assert odd["events"] == [] and odd["notes"][0]["reason"] == "a link message this filter does not read"


@pytest.mark.parametrize("name, host, first_time", [
    ("blog_2022_netconsole_into_rsyslog_no_tag_kernel_stamp_after_host_bond1_ens19.txt", "pytest-11.local", "Jan 10 10:54:17"),
    ("netdev_2020_finer_rsyslog_blank_after_priority_bonding_arp_monitor_qp_decoded.txt", "LABNBS5B", "2020-11-20T18:14:19.159524+01:00"),
])
def test_syslog_forms_keep_their_host_and_time(name, host, first_time):
    """netconsole filed by rsyslog (no tag before the kernel's stamp) and rsyslog's "<6> 1 ..." keep host and time:
    a central log's hosts are told apart by them."""
    parsed = parse_carrier_events(read(name))
    assert parsed["events"] and {(e["host"], e["log_format"]) for e in parsed["events"]} == {(host, "syslog")}
    assert parsed["events"][0]["time"] == first_time and parsed["events"][0]["monotonic_seconds"] is not None


def test_networkmanagers_carrier_changed_state_is_noted():
    parsed = parse_carrier_events(read("cn_cookbook_networkmanager_1_10_state_change_carrier_changed_only.txt"))
    assert parsed["events"] == [] and [n["reason"] for n in parsed["notes"]] == ["a link message this filter does not read"]
    assert "carrier-changed" in parsed["notes"][0]["text"]


def test_a_localized_journals_month_names_are_months():
    """journalctl prints the month in its locale: "jul" (es_ES), "Okt" (de_DE), "janv." (fr_FR)."""
    parsed = parse_carrier_events(read("es_incident_report_journalctl_spanish_locale_lowercase_jul_r8169_down_up.txt"))
    assert [(e["netdev"], e["carrier"], e["host"], e["pci_address"]) for e in parsed["events"]] == [
        ("enp2s0", "down", "D1", "0000:02:00.0"), ("enp2s0", "up", "D1", "0000:02:00.0")]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["enp2s0"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(4.0, False)]
    for month in ("Okt", "janv.", "déc."):
        line = "%s  3 01:02:03 node7 kernel: mlx5_core 0000:3b:00.0 ens1f0: Link down\n" % month
        assert parse_carrier_events(line)["events"][0]["host"] == "node7"


@pytest.mark.parametrize("name, netdev, carriers, losses", [
    # The kernel's driver before 6.x printed both: "ax88179_178a 3-13.2.3.3:1.0 eth0: ax88179 - Link status is: 1"
    # (a mail quoting dmesg -x, every record wrapped before "- Link status").
    ("lkml_2020_quoted_dmesg_x_wrapped_ax88179_link_status_is_1_0_flaps.txt", "eth0", ["up", "down", "up", "down"], 2),
    # 6.17 prints "0" again and again while no link comes: one loss, never up.
    ("netdev_2025_journal_ax88179_178a_link_status_is_0_repeated_never_up.txt", "enp6s0f4u1u2", ["down"] * 11, 1),
    # ASIX's own driver names only the netdev: "eth0: ax88772b - Link status is: 0".
    ("board_doc_tab_indented_asix_vendor_driver_ax88772b_link_status_is_0.txt", "eth0", ["down"], 1),
])
def test_asix_usb_adapters_link_status_is_their_carrier(name, netdev, carriers, losses):
    parsed = parse_carrier_events(read(name))
    assert [(e["netdev"], e["carrier"]) for e in parsed["events"]] == [(netdev, carrier) for carrier in carriers]
    assert (parsed["netdevs"][netdev]["losses"], parsed["netdevs"][netdev]["last"]) == (losses, "down")
    # An unknown wording of the same message is noted, not dropped.
    assert [n["reason"] for n in parse_carrier_events("[    1.500000] eth0: ax88179 Link status is: 0\n")["notes"]] == [
        "a link message this filter does not read"]


def test_busybox_syslogd_writes_facility_and_level_before_the_tag():
    """A NAS's BusyBox syslogd: "Jan  1 00:00:30 (none) user.notice kernel: egiga0: link down"; its ifplugd agrees."""
    parsed = parse_carrier_events(read("forum_2008_busybox_syslogd_facility_level_before_tag_egiga0_and_ifplugd_PARTIAL.txt"))
    assert [(e["carrier"], e["time"], e["source"]) for e in parsed["events"]] == [
        ("down", "Jan  1 00:00:30", "driver"), ("up", "Jan  1 00:00:32", "driver"), ("up", "Jan  1 00:00:42", "ifplugd"),
        ("down", "Oct 16 07:35:51", "driver"), ("down", "Oct 16 07:35:51", "ifplugd")]
    assert {e["netdev"] for e in parsed["events"]} == {"egiga0"} and parsed["netdevs"]["egiga0"]["losses"] == 2
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["egiga0"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(2.0, False), (13.0, True)]


def test_ifplugd_names_its_interface_in_its_tag():
    """Cumulus Linux's systemctl status of ifplugd: "ifplugd(swp24)[788559]: Link beat lost." and "... detected."."""
    parsed = parse_carrier_events(read("cumulus_5_18_docs_systemctl_status_ifplugd_swp24_link_beat_lost_detected.txt"))
    assert [(e["netdev"], e["carrier"], e["time"]) for e in parsed["events"]] == [
        ("swp24", "up", "Jul 17 03:33:57"), ("swp24", "down", "Jul 17 03:34:20"), ("swp24", "up", "Jul 17 03:45:26")]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["swp24"]["periods"]
    assert [(p["seconds"], p["ongoing"]) for p in periods] == [(666.0, False)]
    # Pasted without its time and host, and ifplugd's line at its start.
    bare = parse_carrier_events("ifplugd(eth0)[1730]: Link beat lost.\nifplugd(eth0)[1730]: Initialization complete, link beat detected.\n")
    assert [(e["netdev"], e["carrier"]) for e in bare["events"]] == [("eth0", "down"), ("eth0", "up")]


def test_a_mailers_doubled_spaces_in_a_wrapped_carrier_message():
    """A 2005 mail: "e1000: eth2: e1000_watchdog: NIC Link  is " wrapped before "Up 1000 Mbps Full Duplex"."""
    parsed = parse_carrier_events(read("lkml_2005_mail_doubled_spaces_e1000_nic_link_is_wrapped_before_up_ifplugd_PARTIAL.txt"))
    assert [(e["netdev"], e["carrier"], e["time"], e["source"]) for e in parsed["events"]] == [
        ("eth2", "down", "Jul 14 12:35:03", "ifplugd"), ("eth2", "up", "Jul 14 12:35:05", "driver"),
        ("eth2", "up", "Jul 14 12:35:06", "ifplugd")]


@pytest.mark.parametrize("name, expected", [
    # Google's gVNIC: "gvnic 0000:00:04.0 ens4: Device link is up." (then ADDRCONF says the same).
    ("perfkitbenchmarker_gce_boot_dmesg_gvnic_device_link_is_up.txt", [("ens4", "up", "0000:00:04.0", 3.091134), ("ens4", "up", None, 3.09376)]),
    # e1000e of 2.6.27: "0000:05:00.1: eth1: Link is Up 100 Mbps Full Duplex", the PCI function without the driver.
    ("forum_2009_dmesg_2.6.27_e1000e_pci_function_without_driver_PARTIAL.txt", [
        ("eth1", "up", "0000:05:00.1", 17.057314), ("eth1", "up", None, 17.059845),
        ("eth0", "up", "0000:05:00.0", 17.914187), ("eth0", "up", None, 17.916692)]),
])
def test_nic_forms_that_name_the_link_their_own_way(name, expected):
    parsed = parse_carrier_events(read(name))
    assert [(e["netdev"], e["carrier"], e["pci_address"], e["monotonic_seconds"]) for e in parsed["events"]] == expected
    # The same forms going down, and an mlx5 subfunction's netdev, whose driver is "mlx5_core.sf" (the kernel's
    # netdev_info format: driver, device, netdev).
    lines = ("[  9.1] gve 0000:00:03.0 eth0: Device link is down.\n[  9.2] 0000:05:00.1: eth1: Link is Down\n"
             "[  9.3] mlx5_core.sf mlx5_core.sf.4 enp3s0f0s88: Link down\n")
    assert [(e["netdev"], e["carrier"]) for e in parse_carrier_events(lines)["events"]] == [
        ("eth0", "down"), ("eth1", "down"), ("enp3s0f0s88", "down")]


def test_slingshots_cxi_link_events_with_the_node_glued_to_dmesg_T():
    parsed = parse_carrier_events(read("hpe_shs_docs_hpl_slowness_slingshot_cxi_event_link_down_node_glued_to_dmesg_T.txt"))
    assert [(e["netdev"], e["carrier"], e["host"], e["time"], e["pci_address"]) for e in parsed["events"]] == [
        ("hsn3", "down", "x4207c7s5b0n0", "Wed Nov  8 13:26:51 2023", "0000:c3:00.0"),
        ("hsn3", "down", "x4207c7s5b0n0", "Wed Nov  8 13:30:16 2023", "0000:c3:00.0")]
    assert parsed["netdevs"]["hsn3"] == {"down": 2, "up": 0, "losses": 1, "last": "down"}
    up = parse_carrier_events("[Wed Nov  8 13:31:02 2023] cxi_ss1 0000:c3:00.0: cxi3[hsn3] CXI_EVENT_LINK_UP\n")
    assert [(e["netdev"], e["carrier"]) for e in up["events"]] == [("hsn3", "up")]


def test_older_drivers_own_words_for_the_carrier():
    """bnx2's "bnx2: eth0 NIC Copper Link is Down" (no colon after the netdev), sis900's "eth0: Media Link Off/On", e100's
    "e100: eth0: e100_watchdog: link up, ..." (the netdev, not the function), alx's "NIC Up:"."""
    bnx2 = parse_carrier_events(read("forum_2010_dmesg_bnx2_nic_copper_link_without_colon_38s_outage.txt"))
    assert [(e["netdev"], e["carrier"]) for e in bnx2["events"]] == [("eth0", "up"), ("eth0", "down"), ("eth0", "up")]
    periods = carrier_down_periods(bnx2["events"], log_end=bnx2["end"])["eth0"]["periods"]
    assert [(round(p["seconds"], 2), p["ongoing"]) for p in periods] == [(38.14, False)]
    sis900 = parse_carrier_events(read("lkml_2002_messages_sis900_media_link_off_on_flaps.txt"))
    assert {e["netdev"] for e in sis900["events"]} == {"eth0"} and sis900["netdevs"]["eth0"]["losses"] == 6  # six "Media Link Off"
    e100 = parse_carrier_events(read("forum_2008_syslog_e100_watchdog_link_up_PARTIAL.txt"))
    assert ("e100_watchdog" not in e100["netdevs"]) and ("eth0", "up") in [(e["netdev"], e["carrier"]) for e in e100["events"]]
    # A real alx line (an Ubuntu forum's dmesg): up in its own words, down as the others say it.
    alx = parse_carrier_events("[ 1178.074958] alx 0000:09:00.0 enp9s0: NIC Up: 1 Gbps Full\n"
                               "[ 1200.000000] alx 0000:09:00.0 enp9s0: Link Down\n")
    assert [(e["netdev"], e["carrier"], e["pci_address"]) for e in alx["events"]] == [
        ("enp9s0", "up", "0000:09:00.0"), ("enp9s0", "down", "0000:09:00.0")]


def test_a_kernel_record_right_after_the_shells_prompt():
    """A serial console printed "ixgbe 0000:17:00.0 eth1: NIC Link is Up 10 Gbps ..." on the prompt's line."""
    parsed = parse_carrier_events(read("lkml_2021_serial_console_kernel_record_after_root_prompt_ixgbe_igb_PARTIAL.txt"))
    assert [(e["netdev"], e["carrier"], e["pci_address"], e["line"]) for e in parsed["events"]] == [
        ("eth0", "up", "0000:01:00.0", 38), ("eth1", "up", "0000:17:00.0", 39), ("eth2", "up", "0000:17:00.1", 40)]
    # A prompt before a command is still only a prompt.
    assert [n["reason"] for n in parse_carrier_events("root@node:~# dmesg | grep -i link\n")["notes"]] == ["a shell prompt"]


def test_rfc5424_fields_without_the_priority_are_records():
    parsed = parse_carrier_events(read("lkml_2023_quoted_rsyslog_iso_without_priority_kernel_dashes_no_carrier.txt"))
    assert (parsed["records"], parsed["events"], parsed["notes"]) == (3, [], [])
    assert parsed["end"] == {"time": "2022-12-26T07:44:45.000000+01:00", "monotonic_seconds": None}
    lines = "2024-01-08T10:11:12.5+01:00 node7 kernel - - - mlx5_core 0000:3b:00.0 ens1f0: Link %s\n"
    flap = parse_carrier_events(lines % "down" + lines.replace("10:11", "10:12") % "up")
    assert [(e["carrier"], e["host"]) for e in flap["events"]] == [("down", "node7"), ("up", "node7")]


def test_atl1_names_the_netdev_after_its_pci_function_without_a_colon():
    """atl1 (Attansic L1): "atl1 0000:02:00.0: eth0 link is up 100 Mbps full duplex" and "... eth0 link is down"."""
    parsed = parse_carrier_events(read("ubuntuforums_2008_atl1_netdev_without_colon_link_is_down_up_addrconf.txt"))
    driver = [(e["line"], e["carrier"]) for e in parsed["events"] if e["source"] == "driver"]
    assert driver == [(1, "up"), (3, "up"), (5, "up"), (7, "up"), (8, "up"), (11, "up"), (13, "up"), (15, "down"), (16, "up"),
                      (19, "down"), (25, "up"), (28, "down")]
    assert {(e["netdev"], e["pci_address"]) for e in parsed["events"] if e["source"] == "driver"} == {("eth0", "0000:02:00.0")}
    assert parsed["netdevs"] == {"eth0": {"down": 3, "up": 13, "losses": 3, "last": "down"}}
    # Only the four "ADDRCONF(NETDEV_UP): ...: link is not ready" lines are left to the notes.
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [(line, "a link message this filter does not read") for line in (21, 22, 23, 24)]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eth0"]["periods"]
    assert [(p["down_line"], p["up_line"], p["seconds"], p["ongoing"]) for p in periods] == [
        (15, 16, 322.825, False), (19, 25, 15139.188, False), (28, None, 0.0, True)]
    # Constructed: the same words after a device that is no PCI function are noted, not taken for a netdev's carrier.
    usb = parse_carrier_events("[    5.000000] zd1211rw 5-8:1.0: eth1 link is up\n")
    assert usb["events"] == [] and [n["reason"] for n in usb["notes"]] == ["a link message this filter does not read"]


def test_atl1c_prints_the_older_form_after_its_dev_info_prefix():
    """atl1c: "atl1c 0000:01:00.0: atl1c: eth0 NIC Link is Up<10 Mbps Half Duplex>" (the driver's name again, no colon
    after the netdev, "Up<" glued to the speed); five outages of about 2 s and up at the end."""
    parsed = parse_carrier_events(read("ubuntuforums_2012_mint_atl1c_driver_name_before_netdev_up_angle_bracket_flaps_quoted_first_line.txt"))
    assert [(e["line"], e["carrier"]) for e in parsed["events"]] == [
        (2, "up"), (3, "down"), (4, "up"), (6, "up"), (7, "down"), (8, "up"), (10, "up"), (11, "down"), (12, "up"), (14, "up"),
        (16, "down"), (17, "up"), (19, "up"), (20, "down"), (21, "up"), (23, "up")]
    assert {(e["netdev"], e["pci_address"], e["source"]) for e in parsed["events"]} == {("eth0", "0000:01:00.0", "driver")}
    assert parsed["netdevs"] == {"eth0": {"down": 5, "up": 11, "losses": 5, "last": "up"}}
    assert (parsed["records"], parsed["notes"]) == (23, [])  # the first line's "> " is a quote mark
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eth0"]["periods"]
    assert [(p["down_at"], p["seconds"], p["ongoing"]) for p in periods] == [
        (84964.097, 2.133, False), (84977.339, 2.141, False), (85328.908, 2.138, False), (86518.038, 2.139, False),
        (87004.174, 2.139, False)]
    # Constructed lines in the forms without the prefix (ATL1e's and bnx2's older drivers) read as before.
    before = parse_carrier_events("[   25.1] ATL1e: eth0 NIC Link is Up<100 Mbps Full Duplex>\n[   30.2] bnx2: eth0 NIC Copper Link is Down\n")
    assert [(e["netdev"], e["carrier"], e["pci_address"]) for e in before["events"]] == [("eth0", "up", None), ("eth0", "down", None)]


def test_cdc_ncms_network_connection_is_its_carrier():
    """cdc_ncm (an RTL8156 2.5G USB adapter) logs the device's notification, which sets the carrier: "cdc_ncm 1-1:2.0
    enx002427880815: network connection: disconnected" (repeated every 32 ms by that adapter), then "connected"."""
    parsed = parse_carrier_events(read("netdev_2021_grundler_cdc_ncm_rtl8156_network_connection_disconnected_connected_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in parsed["events"]] == [
        (17, "enx002427880815", "down", 785963.089586), (18, "enx002427880815", "down", 785963.121673),
        (19, "enx002427880815", "down", 785963.153682), (31, "enx002427880815", "up", 786139.600992),
        (33, "enx002427880815", "up", 786139.665097), (35, "enx002427880815", "up", 786139.729094)]
    assert parsed["netdevs"] == {"enx002427880815": {"down": 3, "up": 3, "losses": 1, "last": "up"}}
    assert {e["pci_address"] for e in parsed["events"]} == {None}  # a USB interface, no PCI function
    # The mail's prose and its "..." are no records; no record is left unread.
    assert {n["reason"] for n in parsed["notes"]} == {"not a log record"} and parsed["records"] == 24
    # Constructed: another wording of the notification is noted, not dropped.
    odd = parse_carrier_events("[ 9.0] cdc_ncm 1-1:2.0 usb0 (unregistered): network connection: disconnected\n")
    assert odd["events"] == [] and [n["reason"] for n in odd["notes"]] == ["a link message this filter does not read"]


def test_a_journal_line_cut_to_its_host_and_tag_is_a_record():
    """Journal lines whose time was cut, the host kept (anonymised to "host"): "host kernel: r8169 ... Link is Down"."""
    parsed = parse_carrier_events(read("blog_2021_linux_desktop_rant_journal_cut_to_host_and_tag_r8169_suspend_link_down_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["host"], e["time"], e["pci_address"]) for e in parsed["events"]] == [
        (6, "enp2s0", "down", "host", None, "0000:02:00.0")]
    assert (parsed["records"], parsed["end"]) == (10, None)  # every line but the fence, none with a time
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [(1, "not a log record")]
    # Constructed: a program's tag with its pid counts too; two words before another colon are prose, not a record.
    assert brief(parse_carrier_events("node7 systemd-networkd[525]: ib0: Lost carrier\n")) == [(1, "ib0", "down", "networkd")]
    prose = parse_carrier_events("Kernel version: 5.10\n")
    assert (prose["records"], [n["reason"] for n in prose["notes"]]) == (0, ["not a log record"])


def test_a_level_without_a_time_stamp_is_a_record():
    """A kernel 2.4 log read with klogctl: "<6>e1000: eth0 NIC Link is Up 100 Mbps Full Duplex", no time stamps."""
    parsed = parse_carrier_events(read("lkml_2003_klogctl_dump_kernel_2.4_levels_without_time_e1000_link_up_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["time"], e["monotonic_seconds"], e["log_format"]) for e in parsed["events"]] == [
        (9, "eth0", "up", None, None, "dmesg")]
    # Ten records; the two halves the mail wrapped off ("0.", "1.") are not records.
    assert (parsed["records"], [n["line"] for n in parsed["notes"]], parsed["end"]) == (10, [5, 7], None)
    # Constructed: the level before a time stamp reads as before, the time kept.
    assert parse_carrier_events("<6>[   14.952018] e1000e 0000:00:19.0 eth0: NIC Link is Down\n")["events"][0]["monotonic_seconds"] == 14.952018


LINK_NOTE = "a link message this filter does not read"


def test_networkmanager_1_0_to_1_10_says_link_disconnected_without_the_word_carrier():
    """Linux Mint 18.3 (NetworkManager 1.10) on resume: "device (eno1): link disconnected (deferring action for 4
    seconds)", then "device (eno1): link connected"; the kernel printed no down line, so NetworkManager is the only witness."""
    parsed = parse_carrier_events(
        read("ubuntuforums_2018_mint_syslog_nm_1_10_device_link_disconnected_deferring_without_carrier_word_resume_e1000e_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"], e["time"]) for e in parsed["events"]] == [
        (2, "eno1", "down", "networkmanager", "Feb 19 17:43:51"), (6, "eno1", "up", "networkmanager", "Feb 19 17:43:51"),
        (7, "eno1", "up", "driver", "Feb 19 17:43:51")]
    assert parsed["netdevs"] == {"eno1": {"down": 1, "up": 2, "losses": 1, "last": "up"}}
    assert (parsed["records"], parsed["notes"]) == (8, [])
    # NetworkManager 1.0 (CentOS 7) without "device": "<info> (enp0s3): link disconnected (deferring action for 4 seconds)",
    # then "(calling deferred action)" 4 s later (the same loss, repeated), beside e1000's own lines.
    book = parse_carrier_events(read("cn_rhel7_troubleshooting_book_messages_e1000_two_ports_nm_1_0_paren_link_disconnected_connected_PARTIAL.txt"))
    assert [(e["line"], e["carrier"], e["source"]) for e in book["events"] if e["netdev"] == "enp0s3"] == [
        (1, "down", "driver"), (3, "down", "networkmanager"), (5, "down", "networkmanager"), (7, "up", "driver"),
        (9, "up", "networkmanager")]
    assert book["netdevs"]["enp0s8"] == {"down": 3, "up": 2, "losses": 1, "last": "up"}
    periods = carrier_down_periods(book["events"], log_end=book["end"])
    assert {netdev: [(p["down_line"], p["up_line"], p["seconds"]) for p in entry["periods"]] for netdev, entry in periods.items()} == {
        "enp0s3": [(1, 7, 6.0)], "enp0s8": [(2, 8, 6.0)]}
    # Constructed: the forms before and after still read the same.
    assert brief(parse_carrier_events(["<info>  (eth0): carrier now OFF (device state 30)",
                                       "<info>  [1526537213.5872] device (eth0): carrier: link connected"])) == [
        (1, "eth0", "down", "networkmanager"), (2, "eth0", "up", "networkmanager")]


def test_amlogic_kernels_stamp_the_cpu_after_the_seconds():
    """Amlogic's vendor kernels print "[  553.066682@2]": the record counts, with its seconds, in a quoted README."""
    parsed = parse_carrier_events(read("rdk_thunder_testclient_readme_quoted_amlogic_cpu_at_stamp_meson6_dwmac_link_up.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"], e["pci_address"]) for e in parsed["events"]] == [
        (12, "eth0", "up", 553.066682, None)]  # meson6-dwmac at ff3f0000.ethernet, no PCI function
    assert parsed["events"][0]["message"] == "meson6-dwmac ff3f0000.ethernet eth0: Link is Up - 100Mbps/Full - flow control rx/tx"
    assert (parsed["records"], parsed["end"]) == (1, {"time": None, "monotonic_seconds": 553.066682})
    # A Le Potato's boot: every line is a record; libphy's line names a PHY, no netdev, and is noted, as without "@0".
    potato = parse_carrier_events(read("linux_media_2018_le_potato_amlogic_cpu_at_stamps_libphy_stmmac_phy_id_link_up_PARTIAL.txt"))
    assert (potato["events"], potato["records"], potato["end"]) == ([], 7, {"time": None, "monotonic_seconds": 15.626389})
    assert [(n["line"], n["reason"]) for n in potato["notes"]] == [(3, "not a log record"), (6, LINK_NOTE), (8, "not a log record")]


def test_dpaa2_a_dpmac_is_no_netdev_and_the_dpnis_link_event_is_its_carrier():
    """The kernel's DPAA2 documentation: phylink's "fsl_dpaa2_mac dpmac.17: Link is Up" names an fsl-mc object, not an
    interface; "fsl_dpaa2_eth dpni.0 eth1: Link Event: state up" follows eth1's netif_carrier_on."""
    parsed = parse_carrier_events(read("kernel_doc_dpaa2_mac_phy_support_console_dpmac_phylink_up_dpni_link_event_state_up.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in parsed["events"]] == [(4, "eth1", "up", 14896.897478)]
    assert parsed["netdevs"] == {"eth1": {"down": 0, "up": 1, "losses": 0, "last": "up"}}
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [(1, "a shell prompt"), (3, LINK_NOTE)]
    # Constructed: the driver's down line.
    assert brief(parse_carrier_events("[  9.1] fsl_dpaa2_eth dpni.2 eth3: Link Event: state down\n")) == [(1, "eth3", "down", "driver")]


def test_a_journal_line_whose_clock_was_replaced_by_dots_is_a_record_without_time():
    """A how-to's journal with "Sep 04 ... colima systemd-networkd[416]: docker0: Lost carrier": host and tag kept."""
    parsed = parse_carrier_events(read("devops_homework_journalctl_ubuntu2404_time_elided_dots_networkd_docker0_lost_carrier.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"], e["host"], e["time"]) for e in parsed["events"]] == [
        (5, "docker0", "down", "networkd", "colima", None)]
    assert (parsed["records"], parsed["end"], [n["reason"] for n in parsed["notes"]]) == (4, None, ["a shell prompt"])
    # Constructed: prose after a date and dots is no record.
    prose = parse_carrier_events("Sep 04 ... and then it broke: eth0 Lost carrier\n")
    assert (prose["records"], prose["events"]) == (0, [])


def test_a_consoles_journal_line_whose_program_name_was_cut_keeps_networkds_message():
    """A console's copy of journald's lines with the identifier cut, ": enP5p1s0f1: Lost carrier" (tg3 ports during an
    EEH reset): read as the bare message after the colon, with nothing added."""
    parsed = parse_carrier_events((FIXTURES / "link_down/netdev_2020_tg3_eeh_bare_messages_networkmanager_epoch_brackets.txt").read_text())
    assert [(e["line"], e["carrier"], e["source"]) for e in parsed["events"] if e["netdev"] == "enP5p1s0f0"] == [
        (27, "down", "networkd"), (34, "down", "driver"), (41, "up", "driver"), (44, "up", "networkd"), (45, "up", "networkmanager")]
    assert [(e["line"], e["carrier"]) for e in parsed["events"] if e["netdev"] == "enP5p1s0f1"] == [
        (1, "down"), (28, "down"), (35, "up"), (38, "up"), (39, "up")]
    assert {(e["host"], e["time"]) for e in parsed["events"] if e["source"] == "networkd"} == {(None, None)}
    # timesyncd's cut line and networkd's "Configured" are no carrier change: still noted as before.
    assert {n["line"]: n["reason"] for n in parsed["notes"] if n["line"] in (29, 40, 46)} == {
        29: "not a log record", 40: "not a log record", 46: "not a log record"}


def test_esxi_vobd_lines_are_noted_without_a_host():
    """ESXi's vobd.log: "2026-02-10T08:30:43.149Z In(14) vobd[2097764]: ... vmnic vmnic4 linkstate down". Records with
    no Linux netdev's carrier, each noted; the severity "In(14)" is no host."""
    parsed = parse_carrier_events(read("broadcom_kb431016_esxi_vobd_vmnic_linkstate_down_iso_In14_PARTIAL.txt"))
    assert (parsed["events"], parsed["netdevs"], parsed["records"]) == ([], {}, 4)
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [(line, LINK_NOTE) for line in (1, 2, 3, 4)]
    assert parsed["end"] == {"time": "2026-02-10T08:30:43.149Z", "monotonic_seconds": None}
    # Constructed: a Linux host's ISO journal line keeps its host.
    linux = parse_carrier_events("2026-02-10T08:30:43.149Z node1 kernel: mlx5_core 0000:3b:00.0 ib0: Link down\n")
    assert [(e["netdev"], e["carrier"], e["host"]) for e in linux["events"]] == [("ib0", "down", "node1")]


def test_a_cpu_column_after_the_kernels_stamp_is_no_part_of_the_message():
    """A ZynqMP board's 5.2 kernel with the PREEMPT_RT patches' CPU column, quoted in a netdev reply: "[   21.031793] 003:
    macb ff0b0000.ethernet eth0: link down", then up 5.1 s later. The column goes as "[ T3356]" and "@2" go."""
    parsed = parse_carrier_events(read("netdev_2019_lunn_reply_quoting_thomas_rt_printk_cpu_column_003_macb_link_down_up_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"], e["monotonic_seconds"], e["message"]) for e in parsed["events"]] == [
        (4, "eth0", "down", "driver", 21.031793, "macb ff0b0000.ethernet eth0: link down"),
        (5, "eth0", "up", "driver", 26.142835, "macb ff0b0000.ethernet eth0: link up (1000/Full)")]
    assert parsed["netdevs"] == {"eth0": {"down": 1, "up": 1, "losses": 1, "last": "up"}}
    assert [(n["line"], n["reason"]) for n in parsed["notes"]] == [(line, "not a log record") for line in (1, 2, 3, 6, 7)]
    periods = carrier_down_periods(parsed["events"], log_end=parsed["end"])["eth0"]["periods"]
    assert [(p["down_line"], p["up_line"], p["seconds"], p["ongoing"]) for p in periods] == [(4, 5, 5.111, False)]
    # Constructed: the column after the caller and inside a syslog line; a message that only starts with digits keeps them,
    # and "003:" without its blank is no such column.
    assert [(e["netdev"], e["carrier"], e["host"], e["monotonic_seconds"]) for e in parse_carrier_events([
        "[   21.031793][ T3356] 003: macb ff0b0000.ethernet eth0: link down",
        "Jan 10 10:54:17 zcu102 kernel: [   26.142835] 003: macb ff0b0000.ethernet eth0: link up (1000/Full)"])["events"]] == [
        ("eth0", "down", None, 21.031793), ("eth0", "up", "zcu102", 26.142835)]
    vlan = parse_carrier_events("[    5.000000] 8021q: adding VLAN 0 to HW filter on device eth0\n")
    assert (vlan["records"], vlan["events"], vlan["notes"]) == (1, [], [])
    glued = parse_carrier_events("[    5.000000] 003:macb ff0b0000.ethernet eth0: link down\n")
    assert (glued["events"], [n["reason"] for n in glued["notes"]]) == ([], [LINK_NOTE])


def test_a_mails_wrap_inside_the_stamp_of_a_record_printed_into_another_line():
    """A reply on the iommu list quoting a console where bnxt_en's record landed inside dracut's line, and the mail wrapped at
    72 columns right after its bracket: "...dhcp for interfa[" / "142.361359] bnxt_en 0000:3b:00.1 eno3np1: NIC Link is Up"."""
    parsed = parse_carrier_events(read(
        "iommu_2021_gao_reply_quoting_wilk_72col_wrap_inside_stamp_of_bnxt_en_record_printed_into_dracut_line_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"], e["pci_address"]) for e in parsed["events"]] == [
        (4, "eno2np0", "up", 119.300502, "0000:3b:00.0"), (9, "eno3np1", "up", 142.361359, "0000:3b:00.1")]
    assert parsed["events"][1]["message"] == "bnxt_en 0000:3b:00.1 eno3np1: NIC Link is Up, 25000 Mbps full"
    assert parsed["netdevs"]["eno3np1"] == {"down": 0, "up": 1, "losses": 0, "last": "up"}
    # Line 10 is the rest of line 9's record, no longer a line of its own; the mail's other wrapped halves still are.
    assert [n["line"] for n in parsed["notes"]] == [1, 2, 3, 5, 8, 11, 13, 14, 16, 18, 20]
    assert (parsed["lines"], parsed["records"], parsed["end"]) == (20, 8, {"time": None, "monotonic_seconds": 251.888002})
    # Constructed: a wrap after the whole stamp, and one inside a line that is no record; a record of no carrier change, or
    # a bracket that starts no stamp, is not joined to the line after it.
    assert [(e["line"], e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in parse_carrier_events([
        "[  101.155295] dracut-initqueue[1477]: Warning: dhcp for interfa[  142.361359]",
        "bnxt_en 0000:3b:00.1 eno3np1: NIC Link is Up, 25000 Mbps",
        "Starting Network Manager...[",
        "12.345678] igb 0000:01:00.0 eth0: NIC Link is Down"])["events"]] == [
        (1, "eno3np1", "up", 142.361359), (3, "eth0", "down", 12.345678)]
    for lines in (["[  101.155295] dracut-initqueue[1477]: Warning: dhcp for interfa[", "142.361359] bnxt_en 0000:3b:00.1 eno3np1: FEC autoneg"],
                  ["[  101.155295] see the list [", "1] and the link is down"]):
        unjoined = parse_carrier_events(lines)
        assert (unjoined["events"], unjoined["records"], [n["line"] for n in unjoined["notes"]]) == ([], 1, [2])


def test_a_consoles_caller_column_without_a_time_stamp_is_a_record():
    """A console quoted in an igb patch (netdev, 2024) of a kernel built with CONFIG_PRINTK_CALLER and printk times off: the
    caller alone where the time would be, "[ T3256] igb 0000:09:00.0 haeth0: igb: haeth0 NIC Link is Down", then task 292's
    AER lines. Each line is a record without a time."""
    parsed = parse_carrier_events(read("netdev_2024_khalfella_igb_patch_console_caller_column_without_time_haeth0_link_down_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"], e["pci_address"], e["time"], e["monotonic_seconds"], e["log_format"])
            for e in parsed["events"]] == [(1, "haeth0", "down", "driver", "0000:09:00.0", None, None, "dmesg")]
    assert parsed["events"][0]["message"] == "igb 0000:09:00.0 haeth0: igb: haeth0 NIC Link is Down"
    assert parsed["netdevs"] == {"haeth0": {"down": 1, "up": 0, "losses": 1, "last": "down"}}
    # Line 5's "[  200.105524,009]" starts no record printed into it: nothing read from it, nothing noted.
    assert (parsed["lines"], parsed["records"], parsed["notes"], parsed["end"]) == (6, 6, [], None)
    assert carrier_down_periods(parsed["events"], log_end=parsed["end"]) == {
        "haeth0": {"clock": None, "periods": [], "reason": "line 1 has no time stamp that gives a duration"}}
    # Constructed: the caller after a stamp keeps the stamp (util-linux's "[    7.370479] [    T179]", the kernel's
    # "[  336.527739][ T3356]"); a CPU's caller and a level before the caller read too; other words in brackets are no record.
    assert [(e["netdev"], e["carrier"], e["monotonic_seconds"]) for e in parse_carrier_events([
        "[    7.370479] [    T179] r8169 0000:05:00.0 enp5s0: Link is Down",
        "[  336.527739][ T3356] r8169 0000:05:00.0 enp5s0: Link is Up - 1Gbps/Full",
        "[    C3] mlx5_core 0000:3b:00.0 ens1f0np0: Link down",
        "<6>[  T292] mlx5_core 0000:3b:00.0 ens1f0np0: Link up"])["events"]] == [
        ("enp5s0", "down", 7.370479), ("enp5s0", "up", 336.527739), ("ens1f0np0", "down", None), ("ens1f0np0", "up", None)]
    other = parse_carrier_events("[ Tx1] link down on port 2\n")
    assert (other["records"], other["events"], [n["reason"] for n in other["notes"]]) == (0, [], ["not a log record"])


def test_a_record_a_books_narrow_column_wrapped_twice_is_read_whole():
    """RHEL 8's RH134 book shows "less /var/log/messages" in a column so narrow that NetworkManager 1.14's records wrap twice:
    "Feb 26 15:51:07 jegui NetworkManager[689]: <info>" / " [1551214267.8599] device (lo):" / "carrier: link connected"."""
    parsed = parse_carrier_events(read("rh134_rhel8_book_less_messages_nm_1_14_info_wrapped_over_three_lines_lo_carrier_link_connected_PARTIAL.txt"))
    assert [(e["line"], e["netdev"], e["carrier"], e["source"], e["host"], e["time"]) for e in parsed["events"]] == [
        (7, "lo", "up", "networkmanager", "jegui", "Feb 26 15:51:07")]
    assert parsed["events"][0]["message"] == "<info> [1551214267.8599] device (lo): carrier: link connected"
    # Lines 8 and 9 are the rest of line 7's record; the other records' wrapped halves are still lines of their own.
    assert [n["line"] for n in parsed["notes"]] == [1, 2, 4, 5, 6, 11, 12, 14, 15, 17, 18, 19]
    assert (parsed["lines"], parsed["records"]) == (19, 5)
    # Constructed: a third line that is a carrier change of its own, or a record, is not joined; a wrap onto one line is
    # read as before, the line after it left alone.
    alone = parse_carrier_events(["Feb 26 15:51:07 jegui NetworkManager[689]: <info>", " [1551214267.8599] device (lo):",
                                  "eth0: Link is Down"])
    assert (brief(alone), [n["line"] for n in alone["notes"]]) == ([(3, "eth0", "down", "driver")], [2])
    record = parse_carrier_events(["Feb 26 15:51:07 jegui NetworkManager[689]: <info>", " [1551214267.8599] device (lo):",
                                   "Feb 26 15:51:08 jegui NetworkManager[689]: <info> carrier: link connected"])
    assert (record["events"], record["records"], [n["line"] for n in record["notes"]]) == ([], 2, [2])
    once = parse_carrier_events(["[    5.100000] e1000e 0000:00:19.0 eth0: NIC", "Link is Up 1000 Mbps", "Full Duplex"])
    assert (brief(once), once["events"][0]["message"], [n["line"] for n in once["notes"]]) == (
        [(1, "eth0", "up", "driver")], "e1000e 0000:00:19.0 eth0: NIC Link is Up 1000 Mbps", [3])


# --------------------------------------------------------------------------- rdma system


@pytest.mark.parametrize("name, mode, qkey", [
    ("spiderpool_sriov_shared_comment_prompt_indented.txt", "shared", None),
    ("spiderpool_sriov_exclusive_comment_prompt_indented.txt", "exclusive", None),
    # Quoted in a mail ("> $ rdma system show"): the quote marks are not a prompt that hides the line.
    ("lkml_2023_machata_reply_quoted_privileged_qkey_off.txt", "shared", False),
    # A document's fenced block: the commands before the output have no prompts.
    ("daocloud_docs_zh_fence_commands_without_prompts_exclusive.txt", "exclusive", None),
])
def test_rdma_system_real_outputs(name, mode, qkey):
    text = (FIXTURES / "cmd/rdma_system" / name).read_text(encoding="utf-8")
    assert parse_rdma_system(text) == {"netns_mode": mode, "copy_on_fork": True, "privileged_qkey": qkey}


def test_rdma_system_forms():
    assert parse_rdma_system("netns shared") == {"netns_mode": "shared", "copy_on_fork": None, "privileged_qkey": None}
    assert parse_rdma_system(["netns exclusive privileged-qkey off copy-on-fork on"]) == {
        "netns_mode": "exclusive", "copy_on_fork": True, "privileged_qkey": False}
    assert parse_rdma_system('{"netns":"shared","privileged-qkey":false,"copy-on-fork":true}') == {
        "netns_mode": "shared", "copy_on_fork": True, "privileged_qkey": False}


@pytest.mark.parametrize("text, message", [
    ("", "no 'netns shared' or 'netns exclusive' line"),
    ("link mlx5_0/1 state ACTIVE", "line 1 is not rdma system output: 'link mlx5_0/1 state ACTIVE'"),
    ("netns shared copy-on-fork on\nlink mlx5_0/1 state ACTIVE", "line 2 is not rdma system output"),
    ("{broken", "starts like JSON but is not JSON"),
    ('{"netns": "global"}', "no netns of shared or exclusive"),
])
def test_rdma_system_errors(text, message):
    with pytest.raises(HealthTextError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_rdma_system(text)


def test_rdma_system_json_nested_too_deeply_is_one_sentence():
    """Issue 24, item 11: json.loads raised a RecursionError through the filter."""
    with pytest.raises(HealthTextError) as raised:
        parse_rdma_system("{" + '"netns": {' * 100000 + "}" * 100001)
    assert str(raised.value) == "parse_rdma_system: the JSON is nested too deeply to be rdma -j system output"
