"""The operators' JMESPath checks: built from group_vars entries, run through the one evaluation."""

from __future__ import annotations

import re

import pytest
import sysfs_tree
import yaml

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from testpaths import COLLECTION_ROOT, FIXTURES

OPERATOR_CHECKS = yaml.safe_load((FIXTURES / "custom_checks/operator_checks.yml").read_text())
EXAMPLES = OPERATOR_CHECKS["common"] + OPERATOR_CHECKS["ib-a100"]


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("h100") / "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), dest)
    facts, _warnings = read_ib_facts({"sysfs_root": dest, "proc_root": None, "gather_subset": ["all"]})
    return facts


def custom(facts, entries, **kwargs):
    result = evaluate_role("node_health", facts, {"gpudirect": "off", "roce_netns_mode": ""}, "node", custom_checks=entries, **kwargs)
    return [f for f in result["findings"] if f["check"].startswith("custom_")], result["status"]


def by_name(name):
    return [dict(e) for e in EXAMPLES if e["name"] == name]


def test_shipped_example_finds_the_h100_ports_with_receive_errors(h100):
    findings, status = custom({"rdma": h100}, by_name("port_rcv_errors"))
    assert [f["subject"] for f in findings] == ["mlx5_0/1", "mlx5_1/1", "mlx5_4/1", "mlx5_5/1", "mlx5_6/1", "mlx5_7/1",
                                                "mlx5_8/1", "mlx5_9/1", "mlx5_bond_0/1"]
    first = findings[0]
    assert (first["role"], first["check"], first["severity"]) == ("node_health", "custom_port_rcv_errors", "warning")
    assert first["message"] == by_name("port_rcv_errors")[0]["message"]
    assert first["actual"]["counters"]["port_rcv_errors"] == 14
    assert "custom_port_rcv_errors" in status["checks"]


def test_shipped_rate_example_passes_400g_ports_and_flags_a_slow_one(h100):
    assert custom({"rdma": h100}, by_name("ib_port_below_200g"))[0] == []
    slow = dict(h100, ports=[dict(p, rate_gbps=100.0) if p["device"] == "mlx5_4" else p for p in h100["ports"]])
    findings = custom({"rdma": slow}, by_name("ib_port_below_200g"))[0]
    assert [(f["subject"], f["severity"]) for f in findings] == [("mlx5_4/1", "warning")]


def test_shipped_peermem_example_on_gpudirect_facts():
    entry = by_name("nvidia_peermem_loaded")
    missing = {"rdma": {"gpudirect": {"peermem_module": None}}}
    loaded = {"rdma": {"gpudirect": {"peermem_module": "nvidia_peermem"}}}
    findings = custom(missing, entry)[0]
    assert [(f["subject"], f["severity"], f["actual"]) for f in findings] == [("nvidia_peermem_loaded", "critical", None)]
    assert custom(loaded, entry)[0] == []
    assert custom({"rdma": {}}, entry)[0] == []  # no gpudirect facts: nothing to say


def test_missing_reads_skip_the_check_like_any_other():
    entry = [{"name": "driver_ok", "severity": "info", "message": "m", "expression": "rdma_driver.ofed", "reads": ["rdma_driver"]}]
    findings, status = custom({"rdma": {"ports": []}}, entry)
    skipped = {"check": "custom_driver_ok", "missing": ["driver"], "reason": "the driver facts were not gathered"}
    assert findings == [] and skipped in status["skipped_checks"]


def test_jmespath_truth_zero_is_true_empty_is_false():
    entry = [{"name": "n", "severity": "info", "message": "m", "expression": "rdma.value"}]
    assert len(custom({"rdma": {"value": 0}}, entry)[0]) == 1
    for value in ("", [], {}, False, None):
        assert custom({"rdma": {"value": value}}, entry)[0] == []


