# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``bandwidth_check`` role: a host's perftest runs against the rates its ports must reach.

They read no node facts: the role passes what it planned and what ran, as parameters (without the
``bandwidth_check_`` prefix): ``host`` (the host judged), ``plan`` (``rdma.node.bandwidth_plan``),
``selection`` (the host's ``rdma.node.bandwidth_ports``), ``loopback_results`` (its loopback task
results), ``pair_runs`` (the records of the pair tests, from every host of the play) and
``check_mode``. ``_bandwidth_plan.verdicts()`` judges each test; each check below reports one kind of
verdict. A pair test's findings go to both of its hosts, with the test's id as subject.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _registry
from ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan import ROLE, failure_text, verdicts
from ansible_collections.rdma.node.plugins.plugin_utils._gpu_memory import READY, memory_text, same_gpu
from ansible_collections.rdma.node.plugins.plugin_utils._registry import check, summary
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import failure_causes

PARAMS = ("host", "plan", "selection", "loopback_results", "pair_runs", "check_mode")
# The causes rdma.node.perftest names; any other is reported as perftest_failed_unknown.
KNOWN_CAUSES = failure_causes()
_LAST = []


def judged(params):
    """``verdicts()`` of the host; computed once for all the checks of one evaluation (same inputs)."""
    inputs = tuple(params.get(name) for name in PARAMS)
    if _LAST and len(_LAST[0]) == len(inputs) and all(a is b for a, b in zip(_LAST[0], inputs)):
        return _LAST[1]
    result = verdicts(params.get("plan"), params.get("host"), params.get("loopback_results"), params.get("pair_runs"),
                      bool(params.get("check_mode")), params.get("selection"))
    _LAST[:] = [inputs, result]
    return result


