# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What containerd and its containers actually run with, read on the node.

Pure parsers over the texts the node has (``/proc/<pid>/limits``, ``systemctl show``, ``ctr
namespaces ls``, ``ctr tasks ls``, ``ctr containers info``) and one gatherer, :func:`gather`, that
runs the few commands through a ``run(argv)`` callable (the module passes ``module.run_command``) and
returns the facts of ``rdma.node.container_limits``. Nothing here judges: the checks of
``plugins/plugin_utils/_checks/memlock.py`` compare these facts with what the role wrote.

Every value of a limit is kept as ``/proc`` prints it (``"8388608"``, ``"unlimited"``), soft and
hard, so the facts show what the kernel says and the checks parse them with ``_rlimits``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from ansible_collections.rdma.node.plugins.module_utils._files import FileReadError, read_bytes, read_lenient
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._numbers import parse_uint
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RlimitError, parse_rlimit_value
from ansible_collections.rdma.node.plugins.module_utils._subsets import CONTAINER_LIMITS, declare
from ansible_collections.rdma.node.plugins.module_utils._systemd_dropin import parse_systemctl_show

# /proc/<pid>/limits names the limits in words; the facts use the rlimit's short name.
# The memlock facts as a subset a role gathers (node_health): read-only, containers' namespaces not
# listed (a readiness run asks what containerd and a new container get, not every running one).
declare("memlock", CONTAINER_LIMITS, fills=("rdma_memlock",),
        inputs={"service": "containerd_service", "address": "containerd_address", "expected_memlock": "memlock_wanted",
                "probe_spec": "memlock_probe_spec", "probe_image": "memlock_probe_image"},
        fixed={"namespaces": []}, base=True)

LIMIT_NAMES = {"Max locked memory": "memlock", "Max open files": "nofile"}
# A limits line: the name, at least two spaces, then soft and hard (the unit column may be empty).
_LIMIT_LINE = lazy_compile(r"^(?P<name>\S.*?)\s{2,}(?P<soft>\S+)\s+(?P<hard>\S+)")
# `ctr tasks ls`: TASK PID STATUS.
_TASK_LINE = lazy_compile(r"^(?P<id>\S+)\s+(?P<pid>[0-9]+)\s+(?P<status>[A-Z]+)\s*$")
# The systemd properties read with MainPID: what systemd has loaded for the unit.
SYSTEMD_LIMITS = ("LimitMEMLOCK", "LimitMEMLOCKSoft", "LimitNOFILE", "LimitNOFILESoft")
# CRI labels of a container, and the names the facts give them.
CRI_LABELS = {
    "io.kubernetes.pod.name": "pod",
    "io.kubernetes.pod.namespace": "pod_namespace",
    "io.kubernetes.container.name": "container",
    "io.cri-containerd.kind": "kind",
}
PROBE_NAMESPACE = "rdma-node-probe"
# Linux's PID_MAX_LIMIT (include/linux/threads.h): no process id is larger.
PID_MAX = 2 ** 22
_SMALL_FILE = 64 * 1024
_SPEC_MAX_BYTES = 64 * 1024 * 1024
# Seconds the probe's container gets after its timeout before it is killed.
PROBE_KILL_AFTER = 5


class ContainerLimitsError(ValueError):
    """An option or a file that cannot be used; the message is one sentence."""


def parse_limits(text):
    """``{"memlock": {"soft", "hard"} or None, "nofile": ...}`` from a ``/proc/<pid>/limits`` text."""
    found = dict.fromkeys(LIMIT_NAMES.values())
    for line in (text or "").splitlines():
        match = _LIMIT_LINE.match(line)
        if match and match.group("name") in LIMIT_NAMES:
            found[LIMIT_NAMES[match.group("name")]] = {"soft": match.group("soft"), "hard": match.group("hard")}
    return found


