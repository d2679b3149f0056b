# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The publishing stage of ``rdma.node.evaluate``: what a host keeps and what the run publishes.

Each role's findings and status are kept as host facts (``<role>_findings``, ``<role>_status``), so a
fact cache holds them for a later report job, and published as the run's custom statistics
(``rdma_<role>``: the subject's status and findings, aggregated over the hosts, what AWX shows as
the job's artifacts). The task's message is the roles' summary lines; the roles whose critical
findings fail the task are named.
"""

from __future__ import annotations


def publish(subject, evaluations, gathered=None, fails_on=lambda role: False, with_stats=True):
    """The result fields of an evaluate task for ``evaluations`` (``{role: {"findings", "status"}}``, in
    order) on ``subject``: ``ansible_facts`` (``gathered`` plus each role's findings and status),
    ``msg``, ``ansible_stats`` unless ``with_stats`` is false, and ``failed``/``failed_roles`` when a
    role with a critical finding has its fail switch on (``fails_on(role)``)."""
    kept, published, summaries, failing = dict(gathered or {}), {}, [], []
    for role, evaluated in evaluations.items():
        kept[role + "_findings"] = evaluated["findings"]
        kept[role + "_status"] = evaluated["status"]
        published["rdma_" + role] = {subject: {"status": evaluated["status"], "findings": evaluated["findings"]}}
        summaries.append(evaluated["status"]["summary"])
        if not evaluated["status"]["ok"] and fails_on(role):
            failing.append(role)
    result = {"changed": False, "msg": "; ".join(summaries), "ansible_facts": kept}
    if failing:
        # Ansible keeps no facts and publishes no statistics of a failed task: the role's rescue
        # task gives them back (rdma.node.republish) from ansible_failed_result, then fails the host.
        result.update(failed=True, failed_roles=failing)
    if with_stats:
        result["ansible_stats"] = {"data": published, "per_host": False, "aggregate": True}
    return result


def republished(failed):
    """What a failed evaluate task kept and published, from its result (``ansible_failed_result``)."""
    result = {"changed": False, "msg": str(failed.get("msg") or "")}
    if isinstance(failed.get("ansible_facts"), dict):
        result["ansible_facts"] = failed["ansible_facts"]
    stats = failed.get("ansible_stats")
    if isinstance(stats, dict) and stats.get("data"):
        result["ansible_stats"] = stats
    return result
