# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan edits of ``process.rlimits`` in an OCI runtime spec (containerd's ``base_runtime_spec``).

The spec file is edited as text: only the ``rlimits`` array is rewritten (in the indentation style
detected from the file), so key order, unknown keys, hooks, mounts, escapes and number spellings
elsewhere stay byte-for-byte.  When the file is rebuilt from ``ctr oci spec`` (missing file or
``regenerate``), the fresh spec is re-serialised in the old file's style so that a diff shows what
changed in content, not in whitespace.

All functions are pure: they take text and plain data and return new text and a report.
"""

from __future__ import annotations

import json
import re

from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._rlimits import format_rlimit_value

DEFAULT_NOFILE_FLOOR = 1048576
CTR_SOURCE = "the output of `ctr oci spec`"

_DECODER = json.JSONDecoder()
_WHITESPACE = lazy_compile(r"[ \t\n\r]*")


class SpecError(ValueError):
    """A spec text that cannot be edited; the message is one sentence naming the file and key."""


class _ConstantError(ValueError):
    pass


def _reject_constant(name):
    """Python's json reads NaN, Infinity and -Infinity; JSON (and containerd, in Go) does not."""
    raise _ConstantError(name)


def _json_type(value) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def load_spec(text: str, source: str) -> dict:
    """Parse ``text`` as an OCI spec; raise :class:`SpecError` unless it is a JSON object."""
    if not text.strip():
        raise SpecError("%s is empty; expected an OCI runtime spec (a JSON object)." % source)
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise SpecError("%s nests arrays or objects too deeply to be an OCI runtime spec; expected a JSON object "
                        "a few levels deep." % source) from None
    except _ConstantError as exc:
        raise SpecError("%s holds %s, which is not JSON and which containerd's parser rejects; expected numbers "
                        "only." % (source, exc)) from None
    except ValueError as exc:
        detail = getattr(exc, "msg", str(exc))
        line = getattr(exc, "lineno", None)
        if line is not None:
            raise SpecError(
                "%s is not valid JSON: %s at line %d, column %d." % (source, detail, line, exc.colno)
            )
        raise SpecError("%s is not valid JSON: %s." % (source, detail))
    if not isinstance(data, dict):
        raise SpecError(
            "%s holds a JSON %s, not an object; an OCI runtime spec is a JSON object." % (source, _json_type(data))
        )
    return data


# --------------------------------------------------------------------------------------------------
# Style: indentation, separators and line endings of the file
# --------------------------------------------------------------------------------------------------


def detect_style(text: str) -> dict:
    """Return the serialisation style of a JSON text.

    ``indent`` is the text of one indentation level (``"    "``, ``"  "``, ``"\\t"``) or None for a
    single-line document; ``key_sep``/``item_sep`` are the separators; ``newline`` is ``"\\n"`` or
    ``"\\r\\n"``; ``final_newline`` says whether the text ends with a line break.
    """
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text.strip()
    key_sep = ": " if re.search(r'"[ \t]*:[ \t\r\n]', body) else ":"
    style = {
        "indent": None,
        "key_sep": key_sep,
        "item_sep": ",",
        "newline": newline,
        "final_newline": text.endswith("\n"),
    }
    if "\n" not in body:
        if re.search(r'[}\]"\del],[ \t]', body):
            style["item_sep"] = ", "
        elif not re.search(r'[}\]"\del],[^ \t]', body) and key_sep == ": ":
            style["item_sep"] = ", "
        return style
    lines = body.splitlines()
    indent = ""
    for line in lines[1:]:
        if line.strip():
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            break
    style["indent"] = indent
    return style


def _same_layout(left: dict, right: dict) -> bool:
    return all(left[key] == right[key] for key in ("indent", "key_sep", "item_sep", "newline"))


def _render(value, style: dict, lead: str) -> str:
    """Serialise ``value`` in ``style``; continuation lines start with ``lead`` (the key's line indent)."""
    if style["indent"] is None:
        return json.dumps(value, separators=(style["item_sep"], style["key_sep"]), ensure_ascii=False)
    text = json.dumps(value, indent=style["indent"], separators=(",", style["key_sep"]), ensure_ascii=False)
    lines = text.split("\n")
    return lines[0] + "".join(style["newline"] + lead + line for line in lines[1:])


def restyle(text: str, style: dict, source: str = CTR_SOURCE) -> str:
    """Re-serialise a whole JSON document in ``style`` (used for specs rebuilt from ``ctr oci spec``)."""
    rendered = _render(load_spec(text, source), style, "")
    return rendered + (style["newline"] if style["final_newline"] else "")


