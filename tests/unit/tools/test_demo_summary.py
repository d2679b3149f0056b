"""The demo's verdict on the report's cluster section (tools/.../rdma/demo/scripts/demo_summary.py).

A critical cluster finding is a planted fault only where the inventory's planted_faults names its check
for its subject (a group of node_groups); any other is a real failure, and the summary shows each one
under its subject, marked.
"""

from __future__ import annotations

import importlib.util

from testpaths import DEMO_COLLECTIONS_ROOT

SCRIPT = DEMO_COLLECTIONS_ROOT / "ansible_collections/rdma/demo/scripts/demo_summary.py"
SPEC = importlib.util.spec_from_file_location("demo_summary", SCRIPT)
demo_summary = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(demo_summary)

FALLBACK = {"role": "pod_proof", "check": "nccl_socket_fallback", "severity": "critical", "subject": "ib-v100",
            "message": "NCCL fell back to TCP sockets."}


def report(*cluster_findings):
    return {"hosts": [], "clusters": [{"subject": "cluster/kubernetes", "findings": list(cluster_findings)}]}


def test_a_planted_cluster_finding_is_no_real_failure():
    planted = {"ib-v100": {"pod_proof/nccl_socket_fallback"}}
    assert demo_summary.judge(report(FALLBACK), planted, [], 2) == []
    lines = demo_summary.summary_lines(report(FALLBACK), planted)
    assert lines[-2:] == ["ib-v100", "  - critical pod_proof/nccl_socket_fallback (planted): NCCL fell back to TCP sockets."]


def test_a_critical_cluster_finding_planted_for_another_group_is_a_real_failure():
    planted = {"ib-a100": {"pod_proof/nccl_socket_fallback"}}
    assert demo_summary.judge(report(FALLBACK), planted, [], 2) == [
        "ib-v100: critical finding pod_proof/nccl_socket_fallback is not a planted fault: NCCL fell back to TCP sockets."]
    assert "(NOT PLANTED)" in demo_summary.summary_lines(report(FALLBACK), planted)[-1]


def test_a_hostile_subject_is_printed_escaped():
    hostile = dict(FALLBACK, subject="ib-v100\x1b[2J\nfake: ok")
    (line,) = demo_summary.judge(report(hostile), {}, [], 2)
    assert "\x1b" not in line and "\n" not in line