def parse_namespaces(text):
    """The namespace names of ``ctr namespaces ls --quiet``."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def parse_tasks(text):
    """``[{"id", "pid", "status"}]`` of ``ctr tasks ls`` (the header and odd lines are left out)."""
    tasks = []
    for line in (text or "").splitlines():
        match = _TASK_LINE.match(line.strip())
        if match:
            tasks.append({"id": match.group("id"), "pid": int(match.group("pid")), "status": match.group("status")})
    return tasks


def parse_container_labels(text):
    """The CRI labels of a ``ctr containers info`` JSON document, under the facts' names; None when it is not one."""
    try:
        info = json.loads(text or "")
    except (ValueError, RecursionError):
        return None
    if not isinstance(info, dict):
        return None
    labels = info.get("Labels") or {}
    if not isinstance(labels, dict):
        labels = {}
    return {name: labels.get(label) for label, name in CRI_LABELS.items()}


def probe_config(spec, root, command, container_id):
    """The probe's OCI config: the written ``spec`` with only its root, command and cgroup replaced."""
    if not isinstance(spec, dict) or not isinstance(spec.get("process"), dict):
        raise ContainerLimitsError("the spec has no process object, so no container can start from it")
    config = json.loads(json.dumps(spec))
    config["root"] = {"path": root, "readonly": True}
    config["process"]["args"] = list(command)
    config["process"]["terminal"] = False
    linux = config.get("linux") if isinstance(config.get("linux"), dict) else {}
    linux["cgroupsPath"] = "/" + container_id
    config["linux"] = linux
    return config


def probe_result(spec_path, **values):
    """One shape for the probe's facts, whatever happened: the keys a check reads are always there."""
    result = {"spec": spec_path, "source": "none", "root": None, "ran": False, "rc": None, "memlock": None,
              "nofile": None, "error": None, "not_run": None, "missing": False}
    result.update(values)
    return result


def same_memlock(memlock, number):
    """Whether soft and hard of a ``/proc`` memlock entry both equal ``number`` (bytes)."""
    try:
        return memlock is not None and all(parse_rlimit_value(memlock[key]) == number for key in ("soft", "hard"))
    except RlimitError:
        return False


def last_line(*texts):
    """The last non-empty line of the first text that has one (what a tool said last)."""
    for text in texts:
        lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return None


