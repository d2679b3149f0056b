# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and replacing the small text files the modules manage, failing in one sentence."""

from __future__ import annotations

import os
import tempfile

from ansible.module_utils.common.text.converters import to_bytes, to_native


def _reason(exc):
    return to_native(exc.strerror or exc)


def read_text(module, path, what):
    """The file's text, or None when it does not exist; ``what`` says what the file should hold."""
    if not os.path.lexists(path):
        return None
    if os.path.isdir(path):
        module.fail_json(msg="%s is a directory; expected %s." % (path, what))
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        module.fail_json(msg="Cannot read %s: %s." % (path, _reason(exc)))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        module.fail_json(msg="%s is not UTF-8 text; expected %s." % (path, what))


def write_atomically(module, path, text, backup=False, mode=None, make_parent=False):
    """Replace ``path`` with ``text`` through a temp file in its own directory; returns the backup's path.

    The old file stays whole until the rename: a failure at any step leaves it as it was.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        if make_parent and not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path), suffix=".tmp")
    except OSError as exc:
        module.fail_json(msg="Cannot write %s: %s in %s." % (path, _reason(exc), directory))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(to_bytes(text))
        if mode is not None:
            os.chmod(tmp, mode)
    except OSError as exc:
        os.unlink(tmp)
        module.fail_json(msg="Cannot write %s: %s." % (path, _reason(exc)))
    backup_file = module.backup_local(path) if backup and os.path.exists(path) else None
    module.atomic_move(tmp, path, unsafe_writes=module.params.get("unsafe_writes", False))
    return backup_file


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
