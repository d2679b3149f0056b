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
from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.module_utils import _checks
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role, load_checks
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render as render_metrics

# Import every check file now, while this plugin is loaded: the strategy loads an action's class in
# ansible-playbook's main process, before it forks a worker per host and task, so the workers inherit
# the loaded checks. Loaded in each worker instead, the collection loader compiled them again for
# every host: two thirds of the task's controller time (profiled at 100 hosts).
load_checks()

ARGUMENT_SPEC = {
    "role": {"type": "str", "required": True},
    "params": {"type": "dict", "default": {}},
    "facts": {"type": "dict"},
    "subject": {"type": "str"},
    "only": {"type": "list", "elements": "str", "default": []},
    "skip": {"type": "list", "elements": "str", "default": []},
    "publish": {"type": "bool", "default": True},
    "gather": {"type": "dict", "options": {
        "module": {"type": "str", "required": True},
        "args": {"type": "dict", "default": {}},
    }},
    "custom_checks": {"type": "list", "elements": "dict", "default": []},
    "metrics_file": {"type": "str"},
}


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        gathered = {}
        if args["gather"]:
            gathered = self._gather(args["gather"], task_vars, result)
        facts = args["facts"] if args["facts"] is not None else dict(task_vars.get("ansible_facts") or {}, **gathered)
        subject = args["subject"] or task_vars.get("inventory_hostname") or "localhost"
        try:
            evaluated = evaluate_role(args["role"], facts, args["params"], subject, args["only"], args["skip"], args["custom_checks"])
        except _checks.CheckError as exc:
            raise AnsibleActionFail("rdma.node.evaluate: %s" % exc) from None
        role = args["role"]
        result.update({
            "changed": False,
            "msg": evaluated["status"]["summary"],
            "ansible_facts": dict(gathered, **{role + "_findings": evaluated["findings"], role + "_status": evaluated["status"]}),
        })
        if args["metrics_file"]:
            metrics_facts = dict(facts, **result["ansible_facts"])
            result["metrics_file"] = args["metrics_file"]
            result["metrics_written"], note = self._write_metrics(args["metrics_file"], render_metrics(metrics_facts), task_vars)
            if note:
                result["metrics_note"] = note
        if args["publish"]:
            result["ansible_stats"] = {
                "data": {"rdma_" + role: {subject: {"status": evaluated["status"], "findings": evaluated["findings"]}}},
                "per_host": False,
                "aggregate": True,
            }
        return result

    def _write_metrics(self, path, text, task_vars):
        """Replace the node's textfile ``path`` atomically, without a module run: the text goes to Ansible's
        temporary directory on the node, then one shell command copies it beside the target and renames
        it over the target (node_exporter reads only names ending in .prom, so the copy is never read
        half written). A missing directory is a note, not a failure (the node is still reported). Like
        the fleet report's files, the metrics are an output of the run, not managed state: never a change."""
        if self._task.check_mode:
            return False, None  # check mode writes nothing, as every change of the collection
        directory = os.path.dirname(path)
        local_fd, local_path = tempfile.mkstemp(prefix="rdma_node_metrics.")
        try:
            with os.fdopen(local_fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            remote_tmp = self._make_tmp_path()
            remote_file = self._connection._shell.join_path(remote_tmp, "rdma_node.prom")
            self._transfer_file(local_path, remote_file)
            beside = os.path.join(directory, ".rdma_node.prom.tmp")
            command = "test -d {dir} && cp -- {src} {tmp} && chmod 0644 {tmp} && mv -f -- {tmp} {dest}".format(
                dir=shlex.quote(directory), src=shlex.quote(remote_file), tmp=shlex.quote(beside), dest=shlex.quote(path))
            done = self._low_level_execute_command(command, sudoable=True)
        except AnsibleError as exc:
            return False, "no metrics written: %s" % exc
        finally:
            os.unlink(local_path)
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if done["rc"] == 0:
            return True, None
        return False, "no metrics written: %s" % ((done.get("stderr") or "").strip() or "%s does not exist on the node" % directory)

    def _gather(self, gather, task_vars, result):
        """Run the gather module on the node; its facts, or the task fails with the module's message."""
        if not gather["module"].startswith("rdma.node."):
            raise AnsibleActionFail("rdma.node.evaluate: gather.module must be one of the collection's fact modules "
                                    "(rdma.node.ib_facts, rdma.node.node_facts...), got %r" % gather["module"])
        try:
            gathered = self._execute_module(module_name=gather["module"], module_args=gather["args"], task_vars=task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if gathered.get("warnings"):
            result.setdefault("warnings", []).extend(gathered["warnings"])
        if gathered.get("failed"):
            raise AnsibleActionFail("rdma.node.evaluate: %s: %s" % (gather["module"], gathered.get("msg", "failed on the node")))
        return gathered.get("ansible_facts") or {}
