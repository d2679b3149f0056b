# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd drop-ins for ``Limit*=`` directives: render ours, find who else sets the same directive.

How systemd (252) assembles a unit, which is what :func:`analyze` reproduces from files alone:

* The unit file is the first ``<unit>`` found along the search path (``/etc/systemd/system.control``,
  ``/run/systemd/system.control``, ``/run/systemd/transient``, ``/run/systemd/generator.early``,
  ``/etc/systemd/system``, ``/etc/systemd/system.attached``, ``/run/systemd/system``,
  ``/run/systemd/system.attached``, ``/run/systemd/generator``, ``/usr/local/lib/systemd/system``,
  ``/lib/systemd/system``, ``/usr/lib/systemd/system``, ``/run/systemd/generator.late``).
* Drop-ins are the ``*.conf`` files of every ``<unit>.d/`` on that path, plus ``<template>@.<type>.d/``
  for instances, the dash-prefix directories (``foo-.service.d/`` for ``foo-bar.service``) and the
  type-wide ``service.d/``.  A file name found in several directories is taken from the one earliest
  on the search path (so ``/etc`` masks ``/run`` masks ``/usr/lib``); a drop-in linked to
  ``/dev/null`` is masked.  The remaining files are applied sorted by file name, whatever their
  directory, after the unit file; for a directive set more than once, the last assignment wins.
