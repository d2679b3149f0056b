# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``pod_proof`` role: what a pair of the workload's pods gets, judged like a host pair.

They read no facts of their own: the role hands ``rdma.node.evaluate`` what it planned and read back,
as parameters (without the ``pod_proof_`` prefix):

* ``plan``: ``_pod_proof.plan()`` (the pairs of each group, as ``bandwidth_check`` pairs them, and
  the batches); ``check_mode``: nothing ran;
* ``pods``: the Pod objects as last read (from every batch); ``logs``: pod name -> its log;
* ``leftovers``: pods of an earlier run found by label at the start, and ``leftovers_removed``;
* ``nodes``: inventory host -> what its facts say of it (``rdma_memlock``, ``node_remediation_status``,
  ``rdma`` with ``gpudirect`` and ``locality``), for the messages;
* ``memlock_wanted``: the locked-memory limit the workload needs (``unlimited`` or bytes);
* ``start_timeout``: the seconds a pod had to start.

A pair test is judged by ``_bandwidth_plan.verdicts()``, the logic of ``bandwidth_check``; its
findings have the test's id (``SERVER:PORT>CLIENT:PORT``) as subject, which the fleet report shows
on both hosts. Findings about one node's pod have the inventory host as subject.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _gpu_memory, _pod_proof
from ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan import failure_text, verdicts
from ansible_collections.rdma.node.plugins.plugin_utils._checks import nccl
from ansible_collections.rdma.node.plugins.plugin_utils._checks.bandwidth import KNOWN_CAUSES, register_cause_checks
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, summary
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RLIM_INFINITY, RlimitError, parse_rlimit_value

ROLE = _pod_proof.ROLE
PARAMS = ("plan", "pods", "logs", "check_mode")
NODE_PARAMS = PARAMS + ("nodes", "memlock_wanted")
_CACHE = []


def judged(params):
    """Everything the checks judge, computed once per evaluation: pods by test, records, verdicts per test."""
    inputs = tuple(params.get(name) for name in PARAMS)
    if _CACHE and len(_CACHE[0]) == len(inputs) and all(a is b for a, b in zip(_CACHE[0], inputs)):
        return _CACHE[1]
    plan = params.get("plan")
    if not isinstance(plan, dict) or "tests" not in plan or "bandwidth_plan" not in plan:
        raise CheckError("plan: expected the plan of rdma.node.pod_proof_plan, got %r" % (type(plan).__name__,))
    pods = _pod_proof.as_list(params.get("pods"), "pods")
    logs = params.get("logs") or {}
    if not isinstance(logs, dict):
        raise CheckError("logs: expected pod name -> log text, got %r" % (type(logs).__name__,))
    states = [_pod_proof.pod_state(pod) for pod in pods]
    reads = {s["name"]: _pod_proof.read_pod_log(logs.get(s["name"])) for s in states}
    records = _pod_proof.test_records(plan, pods, logs)
    tests = {}
    planned = {test["id"]: test for test in plan["tests"]}
    for host in plan["bandwidth_plan"]["hosts"]:
        judged_host = verdicts(plan["bandwidth_plan"], host, [], records, bool(params.get("check_mode")))
        for item in judged_host["pairs"]:
            # The proof's own test (its nodes, pods' memory) in place of the bandwidth plan's.
            tests.setdefault(item["test"]["id"], dict(item, test=planned.get(item["test"]["id"], item["test"])))
    result = {"plan": plan, "states": states, "reads": reads, "tests": tests, "tool": plan.get("tool") or "ib_write_bw",
              "check_mode": bool(params.get("check_mode"))}
    _CACHE[:] = [inputs, result]
    return result


def _host_of(state):
    return state["annotations"].get(_pod_proof.HOST_ANNOTATION) or state["node"] or state["name"]


def _memlock_low(pair, wanted):
    """Whether the soft limit of a ``/proc`` pair is below ``wanted`` (bytes or RLIM_INFINITY); None when unreadable."""
    try:
        soft = parse_rlimit_value(pair["soft"])
    except (RlimitError, KeyError, TypeError):
        return None
    return soft != RLIM_INFINITY and (wanted == RLIM_INFINITY or soft < wanted)


