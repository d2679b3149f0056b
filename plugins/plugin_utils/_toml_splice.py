# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Format-preserving edits of TOML text: find the bytes of a key, splice in a new value, line or table.

Nothing here knows containerd; ``_containerd_config`` holds its schema and uses this module to edit.

Why splice instead of re-rendering. tomlkit round-trips an unchanged file byte for byte, but when a
document is modified it re-renders around the edit: a literal string ``'...'`` came back as a basic
string ``"..."``, and a key added to a table landed after the table's trailing blank and comment
lines, unindented and with ``\\n`` in a ``\\r\\n`` file. It is also slow: its parser took 100 s on a
5 MB comment-heavy file that ``tomllib`` reads in a tenth of a second. So the document model comes
from ``tomllib`` (one parse), a small scanner (:func:`scan`) finds the byte offsets of every table
header, key/value line and inline-table member, and each edit replaces exactly one value, inserts
one line, member or table, or deletes one; every other byte of the file is copied as it was.
:func:`parse` of the result must then equal the expected document, or nothing is written.
tomlkit is only used to render the few strings and keys written.

Layouts covered: tables in any order (a parent table after its sub-tables), dotted keys
(``runtimes.runc.runtime_type = ...``), inline tables (``runc = { runtime_type = "..." }``), quoted
keys, CRLF line endings, files without a final newline.
"""

from __future__ import annotations

import math
import re
import typing as t
from collections import Counter
from dataclasses import dataclass, field

try:
    import tomllib
except ImportError:  # Python < 3.11; ansible-core 2.19 controllers always have it
    tomllib = None

try:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
except ImportError:
    tomlkit = None
    TOMLKitError = Exception

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_COMMENT_RUN = re.compile(r"(?:[ \t]*#[^\n]*(?:\n|\Z))+")


class TomlError(Exception):
    """Text that is not TOML (or nested too deeply to read); the message says where."""


class UnsupportedLayout(Exception):
    """A key whose position this module cannot edit; ``path`` is the table or key concerned."""

    def __init__(self, path):
        super().__init__(toml_path(path))
        self.path = tuple(path)


def parse(text: str) -> dict:
    """The plain document of ``text`` (tomllib: strict, fast); :class:`TomlError` with the position."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(str(exc)) from None
    except RecursionError:
        raise TomlError("arrays or inline tables are nested too deeply to read") from None


# --------------------------------------------------------------------------------------------------
# Names and types
# --------------------------------------------------------------------------------------------------

def toml_path(path: t.Sequence[str]) -> str:
    """A key path as TOML spells it: plugins."io.containerd.grpc.v1.cri".containerd.runtimes."""
    return ".".join(part if _BARE_KEY.match(part) else '"%s"' % part.replace("\\", "\\\\").replace('"', '\\"')
                    for part in path)


