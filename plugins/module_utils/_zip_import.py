# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import the collection's module_utils from a module's zip with one compilation each, not two.

Ansible runs a module from a zip file of the module and its module_utils, which Python's zipimport
imports. zipimport compiles a source file twice: ``find_spec`` asks ``get_filename``, which compiles
the file to decide where its code comes from, then ``exec_module`` compiles it again to run it.
For the fact modules that is about 20 ms of a node's CPU at every call (their module_utils are
about 250 KB of source), a seventh of a whole ``node_facts`` run; at a thousand hosts, twenty
seconds of CPU spent on nothing.

A module imports this first. It puts a finder before Python's path finder that serves only this
collection's module_utils, and only from a zip: the source is read with the zipimporter's own
``get_source`` and compiled once. Anywhere else (a directory on disk, as in the unit tests or an
exploded module) it finds nothing and the usual finders import as always.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os.path
import sys
import zipimport

# ansible_collections.rdma.node.plugins.module_utils.
PACKAGE_PREFIX = __name__.rpartition(".")[0] + "."


class _SourceLoader(importlib.abc.Loader):
    """Runs one module from its source, compiled once; gives the source back for tracebacks."""

    def __init__(self, fullname, source, filename):
        self._fullname = fullname
        self._source = source
        self._filename = filename

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        code = compile(self._source, self._filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102  (the module's own code, read from its zip)

    def get_source(self, fullname):
        # linecache asks the module's loader for its lines: a traceback shows the code.
        return self._source if fullname == self._fullname else None


class ZipSourceFinder(importlib.abc.MetaPathFinder):
    """Finds the collection's module_utils in a zip on the parent package's path."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(PACKAGE_PREFIX) or not path:
            return None
        name = fullname.rpartition(".")[2]
        for entry in path:
            try:
                importer = zipimport.zipimporter(entry)
                source = importer.get_source(fullname)
                package = importer.is_package(fullname)
            except (zipimport.ZipImportError, OSError):
                continue  # not a zip, or not in this one
            if source is None:
                continue  # only compiled code: zipimport's business
            filename = os.path.join(entry, name, "__init__.py") if package else os.path.join(entry, name + ".py")
            return importlib.util.spec_from_file_location(
                fullname, filename, loader=_SourceLoader(fullname, source, filename),
                submodule_search_locations=[os.path.join(entry, name)] if package else None)
        return None


def install():
    """Put the finder just before the path finder (after the built-in and frozen importers), once per
    process."""
    if any(isinstance(finder, ZipSourceFinder) for finder in sys.meta_path):
        return
    position = next((index for index, finder in enumerate(sys.meta_path) if finder is importlib.machinery.PathFinder),
                    len(sys.meta_path))
    sys.meta_path.insert(position, ZipSourceFinder())


install()
