# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's content-addressed cache (plugin_utils/_content_cache.py), on real directories."""

from __future__ import annotations

import hashlib
import hmac
import json
import multiprocessing
import os
import shutil
import stat
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils import _content_cache as content_cache
from ansible_collections.rdma.node.plugins.plugin_utils._content_cache import ContentCache

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "config_toml"
CONFIG = (FIXTURES / "kind-fork_v2_runc_base_runtime_spec.toml").read_bytes()
DIGEST = hashlib.sha256(CONFIG).hexdigest()


def new_cache(directory, **options) -> ContentCache:
    """A cache whose key file is beside its directory (tests never touch the user's own key)."""
    return ContentCache(str(directory), key_path=str(directory) + ".key", **options)


def entries(cache: ContentCache, sub: str) -> list:
    return sorted(name for name in os.listdir(os.path.join(cache.directory, sub)))


def test_hit_returns_the_stored_bytes_and_miss_returns_none(tmp_path):
    cache = new_cache(tmp_path / "cache")
    assert cache.get(DIGEST) is None and not cache.has(DIGEST)
    assert cache.put(CONFIG) == DIGEST
    assert cache.has(DIGEST) and cache.get(DIGEST) == CONFIG
    # a second process (a new object on the same directory) sees it too
    assert new_cache(tmp_path / "cache").get(DIGEST) == CONFIG
    assert entries(cache, "blobs") == [DIGEST]
    assert cache.problem is None


def test_the_directory_and_entries_are_private(tmp_path):
    cache = new_cache(tmp_path / "cache")
    cache.put(CONFIG)
    cache.put_record({"k": 1}, "v")
    assert stat.S_IMODE(os.stat(cache.directory).st_mode) == 0o700
    for sub in ("blobs", "records"):
        assert stat.S_IMODE(os.stat(os.path.join(cache.directory, sub)).st_mode) == 0o700
        for name in entries(cache, sub):
            assert stat.S_IMODE(os.stat(os.path.join(cache.directory, sub, name)).st_mode) == 0o600


