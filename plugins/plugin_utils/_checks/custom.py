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
except ImportError:  # the controller lacks it: a clear error when a custom check is used, not at import
    jmespath = None
    JMESPathError = ValueError

from ansible_collections.rdma.node.plugins.plugin_utils._registry import Check, CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._findings import SEVERITIES

PREFIX = "custom_"
KEYS = ("name", "severity", "message", "expression", "subject", "reads")
REQUIRED = ("name", "severity", "message", "expression")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_COMPILED = {}


def _compile(text, where):
    if jmespath is None:
        raise CheckError("%s: the operators' checks need the jmespath library on the controller (pip install jmespath)" % where)
    compiled = _COMPILED.get(text)
    if compiled is None:
        try:
            compiled = jmespath.compile(text)
        except JMESPathError as exc:
            raise CheckError("%s: the expression %r is not valid JMESPath: %s" % (where, text, " ".join(str(exc).split()))) from None
        _COMPILED[text] = compiled
    return compiled


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
            result = expression.search(plain(facts))
            items = result if isinstance(result, list) else [result]
            for item in items:
                if not _truthy(item):
                    continue
                about = subject.search(item) if subject is not None else None
                found.add(severity, name if about in (None, "") else str(about), message, None, item if item is not True else None)
        except JMESPathError as exc:
            raise CheckError("%s: the expression failed on this host's facts: %s" % (label, " ".join(str(exc).split()))) from None

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
