"""The quarantine's gauges in the controller's textfile: from k8s_quarantine_status, as the rules in
extensions/prometheus/rdma_node_quarantine.rules.yml read them."""

from __future__ import annotations

import re

import yaml

from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render
from ansible_collections.rdma.node.plugins.plugin_utils._quarantine import plan, settings
from quarantine_cases import NAMES, NOW, fleet, held, node, reading
from testpaths import COLLECTION_ROOT


def evaluated(hosts, nodes, cluster="kubernetes", **options):
    the_plan = plan(hosts, reading(nodes), settings(dict({"mode": "apply", "max_percent": 30, "cluster_name": cluster}, **options)), NOW)
    results = {"patches": [{"item": p, "result": {"metadata": {"name": p["node"]}}} for p in the_plan["patches"]],
               "ledger": {"result": {"metadata": {"name": "rdma-node-quarantine"}}}, "guard": None, "drains": []}
    result = evaluate_role("k8s_quarantine", {"k8s_quarantine": {"plan": the_plan, "check_mode": False, "results": results}},
                           {"release_after": 3, "cordon": True}, subject="cluster/" + cluster)
    return {"k8s_quarantine_findings": result["findings"], "k8s_quarantine_status": result["status"]}


def samples(text, name):
    return sorted(line for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " "))


def test_held_nodes_and_the_breaker_are_gauges():
    nodes = [held("gpu-02") if n == "gpu-02" else node(n) for n in NAMES]
    text = render(evaluated(fleet({"gpu-02", "gpu-05"}), nodes), now=NOW)
    assert samples(text, "rdma_node_quarantined") == ['rdma_node_quarantined{cluster="kubernetes",node="gpu-02"} 1',
                                                      'rdma_node_quarantined{cluster="kubernetes",node="gpu-05"} 1']
    assert samples(text, "rdma_node_quarantine_breaker_tripped") == ['rdma_node_quarantine_breaker_tripped{cluster="kubernetes"} 0']
    assert "# HELP rdma_node_quarantined " in text and "# TYPE rdma_node_quarantine_breaker_tripped gauge" in text
    assert 'rdma_node_findings{check="quarantined",role="k8s_quarantine",severity="warning"} 1' in text
    tripped = render(evaluated(fleet({"gpu-01", "gpu-04", "gpu-07", "gpu-09"}), [node(n) for n in NAMES], cluster='prod "a"\\b'), now=NOW)
    assert samples(tripped, "rdma_node_quarantine_breaker_tripped") == ['rdma_node_quarantine_breaker_tripped{cluster="prod \\"a\\"\\\\b"} 1']
    assert samples(tripped, "rdma_node_quarantined") == []


def test_the_rules_name_the_metrics_the_textfile_has():
    rules = yaml.safe_load((COLLECTION_ROOT / "extensions/prometheus/rdma_node_quarantine.rules.yml").read_text())
    names = {m for group in rules["groups"] for rule in group["rules"] for m in re.findall(r"rdma_node_[a-z_]+", rule["expr"])}
    text = render(evaluated(fleet({"gpu-05"}), [node(n) for n in NAMES]), now=NOW)
    assert names == {"rdma_node_quarantined", "rdma_node_quarantine_breaker_tripped"}
    assert all(samples(text, name) for name in names)