# --------------------------------------------------------------------------------------------------
# Locating values in the text
# --------------------------------------------------------------------------------------------------


def _skip(text: str, pos: int) -> int:
    return _WHITESPACE.match(text, pos).end()


def _members(text: str, start: int):
    """Return ``([(key, key_pos, value_start, value_end), ...], close_pos)`` of the object at ``start``.

    ``text`` must already be known to be valid JSON.
    """
    members = []
    pos = _skip(text, start + 1)
    if text[pos] == "}":
        return members, pos
    while True:
        key_pos = pos
        key, pos = json.decoder.scanstring(text, pos + 1)
        pos = _skip(text, pos)
        pos = _skip(text, pos + 1)  # the colon
        value_start = pos
        value_end = _DECODER.raw_decode(text, pos)[1]
        members.append((key, key_pos, value_start, value_end))
        pos = _skip(text, value_end)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)
            continue
        return members, pos


def _line_lead(text: str, pos: int) -> str:
    """The whitespace that starts the line holding ``pos``."""
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _last(members, key):
    found = None
    for member in members:
        if member[0] == key:
            found = member  # JSON decoders keep the last of duplicate keys; so do we
    return found


def _set_member(text: str, obj_start: int, key: str, value, style: dict) -> str:
    """Return ``text`` with ``key`` of the object at ``obj_start`` set to ``value`` (replaced or appended)."""
    members, close = _members(text, obj_start)
    existing = _last(members, key)
    if existing is not None:
        lead = _line_lead(text, existing[1])
        return text[: existing[2]] + _render(value, style, lead) + text[existing[3]:]
    name = json.dumps(key, ensure_ascii=False)
    if style["indent"] is None:
        if members:
            insert = style["item_sep"] + name + style["key_sep"] + _render(value, style, "")
            return text[: members[-1][3]] + insert + text[members[-1][3]:]
        return text[: obj_start + 1] + name + style["key_sep"] + _render(value, style, "") + text[close:]
    newline = style["newline"]
    if members:
        lead = _line_lead(text, members[-1][1])
        insert = "," + newline + lead + name + style["key_sep"] + _render(value, style, lead)
        return text[: members[-1][3]] + insert + text[members[-1][3]:]
    outer = _line_lead(text, obj_start)
    lead = outer + style["indent"]
    inner = newline + lead + name + style["key_sep"] + _render(value, style, lead) + newline + outer
    return text[: obj_start + 1] + inner + text[close:]


def _with_rlimits(text: str, rlimits: list, style: dict) -> str:
    """Return ``text`` with ``process.rlimits`` set to ``rlimits``, creating ``process`` if needed."""
    root = _skip(text, 0)
    members, dummy = _members(text, root)
    process = _last(members, "process")
    if process is None or text[process[2]] != "{":  # missing, or "process": null
        return _set_member(text, root, "process", {"rlimits": rlimits}, style)
    return _set_member(text, process[2], "rlimits", rlimits, style)


# --------------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------------


def current_rlimits(spec: dict, source: str):
    """Return ``process.rlimits`` of a parsed spec (None when absent), checking its shape."""
    process = spec.get("process")
    if process is None:
        return None
    if not isinstance(process, dict):
        raise SpecError("%s: process is a JSON %s, expected an object." % (source, _json_type(process)))
    rlimits = process.get("rlimits")
    if rlimits is None:
        return None
    if not isinstance(rlimits, list):
        raise SpecError(
            "%s: process.rlimits is a JSON %s, expected an array of {type, hard, soft} objects."
            % (source, _json_type(rlimits))
        )
    for index, entry in enumerate(rlimits):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise SpecError(
                "%s: process.rlimits[%d] is not an object with a string type; expected {type, hard, soft}."
                % (source, index)
            )
    return rlimits


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown_limit(value):
    """An rlimit value of the spec as the messages show it (a malformed one as written)."""
    return format_rlimit_value(value) if _is_count(value) else repr(value)


