# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdma.node.evaluate: the one evaluation and publish path of every role.

Why an action and not a filter: one task per host does the whole job that took a role three or four
(validation, gather, ``set_fact`` of the findings, ``set_stats``). An action's result can carry
``ansible_facts`` (kept as host facts, so a fact cache holds them for a later report job) and
``ansible_stats`` (what ``set_stats`` publishes, for AWX) at once, and it runs on the controller,
where the checks of operators (JMESPath) have their library. Fleet scale counts tasks per host.

The work is a pipeline of stages, each in its own module of ``plugin_utils``:

1. options (``_role_options``): the options of the roles that gather, read and validated against
   their argument specifications;
2. gather plan (``_gather_plan``): the fact modules their checks need, with arguments from the options;
3. gather (here: it runs modules on the node through the action);
4. judge (``_judge``): each role's checks on the facts;
5. publish (``_publish``): the facts kept, the statistics published, the fail switch;
6. node writer (``_node_writer``): node_health's metrics file on the node.
"""

from __future__ import annotations

import datetime

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.plugin_utils import _gather_plan, _node_writer
from ansible_collections.rdma.node.plugins.plugin_utils._judge import UNREACHABLE, judge
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render as render_metrics
from ansible_collections.rdma.node.plugins.plugin_utils._pod_proof import HostFacts
from ansible_collections.rdma.node.plugins.plugin_utils._publish import publish
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._role_options import RoleOptionsError, load_specs, reads_options, role_options
from ansible_collections.rdma.node.plugins.plugin_utils._safe_text import strip_controls, visible

# The checks and fact readers are imported with _judge, and every role's argument specification is
# read now, while this plugin is loaded: the strategy loads an action's class in ansible-playbook's
# main process, before it forks a worker per host and task, so the workers inherit them. Loaded in
# each worker instead, the collection loader compiled the checks again for every host: two thirds of
# the task's controller time (profiled at 100 hosts).
load_specs()

ARGUMENT_SPEC = {
    "role": {"type": "str"},
    "roles": {"type": "list", "elements": "str"},
    "params": {"type": "dict"},
    "node_hosts": {"type": "list", "elements": "str"},
    "facts": {"type": "dict"},
    "subject": {"type": "str"},
    "only": {"type": "list", "elements": "str", "default": []},
    "skip": {"type": "list", "elements": "str", "default": []},
    "publish": {"type": "bool", "default": True},
    "gather": {"type": "raw"},
    "custom_checks": {"type": "list", "elements": "dict"},
    "metrics_file": {"type": "str"},
    "fail_on_findings": {"type": "bool"},
}
MUTUALLY_EXCLUSIVE = [("role", "roles"), ("roles", "node_hosts")]
REQUIRED_ONE_OF = [("role", "roles")]


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE,
                                           required_one_of=REQUIRED_ONE_OF)[1]
        roles = args["roles"] or [args["role"]]
        if len(roles) > 1 and args["params"] is not None:
            raise AnsibleActionFail("rdma.node.evaluate: params is for one role; with roles, each role's options are read from its variables")
        if args["node_hosts"] is not None:
            args["params"] = self._with_node_facts(args["params"], args["node_hosts"], task_vars)
        facts = dict(task_vars.get("ansible_facts") or {}) if args["facts"] is None else args["facts"]
        subject = args["subject"] or task_vars.get("inventory_hostname") or "localhost"

        try:
            options = {role: role_options(role, task_vars, self._templar.template, self._as_options(role, args["params"])[0])
                       for role in roles if reads_options(role)}
            calls, unavailable = self._plan(args["gather"], options, facts, args["only"], args["skip"])
        except (RoleOptionsError, _gather_plan.GatherConflict) as exc:
            raise AnsibleActionFail("rdma.node.evaluate: %s" % exc) from None
        gathered = self._gather(calls, task_vars, result) if calls else {}
        if args["facts"] is None:
            facts.update(gathered)

        evaluations = {}
        for role in roles:
            try:
                params = self._as_options(role, args["params"])[1] if role in options else args["params"]
                evaluations[role] = judge(role, facts, options.get(role), params, subject,
                                          args["only"], args["skip"], args["custom_checks"], unavailable.get(role))
            except CheckError as exc:
                raise AnsibleActionFail("rdma.node.evaluate: %s" % exc) from None
        result.update(publish(subject, evaluations, gathered, lambda role: self._fails_on_findings(role, args["fail_on_findings"], options),
                              args["publish"]))

        metrics_file = args["metrics_file"] or next(filter(None, (_node_writer.metrics_file(r, o) for r, o in options.items())), None)
        if metrics_file and not facts.get(UNREACHABLE):
            result["metrics_file"] = metrics_file
            result["metrics_written"], note, result["metrics_written_via"] = self._write_metrics(
                metrics_file, render_metrics(dict(facts, **result["ansible_facts"]), groups=task_vars.get("group_names")))
            if note:
                result["metrics_note"] = note
                result.setdefault("warnings", []).append(note)
        return result

    @staticmethod
    def _as_options(role, params):
        """The task's ``params`` of a role that reads its options, split into those that are options of
        the role (named as its options, so that its specification validates them with the rest: their
        choices, their types) and those only a task gives at run time (the results of a rebuild)."""
        spec = load_specs()[role][0]
        options, runtime = {}, {}
        for name, value in (params or {}).items():
            if role + "_" + name in spec:
                options[role + "_" + name] = value
            else:
                runtime[name] = value
        return options, runtime

    @staticmethod
    def _with_node_facts(params, hosts, task_vars):
        """``params`` with ``nodes``: the facts of ``hosts``, read from hostvars when a check asks for a host."""
        if "nodes" in (params or {}):
            raise AnsibleActionFail("rdma.node.evaluate: give the hosts' facts as params.nodes or their names as node_hosts, not both")
        try:
            return dict(params or {}, nodes=HostFacts(task_vars.get("hostvars"), hosts))
        except CheckError as exc:
            raise AnsibleActionFail("rdma.node.evaluate: node_hosts: %s" % exc) from None

    @staticmethod
    def _fails_on_findings(role, asked, options):
        """The fail switch: as asked, else the role's own ``<role>_fail_on_findings`` option."""
        if asked is not None:
            return asked
        return bool(options.get(role, {}).get(role + "_fail_on_findings", False))

    @staticmethod
    def _plan(gather, options, facts, only, skip):
        """The fact modules to run first and what the options switched off: ``gather`` as given (a dict:
        one of the collection's fact modules and its arguments), none (V(false)), or, by default, what
        the roles' checks read, merged into as few calls as can be."""
        if isinstance(gather, dict):
            unknown = sorted(set(gather) - {"module", "args"})
            if "module" not in gather or unknown:
                raise AnsibleActionFail("rdma.node.evaluate: gather takes module and args, got %s" % ", ".join(sorted(gather)))
            if gather["module"] not in _gather_plan.fact_modules():
                raise AnsibleActionFail("rdma.node.evaluate: gather.module must be one of the collection's fact modules (%s), got %r"
                                        % (", ".join(_gather_plan.fact_modules()), gather["module"]))
            return [(gather["module"], gather.get("args") or {})], {}
        if gather is not None:
            try:
                gather = boolean(gather, strict=True)
            except TypeError:
                raise AnsibleActionFail("rdma.node.evaluate: gather is %r; expected true, false or a dict with module and args"
                                        % (gather,)) from None
            if not gather:
                return [], {}
        return _gather_plan.plan(options, facts, only, skip, force=gather is True)

    def _write_metrics(self, path, text):
        if self._task.check_mode:
            return False, None, None  # check mode writes nothing, as every change of the collection
        return _node_writer.write_metrics(self, path, text)

    def _gather(self, calls, task_vars, result):
        """Run the fact modules on the node; the facts each fills by its declarations (a node's answer is
        hostile: anything else it returns is left out, with a warning), ``rdma_unreachable`` when the host
        cannot be reached (every check is then skipped with Ansible's reason, and a later run that
        reaches it clears it), or the task fails with the module's own message."""
        gathered = {UNREACHABLE: None}
        for module, module_args in calls:
            try:
                facts = self._execute_module(module_name=module, module_args=module_args, task_vars=task_vars)
            except AnsibleConnectionFailure as exc:
                return {UNREACHABLE: {"reason": " ".join(str(exc).split()), "time": _now()}}
            self._remove_tmp_path(self._connection._shell.tmpdir)
            if facts.get("warnings"):
                # The node's words reach the terminal: without escape sequences, and a list whatever it sent.
                warnings = facts["warnings"] if isinstance(facts["warnings"], list) else [facts["warnings"]]
                result.setdefault("warnings", []).extend(strip_controls(warning) for warning in warnings)
            if facts.get("failed") or facts.get("unreachable"):
                raise AnsibleActionFail("rdma.node.evaluate: %s failed on the node: %s" % (module, self._module_failure(facts)))
            returned = facts.get("ansible_facts") if isinstance(facts.get("ansible_facts"), dict) else {}
            declared = _gather_plan.fact_names(module)
            gathered.update((name, value) for name, value in returned.items() if name in declared)
            foreign = sorted(name for name in returned if name not in declared)
            if foreign:
                result.setdefault("warnings", []).append(
                    "rdma.node.evaluate: %s returned facts it does not fill, left out: %s" % (module, ", ".join(visible(name) for name in foreign)[:300]))
        return gathered

    @staticmethod
    def _module_failure(facts):
        """The reason a module gave, or what its crash left (its exception, its output), in one line; the
        node's words without escape sequences, as its warnings."""
        for key in ("msg", "exception", "module_stderr", "module_stdout"):
            text = " ".join(strip_controls(facts.get(key) or "").split())
            if text and text != "MODULE FAILURE See stdout/stderr for the exact error":
                return text[-2000:] if key != "msg" else text
        return "it gave no reason (rc %s)" % facts.get("rc")
