"""The node side of the health facts: the kernel log window of the RDMA netdevs and the second
counter read, through the real ib_facts module."""

from __future__ import annotations

import datetime
import os
import sys
import tracemalloc

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.module_utils._health_collect import MAX_EVENTS, kernel_log_facts
from ansible_collections.rdma.node.plugins.modules import ib_facts
from testpaths import FIXTURES

LOGS = FIXTURES / "cmd/kernel_log"


def bonded_tree(root):
    """A RoCE bond (bond1) over ens3f0/ens3f1 and an unrelated bond0 over eno49/eno50."""
    tree = sysfs_tree.TreeBuilder(root)
    device = tree.hca("mlx5_bond_0", "0000:3b:00.0")
    tree.port(device, 1, link_layer="Ethernet", ndevs=["bond1"])
    tree.netdev("bond1")
    tree.netdev("ens3f0", "0000:3b:00.0", master="bond1")
    tree.netdev("ens3f1", "0000:3b:00.1", master="bond1", dev_port=1)
    return tree


def test_real_dmesg_bond_slaves_count_for_the_rdma_bond_only(tmp_path):
    bonded_tree(str(tmp_path))
    netdevs = {"bond1": {"device": "mlx5_bond_0", "port": 1}}
    facts = kernel_log_facts((LOGS / "coreos_2515_dmesg_bond_definitely_down.txt").read_text(), netdevs, str(tmp_path), 24, "f", False)
    # eno50 of bond0 is not an RDMA netdev; ens3f1, ens3f0 and bond1 itself are bond1's.
    assert [(e["netdev"], e["rdma_netdev"]) for e in facts["events"]] == [("ens3f1", "bond1"), ("ens3f0", "bond1"), ("bond1", "bond1")]
    assert facts["netdevs"] == {"bond1": {"down": 3, "up": 0, "losses": 1, "last": "down", "port": "mlx5_bond_0/1"}}
    # dmesg has no wall-clock time: the whole text counts, and the facts say so.
    assert (facts["window_applied"], facts["since"]) == (False, None)


def test_saved_journal_is_judged_as_of_its_newest_record(tmp_path):
    lines = ["2026-11-20T08:00:00+0000 n systemd-networkd[811]: ib0: Lost carrier",   # 4 days before the last
             "2026-11-20T08:00:05+0000 n systemd-networkd[811]: ib0: Gained carrier"]
    lines += ["2026-11-24T%02d:00:00+0000 n systemd-networkd[811]: ib0: %s carrier" % (hour, state)
              for hour in range(10, 22) for state in ("Lost", "Gained")]
    lines += ["2026-11-24T22:00:00+0000 n kernel: mlx5_core 0000:3b:00.0 ens1: Link down"]  # not an RDMA netdev
    facts = kernel_log_facts("\n".join(lines), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert facts["netdevs"]["ib0"]["losses"] == 12
    assert (facts["since"], facts["until"]) == ("2026-11-23T22:00:00+00:00", "2026-11-24T22:00:00+00:00")
    assert facts["events_total"] == 24 and len(facts["events"]) == 24
    shorter = kernel_log_facts("\n".join(lines), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 2, "saved", False)
    assert shorter["netdevs"]["ib0"]["losses"] == 2  # 20:00 and 21:00 within 2 h of 22:00


def test_events_are_bounded_but_counted(tmp_path):
    lines = ["2026-11-24T10:%02d:%02d+0000 n systemd-networkd[1]: ib0: %s carrier" % (i // 60, i % 60, "Lost" if i % 2 == 0 else "Gained")
             for i in range(300)]
    facts = kernel_log_facts("\n".join(lines), {"ib0": {"device": "mlx5_0", "port": 1}}, str(tmp_path), 24, "saved", False)
    assert facts["events_total"] == 300 and len(facts["events"]) == MAX_EVENTS
    assert facts["events"][-1]["time"] == "2026-11-24T10:04:59+0000"
    assert facts["netdevs"]["ib0"]["losses"] == 150


def test_module_errors_name_the_option(run_module, tmp_path):
    bonded_tree(str(tmp_path))
    missing = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["kernel_log"],
                                    "kernel_log_file": str(tmp_path / "nope.log")})
    assert missing.failed and missing["msg"] == "kernel_log_file %s does not exist; expected saved journalctl -k or dmesg output" % (
        tmp_path / "nope.log")
    os.mkfifo(str(tmp_path / "fifo.log"))
    fifo = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["kernel_log"], "kernel_log_file": str(tmp_path / "fifo.log")})
    assert fifo.failed and fifo["msg"].startswith("kernel_log_file: ") and "fifo.log" in fifo["msg"]
    negative = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["counters"], "counters_interval": -1})
    assert negative.failed and negative["msg"] == "counters_interval is -1.0; expected a number of seconds from 0 to 300 (0: one sample)"
    gone = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["counters"], "counters_interval": 0.01,
                                 "counters_resample_root": str(tmp_path / "later")})
    assert gone.failed and gone["msg"].startswith("counters_resample_root %s is not a directory" % (tmp_path / "later"))


