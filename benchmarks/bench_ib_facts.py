"""How much ib_facts costs beyond reading the files it reads.

Builds a large synthetic node: 16 HCAs x 2 ports (half InfiniBand, half RoCE), 64 SR-IOV virtual
functions with their own RDMA devices and netdevs, and full GID tables (256 entries with gid_attrs on
every port). Then, side by side in one run, alternating to share the machine's noise:

* ``gather``: ``_sysfs.gather(root)``, everything ib_facts does;
* ``floor``: the same system calls and nothing else: every file gather opened (opened, read, closed),
  every directory it listed and every link it read, recorded from a gather run.

Prints the median of each and their ratio. Usage:
``python benchmarks/bench_ib_facts.py [--rounds N] [--json FILE]``
"""

from __future__ import annotations

import argparse
import builtins
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

from ansible_collections.rdma.node.plugins.module_utils import _sysfs  # noqa: E402

HCAS = 16
VFS = 64
GIDS_PER_PORT = 256


def build_large_node(root):
    tree = sysfs_tree.TreeBuilder(root)
    for hca in range(HCAS):
        bdf = "0000:%02x:00.0" % (0x10 + hca)
        roce = hca % 2 == 1
        device = tree.hca("mlx5_%d" % hca, bdf, node_guid="0c42:a103:00%02x:0000" % hca)
        for port in (1, 2):
            netdev = "ens%df%d" % (hca, port - 1)
            tree.port(device, port, link_layer="Ethernet" if roce else "InfiniBand",
                      port_guid="0c42:a103:00%02x:00%02x" % (hca, port), extra_gids=GIDS_PER_PORT - 1,
                      ndevs=[netdev, netdev + ".100", netdev + ".200"] if roce else None)
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
                  extra_gids=GIDS_PER_PORT - 1, ndevs=["vf%d" % vf])
        tree.netdev("vf%d" % vf, bdf)


class Recorder:
    """Records the file system calls gather makes, by wrapping them inside the _sysfs module only."""

    def __init__(self):
        self.opened, self.listed, self.links = [], [], []

    def __enter__(self):
        real_open, real_listdir, real_readlink = builtins.open, os.listdir, os.readlink
        self._saved = (real_open, real_listdir, real_readlink)

        def recording_open(path, *args, **kwargs):
            self.opened.append(path)
            return real_open(path, *args, **kwargs)

        def recording_listdir(path):
            self.listed.append(path)
            return real_listdir(path)

        def recording_readlink(path):
            self.links.append(path)
            return real_readlink(path)

        _sysfs.open = recording_open  # module global shadows the builtin for _sysfs only
        os.listdir, os.readlink = recording_listdir, recording_readlink
        return self

    def __exit__(self, *exc):
        del _sysfs.open
        os.listdir, os.readlink = self._saved[1], self._saved[2]


def read_floor(calls):
    """The same system calls as gather, doing nothing with what they return."""
    opened, listed, links = calls
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
    for path in opened:
        try:
            with open(path, "rb") as handle:
                handle.read(4096)
        except OSError:
            pass


def timed(function, *args):
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", help="also write the numbers to this file")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rdma-node-bench-") as tmp:
        root = os.path.join(tmp, "sys")
        build_large_node(root)
        with Recorder() as recorder:
            facts, warnings = _sysfs.gather(root)
        calls = (recorder.opened, recorder.listed, recorder.links)
        assert not warnings and facts["summary"]["port_count"] == HCAS * 2 + VFS
        gather_times, floor_times = [], []
        for warm_up in range(3):  # warm the dentry and page caches for both
            _sysfs.gather(root)
            read_floor(calls)
        for round_number in range(options.rounds):
            gather_times.append(timed(_sysfs.gather, root))
            floor_times.append(timed(read_floor, calls))
    result = {
        "devices": facts["summary"]["device_count"],
        "ports": facts["summary"]["port_count"],
        "netdevs_mapped": len(facts["netdevs"]),
        "files_opened": len(recorder.opened),
        "dirs_listed": len(recorder.listed),
        "links_read": len(recorder.links),
        "rounds": options.rounds,
        "gather_median_ms": round(statistics.median(gather_times) * 1000, 2),
        "floor_median_ms": round(statistics.median(floor_times) * 1000, 2),
    }
    result["ratio"] = round(result["gather_median_ms"] / result["floor_median_ms"], 2)
    for key, value in result.items():
        print("%-18s %s" % (key, value))
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
