# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""FAKE pods for the FAKE Kubernetes API server (server.py): a fake scheduler and a fake kubelet.
This is NOT Kubernetes.

``FakePods`` is an extension of ``FakeKubeApi``: it serves what the pod_proof role uses, the way the
real API server answers it (``/api/v1/namespaces/NS/pods``: create, list with ``labelSelector``; a
pod: get, delete; its ``log``), and plays the scheduler and the kubelet behind them:

* scheduling: a pod pinned by ``nodeName`` or by node affinity (``matchFields metadata.name``) goes to
  that node if the node exists and has the extended resources it requests (``status.allocatable``
  minus what the node's other running pods hold); otherwise it stays ``Pending`` with the scheduler's
  ``PodScheduled=False/Unschedulable`` condition and message (``0/5 nodes are available: 1
  Insufficient rdma/rdma_v100, 4 node(s) didn't match Pod's node affinity/selector. ...``), or, pinned
  by ``nodeName`` past the scheduler, the kubelet rejects it (``Failed``, ``OutOfrdma/rdma_v100``);
* an image the node "cannot pull" (``NodeScenario.image_pull_fails``) leaves the container waiting in
  ``ErrImagePull``;
* the container really runs: the pod's own command (``/bin/sh -c SCRIPT``) in a process of its own,
  as the pod's ``runAsUser`` without capabilities (``setpriv``; a non-root container keeps no
  effective capability, IPC_LOCK included) and with the node's memlock limit (``prlimit``; this
  machine cannot raise it above its hard limit of 8 MiB, so "unlimited" cannot be faked here), with
  the FAKE perftest (``tests/fake_tools/perftest``) first on PATH replaying the node's recorded real
  outputs. Its stdout and stderr are the pod's log; its exit is the container's;
* the pod is ``Ready`` when its ``readinessProbe`` command exits 0 (run the same way), ``Succeeded`` or
  ``Failed`` by its exit code, ``Failed``/``DeadlineExceeded`` past ``activeDeadlineSeconds``;
* a deleted pod's process group is killed.

