# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource limit names and values, as OCI runtimes and systemd spell them.

Two dialects are handled here:

* OCI runtime specs (``process.rlimits``) hold plain unsigned 64-bit integers; ``unlimited`` is
  ``RLIM_INFINITY`` written as 18446744073709551615, which is what runc passes to setrlimit(2).
  Users may write integers, ``unlimited``/``infinity`` or a number with a 1024-based suffix.
* systemd ``Limit*=`` directives take ``infinity``, a value in the unit systemd expects for that
  resource (bytes with K/M/G/T/P/E suffixes, plain counts, time spans, nice levels) and
  ``soft:hard`` pairs.  :func:`parse_systemd_limit` accepts what systemd 252 accepts (checked
  against ``systemd-analyze verify`` in the integration tests) so a bad value is caught before
  systemd would silently ignore it.

Every error is a :class:`RlimitError` whose message is one sentence naming the offending value.
"""

from __future__ import annotations

import re

from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

# RLIM_INFINITY on Linux: (rlim_t) -1.  OCI specs spell "unlimited" this way.
RLIM_INFINITY = 18446744073709551615

# The rlimits runc knows (Linux setrlimit resources), in the order of <sys/resource.h>.
RLIMIT_TYPES = (
    "RLIMIT_CPU",
    "RLIMIT_FSIZE",
    "RLIMIT_DATA",
    "RLIMIT_STACK",
    "RLIMIT_CORE",
    "RLIMIT_RSS",
    "RLIMIT_NPROC",
    "RLIMIT_NOFILE",
    "RLIMIT_MEMLOCK",
    "RLIMIT_AS",
    "RLIMIT_LOCKS",
    "RLIMIT_SIGPENDING",
    "RLIMIT_MSGQUEUE",
    "RLIMIT_NICE",
    "RLIMIT_RTPRIO",
    "RLIMIT_RTTIME",
)

_UNLIMITED_WORDS = ("unlimited", "infinity")
_BINARY_SUFFIXES = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_OCI_VALUE = lazy_compile(r"^\+?([0-9]{1,20})\s*([KMGTPE]?)$", re.IGNORECASE)


class RlimitError(ValueError):
    """A resource limit name or value that cannot be used; the message is one sentence."""


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------------------------------
# OCI runtime spec values
# --------------------------------------------------------------------------------------------------


def normalize_rlimit_type(name, where: str = "type") -> str:
    """Return the OCI name (``RLIMIT_MEMLOCK``) for ``RLIMIT_MEMLOCK``, ``memlock`` or ``LimitMEMLOCK``."""
    if not isinstance(name, str) or not name.strip():
        raise RlimitError(
            "%s must be a resource limit name such as RLIMIT_MEMLOCK, got %s." % (where, _short(name))
        )
    key = name.strip().upper()
    for prefix in ("RLIMIT_", "LIMIT"):
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    canonical = "RLIMIT_" + key
    if canonical not in RLIMIT_TYPES:
        raise RlimitError(
            "%s %s is not a Linux resource limit; expected one of %s."
            % (where, _short(name), ", ".join(RLIMIT_TYPES))
        )
    return canonical


def parse_rlimit_value(value, where: str = "value") -> int:
    """Turn ``unlimited``, ``infinity``, ``64K``, ``8M``, ``"4096"`` or ``4096`` into the integer runc expects.

    Suffixes K, M, G, T, P and E multiply by powers of 1024.  Negative numbers, fractions, booleans
    and values above 18446744073709551615 are rejected.
    """
    if isinstance(value, bool) or value is None:
        raise RlimitError(
            "%s must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got %s."
            % (where, _short(value))
        )
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        raise RlimitError("%s must be a whole number, got the fraction %s." % (where, _short(value)))
    elif isinstance(value, str):
        text = value.strip()
        if text.lower() in _UNLIMITED_WORDS:
            return RLIM_INFINITY
        if text.startswith("-") and text[1:].strip()[:1].isdigit():
            raise RlimitError("%s must not be negative, got %s." % (where, _short(value)))
        match = _OCI_VALUE.match(text)
        if not match:
            raise RlimitError(
                "%s must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got %s."
                % (where, _short(value))
            )
        number = int(match.group(1)) * 1024 ** _BINARY_SUFFIXES[match.group(2).upper()]
    else:
        raise RlimitError(
            "%s must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got a %s."
            % (where, type(value).__name__)
        )
    if number < 0:
        raise RlimitError("%s must not be negative, got %s." % (where, _short(value)))
    if number > RLIM_INFINITY:
        raise RlimitError(
            "%s %s is larger than 18446744073709551615 (unlimited), the largest value an rlimit can hold."
            % (where, _short(value))
        )
    return number


def format_rlimit_value(number: int) -> str:
    """Return ``unlimited`` for RLIM_INFINITY, else the decimal number (for messages)."""
    return "unlimited" if number == RLIM_INFINITY else str(number)


def normalize_rlimits(value, where: str = "rlimits") -> list:
    """Validate a list of ``{type, soft, hard, state}`` dicts and return them normalised.

    Each result has ``type`` (``RLIMIT_*``), ``state`` and, for ``present``, integer ``soft`` and
    ``hard``.  When only one of ``soft``/``hard`` is given it is used for both, as ``ulimit`` does.
    """
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise RlimitError(
            "%s must be a list of dicts with type, soft, hard and state, got a %s."
            % (where, type(value).__name__)
        )
    result = []
    seen = {}
    for index, entry in enumerate(value):
        item = "%s[%d]" % (where, index)
        if not isinstance(entry, dict):
            raise RlimitError(
                "%s must be a dict with type, soft, hard and state, got %s." % (item, _short(entry))
            )
        unknown = sorted(set(entry) - {"type", "soft", "hard", "state"})
        if unknown:
            raise RlimitError(
                "%s has unknown key(s) %s; expected type, soft, hard and state." % (item, ", ".join(unknown))
            )
        rtype = normalize_rlimit_type(entry.get("type"), "%s.type" % item)
        if rtype in seen:
            raise RlimitError(
                "%s repeats %s, already given in %s[%d]; list each type once." % (item, rtype, where, seen[rtype])
            )
        seen[rtype] = index
        state = entry.get("state") or "present"
        if state not in ("present", "absent"):
            raise RlimitError("%s.state must be present or absent, got %s." % (item, _short(state)))
        if state == "absent":
            result.append({"type": rtype, "state": "absent"})
            continue
        soft = entry.get("soft")
        hard = entry.get("hard")
        if soft is None and hard is None:
            raise RlimitError("%s (%s) needs a soft or a hard value." % (item, rtype))
        soft_value = parse_rlimit_value(soft if soft is not None else hard, "%s.soft" % item)
        hard_value = parse_rlimit_value(hard if hard is not None else soft, "%s.hard" % item)
        if soft_value > hard_value:
            raise RlimitError(
                "%s (%s) has soft %s above hard %s; the soft limit must not exceed the hard limit."
                % (item, rtype, format_rlimit_value(soft_value), format_rlimit_value(hard_value))
            )
        result.append({"type": rtype, "soft": soft_value, "hard": hard_value, "state": "present"})
    return result


# --------------------------------------------------------------------------------------------------
# systemd Limit*= values
# --------------------------------------------------------------------------------------------------

# How systemd parses each resource (src/basic/rlimit-util.c): sizes in bytes with suffixes, plain
# counts, CPU time in seconds, real-time CPU time in microseconds, nice levels.
_SYSTEMD_KIND = {
    "CPU": "sec",
    "FSIZE": "size",
    "DATA": "size",
    "STACK": "size",
    "CORE": "size",
    "RSS": "size",
    "NPROC": "count",
    "NOFILE": "count",
    "MEMLOCK": "size",
    "AS": "size",
    "LOCKS": "count",
    "SIGPENDING": "count",
    "MSGQUEUE": "size",
    "NICE": "nice",
    "RTPRIO": "count",
    "RTTIME": "usec",
}
SYSTEMD_DIRECTIVES = tuple("Limit" + name[len("RLIMIT_"):] for name in RLIMIT_TYPES)

_KIND_HELP = {
    "size": "a size in bytes (suffixes B, K, M, G, T, P, E; 1024-based)",
    "count": "a plain number",
    "sec": "a time span in seconds (or with a unit: 30s, 5min, 1h)",
    "usec": "a time span in microseconds (or with a unit: 500ms, 2s)",
    "nice": "a nice level (-20..19, written with a sign) or a raw value 0..40",
}

_SIZE_PART = lazy_compile(r"([0-9]{1,20})(?:\.([0-9]{1,20}))?[ \t]*([EPTGMKB]?)[ \t]*")
_COUNT = lazy_compile(r"^\+?[0-9]{1,20}$")
_TIME_PART = lazy_compile(r"([0-9]{1,20})(?:\.([0-9]{1,20}))?[ \t]*([a-zA-Z\u00b5\u03bc]*)[ \t]*")

_USEC_PER = {"s": 1000000, "min": 60000000, "h": 3600000000, "d": 86400000000, "w": 604800000000}
# Time units systemd understands (src/basic/time-util.c), as microseconds.
_TIME_UNITS = {
    "seconds": _USEC_PER["s"], "second": _USEC_PER["s"], "sec": _USEC_PER["s"], "s": _USEC_PER["s"],
    "minutes": _USEC_PER["min"], "minute": _USEC_PER["min"], "min": _USEC_PER["min"], "m": _USEC_PER["min"],
    "months": 2629800000000, "month": 2629800000000, "M": 2629800000000,
    "msec": 1000, "ms": 1000,
    "hours": _USEC_PER["h"], "hour": _USEC_PER["h"], "hr": _USEC_PER["h"], "h": _USEC_PER["h"],
    "days": _USEC_PER["d"], "day": _USEC_PER["d"], "d": _USEC_PER["d"],
    "weeks": _USEC_PER["w"], "week": _USEC_PER["w"], "w": _USEC_PER["w"],
    "years": 31557600000000, "year": 31557600000000, "y": 31557600000000,
    "usec": 1, "us": 1, "\u00b5s": 1, "\u03bcs": 1,
}


def normalize_systemd_directive(name, where: str = "limits key") -> str:
    """Return ``LimitMEMLOCK`` for ``MEMLOCK``, ``memlock``, ``LimitMEMLOCK`` or ``RLIMIT_MEMLOCK``."""
    try:
        rtype = normalize_rlimit_type(name, where)
    except RlimitError:
        raise RlimitError(
            "%s %s is not a systemd resource limit; expected one of %s (the Limit prefix is optional)."
            % (where, _short(name), ", ".join(SYSTEMD_DIRECTIVES))
        )
    return "Limit" + rtype[len("RLIMIT_"):]


def _parse_size(text):
    pos = 0
    total = 0
    if not text or text[0] == "-":
        return None
    while pos < len(text):
        match = _SIZE_PART.match(text, pos)
        if not match or match.end() == pos:
            return None
        whole, fraction, suffix = match.groups()
        factor = 1 if suffix == "B" else 1024 ** _BINARY_SUFFIXES[suffix]
        total += int(whole) * factor
        if fraction:
            total += int(fraction) * factor // 10 ** len(fraction)
        pos = match.end()
    return total


def _parse_timespan(text, default_unit):
    pos = 0
    total = 0
    if not text or text[0] == "-":
        return None
    while pos < len(text):
        match = _TIME_PART.match(text, pos)
        if not match or match.end() == pos:
            return None
        whole, fraction, unit = match.groups()
        factor = _TIME_UNITS.get(unit) if unit else default_unit
        if factor is None:
            return None
        total += int(whole) * factor
        if fraction:
            total += int(fraction) * factor // 10 ** len(fraction)
        pos = match.end()
    return total


def _parse_systemd_one(text, kind):
    """Return the rlimit value systemd would set for one side of ``soft:hard``, or None if invalid."""
    text = text.strip()
    if text == "infinity":
        return RLIM_INFINITY
    if kind == "size":
        value = _parse_size(text)
    elif kind == "count":
        value = int(text) if _COUNT.match(text) else None
    elif kind == "sec":
        usec = _parse_timespan(text, _USEC_PER["s"])
        # systemd rounds CPU time up to whole seconds; 0 becomes 1 ("no CPU at all" is not allowed).
        value = None if usec is None else max(1, -(-usec // _USEC_PER["s"]))
    elif kind == "usec":
        value = _parse_timespan(text, 1)
    else:
        if re.match(r"^[+-][0-9]{1,20}$", text):
            nice = int(text)
            value = 20 - nice if -20 <= nice <= 19 else None
        elif re.match(r"^[0-9]{1,20}$", text):
            value = int(text) if int(text) <= 40 else None
        else:
            value = None
    if value is None or value >= RLIM_INFINITY:
        return None
    return value


def parse_systemd_limit(directive: str, value, where: str = "", as_systemd_reads: bool = False) -> tuple:
    """Validate a systemd ``Limit*=`` value; return ``(text_to_write, (soft, hard))``.

    ``directive`` is a normalised name (``LimitMEMLOCK``).  Integers are written in decimal;
    ``unlimited`` is accepted as a friendly alias and written as systemd's ``infinity``, except
    ``as_systemd_reads`` a unit file someone else wrote: systemd takes only ``infinity``, in small
    letters, and ignores ``LimitMEMLOCK=unlimited`` with a warning in its journal.
    """
    where = where or directive
    kind = _SYSTEMD_KIND[directive[len("Limit"):]]
    if isinstance(value, bool) or value is None:
        raise RlimitError("%s must be infinity or %s, got %s." % (where, _KIND_HELP[kind], _short(value)))
    if isinstance(value, int):
        if value < 0:
            raise RlimitError("%s must not be negative, got %s." % (where, value))
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise RlimitError(
            "%s must be infinity or %s, got a %s." % (where, _KIND_HELP[kind], type(value).__name__)
        )
    parts = text.split(":", 1)
    parts = [part.strip() if as_systemd_reads or part.strip().lower() not in _UNLIMITED_WORDS else "infinity"
             for part in parts]
    parsed = []
    for part in parts:
        number = _parse_systemd_one(part, kind)
        if number is None:
            if part.startswith("-") and kind != "nice":
                raise RlimitError("%s must not be negative, got %s." % (where, _short(value)))
            raise RlimitError(
                "%s must be infinity, %s, or soft:hard of those, got %s."
                % (where, _KIND_HELP[kind], _short(value))
            )
        parsed.append(number)
    soft, hard = parsed[0], parsed[-1]
    if soft > hard:
        raise RlimitError(
            "%s has the soft limit %s above the hard limit %s; systemd would ignore it."
            % (where, parts[0], parts[1])
        )
    return ":".join(parts), (soft, hard)


def normalize_systemd_limits(limits, where: str = "limits") -> dict:
    """Validate a ``{MEMLOCK: infinity, NOFILE: 1048576}`` dict; return ``{LimitMEMLOCK: "infinity", ...}``.

    Keys may carry the ``Limit`` or ``RLIMIT_`` prefix or none; the result is sorted by directive.
    """
    if limits is None:
        return {}
    if not isinstance(limits, dict):
        raise RlimitError(
            "%s must be a dict such as {MEMLOCK: infinity, NOFILE: 1048576}, got a %s."
            % (where, type(limits).__name__)
        )
    result = {}
    origin = {}
    for key, value in limits.items():
        directive = normalize_systemd_directive(key, "%s key" % where)
        if directive in result:
            raise RlimitError(
                "%s sets %s twice (as %s and %s); give it once." % (where, directive, origin[directive], key)
            )
        origin[directive] = key
        result[directive] = parse_systemd_limit(directive, value, "%s.%s" % (where, key))[0]
    return dict(sorted(result.items()))
