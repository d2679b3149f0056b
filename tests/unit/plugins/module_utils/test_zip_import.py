# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_zip_import: the collection's module_utils imported from a module's zip, compiled once each, then
taken from the node's code cache.

The zip holds the collection's real package files, as Ansible's module zip does; a fresh Python
imports from it with every call of ``compile`` counted, with and without the finder, with the code
cache off or in a directory of the test.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
import zipfile

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _zip_import
from testpaths import COLLECTIONS_ROOT

PACKAGE = "ansible_collections/rdma/node/plugins/module_utils"

IMPORT_AND_COUNT = textwrap.dedent("""
    import builtins, collections, json, sys
    counts = collections.Counter()
    real_compile = builtins.compile
    def counting_compile(source, filename, *args, **kwargs):
        counts[str(filename)] += 1
        return real_compile(source, filename, *args, **kwargs)
    builtins.compile = counting_compile
    sys.path.insert(0, sys.argv[1])
    if sys.argv[2] == "finder":
        from ansible_collections.rdma.node.plugins.module_utils import _zip_import
    from ansible_collections.rdma.node.plugins.module_utils import _numbers
    try:
        _numbers.parse_int(object(), "a probe")
        line = None
    except Exception:
        import traceback
        line = traceback.format_exc()
    print(json.dumps({"counts": counts, "file": _numbers.__file__, "loader": type(_numbers.__loader__).__name__,
                      "value": _numbers.parse_int("16", "a probe"), "traceback": line}))
""")


def module_zip(tmp_path, name="payload.zip", numbers_source=None):
    """A zip of the collection's package files, laid out as in a module's AnsiballZ payload
    (``numbers_source``: another text for _numbers.py)."""
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as payload:
        for part in ("ansible_collections", "ansible_collections/rdma", "ansible_collections/rdma/node",
                     "ansible_collections/rdma/node/plugins", PACKAGE):
            payload.writestr(part + "/__init__.py", "")
        for source in (COLLECTIONS_ROOT / PACKAGE).glob("*.py"):
            if source.name == "_numbers.py" and numbers_source is not None:
                payload.writestr(PACKAGE + "/_numbers.py", numbers_source)
            elif source.name != "__init__.py":
                payload.write(source, PACKAGE + "/" + source.name)
    return path


def run(payload, mode, cache="off"):
    """Import from ``payload`` in a fresh Python, the code cache off or in the directory ``cache``."""
    environment = dict(os.environ, RDMA_NODE_CODE_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-c", IMPORT_AND_COUNT, str(payload), mode],
                          capture_output=True, text=True, timeout=60, check=True, env=environment)
    return json.loads(done.stdout)


def collection_sources(counts):
    return {name.rpartition("/")[2]: count for name, count in counts.items() if PACKAGE in name}


def test_zipimport_alone_compiles_each_module_twice(tmp_path):
    # The cost the finder removes, shown on the same zip: without it, every module is compiled twice.
    seen = run(module_zip(tmp_path), "plain")
    assert collection_sources(seen["counts"]) == {"__init__.py": 2, "_numbers.py": 2, "_files.py": 2, "_lazy_re.py": 2}
    assert seen["loader"] == "zipimporter"


def test_with_the_finder_each_module_after_it_is_compiled_once(tmp_path):
    payload = module_zip(tmp_path)
    seen = run(payload, "finder")
    # The package and _zip_import itself come through zipimport (twice); everything imported after it, once.
    assert collection_sources(seen["counts"]) == {"__init__.py": 2, "_zip_import.py": 2, "_numbers.py": 1, "_files.py": 1, "_lazy_re.py": 1}
    assert seen["loader"] == "_SourceLoader"
    assert seen["file"] == "%s/%s/_numbers.py" % (payload, PACKAGE)
    # The module works as imported by zipimport, and a traceback shows the zipped code's lines, named by
    # the module's path in the collection (the same at every call, whatever temporary zip it came from).
    assert seen["value"] == 16
    assert 'File "%s/_numbers.py", line' % PACKAGE in seen["traceback"]
    assert "text = text.strip()" in seen["traceback"]


