"""Hosts and nodes for the quarantine's unit tests (test_quarantine.py, checks/test_checks_quarantine.py).

The findings on the hosts are those the registered ib_inventory, node_health and driver_verify checks
make (their role, check, severity and wording); the nodes are shaped as the API server returns them.
"""

from __future__ import annotations

import json

from ansible_collections.rdma.node.plugins.plugin_utils._quarantine import LABEL, RECORD

NOW = 1_760_000_000.0
PORT_DOWN = {"role": "ib_inventory", "check": "port_down", "severity": "critical", "subject": "mlx5_1/1",
             "message": "mlx5_1/1 is DOWN (Polling); expected ACTIVE", "expected": "ACTIVE", "actual": "DOWN"}
FLAPPING = {"role": "node_health", "check": "link_flapping", "severity": "critical", "subject": "mlx5_0/1",
            "message": "mlx5_0/1 link_downed rose from 3 to 4", "expected": 0, "actual": 1}
DKMS_NEXT = {"role": "driver_verify", "check": "dkms_missing_next_boot", "severity": "critical", "subject": "6.1.0-28-amd64",
             "message": "mlnx-ofed-kernel is not installed by DKMS for 6.1.0-28-amd64", "expected": "installed", "actual": "missing"}
TAINT = {"key": "rdma.node/quarantine", "value": "rdma-fault", "effect": "NoSchedule"}
NAMES = ["gpu-%02d" % i for i in range(1, 11)]


def host(findings=(), checked_at=NOW - 60, roles=("ib_inventory", "node_health"), cached=False, groups=("ib-v100",)):
    """A host's variables as the checks leave them (cached: inside ansible_facts, as a fact cache has them)."""
    variables = {}
    for role in roles:
        mine = [f for f in findings if f["role"] == role]
        variables[role + "_findings"] = mine
        variables[role + "_status"] = {"ok": not mine, "checks": ["port_down", "port_degraded"] if role == "ib_inventory"
                                       else ["link_flapping", "counter_rising"]}
    facts = {"rdma": {"counters_time": checked_at}} if checked_at is not None else {}
    if cached:
        facts.update(variables)
        variables = {}
    variables.update(ansible_facts=facts, group_names=list(groups))
    return variables


def node(name, labels=None, annotations=None, unschedulable=False, taints=None, rv="100"):
    rack = "rack-a" if NAMES.index(name) < 5 else "rack-b"
    meta = {"name": name, "resourceVersion": rv, "labels": dict({"topology.kubernetes.io/zone": rack}, **(labels or {}))}
    if annotations:
        meta["annotations"] = annotations
    spec = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {"metadata": meta, "spec": spec}


def held(name, record=None, **kwargs):
    """A node rdma.node holds, with its record."""
    record = dict({"by": "rdma.node", "since": "2025-10-09T08:53:20Z", "checks": ["ib_inventory/port_down"], "reasons": ["x"],
                   "cordoned": True, "cordon_pre_existing": False, "taint": TAINT, "taint_pre_existing": False,
                   "clean_runs": 0, "last_counted_check": None}, **(record or {}))
    kwargs.setdefault("unschedulable", True)
    kwargs.setdefault("taints", [dict(TAINT), {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    return node(name, labels={LABEL: "true"}, annotations={RECORD: json.dumps(record)}, **kwargs)


def reading(nodes=None, ledger=None, policy=None, policy_api_found=False, read=True):
    return {"cluster_read": read, "read_error": None, "nodes": nodes if nodes is not None else [node(n) for n in NAMES],
            "ledger": ledger, "ledger_name": "rdma-node-quarantine", "ledger_namespace": "kube-system",
            "policy": policy, "policy_api_found": policy_api_found}


def fleet(faulty=(), **kwargs):
    return {n: host([PORT_DOWN] if n in faulty else [], **kwargs) for n in NAMES}


def policy(tolerations=None):
    """A NicClusterPolicy as read, with these tolerations."""
    found = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy", "resourceVersion": "5"},
             "spec": {"ofedDriver": {"image": "doca-driver"}}}
    if tolerations is not None:
        found["spec"]["tolerations"] = tolerations
    return found
