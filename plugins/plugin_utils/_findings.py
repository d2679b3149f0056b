# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one shape of a finding, shared by every role and by the fleet report.

A finding is a plain dict: ``role`` and ``check`` say which check found it, ``severity`` is
``critical`` (the host needs attention; fail switches act on these), ``warning`` or ``info``,
``subject`` names what it is about (a port, a kernel, a node), ``message`` is one plain sentence, and
``expected``/``actual`` carry the values compared, where there are any.

``finding()`` is the only constructor: it refuses a malformed finding (a bug in a check) instead of
letting it reach a report, and turns values that JSON cannot carry (``NaN``, infinities, tuples,
sets) into ones it can, so every finding survives a fact cache and AWX's artifacts unchanged. It
also removes terminal escape sequences and control characters from the subject, the message and
every text in ``expected``/``actual``: they quote what nodes report (firmware, netdev names, kernel
log lines) and what operators wrote, and they are printed by Ansible (task messages, the fail
messages) and in every report.
"""

from __future__ import annotations

import math

from ansible_collections.rdma.node.plugins.plugin_utils._safe_text import clean, strip_controls, visible

SEVERITIES = ("critical", "warning", "info")
KEYS = ("role", "check", "severity", "subject", "message", "expected", "actual")


class FindingError(ValueError):
    """A finding that does not have the one shape; the message says which field is wrong."""


def plain(value, where="value"):
    """``value`` as JSON carries it, in plain Python types: lists for tuples and sets, ``None`` for a
    float that is not a number, and ``str``/``int``/``dict``/``list`` for their subclasses. The last
    matters at fleet scale: ansible-core tags values that come from templates (subclasses of str,
    int...), and a fact cache decodes every tagged value again on each task of each host."""
    if value is None or type(value) in (bool, int, str):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, where) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v, where) for v in value)
    raise FindingError("%s: expected a JSON value (text, number, list, mapping or null), got %s" % (where, type(value).__name__))


def finding(role, check, severity, subject, message, expected=None, actual=None):
    """Build one finding, or raise FindingError naming what is wrong with it."""
    for name, value in (("role", role), ("check", check), ("message", message)):
        if not isinstance(value, str) or not value.strip():
            raise FindingError("finding %s: expected a non-empty text, got %r" % (name, value))
    if severity not in SEVERITIES:
        raise FindingError("finding severity of %s.%s must be one of %s, got %r" % (role, check, ", ".join(SEVERITIES), severity))
    if subject is None or isinstance(subject, (dict, list, tuple, set)) or str(subject) == "":
        raise FindingError("finding subject of %s.%s: expected the name of what it is about, got %r" % (role, check, subject))
    where = "finding %s.%s" % (role, check)
    # A subject made only of control characters is still named, spelled out (\x1b...), never lost.
    shown_subject = strip_controls(subject).strip() or visible(subject)
    return {
        "role": str(role), "check": str(check), "severity": str(severity), "subject": shown_subject,
        "message": " ".join(strip_controls(message).split()) or visible(message),
        "expected": clean(plain(expected, where + " expected")), "actual": clean(plain(actual, where + " actual")),
    }


def tally(findings):
    """``{"critical": n, "warning": n, "info": n}`` for a list of findings."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for item in findings:
        severity = item.get("severity")
        if severity in counts:
            counts[severity] += 1
    return counts
