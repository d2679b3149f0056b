# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Point containerd's CRI runtimes at a base runtime spec in ``config.toml`` (controller side).

Pure functions over text: find the schema version, find the CRI runtimes table for it, plan the edit
of ``base_runtime_spec`` for the chosen runtimes and return the new text with what changed; plus the
two checks the action plugin runs around the node's ``containerd config dump``.

How the text is edited. tomlkit parses the file (the document model: version, runtimes, current
values) and renders every TOML value and key this module writes. It round-trips an unchanged file
byte for byte, but when a document is modified it re-renders around the edit: on the real fixtures a
literal string ``'...'`` came back as a basic string ``"..."``, and a key added to a table landed
after the table's trailing blank and comment lines, unindented and with ``\\n`` in a ``\\r\\n`` file.
So the edits are spliced into the original text instead: a small scanner (``_scan``) finds the byte
offsets of every table header and key/value line, each edit replaces exactly one value, inserts one
line (or one new table) or deletes one line, and every other byte of the file is copied as it was.
The result is parsed again with tomlkit and with Python's ``tomllib`` and must equal the original
document with only the intended keys changed; otherwise nothing is returned to write.
"""

from __future__ import annotations

import copy
import math
import posixpath
import re
import typing as t
from collections import Counter
from dataclasses import dataclass, field

from ansible_collections.rdma.node.plugins.module_utils import _containerd_options as node_options

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

# Where each schema keeps the CRI runtimes: [<plugin table>.containerd.runtimes.<name>].
CRI_PLUGIN_PATHS = {
    1: ("plugins", "cri"),
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
}
RUNTIMES_SUBPATH = ("containerd", "runtimes")
KNOWN_VERSIONS = tuple(sorted(CRI_PLUGIN_PATHS))
BASE_RUNTIME_SPEC = "base_runtime_spec"
# What a runtime created by create_missing runs with: the runc v2 shim, containerd's default.
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
DEFAULT_RUNTIME_NAME = "runc"

# The options of rdma.node.containerd_runtime as the action plugin validates them on the controller:
# the module's own, except that paths are plain strings here. A path names a file on the node, and
# "~" or variables must be expanded there (by the module), not on the controller.
ARGUMENT_SPEC = {
    name: dict(option, type="str") if option["type"] == "path" else option
    for name, option in node_options.ARGUMENT_SPEC.items()
}
REQUIRED_IF = node_options.REQUIRED_IF

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_GLOB_CHARS = "*?["


class ContainerdConfigError(Exception):
    """Bad input or an edit that cannot be made safely; the message is one sentence for the user."""


@dataclass
class EditPlan:
    """What ``plan_base_runtime_spec`` decided."""

    text: str
    new_text: str
    config_version: int
    runtimes: t.List[str] = field(default_factory=list)  # the runtimes considered
    runtimes_changed: t.List[str] = field(default_factory=list)
    runtimes_created: t.List[str] = field(default_factory=list)
    warnings: t.List[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.new_text != self.text


def require_tomlkit() -> None:
    """Fail with one sentence when the controller lacks tomlkit."""
    if tomlkit is None or tomllib is None:
        raise ContainerdConfigError(
            "rdma.node.containerd_runtime needs the Python library tomlkit (and Python 3.11 or later for "
            "tomllib) on the Ansible controller to edit config.toml; install it there with 'pip install tomlkit'."
        )


# --------------------------------------------------------------------------------------------------
# Document model
# --------------------------------------------------------------------------------------------------

def toml_path(path: t.Sequence[str]) -> str:
    """A key path as TOML spells it: plugins."io.containerd.grpc.v1.cri".containerd.runtimes."""
    return ".".join(part if _BARE_KEY.match(part) else '"%s"' % part.replace("\\", "\\\\").replace('"', '\\"')
                    for part in path)


def _type_name(value) -> str:
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


def parse_config(text: str, source: str) -> dict:
    """Parse ``text`` with tomllib (strict, clear positions) and tomlkit; return the plain document."""
    require_tomlkit()
    if not isinstance(text, str):
        raise ContainerdConfigError("%s: expected the file's text, got %s." % (source, type(text).__name__))
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ContainerdConfigError("%s is not valid TOML: %s; nothing was changed." % (source, exc)) from None
    try:
        return tomlkit.parse(text).unwrap()
    except (TOMLKitError, ValueError) as exc:
        raise ContainerdConfigError("%s is not valid TOML: %s; nothing was changed." % (source, exc)) from None


def config_version(data: dict, source: str) -> int:
    """The schema version; a file without ``version`` is version 1, containerd's own rule."""
    version = data.get("version")
    if version is None:
        return 1
    if isinstance(version, bool) or not isinstance(version, int):
        raise ContainerdConfigError(
            "%s: 'version' must be an integer (1, 2 or 3), found %s (%r)." % (source, _type_name(version), version)
        )
    if version == 0:
        # containerd cannot tell version = 0 from a missing version and reads both as version 1.
        return 1
    if version not in CRI_PLUGIN_PATHS:
        raise ContainerdConfigError(
            "%s: 'version = %d' is not a containerd config schema this module knows (expected 1 for "
            "containerd 1.x 'plugins.cri', 2 for 'plugins.\"io.containerd.grpc.v1.cri\"' or 3 for "
            "containerd 2.x 'plugins.\"io.containerd.cri.v1.runtime\"'); nothing was changed." % (source, version)
        )
    return version


