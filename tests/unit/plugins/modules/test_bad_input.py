# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad input to the node modules: one sentence, nothing changed, never a hang.

Each module runs for real (its main()) against temporary trees with planted FIFOs, symlinks,
NUL bytes, non-UTF-8 and Unicode-digit names; a guard fails a test whose module blocks.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys

import pytest
import sysfs_tree
from ansible.module_utils.testing import patch_module_args

from ansible_collections.rdma.node.plugins.modules import (
    containerd_runtime,
    driver_facts,
    ib_facts,
    oci_rlimits,
    systemd_limits,
)
from testpaths import FIXTURES

SPEC_FIXTURE = FIXTURES / "containerd/oci_spec/debian12_containerd-1.6.20_ctr-oci-spec.json"
MEMLOCK = [{"type": "RLIMIT_MEMLOCK", "soft": 4194304, "hard": 4194304}]
UNIT = "[Service]\nExecStart=/usr/bin/containerd\nLimitNOFILE=infinity\n"


# A NUL byte in an argument: from Python 3.12 on, syslog refuses it, so ansible-core's invocation log
# (to syslog, its default) fails the run before the module reads its arguments ("Failed to log to
# syslog (embedded null character)..."). The module's own refusal is tested as the module runs when
# no_target_syslog = True (or no_log) is set: ansible-core then hands it _ansible_no_log and logs
# nothing. test_a_nul_byte_under_the_default_log shows the default on each Python.
NO_TARGET_SYSLOG = {"_ansible_no_log": True}


def listing(path):
    return sorted(os.listdir(path))


# --------------------------------------------------------------------------------------------------
# oci_rlimits
# --------------------------------------------------------------------------------------------------

