#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name, on the controller; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: republish
short_description: Keep and publish the findings of a failed rdma.node.evaluate task
version_added: 0.3.0
description:
  - Ansible keeps no facts and publishes no statistics of a failed task. When M(rdma.node.evaluate)
    fails a host for its critical findings (O(rdma.node.evaluate#module:fail_on_findings)), its result
    still holds the findings, the status and the statistics; this action, run in the rescue of the
    block, gives them back from O(result), so the fact cache and AWX's artifacts hold the failed
    host's findings like any other's.
  - Runs on the controller; nothing is sent to the node. No check runs.
author: rdma.node developers (!UNKNOWN)
options:
  result:
    description:
      - The failed task's result, C(ansible_failed_result) in a rescue.
      - Its C(ansible_facts) are kept and its C(ansible_stats) published; anything else is left out.
    type: dict
    required: true
extends_documentation_fragment:
  - rdma.node.attributes
  - rdma.node.attributes.facts
seealso:
  - module: rdma.node.evaluate
"""

EXAMPLES = r"""
- name: Check the ports, and fail the host for a critical finding after keeping and publishing it
  block:
    - name: Check the ports
      rdma.node.evaluate:
        role: ib_inventory
        fail_on_findings: true
  rescue:
    - name: Keep and publish the findings of the failed host
      rdma.node.republish:
        result: "{{ ansible_failed_result }}"
    - name: Fail the host
      ansible.builtin.fail:
        msg: "{{ ansible_failed_result.msg }}"
"""

RETURN = r"""
msg:
  description: The failed task's message (its summary lines).
  returned: always
  type: str
ansible_facts:
  description: The facts the failed task kept (C(<role>_findings), C(<role>_status), the gathered facts).
  returned: when the failed task kept any
  type: dict
"""
