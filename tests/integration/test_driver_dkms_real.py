"""driver_facts and the driver_verify role against the real dkms, and the role on simulated nodes.

The real part: a dummy kernel module (its dkms.conf, one .c file and a Makefile are written by this
test) is added to this machine's DKMS and really built and installed with ``dkms install -k`` for the
kernel whose headers Debian's ``linux-headers-amd64`` provides. ``dkms status`` as the module and the
role see it is the real one.

What is simulated, and why: this machine runs a kernel without loadable modules and has no kernel
image installed, only the headers of one Debian kernel. So the node's *kernel list* (running kernel,
installed kernels, GRUB's next entry), its loaded modules and /dev/infiniband come from a test root
built from the synthetic tree ``tests/fixtures/driver/debian_healthy`` (``driver_verify_facts_root``).
The other kernel, the one DKMS has no build for, exists only in that root: it has no headers, so
DKMS really fails to build for it, which the remediation test asserts.

The dummy module is removed from DKMS (``dkms remove ... --all``) and its source, the depmod files
and the signing key dkms created are deleted at the end, also when a test fails. A lock file keeps
two runs of this file from sharing the DKMS tree at the same time.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import harness
from harness import LOCAL_HOST_VARS, FactCache
from testpaths import FIXTURES

DKMS_NAME = "rdma-node-selftest"
DKMS_VERSION = "1.0"
DKMS_SPEC = DKMS_NAME + "/" + DKMS_VERSION
SOURCE_DIR = Path("/usr/src") / ("%s-%s" % (DKMS_NAME, DKMS_VERSION))
MOK_FILES = [Path("/var/lib/dkms/mok.key"), Path("/var/lib/dkms/mok.pub")]
LOCK_FILE = "/tmp/rdma-node-dkms-selftest.lock"
DRIVER = FIXTURES / "driver"

DUMMY_SOURCES = {
    "dkms.conf": (
        'PACKAGE_NAME="%s"\nPACKAGE_VERSION="%s"\nBUILT_MODULE_NAME[0]="rdma_node_selftest"\n'
        'DEST_MODULE_LOCATION[0]="/updates/dkms"\nAUTOINSTALL="yes"\n' % (DKMS_NAME, DKMS_VERSION)
    ),
    "Makefile": "obj-m := rdma_node_selftest.o\n",
    "rdma_node_selftest.c": (
        "// A module that does nothing: rdma.node's tests build it with DKMS.\n"
        "#include <linux/module.h>\n\n"
        "static int __init rdma_node_selftest_init(void) { return 0; }\n"
        "static void __exit rdma_node_selftest_exit(void) { }\n\n"
        "module_init(rdma_node_selftest_init);\nmodule_exit(rdma_node_selftest_exit);\n"
        'MODULE_LICENSE("GPL");\nMODULE_DESCRIPTION("rdma.node DKMS self-test");\n'
    ),
}


def dkms(*args, check=True):
    proc = subprocess.run(
        ["dkms", *args], capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, LC_ALL="C", LANG="C"),
    )
    if check:
        assert proc.returncode == 0, "dkms %s failed (%d): %s%s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr)
    return proc


def our_status_lines():
    """Real ``dkms status`` lines of the dummy module."""
    return [line for line in dkms("status").stdout.splitlines() if line.startswith(DKMS_NAME + "/")]


def kernel_with_headers():
    for entry in sorted(Path("/lib/modules").iterdir()):
        if (entry / "build" / "Makefile").is_file():
            return entry.name
    raise AssertionError("no kernel headers under /lib/modules/*/build; scripts/setup.sh installs linux-headers-amd64")


def other_kernel(release, delta):
    """A Debian kernel release next to ``release``: 6.1.0-56-amd64 and +1 gives 6.1.0-57-amd64."""
    match = re.match(r"^(\d+\.\d+\.\d+)-(\d+)-(.+)$", release)
    assert match, "unexpected kernel release %s" % release
    return "%s-%d-%s" % (match.group(1), int(match.group(2)) + delta, match.group(3))


def _remove_dummy():
    if our_status_lines():
        dkms("remove", DKMS_SPEC, "--all")
    if SOURCE_DIR.exists():
        shutil.rmtree(str(SOURCE_DIR))


@pytest.fixture(scope="module")
def headers_kernel():
    """The dummy module's source in /usr/src, nothing of it in DKMS yet; everything undone at the end."""
    assert shutil.which("dkms"), "dkms is not installed; scripts/setup.sh installs it"
    lock = open(LOCK_FILE, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    kernel = kernel_with_headers()
    kernel_dir = Path("/lib/modules") / kernel
    before = set(os.listdir(str(kernel_dir)))
    new_keys = [path for path in MOK_FILES if not path.exists()]
    try:
        _remove_dummy()  # a run that was killed before its clean-up left it (our own name only)
        SOURCE_DIR.mkdir(parents=True)
        for name, text in DUMMY_SOURCES.items():
            (SOURCE_DIR / name).write_text(text)
        yield kernel
    finally:
        try:
            _remove_dummy()
        finally:
            # depmod wrote modules.* into a directory that held only build/source links before.
            for name in set(os.listdir(str(kernel_dir))) - before:
                path = kernel_dir / name
                if name.startswith("modules.") and path.is_file():
                    path.unlink()
                elif name == "updates" and not any(files for _d, _s, files in os.walk(str(path))):
                    shutil.rmtree(str(path))
            for path in new_keys:
                if path.exists():
                    path.unlink()
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()


def node_root(tmp_path, running, installed, boots_next):
    """A node's / for the role: the healthy fixture's modules and devices, with the given kernels.

    grub.cfg is written the way grub-mkconfig writes it, with the kernel that boots next first.
    """
    root = tmp_path / "root"
    shutil.copytree(str(DRIVER / "debian_healthy/root"), str(root))
    shutil.rmtree(str(root / "lib/modules"))
    shutil.rmtree(str(root / "boot"))
    (root / "proc/sys/kernel/osrelease").write_text(running + "\n")
    (root / "boot/grub").mkdir(parents=True)
    for kernel in installed:
        (root / "lib/modules" / kernel / "kernel").mkdir(parents=True)
        (root / "boot" / ("vmlinuz-" + kernel)).write_text("")
    order = [boots_next] + [k for k in sorted(installed, reverse=True) if k != boots_next]
    entries = "".join(
        "menuentry 'Debian GNU/Linux, with Linux %s' $menuentry_id_option 'gnulinux-%s-advanced-test' {\n"
        "\tlinux\t/boot/vmlinuz-%s root=/dev/sda1 ro quiet\n}\n" % (k, k, k)
        for k in order
    )
    (root / "boot/grub/grub.cfg").write_text(
        'if [ "${next_entry}" ] ; then\n   set default="${next_entry}"\nelse\n   set default="0"\nfi\n' + entries
    )
    return root


def run_playbook(tmp_path, hosts, playbook="rdma.node.driver_verify", check=False, extra_vars=None):
    """Run a playbook on local hosts with a fresh jsonfile fact cache; return (the run, per-host stats,
    per-host cached facts as a later job reads them)."""
    cache = FactCache(tmp_path / "fact-cache")
    cache.clear()
    run = harness.run_playbook(playbook, inventory={"all": {"vars": LOCAL_HOST_VARS, "hosts": hosts}},
                               extra_vars=extra_vars, check=check, fact_cache=cache, cwd=str(tmp_path),
                               env={"ANSIBLE_PIPELINING": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}, timeout=300)
    return run, run.stats, {host: run.facts(host) for host in hosts}


def finding(check, severity, subject, message, expected=None, actual=None):
    return {"role": "driver_verify", "check": check, "severity": severity, "subject": subject,
            "message": message, "expected": expected, "actual": actual}


# --- real dkms ---------------------------------------------------------------------------------


def test_next_boot_kernel_without_a_dkms_build_is_reported(headers_kernel, tmp_path):
    kernel = headers_kernel
    newer = other_kernel(kernel, +1)
    dkms("add", DKMS_SPEC)
    dkms("install", DKMS_SPEC, "-k", kernel)  # a real kernel module build
    assert our_status_lines() == ["%s, %s, x86_64: installed" % (DKMS_SPEC, kernel)]

    root = node_root(tmp_path, running=kernel, installed=[kernel, newer], boots_next=newer)
    host = {"gpu-node-07": {"driver_verify_facts_root": str(root), "driver_verify_dkms_modules": [DKMS_NAME]}}
    run, stats, facts = run_playbook(tmp_path, host)

    assert run.rc == 2, run.stderr
    assert stats["gpu-node-07"]["failures"] == 1
    driver = facts["gpu-node-07"]["rdma_driver"]
    assert driver["running_kernel"] == kernel
    assert driver["installed_kernels"] == [kernel, newer]
    assert (driver["next_boot_kernel"], driver["next_boot_source"]) == (newer, "grub_default")
    assert driver["dkms"]["version"] == re.search(r"\d+(\.\d+)+", dkms("--version").stdout).group(0)
    assert driver["dkms"]["relevant"] == {DKMS_NAME: {"present": True, "versions": [DKMS_VERSION], "kernels": {kernel: "installed"}}}
    ours = [e for e in driver["dkms"]["entries"] if e["name"] == DKMS_NAME]
    assert [(e["kernel"], e["arch"], e["state"]) for e in ours] == [(kernel, "x86_64", "installed")]
    assert facts["gpu-node-07"]["driver_verify_findings"] == [
        finding("dkms_missing_next_boot", "critical", newer,
                "this node loses RDMA at its next reboot into %s: %s is not installed for that kernel "
                "(DKMS has no build for it)." % (newer, DKMS_NAME),
                expected="installed"),
    ]
    assert core_status(facts["gpu-node-07"]["driver_verify_status"]) == {
        "ok": False, "critical": 1, "warning": 0, "kernel": kernel, "next_boot_kernel": newer, "ofed_version": None,
    }


def core_status(status):
    """The counts and the kernels of a driver_verify status (it also lists the checks run and the summary line)."""
    return {key: status[key] for key in ("ok", "critical", "warning", "kernel", "next_boot_kernel", "ofed_version")}


def test_the_filter_reads_the_real_dkms_status(headers_kernel, tmp_path):
    playbook = tmp_path / "parse.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.command:\n        argv: [dkms, status]\n      register: status\n      changed_when: false\n"
        "    - ansible.builtin.set_fact:\n        parsed: \"{{ status.stdout | rdma.node.parse_dkms_status }}\"\n"
        "        raw: \"{{ status.stdout_lines }}\"\n        cacheable: true\n"
    )
    run, _stats, facts = run_playbook(tmp_path, {"controller": {}}, playbook=str(playbook))
    assert run.rc == 0, run.stdout[-2000:]
    parsed = facts["controller"]["parsed"]
    assert parsed["notes"] == [] and parsed["errors"] == []
    assert len(parsed["modules"]) == len([line for line in facts["controller"]["raw"] if line.strip()])
    ours = [item for item in parsed["modules"] if item["name"] == DKMS_NAME]
    assert [(i["version"], i["kernel"], i["state"]) for i in ours] == [(DKMS_VERSION, headers_kernel, "installed")]


