# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of NCCL's own transport and nccl-tests' bandwidth, run by the ``pod_proof`` role.

The role hands each group's NCCL evidence as the parameter ``nccl``: a list of ``{group, source, log,
tests, min_busbw, rdma_resource, hosts}`` where ``log`` is an ``NCCL_DEBUG=INFO`` log and ``tests``
an nccl-tests output (either may be empty), read from a saved file, a pod's log or the role's
optional ``all_reduce_perf`` step. ``nodes`` (inventory host -> its facts: ``rdma`` ports and
gpudirect, ``rdma_memlock``) lets a finding say which RDMA precondition failed. Findings have the
group as subject.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils import _pod_proof
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check
from ansible_collections.rdma.node.plugins.module_utils._nccl_output import (
    NcclOutputError, ib_hca_entries, parse_nccl_log, parse_nccl_tests, wrong_elements)
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RLIM_INFINITY, RlimitError, parse_rlimit_value

ROLE = _pod_proof.ROLE
PARAMS = ("nccl", "nodes")
# Below this size an all-reduce measures latency, not bandwidth (nccl-tests' PERFORMANCE.md): no floor applies.
MIN_JUDGED_SIZE = 64 * 2 ** 20
_CACHE = []


def evidence(params):
    """Each group's evidence parsed once: ``[{group, source, log, tests, log_error, tests_error, entry}]``."""
    entries = _pod_proof.as_list(params.get("nccl"), "nccl")
    key = tuple(id(e) for e in entries)
    if _CACHE and _CACHE[0] == key and _CACHE[1] is params.get("nccl"):
        return _CACHE[2]
    parsed = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("group"):
            raise CheckError("nccl: expected items with group, source, log and tests, got %r" % (entry,))
        item = {"group": entry["group"], "source": entry.get("source") or "a log", "entry": entry, "log": None, "tests": None,
                "log_error": None, "tests_error": None}
        for kind, parser in (("log", parse_nccl_log), ("tests", parse_nccl_tests)):
            text = entry.get(kind)
            if text:
                try:
                    item[kind] = parser(text)
                except NcclOutputError as exc:
                    item[kind + "_error"] = str(exc)
        parsed.append(item)
    _CACHE[:] = [key, params.get("nccl"), parsed]
    return parsed


def _ports(nodes, hosts):
    """``{(host, device, port): state}`` of the group's hosts from their facts."""
    ports = {}
    for host in hosts or []:
        rdma = ((nodes or {}).get(host) or {}).get("rdma") or {}
        for port in rdma.get("ports") or []:
            if isinstance(port, dict) and port.get("device"):
                ports[(host, port["device"], int(port.get("port") or 1))] = port.get("state") or "unknown"
    return ports


def hca_problems(value, nodes, hosts):
    """What is wrong with an ``NCCL_IB_HCA`` value on the group's hosts: a named port DOWN, a named device absent."""
    parsed = ib_hca_entries(value)
    ports = _ports(nodes, hosts)
    if parsed["exclude"] or not ports:
        return []
    problems = []
    for entry in parsed["entries"]:
        matches = [(key, state) for key, state in ports.items()
                   if (key[1] == entry["device"] if entry["exact"] else key[1].startswith(entry["device"]))
                   and (entry["port"] is None or key[2] == entry["port"])]
        name = entry["device"] + (":%d" % entry["port"] if entry["port"] is not None else "")
        if not matches:
            problems.append("NCCL_IB_HCA names %s, which no host of the group has (%s)" % (name, ", ".join(sorted(hosts or []))))
            continue
        down = sorted("%s/%d is %s on %s" % (key[1], key[2], state, key[0]) for key, state in matches if state != "ACTIVE")
        if down and len(down) == len(matches):
            problems.append("NCCL_IB_HCA names %s, and %s" % (name, "; ".join(down)))
    return problems


def _memlock_problems(nodes, hosts):
    problems = []
    for host in hosts or []:
        limits = ((nodes or {}).get(host) or {}).get("rdma_memlock") or {}
        probe = limits.get("probe") or {}
        memlock = probe.get("memlock") if probe.get("ran") else None
        if not memlock:
            continue
        try:
            soft = parse_rlimit_value(memlock.get("soft"))
        except RlimitError:
            continue
        if soft != RLIM_INFINITY:
            problems.append("a new container on %s gets Max locked memory %s (rdma_memlock of node_remediation)" % (host, memlock.get("soft")))
    return problems


