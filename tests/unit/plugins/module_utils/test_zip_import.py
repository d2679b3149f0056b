# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_zip_import: the collection's module_utils imported from a module's zip, compiled once each.

The zip holds the collection's real package files, as Ansible's module zip does; a fresh Python
imports from it with every call of ``compile`` counted, with and without the finder.
"""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
import textwrap
import zipfile

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


def module_zip(tmp_path):
    """A zip of the collection's package files, laid out as in a module's AnsiballZ payload."""
    path = tmp_path / "payload.zip"
    with zipfile.ZipFile(path, "w") as payload:
        for part in ("ansible_collections", "ansible_collections/rdma", "ansible_collections/rdma/node",
                     "ansible_collections/rdma/node/plugins", PACKAGE):
            payload.writestr(part + "/__init__.py", "")
        for source in (COLLECTIONS_ROOT / PACKAGE).glob("*.py"):
            if source.name != "__init__.py":
                payload.write(source, PACKAGE + "/" + source.name)
    return path


def run(payload, mode):
    done = subprocess.run([sys.executable, "-c", IMPORT_AND_COUNT, str(payload), mode],
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def collection_sources(counts):
    return {name.rpartition("/")[2]: count for name, count in counts.items() if PACKAGE in name}


def test_zipimport_alone_compiles_each_module_twice(tmp_path):
    # The cost the finder removes, shown on the same zip: without it, every module is compiled twice.
    seen = run(module_zip(tmp_path), "plain")
    assert collection_sources(seen["counts"]) == {"__init__.py": 2, "_numbers.py": 2, "_files.py": 2}
    assert seen["loader"] == "zipimporter"


def test_with_the_finder_each_module_after_it_is_compiled_once(tmp_path):
    payload = module_zip(tmp_path)
    seen = run(payload, "finder")
    # The package and _zip_import itself come through zipimport (twice); everything imported after it, once.
    assert collection_sources(seen["counts"]) == {"__init__.py": 2, "_zip_import.py": 2, "_numbers.py": 1, "_files.py": 1}
    assert seen["loader"] == "_SourceLoader"
    assert seen["file"] == "%s/%s/_numbers.py" % (payload, PACKAGE)
    # The module works as imported by zipimport, and a traceback still shows the zipped code's lines.
    assert seen["value"] == 16
    assert "%s/_numbers.py" % PACKAGE in seen["traceback"]
    assert "text = text.strip()" in seen["traceback"]


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
