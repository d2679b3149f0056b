# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A controller-side cache of file contents, addressed by their SHA-256, and of small records.

Why: an action plugin that plans an edit on the controller needs the file's text, and a node that
can prove (by digest) that its file is one the controller already holds need not send it again.
``containerd_runtime`` uses it so that an idempotent re-run on a 50 MB config.toml ships a digest
instead of the file, and (through a record) skips the TOML parse when it already planned that exact
file with the same options.

Where it lives: ``$RDMA_NODE_CONTENT_CACHE`` when set, else ``$XDG_CACHE_HOME/rdma-node/content``,
else ``~/.cache/rdma-node/content``; one per controller user. Its size is bounded by
``$RDMA_NODE_CONTENT_CACHE_MAX_BYTES`` (default 256 MiB, ``0`` turns the cache off); beyond it the
entries used least recently are removed.

Layout: ``blobs/<sha256>`` holds the bytes whose SHA-256 is the name; ``records/<sha256 of the key>``
holds one JSON record as ``<sha256 of the body>\\n<body>``, the body repeating its key.

What makes it safe to trust:

* Nothing read is trusted unchecked: a blob whose digest is not its name, or a record whose checksum
  or key does not match, is a miss (and is removed), never a result. So a truncated, corrupted or
  half-written entry costs one full read, never a wrong answer.
* Writes go to a private temporary file in the same directory and are renamed into place, so a
  reader sees a complete entry or none. Parallel forks that store the same entry each rename their
  own complete copy; the last rename wins and every copy is identical.
* The directory is private (0700, files 0600): config files can hold registry credentials. A cache
  directory owned by another user or writable by others is not used (its records could claim that
  a file needs no change).
* Every failure (unwritable or full disk, a path under a regular file, a foreign owner) turns the
  cache off for that object and is kept in :attr:`ContentCache.problem` for the caller to warn
  about once; it never raises.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import time
import typing as t

ENV_DIRECTORY = "RDMA_NODE_CONTENT_CACHE"
ENV_MAX_BYTES = "RDMA_NODE_CONTENT_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
BLOBS = "blobs"
RECORDS = "records"
_TEMP_PREFIX = ".tmp-"
# A temporary file this old was left by a writer that died; anything younger may still be written.
_STALE_TEMP_SECONDS = 3600
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_digest(value) -> bool:
    """Whether ``value`` is a lowercase hex SHA-256 (and so safe as a file name)."""
    return isinstance(value, str) and bool(_DIGEST.match(value))


def default_directory(environ: t.Optional[t.Mapping[str, str]] = None) -> str:
    """The cache directory the environment asks for (see the module's docstring)."""
    environ = os.environ if environ is None else environ
    configured = environ.get(ENV_DIRECTORY)
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "rdma-node", "content")


def max_bytes_from(environ: t.Optional[t.Mapping[str, str]] = None) -> t.Tuple[int, t.Optional[str]]:
    """The size bound and, for a value that is not a whole number of bytes, why it was ignored."""
    environ = os.environ if environ is None else environ
    raw = environ.get(ENV_MAX_BYTES)
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_BYTES, None
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        return 0, "%s=%r is not a number of bytes (0 turns the cache off)" % (ENV_MAX_BYTES, raw)
    return value, None


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


