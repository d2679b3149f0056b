#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name, on the controller; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: write_fleet_report
short_description: Build the RDMA fleet report from the hosts' findings and write it on the controller
version_added: 0.2.0
description:
  - Reads, for each host of O(hosts), the findings and statuses of every role of the check registry
    (live, or from a fact cache), and the cluster-scope results of O(cluster_hosts); builds the report
    of M(rdma.node.fleet_report_data); writes C(fleet-report.json), C(fleet-report.md) and
    C(fleet-report.html) atomically in O(dir) on the controller.
  - The Markdown and HTML come from the templates of the C(rdma.node.fleet_report) role, rendered by
    Jinja on plain data; the report never becomes a fact, so a thousand-host play does not carry it
    through its later tasks.
  - Returns the totals, the files and the hosts with a critical finding, and publishes
    C(rdma_fleet_report) (totals, directory, schema version) and C(rdma_fleet) (the summary sized for
    AWX's artifacts, see O(artifact_max_bytes)) in the run's custom stats.
  - Refuses a directory inside an installed copy of the collection, which an upgrade replaces.
  - Run it once (C(run_once)); it needs no connection to any host.
author: rdma.node developers (!UNKNOWN)
options:
  hosts:
    description: The inventory hosts to report on.
    type: list
    elements: str
    required: true
  dir:
    description: The directory on the controller for the files; created when missing.
    type: path
    required: true
  formats:
    description: The files to write.
    type: list
    elements: str
    choices: [json, markdown, html]
    default: [json, markdown, html]
  title:
    description: The report's title.
    type: str
    default: RDMA fleet report
  sources:
    description: The roles whose findings are read. Default is every role of the check registry.
    type: list
    elements: str
  cluster_hosts:
    description: The hosts on which cluster-scope roles (C(k8s_rdma)) ran.
    type: list
    elements: str
    default: [localhost]
  upload_url:
    description: Where the files are uploaded, if they are (by the role's next task); recorded in C(rdma_fleet).
    type: str
  artifact_max_bytes:
    description:
      - The size, in bytes of compact JSON, of the C(rdma_fleet) summary published in the run's custom stats
        (AWX keeps it as the job's artifacts). When the findings do not fit, info findings, then the ok hosts'
        names, then warnings, then the least bad hosts are left out, and the summary says what was.
    type: int
    default: 65536
extends_documentation_fragment:
  - rdma.node.attributes
attributes:
  check_mode:
    support: full
    details: The files are outputs of the run, not managed state; they are written in check mode too.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Write the report of every host of the play
  rdma.node.write_fleet_report:
    hosts: "{{ ansible_play_hosts_all }}"
    dir: /var/lib/rdma-node/reports
  run_once: true
  register: report

- name: Fail the hosts with a critical finding
  ansible.builtin.fail:
    msg: "{{ report.failing_hosts[inventory_hostname] }}"
  when: inventory_hostname in report.failing_hosts
"""

RETURN = r"""
file_names:
  description: The names of the files written, in O(dir).
  returned: always
  type: list
  elements: str
  sample: [fleet-report.json]
files:
  description: The files written.
  returned: always
  type: list
  elements: str
  sample: [/var/lib/rdma-node/reports/fleet-report.json]
dir:
  description: O(dir).
  returned: always
  type: str
totals:
  description: Hosts in all and per status (V(critical), V(warning), V(ok), V(no_data)), findings and cluster findings.
  returned: always
  type: dict
schema_version:
  description: The version of the JSON report's shape.
  returned: always
  type: int
failing_hosts:
  description: Each host with a critical finding, with a one-line message naming them.
  returned: always
  type: dict
msg:
  description: One line with the totals and the files.
  returned: always
  type: str
"""
