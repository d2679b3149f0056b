"""The driver_verify checks on the synthetic node trees of tests/fixtures/driver and real dkms outputs."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _driver
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from testpaths import FIXTURES

DRIVER = FIXTURES / "driver"
DEFAULTS = {
    "required_modules": ["mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs"],
    "gpudirect": False, "require_uverbs": False, "ofed_version": "", "check_dkms": True,
    "dkms_modules": ["mlnx-ofed-kernel"],
}


def driver_facts(case, with_dkms=True):
    tree = DRIVER / case
    return _driver.gather(
        str(tree / "root"),
        dkms_text=(tree / "dkms_status.txt").read_text() if with_dkms and (tree / "dkms_status.txt").exists() else None,
        ofed_text=(tree / "ofed_info_s.txt").read_text() if (tree / "ofed_info_s.txt").exists() else None,
    )


def run(facts, **params):
    return evaluate_role("driver_verify", {"rdma_driver": facts}, dict(DEFAULTS, **params), subject="node")


def found(result):
    return sorted((f["check"], f["severity"], f["subject"]) for f in result["findings"])


def test_upgraded_node_loses_rdma_at_next_boot():
    result = run(driver_facts("debian_upgraded"), required_modules=["mlx5_core"])
    assert found(result) == [
        ("dkms_error", "warning", "dkms"),
        ("dkms_missing_next_boot", "critical", "6.1.0-28-amd64"),
    ]
    message = next(f["message"] for f in result["findings"] if f["check"] == "dkms_missing_next_boot")
    assert message == ("this node loses RDMA at its next reboot into 6.1.0-28-amd64: mlnx-ofed-kernel is not installed "
                       "for that kernel (DKMS has no build for it).")
    status = result["status"]
    assert (status["ok"], status["critical"], status["warning"]) == (False, 1, 1)
    assert (status["kernel"], status["next_boot_kernel"], status["missing_kernels"]) == ("6.1.0-27-amd64", "6.1.0-28-amd64", ["6.1.0-28-amd64"])


def test_knem_built_for_both_kernels_is_fine_and_an_unknown_module_is_not():
    result = run(driver_facts("debian_upgraded"), required_modules=[], dkms_modules=["knem", "nvidia-fs"])
    assert found(result) == [
        ("dkms_error", "warning", "dkms"),
        ("dkms_missing_next_boot", "critical", "6.1.0-28-amd64"),
        ("dkms_missing_running", "critical", "6.1.0-27-amd64"),
    ]
    assert all("DKMS does not know nvidia-fs" in f["message"] for f in result["findings"] if f["check"].startswith("dkms_missing"))


def test_every_newer_kernel_is_a_warning():
    facts = driver_facts("ubuntu_next_entry")
    facts["dkms"] = {"entries": [{"name": "mlnx-ofed-kernel", "version": "24.01", "kernel": "5.15.0-89-generic", "state": "installed"},
                                 {"name": "mlnx-ofed-kernel", "version": "24.01", "kernel": "5.15.0-91-generic", "state": "built"}],
                     "errors": []}
    result = run(facts, required_modules=[])
    assert found(result) == [
        ("dkms_missing_newer", "warning", "5.15.0-92-generic"),
        ("dkms_missing_next_boot", "critical", "5.15.0-91-generic"),
    ]
    assert "(only built, not installed)" in next(f["message"] for f in result["findings"] if f["check"] == "dkms_missing_next_boot")


def test_modules_uverbs_ofed_and_gpudirect():
    facts = driver_facts("debian_upgraded")
    result = run(facts, required_modules=["mlx5_core", "rdma_ucm"], gpudirect=True, require_uverbs=True,
                 ofed_version="24.01", check_dkms=False)
    assert found(result) == [
        ("module_not_loaded", "critical", "nvidia_peermem"),
        ("module_not_loaded", "critical", "rdma_ucm"),
        ("ofed_version", "critical", "ofed"),
    ]  # uverbs0 and uverbs1 are in the tree's dev/infiniband
    ofed = next(f for f in result["findings"] if f["check"] == "ofed_version")
    assert ofed["message"] == "The node runs MLNX_OFED_LINUX-23.10-1.1.9.0, not the expected OFED release 24.01."
    assert run(facts, required_modules=[], ofed_version="23.10", check_dkms=False)["findings"] == []


def test_uverbs_missing_names_what_is_there():
    facts = dict(driver_facts("empty"), infiniband_devices=["rdma_cm"])
    result = run(facts, required_modules=[], require_uverbs=True, check_dkms=False)
    assert [f["message"] for f in result["findings"]] == [
        "There is no /dev/infiniband/uverbs* device node, so no verbs application can open an RDMA device (it holds rdma_cm)."]


def test_without_dkms_one_critical_and_no_kernel_findings():
    result = run(driver_facts("debian_upgraded", with_dkms=False), required_modules=[])
    assert found(result) == [("dkms_unavailable", "critical", "dkms")]
    assert result["status"]["missing_kernels"] == []


def test_remediation_outcomes():
    runs = [
        {"item": "6.1.0-28-amd64", "rc": 0, "stderr_lines": []},
        {"item": "6.1.0-29-amd64", "rc": 10, "stderr_lines": ["", "Error! Bad return status for module build on kernel: 6.1.0-29-amd64"]},
        {"item": "6.1.0-30-amd64", "skipped": True},
    ]
    result = run(driver_facts("debian_healthy"), required_modules=[], check_dkms=False, autoinstall=runs)
    assert found(result) == [
        ("dkms_remediated", "info", "6.1.0-28-amd64"),
        ("dkms_remediation_failed", "critical", "6.1.0-29-amd64"),
        ("dkms_remediation_planned", "info", "6.1.0-30-amd64"),
    ]
    failed = next(f for f in result["findings"] if f["check"] == "dkms_remediation_failed")
    assert failed["message"] == "dkms autoinstall -k 6.1.0-29-amd64 failed with rc 10: Error! Bad return status for module build on kernel: 6.1.0-29-amd64"


def test_driver_checks_skip_without_driver_facts():
    result = evaluate_role("driver_verify", {}, DEFAULTS, subject="node")
    assert result["findings"] == []
    assert {s["check"] for s in result["status"]["skipped_checks"]} >= {"module_not_loaded", "dkms_missing_next_boot"}
    assert all(s["missing"] == ["driver"] and s["reason"] == "the driver facts were not gathered"
               for s in result["status"]["skipped_checks"])


def test_a_bad_parameter_is_one_sentence():
    with pytest.raises(CheckError, match=r"driver_verify.module_not_loaded: driver_verify_required_modules: expected a list of names"):
        run(driver_facts("debian_healthy"), required_modules="mlx5_core")
