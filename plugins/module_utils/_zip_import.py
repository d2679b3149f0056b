# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import the collection's module_utils from a module's zip: compiled once, then kept compiled on the node.

Ansible runs a module from a zip file of the module and its module_utils, which Python's zipimport
imports, compiling every file from its source at every call: twice in fact, since ``find_spec`` asks
``get_filename``, which compiles the file to decide where its code comes from, and ``exec_module``
compiles it again to run it. The fact modules' module_utils are about 250 KB of source: compiling
them, even once, is about 20 ms of a node's CPU at every call, a tenth of a ``node_facts`` call.

A module imports this first. It puts a finder before Python's path finder that serves only this
collection's module_utils, and only from a zip: the source is read with the zipimporter's own
``get_source``; its compiled code is taken from the node's code cache when the cache holds it for
exactly this source and this Python, else compiled once and stored there for the next call. Anywhere
else (a directory on disk, as in the unit tests or an exploded module) it finds nothing and the usual
finders import as always.

The code cache is what Python's own ``__pycache__`` would be, if the code were installed on the node:
``/var/cache/rdma.node/bytecode`` for root, ``~/.cache/rdma.node/bytecode`` (the home of the
effective user in the password database, never ``$HOME``) for any other user, or the absolute path in
the environment variable ``RDMA_NODE_CODE_CACHE``; ``off`` (or any value that is not an absolute path)
turns it off. An entry is named by the SHA-256 of its source and the Python's bytecode tag, so an
upgraded collection or another Python never meets old code. Nothing in it is trusted that another user
could have written: the directory must belong to the effective user and be closed to everyone else
(it is created so), an entry must be a regular file of that user that nobody else may write, opened
without following a link, and carry the digests of its source and of its code. Anything else, a read-only disk
included, and the module is compiled as without the cache: the cache can make a call faster, never
fail it. Entries not rewritten for 30 days are removed when a new one is written.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
import os.path
import pwd
import stat
import sys
import time
import types
import zipimport

# ansible_collections.rdma.node.plugins.module_utils.
PACKAGE_PREFIX = __name__.rpartition(".")[0] + "."

CACHE_VARIABLE = "RDMA_NODE_CODE_CACHE"
ROOT_CACHE = "/var/cache/rdma.node/bytecode"
USER_CACHE = (".cache", "rdma.node", "bytecode")  # under the effective user's home
# What an entry's file starts with; then the SHA-256 of the source and that of the marshalled code.
ENTRY_MAGIC = b"rdma.node code 2\n"  # 2: code named by code_name()
ENTRY_SUFFIX = ".code"
MAX_AGE = 30 * 86400
# Python's bytecode tag (cpython-311) and its magic number: marshalled code is read only by the Python
# that wrote it.
PYTHON_TAG = "%s-%s" % (sys.implementation.cache_tag, importlib.util.MAGIC_NUMBER.hex())


