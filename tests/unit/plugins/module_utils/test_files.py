# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_files: the one bounded reader (regular files only) and the writer that leaves no residue.

Real special files are made with mkfifo, a bound Unix socket and /dev/null; a guard turns a
blocking read into a failure instead of a hung test run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _files
from testpaths import COLLECTIONS_ROOT


class FakeModule:
    """What write_atomically needs of AnsibleModule: fail_json raising, atomic_move, backup_local."""

    def __init__(self):
        self.params = {}
        self.check_mode = False

    def fail_json(self, msg, **kwargs):
        raise SystemExit(msg)

    def atomic_move(self, src, dest, unsafe_writes=False):
        os.rename(src, dest)

    def backup_local(self, path):
        backup = path + ".bak"
        with open(path, "rb") as source, open(backup, "wb") as target:
            target.write(source.read())
        return backup


def special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    return sock, {
        "a FIFO (named pipe)": str(fifo),
        "a socket": str(sock_path),
        "a character device": "/dev/null",
        "a directory": str(tmp_path),
    }


def test_special_files_are_refused_without_blocking(tmp_path, no_hang):
    sock, paths = special_files(tmp_path)
    try:
        for kind, path in paths.items():
            with pytest.raises(_files.FileShapeError) as caught:
                _files.read_bytes(path, "an OCI runtime spec")
            assert str(caught.value) == "%s is %s, not a regular file; expected an OCI runtime spec." % (path, kind)
    finally:
        sock.close()


def test_a_link_to_a_fifo_is_refused_too(tmp_path, no_hang):
    os.mkfifo(tmp_path / "fifo")
    os.symlink("fifo", tmp_path / "link")
    with pytest.raises(_files.FileShapeError, match="is a FIFO"):
        _files.read_bytes(str(tmp_path / "link"), "a drop-in")


def test_lenient_reads_give_none_and_one_warning_per_odd_file(tmp_path, no_hang):
    sock, paths = special_files(tmp_path)
    try:
        _files.take_read_warnings()
        assert [_files.read_lenient(path, "a sysfs attribute") for path in paths.values()] == [None] * 4
        warnings = _files.take_read_warnings()
        assert len(warnings) == 4 and all(w.endswith("; read as null.") for w in warnings)
        assert warnings[0] == "%s is a FIFO (named pipe), not a regular file; expected a sysfs attribute; read as null." % paths[
            "a FIFO (named pipe)"]
        # A file that is simply missing or unreadable is quiet: sysfs answers EINVAL for some attributes.
        assert _files.read_lenient(str(tmp_path / "missing"), "a sysfs attribute") is None
        assert _files.take_read_warnings() == []
    finally:
        sock.close()


def test_size_bound(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 2049)
    with pytest.raises(_files.FileShapeError) as caught:
        _files.read_bytes(str(big), "an OCI runtime spec", max_bytes=2048)
    assert str(caught.value) == "%s is 2049 bytes, more than the 2048 expected of an OCI runtime spec." % big
    assert _files.read_bytes(str(big), "x", max_bytes=2049) == b"x" * 2049


def test_paths_the_os_cannot_take_and_non_utf8_text(tmp_path):
    with pytest.raises(_files.FileReadError) as caught:
        _files.read_bytes(str(tmp_path / "a\x00b"), "a drop-in")
    assert str(caught.value) == "%r contains a NUL byte; expected the path of a drop-in." % str(tmp_path / "a\x00b")
    latin = tmp_path / "latin1.conf"
    latin.write_bytes(b"[Service]\nDescription=caf\xe9\n")
    with pytest.raises(_files.FileReadError) as caught:
        _files.read_text_or_none(str(latin), "a drop-in")
    assert str(caught.value) == "%s is not UTF-8 text (byte 25); expected a drop-in." % latin
    assert _files.read_text_or_none(str(tmp_path / "missing"), "a drop-in") is None


