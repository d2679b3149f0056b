# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the readiness roles' one evaluate task derives from their options.

For ``ib_inventory``, ``driver_verify`` and ``node_health``, ``rdma.node.evaluate`` needs nothing but
the role's name: from the role's options (``_role_options``) it derives

* ``parameters(role, options, facts)``: the parameters the role's registered checks read (names
  without the role prefix), and
* ``gather_calls(role, options)``: the fact modules that gather what those checks read, with their
  arguments.

``merge_gather_calls`` turns the calls of several roles into as few module runs as possible: the
readiness run (``rdma.node.site``) gathers for three roles with one ``rdma.node.node_facts`` call.
"""

from __future__ import annotations

_PARAMETERS = {}
_GATHER = {}

# The fact modules whose options node_facts takes as they are, and the facts each one adds.
_NODE_FACTS_PARTS = {"rdma.node.ib_facts": "rdma", "rdma.node.driver_facts": "rdma_driver"}
_DEFAULT_SUBSET = ["ports"]


class GatherConflict(ValueError):
    """Two roles ask one fact module to read from different places."""


def _register(table, role):
    def decorate(function):
        table[role] = function
        return function
    return decorate


def has_inputs(role):
    return role in _PARAMETERS


def parameters(role, options, facts):
    return _PARAMETERS[role](options, facts)


def gather_calls(role, options, force=False):
    """``[(module, args), ...]`` that gather what the role's checks read; empty when the role is told
    not to gather (``<role>_gather: false``: the play gathered already), unless ``force``."""
    if not force and not options.get(role + "_gather", True):
        return []
    return _GATHER[role](options)


def metrics_file(role, options):
    """Where the role writes its metrics for node_exporter's textfile collector, if anywhere."""
    directory = options.get(role + "_metrics_dir")
    return directory.rstrip("/") + "/rdma_node.prom" if directory else None


def _without_empty(args):
    """Leave out the optional paths the role's options leave empty, as ``omit`` would."""
    return {name: value for name, value in args.items() if value not in ("", None)}


@_register(_PARAMETERS, "ib_inventory")
def _ib_inventory_parameters(options, facts):
    return {name: options["ib_inventory_" + name] for name in ("expected_ports", "allowed_down_ports", "required_netdevs")}


@_register(_GATHER, "ib_inventory")
def _ib_inventory_gather(options):
    return [("rdma.node.ib_facts", {"sysfs_root": options["ib_inventory_sysfs_root"]})]


def _dkms_names(options):
    """The DKMS modules to check, the role's and the operator's extra ones, each once, in order."""
    return list(dict.fromkeys(options["driver_verify_dkms_modules"] + options["driver_verify_dkms_extra_modules"]))


@_register(_PARAMETERS, "driver_verify")
def _driver_verify_parameters(options, facts):
    return {
        "required_modules": options["driver_verify_required_modules"],
        "gpudirect": options["driver_verify_gpudirect"],
        "require_uverbs": options["driver_verify_require_uverbs"],
        "ofed_version": options["driver_verify_ofed_version"],
        "check_dkms": options["driver_verify_check_dkms"],
        "dkms_modules": _dkms_names(options),
    }


@_register(_GATHER, "driver_verify")
def _driver_verify_gather(options):
    return [("rdma.node.driver_facts", _without_empty({
        "root": options["driver_verify_facts_root"],
        "dkms_modules": _dkms_names(options),
        "dkms_status_file": options["driver_verify_dkms_status_file"],
        "ofed_info_file": options["driver_verify_ofed_info_file"],
        "run_tools": options["driver_verify_run_tools"],
    }))]


@_register(_PARAMETERS, "node_health")
def _node_health_parameters(options, facts):
    # The previous run's counter sample, from the fact cache (none on a first run).
    previous = (facts.get("node_health_status") or {}).get("counter_sample")
    return {
        "counter_limits": options["node_health_counter_limits"],
        "counter_rise_limits": options["node_health_counter_rise_limits"],
        "carrier_losses_max": options["node_health_carrier_losses_max"],
        "gpudirect": options["node_health_gpudirect"],
        "locality_link_layers": options["node_health_locality_link_layers"],
        "roce_netns_mode": options["node_health_roce_netns_mode"],
        "memlock_wanted": str(options["node_health_memlock_wanted"]),
        "previous_sample": previous,
    }


@_register(_GATHER, "node_health")
def _node_health_gather(options):
    subsets = ["counters", "pcie", "gpudirect", "locality", "roce"] + (["kernel_log"] if options["node_health_kernel_log"] else [])
    calls = [("rdma.node.ib_facts", _without_empty({
        "sysfs_root": options["node_health_sysfs_root"],
        "proc_root": options["node_health_proc_root"],
        "gather_subset": subsets,
        "counters_interval": options["node_health_counters_interval"],
        "counters_resample_root": options["node_health_counters_resample_root"],
        "kernel_log_file": options["node_health_kernel_log_file"],
        "kernel_log_window_hours": options["node_health_kernel_log_window_hours"],
    }))]
    if options["node_health_memlock"]:
        calls.append(("rdma.node.container_limits", _without_empty({
            "service": options["node_health_containerd_service"],
            "address": options["node_health_containerd_address"],
            "namespaces": [],
            "expected_memlock": str(options["node_health_memlock_wanted"]),
            "probe_spec": options["node_health_memlock_probe_spec"],
            "probe_image": options["node_health_memlock_probe_image"],
        })))
    return calls


def merge_gather_calls(calls):
    """One call per module, and ib_facts with driver_facts as one node_facts call.

    Arguments of two calls of one module are united: ``gather_subset`` lists are joined, an argument
    only one call sets is kept, and two different values of one argument are a ``GatherConflict``
    (one call reads one tree). ``calls`` is ``[(role, module, args), ...]``.
    """
    merged, owners = {}, {}
    for role, module, args in calls:
        target = "rdma.node.node_facts" if module in _NODE_FACTS_PARTS else module
        into = merged.setdefault(target, {})
        if module in _NODE_FACTS_PARTS:
            into.setdefault("gather", [])
            if _NODE_FACTS_PARTS[module] not in into["gather"]:
                into["gather"].append(_NODE_FACTS_PARTS[module])
            if module == "rdma.node.ib_facts":
                args = dict(args, gather_subset=args.get("gather_subset", _DEFAULT_SUBSET))
        for name, value in args.items():
            if name == "gather_subset":
                subsets = into.setdefault(name, [])
                subsets.extend(subset for subset in value if subset not in subsets)
            elif name not in into:
                into[name], owners[(target, name)] = value, role
            elif into[name] != value:
                raise GatherConflict("the roles %s and %s ask %s to read %s from %r and from %r; one call reads one place, "
                                     "so give both roles' options the same value"
                                     % (owners[(target, name)], role, module, name, into[name], value))
    calls = []
    for module, args in merged.items():
        if module == "rdma.node.node_facts" and len(args["gather"]) == 1:
            # One part only: its own module, which takes the same options.
            module = next(name for name, part in _NODE_FACTS_PARTS.items() if part == args["gather"][0])
            args = {name: value for name, value in args.items() if name != "gather"}
            if module == "rdma.node.driver_facts":
                args.pop("gather_subset", None)
        calls.append((module, args))
    return calls