def test_oci_rlimits_refuses_a_fifo(tmp_path, run_module, no_hang):
    fifo = tmp_path / "spec.json"
    os.mkfifo(fifo)
    result = run_module(oci_rlimits, {"path": str(fifo), "rlimits": MEMLOCK})
    assert result.failed
    assert result["msg"] == "%s is a FIFO (named pipe), not a regular file; expected an OCI runtime spec (JSON)." % fifo
    assert listing(tmp_path) == ["spec.json"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("spec, message", [
    ('{"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "hard": NaN, "soft": 1024}]}}', "holds NaN"),
    ('{"process": {"oomScoreAdj": Infinity}}', "holds Infinity"),
    ('{"process": {"oomScoreAdj": -Infinity}}', "holds -Infinity"),
    ("[" * 100000 + "]" * 100000, "nests arrays or objects too deeply"),
    ('{"a":' * 100000 + "1" + "}" * 100000, "nests arrays or objects too deeply"),
])
def test_oci_rlimits_bad_json_is_one_sentence(tmp_path, run_module, spec, message):
    path = tmp_path / "spec.json"
    path.write_text(spec)
    result = run_module(oci_rlimits, {"path": str(path), "rlimits": MEMLOCK})
    assert result.failed and message in result["msg"] and result["msg"].startswith(str(path))
    assert path.read_text() == spec and listing(tmp_path) == ["spec.json"]


def test_oci_rlimits_follows_a_symlink_and_keeps_it(tmp_path, run_module):
    real = tmp_path / "real" / "spec.json"
    real.parent.mkdir()
    real.write_bytes(SPEC_FIXTURE.read_bytes())
    link = tmp_path / "spec.json"
    os.symlink("real/spec.json", link)
    result = run_module(oci_rlimits, {"path": str(link), "rlimits": MEMLOCK})
    assert result["changed"] is True and result["path"] == str(real)
    assert os.path.islink(link) and os.readlink(link) == "real/spec.json"
    rlimits = json.loads(real.read_text())["process"]["rlimits"]
    assert {"type": "RLIMIT_MEMLOCK", "hard": 4194304, "soft": 4194304} in rlimits
    assert listing(real.parent) == ["spec.json"]


def test_oci_rlimits_nul_in_path(tmp_path, run_module):
    result = run_module(oci_rlimits, dict(NO_TARGET_SYSLOG, path=str(tmp_path) + "/spec\x00.json", rlimits=MEMLOCK))
    assert result.failed
    assert result["msg"] == "path %r contains a NUL byte; expected the path of an OCI runtime spec." % (
        str(tmp_path) + "/spec\x00.json")
    assert listing(tmp_path) == []


def test_a_nul_byte_under_the_default_log_is_refused_and_changes_nothing(tmp_path, run_module):
    result = run_module(oci_rlimits, {"path": str(tmp_path) + "/spec\x00.json", "rlimits": MEMLOCK})
    refused_by = "Failed to log to syslog (embedded null character)." if sys.version_info >= (3, 12) else "path %r contains a NUL byte" % (
        str(tmp_path) + "/spec\x00.json")
    assert result.failed and result["msg"].startswith(refused_by)
    assert listing(tmp_path) == []


@pytest.mark.parametrize("path", ["spec.json", "-", "-x.json", "./etc/spec.json", "~spec.json"])
def test_oci_rlimits_refuses_a_path_that_is_not_absolute(tmp_path, run_module, monkeypatch, path):
    """Issue 24, item 13: a relative path wrote the file, then failed with "No such file or directory: b''"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "etc").mkdir()
    result = run_module(oci_rlimits, {"path": path, "rlimits": MEMLOCK})
    assert result.failed
    assert result["msg"] == ("path must be the absolute path of the OCI runtime spec on the node, got %r." % path)
    assert listing(tmp_path) == ["etc"] and listing(tmp_path / "etc") == []


# --------------------------------------------------------------------------------------------------
# systemd_limits
# --------------------------------------------------------------------------------------------------

def unit_root(tmp_path):
    unit = tmp_path / "lib/systemd/system/containerd.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(UNIT)
    return tmp_path / "etc/systemd/system/containerd.service.d"


def limits_args(tmp_path, **extra):
    return dict({"unit": "containerd", "limits": {"MEMLOCK": "infinity"}, "root": str(tmp_path)}, **extra)


def test_systemd_limits_a_fifo_among_the_other_dropins_is_a_warning(tmp_path, run_module, no_hang):
    dropins = unit_root(tmp_path)
    dropins.mkdir(parents=True)
    os.mkfifo(dropins / "90-fifo.conf")
    result = run_module(systemd_limits, limits_args(tmp_path))
    assert result["changed"] is True and result["created"] is True
    assert "%s is a FIFO (named pipe), not a regular file; expected a systemd unit file or drop-in; read as null." % (
        dropins / "90-fifo.conf") in result.warning_messages
    assert (dropins / "50-rdma-node-limits.conf").read_text().endswith("LimitMEMLOCK=infinity\n")


def test_systemd_limits_refuses_a_fifo_or_a_symlink_as_its_own_dropin(tmp_path, run_module, no_hang):
    dropins = unit_root(tmp_path)
    dropins.mkdir(parents=True)
    ours = dropins / "50-rdma-node-limits.conf"
    os.mkfifo(ours)
    result = run_module(systemd_limits, limits_args(tmp_path))
    assert result.failed
    assert result["msg"] == ("%s is a FIFO (named pipe), not a regular file; expected a systemd drop-in. "
                             "Nothing was changed." % ours)
    ours.unlink()
    os.symlink("/dev/null", ours)
    for state in ("present", "absent"):
        result = run_module(systemd_limits, limits_args(tmp_path, state=state))
        assert result.failed
        assert result["msg"] == ("%s is a symbolic link, which is not followed here; expected a systemd drop-in. "
                                 "Nothing was changed." % ours)
        assert os.readlink(ours) == "/dev/null"


def test_systemd_limits_replaces_and_removes_an_unreadable_dropin_it_owns(tmp_path, run_module):
    dropins = unit_root(tmp_path)
    dropins.mkdir(parents=True)
    ours = dropins / "50-rdma-node-limits.conf"
    ours.write_bytes(b"\xff\xfe\x00binary")
    result = run_module(systemd_limits, limits_args(tmp_path, backup=True))
    assert result["changed"] is True and result["created"] is False
    assert open(result["backup_file"], "rb").read() == b"\xff\xfe\x00binary"
    assert "is not UTF-8 text" in result.warning_messages[0]
    assert ours.read_text().endswith("LimitMEMLOCK=infinity\n")
    os.unlink(result["backup_file"])
    ours.write_bytes(b"\xff\xfe\x00binary")
    result = run_module(systemd_limits, limits_args(tmp_path, state="absent"))
    assert result["changed"] is True and not ours.exists() and not dropins.exists()


def test_systemd_limits_backup_and_created(tmp_path, run_module):
    dropins = unit_root(tmp_path)
    ours = dropins / "50-rdma-node-limits.conf"
    first = run_module(systemd_limits, limits_args(tmp_path, backup=True))
    assert first["created"] is True and "backup_file" not in first
    before = ours.read_bytes()
    second = run_module(systemd_limits, limits_args(tmp_path, backup=True, limits={"MEMLOCK": "64M"}))
    assert second["created"] is False and second["changed"] is True
    assert open(second["backup_file"], "rb").read() == before
    again = run_module(systemd_limits, limits_args(tmp_path, backup=True, limits={"MEMLOCK": "64M"}))
    assert again["changed"] is False and again["created"] is False and "backup_file" not in again
    check = run_module(systemd_limits, limits_args(tmp_path, state="absent", backup=True), check_mode=True)
    assert check["changed"] is True and "backup_file" not in check and ours.exists()
    removed = run_module(systemd_limits, limits_args(tmp_path, state="absent", backup=True))
    assert removed["changed"] is True and removed["created"] is False
    assert not ours.exists() and open(removed["backup_file"], "rb").read() == b"".join(
        [b"# Managed by rdma.node.systemd_limits: local changes to this file are overwritten.\n",
         b"[Service]\n", b"LimitMEMLOCK=64M\n"])


@pytest.mark.parametrize("extra, message", [
    ({"dropin_name": "50-x\x00y"}, "dropin_name '50-x\\x00y' must be a plain file name (no directories, not hidden, "
                                   "no control characters or NUL)."),
    ({"unit": "--help"}, "unit '--help' is not a valid unit name."),
    ({"unit": "contain\x00erd"}, "unit 'contain\\x00erd' is not a valid unit name; use letters, digits and "
                                 ":-_.\\@ only, without a path."),
])
def test_systemd_limits_names_that_would_become_options_or_break_paths(tmp_path, run_module, extra, message):
    unit_root(tmp_path)
    result = run_module(systemd_limits, limits_args(tmp_path, **NO_TARGET_SYSLOG, **extra))
    assert result.failed and result["msg"] == message
    assert not (tmp_path / "etc").exists()


def test_systemd_limits_failed_write_leaves_no_new_directory(tmp_path, run_module):
    unit_root(tmp_path)
    # etc/systemd/system is a file: creating the drop-in directory fails half-way.
    (tmp_path / "etc/systemd").mkdir(parents=True)
    (tmp_path / "etc/systemd/system").write_text("")
    result = run_module(systemd_limits, limits_args(tmp_path))
    assert result.failed and result["msg"].startswith("Cannot write ")
    assert listing(tmp_path / "etc/systemd") == ["system"]


# --------------------------------------------------------------------------------------------------
# ib_facts and driver_facts
# --------------------------------------------------------------------------------------------------

def sysfs_device(root, name, ports=("1",)):
    device = root / "class/infiniband" / name
    for port in ports:
        (device / "ports" / port).mkdir(parents=True)
        (device / "ports" / port / "state").write_text("4: ACTIVE\n")
        (device / "ports" / port / "rate").write_text("100 Gb/sec (4X EDR)\n")
    (device / "node_type").write_text("1: CA\n")
    return device


def test_ib_facts_fifo_attribute_is_null_with_a_warning(tmp_path, run_module, no_hang):
    device = sysfs_device(tmp_path, "mlx5_0")
    os.mkfifo(device / "fw_ver")
    os.mkfifo(device / "ports/1/phys_state")
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path)})
    rdma = result["ansible_facts"]["rdma"]
    assert rdma["devices"]["mlx5_0"]["fw_ver"] is None and rdma["ports"][0]["phys_state"] is None
    assert rdma["ports"][0]["state"] == "ACTIVE"
    assert sorted(result.warning_messages) == sorted(
        "%s is a FIFO (named pipe), not a regular file; expected a sysfs attribute; read as null." % path
        for path in (device / "fw_ver", device / "ports/1/phys_state"))


def test_ib_facts_unicode_digits_and_non_utf8_names(tmp_path, run_module):
    sysfs_device(tmp_path, "mlx5_\u0663", ports=("1", "\u00b2", "\u0663"))
    sysfs_device(tmp_path, "mlx5_1")
    (tmp_path / "class/infiniband/mlx5_1/ports/1/state").write_text("\u00b2\n")
    os.makedirs(os.path.join(os.fsencode(tmp_path), b"class/infiniband/mlx5_\xff/ports"))
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path)})
    assert not result.failed
    rdma = result["ansible_facts"]["rdma"]
    assert rdma["devices"]["mlx5_\u0663"]["ports"] == [1]  # "²" and "٣" are not port numbers
    assert [p["state"] for p in rdma["ports"] if p["device"] == "mlx5_1"] == ["\u00b2"]
    # a name that is not UTF-8 cannot travel as JSON text: skipped, and said so
    assert sorted(rdma["devices"]) == ["mlx5_1", "mlx5_\u0663"]
    ports = tmp_path / "class/infiniband/mlx5_\u0663/ports"
    assert result.warning_messages == [
        "%s holds an entry whose name is not UTF-8 (b'mlx5_\\xff'); skipped." % (tmp_path / "class/infiniband"),
        "%s holds an entry named '\u00b2', not a port number; skipped." % ports,
        "%s holds an entry named '\u0663', not a port number; skipped." % ports]
    json.dumps(result).encode("utf-8")  # no lone surrogates left in the result


def test_ib_facts_one_bad_number_loses_nothing_else(tmp_path, run_module):
    """Issue 24, item 5: a Unicode digit in a link width, a GID file name or a counter is null with a warning."""
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    link = {"current_speed": "16.0 GT/s PCIe", "max_speed": "16.0 GT/s PCIe", "current_width": "\u00b2", "max_width": "16"}
    device = tree.hca("mlx5_0", "0000:3b:00.0", pcie=link)
    port = tree.port(device, 1, link_layer="Ethernet", ndevs=["ens1f0"],
                     counters={"symbol_error": "-5", "link_downed": "1\uff12", "port_rcv_errors": "2"})
    tree.write(port + "/gids/\u00b2", "fe80:0000:0000:0000:0000:0000:0000:0001")
    result = run_module(ib_facts, {"sysfs_root": str(tmp_path), "gather_subset": ["all"]})
    assert not result.failed
    rdma = result["ansible_facts"]["rdma"]
    assert rdma["pcie"]["mlx5_0"]["current_width"] is None and rdma["pcie"]["mlx5_0"]["max_width"] == 16
    assert rdma["ports"][0]["counters"] == {"symbol_error": None, "link_downed": None, "port_rcv_errors": 2}
    assert [gid["index"] for gid in rdma["roce"]["gids"]] == [0] and rdma["ports"][0]["state"] == "ACTIVE"
    pci, port_dir = tmp_path / "devices/pci0000:3b/0000:3b:00.0", tmp_path / "class/infiniband/mlx5_0/ports/1"
    assert sorted(result.warning_messages) == sorted([
        "%s/current_link_width holds '\u00b2', not an unsigned whole number of at most 64 bits; read as null." % pci,
        "%s/counters/symbol_error holds '-5', not an unsigned whole number of at most 64 bits; read as null." % port_dir,
        "%s/counters/link_downed holds '1\uff12', not an unsigned whole number of at most 64 bits; read as null."
        % port_dir,
        "%s/gids holds a file named '\u00b2', not a GID index; skipped." % port_dir])


def driver_root(tmp_path, modules_text):
    root = tmp_path / "root"
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text("6.1.0-27-amd64\n")
    (root / "proc/modules").write_text(modules_text)
    return root


def test_driver_facts_fifo_proc_modules_is_a_warning(tmp_path, run_module, no_hang):
    root = driver_root(tmp_path, "")
    (root / "proc/modules").unlink()
    os.mkfifo(root / "proc/modules")
    result = run_module(driver_facts, {"root": str(root), "run_tools": False})
    assert not result.failed
    assert result["ansible_facts"]["rdma_driver"]["loaded_modules"] == {}
    assert "%s is a FIFO (named pipe), not a regular file; expected a kernel, boot or module file; read as null." % (
        root / "proc/modules") in result.warning_messages


def test_driver_facts_fifo_as_saved_output_is_one_sentence(tmp_path, run_module, no_hang):
    root = driver_root(tmp_path, "")
    os.mkfifo(tmp_path / "dkms.txt")
    result = run_module(driver_facts, {"root": str(root), "run_tools": False, "dkms_status_file": str(tmp_path / "dkms.txt")})
    assert result.failed
    assert result["msg"] == ("dkms_status_file: %s is a FIFO (named pipe), not a regular file; expected the saved "
                             "output of a command (dkms_status_file)." % (tmp_path / "dkms.txt"))


def test_driver_facts_unicode_digits_in_proc_modules(tmp_path, run_module):
    root = driver_root(tmp_path, "mlx5_\u0663 \u00b2 \u0663 - Live 0x0\nib_core 462848 \u00b2 - Live 0x0\n")
    result = run_module(driver_facts, {"root": str(root), "run_tools": False})
    modules = result["ansible_facts"]["rdma_driver"]["loaded_modules"]
    assert modules["mlx5_\u0663"]["size"] is None and modules["mlx5_\u0663"]["refcount"] is None
    assert modules["ib_core"] == dict(modules["ib_core"], size=462848, refcount=None)


def test_driver_facts_numbers_past_64_bits_in_proc_modules(tmp_path, run_module):
    """Issue 24, item 5: int() of 5000 digits raises; a size past 64 bits is null with a warning."""
    root = driver_root(tmp_path, "mlx5_core %s 1 - Live 0x0\nib_core 462848 %d - Live 0x0\n" % ("9" * 5000, 2 ** 64))
    result = run_module(driver_facts, {"root": str(root), "run_tools": False})
    assert not result.failed
    modules = result["ansible_facts"]["rdma_driver"]["loaded_modules"]
    assert modules["mlx5_core"]["size"] is None and modules["mlx5_core"]["refcount"] == 1
    assert modules["ib_core"]["size"] == 462848 and modules["ib_core"]["refcount"] is None
    proc_modules = root / "proc/modules"
    assert result.warning_messages == [
        "%s (mlx5_core size) holds %r, not an unsigned whole number of at most 64 bits; read as null."
        % (proc_modules, "9" * 40 + "..."),
        # The kernel prints the count signed (-1 while a module unloads), so its bound is a signed one.
        "%s (ib_core refcount) holds '%d', not a whole number of 64 bits; read as null."
        % (proc_modules, 2 ** 64)]


def test_driver_facts_warnings_about_garbage_are_capped(tmp_path, run_module):
    """Issue 24, item 12: one warning per unparsable dkms status line was 23,377 warnings for 1 MB of garbage."""
    root = driver_root(tmp_path, "ib_core 462848 8 - Live 0x0\n")
    dkms = tmp_path / "dkms.txt"
    garbage = "".join("garbage line %d without a colon\n" % n for n in range(30000))
    dkms.write_text(garbage + "mlnx-ofed-kernel/23.10, 6.1.0-27-amd64, x86_64: installed\n")
    result = run_module(driver_facts, {"root": str(root), "run_tools": False, "dkms_status_file": str(dkms)})
    assert not result.failed
    warnings = result.warning_messages
    assert len(warnings) <= 25
    assert warnings[0] == "30003 notes; notes keeps the first 500."
    assert warnings[1] == "dkms status printed a line that is not a status line: 'garbage line 0 without a colon'"
    assert warnings[-1] == "29980 more warnings like these were left out."
    assert "mlnx-ofed-kernel" in json.dumps(result["ansible_facts"]["rdma_driver"]["dkms"]["relevant"])


def test_driver_facts_non_utf8_names(tmp_path, run_module):
    root = driver_root(tmp_path, "")
    (root / "proc/modules").write_bytes(b"mlx5_\xff 16384 0 - Live 0x0\nib_core 462848 8 - Live 0x0\n")
    devices = root / "dev/infiniband"
    devices.mkdir(parents=True)
    (devices / "uverbs0").write_text("")
    open(os.path.join(os.fsencode(devices), b"uverbs\xff"), "w").close()
    result = run_module(driver_facts, {"root": str(root), "run_tools": False})
    facts = result["ansible_facts"]["rdma_driver"]
    assert facts["infiniband_devices"] == ["uverbs0"]
    assert sorted(facts["loaded_modules"]) == ["ib_core", "mlx5_\ufffd"]  # /proc/modules text: bad bytes replaced
    assert "%s holds an entry whose name is not UTF-8 (b'uverbs\\xff'); skipped." % devices in result.warning_messages
    json.dumps(result).encode("utf-8")


def test_driver_facts_huge_module_list_and_dkms_status_are_summarised(tmp_path, run_module):
    lines = ["filler_%05d 16384 0 - Live 0x0" % n for n in range(20000)]
    lines += ["mlx5_core 2002944 1 mlx5_ib, Live 0x0", "ib_core 462848 8 mlx5_ib, Live 0x0"]
    root = driver_root(tmp_path, "\n".join(lines) + "\n")
    dkms = tmp_path / "dkms.txt"
    dkms.write_text("".join("filler%d/1.0, 6.1.0-27-amd64, x86_64: installed\n" % n for n in range(5000))
                    + "mlnx-ofed-kernel/23.10, 6.1.0-27-amd64, x86_64: installed\n")
    result = run_module(driver_facts, {"root": str(root), "run_tools": False, "dkms_status_file": str(dkms)})
    facts = result["ansible_facts"]["rdma_driver"]
    assert sorted(facts["loaded_modules"]) == ["ib_core", "mlx5_core"]
    assert len(facts["dkms"]["entries"]) == 500
    # dkms.relevant is computed over all entries: the RDMA driver, the last line, is in it
    assert "mlnx-ofed-kernel" in json.dumps(facts["dkms"]["relevant"])
    assert result.warning_messages[-2:] == [
        "20002 kernel modules are loaded; loaded_modules lists only the 2 RDMA and GPU ones.",
        "dkms status lists 5001 entries; dkms.entries keeps the first 500 (dkms.relevant covers all).",
    ]
    assert len(json.dumps(result)) < 400000


# --------------------------------------------------------------------------------------------------
# containerd_runtime (the node module: read step and compare-and-swap write step)
# --------------------------------------------------------------------------------------------------

def cr_args(path, **extra):
    return dict({"path": str(path), "base_runtime_spec": "/etc/containerd/spec.json", "validate": False}, **extra)


def test_containerd_runtime_refuses_a_fifo_config(tmp_path, run_module, no_hang):
    os.mkfifo(tmp_path / "config.toml")
    result = run_module(containerd_runtime, cr_args(tmp_path / "config.toml"))
    assert result.failed
    assert result["msg"] == ("%s is a FIFO (named pipe), not a regular file; expected containerd's config.toml "
                             "(TOML text)." % (tmp_path / "config.toml"))


@pytest.mark.parametrize("spec, status", [
    ('{"process": {"oomScoreAdj": NaN}}', "not valid JSON (NaN is not JSON)"),
    ("[" * 100000 + "]" * 100000, "not valid JSON (nested too deeply)"),
    (None, "unusable (%s is a FIFO (named pipe), not a regular file; expected an OCI runtime spec (JSON))"),
])
def test_containerd_runtime_spec_status(tmp_path, run_module, no_hang, spec, status):
    config = tmp_path / "config.toml"
    config.write_text("version = 2\n")
    spec_path = tmp_path / "spec.json"
    if spec is None:
        os.mkfifo(spec_path)
        status %= spec_path
    else:
        spec_path.write_text(spec)
    result = run_module(containerd_runtime, cr_args(config, base_runtime_spec=str(spec_path), validate=True))
    assert result["node"]["spec_status"] == status


def test_containerd_runtime_returns_the_digest(tmp_path, run_module):
    config = tmp_path / "config.toml"
    config.write_text("version = 2\n")
    node = run_module(containerd_runtime, cr_args(config))["node"]
    assert node["sha256"] == hashlib.sha256(b"version = 2\n").hexdigest() and node["content"] == "version = 2\n"


def test_containerd_runtime_write_step_is_a_compare_and_swap(tmp_path, run_module):
    config = tmp_path / "config.toml"
    config.write_text("version = 2\n")
    new = tmp_path / "new.toml"
    new.write_text("version = 2\n# edited\n")
    stale = hashlib.sha256(b"version = 1\n").hexdigest()
    result = run_module(containerd_runtime, cr_args(config, replace_with=str(new), expected_sha256=stale))
    assert result.failed and result["conflict"] is True
    assert result["msg"] == ("%s changed on the node since it was read (another task or process wrote it); nothing "
                             "was written." % config)
    assert config.read_text() == "version = 2\n" and listing(tmp_path) == ["config.toml", "new.toml"]
    fresh = hashlib.sha256(b"version = 2\n").hexdigest()
    result = run_module(containerd_runtime, cr_args(config, replace_with=str(new), expected_sha256=fresh, backup=True))
    assert result["changed"] is True and config.read_text() == "version = 2\n# edited\n"
    assert open(result["backup_file"]).read() == "version = 2\n"
    # A file that must not exist yet ("" digest) but now does is a conflict too.
    result = run_module(containerd_runtime, cr_args(tmp_path / "new.toml", replace_with=str(config), expected_sha256=""))
    assert result.failed and result["conflict"] is True


def test_systemd_limits_passes_the_unit_after_double_dash(tmp_path, monkeypatch, capsys):
    # Where systemd runs, the module reloads it and asks `systemctl show`; a recording systemctl
    # stands in for the real one (the podman-hosted integration test runs the real one). systemd is
    # not PID 1 here, so this one run is in process, with "systemd runs" patched in: ansible-core's
    # public patch_module_args hands the module its arguments.
    unit_root(tmp_path)
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "bin/systemctl"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"$@\" >> %s\n[ \"$1\" = show ] && echo LimitMEMLOCK=infinity\nexit 0\n" % calls)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (fake.parent, os.environ["PATH"]))
    monkeypatch.setattr(systemd_limits, "systemd_running", lambda root: True)
    with patch_module_args(limits_args(tmp_path)), pytest.raises(SystemExit):
        systemd_limits.main()
    result = json.loads(capsys.readouterr().out)
    assert result["changed"] is True and result["daemon_reloaded"] is True
    assert result["effective"] == {"LimitMEMLOCK": "infinity"}
    assert calls.read_text().splitlines() == [
        "daemon-reload", "show -p LimitMEMLOCK -p LimitMEMLOCKSoft -- containerd.service"]


def test_containerd_runtime_nul_bytes_in_options(tmp_path, run_module):
    from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc

    result = run_module(containerd_runtime, cr_args(str(tmp_path) + "/config\x00.toml", **NO_TARGET_SYSLOG))
    assert result.failed
    assert result["msg"] == "path %r contains a NUL byte; expected the path of containerd's config.toml." % (
        str(tmp_path) + "/config\x00.toml")
    with pytest.raises(cc.ContainerdConfigError) as caught:
        cc.plan_base_runtime_spec("version = 2\n", "/etc/spec\x00.json")
    assert str(caught.value) == ("base_runtime_spec '/etc/spec\\x00.json' contains a NUL or control character; "
                                 "expected the path of a JSON file.")