def test_symlinks_followed_or_refused(tmp_path):
    (tmp_path / "target").write_text("x")
    os.symlink("target", tmp_path / "link")
    assert _files.read_bytes(str(tmp_path / "link"), "a file") == b"x"
    with pytest.raises(_files.FileShapeError) as caught:
        _files.read_bytes(str(tmp_path / "link"), "a drop-in", follow=False)
    assert str(caught.value) == "%s is a symbolic link, which is not followed here; expected a drop-in." % (tmp_path / "link")


def test_failed_rename_removes_the_temp_file_and_the_new_directories(tmp_path):
    # The tests run as root, whom a read-only directory does not stop; a rename that fails (as on a
    # read-only bind mount or a busy target) is the same failure seen from this code.
    module = FakeModule()

    def refuse(src, dest, unsafe_writes=False):
        module.fail_json(msg="Cannot rename")

    module.atomic_move = refuse
    target = tmp_path / "new" / "deeper" / "drop-in.conf"
    with pytest.raises(SystemExit):
        _files.write_atomically(module, str(target), "[Service]\n", make_parent=True)
    assert os.listdir(tmp_path) == []


def test_a_write_into_a_full_or_forbidden_place_fails_in_one_sentence(tmp_path):
    target = tmp_path / "file-not-dir" / "x.conf"
    (tmp_path / "file-not-dir").write_text("")
    with pytest.raises(SystemExit) as caught:
        _files.write_atomically(FakeModule(), str(target), "x")
    assert str(caught.value) == "Cannot write %s: Not a directory in %s; nothing was changed." % (target, target.parent)
    assert sorted(os.listdir(tmp_path)) == ["file-not-dir"]


def test_write_keeps_the_old_file_whole_and_makes_a_backup(tmp_path):
    target = tmp_path / "spec.json"
    target.write_text("old")
    backup = _files.write_atomically(FakeModule(), str(target), "new", backup=True)
    assert target.read_text() == "new" and open(backup).read() == "old"
    assert sorted(os.listdir(tmp_path)) == ["spec.json", "spec.json.bak"]


def test_a_killed_writer_leaves_no_temporary_file(tmp_path):
    # The writer is killed (SIGKILL, nothing can clean up) while its content is written and before
    # the rename: the temp file has no name yet (O_TMPFILE), so the directory holds only the target.
    target = tmp_path / "config.toml"
    target.write_text("old\n")
    script = textwrap.dedent("""
        import os, sys, time
        sys.path.insert(0, %r)
        from ansible_collections.rdma.node.plugins.module_utils import _files

        class Module:
            params = {}
            def fail_json(self, msg, **kw):
                raise SystemExit(msg)
            def atomic_move(self, src, dest, unsafe_writes=False):
                os.rename(src, dest)

        real_write = os.write
        def slow_write(fd, data):
            print("writing", flush=True)
            time.sleep(60)
            return real_write(fd, data)
        os.write = slow_write
        _files.write_atomically(Module(), %r, "new\\n")
    """) % (str(COLLECTIONS_ROOT), str(target))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "writing\n"
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert os.listdir(tmp_path) == ["config.toml"] and target.read_text() == "old\n"


def test_the_lock_serialises_read_modify_write_across_processes(tmp_path):
    # Eight processes each append their own line under the lock, with a pause between read and
    # write that would lose updates without it.
    target = tmp_path / "counter.txt"
    target.write_text("")
    script = textwrap.dedent("""
        import os, sys, time
        sys.path.insert(0, %r)
        from ansible_collections.rdma.node.plugins.module_utils import _files

        class Module:
            params = {}
            def fail_json(self, msg, **kw):
                raise SystemExit(msg)
            def atomic_move(self, src, dest, unsafe_writes=False):
                os.rename(src, dest)

        with _files.locked(Module(), %r):
            text = open(%r).read()
            time.sleep(0.2)
            _files.write_atomically(Module(), %r, text + sys.argv[1] + "\\n")
    """) % (str(COLLECTIONS_ROOT), str(target), str(target), str(target))
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", script, "w%d" % n]) for n in range(8)]
    assert [proc.wait(timeout=60) for proc in procs] == [0] * 8
    assert sorted(target.read_text().split()) == ["w%d" % n for n in range(8)]
    assert time.monotonic() - started >= 8 * 0.2
    assert os.listdir(tmp_path) == ["counter.txt"]
