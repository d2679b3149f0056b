# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operators' own checks: JMESPath expressions from a group variable, run as checks of a role.

An entry of ``node_health_custom_checks`` (any role's ``custom_checks`` of ``rdma.node.evaluate``)::

    - name: port_below_200g
      severity: warning
      message: An active InfiniBand port runs below 200 Gb/s.
      expression: "rdma.ports[?state=='ACTIVE' && link_layer=='InfiniBand' && rate_gbps < `200`]"
      subject: "join('/', [device, to_string(port)])"

becomes a ``_registry.Check`` named ``custom_<name>`` that reads the facts in ``reads`` (default
``[rdma]``), so it is skipped like any check when they are missing, and whose findings carry the
role, the check, the severity and the message like every other. A result that JMESPath counts as
true is a finding; a list result gives one finding per element, with ``subject`` (JMESPath) applied
to the element. Here on the controller only: jmespath is a controller library.
"""

from __future__ import annotations

import json
import re

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
    from jmespath.visitor import TreeInterpreter
except ImportError:  # the controller lacks it: a clear error when a custom check is used, not at import
    jmespath = None
    JMESPathError = ValueError
    TreeInterpreter = object

from ansible_collections.rdma.node.plugins.plugin_utils._registry import Check, CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES

PREFIX = "custom_"
KEYS = ("name", "severity", "message", "expression", "subject", "reads")
REQUIRED = ("name", "severity", "message", "expression")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_COMPILED = {}
# Bounds of one expression: its text, the steps it may take on one host's facts, and the values its
# result may hold. A real check is a few hundred characters and takes thousands of steps; without
# bounds, a nesting of thousands of brackets ends in a RecursionError, and "[@,@][]" twenty-two times
# doubles its work twenty-two times (gigabytes).
MAX_EXPRESSION_CHARS = 4096
MAX_STEPS = 200000
MAX_RESULT_VALUES = 100000


class _TooCostly(Exception):
    """The expression passed one of the bounds; the message completes "the expression ..."."""


class _BoundedInterpreter(TreeInterpreter):
    """jmespath's own interpreter, counting every node it evaluates and stopping past ``MAX_STEPS``."""

    def __init__(self):
        super().__init__()
        self.steps = 0

    def visit(self, node, *args, **kwargs):
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _TooCostly("needs more than {:,} steps".format(MAX_STEPS))
        return super().visit(node, *args, **kwargs)


def _search(compiled, value):
    """``compiled.search(value)`` within the bounds; :class:`_TooCostly` past them."""
    try:
        result = _BoundedInterpreter().visit(compiled.parsed, value)
    except RecursionError:
        raise _TooCostly("nested too deeply for the facts it reads") from None
    _count_values(result, [MAX_RESULT_VALUES])
    return result


def _count_values(value, left):
    """Count the values of a result down from ``left[0]``, stopping as soon as there are too many (a result
    may share one list many times over: it is counted as the JSON it becomes, not as the memory it holds)."""
    stack = [value]
    while stack:
        item = stack.pop()
        left[0] -= 1
        if left[0] < 0:
            raise _TooCostly("gives more than {:,} values".format(MAX_RESULT_VALUES))
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _compile(text, where):
    if jmespath is None:
        raise CheckError("%s: the operators' checks need the jmespath library on the controller (pip install jmespath)" % where)
    compiled = _COMPILED.get(text)
    if compiled is None:
        if len(text) > MAX_EXPRESSION_CHARS:
            raise CheckError("%s: the expression is %d characters long, more than the %d a check may have"
                             % (where, len(text), MAX_EXPRESSION_CHARS))
        try:
            compiled = jmespath.compile(text)
        except JMESPathError as exc:
            raise CheckError("%s: the expression %r is not valid JMESPath: %s" % (where, text, " ".join(str(exc).split()))) from None
        except RecursionError:
            raise CheckError("%s: the expression is nested too deeply to be read (%s...)" % (where, text[:40])) from None
        _COMPILED[text] = compiled
    return compiled


def _subject_text(value):
    """A subject as text: a string as it is, anything else as JSON (never a Python repr)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _truthy(value):
    """JMESPath's truth: false, null, and empty strings, lists and objects are false; numbers are true."""
    return not (value is None or value is False or (isinstance(value, (str, list, dict)) and not value))


def plain(value):
    """Ansible's tagged and lazy types as plain JSON values, as jmespath expects them."""
    return json.loads(json.dumps(value, default=str))


def _entry(index, entry, where):
    if not isinstance(entry, dict):
        raise CheckError("%s[%d]: expected a mapping with %s, got %r" % (where, index, ", ".join(REQUIRED), entry))
    name = entry.get("name")
    label = "%s[%d]" % (where, index) if not isinstance(name, str) else "%s check %r" % (where, name)
    missing = [key for key in REQUIRED if entry.get(key) in (None, "")]
    if missing:
        raise CheckError("%s: %s missing; each check needs %s" % (label, ", ".join(missing), ", ".join(REQUIRED)))
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise CheckError("%s: unknown key %s (known: %s)" % (label, ", ".join(unknown), ", ".join(KEYS)))
    if not isinstance(name, str) or not _NAME.match(name):
        raise CheckError("%s: the name must be letters, digits and _ starting with a letter, got %r" % (label, name))
    if entry["severity"] not in SEVERITIES:
        raise CheckError("%s: severity must be one of %s, got %r" % (label, ", ".join(SEVERITIES), entry["severity"]))
    for key in ("message", "expression", "subject"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise CheckError("%s: %s must be a string, got %r" % (label, key, entry[key]))
    reads = entry.get("reads", ["rdma"])
    if isinstance(reads, str) or not isinstance(reads, list) or not all(isinstance(r, str) and r for r in reads):
        raise CheckError("%s: reads must be a list of fact names, got %r" % (label, reads))
    return label, reads


def build_check(role, index, entry, where="custom_checks"):
    """One operator entry -> a ``Check`` of ``role``; a bad entry is a ``CheckError`` naming it."""
    label, reads = _entry(index, entry, where)
    expression = _compile(entry["expression"], label)
    subject = _compile(entry["subject"], label + " subject") if entry.get("subject") else None
    name, severity, message = entry["name"], entry["severity"], entry["message"]

    def judge(facts, params, found):
        try:
            result = _search(expression, plain(facts))
            items = result if isinstance(result, list) else [result]
            for item in items:
                if not _truthy(item):
                    continue
                about = _search(subject, item) if subject is not None else None
                found.add(severity, name if about in (None, "") else _subject_text(about), message, None,
                          item if item is not True else None)
        except JMESPathError as exc:
            raise CheckError("%s: the expression failed on this host's facts: %s" % (label, " ".join(str(exc).split()))) from None
        except _TooCostly as exc:
            raise CheckError("%s: the expression %s on this host's facts; narrow it (select fewer ports or "
                             "fields)" % (label, exc)) from None

    judge.__doc__ = "%s (JMESPath: %s)" % (message, entry["expression"])
    return Check(role, PREFIX + name, reads, (), judge)


def build_checks(role, entries, where="custom_checks"):
    """Every entry of an operator's list as checks of ``role``; names must be unique."""
    if not isinstance(entries, list):
        raise CheckError("%s: expected a list of checks, got %r" % (where, entries))
    built = [build_check(role, index, entry, where) for index, entry in enumerate(entries)]
    seen = set()
    for item in built:
        if item.name in seen:
            raise CheckError("%s: two checks are named %r" % (where, item.name[len(PREFIX):]))
        seen.add(item.name)
    return built
