#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name, on the controller; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: evaluate
short_description: Run a role's registered checks on a host's facts, keep and publish the findings
version_added: 0.2.0
description:
  - The one evaluation and publish path of the collection. Every check is a Python function
    registered for a role (C(ib_inventory), C(driver_verify), C(node_remediation), C(bandwidth_check),
    C(k8s_rdma), C(fleet_health)); this action runs the checks of O(role) on the facts of the host
    and the role's O(params).
  - "Keeps the result as host facts C(<role>_findings) and C(<role>_status), so a fact cache holds
    them for a later report job, and publishes them with the custom stats of the run (what
    M(ansible.builtin.set_stats) publishes, the C(artifact_data) of an AWX job) as
    C(rdma_<role>), a mapping of the subject to C(status) and C(findings), aggregated over the hosts."
  - A check whose facts are missing (a fact subset that was not gathered) is not run; the status
    lists it under C(skipped_checks) with the facts it lacked.
  - Runs on the controller; nothing is sent to the node, unless O(gather) names a fact module to run there first.
author: rdma.node developers (!UNKNOWN)
options:
  role:
    description: The role whose checks run.
    type: str
    required: true
  params:
    description:
      - The role's parameters, named without the role prefix (C(expected_ports) for
        C(ib_inventory_expected_ports)). Each check receives only the parameters it declares; a
        parameter that is not given is V(null).
    type: dict
    default: {}
  facts:
    description: The facts to check. Default is the host's C(ansible_facts).
    type: dict
  subject:
    description:
      - Whom the findings are about in the published stats. Default is the inventory host name;
        cluster-scope roles name the cluster, as C(cluster/<name>).
    type: str
  only:
    description: Run only these checks of the role.
    type: list
    elements: str
    default: []
  skip:
    description: Do not run these checks of the role.
    type: list
    elements: str
    default: []
  publish:
    description: V(false) keeps the facts but publishes nothing in the run's custom stats.
    type: bool
    default: true
  gather:
    description:
      - Run this fact module of the collection on the node first, in the same task, and check the facts
        it returns (kept as host facts too). At fleet scale this saves a task on every host.
    type: dict
    suboptions:
      module:
        description: The module, V(rdma.node.ib_facts), V(rdma.node.driver_facts) or V(rdma.node.node_facts).
        type: str
        required: true
      args:
        description: Its arguments.
        type: dict
        default: {}
  custom_checks:
    description:
      - The operators' own checks, run with the role's after them as checks named C(custom_<name>).
      - Each is a dict with C(name) (letters, digits, C(_)), C(severity) (V(critical), V(warning) or
        V(info)), C(message), C(expression) (JMESPath over the host's facts, evaluated on the controller
        with the jmespath library) and optionally C(subject) (JMESPath applied to each element of a
        list result; default the check's name) and C(reads) (the top-level facts the expression needs,
        default V([rdma]); a check whose facts are missing is skipped).
      - A result that JMESPath counts as true is a finding (V(false), V(null), empty strings, lists and
        objects are false); a list gives one finding per element.
      - A malformed entry or an expression that does not compile fails the task with one message naming the check.
    type: list
    elements: dict
    default: []
  metrics_file:
    description:
      - Also write the host's metrics (Prometheus text format, C(rdma_node_*)) to this file on the node, for
        node_exporter's textfile collector, replacing it atomically (a copy beside it, renamed over it).
      - No module runs for it, so it adds no Python start on the node. A directory that does not exist
        is a note in the result (C(metrics_note)), not a failure. Nothing is written in check mode.
    type: str
extends_documentation_fragment:
  - rdma.node.attributes
  - rdma.node.attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
notes:
  - A bad parameter or a failing check gives one sentence that names the check and what was expected.
seealso:
  - module: rdma.node.ib_facts
  - module: rdma.node.driver_facts
"""

EXAMPLES = r"""
- name: Check the ports of an ib-a100 node
  rdma.node.evaluate:
    role: ib_inventory
    params:
      expected_ports:
        - {count: 1, any_of: [mlx5_0/1, mlx5_1/1], link_layer: InfiniBand, min_rate_gbps: 200}
      allowed_down_ports: [mlx5_0/1, mlx5_1/1]

- name: Gather the ports and check them, in one task
  rdma.node.evaluate:
    role: ib_inventory
    gather:
      module: rdma.node.ib_facts
    params:
      expected_ports: [{port: mlx5_0/1, min_rate_gbps: 100}]

- name: Show the summary line
  ansible.builtin.debug:
    msg: "{{ ansible_facts.ib_inventory_status.summary }}"
"""

RETURN = r"""
metrics_written:
  description: Whether O(metrics_file) was written.
  returned: when O(metrics_file) is given
  type: bool
metrics_note:
  description: Why O(metrics_file) was not written.
  returned: when O(metrics_file) is given and was not written
  type: str
msg:
  description: The summary line of the host, the same as C(<role>_status.summary).
  returned: always
  type: str
  sample: "ib_inventory on v100-node-02: 1 critical: mlx5_1/1 is DOWN (Polling); expected ACTIVE"
ansible_facts:
  description: The findings and the status, kept as host facts.
  returned: always
  type: dict
  contains:
    <role>_findings:
      description: Every finding, each with C(role), C(check), C(severity), C(subject), C(message), C(expected), C(actual).
      type: list
      elements: dict
    <role>_status:
      description:
        - C(ok) (no critical finding), the counts C(critical), C(warning), C(info), the C(checks) that ran,
          the C(skipped_checks) with their C(missing_facts), the C(summary) line, and what the role adds
          (the port verdicts of C(ib_inventory), the kernels of C(driver_verify), ...).
      type: dict
"""
