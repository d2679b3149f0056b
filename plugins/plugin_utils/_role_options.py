# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's options as ``rdma.node.evaluate`` reads them: the first stage of its pipeline.

Every option of a role is declared in its ``meta/argument_specs.yml`` (type, default, choices) and
given its default in ``defaults/main.yml``. Ansible checks them in a task of their own that it puts
before the role's tasks, and at fleet scale every task costs its time on every host. Here the
evaluate task checks them itself, against the same specification, and returns them typed:

* the value of each option is the play's variable of that name (inventory, play, extra vars, facts:
  everything Ansible ranks above a role's defaults), else the role's default, so the precedence is
  Ansible's for a role that has only defaults and the ``main`` entry point; ``rdma.node.site``
  evaluates three roles in one task without loading them;
* a role that has what this does not emulate (``vars/``, which Ansible ranks above the inventory, or
  defaults for another entry point) is refused with one sentence rather than read wrongly;
* a value that does not fit the specification fails the task with Ansible's own messages, naming
  the role, as the separate validation task would have.

The defaults are read as YAML and marked as templates with ansible-core's public
``trust_as_template``, as Ansible marks a role's defaults (a default may name another option). The
specifications are read once per controller process, when the evaluate action is loaded in
ansible-playbook's main process (the workers inherit them).
"""

from __future__ import annotations

import os

import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.template import trust_as_template

ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
ENTRY_POINT = "main"

_SPECS = {}


class RoleOptionsError(ValueError):
    """The role is unknown, or the values of its options do not fit its argument specification."""


def _read_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def _trusted(value):
    """``value`` with every string in it marked as a template, as Ansible loads role defaults."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value


def _unemulated(role_dir):
    """What the role has that ``role_options`` would not read as Ansible does, or None."""
    if os.path.isdir(os.path.join(role_dir, "vars")):
        return "vars/, which Ansible ranks above the inventory"
    defaults = os.path.join(role_dir, "defaults")
    others = sorted(name for name in os.listdir(defaults) if name not in ("main.yml", "main.yaml")) if os.path.isdir(defaults) else []
    if others:
        return "defaults for other entry points (%s)" % ", ".join(others)
    return None


def load_specs(roles_dir=ROLES_DIR):
    """Read the main entry point's argument specification and the defaults of every role, once.

    ``{role: (spec, defaults, unemulated)}``; ``unemulated`` says what the role has that the options
    would not be read right with (None for a role evaluate can read)."""
    if _SPECS:
        return _SPECS
    for role in sorted(os.listdir(roles_dir)):
        spec_path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(spec_path):
            continue
        spec = ((_read_yaml(spec_path).get("argument_specs") or {}).get(ENTRY_POINT) or {}).get("options") or {}
        defaults_path = os.path.join(roles_dir, role, "defaults", "main.yml")
        defaults = _trusted(_read_yaml(defaults_path)) if os.path.isfile(defaults_path) else {}
        _SPECS[role] = (spec, defaults, _unemulated(os.path.join(roles_dir, role)))
    return _SPECS


def role_options(role, variables, template, overrides=None):
    """The options of ``role`` (names with the role's prefix), validated and typed.

    ``variables`` are the task's variables; ``template`` renders a value in their context (the
    action's templar). Only the role's own options are rendered, once each. ``overrides`` are values
    given to the task itself (named with the prefix), validated with the rest.
    """
    specs = load_specs()
    if role not in specs:
        raise RoleOptionsError("rdma.node has no role %r with an argument specification; expected one of %s"
                               % (role, ", ".join(sorted(specs))))
    spec, defaults, unemulated = specs[role]
    if unemulated:
        raise RoleOptionsError("the role rdma.node.%s has %s; rdma.node.evaluate reads a role's options from its defaults and the "
                               "%s entry point only, so include the role instead of evaluating it by name" % (role, unemulated, ENTRY_POINT))
    raw = {name: variables[name] if name in variables else defaults[name]
           for name in spec if name in variables or name in defaults}
    values = template(raw)
    values.update(overrides or {})
    validation = ArgumentSpecValidator(spec).validate(values)
    if validation.error_messages:
        raise RoleOptionsError("the options of the role rdma.node.%s are not valid: %s"
                               % (role, "; ".join(validation.error_messages)))
    return validation.validated_parameters


def reads_options(role):
    """Whether evaluate reads ``role``'s options itself: a role that gathers its own facts (it has the
    option ``<role>_gather``). Other roles' tasks pass the parameters they computed."""
    spec = load_specs().get(role)
    return spec is not None and role + "_gather" in spec[0]