def test_second_read_gives_the_earlier_sample_and_both_times(run_module, tmp_path):
    first, later = tmp_path / "now", tmp_path / "later"
    for root, errors in ((first, "5"), (later, "9")):
        tree = sysfs_tree.TreeBuilder(str(root))
        tree.port(tree.hca("mlx5_0", "0000:3b:00.0"), 1, counters={"symbol_error": errors, "port_xmit_data": "100"})
    result = run_module(ib_facts, {"sysfs_root": str(first), "gather_subset": ["counters"], "counters_interval": 0.05,
                                   "counters_resample_root": str(later)})
    rdma = result["ansible_facts"]["rdma"]
    assert rdma["counters_earlier"]["ports"] == {"mlx5_0/1": {"symbol_error": 5}}  # error counters only
    assert rdma["ports"][0]["counters"]["symbol_error"] == 9
    assert rdma["counters_time"] - rdma["counters_earlier"]["time"] == rdma["counters_interval_seconds"] >= 0.05
    once = run_module(ib_facts, {"sysfs_root": str(first), "gather_subset": ["counters"]})["ansible_facts"]["rdma"]
    assert "counters_earlier" not in once and once["counters_time"] > 0


# -- hostile kernel logs and options (issue 24, item 6) ---------------------------------------------

IB0 = {"ib0": {"device": "mlx5_0", "port": 1}}
NOW = datetime.datetime(2026, 11, 24, 13, 0, tzinfo=datetime.timezone.utc)


def ib_tree(root):
    tree = sysfs_tree.TreeBuilder(str(root))
    device = tree.hca("mlx5_0", "0000:3b:00.0")
    tree.port(device, 1, port_guid="b859:9f03:00d4:0a31")
    tree.netdev("ib0", "0000:3b:00.0", address="00:00:10:87:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:d4:0a:31",
                kind=sysfs_tree.ARPHRD_INFINIBAND)
    return tree


def losses(hours):
    return ["2026-11-24T%02d:00:00+0000 n systemd-networkd[811]: ib0: %s carrier" % (hour, state)
            for hour in hours for state in ("Lost", "Gained")]


def test_a_future_dated_line_does_not_hide_the_losses(tmp_path):
    lines = losses(range(10, 13)) + ["2099-01-01T00:00:00+0000 n kernel: mlx5_core 0000:3b:00.1 ens1: Link down"]
    facts = kernel_log_facts("\n".join(lines), IB0, str(tmp_path), 24, "saved", False, now=NOW)
    assert facts["netdevs"]["ib0"]["losses"] == 3
    assert (facts["since"], facts["until"]) == ("2026-11-23T12:00:00+00:00", "2026-11-24T12:00:00+00:00")
    assert facts["future_dated"] == 1


def test_a_future_dated_loss_of_an_rdma_netdev_still_counts(tmp_path):
    lines = losses([10]) + ["2099-01-01T00:00:00+0000 n systemd-networkd[811]: ib0: Lost carrier"]
    facts = kernel_log_facts("\n".join(lines), IB0, str(tmp_path), 24, "saved", False, now=NOW)
    assert facts["netdevs"]["ib0"]["losses"] == 2 and facts["events_total"] == 3
    assert facts["until"] == "2026-11-24T10:00:00+00:00" and facts["future_dated"] == 1


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+0000", "0001-01-01T00:30:00+0100", "9999-12-31T23:59:59-1400",
                                   "0001-01-01T00:00:00Z"])
def test_dates_at_the_ends_of_the_calendar_are_clean(tmp_path, stamp):
    lines = ["%s n systemd-networkd[811]: ib0: Lost carrier" % stamp] + losses([10])
    facts = kernel_log_facts("\n".join(lines), IB0, str(tmp_path), 24, "saved", False, now=NOW)
    assert facts["netdevs"]["ib0"]["down"] >= 1
    alone = kernel_log_facts(lines[0], IB0, str(tmp_path), 87600, "saved", False, now=NOW)
    assert alone["netdevs"]["ib0"]["losses"] == 1


