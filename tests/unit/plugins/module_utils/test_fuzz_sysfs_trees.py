"""Every fact reader, with every subset, on the demo's eight node trees whose files a hostile or broken
node filled with something else: a few files at a time replaced by nothing, junk, a huge or negative
number, invalid UTF-8, NUL bytes, a long line, or their own text cut short. A read ends in facts that are
plain JSON (no NaN, no infinity) or in the readers' one-sentence error, never in another exception."""

from __future__ import annotations

import json
import os
import random

import pytest
import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.module_utils._subsets import FactReadError
from testpaths import COLLECTION_ROOT

REPLACEMENTS = [b"", b"\n", b"junk\n", b"-1\n", b"99999999999999999999999999\n", b"18446744073709551615\n", b"\x00\x01\xff\xfe",
                b"nan\n", b"inf\n", b"1e999\n", b"0x\n", b"  \t\n", b"4: ACTIVE\n", b"100 Gb/sec (4X EDR)\n", b"\xc3\x28\n",
                b"a" * 5000, b"-0\n", b"1.5\n", b"<script>alert(1)</script>\n"]
READS_PER_HOST = 12


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    dest = tmp_path_factory.mktemp("nodes")
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(dest))
    return dest


def regular_files(root):
    return sorted(os.path.join(folder, name) for folder, _dirs, names in os.walk(root) for name in names
                  if os.path.isfile(os.path.join(folder, name)) and not os.path.islink(os.path.join(folder, name)))


@pytest.mark.parametrize("host", ["v100-node-01", "v100-node-02", "v100-node-03", "v100-node-04",
                                  "a100-node-01", "a100-node-02", "a100-node-03", "a100-node-04"])
def test_broken_files_never_crash_a_reader(trees, host):
    root = trees / host / "sys"
    files = regular_files(root)
    assert len(files) > 100
    rng = random.Random(host)  # the same files and contents on every run
    for _read in range(READS_PER_HOST):
        chosen = rng.sample(files, rng.randrange(1, 8))
        saved = {path: open(path, "rb").read() for path in chosen}
        try:
            for path in chosen:
                with open(path, "wb") as handle:
                    handle.write(rng.choice(REPLACEMENTS) if rng.random() < 0.8 else saved[path][:rng.randrange(len(saved[path]) + 1)])
            try:
                facts, warnings = read_ib_facts({"sysfs_root": str(root), "proc_root": str(trees / host / "proc"), "gather_subset": ["all"]})
            except FactReadError as exc:
                assert str(exc) and "\n" not in str(exc)
                continue
            json.dumps(facts, allow_nan=False)
            assert all(isinstance(warning, str) for warning in warnings)
        finally:
            for path, data in saved.items():
                with open(path, "wb") as handle:
                    handle.write(data)
