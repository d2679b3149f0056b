"""Kernels, the next boot, loaded modules and OFED, read from the synthetic node trees in tests/fixtures/driver."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _driver
from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from testpaths import FIXTURES

DRIVER = FIXTURES / "driver"
LOADER_GUID = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
DEBIAN_UUID = "5f3c1d7e-2a9b-4c61-8e0f-3b7a9d2c4e11"
RHEL_OLD = "5.14.0-362.8.1.el9_3.x86_64"
RHEL_NEW = "5.14.0-427.13.1.el9_4.x86_64"

# What each tree must give: running, installed, newer, other dirs, next boot kernel and its source.
CASES = {
    "debian_healthy": dict(
        running="6.1.0-27-amd64", installed=["6.1.0-27-amd64"], newer=[], other=["6.1.0-21-amd64"],
        next_boot="6.1.0-27-amd64", source="grub_default", entry="Debian GNU/Linux",
    ),
    "debian_upgraded": dict(
        running="6.1.0-27-amd64", installed=["6.1.0-27-amd64", "6.1.0-28-amd64"], newer=["6.1.0-28-amd64"],
        other=[], next_boot="6.1.0-28-amd64", source="grub_default", entry="Debian GNU/Linux",
    ),
    "rhel_bls": dict(
        running=RHEL_OLD, installed=[RHEL_OLD, RHEL_NEW], newer=[RHEL_NEW], other=[],
        next_boot=RHEL_OLD, source="grub_saved_entry",
        entry="Red Hat Enterprise Linux (%s) 9.3 (Plow)" % RHEL_OLD,
    ),
    "ubuntu_next_entry": dict(
        running="5.15.0-89-generic",
        installed=["5.15.0-89-generic", "5.15.0-91-generic", "5.15.0-92-generic"],
        newer=["5.15.0-91-generic", "5.15.0-92-generic"], other=[],
        next_boot="5.15.0-91-generic", source="grub_next_entry", entry="Ubuntu, with Linux 5.15.0-91-generic",
    ),
    "systemd_boot": dict(
        running="6.9.7-200.fc40.x86_64",
        installed=["6.8.9-300.fc40.x86_64", "6.9.7-200.fc40.x86_64", "6.10.3-200.fc40.x86_64"],
        newer=["6.10.3-200.fc40.x86_64"], other=[],
        next_boot="6.9.7-200.fc40.x86_64", source="systemd_boot_default",
        entry="3e7f0c2a9b8d4f61a2c5e8d7b6a90f14-6.9.7-200.fc40.x86_64",
    ),
    "no_bootloader": dict(
        running="6.5.0-060500rc5-generic",
        installed=["6.4.16-060416-generic", "6.5.0-060500rc5-generic", "6.5.0-060500-generic"],
        newer=["6.5.0-060500-generic"], other=["6.6.0-060600-generic"],
        next_boot="6.5.0-060500-generic", source="newest_installed", entry=None,
    ),
    "empty": dict(running=None, installed=[], newer=[], other=[], next_boot=None, source=None, entry=None),
}


def test_every_tree_has_an_expectation():
    assert sorted(p.name for p in DRIVER.iterdir() if p.is_dir()) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_and_next_boot(case):
    want = CASES[case]
    facts = _driver.gather(str(DRIVER / case / "root"))
    assert facts["running_kernel"] == want["running"]
    assert facts["installed_kernels"] == want["installed"]
    assert facts["newer_kernels"] == want["newer"]
    assert facts["other_module_dirs"] == want["other"]
    assert (facts["next_boot_kernel"], facts["next_boot_source"], facts["next_boot_entry"]) == (
        want["next_boot"], want["source"], want["entry"])


@pytest.mark.parametrize(
    "older, newer",
    [
        ("6.1.0-28-amd64", "6.1.0-104-amd64"),
        ("6.5.0-rc5", "6.5.0"),
        ("6.5.0-060500rc5-generic", "6.5.0-060500-generic"),
        ("6.1.0", "6.1.0-1"),
        ("5.15.0-91-generic", "6.1.0-1-amd64"),
        ("4.18.0-477.27.1.el8_8.x86_64", "4.18.0-513.5.1.el8_9.x86_64"),
        ("5.14.0-362.8.1.el9_3.x86_64", "5.14.0-362.13.1.el9_3.x86_64"),
        ("6.9.12-200.fc40.x86_64", "6.10.3-200.fc40.x86_64"),
    ],
)
def test_kernel_versions_compare_as_numbers(older, newer):
    assert _driver.kernel_version_key(older) < _driver.kernel_version_key(newer)
    assert _driver.sort_kernels([newer, older, newer]) == [older, newer]


def test_the_rescue_image_is_no_kernel():
    installed, _other = _driver.installed_kernels(str(DRIVER / "rhel_bls" / "root"))
    assert not [k for k in installed if "rescue" in k]


def test_headers_only_and_left_over_dirs_do_not_count(tmp_path):
    (tmp_path / "lib/modules/6.1.0-9-amd64").mkdir(parents=True)
    (tmp_path / "lib/modules/6.1.0-9-amd64/build").symlink_to("/usr/src/linux-headers-6.1.0-9-amd64")
    (tmp_path / "lib/modules/6.1.0-9-amd64/modules.dep").write_text("")
    (tmp_path / "usr/lib/modules/6.1.0-10-amd64/kernel").mkdir(parents=True)
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot/vmlinuz-6.1.0-11-amd64").write_text("")
    (tmp_path / "boot/vmlinuz-6.1.0-8-amd64.old").write_text("")
    installed, other = _driver.installed_kernels(str(tmp_path))
    assert installed == ["6.1.0-10-amd64", "6.1.0-11-amd64"]
    assert other == ["6.1.0-9-amd64"]


# --- GRUB -----------------------------------------------------------------------------------------


def _debian_menu():
    menu, defaults, uses_bls = _driver.parse_grub_cfg((DRIVER / "debian_upgraded/root/boot/grub/grub.cfg").read_text())
    assert defaults == ["${next_entry}", "0"]
    assert uses_bls is False
    return menu


def test_grub_cfg_menu_structure():
    menu = _debian_menu()
    assert [(e["type"], e["title"], e["kernel"]) for e in menu] == [
        ("menuentry", "Debian GNU/Linux", "6.1.0-28-amd64"),
        ("submenu", "Advanced options for Debian GNU/Linux", None),
        ("menuentry", "UEFI Firmware Settings", None),
    ]
    assert [e["kernel"] for e in menu[1]["children"]] == ["6.1.0-28-amd64"] * 2 + ["6.1.0-27-amd64"] * 2
    assert menu[1]["children"][2]["id"] == "gnulinux-6.1.0-27-amd64-advanced-%s" % DEBIAN_UUID


@pytest.mark.parametrize(
    "selector, kernel",
    [
        ("0", "6.1.0-28-amd64"),
        ("1>2", "6.1.0-27-amd64"),
        ("1", "6.1.0-28-amd64"),  # a submenu as a whole boots its first entry
        ("Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-27-amd64", "6.1.0-27-amd64"),
        ("gnulinux-advanced-%s>gnulinux-6.1.0-27-amd64-advanced-%s" % (DEBIAN_UUID, DEBIAN_UUID), "6.1.0-27-amd64"),
        ("gnulinux-simple-%s" % DEBIAN_UUID, "6.1.0-28-amd64"),
        ("Debian GNU/Linux", "6.1.0-28-amd64"),
    ],
)
def test_grub_selectors(selector, kernel):
    assert _driver.resolve_grub_entry(_debian_menu(), selector)["kernel"] == kernel


@pytest.mark.parametrize("selector", ["7", "1>9", "Debian GNU/Linux, with Linux 6.1.0-27-amd64", "nope>0"])
def test_grub_selectors_that_name_nothing(selector):
    # A bare title of a submenu entry is not found at the top level: GRUB wants the path.
    assert _driver.resolve_grub_entry(_debian_menu(), selector) is None


def _copy_tree(case, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(str(DRIVER / case / "root"), str(root), symlinks=True)
    return root


def _grubenv(**values):
    body = "# GRUB Environment Block\n" + "".join("%s=%s\n" % kv for kv in values.items())
    return body + "#" * (1024 - len(body))


def test_saved_entry_in_grubenv_is_followed(tmp_path):
    root = _copy_tree("debian_upgraded", tmp_path)
    cfg = root / "boot/grub/grub.cfg"
    cfg.write_text(cfg.read_text().replace('set default="0"', 'set default="${saved_entry}"'))
    (root / "etc/default/grub").write_text("GRUB_DEFAULT=saved\n")
    (root / "boot/grub/grubenv").write_text(
        _grubenv(saved_entry="gnulinux-advanced-%s>gnulinux-6.1.0-27-amd64-advanced-%s" % (DEBIAN_UUID, DEBIAN_UUID)))
    notes = []
    assert _driver.next_boot(str(root), ["6.1.0-27-amd64", "6.1.0-28-amd64"], notes) == (
        "6.1.0-27-amd64", "grub_saved_entry", "Debian GNU/Linux, with Linux 6.1.0-27-amd64")
    assert notes == []


def test_empty_saved_entry_boots_the_first_entry(tmp_path):
    root = _copy_tree("debian_upgraded", tmp_path)
    cfg = root / "boot/grub/grub.cfg"
    cfg.write_text(cfg.read_text().replace('set default="0"', 'set default="${saved_entry}"'))
    (root / "etc/default/grub").write_text("GRUB_DEFAULT=saved\n")
    kernel, source, _entry = _driver.next_boot(str(root), [], [])
    assert (kernel, source) == ("6.1.0-28-amd64", "grub_default")


def test_etc_default_grub_edited_without_update_grub(tmp_path):
    root = _copy_tree("debian_upgraded", tmp_path)
    (root / "etc/default/grub").write_text('GRUB_DEFAULT="1>2"\n')
    notes = []
    kernel, source, _entry = _driver.next_boot(str(root), [], notes)
    assert (kernel, source) == ("6.1.0-28-amd64", "grub_default")
    assert notes == [
        "GRUB_DEFAULT=1>2 in /etc/default/grub differs from default=0 in /boot/grub/grub.cfg: GRUB follows "
        "/boot/grub/grub.cfg until update-grub (grub2-mkconfig) runs"
    ]


def test_a_default_that_names_no_entry_falls_back_to_the_first(tmp_path):
    root = _copy_tree("debian_upgraded", tmp_path)
    cfg = root / "boot/grub/grub.cfg"
    cfg.write_text(cfg.read_text().replace('set default="0"', 'set default="Debian GNU/Linux, with Linux 5.10.0-9-amd64"'))
    (root / "etc/default/grub").unlink()
    notes = []
    kernel, source, _entry = _driver.next_boot(str(root), [], notes)
    assert (kernel, source) == ("6.1.0-28-amd64", "grub_first_entry")
    assert notes == [
        "GRUB default 'Debian GNU/Linux, with Linux 5.10.0-9-amd64' names no entry of /boot/grub/grub.cfg; "
        "GRUB falls back to the first entry"
    ]


def test_grubenv_without_grub_cfg_uses_the_kernel_named_in_the_entry(tmp_path):
    (tmp_path / "boot/grub").mkdir(parents=True)
    (tmp_path / "boot/grub/grubenv").write_text(_grubenv(next_entry="Advanced options>Ubuntu, with Linux 5.15.0-92-generic"))
    assert _driver.next_boot(str(tmp_path), [], []) == (
        "5.15.0-92-generic", "grub_next_entry", "Advanced options>Ubuntu, with Linux 5.15.0-92-generic")


def test_bls_numeric_default_counts_newest_first(tmp_path):
    root = _copy_tree("rhel_bls", tmp_path)
    (root / "boot/grub2/grubenv").write_text(_grubenv(saved_entry="0"))
    kernel, source, _entry = _driver.next_boot(str(root), [], [])
    assert (kernel, source) == (RHEL_NEW, "grub_saved_entry")


# --- systemd-boot -----------------------------------------------------------------------------


def _efivar(root, name, value):
    path = root / "sys/firmware/efi/efivars"
    path.mkdir(parents=True, exist_ok=True)
    (path / ("%s-%s" % (name, LOADER_GUID))).write_bytes(b"\x07\x00\x00\x00" + (value + "\x00").encode("utf-16-le"))


def test_systemd_boot_oneshot_efi_variable_wins(tmp_path):
    root = _copy_tree("systemd_boot", tmp_path)
    _efivar(root, "LoaderEntryDefault", "3e7f0c2a9b8d4f61a2c5e8d7b6a90f14-6.8.9-300.fc40.x86_64.conf")
    kernel, source, _entry = _driver.next_boot(str(root), [], [])
    assert (kernel, source) == ("6.8.9-300.fc40.x86_64", "systemd_boot_efi_default")
    _efivar(root, "LoaderEntryOneShot", "3e7f0c2a9b8d4f61a2c5e8d7b6a90f14-6.10.3-200.fc40.x86_64.conf")
    kernel, source, _entry = _driver.next_boot(str(root), [], [])
    assert (kernel, source) == ("6.10.3-200.fc40.x86_64", "systemd_boot_oneshot")


def test_systemd_boot_without_default_boots_the_newest_entry(tmp_path):
    root = _copy_tree("systemd_boot", tmp_path)
    (root / "boot/efi/loader/loader.conf").write_text("timeout 3\n")
    kernel, source, _entry = _driver.next_boot(str(root), [], [])
    assert (kernel, source) == ("6.10.3-200.fc40.x86_64", "systemd_boot_first_entry")


def test_systemd_boot_saved_default_is_not_guessed(tmp_path):
    root = _copy_tree("systemd_boot", tmp_path)
    (root / "boot/efi/loader/loader.conf").write_text("default @saved\n")
    notes = []
    kernel, source, _entry = _driver.next_boot(str(root), [], notes)
    assert (kernel, source) == ("6.10.3-200.fc40.x86_64", "systemd_boot_first_entry")
    assert notes == ["systemd-boot's default is @saved, which lives in EFI variables not readable here"]


@pytest.mark.parametrize(
    "path, kernel",
    [
        ("/boot/vmlinuz-6.1.0-28-amd64", "6.1.0-28-amd64"),
        ("/vmlinuz-5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.13.1.el9_4.x86_64"),
        ("/3e7f0c2a/6.9.7-200.fc40.x86_64/linux", "6.9.7-200.fc40.x86_64"),
        ("(hd0,gpt2)/@/boot/vmlinuz-6.8.0-31-generic", "6.8.0-31-generic"),
        ("/EFI/Linux/arch.efi", None),
        # Gentoo: GRUB's 10_linux lists /boot/kernel-* too; genkernel names the architecture before the release.
        ("/kernel-genkernel-x86_64-4.0.5-gentoo", "4.0.5-gentoo"),
        ("/boot/kernel-6.6.13-gentoo-dist", "6.6.13-gentoo-dist"),
        ("/boot/kernel-config", None),
        # Copies of the same kernel: Ubuntu's signed image for Secure Boot, SUSE's compressed ELF.
        ("/boot/vmlinuz-4.2.0-16-generic.efi.signed", "4.2.0-16-generic"),
        ("/boot/vmlinux-5.14.21-150400.24.21-default.gz", "5.14.21-150400.24.21-default"),
        # The distribution's links to the newest image: no release in the name.
        ("/boot/vmlinuz", None),
        ("/vmlinuz", None),
        (None, None),
    ],
)
def test_kernel_from_image_path(path, kernel):
    assert _driver.kernel_from_image_path(path) == kernel


# --- modules, OFED, devices ---------------------------------------------------------------------


def test_proc_modules_fields():
    text = (
        "nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)\n"
        "ib_core 475136 8 rdma_cm,ib_ipoib,mlx5_ib, Live 0xffffffffc0a00000 (OE)\n"
        "ext4 1003520 2 - Live 0x0000000000000000\n"
        "mlx5_ib 499712 - - Unloading 0x0000000000000000 (OE)\n"
        "broken\n"
    )
    modules = _driver.parse_proc_modules(text)
    assert modules == {
        "nvidia_peermem": {"size": 16384, "refcount": 0, "used_by": [], "state": "Live", "taint": "POE"},
        "ib_core": {"size": 475136, "refcount": 8, "used_by": ["rdma_cm", "ib_ipoib", "mlx5_ib"], "state": "Live", "taint": "OE"},
        "ext4": {"size": 1003520, "refcount": 2, "used_by": [], "state": "Live", "taint": None},
        "mlx5_ib": {"size": 499712, "refcount": None, "used_by": None, "state": "Unloading", "taint": "OE"},
    }


def test_proc_modules_flags_among_the_users_name_no_module():
    # The kernel prints "[permanent]," (a module without an exit function) where the users stand.
    text = (FIXTURES / "cmd/proc_modules/buildroot_arm64_ipv6_permanent_used_by_flag.txt").read_text()
    modules = _driver.parse_proc_modules(text)
    assert (modules["ipv6"]["refcount"], modules["ipv6"]["used_by"], modules["ipv6"]["state"]) == (18, [], "Live")
    assert _driver.parse_proc_modules("ipv4 1 2 [unsafe],nf_nat, Live 0x0\n")["ipv4"]["used_by"] == ["nf_nat"]


def test_proc_modules_of_a_kernel_that_cannot_unload_modules_says_unknown_without_a_warning():
    # Talos builds its kernel without module unloading: every line prints "- -" for the count and the users.
    text = (FIXTURES / "cmd/proc_modules/talos_no_module_unload_dash_dash_nvidia_510.txt").read_text()
    take_read_warnings()
    modules = _driver.parse_proc_modules(text)
    assert take_read_warnings() == []
    assert modules["nvidia"] == {"size": 39047168, "refcount": None, "used_by": None, "state": "Live", "taint": "PO"}
    assert len(modules) == 4
    # A count that is not a number, with users, is still a broken line of its own: said.
    _driver.parse_proc_modules("mlx5_ib 499712 x mlx5_core, Live 0x0\n")
    assert len(take_read_warnings()) == 1


def test_module_versions_from_sys_module():
    modules = _driver.loaded_modules(str(DRIVER / "debian_healthy/root"))
    assert modules["mlx5_core"]["version"] == "23.10-1.1.9"
    assert modules["mlx5_core"]["srcversion"] == "3B8C1E0F4A2D9B7C6E5F012"
    assert modules["nvidia_peermem"]["version"] == "535.161.08"
    assert modules["ext4"]["version"] is None and modules["ext4"]["srcversion"] is None


@pytest.mark.parametrize(
    "text, ofed",
    [
        ("MLNX_OFED_LINUX-23.10-1.1.9.0:\n", {"id": "MLNX_OFED_LINUX-23.10-1.1.9.0", "distribution": "MLNX_OFED_LINUX", "version": "23.10-1.1.9.0"}),
        ("OFED-internal-24.07-0.6.1:\n", {"id": "OFED-internal-24.07-0.6.1", "distribution": "OFED-internal", "version": "24.07-0.6.1"}),
        ("MLNX_OFED_LINUX-5.8-1.0.1.1 (OFED-5.8-1.0.1):\n\nucx:\n",
         {"id": "MLNX_OFED_LINUX-5.8-1.0.1.1", "distribution": "MLNX_OFED_LINUX", "version": "5.8-1.0.1.1"}),
        ("\nsomething odd\n", {"id": "something", "distribution": None, "version": None}),
        # A saved paste: the prompt before the output is skipped; ofed_info -n prints a bare version; a node
        # with the inbox rdma-core has no ofed_info at all.
        ("[root@node002 src]# ofed_info\nMLNX_OFED_LINUX-5.8-3.0.7.0 (OFED-5.8-3.0.7):\n",
         {"id": "MLNX_OFED_LINUX-5.8-3.0.7.0", "distribution": "MLNX_OFED_LINUX", "version": "5.8-3.0.7.0"}),
        ("root@swx-ray07:~# ofed_info -s\nOFED-internal-24.07-0.3.5.0.110:\n",
         {"id": "OFED-internal-24.07-0.3.5.0.110", "distribution": "OFED-internal", "version": "24.07-0.3.5.0.110"}),
        ("# ofed_info -n\n5.0-2.1.8\n", {"id": "5.0-2.1.8", "distribution": None, "version": "5.0-2.1.8"}),
        ("[tgillis@node1019 ~]$ ofed_info -s\n-bash: ofed_info: command not found\n", None),
        ("", None),
        (None, None),
    ],
)
def test_ofed_info(text, ofed):
    assert _driver.parse_ofed_info(text) == ofed


@pytest.mark.parametrize("name, ofed_id", [
    ("hpc-notes_system-label-line_prompt_full-head-24.04_then-lsmod.txt", "MLNX_OFED_LINUX-24.04-0.7.0.0"),
    ("aerial-notes_function-output-annotations_ofed-internal-24.04_md-line-ends.txt", "OFED-internal-24.04-0.6.6"),
])
def test_ofed_info_after_a_note_s_lines(name, ofed_id):
    # A label or an annotation line before the output is not the release: the later line in ofed_info's
    # form is, and nothing further down (a module listing) is taken for it.
    assert _driver.parse_ofed_info((FIXTURES / "cmd/ofed_info" / name).read_text())["id"] == ofed_id
    # Without a line of that form the first line stays the (unknown) answer; a later line counts only in
    # ofed_info's header form (its colon), a bare version only alone on its line.
    assert _driver.parse_ofed_info("THEA\nucx-1.17.0-1.2404066\n") == {"id": "THEA", "distribution": None, "version": None}
    assert _driver.parse_ofed_info("Output:\n2024-05-01 12:00 installed\n")["version"] is None
    assert _driver.parse_ofed_info("Output:\n5.0-2.1.8\n")["version"] == "5.0-2.1.8"


def test_ofed_info_whose_copy_lost_its_colon_is_found_by_its_distribution_s_name():
    # "code:", "$ ofed_info -s", "Function: ...", "Output:", then the author's copy "OFED-internal-25.10-1.7." (cut
    # short, no colon): the OFED name is the answer, not the label "code".
    text = (FIXTURES / "cmd/ofed_info/aerial-notes_code-function-output-mean-labels_ofed-internal-25.10_cut-at-dot.txt").read_text()
    assert _driver.parse_ofed_info(text) == {"id": "OFED-internal-25.10-1.7.", "distribution": "OFED-internal", "version": "25.10-1.7."}
    assert _driver.parse_ofed_info("Output:\nMLNX_OFED_LINUX-5.8-3.0.7.0\n")["id"] == "MLNX_OFED_LINUX-5.8-3.0.7.0"
    # A package further down a paste is still no OFED release.
    assert _driver.parse_ofed_info("THEA\nucx-1.17.0-1.2404066\n")["version"] is None


def test_infiniband_devices_in_natural_order(tmp_path):
    (tmp_path / "dev/infiniband").mkdir(parents=True)
    for name in ("uverbs10", "uverbs2", "rdma_cm", "umad0"):
        (tmp_path / "dev/infiniband" / name).write_text("")
    assert _driver.infiniband_devices(str(tmp_path)) == ["rdma_cm", "umad0", "uverbs2", "uverbs10"]


def test_gpudirect_and_dkms_view_from_saved_outputs():
    case = DRIVER / "debian_upgraded"
    facts = _driver.gather(
        str(case / "root"),
        dkms_text=(case / "dkms_status.txt").read_text(),
        dkms_version="3.0.10",
        ofed_text=(case / "ofed_info_s.txt").read_text(),
        dkms_modules=["mlnx-ofed-kernel", "knem"],
    )
    assert facts["nvidia_peermem_loaded"] is False and facts["gpudirect_module"] is None
    assert "rdma_ucm" not in facts["loaded_modules"]
    assert facts["dkms"]["version"] == "3.0.10"
    assert facts["dkms"]["relevant"] == {
        "mlnx-ofed-kernel": {"present": True, "versions": ["23.10.OFED.23.10.1.1.9.1"], "kernels": {"6.1.0-27-amd64": "installed"}},
        "knem": {"present": True, "versions": ["1.1.4.90mlnx3"], "kernels": {"6.1.0-27-amd64": "installed", "6.1.0-28-amd64": "installed"}},
    }
    assert facts["dkms"]["errors"] == [
        "Bad return status for module build on kernel: 6.1.0-28-amd64 (x86_64) Consult "
        "/var/lib/dkms/mlnx-ofed-kernel/23.10.OFED.23.10.1.1.9.1/build/make.log for more information."
    ]
    assert len(facts["dkms"]["entries"]) == 3
    assert facts["ofed_version"] == "MLNX_OFED_LINUX-23.10-1.1.9.0"
    assert facts["notes"] == []


def test_legacy_nv_peer_mem_counts_as_gpudirect(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/modules").write_text("nv_peer_mem 16384 0 - Live 0x0000000000000000 (OE)\n")
    facts = _driver.gather(str(tmp_path))
    assert (facts["nvidia_peermem_loaded"], facts["gpudirect_module"]) == (False, "nv_peer_mem")


def test_empty_tree_gives_notes_not_errors():
    facts = _driver.gather(str(DRIVER / "empty/root"), notes=["dkms is not installed"])
    assert facts["dkms"] is None and facts["ofed_version"] is None and facts["ofed"] is None
    assert facts["loaded_modules"] == {} and facts["infiniband_devices"] == []
    assert facts["notes"] == [
        "dkms is not installed",
        "proc/sys/kernel/osrelease is missing: running kernel unknown",
        "no installed kernel found under lib/modules or boot",
        "proc/modules is missing: loaded modules unknown",
        "dev/infiniband is missing: no RDMA device nodes",
    ]


def test_unparsable_dkms_lines_become_notes():
    facts = _driver.gather(str(DRIVER / "empty/root"), dkms_text="foo/1: added\nsegfault at 0x0\n", dkms_modules=["foo"])
    assert facts["dkms"]["relevant"]["foo"]["present"] is True
    assert "dkms status printed a line that is not a status line: 'segfault at 0x0'" in facts["notes"]


def test_running_kernel_that_was_removed_and_boot_kernel_not_installed(tmp_path):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("6.1.0-20-amd64\n")
    (tmp_path / "boot/grub").mkdir(parents=True)
    (tmp_path / "boot/vmlinuz-6.1.0-27-amd64").write_text("")
    (tmp_path / "boot/grub/grubenv").write_text(_grubenv(next_entry="gnulinux-6.1.0-30-amd64-advanced-x"))
    facts = _driver.gather(str(tmp_path))
    assert facts["next_boot_kernel"] == "6.1.0-30-amd64"
    assert "the running kernel 6.1.0-20-amd64 is no longer installed (its package was removed)" in facts["notes"]
    assert "the boot loader's next kernel 6.1.0-30-amd64 is not an installed kernel" in facts["notes"]


@pytest.mark.parametrize("grubenv, kernel, source", [
    # The host's own grubenv: no boot is being counted, so boot counting's "set default=1" does not run; its
    # saved_entry names a kernel without an entry, so GRUB boots the first entry.
    ("rhel9_uefi_grubenv", "5.14.0-503.11.1.el9_5.x86_64", "grub_first_entry"),
    (None, "5.14.0-503.11.1.el9_5.x86_64", "grub_default"),  # no grubenv: an empty saved_entry, the first entry
    # A failed boot counted down to 0: GRUB takes entry 1 (here the rescue entry) as the test of the block says.
    ("boot_counter=0\nboot_success=0\n", "0-rescue-3b1bf67095e94696b600ed25416e97a8", "grub_default"),
])
def test_a_real_rhel9_grub_cfg_sets_its_boot_countings_default_only_while_a_boot_is_counted(tmp_path, grubenv, kernel, source):
    real = FIXTURES / "grub"
    (tmp_path / "boot" / "grub2").mkdir(parents=True)
    (tmp_path / "boot" / "loader" / "entries").mkdir(parents=True)
    (tmp_path / "boot" / "grub2" / "grub.cfg").write_text((real / "rhel9_uefi_boot_grub2_grub.cfg").read_text())
    if grubenv is not None:
        text = (real / grubenv).read_text() if (real / grubenv).is_file() else grubenv
        (tmp_path / "boot" / "grub2" / "grubenv").write_text(text)
    for entry in real.glob("rhel9_uefi_bls_*.conf"):
        (tmp_path / "boot" / "loader" / "entries" / entry.name[len("rhel9_uefi_bls_"):]).write_text(entry.read_text())
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes)[:2] == (kernel, source)


@pytest.mark.parametrize("test, expected", [
    ('if [ -n "${boot_counter}" -a "${boot_success}" = "0" ]; then', False),
    ('if [ "${next_entry}" ] ; then', True),
    ('if [ x"${feature_menuentry_id}" = xy ]; then', False),
    ('if [ "${boot_counter}" = "0" -o "${boot_counter}" = "-1" ]; then', True),
    ('if [ -f ${config_directory}/user.cfg ]; then', None),  # a file test: not known from grubenv
    ("if keystatus --shift ; then", None),
])
def test_grub_tests_of_grubenv_variables(test, expected):
    env = {"next_entry": "1", "boot_counter": "-1"}
    assert _driver._grub_test(_driver._grub_words(test), env) is expected


def _x86_image_head(version):
    """The start of an x86 kernel image as the boot protocol lays it out (a stand-in for a real
    vmlinuz, which is megabytes): "HdrS" at 0x202, at 0x20E the version string's offset less 0x200."""
    head = bytearray(0x600)
    head[0x202:0x206] = b"HdrS"
    head[0x20E:0x210] = (0x300).to_bytes(2, "little")
    text = version.encode("ascii") + b"\x00"
    head[0x500:0x500 + len(text)] = text
    return bytes(head)


