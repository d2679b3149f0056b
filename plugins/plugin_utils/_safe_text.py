# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text from nodes and operators, made safe to print on a terminal and to render in Markdown.

Everything a node reports (firmware, board ID, device and netdev names, kernel log lines) and much
that operators write (host and group names, custom check messages) reaches a terminal (Ansible's
output, ``cat fleet-report.md``) and the report's renderings. Such text is hostile until made safe:

* ``strip_controls``: drops terminal escape sequences (CSI ``ESC [ ... m``, OSC ``ESC ] ... BEL``,
  and the other ESC and C1 forms), C0 and C1 control characters and the Unicode controls that
  reorder what a terminal shows (bidirectional overrides); line breaks and tabs become spaces.
* ``visible``: for names (hosts, groups), which must stay distinct and recognisable: the same
  characters are written out as ``\\x1b``, ``\\u202e``, and a backslash as ``\\\\``, so two names
  never become one.
* ``clean``: ``strip_controls`` on every text of a JSON-like value.
* ``markdown_text``: one line of Markdown that shows the text as it is: no table cell ends early
  (``|``), no heading, list, quote or code starts (``#``, ``-``, ``>``, backtick), no link, emphasis
  or raw HTML (``<script>``) is made.
"""

from __future__ import annotations

import re

# Escape sequences that terminals interpret, whole: CSI (ESC [ or C1 0x9b, parameters, intermediates,
# a final byte), strings (OSC, DCS, SOS, PM, APC) up to their terminator (BEL or ST) or the end of the
# text, and the two-character ESC forms (ESC c, ESC ( B, ...).
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]P_^X]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
    r"|\x1b[ -/]*[0-~]?",
    re.S,
)
# Line breaks and tabs, which read as a space; U+2028/U+2029 end a line in some renderers.
_SPACING = re.compile("[\t\n\v\f\r\x85\u2028\u2029]")
# Everything else that is not text: C0, DEL, C1, and the marks and overrides of bidirectional text.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ANY_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_VISIBLE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def strip_controls(text):
    """``text`` without escape sequences and control characters; line breaks and tabs become spaces."""
    text = str(text)
    if _ANY_CONTROL.search(text) is None:
        return text
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _SPACING.sub(" ", text)
    return _CONTROL.sub("", text)


def _spelled(match):
    char = match.group(0)
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def visible(name):
    """``name`` with each control character written out (``\\x1b``) and each backslash doubled: a
    one-to-one spelling, so distinct names stay distinct and a terminal shows them as they are."""
    name = str(name)
    if _VISIBLE.search(name) is None:
        return name
    return _VISIBLE.sub(_spelled, name)


def clean(value):
    """``value`` (plain JSON-like data) with ``strip_controls`` applied to every text in it, keys too."""
    if isinstance(value, str):
        return strip_controls(value)
    if isinstance(value, dict):
        return {strip_controls(k) if isinstance(k, str) else k: clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


# Characters with a meaning in (GitHub-flavoured) Markdown anywhere in a line: escapes, code spans,
# emphasis, links and images, raw HTML and entities, table cells, headings, strikethrough and math.
_MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]<>|#~&$]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# What starts a block at the beginning of a line: a list item ("- ", "+ ", "1. "), a setext underline
# or a thematic break ("---", "==="). "-rc1" or "6.1.0" start none.
_MARKDOWN_LEADING = re.compile(r"^(\s*)([-+=](?=[\s=+-]|$)|\d{1,9}(?=[.)](?:\s|$)))")
# A name that reads the same inside a code span: check and role names.
_CODE_SAFE = re.compile(r"[A-Za-z0-9_./:+-]+")


def _escaped_marker(match):
    """``\\-`` for a list marker or underline, ``1\\.`` for a numbered item."""
    spaces, marker = match.groups()
    return spaces + (marker + "\\" if marker.isdigit() else "\\" + marker)


def markdown_text(text):
    """``text`` as one line of Markdown that renders as the text itself, safe in a table cell."""
    text = strip_controls(text).strip()
    text = _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
    return _MARKDOWN_LEADING.sub(_escaped_marker, text, count=1)


def markdown_code(escaped):
    """``escaped`` (a text that ``markdown_text`` escaped) in a code span when it is a plain name
    (``node_health/gpudirect``), else as it is: backslash escapes do not work inside a code span, so
    nothing that needs one may go in one."""
    return "`%s`" % escaped if _CODE_SAFE.fullmatch(escaped) else escaped


def markdown_view(value):
    """``value`` (the report's data) with every text escaped by ``markdown_text``; mapping keys unchanged.

    Texts that are names of the report's own vocabulary (statuses, verdicts, severities such as
    ``no_data`` or ``allowed_down``) come out unchanged, so a template may still compare them."""
    if isinstance(value, str):
        return markdown_text(value)
    if isinstance(value, dict):
        return {k: markdown_view(v) for k, v in value.items()}
    if isinstance(value, list):
        return [markdown_view(v) for v in value]
    return value
