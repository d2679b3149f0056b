"""The first stage of rdma.node.evaluate: the options of the roles that gather, read as Ansible ranks
them and validated against the roles' specifications.

The roles' real argument specifications and defaults (roles/*/meta/argument_specs.yml,
roles/*/defaults/main.yml) are read; the variables are what an inventory or an AWX survey gives.
"""

from __future__ import annotations

import pytest
from ansible.template import Templar

from ansible_collections.rdma.node.plugins.plugin_utils import _role_options
from ansible_collections.rdma.node.plugins.plugin_utils._role_options import RoleOptionsError, load_specs, reads_options, role_options

READINESS = ("ib_inventory", "driver_verify", "node_health")


def rendered(values):
    """For variables that hold no templates."""
    return values


def options(role, **variables):
    """The options as the evaluate task reads them: Ansible's templar renders the roles' defaults that
    name another option (node_health_sysfs_root follows ib_inventory_sysfs_root)."""
    return role_options(role, variables, Templar(variables=variables).template)


def test_unset_options_take_the_roles_defaults_and_variables_win():
    got = options("ib_inventory", ib_inventory_expected_ports=[{"port": "mlx5_0/1"}], unrelated_variable=1)
    assert got["ib_inventory_expected_ports"] == [{"port": "mlx5_0/1"}]
    assert got["ib_inventory_sysfs_root"] == "/sys" and got["ib_inventory_fail_on_findings"] is True
    assert "unrelated_variable" not in got


def test_survey_text_is_typed_by_the_specification():
    # AWX surveys give text: the specification's types turn it into what the checks compare.
    got = options("node_health", node_health_carrier_losses_max="7", node_health_memlock="false", node_health_counters_interval="1.5")
    assert (got["node_health_carrier_losses_max"], got["node_health_memlock"], got["node_health_counters_interval"]) == (7, False, 1.5)


def test_only_the_roles_own_options_are_rendered():
    seen = []

    def template(values):
        seen.extend(values)
        return values

    role_options("driver_verify", {"driver_verify_ofed_version": "23.10", "hostvars": {"huge": 1}, "ib_inventory_gather": False}, template)
    assert seen and all(name.startswith("driver_verify_") for name in seen)


@pytest.mark.parametrize("variables, expected", [
    ({"node_health_carrier_losses_max": "many"}, "node_health_carrier_losses_max"),
    ({"node_health_gpudirect": "sometimes"}, "node_health_gpudirect"),
    ({"ib_inventory_expected_ports": "mlx5_0/1"}, "ib_inventory_expected_ports"),
])
def test_a_value_that_does_not_fit_names_the_role_and_the_option(variables, expected):
    role = expected.split("_")[0] + "_" + expected.split("_")[1]
    with pytest.raises(RoleOptionsError) as error:
        role_options(role, variables, rendered)
    message = str(error.value)
    assert message.startswith("the options of the role rdma.node.%s are not valid: " % role)
    assert expected in message and "\n" not in message


def test_an_unknown_role_is_one_sentence():
    with pytest.raises(RoleOptionsError, match=r"^rdma.node has no role 'ib_inventori' with an argument specification; expected one of "):
        role_options("ib_inventori", {}, rendered)


@pytest.mark.parametrize("role", sorted(load_specs()))
def test_every_default_of_a_specification_is_the_roles_default(role):
    # Outside the role (rdma.node.site evaluates three roles in one task) the defaults file is what
    # stands for the role's defaults: it must say what the specification says.
    spec, defaults, _unemulated = load_specs()[role]
    assert set(defaults) <= set(spec), "defaults/main.yml sets options the specification does not declare"
    for name, option in spec.items():
        if "default" in option and not str(defaults.get(name, "")).startswith("{{"):
            assert defaults[name] == option["default"], name


def test_the_roles_that_gather_are_the_ones_whose_options_evaluate_reads():
    assert [role for role in sorted(load_specs()) if reads_options(role)] == sorted(READINESS)


def test_a_default_that_names_another_option_is_rendered_as_ansible_renders_role_defaults():
    assert options("node_health", ib_inventory_sysfs_root="/srv/node-a/sys")["node_health_sysfs_root"] == "/srv/node-a/sys"
    assert options("node_health")["node_health_sysfs_root"] == "/sys"


def test_a_choice_is_the_specifications_rule_and_names_the_option():
    with pytest.raises(RoleOptionsError, match=r"node_health_gpudirect.*one of: auto, required, off, got: yes"):
        options("node_health", node_health_gpudirect="yes")


def test_overrides_given_to_the_task_are_validated_with_the_rest():
    assert role_options("node_health", {}, rendered, {"node_health_carrier_losses_max": "3"})["node_health_carrier_losses_max"] == 3
    with pytest.raises(RoleOptionsError, match="node_health_carrier_losses_max"):
        role_options("node_health", {}, rendered, {"node_health_carrier_losses_max": "three"})


@pytest.mark.parametrize("layout, said", [
    ({"vars/main.yml": "node_health_gpudirect: off\n"}, "vars/, which Ansible ranks above the inventory"),
    ({"defaults/remediate.yml": "x: 1\n"}, "defaults for other entry points (remediate.yml)"),
])
def test_a_role_with_what_evaluate_does_not_emulate_is_refused_in_one_sentence(tmp_path, monkeypatch, layout, said):
    role = tmp_path / "node_health"
    (role / "meta").mkdir(parents=True)
    (role / "defaults").mkdir()
    (role / "meta/argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      node_health_gather: {type: bool, default: true}\n")
    (role / "defaults/main.yml").write_text("node_health_gather: true\n")
    for name, text in layout.items():
        (role / name).parent.mkdir(exist_ok=True)
        (role / name).write_text(text)
    monkeypatch.setattr(_role_options, "_SPECS", {})
    _role_options.load_specs(str(tmp_path))
    with pytest.raises(RoleOptionsError) as error:
        role_options("node_health", {}, rendered)
    assert str(error.value) == ("the role rdma.node.node_health has %s; rdma.node.evaluate reads a role's options from its defaults "
                                "and the main entry point only, so include the role instead of evaluating it by name" % said)