def test_the_code_cache_serves_the_next_call_without_a_compile(tmp_path):
    payload = module_zip(tmp_path)
    cache = tmp_path / "cache" / "bytecode"
    first = run(payload, "finder", cache)
    assert collection_sources(first["counts"]) == {"__init__.py": 2, "_zip_import.py": 2, "_numbers.py": 1, "_files.py": 1, "_lazy_re.py": 1}
    # Created closed to everyone else; one entry per module compiled, only its owner may write it.
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    entries = sorted(cache.iterdir())
    assert len(entries) == 3 and all(entry.name.endswith(".code") for entry in entries)
    assert all(stat.S_IMODE(entry.stat().st_mode) & 0o022 == 0 for entry in entries)
    second = run(payload, "finder", cache)
    assert collection_sources(second["counts"]) == {"__init__.py": 2, "_zip_import.py": 2}
    # The cached code runs as the compiled one did, with the same name and its source lines in a
    # traceback; the module's file is this call's zip.
    assert second["value"] == 16 and second["file"] == first["file"] == "%s/%s/_numbers.py" % (payload, PACKAGE)
    assert second["traceback"] == first["traceback"]
    assert 'File "%s/_numbers.py", line' % PACKAGE in second["traceback"]
    assert "text = text.strip()" in second["traceback"]


def test_a_changed_source_is_compiled_again_and_gets_its_own_entry(tmp_path):
    cache = tmp_path / "cache"
    run(module_zip(tmp_path), "finder", cache)
    source = (COLLECTIONS_ROOT / PACKAGE / "_numbers.py").read_text(encoding="utf-8")
    upgraded = module_zip(tmp_path, "upgraded.zip", source + "\nUPGRADED = True\n")
    seen = run(upgraded, "finder", cache)
    assert collection_sources(seen["counts"]) == {"__init__.py": 2, "_zip_import.py": 2, "_numbers.py": 1}
    assert len(list(cache.iterdir())) == 4


def test_the_cache_off_or_in_a_directory_others_may_write_compiles_as_before(tmp_path):
    payload = module_zip(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o775)
    for cache in ("off", "relative/path", shared):
        seen = run(payload, "finder", cache)
        assert collection_sources(seen["counts"]) == {"__init__.py": 2, "_zip_import.py": 2, "_numbers.py": 1, "_files.py": 1, "_lazy_re.py": 1}
    assert not list(shared.iterdir())


def code_of(text):
    return compile(text, "probe.py", "exec", dont_inherit=True)


def stored(tmp_path, text="VALUE = 7\n"):
    cache = _zip_import.CodeCache(str(tmp_path / "cache"))
    key = cache.key(text)
    cache.store(key, code_of(text))
    return cache, key, tmp_path / "cache" / cache.entry_name(key)


def value_of(code):
    scope = {}
    exec(code, scope)  # noqa: S102  (code compiled by the test)
    return scope["VALUE"]


def test_an_entry_is_read_back_for_its_source_and_this_python_only(tmp_path):
    cache, key, _entry = stored(tmp_path)
    assert value_of(cache.load(key)) == 7
    assert cache.load(cache.key("VALUE = 8\n")) is None
    # The key is the source's and this Python's: another Python's bytecode has another name.
    assert key == hashlib.sha256(_zip_import.PYTHON_TAG.encode() + b"\0" + b"VALUE = 7\n").digest()


@pytest.mark.parametrize("damage", ["torn", "flipped", "renamed", "group_writable", "symlink", "fifo", "not_code"])
def test_an_entry_that_cannot_be_trusted_is_a_miss(tmp_path, damage):
    cache, key, entry = stored(tmp_path)
    other = cache.key("VALUE = 8\n")
    content = entry.read_bytes()
    if damage == "torn":
        entry.write_bytes(content[:-5])
    elif damage == "flipped":
        entry.write_bytes(content[:-1] + bytes([content[-1] ^ 1]))
    elif damage == "renamed":
        # A valid entry under another source's name: never run for that source.
        entry.rename(entry.with_name(cache.entry_name(other)))
        key = other
    elif damage == "group_writable":
        entry.chmod(0o620)
    elif damage == "symlink":
        target = tmp_path / "elsewhere"
        target.write_bytes(content)
        entry.unlink()
        entry.symlink_to(target)
    elif damage == "fifo":
        entry.unlink()
        os.mkfifo(entry)
    elif damage == "not_code":
        import marshal
        data = marshal.dumps({"not": "code"})
        entry.write_bytes(_zip_import.ENTRY_MAGIC + key + hashlib.sha256(data).digest() + data)
    assert cache.load(key) is None