def test_a_real_manjaro_grub_cfg_whose_images_are_named_by_package_boots_the_release_the_image_says(tmp_path):
    real = FIXTURES / "grub"
    (tmp_path / "boot" / "grub").mkdir(parents=True)
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text((real / "manjaro_grub_customizer_boot_grub_grub.cfg").read_text())
    (tmp_path / "boot" / "grub" / "grubenv").write_text((real / "manjaro_grubenv").read_text())
    (tmp_path / "boot" / "vmlinuz-5.9-x86_64").write_bytes(
        _x86_image_head("5.9.11-3-MANJARO (builduser@fv-az12-345) #1 SMP PREEMPT Sat Nov 28 2020"))
    (tmp_path / "boot" / "vmlinuz-5.8-x86_64").write_bytes(b"not an x86 image")
    (tmp_path / "usr" / "lib" / "modules" / "5.9.11-3-MANJARO" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel" / "osrelease").write_text("5.9.11-3-MANJARO\n")
    facts = _driver.gather(str(tmp_path))
    assert facts["next_boot_kernel"] == "5.9.11-3-MANJARO"
    # An image whose header says nothing keeps the name it has: no release to put in its place.
    assert facts["installed_kernels"] == ["5.8-x86_64", "5.9.11-3-MANJARO"]
    assert not any("next kernel" in note for note in facts["notes"])


def test_an_image_that_is_a_fifo_or_a_directory_gives_no_release_and_no_hang(tmp_path):
    (tmp_path / "boot").mkdir()
    os.mkfifo(tmp_path / "boot" / "vmlinuz-linux")  # opened for a blocking read, this would wait for a writer
    (tmp_path / "boot" / "vmlinuz-lts").mkdir()
    assert _driver.image_release(str(tmp_path), "/boot/vmlinuz-linux") is None
    assert _driver.image_release(str(tmp_path), "/boot/vmlinuz-lts") is None
    assert _driver.image_release(str(tmp_path), "/boot/vmlinuz-missing") is None


def test_a_whole_if_on_one_line_closes_on_that_line():
    """Ubuntu's grub.cfg: "if [ -n "${have_grubenv}" ]; then if [ -z "${boot_once}" ]; then save_env recordfail;
    fi; fi" and, in every entry, "if [ x$grub_platform = xxen ]; then insmod xzio; ...; fi". Each line opens and closes
    its branches: a default set after them (as 40_custom adds one) is still GRUB's."""
    text = (FIXTURES / "grub" / "ubuntu2404_lvm_homework_grub.cfg").read_text()
    menu, defaults, _bls = _driver.parse_grub_cfg(text, {})
    assert defaults == ["0"] and (menu[0]["title"], menu[0]["kernel"]) == ("Ubuntu", "6.8.0-88-generic")
    assert _driver.parse_grub_cfg(text)[1] == ["${next_entry}", "0"]  # without grubenv no branch is judged
    assert _driver.parse_grub_cfg(text + 'set default="1>2"\n', {})[1] == ["0", "1>2"]
    # A branch's statements on its line: the set default of a false test is GRUB's skipped one, the else's is not.
    assert _driver.parse_grub_cfg('if [ a = b ]; then set default="1"; else set default="4"; fi\n', {})[1] == ["4"]


def test_an_ostree_entrys_version_is_its_serial_and_the_image_names_the_kernel(tmp_path):
    entries = tmp_path / "boot" / "loader" / "entries"
    entries.mkdir(parents=True)
    (entries / "ostree-1-ock.conf").write_text((FIXTURES / "grub" / "oracle_cne_ock_ostree_bls_ostree-1-ock.conf").read_text())
    (entries / "fedora.conf").write_text("title Fedora\nversion 6.8.5-301.fc40.x86_64\nlinux /vmlinuz-6.8.5-301.fc40.x86_64\n")
    kernels = {entry["id"]: entry["kernel"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/loader/entries")}
    assert kernels == {"ostree-1-ock": "5.15.0-305.176.4.el8uek.x86_64", "fedora": "6.8.5-301.fc40.x86_64"}


def test_driver_facts_read_a_saved_paste_of_two_dkms_runs_as_the_filter_does():
    # The first run's Error is what the node said before its stale link was removed; the second run is the node now.
    text = (FIXTURES / "dkms" / "dkms3_status_error_then_commands_then_a_second_status_zfs_issue15336_comment.txt").read_text()
    notes = []
    dkms = _driver.dkms_facts(text, "3.0.11", ["zfs"], notes)
    assert dkms["errors"] == [] and [(e["name"], e["version"], e["state"]) for e in dkms["entries"]] == [("zfs", "2.1.13", "installed")]
    assert len(notes) == 13 and all(note.startswith("dkms status printed a line that is not a status line") for note in notes)


def test_a_xen_entry_boots_its_first_module_as_the_kernel(tmp_path):
    # XCP-ng 8.1: "multiboot2 /boot/xen.gz ..." loads the hypervisor, the first "module2" line the dom0 kernel.
    (tmp_path / "boot" / "grub").mkdir(parents=True)
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text((FIXTURES / "grub" / "xcpng_8_1_xen_dom0_multiboot2_module2_grub.cfg").read_text())
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes) == ("4.19-xen", "grub_default", "XCP-ng")
    assert notes == []
    entry = _driver.parse_grub_cfg("menuentry tboot {\n multiboot /tboot.gz\n module --nounzip /vmlinuz-5.14.0-1 ro\n"
                                   " module /initramfs-5.14.0-1.img\n}\n")[0][0]
    assert (entry["kernel"], entry["image"], entry["hypervisor"]) == ("5.14.0-1", "/vmlinuz-5.14.0-1", "/tboot.gz")
    # A module line without a hypervisor before it is no kernel (an entry that loads modules for something else).
    assert _driver.parse_grub_cfg("menuentry x {\n module /vmlinuz-5.14.0-1\n}\n")[0][0]["kernel"] is None


def test_menu_entries_written_on_one_line_are_entries():
    # SLES's snapshot stanza as a boot loader's parser test keeps it: "menuentry '...' { true; }" inside a submenu,
    # then "menuentry test { linux /vmlinux }".
    menu = _driver.parse_grub_cfg((FIXTURES / "grub" / "petitboot_sles_btrfs_snapshot_stanza_one_line_entries_grub.cfg").read_text())[0]
    assert [(entry["type"], entry["title"], entry["image"]) for entry in menu] == [
        ("submenu", "Bootable snapshot #$snapshot_num", None), ("menuentry", "test", "/vmlinux")]
    assert [child["title"] for child in menu[0]["children"]] == ["If OK, run 'snapper rollback $snapshot_num' and reboot."]
    # What follows a one-line entry is back at the level it stands on.
    menu = _driver.parse_grub_cfg("menuentry a { linux /vmlinuz-6.1.0-1-amd64; }\nmenuentry b {\n linux /vmlinuz-6.1.0-2-amd64\n}\n")[0]
    assert [(entry["title"], entry["kernel"], entry["children"]) for entry in menu] == [
        ("a", "6.1.0-1-amd64", []), ("b", "6.1.0-2-amd64", [])]


def _grub_tree(tmp_path, fixture):
    (tmp_path / "boot" / "grub").mkdir(parents=True)
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text((FIXTURES / "grub" / fixture).read_text())
    return tmp_path


def test_a_gentoo_genkernel_image_names_its_release(tmp_path):
    root = _grub_tree(tmp_path, "gentoo_genkernel_grub2_mkconfig_2_00_separate_boot_grub.cfg")
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == ("4.0.5-gentoo", "grub_default", "Gentoo GNU/Linux")
    assert notes == []
    (root / "boot" / "kernel-genkernel-x86_64-4.0.5-gentoo").write_bytes(b"")
    (root / "boot" / "kernel-6.6.13-gentoo").write_bytes(b"")
    (root / "boot" / "kernel-config").write_text("not a kernel")
    assert _driver.installed_kernels(str(root))[0] == ["4.0.5-gentoo", "6.6.13-gentoo"]


def test_a_menu_lst_converted_by_grub_menulst2cfg(tmp_path):
    """"set default='0'; if [ x"$default" = xsaved ]; then load_env; set default="$saved_entry"; fi" on one line, and
    "legacy_kernel '/vmlinuz-linux' '/vmlinuz-linux' 'root=/dev/sda2' 'ro'" in each entry."""
    root = _grub_tree(tmp_path, "arch_wiki_grub_menulst2cfg_one_line_set_default_legacy_kernel_grub.cfg")
    menu, defaults, _bls = _driver.parse_grub_cfg((root / "boot" / "grub" / "grub.cfg").read_text(), {})
    assert defaults == ["0"] and [(entry["title"], entry["image"]) for entry in menu] == [
        ("Arch Linux Stock Kernel", "/vmlinuz-linux"), ("Arch Linux Stock Kernel Fallback", "/vmlinuz-linux")]
    (root / "boot" / "vmlinuz-linux").write_bytes(_x86_image_head("6.12.4-arch1-1 (linux@archlinux) #1 SMP PREEMPT_DYNAMIC"))
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == ("6.12.4-arch1-1", "grub_default", "Arch Linux Stock Kernel")
    assert notes == []


def test_systemd_boot_reads_the_release_of_an_image_named_by_its_package(tmp_path):
    """Arch's entries name the package's image ("linux /vmlinuz-linux", no version): the release is the image's, on
    the ESP systemd-boot reads."""
    shutil.copytree(FIXTURES / "grub" / "arch_systemd_boot_package_named_images", tmp_path / "boot")
    notes = []
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == ("linux", "systemd_boot_default", "arch")
    (tmp_path / "boot" / "vmlinuz-linux").write_bytes(_x86_image_head("6.12.4-arch1-1 (linux@archlinux) #1 SMP PREEMPT_DYNAMIC"))
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == ("6.12.4-arch1-1", "systemd_boot_default", "arch")
    assert notes == []


def test_a_saved_submenu_path_names_its_entrys_kernel_without_grub_cfg(tmp_path):
    """grubenv's "saved_entry=gnulinux-advanced-UUID>gnulinux-3.8.0-5-generic-advanced-UUID" with GRUB_DEFAULT=saved,
    where grub.cfg cannot be read: the release is the entry's, after the ">"."""
    (tmp_path / "boot" / "grub").mkdir(parents=True)
    (tmp_path / "etc" / "default").mkdir(parents=True)
    shutil.copy(FIXTURES / "grub" / "ubuntu1304_forum_grubenv_saved_entry_submenu_path_padding_cut.txt", tmp_path / "boot" / "grub" / "grubenv")
    (tmp_path / "etc" / "default" / "grub").write_text("GRUB_DEFAULT=saved\nGRUB_SAVEDEFAULT=true\n")
    notes = []
    kernel, source, _entry = _driver.grub_next_boot(str(tmp_path), notes)
    assert (kernel, source, notes) == ("3.8.0-5-generic", "grub_saved_entry", [])


def test_entries_that_boot_the_vmlinuz_link_read_the_release_it_points_to(tmp_path):
    """A GRUB 1.96-era grub.cfg: "linux /vmlinuz ..." and, in recovery, "linux /boot/vmlinuz ..."."""
    root = _grub_tree(tmp_path, "ubuntu904_grub196_vmlinuz_links_set_default_10_grub.cfg")
    menu = _driver.parse_grub_cfg((root / "boot" / "grub" / "grub.cfg").read_text())[0]
    assert [entry["kernel"] for entry in menu] == [None, None, None]
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == (None, None, "Ubuntu")
    assert notes[-1] == "GRUB boots 'Ubuntu' next, which names no Linux kernel"
    os.symlink("boot/vmlinuz-2.6.28-11-generic", root / "vmlinuz")
    notes = []
    assert _driver.grub_next_boot(str(root), notes)[:2] == ("2.6.28-11-generic", "grub_first_entry")


def test_a_nixos_entrys_version_sentence_names_the_kernel(tmp_path):
    entries = tmp_path / "boot" / "loader" / "entries"
    entries.mkdir(parents=True)
    shutil.copy(FIXTURES / "grub" / "nixos_22_05_generation_131_version_sentence_entry.conf", entries / "nixos-generation-131.conf")
    (entries / "nixos-generation-132.conf").write_text("title NixOS\nversion Generation 132 NixOS 23.11 (Linux 6.1.69), built on 2024-01-02\n")
    (entries / "nixos-generation-133.conf").write_text("title NixOS\nversion Generation 133\nlinux /efi/nixos/abc-linux-6.6.8-bzImage.efi\n")
    kernels = {entry["id"]: entry["kernel"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/loader/entries")}
    assert kernels == {"nixos-generation-131": "5.15.78", "nixos-generation-132": "6.1.69", "nixos-generation-133": None}


def test_grub_on_uefi_beside_its_binary(tmp_path):
    """RHEL 8 and its rebuilds on UEFI: grub.cfg and grubenv in /boot/efi/EFI/redhat, none in /boot/grub2."""
    efi = tmp_path / "boot" / "efi" / "EFI" / "redhat"
    efi.mkdir(parents=True)
    (tmp_path / "boot" / "efi" / "EFI" / "BOOT").mkdir()
    shutil.copy(FIXTURES / "grub" / "rhel9_uefi_boot_grub2_grub.cfg", efi / "grub.cfg")
    (efi / "grubenv").write_text("# GRUB Environment Block\nsaved_entry=3b1bf67095e94696b600ed25416e97a8-5.14.0-503.11.1.el9_5.x86_64\n")
    entries = tmp_path / "boot" / "loader" / "entries"
    entries.mkdir(parents=True)
    for release in ("0-rescue", "5.14.0-503.11.1.el9_5.x86_64"):
        name = "3b1bf67095e94696b600ed25416e97a8-%s.conf" % release
        shutil.copy(FIXTURES / "grub" / ("rhel9_uefi_bls_" + name), entries / name)
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes) == (
        "5.14.0-503.11.1.el9_5.x86_64", "grub_saved_entry", "Red Hat Enterprise Linux (5.14.0-503.11.1.el9_5.x86_64) 9.5 (Plow)")
    assert notes == []
    # Where /boot/grub2 has one (RHEL 9: the EFI directory's is a stub that loads it), /boot/grub2's is read.
    (tmp_path / "boot" / "grub2").mkdir()
    (tmp_path / "boot" / "grub2" / "grub.cfg").write_text("set default=0\nmenuentry 'Other' {\n linux /vmlinuz-6.1.0-1-amd64\n}\n")
    assert _driver.grub_next_boot(str(tmp_path), [])[0] == "6.1.0-1-amd64"


def test_copies_of_one_kernel_in_boot_are_one_installed_kernel(tmp_path):
    """SLES 15 SP4's /boot (ls -liah of a real node): vmlinuz-X and vmlinux-X.gz, the compressed ELF crash reads, are one
    kernel, not a newer one; so are Ubuntu's vmlinuz-X and its signed copy vmlinuz-X.efi.signed."""
    listing = (DRIVER / "kairos_docs_sles15sp4_ls_liah_boot_vmlinux_gz.txt").read_text().splitlines()
    (tmp_path / "boot").mkdir()
    for line in listing:
        fields = line.split()
        if len(fields) >= 10 and not fields[9].startswith(".") and fields[1].startswith("-"):
            (tmp_path / "boot" / fields[9]).write_bytes(b"")
    (tmp_path / "boot" / "vmlinuz-4.2.0-16-generic").write_bytes(b"")
    (tmp_path / "boot" / "vmlinuz-4.2.0-16-generic.efi.signed").write_bytes(b"")
    assert _driver.installed_kernels(str(tmp_path))[0] == ["4.2.0-16-generic", "5.14.21-150400.24.21-default"]


def test_another_flavour_of_the_running_build_is_no_newer_kernel(tmp_path):
    """OpenShift's driver toolkit lists the realtime kernel of the running build and RHEL's kABI lists in /lib/modules;
    a Rocky 9 host keeps the +debug kernel of its build (grubby's --info=ALL): neither is an update waiting for a reboot."""
    listing = (DRIVER / "openshift_4_11_driver_toolkit_ls_lib_modules_rt_and_kabi.txt").read_text().splitlines()[1:]
    for name in listing:
        (tmp_path / "lib" / "modules" / name / ("kernel" if name[0].isdigit() else "")).mkdir(parents=True, exist_ok=True)
    (tmp_path / "proc" / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel" / "osrelease").write_text("4.18.0-372.32.1.el8_6.x86_64\n")
    facts = _driver.gather(str(tmp_path))
    assert facts["installed_kernels"] == ["4.18.0-372.32.1.el8_6.x86_64", "4.18.0-372.32.1.rt7.189.el8_6.x86_64"]
    assert (facts["newer_kernels"], facts["other_module_dirs"]) == ([], [])
    assert (facts["next_boot_kernel"], facts["next_boot_source"]) == ("4.18.0-372.32.1.el8_6.x86_64", "newest_installed")
    grubby = (DRIVER / "rocky9_notes_grubby_info_all_debug_kernel_beside_its_build.txt").read_text()
    releases = [line.split("/boot/vmlinuz-", 1)[1].rstrip('"') for line in grubby.splitlines() if line.startswith("kernel=")]
    assert _driver.newer_kernels(_driver.sort_kernels(releases), "5.14.0-503.35.1.el9_5.x86_64") == []
    assert _driver.newer_kernels(_driver.sort_kernels(releases), "5.14.0-362.8.1.el9_3.x86_64") == [
        "5.14.0-503.35.1.el9_5.x86_64", "5.14.0-503.35.1.el9_5.x86_64+debug"]
    # A release candidate of the same numbers is a pre-release: the release is newer than it.
    assert _driver.newer_kernels(["6.5.0-rc5", "6.5.0"], "6.5.0-rc5") == ["6.5.0"]


# --- round 20: real samples a tester found (tests/fixtures/grub, tests/fixtures/cmd/ofed_info) -------------------------


def test_an_sdbootutil_entrys_version_is_its_snapshot_then_the_release(tmp_path):
    """sdbootutil's entry (FOSDEM 26 slides): "version 1@6.18.4-5-default" is snapshot 1's entry of 6.18.4-5-default. The
    file name is the one the slide's comment gives; loader.conf and the module tree are constructed."""
    entries = tmp_path / "boot" / "efi" / "loader" / "entries"
    entries.mkdir(parents=True)
    shutil.copy(FIXTURES / "grub" / "opensuse_microos_sdbootutil_entry_version_snapshot_at_kernel_PARTIAL.conf",
                entries / "opensuse-microos-6.18.4-5-default-1.conf")
    (tmp_path / "boot" / "efi" / "loader" / "loader.conf").write_text("timeout 3\n")
    (tmp_path / "usr" / "lib" / "modules" / "6.18.4-5-default" / "kernel").mkdir(parents=True)
    assert [entry["kernel"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/efi/loader/entries")] == ["6.18.4-5-default"]
    notes = []
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == (
        "6.18.4-5-default", "systemd_boot_first_entry", "opensuse-microos-6.18.4-5-default-1")
    assert notes == []
    facts = _driver.gather(str(tmp_path))
    assert facts["next_boot_kernel"] == "6.18.4-5-default"
    assert not [note for note in facts["notes"] if "is not an installed kernel" in note]
    # Versions that are a release, or name none, read as before.
    (entries / "plain.conf").write_text("title x\nversion 6.1.0-28-amd64\nlinux /vmlinuz-6.1.0-28-amd64\n")
    (entries / "serial.conf").write_text("title y\nversion 1\nlinux /ostree/x/vmlinuz-5.15.0-200.el8uek.x86_64\n")
    kernels = {entry["id"]: entry["kernel"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/efi/loader/entries")}
    assert kernels == {"opensuse-microos-6.18.4-5-default-1": "6.18.4-5-default", "plain": "6.1.0-28-amd64",
                       "serial": "5.15.0-200.el8uek.x86_64"}


def _microos_entry(snapshot, release):
    """An entry in sdbootutil's form (the slides' entry above); constructed, as the listing shows file names only."""
    return ("title      openSUSE MicroOS %s\nversion    %s@%s\nsort-key   opensuse-microos\n"
            "options    quiet rootflags=subvol=@/.snapshots/%s/snapshot\n"
            "linux      /opensuse-microos/%s/linux-0\ninitrd     /opensuse-microos/%s/initrd-0\n"
            % (snapshot, snapshot, release, snapshot, release, release))


def test_a_boot_counter_is_no_part_of_the_entry_id_and_an_entry_without_tries_boots_last(tmp_path):
    """sdbootutil issue 297: "ls /boot/efi/loader/entries" on MicroOS shows "opensuse-microos-6.15.8-1-default-4+3.conf".
    Constructed: the entries' bodies, loader.conf, and LoaderEntryDefault as "bootctl set-default" writes it (no counter)."""
    listing = (FIXTURES / "grub" / "microos_ls_loader_entries_boot_counting_plus3_sdbootutil_issue297.txt").read_text().splitlines()
    entries = tmp_path / "boot" / "efi" / "loader" / "entries"
    entries.mkdir(parents=True)
    (tmp_path / "boot" / "efi" / "loader" / "loader.conf").write_text("timeout 3\n")
    for name in listing[1].split():
        snapshot = name[:-len(".conf")].rsplit("-", 1)[1].split("+")[0]
        (entries / name).write_text(_microos_entry(snapshot, "6.15.8-1-default"))
    _efivar(tmp_path, "LoaderEntryDefault", "opensuse-microos-6.15.8-1-default-4.conf")
    notes = []
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == (
        "6.15.8-1-default", "systemd_boot_efi_default", "opensuse-microos-6.15.8-1-default-4")
    assert notes == []
    assert _driver.split_boot_counter("opensuse-microos-6.15.8-1-default-4+3") == ("opensuse-microos-6.15.8-1-default-4", 3)
    assert _driver.split_boot_counter("arch+0-3") == ("arch", 0)
    assert _driver.split_boot_counter("arch") == ("arch", None)
    # Snapshot 5 with a newer kernel failed all its tries ("+0-3"): systemd-boot puts it after every other entry.
    (entries / "opensuse-microos-6.16.1-1-default-5+0-3.conf").write_text(_microos_entry("5", "6.16.1-1-default"))
    (tmp_path / "sys" / "firmware" / "efi" / "efivars" / ("LoaderEntryDefault-" + LOADER_GUID)).unlink()
    order = [(entry["id"], entry["tries_left"]) for entry in _driver.read_bls_entries(str(tmp_path), "/boot/efi/loader/entries")]
    assert order[0] == ("opensuse-microos-6.15.8-1-default-4", 3)
    assert order[-1] == ("opensuse-microos-6.16.1-1-default-5", 0)
    assert _driver.systemd_boot_next_boot(str(tmp_path), []) == (
        "6.15.8-1-default", "systemd_boot_first_entry", "opensuse-microos-6.15.8-1-default-4")


def test_ofed_info_in_a_paste_of_several_commands_reads_only_its_own_output():
    """open-mpi/ompi#9957: "rpm -q rdma-core" prints a package, then "ofed_info -s" is not found: no OFED."""
    text = (FIXTURES / "cmd/ofed_info/ompi-issue9957_rpm-q-rdma-core_then-ofed-info-s-command-not-found_then-ibv-devinfo_PARTIAL.txt").read_text()
    assert _driver.parse_ofed_info(text) is None
    assert _driver.gather("/nonexistent-root", ofed_text=text)["ofed_version"] is None
    # The same paste where ofed_info answers: its release, not the package rpm printed before it.
    answered = text.replace("-bash: ofed_info: command not found", "MLNX_OFED_LINUX-4.9-4.1.7.0:")
    assert _driver.parse_ofed_info(answered)["id"] == "MLNX_OFED_LINUX-4.9-4.1.7.0"
    # A paste without a prompt that runs ofed_info reads as before: its first line in ofed_info's form.
    assert _driver.parse_ofed_info("# which ofed_info\nMLNX_OFED_LINUX-5.4-3.1.0.0:\n")["id"] == "MLNX_OFED_LINUX-5.4-3.1.0.0"


def _bootctl_list_tree(root, loader_conf, unified=True):
    """A tree rebuilt from the "bootctl list" of systemd#22580: each Type #1 entry from its listed fields, the Type #2
    image as a stub. Constructed: loader.conf, the images' contents (an x86 header for /vmlinuz-linux) and the modules."""
    text = (FIXTURES / "grub" / "arch_bootctl_list_manual_entry_rescue_version_and_uki_type2_systemd_issue22580.txt").read_text()
    (root / "boot" / "loader" / "entries").mkdir(parents=True)
    (root / "boot" / "loader" / "loader.conf").write_text(loader_conf)
    for block in text.split("\n\n"):
        fields, key = [], None
        for line in block.splitlines()[1 if block.startswith("Boot Loader Entries:") else 0:]:
            name, value = line.split(":", 1) if ":" in line else ("", line)  # a second initrd: its value alone
            key = name.strip() or key
            fields.append((key, value.strip()))
        values = dict(fields)
        if values["type"].endswith("(.conf)"):
            body = "title %s\nversion %s\nlinux %s\n" % (values["title"], values["version"], values["linux"])
            body += "".join("initrd %s\n" % value for name, value in fields if name == "initrd")
            (root / values["source"].lstrip("/")).write_text(body + "options %s\n" % values["options"])
        elif unified:
            (root / values["source"].lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (root / values["source"].lstrip("/")).write_bytes(b"MZ")
    (root / "boot" / "vmlinuz-linux").write_bytes(_x86_image_head("5.16.11-arch1-1 (linux@archlinux) #1 SMP PREEMPT"))
    (root / "usr" / "lib" / "modules" / "5.16.11-arch1-1" / "kernel").mkdir(parents=True)
    return root


@pytest.mark.parametrize("loader_conf", ["timeout 3\n", "default auto-reboot-to-firmware-setup\n", "default archlinux.efi\n"])
def test_unified_kernel_images_beside_the_entries_make_the_next_kernel_unknown(tmp_path, loader_conf):
    root = _bootctl_list_tree(tmp_path, loader_conf)
    kernels = {entry["id"]: entry["kernel"] for entry in _driver.read_bls_entries(str(root), "/boot/loader/entries")}
    assert kernels == {"arch": "linux", "archboot": None}  # "version rescue" is a label, not a release
    notes = []
    assert _driver.systemd_boot_next_boot(str(root), notes) == (None, None, None)
    assert notes[-1] == ("systemd-boot also boots the unified kernel images in /boot/EFI/Linux (archlinux.efi), whose "
                         "kernels and place among the entries are not read here: the next kernel is not known")
    facts = _driver.gather(str(root))
    assert (facts["next_boot_kernel"], facts["next_boot_source"]) == ("5.16.11-arch1-1", "newest_installed")


def test_a_default_naming_a_type1_entry_only_is_followed_beside_unified_images_and_rescue_is_never_a_release(tmp_path):
    root = _bootctl_list_tree(tmp_path / "a", "default arch.conf\n")
    notes = []
    assert _driver.systemd_boot_next_boot(str(root), notes) == ("5.16.11-arch1-1", "systemd_boot_default", "arch")
    assert notes == []
    root = _bootctl_list_tree(tmp_path / "b", "default archboot.conf\n", unified=False)
    notes = []
    assert _driver.systemd_boot_next_boot(str(root), notes) == (None, None, "archboot")
    assert notes == ["systemd-boot boots 'archboot' next, whose entry names no kernel release"]


def test_the_xbootldr_partitions_entries_are_read_beside_the_esps_loader_conf(tmp_path):
    """systemd#32535: the ESP at /efi holds loader.conf only, XBOOTLDR at /boot the entries and the kernel. Constructed:
    loader.conf, the entries' bodies (Arch's usual ones) and the image's x86 header."""
    listing = (FIXTURES / "grub" / "arch_xbootldr_find_efi_and_boot_systemd_issue32535_PARTIAL.txt").read_text().splitlines()
    paths = [line for line in listing if line.startswith("/")]
    for path in paths:
        if not any(other.startswith(path + "/") for other in paths):
            (tmp_path / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path.lstrip("/")).write_bytes(b"")
    (tmp_path / "efi" / "loader" / "loader.conf").write_text("timeout 3\n")
    entries = tmp_path / "boot" / "loader" / "entries"
    (entries / "arch.conf").write_text("title Arch Linux\nlinux /vmlinuz-linux\ninitrd /initramfs-linux.img\noptions rw\n")
    (entries / "arch-fallback.conf").write_text("title Arch Linux (fallback)\nlinux /vmlinuz-linux\n"
                                                "initrd /initramfs-linux-fallback.img\noptions rw\n")
    (entries / "memtest.conf").write_text("title Memtest86+\nefi /memtest86+/memtest.efi\n")
    (tmp_path / "boot" / "vmlinuz-linux").write_bytes(_x86_image_head("6.8.9-arch1-1 (linux@archlinux) #1 SMP PREEMPT_DYNAMIC"))
    notes = []
    # Without a default systemd-boot boots the first entry by id, newest first: "arch-fallback" sorts above "arch".
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == ("6.8.9-arch1-1", "systemd_boot_first_entry", "arch-fallback")
    assert notes == []
    (tmp_path / "efi" / "loader" / "loader.conf").write_text("timeout 3\ndefault arch.conf\n")
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == ("6.8.9-arch1-1", "systemd_boot_default", "arch")
    for entry in list(entries.iterdir()):
        entry.unlink()
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == (None, None, None)
    assert notes == ["/efi/loader/loader.conf exists but neither /efi/loader/entries nor /boot/loader/entries has entries"]


def _lima_tree(tmp_path, custom_cfg):
    """The blog's Lima VM: its "ls -l /boot/vmlinuz*" and "uname -r" as a tree, its custom.cfg. Constructed: grub.cfg, the
    Ubuntu 24.04 fixture (41_custom included) with its kernel's two entries written for 6.8.0-59 and 6.8.0-55."""
    listing = (FIXTURES / "grub" / "ubuntu_lima_ls_boot_vmlinuz_links_and_uname_blog.txt").read_text().splitlines()
    (tmp_path / "boot" / "grub").mkdir(parents=True)
    for line in listing:
        fields = line.split()
        if line.startswith("-rw"):
            (tmp_path / fields[-1].lstrip("/")).write_bytes(b"")
            release = fields[-1].split("vmlinuz-", 1)[1]
            (tmp_path / "lib" / "modules" / release / "kernel").mkdir(parents=True)
        elif line.startswith("l"):
            os.symlink(fields[-1], tmp_path / fields[-3].lstrip("/"))
    (tmp_path / "proc" / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel" / "osrelease").write_text(listing[listing.index("$ uname -r") + 1] + "\n")
    lines = (FIXTURES / "grub" / "ubuntu2404_lvm_homework_grub.cfg").read_text().splitlines(True)
    first = next(i for i, line in enumerate(lines) if line.startswith("        menuentry 'Ubuntu, with Linux"))
    end = next(i for i in range(first, len(lines)) if lines[i].rstrip() == "}")
    advanced = "".join(lines[first:end])
    text = ("".join(lines[:first]).replace("6.8.0-88-generic", "6.8.0-59-generic") + advanced.replace("6.8.0-88", "6.8.0-59")
            + advanced.replace("6.8.0-88", "6.8.0-55") + "".join(lines[end:]))
    (tmp_path / "boot" / "grub" / "grub.cfg").write_text(text)
    if custom_cfg is not None:
        (tmp_path / "boot" / "grub" / "custom.cfg").write_text(custom_cfg)
    return tmp_path


def test_a_conditional_default_in_grubs_custom_cfg_makes_the_next_kernel_unknown(tmp_path):
    custom = (FIXTURES / "grub" / "ubuntu_lima_boot_grub_custom_cfg_search_flagdisk_set_default_1_2_blog.txt").read_text()
    root = _lima_tree(tmp_path, custom)
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == (None, None, None)
    assert notes == ["/boot/grub/custom.cfg line 4 sets default=1>2 under a condition GRUB tests at boot: the next kernel is not known"]
    facts = _driver.gather(str(root))
    assert (facts["running_kernel"], facts["next_boot_source"]) == ("6.8.0-55-generic", "newest_installed")
    assert notes[0] in facts["notes"]


def test_an_unconditional_default_in_grubs_custom_cfg_wins_and_grub_cfg_alone_reads_as_before(tmp_path):
    root = _lima_tree(tmp_path / "set", 'set default="1>2"\n')
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == ("6.8.0-55-generic", "grub_custom_cfg", "Ubuntu, with Linux 6.8.0-55-generic")
    assert notes == []
    # grub-set-default's saved_entry, set from custom.cfg: grubenv's value.
    root = _lima_tree(tmp_path / "saved", 'set default="${saved_entry}"\n')
    (root / "boot" / "grub" / "grubenv").write_text(_grubenv(saved_entry="1>2"))
    assert _driver.grub_next_boot(str(root), notes) == ("6.8.0-55-generic", "grub_custom_cfg", "Ubuntu, with Linux 6.8.0-55-generic")
    root = _lima_tree(tmp_path / "none", None)
    assert _driver.grub_next_boot(str(root), notes) == ("6.8.0-59-generic", "grub_default", "Ubuntu")
    # A custom.cfg that grub.cfg does not source is not GRUB's.
    root = _lima_tree(tmp_path / "unsourced", 'set default="1>2"\n')
    cfg = root / "boot" / "grub" / "grub.cfg"
    cfg.write_text(cfg.read_text().replace("source ", "# source "))
    assert _driver.grub_next_boot(str(root), notes) == ("6.8.0-59-generic", "grub_default", "Ubuntu")
    assert notes == []


def test_grub_1_98s_source_line_with_its_semicolon_reads_custom_cfg(tmp_path):
    """Ubuntu 10.10's grub.cfg (GRUB 1.98, Boot Info Script's results): a title default on a flat menu of 19 kernels, and
    41_custom's "source $prefix/custom.cfg;" with the semicolon GRUB 1.98 to 2.00 wrote. Constructed: the tree (one
    /boot/vmlinuz-RELEASE per kernel the same results list under "Location of files loaded by Grub") and each custom.cfg."""
    cfg = (FIXTURES / "grub" / "ubuntu1010_bootinfo_grub198_set_default_title_flat_menu_41_custom_source_prefix_custom_cfg_semicolon_PARTIAL.cfg")
    releases = ["2.6.31-21-generic", "2.6.32-25-generic", "2.6.35.4-km"] + [
        "2.6.35-%d-generic%s" % (abi, pae) for abi in range(22, 30) for pae in ("", "-pae")]

    def tree(name, custom_cfg):
        root = tmp_path / name
        (root / "boot" / "grub").mkdir(parents=True)
        shutil.copy(cfg, root / "boot" / "grub" / "grub.cfg")
        for release in releases:
            (root / "boot" / ("vmlinuz-" + release)).write_bytes(b"")
        if custom_cfg is not None:
            (root / "boot" / "grub" / "custom.cfg").write_text(custom_cfg)
        return str(root)

    notes = []
    # As before: grub.cfg's own default, a title that names neither the newest kernel nor the first entry.
    assert _driver.grub_next_boot(tree("alone", None), notes) == (
        "2.6.35-22-generic", "grub_default", "Ubuntu, with Linux 2.6.35-22-generic")
    assert notes == []
    assert _driver.grub_next_boot(tree("custom", 'set default="Ubuntu, with Linux 2.6.35-29-generic"\n'), notes) == (
        "2.6.35-29-generic", "grub_custom_cfg", "Ubuntu, with Linux 2.6.35-29-generic")
    assert notes == []
    assert _driver.grub_next_boot(tree("conditional", 'if [ -f /flag ]; then set default="2"; fi\n'), notes) == (None, None, None)
    assert notes == ["/boot/grub/custom.cfg line 1 sets default=2 under a condition GRUB tests at boot: the next kernel is not known"]


def test_a_kernel_named_by_a_variable_of_a_load_env_file_is_read_from_that_file(tmp_path):
    """Azure Linux (CBL-Mariner): "load_env -f $bootprefix/mariner.cfg", then "linux $bootprefix/$mariner_linux".
    Constructed: mariner.cfg, in the form the kernel package's spec writes /boot/linux-RELEASE.cfg (mariner.cfg links to it)."""
    root = _grub_tree(tmp_path, "mariner_trident_test_grub_cfg_bootprefix_mariner_linux_variable_PARTIAL.cfg")
    (root / "boot" / "grub").rename(root / "boot" / "grub2")
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == (None, None, "CBL-Mariner")
    assert notes == ["GRUB boots 'CBL-Mariner' next, whose kernel $bootprefix/$mariner_linux is a variable that neither "
                     "grub.cfg nor a file it loads (load_env -f) sets: the next kernel is not known"]
    (root / "boot" / "mariner.cfg").write_text(
        "# GRUB Environment Block\nmariner_cmdline=init=/lib/systemd/systemd ro loglevel=3 no-vmw-sta crashkernel=256M lockdown=integrity\n"
        "mariner_linux=vmlinuz-5.15.158.2-1.cm2\nmariner_initrd=initrd.img-5.15.158.2-1.cm2\n")
    notes = []
    assert _driver.grub_next_boot(str(root), notes) == ("5.15.158.2-1.cm2", "grub_default", "CBL-Mariner")
    assert notes == []
    # A variable set under another test than the file's presence is not known.
    assert _driver._grub_variables(str(root), 'if [ "$x" ]; then\n set v=1\nfi\nset w=2\n') == {"v": None, "w": "2"}


def test_photons_quoted_prefix_and_variable_name_the_kernel_of_photon_cfg(tmp_path):
    """Photon OS documentation's menu entry: linux "/boot/"$photon_linux. Constructed: the "load_env -f /boot/photon.cfg"
    line before it (the documentation shows the entry only) and photon.cfg."""
    entry = (FIXTURES / "grub" / "photon_docs_grub_cfg_menuentry_boot_photon_linux_quoted_prefix_PARTIAL.cfg").read_text()
    (tmp_path / "boot" / "grub2").mkdir(parents=True)
    (tmp_path / "boot" / "grub2" / "grub.cfg").write_text(entry)
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes) == (None, None, "Photon")
    assert "$photon_linux is a variable" in notes[0]
    (tmp_path / "boot" / "grub2" / "grub.cfg").write_text("load_env -f /boot/photon.cfg\n" + entry)
    (tmp_path / "boot" / "photon.cfg").write_text("photon_linux=vmlinuz-4.19.15-3.ph3-esx\nphoton_initrd=initrd.img-4.19.15-3.ph3-esx\n")
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes) == ("4.19.15-3.ph3-esx", "grub_default", "Photon")
    assert notes == []


def test_a_module_stuck_unloading_has_a_signed_count_and_its_state_mark_is_no_taint_flag():
    """/proc/modules prints the count signed ("%i"): -1 while an unload is under way or stuck. module_flags() ends the
    taint letters with "-" (being unloaded) or "+" (being loaded): the state, which the state field also says."""
    take_read_warnings()
    lsw = _driver.parse_proc_modules(
        (FIXTURES / "cmd/proc_modules/lsw_notes_grep_stuck_unloading_refcount_minus1_taint_OE_dash.txt").read_text())
    mts = _driver.parse_proc_modules(
        (FIXTURES / "cmd/proc_modules/busybox_lsmod_telnet_console_mts_unloading_minus1_O_dash.txt").read_text())
    assert take_read_warnings() == []
    assert lsw == {"lsw": {"size": 131072, "refcount": -1, "used_by": [], "state": "Unloading", "taint": "OE"}}
    assert mts == {"mts": {"size": 36864, "refcount": -1, "used_by": [], "state": "Unloading", "taint": "O"}}
    # Constructed in the kernel's forms: an untainted module's mark alone is no taint; a loading module's "+" likewise.
    modules = _driver.parse_proc_modules("a 16384 -1 - Unloading 0x0 (-)\nb 16384 0 - Loading 0x0 (OE+)\nc 16384 0 - Loading 0x0 (+)\n")
    assert [(m["refcount"], m["state"], m["taint"]) for m in modules.values()] == [
        (-1, "Unloading", None), (0, "Loading", "OE"), (0, "Loading", None)]
    assert take_read_warnings() == []
    # A count that is no whole number, signed or not, is still a broken line: said.
    assert _driver.parse_proc_modules("d 16384 --1 - Live 0x0\n")["d"]["refcount"] is None
    assert len(take_read_warnings()) == 1


def _loader_entries(root, files):
    entries = root / "boot" / "loader" / "entries"
    entries.mkdir(parents=True)
    for name, body in files.items():
        (entries / name).write_text(body)


def _ostree_tree(root, files, release):
    """A node booting OSTree's BLS entries through blscfg. Constructed: grub.cfg (RHEL 9's, with blscfg and
    "set default=${saved_entry}"; no grubenv, so nothing is saved), the module tree of the booted deployment's
    kernel and the running release."""
    _loader_entries(root, files)
    (root / "boot" / "grub2").mkdir(parents=True)
    shutil.copy(FIXTURES / "grub" / "rhel9_uefi_boot_grub2_grub.cfg", root / "boot" / "grub2" / "grub.cfg")
    (root / "usr" / "lib" / "modules" / release / "kernel").mkdir(parents=True)
    (root / "proc" / "sys" / "kernel").mkdir(parents=True)
    (root / "proc" / "sys" / "kernel" / "osrelease").write_text(release + "\n")


def test_ostree_entries_boot_the_highest_serial_even_where_the_rollback_has_the_newer_kernel(tmp_path):
    """Fedora CoreOS before "bootc switch": ostree-1.conf ("version 1", the rollback "(ostree:1)", kernel 6.15.4) and
    ostree-2.conf ("version 2", the default "(ostree:0)", kernel 6.14.9). blscfg orders by the version key, then the
    file name, and makes the highest the first entry: GRUB boots ostree-2. The files are the "==> PATH <==" blocks
    of the fixture; the rest of the tree is constructed (see _ostree_tree)."""
    text = (FIXTURES / "grub" / "fcos42_bootc_loader_entries_ostree1_rollback_newer_kernel_ostree2_default_older_PARTIAL.txt").read_text()
    blocks = re.split(r"^# ==> /boot/loader/entries/(\S+) <==\n", text, flags=re.MULTILINE)
    files = dict(zip(blocks[1::2], blocks[2::2]))
    assert sorted(files) == ["ostree-1.conf", "ostree-2.conf"]
    _ostree_tree(tmp_path, files, "6.14.9-300.fc42.x86_64")
    order = [(entry["id"], entry["kernel"], entry["serial"]) for entry in _driver.read_bls_entries(str(tmp_path), "/boot/loader/entries")]
    assert order == [("ostree-2", "6.14.9-300.fc42.x86_64", "2"), ("ostree-1", "6.15.4-200.fc42.x86_64", "1")]
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes) == (
        "6.14.9-300.fc42.x86_64", "grub_default", "Fedora CoreOS 42.20250708.dev.0 (ostree:0)")
    assert notes == []
    facts = _driver.gather(str(tmp_path))
    assert (facts["next_boot_kernel"], facts["next_boot_entry"]) == ("6.14.9-300.fc42.x86_64", "Fedora CoreOS 42.20250708.dev.0 (ostree:0)")
    assert not [note for note in facts["notes"] if "is not an installed kernel" in note]
    # RHEL's 08_fallback_counting sets default=1 ("the rollback deployment on OSTree-based systems") when the boot
    # counter has run out: entry 1 is ostree-1. Constructed grubenv.
    (tmp_path / "boot" / "grub2" / "grubenv").write_text("# GRUB Environment Block\nboot_counter=0\nboot_success=0\n")
    notes = []
    assert _driver.grub_next_boot(str(tmp_path), notes)[::2] == ("6.15.4-200.fc42.x86_64", "Fedora Linux 42 (Adams) (ostree:1)")
    # systemd-boot (no sort-key: by id, highest first) boots ostree-2 as well. Constructed loader.conf.
    (tmp_path / "boot" / "loader" / "loader.conf").write_text("timeout 3\n")
    assert _driver.systemd_boot_next_boot(str(tmp_path), []) == ("6.14.9-300.fc42.x86_64", "systemd_boot_first_entry", "ostree-2")


def test_ostree_entries_of_one_kernel_boot_the_default_deployment(tmp_path):
    """Fedora Silverblue 32 (a blog's "cat loader/entries/*"): two deployments of kernel 5.6.6-300.fc32, the second
    "version 2 ... (ostree:0)". Constructed: the split into two files, named as the post's own
    "vi loader/entries/ostree-2-fedora-workstation.conf" names the second, and the tree (see _ostree_tree)."""
    text = (FIXTURES / "grub" / "silverblue32_blog_cat_loader_entries_two_ostree_same_kernel_PARTIAL.txt").read_text()
    lines = [line[4:] for line in text.splitlines()[1:]]
    assert [line.split()[0] for line in lines].count("title") == 2 and lines[0].startswith("title") and lines[5].startswith("title")
    _ostree_tree(tmp_path, {"ostree-1-fedora-workstation.conf": "\n".join(lines[:5]) + "\n",
                            "ostree-2-fedora-workstation.conf": "\n".join(lines[5:]) + "\n"}, "5.6.6-300.fc32.x86_64")
    order = [entry["id"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/loader/entries")]
    assert order == ["ostree-2-fedora-workstation", "ostree-1-fedora-workstation"]
    assert _driver.grub_next_boot(str(tmp_path), []) == (
        "5.6.6-300.fc32.x86_64", "grub_default", "Fedora 32.20200428.0 (Silverblue) (ostree:0)")


def test_entries_whose_version_is_a_release_keep_their_order_by_release(tmp_path):
    """Constructed entries: a version that is a release, or no version, orders by the release (newest first) as
    before, whatever the file names; a serial among them compares as its number, as blscfg's vercmp does."""
    _loader_entries(tmp_path, {
        "a-6.1.conf": "title a\nversion 6.1.0-28-amd64\nlinux /vmlinuz-6.1.0-28-amd64\n",
        "z-5.10.conf": "title z\nversion 5.10.0-30-amd64\nlinux /vmlinuz-5.10.0-30-amd64\n",
        "m.conf": "title m\nlinux /vmlinuz-6.1.0-9-amd64\n",
        "s.conf": "title s\nversion 3\nlinux /ostree/x/vmlinuz-6.12.0-1-amd64\n",
    })
    order = [entry["id"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/loader/entries")]
    assert order == ["a-6.1", "m", "z-5.10", "s"]


def test_a_huge_number_in_a_version_does_not_stop_the_reader(tmp_path):
    # Python refuses int() of over 4300 digits; numbers compare by length, then digits.
    assert _driver.kernel_version_key("1." + "9" * 5000) > _driver.kernel_version_key("1." + "9" * 4999)
    assert _driver.kernel_version_key("6.10") > _driver.kernel_version_key("6.9") == _driver.kernel_version_key("6.09")
    _loader_entries(tmp_path, {"big.conf": "title big\nversion " + "7" * 5000 + "\nlinux /vmlinuz-6.1.0-1-amd64\n",
                               "small.conf": "title small\nversion 6.1.0-2-amd64\nlinux /vmlinuz-6.1.0-2-amd64\n"})
    assert [entry["id"] for entry in _driver.read_bls_entries(str(tmp_path), "/boot/loader/entries")] == ["big", "small"]


def test_clr_boot_managers_image_names_give_the_release_its_modules_are_under(tmp_path):
    """Clear Linux and Solus boot with clr-boot-manager's entries, whose image is "kernel-NAMESPACE.TYPE.VERSION-RELEASE"
    ("kernel-org.clearlinux.native.4.15.15-538") and whose modules are under VERSION-RELEASE.TYPE: the release is read
    from the name where the image itself (in a collected tree) is not there to read."""
    entry = _driver.parse_bls_entry((FIXTURES / "grub" / "clr_dm_verity_readme_clear_linux_entry_kernel_org_clearlinux_native.conf").read_text())
    assert _driver.kernel_from_image_path(entry["linux"]) == "4.15.15-538.native"
    assert _driver.kernel_from_image_path("/EFI/org.clearlinux/kernel-org.clearlinux.pk414-sos.4.14.23-19") == "4.14.23-19.pk414-sos"
    # Older names keep their reading; a clr-boot-manager name without its RELEASE number names nothing.
    older = ("/boot/kernel-6.6.13-gentoo", "/kernel-genkernel-x86_64-4.0.5-gentoo", "/EFI/org.clearlinux/kernel-org.clearlinux.native.5.1.15.791")
    assert [_driver.kernel_from_image_path(path) for path in older] == ["6.6.13-gentoo", "4.0.5-gentoo", None]
    # Solus: the entry and loader.conf of pop-os/distinst issue #23 on an ESP at /boot/efi (the entry's file name is the
    # loader's default; constructed: the module directories).
    shutil.copytree(FIXTURES / "grub" / "solus_distinst_issue23_clr_boot_manager_esp", tmp_path / "boot" / "efi")
    for release in ("4.9.71-61.lts", "4.14.8-41.current"):
        (tmp_path / "lib" / "modules" / release / "kernel").mkdir(parents=True)
    notes = []
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == ("4.14.8-41.current", "systemd_boot_default", "Solus-current-4.14.8-41")
    assert notes == []


def test_clear_linux_boots_the_older_kernel_its_loader_conf_names(tmp_path):
    """clearlinux/distribution issue #1459: after an update to 5.3.8-859.native the owner set the loader's default back
    to 5.3.8-854. The ESP's files are the issue's `find /boot`; constructed: the images' contents (empty, as in a collected
    tree), the entries (in the form of a Clear Linux entry), loader.conf's default and the module directories."""
    listing = (FIXTURES / "grub" / "clearlinux_issue1459_find_boot_two_native_kernels_two_entries_PARTIAL.txt").read_text().split()
    for path in listing:
        target = tmp_path / path.lstrip("/")
        if path in ("/boot", "/boot/EFI", "/boot/EFI/org.clearlinux", "/boot/EFI/BOOT", "/boot/loader", "/boot/loader/entries"):
            target.mkdir(parents=True, exist_ok=True)
        elif path.endswith(".conf"):
            build = path.rsplit("-", 1)[1][:-len(".conf")]
            target.write_text("title Clear Linux OS\nlinux /EFI/org.clearlinux/kernel-org.clearlinux.native.5.3.8-%s\n" % build)
        else:
            target.write_bytes(b"")
    (tmp_path / "boot" / "loader" / "loader.conf").write_text("default Clear-linux-native-5.3.8-854\n")
    for release in ("5.3.8-854.native", "5.3.8-859.native"):
        (tmp_path / "usr" / "lib" / "modules" / release / "kernel").mkdir(parents=True)
    installed = ["5.3.8-854.native", "5.3.8-859.native"]
    notes = []
    assert _driver.installed_kernels(str(tmp_path)) == (installed, [])
    assert _driver.next_boot(str(tmp_path), installed, notes, "5.3.8-854.native") == (
        "5.3.8-854.native", "systemd_boot_default", "Clear-linux-native-5.3.8-854")
    assert notes == []
    # Without a default systemd-boot boots the first entry in its order: the newer build.
    (tmp_path / "boot" / "loader" / "loader.conf").write_text("timeout 5\n")
    assert _driver.systemd_boot_next_boot(str(tmp_path), notes) == (
        "5.3.8-859.native", "systemd_boot_first_entry", "Clear-linux-native-5.3.8-859")