def apply_rlimits(current: list, desired: list, nofile_floor: int, source: str) -> tuple:
    """Return ``(new_rlimits, nofile_raised, messages)`` for normalised ``desired`` entries.

    Entries already in the spec keep their place and key order; new ones are appended in the
    order given.  Duplicates of a managed type are folded into the first one.  When the user does
    not manage RLIMIT_NOFILE, a NOFILE entry below ``nofile_floor`` is raised to it.
    """
    result = [dict(entry) for entry in current]
    messages = []
    managed = set()
    for item in desired:
        rtype = item["type"]
        managed.add(rtype)
        positions = [index for index, entry in enumerate(result) if entry.get("type") == rtype]
        if item["state"] == "absent":
            result = [entry for entry in result if entry.get("type") != rtype]
            continue
        if not positions:
            result.append({"type": rtype, "hard": item["hard"], "soft": item["soft"]})
            continue
        entry = result[positions[0]]
        if (entry.get("soft"), entry.get("hard")) != (item["soft"], item["hard"]):
            # The value replaced is said: someone chose it, and the spec keeps no trace of it.
            messages.append("%s was soft %s/hard %s in %s; now soft %s/hard %s." % (
                rtype, _shown_limit(entry.get("soft")), _shown_limit(entry.get("hard")), source,
                format_rlimit_value(item["soft"]), format_rlimit_value(item["hard"])))
        entry["hard"] = item["hard"]
        entry["soft"] = item["soft"]
        for index in reversed(positions[1:]):
            del result[index]
        if len(positions) > 1:
            messages.append("%s appeared %d times in %s; kept one entry." % (rtype, len(positions), source))

    nofile_raised = False
    if nofile_floor and "RLIMIT_NOFILE" not in managed:
        for index, entry in enumerate(result):
            if entry.get("type") != "RLIMIT_NOFILE":
                continue
            soft, hard = entry.get("soft"), entry.get("hard")
            if not (_is_count(soft) and _is_count(hard)):
                raise SpecError(
                    "%s: process.rlimits[%d] (RLIMIT_NOFILE) needs integer soft and hard values to apply "
                    "nofile_floor, got soft %r and hard %r; manage RLIMIT_NOFILE in rlimits instead."
                    % (source, index, soft, hard)
                )
            if soft >= nofile_floor and hard >= nofile_floor:
                continue
            if nofile_raised is False:
                nofile_raised = {"soft": soft, "hard": hard}
            entry["hard"] = max(hard, nofile_floor)
            entry["soft"] = max(soft, nofile_floor)
            messages.append(
                "RLIMIT_NOFILE raised from soft %s/hard %s to soft %s/hard %s (nofile_floor); "
                "list RLIMIT_NOFILE in rlimits to choose the value yourself."
                % (format_rlimit_value(soft), format_rlimit_value(hard),
                   format_rlimit_value(entry["soft"]), format_rlimit_value(entry["hard"]))
            )
    return result, nofile_raised, messages


def plan_rlimits(text: str, desired: list, nofile_floor: int = DEFAULT_NOFILE_FLOOR, source: str = "the spec") -> dict:
    """Plan the rlimits edit of one spec text.

    Returns ``text`` (new content, identical to the input when nothing changes), ``changed``,
    ``rlimits`` (the array as it will be written), ``nofile_raised`` (False or the old
    ``{soft, hard}``) and ``messages``.
    """
    spec = load_spec(text, source)
    current = current_rlimits(spec, source)
    new_rlimits, nofile_raised, messages = apply_rlimits(current or [], desired, nofile_floor, source)
    if new_rlimits == (current or []) and (current is not None or not new_rlimits):
        new_text = text
    else:
        new_text = _with_rlimits(text, new_rlimits, detect_style(text))
    return {
        "text": new_text,
        "changed": new_text != text,
        "rlimits": new_rlimits,
        "nofile_raised": nofile_raised,
        "messages": messages,
    }


def plan_spec(current_text, default_text, desired: list, nofile_floor: int, regenerate: bool, path: str) -> dict:
    """Plan the whole file: start from the file, or from ``ctr oci spec`` when missing or regenerating.

    ``current_text`` is None when the file does not exist; ``default_text`` (the output of
    ``ctr oci spec``) is only read when the file is missing or ``regenerate`` is true.  Returns the
    :func:`plan_rlimits` report plus ``created`` and ``regenerated``; ``changed`` compares with the
    file as it is.
    """
    if current_text is not None:
        load_spec(current_text, path)
    if current_text is None or regenerate:
        if default_text is None:
            raise SpecError("%s must be rebuilt but no default spec was given." % path)
        load_spec(default_text, CTR_SOURCE)
        base = default_text
        source = CTR_SOURCE
        if current_text is not None:
            style = detect_style(current_text)
            if not _same_layout(detect_style(default_text), style):
                base = restyle(default_text, style)
    else:
        base = current_text
        source = path
    plan = plan_rlimits(base, desired, nofile_floor, source)
    plan["created"] = current_text is None
    plan["regenerated"] = bool(regenerate and current_text is not None)
    plan["changed"] = current_text is None or plan["text"] != current_text
    return plan