@pytest.mark.parametrize("damage", ["truncated", "one byte changed", "emptied", "other content"])
def test_a_damaged_blob_is_a_miss_and_is_removed(tmp_path, damage):
    cache = new_cache(tmp_path / "cache")
    cache.put(CONFIG)
    blob = Path(cache.directory, "blobs", DIGEST)
    damaged = {
        "truncated": CONFIG[: len(CONFIG) // 2],
        "one byte changed": CONFIG[:100] + bytes([CONFIG[100] ^ 1]) + CONFIG[101:],
        "emptied": b"",
        "other content": b"version = 2\n",
    }[damage]
    blob.write_bytes(damaged)
    assert cache.get(DIGEST) is None
    assert not blob.exists()
    assert cache.put(CONFIG) == DIGEST and cache.get(DIGEST) == CONFIG  # stored again on the next read


def test_a_same_size_corruption_found_by_put_is_repaired_after_get(tmp_path):
    cache = new_cache(tmp_path / "cache")
    cache.put(CONFIG)
    blob = Path(cache.directory, "blobs", DIGEST)
    blob.write_bytes(CONFIG.replace(b"runc", b"RUNC"))
    assert cache.put(CONFIG) == DIGEST  # same size: put does not read it back ...
    assert cache.get(DIGEST) is None  # ... but get verifies and drops it
    assert cache.put(CONFIG) == DIGEST and cache.get(DIGEST) == CONFIG


def test_digests_that_are_not_sha256_hex_never_become_paths(tmp_path):
    cache = new_cache(tmp_path / "cache")
    (tmp_path / "secret").write_bytes(b"x")
    for bad in ("../../secret", "../secret", DIGEST.upper(), DIGEST[:-1], "", None, 42):
        assert cache.get(bad) is None and cache.has(bad) is False


def test_records_round_trip_and_damage_is_a_miss(tmp_path):
    cache = new_cache(tmp_path / "cache")
    key = {"plan": "x", "sha256": DIGEST, "options": {"runtimes": None, "state": "present"}}
    assert cache.get_record(key) is None
    assert cache.put_record(key, {"config_version": 2, "warnings": ["w"]})
    # the same key with its members in another order is the same record
    assert cache.get_record({"options": {"state": "present", "runtimes": None}, "sha256": DIGEST, "plan": "x"}) == {
        "config_version": 2, "warnings": ["w"]}
    assert cache.get_record(dict(key, sha256="0" * 64)) is None
    (record,) = entries(cache, "records")
    path = Path(cache.directory, "records", record)
    good = path.read_bytes()
    for damaged in (good[:-5], good.replace(b'"config_version":2', b'"config_version":3'), b"not a record",
                    b"\xff\xfe\n{}"):
        path.write_bytes(damaged)
        assert cache.get_record(key) is None
        assert not path.exists()
    # a well-formed record filed under another key's name (planted or a collision) is not taken either
    cache.put_record({"other": 1}, "planted")
    (planted,) = entries(cache, "records")
    os.rename(Path(cache.directory, "records", planted), path)
    assert cache.get_record(key) is None


def test_eviction_removes_the_least_recently_used_beyond_the_bound(tmp_path):
    cache = new_cache(tmp_path / "cache", max_bytes=3 * 1000)
    blobs = [bytes([65 + n]) * 1000 for n in range(4)]
    digests = []
    for age, blob in enumerate(blobs[:3]):
        digests.append(cache.put(blob))
        os.utime(Path(cache.directory, "blobs", digests[-1]), (1000 + age, 1000 + age))  # oldest first
    assert cache.get(digests[0]) == blobs[0]  # a hit makes the oldest the most recently used
    digests.append(cache.put(blobs[3]))  # 4000 bytes > 3000: one entry goes, the least recently used
    assert entries(cache, "blobs") == sorted([digests[0], digests[2], digests[3]])
    assert cache.get(digests[1]) is None
    # offering a digest (has) relies on the entry, so it counts as a use too
    os.utime(Path(cache.directory, "blobs", digests[2]), (500, 500))
    assert cache.has(digests[2])
    cache.put(b"E" * 1000)
    assert digests[2] in entries(cache, "blobs") and digests[0] not in entries(cache, "blobs")


def test_an_entry_larger_than_the_bound_is_not_stored_and_zero_turns_the_cache_off(tmp_path):
    cache = new_cache(tmp_path / "cache", max_bytes=len(CONFIG) - 1)
    assert cache.put(CONFIG) is None and cache.get(DIGEST) is None
    off = ContentCache.from_environment({"RDMA_NODE_CONTENT_CACHE": str(tmp_path / "off"),
                                         "RDMA_NODE_CONTENT_CACHE_MAX_BYTES": "0"})
    assert off.put(CONFIG) is None and not off.put_record({"k": 1}, 1) and off.problem is None
    assert not (tmp_path / "off").exists()  # off means not even a directory


def test_a_bad_size_bound_turns_the_cache_off_and_says_why(tmp_path):
    cache = ContentCache.from_environment({"RDMA_NODE_CONTENT_CACHE": str(tmp_path / "c"),
                                           "RDMA_NODE_CONTENT_CACHE_MAX_BYTES": "lots"})
    assert cache.put(CONFIG) is None
    assert cache.problem == "RDMA_NODE_CONTENT_CACHE_MAX_BYTES='lots' is not a number of bytes (0 turns the cache off)"


def test_where_the_cache_lives():
    assert content_cache.default_directory({"RDMA_NODE_CONTENT_CACHE": "/srv/cc", "XDG_CACHE_HOME": "/x"}) == "/srv/cc"
    assert content_cache.default_directory({"XDG_CACHE_HOME": "/x"}) == "/x/rdma-node/content"
    assert content_cache.default_directory({}) == os.path.join(os.path.expanduser("~"), ".cache", "rdma-node",
                                                               "content")


def test_an_unusable_directory_is_no_cache_and_one_problem(tmp_path):
    # A path below a regular file cannot be created, even by root.
    (tmp_path / "file").write_text("x")
    cache = new_cache(tmp_path / "file" / "cache")
    assert cache.put(CONFIG) is None and cache.get(DIGEST) is None and not cache.has(DIGEST)
    assert cache.put_record({"k": 1}, 1) is False and cache.get_record({"k": 1}) is None
    assert cache.problem == "cannot create the cache directory in %s: Not a directory" % (tmp_path / "file" / "cache")


def test_a_directory_writable_by_others_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cache = new_cache(shared)
    assert cache.put(CONFIG) is None and cache.get_record({"k": 1}) is None
    assert cache.problem == "%s is not private to this user (owner uid %d, mode 777), so it is not used" % (
        shared, os.geteuid())


def test_a_read_only_blob_directory_stores_nothing_and_leaves_no_temp_file(tmp_path):
    cache = new_cache(tmp_path / "cache")
    cache.put(b"first")
    blobs = Path(cache.directory, "blobs")
    # root ignores permission bits, so make the directory unwritable by replacing it with a file
    for name in os.listdir(blobs):
        os.unlink(blobs / name)
    blobs.rmdir()
    blobs.write_text("not a directory")
    assert cache.put(CONFIG) is None
    assert cache.problem.startswith("cannot store an entry in %s: " % cache.directory)
    assert entries(cache, "records") == []


def _write_many(directory, data, rounds, queue):
    cache = new_cache(directory)
    seen = set()
    for dummy in range(rounds):
        seen.add(cache.put(data))
        got = cache.get(hashlib.sha256(data).hexdigest())
        seen.add("hit" if got == data else "miss" if got is None else "WRONG")
    queue.put(sorted(str(item) for item in seen))


def test_parallel_writers_of_the_same_entry_never_expose_a_partial_one(tmp_path):
    data = CONFIG * 200  # about a megabyte: writes take long enough to overlap
    digest = hashlib.sha256(data).hexdigest()
    directory = str(tmp_path / "cache")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_write_many, args=(directory, data, 20, queue)) for dummy in range(6)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=120) for dummy in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    for seen in results:
        assert "WRONG" not in seen and digest in seen
    cache = new_cache(directory)
    assert cache.get(digest) == data
    assert entries(cache, "blobs") == [digest]  # every temporary file was renamed into place or removed