def type_name(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


# --------------------------------------------------------------------------------------------------
# Scanner: byte offsets of table headers and key/value lines
# --------------------------------------------------------------------------------------------------

class ScanError(Exception):
    pass


@dataclass
class Entry:
    path: t.Tuple[str, ...]  # absolute key path
    line_start: int
    key_end: int
    value_start: int
    value_end: int
    line_end: int  # offset after the newline (or the end of the text)
    indent: str
    sep: str  # from the end of the key to the value, for example " = "
    raw_value: str
    raw_parts: t.List[str] = field(default_factory=list)  # the key as written, relative to its table
    inline: bool = False  # a member of an inline table: line_start/line_end span the member only
    members: t.List["Entry"] = field(default_factory=list)  # of an inline-table value


@dataclass
class Table:
    path: t.Tuple[str, ...]
    raw_parts: t.List[str]
    is_array: bool
    header_start: int
    header_end: int
    indent: str
    entries: t.List[Entry] = field(default_factory=list)
    # ("entry"|"comment"|"blank", line_start, line_end) of the lines under the header, in order;
    # consecutive comment lines are one "comment" run
    lines: t.List[t.Tuple[str, int, int]] = field(default_factory=list)

    def content_end(self) -> int:
        """After the last key/value line and the comment lines directly below it (no blank between)."""
        end = self.header_end
        seen_entry = False
        for kind, _start, stop in self.lines:
            if kind == "entry":
                end, seen_entry = stop, True
            elif kind == "comment" and seen_entry and _start == end:
                end = stop
        return end


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos


def _after_line(text: str, pos: int) -> int:
    newline = text.find("\n", pos)
    return len(text) if newline < 0 else newline + 1


def _scan_basic(text: str, pos: int) -> int:
    pos += 1
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == '"':
            return pos + 1
        if char == "\n":
            break
        pos += 1
    raise ScanError("unterminated string")


def _scan_literal(text: str, pos: int) -> int:
    close = text.find("'", pos + 1)
    newline = text.find("\n", pos + 1)
    if close < 0 or (0 <= newline < close):
        raise ScanError("unterminated literal string")
    return close + 1


def _scan_multiline(text: str, pos: int, delim: str) -> int:
    pos += 3
    while pos < len(text):
        if delim == '"""' and text[pos] == "\\":
            pos += 2
            continue
        if text.startswith(delim, pos):
            end = pos + 3
            # up to two quote characters may sit right before the closing delimiter
            while end < len(text) and text[end] == delim[0] and end - pos < 5:
                end += 1
            return end
        pos += 1
    raise ScanError("unterminated multi-line string")


def _scan_string(text: str, pos: int) -> int:
    if text.startswith('"""', pos):
        return _scan_multiline(text, pos, '"""')
    if text.startswith("'''", pos):
        return _scan_multiline(text, pos, "'''")
    if text[pos] == '"':
        return _scan_basic(text, pos)
    return _scan_literal(text, pos)


def _scan_brackets(text: str, pos: int) -> int:
    depth = 0
    while pos < len(text):
        char = text[pos]
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return pos + 1
        elif char in "\"'":
            pos = _scan_string(text, pos)
            continue
        elif char == "#":
            pos = _after_line(text, pos)
            continue
        pos += 1
    raise ScanError("unterminated array or inline table")


def _scan_value(text: str, pos: int, inline: bool = False) -> int:
    if pos >= len(text):
        raise ScanError("missing value")
    char = text[pos]
    if char in "\"'":
        return _scan_string(text, pos)
    if char in "[{":
        return _scan_brackets(text, pos)
    stops = "#\r\n,}" if inline else "#\r\n"  # a bare value in an inline table ends at its separator
    end = pos
    while end < len(text) and text[end] not in stops:
        end += 1
    while end > pos and text[end - 1] in " \t":
        end -= 1
    if end == pos:
        raise ScanError("missing value")
    return end


def _decode_quoted_key(raw: str) -> str:
    if raw.startswith("'"):
        return raw[1:-1]
    return tomllib.loads("k = " + raw)["k"]


def _scan_key(text: str, pos: int) -> t.Tuple[t.List[str], t.List[str], int, int]:
    """Parse a dotted key at ``pos``: (parts, raw parts, end of the key text, position after spaces)."""
    parts, raw_parts = [], []
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] in "\"'":
            end = _scan_basic(text, pos) if text[pos] == '"' else _scan_literal(text, pos)
            raw = text[pos:end]
            parts.append(_decode_quoted_key(raw))
        else:
            end = pos
            while end < len(text) and (text[end].isascii() and (text[end].isalnum() or text[end] in "_-")):
                end += 1
            if end == pos:
                raise ScanError("expected a key")
            raw = text[pos:end]
            parts.append(raw)
        raw_parts.append(raw)
        after = _skip_ws(text, end)
        if after < len(text) and text[after] == ".":
            pos = after + 1
            continue
        return parts, raw_parts, end, after


def _end_of_statement(text: str, pos: int) -> int:
    pos = _skip_ws(text, pos)
    if pos < len(text) and text[pos] == "#":
        return _after_line(text, pos)
    if pos >= len(text):
        return pos
    if text[pos] == "\n":
        return pos + 1
    if text.startswith("\r\n", pos):
        return pos + 2
    raise ScanError("expected the end of the line")