class Reader:
    """Runs the node's tools through ``run(argv) -> (rc, stdout, stderr)`` and reads ``/proc``."""

    def __init__(self, run, ctr, address, systemctl, timeout_bin=None, proc="/proc", pidfile=None):
        self.run = run
        self.pidfile = pidfile
        self.ctr_base = [ctr, "--address", address]
        self.address = address
        self.systemctl = systemctl
        self.timeout_bin = timeout_bin
        self.proc = proc

    def ctr(self, namespace, *args):
        argv = list(self.ctr_base)
        if namespace is not None:
            argv += ["--namespace", namespace]
        return self.run(argv + list(args))

    def process_limits(self, pid):
        """The limits of process ``pid``, or None when it is gone (or its file is not a readable regular file)."""
        data = read_lenient(os.path.join(self.proc, str(pid), "limits"), "a process's limits", _SMALL_FILE)
        return None if data is None else parse_limits(data.decode("utf-8", "replace"))

    def containerd_by_pidfile(self, unit):
        """containerd's process named by a pidfile (a containerd that systemd does not run); no systemd limits."""
        result = {"unit": unit, "pid": 0, "active_state": "inactive", "memlock": None, "nofile": None, "systemd": {}, "error": None}
        try:
            data = read_bytes(self.pidfile, "containerd's pidfile (a process id)", _SMALL_FILE)
        except FileReadError as exc:
            result["error"] = "its pidfile %s could not be read: %s" % (self.pidfile, exc)
            return result
        if data is None:
            result["error"] = "its pidfile %s could not be read: No such file or directory" % self.pidfile
            return result
        text = data.decode("utf-8", "replace").strip()
        pid = parse_uint(text, self.pidfile)
        if pid is None or not 0 < pid <= PID_MAX:
            result["error"] = "its pidfile %s holds %r, not a process id" % (self.pidfile, text[:40])
            return result
        limits = self.process_limits(pid)
        if limits is None:
            result["error"] = "process %d of the pidfile %s does not run" % (pid, self.pidfile)
            return result
        result.update(limits, pid=pid, active_state="active")
        return result

    def containerd(self, unit):
        """containerd's main process and its limits, and the limits systemd has loaded for the unit."""
        if self.pidfile:
            return self.containerd_by_pidfile(unit)
        argv = [self.systemctl, "show", unit, "--property", "MainPID,ActiveState," + ",".join(SYSTEMD_LIMITS)]
        result = {"unit": unit, "pid": 0, "active_state": None, "memlock": None, "nofile": None, "systemd": {}, "error": None}
        if not self.systemctl:
            result["error"] = "systemctl is not installed, so containerd's main process is unknown"
            return result
        rc, out, err = self.run(argv)
        if rc != 0:
            result["error"] = "systemctl show %s failed with rc %d: %s" % (unit, rc, last_line(err, out) or "no message")
            return result
        shown = parse_systemctl_show(out)
        result["active_state"] = shown.get("ActiveState")
        result["systemd"] = {key: shown[key] for key in SYSTEMD_LIMITS if key in shown}
        pid = parse_uint(shown.get("MainPID", "0"), "systemctl show %s (MainPID)" % unit)
        result["pid"] = pid if pid is not None and pid <= PID_MAX else 0
        if result["pid"] > 0:
            limits = self.process_limits(result["pid"])
            if limits is None:
                result["error"] = "/proc/%d/limits could not be read (the process ended meanwhile)" % result["pid"]
            else:
                result.update(limits)
        return result

    def containers(self, namespaces, label_unless):
        """Running containers of the wanted namespaces with their memlock and, unless it is ``label_unless``, their CRI labels."""
        rc, out, err = self.ctr(None, "namespaces", "ls", "--quiet")
        if rc != 0:
            return [], [], "ctr namespaces ls failed with rc %d: %s" % (rc, last_line(err, out) or "no message")
        present = parse_namespaces(out)
        listed = [name for name in namespaces if name in present]
        containers, errors = [], []
        for namespace in listed:
            rc, out, err = self.ctr(namespace, "tasks", "ls")
            if rc != 0:
                errors.append("ctr --namespace %s tasks ls failed with rc %d: %s" % (namespace, rc, last_line(err, out) or "no message"))
                continue
            for task in parse_tasks(out):
                if task["status"] != "RUNNING" or task["pid"] <= 0:
                    continue
                limits = self.process_limits(task["pid"])
                if limits is None:  # the container ended between the listing and the read
                    continue
                entry = {"namespace": namespace, "id": task["id"], "pid": task["pid"], "memlock": limits["memlock"], "labels": None}
                if label_unless is None or not same_memlock(limits["memlock"], label_unless):
                    rc, out, dummy = self.ctr(namespace, "containers", "info", "--", task["id"])
                    entry["labels"] = parse_container_labels(out) if rc == 0 else None
                containers.append(entry)
        return listed, containers, "; ".join(errors) or None

    def probe(self, spec_path, image, image_namespace, rootfs, command, timeout, namespace=PROBE_NAMESPACE):
        """Start one container from ``spec_path`` and read the limits it got; everything it made is removed."""
        probe = probe_result(spec_path)
        missing = []
        has_image = False
        if image:
            rc, out, err = self.ctr(image_namespace, "images", "ls", "--quiet")
            has_image = rc == 0 and image in parse_namespaces(out)
            if not has_image:
                missing.append("the image %s is not in containerd namespace %s" % (image, image_namespace))
        has_rootfs = bool(rootfs) and os.path.isdir(rootfs)
        if rootfs and not has_rootfs:
            missing.append("the directory %s does not exist" % rootfs)
        if not has_image and not has_rootfs:
            probe.update(not_run=" and ".join(missing) or "no image or root file system is configured", missing=bool(missing))
            return probe
        probe["source"], probe["root"] = ("image", image) if has_image else ("rootfs", rootfs)
        try:
            data = read_bytes(spec_path, "an OCI runtime spec (JSON)", _SPEC_MAX_BYTES)
            if data is None:
                raise FileReadError("No such file or directory")
            spec = json.loads(data)
        except (FileReadError, ValueError, RecursionError) as exc:
            probe["error"] = "cannot read the spec %s: %s" % (spec_path, exc)
            return probe
        container_id = "rdma-node-probe-%s-%d" % (time.strftime("%Y%m%dT%H%M%S", time.gmtime()), os.getpid())
        workdir = tempfile.mkdtemp(prefix="rdma-node-probe.")
        mounted = None
        try:
            root = rootfs
            if has_image:
                mounted = os.path.join(workdir, "rootfs")
                os.mkdir(mounted, 0o700)
                # Writable: runc creates the spec's mount points (/run, ...) that an image may lack;
                # the snapshot goes with the unmount.
                rc, out, err = self.ctr(image_namespace, "images", "mount", "--rw", "--", image, mounted)
                if rc != 0:
                    probe["error"] = "ctr images mount %s failed: %s" % (image, last_line(err, out) or "rc %d" % rc)
                    mounted = None
                    return probe
                root = mounted
            config_path = os.path.join(workdir, "config.json")
            try:
                config = probe_config(spec, root, command, container_id)
            except ContainerLimitsError as exc:
                probe["error"] = "%s: %s" % (spec_path, exc)
                return probe
            with open(config_path, "w") as handle:
                json.dump(config, handle, indent=2)
            argv = self.ctr_base + ["--namespace", namespace, "run", "--rm", "--config", config_path, "--", container_id]
            if self.timeout_bin:
                argv = [self.timeout_bin, "--kill-after=%d" % PROBE_KILL_AFTER, str(timeout)] + argv
            rc, out, err = self.run(argv)
            probe.update(ran=True, rc=rc, **parse_limits(out))
            if rc != 0:
                probe["error"] = last_line(err) or "rc %d, no message" % rc
                for args in (("tasks", "kill", "--signal", "SIGKILL", "--", container_id),
                             ("tasks", "delete", "--force", "--", container_id),
                             ("containers", "delete", "--", container_id)):
                    self.ctr(namespace, *args)
            return probe
        finally:
            if mounted:
                self.ctr(image_namespace, "images", "unmount", "--rm", "--", mounted)
            # Removes the probe's namespace only when it is empty (containerd refuses otherwise).
            self.ctr(None, "namespaces", "remove", "--", namespace)
            shutil.rmtree(workdir, ignore_errors=True)


