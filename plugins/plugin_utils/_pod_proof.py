# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pod proof: RDMA between two pods of a group, as the workload gets it.

Pure functions that the ``pod_proof`` role's filters and checks call:

* ``plan()``: from the inventory hosts' facts (their ``ansible_facts.rdma`` as ``ib_inventory`` or a
  fact cache left them) and the group settings, the pairs of each group exactly as ``bandwidth_check``
  pairs them (``_bandwidth_plan.build_plan``: rounds, one test per host and step, so no HCA is in two
  tests at once), cut into batches of at most ``max_pairs`` tests that run at the same time;
* ``pod_manifest()``: the server or client pod of one test: pinned to its node, requesting the
  group's RDMA resource (and GPUs), non-root, ``IPC_LOCK`` only where allowed, labelled so that every
  pod of the proof (of this run, of one batch, of any earlier run) can be found again;
* ``pod_script()``: what the pod runs: print its effective ``RLIMIT_MEMLOCK``, user and capabilities,
  its pinning, then ``exec`` perftest; ``read_pod_log()`` reads that back;
* ``pod_state()``: what a Pod object says (pending and why, running, ready, ended and how);
* ``test_records()``: the records ``_bandwidth_plan.verdicts()`` judges, from the pods and their logs,
  so that a pod pair is judged by exactly the logic of a host pair.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from ansible_collections.rdma.node.plugins.plugin_utils import _bandwidth_plan, _gpu_memory
from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import plain_data
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.module_utils._perftest import PerftestError, build_argv, parse_size
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import average_for, parse_perftest

ROLE = "pod_proof"
# Every object the proof creates carries these labels: the component finds any run's leftovers, the
# run and the batch find this run's pods.
MANAGED_BY = ("app.kubernetes.io/managed-by", "rdma.node")
COMPONENT = ("app.kubernetes.io/component", "pod-proof")
RUN_LABEL = "rdma.node/pod-proof-run"
BATCH_LABEL = "rdma.node/pod-proof-batch"
SIDE_LABEL = "rdma.node/pod-proof-side"
TEST_LABEL = "rdma.node/pod-proof-test"
HOST_ANNOTATION = "rdma.node/inventory-host"
TEST_ANNOTATION = "rdma.node/pod-proof-test-id"
CONTAINER = "perftest"
# The lines the pod prints before perftest, and the one after which perftest's output starts.
MARK = "rdma-node-pod-proof:"
START_MARK = MARK + " exec"
CAP_IPC_LOCK = 14
CAP_SYS_RESOURCE = 24
CAPABILITY_NAMES = {
    0: "CHOWN", 1: "DAC_OVERRIDE", 2: "DAC_READ_SEARCH", 3: "FOWNER", 4: "FSETID", 5: "KILL", 6: "SETGID", 7: "SETUID",
    8: "SETPCAP", 9: "LINUX_IMMUTABLE", 10: "NET_BIND_SERVICE", 11: "NET_BROADCAST", 12: "NET_ADMIN", 13: "NET_RAW",
    14: "IPC_LOCK", 15: "IPC_OWNER", 16: "SYS_MODULE", 17: "SYS_RAWIO", 18: "SYS_CHROOT", 19: "SYS_PTRACE",
    20: "SYS_PACCT", 21: "SYS_ADMIN", 22: "SYS_BOOT", 23: "SYS_NICE", 24: "SYS_RESOURCE", 25: "SYS_TIME",
    26: "SYS_TTY_CONFIG", 27: "MKNOD", 28: "LEASE", 29: "AUDIT_WRITE", 30: "AUDIT_CONTROL", 31: "SETFCAP",
    32: "MAC_OVERRIDE", 33: "MAC_ADMIN", 34: "SYSLOG", 35: "WAKE_ALARM", 36: "BLOCK_SUSPEND", 37: "AUDIT_READ",
    38: "PERFMON", 39: "BPF", 40: "CHECKPOINT_RESTORE",
}
_NAME = re.compile(r"[^a-z0-9-]+")
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
_RESOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_LIMIT_LINE = re.compile(r"^Max locked memory\s+(?P<soft>\S+)\s+(?P<hard>\S+)\s*(?P<unit>\S*)\s*$")
_STATUS_LINE = re.compile(r"^(?P<key>Uid|Gid|CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):\s*(?P<value>.*?)\s*$")
_PIN_LINE = re.compile(r"^" + re.escape(MARK) + r" pinning (?P<how>numactl|taskset|none)(?: (?P<detail>.*))?$")
_CUDA_DEVICE = re.compile(r"CUDA device (?P<index>\d+): PCIe address is (?P<bus>[0-9A-Fa-f]+):(?P<slot>[0-9A-Fa-f]+)")
_PICKING = re.compile(r"Picking device No\. (?P<index>\d+)")
_WAITING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError",
            "RunContainerError", "CrashLoopBackOff")
GPU_RESOURCE = "nvidia.com/gpu"


class PodProofError(CheckError):
    """Settings the proof cannot use; the message names the variable, the group or the host."""


