# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``driver_verify`` role: the RDMA driver of the running kernel and of the next ones.

They read ``ansible_facts.rdma_driver`` (``rdma.node.driver_facts``). Parameters, without the
``driver_verify_`` prefix: ``required_modules``, ``gpudirect``, ``require_uverbs``, ``ofed_version``,
``check_dkms``, ``dkms_modules`` (every DKMS module that carries the driver) and ``autoinstall`` (the
results of the role's ``dkms autoinstall -k KERNEL`` runs, when it remediated).
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, parameter, summary
from ansible_collections.rdma.node.plugins.module_utils._dkms import summarize
from ansible_collections.rdma.node.plugins.module_utils._driver import GPUDIRECT_MODULES

ROLE = "driver_verify"
FACTS = ("rdma_driver",)
# DKMS states in which a module is usable on a kernel.
USABLE_STATES = ("installed", "installed-weak")
KERNEL_KINDS = ("running", "next_boot", "newer")


@parameter(ROLE, "dkms_modules")
def dkms_modules(options, facts):
    """The DKMS modules to check, the role's and the operator's extra ones, each once, in order. The
    gather passes the same list to driver_facts (its dkms_modules input)."""
    return list(dict.fromkeys(options["driver_verify_dkms_modules"] + options["driver_verify_dkms_extra_modules"]))


def _names(params, name):
    value = params.get(name) or []
    if isinstance(value, str) or not isinstance(value, list):
        raise CheckError("driver_verify_%s: expected a list of names, got %r" % (name, value))
    return [str(v) for v in value]


def _loaded(facts):
    return facts["rdma_driver"].get("loaded_modules") or {}


@check(ROLE, "module_not_loaded", reads=FACTS, params=("required_modules", "gpudirect"))
def module_not_loaded(facts, params, found):
    """A kernel module the node needs for RDMA (or for GPUDirect RDMA, when wanted) is not loaded."""
    loaded = _loaded(facts)
    for name in _names(params, "required_modules"):
        if name not in loaded:
            found.critical(name, "The kernel module %s is not loaded." % name, "loaded", None)
    if params.get("gpudirect") and not any(name in loaded for name in GPUDIRECT_MODULES):
        found.critical("nvidia_peermem", "The kernel module nvidia_peermem is not loaded, so GPUDirect RDMA does not work.", "loaded", None)


@check(ROLE, "uverbs_missing", reads=FACTS, params=("require_uverbs",))
def uverbs_missing(facts, params, found):
    """No /dev/infiniband/uverbs* node: no verbs application can open an RDMA device."""
    devices = facts["rdma_driver"].get("infiniband_devices") or []
    if not params.get("require_uverbs") or any(d.startswith("uverbs") and d[6:].isdigit() for d in devices):
        return
    holds = "the directory is empty or missing" if not devices else "it holds " + ", ".join(devices)
    found.critical("/dev/infiniband", "There is no /dev/infiniband/uverbs* device node, so no verbs application can open an "
                   "RDMA device (%s)." % holds, "uverbs*", devices)


def _ofed_matches(ofed, wanted):
    version = ofed.get("version") or ""
    return wanted in (ofed.get("id"), version) or version.startswith(wanted + "-") or version.startswith(wanted + ".")


@check(ROLE, "ofed_version", reads=FACTS, params=("ofed_version",))
def ofed_version(facts, params, found):
    """The node runs another OFED release than the one its group expects."""
    wanted = params.get("ofed_version")
    if not wanted:
        return
    wanted = str(wanted)
    ofed = facts["rdma_driver"].get("ofed")
    if ofed and _ofed_matches(ofed, wanted):
        return
    message = ("The node runs %s, not the expected OFED release %s." % (ofed.get("id"), wanted) if ofed
               else "ofed_info reports no OFED release; expected %s." % wanted)
    found.critical("ofed", message, wanted, facts["rdma_driver"].get("ofed_version"))


@check(ROLE, "dkms_unavailable", reads=FACTS, params=("check_dkms", "dkms_modules"))
def dkms_unavailable(facts, params, found):
    """dkms is not installed, so nothing rebuilds the driver for a new kernel."""
    if params.get("check_dkms") and facts["rdma_driver"].get("dkms") is None:
        found.critical("dkms", "dkms is not installed, so nothing rebuilds %s for a new kernel." % ", ".join(_names(params, "dkms_modules")),
                       "installed", None)


def kernels_to_check(driver):
    """The running kernel, the one that boots next and every newer installed kernel, each with its kind."""
    kinds = {}
    for kernel in driver.get("newer_kernels") or []:
        kinds[kernel] = "newer"
    if driver.get("next_boot_kernel"):
        kinds[driver["next_boot_kernel"]] = "next_boot"
    if driver.get("running_kernel"):
        kinds[driver["running_kernel"]] = "running"
    order = [driver.get("running_kernel"), driver.get("next_boot_kernel")] + list(driver.get("newer_kernels") or [])
    return [(kernel, kinds[kernel]) for kernel in dict.fromkeys(k for k in order if k)]


def missing_builds(driver, names):
    """``(kernel, kind, module, state, detail)`` for each kernel that lacks a usable DKMS build of a module."""
    view = summarize((driver.get("dkms") or {}).get("entries") or [], names)
    missing = []
    for kernel, kind in kernels_to_check(driver):
        for name in names:
            known = view[name]
            state = known["kernels"].get(kernel)
            if state in USABLE_STATES:
                continue
            if not known["present"]:
                detail = "DKMS does not know %s" % name
            elif state is None:
                detail = "DKMS has no build for it"
            elif state == "built":
                detail = "only built, not installed"
            else:
                detail = "DKMS state: %s" % state
            missing.append((kernel, kind, name, state, detail))
    return missing


def _report_missing(kind, facts, params, found):
    driver = facts["rdma_driver"]
    if not params.get("check_dkms") or driver.get("dkms") is None:
        return
    for kernel, kernel_kind, name, state, detail in missing_builds(driver, _names(params, "dkms_modules")):
        if kernel_kind != kind:
            continue
        if kind == "running":
            found.critical(kernel, "%s is not installed by DKMS for the running kernel %s (%s)." % (name, kernel, detail), "installed", state)
        elif kind == "next_boot":
            found.critical(kernel, "this node loses RDMA at its next reboot into %s: %s is not installed for that kernel (%s)."
                           % (kernel, name, detail), "installed", state)
        else:
            found.warning(kernel, "%s is not installed for %s, an installed kernel newer than the running one (%s); booting it loses RDMA."
                          % (name, kernel, detail), "installed", state)


@check(ROLE, "dkms_missing_running", reads=FACTS, params=("check_dkms", "dkms_modules"))
def dkms_missing_running(facts, params, found):
    """The running kernel has no installed DKMS build of the driver."""
    _report_missing("running", facts, params, found)


@check(ROLE, "dkms_missing_next_boot", reads=FACTS, params=("check_dkms", "dkms_modules"))
def dkms_missing_next_boot(facts, params, found):
    """The kernel that boots next has no installed DKMS build: the node loses RDMA at its next reboot."""
    _report_missing("next_boot", facts, params, found)


@check(ROLE, "dkms_missing_newer", reads=FACTS, params=("check_dkms", "dkms_modules"))
def dkms_missing_newer(facts, params, found):
    """An installed kernel newer than the running one has no DKMS build (a later boot into it loses RDMA)."""
    _report_missing("newer", facts, params, found)


@check(ROLE, "dkms_error", reads=FACTS, params=("check_dkms",))
def dkms_error(facts, params, found):
    """dkms status printed an error (a broken module tree, a failed build)."""
    dkms = facts["rdma_driver"].get("dkms")
    if params.get("check_dkms") and dkms is not None:
        for error in dkms.get("errors") or []:
            found.warning("dkms", "dkms status reports an error: %s" % error, None, error)


def _autoinstall(params):
    runs = params.get("autoinstall") or []
    if not isinstance(runs, list):
        raise CheckError("autoinstall: expected the results of the dkms autoinstall runs, got %r" % (runs,))
    return runs


def _outcome(run):
    if run.get("skipped"):
        return "planned"
    return "succeeded" if run.get("rc") == 0 else "failed"


@check(ROLE, "dkms_remediation_planned", params=("autoinstall",))
def dkms_remediation_planned(facts, params, found):
    """Check mode: the dkms autoinstall runs that would rebuild the missing modules."""
    for run in _autoinstall(params):
        if _outcome(run) == "planned":
            found.info(run.get("item"), "Check mode: dkms autoinstall -k %s would run to build the missing DKMS modules." % run.get("item"))


@check(ROLE, "dkms_remediated", params=("autoinstall",))
def dkms_remediated(facts, params, found):
    """A dkms autoinstall run that rebuilt the driver for a kernel."""
    for run in _autoinstall(params):
        if _outcome(run) == "succeeded":
            found.info(run.get("item"), "dkms autoinstall -k %s ran and succeeded." % run.get("item"), None, 0)


@check(ROLE, "dkms_remediation_failed", params=("autoinstall",))
def dkms_remediation_failed(facts, params, found):
    """A dkms autoinstall run that failed: the kernel still lacks the driver."""
    for run in _autoinstall(params):
        if _outcome(run) == "failed":
            lines = [line for line in run.get("stderr_lines") or [] if line.strip()]
            error = next((line for line in lines if line.startswith("Error!")), lines[0] if lines else run.get("msg") or "no message")
            found.critical(run.get("item"), "dkms autoinstall -k %s failed with rc %s: %s" % (run.get("item"), run.get("rc", "?"), error),
                           None, run.get("rc"))


@summary(ROLE, reads=FACTS, params=("check_dkms", "dkms_modules"))
def driver_summary(facts, params, findings):
    """The kernels and the OFED release, and the kernels whose DKMS builds are missing (what remediation rebuilds)."""
    driver = facts["rdma_driver"]
    missing = []
    if params.get("check_dkms") and driver.get("dkms") is not None:
        missing = list(dict.fromkeys(kernel for kernel, _kind, _name, _state, _detail in missing_builds(driver, _names(params, "dkms_modules"))))
    return {
        "kernel": driver.get("running_kernel"),
        "next_boot_kernel": driver.get("next_boot_kernel"),
        "ofed_version": driver.get("ofed_version"),
        "missing_kernels": missing,
    }
