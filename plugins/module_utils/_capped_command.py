# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command whose output may be huge, keeping at most a bound of it and waiting at most a deadline.

``AnsibleModule.run_command`` keeps all of a command's output in memory and waits for it to end:
``journalctl`` over a busy window printed 100 MB and took minutes. Here the output is read as it
comes, and the command is killed once the bound is passed or the deadline is reached; the caller
learns which, so its facts can say that what it read was cut.
"""

from __future__ import annotations

import collections
import os
import selectors
import subprocess
import tempfile
import time

_CHUNK = 1024 * 1024
_STDERR_TAIL = 4096

CappedResult = collections.namedtuple("CappedResult", "rc stdout stderr cut timed_out")


def run_capped(argv, max_bytes, timeout):
    """Run ``argv`` (a list, no shell) and return a :class:`CappedResult`.

    ``stdout`` (a bytearray, not copied) holds at most ``max_bytes`` bytes; ``cut`` says the command printed more (it was then
    killed, and ``rc`` is None). ``timed_out`` says it was killed at the deadline of ``timeout``
    seconds. ``stderr`` is the end of the command's error output, as text. A command that cannot
    be started raises OSError.
    """
    with tempfile.TemporaryFile() as errors:
        # Not run_command: it keeps all of the output and waits for the end, which is what this avoids.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,  # pylint: disable=ansible-bad-function
                                close_fds=True)
        out = bytearray()
        cut = timed_out = False
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                if not selector.select(remaining):
                    continue
                chunk = os.read(proc.stdout.fileno(), min(_CHUNK, max_bytes + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
                if len(out) > max_bytes:
                    cut = True
                    del out[max_bytes:]
                    break
        if cut or timed_out:
            proc.kill()
        proc.stdout.close()
        rc = proc.wait()
        errors.seek(max(0, errors.seek(0, os.SEEK_END) - _STDERR_TAIL))
        stderr = errors.read().decode("utf-8", "replace")
    return CappedResult(None if cut or timed_out else rc, out, stderr, cut, timed_out)