def gather(reader, unit, namespaces=(), label_unless=None, probe=None, check_mode=False):
    """The facts of ``rdma.node.container_limits``: containerd, its running containers, and a probe container.

    ``probe`` is None (no probe container) or the keyword arguments of :meth:`Reader.probe`;
    ``label_unless`` is a memlock in bytes: running containers with exactly that limit (soft and hard)
    are listed without their labels, which cost one ``ctr containers info`` each.
    """
    facts = {"containerd": reader.containerd(unit), "socket": os.path.exists(reader.address),
             "namespaces": [], "containers": [], "containers_error": None, "probe": None}
    unreachable = None
    if reader.ctr_base[0] is None:
        unreachable = "ctr is not installed"
    elif not facts["socket"]:
        unreachable = "containerd's socket %s does not exist" % reader.address
    if unreachable:
        facts["containers_error"] = unreachable if namespaces else None
    elif namespaces:
        facts["namespaces"], facts["containers"], facts["containers_error"] = reader.containers(list(namespaces), label_unless)
    if probe is not None:
        if check_mode:
            facts["probe"] = probe_result(probe["spec_path"], not_run="check mode starts no container")
        elif unreachable:
            facts["probe"] = probe_result(probe["spec_path"], error=unreachable)
        else:
            facts["probe"] = reader.probe(**probe)
    return facts
