# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the pod_proof role: its plan, its pods, and when a batch has settled.

The logic lives in ``plugin_utils/_pod_proof.py``; each filter has a YAML documentation file beside
this one."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule, call

_pod_proof = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._pod_proof")


def pod_proof_host_views(hostvars, hosts):
    """``{host: view}`` of each of ``hosts`` (``_pod_proof.host_view``), read from Ansible's ``hostvars``.

    Facts and inventory names are never templates, so each host's variables are read raw where hostvars
    can (``raw_get``): rendering every host's variables, as ``hostvars[host]`` does, cost the main job's
    NCCL play about 7 ms a host."""
    if not hasattr(hostvars, "raw_get") and not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("rdma.node.pod_proof_host_views: expected hostvars, got %s" % type(hostvars).__name__)
    if isinstance(hosts, (str, bytes)) or not hasattr(hosts, "__iter__"):
        raise AnsibleFilterError("rdma.node.pod_proof_host_views: expected a list of inventory hosts, got %s" % type(hosts).__name__)
    views = {}
    for host in hosts:
        # A host outside the inventory has no facts, and the plan leaves it out with a note.
        host_vars = _pod_proof.raw_host_variables(hostvars, host)
        views[str(host)] = _pod_proof.host_view(host_vars) if host_vars is not None else {"ansible_facts": {}}
    return views


def pod_proof_plan(host_views, groups, hosts, options):
    """The pairs of each group, their pods' batches and notes (``_pod_proof.plan``). Without pods
    (``run_pods`` false) no pair is planned, and the hosts' views are not even copied: the main job's
    NCCL play passes every host's."""
    run_pods = options.get("run_pods", True) if isinstance(options, Mapping) else True
    return call("pod_proof_plan", _pod_proof.plan, host_views if run_pods else {}, groups, hosts, options)


def pod_proof_manifests(plan, batch, side, options, run_id, pods=None):
    """The Pods of one side of a batch. Client pods only for tests whose server is ready, with its address."""
    def build(plan_, batch_, side_, options_, run_id_, pods_):
        numbers = [b for b in plan_["batches"] if b["batch"] == int(batch_)]
        if not numbers:
            raise _pod_proof.PodProofError("batch %s is not in the plan (%d batches)" % (batch_, len(plan_["batches"])))
        options_ = dict(options_, settings=plan_["settings"], tool=plan_["tool"])
        states = {}
        for pod in pods_ or []:
            state = _pod_proof.pod_state(pod)
            states[(state["labels"].get(_pod_proof.TEST_LABEL), state["labels"].get(_pod_proof.SIDE_LABEL))] = state
        manifests = []
        for index in numbers[0]["tests"]:
            test = plan_["tests"][index]
            if side_ == "server":
                manifests.append(_pod_proof.pod_manifest(test, "server", options_, run_id_, batch_))
                continue
            server = states.get((str(index), "server"))
            if server and server["ready"] and server["ip"] and not server["ended"]:
                manifests.append(_pod_proof.pod_manifest(test, "client", options_, run_id_, batch_, server["ip"]))
        return manifests
    return call("pod_proof_manifests", build, plan, batch, side, options, run_id, pods)


def pod_proof_settled(pods, sides, want="ready"):
    """Whether every pod of ``sides`` is ready (``want=ready``: or ended, or stuck) or ended (``want=ended``: or stuck)."""
    if want not in ("ready", "ended"):
        raise AnsibleFilterError("rdma.node.pod_proof_settled: want must be ready or ended, got %r" % (want,))
    return call("pod_proof_settled", _pod_proof.batch_settled, pods, sides, want)


def pod_proof_nccl_files(plan):
    """The saved NCCL logs and nccl-tests outputs the groups' settings name."""
    return call("pod_proof_nccl_files", _pod_proof.nccl_files, plan)


def pod_proof_nccl_evidence(saved, launched, plan, groups):
    """Each group's NCCL evidence (saved files read, launcher outputs) for the NCCL checks."""
    return call("pod_proof_nccl_evidence", _pod_proof.nccl_evidence, saved, launched, plan, groups)


def pod_proof_node_views(status, findings=None, time=None):
    """Each inventory host's part of the pod proof (``_pod_proof.node_views``), stamped with ``time`` (now by default)."""
    def build(status_, findings_, time_):
        return _stamped(_pod_proof.node_views(status_, findings_), time_)
    return call("pod_proof_node_views", build, status, findings, time)


def pod_proof_group_nccl(status, time=None):
    """Each group's NCCL evidence of the pod proof (``_pod_proof.group_nccl_views``), stamped with ``time`` (now by default)."""
    def build(status_, time_):
        return _stamped(_pod_proof.group_nccl_views(status_), time_)
    return call("pod_proof_group_nccl", build, status, time)


def _stamped(views, time):
    """Each view with ``time``: the given seconds since the epoch, or now."""
    import time as clock  # the default stamp only
    if time is None:
        stamp = clock.time()
    elif isinstance(time, (int, float)) and not isinstance(time, bool):
        stamp = float(time)
    else:
        raise _pod_proof.PodProofError("time: expected seconds since the epoch (a number), got %r" % (time,))
    return {name: dict(view, time=stamp) for name, view in views.items()}


class FilterModule:
    """The pod proof's plan and pods."""

    def filters(self):
        return {
            "pod_proof_host_views": pod_proof_host_views,
            "pod_proof_plan": pod_proof_plan,
            "pod_proof_manifests": pod_proof_manifests,
            "pod_proof_settled": pod_proof_settled,
            "pod_proof_nccl_files": pod_proof_nccl_files,
            "pod_proof_nccl_evidence": pod_proof_nccl_evidence,
            "pod_proof_node_views": pod_proof_node_views,
            "pod_proof_group_nccl": pod_proof_group_nccl,
        }
