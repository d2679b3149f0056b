# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's options as its one evaluate task reads them, with the role's own rules.

Every option of a role is declared in its ``meta/argument_specs.yml`` (type, default, choices) and
given its default in ``defaults/main.yml``. Ansible checks them in a task of their own that it puts
before the role's tasks, and at fleet scale every task costs its time on every host. Here the
evaluate task checks them itself, against the same specification, and returns them typed:

* the value of each option is the play's variable of that name (inventory, play, extra vars, facts:
  everything Ansible ranks above a role's defaults), else the role's default, so the precedence is
  Ansible's even when the role is not loaded (``rdma.node.site`` evaluates three roles in one task);
* a value that does not fit the specification fails the task with Ansible's own messages, naming
  the role, as the separate validation task would have.

The specifications are read once per controller process, when the evaluate action is loaded in
ansible-playbook's main process (the workers inherit them).
"""

from __future__ import annotations

import os

import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader

ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")

_SPECS = {}


class RoleOptionsError(ValueError):
    """The role is unknown, or the values of its options do not fit its argument specification."""


def _read_yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def load_specs(roles_dir=ROLES_DIR):
    """Read the main entry point's argument specification and the defaults of every role, once."""
    if _SPECS:
        return _SPECS
    for role in sorted(os.listdir(roles_dir)):
        spec_path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(spec_path):
            continue
        spec = ((_read_yaml(spec_path).get("argument_specs") or {}).get("main") or {}).get("options") or {}
        defaults_path = os.path.join(roles_dir, role, "defaults", "main.yml")
        # As Ansible loads a role's defaults: trusted as templates (a default may name another option).
        defaults = DataLoader().load_from_file(defaults_path, trusted_as_template=True) if os.path.isfile(defaults_path) else {}
        _SPECS[role] = (spec, defaults)
    return _SPECS


def role_options(role, variables, template):
    """The options of ``role`` (names with the role's prefix), validated and typed.

    ``variables`` are the task's variables; ``template`` renders a value in their context (the
    action's templar). Only the role's own options are rendered, once each.
    """
    specs = load_specs()
    if role not in specs:
        raise RoleOptionsError("rdma.node has no role %r with an argument specification; expected one of %s"
                               % (role, ", ".join(sorted(specs))))
    spec, defaults = specs[role]
    raw = {name: variables[name] if name in variables else defaults[name]
           for name in spec if name in variables or name in defaults}
    values = template(raw)
    validation = ArgumentSpecValidator(spec).validate(values)
    if validation.error_messages:
        raise RoleOptionsError("the options of the role rdma.node.%s are not valid: %s"
                               % (role, "; ".join(validation.error_messages)))
    return validation.validated_parameters
