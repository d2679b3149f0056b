"""How much ib_facts costs beyond reading the files it reads.

Builds a large synthetic node: 16 HCAs x 2 ports (half InfiniBand, half RoCE), 64 SR-IOV virtual
functions with their own RDMA devices and netdevs, and full GID tables (256 entries with gid_attrs on
every port); every port has the 21 IBTA counters and 25 mlx5 hw_counters, every HCA a PCIe link
behind a PCIe switch, and 8 GPUs share those switches. Then, side by side in one run, alternating to
share the machine's noise, for each ``gather_subset`` of ib_facts:

* ``gather``: what ib_facts does for the subset (``_ib_collect.read_ib_facts``: the ports, then each
  subset's declared reader);
* ``floor``: the same system calls and nothing else: every file gather opened (opened, read, closed),
  every directory it listed and every link it read, recorded from a gather run;
* ``checked floor``: the floor with the system calls a safe read of a node's file needs (the file's
  kind checked before and after ``open``, read to its end), as ``_files.read_bytes`` makes them.

Prints the median of each and their ratio, per subset (``ports`` is ib_facts' default). Usage:
``python benchmarks/bench_ib_facts.py [--rounds N] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

import sysfs_tree  # noqa: E402  (tools/)
from testpaths import COLLECTIONS_ROOT  # noqa: E402  (tests/)

sys.path.insert(0, str(COLLECTIONS_ROOT))

from ansible_collections.rdma.node.plugins.module_utils import _ib_collect  # noqa: E402

HCAS = 16
VFS = 64
GIDS_PER_PORT = 256
GPUS = 8
# Every subset that reads files (kernel_log runs journalctl, or reads one saved file), and all of them.
_ib_collect.load_readers()
SUBSETS = tuple([subset.name] for subset in _ib_collect.wanted_subsets(["all"])) + (["all"],)

COUNTERS = {name: str(index) for index, name in enumerate([
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait",
    "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets",
    "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets"])}
HW_COUNTERS = {name: "1" for name in [
    "duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
    "req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
    "resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err",
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans", "rp_cnp_handled", "rx_read_requests"]}
PCIE_LINK = {"current_speed": "16.0 GT/s PCIe", "max_speed": "16.0 GT/s PCIe", "current_width": 16, "max_width": 16}


def switch_of(hca):
    """Two HCAs share each PCIe switch (upstream and downstream port), as on 8-GPU servers."""
    bus = 0x80 + 4 * (hca // 2)
    return ["0000:%02x:00.0" % bus, "0000:%02x:00.0" % (bus + 1)]


def build_large_node(root):
    tree = sysfs_tree.TreeBuilder(root)
    for hca in range(HCAS):
        bdf = "0000:%02x:00.0" % (0x10 + hca)
        roce = hca % 2 == 1
        device = tree.hca("mlx5_%d" % hca, bdf, node_guid="0c42:a103:00%02x:0000" % hca, numa_node=hca // 8,
                          bridges=switch_of(hca) + ["0000:%02x:%02x.0" % (0x81 + 4 * (hca // 2), 8 + hca % 2)],
                          pcie=PCIE_LINK)
        for port in (1, 2):
            netdev = "ens%df%d" % (hca, port - 1)
            tree.port(device, port, link_layer="Ethernet" if roce else "InfiniBand",
                      port_guid="0c42:a103:00%02x:00%02x" % (hca, port), extra_gids=GIDS_PER_PORT - 1,
                      ndevs=[netdev, netdev + ".100", netdev + ".200"] if roce else None,
                      counters=COUNTERS, hw_counters=HW_COUNTERS)
            if roce:
                tree.netdev(netdev, bdf, dev_port=port - 1)
            else:
                tree.netdev("ib%d_%d" % (hca, port), bdf, kind=sysfs_tree.ARPHRD_INFINIBAND, dev_port=port - 1,
                            address=tree.ipoib_address("fe80:0000:0000:0000", "0c42:a103:00%02x:00%02x" % (hca, port)))
    for vf in range(VFS):
        pf = "0000:%02x:00.0" % (0x10 + vf % HCAS)
        bdf = "0000:%02x:%02x.%d" % (0x10 + vf % HCAS, 1 + vf // (HCAS * 8), (vf // HCAS) % 8)
        device = tree.hca("mlx5_%d" % (HCAS + vf), bdf, physfn=pf, node_guid="0c42:a103:01%02x:0000" % vf)
        tree.port(device, 1, link_layer="Ethernet", port_guid="0c42:a103:01%02x:0001" % vf,
                  extra_gids=GIDS_PER_PORT - 1, ndevs=["vf%d" % vf], counters=COUNTERS, hw_counters=HW_COUNTERS)
        tree.netdev("vf%d" % vf, bdf)
    for gpu in range(GPUS):
        hca = 2 * gpu
        tree.gpu("0000:%02x:00.0" % (0xc0 + gpu), numa_node=hca // 8, pcie=PCIE_LINK,
                 bridges=switch_of(hca) + ["0000:%02x:10.0" % (0x81 + 4 * (hca // 2))])
    for name in ("nvidia", "nvidia_peermem", "ib_core"):
        tree.write("module/%s/initstate" % name, "live")
    tree.write("module/nvidia/version", "535.104.05")
    tree.write("module/nvidia/taint", "POE")
    tree.write("module/ib_core/parameters/netns_mode", "Y")
    os.makedirs(os.path.join(root, "kernel/mm/memory_peers"))


def gather_subset(root, subsets):
    """What ib_facts does for one gather_subset."""
    return _ib_collect.read_ib_facts({"sysfs_root": root, "proc_root": None, "gather_subset": subsets})


class Recorder:
    """Records the file system calls a gather makes: the files it opens, the directories it lists and
    the links it reads (os.open, os.listdir, os.readlink, wrapped while it runs)."""

    def __init__(self):
        self.opened, self.listed, self.links = [], [], []

    def __enter__(self):
        self._saved = (os.open, os.listdir, os.readlink)
        real_open, real_listdir, real_readlink = self._saved

        def recording_open(path, flags, *args, **kwargs):
            if not flags & (os.O_WRONLY | os.O_RDWR) and not flags & getattr(os, "O_DIRECTORY", 0):
                self.opened.append(path)
            return real_open(path, flags, *args, **kwargs)

        def recording_listdir(path):
            self.listed.append(path)
            return real_listdir(path)

        def recording_readlink(path):
            self.links.append(path)
            return real_readlink(path)

        os.open, os.listdir, os.readlink = recording_open, recording_listdir, recording_readlink
        return self

    def __exit__(self, *exc):
        os.open, os.listdir, os.readlink = self._saved


def list_and_read_links(listed, links):
    """The directories gather listed and the links it read, doing nothing with them."""
    for path in listed:
        try:
            os.listdir(path)
        except OSError:
            pass
    for path in links:
        try:
            os.readlink(path)
        except OSError:
            pass


def read_floor(calls):
    """The same system calls as gather, doing nothing with what they return."""
    opened, listed, links = calls
    list_and_read_links(listed, links)
    for path in opened:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.read(fd, 4096)
        finally:
            os.close(fd)


def read_checked_floor(calls):
    """The same files read as the collection's bounded reader must read them (``_files.read_bytes``): the
    kind checked before ``open`` (a FIFO or a device is never opened) and after it (against a swap), and
    read to its end (a short read of procfs is not the end), doing nothing with what they hold."""
    opened, listed, links = calls
    list_and_read_links(listed, links)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    for path in opened:
        try:
            os.stat(path)
            fd = os.open(path, flags)
        except OSError:
            continue
        try:
            os.fstat(fd)
            while os.read(fd, 65536):
                pass
        finally:
            os.close(fd)


def timed(function, *args):
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def measure(root, subsets, rounds):
    """Median times of gather and of its read floor for one subset, and what it read."""
    with Recorder() as recorder:
        facts, warnings = gather_subset(root, subsets)
    calls = (recorder.opened, recorder.listed, recorder.links)
    assert not warnings and facts["summary"]["port_count"] == HCAS * 2 + VFS
    gather_times, floor_times, checked_times = [], [], []
    for _warm_up in range(3):  # warm the dentry and page caches for all three
        gather_subset(root, subsets)
        read_floor(calls)
        read_checked_floor(calls)
    for _round in range(rounds):
        gather_times.append(timed(gather_subset, root, subsets))
        floor_times.append(timed(read_floor, calls))
        checked_times.append(timed(read_checked_floor, calls))
    result = {
        "files_opened": len(recorder.opened),
        "dirs_listed": len(recorder.listed),
        "links_read": len(recorder.links),
        "gather_median_ms": round(statistics.median(gather_times) * 1000, 2),
        "floor_median_ms": round(statistics.median(floor_times) * 1000, 2),
        "checked_floor_median_ms": round(statistics.median(checked_times) * 1000, 2),
    }
    result["ratio"] = round(result["gather_median_ms"] / result["floor_median_ms"], 2)
    result["ratio_checked"] = round(result["gather_median_ms"] / result["checked_floor_median_ms"], 2)
    return facts, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", help="also write the numbers to this file")
    options = parser.parse_args(argv)
    subsets = {}
    with tempfile.TemporaryDirectory(prefix="rdma-node-bench-") as tmp:
        root = os.path.join(tmp, "sys")
        build_large_node(root)
        for subset in SUBSETS:
            facts, subsets[subset[0]] = measure(root, subset, options.rounds)
            if subset == ["ports"]:
                base = facts
        assert len(facts["gpus"]) == GPUS and len(facts["roce"]["gids"]) > 0
    ports = subsets["ports"]
    result = {
        "devices": base["summary"]["device_count"],
        "ports": base["summary"]["port_count"],
        "netdevs_mapped": len(base["netdevs"]),
        "files_opened": ports["files_opened"],
        "dirs_listed": ports["dirs_listed"],
        "links_read": ports["links_read"],
        "rounds": options.rounds,
        "gather_median_ms": ports["gather_median_ms"],
        "floor_median_ms": ports["floor_median_ms"],
        "ratio": ports["ratio"],
        "checked_floor_median_ms": ports["checked_floor_median_ms"],
        "ratio_checked": ports["ratio_checked"],
    }
    for key, value in result.items():
        print("%-18s %s" % (key, value))
    print("\n%-12s %8s %8s %8s %10s %9s %6s %11s %7s" % (
        "subset", "opened", "listed", "links", "gather_ms", "floor_ms", "ratio", "checked_ms", "ratio"))
    for name, numbers in subsets.items():
        print("%-12s %8d %8d %8d %10.2f %9.2f %6.2f %11.2f %7.2f" % (
            name, numbers["files_opened"], numbers["dirs_listed"], numbers["links_read"], numbers["gather_median_ms"],
            numbers["floor_median_ms"], numbers["ratio"], numbers["checked_floor_median_ms"], numbers["ratio_checked"]))
    result["subsets"] = subsets
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
