# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""FAKE node maintenance for the FAKE API server (server.py): what the k8s_quarantine tests need. NOT Kubernetes.

An extension of ``FakeKubeApi`` (``FakeKubeApi(..., extensions=[NodeMaintenance(...)])``) that serves,
the way the real API server answers them:

* ``PATCH /api/v1/nodes/NAME`` with an RFC 7386 merge patch (``application/merge-patch+json``) or an
  RFC 6902 JSON patch: labels, annotations, ``spec.unschedulable``, ``spec.taints``. A
  ``metadata.resourceVersion`` in the patch is a precondition (409 Conflict when stale); a status
  change sent to the node itself is dropped; ``dryRun=All`` answers without storing. As the node
  lifecycle controller does, the ``node.kubernetes.io/unschedulable:NoSchedule`` taint follows
  ``spec.unschedulable``.
* ConfigMaps (``/api/v1/namespaces/NS/configmaps``): get, create (409 AlreadyExists), merge patch with
  the resourceVersion precondition, ``dryRun=All``.
* Pods: list across namespaces or in one (``fieldSelector`` ``spec.nodeName=`` and ``metadata.namespace=``,
  ``labelSelector``), get, and the eviction subresource (``POST .../pods/NAME/eviction``): a
  PodDisruptionBudget whose ``status.disruptionsAllowed`` is 0 refuses with 429 TooManyRequests and
  the API server's message and cause; an allowed eviction deletes the pod; ``dryRun=All`` deletes
  nothing.
* The NVIDIA Network Operator's MOFED driver, as a model: ``kernel_upgrade(node)`` sets
  ``network.nvidia.com/operator.mofed.wait=true`` and creates the node's driver pod (a DaemonSet pod).
  After every change of a node or of the NicClusterPolicy the driver pods are scheduled again: a pod
  runs only where the policy's ``spec.tolerations`` tolerate every NoSchedule/NoExecute taint of the
  node, and its node's label then goes back to ``false``; elsewhere it stays Pending with the
  scheduler's ``FailedScheduling`` message, and the label stays ``true``. (The scheduler's own
  matching is written again here, independently of the collection's, so a bug there is not mirrored.)
* ``gate(method, path, parties)``: the first ``parties`` requests that match wait for each other
  before they are served, so that two concurrent runs really read the same state.

