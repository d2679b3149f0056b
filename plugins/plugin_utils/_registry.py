# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry of checks: every finding of the collection comes from a function registered here.

A check is a plain function in a module of ``plugin_utils/_checks`` (one per role)::

    @check("node_health", "pcie_degraded", reads=("rdma.pcie",))
    def pcie_degraded(facts, params, found):
        for name, link in facts["rdma"]["pcie"].items():
            ...

* ``reads`` are the fact paths the check needs, at the grain the fact readers fill them
  (``rdma.pcie``, ``rdma.ports[].counters``, ``rdma_driver``: see ``module_utils/_subsets``). When one
  was not gathered the check does not run: the status lists it under ``skipped_checks`` with the
  subset it lacked and why. ``optional`` paths are read when they are there; without them the check
  runs and the status says what it could not look at (``not_checked``).
* ``facts`` holds the top-level facts of those paths (``rdma``, ``rdma_driver``...).
* ``params`` holds only the parameters the check declared (names without the role prefix); a
  parameter that is not given is ``None``. For the roles that gather (``<role>_gather`` among their
  options) each comes from the option ``<role>_<name>``, or from the role's ``@parameter`` function
  where the value is computed (the DKMS module list, the previous run's counter sample).
* ``found`` builds the findings, through ``_findings.finding``, with the role and check filled in,
  and ``found.not_checked(subject, reason)`` records what the check could not judge.

A role may register one ``@summary`` function: what its status carries besides the counts (the port
verdicts of ``ib_inventory``, the kernels of ``driver_verify``...).

The checks live in ``plugin_utils/_checks/<domain>.py``, listed in that package's ``__init__``.
``evaluate()`` runs a role's checks in the order they were registered and returns the findings and
the status that the roles publish.
"""

from __future__ import annotations

import os
import traceback

from ansible_collections.rdma.node.plugins.module_utils._subsets import SubsetError, check_path, provider
from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES, FindingError, finding, plain, tally

# The key of ``unavailable`` that gives the reason for every subset (a host that could not be reached).
EVERY_SUBSET = "*"

_CHECKS = {}
_SUMMARIES = {}
_PARAMETERS = {}


class CheckError(ValueError):
    """A check or its parameters cannot be used; the message names the check and what was expected."""


class Check:
    """One registered check: who it belongs to, what it reads, and the function that judges."""

    __slots__ = ("role", "name", "reads", "optional", "params", "function", "description")

    def __init__(self, role, name, reads, params, function, optional=()):
        self.role = role
        self.name = name
        self.reads = tuple(reads)
        self.optional = tuple(optional)
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


def _paths(value, what, where):
    try:
        return tuple(check_path(path, "%s %s" % (where, what)) for path in _names(value, what, where))
    except SubsetError as exc:
        raise CheckError(str(exc)) from None


def register(role, name, function, reads=(), params=(), optional=()):
    """Add ``function`` to the registry as ``role``'s check ``name`` (the decorator calls this)."""
    where = "check %s.%s" % (role, name)
    if not (isinstance(role, str) and role and isinstance(name, str) and name):
        raise CheckError("a check needs a role and a name, got %r and %r" % (role, name))
    existing = _CHECKS.get(role, {}).get(name)
    if existing is not None and existing.function is not function:
        if (existing.function.__module__, existing.function.__qualname__) != (function.__module__, function.__qualname__):
            raise CheckError("%s is registered twice: by %s and by %s" % (where, existing.function.__module__, function.__module__))
    _CHECKS.setdefault(role, {})[name] = Check(role, name, _paths(reads, "reads", where), _names(params, "params", where), function,
                                               _paths(optional, "optional", where))
    return function


def check(role, name, reads=(), params=(), optional=()):
    """Register the decorated function as a check of ``role`` named ``name``."""
    def decorate(function):
        return register(role, name, function, reads, params, optional)
    return decorate


def summary(role, reads=(), params=()):
    """Register the decorated function as what ``role``'s status carries besides the counts.

    It is called as ``function(facts, params, findings)`` and returns a dict.
    """
    def decorate(function):
        where = role + " summary"
        _SUMMARIES[role] = Check(role, "summary", _paths(reads, "reads", where), _names(params, "params", where), function)
        return function
    return decorate


def parameter(role, name):
    """Register the decorated function as the computed value of ``role``'s parameter ``name``: it is
    called as ``function(options, facts)`` with the role's typed options and the host's facts."""
    def decorate(function):
        _PARAMETERS.setdefault(role, {})[name] = function
        return function
    return decorate


def roles():
    """The roles that have checks, in the order their first check was registered."""
    return list(_CHECKS)


def checks(role):
    """The checks of ``role`` in registration order (an empty list for a role without checks)."""
    return list(_CHECKS.get(role, {}).values())


def declared_parameters(role):
    """Every parameter name the role's checks and summary read, in the order first declared."""
    entries = checks(role) + ([_SUMMARIES[role]] if role in _SUMMARIES else [])
    return list(dict.fromkeys(name for entry in entries for name in entry.params))


def parameters(role, options, facts):
    """The parameters of ``role``'s checks from its typed ``options``: ``<role>_<name>``, or the role's
    ``@parameter`` function for a computed one; None for a parameter that only a task gives at run
    time (the results of a rebuild, say), which the task passes itself."""
    computed = _PARAMETERS.get(role, {})
    values = {}
    for name in declared_parameters(role):
        if name in computed:
            values[name] = computed[name](options, facts)
        else:
            values[name] = options.get(role + "_" + name)
    return values


def computed_parameter(role, name, options, facts):
    """The value of ``role``'s computed parameter ``name``, or KeyError when the role has none."""
    return _PARAMETERS[role][name](options, facts)


def _select(mapping, names):
    return {name: mapping.get(name) for name in names}


def path_present(facts, path):
    """Whether the fact path was gathered: ``a.b`` is there and not null; ``a.b[].c`` is a list (of b)
    whose every element carries ``c``."""
    node = facts
    parts = path.split(".")
    for index, part in enumerate(parts):
        every = part.endswith("[]")
        key = part[:-2] if every else part
        if not isinstance(node, dict) or node.get(key) is None:
            return False
        node = node[key]
        if every:
            rest = ".".join(parts[index + 1:])
            return isinstance(node, list) and all(not rest or path_present(item, rest) for item in node)
    return True


def subset_of(path):
    """The name of the fact subset that fills ``path``, or the path itself when no reader declares it."""
    found = provider(path)
    return found.name if found is not None else path


def _missing_subsets(facts, paths):
    return list(dict.fromkeys(subset_of(p) for p in paths if not path_present(facts, p)))


def _skip_reason(missing, unavailable):
    reasons = [unavailable.get(name) or unavailable.get(EVERY_SUBSET) or "the %s facts were not gathered" % name for name in missing]
    return "; ".join(dict.fromkeys(reasons))


def _run(entry, facts, params, args):
    try:
        return entry.function(_select(facts, {p.split(".")[0].rstrip("[]") for p in entry.reads + entry.optional}),
                              _select(params, entry.params), *args)
    except (CheckError, FindingError) as exc:
        raise CheckError("%s.%s: %s" % (entry.role, entry.name, exc)) from None
    except Exception as exc:  # a bug in a check must name the check, not end the play with a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise CheckError("check %s.%s failed: %s: %s (%s line %d)" % (
            entry.role, entry.name, type(exc).__name__, exc, os.path.basename(frame.filename), frame.lineno)) from None


