"""Every AWX survey question sets a variable that the job's playbook reads or one of its roles declares.

For each job template of extensions/awx/controller_objects.yml (and the workflows, whose answers reach
every job they run), each survey variable must be either

* an option of ``meta/argument_specs.yml`` of a role the playbook runs (through ``import_playbook``
  too), or
* a playbook variable read with ``| default(...)`` in that playbook,

with a type that a survey answer can carry (text for str/path, integer for int, float for float, a
"true"/"false" multiple choice for bool, a multiple choice within the option's choices) and the same
default. A default that differs on purpose is listed, with its reason, in
``rdma_awx_survey_default_overrides``; a listed one that does not differ is an error too.
"""

from __future__ import annotations

import jinja2
import jinja2.nodes
import pytest
import yaml

from testpaths import COLLECTION_ROOT

OBJECTS = yaml.safe_load((COLLECTION_ROOT / "extensions/awx/controller_objects.yml").read_text())
QUESTIONS = OBJECTS["rdma_awx_questions"]
OVERRIDES = OBJECTS["rdma_awx_survey_default_overrides"]
BOOL_CHOICES = {"true", "false"}


def role_options():
    options = {}
    for spec_file in (COLLECTION_ROOT / "roles").glob("*/meta/argument_specs.yml"):
        role = spec_file.parents[1].name
        options[role] = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"]["options"]
    return options


ROLE_OPTIONS = role_options()


def _strings(data):
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


def playbook_defaults(text):
    """``{variable: default}`` of every ``variable | default(<constant>)`` in a playbook's templates."""
    found = {}
    environment = jinja2.Environment()
    for string in _strings(yaml.safe_load(text)):
        if "{{" not in string:
            continue
        for node in environment.parse(string).find_all(jinja2.nodes.Filter):
            if node.name == "default" and isinstance(node.node, jinja2.nodes.Name) and node.args:
                try:
                    found.setdefault(node.node.name, node.args[0].as_const())
                except jinja2.nodes.Impossible:
                    continue  # a default that is itself a variable: not a constant to compare
    return found


def _included_roles(tasks):
    """Role names of include_role/import_role tasks, in blocks too."""
    for task in tasks or []:
        for key in ("ansible.builtin.include_role", "include_role", "ansible.builtin.import_role", "import_role"):
            if isinstance(task.get(key), dict):
                yield task[key]["name"].rsplit(".", 1)[-1]
        for part in ("block", "rescue", "always"):
            yield from _included_roles(task.get(part))


def playbook_scope(playbook, seen=None):
    """Roles and playbook defaults of ``playbooks/<name>``, following import_playbook."""
    seen = seen if seen is not None else set()
    path = COLLECTION_ROOT / playbook
    seen.add(path)
    text = path.read_text()
    roles, defaults = set(), playbook_defaults(text)
    for play in yaml.safe_load(text):
        for entry in play.get("roles") or []:
            roles.add((entry["role"] if isinstance(entry, dict) else entry).rsplit(".", 1)[-1])
        for section in ("pre_tasks", "tasks", "post_tasks"):
            roles.update(_included_roles(play.get(section)))
        imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if imported and (path.parent / imported) not in seen:
            sub_roles, sub_defaults = playbook_scope((path.parent / imported).relative_to(COLLECTION_ROOT).as_posix(), seen)
            roles |= sub_roles
            for name, value in sub_defaults.items():
                defaults.setdefault(name, value)
    return roles, defaults


def survey_default(question):
    """The value a survey answer gives the variable when the operator keeps the default."""
    if question["type"] == "multiplechoice" and set(question["choices"]) == BOOL_CHOICES:
        return question["default"] == "true"
    return question["default"]


def definition(variable, roles, defaults):
    """``(where, type, default, choices)`` of the variable for a job, or None."""
    for role in sorted(roles):
        option = ROLE_OPTIONS.get(role, {}).get(variable)
        if option is not None:
            return "role %s" % role, option.get("type", "str"), option.get("default"), option.get("choices")
    if variable in defaults:
        value = defaults[variable]
        kind = {bool: "bool", int: "int", float: "float", str: "str"}.get(type(value), type(value).__name__)
        return "playbook", kind, value, None
    return None


