# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""FAKE Kubernetes API server for rdma.node's tests. This is NOT Kubernetes.

There is no Kubernetes API server to be had on the test machines, so the k8s_rdma tests point the
real ``kubernetes.core`` modules (and the real ``kubernetes`` Python client under them) at this
small HTTP server on 127.0.0.1. It implements only what the role uses, the way the real API server
answers it:

* discovery: ``/version``, ``/api``, ``/apis``, ``/api/v1`` and ``/apis/mellanox.com/v1alpha1``
  (the Network Operator's group can be left out, as on a cluster without the operator);
* ``nodes``: list (with ``labelSelector``), get, and the ``status`` subresource: GET, and PATCH with
  an RFC 6902 JSON patch (``application/json-patch+json``). As on the real server, a status PATCH
  changes only ``status`` (a change to ``spec`` is dropped) and the plain ``nodes/<name>`` endpoint
  is not served, so a client that patches the main resource instead of ``/status`` is noticed;
* ``nicclusterpolicies`` (cluster-scoped custom resource): get, and PATCH with an RFC 7386 merge
  patch (``application/merge-patch+json``). ``strategic-merge-patch`` is refused with 415 as for
  every custom resource. ``dryRun=All`` returns the patched object without storing it. A
  ``metadata.resourceVersion`` in the patch is a precondition (409 Conflict when stale). A CRD
  schema without ``spec.tolerations`` (an older operator) can be simulated: the field is pruned
  from what is stored and returned, with the server's ``unknown field`` warning header.

Extensions add what other tests need (``maintenance.NodeMaintenance``: node writes, ConfigMaps, pods,
evictions and the MOFED driver model of the quarantine tests; ``pods.FakePods``: pods created, run
and logged for the pod proof): each one sees a request first, serves it or passes it on, and can
change the answer, as middleware (``FakeKubeApi(extensions=[...])``).

Every request is recorded (method, path, query, content type, parsed body, response status), and
requests the fake does not implement are answered 404 and flagged ``unknown``, so tests can assert
exactly what a run sent and that nothing unexpected was asked.

The server runs in a daemon thread of the test process; ``stop()`` shuts it down and joins the
thread. Use it as a context manager.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MELLANOX_GROUP = "mellanox.com"
MELLANOX_VERSION = "v1alpha1"
POLICY_PATH = "/apis/%s/%s/nicclusterpolicies" % (MELLANOX_GROUP, MELLANOX_VERSION)

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


class PatchError(Exception):
    """A patch the real server would reject; carries the HTTP code and reason."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


# ------------------------------------------------------------------------------------ patching


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path):
    """RFC 6901: '/status/capacity/nvidia.com~1hostdev' -> ['status', 'capacity', 'nvidia.com/hostdev']."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(422, "Invalid", "JSON pointer %r does not start with /" % path)
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc, parts, path):
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchError(422, "Invalid", "doc is missing path: %s" % path)
    return node


def json_patch(doc, operations):
    """RFC 6902 add/remove/replace/test over a copy of ``doc`` (what the role can send)."""
    if not isinstance(operations, list):
        raise PatchError(400, "BadRequest", "a JSON patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for operation in operations:
        op = operation.get("op")
        path = operation.get("path", "")
        parts = _pointer(path)
        if not parts:
            raise PatchError(422, "Invalid", "the fake does not patch the document root")
        parent = _parent(doc, parts, path)
        key = parts[-1]
        if isinstance(parent, list):
            if op == "add" and key == "-":
                parent.append(copy.deepcopy(operation.get("value")))
                continue
            if not key.isdigit() or int(key) > len(parent) or (op != "add" and int(key) >= len(parent)):
                raise PatchError(422, "Invalid", "doc is missing path: %s" % path)
            index = int(key)
            if op == "add":
                parent.insert(index, copy.deepcopy(operation.get("value")))
            elif op == "remove":
                del parent[index]
            elif op == "replace":
                parent[index] = copy.deepcopy(operation.get("value"))
            elif op == "test":
                if parent[index] != operation.get("value"):
                    raise PatchError(422, "Invalid", "testing value %s failed" % path)
            else:
                raise PatchError(422, "Invalid", "the fake does not implement op %r" % op)
            continue
        if not isinstance(parent, dict):
            raise PatchError(422, "Invalid", "doc is missing path: %s" % path)
        if op == "add":
            parent[key] = copy.deepcopy(operation.get("value"))
        elif op in ("remove", "replace", "test"):
            if key not in parent:
                raise PatchError(422, "Invalid", "doc is missing path: %s: missing value" % path)
            if op == "remove":
                del parent[key]
            elif op == "replace":
                parent[key] = copy.deepcopy(operation.get("value"))
            elif parent[key] != operation.get("value"):
                raise PatchError(422, "Invalid", "testing value %s failed" % path)
        else:
            raise PatchError(422, "Invalid", "the fake does not implement op %r" % op)
    return doc


def _label_selector(text):
    """Equality-based selectors: ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k`` joined by commas."""
    tests = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            tests.append(lambda labels, k=key.strip(), v=value.strip(): labels.get(k) != v)
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            tests.append(lambda labels, k=key.strip(), v=value.strip(): labels.get(k) == v)
        elif term.startswith("!"):
            tests.append(lambda labels, k=term[1:].strip(): k not in labels)
        elif " in " in term or " notin " in term:
            raise PatchError(400, "BadRequest", "the fake does not implement set-based selectors: %s" % term)
        else:
            tests.append(lambda labels, k=term: k in labels)
    return lambda obj: all(test((obj.get("metadata") or {}).get("labels") or {}) for test in tests)


# ------------------------------------------------------------------------------------ discovery


def _api_versions(port):
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % port}],
    }


