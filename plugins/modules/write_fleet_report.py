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
    C(fleet-report.html) in O(dir) on the controller.
  - The Markdown and HTML come from the templates of the C(rdma.node.fleet_report) role, which the action
    reads from the collection it belongs to, so it works in any play, inside the role or not. They are
    rendered by Jinja on plain data; the report never becomes a fact, so a thousand-host play does not
    carry it through its later tasks.
  - Every file is rendered before any is written, and all are written to temporary files before they
    replace the old ones, so a failed template or a full disk leaves the earlier report whole.
  - Compares with the JSON report already in O(dir) (the previous run's) and puts the changes at the top
    of every format, per host, the findings that are new, resolved and still open. A finding is the
    same when its role, check and subject are; it is resolved only where this run checked it again.
  - A host reads as C(unreachable) when the collection's gather could not reach it (the fact
    C(rdma_unreachable), with Ansible's reason), as C(no_data) when no role left results for it (with
    why, as far as the action can tell from the play). The checks that could not run on a host are
    listed as not checked, whatever its status.
  - Texts from the nodes and the inventory (host, group, device and netdev names, firmware, kernel log
    lines, messages) are made safe for every format and for the terminal. Control characters and
    terminal escape sequences are removed, or spelled out in host and group names. Markdown
    characters are escaped in the Markdown, HTML in the HTML.
  - With O(upload_url), uploads the files afterwards. A failed upload never fails the task. It is a
    warning and RV(upload), and the hosts to fail are returned as ever. The URL's user, password and query
    are redacted wherever it is shown.
  - Returns the totals, the files and the hosts to fail, and publishes C(rdma_fleet_report) (totals,
    changes, directory, schema version, upload) and C(rdma_fleet) (the summary sized for AWX's
    artifacts, see O(artifact_max_bytes)) in the run's custom stats.
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
    description:
      - Where the files are uploaded, each to C(<upload_url>/<file name>); no upload when unset.
      - Recorded in C(rdma_fleet) with its user, password, query and fragment replaced by C(REDACTED).
    type: str
  upload_method:
    description: The HTTP method of the upload.
    type: str
    choices: [PUT, POST]
    default: PUT
  upload_headers:
    description: HTTP headers of every upload request, such as C(Authorization). Never shown.
    type: dict
    default: {}
  upload_validate_certs:
    description: V(false) accepts a server certificate that does not validate.
    type: bool
    default: true
  upload_timeout:
    description: Seconds each upload request may wait for the server, to connect and for each answer.
    type: float
    default: 30
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

- name: Fail the hosts with a critical finding, or that could not be reached
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
  description:
    - Hosts in all and per status (V(critical), V(unreachable), V(no_data), V(warning), V(ok)), findings, cluster
      findings, and C(hosts_not_fully_checked), the hosts with a check that could not run or judge.
  returned: always
  type: dict
changes:
  description:
    - The counts of findings V(new), V(resolved), V(still_open) and V(not_checked) (gone, but not checked again)
      since the previous report in O(dir), and C(hosts_changed); V(null) when there was no earlier report to read.
  returned: always
  type: dict
upload:
  description:
    - With O(upload_url), the upload's outcome, V(null) without.
    - C(url) (redacted), C(ok), C(files) (each C(file) and the HTTP C(status)), C(error) (one line, or V(null)) and
      C(not_sent) (the files not uploaded).
  returned: always
  type: dict
schema_version:
  description: The version of the JSON report's shape.
  returned: always
  type: int
failing_hosts:
  description:
    - Each host with a critical finding, and each host that could not be reached, by inventory name, with a
      one-line message (its critical findings, or Ansible's reason).
  returned: always
  type: dict
msg:
  description: One line with the totals and the files.
  returned: always
  type: str
"""