def cache_directory():
    """The code cache's path for this process, or None when it is off."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen is not None:
        return chosen if os.path.isabs(chosen) else None
    user = os.geteuid()
    if user == 0:
        return ROOT_CACHE
    try:
        home = pwd.getpwuid(user).pw_dir
    except KeyError:
        return None
    return os.path.join(home, *USER_CACHE) if os.path.isabs(home) else None


class CodeCache:
    """The node's compiled code of this collection's module_utils, in one directory (see the module's
    docstring for what is trusted). Every failure is the same as a miss."""

    def __init__(self, path):
        self.path = path
        self._fd = None
        self._opened = False
        self._pruned = False

    def _directory(self):
        """A descriptor of the cache's directory, created if needed, or None when it cannot be trusted."""
        if not self._opened:
            self._opened = True
            try:
                os.makedirs(self.path, mode=0o700, exist_ok=True)
                fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                return None
            status = os.fstat(fd)
            if status.st_uid != os.geteuid() or stat.S_IMODE(status.st_mode) & 0o077:
                os.close(fd)
                return None
            self._fd = fd
        return self._fd

    @staticmethod
    def key(source):
        """What names an entry and binds it to ``source`` and this Python: their SHA-256."""
        return hashlib.sha256(PYTHON_TAG.encode("ascii") + b"\0" + source.encode("utf-8", "surrogateescape")).digest()

    @staticmethod
    def entry_name(key):
        return key.hex() + ENTRY_SUFFIX

    def load(self, key):
        """The cached code of the source whose key is ``key``, or None."""
        directory = self._directory()
        if directory is None:
            return None
        try:
            fd = os.open(self.entry_name(key), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=directory)
        except OSError:
            return None
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_uid != os.geteuid() or stat.S_IMODE(status.st_mode) & 0o022:
                return None
            with os.fdopen(fd, "rb", closefd=False) as entry:
                content = entry.read()
        except OSError:
            return None
        finally:
            os.close(fd)
        # The format, the key (an entry renamed to another source's or Python's name is refused), the
        # digest of the code (a torn write is refused), the code.
        head = len(ENTRY_MAGIC)
        data = content[head + 64:]
        if content[:head] != ENTRY_MAGIC or content[head:head + 32] != key or content[head + 32:head + 64] != hashlib.sha256(data).digest():
            return None
        try:
            code = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return None
        return code if isinstance(code, types.CodeType) else None

    def store(self, key, code):
        """Keep ``code``, compiled from the source whose key is ``key``; then, at the first store of the
        process, remove the entries not rewritten for MAX_AGE."""
        directory = self._directory()
        if directory is None:
            return
        name = self.entry_name(key)
        data = marshal.dumps(code)
        partial = ".%s.%d.partial" % (name, os.getpid())
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=directory)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as entry:
                entry.write(ENTRY_MAGIC + key + hashlib.sha256(data).digest() + data)
            os.replace(partial, name, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError:
            try:
                os.unlink(partial, dir_fd=directory)
            except OSError:
                pass
            return
        if not self._pruned:  # once a process: a first call after an upgrade stores every module
            self._pruned = True
            self._remove_old(directory, time.time() - MAX_AGE)

    @staticmethod
    def _remove_old(directory, before):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if not entry.name.endswith((ENTRY_SUFFIX, ".partial")):
                continue  # not ours to remove
            try:
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < before:
                    os.unlink(entry.name, dir_fd=directory)
            except OSError:
                pass


def code_name(fullname, package):
    """The file name a module's code carries, which a traceback shows: its path in the collection
    (``ansible_collections/rdma/node/plugins/module_utils/_files.py``), the same at every call. The
    zip's own path is a new temporary directory at each call: code named after it would have to be
    renamed, function by function, whenever it comes from the cache (a fifth of the cache's cost)."""
    return fullname.replace(".", "/") + ("/__init__.py" if package else ".py")


# A finder and a loader need only their methods: importlib.abc's base classes would import
# importlib.resources at every module call, which nothing else of a module needs.
class _SourceLoader:
    """Runs one module from its source, compiled once or taken from the code cache; gives the source
    back for tracebacks."""

    def __init__(self, fullname, source, code_filename, cache):
        self._fullname = fullname
        self._source = source
        self._code_filename = code_filename
        self._cache = cache

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        key = self._cache.key(self._source) if self._cache else None
        code = self._cache.load(key) if key else None
        if code is None:
            code = compile(self._source, self._code_filename, "exec", dont_inherit=True)
            if key:
                self._cache.store(key, code)
        exec(code, module.__dict__)  # noqa: S102  (the module's own code, read from its zip)

    def get_source(self, fullname):
        # linecache asks the module's loader for its lines: a traceback shows the code.
        return self._source if fullname == self._fullname else None


class ZipSourceFinder:
    """Finds the collection's module_utils in a zip on the parent package's path."""

    def __init__(self, cache=None):
        self.cache = cache

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
                fullname, filename, loader=_SourceLoader(fullname, source, code_name(fullname, package), self.cache),
                submodule_search_locations=[os.path.join(entry, name)] if package else None)
        return None


def install():
    """Put the finder just before the path finder (after the built-in and frozen importers), once per
    process."""
    if any(isinstance(finder, ZipSourceFinder) for finder in sys.meta_path):
        return
    position = next((index for index, finder in enumerate(sys.meta_path) if finder is importlib.machinery.PathFinder),
                    len(sys.meta_path))
    directory = cache_directory()
    sys.meta_path.insert(position, ZipSourceFinder(CodeCache(directory) if directory else None))


install()
