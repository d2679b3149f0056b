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

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.module_utils import _checks
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role

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
        if args["publish"]:
            result["ansible_stats"] = {
                "data": {"rdma_" + role: {subject: {"status": evaluated["status"], "findings": evaluated["findings"]}}},
                "per_host": False,
                "aggregate": True,
            }
        return result

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
