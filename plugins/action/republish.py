# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdma.node.republish: give back what a failed rdma.node.evaluate task kept and
published, which Ansible drops with a failed task's result."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.plugin_utils._publish import republished

ARGUMENT_SPEC = {"result": {"type": "dict", "required": True}}


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        result.update(republished(args["result"]))
        return result
