"""The controller objects of extensions/awx applied with the real awx.awx modules to a FAKE AWX API.

Real: ansible-playbook, extensions/awx/configure_controller.yml, and the ``awx.awx`` modules of the
pinned ``ansible`` package with their HTTP client, token login and logout.

Fake, and why: no AWX can be installed on these machines. ``tests/fake_awx_api`` (FakeAwxApi) is a
small HTTP server on 127.0.0.1 that answers the requests the modules send as AWX answers them, checks
what AWX checks (references, unique names, a job template's playbook among its project's, surveys,
the prompts of a workflow node's extra_data, edges without cycles) and records every request. The
project's playbooks and inventory files it knows are the repository's own, as a project update
would find them.

The runs build on each other: apply to an empty controller, apply again (nothing may change), then
--check with one setting changed (the change is shown, nothing is written).
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from fake_awx_api.server import FakeAwxApi
from playbook import run_playbook
from testpaths import COLLECTION_ROOT

PLAYBOOK = "extensions/awx/configure_controller.yml"
OBJECTS = yaml.safe_load((COLLECTION_ROOT / "extensions/awx/controller_objects.yml").read_text())
MACHINE = "GPU nodes SSH"
KUBERNETES = "Cluster API token"
EXTRA_VARS = {
    "rdma_awx_scm_url": "https://git.example.org/infra/rdma-node.git",
    "rdma_awx_ee_image": "rdma-node-ee:0.1.0",
    "rdma_awx_machine_credential": MACHINE,
    "rdma_awx_kubernetes_credential": KUBERNETES,
}
# The fake speaks plain HTTP, yet awx.awx's client builds a verifying TLS context for every request, and
# loading the machine's CA bundle into it was a quarter of the runs' CPU time: no CA store for these runs.
NO_CA_STORE = {"SSL_CERT_FILE": os.devnull, "SSL_CERT_DIR": os.devnull}
PLAYBOOKS = ["site", "ib_inventory", "driver_verify", "node_remediation", "bandwidth_check", "k8s_rdma", "quarantine", "pod_proof", "fleet_report"]
# Parent, edge, child: the workflow of the issue (checks, approval, remediation, bandwidth, the pod proof after both,
# report on every path).
EDGES = {
    ("inventory_check", "always_nodes", "driver_check"),
    ("driver_check", "success_nodes", "approve_remediation"),
    ("driver_check", "failure_nodes", "fleet_report"),
    ("approve_remediation", "success_nodes", "remediation"),
    ("approve_remediation", "failure_nodes", "fleet_report"),
    ("remediation", "success_nodes", "bandwidth"),
    ("remediation", "failure_nodes", "fleet_report"),
    ("bandwidth", "always_nodes", "pod_proof"),
    ("pod_proof", "always_nodes", "fleet_report"),
}


def project_files():
    """What an AWX project update finds in this repository: playbooks and inventory files."""
    found = sorted(p.relative_to(COLLECTION_ROOT).as_posix() for p in (COLLECTION_ROOT / "playbooks").glob("*.yml"))
    found += sorted(p.relative_to(COLLECTION_ROOT).as_posix() for p in (COLLECTION_ROOT / "inventories").glob("*/hosts.yml"))
    return found


def apply(api, *args, extra=None):
    env = {"CONTROLLER_HOST": api.url, "CONTROLLER_USERNAME": "admin", "CONTROLLER_PASSWORD": "fake-password",
           "CONTROLLER_ORGANIZATION": "GPU cluster", "ANSIBLE_PIPELINING": "1", **NO_CA_STORE}
    api.clear_log()
    before = api.snapshot()
    run = run_playbook(PLAYBOOK, "-e", json.dumps(dict(EXTRA_VARS, **(extra or {}))), *args, env=env)
    return {"run": run, "requests": api.recorded(), "before": before, "after": api.snapshot()}


def task_changes(run):
    """(task, item label or None) -> changed, for every task of the run."""
    out = {}
    for play in run.data["plays"]:
        for task in play["tasks"]:
            result = task["hosts"]["localhost"]
            name = task["task"]["name"]
            for item in result.get("results") or [result]:
                if item.get("skipped"):
                    continue
                loop_item = item.get("item") if isinstance(item.get("item"), dict) else {}
                label = loop_item.get("name") or loop_item.get("identifier")
                out[(name, label)] = bool(item.get("changed"))
    return out


@pytest.fixture(scope="module")
def api():
    fake = FakeAwxApi(project_files=project_files(), organizations=("Default", "GPU cluster"),
                      credentials=[{"name": MACHINE, "credential_type": 1}, {"name": KUBERNETES, "credential_type": 17}])
    with fake:
        yield fake


@pytest.fixture(scope="module")
def first(api):
    return apply(api)


@pytest.fixture(scope="module")
def second(api, first):
    assert first["run"].rc == 0, first["run"].stderr
    return apply(api)


@pytest.fixture(scope="module")
def check(api, second):
    return apply(api, "--check", extra={"rdma_awx_check_slices": 8})


def test_first_apply_creates_everything_through_the_api(first):
    assert first["run"].rc == 0, first["run"].stderr
    requests = first["requests"]
    assert not [r for r in requests if r["unknown"]], "requests the fake does not serve"
    assert not [r for r in requests if r["status"] >= 400], [(r["method"], r["path"], r["status"]) for r in requests if r["status"] >= 400]
    # Logged in with a token, used it for everything, and gave it back.
    assert requests[0]["method"] == "POST" and requests[0]["path"] == "/api/v2/tokens/" and requests[0]["auth"] == "Basic"
    assert {r["auth"] for r in requests if not r["path"].startswith("/api/v2/tokens/")} == {"Bearer"}
    assert [r["path"] for r in requests if r["method"] == "DELETE"] and all(
        r["path"].startswith("/api/v2/tokens/") for r in requests if r["method"] == "DELETE")
    # The modules send only fields AWX knows; the node module's "type" and the approval template's node
    # fields are what awx.awx itself adds, and AWX ignores them too.
    ignored = {(r["path"].split("/")[3], field) for r in requests for field in r["ignored_fields"]}
    assert ignored <= {("workflow_job_template_nodes", "type"), ("workflow_job_template_nodes", "identifier"),
                       ("workflow_job_template_nodes", "workflow_job_template")}, ignored


def test_execution_environment_project_and_inventory(api, first):
    org = api.one("organizations", name="GPU cluster")["id"]
    ee = api.one("execution_environments", name="rdma.node")
    assert (ee["image"], ee["pull"], ee["organization"]) == ("rdma-node-ee:0.1.0", "missing", org)
    project = api.one("projects", name="rdma.node")
    assert (project["organization"], project["scm_type"], project["scm_url"], project["scm_branch"]) == (
        org, "git", EXTRA_VARS["rdma_awx_scm_url"], "main")
    assert project["default_environment"] == ee["id"] and project["scm_update_on_launch"] is True
    inventory = api.one("inventories", name="RDMA GPU nodes")
    assert inventory["organization"] == org
    source = api.one("inventory_sources", name="RDMA GPU nodes from the project")
    assert (source["inventory"], source["source"], source["source_project"], source["source_path"]) == (
        inventory["id"], "scm", project["id"], "inventories/example/hosts.yml")
    assert source["overwrite"] is True and source["update_on_launch"] is True and source["execution_environment"] == ee["id"]


def test_one_job_template_per_playbook_with_its_survey(api, first):
    ee = api.one("execution_environments", name="rdma.node")["id"]
    project = api.one("projects", name="rdma.node")["id"]
    inventory = api.one("inventories", name="RDMA GPU nodes")["id"]
    machine = api.one("credentials", name=MACHINE)["id"]
    kubernetes = api.one("credentials", name=KUBERNETES)["id"]
    templates = api.find("job_templates")
    assert sorted(t["playbook"] for t in templates) == sorted("playbooks/%s.yml" % p for p in PLAYBOOKS)
    configured = {t["name"]: t for t in OBJECTS["rdma_awx_job_templates"]}
    for template in templates:
        name = "rdma.node " + template["playbook"][len("playbooks/"):-len(".yml")]
        assert template["name"] == name
        assert (template["project"], template["inventory"], template["execution_environment"]) == (project, inventory, ee)
        assert template["use_fact_cache"] is True and template["survey_enabled"] is True and template["job_type"] == "run"
        # The cluster-side jobs (from the controller, on localhost) talk to the API server only.
        expected_credentials = [kubernetes] if name in ("rdma.node k8s_rdma", "rdma.node quarantine", "rdma.node pod_proof") else [machine]
        assert api.associated("job_templates", template["id"], "credentials") == expected_credentials
        # Slicing only for the per-node checks; remediation batches, bandwidth pairs and the report need one job.
        slices = 4 if name in ("rdma.node ib_inventory", "rdma.node driver_verify") else 1
        assert template["job_slice_count"] == slices, name
        survey = api.survey("job_templates", template["id"])
        assert survey["name"] == name
        assert survey["spec"] == [OBJECTS["rdma_awx_questions"][v] for v in configured[name]["survey"]]
    site = api.one("job_templates", name="rdma.node site")
    assert [q["variable"] for q in api.survey("job_templates", site["id"])["spec"]] == [
        "rdma_hosts", "rdma_remediate", "node_remediation_serial", "node_remediation_max_fail_percentage",
        "rdma_fail_on_findings", "fleet_report_dir", "fleet_report_upload_url"]
    remediation = api.survey("job_templates", api.one("job_templates", name="rdma.node node_remediation")["id"])
    batches = next(q for q in remediation["spec"] if q["variable"] == "node_remediation_serial")
    assert (batches["type"], batches["default"]) == ("text", "1,10%")
    assert site["become_enabled"] is True


def test_workflow_nodes_edges_and_approval(api, first):
    workflow = api.one("workflow_job_templates", name="rdma.node check, approve, remediate, report")
    assert workflow["inventory"] == api.one("inventories", name="RDMA GPU nodes")["id"]
    assert [q["variable"] for q in api.survey("workflow_job_templates", workflow["id"])["spec"]] == OBJECTS["rdma_awx_workflow_survey"]
    nodes = {n["identifier"]: n for n in api.find("workflow_job_template_nodes", workflow_job_template=workflow["id"])}
    templates = {t["id"]: t["name"] for t in api.find("job_templates")}
    approval = api.one("workflow_approval_templates", name="Approve the memlock remediation of the RDMA nodes")
    assert approval["timeout"] == 86400
    assert {i: (templates.get(n["unified_job_template"]) or n["unified_job_template"]) for i, n in nodes.items()} == {
        "inventory_check": "rdma.node ib_inventory", "driver_check": "rdma.node driver_verify",
        "approve_remediation": approval["id"], "remediation": "rdma.node node_remediation",
        "bandwidth": "rdma.node bandwidth_check", "pod_proof": "rdma.node pod_proof", "fleet_report": "rdma.node fleet_report"}
    by_id = {n["id"]: i for i, n in nodes.items()}
    edges = {(identifier, edge, by_id[child]) for identifier, node in nodes.items()
             for edge in ("success_nodes", "failure_nodes", "always_nodes")
             for child in api.associated("workflow_job_template_nodes", node["id"], edge)}
    assert edges == EDGES
    # The checks run report-only inside the workflow; the report decides.
    assert nodes["inventory_check"]["extra_data"] == {"ib_inventory_fail_on_findings": False}
    assert nodes["bandwidth"]["extra_data"] == {"bandwidth_check_fail_on_findings": False}
    assert nodes["pod_proof"]["extra_data"] == {"pod_proof_fail_on_findings": False}


def test_quarantine_workflow_plans_then_asks_then_applies(api, first):
    """check -> plan (report mode) -> approval -> apply -> report, the report on every path."""
    workflow = api.one("workflow_job_templates", name="rdma.node check, approve, quarantine, report")
    assert [q["variable"] for q in api.survey("workflow_job_templates", workflow["id"])["spec"]] == OBJECTS["rdma_awx_quarantine_workflow_survey"]
    nodes = {n["identifier"]: n for n in api.find("workflow_job_template_nodes", workflow_job_template=workflow["id"])}
    templates = {t["id"]: t["name"] for t in api.find("job_templates")}
    approval = api.one("workflow_approval_templates", name="Approve the quarantine of the nodes the plan names")
    assert "k8s_quarantine_approved_nodes" in approval["description"]
    assert {i: (templates.get(n["unified_job_template"]) or n["unified_job_template"]) for i, n in nodes.items()} == {
        "quarantine_checks": "rdma.node site", "quarantine_plan": "rdma.node quarantine", "approve_quarantine": approval["id"],
        "quarantine_apply": "rdma.node quarantine", "quarantine_report": "rdma.node fleet_report"}
    by_id = {n["id"]: i for i, n in nodes.items()}
    edges = {(identifier, edge, by_id[child]) for identifier, node in nodes.items()
             for edge in ("success_nodes", "failure_nodes", "always_nodes")
             for child in api.associated("workflow_job_template_nodes", node["id"], edge)}
    assert edges == {("quarantine_checks", "always_nodes", "quarantine_plan"),
                     ("quarantine_plan", "success_nodes", "approve_quarantine"), ("quarantine_plan", "failure_nodes", "quarantine_report"),
                     ("approve_quarantine", "success_nodes", "quarantine_apply"),
                     ("approve_quarantine", "failure_nodes", "quarantine_report"),
                     ("quarantine_apply", "always_nodes", "quarantine_report")}
    assert (nodes["quarantine_plan"]["extra_data"], nodes["quarantine_apply"]["extra_data"]) == (
        {"k8s_quarantine_mode": "report"}, {"k8s_quarantine_mode": "apply"})
    assert nodes["quarantine_checks"]["extra_data"] == {"rdma_fail_on_findings": False}


def test_every_path_ends_in_the_report(api, first):
    """Whatever each job's outcome, the workflow reaches the report: every node but the report has a
    next node on success and on failure, and the fake refused any cycle."""
    workflow = api.one("workflow_job_templates", name="rdma.node check, approve, remediate, report")
    nodes = api.find("workflow_job_template_nodes", workflow_job_template=workflow["id"])
    report = next(n["id"] for n in nodes if n["identifier"] == "fleet_report")

    def following(node_id, outcome):
        edges = ("success_nodes", "always_nodes") if outcome == "success" else ("failure_nodes", "always_nodes")
        return [c for e in edges for c in api.associated("workflow_job_template_nodes", node_id, e)]

    def walk(node_id, path):
        if node_id == report:
            return 1
        paths = 0
        for outcome in ("success", "failure"):
            nexts = following(node_id, outcome)
            assert nexts, "node %s has no next node on %s: %s" % (node_id, outcome, path)
            paths += sum(walk(n, path + [(node_id, outcome)]) for n in nexts)
        return paths

    root = next(n["id"] for n in nodes if n["identifier"] == "inventory_check")
    assert walk(root, []) == 14  # every combination of outcomes, each ending at the report


def test_second_apply_changes_nothing(second):
    assert second["run"].rc == 0, second["run"].stderr
    changes = task_changes(second["run"])
    # assert, EE/project/inventory/source, job templates, workflows, nodes of both, nodes with edges.
    assert len(changes) == 1 + 4 + 9 + 2 + (7 + 5) + (6 + 4)
    assert not [k for k, changed in changes.items() if changed]
    assert not [r for r in second["requests"] if r["changed"]]
    assert second["after"] == second["before"]
    assert not [r for r in second["requests"] if r["status"] >= 400 or r["unknown"]]


def test_check_mode_shows_the_change_and_writes_nothing(check):
    assert check["run"].rc == 0, check["run"].stderr
    changed = sorted(k for k, value in task_changes(check["run"]).items() if value)
    assert changed == [("Job templates with their surveys", "rdma.node driver_verify"),
                       ("Job templates with their surveys", "rdma.node ib_inventory")]
    writes = [(r["method"], r["path"]) for r in check["requests"] if r["method"] != "GET"]
    assert {w for w in writes if not w[1].startswith("/api/v2/tokens/")} == set()
    assert check["after"] == check["before"]


def test_missing_settings_are_one_sentence(api):
    result = apply(api, extra={"rdma_awx_ee_image": ""})
    assert result["run"].rc == 2
    message = result["run"].task_results("Check that what the objects point at is given")["localhost"]["msg"]
    assert message == (
        "configure_controller.yml needs rdma_awx_scm_url (the project's Git URL), rdma_awx_ee_image (the execution "
        "environment image), rdma_awx_machine_credential (an existing machine credential) and the controller in "
        "CONTROLLER_HOST (or controller_host); one of them is empty.")
    assert not [r for r in result["requests"] if r["method"] != "GET" and not r["path"].startswith("/api/v2/tokens/")]
