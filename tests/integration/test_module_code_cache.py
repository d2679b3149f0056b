"""The node's code cache (module_utils/_zip_import.py) on the path Ansible really takes: rdma.node.ib_facts
run ad hoc through AnsiballZ on a local connection, the cache in a directory of the test
(RDMA_NODE_CODE_CACHE, which the module inherits from ansible's environment). The finder's own cases,
with compile calls counted, are unit tests (tests/unit/plugins/module_utils/test_zip_import.py).
"""

from __future__ import annotations

import stat

import sysfs_tree

from harness import run_module


def without_times(value):
    """The facts without the read's clock (``time``, ``counters_time``), which no two calls share."""
    if isinstance(value, dict):
        return {key: without_times(item) for key, item in value.items() if key not in ("time", "counters_time")}
    if isinstance(value, list):
        return [without_times(item) for item in value]
    return value


def gather(root, cache):
    result = run_module("rdma.node.ib_facts", {"sysfs_root": str(root), "gather_subset": ["all"]},
                        env={"RDMA_NODE_CODE_CACHE": str(cache)})
    assert not result.failed, result
    return without_times(result.result["ansible_facts"]["rdma"])


def entries(cache):
    return {path.name: path.stat() for path in cache.iterdir()}


def test_the_second_call_runs_the_cached_code_and_a_damaged_entry_is_rewritten(tmp_path):
    root = tmp_path / "node"
    tree = sysfs_tree.TreeBuilder(str(root))
    tree.port(tree.hca("mlx5_0", "0000:3b:00.0"), 1, ndevs=["ib0"])
    tree.netdev("ib0")
    cache = tmp_path / "cache"

    first = gather(root, cache)
    written = entries(cache)
    # One entry per module_utils file the module imported after the finder, closed to everyone else.
    assert len(written) >= 5 and all(name.endswith(".code") for name in written)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(status.st_mode) == 0o600 for status in written.values())

    # Read, not rewritten: the same files (a miss replaces its entry with a new file).
    assert gather(root, cache) == first
    again = entries(cache)
    assert {name: status.st_ino for name, status in again.items()} == {name: status.st_ino for name, status in written.items()}

    # A damaged entry is compiled again and replaced; the facts are the same.
    damaged = cache / sorted(written)[0]
    content = damaged.read_bytes()
    damaged.write_bytes(content[:-1] + bytes([content[-1] ^ 1]))
    assert gather(root, cache) == first
    replaced = damaged.stat().st_ino
    assert replaced != written[damaged.name].st_ino
    # The new entry is whole: the next call reads it.
    assert gather(root, cache) == first
    assert damaged.stat().st_ino == replaced
