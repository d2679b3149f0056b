# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gather plan of ``rdma.node.evaluate``: which fact modules to run on the node, with which
arguments, derived from what the roles' checks read and from the roles' options.

Nothing here is written per role. For each role that gathers (one whose options include
``<role>_gather``):

* the fact subsets are those its chosen checks read (``_registry.subsets_read``), less those a role
  option switches off: a boolean option named ``<role>_<subset>`` (``node_health_kernel_log``) that
  is false leaves the subset out, and the checks that need it say so;
* each subset's module gets the arguments the subset declares as its ``inputs``
  (``module_utils/_subsets``): the module option ``x`` takes the value of the role's computed
  parameter ``inputs[x]`` where the role has one (``@parameter``), else of the option
  ``<role>_<inputs[x]>``; an option the role lacks or leaves empty is left out, as ``omit`` would;
* the calls of several roles are merged into as few module runs as possible: ``rdma.node.site``
  gathers for three roles with one ``rdma.node.node_facts`` call.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.module_utils._subsets import DRIVER_FACTS, IB_FACTS, base_of, subsets
from ansible_collections.rdma.node.plugins.plugin_utils import _registry

NODE_FACTS = "rdma.node.node_facts"
# The fact modules node_facts runs in one call, with the namespace each fills (its gather option).
_NODE_FACTS_PARTS = {IB_FACTS: "rdma", DRIVER_FACTS: "rdma_driver"}


class GatherConflict(ValueError):
    """Two roles ask one fact module to read from different places."""


def gathers(role, options):
    """Whether ``role`` gathers its own facts (it has the option ``<role>_gather``)."""
    return role + "_gather" in options


def fact_modules():
    """The modules whose subsets a role may gather, and node_facts, which runs two of them at once."""
    return sorted({s.module for s in subsets()} | {NODE_FACTS})


def fact_names(module):
    """The top-level facts ``module`` fills by its subsets' declarations (``rdma`` for ib_facts; node_facts: those of the
    modules it runs). What else a node's module returns is no fact of the collection's: a node does not write the
    findings of a role (``<role>_findings``) or anything a later play reads as the controller's."""
    modules = list(_NODE_FACTS_PARTS) if module == NODE_FACTS else [module]
    return {path.split(".")[0].split("[")[0] for subset in subsets() if subset.module in modules for path in subset.fills}


def _input_value(role, suffix, options, facts):
    try:
        return _registry.computed_parameter(role, suffix, options, facts)
    except KeyError:
        return options.get(role + "_" + suffix)


def role_calls(role, options, facts=None, only=None, skip=None, force=False):
    """``(calls, unavailable)`` for one role: ``[(module, args), ...]`` that gather what its checks
    read, and ``{subset: reason}`` for the subsets its options switched off. No calls when the role
    is told not to gather (``<role>_gather: false``: the play gathered already), unless ``force``."""
    if not gathers(role, options) or (not force and not options[role + "_gather"]):
        return [], {}
    by_name = {s.name: s for s in subsets()}
    wanted, unavailable = [], {}
    for name in _registry.subsets_read(role, only, skip):
        switch = role + "_" + name
        if options.get(switch) is False:
            unavailable[name] = "%s is false" % switch
        else:
            wanted.append(by_name[name])
    calls = {}
    for subset in wanted:
        base = base_of(subset.module)
        args = calls.setdefault(subset.module, {})
        for chosen in (base, subset):
            for option, suffix in chosen.inputs.items():
                value = _input_value(role, suffix, options, facts or {})
                if value not in ("", None):
                    args[option] = value
            args.update(chosen.fixed)
        if subset is not base and subset.module == IB_FACTS:
            args.setdefault("gather_subset", []).append(subset.name)
    return list(calls.items()), unavailable


def merge(calls):
    """One call per module, and ib_facts with driver_facts as one node_facts call.

    Arguments of two calls of one module are united: ``gather_subset`` lists are joined, an argument
    only one call sets is kept, and two different values of one argument are a ``GatherConflict``
    (one call reads one tree). ``calls`` is ``[(role, module, args), ...]``.
    """
    merged, owners = {}, {}
    for role, module, args in calls:
        target = NODE_FACTS if module in _NODE_FACTS_PARTS else module
        into = merged.setdefault(target, {})
        if module in _NODE_FACTS_PARTS:
            gather = into.setdefault("gather", [])
            if _NODE_FACTS_PARTS[module] not in gather:
                gather.append(_NODE_FACTS_PARTS[module])
        for name, value in args.items():
            if name == "gather_subset":
                joined = into.setdefault(name, [])
                joined.extend(subset for subset in value if subset not in joined)
            elif name not in into:
                into[name], owners[(target, name)] = value, role
            elif into[name] != value:
                raise GatherConflict("the roles %s and %s ask %s to read %s from %r and from %r; one call reads one place, "
                                     "so give both roles' options the same value"
                                     % (owners[(target, name)], role, module, name, into[name], value))
    result = []
    for module, args in merged.items():
        if module == NODE_FACTS and len(args["gather"]) == 1:
            # One part only: its own module, which takes the same options.
            module = next(name for name, part in _NODE_FACTS_PARTS.items() if part == args["gather"][0])
            args = {name: value for name, value in args.items() if name != "gather"}
        result.append((module, args))
    return result


def plan(options, facts=None, only=None, skip=None, force=False):
    """``(calls, unavailable)`` for the roles of ``options`` (``{role: typed options}``): the merged
    module calls, and ``{role: {subset: reason}}`` for what their options switched off."""
    wanted, unavailable = [], {}
    for role, role_options in options.items():
        calls, off = role_calls(role, role_options, facts, only, skip, force)
        wanted.extend((role, module, args) for module, args in calls)
        unavailable[role] = off
    return merge(wanted), unavailable