def test_remediation_builds_for_real_and_check_mode_runs_nothing(headers_kernel, tmp_path):
    kernel = headers_kernel
    older = other_kernel(kernel, -1)  # running, no headers: DKMS cannot build for it
    if our_status_lines():
        dkms("remove", DKMS_SPEC, "--all")
    dkms("add", DKMS_SPEC)
    assert our_status_lines() == [DKMS_SPEC + ": added"]

    root = node_root(tmp_path, running=older, installed=[older, kernel], boots_next=kernel)
    host = {"gpu-node-08": {
        "driver_verify_facts_root": str(root),
        "driver_verify_dkms_modules": [DKMS_NAME],
        "driver_verify_remediate": True,
        "driver_verify_fail_on_findings": False,
    }}
    missing_running = finding(
        "dkms_missing_running", "critical", older,
        "%s is not installed by DKMS for the running kernel %s (DKMS has no build for it)." % (DKMS_NAME, older),
        expected="installed")
    missing_next = finding(
        "dkms_missing_next_boot", "critical", kernel,
        "this node loses RDMA at its next reboot into %s: %s is not installed for that kernel "
        "(DKMS has no build for it)." % (kernel, DKMS_NAME),
        expected="installed")

    # Check mode: the findings say what would run, and dkms is not touched.
    run, _stats, facts = run_playbook(tmp_path, host, check=True)
    assert run.rc == 0, run.stdout[-3000:]
    assert facts["gpu-node-08"]["driver_verify_findings"] == [
        missing_running,
        missing_next,
        finding("dkms_remediation_planned", "info", older,
                "Check mode: dkms autoinstall -k %s would run to build the missing DKMS modules." % older),
        finding("dkms_remediation_planned", "info", kernel,
                "Check mode: dkms autoinstall -k %s would run to build the missing DKMS modules." % kernel),
    ]
    assert our_status_lines() == [DKMS_SPEC + ": added"]

    # Apply: the kernel with headers gets a real build; the one without fails and says why.
    run, stats, facts = run_playbook(tmp_path, host)
    assert run.rc == 0, run.stdout[-3000:]
    assert stats["gpu-node-08"]["changed"] >= 1
    assert our_status_lines() == ["%s, %s, x86_64: installed" % (DKMS_SPEC, kernel)]
    assert (Path("/lib/modules") / kernel / "updates/dkms/rdma_node_selftest.ko").is_file()
    findings = facts["gpu-node-08"]["driver_verify_findings"]
    # In the order the checks are registered: what is still missing, what was rebuilt, what failed.
    assert [(f["check"], f["severity"], f["subject"]) for f in findings] == [
        ("dkms_missing_running", "critical", older),
        ("dkms_remediated", "info", kernel),
        ("dkms_remediation_failed", "critical", older),
    ]
    assert findings[0] == missing_running
    assert findings[2]["message"].startswith("dkms autoinstall -k %s failed with rc " % older)
    assert "Your kernel headers for kernel %s cannot be found" % older in findings[2]["message"]
    assert findings[2]["actual"] not in (0, None)
    assert findings[1] == finding("dkms_remediated", "info", kernel,
                                  "dkms autoinstall -k %s ran and succeeded." % kernel, actual=0)
    status = facts["gpu-node-08"]["driver_verify_status"]
    assert (status["ok"], status["critical"], status["next_boot_kernel"]) == (False, 2, kernel)
    assert facts["gpu-node-08"]["rdma_driver"]["dkms"]["relevant"][DKMS_NAME]["kernels"] == {kernel: "installed"}


