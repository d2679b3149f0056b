# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whole numbers read from the node's files (sysfs, procfs, pidfiles), strictly.

The kernel prints these numbers in ASCII: decimal, or hex where the attribute is hex. Python's ``int()`` also
takes Arabic-Indic or fullwidth digits, ``_`` separators, signs and any size, and ``str.isdigit()``
is true for ``²``, which ``int()`` then refuses with a ValueError. So a file that holds anything but
the kernel's form is not read as a number: it is null, with one warning naming the file and the
value (collected with the readers' other warnings, see ``_files.take_read_warnings``).
"""

from __future__ import annotations

import re

from ansible_collections.rdma.node.plugins.module_utils._files import add_read_warning
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

UINT64_MAX = 2 ** 64 - 1
INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1
# At most 20 decimal or 16 hex digits (a leading zero more is tolerated): 64 bits cannot need more.
_DECIMAL = lazy_compile(r"[0-9]{1,21}", re.ASCII)
_HEX = lazy_compile(r"(?:0[xX])?[0-9a-fA-F]{1,17}", re.ASCII)
_SHOWN = 40


def parse_uint(text, source, base=10):
    """``text`` as an unsigned whole number of at most 64 bits, else None.

    ``base`` 10 reads decimal digits, 16 hex digits with or without ``0x`` (as the kernel prints
    ``cap_mask`` or ``dev_id``). None and empty text are "not there", silently; anything else that
    is not such a number is None with a warning naming ``source`` (the file) and the value.
    """
    return _parse(text, source, base, 0, UINT64_MAX, "an unsigned whole number of at most 64 bits")


def parse_int(text, source):
    """``text`` as a decimal whole number of 64 bits that may be negative (``numa_node`` is ``-1``)."""
    return _parse(text, source, 10, INT64_MIN, INT64_MAX, "a whole number of 64 bits")


def _parse(text, source, base, minimum, maximum, expected):
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    negative = minimum < 0 and text.startswith("-")
    digits = text[1:] if negative else text
    if base == 16 and _HEX.fullmatch(digits):
        value = int(digits, 16)
    elif base == 10 and _DECIMAL.fullmatch(digits):
        value = int(digits, 10)
    else:
        value = None
    if value is not None and negative:
        value = -value
    if value is None or not minimum <= value <= maximum:
        shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
        add_read_warning("%s holds %r, not %s; read as null." % (source, shown, expected))
        return None
    return value