@pytest.mark.parametrize("hours", [0, -1, 87601, 999999999])
def test_a_window_out_of_range_is_one_sentence(run_module, tmp_path, hours):
    ib_tree(tmp_path / "sys")
    log = tmp_path / "kern.log"
    log.write_text("\n".join(losses([10])) + "\n")
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path / "sys"), "gather_subset": ["kernel_log"],
                                   "kernel_log_file": str(log), "kernel_log_window_hours": hours})
    assert result.failed
    assert result["msg"] == ("kernel_log_window_hours is %d; expected a whole number of hours from 1 to 87600 "
                             "(ten years)" % hours)


@pytest.mark.parametrize("interval", ["inf", "nan", "-inf", "1e9", "300.5"])
def test_a_counters_interval_out_of_range_is_one_sentence(run_module, tmp_path, interval, no_hang):
    ib_tree(tmp_path / "sys")
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path / "sys"), "gather_subset": ["counters"],
                                   "counters_interval": interval})
    assert result.failed
    assert result["msg"] == ("counters_interval is %s; expected a number of seconds from 0 to 300 (0: one sample)"
                             % float(interval))


def test_a_large_saved_log_costs_less_than_four_times_its_size(run_module, tmp_path):
    """A 60 MB log cost 1.4 GB; the module's peak Python memory stays under 4 times the file."""
    ib_tree(tmp_path / "sys")
    # Lines that are no log records, and records that speak of a link in a form not read: each was a note.
    noise = "garbled line %d that is not a log record\n2026-11-24T09:00:00+0000 n kernel: link %d went down, maybe\n"
    log = tmp_path / "kern.log"
    with open(log, "w") as handle:
        for index in range(15000):
            handle.write(noise % (index, index))
            if index % 25 == 0:
                handle.write("2026-11-24T09:30:00+0000 n systemd-networkd[811]: ib0: %s carrier\n"
                             % ("Lost" if index % 50 == 0 else "Gained"))
    size = log.stat().st_size
    tracemalloc.start()
    try:
        result = run_module(ib_facts, {"sysfs_root": str(tmp_path / "sys"), "gather_subset": ["kernel_log"],
                                       "kernel_log_file": str(log)})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not result.failed
    assert result["ansible_facts"]["rdma"]["kernel_log"]["netdevs"]["ib0"]["losses"] == 300
    assert peak < 4 * size, "peak %d bytes for a %d byte log" % (peak, size)


FAKE_JOURNALCTL = """#!%s
# A stand-in for journalctl (no journal can be written here without journald): the kernel's carrier
# messages of a flapping ib0, oldest first (newest first with --reverse), far more than the module reads.
import sys
lines = ["2026-11-24T%%02d:%%02d:%%02d+0000 n systemd-networkd[811]: ib0: %%s carrier" %% (
    9 + n // 3600, n // 60 %% 60, n %% 60, "Lost" if n %% 2 == 0 else "Gained") for n in range(%d)]
if "--reverse" in sys.argv:
    lines.reverse()
out = sys.stdout
for line in lines:
    out.write(line + "\\n")
out.flush()
open(%r, "w").write("printed everything")
"""


def test_journalctl_output_is_read_with_a_bound_and_the_cut_is_said(tmp_path, monkeypatch):
    from ansible_collections.rdma.node.plugins.module_utils import _health_collect
    ib_tree(tmp_path / "sys")
    fake = tmp_path / "bin" / "journalctl"
    fake.parent.mkdir()
    finished = tmp_path / "finished"
    fake.write_text(FAKE_JOURNALCTL % (sys.executable, 40000, str(finished)))
    fake.chmod(0o755)
    # The real bound is 64 MiB; 256 KiB makes the same cut with a small output. The reader runs in this
    # process, so the bound can be lowered for it (run_module runs a module in a process of its own).
    monkeypatch.setattr(_health_collect, "JOURNAL_MAX_BYTES", 256 * 1024)
    facts, _warnings = read_ib_facts({"sysfs_root": str(tmp_path / "sys")})
    log = _health_collect.journal_kernel_log(str(fake), facts["netdevs"], str(tmp_path / "sys"), 24)
    kept = log["records"]
    assert 0 < kept < 40000 and log["netdevs"]["ib0"]["down"] + log["netdevs"]["ib0"]["up"] == kept
    # the newest lines were kept: the last event is the last line journalctl has
    assert log["events"][-1]["time"] == "2026-11-24T20:06:39+0000"
    assert log["since"] == log["events"][0]["time"] if kept <= 50 else log["since"] < log["events"][0]["time"]
    assert log["cut"] == ("journalctl printed more than 262144 bytes for the window; only its newest %d lines "
                          "were read, so carrier changes before %s are not counted" % (log["lines"], log["since"]))
    assert not finished.exists()  # stopped, not waited for
