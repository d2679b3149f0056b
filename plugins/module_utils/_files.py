# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and replacing the files the modules read or manage, failing in one sentence.

Every file a module reads goes through :func:`read_bytes`: it opens only regular files (a FIFO
would block the task forever, a device can be endless or have side effects) and never reads more
than a bound, so a bad path gives an error or a warning instead of a hung or exhausted node.

Writers hold :func:`locked` (an advisory ``flock`` on the target's directory) across
read-modify-write, so parallel runs against one file queue up instead of losing updates, and
write through :func:`write_atomically` (a nameless temp file in the target's directory, linked
and renamed into place only once complete), so a failed or killed run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile

from ansible.module_utils.common.text.converters import to_bytes, to_native

# Bounds for reads. Specs, drop-ins and saved tool outputs are kilobytes; a containerd config with
# a large comment header is megabytes. Anything past the bound is not what the option expects.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
SMALL_FILE_MAX_BYTES = 1024 * 1024
TEMP_SUFFIX = ".rdma-node.tmp"
# How many warnings of one kind a module reports before it only counts the rest.
MAX_WARNINGS = 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)

# Problems met by the lenient readers (facts: a bad file becomes null), for the module to warn about.
_read_warnings = []


class FileReadError(Exception):
    """A file that cannot be read as expected; the message is one sentence naming it."""


class FileShapeError(FileReadError):
    """The path exists but is not what a reader takes: not a regular file, or larger than the bound."""


def _reason(exc):
    return to_native(exc.strerror or exc)


def file_kind(mode):
    """``a FIFO (named pipe)`` for a stat mode that is not a regular file; ``None`` for a regular one."""
    if stat.S_ISREG(mode):  # the common case first: a gather checks every file it reads twice
        return None
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_path(path, what="a file"):
    """Raise :class:`FileReadError` for a path the OS cannot even take (NUL byte, not text)."""
    if not isinstance(path, str) or not path:
        raise FileReadError("Expected the path of %s, got %r." % (what, path))
    if "\x00" in path:
        raise FileReadError("%r contains a NUL byte; expected the path of %s." % (path, what))


def read_bytes(path, what, max_bytes=DEFAULT_MAX_BYTES, follow=True):
    """The content of the regular file ``path``, or None when it does not exist.

    ``what`` says what the file should hold, for the message. Raises :class:`FileReadError` when
    the path is not a regular file (directory, FIFO, socket, device), is larger than ``max_bytes``
    or cannot be read; with ``follow=False`` a symbolic link is refused too. A FIFO is never
    opened for a blocking read: the type is checked before and (against a swap) after ``open``,
    which itself does not wait thanks to ``O_NONBLOCK``.
    """
    check_path(path, what)
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise FileReadError("Cannot read %s: %s." % (path, _reason(exc))) from None
    if not follow and stat.S_ISLNK(info.st_mode):
        raise FileShapeError("%s is a symbolic link, which is not followed here; expected %s." % (path, what))
    _check_kind(path, info, what, max_bytes)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise FileReadError("Cannot read %s: %s." % (path, _reason(exc))) from None
    try:
        _check_kind(path, os.fstat(fd), what, max_bytes)
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1024 * 1024, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise FileReadError("Cannot read %s: %s." % (path, _reason(exc))) from None
    finally:
        os.close(fd)
    if size > max_bytes:  # procfs and sysfs files report size 0 or 4096: count what was read
        raise FileShapeError("%s holds more than %d bytes; expected %s." % (path, max_bytes, what))
    return b"".join(chunks)


def _check_kind(path, info, what, max_bytes):
    kind = file_kind(info.st_mode)
    if kind:
        raise FileShapeError("%s is %s, not a regular file; expected %s." % (path, kind, what))
    if info.st_size > max_bytes:
        raise FileShapeError("%s is %d bytes, more than the %d expected of %s." % (path, info.st_size, max_bytes, what))