def runtimes_path(version: int) -> t.Tuple[str, ...]:
    """The key path of the CRI runtimes table for a schema version."""
    return CRI_PLUGIN_PATHS[version] + RUNTIMES_SUBPATH


def _get_table(data: dict, path: t.Sequence[str], source: str) -> t.Optional[dict]:
    node = data
    for depth, part in enumerate(path):
        if not isinstance(node, dict):
            raise ContainerdConfigError(
                "%s: '%s' must be a table, found %s." % (source, toml_path(path[:depth]), _type_name(node))
            )
        if part not in node:
            return None
        node = node[part]
    if not isinstance(node, dict):
        raise ContainerdConfigError("%s: '%s' must be a table, found %s." % (source, toml_path(path), _type_name(node)))
    return node


def configured_runtimes(data: dict, version: int, source: str) -> t.List[str]:
    """Names of the CRI runtimes the file configures for its schema, in file order."""
    table = _get_table(data, runtimes_path(version), source) or {}
    for name, value in table.items():
        if not isinstance(value, dict):
            raise ContainerdConfigError(
                "%s: '%s' must be a table, found %s." % (source, toml_path(runtimes_path(version) + (name,)),
                                                         _type_name(value))
            )
    return list(table)


def default_runtime_name(data: dict, version: int, source: str) -> str:
    containerd = _get_table(data, CRI_PLUGIN_PATHS[version] + ("containerd",), source) or {}
    name = containerd.get("default_runtime_name")
    return name if isinstance(name, str) and name else DEFAULT_RUNTIME_NAME


def _check_schema_names(data: dict, version: int, source: str) -> None:
    """A file whose runtimes sit under another schema's plugin name is a mistake containerd ignores."""
    for other, plugin in CRI_PLUGIN_PATHS.items():
        if other == version:
            continue
        try:
            table = _get_table(data, plugin + RUNTIMES_SUBPATH, source)
        except ContainerdConfigError:
            table = None
        if table:
            raise ContainerdConfigError(
                "%s: the file is version %d, but its CRI runtimes sit under '%s', the version %d name, which "
                "containerd ignores for version %d; fix 'version' or the table names first." % (
                    source, version, toml_path(plugin + RUNTIMES_SUBPATH), other, version)
            )


# --------------------------------------------------------------------------------------------------
# Scanner: byte offsets of table headers and key/value lines
# --------------------------------------------------------------------------------------------------

class _ScanError(Exception):
    pass


@dataclass
class _Entry:
    path: t.Tuple[str, ...]  # absolute key path
    line_start: int
    key_end: int
    value_start: int
    value_end: int
    line_end: int  # offset after the newline (or the end of the text)
    indent: str
    sep: str  # from the end of the key to the value, for example " = "
    raw_value: str


@dataclass
class _Table:
    path: t.Tuple[str, ...]
    raw_parts: t.List[str]
    is_array: bool
    header_start: int
    header_end: int
    indent: str
    entries: t.List[_Entry] = field(default_factory=list)
    # ("entry"|"comment"|"blank", line_start, line_end) of the lines under the header, in order
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
    raise _ScanError("unterminated string")


def _scan_literal(text: str, pos: int) -> int:
    close = text.find("'", pos + 1)
    newline = text.find("\n", pos + 1)
    if close < 0 or (0 <= newline < close):
        raise _ScanError("unterminated literal string")
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
    raise _ScanError("unterminated multi-line string")


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
    raise _ScanError("unterminated array or inline table")


