"""The pod proof's and the bandwidth check's metrics, with the real promtool: the textfile a node writes from its
facts (pod_proof_node as the pod_proof role keeps it, bandwidth_check_status) passes ``promtool check metrics``,
the alert rules pass ``promtool check rules`` and their own tests, and the alerts fire on exactly the nodes of a
judged proof when its rendered samples are the input (tests/pod_proof_run.py: the demo hosts, real recorded outputs)."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from ansible_collections.rdma.node.plugins.filter.pod_proof import pod_proof_node_views
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render
from pod_proof_run import DEMO_HOSTS, pod_proof_run
from testpaths import COLLECTION_ROOT

RULES = COLLECTION_ROOT / "extensions/prometheus/rdma_node_pod_proof.rules.yml"
NOW = 1764150000.0
SAMPLE = re.compile(r"^(?P<name>rdma_node_(?:pod|nccl|bandwidth)_[a-z_]+)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    localhost, dummy = pod_proof_run(tmp_path_factory.mktemp("demo"))
    views = pod_proof_node_views(localhost["pod_proof_status"], localhost["pod_proof_findings"], time=NOW - 3600)
    # v100-node-01's own bandwidth_check, in GPU memory: the DMA-BUF run's 92.38 of 100 Gb/s passes at 0.90.
    bandwidth = {"loopback": [{"port": "mlx5_0/1", "memory": "cuda", "measured_gbps": 92.38, "expected_gbps": 90.0}], "pairs": []}
    facts = {host: {"pod_proof_node": views.get(host)} for host in DEMO_HOSTS}
    facts["v100-node-01"]["bandwidth_check_status"] = bandwidth
    return {host: render(host_facts, now=NOW) for host, host_facts in facts.items()}


def test_promtool_accepts_the_metrics(texts):
    for host, text in texts.items():
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False)
        assert lint.returncode == 0, (host, lint.stdout + lint.stderr)
    v100 = texts["v100-node-02"]
    assert 'rdma_node_pod_memlock_bytes{limit="soft",side="client"} 65536' in v100
    assert "rdma_node_pod_memlock_capped 1" in v100
    assert 'rdma_node_nccl_socket_fallback{group="ib-v100"} 1' in v100
    assert 'rdma_node_nccl_channels{group="ib-v100",transport="net_socket"}' not in v100  # issue 447's log names no channel
    assert 'rdma_node_pod_memlock_bytes{limit="hard",side="server"} +Inf' in texts["v100-node-01"]
    a100 = texts["a100-node-02"]
    assert 'rdma_node_pod_bandwidth_gbps{memory="cuda",peer="a100-node-01:mlx5_1/1",port="mlx5_1/1",role="client"} 92.46' in a100
    assert 'rdma_node_pod_bandwidth_expected_gbps{memory="cuda",peer="a100-node-01:mlx5_1/1",port="mlx5_1/1",role="client"} 180.0' in a100
    # a100-node-01 served in host memory: its own side's memory labels its samples.
    assert 'rdma_node_pod_bandwidth_gbps{memory="host",peer="a100-node-02:mlx5_1/1",port="mlx5_1/1",role="server"} 92.46' in texts["a100-node-01"]
    assert "rdma_node_nccl_" not in a100  # ib-a100 had no NCCL evidence in this proof
    assert 'rdma_node_bandwidth_gbps{memory="cuda",peer="",port="mlx5_0/1",test="loopback"} 92.38' in texts["v100-node-01"]
    assert "rdma_node_pod_proof_timestamp_seconds %r" % (NOW - 3600) in v100


def test_promtool_accepts_the_rules_and_their_tests():
    for argv in (["promtool", "check", "rules", str(RULES)],
                 ["promtool", "test", "rules", str(RULES.with_name("rdma_node_pod_proof.rules.test.yml"))]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=str(RULES.parent))
        assert proc.returncode == 0, proc.stdout + proc.stderr


def _series(texts):
    series = []
    for host, text in sorted(texts.items()):
        for line in text.splitlines():
            match = SAMPLE.match(line)
            if match:
                labels = 'instance="%s"' % host + ("," + match.group("labels") if match.group("labels") else "")
                value = "Inf" if match.group("value") == "+Inf" else match.group("value")
                # The same sample four times, 10 minutes apart (promtool's "NxM" shorthand takes no Inf).
                series.append({"series": "%s{%s}" % (match.group("name"), labels), "values": " ".join([value] * 4)})
    return series


def _firing(tmp_path, series, alert, expected):
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m",
            "tests": [{"interval": "10m", "input_series": series,
                       "alert_rule_test": [{"eval_time": "20m", "alertname": alert, "exp_alerts": expected}]}]}
    path = tmp_path / ("%s.test.yml" % alert)
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=120, check=False)


def _expected(alert, labels, value=None):
    """An expected alert with its annotations, the rule's templates filled in as Prometheus fills them
    ({{ $labels.x }}, {{ $value }}): promtool compares the annotations too."""
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    (rule,) = [r for r in rules if r["alert"] == alert]

    def fill(text):
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
        return text.replace("{{ $value }}", str(value))
    return {"exp_labels": labels, "exp_annotations": {key: fill(text) for key, text in rule["annotations"].items()}}


@pytest.mark.parametrize("alert, labels", [
    ("RdmaPodMemlockCapped", [{"severity": "critical", "instance": "v100-node-02"}]),
    ("RdmaNcclSocketFallback", [{"severity": "critical", "instance": host, "group": "ib-v100"} for host in ("v100-node-01", "v100-node-02")]),
    # The pair's GPU-memory client reached 92.46 of 200 Gb/s: below 180 on both of its nodes.
    ("RdmaPodBandwidthBelowExpected", [
        {"severity": "critical", "instance": "a100-node-01", "role": "server", "port": "mlx5_1/1", "peer": "a100-node-02:mlx5_1/1", "memory": "host"},
        {"severity": "critical", "instance": "a100-node-02", "role": "client", "port": "mlx5_1/1", "peer": "a100-node-01:mlx5_1/1", "memory": "cuda"}]),
    ("RdmaBandwidthBelowExpected", []),  # v100-node-01's GPUDirect loopback passes at 0.90
])
def test_the_alerts_fire_on_the_nodes_of_the_proof(texts, tmp_path, alert, labels):
    """The rendered samples of each node as the input: promtool checks that the alert fires with exactly these labels."""
    proc = _firing(tmp_path, _series(texts), alert, [_expected(alert, item, 92.46) for item in labels])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # And the check is not vacuous: expecting nothing where the alert fires fails.
    if labels:
        assert _firing(tmp_path, _series(texts), alert, []).returncode != 0
