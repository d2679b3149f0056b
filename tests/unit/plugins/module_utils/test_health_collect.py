"""The node side of the health facts: the kernel log window of the RDMA netdevs and the second
counter read, through the real ib_facts module."""

from __future__ import annotations

import os

import sysfs_tree

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
    assert negative.failed and negative["msg"] == "counters_interval is -1.0; expected a number of seconds of 0 or more (0: one sample)"
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
