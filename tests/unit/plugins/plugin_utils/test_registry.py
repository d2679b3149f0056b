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
    monkeypatch.setattr(_registry, "_PARAMETERS", {})
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
    assert result["status"]["skipped_checks"] == [
        {"check": "needs_counters", "missing": ["rdma_counters"], "reason": "the rdma_counters facts were not gathered"}]
    assert result["status"]["summary"] == "test_registry_role on host: no findings; 1 check(s) not run for lack of data."


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


@pytest.mark.parametrize("facts, path, present", [
    ({"rdma": {"pcie": {}}}, "rdma.pcie", True),
    ({"rdma": {"pcie": None}}, "rdma.pcie", False),
    ({"rdma": {}}, "rdma.pcie", False),
    ({"rdma": "garbled"}, "rdma.pcie", False),
    ({"rdma": {"ports": [{"counters": {}}, {"counters": None}]}}, "rdma.ports[].counters", False),
    ({"rdma": {"ports": [{"counters": {}}, {"counters": {"x": 1}}]}}, "rdma.ports[].counters", True),
    ({"rdma": {"ports": [{"counters": {}}, {}]}}, "rdma.ports[].counters", False),
    ({"rdma": {"ports": []}}, "rdma.ports[].counters", True),
    ({"rdma": {"ports": "mlx5_0"}}, "rdma.ports[].counters", False),
    ({"rdma_driver": {}}, "rdma_driver", True),
])
def test_a_fact_path_is_gathered_only_when_its_data_is_there(facts, path, present):
    assert _registry.path_present(facts, path) is present


def test_paths_name_the_subset_that_fills_them():
    assert _registry.subset_of("rdma.pcie") == "pcie"
    assert _registry.subset_of("rdma.ports[].counters") == "counters"
    assert _registry.subset_of("rdma.kernel_log.netdevs") == "kernel_log"
    assert _registry.subset_of("rdma.ports") == "ports"
    assert _registry.subset_of("rdma") == "ports"
    assert _registry.subset_of("rdma_driver") == "driver"
    assert _registry.subset_of("rdma_memlock") == "memlock"
    assert _registry.subset_of("k8s_cluster") == "k8s_cluster"


def test_every_path_a_registered_check_reads_is_filled_by_a_declared_reader():
    unfilled = {(check.role, check.name, path) for role in registered_roles() for check in _registry.checks(role)
                for path in check.reads + check.optional if _registry.subset_of(path) == path}
    # Cluster-scope and fleet checks read what their roles compute on the controller, not node facts.
    assert {(role, path) for role, _name, path in unfilled} <= {("k8s_rdma", "k8s_cluster"), ("fleet_consistency", "hosts"),
                                                                ("k8s_quarantine", "k8s_quarantine")}


def test_an_optional_path_lets_the_check_run_and_says_what_it_could_not_see(registry):
    @registry.check(ROLE, "flaps", reads=("rdma.ports[].counters",), optional=("rdma.kernel_log",))
    def flaps(facts, params, found):
        found.info("x", "ran")

    result = registry.evaluate(ROLE, {"rdma": {"ports": [{"counters": {}}]}}, {}, unavailable={"kernel_log": "node_health_kernel_log is false"})
    assert result["status"]["checks"] == ["flaps"]
    assert result["status"]["not_checked"] == [{"check": "flaps", "subject": "kernel_log", "reason": "node_health_kernel_log is false"}]


def test_not_checked_is_recorded_once_and_is_never_a_finding(registry):
    @registry.check(ROLE, "half_blind", reads=("rdma",))
    def half_blind(facts, params, found):
        found.not_checked("mlx5_0", "no sensor")
        found.not_checked("mlx5_0", "no   sensor")

    result = registry.evaluate(ROLE, {"rdma": {}}, {})
    assert result["findings"] == [] and result["status"]["ok"] is True
    assert result["status"]["not_checked"] == [{"check": "half_blind", "subject": "mlx5_0", "reason": "no sensor"}]


def test_a_malformed_fact_path_is_refused_at_registration(registry):
    with pytest.raises(_registry.CheckError, match=r"check test_registry_role.bad reads: 'rdma\.\.pcie' is not a fact path"):
        registry.register(ROLE, "bad", lambda facts, params, found: None, reads=("rdma..pcie",))


def test_computed_parameters_win_over_options_and_others_come_from_the_option(registry):
    @registry.check(ROLE, "uses", params=("limit", "joined", "given_at_run_time"))
    def uses(facts, params, found):
        found.info("x", "%(limit)s %(joined)s %(given_at_run_time)s" % params)

    registry.parameter(ROLE, "joined")(lambda options, facts: options[ROLE + "_a"] + options[ROLE + "_b"])
    got = registry.parameters(ROLE, {ROLE + "_limit": 3, ROLE + "_a": [1], ROLE + "_b": [2], ROLE + "_joined": "ignored"}, {})
    assert got == {"limit": 3, "joined": [1, 2], "given_at_run_time": None}