def _line_number(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _scan_entry(text: str, pos: int, base: t.Tuple[str, ...], inline: bool = False) -> Entry:
    """The ``key = value`` at ``pos`` (a line's or an inline table's); inline-table values get members."""
    parts, raw_parts, key_end, after = _scan_key(text, pos)
    if not text.startswith("=", after):
        raise ScanError("expected '='")
    value_start = _skip_ws(text, after + 1)
    value_end = _scan_value(text, value_start, inline)
    entry = Entry(
        path=base + tuple(parts), line_start=pos, key_end=key_end, value_start=value_start, value_end=value_end,
        line_end=value_end, indent="", sep=text[key_end:value_start], raw_value=text[value_start:value_end],
        raw_parts=raw_parts, inline=True,
    )
    if text[value_start] == "{":
        entry.members = _scan_inline(text, value_start, entry.path)
    return entry


def _scan_inline(text: str, pos: int, base: t.Tuple[str, ...]) -> t.List[Entry]:
    """The members of the inline table starting at ``pos`` (its ``{``), in order."""
    members = []
    pos = _skip_ws(text, pos + 1)
    if text.startswith("}", pos):
        return members
    while True:
        member = _scan_entry(text, pos, base, inline=True)
        members.append(member)
        pos = _skip_ws(text, member.value_end)
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
            continue
        if text.startswith("}", pos):
            return members
        raise ScanError("expected ',' or '}' in an inline table")


def scan(text: str) -> t.List[Table]:
    """Every table of ``text`` in file order (the first one is the root, path ``()``)."""
    root = Table(path=(), raw_parts=[], is_array=False, header_start=0, header_end=0, indent="")
    tables = [root]
    current = root
    pos = 0
    try:
        while pos < len(text):
            line_start = pos
            first = _skip_ws(text, pos)
            if first >= len(text):
                break
            char = text[first]
            if char == "\n" or text.startswith("\r\n", first):
                pos = _after_line(text, first)
                current.lines.append(("blank", line_start, pos))
                continue
            if char == "#":
                # a run of comment lines in one step: comment-heavy files are mostly this
                pos = _COMMENT_RUN.match(text, line_start).end()
                current.lines.append(("comment", line_start, pos))
                continue
            if char == "[":
                is_array = text.startswith("[[", first)
                parts, raw_parts, _end, after = _scan_key(text, first + (2 if is_array else 1))
                close = "]]" if is_array else "]"
                if not text.startswith(close, after):
                    raise ScanError("expected '%s'" % close)
                pos = _end_of_statement(text, after + len(close))
                current = Table(path=tuple(parts), raw_parts=raw_parts, is_array=is_array,
                                header_start=line_start, header_end=pos, indent=text[line_start:first])
                tables.append(current)
                continue
            entry = _scan_entry(text, first, current.path)
            pos = _end_of_statement(text, entry.value_end)
            entry.line_start, entry.line_end, entry.indent, entry.inline = line_start, pos, text[line_start:first], False
            current.entries.append(entry)
            current.lines.append(("entry", line_start, pos))
    except ScanError as exc:
        raise ScanError("%s at line %d" % (exc, _line_number(text, pos))) from None
    return tables


# --------------------------------------------------------------------------------------------------
# Layout: how the file indents and quotes, so new lines look like their neighbours
# --------------------------------------------------------------------------------------------------

@dataclass
class Layout:
    header_unit: str
    entry_offset: str
    sep: str
    style: str  # "basic" or "literal"
    newline: str

    def header_indent(self, depth: int) -> str:
        return self.header_unit * max(depth - 1, 0)


def quote_style(entries: t.Iterable[Entry]) -> t.Optional[str]:
    counts = Counter()
    for entry in entries:
        if entry.raw_value.startswith("'"):
            counts["literal"] += 1
        elif entry.raw_value.startswith('"'):
            counts["basic"] += 1
    if not counts:
        return None
    return "literal" if counts["literal"] > counts["basic"] else "basic"


def layout_of(text: str, tables: t.List[Table]) -> Layout:
    units, offsets, seps = Counter(), Counter(), Counter()
    for table in tables[1:]:
        depth = len(table.path)
        if depth >= 2:
            size, rest = divmod(len(table.indent), depth - 1)
            if not rest and table.indent == table.indent[:size] * (depth - 1):
                units[table.indent[:size]] += 1
        for entry in table.entries:
            if entry.indent.startswith(table.indent):
                offsets[entry.indent[len(table.indent):]] += 1
    for table in tables:
        for entry in table.entries:
            seps[entry.sep] += 1
    all_entries = [entry for table in tables for entry in table.entries]
    newline = "\r\n" if "\r\n" in text else "\n"
    return Layout(
        header_unit=units.most_common(1)[0][0] if units else "",
        entry_offset=offsets.most_common(1)[0][0] if offsets else "",
        sep=seps.most_common(1)[0][0] if seps else " = ",
        style=quote_style(all_entries) or "basic",
        newline=newline,
    )


def render_string(value: str, style: str) -> str:
    if style == "literal":
        try:
            return tomlkit.string(value, literal=True).as_string()
        except (TOMLKitError, ValueError):
            pass  # the value holds a quote or a control character: only a basic string can carry it
    return tomlkit.string(value).as_string()


def render_key(part: str, style: str) -> str:
    if _BARE_KEY.match(part):
        return part
    return render_string(part, style)


# --------------------------------------------------------------------------------------------------
# Splicing
# --------------------------------------------------------------------------------------------------

@dataclass
class Splice:
    start: int
    end: int
    text: str
    # at one position, a key added to the table above goes before a new table
    order: int = 0


def find_table(tables: t.List[Table], path: t.Sequence[str]) -> t.Optional[Table]:
    path = tuple(path)
    for table in tables[1:]:
        if table.path == path and not table.is_array:
            return table
    return None


def _all_entries(entries: t.Iterable[Entry]) -> t.Iterator[Entry]:
    for entry in entries:
        yield entry
        if entry.members:
            yield from _all_entries(entry.members)


def find_entry(tables: t.List[Table], path: t.Sequence[str]) -> t.Optional[Entry]:
    """The key/value at ``path``: a line, a dotted key or an inline-table member."""
    path = tuple(path)
    for table in tables:
        for entry in _all_entries(table.entries):
            if entry.path == path:
                return entry
    return None


def delete_entry(text: str, entry: Entry) -> Splice:
    """Remove a key: its whole line, or for an inline-table member the member and one comma."""
    if not entry.inline:
        return Splice(entry.line_start, entry.line_end, "")
    after = _skip_ws(text, entry.value_end)
    if text.startswith(",", after):
        return Splice(entry.line_start, _skip_ws(text, after + 1), "")
    before = entry.line_start
    while before > 0 and text[before - 1] in " \t":
        before -= 1
    if before > 0 and text[before - 1] == ",":
        before -= 1
        while before > 0 and text[before - 1] in " \t":
            before -= 1
        return Splice(before, entry.value_end, "")
    return Splice(entry.line_start, entry.value_end, "")


def line_newline(text: str, end: int, layout: Layout) -> str:
    """The newline that ends the line finishing at ``end``, or the file's usual one."""
    if text.endswith("\r\n", 0, end):
        return "\r\n"
    if text.endswith("\n", 0, end):
        return "\n"
    return layout.newline


def insert_key(text: str, tables: t.List[Table], layout: Layout, table_path: t.Sequence[str], key: str,
               value: str) -> Splice:
    """Add ``key = "value"`` to the table at ``table_path``, however the file spells that table.

    A ``[table]`` gets a line after its last key, indented like its keys; a table that exists
    through dotted keys (``runc.runtime_type = ...`` in a parent table) gets one more dotted line
    after them; an inline table (``runc = { ... }``) gets one more member; a table that only
    exists through its sub-tables gets its own header before the first of them. Raises
    :class:`UnsupportedLayout` otherwise (an array of tables, for one).
    """
    table_path = tuple(table_path)
    table = find_table(tables, table_path)
    if table is not None:
        style = quote_style(table.entries) or layout.style
        if table.entries:
            anchor = table.entries[-1]
            pos, indent = anchor.line_end, anchor.indent
            sep = Counter(entry.sep for entry in table.entries).most_common(1)[0][0]
        else:
            pos, indent, sep = table.header_end, table.indent + layout.entry_offset, layout.sep
        return _line_splice(text, pos, layout, indent + render_key(key, style) + sep + render_string(value, style))
    entry = find_entry(tables, table_path)
    if entry is not None:
        if not entry.raw_value.startswith("{"):
            raise UnsupportedLayout(table_path)
        return _insert_member(text, entry, key, value, layout)
    depth = len(table_path)
    for holder in reversed(tables):
        if holder.is_array or holder.path != table_path[:len(holder.path)]:
            continue
        dotted = [line for line in holder.entries if line.path[:depth] == table_path and len(line.path) > depth]
        if dotted:
            anchor = dotted[-1]
            style = quote_style(dotted) or layout.style
            spelled = ".".join(anchor.raw_parts[:depth - len(holder.path)] + [render_key(key, style)])
            return _line_splice(text, anchor.line_end, layout,
                                anchor.indent + spelled + anchor.sep + render_string(value, style))
    # The table only exists through its sub-tables ([...runtimes.runc.options] without
    # [...runtimes.runc]): give it its own header right before the first of them.
    subtables = [tb for tb in tables[1:] if tb.path[:depth] == table_path and len(tb.path) > depth]
    if not subtables or subtables[0].is_array:
        raise UnsupportedLayout(table_path)
    first = subtables[0]
    newline = layout.newline
    header_indent = layout.header_indent(depth)
    header = header_indent + "[" + ".".join(first.raw_parts[:depth]) + "]" + newline
    line = (header_indent + layout.entry_offset + render_key(key, layout.style) + layout.sep
            + render_string(value, layout.style))
    return Splice(first.header_start, first.header_start, header + line + newline + newline)


def _line_splice(text: str, pos: int, layout: Layout, line: str) -> Splice:
    """Insert ``line`` as a line of its own at ``pos`` (the start of a line, or the end of the text)."""
    newline = line_newline(text, pos, layout)
    line += newline
    if pos == len(text) and text and not text.endswith("\n"):
        line = newline + line
    return Splice(pos, pos, line)


def _insert_member(text: str, entry: Entry, key: str, value: str, layout: Layout) -> Splice:
    """Add a member to the inline table that is ``entry``'s value, right after its last member."""
    sep = entry.members[-1].sep if entry.members else " = "
    style = quote_style(entry.members) or layout.style
    member = render_key(key, style) + sep + render_string(value, style)
    if not entry.members:
        return Splice(entry.value_start, entry.value_end, "{ " + member + " }")
    last = entry.members[-1].value_end
    return Splice(last, last, ", " + member)


def create_table(text: str, tables: t.List[Table], layout: Layout, table_path: t.Sequence[str],
                 items: t.Sequence[t.Tuple[str, str]]) -> Splice:
    """Add a new ``[table]`` with string ``items`` after the tables of its closest existing ancestor."""
    table_path = tuple(table_path)
    related, shared = [], 0
    for shared in range(len(table_path) - 1, 0, -1):
        related = [tb for tb in tables[1:] if tb.path[:shared] == table_path[:shared] and not tb.is_array]
        if related:
            break
    newline = layout.newline
    if related:
        last = related[-1]
        pos = last.content_end()
        spelled = list(related[0].raw_parts[:shared]) + [render_key(part, layout.style)
                                                         for part in table_path[shared:]]
    else:
        pos = len(text)
        spelled = [render_key(part, layout.style) for part in table_path]
    header_indent = layout.header_indent(len(table_path))
    entry_indent = header_indent + layout.entry_offset
    siblings = [tb for tb in tables[1:] if len(tb.path) == len(table_path) and tb.path[:-1] == table_path[:-1]]
    if siblings:  # look like the other tables at this level
        header_indent = siblings[-1].indent
        entry_indent = siblings[-1].entries[0].indent if siblings[-1].entries else header_indent + layout.entry_offset
    block = header_indent + "[" + ".".join(spelled) + "]" + newline
    for key, value in items:
        block += entry_indent + render_key(key, layout.style) + layout.sep + render_string(value, layout.style) + newline
    if pos > 0:
        lead = "" if text.endswith("\n", 0, pos) else newline
        block = lead + newline + block
    return Splice(pos, pos, block, order=1)


def comment_lines(tables: t.List[Table]) -> t.List[Splice]:
    """Splices that delete every whole-line comment the scanner found (none sits inside a string).

    Applied together with an edit's splices they give a text with the same document as the edited
    file but without its comment lines: the verification parse then reads kilobytes instead of a
    comment-heavy file's megabytes, so the file itself is parsed only once.
    """
    return [Splice(start, stop, "") for table in tables for kind, start, stop in table.lines if kind == "comment"]


def apply_splices(text: str, splices: t.List[Splice]) -> str:
    out, cursor = [], 0
    for splice in sorted(splices, key=lambda sp: (sp.start, sp.end, sp.order)):
        if splice.start < cursor:
            raise ScanError("overlapping edits")
        out.append(text[cursor:splice.start])
        out.append(splice.text)
        cursor = splice.end
    out.append(text[cursor:])
    return "".join(out)


def same_document(left, right) -> bool:
    """Deep equality where NaN equals NaN (a config may well hold ``nan``)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_document(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_document(a, b) for a, b in zip(left, right))
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    return type(left) is type(right) and left == right
