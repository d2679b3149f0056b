# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one shape of a finding, shared by every role and by the fleet report.

A finding is a plain dict: ``role`` and ``check`` say which check found it, ``severity`` is
``critical`` (the host needs attention; fail switches act on these), ``warning`` or ``info``,
``subject`` names what it is about (a port, a kernel, a node), ``message`` is one plain sentence, and
``expected``/``actual`` carry the values compared, where there are any.
"""

from __future__ import annotations

SEVERITIES = ("critical", "warning", "info")


def finding(role, check, severity, subject, message, expected=None, actual=None):
    """Build one finding."""
    if severity not in SEVERITIES:
        raise ValueError("severity must be one of %s, got %r" % (", ".join(SEVERITIES), severity))
    return {
        "role": role, "check": check, "severity": severity, "subject": subject, "message": message,
        "expected": expected, "actual": actual,
    }


def tally(findings):
    """``{"critical": n, "warning": n}`` for a list of findings."""
    return {
        "critical": sum(1 for f in findings if f.get("severity") == "critical"),
        "warning": sum(1 for f in findings if f.get("severity") == "warning"),
    }
