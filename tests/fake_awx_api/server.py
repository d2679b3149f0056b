# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""FAKE AWX API server for rdma.node's tests. This is NOT AWX.

No AWX (or Automation Platform controller) can be installed on the test machines, so the tests point
the real ``awx.awx`` modules at this small HTTP server on 127.0.0.1. It serves the part of AWX's
``/api/v2/`` that those modules call to configure rdma.node's objects, answering as AWX does:

* ``/api/``, ``/api/v2/ping/`` and ``/api/v2/me/``; every answer carries AWX's
  ``X-API-Product-Name``/``X-API-Product-Version`` headers, which the modules compare with their own;
* authentication as the modules do it: ``POST /api/v2/tokens/`` with HTTP basic auth returns a token,
  every other request needs ``Authorization: Bearer <token>`` (401 otherwise), ``DELETE`` of the token
  at the end;
* list views with AWX's filters (``?name=``, ``?organization=``, ``?type=``, ``or__`` terms) and its
  ``{count, next, previous, results}`` pages; detail views; POST (201), PATCH (200), DELETE (204);
* ``organizations``, ``credentials``, ``execution_environments``, ``projects`` (a Git project gets
  its first ``project_update`` at creation, as AWX starts one), ``inventories``, ``inventory_sources``,
  ``job_templates``, ``workflow_job_templates``, ``workflow_job_template_nodes`` with
  ``create_approval_template``, ``workflow_approval_templates`` and ``unified_job_templates``;
* ``survey_spec`` (GET, POST, DELETE), validated as AWX validates a survey; association lists
  (``credentials``, ``labels``, ``instance_groups``, ``notification_templates_*``, and a node's
  ``success_nodes``/``failure_nodes``/``always_nodes``) with AWX's ``{id}`` / ``{id, disassociate}``
  POSTs, refusing an edge to another workflow's node and an edge that makes a cycle.