def decode_text(data, path, what):
    """UTF-8 text of ``data`` read from ``path``; :class:`FileReadError` naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileReadError("%s is not UTF-8 text (byte %d); expected %s." % (path, exc.start, what)) from None


def read_text_or_none(path, what, max_bytes=DEFAULT_MAX_BYTES, follow=True):
    """Strict UTF-8 text of a regular file, None when it does not exist; :class:`FileReadError` otherwise."""
    data = read_bytes(path, what, max_bytes, follow)
    return None if data is None else decode_text(data, path, what)


def read_text_and_reason(path, what, max_bytes=SMALL_FILE_MAX_BYTES):
    """``(text, None)`` of a small UTF-8 file, ``(None, None)`` when it does not exist, ``(None, sentence)``
    when it exists but cannot be read as ``what`` (a FIFO, too large, not UTF-8, permission denied).

    For the facts that must say *why* a value is missing rather than only that it is.
    """
    try:
        return read_text_or_none(path, what, max_bytes), None
    except FileReadError as exc:
        return None, str(exc)


def read_lenient(path, what, max_bytes=SMALL_FILE_MAX_BYTES):
    """Bytes of a file for facts: None when missing or unreadable, with a warning when it is not a file.

    Used where one odd file must not fail the whole module (sysfs attributes, /proc files, other
    drop-ins). A read error is common and quiet (sysfs answers EINVAL for the carrier of a link that
    is down); a FIFO, device or oversized file is a planted surprise and is collected as a warning
    for the module to report (:func:`take_read_warnings`).
    """
    try:
        return read_bytes(path, what, max_bytes)
    except FileShapeError as exc:
        _read_warnings.append("%s; read as null." % str(exc).rstrip("."))
    except FileReadError:
        pass
    return None


def text_names(directory, names):
    """The entries of ``directory`` whose names are UTF-8; the others are skipped with a warning.

    ``os.listdir`` hands such names back with lone surrogates, which JSON cannot carry to the
    controller; a node's real device and module names are ASCII, so a name that is not text is
    reported, not passed on.
    """
    kept = []
    for name in names:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            _read_warnings.append("%s holds an entry whose name is not UTF-8 (%r); skipped."
                                  % (directory, os.fsencode(name)))
            continue
        kept.append(name)
    return kept


def add_read_warning(message):
    """Keep a warning of a lenient reader (a value read as null) for :func:`take_read_warnings`."""
    _read_warnings.append(message)


def take_read_warnings():
    """The warnings the lenient readers collected since the last call (and forget them), capped."""
    warnings = cap_warnings(_read_warnings)
    del _read_warnings[:]
    return warnings


def cap_warnings(warnings, limit=MAX_WARNINGS):
    """The first ``limit`` warnings and a count of the others: a garbled tree or output of thousands of
    lines must not become thousands of warnings on the terminal."""
    if len(warnings) <= limit:
        return list(warnings)
    return list(warnings[:limit]) + ["%d more warnings like these were left out." % (len(warnings) - limit)]


def read_text(module, path, what, max_bytes=DEFAULT_MAX_BYTES, follow=True):
    """The file's text, or None when it does not exist; ``what`` says what the file should hold."""
    try:
        return read_text_or_none(path, what, max_bytes, follow)
    except FileReadError as exc:
        module.fail_json(msg=str(exc))


@contextlib.contextmanager
def locked(module, path):
    """Hold an exclusive ``flock`` on the directory of ``path`` (or its nearest existing parent).

    The lock is on the directory, not on a lock file beside the target, so it leaves nothing
    behind; the modules of this collection take it around their read-modify-write of a file in that
    directory, so parallel runs queue up instead of one overwriting another's change.
    """
    directory = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(directory) and os.path.dirname(directory) != directory:
        directory = os.path.dirname(directory)
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        module.fail_json(msg="Cannot lock %s to change %s: %s." % (directory, path, _reason(exc)))
    try:
        yield directory
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def resolve_target(module, path, follow_links, what):
    """The path to write for ``path``: the link's target when following links, else ``path`` itself.

    With ``follow_links=False`` a symbolic link is refused rather than silently replaced by a
    regular file (which ``rename`` over the link would do).
    """
    if not os.path.islink(path):
        return path
    if not follow_links:
        module.fail_json(msg="%s is a symbolic link (-> %s); expected %s as a regular file, so nothing was changed."
                         % (path, os.readlink(path), what))
    return os.path.realpath(path)


