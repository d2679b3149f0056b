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
holds one JSON record as ``<HMAC-SHA256 of the body>\n<body>``, the body repeating its key.

What it trusts, exactly:

* A blob is trusted only for the bytes whose SHA-256 is its name, checked on every read. Anyone who
  can write the directory can make a blob a miss, never a different text.
* A record (the digests a host's file had, a plan that found nothing to change) is trusted only when
  its HMAC-SHA256 under the controller user's key verifies, and its body names the key it is filed
  under. The key is 32 random bytes in a file of its own, outside the cache directory:
  ``$RDMA_NODE_CONTENT_CACHE_KEY`` when set, else ``$XDG_CONFIG_HOME/rdma-node/content-cache.key``,
  else ``~/.config/rdma-node/content-cache.key``; made on first use with mode 0600. So a record is
  as trustworthy as that key file: whoever can read it (this user, root) can write records the cache
  believes; a cache directory that was copied, restored, shared or written by anyone else cannot. A
  key file that is a link, not a regular file, not this user's, readable or writable by others, or
  not 32 bytes long is not used, and then neither is the cache.
* Anything that fails these checks (a truncated, corrupted, half-written or forged entry) is a miss
  and is removed: it costs one full read or one new plan, never a wrong answer.
* Nothing a node says is trusted by the cache itself; the caller decides which digests it offers a
  node and accepts back (``containerd_runtime`` offers a host only its own texts).

How it stays consistent and private:

* Writes go to a private temporary file in the same directory and are renamed into place, so a
  reader sees a complete entry or none. Parallel forks that store the same entry each rename their
  own complete copy; the last rename wins and every copy is identical. The key is made the same
  way but linked into place, so parallel first uses agree on one key.
* The directory is private (0700, files 0600): config files can hold registry credentials. A cache
  directory owned by another user or writable by others is not used.
* Every failure (unwritable or full disk, a path under a regular file, a foreign owner, an unsafe
  key file) turns the cache off for that object and is kept in :attr:`ContentCache.problem` for the
  caller to warn about once; it never raises.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import re
import stat
import tempfile
import time
import typing as t

ENV_DIRECTORY = "RDMA_NODE_CONTENT_CACHE"
ENV_MAX_BYTES = "RDMA_NODE_CONTENT_CACHE_MAX_BYTES"
ENV_KEY = "RDMA_NODE_CONTENT_CACHE_KEY"
KEY_BYTES = 32
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


def _per_user_path(environ, variable, base_variable, base_fallback, *parts) -> str:
    """``$variable`` when set, else ``parts`` below ``$base_variable`` or ``~/base_fallback``."""
    environ = os.environ if environ is None else environ
    configured = environ.get(variable)
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    base = environ.get(base_variable) or os.path.join(os.path.expanduser("~"), base_fallback)
    return os.path.join(os.path.abspath(base), *parts)


def default_directory(environ: t.Optional[t.Mapping[str, str]] = None) -> str:
    """The cache directory the environment asks for (see the module's docstring)."""
    return _per_user_path(environ, ENV_DIRECTORY, "XDG_CACHE_HOME", ".cache", "rdma-node", "content")


def default_key_path(environ: t.Optional[t.Mapping[str, str]] = None) -> str:
    """The key file that authenticates records: per user, and outside any cache directory."""
    return _per_user_path(environ, ENV_KEY, "XDG_CONFIG_HOME", ".config", "rdma-node", "content-cache.key")


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


class _UnsafeKey(Exception):
    """The key file exists but is not safe to use; the message completes "the cache's key file PATH ..."."""


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


class ContentCache:
    """One cache directory; every method returns a miss or ``False`` instead of raising."""

    def __init__(self, directory: str, key_path: str, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = directory
        self.key_path = key_path
        self.max_bytes = max_bytes
        self.problem: t.Optional[str] = None
        self._ready: t.Optional[bool] = None
        self._key: t.Optional[bytes] = None

    @classmethod
    def from_environment(cls, environ: t.Optional[t.Mapping[str, str]] = None) -> "ContentCache":
        max_bytes, problem = max_bytes_from(environ)
        cache = cls(default_directory(environ), default_key_path(environ), max_bytes)
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
        """The value stored for ``key`` (any JSON value), or None when missing, damaged or not authentic."""
        if not self.enabled:
            return None
        path = self._record_path(key)
        raw = self._read(path)
        if raw is None:
            return None
        mac, separator, body = raw.partition(b"\n")
        try:
            if not separator or not hmac.compare_digest(mac, self._mac(body)):
                raise ValueError("not authentic")
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
        return self._write(self._record_path(key), self._mac(body) + b"\n" + body)

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).hexdigest().encode("ascii")

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
            self._key = self._load_key()
            self._ready = self._key is not None
        return self._ready

    def _load_key(self) -> t.Optional[bytes]:
        """This user's record key, made on first use; None (with :attr:`problem`) when it is not safe."""
        for dummy in range(2):
            try:
                return self._read_key()
            except FileNotFoundError:
                pass
            except _UnsafeKey as exc:
                self._key_problem(str(exc))
                return None
            except OSError as exc:
                self._key_problem("cannot be read (%s)" % (exc.strerror or exc))
                return None
            try:
                self._make_key()
            except OSError as exc:
                self._key_problem("cannot be made (%s)" % (exc.strerror or exc))
                return None
        return None  # made, then gone before it could be read: no key this time

    def _key_problem(self, what: str) -> None:
        if self.problem is None:
            self.problem = "the cache's key file %s %s, so the cache is not used" % (self.key_path, what)

    def _read_key(self) -> bytes:
        """The key file's bytes; :class:`_UnsafeKey` when anyone but this user could know or change them."""
        try:
            # O_NONBLOCK: a FIFO planted there must not block the open; fstat below refuses it.
            fd = os.open(self.key_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _UnsafeKey("is a symbolic link") from None
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise _UnsafeKey("is not a regular file")
            if info.st_uid != os.geteuid():
                raise _UnsafeKey("is owned by uid %d, not by this user (uid %d)" % (info.st_uid, os.geteuid()))
            if info.st_mode & 0o077:
                raise _UnsafeKey("is readable or writable by others (mode %o)" % stat.S_IMODE(info.st_mode))
            key = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(key) != KEY_BYTES:
            raise _UnsafeKey("does not hold a key of %d bytes" % KEY_BYTES)
        return key

    def _make_key(self) -> None:
        """A new random key, complete before it is visible: written privately, then linked into place."""
        folder = os.path.dirname(self.key_path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=folder)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(KEY_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temp, self.key_path)
            except FileExistsError:
                pass  # a parallel first use linked its key first: both use that one
        finally:
            self._discard(temp)

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
