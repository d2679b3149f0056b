"""Changes since the previous report: new, resolved, still open, and never resolved by omission."""

from __future__ import annotations

import json

from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_changes import FIRST_REPORT, compare, read_previous

SOURCES = registered_roles()


def finding(role, check, severity, subject, message=None):
    return {"role": role, "check": check, "severity": severity, "subject": subject, "message": message or "%s %s" % (check, subject),
            "expected": None, "actual": None}


def status(checks, skipped=(), not_checked=()):
    return {"ok": True, "critical": 0, "warning": 0, "checks": list(checks), "skipped_checks": list(skipped), "not_checked": list(not_checked)}


def host(findings_by_role, statuses, groups=("ib-a100",)):
    variables = {"group_names": list(groups)}
    for role, items in findings_by_role.items():
        variables[role + "_findings"] = items
    for role, value in statuses.items():
        variables[role + "_status"] = value
    return variables


BEFORE = {
    "fixed": host({"ib_inventory": [finding("ib_inventory", "port_down", "critical", "mlx5_1/1")]}, {"ib_inventory": status(["port_down"])}),
    "worse": host({"node_health": [finding("node_health", "counter_rising", "critical", "mlx5_1/1", "rose 100 per hour")]},
                  {"node_health": status(["counter_rising", "link_flapping"])}),
    "skipped": host({"node_health": [finding("node_health", "effective_memlock", "warning", "containerd")]},
                    {"node_health": status(["effective_memlock"])}),
    "gone-dark": host({"driver_verify": [finding("driver_verify", "dkms_missing_next_boot", "critical", "6.1.0-28-amd64")]},
                      {"driver_verify": status(["dkms_missing_next_boot"])}),
    "retired": host({"ib_inventory": [finding("ib_inventory", "port_down", "critical", "mlx5_0/1")]}, {"ib_inventory": status(["port_down"])}),
}

AFTER = {
    "fixed": host({"ib_inventory": []}, {"ib_inventory": status(["port_down"])}),
    # The same finding with another message (a rate changes every run) is still open; a new one is new.
    "worse": host({"node_health": [finding("node_health", "counter_rising", "critical", "mlx5_1/1", "rose 900 per hour"),
                                   finding("node_health", "link_flapping", "critical", "mlx5_1/1")]},
                  {"node_health": status(["counter_rising", "link_flapping"])}),
    # This time the memlock facts were not gathered: its finding is gone but not resolved.
    "skipped": host({"node_health": []}, {"node_health": status([], skipped=[{"check": "effective_memlock", "missing": ["rdma_memlock"],
                                                                             "reason": "rdma_memlock was not gathered"}])}),
    # Unreachable now: nothing it had is resolved.
    "gone-dark": dict(host({}, {}), rdma_unreachable={"reason": "ssh: connect to host gone-dark port 22: Connection timed out",
                                                      "time": "2026-11-26T10:00:00Z"}),
    "newcomer": host({"ib_inventory": [finding("ib_inventory", "port_down", "critical", "mlx5_1/1")]}, {"ib_inventory": status(["port_down"])}),
}


def test_new_resolved_still_open_and_not_checked_per_host():
    previous = build_report(BEFORE, SOURCES, generated_at="2026-11-25T00:00:00Z")
    changes = compare(json.loads(json.dumps(previous)), build_report(AFTER, SOURCES))
    assert changes["previous"] == {"generated_at": "2026-11-25T00:00:00Z", "schema_version": 3}
    rows = {row["name"]: row for row in changes["hosts"]}
    brief = {name: ([f["check"] for f in row["new"]], [f["check"] for f in row["resolved"]], row["still_open"],
                    [f["check"] for f in row["not_checked"]], row["note"]) for name, row in rows.items()}
    assert brief == {
        "worse": (["link_flapping"], [], 1, [], None),
        "fixed": ([], ["port_down"], 0, [], None),
        "skipped": ([], [], 0, ["effective_memlock"], None),
        "gone-dark": ([], [], 0, ["dkms_missing_next_boot"], None),
        "newcomer": (["port_down"], [], 0, [], "new in this report"),
        "retired": ([], [], 0, ["port_down"], "not in this report"),
    }
    assert changes["totals"] == {"new": 2, "resolved": 1, "still_open": 1, "not_checked": 3, "hosts_changed": 6}
    assert rows["worse"]["new"][0] == {"severity": "critical", "role": "node_health", "check": "link_flapping", "subject": "mlx5_1/1",
                                       "message": "link_flapping mlx5_1/1"}


def test_a_subject_the_check_could_not_judge_is_not_resolved():
    before = {"n": host({"node_health": [finding("node_health", "pcie_degraded", "critical", "0000:5e:00")]}, {"node_health": status(["pcie_degraded"])})}
    after = {"n": host({"node_health": []}, {"node_health": status(["pcie_degraded"], not_checked=[
        {"check": "pcie_degraded", "subject": "0000:5e:00", "reason": "the link's width file could not be read"}])})}
    changes = compare(build_report(before, SOURCES), build_report(after, SOURCES))
    assert [(f["check"], f["subject"]) for f in changes["hosts"][0]["not_checked"]] == [("pcie_degraded", "0000:5e:00")]
    assert changes["totals"]["resolved"] == 0


def test_nothing_changed():
    report = build_report(BEFORE, SOURCES)
    changes = compare(json.loads(json.dumps(report)), build_report(BEFORE, SOURCES))
    assert changes["hosts"] == [] and changes["totals"] == {"new": 0, "resolved": 0, "still_open": 5, "not_checked": 0, "hosts_changed": 0}


def test_the_first_report_says_there_is_nothing_to_compare(tmp_path):
    previous, note = read_previous(str(tmp_path / "fleet-report.json"))
    assert (previous, note) == (None, FIRST_REPORT)
    assert compare(None, build_report(AFTER, SOURCES), note) == {"previous": None, "note": FIRST_REPORT, "totals": None, "hosts": []}


def test_an_earlier_file_that_is_no_report_is_said_and_compared_with_nothing(tmp_path):
    path = tmp_path / "fleet-report.json"
    cases = {
        "{not json": "is not a JSON report",
        '{"hosts": "everything"}': "has no list of hosts with names",
        '[1, 2]': "has no list of hosts with names",
        '{"hosts": [{"name": 7}]}': "has no list of hosts with names",
        "[" * 100000 + "]" * 100000: "is not a JSON report",
    }
    for text, said in cases.items():
        path.write_text(text)
        previous, note = read_previous(str(path))
        assert previous is None and said in note and note.startswith("The earlier report %s " % path), note
    path.unlink()
    path.mkdir()
    assert "is not a regular file" in read_previous(str(path))[1]


def test_a_tampered_earlier_report_is_read_safely(tmp_path):
    path = tmp_path / "fleet-report.json"
    path.write_text(json.dumps({"generated_at": "2026\x1b[2J", "hosts": [
        {"name": "fixed", "findings": [finding("ib_inventory", "port_down", "critical", "mlx5_1/1\x1b]0;x\x07"), "junk", {"role": None}]}]}))
    previous, note = read_previous(str(path))
    assert note is None and previous["generated_at"] == "2026"
    changes = compare(previous, build_report(AFTER, SOURCES))
    # The junk entries are left out; the finding, its subject cleaned, is the one this run resolved.
    fixed = next(row for row in changes["hosts"] if row["name"] == "fixed")
    assert [f["subject"] for f in fixed["resolved"]] == ["mlx5_1/1"] and fixed["not_checked"] == []