def _scan_value(text: str, pos: int) -> int:
    if pos >= len(text):
        raise _ScanError("missing value")
    char = text[pos]
    if char in "\"'":
        return _scan_string(text, pos)
    if char in "[{":
        return _scan_brackets(text, pos)
    end = pos
    while end < len(text) and text[end] not in "#\r\n":
        end += 1
    while end > pos and text[end - 1] in " \t":
        end -= 1
    if end == pos:
        raise _ScanError("missing value")
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
                raise _ScanError("expected a key")
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
    raise _ScanError("expected the end of the line")


def _line_number(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _scan(text: str) -> t.List[_Table]:
    """Every table of ``text`` in file order (the first one is the root, path ``()``)."""
    root = _Table(path=(), raw_parts=[], is_array=False, header_start=0, header_end=0, indent="")
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
                pos = _after_line(text, first)
                current.lines.append(("comment", line_start, pos))
                continue
            if char == "[":
                is_array = text.startswith("[[", first)
                parts, raw_parts, _end, after = _scan_key(text, first + (2 if is_array else 1))
                close = "]]" if is_array else "]"
                if not text.startswith(close, after):
                    raise _ScanError("expected '%s'" % close)
                pos = _end_of_statement(text, after + len(close))
                current = _Table(path=tuple(parts), raw_parts=raw_parts, is_array=is_array,
                                 header_start=line_start, header_end=pos, indent=text[line_start:first])
                tables.append(current)
                continue
            parts, _raw, key_end, after = _scan_key(text, first)
            if not text.startswith("=", after):
                raise _ScanError("expected '='")
            value_start = _skip_ws(text, after + 1)
            value_end = _scan_value(text, value_start)
            pos = _end_of_statement(text, value_end)
            current.entries.append(_Entry(
                path=current.path + tuple(parts), line_start=line_start, key_end=key_end,
                value_start=value_start, value_end=value_end, line_end=pos, indent=text[line_start:first],
                sep=text[key_end:value_start], raw_value=text[value_start:value_end],
            ))
            current.lines.append(("entry", line_start, pos))
    except _ScanError as exc:
        raise _ScanError("%s at line %d" % (exc, _line_number(text, pos))) from None
    return tables


# --------------------------------------------------------------------------------------------------
# Layout: how the file indents and quotes, so new lines look like their neighbours
# --------------------------------------------------------------------------------------------------

@dataclass
class _Layout:
    header_unit: str
    entry_offset: str
    sep: str
    style: str  # "basic" or "literal"
    newline: str

    def header_indent(self, depth: int) -> str:
        return self.header_unit * max(depth - 1, 0)


def _quote_style(entries: t.Iterable[_Entry]) -> t.Optional[str]:
    counts = Counter()
    for entry in entries:
        if entry.raw_value.startswith("'"):
            counts["literal"] += 1
        elif entry.raw_value.startswith('"'):
            counts["basic"] += 1
    if not counts:
        return None
    return "literal" if counts["literal"] > counts["basic"] else "basic"


def _layout(text: str, tables: t.List[_Table]) -> _Layout:
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
    return _Layout(
        header_unit=units.most_common(1)[0][0] if units else "",
        entry_offset=offsets.most_common(1)[0][0] if offsets else "",
        sep=seps.most_common(1)[0][0] if seps else " = ",
        style=_quote_style(all_entries) or "basic",
        newline=newline,
    )


def _render_string(value: str, style: str) -> str:
    if style == "literal":
        try:
            return tomlkit.string(value, literal=True).as_string()
        except (TOMLKitError, ValueError):
            pass  # the value holds a quote or a control character: only a basic string can carry it
    return tomlkit.string(value).as_string()


def _render_key(part: str, style: str) -> str:
    if _BARE_KEY.match(part):
        return part
    return _render_string(part, style)


# --------------------------------------------------------------------------------------------------
# Planning the edit
# --------------------------------------------------------------------------------------------------

@dataclass
class _Splice:
    start: int
    end: int
    text: str
    # at one position, a key added to the table above goes before a new table
    order: int = 0


def _unsupported_form(source: str, path: t.Sequence[str]) -> ContainerdConfigError:
    return ContainerdConfigError(
        "%s: '%s' is written as an inline table or with dotted keys, which this module does not rewrite; "
        "write it as a [%s] table first." % (source, toml_path(path), toml_path(path))
    )


def _find_table(tables: t.List[_Table], path: t.Sequence[str]) -> t.Optional[_Table]:
    path = tuple(path)
    for table in tables[1:]:
        if table.path == path and not table.is_array:
            return table
    return None


def _find_entry(tables: t.List[_Table], path: t.Sequence[str]) -> t.Optional[_Entry]:
    path = tuple(path)
    for table in tables:
        for entry in table.entries:
            if entry.path == path:
                return entry
    return None


def _line_newline(text: str, end: int, layout: _Layout) -> str:
    """The newline that ends the line finishing at ``end``, or the file's usual one."""
    if text.endswith("\r\n", 0, end):
        return "\r\n"
    if text.endswith("\n", 0, end):
        return "\n"
    return layout.newline


def _insert_key(text, tables, layout, runtime_path, value, source) -> _Splice:
    """Add ``base_runtime_spec`` to an existing runtime table, right after its last key."""
    table = _find_table(tables, runtime_path)
    if table is not None:
        style = _quote_style(table.entries) or layout.style
        if table.entries:
            anchor = table.entries[-1]
            pos, indent = anchor.line_end, anchor.indent
            sep = Counter(entry.sep for entry in table.entries).most_common(1)[0][0]
        else:
            pos, indent, sep = table.header_end, table.indent + layout.entry_offset, layout.sep
        newline = _line_newline(text, pos, layout)
        line = indent + BASE_RUNTIME_SPEC + sep + _render_string(value, style) + newline
        if pos == len(text) and text and not text.endswith("\n"):
            line = newline + line
        return _Splice(pos, pos, line)
    # The runtime only exists through its sub-tables ([...runtimes.runc.options] without
    # [...runtimes.runc]): give it its own header right before the first of them.
    depth = len(runtime_path)
    subtables = [tb for tb in tables[1:] if tb.path[:depth] == tuple(runtime_path) and len(tb.path) > depth]
    if not subtables or subtables[0].is_array:
        raise _unsupported_form(source, runtime_path)
    first = subtables[0]
    newline = layout.newline
    header_indent = layout.header_indent(depth)
    header = header_indent + "[" + ".".join(first.raw_parts[:depth]) + "]" + newline
    line = header_indent + layout.entry_offset + BASE_RUNTIME_SPEC + layout.sep + _render_string(value, layout.style)
    return _Splice(first.header_start, first.header_start, header + line + newline + newline)


def _create_runtime(text, tables, layout, runtime_path, value) -> _Splice:
    """Add a new ``[...runtimes.<name>]`` table after the tables of its closest existing ancestor."""
    runtime_path = tuple(runtime_path)
    related, shared = [], 0
    for shared in range(len(runtime_path) - 1, 0, -1):
        related = [tb for tb in tables[1:] if tb.path[:shared] == runtime_path[:shared] and not tb.is_array]
        if related:
            break
    newline = layout.newline
    if related:
        last = related[-1]
        pos = last.content_end()
        spelled = list(related[0].raw_parts[:shared]) + [_render_key(part, layout.style)
                                                         for part in runtime_path[shared:]]
    else:
        pos = len(text)
        spelled = [_render_key(part, layout.style) for part in runtime_path]
    header_indent = layout.header_indent(len(runtime_path))
    entry_indent = header_indent + layout.entry_offset
    siblings = [tb for tb in tables[1:] if len(tb.path) == len(runtime_path) and tb.path[:-1] == runtime_path[:-1]]
    if siblings:  # look like the other runtimes
        header_indent = siblings[-1].indent
        entry_indent = siblings[-1].entries[0].indent if siblings[-1].entries else header_indent + layout.entry_offset
    block = (
        header_indent + "[" + ".".join(spelled) + "]" + newline
        + entry_indent + "runtime_type" + layout.sep + _render_string(DEFAULT_RUNTIME_TYPE, layout.style) + newline
        + entry_indent + BASE_RUNTIME_SPEC + layout.sep + _render_string(value, layout.style) + newline
    )
    if pos > 0:
        lead = "" if text.endswith("\n", 0, pos) else newline
        block = lead + newline + block
    return _Splice(pos, pos, block, order=1)


def _apply(text: str, splices: t.List[_Splice]) -> str:
    out, cursor = [], 0
    for splice in sorted(splices, key=lambda sp: (sp.start, sp.end, sp.order)):
        if splice.start < cursor:
            raise _ScanError("overlapping edits")
        out.append(text[cursor:splice.start])
        out.append(splice.text)
        cursor = splice.end
    out.append(text[cursor:])
    return "".join(out)


def _set_path(data: dict, path: t.Sequence[str], value) -> None:
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def _same(left, right) -> bool:
    """Deep equality where NaN equals NaN (a config may well hold ``nan``)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right))
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    return type(left) is type(right) and left == right


def _verify(new_text: str, expected: dict, source: str) -> None:
    try:
        tomllib.loads(new_text)
        result = tomlkit.parse(new_text).unwrap()
    except (tomllib.TOMLDecodeError, TOMLKitError, ValueError) as exc:
        raise ContainerdConfigError(
            "%s: the edited file would not be valid TOML (%s), so nothing was changed; please report this "
            "file's layout to the rdma.node developers." % (source, exc)
        ) from None
    if not _same(result, expected):
        raise ContainerdConfigError(
            "%s: the edit would change more than base_runtime_spec, so nothing was changed; please report "
            "this file's layout to the rdma.node developers." % source
        )


def validate_spec_path(base_runtime_spec) -> str:
    if not isinstance(base_runtime_spec, str) or not base_runtime_spec:
        raise ContainerdConfigError("base_runtime_spec is required with state=present (the spec file's path).")
    if not posixpath.isabs(base_runtime_spec):
        raise ContainerdConfigError(
            "base_runtime_spec must be an absolute path (containerd opens it as given), got '%s'." % base_runtime_spec
        )
    return base_runtime_spec


def plan_base_runtime_spec(
    text: str,
    base_runtime_spec: t.Optional[str] = None,
    runtimes: t.Optional[t.Sequence[str]] = None,
    state: str = "present",
    create_missing: bool = False,
    source: str = "config.toml",
) -> EditPlan:
    """Plan setting (state=present) or removing (state=absent) ``base_runtime_spec`` on CRI runtimes.

    ``runtimes=None`` means every runtime the file configures for CRI. Raises ContainerdConfigError
    with one sentence for bad input; otherwise returns the new text (equal to ``text`` when nothing
    changes) and the runtimes changed.
    """
    if state not in ("present", "absent"):
        raise ContainerdConfigError("state must be 'present' or 'absent', got %r." % (state,))
    if state == "present":
        base_runtime_spec = validate_spec_path(base_runtime_spec)
    data = parse_config(text, source)
    version = config_version(data, source)
    rpath = runtimes_path(version)
    configured = configured_runtimes(data, version, source)
    if not configured:
        _check_schema_names(data, version, source)
    plan = EditPlan(text=text, new_text=text, config_version=version)

    if runtimes is None:
        names = list(configured)
        if not names and state == "present":
            default = default_runtime_name(data, version, source)
            if not create_missing:
                raise ContainerdConfigError(
                    "%s: no CRI runtime is configured under '%s'; name the runtimes to change and set "
                    "create_missing=true to add them (containerd's default runtime here is '%s')." % (
                        source, toml_path(rpath), default)
                )
            names = [default]
        elif state == "present":
            default = default_runtime_name(data, version, source)
            if default not in names:
                plan.warnings.append(
                    "%s: the default CRI runtime '%s' is not configured in the file, so containerd runs it from "
                    "its built-in definition without base_runtime_spec; add it to runtimes with "
                    "create_missing=true to cover it." % (source, default))
    else:
        names = []
        for name in runtimes:
            if not isinstance(name, str) or not name:
                raise ContainerdConfigError("runtimes must be a list of runtime names, got %r." % (name,))
            if name not in names:
                names.append(name)
        missing = [name for name in names if name not in configured]
        if missing and state == "present" and not create_missing:
            raise ContainerdConfigError(
                "%s: CRI runtime '%s' is not configured under '%s' (configured: %s); set create_missing=true "
                "to add it." % (source, missing[0], toml_path(rpath), ", ".join(configured) or "none")
            )

    plan.runtimes = list(names)
    try:
        tables = _scan(text)
    except _ScanError as exc:
        raise ContainerdConfigError(
            "%s: cannot locate the lines to edit (%s), so nothing was changed; please report this file's "
            "layout to the rdma.node developers." % (source, exc)
        ) from None
    layout = _layout(text, tables)
    runtimes_table = _get_table(data, rpath, source) or {}
    expected = copy.deepcopy(data)
    splices = []
    for name in names:
        runtime_path = rpath + (name,)
        key_path = runtime_path + (BASE_RUNTIME_SPEC,)
        runtime = runtimes_table.get(name)
        if state == "absent":
            if not runtime or not runtime.get(BASE_RUNTIME_SPEC):
                continue  # missing or "" (containerd's "no base spec")
            entry = _find_entry(tables, key_path)
            if entry is None:
                raise _unsupported_form(source, runtime_path)
            splices.append(_Splice(entry.line_start, entry.line_end, ""))
            del _get_table(expected, runtime_path, source)[BASE_RUNTIME_SPEC]
            plan.runtimes_changed.append(name)
            continue
        if runtime is None:
            splices.append(_create_runtime(text, tables, layout, runtime_path, base_runtime_spec))
            _set_path(expected, runtime_path, {"runtime_type": DEFAULT_RUNTIME_TYPE,
                                               BASE_RUNTIME_SPEC: base_runtime_spec})
            plan.runtimes_created.append(name)
            plan.runtimes_changed.append(name)
            continue
        current = runtime.get(BASE_RUNTIME_SPEC)
        if current == base_runtime_spec:
            continue
        if current is None:
            splices.append(_insert_key(text, tables, layout, runtime_path, base_runtime_spec, source))
        else:
            entry = _find_entry(tables, key_path)
            if entry is None:
                raise _unsupported_form(source, runtime_path)
            style = "literal" if entry.raw_value.startswith("'") else "basic"
            splices.append(_Splice(entry.value_start, entry.value_end, _render_string(base_runtime_spec, style)))
        _set_path(expected, key_path, base_runtime_spec)
        plan.runtimes_changed.append(name)

    if splices:
        try:
            plan.new_text = _apply(text, splices)
        except _ScanError as exc:
            raise ContainerdConfigError("%s: %s, so nothing was changed." % (source, exc)) from None
        _verify(plan.new_text, expected, source)
    return plan


# --------------------------------------------------------------------------------------------------
# Validation with the node's containerd
# --------------------------------------------------------------------------------------------------

def native_version(default_config: str) -> int:
    """The schema the node's containerd writes (``containerd config default``) and so reads natively."""
    return config_version(parse_config(default_config, "containerd config default"), "containerd config default")


def validation_text(text: str, config_dir: str) -> str:
    """``text`` with relative ``imports`` made absolute, for a copy checked outside ``config_dir``.

    containerd joins a relative import to the directory of the file that names it, so a copy in a
    temporary directory would miss them; a relative glob is matched against containerd's working
    directory (``/`` for the service), which the validation command also uses, so it stays.
    """
    data = parse_config(text, "config.toml")
    imports = data.get("imports")
    if not isinstance(imports, list):
        return text
    fixed = [
        item if (not isinstance(item, str) or posixpath.isabs(item) or any(ch in item for ch in _GLOB_CHARS))
        else posixpath.normpath(posixpath.join(config_dir, item))
        for item in imports
    ]
    if fixed == imports:
        return text
    doc = tomlkit.parse(text)
    doc["imports"] = fixed
    return doc.as_string()


def check_dump(dump: str, expected: t.Mapping[str, t.Optional[str]], source: str, containerd: str) -> int:
    """Check containerd's ``config dump`` of the result: each runtime must carry the expected base spec.

    ``expected`` maps runtime names to the spec path (``None`` for state=absent: no base spec). The dump
    is containerd's merged view, imports included, in the schema the node's containerd speaks.
    Returns that schema version.
    """
    data = parse_config(dump, "%s config dump" % containerd)
    version = config_version(data, "%s config dump" % containerd)
    runtimes = _get_table(data, runtimes_path(version), "%s config dump" % containerd) or {}
    imports = [item for item in data.get("imports") or [] if isinstance(item, str)]
    hint = ""
    if len(imports) > 1:
        hint = "; a file it imports (%s) probably replaces that section" % ", ".join(imports[1:])
    for name, want in expected.items():
        runtime = runtimes.get(name)
        if runtime is None and want is None:
            continue
        if not isinstance(runtime, dict):
            raise ContainerdConfigError(
                "%s reads %s without a CRI runtime '%s' (config dump)%s; nothing was changed." % (
                    containerd, source, name, hint)
            )
        got = runtime.get(BASE_RUNTIME_SPEC) or None
        if got != want:
            raise ContainerdConfigError(
                "%s reads %s with base_runtime_spec %s for runtime '%s', not %s (config dump)%s; nothing was "
                "changed." % (containerd, source, "'%s'" % got if got else "unset", name,
                              "'%s'" % want if want else "unset", hint)
            )
    return version