class ContentCache:
    """One cache directory; every method returns a miss or ``False`` instead of raising."""

    def __init__(self, directory: str, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = directory
        self.max_bytes = max_bytes
        self.problem: t.Optional[str] = None
        self._ready: t.Optional[bool] = None

    @classmethod
    def from_environment(cls, environ: t.Optional[t.Mapping[str, str]] = None) -> "ContentCache":
        max_bytes, problem = max_bytes_from(environ)
        cache = cls(default_directory(environ), max_bytes)
        cache.problem = problem
        return cache

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0 and self._prepare()

    # -- blobs ------------------------------------------------------------------------------------

    def get(self, digest: str) -> t.Optional[bytes]:
        """The bytes whose SHA-256 is ``digest``, or None (missing, or not what the name promises)."""
        if not is_digest(digest) or not self.enabled:
            return None
        path = os.path.join(self.directory, BLOBS, digest)
        data = self._read(path)
        if data is None:
            return None
        if sha256_hex(data) != digest:
            self._discard(path)
            return None
        self._touch(path)
        return data

    def has(self, digest: str) -> bool:
        """Whether an entry for ``digest`` exists (not verified: :meth:`get` verifies); marks it used.

        A caller that offers the digest relies on the entry without reading it, so it counts as a use.
        """
        if not is_digest(digest) or not self.enabled:
            return False
        path = os.path.join(self.directory, BLOBS, digest)
        if not os.path.isfile(path):
            return False
        self._touch(path)
        return True

    def put(self, data: bytes) -> t.Optional[str]:
        """Store ``data``; its SHA-256, or None when it was not stored."""
        if not isinstance(data, bytes) or not self.enabled or len(data) > self.max_bytes:
            return None
        digest = sha256_hex(data)
        path = os.path.join(self.directory, BLOBS, digest)
        if os.path.isfile(path) and os.path.getsize(path) == len(data):
            self._touch(path)  # get() still verifies it; a corrupt one is removed there and stored again
            return digest
        return digest if self._write(path, data) else None

    # -- records ----------------------------------------------------------------------------------

    def get_record(self, key) -> t.Optional[t.Any]:
        """The value stored for ``key`` (any JSON value), or None when missing or damaged."""
        if not self.enabled:
            return None
        path = self._record_path(key)
        raw = self._read(path)
        if raw is None:
            return None
        checksum, separator, body = raw.partition(b"\n")
        try:
            if not separator or checksum.decode("ascii") != sha256_hex(body):
                raise ValueError("checksum")
            record = json.loads(body)
            if not isinstance(record, dict) or _canonical(record.get("key")) != _canonical(key) or "value" not in record:
                raise ValueError("key")
        except ValueError:  # UnicodeDecodeError and JSONDecodeError included
            self._discard(path)
            return None
        self._touch(path)
        return record["value"]

    def put_record(self, key, value) -> bool:
        """Store ``value`` (JSON) for ``key`` (JSON); whether it was stored."""
        if not self.enabled:
            return False
        body = _canonical({"key": key, "value": value})
        return self._write(self._record_path(key), sha256_hex(body).encode("ascii") + b"\n" + body)

    def _record_path(self, key) -> str:
        return os.path.join(self.directory, RECORDS, sha256_hex(_canonical(key)))

    # -- files ------------------------------------------------------------------------------------

    def _fail(self, what: str, exc: OSError) -> None:
        if self.problem is None:
            self.problem = "cannot %s in %s: %s" % (what, self.directory, exc.strerror or exc)

    def _prepare(self) -> bool:
        """Create the private directory tree once; False (with :attr:`problem`) when it is unusable."""
        if self._ready is None:
            self._ready = False
            try:
                try:
                    os.makedirs(os.path.dirname(self.directory), exist_ok=True)  # ~/.cache: the usual mode
                except FileExistsError:
                    pass  # a file in the way: mkdir below says "Not a directory", the clearer reason
                for folder in (self.directory, os.path.join(self.directory, BLOBS), os.path.join(self.directory, RECORDS)):
                    try:
                        os.mkdir(folder, 0o700)  # makedirs' mode would only apply to the last level
                    except FileExistsError:
                        pass
                info = os.stat(self.directory)
            except OSError as exc:
                self._fail("create the cache directory", exc)
                return False
            if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                if self.problem is None:
                    self.problem = ("%s is not private to this user (owner uid %d, mode %o), so it is not used"
                                    % (self.directory, info.st_uid, stat.S_IMODE(info.st_mode)))
                return False
            self._ready = True
        return self._ready

    def _read(self, path: str) -> t.Optional[bytes]:
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._fail("read an entry", exc)
            return None

    def _write(self, path: str, data: bytes) -> bool:
        """Atomically: a private temporary file beside ``path``, renamed over it once complete."""
        temp = None
        try:
            fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=os.path.dirname(path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, path)
        except OSError as exc:
            self._fail("store an entry", exc)
            if temp is not None:
                self._discard(temp)
            return False
        self._evict(keep=path)
        return True

    @staticmethod
    def _touch(path: str) -> None:
        """Mark an entry as used now, so eviction removes the ones used least recently."""
        try:
            os.utime(path)
        except OSError:
            pass  # removed by a parallel eviction, or read-only: only its place in the order suffers

    @staticmethod
    def _discard(path: str) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass  # already gone (a parallel fork removed it) or not ours to remove: a miss either way

    def _evict(self, keep: str) -> None:
        """Remove the least recently used entries until the cache fits ``max_bytes`` again."""
        entries = []
        now = time.time()
        for sub in (BLOBS, RECORDS):
            folder = os.path.join(self.directory, sub)
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                if name.startswith(_TEMP_PREFIX):
                    if now - info.st_mtime > _STALE_TEMP_SECONDS:
                        self._discard(path)
                    continue
                entries.append((info.st_mtime, info.st_size, path))
        total = sum(size for dummy, size, dummy_path in entries)
        for dummy, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path != keep:
                self._discard(path)
                total -= size
