"""The dkms status parser, against every real sample in tests/fixtures/dkms and the formats dkms prints."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.module_utils._dkms import (
    DkmsParseError,
    parse_dkms_status,
    parse_dkms_version,
    parse_status,
    status_of_node,
    summarize,
)
from testpaths import FIXTURES

DKMS_FIXTURES = FIXTURES / "dkms"

# (name, version, kernel, arch, state) per line, for each real sample.
EXPECTED = {
    "dkms2_nvidia304_spl_installed_zfs_built.txt": [
        ("nvidia-304", "304.125", "3.13.0-48-generic", "x86_64", "installed"),
        ("nvidia-304", "304.125", "3.13.0-49-generic", "x86_64", "installed"),
        ("spl", "0.6.4", "3.13.0-48-generic", "x86_64", "installed"),
        ("spl", "0.6.4", "3.13.0-49-generic", "x86_64", "installed"),
        ("zfs", "0.6.4", "3.13.0-48-generic", "x86_64", "built"),
    ],
    "dkms2_spl_installed_zfs_added_no_kernel_field.txt": [
        ("spl", "0.6.5.2", "3.13.0-63-generic", "x86_64", "installed"),
        ("spl", "0.6.5.2", "3.13.0-65-generic", "x86_64", "installed"),
        ("zfs", "0.6.5.2", None, None, "added"),
    ],
    "dkms3_nvidia535_and_wifi_installed.txt": [
        ("nvidia", "535.86.05", "6.5.0-060500rc5-generic", "x86_64", "installed"),
        ("rtl8852bu", "1.19.3", "6.5.0-060500rc5-generic", "x86_64", "installed"),
    ],
    # MLNX_OFED 4.9's own DKMS modules on three kernels, after a bare "dkms status" command line.
    "dkms2_mlnx_ofed49_rshim_three_kernels_bare_command_line.txt": [
        (name, version, kernel, "x86_64", "installed")
        for name, version in (("iser", "4.9"), ("isert", "4.9"), ("kernel-mft-dkms", "4.15.1"), ("knem", "1.1.4.90mlnx1"),
                              ("mlnx-ofed-kernel", "4.9"), ("rshim", "1.18"), ("srp", "4.9"))
        for kernel in ("5.4.0-94-generic", "5.4.0-96-generic", "5.4.0-97-generic")
    ],
    # amdgpu and MLNX_OFED 4.3 on five kernels (a mainline 041500 one among them), between two prompts.
    "dkms2_ubuntu_prompt_amdgpu_mlnx_ofed43_five_kernels.txt": [
        ("amdgpu", "2.1-96", kernel, "x86_64", "installed") for kernel in ("4.15.0-041500-generic", "4.15.0-43-generic")
    ] + [
        (name, version, kernel, "x86_64", "installed")
        for name, version in (("iser", "4.0"), ("isert", "4.0"), ("kernel-mft-dkms", "4.9.0"), ("knem", "1.1.3.90mlnx1"),
                              ("mlnx-ofed-kernel", "4.3"), ("srp", "4.0"))
        for kernel in ("4.15.0-041500-generic", "4.15.0-43-generic", "4.15.0-45-generic", "4.4.0-141-generic", "4.4.0-142-generic")
    ],
    "dkms2_fedora_hash_prompt_no_space_nvidia_three_kernels.txt": [
        ("nvidia", "396.45", kernel, "x86_64", "installed")
        for kernel in ("4.17.11-200.fc28.x86_64", "4.17.12-200.fc28.x86_64", "4.17.14-202.fc28.x86_64")
    ],
    "dkms2_amdgpu_added_and_installed_original_module_exists_elrepo.txt": [
        ("amdgpu", "18.50-756341.el7", None, None, "added"),
        ("amdgpu", "2.3-14.el7", "5.0.8-1.el7.elrepo.x86_64", "x86_64", "installed"),
    ],
    "dkms3_status_m_pve_prompt_warning_diff_between_built_installed.txt": [
        ("i915-sriov-dkms", "2025.03.26", "6.11.11-2-pve", "x86_64", "installed"),
    ],
    # dkms 3.1.3's suffixes (dkms's own test expectations; bash fills the kernel in at run time).
    "dkms3_status_installed_differences_between_built_and_installed_new_suffix.txt": [
        ("dkms_test", "1.0", "${KERNEL_VER}", "${KERNEL_ARCH}", "installed"),
    ],
    "dkms3_status_built_built_modules_missing.txt": [("dkms_test", "1.0", "${KERNEL_VER}", "${KERNEL_ARCH}", "built")],
    "dkms3_status_installed_original_modules_exist_new_suffix.txt": [
        ("dkms_replace_test", "2.0", "${KERNEL_VER}", "${KERNEL_ARCH}", "installed"),
    ],
    # "$ sudo dkms status", then sudo's "[sudo] password for jack: " before dkms's line: the prompt is the paste's, no note.
    "dkms2_ubuntuforums_sudo_password_prompt_line_then_nvidia470_installed.txt": [
        ("nvidia", "470.57.02", "5.11.0-27-generic", "x86_64", "installed"),
    ],
}


# (warnings, notes) of the last module of the samples whose status lines carry suffixes: dkms 3.1.3's
# new wording is a warning like the old "WARNING! ..." one; "original module(s) exist" is a note; the
# suffix stdout printed on the line after a glued stderr message is the module's own.
LAST_MODULE_SUFFIXES = {
    "dkms3_status_installed_differences_between_built_and_installed_new_suffix.txt": (
        ["Differences between built and installed modules"], []),
    "dkms3_status_built_built_modules_missing.txt": (["Built modules are missing in the kernel modules folder"], []),
    "dkms3_status_m_pve_prompt_warning_diff_between_built_installed.txt": (["Diff between built and installed module!"], []),
    "dkms3_status_installed_original_modules_exist_new_suffix.txt": ([], ["Original modules exist"]),
    "dkms2_amdgpu_added_and_installed_original_module_exists_elrepo.txt": ([], ["original_module exists"]),
    "dkms3_status_onload_stderr_glued_into_status_line_bash_prompt.txt": ([], ["original_module exists"]),
}


def _rows(items):
    return [(i["name"], i["version"], i["kernel"], i["arch"], i["state"]) for i in items]


# Real dkms 3.0.10 output with diagnostics (see tests/fixtures/dkms/SOURCES.md): the modules, then
# dkms's errors and warnings as (line, message), then the lines left as notes.
EXPECTED_WITH_DIAGNOSTICS = {
    "dkms3_status_module_dir_without_dkms_conf_only_error.txt": dict(
        modules=[],
        errors=[(1, "Could not locate dkms.conf file. "
                    "File: /tmp/rdma-node-dkms/tree/broken/1.0/source/dkms.conf does not exist.")],
        warnings=[],
        notes=[],
    ),
    "dkms3_status_deprecated_remake_initrd_then_built.txt": dict(
        modules=[("oldconf", "2.0", "6.1.0-27-amd64", "x86_64", "built")],
        errors=[],
        warnings=[(1, "Deprecated feature: REMAKE_INITRD (/tmp/rdma-node-dkms/tree/oldconf/2.0/source/dkms.conf)")],
        notes=[],
    ),
    "dkms3_build_without_dkms_conf_signing_lines_then_error.txt": dict(
        modules=[],
        errors=[(5, "Could not locate dkms.conf file. File: /tmp/rdma-node-dkms/src/nodconf-3.0/dkms.conf does not exist.")],
        warnings=[],
        notes=[1, 2, 3, 4],
    ),
    # stderr printed inside the status line ("installedDeprecated feature: ..."): the module and the warning.
    "dkms3_status_8812au_stderr_glued_sudo_command.txt": dict(
        modules=[("8812au", "5.6.4.2_35491.20191025", "5.15.5-200.fc35.x86_64", "x86_64", "installed")],
        errors=[],
        warnings=[(2, "Deprecated feature: REMAKE_INITRD"), (3, "Deprecated feature: REMAKE_INITRD")],
        notes=[],
    ),
    # ... and the line's own suffix, which stdout printed after stderr's line ended.
    "dkms3_status_onload_stderr_glued_into_status_line_bash_prompt.txt": dict(
        modules=[("onload", "8.0.2.51", "5.14.0-115.el9.x86_64", "x86_64", "installed")],
        errors=[],
        warnings=[(2, "Deprecated feature: REMAKE_INITRD"), (3, "Deprecated feature: REMAKE_INITRD")],
        notes=[],
    ),
    "dkms3_status_broken_error_then_built_installed_dell_test.txt": dict(
        modules=[("dkms_multiver_test", "1.0", None, None, "broken"),
                 ("dkms_multiver_test", "2.0", "${KERNEL_VER}", "${KERNEL_ARCH}", "built"),
                 ("dkms_test", "1.0", "${KERNEL_VER}", "${KERNEL_ARCH}", "installed")],
        errors=[(3, "dkms_multiver_test/1.0: Missing the module source directory or the symbolic link pointing to it. "
                    "Manual intervention is required!")],
        warnings=[],
        notes=[],
    ),
    # pacman's dkms hook: two failed builds, each message ending at its "Consult ... make.log" line; the hook's own
    # "==> WARNING" and "==> ERROR" lines are notes, never part of dkms's message, and so are its "==> dkms install ..."
    # lines (1, 6, 7): the hook's account of what it runs, no prompt.
    "dkms3_pacman_hook_two_build_errors_then_hook_warning_and_error_lines_nvidia_all379.txt": dict(
        modules=[],
        errors=[(3, "Bad return status for module build on kernel: 7.0.9-1-cachyos (x86_64) "
                    "Consult /var/lib/dkms/nvidia/580.119.02/build/make.log for more information."),
                (9, "Bad return status for module build on kernel: 7.1.0-rc3-2-cachyos-rc (x86_64) "
                    "Consult /var/lib/dkms/nvidia/580.119.02/build/make.log for more information.")],
        warnings=[],
        notes=[1, 5, 6, 7, 11, 12, 13],
    ),
    # The same hook's lines as /var/log/pacman.log keeps them, each after "[2021-09-21T00:12:44+0200] [ALPM-SCRIPTLET] ".
    "dkms_pacman_log_alpm_scriptlet_timestamp_prefix_two_build_errors_hook_lines_hid_tmff2_issue27.txt": dict(
        modules=[],
        errors=[(2, "Bad return status for module build on kernel: 5.14.6-2-MANJARO (x86_64) "
                    "Consult /var/lib/dkms/hid-tmff2/0.8/build/make.log for more information."),
                (6, "Bad return status for module build on kernel: 5.10.67-1-MANJARO (x86_64) "
                    "Consult /var/lib/dkms/hid-tmff2/0.8/build/make.log for more information.")],
        warnings=[],
        notes=[1, 4, 5, 8, 9],
    ),
    # dkms 3 autoinstall on Fedora: each message ends at dkms's own last line ("Manual intervention is required!",
    # "Consult ...", "Refer to previous errors for more information."); the signing lines, autoinstall's summary
    # "dkms autoinstall on ... failed for 8192eu(10)" (15) and the service's "dkms: ..." lines after them are notes.
    "dkms3_fedora_autoinstall_broken_error_then_sign_lines_build_fail_summary_refer_line_rtl8192eu100_PARTIAL.txt": dict(
        modules=[],
        errors=[(2, "rtl8192eu/1.0 is broken! Missing the source directory or the symbolic link pointing to it. "
                    "Manual intervention is required!"),
                (13, "Bad return status for module build on kernel: 6.9.0-0.rc1.20240326git928a87efa423.17.fc41.x86_64 (x86_64) "
                     "Consult /var/lib/dkms/8192eu/5.11.2.1-5.git20240210.fc40/build/make.log for more information."),
                (16, "One or more modules failed to install during autoinstall. Refer to previous errors for more information."),
                (20, "rtl8192eu/1.0 is broken! Missing the source directory or the symbolic link pointing to it. "
                     "Manual intervention is required!")],
        warnings=[],
        notes=[1, 4, 5, 6, 8, 9, 10, 11, 12, 15, 18, 19, 22],
    ),
    # dnf5's ">>> " before every line of the scriptlet's output: five "is broken!" errors, the signing lines after the
    # last one are no part of it.
    "dkms3_dnf5_scriptlet_output_triple_gt_prefix_five_broken_errors_then_sign_lines_rtl8192eu125_PARTIAL.txt": dict(
        modules=[],
        errors=[(line, "%s is broken! Missing the source directory or the symbolic link pointing to it. "
                       "Manual intervention is required!" % module)
                for line, module in ((5, "8192eu/5.11.2.1-5.git20240210.fc40"), (8, "8192eu/5.11.2.1-5.git20240329.fc41"),
                                     (11, "8192eu/5.11.2.1-5.git20240529.fc41"), (14, "8192eu/5.11.2.1-5.git20241027.fc42"),
                                     (17, "rtl8192eu/1.0"))],
        warnings=[],
        notes=[1, 2, 3, 19, 20, 21],
    ),
    # "dkms autoinstall -k ... ; echo $?": the BUILD_EXCLUSIVE error ends at "This indicates that it should not be built.",
    # the closing one at "Refer to previous errors ..."; the shell's "11" after it is a note, never dkms's text.
    "dkms3_debian_autoinstall_build_exclusive_error_refer_line_then_echo_status_11_dkms_issue302.txt": dict(
        modules=[],
        errors=[(5, "The /var/lib/dkms/bbswitch/0.8/6.1.0-3-amd64/x86_64/dkms.conf for module bbswitch includes a "
                    "BUILD_EXCLUSIVE directive which does not match this kernel/arch/config. This indicates that it should not be built."),
                (7, "One or more modules failed to install during autoinstall. Refer to previous errors for more information.")],
        warnings=[],
        notes=[2, 3, 4, 9],
    ),
    # An install script: dkms's one-line "Deprecated feature: REMAKE_INITRD" is a warning of its own, "Creating symlink ..."
    # after it a note.
    "dkms3_fedora_install_script_deprecated_remake_initrd_then_creating_symlink_build_error_rtl8192eu45_PARTIAL.txt": dict(
        modules=[],
        errors=[(13, "Bad return status for module build on kernel: 5.17.0-0.rc2.83.fc36.x86_64 (x86_64) "
                     "Consult /var/lib/dkms/rtl8192eu/1.0/build/make.log for more information.")],
        warnings=[(6, "Deprecated feature: REMAKE_INITRD"), (8, "Deprecated feature: REMAKE_INITRD")],
        notes=[1, 2, 3, 4, 5, 7, 10, 11, 12],
    ),
    # dnf's scriptlet lines around dkms 3.0.12 autoinstall: its summary line (15) is a note, not a skipped command line.
    "dkms3_dnf_scriptlet_build_fail_then_autoinstall_failed_for_summary_line_rtl8192eu92_PARTIAL.txt": dict(
        modules=[],
        errors=[(13, "Bad return status for module build on kernel: 6.7.0-0.rc3.20231128gitdf60cee26a2e.29.fc40.x86_64 (x86_64) "
                     "Consult /var/lib/dkms/rtl8192eu/1.0/build/make.log for more information."),
                (16, "One or more modules failed to install during autoinstall.")],
        warnings=[],
        notes=[1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 15],
    ),
    # The XRT package's postinst running dkms 2.8 (Xilinx/video-sdk#94): the "Build of xocl.ko failed" message ends at its
    # fourth line, "/var/lib/dkms/xrt/2.11.722/build for more information."; the package's banner after it is no part of it.
    "dkms2_xrt_postinst_build_of_ko_failed_four_line_message_then_banner_video_sdk94_PARTIAL.txt": dict(
        modules=[],
        errors=[(18, "Build of xocl.ko failed for: 6.1.94 (x86_64) Make sure the name of the generated module is correct and "
                     "at the root of the build directory, or consult make.log in the build directory "
                     "/var/lib/dkms/xrt/2.11.722/build for more information.")],
        warnings=[],
        notes=list(range(1, 18)) + list(range(22, 29)),
    ),
    # A blog's console block indented as a whole: the error's second line, indented as it is, is still its own.
    "dkms2_block_indented_two_spaces_error_with_its_file_line.txt": dict(
        modules=[],
        errors=[(2, "Could not locate dkms.conf file. File:  does not exist.")],
        warnings=[],
        notes=[],
    ),
    # "dkms status; lshw -c net": lshw's WARNING is read as a diagnostic, its indented device tree is no part of it.
    "dkms2_status_then_lshw_in_one_command_warning_and_indented_device_tree.txt": dict(
        modules=[("rtlwifi-new", "0.10", "4.4.0-22-generic", "x86_64", "installed"),
                 ("rtlwifi-new", "0.10", "4.4.0-24-generic", "x86_64", "built"),
                 ("rtlwifi-new", "0.6", "4.4.0-24-generic", "x86_64", "installed"),
                 ("vboxhost", "5.0.20", "4.4.0-24-generic", "x86_64", "installed")],
        errors=[],
        warnings=[(6, "you should run this program as super-user."),
                  (37, "output may be incomplete or inaccurate, you should run this program as super-user.")],
        notes=list(range(7, 37)),
    ),
    # A Markdown quote ("> " before every line): dkms's error with an empty path, then the modules.
    "dkms2_blockquote_error_empty_file_path_installed_weak_zfs_issue4596.txt": dict(
        modules=[(name, "0.6.5.6", kernel, "x86_64", "installed-weak")
                 for kernel in ("2.6.32-504.23.4.el6.x86_64", "2.6.32-504.el6.x86_64", "2.6.32-573.18.1.el6.x86_64")
                 for name in ("spl", "zfs")],
        errors=[(2, "Could not locate dkms.conf file. File:  does not exist.")],
        warnings=[],
        notes=[],
    ),
    # A run of every module, then three runs of one module each (the last one, xpad, prints nothing): the node
    # has the six modules of the first run, each module's lines read from its own run.
    "dkms3_debian_root_prompt_three_runs_last_filtered_empty_xpad_xone_pr59.txt": dict(
        modules=[(name, version, kernel, "x86_64", "installed")
                 for name, version in (("xone", "v0.3-94-g2be4b81"), ("v4l2loopback", "0.13.2"))
                 for kernel in ("6.10.11-amd64", "6.12.5-amd64", "6.12.6-amd64")],
        errors=[],
        warnings=[],
        notes=[8, 12, 16],
    ),
    "dkms3_status_zfs_stale_version_error_only_root_prompt.txt": dict(
        modules=[],
        errors=[(2, "Could not locate dkms.conf file. File: /var/lib/dkms/zfs/2.1.12/source/dkms.conf does not exist.")],
        warnings=[],
        notes=[],
    ),
    # The same node after its stale link was removed: the second run lists the module, the first run's error is gone.
    "dkms3_status_error_then_commands_then_a_second_status_zfs_issue15336_comment.txt": dict(
        modules=[("zfs", "2.1.13", "4.18.0-477.27.1.el8_8.x86_64", "x86_64", "installed")],
        errors=[],
        warnings=[],
        notes=[2, 3, 4, 11, 12, 13, 14, 16, 17, 18, 19, 22, 25, 27],
    ),
    # Debian 13: "dkms uninstall", "remove" and "add" between two runs are dkms's own commands (skipped as the
    # "dkms status" lines are); dpkg's and systemctl's lines are noted; the module as the later run lists it.
    "dkms3_debian13_two_runs_uninstall_remove_add_commands_without_prompts_r8125_issue85.txt": dict(
        modules=[("realtek-r8125", "9.016.01", "6.12.41+deb13-amd64", "x86_64", "installed")],
        errors=[],
        warnings=[],
        notes=[1, 13, 15],
    ),
    # Ubuntu Forums: dkms 2.2 just installed, "dkms status" printing nothing (no module yet), then another command's
    # error, a note.
    "dkms2_ubuntuforums_empty_status_run_then_other_command_PARTIAL.txt": dict(
        modules=[],
        errors=[],
        warnings=[],
        notes=[3],
    ),
}


def test_every_sample_has_an_expectation():
    samples = sorted(p.name for p in DKMS_FIXTURES.glob("*.txt"))
    assert samples == sorted(list(EXPECTED) + list(EXPECTED_WITH_DIAGNOSTICS))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_status_samples_give_only_modules(name):
    text = (DKMS_FIXTURES / name).read_text()
    result = parse_dkms_status(text)
    assert _rows(result["modules"]) == EXPECTED[name]
    assert (result["errors"], result["warnings"], result["notes"]) == ([], [], [])
    assert parse_dkms_status(text, strict=True) == result


@pytest.mark.parametrize("name", sorted(EXPECTED_WITH_DIAGNOSTICS))
def test_samples_with_errors_give_the_errors_and_no_bogus_module(name):
    want = EXPECTED_WITH_DIAGNOSTICS[name]
    result = parse_dkms_status((DKMS_FIXTURES / name).read_text())
    assert _rows(result["modules"]) == want["modules"]
    assert [(e["line"], e["message"]) for e in result["errors"]] == want["errors"]
    assert [(w["line"], w["message"]) for w in result["warnings"]] == want["warnings"]
    assert [n["line"] for n in result["notes"]] == want["notes"]
    assert all(n["reason"] == "not dkms status output" or n["reason"].startswith("a later dkms status run")
               for n in result["notes"])
    assert all(module["name"] for module in result["modules"])


@pytest.mark.parametrize("name", sorted(LAST_MODULE_SUFFIXES))
def test_suffixes_of_current_and_older_dkms_and_of_a_glued_line(name):
    module = parse_dkms_status((DKMS_FIXTURES / name).read_text())["modules"][-1]
    assert (module["warnings"], module["notes"]) == LAST_MODULE_SUFFIXES[name]


def test_build_output_in_strict_mode_names_its_first_foreign_line():
    text = (DKMS_FIXTURES / "dkms3_build_without_dkms_conf_signing_lines_then_error.txt").read_text()
    with pytest.raises(DkmsParseError) as caught:
        parse_dkms_status(text, strict=True)
    assert str(caught.value) == "line 1 is not dkms status output: 'Sign command: /usr/lib/linux-kbuild-6.1/scripts/sign-file'"


def test_a_pacman_log_reads_as_the_hooks_own_output():
    # pacman.log's time and caller before each line hide nothing: the same lines without them give the same result.
    text = (DKMS_FIXTURES / "dkms_pacman_log_alpm_scriptlet_timestamp_prefix_two_build_errors_hook_lines_hid_tmff2_issue27.txt").read_text()
    bare = "".join(line.split("] [ALPM-SCRIPTLET] ", 1)[1] for line in text.splitlines(True))
    assert not bare.startswith("[") and parse_dkms_status(text) == parse_dkms_status(bare)
    node = status_of_node(text)
    assert [error.split(" (x86_64)")[0] for error in node["errors"]] == [
        "Bad return status for module build on kernel: 5.14.6-2-MANJARO", "Bad return status for module build on kernel: 5.10.67-1-MANJARO"]
    assert node["unplaced"][0] == "==> dkms install --no-depmod -m hid-tmff2 -v 0.8 -k 5.14.6-2-MANJARO"
    # pacman before 5.1 wrote the time without seconds and zone; a dkms line there is read the same way.
    old = "[2019-10-07 08:51] [ALPM-SCRIPTLET] Error! Bad return status for module build on kernel: 4.19.77-1-lts (x86_64)\n"
    assert parse_dkms_status(old)["errors"] == [{"line": 1, "message": "Bad return status for module build on kernel: 4.19.77-1-lts (x86_64)"}]
    # A prompt's ">" still reads as one: the arrow "==>" alone is the hook's.
    assert parse_dkms_status("user@host:~> dkms status\nfoo/1.0: added\n")["notes"] == []


def test_autoinstalls_summary_lines_are_notes_that_end_a_message():
    notes = parse_dkms_status((DKMS_FIXTURES / "dkms3_dnf_scriptlet_build_fail_then_autoinstall_failed_for_summary_line_rtl8192eu92_PARTIAL.txt")
                              .read_text())["notes"]
    assert notes[-1] == {"line": 15, "reason": "not dkms status output",
                         "text": "dkms autoinstall on 6.7.0-0.rc3.20231128gitdf60cee26a2e.29.fc40.x86_64/x86_64 failed for rtl8192eu(10)"}
    # Constructed from dkms 3's autoinstall (its echo of the modules that succeeded, were skipped or failed): each
    # summary is a note, and one after a message that has no last line of dkms's own ends it.
    text = ("Warning: The module foo is skipped.\n"
            "dkms autoinstall on 6.8.0-rc2/x86_64 was skipped for hid-xpadneo\n"
            "dkms autoinstall on 6.8.0-rc2/x86_64 succeeded for nvidia mlnx-ofed-kernel\n")
    result = parse_dkms_status(text)
    assert result["warnings"] == [{"line": 1, "message": "The module foo is skipped."}]
    assert [note["line"] for note in result["notes"]] == [2, 3]
    # The command itself is still a command line of the paste, skipped.
    assert parse_dkms_status("dkms autoinstall -k 6.8.0-rc2\nfoo/1.0: added\n")["notes"] == []


@pytest.mark.parametrize("last", [
    # dkms's own last lines of its messages (dkms.in of dkms 2.8 to 3.4: error() prints one line per argument).
    "Manual intervention is required!",
    "This indicates that it should not be built.",
    "Refer to previous errors for more information.",
    "You may override by specifying --force.",
    "Consult /var/lib/dkms/foo/1.0/build/make.log for more information.",
    "or consult /var/lib/dkms/foo/1.0/build/make.log for more information.",
    "Check /var/lib/dkms/foo/1.0/build/ for more information.",
    "/var/lib/dkms/foo/1.0/build for more information.",
])
def test_a_message_ends_at_dkms_own_last_line(last):
    text = "Error! Something failed.\n%s\nSign command: /usr/lib/linux-kbuild-6.1/scripts/sign-file\n" % last
    result = parse_dkms_status(text)
    assert result["errors"] == [{"line": 1, "message": "Something failed. " + last}]
    assert result["notes"] == [{"line": 3, "text": "Sign command: /usr/lib/linux-kbuild-6.1/scripts/sign-file",
                                "reason": "not dkms status output"}]


def test_a_message_without_a_last_line_of_dkms_keeps_its_lines_and_a_deprecation_is_one_line():
    # As before: the lines after a message with no known last line are its own, up to a blank line or a status line.
    two_lines = parse_dkms_status("Error! Could not locate dkms.conf file.\nFile: /usr/src/x-1/dkms.conf does not exist.\n")
    assert two_lines["errors"] == [{"line": 1, "message": "Could not locate dkms.conf file. File: /usr/src/x-1/dkms.conf does not exist."}]
    # dkms's deprecated() prints one line: what follows it is never its own.
    deprecated = parse_dkms_status("Deprecated feature: REMAKE_INITRD\nCreating symlink /var/lib/dkms/x/1.0/source -> /usr/src/x-1.0\n")
    assert deprecated["warnings"] == [{"line": 1, "message": "Deprecated feature: REMAKE_INITRD"}]
    assert [note["line"] for note in deprecated["notes"]] == [2]


def test_errors_with_continuation_lines_and_build_hints_stay_errors():
    text = ("Error! Bad return status for module build on kernel: 6.8.0-45-generic (x86_64)\n"
            "Consult /var/lib/dkms/mlnx-ofed-kernel/24.07/build/make.log for more information.\n"
            "\n"
            "Error! Could not locate dkms.conf file.\n"
            "File: /var/lib/dkms/mlnx-ofed-kernel/23.10/source/dkms.conf does not exist.\n")
    result = parse_dkms_status(text)
    assert result["modules"] == [] and result["notes"] == []
    assert [e["line"] for e in result["errors"]] == [1, 4]
    assert result["errors"][0]["message"].endswith("Consult /var/lib/dkms/mlnx-ofed-kernel/24.07/build/make.log for more information.")


def test_a_pasted_status_keeps_its_modules_and_notes_the_rest():
    text = ("[root@gpu-node07 ~]# dkms status\r\n"
            "# after the kernel upgrade\r\n"
            "mlnx-ofed-kernel/24.07, 6.8.0-45-generic, x86_64: installed\r\n"
            "[snip]\r\n"
            "knem/1.1.4.90mlnx3, 6.8.0-45-generic, x86_64: installed (original_module exists)\r\n"
            "logout\r\n")
    result = parse_dkms_status(text)
    assert _rows(result["modules"]) == [
        ("mlnx-ofed-kernel", "24.07", "6.8.0-45-generic", "x86_64", "installed"),
        ("knem", "1.1.4.90mlnx3", "6.8.0-45-generic", "x86_64", "installed"),
    ]
    assert result["modules"][1]["notes"] == ["original_module exists"]
    assert result["notes"] == [
        {"line": 4, "text": "[snip]", "reason": "a redaction mark: the listing around it is incomplete"},
        {"line": 6, "text": "logout", "reason": "not dkms status output"},
    ]


def test_other_text_is_refused_in_one_sentence():
    with pytest.raises(DkmsParseError) as caught:
        parse_dkms_status("total 0\ndrwxr-xr-x 2 root root 40 Nov 25 00:29 .\n")
    assert str(caught.value) == "nothing in the text is dkms status output (line 1: 'total 0')"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_samples_parse(name):
    items = parse_status((DKMS_FIXTURES / name).read_text())
    assert _rows(items) == EXPECTED[name]
    for item in items[:-1] if name in LAST_MODULE_SUFFIXES else items:
        assert item["warnings"] == [] and item["notes"] == [] and item["message"] is None
    assert all(item["built_for"] is None for item in items)


def test_every_item_has_every_key():
    text = "a/1: added\nb, 2, 6.1.0-1-amd64, x86_64: built\nError! boom\n"
    keys = {"name", "version", "kernel", "arch", "state", "built_for", "warnings", "notes", "message"}
    assert all(set(item) == keys for item in parse_status(text))


def test_dkms3_added_line_has_no_kernel():
    assert _rows(parse_status("mlnx-ofed-kernel/23.10.OFED.23.10.1.1.9.1: added\n")) == [
        ("mlnx-ofed-kernel", "23.10.OFED.23.10.1.1.9.1", None, None, "added")
    ]


def test_suffixes_become_warnings_and_notes():
    line = (
        "mlnx-ofed-kernel/24.04, 6.1.0-28-amd64, x86_64: installed (original_module exists) "
        "(WARNING! Diff between built and installed module!)"
    )
    (item,) = parse_status(line)
    assert item["state"] == "installed"
    assert item["notes"] == ["original_module exists"]
    assert item["warnings"] == ["Diff between built and installed module!"]


def test_missing_built_modules_warning():
    (item,) = parse_status("knem, 1.1.4, 5.15.0-91-generic, x86_64: built (WARNING! Missing some built modules!)")
    assert item["state"] == "built"
    assert item["warnings"] == ["Missing some built modules!"]


def test_installed_weak_keeps_the_kernel_it_was_built_for():
    (item,) = parse_status("mlnx-ofed-kernel, 24.04, 4.18.0-513.el8.x86_64, x86_64: installed-weak from 4.18.0-477.el8.x86_64")
    assert (item["kernel"], item["state"], item["built_for"]) == ("4.18.0-513.el8.x86_64", "installed-weak", "4.18.0-477.el8.x86_64")


def test_kernels_with_rc_and_names_with_digits():
    items = parse_status("nvidia-304/304.125, 6.5.0-rc5, x86_64: installed\nxpmem/2.7.3, 6.8.0-rc1+, aarch64: built\n")
    assert _rows(items) == [
        ("nvidia-304", "304.125", "6.5.0-rc5", "x86_64", "installed"),
        ("xpmem", "2.7.3", "6.8.0-rc1+", "aarch64", "built"),
    ]


def test_error_lines_are_kept_with_their_continuation():
    text = (
        "knem/1.1.4, 6.1.0-27-amd64, x86_64: installed\n"
        "Error! Bad return status for module build on kernel: 6.1.0-28-amd64 (x86_64)\n"
        "Consult /var/lib/dkms/mlnx-ofed-kernel/24.04/build/make.log for more information.\n"
        "mlnx-ofed-kernel/24.04, 6.1.0-27-amd64, x86_64: installed\n"
    )
    items = parse_status(text)
    assert [i["state"] for i in items] == ["installed", "error", "installed"]
    assert items[1]["name"] is None
    assert items[1]["message"] == (
        "Bad return status for module build on kernel: 6.1.0-28-amd64 (x86_64) "
        "Consult /var/lib/dkms/mlnx-ofed-kernel/24.04/build/make.log for more information."
    )


def test_warnings_and_deprecations_are_warning_items():
    text = "Deprecated feature: REMAKE_INITRD (/usr/src/foo-1.0/dkms.conf)\nWarning: could not load\nfoo/1.0: added\n"
    items = parse_status(text)
    assert [(i["state"], i["message"]) for i in items] == [
        ("warning", "Deprecated feature: REMAKE_INITRD (/usr/src/foo-1.0/dkms.conf)"),
        ("warning", "could not load"),
        ("added", None),
    ]


def test_a_trailing_error_is_not_lost():
    items = parse_status("Error! Could not locate dkms.conf file.\nFile: /usr/src/x-1/dkms.conf does not exist.")
    assert [(i["state"], i["message"]) for i in items] == [
        ("error", "Could not locate dkms.conf file. File: /usr/src/x-1/dkms.conf does not exist.")
    ]


def test_crlf_blank_lines_and_indentation_are_tolerated():
    items = parse_status("\r\n  spl, 0.6.4, 3.13.0-48-generic, x86_64: installed\r\n\r\n")
    assert _rows(items) == [("spl", "0.6.4", "3.13.0-48-generic", "x86_64", "installed")]


@pytest.mark.parametrize("text", ["", "\n\n", None])
def test_empty_output_is_an_empty_list(text):
    assert parse_status(text) == []


@pytest.mark.parametrize(
    "text, first_bad",
    [
        ("total 12\ndrwxr-xr-x 2 root root 4096 .\n", "total 12"),
        ("spl, 0.6.4, 3.13.0-48-generic, x86_64: installed\nmodule loaded fine\n", "module loaded fine"),
        ("nvidia/535, 6.5.0, x86_64: installed and happy\n", "nvidia/535, 6.5.0, x86_64: installed and happy"),
        ("Name: mlx5_core\n", "Name: mlx5_core"),
    ],
)
def test_text_that_is_not_dkms_output_names_the_first_line(text, first_bad):
    with pytest.raises(DkmsParseError) as caught:
        parse_status(text)
    assert str(caught.value) == "this is not dkms status output: cannot place the line %r" % first_bad


def test_lenient_mode_keeps_unparsed_lines():
    items = parse_status("who knows\nfoo/1: added\n", strict=False)
    assert [(i["state"], i["message"]) for i in items] == [("unparsed", "who knows"), ("added", None)]


def test_summary_takes_the_best_state_per_kernel():
    text = (
        "mlnx-ofed-kernel/23.10, 6.1.0-27-amd64, x86_64: installed\n"
        "mlnx-ofed-kernel/24.04, 6.1.0-27-amd64, x86_64: built\n"
        "mlnx-ofed-kernel/24.04, 6.1.0-28-amd64, x86_64: built\n"
        "mlnx-ofed-kernel/24.07: added\n"
        "knem/1.1.4, 6.1.0-28-amd64, x86_64: installed-weak from 6.1.0-27-amd64\n"
    )
    view = summarize(parse_status(text), ["mlnx-ofed-kernel", "knem", "srp"])
    assert view == {
        "mlnx-ofed-kernel": {
            "present": True,
            "versions": ["23.10", "24.04", "24.07"],
            "kernels": {"6.1.0-27-amd64": "installed", "6.1.0-28-amd64": "built"},
        },
        "knem": {"present": True, "versions": ["1.1.4"], "kernels": {"6.1.0-28-amd64": "installed-weak"}},
        "srp": {"present": False, "versions": [], "kernels": {}},
    }


@pytest.mark.parametrize(
    "text, version",
    [("dkms-3.0.10\n", "3.0.10"), ("dkms: 2.8.1", "2.8.1"), ("dkms-2.2.0.3\n", "2.2.0.3"), ("", None), (None, None)],
)
def test_dkms_version(text, version):
    assert parse_dkms_version(text) == version


def test_a_paste_of_two_runs_is_read_from_the_last_one():
    # The shape of a session pasted into a note: a prompt cut at its start, a first run, the commands that
    # removed and installed a version, a reboot, a second run. The node is what the second run says.
    paste = ("user@gpu-p100 ~]$ dkms status\n"
             "nvidia, 396.44, 3.10.0-862.3.2.el7.x86_64, x86_64: installed (WARNING! Diff between built and installed module!)\n"
             "nvidia, 440.31, 3.10.0-862.3.2.el7.x86_64, x86_64: built\n"
             "# dkms remove -m nvidia -v 396.44 --all\n"
             "# dkms install -m nvidia -v 440.31\n"
             "\n"
             "# reboot\n"
             "\n"
             "# dkms status\n"
             "nvidia, 440.31, 3.10.0-862.3.2.el7.x86_64, x86_64: installed\n")
    result = parse_dkms_status(paste)
    assert [(m["name"], m["version"], m["state"], m["warnings"]) for m in result["modules"]] == [("nvidia", "440.31", "installed", [])]
    assert result["notes"] == [{"line": 9, "text": "# dkms status",
                                "reason": "a later dkms status run: the 2 line(s) of output before it are left out"}]
    # One run, however it is pasted, keeps every module.
    assert len(parse_dkms_status(paste.split("# dkms remove", maxsplit=1)[0])["modules"]) == 2


def test_a_later_run_of_some_modules_updates_them_and_keeps_the_others():
    xone = parse_dkms_status((DKMS_FIXTURES / "dkms3_debian_root_prompt_three_runs_last_filtered_empty_xpad_xone_pr59.txt").read_text())
    assert [(n["line"], n["reason"]) for n in xone["notes"]] == [
        (8, "a later dkms status run of some modules only: the 3 module line(s) it lists are read from it, the other 3 from the runs before"),
        (12, "a later dkms status run of some modules only: the 3 module line(s) it lists are read from it, the other 3 from the runs before"),
        (16, "a later dkms status run of some modules only: the 0 module line(s) it lists are read from it, the other 6 from the runs before")]
    whole = ("$ dkms status\n"
             "mlnx-ofed-kernel/24.10, 6.8.0-45-generic, x86_64: installed\n"
             "mlnx-ofed-kernel/24.10, 6.8.0-47-generic, x86_64: built\n"
             "nvidia-peermem/550.90, 6.8.0-47-generic, x86_64: built\n")
    # -m names the module: its lines not listed again are gone (removed), its listed ones are as listed.
    by_name = parse_dkms_status(whole + "$ sudo dkms status -m mlnx-ofed-kernel\n"
                                "mlnx-ofed-kernel/24.10, 6.8.0-47-generic, x86_64: installed\n")
    assert _rows(by_name["modules"]) == [("nvidia-peermem", "550.90", "6.8.0-47-generic", "x86_64", "built"),
                                         ("mlnx-ofed-kernel", "24.10", "6.8.0-47-generic", "x86_64", "installed")]
    # -k names the kernel (dkms 3 takes kernel/arch): the other kernel's lines stay.
    by_kernel = parse_dkms_status(whole + "$ dkms status -k 6.8.0-47-generic/x86_64 2>&1\n"
                                  "mlnx-ofed-kernel/24.10, 6.8.0-47-generic, x86_64: installed\n"
                                  "nvidia-peermem/550.90, 6.8.0-47-generic, x86_64: installed\n")
    assert [(m["kernel"], m["state"]) for m in by_kernel["modules"]] == [
        ("6.8.0-45-generic", "installed"), ("6.8.0-47-generic", "installed"), ("6.8.0-47-generic", "installed")]
    # Piped into grep: only the lines it shows are known to have changed.
    piped = parse_dkms_status(whole + "$ dkms status | grep peermem\n"
                              "nvidia-peermem/550.90, 6.8.0-47-generic, x86_64: installed\n")
    assert [(m["name"], m["kernel"], m["state"]) for m in piped["modules"]] == [
        ("mlnx-ofed-kernel", "6.8.0-45-generic", "installed"), ("mlnx-ofed-kernel", "6.8.0-47-generic", "built"),
        ("nvidia-peermem", "6.8.0-47-generic", "installed")]
    # A later run of every module is the node now.
    again = parse_dkms_status(whole + "$ dkms status\nnvidia-peermem/550.90, 6.8.0-47-generic, x86_64: installed\n")
    assert _rows(again["modules"]) == [("nvidia-peermem", "550.90", "6.8.0-47-generic", "x86_64", "installed")]
    assert again["notes"][-1]["reason"] == "a later dkms status run: the 3 line(s) of output before it are left out"


def test_past_many_narrowed_runs_a_run_only_replaces_the_lines_it_shows():
    # Each narrowed run drops the earlier lines it covers, a scan of all of them: a paste of thousands of such
    # runs would cost their product. Past 64 (no real paste has them) only the lines a run shows are replaced.
    whole = "$ dkms status\n" + "".join("m%d/1.0, 6.8.0-%d-generic, x86_64: installed\n" % (n, n) for n in range(100))
    empty_runs = "".join("$ dkms status -k 6.8.0-%d-generic\n" % n for n in range(100))
    result = parse_dkms_status(whole + empty_runs)
    assert [m["name"] for m in result["modules"]] == ["m%d" % n for n in range(64, 100)]
    shown_runs = "".join("$ dkms status -m m%d\nm%d/1.0, 6.8.0-%d-generic, x86_64: built\n" % (n, n, n) for n in range(100))
    assert {m["state"] for m in parse_dkms_status(whole + shown_runs)["modules"]} == {"built"}


def test_sudos_password_prompt_is_part_of_the_paste_not_of_dkms_output():
    """Ubuntu Forums "NVIDIA 1060 Dead?": sudo asks for the password between the command line and dkms's output. The
    prompt (in any translation "[sudo] ...: ") is skipped like the shell prompt: no note, and strict mode reads it."""
    text = (DKMS_FIXTURES / "dkms2_ubuntuforums_sudo_password_prompt_line_then_nvidia470_installed.txt").read_text()
    assert status_of_node(text)["unplaced"] == []
    assert parse_dkms_status(text, strict=True)["notes"] == []
    german = parse_dkms_status("$ sudo dkms status\n[sudo] Passwort f\u00fcr jack: \nnvidia/535.86.05, 6.5.0-9-generic, x86_64: built\n")
    assert _rows(german["modules"]) == [("nvidia", "535.86.05", "6.5.0-9-generic", "x86_64", "built")] and german["notes"] == []
    # Only sudo's prompt: another bracketed line is still a line dkms did not print.
    other = parse_dkms_status("[sudo] is what sudo prints first\nnvidia/535.86.05, 6.5.0-9-generic, x86_64: built\n")
    assert [(n["line"], n["reason"]) for n in other["notes"]] == [(1, "not dkms status output")]


def test_a_status_run_that_printed_nothing_is_dkms_answer_not_foreign_text():
    """Ubuntu Forums "Installing correct driver for AMD Radeon HD 6470M on Ubuntu 16.04LTS": "dkms status" printed
    nothing (no module, as the thread's answer says), then another command failed. No module and a note, not a
    refusal; in the same thread a shell that has no dkms is still no dkms output at all."""
    text = (DKMS_FIXTURES / "dkms2_ubuntuforums_empty_status_run_then_other_command_PARTIAL.txt").read_text()
    result = parse_dkms_status(text)
    assert result["modules"] == [] and [(n["line"], n["text"]) for n in result["notes"]] == [(3, "No command 'run' found, did you mean:**")]
    # The run alone, without the other command's line, is the same empty listing.
    assert parse_dkms_status(text.split("\n", 1)[0] + "\n") == {"modules": [], "errors": [], "warnings": [], "notes": []}
    with pytest.raises(DkmsParseError):
        parse_dkms_status(text, strict=True)
    with pytest.raises(DkmsParseError) as caught:
        parse_dkms_status("ryu@KageFang:~$ dkms status \nThe program 'dkms' is currently not installed. You can install it by typing:\n"
                          "sudo apt install dkms\n")
    assert "line 2" in str(caught.value)
    # A run whose output the paste cut (the text ends after it) is not read as empty.
    with pytest.raises(DkmsParseError):
        parse_dkms_status("total 0\n$ dkms status\n")