Every pod's address is 127.0.0.1 (the processes share this machine's network), so the proof's tests
of one batch use distinct TCP ports, as the role plans them.
"""

from __future__ import annotations

import copy
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FAKE_PERFTEST = TESTS / "fake_tools" / "perftest" / "fake_perftest.py"
POD_PATH = "/api/v1/namespaces/"

POD_RESOURCES = [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "shortNames": ["po"],
     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]},
    {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
    {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get", "patch", "update"]},
]


@dataclass
class NodeScenario:
    """What the FAKE kubelet of one node does: the recorded perftest output each side replays, its exit
    status, whether it hangs, the node's memlock limit for containers (None: this machine's own), and
    whether the image cannot be pulled."""

    server_output: str = ""
    client_output: str = ""
    server_rc: int | None = None
    client_rc: int | None = None
    server_hang: bool = False
    client_hang: bool = False
    memlock: int | None = None
    image_pull_fails: bool = False
    extra_env: dict = field(default_factory=dict)


def _status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


def _pinned_node(spec):
    if spec.get("nodeName"):
        return spec["nodeName"], "nodeName"
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms") or []
    for term in terms:
        for field_ in term.get("matchFields") or []:
            if field_.get("key") == "metadata.name" and field_.get("operator") == "In" and field_.get("values"):
                return field_["values"][0], "affinity"
    return None, None


class FakePods:
    """Pods of the FAKE API server and the FAKE scheduler and kubelet behind them."""

    def __init__(self, workdir, scenarios=None, default=None, run_as=True):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        # The pods run as their runAsUser: the fake perftest must be on a path that user can reach
        # (a test's own temporary directory is root's alone).
        self.bin_dir = Path(tempfile.mkdtemp(prefix="rdma-node-fake-kubelet-"))
        os.chmod(self.bin_dir, 0o755)
        self.scenarios = dict(scenarios or {})
        self.default = default or NodeScenario()
        self.run_as = run_as
        self.api = None
        self.pods = {}
        self.processes = {}
        self.created = []
        self.deleted = []
        self._install_perftest()

    def _install_perftest(self):
        """The FAKE perftest under the tool names, runnable by any user: a copy of the script beside its
        wrappers, run by the system's Python (the tests' venv may sit in root's home)."""
        script = self.bin_dir / "fake_perftest.py"
        shutil.copy(FAKE_PERFTEST, script)
        os.chmod(script, 0o755)
        python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
        for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
            wrapper = self.bin_dir / tool
            wrapper.write_text("#!/bin/sh\n# FAKE %s (tests/fake_tools/perftest): replays recorded output\n"
                               "FAKE_PERFTEST_TOOL=%s exec %s %s \"$@\"\n" % (tool, tool, python, script))
            os.chmod(wrapper, 0o755)

    # -- wiring into FakeKubeApi ------------------------------------------------------------------

    def attach(self, api):
        self.api = api

    def handle(self, api, serve_next, method, path, query, content_type, body):
        """Middleware of the fake API: serve a pod request, pass the rest on, and list pods in discovery."""
        with api.lock:
            answer = self.serve(method, path, query, content_type, body)
        if answer is None:
            answer = serve_next(method, path, query, content_type, body)
        if answer is not None and method == "GET" and path == "/api/v1" and answer[0] == 200:
            answer = (200, dict(answer[1], resources=answer[1]["resources"] + copy.deepcopy(POD_RESOURCES)), answer[2])
        return answer

    def serve(self, method, path, query, content_type, body):
        """``(code, payload, headers)`` for a pod request, or None when the path is not a pod's."""
        if not path.startswith(POD_PATH):
            return None
        parts = path[len(POD_PATH):].split("/")
        if len(parts) < 2 or parts[1] != "pods":
            return None
        namespace = parts[0]
        if len(parts) == 2:
            if method == "GET":
                return self._list(namespace, query)
            if method == "POST":
                return self._create(namespace, body, query)
            return None
        name = parts[2]
        if len(parts) == 3:
            if method == "GET":
                return self._get(namespace, name)
            if method == "DELETE":
                return self._delete(namespace, name, query)
            return None
        if len(parts) == 4 and parts[3] == "log" and method == "GET":
            return self._log(namespace, name)
        return None

    # -- the API ------------------------------------------------------------------------------------

    def _list(self, namespace, query):
        from fake_k8s_api.server import _label_selector  # the server's own selector parser

        selected = _label_selector((query.get("labelSelector") or [""])[0])
        items = []
        for (ns, name) in sorted(self.pods):
            if ns == namespace and selected(self.pods[(ns, name)]):
                items.append(self._advance(ns, name))
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": str(self.api._version)}, "items": items}, {}

    def _create(self, namespace, body, query):
        if not isinstance(body, dict) or body.get("kind") != "Pod":
            return 400, _status(400, "BadRequest", "the fake serves only Pod objects here"), {}
        name = (body.get("metadata") or {}).get("name")
        if not name:
            return 422, _status(422, "Invalid", "Pod is invalid: metadata.name: Required value: name or generateName is required"), {}
        if (namespace, name) in self.pods:
            return 409, _status(409, "AlreadyExists", 'pods "%s" already exists' % name), {}
        pod = copy.deepcopy(body)
        pod["metadata"]["namespace"] = namespace
        pod = self.api._stamp(pod, "Pod", "v1")
        pod["metadata"]["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        pod["status"] = {"phase": "Pending", "conditions": []}
        if query.get("dryRun") == ["All"]:
            return 201, pod, {}
        self.pods[(namespace, name)] = pod
        self.created.append(name)
        self._schedule(namespace, name)
        return 201, copy.deepcopy(self.pods[(namespace, name)]), {}

    def _get(self, namespace, name):
        if (namespace, name) not in self.pods:
            return 404, _status(404, "NotFound", 'pods "%s" not found' % name), {}
        return 200, self._advance(namespace, name), {}

    def _delete(self, namespace, name, query):
        if (namespace, name) not in self.pods:
            return 404, _status(404, "NotFound", 'pods "%s" not found' % name), {}
        if query.get("dryRun") == ["All"]:
            return 200, self._advance(namespace, name), {}
        self._kill(namespace, name)
        pod = self.pods.pop((namespace, name))
        self.deleted.append(name)
        return 200, pod, {}

    def _log(self, namespace, name):
        if (namespace, name) not in self.pods:
            return 404, _status(404, "NotFound", 'pods "%s" not found' % name), {}
        entry = self.processes.get((namespace, name))
        if entry is None:
            pod = self._advance(namespace, name)
            return 400, _status(400, "BadRequest", 'container "perftest" in pod "%s" is waiting to start: %s' % (
                name, (pod["status"].get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {}).get("reason", "ContainerCreating"))), {}
        return 200, entry["log"].read_bytes(), {}

    # -- the scheduler and the kubelet ----------------------------------------------------------

    def _used(self, node, resource, skip):
        total = 0
        for key, pod in self.pods.items():
            if key == skip or pod["spec"].get("nodeName") != node or pod["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            for container in pod["spec"].get("containers") or []:
                total += int(((container.get("resources") or {}).get("requests") or {}).get(resource, 0))
        return total

    def _schedule(self, namespace, name):
        pod = self.pods[(namespace, name)]
        node_name, how = _pinned_node(pod["spec"])
        nodes = self.api.nodes
        short = []
        node = nodes.get(node_name)
        if node is not None:
            allocatable = node["status"].get("allocatable") or {}
            for container in pod["spec"].get("containers") or []:
                for resource, amount in (((container.get("resources") or {}).get("requests")) or {}).items():
                    if "/" not in resource:
                        continue
                    have = int(allocatable.get(resource, 0)) - self._used(node_name, resource, (namespace, name))
                    if have < int(amount):
                        short.append((resource, int(amount), self._used(node_name, resource, (namespace, name)), int(allocatable.get(resource, 0))))
        if how == "nodeName":
            if node is None or short:
                resource, amount, used, capacity = short[0] if short else ("node", 1, 0, 0)
                pod["spec"]["nodeName"] = node_name
                pod["status"].update({"phase": "Failed", "reason": "OutOf%s" % resource,
                                      "message": "Pod was rejected: Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d"
                                                 % (resource, amount, used, capacity)})
                return
        elif node is None or short:
            others = len(nodes) - (1 if node is not None else 0)
            reasons = []
            if short:
                reasons.append("1 Insufficient %s" % short[0][0])
            if others:
                reasons.append("%d node(s) didn't match Pod's node affinity/selector" % others)
            message = "0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling." % (
                len(nodes), ", ".join(reasons), len(nodes), len(nodes))
            pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                                            "lastTransitionTime": pod["metadata"]["creationTimestamp"]}]
            return
        pod["spec"]["nodeName"] = node_name
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        scenario = self.scenarios.get(node_name, self.default)
        if scenario.image_pull_fails:
            pod["status"]["containerStatuses"] = [{"name": "perftest", "ready": False, "restartCount": 0, "image": pod["spec"]["containers"][0]["image"],
                                                   "state": {"waiting": {"reason": "ErrImagePull", "message": 'failed to pull and unpack image "%s": '
                                                                         'failed to resolve reference: not found' % pod["spec"]["containers"][0]["image"]}}}]
            return
        self._start(namespace, name, scenario)

    def _argv(self, pod, command, scenario):
        context = pod["spec"].get("securityContext") or {}
        argv = list(command)
        if self.run_as and context.get("runAsUser") is not None:
            user = str(context["runAsUser"])
            group = str(context.get("runAsGroup", context["runAsUser"]))
            # A non-root container keeps no effective capability (an added IPC_LOCK lands in the bounding set only).
            argv = ["setpriv", "--reuid=" + user, "--regid=" + group, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"] + argv
        if scenario.memlock is not None:
            argv = ["prlimit", "--memlock=%d:%d" % (scenario.memlock, scenario.memlock)] + argv
        return argv

    def _env(self, pod, side, scenario):
        env = {"PATH": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % self.bin_dir, "HOME": "/tmp", "FAKE_PERFTEST_BIND": "127.0.0.1"}
        output = scenario.server_output if side == "server" else scenario.client_output
        if output:
            env["FAKE_PERFTEST_%s_OUTPUT" % side.upper()] = output
        rc = scenario.server_rc if side == "server" else scenario.client_rc
        if rc is not None:
            env["FAKE_PERFTEST_%s_RC" % side.upper()] = str(rc)
        if (scenario.server_hang if side == "server" else scenario.client_hang):
            env["FAKE_PERFTEST_%s_HANG" % side.upper()] = "1"
        for item in pod["spec"]["containers"][0].get("env") or []:
            env[item["name"]] = str(item.get("value", ""))
        env.update(scenario.extra_env)
        return env

    def _start(self, namespace, name, scenario):
        pod = self.pods[(namespace, name)]
        container = pod["spec"]["containers"][0]
        side = pod["metadata"].get("labels", {}).get("rdma.node/pod-proof-side", "server")
        log = self.workdir / ("%s.%s.log" % (namespace, name))
        env = self._env(pod, side, scenario)
        with open(log, "wb") as out:
            process = subprocess.Popen(self._argv(pod, container["command"], scenario), stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd="/tmp")
        self.processes[(namespace, name)] = {"process": process, "log": log, "started": time.monotonic(), "scenario": scenario, "env": env}
        pod["status"].update({"phase": "Running", "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
                              "startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        pod["status"]["containerStatuses"] = [{"name": container["name"], "ready": False, "restartCount": 0, "image": container["image"],
                                               "started": True, "state": {"running": {"startedAt": pod["status"]["startTime"]}}}]

    def _ready(self, pod, entry):
        probe = ((pod["spec"]["containers"][0].get("readinessProbe") or {}).get("exec") or {}).get("command")
        if not probe:
            return True
        done = subprocess.run(self._argv(pod, probe, entry["scenario"]), capture_output=True, env=entry["env"], timeout=10, check=False)
        return done.returncode == 0

    def _advance(self, namespace, name):
        """The pod as the kubelet would report it now."""
        pod = self.pods[(namespace, name)]
        entry = self.processes.get((namespace, name))
        if entry is not None and pod["status"].get("phase") == "Running":
            deadline = pod["spec"].get("activeDeadlineSeconds")
            code = entry["process"].poll()
            if code is None and deadline and time.monotonic() - entry["started"] > deadline:
                self._kill(namespace, name)
                pod["status"].update({"phase": "Failed", "reason": "DeadlineExceeded",
                                      "message": "Pod was active on the node longer than the specified deadline"})
                pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 137, "reason": "Error"}}
            elif code is not None:
                pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
                pod["status"]["containerStatuses"][0].update(ready=False, state={"terminated": {
                    "exitCode": code, "reason": "Completed" if code == 0 else "Error"}})
                pod["status"]["conditions"] = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"] + [
                    {"type": "Ready", "status": "False", "reason": "PodCompleted"}]
            else:
                ready = self._ready(pod, entry)
                pod["status"]["containerStatuses"][0]["ready"] = ready
                pod["status"]["conditions"] = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"] + [
                    {"type": "Ready", "status": "True" if ready else "False"}]
        return copy.deepcopy(pod)

    def _kill(self, namespace, name):
        entry = self.processes.get((namespace, name))
        if entry is None or entry["process"].poll() is not None:
            return
        try:
            os.killpg(entry["process"].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        entry["process"].wait(timeout=10)

    def stop(self):
        """Kill every process a pod still runs (the test's own, by their process group)."""
        for key in list(self.processes):
            self._kill(*key)
        shutil.rmtree(self.bin_dir, ignore_errors=True)

    def running(self):
        """Pods whose process still runs."""
        return sorted(name for (ns, name), entry in self.processes.items() if entry["process"].poll() is None)