def fallback_reasons(item, nodes):
    """Which RDMA precondition failed, from the log, the group's settings and the nodes' facts."""
    log, entry = item["log"], item["entry"]
    hosts = entry.get("hosts") or []
    reasons = []
    if str(log["env"].get("NCCL_IB_DISABLE", "")).strip() == "1":
        reasons.append("NCCL_IB_DISABLE is set to 1, which turns NCCL's IB transport off")
    if log["verbs_missing"]:
        reasons.append("NCCL could not open libibverbs in the job's container (the image lacks rdma-core's libibverbs)")
    hca = log["env"].get("NCCL_IB_HCA")
    if hca:
        reasons.extend(hca_problems(hca, nodes, hosts))
    if log["ib_no_device"] and not reasons:
        if entry.get("rdma_resource") is False or (entry.get("rdma_resource") is None and "rdma_resource" in entry):
            reasons.append("NCCL found no RDMA device (NET/IB : No device found) and the group's pods request no RDMA resource "
                           "(pod_proof_groups.%s.rdma_resource), so no device plugin hands them /dev/infiniband" % item["group"])
        else:
            reasons.append("NCCL found no RDMA device (NET/IB : No device found): the job's pods did not request the group's RDMA resource%s, "
                           "or the device plugin gave them none (see k8s_rdma's resource_missing)" % (
                               " (%s)" % entry["rdma_resource"] if entry.get("rdma_resource") else ""))
    reasons.extend(_memlock_problems(nodes, hosts))
    return reasons


@check(ROLE, "nccl_socket_fallback", params=PARAMS)
def nccl_socket_fallback(facts, params, found):
    """NCCL carried inter-node traffic over sockets (NET/Socket, Using network Socket): the job runs without RDMA; says which precondition failed."""
    for item in evidence(params):
        log = item["log"]
        if log is None:
            continue
        sockets = log["transports"].get("net_socket", 0)
        if not sockets and log["network"] != "Socket":
            continue
        reasons = fallback_reasons(item, params.get("nodes"))
        what = ("%d channel(s) go over NET/Socket" % sockets) if sockets else "NCCL chose the Socket network (Using network Socket)"
        found.critical(item["group"], "NCCL fell back to TCP sockets in %s (group %s): %s%s. %s." % (
            item["source"], item["group"], what,
            (" via %s" % ", ".join(dict.fromkeys(i["name"] for i in log["socket_interfaces"]))) if log["socket_interfaces"] else "",
            ("The failed precondition: " + "; ".join(reasons)) if reasons else
            "None of the known preconditions (the RDMA resource, NCCL_IB_HCA, NCCL_IB_DISABLE, libibverbs, memlock) is visibly broken in "
            "the log or the facts; run the pod proof on the group's nodes"), "NET/IB", "NET/Socket")


@check(ROLE, "nccl_no_gpudirect", params=PARAMS)
def nccl_no_gpudirect(facts, params, found):
    """NCCL used IB but without GPUDirect RDMA (no /GDRDMA, GDR 0): data bounces through host memory."""
    for item in evidence(params):
        log = item["log"]
        if log is None or not log["transports"].get("net_ib") or log["gdrdma_channels"]:
            continue
        hosts = item["entry"].get("hosts") or []
        missing = []
        for host in hosts:
            gpudirect = (((params.get("nodes") or {}).get(host) or {}).get("rdma") or {}).get("gpudirect")
            if isinstance(gpudirect, dict) and not gpudirect.get("peermem_ready") and not gpudirect.get("dma_buf_ready"):
                missing.append("%s: %s" % (host, "; ".join(list(gpudirect.get("peermem_missing") or []) + list(gpudirect.get("dma_buf_missing") or []))))
        disabled = ", ".join(log["gdr"]["disabled"])
        found.warning(item["group"], "NCCL used IB (%s) without GPUDirect RDMA in %s (group %s): %d IB channel(s), none with /GDRDMA%s. %s" % (
            ", ".join(log["hcas_used"]) or "its HCAs", item["source"], item["group"], log["transports"]["net_ib"],
            (", GPU Direct RDMA disabled for %s" % disabled) if disabled else "",
            ("No peer memory: " + "; ".join(missing) + ".") if missing else
            "The nodes' facts show no missing GPUDirect part (or have none): check NCCL_NET_GDR_LEVEL and the GPU-HCA distance."),
            "GDRDMA", "no GDRDMA")