def test_stale_temporary_files_of_dead_writers_are_removed(tmp_path):
    cache = new_cache(tmp_path / "cache")
    cache.put(b"one")
    stale = Path(cache.directory, "blobs", ".tmp-dead")
    fresh = Path(cache.directory, "blobs", ".tmp-writing")
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (1000, 1000))
    cache.put(b"two")
    assert not stale.exists() and fresh.exists()


# -- records are bound to this controller user's key (issue 24, item 3) -----------------------------

PLAN_KEY = {"plan": "containerd_runtime", "sha256": DIGEST, "options": {"state": "present"}}


def forge(cache: ContentCache, key, value, mac: bytes) -> Path:
    """Write the record a writer of the cache directory makes without the key, as the old format did."""
    body = json.dumps({"key": key, "value": value}, sort_keys=True, separators=(",", ":")).encode()
    path = Path(cache.directory, "records", hashlib.sha256(json.dumps(key, sort_keys=True, separators=(",", ":"))
                                                           .encode()).hexdigest())
    path.write_bytes(mac + b"\n" + body)
    return path


@pytest.mark.parametrize("mac", ["sha256 checksum", "hmac with another key", "empty"])
def test_a_forged_record_is_not_trusted_and_is_removed(tmp_path, mac):
    cache = new_cache(tmp_path / "cache")
    assert cache.put_record({"warm": "up"}, 1)  # the directory and the key exist
    body = json.dumps({"key": PLAN_KEY, "value": {"config_version": 2, "warnings": []}}, sort_keys=True,
                      separators=(",", ":")).encode()
    forged_mac = {"sha256 checksum": hashlib.sha256(body).hexdigest().encode(),
                  "hmac with another key": hmac.new(b"k" * 32, body, hashlib.sha256).hexdigest().encode(),
                  "empty": b""}[mac]
    path = forge(cache, PLAN_KEY, {"config_version": 2, "warnings": []}, forged_mac)
    assert cache.get_record(PLAN_KEY) is None
    assert not path.exists()


