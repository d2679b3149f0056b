# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdma.node.evaluate: the one evaluation and publish path of every role.

Why an action and not a filter: one task per host does the whole job that took a role three or four
(``set_fact`` of the findings, ``set_stats``, recounting in Jinja). An action's result can carry
``ansible_facts`` (kept as host facts, so a fact cache holds them for a later report job) and
``ansible_stats`` (what ``set_stats`` publishes, for AWX) at once, and it runs on the controller,
where the checks of operators (JMESPath) have their library. Fleet scale counts tasks per host.

For the same reason it can run the gather module itself (``gather``): a role that reads one node call
and then evaluates costs one task per host instead of two, and the facts it gathered are kept like
the module's own.
"""

from __future__ import annotations

import os
import shlex
import tempfile

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.plugin_utils import _registry
from ansible_collections.rdma.node.plugins.plugin_utils import _role_inputs
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render as render_metrics
from ansible_collections.rdma.node.plugins.plugin_utils._role_options import RoleOptionsError, load_specs, role_options

# The checks are imported with _evaluation, and every role's argument specification is read now,
# while this plugin is loaded: the strategy loads an action's class in ansible-playbook's main process,
# before it forks a worker per host and task, so the workers inherit them. Loaded in each worker
# instead, the collection loader compiled the checks again for every host: two thirds of the task's
# controller time (profiled at 100 hosts).
load_specs()

ARGUMENT_SPEC = {
    "role": {"type": "str"},
    "roles": {"type": "list", "elements": "str"},
    "params": {"type": "dict"},
    "facts": {"type": "dict"},
    "subject": {"type": "str"},
    "only": {"type": "list", "elements": "str", "default": []},
    "skip": {"type": "list", "elements": "str", "default": []},
    "publish": {"type": "bool", "default": True},
    "gather": {"type": "raw"},
    "custom_checks": {"type": "list", "elements": "dict"},
    "metrics_file": {"type": "str"},
    "fail_on_findings": {"type": "bool"},
    "republish": {"type": "dict"},
}
MUTUALLY_EXCLUSIVE = [("role", "roles", "republish")]
REQUIRED_ONE_OF = [("role", "roles", "republish")]


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE,
                                           required_one_of=REQUIRED_ONE_OF)[1]
        if args["republish"] is not None:
            return dict(result, **self._republish(args["republish"]))
        roles = args["roles"] or [args["role"]]
        if len(roles) > 1 and args["params"] is not None:
            raise AnsibleActionFail("rdma.node.evaluate: params is for one role; with roles, each role's options are read from its variables")
        facts = dict(task_vars.get("ansible_facts") or {}) if args["facts"] is None else args["facts"]
        try:
            options = {role: role_options(role, task_vars, self._templar.template)
                       for role in roles if _role_inputs.has_inputs(role)}
            calls = self._gather_calls(args["gather"], roles, options)
        except (RoleOptionsError, _role_inputs.GatherConflict) as exc:
            raise AnsibleActionFail("rdma.node.evaluate: %s" % exc) from None
        gathered = self._gather(calls, task_vars, result) if calls else {}
        if args["facts"] is None:
            facts.update(gathered)
        subject = args["subject"] or task_vars.get("inventory_hostname") or "localhost"

        kept, published, summaries, metrics_file = dict(gathered), {}, [], args["metrics_file"]
        failing = []
        for role in roles:
            params, custom_checks = args["params"] or {}, args["custom_checks"]
            if role in options:
                params = dict(_role_inputs.parameters(role, options[role], facts), **params)
                if custom_checks is None:
                    custom_checks = options[role].get(role + "_custom_checks")
                metrics_file = metrics_file or _role_inputs.metrics_file(role, options[role])
            try:
                evaluated = evaluate_role(role, facts, params, subject, args["only"], args["skip"], custom_checks or [])
            except _registry.CheckError as exc:
                raise AnsibleActionFail("rdma.node.evaluate: %s" % exc) from None
            kept.update({role + "_findings": evaluated["findings"], role + "_status": evaluated["status"]})
            published["rdma_" + role] = {subject: {"status": evaluated["status"], "findings": evaluated["findings"]}}
            summaries.append(evaluated["status"]["summary"])
            if not evaluated["status"]["ok"] and self._fails_on_findings(role, args["fail_on_findings"], options):
                failing.append(role)
        result.update({"changed": False, "msg": "; ".join(summaries), "ansible_facts": kept})
        if failing:
            # Ansible keeps no facts and publishes no statistics of a failed task: the role's rescue
            # task gives them back (republish) from ansible_failed_result, then fails the host.
            result.update({"failed": True, "failed_roles": failing})
        if metrics_file:
            result["metrics_file"] = metrics_file
            result["metrics_written"], note = self._write_metrics(metrics_file, render_metrics(dict(facts, **kept)), task_vars)
            if note:
                result["metrics_note"] = note
                result.setdefault("warnings", []).append(note)
        if args["publish"]:
            result["ansible_stats"] = {"data": published, "per_host": False, "aggregate": True}
        return result

    @staticmethod
    def _fails_on_findings(role, asked, options):
        """The fail switch: as asked, else the role's own ``<role>_fail_on_findings`` option."""
        if asked is not None:
            return asked
        return bool(options.get(role, {}).get(role + "_fail_on_findings", False))

    @staticmethod
    def _republish(failed):
        """What a failed evaluate task kept and published, from its result (``ansible_failed_result``)."""
        republished = {"changed": False, "msg": str(failed.get("msg") or "")}
        if isinstance(failed.get("ansible_facts"), dict):
            republished["ansible_facts"] = failed["ansible_facts"]
        stats = failed.get("ansible_stats")
        if isinstance(stats, dict) and stats.get("data"):
            republished["ansible_stats"] = stats
        return republished

    @staticmethod
    def _gather_calls(gather, roles, options):
        """The fact modules to run first: ``gather`` as given (a dict: one module and its arguments), none
        (V(false)), or, by default, what the roles' options ask for, merged into as few calls as can be."""
        if isinstance(gather, dict):
            unknown = sorted(set(gather) - {"module", "args"})
            if "module" not in gather or unknown:
                raise AnsibleActionFail("rdma.node.evaluate: gather takes module and args, got %s" % ", ".join(sorted(gather)))
            return [(gather["module"], gather.get("args") or {})]
        if gather is not None:
            try:
                gather = boolean(gather, strict=True)
            except TypeError:
                raise AnsibleActionFail("rdma.node.evaluate: gather is %r; expected true, false or a dict with module and args"
                                        % (gather,)) from None
            if not gather:
                return []
        wanted = [(role, module, module_args) for role in roles if role in options
                  for module, module_args in _role_inputs.gather_calls(role, options[role], force=gather is True)]
        return _role_inputs.merge_gather_calls(wanted)

    def _write_metrics(self, path, text, task_vars):
        """Replace the node's textfile ``path`` atomically, without a module run: one shell command writes
        the text beside the target and renames it over the target (node_exporter reads only names ending
        in .prom, so the copy is never read half written). The text goes in on the command's standard
        input where the connection can send one (local, ssh: one process on the node per host);
        otherwise it is first transferred to Ansible's temporary directory there. A missing directory is
        a note, not a failure (the node is still reported). Like the fleet report's files, the metrics
        are an output of the run, not managed state: never a change."""
        if self._task.check_mode:
            return False, None  # check mode writes nothing, as every change of the collection
        directory = os.path.dirname(path)
        beside = os.path.join(directory, ".rdma_node.prom.tmp")
        place = "test -d {dir} && {write} && chmod 0644 {tmp} && mv -f -- {tmp} {dest}"
        quoted = {"dir": shlex.quote(directory), "tmp": shlex.quote(beside), "dest": shlex.quote(path)}
        try:
            if self._connection.has_pipelining:
                done = self._low_level_execute_command(place.format(write="cat > %s" % quoted["tmp"], **quoted),
                                                       in_data=text.encode("utf-8"), sudoable=True)
            else:
                done = self._write_metrics_through_a_file(place, quoted, text)
        except AnsibleError as exc:
            return False, "no metrics written: %s" % exc
        if done["rc"] == 0:
            return True, None
        return False, "no metrics written: %s" % ((done.get("stderr") or "").strip()
                                                  or "%s does not exist on the node (is prometheus-node-exporter installed?)" % directory)

    def _write_metrics_through_a_file(self, place, quoted, text):
        local_fd, local_path = tempfile.mkstemp(prefix="rdma_node_metrics.")
        try:
            with os.fdopen(local_fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            remote_file = self._connection._shell.join_path(self._make_tmp_path(), "rdma_node.prom")
            self._transfer_file(local_path, remote_file)
            return self._low_level_execute_command(place.format(write="cp -- %s %s" % (shlex.quote(remote_file), quoted["tmp"]), **quoted),
                                                   sudoable=True)
        finally:
            os.unlink(local_path)
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _gather(self, calls, task_vars, result):
        """Run the gather modules on the node; their facts, or the task fails with a module's message."""
        gathered = {}
        for module, module_args in calls:
            if not module.startswith("rdma.node."):
                raise AnsibleActionFail("rdma.node.evaluate: gather.module must be one of the collection's fact modules "
                                        "(rdma.node.ib_facts, rdma.node.node_facts...), got %r" % module)
            try:
                facts = self._execute_module(module_name=module, module_args=module_args, task_vars=task_vars)
            finally:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            if facts.get("warnings"):
                result.setdefault("warnings", []).extend(facts["warnings"])
            if facts.get("failed"):
                raise AnsibleActionFail("rdma.node.evaluate: %s: %s" % (module, facts.get("msg", "failed on the node")))
            gathered.update(facts.get("ansible_facts") or {})
        return gathered
