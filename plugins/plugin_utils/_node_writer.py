# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-writing stage of ``rdma.node.evaluate``: the host's metrics file for node_exporter's
textfile collector, written without a module run.

One shell command on the node creates a temporary file beside the target and renames it over the
target (node_exporter reads only names ending in ``.prom``, so the copy is never read half written).
Whoever can write the textfile directory must not be able to turn that into a write as root
elsewhere, so the command

* creates the temporary file under a random name, exclusively (``set -C``: ``O_CREAT|O_EXCL``, which
  also refuses a symbolic link planted under that name), with its mode from ``umask 022``: nothing
  is ever chmod-ed, so nothing is chmod-ed through a link. The name is drawn on the controller
  (``secrets``), not by ``mktemp`` on the node: the same unpredictable name, one process less on every
  node at every run;
* renames it over the target (``rename(2)`` replaces a link, never follows one);
* removes the temporary file when writing or renaming fails (a full disk leaves nothing behind).

The text reaches the command on its standard input where that is sure to work: the connection can
send a command's standard input (``has_pipelining``) and either nothing is run through become, or
pipelining is enabled, which Ansible allows only with a become method that needs no tty (a sudo with
``requiretty`` or ``su`` reads its terminal, not the data). Otherwise the text is transferred to
Ansible's temporary directory on the node first and read from there, which costs four more commands
on the node and a transfer (the home directory, making and removing the temporary directory, the
permissions).
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile

from ansible.errors import AnsibleError

TEMPORARY_PREFIX = ".rdma_node.prom."
FILE_NAME = "rdma_node.prom"
# Exit status of the command when the directory does not exist (not an error of the write itself).
NO_DIRECTORY = 3

_COMMAND = (
    "umask 022; set -C; d={dir}; "
    "if [ ! -d \"$d\" ]; then echo {missing} >&2; exit {no_dir}; fi; "
    "t=\"$d\"/{temporary}; "
    "if {source} > \"$t\" && mv -f -- \"$t\" {dest}; then exit 0; fi; "
    "rm -f -- \"$t\"; exit 1"
)


def metrics_file(role, options):
    """Where the role writes its metrics for node_exporter's textfile collector (``<role>_metrics_dir``),
    or None where it writes none."""
    directory = (options or {}).get(role + "_metrics_dir")
    return directory.rstrip("/") + "/" + FILE_NAME if directory else None


def write_command(path, source="cat", suffix=None):
    """The shell command that replaces ``path`` with what ``source`` prints (``cat``: standard input),
    through a temporary file named TEMPORARY_PREFIX + ``suffix`` (by default 16 random hex digits)."""
    directory = os.path.dirname(path)
    missing = "%s does not exist on the node (is prometheus-node-exporter installed?)" % directory
    temporary = TEMPORARY_PREFIX + (secrets.token_hex(8) if suffix is None else suffix)
    return _COMMAND.format(dir=shlex.quote(directory), dest=shlex.quote(path), temporary=shlex.quote(temporary),
                           missing=shlex.quote(missing), no_dir=NO_DIRECTORY, source=source)


STDIN = "standard input"
TRANSFERRED = "a transferred file"


def stdin_reaches_the_command(connection):
    """Whether a command run through ``connection`` surely reads the data given as its standard input."""
    if not connection.has_pipelining:
        return False
    # Without become the command reads the connection's standard input itself; with become, only where
    # Ansible would pipeline modules through it (the become method needs no tty).
    return connection.become is None or connection.is_pipelining_enabled()


def write_metrics(action, path, text):
    """Write ``text`` to ``path`` on the action's host; ``(written, note, via)``: the note says why not,
    ``via`` how the text reached the node (STDIN or TRANSFERRED).

    A directory that does not exist is a note, not a failure (the node is still reported). Like the
    fleet report's files, the metrics are an output of the run, not managed state: never a change."""
    data = text.encode("utf-8")
    via = STDIN if stdin_reaches_the_command(action._connection) else TRANSFERRED
    try:
        if via == STDIN:
            done = action._low_level_execute_command(write_command(path), in_data=data, sudoable=True)
        else:
            done = _through_a_file(action, path, data)
    except AnsibleError as exc:
        return False, "no metrics written: %s" % exc, via
    if done["rc"] == 0:
        return True, None, via
    return False, "no metrics written: %s" % ((done.get("stderr") or "").strip() or "the write failed with status %s" % done["rc"]), via


def _through_a_file(action, path, data):
    local_fd, local_path = tempfile.mkstemp(prefix="rdma_node_metrics.")
    try:
        with os.fdopen(local_fd, "wb") as handle:
            handle.write(data)
        remote_file = action._connection._shell.join_path(action._make_tmp_path(), FILE_NAME)
        action._transfer_file(local_path, remote_file)
        action._fixup_perms2((action._connection._shell.tmpdir, remote_file))
        return action._low_level_execute_command(write_command(path, "cat -- %s" % shlex.quote(remote_file)), sudoable=True)
    finally:
        os.unlink(local_path)
        action._remove_tmp_path(action._connection._shell.tmpdir)