@pytest.mark.parametrize("entry, error", [
    ({"name": "bad_expr", "severity": "warning", "message": "m", "expression": "rdma.ports[?state=="},
     "custom_checks check 'bad_expr': the expression 'rdma.ports[?state==' is not valid JMESPath"),
    ({"name": "sev", "severity": "fatal", "message": "m", "expression": "rdma"},
     "custom_checks check 'sev': severity must be one of critical, warning, info, got 'fatal'"),
    ({"name": "nomsg", "severity": "info", "expression": "rdma"},
     "custom_checks check 'nomsg': message missing; each check needs name, severity, message, expression"),
    ({"name": "has space", "severity": "info", "message": "m", "expression": "rdma"},
     "the name must be letters, digits and _ starting with a letter, got 'has space'"),
    ({"name": "extra", "severity": "info", "message": "m", "expression": "rdma", "sevrity": "x"},
     "custom_checks check 'extra': unknown key sevrity"),
    ("rdma.ports", "custom_checks[0]: expected a mapping with name, severity, message, expression, got 'rdma.ports'"),
    ({"name": "subj", "severity": "info", "message": "m", "expression": "rdma", "subject": "join(,"},
     "custom_checks check 'subj' subject: the expression 'join(,' is not valid JMESPath"),
])
def test_bad_entries_are_one_error_naming_the_check(entry, error):
    with pytest.raises(CheckError) as raised:
        custom({"rdma": {}}, [entry])
    assert error in str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_expression_failing_at_run_time_names_the_check():
    entry = [{"name": "typed", "severity": "info", "message": "m", "expression": "length(rdma.count)"}]
    with pytest.raises(CheckError, match=r"node_health.custom_typed: custom_checks check 'typed': the expression failed on this host's facts"):
        custom({"rdma": {"count": 3}}, entry)


def test_names_must_be_unique_and_not_a_registered_check():
    entry = {"name": "twice", "severity": "info", "message": "m", "expression": "rdma"}
    with pytest.raises(CheckError, match="custom_checks: two checks are named 'twice'"):
        custom({"rdma": {}}, [entry, entry])


def test_the_readmes_example_finds_the_card_off_the_pinned_firmware():
    block = re.search(r"```yaml\n(node_health_custom_checks:.*?)```", (COLLECTION_ROOT / "README.md").read_text(), re.S).group(1)
    checks = yaml.safe_load(block)["node_health_custom_checks"]
    devices = {"mlx5_0": {"name": "mlx5_0", "hca_type": "MT4123", "fw_ver": "20.37.1014"},
               "mlx5_1": {"name": "mlx5_1", "hca_type": "MT4123", "fw_ver": "20.39.1002"},
               "mlx5_2": {"name": "mlx5_2", "hca_type": "MT4129", "fw_ver": "28.39.1002"}}
    result = evaluate_role("node_health", {"rdma": {"devices": devices, "ports": []}}, {}, "node",
                           only=["custom_cx6_firmware_pinned"], custom_checks=checks)
    assert [(f["subject"], f["severity"]) for f in result["findings"]] == [("mlx5_0", "warning")]


# --------------------------------------------------------------------------- hostile expressions (issue 24, item 10)


@pytest.mark.parametrize("expression", ["(" * 2000 + "rdma" + ")" * 2000, "[" * 3000 + "rdma" + "]" * 3000,
                                        "rdma" + ".a" * 20000])
def test_a_deeply_nested_or_huge_expression_is_one_sentence(expression):
    entry = {"name": "deep", "severity": "info", "message": "m", "expression": expression}
    with pytest.raises(CheckError) as raised:
        custom({"rdma": {}}, [entry])
    assert str(raised.value).startswith("custom_checks check 'deep': the expression is ")
    assert "recursion" not in str(raised.value) and "\n" not in str(raised.value)
    assert len(str(raised.value)) < 300


@pytest.mark.parametrize("expression", [".".join(["[@,@][]"] * 22), ".".join(["[@,@]"] * 22),
                                        "rdma.ports[*].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][]"
                                        ".[@,@][].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][].[@,@][]"])
def test_an_expression_whose_work_or_result_explodes_is_stopped_and_named(h100, expression, no_hang):
    entry = {"name": "boom", "severity": "info", "message": "m", "expression": expression}
    with pytest.raises(CheckError) as raised:
        custom({"rdma": h100}, [entry])
    assert re.match(r"node_health\.custom_boom: custom_checks check 'boom': the expression (needs more than [0-9,]+ steps|"
                    r"gives more than [0-9,]+ values) on this host's facts; narrow it", str(raised.value)), str(raised.value)


def test_a_mapping_as_subject_is_json(h100):
    entry = [{"name": "by_port", "severity": "info", "message": "m", "expression": "rdma.ports[?device=='mlx5_0']",
              "subject": "{device: device, port: port}"}]
    (finding,), _status = custom({"rdma": h100}, entry)
    assert finding["subject"] == '{"device": "mlx5_0", "port": 1}'