def _size(text):
    try:
        value = parse_rlimit_value(text)
    except RlimitError:
        return str(text)
    if value == RLIM_INFINITY:
        return "unlimited"
    for unit, factor in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if value >= factor and value % factor == 0:
            return "%d %s" % (value // factor, unit)
    return "%d bytes" % value


def node_memlock_state(host, node):
    """One sentence on the node's containerd and base runtime spec, from node_remediation's facts (or that there are none)."""
    node = node if isinstance(node, dict) else {}
    limits = node.get("rdma_memlock") if isinstance(node.get("rdma_memlock"), dict) else None
    status = node.get("node_remediation_status") if isinstance(node.get("node_remediation_status"), dict) else None
    if limits is None and status is None:
        return ("node_remediation has not reported on %s (neither rdma_memlock nor node_remediation_status in its facts "
                "or the fact cache), so its containerd and base runtime spec are not known: run rdma.node.node_remediation." % host)
    parts = []
    containerd = (limits or {}).get("containerd") or (status or {}).get("containerd") or {}
    memlock = containerd.get("memlock")
    if containerd.get("pid") and memlock:
        systemd = (containerd.get("systemd") or {}).get("LimitMEMLOCK")
        parts.append("containerd (pid %s) runs with Max locked memory %s/%s%s" % (
            containerd["pid"], memlock.get("soft"), memlock.get("hard"), (", systemd has LimitMEMLOCK=%s" % systemd) if systemd else ""))
    elif containerd:
        parts.append("containerd's own limit was not read (%s)" % (containerd.get("error") or "no main process"))
    probe = (status or {}).get("probe") or ((limits or {}).get("probe") if limits else None)
    if isinstance(probe, dict):
        result = probe.get("result") or ("ok" if probe.get("ran") and probe.get("rc") == 0 else "not_run")
        if result == "ok":
            parts.append("a test container from the base runtime spec got Max locked memory %s/%s, so the spec is right and this "
                         "pod's runtime does not use it (a RuntimeClass whose runtime has no base_runtime_spec) or the node's "
                         "containerd was not restarted since" % ((probe.get("memlock") or {}).get("soft"), (probe.get("memlock") or {}).get("hard")))
        elif result in ("mismatch", "failed"):
            happened = "got other limits than the spec" if result == "mismatch" else "could not start: %s" % (probe.get("error") or "no message")
            parts.append("the base runtime spec's test container %s" % happened)
        else:
            parts.append("the base runtime spec was not probed (%s)" % (probe.get("note") or probe.get("not_run") or "no test container"))
    if status is not None:
        if status.get("rolled_back"):
            parts.append("the last remediation was rolled back (%s)" % (status["rolled_back"].get("reason") or "no reason given"))
        elif status.get("changed"):
            parts.append("node_remediation last wrote %s" % ", ".join(status["changed"]))
        elif status.get("check_mode"):
            parts.append("node_remediation last ran in check mode only")
    else:
        parts.append("node_remediation has not run on it (no node_remediation_status)")
    return "On %s: %s." % (host, "; ".join(parts))


def _capped_pods(params):
    seen = judged(params)
    try:
        wanted = parse_rlimit_value(params.get("memlock_wanted") or "unlimited", "pod_proof_memlock_wanted")
    except RlimitError as exc:
        raise CheckError(str(exc)) from None
    capped = []
    for state in seen["states"]:
        read = seen["reads"].get(state["name"]) or {}
        if not read.get("memlock") or read.get("ipc_lock"):
            continue
        if _memlock_low(read["memlock"], wanted):
            capped.append((state, read))
    return capped, wanted


def _pod_failure(params, state):
    """The failure perftest reported in ``state``'s pod (the test's chosen failure when it is on this pod's side)."""
    seen = judged(params)
    test_id = state["annotations"].get(_pod_proof.TEST_ANNOTATION)
    item = seen["tests"].get(test_id)
    side = state["labels"].get(_pod_proof.SIDE_LABEL)
    if item and item["failure"] and item["failure"].get("side") == side:
        return item["failure"]
    return None


@check(ROLE, "pod_memlock_capped", params=NODE_PARAMS)
def pod_memlock_capped(facts, params, found):
    """A proof pod runs with a capped RLIMIT_MEMLOCK and no effective CAP_IPC_LOCK: RDMA memory registration of any size fails in such pods."""
    capped, wanted = _capped_pods(params)
    nodes = params.get("nodes") or {}
    for state, read in capped:
        host = _host_of(state)
        failure = _pod_failure(params, state)
        soft, hard = read["memlock"]["soft"], read["memlock"]["hard"]
        what = ("%s failed with %s" % (judged(params)["tool"], failure["line"]) if failure and failure.get("cause") == "memlock"
                else "its %s test fit into it, but a workload that registers more memory (NCCL registers its buffers) fails with "
                     "\"Couldn't allocate MR\"" % judged(params)["tool"])
        found.critical(host, "Pod %s on node %s runs as uid %s with Max locked memory %s (soft) / %s (hard) and without an effective "
                             "CAP_IPC_LOCK (CapEff %s): %s. A non-root container keeps this cap unless containerd's base runtime spec "
                             "lifts RLIMIT_MEMLOCK (IPC_LOCK helps only root). %s" % (
                                 state["name"], state["node"] or host, read.get("uid"), _size(soft), _size(hard),
                                 read.get("cap_eff") or "?", what, node_memlock_state(host, nodes.get(host))),
                       "unlimited" if wanted == RLIM_INFINITY else wanted, [soft, hard])


@check(ROLE, "pod_not_started", params=PARAMS + ("start_timeout",))
def pod_not_started(facts, params, found):
    """A proof pod never started: unschedulable (the scheduler says why), rejected by its node, its image not pulled, or not ready in time."""
    seen = judged(params)
    if seen["check_mode"]:
        return
    for state in seen["states"]:
        side = state["labels"].get(_pod_proof.SIDE_LABEL)
        host = _host_of(state)
        if state["stuck"]:
            why = state["stuck"]
        elif side == "server" and not state["ready"] and not state["ended"] and not state["started"]:
            why = "it did not start within %s s (phase %s)" % (params.get("start_timeout") or "the start timeout", state["phase"])
        else:
            continue
        found.critical(host, "The %s pod %s of the pod proof on node %s never started: %s. %s" % (
            side, state["name"], state["node"] or judged(params)["plan"]["nodes"].get(host, host), why.rstrip("."),
            "Its pair was not tested." if side == "server" else "Its test did not run."), "Running", state["phase"])


def _tests(params, outcomes):
    seen = judged(params)
    return [item for test_id, item in sorted(seen["tests"].items()) if item["outcome"] in outcomes]


def _pair_what(tool, test):
    return "%s between pods on %s (server, %s) and %s (client, %s)" % (
        tool, test["server"], test["server_port"]["name"], test["client"], test["client_port"]["name"])


def _memory_text(test):
    modes = {test["server_memory"]["mode"], test["client_memory"]["mode"]}
    return "host memory" if modes == {"host"} else "GPU memory (%s)" % "/".join(sorted(m for m in modes if m != "host"))


@check(ROLE, "bandwidth_below_expected", params=PARAMS)
def bandwidth_below_expected(facts, params, found):
    """A pod pair reached less than its expected rate: the link rate x the efficiency of its memory (GPU or host)."""
    seen = judged(params)
    for item in _tests(params, ("below_expected",)):
        status, test = item["status"], item["test"]
        found.critical(test["id"], "%s reached %s Gb/s with %s, below the expected %s Gb/s (the %s Gb/s link rate x %s)." % (
            _pair_what(seen["tool"], test), status["measured_gbps"], _memory_text(test), status["expected_gbps"],
            status["rate_gbps"], round(status["expected_gbps"] / status["rate_gbps"], 3) if status["rate_gbps"] else "?"),
            status["expected_gbps"], status["measured_gbps"])


def _capped_tests(params):
    """The tests whose memlock failure the pod_memlock_capped finding already explains."""
    capped, _wanted = _capped_pods(params)
    return {state["annotations"].get(_pod_proof.TEST_ANNOTATION) for state, _read in capped}


def _report_failures(params, found, causes):
    seen = judged(params)
    explained = _capped_tests(params) if "memlock" in causes else set()
    for item in _tests(params, ("failed",)):
        failure = item["failure"]
        if failure["cause"] not in causes or (failure["cause"] == "memlock" and item["test"]["id"] in explained):
            continue
        found.critical(item["test"]["id"], "%s failed on the %s side: %s" % (
            _pair_what(seen["tool"], item["test"]), failure["side"], failure_text(failure)), "a completed test", failure["line"])


@check(ROLE, "perftest_failed_gpu_memory", params=PARAMS)
def perftest_failed_gpu_memory(facts, params, found):
    """perftest in a pod could not use GPU memory: a CUDA error, or registration without peer memory or DMA-BUF on the node."""
    seen = judged(params)
    for item in _tests(params, ("failed",)):
        failure, test = item["failure"], item["test"]
        if failure["cause"] != "gpu_memory":
            continue
        memory = test["server_memory" if failure.get("side") == "server" else "client_memory"]
        found.critical(test["id"], "%s failed on the %s side: %s The pod used %s; %s." % (
            _pair_what(seen["tool"], test), failure["side"], failure_text(failure),
            _gpu_memory.memory_text(memory["mode"], memory.get("gpu")), memory.get("reason") or _gpu_memory.READY),
            "a completed test", failure["line"])


@check(ROLE, "perftest_failed_memlock", params=NODE_PARAMS)
def perftest_failed_memlock(facts, params, found):
    """perftest in a pod could not register memory while the pod's limits looked sufficient (a capped pod is pod_memlock_capped)."""
    _report_failures(params, found, ("memlock",))


register_cause_checks(ROLE, PARAMS, _report_failures, (
    ("device_not_found", "perftest found no such RDMA device in the pod: the device plugin did not hand it one."),
    ("port_down", "perftest in a pod found the port not ACTIVE."),
    ("device_query", "perftest in a pod could not query the device (the image's RDMA libraries do not match the node's driver)."),
    ("qp_create", "The HCA handed to the pod refused the queue pair perftest asked for (an inline size or queue depth it does "
                  "not take)."),
    ("qp_connect", "The pods' queue pairs could not be connected (modify QP to RTR/RTS failed): GID index, MTU or LIDs they "
                   "disagree on."),
    ("completion_error", "A work request between the pods completed with an error status: retries exceeded on a lossy path, or "
                         "memory the HCA cannot use."),
    ("remote_unreachable", "The two pods could not reach each other (pod network, TCP port), and neither side had a cause of its own."),
))


@check(ROLE, "perftest_failed_unknown", params=PARAMS)
def perftest_failed_unknown(facts, params, found):
    """A pod test failed for a reason the collection does not recognise, or printed no bandwidth."""
    seen = judged(params)
    causes = {"unknown"} | {i["failure"]["cause"] for i in _tests(params, ("failed",)) if i["failure"]["cause"] not in KNOWN_CAUSES}
    _report_failures(params, found, causes)
    for item in _tests(params, ("no_result",)):
        found.critical(item["test"]["id"], "%s printed no bandwidth result." % _pair_what(seen["tool"], item["test"]), "a bandwidth result", None)


@check(ROLE, "pair_not_run", params=PARAMS)
def pair_not_run(facts, params, found):
    """A planned pod pair left no result (its pods never started, see pod_not_started, or the run stopped);
    with pod_proof_run_pods false no pair is planned or run, which is said once (not checked), never counted as passed."""
    seen = judged(params)
    if seen["check_mode"]:
        return
    if not seen["plan"].get("run_pods", True):
        if seen["plan"]["settings"]:
            found.not_checked("pods", "pod_proof_run_pods is false: no pod pair was planned or run in the group(s) %s; only the groups' NCCL "
                                      "evidence was judged (the rdma.node.pod_proof playbook runs the pods)" % ", ".join(sorted(seen["plan"]["settings"])))
        return
    for item in _tests(params, ("not_run",)):
        found.warning(item["test"]["id"], "%s did not run." % _pair_what(seen["tool"], item["test"]))


@check(ROLE, "pods_not_planned", params=PARAMS)
def pods_not_planned(facts, params, found):
    """A host of a tested group has no RDMA facts, or no partner: its pods were not planned (not checked, never passed)."""
    for note in judged(params)["plan"]["notes"]:
        for host in note["hosts"]:
            found.not_checked(host, note["note"])


@check(ROLE, "gpu_not_nearest", params=PARAMS)
def gpu_not_nearest(facts, params, found):
    """A GPU-memory test's pod got a GPU other than the one nearest its HCA (the device plugin chose it): the figure is not the best path's."""
    seen = judged(params)
    for state in seen["states"]:
        read = seen["reads"].get(state["name"]) or {}
        gpu = read.get("gpu") or {}
        test = next((t for t in seen["plan"]["tests"] if t["id"] == state["annotations"].get(_pod_proof.TEST_ANNOTATION)), None)
        if not gpu.get("bus") or test is None:
            continue
        side = state["labels"].get(_pod_proof.SIDE_LABEL)
        memory = test["server_memory" if side == "server" else "client_memory"]
        nearest = (memory.get("gpu") or {}).get("pci_address")
        if not nearest:
            found.not_checked(_host_of(state), "no GPU locality facts (rdma.locality) for %s: whether the pod's GPU %s is the nearest "
                                               "one to its HCA was not checked" % (_host_of(state), gpu["bus"]))
            continue
        if _gpu_memory.same_gpu(nearest, gpu["bus"]) is False:
            port = test["server_port" if side == "server" else "client_port"]["name"]
            found.warning(_host_of(state), "Pod %s got the GPU at %s, not %s, the GPU nearest %s (%s): the GPUDirect figure of this "
                                           "pair is not that of the best path; a topology-aware GPU allocation (the kubelet's "
                                           "Topology Manager) gives pods the near one." % (
                                               state["name"], gpu["bus"], nearest, port, memory["gpu"].get("relation")), nearest, gpu["bus"])


@check(ROLE, "leftover_pods", params=("leftovers", "leftovers_removed", "check_mode"))
def leftover_pods(facts, params, found):
    """Pods of an earlier pod proof (found by label) were still there: removed, or in check mode would be."""
    leftovers = _pod_proof.as_list(params.get("leftovers"), "leftovers")
    if not leftovers:
        return
    names = []
    for pod in leftovers:
        state = _pod_proof.pod_state(pod)
        names.append("%s (run %s, %s)" % (state["name"], state["labels"].get(_pod_proof.RUN_LABEL, "?"), state["phase"]))
    if params.get("check_mode"):
        found.warning("pod_proof", "Check mode: would remove %d pod(s) an earlier pod proof left behind: %s." % (len(names), ", ".join(names)))
    elif params.get("leftovers_removed"):
        found.info("pod_proof", "Removed %d pod(s) an earlier, interrupted pod proof left behind: %s." % (len(names), ", ".join(names)))
    else:
        found.warning("pod_proof", "%d pod(s) of an earlier pod proof are still there and were not removed: %s." % (len(names), ", ".join(names)))


def _pod_view(state, read):
    return {"name": state["name"], "host": _host_of(state), "node": state["node"], "side": state["labels"].get(_pod_proof.SIDE_LABEL),
            "test": state["annotations"].get(_pod_proof.TEST_ANNOTATION), "phase": state["phase"], "exit_code": state["exit_code"],
            "stuck": state["stuck"], "memlock": read.get("memlock"), "uid": read.get("uid"), "capabilities": read.get("caps"),
            "ipc_lock": read.get("ipc_lock"), "pinning": read.get("pinning"), "pinning_detail": read.get("pinning_detail"),
            "gpu": read.get("gpu")}


@summary(ROLE, params=PARAMS + ("nccl", "nodes"))
def pod_proof_summary(facts, params, findings):
    """Every pair with its verdict, every pod with what it printed, and the counts; nccl's per group. Without
    pods (pod_proof_run_pods false) there is no pair to show: the not-checked entry of pair_not_run says so."""
    seen = judged(params)
    run_pods = seen["plan"].get("run_pods", True)
    pairs = []
    for test_id, item in sorted(seen["tests"].items() if run_pods else ()):
        status, test = item["status"], item["test"]
        pairs.append({"id": test_id, "group": test["group"], "server": test["server"], "client": test["client"],
                      "server_node": test["server_node"], "client_node": test["client_node"], "port": test["server_port"]["name"],
                      "peer_port": test["client_port"]["name"], "memory": _memory_text(test), "server_memory": test["server_memory"]["mode"],
                      "client_memory": test["client_memory"]["mode"], "rate_gbps": status["rate_gbps"],
                      "expected_gbps": status["expected_gbps"], "measured_gbps": status["measured_gbps"], "verdict": status["verdict"],
                      "cause": status["cause"], "side": status["side"], "line": status["line"]})
    counts = {verdict: sum(1 for p in pairs if p["verdict"] == verdict) for verdict in ("pass", "below_expected", "failed", "not_run")}
    return {
        "check_mode": seen["check_mode"], "run_pods": run_pods, "tool": seen["tool"], "groups": [g["name"] for g in seen["plan"]["groups"]],
        "pairs": pairs, "verdicts": dict(counts, tests=len(pairs)),
        "pods": [_pod_view(s, seen["reads"].get(s["name"]) or {}) for s in seen["states"]],
        "batches": len(seen["plan"]["batches"]), "max_pairs": seen["plan"]["max_pairs"],
        "notes": [n["note"] for n in seen["plan"]["notes"]],
        "nccl": nccl.views(params),
        "measured": ["%s: %s%s" % (p["id"], p["verdict"], (" %s Gb/s of %s expected" % (p["measured_gbps"], p["expected_gbps"]))
                                   if p["measured_gbps"] is not None else "") for p in pairs],
    }