It checks what AWX checks for these objects: required fields, names unique within an organization,
references to objects that exist, a job template's ``playbook`` among the playbooks its project has
(AWX finds them at the project update; the test gives the repository's own), an inventory source's
``source_path`` among the project's inventory files, and a workflow node's ``extra_data`` only with
variables its job template accepts (its survey's, or any with ``ask_variables_on_launch``).

Every request is recorded (method, path, query, parsed body, status, whether it changed the stored
state, fields the fake ignored), and anything it does not implement is answered 404 and flagged
``unknown``, so a test can assert exactly what reached the server and that a second run changed nothing.
The server runs in a daemon thread; use it as a context manager.
"""

from __future__ import annotations

import base64
import copy
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

API = "/api/v2/"
PRODUCT = {"X-API-Product-Name": "AWX", "X-API-Product-Version": "24.6.1"}

# Per resource: its ``type``, the fields a create needs, the fields AWX accepts (others are ignored and
# recorded), the fields that must name an existing object, and the association lists it has.
_ASSOCIATIONS_OF_TEMPLATES = ("credentials", "labels", "instance_groups", "notification_templates_started",
                              "notification_templates_success", "notification_templates_error")
_NODE_EDGES = ("success_nodes", "failure_nodes", "always_nodes")
RESOURCES = {
    "organizations": {"type": "organization", "required": ("name",), "fields": ("name", "description"), "refs": {}},
    "credentials": {"type": "credential", "required": ("name", "credential_type"),
                    "fields": ("name", "description", "organization", "credential_type", "inputs"),
                    "refs": {"organization": "organizations"}},
    "execution_environments": {
        "type": "execution_environment", "required": ("name", "image"),
        "fields": ("name", "description", "image", "pull", "organization", "credential"),
        "refs": {"organization": "organizations", "credential": "credentials"}},
    "projects": {
        "type": "project", "required": ("name", "organization"),
        "fields": ("name", "description", "organization", "scm_type", "scm_url", "scm_branch", "scm_refspec", "credential",
                   "scm_clean", "scm_delete_on_update", "scm_track_submodules", "scm_update_on_launch",
                   "scm_update_cache_timeout", "allow_override", "timeout", "default_environment", "local_path",
                   "signature_validation_credential"),
        "refs": {"organization": "organizations", "credential": "credentials", "default_environment": "execution_environments"},
        "associations": ("notification_templates_started", "notification_templates_success", "notification_templates_error")},
    "inventories": {
        "type": "inventory", "required": ("name", "organization"),
        "fields": ("name", "description", "organization", "kind", "host_filter", "variables", "prevent_instance_group_fallback"),
        "refs": {"organization": "organizations"}, "associations": ("instance_groups", "labels", "input_inventories")},
    "inventory_sources": {
        "type": "inventory_source", "required": ("name", "inventory", "source"),
        "fields": ("name", "description", "inventory", "source", "source_path", "source_vars", "scm_branch", "credential",
                   "execution_environment", "enabled_var", "enabled_value", "host_filter", "overwrite", "overwrite_vars",
                   "timeout", "verbosity", "update_on_launch", "update_cache_timeout", "source_project"),
        "refs": {"inventory": "inventories", "credential": "credentials", "execution_environment": "execution_environments",
                 "source_project": "projects"},
        "associations": ("notification_templates_started", "notification_templates_success", "notification_templates_error")},
    "job_templates": {
        "type": "job_template", "required": ("name", "project", "playbook"),
        "fields": ("name", "description", "organization", "job_type", "inventory", "project", "playbook", "scm_branch", "forks",
                   "limit", "verbosity", "extra_vars", "job_tags", "force_handlers", "skip_tags", "start_at_task", "timeout",
                   "use_fact_cache", "execution_environment", "host_config_key", "ask_scm_branch_on_launch",
                   "ask_diff_mode_on_launch", "ask_variables_on_launch", "ask_limit_on_launch", "ask_tags_on_launch",
                   "ask_skip_tags_on_launch", "ask_job_type_on_launch", "ask_verbosity_on_launch", "ask_inventory_on_launch",
                   "ask_credential_on_launch", "ask_execution_environment_on_launch", "ask_forks_on_launch",
                   "ask_instance_groups_on_launch", "ask_job_slice_count_on_launch", "ask_labels_on_launch",
                   "ask_timeout_on_launch", "survey_enabled", "become_enabled", "diff_mode", "allow_simultaneous",
                   "custom_virtualenv", "job_slice_count", "webhook_service", "webhook_credential",
                   "prevent_instance_group_fallback"),
        "refs": {"organization": "organizations", "inventory": "inventories", "project": "projects",
                 "execution_environment": "execution_environments", "webhook_credential": "credentials"},
        "associations": _ASSOCIATIONS_OF_TEMPLATES, "survey": True},
    "workflow_job_templates": {
        "type": "workflow_job_template", "required": ("name",),
        "fields": ("name", "description", "extra_vars", "organization", "survey_enabled", "allow_simultaneous",
                   "ask_variables_on_launch", "inventory", "limit", "scm_branch", "ask_inventory_on_launch",
                   "ask_scm_branch_on_launch", "ask_limit_on_launch", "ask_labels_on_launch", "ask_skip_tags_on_launch",
                   "ask_tags_on_launch", "skip_tags", "job_tags", "webhook_service", "webhook_credential"),
        "refs": {"organization": "organizations", "inventory": "inventories", "webhook_credential": "credentials"},
        "associations": ("labels", "notification_templates_started", "notification_templates_success",
                         "notification_templates_error", "notification_templates_approvals"),
        "survey": True},
    "workflow_job_template_nodes": {
        "type": "workflow_job_template_node", "required": ("workflow_job_template",),
        "fields": ("workflow_job_template", "unified_job_template", "identifier", "extra_data", "scm_branch", "job_type",
                   "job_tags", "skip_tags", "limit", "diff_mode", "verbosity", "forks", "job_slice_count", "timeout",
                   "all_parents_must_converge", "inventory", "execution_environment"),
        "refs": {"workflow_job_template": "workflow_job_templates", "inventory": "inventories",
                 "execution_environment": "execution_environments"},
        "associations": _NODE_EDGES + ("credentials", "labels", "instance_groups")},
    "workflow_approval_templates": {
        "type": "workflow_approval_template", "required": ("name",), "fields": ("name", "description", "timeout"), "refs": {}},
    "project_updates": {"type": "project_update", "required": (), "fields": (), "refs": {}},
    "labels": {"type": "label", "required": ("name", "organization"), "fields": ("name", "organization"),
               "refs": {"organization": "organizations"}},
    "instance_groups": {"type": "instance_group", "required": ("name",), "fields": ("name",), "refs": {}},
    "notification_templates": {"type": "notification_template", "required": ("name",), "fields": ("name",), "refs": {}},
}
# What /unified_job_templates/ lists: every kind of template a workflow node can run.
UNIFIED = ("job_templates", "workflow_job_templates", "projects", "inventory_sources", "workflow_approval_templates")
SURVEY_TYPES = ("text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect")


class ApiError(Exception):
    """An answer other than success: the HTTP code and AWX's JSON body."""

    def __init__(self, code, body):
        super().__init__(json.dumps(body))
        self.code = code
        self.body = body


# ------------------------------------------------------------------------------------ surveys


def survey_errors(spec):
    """AWX's checks of a survey spec (awx/api/views JobTemplateSurveySpec._validate_spec_data)."""
    if not isinstance(spec, dict):
        return "Survey spec must be a JSON object."
    if "name" not in spec:
        return "'name' missing from survey spec."
    if "description" not in spec:
        return "'description' missing from survey spec."
    if not isinstance(spec.get("spec"), list):
        return "'spec' must be a list of items."
    if not spec["spec"]:
        return "'spec' doesn't contain any items."
    seen = set()
    for index, question in enumerate(spec["spec"]):
        if not isinstance(question, dict):
            return "Survey question %d is not a json object." % index
        for key in ("type", "question_name", "variable", "required"):
            if key not in question:
                return "'%s' missing from survey question %d." % (key, index)
        if question["type"] not in SURVEY_TYPES:
            return "'%s' in survey question %d is not one of '%s' allowed question types." % (
                question["type"], index, "', '".join(SURVEY_TYPES))
        if question["variable"] in seen:
            return "'variable' '%s' duplicated in survey question %d." % (question["variable"], index)
        seen.add(question["variable"])
        default = question.get("default")
        if question["type"] == "integer" and default not in (None, "") and (isinstance(default, bool) or not isinstance(default, int)):
            return "Value %s for '%s' expected to be of type integer." % (json.dumps(default), question["variable"])
        if question["type"] == "float" and default not in (None, "") and (isinstance(default, bool) or not isinstance(default, (int, float))):
            return "Value %s for '%s' expected to be of type float." % (json.dumps(default), question["variable"])
        if question["type"] in ("integer", "float") and default not in (None, ""):
            if "min" in question and question["min"] not in (None, "") and default < question["min"]:
                return "Default value %s in survey question %d is below the minimum %s." % (default, index, question["min"])
            if "max" in question and question["max"] not in (None, "") and default > question["max"]:
                return "Default value %s in survey question %d is above the maximum %s." % (default, index, question["max"])
        if question["type"] in ("multiplechoice", "multiselect"):
            choices = question.get("choices")
            if isinstance(choices, str):
                choices = [c for c in choices.split("\n") if c]
            if not isinstance(choices, list) or not choices:
                return "Survey question %d of type %s must have choices." % (index, question["type"])
            defaults = [d for d in str(default or "").split("\n") if d] if question["type"] == "multiselect" else [default]
            for value in defaults:
                if value not in (None, "") and value not in choices:
                    return "Default choice must be answered from the choices listed."
        if question["type"] in ("text", "textarea", "password") and isinstance(default, str):
            if "min" in question and question["min"] not in (None, "") and len(default) < int(question["min"]):
                return "Default value %s in survey question %d is shorter than the minimum length %s." % (
                    json.dumps(default), index, question["min"])
            if "max" in question and question["max"] not in (None, "") and len(default) > int(question["max"]):
                return "Default value %s in survey question %d is longer than the maximum length %s." % (
                    json.dumps(default), index, question["max"])
    return None


# ------------------------------------------------------------------------------------ server


class FakeAwxApi:
    """The FAKE AWX's objects, its request log and its HTTP listener on 127.0.0.1."""

    def __init__(self, username="admin", password="fake-password", project_files=(), organizations=("Default",),
                 credentials=()):
        self.lock = threading.Lock()
        self.requests = []
        self.username = username
        self.password = password
        self.project_files = sorted(project_files)
        self.tokens = {}
        self.objects = {name: {} for name in RESOURCES}
        self.survey_specs = {}  # (resource, id) -> spec
        self.associations = {}  # (resource, id, association) -> [ids]
        self._next_id = 1
        for name in organizations:
            self._store("organizations", {"name": name})
        for credential in credentials:
            self._store("credentials", dict(credential))
        self._httpd = None
        self._thread = None

    # -- state ------------------------------------------------------------------------------------

    def _store(self, resource, fields):
        obj_id = self._next_id
        self._next_id += 1
        obj = dict(fields, id=obj_id, type=RESOURCES[resource]["type"])
        self.objects[resource][obj_id] = obj
        return obj

    def snapshot(self):
        """Everything stored, to compare before and after a run."""
        with self.lock:
            return copy.deepcopy({"objects": self.objects, "surveys": self.survey_specs, "associations": self.associations})

    def find(self, resource, **fields):
        """The stored objects of ``resource`` whose fields equal ``fields`` (as the server renders them)."""
        with self.lock:
            return [self._render(resource, obj) for obj in self.objects[resource].values()
                    if all(obj.get(k) == v for k, v in fields.items())]

    def one(self, resource, **fields):
        found = self.find(resource, **fields)
        if len(found) != 1:
            raise AssertionError("expected one %s with %r, found %d" % (resource, fields, len(found)))
        return found[0]

    def survey(self, resource, obj_id):
        with self.lock:
            return copy.deepcopy(self.survey_specs.get((resource, obj_id)))

    def associated(self, resource, obj_id, association):
        with self.lock:
            return list(self.associations.get((resource, obj_id, association), []))

    # -- request log ------------------------------------------------------------------------------

    def recorded(self, method=None, unknown=None):
        with self.lock:
            entries = list(self.requests)
        return [r for r in entries if (method is None or r["method"] == method) and (unknown is None or r["unknown"] == unknown)]

    def clear_log(self):
        with self.lock:
            del self.requests[:]

    # -- HTTP -------------------------------------------------------------------------------------

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self._httpd.server_address[1]

    def start(self):
        api = self

        class Handler(_Handler):
            fake = api

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-awx-api", daemon=True)
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

    # -- rendering --------------------------------------------------------------------------------

    def _url(self, resource, obj_id):
        return "%s%s/%d/" % (API, resource, obj_id)

    def _render(self, resource, obj):
        out = copy.deepcopy(obj)
        url = self._url(resource, obj["id"])
        out["url"] = url
        related = {}
        summary = {}
        spec = RESOURCES[resource]
        for field, target in spec["refs"].items():
            if obj.get(field) is not None and obj[field] in self.objects[target]:
                related[field] = self._url(target, obj[field])
                summary[field] = {"id": obj[field], "name": self.objects[target][obj[field]].get("name")}
        for association in spec.get("associations", ()):
            related[association] = url + association + "/"
        if spec.get("survey"):
            related["survey_spec"] = url + "survey_spec/"
        if resource == "workflow_job_template_nodes" and obj.get("unified_job_template") is not None:
            target = self._unified_resource(obj["unified_job_template"])
            related["unified_job_template"] = self._url(target, obj["unified_job_template"])
            related["create_approval_template"] = url + "create_approval_template/"
        if resource == "projects":
            related["update"] = url + "update/"
            if obj.get("_current_update"):
                summary["current_update"] = {"id": obj["_current_update"], "status": "successful"}
        out.pop("_current_update", None)
        out["related"] = related
        out["summary_fields"] = summary
        return out

    def _unified_resource(self, obj_id):
        for resource in UNIFIED:
            if obj_id in self.objects[resource]:
                return resource
        return None

    # -- routing ----------------------------------------------------------------------------------

    def handle(self, method, path, query, headers, body):
        """Return ``(code, payload, changed, ignored)`` for one request, or None when not implemented."""
        with self.lock:
            if path == "/api/" and method == "GET":
                return 200, {"description": "AWX REST API (FAKE)", "current_version": API, "available_versions": {"v2": API}}, False, []
            if path == API + "ping/" and method == "GET":
                return 200, {"ha": False, "version": PRODUCT["X-API-Product-Version"], "active_node": "fake-awx"}, False, []
            if path == API + "tokens/" and method == "POST":
                return self._login(headers)
            if path.startswith(API + "tokens/") and method == "DELETE":
                token_id = path[len(API + "tokens/"):].strip("/")
                if not self._authorized(headers, basic_ok=True):
                    return 401, {"detail": "Authentication credentials were not provided."}, False, []
                removed = [t for t, i in self.tokens.items() if str(i) == token_id]
                for token in removed:
                    del self.tokens[token]
                return (204, None, False, []) if removed else (404, {"detail": "Not found."}, False, [])
            if not path.startswith(API):
                return None
            if not self._authorized(headers):
                return 401, {"detail": "Authentication credentials were not provided."}, False, []
            if path == API + "me/" and method == "GET":
                return 200, _page([{"id": 1, "type": "user", "username": self.username, "is_superuser": True}]), False, []
            parts = [p for p in path[len(API):].split("/") if p]
            try:
                return self._route(method, parts, query, body)
            except ApiError as exc:
                return exc.code, exc.body, False, []

    def _login(self, headers):
        auth = headers.get("Authorization") or ""
        if not auth.startswith("Basic "):
            return 401, {"detail": "Authentication credentials were not provided."}, False, []
        user, _sep, password = base64.b64decode(auth[6:]).decode("utf-8").partition(":")
        if (user, password) != (self.username, self.password):
            return 401, {"detail": "Invalid username/password."}, False, []
        token = secrets.token_hex(15)
        self.tokens[token] = self._next_id
        self._next_id += 1
        return 201, {"id": self.tokens[token], "type": "o_auth2_access_token", "token": token, "scope": "write"}, False, []

    def _authorized(self, headers, basic_ok=False):
        auth = headers.get("Authorization") or ""
        if auth.startswith("Bearer ") and auth[7:] in self.tokens:
            return True
        if basic_ok and auth.startswith("Basic "):
            user, _sep, password = base64.b64decode(auth[6:]).decode("utf-8").partition(":")
            return (user, password) == (self.username, self.password)
        return False

    def _route(self, method, parts, query, body):
        resource = parts[0]
        if resource == "unified_job_templates" and len(parts) == 1 and method == "GET":
            everything = [self._render(r, o) for r in UNIFIED for o in self.objects[r].values()]
            return 200, _page(_filter(everything, query)), False, []
        if resource not in RESOURCES:
            return None
        if len(parts) == 1:
            if method == "GET":
                rendered = [self._render(resource, o) for o in self.objects[resource].values()]
                return 200, _page(_filter(rendered, query)), False, []
            if method == "POST":
                return self._create(resource, body)
            return None
        if not parts[1].isdigit():
            return None
        obj_id = int(parts[1])
        if obj_id not in self.objects[resource]:
            raise ApiError(404, {"detail": "Not found."})
        if len(parts) == 2:
            if method == "GET":
                return 200, self._render(resource, self.objects[resource][obj_id]), False, []
            if method == "PATCH":
                return self._update(resource, obj_id, body)
            if method == "DELETE":
                self._delete(resource, obj_id)
                return 204, None, True, []
            return None
        sub = parts[2]
        if len(parts) == 3 and sub == "survey_spec" and RESOURCES[resource].get("survey"):
            return self._survey(method, resource, obj_id, body)
        if len(parts) == 3 and sub in RESOURCES[resource].get("associations", ()):
            return self._association(method, resource, obj_id, sub, body)
        if len(parts) == 3 and resource == "workflow_job_template_nodes" and sub == "create_approval_template" and method == "POST":
            return self._create_approval_template(obj_id, body)
        if len(parts) == 3 and resource == "project_updates":
            return None
        return None

    # -- create / update / delete -----------------------------------------------------------------

    def _clean(self, resource, body):
        if not isinstance(body, dict):
            raise ApiError(400, {"detail": "JSON parse error - expected an object."})
        allowed = RESOURCES[resource]["fields"]
        fields = {k: v for k, v in body.items() if k in allowed}
        ignored = sorted(k for k in body if k not in allowed)
        return fields, ignored

    def _check(self, resource, fields, obj_id=None):
        """AWX's validation of the objects' fields; raises ApiError(400) as AWX answers."""
        spec = RESOURCES[resource]
        for field, target in spec["refs"].items():
            value = fields.get(field)
            if value is not None and value not in self.objects[target]:
                raise ApiError(400, {field: ['Invalid pk "%s" - object does not exist.' % value]})
        if "name" in fields and resource not in ("workflow_approval_templates",):
            for other_id, other in self.objects[resource].items():
                if other_id != obj_id and other.get("name") == fields["name"] and other.get("organization") == fields.get("organization"):
                    raise ApiError(400, {"__all__": ["%s with this Name and Organization already exists." % spec["type"].replace("_", " ").capitalize()]})
        if resource == "projects" and fields.get("scm_type") not in (None, "", "manual") and not fields.get("scm_url"):
            raise ApiError(400, {"scm_url": ["SCM URL is required."]})
        if resource == "job_templates":
            if fields.get("playbook") not in [f for f in self.project_files if f.endswith((".yml", ".yaml"))]:
                raise ApiError(400, {"playbook": ["Playbook not found for project."]})
            if fields.get("inventory") is None and not fields.get("ask_inventory_on_launch"):
                raise ApiError(400, {"inventory": ["Job Templates must have an inventory or allow prompting for it."]})
            if fields.get("job_type", "run") not in ("run", "check"):
                raise ApiError(400, {"job_type": ['"%s" is not a valid choice.' % fields["job_type"]]})
            if int(fields.get("job_slice_count", 1)) < 1:
                raise ApiError(400, {"job_slice_count": ["Ensure this value is greater than or equal to 1."]})
        if resource == "inventory_sources" and fields.get("source") == "scm":
            if fields.get("source_project") is None:
                raise ApiError(400, {"source_project": ["Project required for scm type sources."]})
            if fields.get("source_path") not in self.project_files:
                raise ApiError(400, {"source_path": ["Invalid inventory file %s." % fields.get("source_path")]})
        if resource == "workflow_job_template_nodes":
            self._check_node_prompts(fields)

    def _check_node_prompts(self, fields):
        extra = fields.get("extra_data") or {}
        template_id = fields.get("unified_job_template")
        if not extra or template_id is None:
            return
        template = self.objects["job_templates"].get(template_id)
        if template is None or template.get("ask_variables_on_launch"):
            return
        spec = self.survey_specs.get(("job_templates", template_id)) if template.get("survey_enabled") else None
        allowed = {q["variable"] for q in (spec or {}).get("spec", [])}
        refused = sorted(set(extra) - allowed)
        if refused:
            raise ApiError(400, {"extra_data": ["Variables %s are not allowed on launch. Check the Prompt on Launch setting "
                                                "on the Job Template to include Extra Variables." % ", ".join(refused)]})

    def _create(self, resource, body):
        fields, ignored = self._clean(resource, body)
        missing = [f for f in RESOURCES[resource]["required"] if fields.get(f) in (None, "")]
        if missing:
            raise ApiError(400, {f: ["This field is required."] for f in missing})
        if resource == "workflow_job_template_nodes" and fields.get("unified_job_template") is not None \
                and self._unified_resource(fields["unified_job_template"]) is None:
            raise ApiError(400, {"unified_job_template": ['Invalid pk "%s" - object does not exist.' % fields["unified_job_template"]]})
        self._check(resource, fields)
        obj = self._store(resource, fields)
        if resource == "projects" and fields.get("scm_type") not in (None, "", "manual"):
            update = self._store("project_updates", {"project": obj["id"], "status": "successful", "failed": False,
                                                     "scm_revision": "fake0000000000000000000000000000000000"})
            obj["_current_update"] = update["id"]
            obj["scm_revision"] = update["scm_revision"]
        return 201, self._render(resource, obj), True, ignored

    def _update(self, resource, obj_id, body):
        fields, ignored = self._clean(resource, body)
        current = self.objects[resource][obj_id]
        merged = dict({k: v for k, v in current.items() if k in RESOURCES[resource]["fields"]}, **fields)
        self._check(resource, merged, obj_id)
        changed = any(current.get(k) != v for k, v in fields.items())
        current.update(fields)
        return 200, self._render(resource, current), changed, ignored

    def _delete(self, resource, obj_id):
        del self.objects[resource][obj_id]
        self.survey_specs.pop((resource, obj_id), None)
        for key in [k for k in self.associations if k[:2] == (resource, obj_id)]:
            del self.associations[key]
        if resource == "workflow_job_template_nodes":
            for key, ids in self.associations.items():
                if key[0] == resource and obj_id in ids:
                    ids.remove(obj_id)

    def _survey(self, method, resource, obj_id, body):
        key = (resource, obj_id)
        if method == "GET":
            return 200, copy.deepcopy(self.survey_specs.get(key, {})), False, []
        if method == "DELETE":
            changed = key in self.survey_specs
            self.survey_specs.pop(key, None)
            return 200, {}, changed, []
        if method == "POST":
            error = survey_errors(body)
            if error:
                raise ApiError(400, {"error": error})
            changed = self.survey_specs.get(key) != body
            self.survey_specs[key] = copy.deepcopy(body)
            return 200, None, changed, []
        return None

    def _association(self, method, resource, obj_id, association, body):
        key = (resource, obj_id, association)
        ids = self.associations.setdefault(key, [])
        if association in _NODE_EDGES:
            target = "workflow_job_template_nodes"
        elif association.startswith("notification_templates"):
            target = "notification_templates"
        elif association == "input_inventories":
            target = "inventories"
        else:
            target = association
        if method == "GET":
            return 200, _page([self._render(target, self.objects[target][i]) for i in ids if i in self.objects[target]]), False, []
        if method != "POST":
            return None
        if not isinstance(body, dict) or not isinstance(body.get("id"), int):
            raise ApiError(400, {"msg": "\"id\" field must be an integer."})
        other = body["id"]
        if other not in self.objects[target]:
            raise ApiError(400, {"msg": "Object with id %s not found." % other})
        if body.get("disassociate"):
            if other in ids:
                ids.remove(other)
                return 204, None, True, []
            return 204, None, False, []
        if other in ids:
            return 204, None, False, []
        if association in _NODE_EDGES:
            self._check_edge(obj_id, other)
        ids.append(other)
        return 204, None, True, []

    def _children(self, node_id):
        return [c for edge in _NODE_EDGES for c in self.associations.get(("workflow_job_template_nodes", node_id, edge), [])]

    def _check_edge(self, parent, child):
        nodes = self.objects["workflow_job_template_nodes"]
        if nodes[parent]["workflow_job_template"] != nodes[child]["workflow_job_template"]:
            raise ApiError(400, {"Error": "Relationship not allowed."})
        # A cycle: the parent is reachable from the child.
        pending, seen = [child], set()
        while pending:
            node = pending.pop()
            if node == parent:
                raise ApiError(400, {"Error": "Cycle detected."})
            if node not in seen:
                seen.add(node)
                pending.extend(self._children(node))

    def _create_approval_template(self, node_id, body):
        fields, ignored = self._clean("workflow_approval_templates", body)
        if not fields.get("name"):
            raise ApiError(400, {"name": ["This field is required."]})
        node = self.objects["workflow_job_template_nodes"][node_id]
        template = self._store("workflow_approval_templates", fields)
        node["unified_job_template"] = template["id"]
        return 201, self._render("workflow_approval_templates", template), True, ignored


def _page(results):
    return {"count": len(results), "next": None, "previous": None, "results": results}


def _matches(obj, key, value):
    field = key.split("__", 1)[0]
    actual = obj.get(field)
    if field == "type":
        return actual in value.split(",")
    if isinstance(actual, bool):
        return str(actual).lower() == value.lower()
    return actual is not None and str(actual) == value


def _filter(objects, query):
    """AWX's list filters: every plain term must match; among ``or__`` terms, one must."""
    plain = {k: v[0] for k, v in query.items() if not k.startswith("or__") and k not in ("page", "page_size", "order_by")}
    alternatives = {k[4:]: v[0] for k, v in query.items() if k.startswith("or__")}
    out = []
    for obj in objects:
        if not all(_matches(obj, k, v) for k, v in plain.items()):
            continue
        if alternatives and not any(_matches(obj, k, v) for k, v in alternatives.items()):
            continue
        out.append(obj)
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None  # set on the subclass made by FakeAwxApi.start()

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        """Quiet: the request log is the record."""

    def _serve(self, method):
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        query = parse_qs(split.query)
        answer = self.fake.handle(method, split.path, query, self.headers, body)
        unknown = answer is None
        if unknown:
            answer = (404, {"detail": "the FAKE AWX API does not implement %s %s" % (method, split.path)}, False, [])
        code, payload, changed, ignored = answer
        with self.fake.lock:
            self.fake.requests.append({
                "method": method, "path": split.path, "query": query, "body": body, "status": code,
                "changed": bool(changed and code < 300), "ignored_fields": ignored, "unknown": unknown,
                "auth": (self.headers.get("Authorization") or "").split(" ", 1)[0],
            })
        data = b"" if payload is None else json.dumps(payload).encode("utf-8")
        self.send_response(code)
        for name, value in PRODUCT.items():
            self.send_header(name, value)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self._serve("GET")

    def do_POST(self):  # noqa: N802
        self._serve("POST")

    def do_PATCH(self):  # noqa: N802
        self._serve("PATCH")

    def do_PUT(self):  # noqa: N802
        self._serve("PUT")

    def do_DELETE(self):  # noqa: N802
        self._serve("DELETE")