def status_line(role, subject, counts, findings, skipped=()):
    """The one-line summary a role shows for a host."""
    unchecked = "; %d check(s) not run for lack of data" % len(skipped) if skipped else ""
    if not findings:
        return "%s on %s: no findings%s." % (role, subject, unchecked)
    numbers = ", ".join("%d %s" % (counts[s], s) for s in SEVERITIES if counts[s])
    worst = [f for f in findings if f["severity"] != "info"] or findings
    return "%s on %s: %s%s: %s" % (role, subject, numbers, unchecked, " ".join(f["message"] for f in worst))


def evaluate(role, facts, params=None, subject="host", only=None, skip=None, extra=(), unavailable=None):
    """Run ``role``'s checks on one host's ``facts`` with the role's ``params``.

    Returns ``{"findings": [...], "status": {...}}``; the status holds the counts (``ok`` is true
    when nothing is critical), the ``checks`` that ran, the ``skipped_checks`` whose data was not
    gathered (each with the subsets it lacked and the reason), what the checks that ran could not
    judge (``not_checked``), the summary line, and what the role's ``@summary`` adds.
    ``only``/``skip`` take check names (a name that is not a check of the role is an error).
    ``extra`` are ``Check`` objects built at run time (the operators' JMESPath checks), run after the
    registered ones. ``unavailable`` maps a subset to why it was not gathered (an option switched it
    off, the host could not be reached; ``EVERY_SUBSET`` for all), for the reasons shown.
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
    unavailable = unavailable or {}
    known = {c.name for c in registered}
    for option, names in (("only", only), ("skip", skip)):
        unknown = sorted(set(names or ()) - known)
        if unknown:
            raise CheckError("%s: %s names no check of %s: %s (known: %s)" % (option, role, role, ", ".join(unknown), ", ".join(sorted(known))))
    findings, ran, skipped, unjudged = [], [], [], []
    for entry in registered:
        if (only and entry.name not in only) or (skip and entry.name in skip):
            continue
        lacking = _missing_subsets(facts, entry.reads)
        if lacking:
            skipped.append({"check": entry.name, "missing": lacking, "reason": _skip_reason(lacking, unavailable)})
            continue
        found = Found(role, entry.name)
        for name in _missing_subsets(facts, entry.optional):
            found.not_checked(name, _skip_reason([name], unavailable))
        _run(entry, facts, params, (found,))
        findings.extend(found.items)
        unjudged.extend(found.unjudged)
        ran.append(entry.name)
    counts = tally(findings)
    status = {
        "ok": counts["critical"] == 0, "critical": counts["critical"], "warning": counts["warning"], "info": counts["info"],
        "checks": ran, "skipped_checks": skipped, "not_checked": unjudged, "subject": subject,
        "summary": status_line(role, subject, counts, findings, skipped),
    }
    extra = _SUMMARIES.get(role)
    if extra is not None and not _missing_subsets(facts, extra.reads):
        added = _run(extra, facts, params, (findings,)) or {}
        status.update({k: v for k, v in added.items() if k not in status})
    return {"findings": findings, "status": plain(status, "status of %s" % role)}


def subsets_read(role, only=None, skip=None):
    """The fact subsets ``role``'s chosen checks read (required or optional), in first-use order."""
    wanted = []
    for entry in checks(role) + ([_SUMMARIES[role]] if role in _SUMMARIES else []):
        if entry.name != "summary" and ((only and entry.name not in only) or (skip and entry.name in skip)):
            continue
        for path in entry.reads + entry.optional:
            found = provider(path)
            if found is not None and found.name not in wanted:
                wanted.append(found.name)
    return wanted