def test_records_need_the_same_key_a_copied_cache_directory_is_worth_nothing(tmp_path):
    cache = new_cache(tmp_path / "cache")
    assert cache.put_record(PLAN_KEY, "no change")
    assert new_cache(tmp_path / "cache").get_record(PLAN_KEY) == "no change"  # the same key file: trusted
    shutil.copytree(tmp_path / "cache", tmp_path / "copy")  # the directory without its key
    copy = new_cache(tmp_path / "copy")
    assert copy.get_record(PLAN_KEY) is None and copy.problem is None


def test_the_key_is_made_once_private_and_kept(tmp_path):
    cache = new_cache(tmp_path / "cache")
    key_file = tmp_path / "cache.key"
    assert not key_file.exists()
    cache.put_record({"k": 1}, 1)
    info = key_file.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid() and info.st_size == 32
    key = key_file.read_bytes()
    assert new_cache(tmp_path / "cache").get_record({"k": 1}) == 1 and key_file.read_bytes() == key
    assert [name for name in os.listdir(tmp_path) if name.startswith(".tmp-")] == []


def _first_record(directory, queue):
    cache = new_cache(directory)
    cache.put_record({"worker": os.getpid()}, os.getpid())
    queue.put(Path(str(directory) + ".key").read_bytes())


def test_parallel_first_uses_agree_on_one_key(tmp_path):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_first_record, args=(tmp_path / "cache", queue)) for dummy in range(6)]
    for worker in workers:
        worker.start()
    keys = {queue.get(timeout=60) for dummy in workers}
    for worker in workers:
        worker.join(timeout=60)
    assert len(keys) == 1 and len(keys.pop()) == 32


@pytest.mark.parametrize("bad", ["readable by others", "owned by another user", "a symbolic link", "a FIFO",
                                 "too short", "a directory", "below a regular file"])
def test_an_unsafe_key_file_turns_the_cache_off_with_one_reason(tmp_path, bad):
    key_file = tmp_path / "cache.key"
    cache = new_cache(tmp_path / "cache")
    if bad == "readable by others":
        key_file.write_bytes(b"k" * 32)
        key_file.chmod(0o644)
        reason = "is readable or writable by others (mode 644)"
    elif bad == "owned by another user":
        key_file.write_bytes(b"k" * 32)
        key_file.chmod(0o600)
        os.chown(key_file, 65534, 65534)
        reason = "is owned by uid 65534, not by this user (uid %d)" % os.geteuid()
    elif bad == "a symbolic link":
        (tmp_path / "elsewhere").write_bytes(b"k" * 32)
        key_file.symlink_to(tmp_path / "elsewhere")
        reason = "is a symbolic link"
    elif bad == "a FIFO":
        os.mkfifo(key_file, 0o600)
        reason = "is not a regular file"
    elif bad == "too short":
        key_file.write_bytes(b"k" * 31)
        key_file.chmod(0o600)
        reason = "does not hold a key of 32 bytes"
    elif bad == "a directory":
        key_file.mkdir(mode=0o700)
        reason = "is not a regular file"
    else:
        (tmp_path / "file").write_text("x")
        key_file = tmp_path / "file" / "cache.key"
        cache = ContentCache(str(tmp_path / "cache"), key_path=str(key_file))
        reason = "cannot be read (Not a directory)"
    assert cache.put_record(PLAN_KEY, "no change") is False and cache.get_record(PLAN_KEY) is None
    assert cache.put(CONFIG) is None and cache.get(DIGEST) is None
    assert cache.problem == "the cache's key file %s %s, so the cache is not used" % (key_file, reason)


def test_where_the_key_lives():
    assert content_cache.default_key_path({"RDMA_NODE_CONTENT_CACHE_KEY": "/srv/k", "XDG_CONFIG_HOME": "/x"}) == "/srv/k"
    assert content_cache.default_key_path({"XDG_CONFIG_HOME": "/x"}) == "/x/rdma-node/content-cache.key"
    assert content_cache.default_key_path({}) == os.path.join(os.path.expanduser("~"), ".config", "rdma-node",
                                                              "content-cache.key")