Discovery (``/api/v1``) gains pods, pods/eviction and configmaps. Every request is still recorded by
the server, and what this extension does not serve goes on to it.
"""

from __future__ import annotations

import copy
import threading

from fake_k8s_api.server import JSON_PATCH, MERGE_PATCH, PatchError, _label_selector, _resource, _status, json_patch, merge_patch

MOFED_WAIT = "network.nvidia.com/operator.mofed.wait"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
OPERATOR_NAMESPACE = "nvidia-network-operator"
BLOCKING = ("NoSchedule", "NoExecute")

CORE_RESOURCES = [
    _resource("pods", "Pod", True, ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"], ["po"], "pod"),
    _resource("pods/eviction", "Eviction", True, ["create"]),
    _resource("configmaps", "ConfigMap", True, ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
              ["cm"], "configmap"),
]


def _tolerated(taint, tolerations):
    """The scheduler's rule for one taint (written here on its own, see the module's docstring)."""
    for toleration in tolerations or []:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _field_selector(text):
    tests = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        field, sep, value = term.partition("=")
        if not sep or field not in ("spec.nodeName", "metadata.namespace", "metadata.name", "status.phase"):
            raise PatchError(400, "BadRequest", 'field label not supported: %s' % field)
        path = field.split(".")
        tests.append(lambda obj, p=path, v=value.lstrip("="): str(((obj.get(p[0]) or {}).get(p[1])) or "") == v)
    return lambda obj: all(test(obj) for test in tests)


class NodeMaintenance:
    """The state and routes of the extension; pass it to FakeKubeApi(extensions=[...])."""

    def __init__(self, pods=(), pdbs=(), configmaps=()):
        self.pods = {}  # (namespace, name) -> pod
        self.pdbs = [copy.deepcopy(p) for p in pdbs]
        self.configmaps = {}  # (namespace, name) -> configmap
        self._pending_pods = list(pods)
        self._pending_configmaps = list(configmaps)
        self._gates = []
        self.api = None

    # -- wiring ------------------------------------------------------------------------------------

    def attach(self, api):
        """Called by FakeKubeApi when it is made: the extension's objects get the server's resourceVersions."""
        self.api = api
        with api.lock:
            for pod in self._pending_pods:
                self._put_pod(pod)
            for configmap in self._pending_configmaps:
                self._put_configmap(configmap)

    def handle(self, api, serve_next, method, path, query, content_type, body):
        """Middleware: wait at a gate if one matches, serve what is ours, pass the rest on, and after any
        successful write reschedule the MOFED driver pods."""
        self._wait_at_gate(method, path)
        with api.lock:
            answer = self._route(method, path, query, content_type, body)
        if answer is None:
            answer = serve_next(method, path, query, content_type, body)
        if answer is not None and method == "GET" and path == "/api/v1" and answer[0] == 200:
            payload = dict(answer[1], resources=answer[1]["resources"] + copy.deepcopy(CORE_RESOURCES))
            answer = (200, payload, answer[2])
        if answer is not None and method != "GET" and answer[0] < 300 and query.get("dryRun") != ["All"]:
            with api.lock:
                self._schedule_driver_pods()
        return answer

    def gate(self, method, path, parties):
        """The next ``parties`` requests ``method path`` are held until all of them have arrived (or 20 s)."""
        with self.api.lock:
            self._gates.append({"method": method, "path": path, "barrier": threading.Barrier(parties, timeout=20), "left": parties})

    def _wait_at_gate(self, method, path):
        barrier = None
        with self.api.lock:
            for gate in self._gates:
                if gate["method"] == method and gate["path"] == path and gate["left"] > 0:
                    gate["left"] -= 1
                    barrier = gate["barrier"]
                    break
        if barrier is not None:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass  # the other party never came: serve anyway

    # -- state (the tests use these as controllers and operators would) -----------------------------

    def _put_pod(self, pod):
        pod = copy.deepcopy(pod)
        pod.setdefault("status", {}).setdefault("phase", "Running")
        meta = pod["metadata"]
        meta.setdefault("namespace", "default")
        self.pods[(meta["namespace"], meta["name"])] = self.api._stamp(pod, "Pod", "v1")

    def _put_configmap(self, configmap):
        meta = configmap["metadata"]
        self.configmaps[(meta["namespace"], meta["name"])] = self.api._stamp(configmap, "ConfigMap", "v1")

    def pod(self, namespace, name):
        with self.api.lock:
            found = self.pods.get((namespace, name))
            return copy.deepcopy(found) if found else None

    def configmap(self, namespace, name):
        with self.api.lock:
            found = self.configmaps.get((namespace, name))
            return copy.deepcopy(found) if found else None

    def pods_on(self, node):
        with self.api.lock:
            return sorted(("%s/%s" % key) for key, pod in self.pods.items() if (pod.get("spec") or {}).get("nodeName") == node)

    def change_node(self, name, change):
        """Apply ``change(node)`` to a stored node as another client would: a new resourceVersion."""
        with self.api.lock:
            node = copy.deepcopy(self.api.nodes[name])
            change(node)
            self._store_node(node)
            self._schedule_driver_pods()

    def kernel_upgrade(self, name):
        """The node rebooted into a new kernel: the operator sets mofed.wait=true and its driver pod must run again."""
        def upgrade(node):
            node["metadata"].setdefault("labels", {})[MOFED_WAIT] = "true"

        self.change_node(name, upgrade)
        with self.api.lock:
            pod = {"metadata": {"name": "mofed-ubuntu22.04-ds-%s" % name, "namespace": OPERATOR_NAMESPACE,
                                "labels": {"app": "mofed-ubuntu22.04"},
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "mofed-ubuntu22.04-ds"}]},
                   "spec": {"nodeName": name, "containers": [{"name": "mofed-container", "image": "nvcr.io/nvidia/mellanox/doca-driver"}]},
                   "status": {"phase": "Pending"}}
            self._put_pod(pod)
            self._schedule_driver_pods()

    # -- the MOFED driver model ------------------------------------------------------------------------

    def _node_taints(self, node):
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") in BLOCKING]
        return taints

    def _schedule_driver_pods(self):
        policy = next(iter(self.api.policies.values()), None)
        tolerations = ((policy or {}).get("spec") or {}).get("tolerations") or []
        for key, pod in list(self.pods.items()):
            if key[0] != OPERATOR_NAMESPACE or pod["status"].get("phase") != "Pending":
                continue
            name = pod["spec"]["nodeName"]
            node = self.api.nodes.get(name)
            if node is None:
                continue
            blocking = [t for t in self._node_taints(node) if not _tolerated(t, tolerations)]
            if blocking:
                shown = ", ".join("{%s: %s}" % (t["key"], t.get("value") or "") if t.get("value") else "{%s: }" % t["key"] for t in blocking)
                message = ("0/%d nodes are available: 1 node(s) had untolerated taint %s. preemption: 0/%d nodes are available: "
                           "1 Preemption is not helpful for scheduling." % (len(self.api.nodes), shown, len(self.api.nodes)))
                if pod["status"].get("conditions", [{}])[0].get("message") != message:
                    pod = copy.deepcopy(pod)
                    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
                    self.pods[key] = self.api._stamp(pod, "Pod", "v1")
                continue
            pod = copy.deepcopy(pod)
            pod["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
            self.pods[key] = self.api._stamp(pod, "Pod", "v1")
            if (node["metadata"].get("labels") or {}).get(MOFED_WAIT) == "true":
                node = copy.deepcopy(node)
                node["metadata"]["labels"][MOFED_WAIT] = "false"
                self._store_node(node)

    # -- nodes ---------------------------------------------------------------------------------------------

    def _store_node(self, node):
        """Store a node as the node lifecycle controller leaves it: the unschedulable taint follows the cordon."""
        spec = node.setdefault("spec", {})
        taints = [t for t in spec.get("taints") or [] if t.get("key") != UNSCHEDULABLE]
        if spec.get("unschedulable"):
            existing = next((t for t in spec.get("taints") or [] if t.get("key") == UNSCHEDULABLE), None)
            taints.append(existing or {"key": UNSCHEDULABLE, "effect": "NoSchedule", "timeAdded": "2026-03-02T08:00:00Z"})
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
        self.api.nodes[node["metadata"]["name"]] = self.api._stamp(node, "Node", "v1")

    def _patch_node(self, name, content_type, body, dry_run):
        current = self.api.nodes.get(name)
        if current is None:
            return 404, _status(404, "NotFound", 'nodes "%s" not found' % name), {}
        patched = self._patched(current, content_type, body, "nodes", name)
        patched["status"] = copy.deepcopy(current.get("status"))  # the node itself: status changes are dropped
        if dry_run:
            return 200, patched, {}
        if patched != current:
            self._store_node(patched)
        return 200, copy.deepcopy(self.api.nodes[name]), {}

    def _patched(self, current, content_type, body, resource, name):
        if content_type == MERGE_PATCH:
            if not isinstance(body, dict):
                raise PatchError(400, "BadRequest", "a merge patch must be a JSON object")
            wanted = (body.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                raise PatchError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; please '
                                                  "apply your changes to the latest version and try again" % (resource, name))
            patched = merge_patch(current, body)
        elif content_type == JSON_PATCH:
            patched = json_patch(current, body)
        else:
            raise PatchError(415, "UnsupportedMediaType", "the fake serves %s patches only as %s or %s" % (resource, MERGE_PATCH, JSON_PATCH))
        patched["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return patched

    # -- routing ---------------------------------------------------------------------------------------------

    def _route(self, method, path, query, content_type, body):
        parts = path.strip("/").split("/")
        dry_run = query.get("dryRun") == ["All"]
        try:
            if method == "PATCH" and len(parts) == 4 and parts[:3] == ["api", "v1", "nodes"]:
                return self._patch_node(parts[3], content_type, body, dry_run)
            if method == "GET" and path == "/api/v1/pods":
                return self._list_pods(None, query)
            if len(parts) >= 5 and parts[:3] == ["api", "v1", "namespaces"]:
                namespace, kind, rest = parts[3], parts[4], parts[5:]
                if kind == "pods":
                    return self._pods(method, namespace, rest, query, body, dry_run)
                if kind == "configmaps":
                    return self._configmaps(method, namespace, rest, content_type, body, dry_run)
        except PatchError as exc:
            return exc.code, _status(exc.code, exc.reason, exc.message), {}
        return None

    def _list_pods(self, namespace, query):
        by_field = _field_selector((query.get("fieldSelector") or [""])[0])
        by_label = _label_selector((query.get("labelSelector") or [""])[0])
        items = [copy.deepcopy(p) for k, p in sorted(self.pods.items())
                 if (namespace is None or k[0] == namespace) and by_field(p) and by_label(p)]
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": str(self.api._version)}, "items": items}, {}

    def _pods(self, method, namespace, rest, query, body, dry_run):
        if method == "GET" and not rest:
            return self._list_pods(namespace, query)
        if method == "GET" and len(rest) == 1:
            pod = self.pods.get((namespace, rest[0]))
            if pod is None:
                return 404, _status(404, "NotFound", 'pods "%s" not found' % rest[0]), {}
            return 200, copy.deepcopy(pod), {}
        if method == "POST" and len(rest) == 2 and rest[1] == "eviction":
            return self._evict(namespace, rest[0], body, dry_run)
        return None

    def _evict(self, namespace, name, body, dry_run):
        pod = self.pods.get((namespace, name))
        if pod is None:
            return 404, _status(404, "NotFound", 'pods "%s" not found' % name), {}
        if not isinstance(body, dict) or body.get("kind") != "Eviction":
            raise PatchError(400, "BadRequest", "expected an Eviction object")
        labels = pod["metadata"].get("labels") or {}
        budgets = [b for b in self.pdbs if b["metadata"].get("namespace", "default") == namespace
                   and all(labels.get(k) == v for k, v in ((b.get("spec") or {}).get("selector") or {}).get("matchLabels", {}).items())]
        if len(budgets) > 1:
            raise PatchError(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
        if budgets and budgets[0]["status"].get("disruptionsAllowed", 0) <= 0:
            budget = budgets[0]
            status = _status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
            status["details"] = {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget %s needs %d healthy pods and has %d currently" % (
                budget["metadata"]["name"], budget["status"].get("desiredHealthy", 1), budget["status"].get("currentHealthy", 1))}]}
            return 429, status, {}
        if not dry_run:
            if budgets:
                budgets[0]["status"]["disruptionsAllowed"] -= 1
            del self.pods[(namespace, name)]
        return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, {}

    def _configmaps(self, method, namespace, rest, content_type, body, dry_run):
        if method == "GET" and len(rest) == 1:
            found = self.configmaps.get((namespace, rest[0]))
            if found is None:
                return 404, _status(404, "NotFound", 'configmaps "%s" not found' % rest[0]), {}
            return 200, copy.deepcopy(found), {}
        if method == "POST" and not rest:
            if not isinstance(body, dict) or not (body.get("metadata") or {}).get("name"):
                raise PatchError(400, "BadRequest", "a ConfigMap needs metadata.name")
            name = body["metadata"]["name"]
            if (namespace, name) in self.configmaps:
                raise PatchError(409, "AlreadyExists", 'configmaps "%s" already exists' % name)
            created = copy.deepcopy(body)
            created["metadata"]["namespace"] = namespace
            if dry_run:
                return 201, created, {}
            self._put_configmap(created)
            return 201, copy.deepcopy(self.configmaps[(namespace, name)]), {}
        if method == "PATCH" and len(rest) == 1:
            current = self.configmaps.get((namespace, rest[0]))
            if current is None:
                return 404, _status(404, "NotFound", 'configmaps "%s" not found' % rest[0]), {}
            patched = self._patched(current, content_type, body, "configmaps", rest[0])
            if dry_run or patched == current:
                return 200, patched, {}
            self.configmaps[(namespace, rest[0])] = self.api._stamp(patched, "ConfigMap", "v1")
            return 200, copy.deepcopy(self.configmaps[(namespace, rest[0])]), {}
        return None