def type_fits(question, kind, choices):
    survey_type = question["type"]
    if survey_type in ("text", "textarea", "password"):
        return kind in ("str", "path")
    if survey_type == "integer":
        return kind == "int"
    if survey_type == "float":
        return kind == "float"
    if survey_type == "multiplechoice":
        if set(question["choices"]) == BOOL_CHOICES:
            return kind == "bool"
        return kind == "str" and choices is not None and set(question["choices"]) <= set(choices)
    if survey_type == "multiselect":
        return kind == "list" and choices is not None and set(question["choices"]) <= set(choices)
    return False


def surveys():
    """(survey owner, playbooks it runs, its variables)."""
    by_name = {t["name"]: t for t in OBJECTS["rdma_awx_job_templates"]}
    cases = [(t["name"], [t["playbook"]], t["survey"]) for t in OBJECTS["rdma_awx_job_templates"]]
    workflow_playbooks = [by_name[n["unified_job_template"]]["playbook"] for n in OBJECTS["rdma_awx_workflow_nodes"]
                          if "unified_job_template" in n]
    cases.append((OBJECTS["rdma_awx_workflow"], workflow_playbooks, OBJECTS["rdma_awx_workflow_survey"]))
    quarantine_playbooks = [by_name[n["unified_job_template"]]["playbook"] for n in OBJECTS["rdma_awx_quarantine_workflow_nodes"]
                            if "unified_job_template" in n]
    cases.append((OBJECTS["rdma_awx_quarantine_workflow"], quarantine_playbooks, OBJECTS["rdma_awx_quarantine_workflow_survey"]))
    return cases


@pytest.mark.parametrize("owner, playbooks, variables", surveys(), ids=[case[0] for case in surveys()])
def test_survey_variables_exist_with_type_and_default(owner, playbooks, variables):
    roles, defaults = set(), {}
    for playbook in playbooks:
        sub_roles, sub_defaults = playbook_scope(playbook)
        roles |= sub_roles
        defaults.update(sub_defaults)
    for variable in variables:
        question = QUESTIONS[variable]
        assert question["variable"] == variable
        found = definition(variable, roles, defaults)
        assert found is not None, "%s: survey variable %s is read by none of %s and declared by none of roles %s" % (
            owner, variable, playbooks, sorted(roles))
        where, kind, default, choices = found
        assert type_fits(question, kind, choices), "%s: %s is %s in %s, the survey asks %s" % (
            owner, variable, kind, where, question["type"])
        if survey_default(question) != default:
            assert OVERRIDES.get(variable), "%s: %s defaults to %r in %s, the survey to %r" % (
                owner, variable, default, where, question["default"])


def test_listed_overrides_differ_and_say_why():
    everything = {}
    for _owner, playbooks, _variables in surveys():
        for playbook in playbooks:
            roles, defaults = playbook_scope(playbook)
            for variable in QUESTIONS:
                found = definition(variable, roles, defaults)
                if found:
                    everything.setdefault(variable, found)
    for variable, reason in OVERRIDES.items():
        assert isinstance(reason, str) and len(reason.split()) >= 5, "%s: say why its default differs" % variable
        assert survey_default(QUESTIONS[variable]) != everything[variable][2], "%s is listed but does not differ" % variable


def test_every_question_is_used_and_complete():
    used = {v for _owner, _playbooks, variables in surveys() for v in variables}
    assert used == set(QUESTIONS), "questions no survey asks: %s" % sorted(set(QUESTIONS) - used)
    for variable, question in QUESTIONS.items():
        assert {"question_name", "question_description", "type", "variable", "required", "default"} <= set(question), variable


def test_the_checker_catches_a_mismatch():
    """The rules above are not vacuous: a survey that disagrees with the roles is caught."""
    roles, defaults = playbook_scope("playbooks/bandwidth_check.yml")
    where, kind, default, choices = definition("bandwidth_check_efficiency", roles, defaults)
    assert (where, kind, default) == ("role bandwidth_check", "float", 0.95)
    assert not type_fits({"type": "integer"}, kind, choices)
    assert definition("bandwidth_check_typo", roles, defaults) is None
    _roles, site_defaults = playbook_scope("playbooks/site.yml")
    # site.yml imports node_remediation.yml: its batches and max_fail_percentage are the site job's too.
    assert site_defaults["node_remediation_serial"] == "1,10%"
    assert site_defaults["node_remediation_max_fail_percentage"] == 0
    assert site_defaults["rdma_remediate"] is False and site_defaults["rdma_hosts"] == "all"
