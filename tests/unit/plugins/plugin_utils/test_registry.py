"""The check registry: registration, discovery, evaluation, and what a broken check or finding gives."""

from __future__ import annotations

import json
import math

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils import _registry
from ansible_collections.rdma.node.plugins.plugin_utils._findings import FindingError, finding, tally
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles

ROLE = "test_registry_role"


@pytest.fixture()
def registry(monkeypatch):
    """An empty registry for the test's own checks; the collection's are put back afterwards."""
    monkeypatch.setattr(_registry, "_CHECKS", {})
    monkeypatch.setattr(_registry, "_SUMMARIES", {})
    return _registry


def test_every_role_of_the_collection_is_discovered():
    assert {"ib_inventory", "driver_verify"} <= set(registered_roles())
    for role in registered_roles():
        for entry in _registry.checks(role):
            assert entry.description, "%s has no docstring to say what it finds" % entry
            assert entry.function.__module__.rpartition(".")[0].endswith("plugin_utils._checks")


def test_checks_get_only_what_they_declare(registry):
    seen = {}

    @registry.check(ROLE, "reader", reads=("rdma",), params=("limit",))
    def reader(facts, params, found):
        seen.update(facts=facts, params=params)
        if facts["rdma"]["count"] > params["limit"]:
            found.warning("count", "Too many: %d." % facts["rdma"]["count"], params["limit"], facts["rdma"]["count"])

    result = registry.evaluate(ROLE, {"rdma": {"count": 3}, "rdma_driver": {"secret": 1}}, {"limit": 2, "other": 9}, subject="h1")
    assert seen == {"facts": {"rdma": {"count": 3}}, "params": {"limit": 2}}
    assert result["findings"] == [{"role": ROLE, "check": "reader", "severity": "warning", "subject": "count",
                                   "message": "Too many: 3.", "expected": 2, "actual": 3}]
    status = result["status"]
    assert (status["ok"], status["critical"], status["warning"], status["info"]) == (True, 0, 1, 0)
    assert status["checks"] == ["reader"] and status["skipped_checks"] == [] and status["subject"] == "h1"
    assert status["summary"] == "test_registry_role on h1: 1 warning: Too many: 3."


def test_missing_facts_skip_the_check_and_say_so(registry):
    @registry.check(ROLE, "needs_counters", reads=("rdma", "rdma_counters"))
    def needs_counters(facts, params, found):
        found.critical("x", "never")

    result = registry.evaluate(ROLE, {"rdma": {}}, {})
    assert result["findings"] == []
    assert result["status"]["skipped_checks"] == [{"check": "needs_counters", "missing_facts": ["rdma_counters"]}]
    assert result["status"]["summary"].endswith("no findings.")


def test_only_and_skip(registry):
    for name in ("a", "b", "c"):
        registry.register(ROLE, name, lambda facts, params, found, name=name: found.info(name, "ran %s" % name))
    assert registry.evaluate(ROLE, {}, only=["b"])["status"]["checks"] == ["b"]
    assert registry.evaluate(ROLE, {}, skip=["b"])["status"]["checks"] == ["a", "c"]
    with pytest.raises(_registry.CheckError, match=r"only: .* names no check of test_registry_role: z \(known: a, b, c\)"):
        registry.evaluate(ROLE, {}, only=["z"])


def test_a_failing_check_is_named_not_a_traceback(registry):
    @registry.check(ROLE, "divides")
    def divides(facts, params, found):
        return 1 / 0

    with pytest.raises(_registry.CheckError) as raised:
        registry.evaluate(ROLE, {})
    assert str(raised.value).startswith("check test_registry_role.divides failed: ZeroDivisionError: division by zero (test_registry.py line")


def test_a_malformed_finding_is_refused(registry):
    @registry.check(ROLE, "sloppy")
    def sloppy(facts, params, found):
        found.add("fatal", "x", "bad severity")

    expected = r"test_registry_role.sloppy: finding severity of test_registry_role.sloppy must be one of critical, warning, info, got 'fatal'"
    with pytest.raises(_registry.CheckError, match=expected):
        registry.evaluate(ROLE, {})


def test_the_same_name_twice_from_two_places_is_an_error(registry):
    registry.register(ROLE, "twice", lambda facts, params, found: None)

    def other(facts, params, found):
        return None

    with pytest.raises(_registry.CheckError, match="registered twice"):
        registry.register(ROLE, "twice", other)


def test_unknown_role():
    with pytest.raises(_registry.CheckError, match=r"no checks are registered for the role 'nope' \(known: .*ib_inventory"):
        _registry.evaluate("nope", {})


def test_findings_carry_only_json():
    made = finding("r", "c", "info", 7, " two\n  lines ", expected=(1, 2), actual={"rate": math.inf, "set": {3, 1}})
    assert made == {"role": "r", "check": "c", "severity": "info", "subject": "7", "message": "two lines",
                    "expected": [1, 2], "actual": {"rate": None, "set": [1, 3]}}
    json.dumps(made, allow_nan=False)
    with pytest.raises(FindingError, match="expected a JSON value"):
        finding("r", "c", "info", "s", "m", actual=object())
    with pytest.raises(FindingError, match="subject"):
        finding("r", "c", "info", None, "m")
    assert tally([made, dict(made, severity="critical")]) == {"critical": 1, "warning": 0, "info": 1}