@check(ROLE, "nccl_log_not_read", params=PARAMS)
def nccl_log_not_read(facts, params, found):
    """A group's NCCL log or nccl-tests output could not be judged: not NCCL's text, or no channel line (never counted as a pass)."""
    for item in evidence(params):
        for kind in ("log", "tests"):
            if item[kind + "_error"]:
                found.not_checked(item["group"], "%s of group %s: %s" % (item["source"], item["group"], item[kind + "_error"]))
        if item["entry"].get("read_error"):
            found.not_checked(item["group"], "group %s: %s" % (item["group"], item["entry"]["read_error"]))
        log = item["log"]
        if log is not None and not log["channels"] and log["network"] is None:
            found.not_checked(item["group"], "%s of group %s names no channel and no network: NCCL's transport is not in it "
                                             "(was NCCL_DEBUG=INFO set, and did a communicator start?)" % (item["source"], item["group"]))


@check(ROLE, "nccl_busbw_below_floor", params=PARAMS)
def nccl_busbw_below_floor(facts, params, found):
    """nccl-tests' bus bandwidth at its largest size is below the group's floor (pod_proof_groups.<group>.nccl_min_busbw, GB/s)."""
    for item in evidence(params):
        tests = item["tests"]
        if tests is None:
            continue
        floor = item["entry"].get("min_busbw")
        largest = tests["largest"]
        if largest is None:
            found.not_checked(item["group"], "%s of group %s has no result row (%s)" % (
                item["source"], item["group"], "; ".join(n["reason"] for n in tests["notes"]) or "no table"))
            continue
        if tests["busbw_at_largest"] is None:
            # The reader leaves the figure unread where the rows are one rank's or one process's (a launch without MPI):
            # no fabric was measured, so no floor is judged.
            found.not_checked(item["group"], "%s of group %s gives no bus bandwidth at its largest size (%d bytes): %s" % (
                item["source"], item["group"], largest["size"], "; ".join(n["reason"] for n in tests["notes"])))
            continue
        failed = _results_failed(tests, largest)
        if failed:
            # A bandwidth above the floor from a run whose results were wrong is no pass.
            found.not_checked(item["group"], "%s of group %s failed nccl-tests' check of its results (%s): the bus bandwidth of a run "
                                             "that corrupted data is not judged" % (item["source"], item["group"], failed))
            continue
        if largest["size"] < MIN_JUDGED_SIZE:
            found.not_checked(item["group"], "%s of group %s ends at %d bytes, too small a size to judge bus bandwidth (at least %d)" % (
                item["source"], item["group"], largest["size"], MIN_JUDGED_SIZE))
            continue
        if floor is None:
            found.not_checked(item["group"], "%s of group %s reached %s GB/s bus bandwidth at %d bytes; no floor is set "
                                             "(pod_proof_groups.%s.nccl_min_busbw)" % (item["source"], item["group"], tests["busbw_at_largest"],
                                                                                       largest["size"], item["group"]))
            continue
        if tests["busbw_at_largest"] < float(floor):
            found.critical(item["group"], "%s of group %s reached %s GB/s bus bandwidth at its largest size (%d bytes, %s), below the "
                                          "group's floor of %s GB/s." % (item["source"], item["group"], tests["busbw_at_largest"],
                                                                         largest["size"], tests["test"] or "nccl-tests", floor),
                           float(floor), tests["busbw_at_largest"])


def views(params):
    """What the status shows of each group's NCCL evidence."""
    out = []
    for item in evidence(params):
        log, tests = item["log"] or {}, item["tests"] or {}
        out.append({"group": item["group"], "source": item["source"], "version": log.get("version"), "network": log.get("network"),
                    "transports": log.get("transports"), "hcas_used": log.get("hcas_used"), "gdrdma_channels": log.get("gdrdma_channels"),
                    "nccl_ib_hca": (log.get("env") or {}).get("NCCL_IB_HCA"), "busbw_at_largest": tests.get("busbw_at_largest"),
                    "largest_size": (tests.get("largest") or {}).get("size"), "avg_busbw": tests.get("avg_busbw"),
                    "min_busbw": item["entry"].get("min_busbw"), "hosts": list(item["entry"].get("hosts") or [])})
    return out


def _results_failed(tests, largest):
    """Why nccl-tests' own check of the results failed (its "Out of bounds values" line, or the largest row's "#wrong" cells),
    or None."""
    bounds = tests.get("out_of_bounds")
    if bounds and not bounds.get("ok"):
        return "Out of bounds values: %s" % bounds.get("count")
    wrong = [str(group["wrong"]) for group in (largest.get("out_of_place"), largest.get("in_place"))
             if isinstance(group, dict) and wrong_elements(group.get("wrong"))]
    return ("#wrong %s at %d bytes" % (", ".join(wrong), largest["size"])) if wrong else None
