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
  - Each check declares the fact paths it reads (C(rdma.pcie), C(rdma.ports[].counters), C(rdma_driver))
    and each fact reader the paths it fills. A check whose data was not gathered (its subset was not
    asked for, an option switched it off, the host could not be reached) is not run and never counted
    as passed; the status lists it under C(skipped_checks) with the subsets it lacked and the reason,
    and what a check that ran could not judge under C(not_checked).
  - Runs on the controller; nothing is sent to the node, unless O(gather) runs a fact module there first.
  - "For the readiness roles C(ib_inventory), C(driver_verify) and C(node_health) the role's name is
    enough: the action reads the role's options from the task's variables (the role's defaults where
    a variable is unset, as Ansible ranks them), checks them against the role's
    C(meta/argument_specs.yml) and types them as Ansible's own role validation would, then derives the
    checks' parameters, the fact modules to run, the operators' checks and the metrics file from
    them. An option that does not fit fails the task with one sentence naming the role and the option,
    before anything runs on the node."
  - At fleet scale every task costs its time on every host; this lets one task do what a role's
    validation, gather, check and publish tasks did, and lets C(rdma.node.site) check three roles with
    one task and one node call per host.
author: rdma.node developers (!UNKNOWN)
options:
  role:
    description:
      - The role whose checks run.
      - Exactly one of O(role) and O(roles) is required.
    type: str
  roles:
    description:
      - Several readiness roles checked in one task, each with the options it reads from the task's
        variables. Their fact modules run once, M(rdma.node.ib_facts) and M(rdma.node.driver_facts)
        become one M(rdma.node.node_facts) call, with the fact subsets of every role.
      - Two roles that ask one module to read from different places (C(ib_inventory_sysfs_root) and
        C(node_health_sysfs_root), say) fail the task with a message naming both.
    type: list
    elements: str
  params:
    description:
      - The role's parameters, named without the role prefix (C(expected_ports) for
        C(ib_inventory_expected_ports)). Each check receives only the parameters it declares; a
        parameter that is not given is V(null).
      - For a readiness role, these are added to (and win over) the parameters derived from its
        options. Not with O(roles).
    type: dict
  node_hosts:
    description:
      - Inventory hosts whose facts the checks read as the parameter C(nodes) (host to its facts), for a
        cluster-scope role that judges nodes from the controller (C(pod_proof)). The action reads a host's
        facts from C(hostvars) when a check asks about that host, instead of a template copying every
        host's facts into O(params).
      - Not with a C(nodes) in O(params), nor with O(roles).
    type: list
    elements: str
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
      - Run fact modules of the collection on the node first, in the same task, and check the facts
        they return (kept as host facts too). At fleet scale this saves a task on every host.
      - A dict with C(module) and its C(args) runs that module; only the collection's fact modules,
        which read and change nothing (V(rdma.node.ib_facts), V(rdma.node.driver_facts),
        V(rdma.node.node_facts), V(rdma.node.container_limits)).
      - Not given, each role that gathers (one with a C(<role>_gather) option, that is C(ib_inventory),
        C(driver_verify) and C(node_health)) gathers the fact subsets its chosen checks read, with the
        arguments its options give, unless that option is V(false) (the play gathered already); a
        boolean option C(<role>_<subset>) that is V(false) (C(node_health_kernel_log)) leaves that subset
        out, and the checks that need it are skipped with that reason. V(true) gathers for every role
        whatever C(<role>_gather) says; V(false) gathers nothing. Other roles gather nothing unless
        given a dict.
      - A host that cannot be reached during the gather is not a failed task. It keeps the fact
        C(rdma_unreachable) (C(reason), Ansible's message, and C(time)), every check is skipped with that
        reason, and the report shows the host as unreachable. A later run that reaches it sets the fact
        to V(null).
    type: raw
  custom_checks:
    description:
      - The operators' own checks, run with the role's after them as checks named C(custom_<name>).
      - Each is a dict with C(name) (letters, digits, C(_)), C(severity) (V(critical), V(warning) or
        V(info)), C(message), C(expression) (JMESPath over the host's facts, evaluated on the controller
        with the jmespath library) and optionally C(subject) (JMESPath applied to each element of a
        list result; default the check's name) and C(reads) (the fact paths the expression needs,
        default V([rdma]); a check whose facts are missing is skipped).
      - A result that JMESPath counts as true is a finding (V(false), V(null), empty strings, lists and
        objects are false); a list gives one finding per element.
      - A malformed entry or an expression that does not compile fails the task with one message naming the check.
      - Default for a readiness role with such an option, C(<role>_custom_checks) (C(node_health_custom_checks)).
    type: list
    elements: dict
  metrics_file:
    description:
      - Also write the host's metrics (Prometheus text format, C(rdma_node_*)) to this file on the node, for
        node_exporter's textfile collector, replacing it atomically (a copy beside it, renamed over it).
      - No module runs for it, so it adds no Python start on the node, only one shell command. It reads
        the text on its standard input where the command surely reads it, that is where the connection can
        send it and nothing runs through become, or where pipelining is enabled (which Ansible allows only
        with a become method that needs no tty). Otherwise (a sudo that may require a tty, C(su), a
        connection without standard input) the text is transferred to Ansible's temporary directory on the
        node first.
      - The temporary file is created under a random name beside the target, exclusively and without
        following a link (a link planted in the directory makes the write fail, never redirects it),
        with mode 0644 from the umask (nothing is chmod-ed), and removed when the write fails.
      - A directory that does not exist is a warning and a note in the result (C(metrics_note)), not a
        failure. Nothing is written in check mode.
      - Default for C(node_health), C(rdma_node.prom) in C(node_health_metrics_dir) (none when that is empty).
    type: str
  fail_on_findings:
    description:
      - Fail the task when a critical finding remains (the summary lines are the message, C(failed_roles)
        names the roles).
      - Default for a readiness role, its C(<role>_fail_on_findings) option; V(false) for the others.
    type: bool
extends_documentation_fragment:
  - rdma.node.attributes
  - rdma.node.attributes.facts
notes:
  - A bad parameter or a failing check gives one sentence that names the check and what was expected.
  - A failed task keeps no facts and publishes nothing in Ansible. When O(fail_on_findings) fails the
    task, its result still holds the facts and the statistics; the roles run the evaluation in a block
    whose rescue gives them back (M(rdma.node.republish)) and then fails the host, so only a failed host takes
    more than one task.
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

- name: Check a readiness role with its own options (the role's variables, its defaults where unset)
  rdma.node.evaluate:
    role: node_health

- name: Check three roles with one node call
  rdma.node.evaluate:
    roles: [ib_inventory, driver_verify, node_health]

# Failing a host for its findings while keeping them: see rdma.node.republish's example.

- name: Show the summary line
  ansible.builtin.debug:
    msg: "{{ ansible_facts.ib_inventory_status.summary }}"
"""

RETURN = r"""
metrics_written:
  description: Whether O(metrics_file) was written.
  returned: when O(metrics_file) is given
  type: bool
metrics_written_via:
  description: How the metrics reached the node, V(standard input) or V(a transferred file); V(null) in check mode.
  returned: when O(metrics_file) is given
  type: str
metrics_note:
  description: Why O(metrics_file) was not written.
  returned: when O(metrics_file) is given and was not written
  type: str
failed_roles:
  description: The roles whose critical findings failed the task.
  returned: when O(fail_on_findings) failed the task
  type: list
  elements: str
msg:
  description: The summary line of the host, the same as C(<role>_status.summary); with O(roles), each role's, joined by C(; ).
  returned: always
  type: str
  sample: "ib_inventory on v100-node-02: 1 critical: mlx5_1/1 is DOWN (Polling); expected ACTIVE"
ansible_facts:
  description:
    - The findings and the status, kept as host facts under two keys per role, named after it
      (C(ib_inventory_findings) and C(ib_inventory_status), ...).
    - C(<role>_findings) is every finding, each with C(role), C(check), C(severity), C(subject), C(message),
      C(expected), C(actual).
    - C(<role>_status) holds C(ok) (no critical finding), the counts C(critical), C(warning), C(info), the
      C(checks) that ran, the C(skipped_checks) (each with C(check), the C(missing) fact subsets and the
      C(reason)), C(not_checked) (each with C(check), C(subject) and C(reason), what a check that ran could
      not judge), the C(summary) line, and what the role adds (the port verdicts of C(ib_inventory), the
      kernels of C(driver_verify), ...).
  returned: always
  type: dict
"""