def _api_groups(with_mellanox):
    groups = []
    if with_mellanox:
        version = {"groupVersion": "%s/%s" % (MELLANOX_GROUP, MELLANOX_VERSION), "version": MELLANOX_VERSION}
        groups.append({"name": MELLANOX_GROUP, "versions": [version], "preferredVersion": version})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resource(name, kind, namespaced, verbs, short_names=None, singular=""):
    entry = {"name": name, "singularName": singular, "namespaced": namespaced, "kind": kind, "verbs": verbs}
    if short_names:
        entry["shortNames"] = short_names
    return entry


CORE_V1_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        _resource("nodes", "Node", False, ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                  ["no"], "node"),
        _resource("nodes/proxy", "NodeProxyOptions", False, ["create", "delete", "get", "patch", "update"]),
        _resource("nodes/status", "Node", False, ["get", "patch", "update"]),
    ],
}

MELLANOX_RESOURCES = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "%s/%s" % (MELLANOX_GROUP, MELLANOX_VERSION),
    "resources": [
        _resource("nicclusterpolicies", "NicClusterPolicy", False,
                  ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
                  ["ncp"], "nicclusterpolicy"),
        _resource("nicclusterpolicies/status", "NicClusterPolicy", False, ["get", "patch", "update"]),
    ],
}


def _status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


# ------------------------------------------------------------------------------------ server