def test_a_cache_that_cannot_be_made_is_a_miss_and_stores_nothing(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    cache = _zip_import.CodeCache(str(blocker / "cache"))
    key = cache.key("VALUE = 7\n")
    cache.store(key, code_of("VALUE = 7\n"))
    assert cache.load(key) is None
    assert blocker.read_text(encoding="utf-8") == "not a directory"


def test_a_new_entry_removes_the_entries_not_rewritten_for_thirty_days(tmp_path):
    cache, _key, kept = stored(tmp_path)
    directory = kept.parent
    old = directory / ("0" * 64 + ".code")
    old.write_bytes(b"old")
    crashed = directory / ".abc.code.17.partial"
    crashed.write_bytes(b"partial")
    foreign = directory / "README"
    foreign.write_bytes(b"not the cache's")
    month_ago = time.time() - 31 * 86400
    for path in (old, crashed, foreign):
        os.utime(path, (month_ago, month_ago))
    # The next process's first store (one scan a process: its first call may store every module).
    cache = _zip_import.CodeCache(str(directory))
    cache.store(cache.key("VALUE = 9\n"), code_of("VALUE = 9\n"))
    assert sorted(p.name for p in directory.iterdir()) == sorted([kept.name, cache.entry_name(cache.key("VALUE = 9\n")), "README"])


def test_the_cache_directory_is_roots_or_the_users_own_home_or_the_variable(monkeypatch):
    monkeypatch.delenv("RDMA_NODE_CODE_CACHE", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert _zip_import.cache_directory() == "/var/cache/rdma.node/bytecode"
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    monkeypatch.setenv("HOME", "/tmp/not-the-users")
    monkeypatch.setattr(_zip_import.pwd, "getpwuid", lambda uid: type("Entry", (), {"pw_dir": "/home/u%d" % uid})())
    assert _zip_import.cache_directory() == "/home/u4242/.cache/rdma.node/bytecode"
    monkeypatch.setenv("RDMA_NODE_CODE_CACHE", "/srv/cache")
    assert _zip_import.cache_directory() == "/srv/cache"
    for off in ("off", "", "relative"):
        monkeypatch.setenv("RDMA_NODE_CODE_CACHE", off)
        assert _zip_import.cache_directory() is None


def test_outside_a_zip_the_finder_leaves_the_import_to_the_usual_finders(tmp_path):
    finder = _zip_import.ZipSourceFinder()
    on_disk = str(COLLECTIONS_ROOT / PACKAGE)
    assert finder.find_spec("ansible_collections.rdma.node.plugins.module_utils._numbers", [on_disk]) is None
    # Names outside the collection's module_utils are never its business, even in a zip.
    payload = module_zip(tmp_path)
    assert finder.find_spec("ansible.module_utils.basic", [str(payload) + "/ansible/module_utils"]) is None
    assert finder.find_spec("ansible_collections.rdma.node.plugins.module_utils._absent", [str(payload) + "/" + PACKAGE]) is None


def test_the_finder_is_installed_once(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [finder for finder in sys.meta_path if not isinstance(finder, _zip_import.ZipSourceFinder)])
    _zip_import.install()
    _zip_import.install()
    assert sum(isinstance(finder, _zip_import.ZipSourceFinder) for finder in sys.meta_path) == 1
    # Right before the path finder, which would otherwise hand the zip to zipimport.
    position = sys.meta_path.index(importlib.machinery.PathFinder)
    assert isinstance(sys.meta_path[position - 1], _zip_import.ZipSourceFinder)
