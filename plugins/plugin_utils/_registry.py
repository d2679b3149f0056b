# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry of checks: every finding of the collection comes from a function registered here.

A check is a plain function in a module of ``plugin_utils/_checks`` (one per role)::

    @check("driver_verify", "uverbs_missing", reads=("rdma_driver",), params=("require_uverbs",))
    def uverbs_missing(facts, params, found):
        if params["require_uverbs"] and not facts["rdma_driver"]["infiniband_devices"]:
            found.critical("/dev/infiniband", "There is no uverbs device node.", expected="uverbs*")

* ``facts`` holds only the top-level facts the check declared in ``reads`` (``rdma``,
  ``rdma_driver``, ...); when one of them is missing the check is not run and the status says so.
* ``params`` holds only the role parameters the check declared (names without the role prefix); a
  parameter the role did not pass is ``None``.
* ``found`` builds the findings, through ``_findings.finding``, with the role and check filled in.

A role may register one ``@summary`` function: what its status carries besides the counts (the port
verdicts of ``ib_inventory``, the kernels of ``driver_verify``...).

The checks live in ``plugin_utils/_checks/<domain>.py``, one module per role, listed in that
package's ``__init__``; adding a check is adding a function (and its test) to one of them. ``evaluate()`` runs a role's checks
in the order they were registered and returns the findings and the status that the roles publish.
"""

from __future__ import annotations

import os
import traceback

from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES, FindingError, finding, plain, tally

_CHECKS = {}
_SUMMARIES = {}


class CheckError(ValueError):
    """A check or its parameters cannot be used; the message names the check and what was expected."""


class Check:
    """One registered check: who it belongs to, what it reads, and the function that judges."""

    __slots__ = ("role", "name", "reads", "params", "function", "description")

    def __init__(self, role, name, reads, params, function):
        self.role = role
        self.name = name
        self.reads = tuple(reads)
        self.params = tuple(params)
        self.function = function
        self.description = " ".join((function.__doc__ or "").split())

    def __repr__(self):
        return "Check(%s.%s)" % (self.role, self.name)


class Found:
    """The findings of one check: ``critical``, ``warning`` and ``info`` each add one;
    ``not_checked`` records a subject the check could not judge, and why."""

    __slots__ = ("role", "check", "items", "unjudged")

    def __init__(self, role, check):
        self.role = role
        self.check = check
        self.items = []
        self.unjudged = []

    def add(self, severity, subject, message, expected=None, actual=None):
        item = finding(self.role, self.check, severity, subject, message, expected, actual)
        self.items.append(item)
        return item

    def critical(self, subject, message, expected=None, actual=None):
        return self.add("critical", subject, message, expected, actual)

    def warning(self, subject, message, expected=None, actual=None):
        return self.add("warning", subject, message, expected, actual)

    def info(self, subject, message, expected=None, actual=None):
        return self.add("info", subject, message, expected, actual)

    def not_checked(self, subject, reason):
        """``subject`` could not be judged (its data is missing or made no sense): never a pass."""
        entry = {"check": self.check, "subject": str(subject), "reason": " ".join(str(reason).split())}
        if entry not in self.unjudged:
            self.unjudged.append(entry)
        return entry


def _names(value, what, where):
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
        raise CheckError("%s: %s must be a list of names, got %r" % (where, what, value))
    return tuple(value)


def register(role, name, function, reads=(), params=()):
    """Add ``function`` to the registry as ``role``'s check ``name`` (the decorator calls this)."""
    where = "check %s.%s" % (role, name)
    if not (isinstance(role, str) and role and isinstance(name, str) and name):
        raise CheckError("a check needs a role and a name, got %r and %r" % (role, name))
    existing = _CHECKS.get(role, {}).get(name)
    if existing is not None and existing.function is not function:
        if (existing.function.__module__, existing.function.__qualname__) != (function.__module__, function.__qualname__):
            raise CheckError("%s is registered twice: by %s and by %s" % (where, existing.function.__module__, function.__module__))
    _CHECKS.setdefault(role, {})[name] = Check(role, name, _names(reads, "reads", where), _names(params, "params", where), function)
    return function


def check(role, name, reads=(), params=()):
    """Register the decorated function as a check of ``role`` named ``name``."""
    def decorate(function):
        return register(role, name, function, reads, params)
    return decorate