class FakeKubeApi:
    """The FAKE API server's state, its request log and its HTTP listener on 127.0.0.1."""

    def __init__(self, nodes=(), policies=(), serve_mellanox=True, policy_supports_tolerations=True, extensions=()):
        self.lock = threading.Lock()
        # Extensions (such as maintenance.NodeMaintenance) see each request first, as middleware:
        # extension.handle(api, serve_next, method, path, query, content_type, body).
        self.extensions = list(extensions)
        self.requests = []
        self.serve_mellanox = serve_mellanox
        self.policy_supports_tolerations = policy_supports_tolerations
        self._version = 1000
        self.nodes = {}
        self.policies = {}
        for node in nodes:
            self.put_node(node)
        for policy in policies:
            self.put_policy(policy)
        for extension in self.extensions:
            extension.attach(self)
        self._httpd = None
        self._thread = None

    # -- state (also used by the tests, e.g. to play the operator flipping a label) -----------

    def _stamp(self, obj, kind, api_version):
        self._version += 1
        obj = copy.deepcopy(obj)
        obj["kind"] = kind
        obj["apiVersion"] = api_version
        metadata = obj.setdefault("metadata", {})
        metadata["resourceVersion"] = str(self._version)
        metadata.setdefault("uid", "fake-%s-%s" % (kind.lower(), metadata.get("name")))
        metadata.setdefault("creationTimestamp", "2025-03-01T00:00:00Z")
        return obj

    def put_node(self, node):
        with self.lock:
            self.nodes[node["metadata"]["name"]] = self._stamp(node, "Node", "v1")

    def put_policy(self, policy):
        with self.lock:
            stored = self._stamp(policy, "NicClusterPolicy", "%s/%s" % (MELLANOX_GROUP, MELLANOX_VERSION))
            stored["metadata"].setdefault("generation", 1)
            self.policies[stored["metadata"]["name"]] = self._prune(stored)[0]

    def set_node_label(self, name, key, value):
        """Change one label as a controller would (a new resourceVersion)."""
        with self.lock:
            node = copy.deepcopy(self.nodes[name])
            node["metadata"].setdefault("labels", {})[key] = value
            self.nodes[name] = self._stamp(node, "Node", "v1")

    def node(self, name):
        with self.lock:
            return copy.deepcopy(self.nodes[name])

    def policy(self, name):
        with self.lock:
            return copy.deepcopy(self.policies[name])

    def _prune(self, policy):
        """Structural-schema pruning of an older CRD that has no spec.tolerations."""
        if self.policy_supports_tolerations or "tolerations" not in (policy.get("spec") or {}):
            return policy, []
        policy = copy.deepcopy(policy)
        del policy["spec"]["tolerations"]
        return policy, ['unknown field "spec.tolerations"']

    # -- request log ------------------------------------------------------------------------------

    def recorded(self, method=None, path=None, unknown=None):
        with self.lock:
            entries = list(self.requests)
        return [
            r for r in entries
            if (method is None or r["method"] == method)
            and (path is None or r["path"] == path)
            and (unknown is None or r["unknown"] == unknown)
        ]

    def changing_requests(self):
        """Requests that would change the cluster: any write that is not a server-side dry run."""
        return [r for r in self.recorded() if r["method"] not in ("GET", "HEAD") and r["query"].get("dryRun") != ["All"]]

    def clear_log(self):
        with self.lock:
            del self.requests[:]

    # -- HTTP -------------------------------------------------------------------------------------

    @property
    def port(self):
        return self._httpd.server_address[1]

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        api = self

        class Handler(_Handler):
            fake = api

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-k8s-api", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=10)
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def kubeconfig(self):
        """A kubeconfig (as text) pointing at this fake without authentication."""
        return (
            "apiVersion: v1\nkind: Config\n"
            "clusters:\n- name: fake-k8s-api\n  cluster:\n    server: %s\n"
            "users:\n- name: fake-user\n  user: {}\n"
            "contexts:\n- name: fake\n  context:\n    cluster: fake-k8s-api\n    user: fake-user\n"
            "current-context: fake\n" % self.url
        )

    # -- routing ----------------------------------------------------------------------------------

    def handle(self, method, path, query, content_type, body):
        """Return ``(code, payload, headers)`` for one request; ``payload`` is JSON-able, None when not served."""
        serve = self._handle
        for extension in reversed(self.extensions):
            serve = functools.partial(extension.handle, self, serve)
        return serve(method, path, query, content_type, body)

    def _handle(self, method, path, query, content_type, body):
        with self.lock:
            if method == "GET":
                return self._get(path, query)
            if method == "PATCH":
                return self._patch(path, query, content_type, body)
        return None

    def _get(self, path, query):
        if path == "/version":
            return 200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0-fake", "platform": "linux/amd64"}, {}
        if path == "/api":
            return 200, _api_versions(self.port), {}
        if path == "/apis":
            return 200, _api_groups(self.serve_mellanox), {}
        if path == "/api/v1":
            return 200, CORE_V1_RESOURCES, {}
        if path == "/apis/%s/%s" % (MELLANOX_GROUP, MELLANOX_VERSION) and self.serve_mellanox:
            return 200, MELLANOX_RESOURCES, {}
        if path == "/api/v1/nodes":
            selected = _label_selector((query.get("labelSelector") or [""])[0])
            items = [copy.deepcopy(self.nodes[n]) for n in sorted(self.nodes) if selected(self.nodes[n])]
            return 200, {"kind": "NodeList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": str(self._version)}, "items": items}, {}
        parts = path.split("/")
        if path.startswith("/api/v1/nodes/") and len(parts) == 6 and parts[5] == "status":
            return self._one(self.nodes, "nodes", parts[4])
        if path.startswith(POLICY_PATH + "/") and self.serve_mellanox and len(parts) == 6:
            return self._one(self.policies, "nicclusterpolicies.%s" % MELLANOX_GROUP, parts[5])
        if path.startswith("/api/v1/nodes/") and len(parts) == 5:
            return self._one(self.nodes, "nodes", parts[4])
        return None

    @staticmethod
    def _one(store, resource, name):
        if name not in store:
            return 404, _status(404, "NotFound", '%s "%s" not found' % (resource, name)), {}
        return 200, copy.deepcopy(store[name]), {}

    def _patch(self, path, query, content_type, body):
        dry_run = query.get("dryRun") == ["All"]
        parts = path.split("/")
        try:
            if path.startswith("/api/v1/nodes/") and len(parts) == 6 and parts[5] == "status":
                return self._patch_node_status(parts[4], content_type, body, dry_run)
            if path.startswith(POLICY_PATH + "/") and self.serve_mellanox and len(parts) == 6:
                return self._patch_policy(parts[5], content_type, body, dry_run)
        except PatchError as exc:
            return exc.code, _status(exc.code, exc.reason, exc.message), {}
        return None

    def _patch_node_status(self, name, content_type, body, dry_run):
        if name not in self.nodes:
            return 404, _status(404, "NotFound", 'nodes "%s" not found' % name), {}
        if content_type != JSON_PATCH:
            raise PatchError(415, "UnsupportedMediaType", "the fake serves nodes/status only with %s" % JSON_PATCH)
        current = self.nodes[name]
        patched = json_patch(current, body)
        # The status subresource keeps everything but status (metadata labels/annotations aside).
        result = copy.deepcopy(current)
        result["status"] = patched.get("status", {})
        if dry_run:
            return 200, result, {}
        if result != current:
            result = self._stamp(result, "Node", "v1")
            self.nodes[name] = result
        return 200, copy.deepcopy(result), {}

    def _patch_policy(self, name, content_type, body, dry_run):
        if name not in self.policies:
            return 404, _status(404, "NotFound", 'nicclusterpolicies.%s "%s" not found' % (MELLANOX_GROUP, name)), {}
        if content_type == STRATEGIC_PATCH:
            raise PatchError(415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted media types include: "
                             "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
        if content_type != MERGE_PATCH:
            raise PatchError(415, "UnsupportedMediaType", "the fake serves nicclusterpolicies only with %s" % MERGE_PATCH)
        if not isinstance(body, dict):
            raise PatchError(400, "BadRequest", "a merge patch must be a JSON object")
        current = self.policies[name]
        wanted_version = (body.get("metadata") or {}).get("resourceVersion")
        if wanted_version is not None and wanted_version != current["metadata"]["resourceVersion"]:
            raise PatchError(409, "Conflict",
                             'Operation cannot be fulfilled on nicclusterpolicies.%s "%s": the object has been '
                             "modified; please apply your changes to the latest version and try again" % (MELLANOX_GROUP, name))
        patched = merge_patch(current, body)
        patched["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        patched["status"] = copy.deepcopy(current.get("status"))
        if patched["status"] is None:
            del patched["status"]
        patched, warnings = self._prune(patched)
        headers = {"Warning": ['299 - "%s"' % w.replace('"', '\\"') for w in warnings]} if warnings else {}
        if dry_run or patched == current:
            return 200, patched, headers
        if patched.get("spec") != current.get("spec"):
            patched["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
        stored = self._stamp(patched, "NicClusterPolicy", current["apiVersion"])
        self.policies[name] = stored
        return 200, copy.deepcopy(stored), headers


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None  # set on the subclass made by FakeKubeApi.start()

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        """Quiet: the request log is the record."""

    def _serve(self, method):
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        query = parse_qs(split.query)
        answer = self.fake.handle(method, split.path, query, content_type, body)
        unknown = answer is None
        if unknown:
            answer = (404, _status(404, "NotFound", "the FAKE API server does not implement %s %s" % (method, split.path)), {})
        code, payload, headers = answer
        with self.fake.lock:
            self.fake.requests.append({
                "method": method, "path": split.path, "query": query, "content_type": content_type,
                "body": body, "status": code, "unknown": unknown,
            })
        # bytes are a text body (a pod's log), anything else is JSON.
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if isinstance(payload, bytes) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, values in headers.items():
            for value in values:
                self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self._serve("GET")

    def do_PATCH(self):  # noqa: N802
        self._serve("PATCH")

    def do_POST(self):  # noqa: N802
        self._serve("POST")

    def do_PUT(self):  # noqa: N802
        self._serve("PUT")

    def do_DELETE(self):  # noqa: N802
        self._serve("DELETE")
