"""The gather plan of rdma.node.evaluate: the fact modules and their arguments follow from what the
roles' checks read and from the roles' options, by the rules of plugin_utils/_gather_plan.py.

The roles' real specifications and defaults are read; the variables are what an inventory gives.
"""

from __future__ import annotations

import pytest
from ansible.template import Templar

from ansible_collections.rdma.node.plugins.module_utils import _subsets
from ansible_collections.rdma.node.plugins.plugin_utils import _evaluation  # noqa: F401 pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.plugin_utils import _gather_plan, _registry
from ansible_collections.rdma.node.plugins.plugin_utils._role_options import role_options

READINESS = ("ib_inventory", "driver_verify", "node_health")
# Parameters that a role's tasks pass at run time, on top of those derived from its options.
RUN_TIME_PARAMETERS = {"driver_verify": {"autoinstall"}}


def options(role, **variables):
    return role_options(role, variables, Templar(variables=variables).template)


def calls(role, **variables):
    return dict(_gather_plan.role_calls(role, options(role, **variables))[0])


def plan(roles, **variables):
    return _gather_plan.plan({role: options(role, **variables) for role in roles})


@pytest.mark.parametrize("role", READINESS)
def test_every_parameter_a_check_reads_comes_from_an_option_or_a_parameter_function(role):
    typed = options(role)

    def computed(name):
        try:
            _registry.computed_parameter(role, name, typed, {})
        except KeyError:
            return False
        return True

    unresolved = {name for name in _registry.declared_parameters(role) if role + "_" + name not in typed and not computed(name)}
    assert unresolved == RUN_TIME_PARAMETERS.get(role, set())


def test_driver_parameters_join_the_dkms_modules_once_and_the_gather_reads_the_same_list():
    variables = {"driver_verify_dkms_modules": ["mlnx-ofed-kernel", "knem"], "driver_verify_dkms_extra_modules": ["knem", "nvidia"]}
    assert _registry.parameters("driver_verify", options("driver_verify", **variables), {})["dkms_modules"] == ["mlnx-ofed-kernel", "knem", "nvidia"]
    assert calls("driver_verify", **variables)["rdma.node.driver_facts"]["dkms_modules"] == ["mlnx-ofed-kernel", "knem", "nvidia"]


def test_node_health_compares_with_the_previous_runs_counter_sample():
    sample = {"time": 1700000000.0, "ports": {"mlx5_0/1": {"symbol_error": 3}}}
    facts = {"node_health_status": {"counter_sample": sample}}
    assert _registry.parameters("node_health", options("node_health"), facts)["previous_sample"] == sample
    assert _registry.parameters("node_health", options("node_health"), {})["previous_sample"] is None


def test_a_role_told_not_to_gather_gathers_nothing_unless_forced():
    told = options("ib_inventory", ib_inventory_gather=False)
    assert _gather_plan.role_calls("ib_inventory", told) == ([], {})
    assert _gather_plan.role_calls("ib_inventory", told, force=True) == ([("rdma.node.ib_facts", {"sysfs_root": "/sys"})], {})


def test_the_subsets_are_those_the_checks_read():
    subsets = calls("node_health")["rdma.node.ib_facts"]["gather_subset"]
    read = {_registry.subset_of(path) for check in _registry.checks("node_health") for path in check.reads + check.optional}
    assert set(subsets) == read - {"ports", "memlock"}
    only = calls("node_health")  # with only/skip the plan follows the chosen checks
    assert only and dict(_gather_plan.role_calls("node_health", options("node_health"), only=["pcie_degraded"])[0]) == {
        "rdma.node.ib_facts": {"sysfs_root": "/sys", "gather_subset": ["pcie"]}}


