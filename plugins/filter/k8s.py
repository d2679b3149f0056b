# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the cluster side: device plugin config, tolerations, mofed.wait, node resources.

The two that give findings (mofed.wait, node resources) run the registered checks of the k8s_rdma
role (plugins/plugin_utils/_checks/cluster.py) on the objects they are given.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule, call, plain_data

_k8s_rdma = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._k8s_rdma")
_cluster_checks = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._checks.cluster")


def _host_facts(hostvars, host):
    """``hostvars[host].ansible_facts.rdma`` (live or from a fact cache), or None."""
    host_vars = hostvars.get(host) if isinstance(hostvars, Mapping) else None
    facts = (host_vars or {}).get("ansible_facts") or {}
    rdma = facts.get("rdma") if isinstance(facts, Mapping) else None
    return plain_data(rdma) if rdma is not None else None


def rdma_shared_device_plugin_config(data, resources, groups=None, rdma_hca_max=63, current_config=None, strict=True):
    """The RDMA shared device plugin's configList per inventory group, from gathered facts.

    ``data`` is ``hostvars`` (with ``groups``), or a mapping group -> list of ``ansible_facts.rdma``.
    """
    name = "rdma_shared_device_plugin_config"
    if not isinstance(data, Mapping):
        raise AnsibleFilterError("rdma.node.%s: expected hostvars (with groups) or a mapping of group to a list of "
                                 "ansible_facts.rdma as input, got %s" % (name, type(data).__name__))
    resources = plain_data(resources)
    if not isinstance(resources, dict):
        raise AnsibleFilterError("rdma.node.%s: expected a mapping of inventory group to resource name, got %r" % (name, resources))
    group_hosts = {}
    if groups is not None:
        if not isinstance(groups, Mapping):
            raise AnsibleFilterError("rdma.node.%s: groups must be Ansible's groups mapping, got %r" % (name, groups))
        for group in resources:
            if group in groups:
                group_hosts[group] = [(str(h), _host_facts(data, h)) for h in groups[group]]
    else:
        for group in resources:
            if group not in data:
                continue
            members = data[group]
            if not isinstance(members, (list, tuple)):
                raise AnsibleFilterError("rdma.node.%s: input[%s] must be a list of ansible_facts.rdma, got %r" % (name, group, members))
            group_hosts[group] = [("%s[%d]" % (group, i), None if f is None else plain_data(f)) for i, f in enumerate(members)]
    result = call(name, _k8s_rdma.device_plugin_config, group_hosts, resources, rdma_hca_max=rdma_hca_max, strict=strict)
    if current_config is not None:
        try:
            merged = _k8s_rdma.merge_device_plugin_config(plain_data(current_config), result["configList"])
        except _k8s_rdma.K8sRdmaError as exc:
            if strict:
                raise AnsibleFilterError("rdma.node.%s: %s" % (name, exc)) from None
            result["problems"].append({"group": None, "message": str(exc)})
            merged = {"config": None, "changed": False, "differences": []}
        result.update({"policy_config": merged["config"], "changed": merged["changed"], "differences": merged["differences"]})
    return result


def k8s_tolerations_merge(existing, wanted):
    """Merge wanted tolerations into a policy's existing ones without duplicates."""
    return call("k8s_tolerations_merge", _k8s_rdma.merge_tolerations, plain_data(existing), plain_data(wanted))


def k8s_mofed_wait_findings(nodes, tolerations, planned_tolerations=None, policy_name="nic-cluster-policy",
                            label=None, waited_seconds=None, previously_stuck=None, check_mode=False):
    """Why nodes are stuck at network.nvidia.com/operator.mofed.wait=true (``label``: that one when None)."""
    return call("k8s_mofed_wait_findings", _cluster_checks.mofed_wait_findings, plain_data(nodes), plain_data(tolerations or []),
                planned_tolerations=plain_data(planned_tolerations), policy_name=str(policy_name),
                label=_k8s_rdma.MOFED_WAIT_LABEL if label is None else str(label),
                waited_seconds=waited_seconds, previously_stuck=plain_data(previously_stuck), check_mode=bool(check_mode))


def k8s_node_resource_findings(nodes, resources, groups, hostvars=None, prefix="rdma", expected_count=0, mofed_label=None):
    """Nodes of inventory groups that do not advertise their rdma/<name> resource."""
    name = "k8s_node_resource_findings"
    if not isinstance(groups, Mapping):
        raise AnsibleFilterError("rdma.node.%s: groups must be Ansible's groups mapping, got %r" % (name, groups))
    if isinstance(expected_count, bool) or not isinstance(expected_count, int) or expected_count < 0:
        raise AnsibleFilterError("rdma.node.%s: expected_count must be a non-negative integer, got %r" % (name, expected_count))
    inventory_groups = {str(g): [str(h) for h in hs] for g, hs in groups.items()}
    node_names = {}
    if isinstance(hostvars, Mapping) and isinstance(resources, Mapping):
        # Only the hosts of the groups that have a resource: reading hostvars costs per host.
        for host in dict.fromkeys(h for g in resources for h in inventory_groups.get(str(g), [])):
            value = (hostvars.get(host) or {}).get("k8s_node_name")
            if value:
                node_names[host] = str(value)
    return call(name, _cluster_checks.resource_findings, plain_data(nodes), plain_data(resources), inventory_groups, node_names, prefix=str(prefix),
                expected_count=expected_count, mofed_label=str(mofed_label) if mofed_label else None)


def k8s_stale_resource_patches(nodes, names, node_names=None):
    """JSON patches removing stale extended resources from the nodes' status, where present."""
    return call("k8s_stale_resource_patches", _k8s_rdma.stale_resource_patches, plain_data(nodes), plain_data(names), plain_data(node_names))


class FilterModule:
    def filters(self):
        return {
            "rdma_shared_device_plugin_config": rdma_shared_device_plugin_config,
            "k8s_tolerations_merge": k8s_tolerations_merge,
            "k8s_mofed_wait_findings": k8s_mofed_wait_findings,
            "k8s_node_resource_findings": k8s_node_resource_findings,
            "k8s_stale_resource_patches": k8s_stale_resource_patches,
        }