def _temp_file(directory, path):
    """``(fd, name)``: a nameless file in ``directory`` (O_TMPFILE) when the OS has it, else a named one.

    A nameless file disappears with the process, so even a killed run leaves no residue; it only
    gets a name (``name`` is None until then) right before the rename.
    """
    if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(directory, os.O_TMPFILE | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600), None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    return tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path), suffix=TEMP_SUFFIX)


def _link_temp(fd, directory, path):
    """Give a nameless temp file a name in ``directory`` through /proc/self/fd (no capability needed).

    That needs ``linkat`` with AT_SYMLINK_FOLLOW; Python only calls ``linkat`` (rather than ``link``,
    which would try to link the /proc entry itself) when a directory descriptor is given, so one is.
    """
    root_fd = os.open("/", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for attempt in range(100):
            name = os.path.join(directory, ".%s.%d.%d%s" % (os.path.basename(path), os.getpid(), attempt, TEMP_SUFFIX))
            try:
                os.link("/proc/self/fd/%d" % fd, name, src_dir_fd=root_fd, follow_symlinks=True)
                return name
            except FileExistsError:
                continue
    finally:
        os.close(root_fd)
    raise OSError(errno.EEXIST, "no free temporary name")


def _new_directories(directory):
    """The directories ``os.makedirs(directory)`` would create, deepest last."""
    missing = []
    while directory and not os.path.isdir(directory):
        missing.insert(0, directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return missing


def _remove_new_directories(created):
    for directory in reversed(created):
        try:
            os.rmdir(directory)
        except OSError:
            break


def write_atomically(module, path, text, backup=False, mode=None, make_parent=False):
    """Replace ``path`` with ``text`` through a temp file in its own directory; returns the backup's path.

    The old file stays whole until the rename: a failure at any step leaves it as it was, removes
    the temp file and any directory created for it (``make_parent``), and fails the module.
    """
    directory = os.path.dirname(os.path.abspath(path))
    created = _new_directories(directory) if make_parent else []
    fd, tmp = None, None
    try:
        if created:
            os.makedirs(directory, 0o755)
        fd, tmp = _temp_file(directory, path)
        data = to_bytes(text)
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
        if tmp is None:
            tmp = _link_temp(fd, directory, path)
        if mode is not None:
            os.chmod(tmp, mode)
    except OSError as exc:
        _cleanup(fd, tmp, created)
        module.fail_json(msg="Cannot write %s: %s in %s; nothing was changed." % (path, _reason(exc), directory))
    os.close(fd)
    try:
        backup_file = module.backup_local(path) if backup and os.path.exists(path) else None
    except BaseException:  # backup_local fails the module itself (SystemExit); the temp file goes first
        _cleanup(None, tmp, created)
        raise
    _atomic_move(module, tmp, path, created)
    return backup_file


def _cleanup(fd, tmp, created):
    if fd is not None:
        os.close(fd)
    if tmp is not None and os.path.lexists(tmp):
        os.unlink(tmp)
    _remove_new_directories(created)


def _atomic_move(module, tmp, path, created):
    """``module.atomic_move``, removing the temp file and new directories should it fail the module."""
    try:
        module.atomic_move(tmp, path, unsafe_writes=module.params.get("unsafe_writes", False))
    except BaseException:  # fail_json raises SystemExit: clean up on the way out
        _cleanup(None, tmp, created)
        raise


def remove_file(module, path, remove_empty_parent=False):
    """Remove ``path``, and its directory when asked and nothing else is left in it."""
    try:
        os.unlink(path)
    except OSError as exc:
        module.fail_json(msg="Cannot remove %s: %s." % (path, _reason(exc)))
    if remove_empty_parent:
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