# --- simulated nodes (saved dkms/ofed_info output, no tool runs) -------------------------------


def _simulated(case, **extra):
    base = DRIVER / case
    host = {
        "driver_verify_facts_root": str(base / "root"),
        "driver_verify_dkms_status_file": str(base / "dkms_status.txt"),
        "driver_verify_ofed_info_file": str(base / "ofed_info_s.txt"),
        "driver_verify_run_tools": False,
    }
    host.update(extra)
    return host


SIMULATED_HOSTS = {
    "v100-healthy": _simulated("debian_healthy", driver_verify_gpudirect=True, driver_verify_ofed_version="23.10"),
    "v100-upgraded": _simulated("debian_upgraded", driver_verify_gpudirect=True, driver_verify_ofed_version="24.04"),
    "a100-pinned": _simulated("rhel_bls", driver_verify_ofed_version="24.04-0.7.0"),
}

UPGRADED_FINDINGS = [
    finding("module_not_loaded", "critical", "rdma_ucm", "The kernel module rdma_ucm is not loaded.", expected="loaded"),
    finding("module_not_loaded", "critical", "nvidia_peermem",
            "The kernel module nvidia_peermem is not loaded, so GPUDirect RDMA does not work.", expected="loaded"),
    finding("ofed_version", "critical", "ofed",
            "The node runs MLNX_OFED_LINUX-23.10-1.1.9.0, not the expected OFED release 24.04.",
            expected="24.04", actual="MLNX_OFED_LINUX-23.10-1.1.9.0"),
    finding("dkms_missing_next_boot", "critical", "6.1.0-28-amd64",
            "this node loses RDMA at its next reboot into 6.1.0-28-amd64: mlnx-ofed-kernel is not installed "
            "for that kernel (DKMS has no build for it).", expected="installed"),
    finding("dkms_error", "warning", "dkms",
            "dkms status reports an error: Bad return status for module build on kernel: 6.1.0-28-amd64 (x86_64) "
            "Consult /var/lib/dkms/mlnx-ofed-kernel/23.10.OFED.23.10.1.1.9.1/build/make.log for more information.",
            actual="Bad return status for module build on kernel: 6.1.0-28-amd64 (x86_64) Consult "
                   "/var/lib/dkms/mlnx-ofed-kernel/23.10.OFED.23.10.1.1.9.1/build/make.log for more information."),
]