def test_an_option_named_after_a_subset_switches_it_off_and_says_why():
    found, off = _gather_plan.role_calls("node_health", options("node_health", node_health_kernel_log=False, node_health_memlock=False))
    assert [module for module, _args in found] == ["rdma.node.ib_facts"]
    assert "kernel_log" not in dict(found)["rdma.node.ib_facts"]["gather_subset"]
    assert off == {"kernel_log": "node_health_kernel_log is false", "memlock": "node_health_memlock is false"}


def test_inputs_come_from_the_role_options_the_subset_names_and_empty_ones_are_left_out():
    got = calls("node_health")
    assert not {"counters_resample_root", "kernel_log_file"} & set(got["rdma.node.ib_facts"])
    assert got["rdma.node.ib_facts"]["proc_root"] == "/proc" and got["rdma.node.ib_facts"]["kernel_log_window_hours"] == 24
    assert got["rdma.node.container_limits"] == {"service": "containerd.service", "address": "/run/containerd/containerd.sock",
                                                 "expected_memlock": "unlimited", "namespaces": []}
    probe = calls("node_health", node_health_memlock_probe_spec="/etc/containerd/base-runtime-spec.json")
    assert probe["rdma.node.container_limits"]["probe_spec"] == "/etc/containerd/base-runtime-spec.json"


def test_every_input_a_subset_declares_is_an_option_of_the_fact_module():
    from ansible_collections.rdma.node.plugins.module_utils._driver_collect import DRIVER_OPTIONS
    from ansible_collections.rdma.node.plugins.module_utils._ib_collect import IB_OPTIONS
    from ansible_collections.rdma.node.plugins.modules import container_limits

    module_options = {_subsets.IB_FACTS: set(IB_OPTIONS), _subsets.DRIVER_FACTS: set(DRIVER_OPTIONS),
                      _subsets.CONTAINER_LIMITS: set(container_limits.ARGUMENT_SPEC)}
    for subset in _subsets.subsets():
        assert set(subset.inputs) | set(subset.fixed) <= module_options[subset.module], subset


def test_three_roles_gather_with_one_node_facts_call():
    merged, _off = plan(READINESS, node_health_memlock=False, driver_verify_run_tools=False)
    assert [module for module, _args in merged] == ["rdma.node.node_facts"]
    args = merged[0][1]
    assert args["gather"] == ["rdma", "rdma_driver"]
    assert set(args["gather_subset"]) == {"counters", "kernel_log", "pcie", "temperature", "gpudirect", "locality", "roce", "aer",
                                          "pcie_path", "roce_qos", "link_quality"}
    assert (args["sysfs_root"], args["root"], args["run_tools"]) == ("/sys", "/", False)


def test_one_module_is_kept_as_it_is():
    assert plan(["driver_verify"])[0] == [("rdma.node.driver_facts", {"root": "/", "dkms_modules": ["mlnx-ofed-kernel"], "run_tools": True})]
    assert plan(["ib_inventory"])[0] == [("rdma.node.ib_facts", {"sysfs_root": "/sys"})]


def test_node_health_reads_the_sysfs_tree_of_ib_inventory_unless_told_otherwise():
    merged = dict(plan(["ib_inventory", "node_health"], ib_inventory_sysfs_root="/srv/node-a/sys")[0])
    assert merged["rdma.node.ib_facts"]["sysfs_root"] == "/srv/node-a/sys"


def test_two_roles_reading_different_trees_is_a_conflict_naming_both():
    with pytest.raises(_gather_plan.GatherConflict) as error:
        plan(["ib_inventory", "node_health"], ib_inventory_sysfs_root="/srv/node-a/sys", node_health_sysfs_root="/srv/node-b/sys")
    assert str(error.value).startswith("the roles ib_inventory and node_health ask rdma.node.ib_facts to read sysfs_root "
                                       "from '/srv/node-a/sys' and from '/srv/node-b/sys'")


def test_only_the_collections_fact_modules_may_be_gathered():
    assert _gather_plan.fact_modules() == ["rdma.node.container_limits", "rdma.node.driver_facts", "rdma.node.ib_facts",
                                           "rdma.node.node_facts"]