"""

from __future__ import annotations

import os

from ansible_collections.rdma.node.plugins.module_utils._files import read_lenient
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RlimitError, parse_systemd_limit

SEARCH_PATHS = (
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/etc/systemd/system",
    "/etc/systemd/system.attached",
    "/run/systemd/system",
    "/run/systemd/system.attached",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/run/systemd/generator.late",
)
DROPIN_BASE = "/etc/systemd/system"
DEFAULT_DROPIN_NAME = "50-rdma-node-limits"

UNIT_TYPES = (
    "service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope",
)
# Resource limits belong to the execution context, which only these unit types have.
LIMIT_SECTIONS = {"service": "Service", "socket": "Socket", "mount": "Mount", "swap": "Swap"}

HEADER = "# Managed by rdma.node.systemd_limits: local changes to this file are overwritten."

_UNIT_NAME = lazy_compile(r"^[A-Za-z0-9:_.\\@-]+$")
_SECTION = lazy_compile(r"^\[([^\]]+)\]\s*$")


# A property of systemctl show: a name of letters and digits, then "=" ("LimitMEMLOCK=8388608").
_SHOW_PROPERTY = lazy_compile(r"^\s*([A-Za-z][A-Za-z0-9]*)=(.*)$")


class DropinError(ValueError):
    """A unit or drop-in name that cannot be used; the message is one sentence."""


def normalize_unit(unit) -> str:
    """Return the full unit name (``containerd`` becomes ``containerd.service``) after checking it."""
    if not isinstance(unit, str) or not unit.strip():
        raise DropinError("unit must be a unit name such as containerd.service, got %r." % (unit,))
    name = unit.strip()
    if "/" in name or not _UNIT_NAME.match(name) or len(name) > 255:
        raise DropinError(
            "unit %r is not a valid unit name; use letters, digits and :-_.\\@ only, without a path." % unit
        )
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    if suffix not in UNIT_TYPES:
        name += ".service"
        suffix = "service"
    if suffix not in LIMIT_SECTIONS:
        raise DropinError(
            "unit %s is a .%s unit; Limit* directives only apply to service, socket, mount and swap units."
            % (name, suffix)
        )
    if name.startswith(".") or name.startswith("@") or name.startswith("-"):
        raise DropinError("unit %r is not a valid unit name." % unit)
    return name


def unit_section(unit: str) -> str:
    """The section that holds ``Limit*=`` for this unit (``Service`` for ``containerd.service``)."""
    return LIMIT_SECTIONS[unit.rsplit(".", 1)[1]]


def dropin_filename(name) -> str:
    """Return ``50-rdma-node-limits.conf`` for ``50-rdma-node-limits`` after checking the name."""
    if not isinstance(name, str) or not name.strip():
        raise DropinError("dropin_name must be a file name such as 50-rdma-node-limits, got %r." % (name,))
    name = name.strip()
    if "/" in name or name.startswith(".") or any(ord(char) < 32 or char == "\x7f" for char in name):
        raise DropinError(
            "dropin_name %r must be a plain file name (no directories, not hidden, no control characters or NUL)." % name
        )
    return name if name.endswith(".conf") else name + ".conf"


def dropin_path(root: str, unit: str, filename: str) -> str:
    """Where our drop-in lives: ``<root>/etc/systemd/system/<unit>.d/<filename>``."""
    return os.path.join(root_join(root, DROPIN_BASE), unit + ".d", filename)


def root_join(root: str, path: str) -> str:
    """``path`` (absolute, as on the node) inside the tree at ``root``."""
    if not root or root == "/":
        return path
    return os.path.join(root, path.lstrip("/"))


def render_dropin(unit: str, limits: dict) -> str:
    """Render our drop-in for normalised ``limits`` (``{"LimitMEMLOCK": "infinity"}``)."""
    lines = [HEADER, "[%s]" % unit_section(unit)]
    lines.extend("%s=%s" % (directive, value) for directive, value in limits.items())
    return "\n".join(lines) + "\n"


def parse_unit_text(text: str) -> list:
    """Return ``[(section, key, value, line_number), ...]`` for the assignments of a unit file.

    Follows systemd's syntax: ``#`` and ``;`` start comments, a trailing backslash continues the
    line (comment lines inside a continuation are skipped), keys and values are stripped.
    """
    assignments = []
    section = None
    pending = None
    pending_line = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if pending is not None:
            if line.startswith("#") or line.startswith(";"):
                continue
            if line.endswith("\\"):
                pending += " " + line[:-1]
                continue
            line = pending + " " + line
            pending = None
        elif not line or line.startswith("#") or line.startswith(";"):
            continue
        elif line.endswith("\\"):
            pending = line[:-1]
            pending_line = number
            continue
        else:
            pending_line = number
        match = _SECTION.match(line)
        if match:
            section = match.group(1)
            continue
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        assignments.append((section, key.strip(), value.strip(), pending_line))
    if pending is not None:
        key, dummy, value = pending.partition("=")
        if dummy:
            assignments.append((section, key.strip(), value.strip(), pending_line))
    return assignments


def _unit_name_dirs(unit: str) -> list:
    """Names of the ``.d`` directories that apply to ``unit``, most specific first (without type.d).

    ``foo-bar@x.service`` gives ``foo-bar@x.service``, ``foo-bar@.service``, ``foo-.service``.
    """
    names = [unit]
    base, unit_type = unit.rsplit(".", 1)
    prefix_base = base
    if "@" in base:
        prefix_base = base.split("@", 1)[0]
        if not base.endswith("@"):
            names.append(prefix_base + "@." + unit_type)
    parts = prefix_base.split("-")
    for count in range(len(parts) - 1, 0, -1):
        names.append("-".join(parts[:count]) + "-." + unit_type)
    return names


def _search_dirs(root: str) -> list:
    """The search path inside ``root``, dropping directories that resolve to one seen before."""
    seen = set()
    result = []
    for path in SEARCH_PATHS:
        real = os.path.realpath(root_join(root, path))
        if real in seen:
            continue
        seen.add(real)
        result.append((path, root_join(root, path)))
    return result


def _is_masked(path: str) -> bool:
    try:
        return os.path.islink(path) and os.readlink(path) == "/dev/null" or os.path.realpath(path) == "/dev/null"
    except OSError:
        return False


def find_unit_file(root: str, unit: str):
    """The unit file systemd would load for ``unit`` under ``root`` (or its template), or None."""
    base, unit_type = unit.rsplit(".", 1)
    candidates = [unit]
    if "@" in base and not base.endswith("@"):
        candidates.append(base.split("@", 1)[0] + "@." + unit_type)
    for name in candidates:
        for dummy, directory in _search_dirs(root):
            path = os.path.join(directory, name)
            if os.path.lexists(path):
                return path
    return None


def _dropin_candidates(root: str, unit: str, extra: dict) -> dict:
    """Map each drop-in file name to the path systemd takes it from (earliest on the search path).

    Like systemd, directories are named by their resolved path (``/lib/...`` on a merged-/usr
    system is ``/usr/lib/...``) and a directory reached twice counts once.
    """
    dirs = []
    names = _unit_name_dirs(unit)
    search = _search_dirs(root)
    for dummy, directory in search:
        for name in names:
            dirs.append(os.path.join(directory, name + ".d"))
    for dummy, directory in search:
        dirs.append(os.path.join(directory, unit.rsplit(".", 1)[1] + ".d"))
    planned = {}
    for name, path in extra.items():
        planned.setdefault(os.path.realpath(os.path.dirname(path)), []).append(name)
    chosen = {}
    seen = set()
    for directory in dirs:
        real = os.path.realpath(directory)
        if real in seen:
            continue
        seen.add(real)
        entries = set(planned.get(real, ()))
        if os.path.isdir(real):
            try:
                entries.update(entry for entry in os.listdir(real) if entry.endswith(".conf"))
            except OSError:
                pass
        for entry in sorted(entries):
            if entry not in chosen:
                chosen[entry] = os.path.join(real, entry)
    return chosen


def list_dropins(root: str, unit: str, extra: dict = None) -> list:
    """Return the drop-ins of ``unit`` in the order systemd applies them: ``[(file_name, path), ...]``.

    ``extra`` maps a file name to a path to treat as present (our drop-in before it is written); it
    takes its normal place on the search path.  Masked names (links to /dev/null) are left out.
    """
    chosen = _dropin_candidates(root, unit, extra or {})
    return [(name, chosen[name]) for name in sorted(chosen) if not _is_masked(chosen[name])]


def _read(path: str):
    """Another unit file or drop-in: only a regular file, bounded; a FIFO there must not block us."""
    data = read_lenient(path, "a systemd unit file or drop-in")
    if data is None:
        return None
    return data.decode("utf-8", "replace")


def _settings(path: str, section: str, directives, text: str = None) -> dict:
    """The last value of each of ``directives`` set in ``section`` of the file at ``path``."""
    if text is None:
        text = _read(path)
    found = {}
    if text is None:
        return found
    for sect, key, value, line in parse_unit_text(text):
        if sect == section and key in directives:
            found[key] = (value, line)
    return found


def analyze(root: str, unit: str, filename: str, directives, our_text: str = None) -> dict:
    """Report who else sets ``directives`` for ``unit`` and whether anyone wins over our drop-in.

    ``our_text`` is the content our drop-in will have (None when it is being removed).  Returns
    ``unit_file``, ``masked`` (the unit links to /dev/null), ``dropins`` (applied order),
    ``overridden_by`` (later files that set one of the directives to a valid value: they win),
    ``also_set_in`` (the unit file and earlier drop-ins that set them: ours wins),
    ``masked_by`` (a same-named drop-in earlier on the search path that hides ours) and
    ``warnings``.
    """
    section = unit_section(unit)
    directives = list(directives)
    ours = dropin_path(root, unit, filename)
    ours = os.path.join(os.path.realpath(os.path.dirname(ours)), filename)
    extra = {filename: ours} if our_text is not None else {}
    order = list_dropins(root, unit, extra)
    unit_file = find_unit_file(root, unit)
    report = {
        "unit_file": unit_file,
        "masked": bool(unit_file and _is_masked(unit_file)),
        "dropins": [path for dummy, path in order],
        "overridden_by": [],
        "also_set_in": [],
        "masked_by": None,
        "warnings": [],
    }
    if unit_file is None:
        report["warnings"].append(
            "No unit file for %s was found under %s; the drop-in takes effect once the unit is installed."
            % (unit, root or "/")
        )
    elif report["masked"]:
        report["warnings"].append("%s is masked (%s links to /dev/null); its limits do not apply." % (unit, unit_file))
    if our_text is None or not directives:
        return report
    winner = _dropin_candidates(root, unit, extra).get(filename)
    if winner != ours:
        report["masked_by"] = winner
        report["warnings"].append(
            "%s hides our drop-in %s (same file name, earlier on systemd's search path)." % (report["masked_by"], ours)
        )
    if unit_file and not report["masked"]:
        for directive, (value, line) in sorted(_settings(unit_file, section, directives).items()):
            report["also_set_in"].append({"path": unit_file, "line": line, "directive": directive, "value": value})
    after_ours = False
    for name, path in order:
        if path == ours:
            after_ours = True
            continue
        for directive, (value, line) in sorted(_settings(path, section, directives).items()):
            entry = {"path": path, "line": line, "directive": directive, "value": value}
            if not after_ours:
                report["also_set_in"].append(entry)
                continue
            try:
                parse_systemd_limit(directive, value, as_systemd_reads=True)
            except RlimitError:
                report["warnings"].append(
                    "%s line %d sets %s=%s after our drop-in, a value systemd cannot parse and ignores."
                    % (path, line, directive, value)
                )
                continue
            report["overridden_by"].append(entry)
    for entry in report["overridden_by"]:
        report["warnings"].append(
            "%s line %d sets %s=%s and is applied after our drop-in, so it wins."
            % (entry["path"], entry["line"], entry["directive"], entry["value"])
        )
    return report


def parse_systemctl_show(text: str) -> dict:
    """Turn ``systemctl show -p ...`` output (``Key=Value`` lines) into a dict.

    systemctl prints a value as it is, so an ``ExecStart={ ... argv[]=... }`` whose argument holds a
    newline goes on over the next lines: while its braces are open, a line continues it. Any other
    line that is not ``Name=value`` (a warning mixed in) is left out.
    """
    result = {}
    key = None
    for line in text.splitlines():
        if key is not None and result[key].count("{") > result[key].count("}"):
            result[key] += "\n" + line.rstrip()
            continue
        match = _SHOW_PROPERTY.match(line)
        key = match.group(1) if match else None
        if match:
            result[key] = match.group(2).strip()
    return result