# ------------------------------------------------------------------------------------------ plan


def _setting(value, default):
    return default if value is None or value == "" else value


def _int(value, variable, minimum=0):
    if isinstance(value, bool) or not str(value).strip().lstrip("-").isdigit() or int(str(value)) < minimum:
        raise PodProofError("%s: expected a whole number of at least %d, got %r" % (variable, minimum, value))
    return int(str(value))


def group_settings(name, raw, defaults):
    """The settings of group ``name`` (its ``pod_proof_groups`` entry over the role's defaults), checked."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise PodProofError("pod_proof_groups.%s: expected a mapping of settings (rdma_resource, gpus, ...), got %r" % (name, raw))
    unknown = sorted(set(raw) - set(GROUP_KEYS))
    if unknown:
        raise PodProofError("pod_proof_groups.%s: unknown setting(s) %s; known: %s" % (name, ", ".join(unknown), ", ".join(GROUP_KEYS)))
    merged = {key: raw.get(key, defaults.get(key)) for key in GROUP_KEYS}
    resource = merged["rdma_resource"]
    if resource is not None and resource != "" and not (isinstance(resource, str) and _RESOURCE.match(resource)):
        raise PodProofError("pod_proof_groups.%s.rdma_resource: expected an extended resource such as rdma/rdma_v100, got %r" % (name, resource))
    merged["rdma_resource"] = resource or None
    merged["gpus"] = _int(_setting(merged["gpus"], 0), "pod_proof_groups.%s.gpus" % name)
    if merged["gpu_mode"] not in _gpu_memory.CHOICES:
        raise PodProofError("pod_proof_groups.%s.gpu_mode: expected one of %s, got %r" % (name, ", ".join(_gpu_memory.CHOICES), merged["gpu_mode"]))
    if merged["gpu_mode"] != "host" and merged["gpus"] < 1:
        raise PodProofError("pod_proof_groups.%s: gpu_mode %s needs at least one GPU per pod (gpus), got %d"
                            % (name, merged["gpu_mode"], merged["gpus"]))
    for key in ("efficiency_host", "efficiency_gpu"):
        _gpu_memory.efficiency_for("host", merged[key], merged[key], "pod_proof_groups.%s.%s" % (name, key))
    if merged["nccl_min_busbw"] is not None and merged["nccl_min_busbw"] != "":
        try:
            merged["nccl_min_busbw"] = float(merged["nccl_min_busbw"])
        except (TypeError, ValueError):
            raise PodProofError("pod_proof_groups.%s.nccl_min_busbw: expected GB/s as a number, got %r" % (name, merged["nccl_min_busbw"])) from None
    else:
        merged["nccl_min_busbw"] = None
    for key in ("nccl_log", "nccl_tests_output"):
        if merged[key] is not None and not (isinstance(merged[key], str) and merged[key].startswith("/")):
            raise PodProofError("pod_proof_groups.%s.%s: expected the absolute path of a saved file on the controller, got %r"
                                % (name, key, merged[key]))
    return merged


GROUP_KEYS = ("rdma_resource", "gpus", "gpu_mode", "efficiency_host", "efficiency_gpu", "nccl_min_busbw", "nccl_log",
              "nccl_tests_output")


def _hosts_facts(hostvars, host):
    values = hostvars.get(host) if isinstance(hostvars, Mapping) else None
    values = values if isinstance(values, Mapping) else {}
    facts = values.get("ansible_facts") if isinstance(values.get("ansible_facts"), Mapping) else {}
    return values, facts


def node_name(hostvars, host):
    """The Kubernetes node of an inventory host: its ``k8s_node_name``, else its inventory name."""
    values, _facts = _hosts_facts(hostvars, host)
    return str(values.get("k8s_node_name") or host)


def plan(hostvars, groups, hosts, options):
    """The whole proof: ``{groups, tests, batches, hosts, notes}``.

    ``hosts`` are the inventory hosts in scope, ``groups`` Ansible's group map, ``hostvars`` their
    variables (facts included). ``options``: ``groups`` (group -> settings), ``groups_text`` (more groups
    as YAML or JSON text, as an AWX survey gives them: a group there replaces the same group of
    ``groups``), ``defaults`` (the role's default settings), ``rounds``, ``max_pairs``, ``tool``,
    ``tcp_port``, ``run_pods`` (false: only the groups' NCCL evidence is judged, so no pair is planned and
    ``hostvars`` is not read; check mode plans and shows the pairs without running them).
    A host is paired within the first of its groups that has settings; a host without RDMA facts is
    left out with a note.
    """
    run_pods = bool(options.get("run_pods", True))
    settings_raw = options.get("groups") or {}
    if not isinstance(settings_raw, Mapping):
        raise PodProofError("pod_proof_groups: expected a mapping of inventory group to settings, got %r" % (settings_raw,))
    settings_raw = dict(settings_raw, **groups_from_text(options.get("groups_text")))
    defaults = options.get("defaults") or {}
    max_pairs = _int(options.get("max_pairs", 4), "pod_proof_max_pairs_in_flight", 1)
    tcp_port = _int(options.get("tcp_port", 18515), "pod_proof_tcp_port", 1)
    if tcp_port > 65535:
        raise PodProofError("pod_proof_tcp_port: expected a TCP port up to 65535, got %d" % tcp_port)
    settings = {}
    for name in settings_raw:
        if name not in (groups or {}):
            raise PodProofError("pod_proof_groups: %s is not a group of the inventory (groups: %s)" % (name, ", ".join(sorted(groups or {})) or "none"))
        settings[name] = group_settings(name, settings_raw[name], defaults)
    notes = []
    described = {}
    group_of = {}
    memory = {}
    order = [h for h in hosts or [] if isinstance(h, str)]
    for host in order:
        group = next((g for g in sorted(settings) if host in (groups.get(g) or [])), None)
        if group is None:
            continue
        group_of[host] = group
        if not run_pods:
            continue
        values, facts = _hosts_facts(hostvars, host)
        rdma = facts.get("rdma") if isinstance(facts.get("rdma"), Mapping) else None
        if rdma is None or not isinstance(rdma.get("ports"), list):
            notes.append({"hosts": [host], "group": group, "note": "%s has no RDMA facts (ansible_facts.rdma.ports): run rdma.node.ib_inventory "
                                                                   "first or read a fact cache; its pods were not planned." % host})
            continue
        setting = settings[group]
        selection = _bandwidth_plan.select_ports(
            rdma["ports"], link_layers=defaults.get("link_layers"), only=defaults.get("ports"), exclude=defaults.get("exclude_ports"),
            efficiency=setting["efficiency_host"], gid_index=defaults.get("gid_index"), gpu_mode=setting["gpu_mode"],
            efficiency_gpu=setting["efficiency_gpu"], rdma=rdma,
            variables={"efficiency": "pod_proof_groups.%s.efficiency_host" % group, "efficiency_gpu": "pod_proof_groups.%s.efficiency_gpu" % group,
                       "gpu_mode": "pod_proof_groups.%s.gpu_mode" % group})
        memory[host] = {port["name"]: {"mode": port["memory"], "reason": port["memory_reason"], "gpu": port["gpu"],
                                       "cuda_index": port["cuda_index"], "dmabuf": port["dmabuf"], "numa_node": port["numa_node"],
                                       "efficiency": port["efficiency"]} for port in selection["ports"]}
        described[host] = {"group": group, "address": node_name(hostvars, host), "ports": selection["ports"],
                           "efficiency": setting["efficiency_host"]}
    built = _bandwidth_plan.build_plan(described, order=order, tcp_port_base=tcp_port, rounds=options.get("rounds"),
                                       tool=options.get("tool") or "ib_write_bw", loopback=False, pairs=True)
    for note in built["notes"]:
        notes.append({"hosts": note["hosts"], "group": None, "note": note["note"].replace("loopback only, no pair test", "no pod pair to test")})
    tests, batches = [], []
    for step in built["steps"]:
        chunk = []
        for test in step["tests"]:
            test = dict(test, index=len(tests), step=step["step"],
                        server_node=node_name(hostvars, test["server"]), client_node=node_name(hostvars, test["client"]),
                        server_memory=memory[test["server"]][test["server_port"]["name"]],
                        client_memory=memory[test["client"]][test["client_port"]["name"]])
            tests.append(test)
            chunk.append(test["index"])
            if len(chunk) == max_pairs:
                batches.append({"batch": len(batches) + 1, "step": step["step"], "tests": chunk})
                chunk = []
        if chunk:
            batches.append({"batch": len(batches) + 1, "step": step["step"], "tests": chunk})
    return {
        "tool": built["tool"], "groups": built["groups"], "settings": settings, "hosts": order, "group_of": group_of,
        "nodes": {host: node_name(hostvars, host) for host in order}, "tests": tests, "batches": batches,
        "notes": notes, "bandwidth_plan": built, "max_pairs": max_pairs, "tcp_port": tcp_port,
        "run_pods": run_pods,
    }


def groups_from_text(text):
    """``pod_proof_groups_text``: the groups and their settings as YAML or JSON text (a survey's textarea), or {}."""
    if text is None or not str(text).strip():
        return {}
    import yaml  # on the controller only (plugin_utils), where Ansible brings PyYAML

    try:
        value = yaml.safe_load(str(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " at line %d, column %d" % (mark.line + 1, mark.column + 1) if mark is not None else ""
        raise PodProofError("pod_proof_groups_text: not YAML or JSON%s (%s); expected a mapping such as "
                            "{ib-a100: {rdma_resource: rdma/rdma_a100, gpus: 1}}" % (where, getattr(exc, "problem", None) or exc)) from None
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise PodProofError("pod_proof_groups_text: expected a mapping of inventory group to settings such as "
                            "{ib-a100: {rdma_resource: rdma/rdma_a100, gpus: 1}}, got %s" % type(value).__name__)
    return dict(value)


# ------------------------------------------------------------------------------------------ pods


def pod_name(run_id, test, side):
    """A DNS-1123 name of at most 63 characters: the run, the test's number and its side."""
    name = "rdma-pod-proof-%s-%d-%s" % (run_id, test["index"], side)
    return _NAME.sub("-", name.lower()).strip("-")[:63]


def pod_script(argv, numa_node=None):
    """The pod's shell command: its limits, identity and capabilities, the pinning, then ``exec`` perftest.

    Only shell built-ins read ``/proc`` (``case`` over ``read``), so an image with a plain ``sh`` and
    perftest is enough; ``numactl`` and ``taskset`` pin the test to the HCA's NUMA node only where the
    image has them, and the pod says which it used.
    """
    quoted = " ".join(shlex.quote(str(arg)) for arg in argv)
    lines = [
        "while read -r line; do case \"$line\" in 'Max locked memory'*) echo \"$line\";; esac; done < /proc/self/limits",
        "while read -r line; do case \"$line\" in Uid:*|Gid:*|CapEff:*|CapPrm:*|CapBnd:*|CapAmb:*|NoNewPrivs:*) echo \"$line\";; esac; "
        "done < /proc/self/status",
    ]
    run = "exec %s" % quoted
    if numa_node is None:
        lines.append("echo '%s pinning none the HCA has no NUMA node in the facts'" % MARK)
        lines.append("echo '%s %s'" % (START_MARK, quoted.replace("'", "")))
        lines.append(run)
        return "\n".join(lines)
    node = int(numa_node)
    lines += [
        "cpus=''; [ -r /sys/devices/system/node/node%d/cpulist ] && read -r cpus < /sys/devices/system/node/node%d/cpulist" % (node, node),
        "if command -v numactl >/dev/null 2>&1; then echo '%s pinning numactl --cpunodebind=%d --membind=%d'; "
        "echo '%s %s'; exec numactl --cpunodebind=%d --membind=%d %s; fi" % (MARK, node, node, START_MARK, quoted.replace("'", ""), node, node, quoted),
        "if [ -n \"$cpus\" ] && command -v taskset >/dev/null 2>&1; then echo \"%s pinning taskset -c $cpus\"; "
        "echo '%s %s'; exec taskset -c \"$cpus\" %s; fi" % (MARK, START_MARK, quoted.replace("'", ""), quoted),
        "echo '%s pinning none neither numactl nor taskset is in the image'" % MARK,
        "echo '%s %s'" % (START_MARK, quoted.replace("'", "")),
        run,
    ]
    return "\n".join(lines)


def perftest_argv(test, side, options, server_address=None):
    """The perftest command of one side of ``test`` (the client's ends with the server's address)."""
    port = test["server_port"] if side == "server" else test["client_port"]
    memory = test["server_memory"] if side == "server" else test["client_memory"]
    size = options.get("size") or "1M"
    try:
        argv = build_argv(options.get("tool") or "ib_write_bw", device=port["device"], ib_port=port["port"],
                          gid_index=port.get("gid_index"), size=parse_size(size) if not options.get("all_sizes") else None,
                          all_sizes=bool(options.get("all_sizes")), qps=options.get("qps"), iterations=options.get("iterations"),
                          report_gbits=True, extra_args=options.get("extra_args"), port=test["tcp_port"],
                          server=server_address if side == "client" else None, use_cuda=memory.get("cuda_index"),
                          use_cuda_dmabuf=bool(memory.get("dmabuf")))
    except PerftestError as exc:
        raise PodProofError("pod_proof: %s" % exc) from None
    return argv


def pod_manifest(test, side, options, run_id, batch, server_address=None):
    """The Pod of one side of ``test``: pinned, labelled, non-root, requesting the group's resources."""
    if side not in ("server", "client"):
        raise PodProofError("pod side: expected server or client, got %r" % (side,))
    if side == "client" and not server_address:
        raise PodProofError("the client pod of %s needs its server's address" % test["id"])
    group = (options.get("settings") or {}).get(test["group"]) or {}
    node = test["server_node"] if side == "server" else test["client_node"]
    host = test["server"] if side == "server" else test["client"]
    memory = test["server_memory"] if side == "server" else test["client_memory"]
    argv = perftest_argv(test, side, options, server_address)
    limits = {}
    if group.get("rdma_resource"):
        limits[group["rdma_resource"]] = 1
    if group.get("gpus"):
        limits[options.get("gpu_resource") or GPU_RESOURCE] = int(group["gpus"])
    capabilities = {"drop": ["ALL"]}
    if options.get("ipc_lock"):
        capabilities["add"] = ["IPC_LOCK"]
    env = [{"name": "CUDA_DEVICE_ORDER", "value": "PCI_BUS_ID"}] if memory["mode"] != "host" else []
    user = _int(options.get("run_as_user", 1000), "pod_proof_run_as_user", 1)
    container = {
        "name": CONTAINER, "image": options["image"], "imagePullPolicy": options.get("image_pull_policy") or "IfNotPresent",
        "command": ["/bin/sh", "-c", pod_script(argv, memory.get("numa_node") if options.get("pin_numa", True) else None)],
        "resources": {"limits": dict(limits), "requests": dict(limits)},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": capabilities, "runAsNonRoot": True},
    }
    if env:
        container["env"] = env
    if side == "server":
        # Ready once perftest listens on its TCP port: read from /proc/net/tcp{,6} with shell built-ins, never by
        # connecting (a perftest server takes one connection, which is its client's).
        hexport = "%04X" % test["tcp_port"]
        container["readinessProbe"] = {
            "exec": {"command": ["/bin/sh", "-c", "for f in /proc/net/tcp /proc/net/tcp6; do [ -r $f ] || continue; "
                                 "while read -r sl local rem st rest; do case \"$local:$st\" in *:%s:0A) exit 0;; esac; "
                                 "done < $f; done; exit 1" % hexport]},
            "periodSeconds": 1, "failureThreshold": 1, "successThreshold": 1,
        }
    labels = {MANAGED_BY[0]: MANAGED_BY[1], COMPONENT[0]: COMPONENT[1], RUN_LABEL: run_id, BATCH_LABEL: str(batch),
              SIDE_LABEL: side, TEST_LABEL: str(test["index"])}
    for key, value in labels.items():
        if not _LABEL_VALUE.match(value):
            raise PodProofError("label %s: %r is not a label value (letters, digits, '-', '_', '.', at most 63)" % (key, value))
    spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 5,
        "activeDeadlineSeconds": (_int(options.get("timeout", 120), "pod_proof_timeout", 1)
                                  + _int(options.get("start_timeout", 120), "pod_proof_start_timeout", 1)),
        "securityContext": {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
    }
    if options.get("pinning", "affinity") == "node_name":
        spec["nodeName"] = node
    else:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    for key in ("tolerations", "image_pull_secrets"):
        if options.get(key):
            spec["tolerations" if key == "tolerations" else "imagePullSecrets"] = list(options[key])
    if options.get("host_network"):
        spec["hostNetwork"] = True
    metadata = {"name": pod_name(run_id, test, side), "namespace": options.get("namespace") or "default", "labels": labels,
                "annotations": dict(options.get("annotations") or {}, **{HOST_ANNOTATION: host, TEST_ANNOTATION: test["id"]})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


# ------------------------------------------------------------------------------------------ reading pods back


def capabilities(hex_mask):
    """The capability names of a ``/proc`` mask such as ``0000000000004000``; None when it is not one."""
    try:
        mask = int(str(hex_mask).strip(), 16)
    except ValueError:
        return None
    return [CAPABILITY_NAMES.get(bit, "CAP_%d" % bit) for bit in range(64) if mask >> bit & 1]


def read_pod_log(text):
    """What a proof pod printed: ``{memlock, uid, caps, ipc_lock, pinning, gpu, perftest_text, preamble}``.

    ``memlock`` is ``{soft, hard}`` as ``/proc/self/limits`` prints them (``unlimited`` or bytes);
    ``caps`` the effective capabilities by name; ``ipc_lock``: whether CAP_IPC_LOCK is effective (then
    the kernel does not hold memory registration to RLIMIT_MEMLOCK); ``gpu``: the CUDA device perftest
    picked and its PCIe address, from perftest's own lines. Missing lines are None: a pod that never
    started printed nothing.
    """
    lines = str(text or "").replace("\r\n", "\n").split("\n")
    out = {"memlock": None, "uid": None, "gid": None, "caps": None, "cap_eff": None, "ipc_lock": None, "pinning": None,
           "pinning_detail": None, "gpu": None, "perftest_text": "", "preamble": False}
    rest = []
    started = False
    for line in lines:
        stripped = line.strip()
        if not started:
            limit = _LIMIT_LINE.match(stripped)
            status = _STATUS_LINE.match(stripped)
            pin = _PIN_LINE.match(stripped)
            if limit:
                out["memlock"] = {"soft": limit.group("soft"), "hard": limit.group("hard")}
                out["preamble"] = True
                continue
            if status:
                key, value = status.group("key"), status.group("value")
                if key in ("Uid", "Gid"):
                    out[key.lower()] = int(value.split()[0]) if value.split() and value.split()[0].isdigit() else None
                elif key == "CapEff":
                    out["cap_eff"] = value
                    out["caps"] = capabilities(value)
                    out["ipc_lock"] = None if out["caps"] is None else "IPC_LOCK" in out["caps"]
                out["preamble"] = True
                continue
            if pin:
                out["pinning"], out["pinning_detail"] = pin.group("how"), pin.group("detail")
                continue
            if stripped.startswith(START_MARK):
                started = True
                continue
        rest.append(line)
    out["perftest_text"] = "\n".join(rest) if started or not out["preamble"] else ""
    picked = _PICKING.search(out["perftest_text"])
    devices = {int(m.group("index")): "%s:%s" % (m.group("bus").lower(), m.group("slot").lower()) for m in _CUDA_DEVICE.finditer(out["perftest_text"])}
    if picked or devices:
        index = int(picked.group("index")) if picked else None
        out["gpu"] = {"cuda_index": index, "bus": devices.get(index) if index is not None else None}
    return out


def pod_state(pod):
    """What a Pod object says: ``{name, phase, node, ip, ready, started, ended, exit_code, reason, message, stuck}``.

    ``stuck`` is the reason the pod will not start by itself: unschedulable (the scheduler's message,
    such as ``0/5 nodes are available: 1 Insufficient rdma/rdma_v100``), rejected by the kubelet
    (``OutOfrdma/rdma_v100``), or a container that cannot start (``ImagePullBackOff``...).
    """
    pod = pod if isinstance(pod, Mapping) else {}
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    state = {"name": metadata.get("name"), "phase": status.get("phase") or "Pending", "node": spec.get("nodeName"),
             "ip": status.get("podIP"), "ready": False, "started": False, "ended": False, "exit_code": None,
             "reason": status.get("reason"), "message": status.get("message"), "stuck": None,
             "labels": metadata.get("labels") or {}, "annotations": metadata.get("annotations") or {},
             "created": metadata.get("creationTimestamp")}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            state["ready"] = True
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" and condition.get("reason") == "Unschedulable":
            state["stuck"] = "unschedulable: %s" % (condition.get("message") or "the scheduler found no node")
    for container in status.get("containerStatuses") or []:
        current = container.get("state") or {}
        if "running" in current:
            state["started"] = True
        if "terminated" in current:
            state["started"] = True
            state["ended"] = True
            state["exit_code"] = current["terminated"].get("exitCode")
            state["reason"] = state["reason"] or current["terminated"].get("reason")
        waiting = current.get("waiting") or {}
        if waiting.get("reason") in _WAITING:
            state["stuck"] = "%s: %s" % (waiting["reason"], waiting.get("message") or "no message")
    if state["phase"] in ("Succeeded", "Failed"):
        state["ended"] = True
        if state["phase"] == "Failed" and not state["started"] and state["stuck"] is None:
            # Rejected by the kubelet before any container ran (nodeName pinning past the scheduler).
            state["stuck"] = "rejected by the kubelet: %s%s" % (state["reason"] or "Failed", (" (%s)" % state["message"]) if state["message"] else "")
    return state


def batch_settled(pods, sides, want):
    """Whether every pod of ``sides`` in ``pods`` (Pod objects) reached ``want`` (``ready``: ready, ended or
    stuck; ``ended``: ended or stuck). The role polls until this is true or its deadline passes."""
    states = [pod_state(p) for p in pods or [] if (pod_state(p)["labels"].get(SIDE_LABEL) in sides)]
    if not states:
        return False
    if want == "ready":
        return all(s["ready"] or s["ended"] or s["stuck"] for s in states)
    return all(s["ended"] or s["stuck"] for s in states)


def _result_from(state, log):
    """A perftest module-shaped result of one pod (what ``_bandwidth_plan.verdicts`` reads), or {} when it never ran."""
    if state is None or not state["started"]:
        return {}
    text = read_pod_log(log)["perftest_text"]
    parsed = parse_perftest(text, "", rc=state["exit_code"] if state["ended"] else None,
                            timed_out=not state["ended"], role=state["labels"].get(SIDE_LABEL))
    failure = parsed.get("failure")
    if failure is not None:
        failure = dict(failure, side=state["labels"].get(SIDE_LABEL))
    return {"results": parsed["results"], "bw_average_gbps": average_for(parsed["results"]), "failure": failure,
            "rc": state["exit_code"], "msg": None, "cmd": None}


def test_records(plan_, pods, logs):
    """The pair records of every test (``{id, side, result, listening, stopped_by}``), for ``verdicts()``.

    ``pods``: the Pod objects as last read; ``logs``: pod name -> log text. A server that never became
    ready (never listened) is recorded as not listening, so its client is not blamed.
    """
    by_test = {}
    for pod in pods or []:
        state = pod_state(pod)
        index = state["labels"].get(TEST_LABEL)
        side = state["labels"].get(SIDE_LABEL)
        if index is None or side not in ("server", "client"):
            continue
        by_test.setdefault(str(index), {})[side] = state
    records = []
    for test in plan_["tests"]:
        sides = by_test.get(str(test["index"]), {})
        server, client = sides.get("server"), sides.get("client")
        if server is not None:
            records.append({"id": test["id"], "side": "server", "listening": bool(server["ready"] or (client and client["started"])),
                            "stopped_by": "self" if server["ended"] else "role",
                            "result": _result_from(server, (logs or {}).get(server["name"]))})
        if client is not None and client["started"]:
            records.append({"id": test["id"], "side": "client", "result": _result_from(client, (logs or {}).get(client["name"]))})
    return records


def as_list(value, variable):
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise PodProofError("%s: expected a list, got %r" % (variable, value))
    return list(value)


# ------------------------------------------------------------------------------------------ NCCL evidence


def nccl_files(plan_):
    """The saved files the groups' settings name: ``[{group, kind (log or tests), path}]``."""
    files = []
    for group in sorted(plan_["settings"]):
        for kind, key in (("log", "nccl_log"), ("tests", "nccl_tests_output")):
            path = plan_["settings"][group].get(key)
            if path:
                files.append({"group": group, "kind": kind, "path": path})
    return files


def nccl_evidence(saved, launched, plan_, groups):
    """Each group's NCCL evidence for the checks: ``[{group, source, log, tests, read_error, min_busbw, rdma_resource, hosts}]``.

    ``saved``: what was read of ``nccl_files()`` on the controller, ``{item, text, msg}`` each (``text``
    None, or empty for a file that could not be read, with ``msg`` saying why where it is known);
    ``launched``: the results of the groups' all-reduce launchers (each ``item`` a
    ``{key: group, value: argv}``)."""
    entries = []

    def base(group, source):
        setting = plan_["settings"].get(group) or {}
        hosts = [h for h in plan_["hosts"] if h in (groups or {}).get(group, [])]
        return {"group": group, "source": source, "log": None, "tests": None, "read_error": None,
                "min_busbw": setting.get("nccl_min_busbw"), "rdma_resource": setting.get("rdma_resource"), "hosts": hosts}

    by_source = {}
    for result in saved or []:
        item = result.get("item") if isinstance(result, Mapping) else None
        if not isinstance(item, Mapping) or not item.get("group"):
            continue
        key = (item["group"], item["path"])
        entry = by_source.get(key)
        if entry is None:
            entry = by_source[key] = base(item["group"], "the saved file %s" % item["path"])
            entries.append(entry)
        text = result.get("text")
        if not text:
            why = result.get("msg") or ("it is empty, or the controller may not read it" if text == "" else "no message")
            entry["read_error"] = "could not read %s: %s" % (item["path"], " ".join(str(why).split()))
        else:
            entry[item["kind"]] = str(text)
    for result in launched or []:
        item = result.get("item") if isinstance(result, Mapping) else None
        if not isinstance(item, Mapping) or result.get("skipped"):
            continue
        entry = base(item.get("key"), "the all-reduce step (%s)" % " ".join(str(a) for a in item.get("value") or []))
        output = "\n".join(part for part in (result.get("stdout"), result.get("stderr")) if part)
        if result.get("rc") not in (0, None) or not output:
            entry["read_error"] = "the all-reduce step exited with %s%s" % (result.get("rc"), (": " + (result.get("msg") or "")).rstrip(": "))
        entry["log"] = entry["tests"] = output or None
        entries.append(entry)
    return entries


# ------------------------------------------------------------------------------------------ by node

# What a node's part of the proof keeps: its side of each pod pair, what its pods printed, its groups' NCCL.
NODE_PAIR_KEYS = ("id", "group", "port", "peer_port", "memory", "rate_gbps", "expected_gbps", "measured_gbps", "verdict", "cause")
NODE_POD_KEYS = ("name", "side", "phase", "stuck", "uid", "memlock", "ipc_lock", "pinning", "gpu")
# What the proof reads of an inventory host: its node name and the facts its messages use.
HOST_KEYS = ("rdma", "rdma_memlock", "node_remediation_status")
# Of the RDMA facts, what the plan (ports, the GPU nearest each HCA, its NUMA node) and the checks'
# messages (GPUDirect readiness, locality) read. The rest (counters' time, PCIe paths, AER, optics, the
# kernel log...) is left where it is: copying it for every host of a large fleet was most of the
# NCCL play's time in the main job.
RDMA_KEYS = ("ports", "devices", "gpus", "locality", "gpudirect")
# Of each port, all but its counters, which neither the plan nor the checks read: about half of a port's
# values, each copied and templated again by every task that reads the views (the plan, the judgement).
PORT_COUNTER_KEYS = frozenset(("counters", "counters_ext", "counters_saturated", "counters_data_width_bits",
                               "hw_counters", "hw_counters_lifespan_ms"))


def _without_counters(port):
    return {key: item for key, item in port.items() if key not in PORT_COUNTER_KEYS} if isinstance(port, Mapping) else port


def host_view(host_vars):
    """One host's variables -> ``{k8s_node_name, ansible_facts: {rdma, rdma_memlock, node_remediation_status}}``
    (``rdma``: RDMA_KEYS, the ports without their counters), as plain data.

    Facts come from ``ansible_facts`` (live or a fact cache) or, injected, from the top level."""
    facts = host_vars.get("ansible_facts") if isinstance(host_vars.get("ansible_facts"), Mapping) else {}
    picked = {}
    for key in HOST_KEYS:
        # The top level only where ansible_facts lacks the key (facts injected as variables).
        value = facts[key] if key in facts else host_vars.get(key)
        if key == "rdma" and isinstance(value, Mapping):
            value = {name: value[name] for name in RDMA_KEYS if name in value}
            if isinstance(value.get("ports"), list):
                value["ports"] = [_without_counters(port) for port in value["ports"]]
        if value is not None:
            picked[key] = plain_data(value)
    view = {"ansible_facts": picked}
    if host_vars.get("k8s_node_name"):
        view["k8s_node_name"] = str(host_vars["k8s_node_name"])
    return view


def raw_host_variables(hostvars, host):
    """A host's variables from Ansible's ``hostvars`` read raw (``raw_get``: facts and inventory names are never
    templates), or from a plain mapping; None for a host outside the inventory (raw_get gives an undefined value,
    and hostvars raises for an implicit localhost)."""
    try:
        host_vars = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars.get(host)
    except Exception:  # hostvars raises for a host outside the inventory (an implicit localhost)
        return None
    return host_vars if isinstance(host_vars, Mapping) else None


class HostFacts(Mapping):
    """``{host: facts}`` of ``hosts`` as the checks read them (``nodes``: the ``ansible_facts`` of
    :func:`host_view`), each read from Ansible's ``hostvars`` only when a check asks for that host.

    The checks ask about the hosts of a group whose NCCL log shows a fault, or of a pod that failed; the
    facts of a thousand hosts are not copied through a template (and its finalising walk) for them. Read
    raw (``raw_get``): facts and inventory names are never templates."""

    def __init__(self, hostvars, hosts):
        if not hasattr(hostvars, "raw_get") and not isinstance(hostvars, Mapping):
            raise CheckError("the hosts' facts need Ansible's hostvars, got %s" % type(hostvars).__name__)
        self._hostvars = hostvars
        # A dict, not a list: a check asks about a host in constant time, a thousand hosts or four.
        self._hosts = dict.fromkeys(str(host) for host in hosts)
        self._read = {}

    def __getitem__(self, host):
        if host not in self._read:
            if host not in self._hosts:
                raise KeyError(host)
            host_vars = raw_host_variables(self._hostvars, host)
            # A host outside the inventory has no facts.
            self._read[host] = host_view(host_vars)["ansible_facts"] if host_vars is not None else {}
        return self._read[host]

    def __iter__(self):
        return iter(self._hosts)

    def __len__(self):
        return len(self._hosts)


NODE_NCCL_KEYS = ("group", "source", "network", "transports", "hcas_used", "gdrdma_channels", "busbw_at_largest", "min_busbw")


def node_views(status, findings=None):
    """``{host: {"pairs", "pods", "nccl", "memlock_capped"}}``: each inventory host's part of a pod proof's status
    (``pod_proof_status``): its side of each pod pair (``role``, ``peer``, and ``memory_mode``, its own side's
    memory), what its pods printed, the NCCL evidence of its groups, and whether one of its pods had its memlock
    capped (a ``pod_memlock_capped`` finding about it)."""
    status = status if isinstance(status, Mapping) else {}
    views = {}

    def slot(host):
        return views.setdefault(str(host), {"pairs": [], "pods": [], "nccl": [], "memlock_capped": False})
    for pair in status.get("pairs") or []:
        if not isinstance(pair, Mapping):
            continue
        for role, peer in (("server", "client"), ("client", "server")):
            if not pair.get(role):
                continue
            entry = {key: pair.get(key) for key in NODE_PAIR_KEYS}
            entry.update(role=role, peer=pair.get(peer), memory_mode=pair.get(role + "_memory") or "host")
            if role == "client":
                entry["port"], entry["peer_port"] = pair.get("peer_port"), pair.get("port")
            slot(pair[role])["pairs"].append(entry)
    for pod in status.get("pods") or []:
        if isinstance(pod, Mapping) and pod.get("host"):
            slot(pod["host"])["pods"].append({key: pod.get(key) for key in NODE_POD_KEYS})
    for nccl in status.get("nccl") or []:
        if isinstance(nccl, Mapping):
            for host in nccl.get("hosts") or []:
                slot(host)["nccl"].append({key: nccl.get(key) for key in NODE_NCCL_KEYS})
    for item in findings or []:
        if isinstance(item, Mapping) and item.get("check") == "pod_memlock_capped" and item.get("subject"):
            slot(item["subject"])["memlock_capped"] = True
    return views


def group_nccl_views(status):
    """``{group: entry}``: the NCCL evidence of each group of a pod proof's status (``pod_proof_status``), each
    entry as a node's part carries it (``NODE_NCCL_KEYS``). The main job keeps these in its nodes' facts
    (``pod_proof_nccl_groups``): the same small mapping on every node, which each node's metrics read for its
    own groups, instead of a part written per node."""
    status = status if isinstance(status, Mapping) else {}
    groups = {}
    for nccl in status.get("nccl") or []:
        if isinstance(nccl, Mapping) and nccl.get("group"):
            groups[str(nccl["group"])] = {key: nccl.get(key) for key in NODE_NCCL_KEYS}
    return groups