PINNED_FINDINGS = [
    finding("dkms_missing_newer", "warning", "5.14.0-427.13.1.el9_4.x86_64",
            "mlnx-ofed-kernel is not installed for 5.14.0-427.13.1.el9_4.x86_64, an installed kernel newer than "
            "the running one (only built, not installed); booting it loses RDMA.",
            expected="installed", actual="built"),
]


def test_simulated_fleet_findings_and_the_fail_switch(tmp_path):
    run, stats, facts = run_playbook(tmp_path, SIMULATED_HOSTS)
    assert run.rc == 2, run.stderr
    assert {host: s["failures"] for host, s in stats.items()} == {"v100-healthy": 0, "v100-upgraded": 1, "a100-pinned": 0}

    assert facts["v100-healthy"]["driver_verify_findings"] == []
    assert core_status(facts["v100-healthy"]["driver_verify_status"]) == {
        "ok": True, "critical": 0, "warning": 0, "kernel": "6.1.0-27-amd64",
        "next_boot_kernel": "6.1.0-27-amd64", "ofed_version": "MLNX_OFED_LINUX-23.10-1.1.9.0",
    }
    assert facts["v100-upgraded"]["driver_verify_findings"] == UPGRADED_FINDINGS
    assert core_status(facts["v100-upgraded"]["driver_verify_status"]) == {
        "ok": False, "critical": 4, "warning": 1, "kernel": "6.1.0-27-amd64",
        "next_boot_kernel": "6.1.0-28-amd64", "ofed_version": "MLNX_OFED_LINUX-23.10-1.1.9.0",
    }
    assert facts["a100-pinned"]["driver_verify_findings"] == PINNED_FINDINGS
    assert facts["a100-pinned"]["driver_verify_status"]["ok"] is True

    # Report only: the same findings, no host fails.
    run, stats, facts = run_playbook(
        tmp_path, SIMULATED_HOSTS, extra_vars={"driver_verify_fail_on_findings": False})
    assert run.rc == 0, run.stderr
    assert all(s["failures"] == 0 for s in stats.values())
    assert facts["v100-upgraded"]["driver_verify_findings"] == UPGRADED_FINDINGS


def test_bad_variables_are_rejected_before_anything_runs_on_the_node(tmp_path):
    # The role's one task checks its options against meta/argument_specs.yml before it gathers.
    hosts = {"typo-node": _simulated("debian_healthy", driver_verify_gpudirect="perhaps")}
    run, stats, facts = run_playbook(tmp_path, hosts)
    assert run.rc == 2
    assert stats["typo-node"]["failures"] == 1
    # The role's rescue fails the host with the same sentence (and has no findings to keep).
    (task, result), (rescue_task, failed) = run.failed_results("typo-node")
    assert task.endswith("Gather the driver facts, check the driver, keep and publish the findings")
    assert rescue_task.endswith("Fail the host for its critical findings or for what stopped the check") and failed["msg"] == result["msg"]
    assert result["msg"].startswith("rdma.node.evaluate: the options of the role rdma.node.driver_verify are not valid: ")
    assert "driver_verify_gpudirect" in result["msg"] and "perhaps" in result["msg"] and "\n" not in result["msg"]
    assert "rdma_driver" not in facts["typo-node"]
