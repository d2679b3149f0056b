"""driver_facts run as Ansible runs it, on the synthetic node trees with their saved command output.

These runs use ``run_tools: false`` or saved outputs so that the host's own dkms stays out of them;
tests/integration/test_driver_dkms_real.py runs the module against the real dkms.
"""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.modules import driver_facts
from testpaths import FIXTURES

DRIVER = FIXTURES / "driver"


def _args(case, **extra):
    base = DRIVER / case
    args = {"root": str(base / "root"), "run_tools": False}
    if (base / "dkms_status.txt").exists():
        args["dkms_status_file"] = str(base / "dkms_status.txt")
    if (base / "ofed_info_s.txt").exists():
        args["ofed_info_file"] = str(base / "ofed_info_s.txt")
    args.update(extra)
    return args


@pytest.mark.parametrize("case", sorted(p.name for p in DRIVER.iterdir() if p.is_dir()))
def test_every_tree_gives_facts_and_changes_nothing(case, run_module):
    result = run_module(driver_facts, _args(case), check_mode=True)
    assert not result.failed
    assert result["changed"] is False
    facts = result["ansible_facts"]["rdma_driver"]
    assert set(facts) == {
        "running_kernel", "installed_kernels", "newer_kernels", "other_module_dirs", "next_boot_kernel",
        "next_boot_source", "next_boot_entry", "loaded_modules", "nvidia_peermem_loaded", "gpudirect_module",
        "dkms", "ofed_version", "ofed", "infiniband_devices", "notes",
    }
    has_dkms = (DRIVER / case / "dkms_status.txt").exists()
    assert (facts["dkms"] is not None) == has_dkms
    if not has_dkms:
        assert "dkms is not installed: nothing rebuilds out-of-tree drivers for a new kernel" in facts["notes"]
    if not (DRIVER / case / "ofed_info_s.txt").exists():
        assert facts["ofed_version"] is None
        assert "ofed_info is not installed: no MLNX_OFED/DOCA-OFED release (inbox driver?)" in facts["notes"]


def test_the_upgraded_node_shows_the_next_reboot_risk(run_module):
    result = run_module(driver_facts, _args("debian_upgraded"))
    facts = result["ansible_facts"]["rdma_driver"]
    assert facts["running_kernel"] == "6.1.0-27-amd64"
    assert facts["next_boot_kernel"] == "6.1.0-28-amd64"
    assert facts["next_boot_source"] == "grub_default"
    assert facts["dkms"]["relevant"]["mlnx-ofed-kernel"]["kernels"] == {"6.1.0-27-amd64": "installed"}
    assert facts["dkms"]["version"] is None  # saved output: no dkms was asked for its version
    assert facts["nvidia_peermem_loaded"] is False
    assert facts["loaded_modules"]["mlx5_core"]["version"] == "23.10-1.1.9"
    assert facts["infiniband_devices"] == ["issm0", "issm1", "rdma_cm", "umad0", "umad1", "uverbs0", "uverbs1"]


def test_dkms_modules_option_shapes_the_relevant_view(run_module):
    result = run_module(driver_facts, _args("debian_healthy", dkms_modules=["knem", "nvidia", "xpmem"]))
    relevant = result["ansible_facts"]["rdma_driver"]["dkms"]["relevant"]
    assert sorted(relevant) == ["knem", "nvidia", "xpmem"]
    assert relevant["nvidia"]["kernels"] == {"6.1.0-27-amd64": "installed"}
    assert relevant["xpmem"] == {"present": False, "versions": [], "kernels": {}}


def test_an_empty_saved_dkms_status_means_dkms_without_modules(tmp_path, run_module):
    empty = tmp_path / "dkms_status.txt"
    empty.write_text("")
    result = run_module(driver_facts, _args("debian_healthy", dkms_status_file=str(empty)))
    dkms = result["ansible_facts"]["rdma_driver"]["dkms"]
    assert dkms["entries"] == [] and dkms["relevant"]["mlnx-ofed-kernel"]["present"] is False


def test_unreadable_saved_output_is_one_clear_sentence(tmp_path, run_module):
    missing = tmp_path / "nope.txt"
    result = run_module(driver_facts, _args("debian_healthy", dkms_status_file=str(missing)))
    assert result.failed
    assert result["msg"] == (
        "dkms_status_file %s does not exist; expected a file with the saved command output." % missing
    )
    result = run_module(driver_facts, _args("debian_healthy", ofed_info_file=str(tmp_path)))
    assert result.failed
    assert result["msg"] == (
        "ofed_info_file: %s is a directory, not a regular file; expected the saved output of a command "
        "(ofed_info_file)." % tmp_path
    )


def test_root_that_is_not_a_directory(tmp_path, run_module):
    result = run_module(driver_facts, {"root": str(tmp_path / "gone"), "run_tools": False})
    assert result.failed
    assert result["msg"] == "root %s is not a directory; expected / or the top of a node's file tree" % (tmp_path / "gone")


def test_bad_option_type_is_rejected_before_reading(run_module):
    result = run_module(driver_facts, {"root": str(DRIVER / "empty/root"), "run_tools": "sometimes"})
    assert result.failed
    assert "run_tools" in result["msg"]


def test_dkms_errors_and_foreign_lines_are_warnings(tmp_path, run_module):
    saved = tmp_path / "dkms_status.txt"
    saved.write_text((FIXTURES / "dkms" / "dkms3_status_module_dir_without_dkms_conf_only_error.txt").read_text()
                     + "[snip]\n")
    result = run_module(driver_facts, _args("debian_healthy", dkms_status_file=str(saved)))
    dkms = result["ansible_facts"]["rdma_driver"]["dkms"]
    assert dkms["entries"] == []
    assert result.warning_messages == [
        "dkms status reported an error, its module list may be incomplete: Could not locate dkms.conf file. "
        "File: /tmp/rdma-node-dkms/tree/broken/1.0/source/dkms.conf does not exist.",
        "dkms status printed a line that is not a status line: '[snip]'",
    ]