def _number(value):
    return ("%.2f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _ratio(expected, rate):
    if not rate:
        return "?"
    return _number(round(float(expected) / float(rate), 3))


def _pair_what(tool, test):
    return "%s between %s (server, %s) and %s (client, %s)" % (
        tool, test["server"], test["server_port"]["name"], test["client"], test["client_port"]["name"])


def _tests(params, outcome):
    """``(subject, what, status, failure, test)`` of each loopback test, then each pair test, whose outcome is ``outcome``."""
    host = judged(params)
    tool = host["tool"]
    found = []
    for item in host["loopback"]:
        if item["outcome"] == outcome:
            found.append((item["entry"]["name"], "%s loopback on %s" % (tool, item["entry"]["name"]), item["status"], item["failure"], None))
    for item in host["pairs"]:
        if item["outcome"] == outcome:
            found.append((item["test"]["id"], _pair_what(tool, item["test"]), item["status"], item["failure"], item))
    return found


@check(ROLE, "no_active_port", params=PARAMS)
def no_active_port(facts, params, found):
    """The host has no ACTIVE RDMA port to test (the skipped ports say why)."""
    host = judged(params)
    if host["no_active_port"]:
        why = "; ".join("%s: %s" % (s["name"], s["reason"]) for s in host["skipped"])
        found.warning(host["host"], "%s has no ACTIVE RDMA port to test%s." % (host["host"], " (%s)" % why if why else ""), "an ACTIVE port", None)


@check(ROLE, "loopback_not_run", params=PARAMS)
def loopback_not_run(facts, params, found):
    """A planned loopback test did not run (check mode runs none and reports nothing)."""
    host = judged(params)
    if host["check_mode"]:
        return
    for item in host["loopback"]:
        if item["outcome"] == "not_run":
            found.warning(item["entry"]["name"], "The %s loopback test of %s did not run on %s." % (host["tool"], item["entry"]["name"], host["host"]))


def _memory_of(status):
    """``with GPU memory (cuda, GPU 0000:5f:00.0)`` / ``with host memory`` of a test, both sides of a pair."""
    mine = memory_text(status.get("memory") or "host", {"pci_address": status.get("gpu")})
    peer = status.get("peer_memory")
    if peer is None or peer == (status.get("memory") or "host"):
        return "with " + mine
    return "with %s here and %s on the peer" % (mine, memory_text(peer))


def _cpu_warning(status):
    """perftest's own warning that the CPU ran below its maximum frequency, which lowers its figures."""
    said = [w for w in status.get("warnings") or [] if "cpu frequency" in w.lower()]
    return (" perftest warned \"%s\": a CPU below its maximum frequency lowers the figure; set the governor to performance "
            "(-F only hides the warning)." % said[0].rstrip(".")) if said else ""


@check(ROLE, "bandwidth_below_expected", params=PARAMS)
def bandwidth_below_expected(facts, params, found):
    """A loopback or pair test reached less than its expected rate: the link rate x the efficiency of its memory
    (bandwidth_check_efficiency with host memory, bandwidth_check_efficiency_gpu with GPU memory)."""
    for subject, what, status, dummy, dummy2 in _tests(params, "below_expected"):
        found.critical(subject, "%s reached %s Gb/s %s, below the expected %s Gb/s (%s x the %s Gb/s link rate).%s" % (
            what, status["measured_gbps"], _memory_of(status), status["expected_gbps"], _ratio(status["expected_gbps"], status["rate_gbps"]),
            _number(status["rate_gbps"]), _cpu_warning(status)), status["expected_gbps"], status["measured_gbps"])


def _report_failures(params, found, causes):
    for subject, what, status, failure, pair in _tests(params, "failed"):
        if failure["cause"] not in causes:
            continue
        where = " on the %s side" % failure["side"] if pair is not None else ""
        said = ""
        if failure["cause"] == "gpu_memory":
            said = " The test used %s; %s." % (
                memory_text(status.get("memory") or "host", {"pci_address": status.get("gpu")}), status.get("memory_reason") or READY)
        found.critical(subject, "%s failed%s: %s%s" % (what, where, failure_text(failure), said), "a completed test", failure["line"])


@check(ROLE, "perftest_failed_gpu_memory", params=PARAMS)
def perftest_failed_gpu_memory(facts, params, found):
    """perftest could not use GPU memory (a CUDA error, or registration without a peer-memory or DMA-BUF path)."""
    _report_failures(params, found, ("gpu_memory",))


@check(ROLE, "perftest_failed_memlock", params=PARAMS)
def perftest_failed_memlock(facts, params, found):
    """perftest could not register memory (Couldn't allocate MR): the memlock limit; rdma.node.node_remediation lifts it."""
    _report_failures(params, found, ("memlock",))


def register_cause_checks(role, params, report, descriptions):
    """Register ``perftest_failed_<cause>`` of ``role`` for each ``(cause, description)``, in that order: a
    check whose finding is the failure with its hint, nothing more, reported by ``report(params, found,
    causes)``. ``description`` is what the check finds, as a check's docstring says it."""
    for cause, description in descriptions:
        def judge(facts, params_, found, causes=(cause,)):
            report(params_, found, causes)
        judge.__doc__ = description
        judge.__qualname__ = judge.__name__ = "perftest_failed_" + cause
        _registry.register(role, judge.__name__, judge, params=params)


register_cause_checks(ROLE, PARAMS, _report_failures, (
    ("device_not_found", "perftest found no such RDMA device on the node."),
    ("port_down", "perftest found the port not ACTIVE."),
    ("device_query", "perftest could not query the device (the user-space RDMA libraries do not match the kernel's driver)."),
    ("qp_create", "The HCA refused the queue pair perftest asked for (an inline size or queue depth the device does not take)."),
    ("qp_connect", "The queue pair could not be connected (modify QP to RTR/RTS failed): GID index, MTU or LIDs the two sides "
                   "disagree on."),
    ("completion_error", "A work request completed with an error status: retries exceeded on a lossy path, or memory the HCA "
                         "cannot use."),
    ("remote_unreachable", "The two sides of a test could not reach each other (and neither side had a cause of its own)."),
))


@check(ROLE, "perftest_failed_unknown", params=PARAMS)
def perftest_failed_unknown(facts, params, found):
    """A test failed for a reason the collection does not recognise, its server never listened, or it printed no bandwidth."""
    _report_failures(params, found, _unknown_causes(params))
    for subject, what, dummy, dummy2, dummy3 in _tests(params, "no_result"):
        found.critical(subject, "%s printed no bandwidth result." % what, "a bandwidth result", None)


def _unknown_causes(params):
    """``unknown`` and any cause that no other check reports."""
    seen = {item["failure"]["cause"] for kind in ("loopback", "pairs") for item in judged(params)[kind] if item["failure"]}
    return {"unknown"} | {cause for cause in seen if cause not in KNOWN_CAUSES and cause != "error"}


@check(ROLE, "perftest_error", params=PARAMS)
def perftest_error(facts, params, found):
    """The perftest task itself failed (perftest not installed, bad arguments, the async job lost)."""
    _report_failures(params, found, ("error",))


@check(ROLE, "pair_not_run", params=PARAMS)
def pair_not_run(facts, params, found):
    """A planned pair test did not run (check mode runs none and reports nothing)."""
    host = judged(params)
    if host["check_mode"]:
        return
    for item in host["pairs"]:
        if item["outcome"] == "not_run":
            found.warning(item["test"]["id"], "%s did not run." % _pair_what(host["tool"], item["test"]))


@check(ROLE, "perftest_server_stopped", params=PARAMS)
def perftest_server_stopped(facts, params, found):
    """A pair's server did not end after its client was done, and the role stopped it (SIGTERM, or SIGKILL)."""
    host = judged(params)
    for item in host["pairs"]:
        stopped_by = item["server_record"].get("stopped_by")
        if item["outcome"] == "failed" or stopped_by not in ("role", "killed"):
            continue
        test = item["test"]
        found.warning(test["id"], "The %s server on %s (%s, TCP port %s) did not end after its client was done; the role stopped it%s." % (
            host["tool"], test["server"], test["server_port"]["name"], test["tcp_port"], " with SIGKILL" if stopped_by == "killed" else ""),
            "ended by itself", stopped_by)


@check(ROLE, "gpu_not_nearest", params=PARAMS)
def gpu_not_nearest(facts, params, found):
    """A GPU-memory test ran on another GPU than the one nearest its HCA (perftest names the one it picked):
    the CUDA numbering differs from the PCI order the role counts in (CUDA_VISIBLE_DEVICES in the environment)."""
    for subject, what, status, dummy, dummy2 in _tests(params, "pass") + _tests(params, "below_expected"):
        if (status.get("memory") or "host") == "host" or not status.get("gpu"):
            continue
        if not status.get("gpu_used"):
            found.not_checked(subject, "%s did not name the GPU it used (no 'CUDA device N: PCIe address' line), so whether it was "
                                       "%s, the GPU nearest %s, was not checked" % (what, status["gpu"], status["port"]))
            continue
        if same_gpu(status["gpu"], status["gpu_used"]) is False:
            found.warning(subject, "%s used the GPU at %s, not %s, the GPU nearest %s: its figure is not that of the nearest path "
                                   "(is CUDA_VISIBLE_DEVICES set in bandwidth_check_environment?)." % (
                                       what, status["gpu_used"], status["gpu"], status["port"]), status["gpu"], status["gpu_used"])


def _measured(status, loopback):
    text = "%s %s%s: %s" % (status["port"], "loopback" if loopback else "%s of %s:%s" % (status["role"], status["peer"], status["peer_port"]),
                            "" if (status.get("memory") or "host") == "host" else " (%s)" % status["memory"], status["verdict"])
    if status["measured_gbps"] is not None:
        text += " %s Gb/s" % round(status["measured_gbps"], 2)
    if status["expected_gbps"] is not None:
        text += " of %s expected" % status["expected_gbps"]
    if status["cause"]:
        text += " (%s)" % status["cause"]
    return text


@summary(ROLE, params=PARAMS)
def bandwidth_summary(facts, params, findings):
    """Every loopback and pair test with its verdict (what the fleet report shows), their counts, and the plan's notes."""
    host = judged(params)
    loopback = [item["status"] for item in host["loopback"]]
    pairs = [item["status"] for item in host["pairs"]]
    tested = loopback + pairs
    return {
        "check_mode": host["check_mode"], "tool": host["tool"], "group": host["group"], "efficiency": host["efficiency"],
        "efficiency_gpu": host["efficiency_gpu"],
        "loopback": loopback, "pairs": pairs,
        "verdicts": {
            "tests": len(tested),
            "passed": sum(1 for t in tested if t["verdict"] == "pass"),
            "below_expected": sum(1 for t in tested if t["verdict"] == "below_expected"),
            "failed": sum(1 for t in tested if t["verdict"] == "failed"),
            "not_run": sum(1 for t in tested if t["verdict"] == "not_run"),
        },
        "measured": [_measured(s, True) for s in loopback] + [_measured(s, False) for s in pairs],
        "notes": host["notes"],
    }


def evaluate(plan, host, loopback_results=None, pair_runs=None, check_mode=False, selection=None):
    """The findings and status of ``host`` from its checks, as ``rdma.node.evaluate`` gives them (the bandwidth_verdicts filter)."""
    params = {"host": host, "plan": plan, "selection": selection, "loopback_results": loopback_results or [],
              "pair_runs": pair_runs or [], "check_mode": bool(check_mode)}
    return _registry.evaluate(ROLE, {}, params, subject=host)
