"""The rdma_fleet summary for AWX: one shape, never above its size budget, detail given up in order."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.report import fleet_artifact as fleet_artifact_filter
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import fleet_artifact
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report
from synthetic_hostvars import synthetic_hostvars

LOCATION = {"dir": "/var/lib/rdma-node/reports/job-42", "files": ["fleet-report.json"], "upload_url": None, "upload": None}


def compact_size(document):
    return len(json.dumps(document, separators=(",", ":"), sort_keys=True).encode("utf-8"))


@pytest.fixture(scope="module")
def large_report():
    return build_report(synthetic_hostvars(1000), registered_roles(), generated_at="2026-11-25T00:00:00Z")


def counts(report):
    out = {"critical": 0, "warning": 0, "info": 0}
    for host in report["hosts"]:
        for found in host["findings"]:
            out[found["severity"]] += 1
    return out


def test_small_fleet_is_summarised_completely():
    report = build_report(synthetic_hostvars(8, seed=3), registered_roles(), generated_at="2026-11-25T00:00:00Z")
    summary = fleet_artifact(report, LOCATION)
    assert summary["schema"] == 2 and summary["complete"] is True
    assert summary["omitted"] == {"hosts": 0, "findings": {"critical": 0, "warning": 0, "info": 0}}
    assert summary["totals"] == report["totals"]
    assert summary["report"] == LOCATION
    assert list(summary["hosts"]) == [h["name"] for h in report["hosts"]]  # worst first, as in the report
    for host in report["hosts"]:
        kept = [f for f in summary["findings"] if f["host"] == host["name"]]
        assert sorted((f["check"], f["subject"]) for f in kept) == sorted((f["check"], f["subject"]) for f in host["findings"])
        assert summary["hosts"][host["name"]]["critical"] == host["critical"]
    assert summary["size_bytes"] == compact_size(summary) <= summary["limit_bytes"] == 65536


@pytest.mark.parametrize("budget", [2048, 8192, 20000, 65536, 262144])
def test_never_above_the_budget_and_says_what_it_left_out(large_report, budget):
    summary = fleet_artifact(large_report, LOCATION, budget)
    assert compact_size(summary) == summary["size_bytes"] <= budget
    totals = counts(large_report)
    kept = {s: sum(1 for f in summary["findings"] if f["severity"] == s) for s in totals}
    assert {s: kept[s] + summary["omitted"]["findings"][s] for s in totals} == totals
    assert len(summary["hosts"]) + summary["omitted"]["hosts"] == len(large_report["hosts"])
    assert summary["complete"] == (not summary["omitted"]["hosts"] and not any(summary["omitted"]["findings"].values()))
    assert summary["totals"] == large_report["totals"]  # the totals always stay whole


def test_detail_is_given_up_in_order(large_report):
    totals = counts(large_report)
    assert totals["info"] > 900 and totals["warning"] > 50 and totals["critical"] > 40  # the fleet has every kind
    full = compact_size(fleet_artifact(large_report, LOCATION, 10 ** 7))
    previous_level = None
    for budget in range(full, 1024, -max(1, full // 30)):
        summary = fleet_artifact(large_report, LOCATION, budget)
        omitted = summary["omitted"]["findings"]
        ok_listed = sum(1 for h in summary["hosts"].values() if h["status"] == "ok")
        # The ok hosts' names go only once every info finding has gone, a warning once the ok hosts
        # have, a critical finding once every warning has.
        if not ok_listed:
            assert omitted["info"] == totals["info"]
        if omitted["warning"]:
            assert not ok_listed
        if omitted["critical"]:
            assert omitted["warning"] == totals["warning"]
        level = (omitted["info"] == totals["info"], not ok_listed, omitted["warning"] == totals["warning"])
        assert previous_level is None or level >= previous_level  # never more detail at a smaller budget
        previous_level = level


def test_tight_budget_keeps_the_worst_hosts_with_their_critical_findings(large_report):
    summary = fleet_artifact(large_report, LOCATION, 4096)
    assert not summary["complete"]
    kept = list(summary["hosts"])
    not_ok = [h["name"] for h in large_report["hosts"] if h["status"] != "ok"]
    assert kept == not_ok[:len(kept)] and 0 < len(kept) < len(not_ok)
    assert {f["severity"] for f in summary["findings"]} == {"critical"}
    expected = [(h["name"], f["check"]) for h in large_report["hosts"][:len(kept)] for f in h["findings"] if f["severity"] == "critical"]
    assert sorted((f["host"], f["check"]) for f in summary["findings"]) == sorted(expected)
    # One more host would not have fitted.
    assert compact_size(fleet_artifact(large_report, LOCATION, summary["size_bytes"])) == summary["size_bytes"]


def test_bad_input_is_one_sentence():
    with pytest.raises(ValueError, match=r"^expected the fleet report's data \(a dict with a 'hosts' list\), got list$"):
        fleet_artifact([], LOCATION)
    with pytest.raises(ValueError, match=r"^max_bytes must be an integer of at least 1024, got 100$"):
        fleet_artifact({"hosts": []}, LOCATION, 100)
    with pytest.raises(AnsibleFilterError, match=r"^rdma.node.fleet_artifact: max_bytes must be an integer of at least 1024, got 10$"):
        fleet_artifact_filter({"hosts": []}, max_bytes=10)


def test_filter_fills_the_location():
    report = build_report(synthetic_hostvars(2, seed=1), registered_roles())
    summary = fleet_artifact_filter(report, report_dir="/r", files=["fleet-report.md"], upload_url="")
    assert summary["report"] == {"dir": "/r", "files": ["fleet-report.md"], "upload_url": None, "upload": None}
    # A user, a password and a query in the URL never reach the job's artifacts.
    summary = fleet_artifact_filter(report, upload_url="https://ci:hunter22@dav.example.org/reports/?token=abc123#x")
    assert summary["report"]["upload_url"] == "https://REDACTED@dav.example.org/reports/?REDACTED#REDACTED"


def test_unreachable_and_unchecked_hosts_say_so():
    skipped = {"check": "effective_memlock", "missing": ["rdma_memlock"], "reason": "rdma_memlock was not gathered"}
    hosts = {
        "gone": {"group_names": ["ib-a100"],
                 "rdma_unreachable": {"reason": "ssh: connect to host gone port 22: No route to host", "time": "2026-11-25T00:00:00Z"}},
        "never": {"group_names": ["ib-a100"]},
        "partly": {"group_names": ["ib-a100"],
                   "node_health_status": {"ok": True, "critical": 0, "warning": 0, "checks": ["pcie_degraded"], "skipped_checks": [skipped]}},
    }
    summary = fleet_artifact(build_report(hosts, registered_roles()), LOCATION)
    assert summary["hosts"]["gone"] == {"status": "unreachable", "critical": 0, "warning": 0, "info": 0,
                                        "reason": "ssh: connect to host gone port 22: No route to host"}
    assert summary["hosts"]["never"]["status"] == "no_data" and summary["hosts"]["never"]["reason"].startswith("No role of this collection")
    assert summary["hosts"]["partly"] == {"status": "ok", "critical": 0, "warning": 0, "info": 0, "not_checked": 1}
    assert (summary["totals"]["unreachable"], summary["totals"]["no_data"], summary["totals"]["hosts_not_fully_checked"]) == (1, 1, 1)