def summary(role, reads=(), params=()):
    """Register the decorated function as what ``role``'s status carries besides the counts.

    It is called as ``function(facts, params, findings)`` and returns a dict.
    """
    def decorate(function):
        _SUMMARIES[role] = Check(role, "summary", _names(reads, "reads", role + " summary"), _names(params, "params", role + " summary"), function)
        return function
    return decorate


def roles():
    """The roles that have checks, in the order their first check was registered."""
    return list(_CHECKS)


def checks(role):
    """The checks of ``role`` in registration order (an empty list for a role without checks)."""
    return list(_CHECKS.get(role, {}).values())


def _select(mapping, names):
    return {name: mapping.get(name) for name in names}


def _missing(facts, reads):
    return [name for name in reads if facts.get(name) is None]


def _run(entry, facts, params, args):
    try:
        return entry.function(_select(facts, entry.reads), _select(params, entry.params), *args)
    except (CheckError, FindingError) as exc:
        raise CheckError("%s.%s: %s" % (entry.role, entry.name, exc)) from None
    except Exception as exc:  # a bug in a check must name the check, not end the play with a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise CheckError("check %s.%s failed: %s: %s (%s line %d)" % (
            entry.role, entry.name, type(exc).__name__, exc, os.path.basename(frame.filename), frame.lineno)) from None


def status_line(role, subject, counts, findings):
    """The one-line summary a role shows for a host."""
    if not findings:
        return "%s on %s: no findings." % (role, subject)
    numbers = ", ".join("%d %s" % (counts[s], s) for s in SEVERITIES if counts[s])
    worst = [f for f in findings if f["severity"] != "info"] or findings
    return "%s on %s: %s: %s" % (role, subject, numbers, " ".join(f["message"] for f in worst))


def evaluate(role, facts, params=None, subject="host", only=None, skip=None, extra=()):
    """Run ``role``'s checks on one host's ``facts`` with the role's ``params``.

    Returns ``{"findings": [...], "status": {...}}``; the status holds the counts (``ok`` is true
    when nothing is critical), the checks that ran, those skipped for missing facts with the facts
    they lacked, the summary line, and what the role's ``@summary`` adds. ``only``/``skip`` take
    check names (a name that is not a check of the role is an error). ``extra`` are ``Check``
    objects built at run time (the operators' JMESPath checks), run after the registered ones.
    """
    registered = checks(role)
    clash = sorted({c.name for c in extra} & {c.name for c in registered})
    if clash:
        raise CheckError("%s already has a check named %s" % (role, ", ".join(clash)))
    registered += list(extra)
    if not registered and role not in _SUMMARIES:
        raise CheckError("no checks are registered for the role %r (known: %s)" % (role, ", ".join(roles()) or "none"))
    facts = facts or {}
    params = params or {}
    known = {c.name for c in registered}
    for option, names in (("only", only), ("skip", skip)):
        unknown = sorted(set(names or ()) - known)
        if unknown:
            raise CheckError("%s: %s names no check of %s: %s (known: %s)" % (option, role, role, ", ".join(unknown), ", ".join(sorted(known))))
    findings, ran, skipped, unjudged = [], [], [], []
    for entry in registered:
        if (only and entry.name not in only) or (skip and entry.name in skip):
            continue
        lacking = _missing(facts, entry.reads)
        if lacking:
            skipped.append({"check": entry.name, "missing_facts": lacking})
            continue
        found = Found(role, entry.name)
        _run(entry, facts, params, (found,))
        findings.extend(found.items)
        unjudged.extend(found.unjudged)
        ran.append(entry.name)
    counts = tally(findings)
    status = {
        "ok": counts["critical"] == 0, "critical": counts["critical"], "warning": counts["warning"], "info": counts["info"],
        "checks": ran, "skipped_checks": skipped, "not_checked": unjudged, "subject": subject, "summary": status_line(role, subject, counts, findings),
    }
    extra = _SUMMARIES.get(role)
    if extra is not None and not _missing(facts, extra.reads):
        added = _run(extra, facts, params, (findings,)) or {}
        status.update({k: v for k, v in added.items() if k not in status})
    return {"findings": findings, "status": plain(status, "status of %s" % role)}
