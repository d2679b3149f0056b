# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rdma.node.ib_facts (and rdma.node.node_facts) run on the node: the ports (always), then the
reader of each fact subset asked for. The module files keep only their documentation.

The subsets beyond the ports declare themselves where they are read (``_subsets.reader``), in the
modules that ``load_readers`` imports; nothing here lists them.
"""

from __future__ import annotations

import os

from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._subsets import IB_FACTS, FactReadError, declare, subsets
from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather

# The base subset, always read: every other reader adds to the facts it builds.
PORTS = declare("ports", IB_FACTS, fills=("rdma.devices", "rdma.ports", "rdma.netdevs", "rdma.summary"), inputs=("sysfs_root",),
                base=True)
ALL = "all"

# The options of the RDMA facts, shared by the modules that gather them. gather_subset has no
# choices here: the readers that define them are imported only when a subset beyond ports is asked
# for, and the names are checked then (one sentence for a name no reader declares).
IB_OPTIONS = {
    "sysfs_root": {"type": "path", "default": "/sys"},
    "proc_root": {"type": "path", "default": "/proc"},
    "gather_subset": {"type": "list", "elements": "str", "default": ["ports"]},
    "counters_interval": {"type": "float", "default": 0},
    "counters_resample_root": {"type": "path"},
    "kernel_log_file": {"type": "path"},
    "kernel_log_window_hours": {"type": "int", "default": 24},
    "lspci_file": {"type": "path"},
    "roce_qos_tools": {"type": "bool", "default": True},
    "roce_qos_dir": {"type": "path"},
    "mlxlink": {"type": "bool", "default": False},
    "mlxlink_dir": {"type": "path"},
}


def load_readers():
    """Import the modules whose readers declare the subsets beyond the ports, in the order they read
    (files first; the counters' second sample and the kernel log last); returns them. A new reader
    module is one line here: the node imports only what a module names."""
    from ansible_collections.rdma.node.plugins.module_utils import _sysfs_health
    from ansible_collections.rdma.node.plugins.module_utils import _pcie_aer
    from ansible_collections.rdma.node.plugins.module_utils import _pcie_path
    from ansible_collections.rdma.node.plugins.module_utils import _roce_qos
    from ansible_collections.rdma.node.plugins.module_utils import _link_quality
    from ansible_collections.rdma.node.plugins.module_utils import _health_collect

    return _sysfs_health, _pcie_aer, _pcie_path, _roce_qos, _link_quality, _health_collect


def wanted_subsets(requested):
    """The subsets of ``requested`` in the order they are read, ports first; ``all`` is every subset
    that does not run a command. A name no reader declares raises FactReadError."""
    requested = list(requested or [PORTS.name])
    if requested == [PORTS.name]:
        return [PORTS]
    # In load_readers' order, whatever order a process imported the modules in (the controller imports
    # the checks, which import some readers' modules first); declaration order within a module.
    order = {module.__name__: index for index, module in enumerate(load_readers())}
    known = sorted(subsets(IB_FACTS), key=lambda s: (not s.base, order.get(getattr(s.reader, "__module__", None), len(order))))
    unknown = [name for name in requested if name != ALL and name not in {s.name for s in known}]
    if unknown:
        raise FactReadError("gather_subset: %s is not a fact subset; expected %s or %s"
                            % (", ".join(unknown), ", ".join(s.name for s in known), ALL))
    return [s for s in known if s is PORTS or s.name in requested or (ALL in requested and s.in_all)]


def read_ib_facts(params, module=None):
    """``(rdma facts, warnings)`` for the IB_OPTIONS values in ``params`` (defaults where absent).

    ``module`` runs the commands of the readers that run one (kernel_log's journalctl); without it
    they say that they could not. Bad option values raise FactReadError with one sentence."""
    params = dict({name: spec.get("default") for name, spec in IB_OPTIONS.items()}, **params)
    root = params["sysfs_root"]
    if not os.path.isdir(root):
        raise FactReadError("sysfs_root %s is not a directory; expected the path of a sysfs tree such as /sys" % root)
    chosen = wanted_subsets(params["gather_subset"])
    take_read_warnings()  # this read's warnings only
    facts, warnings = gather(root)
    for subset in chosen:
        if subset.reader is not None:
            subset.reader(facts, params, module)
    if facts.get("counters_earlier") is not None:
        # The counters were read twice (counters_interval): the readers that compare two samples
        # read again now, from the same tree as the counters' second read.
        again_root = params.get("counters_resample_root") or root
        for subset in chosen:
            if subset.again is not None:
                subset.again(facts, params, again_root)
    return facts, warnings + take_read_warnings()


def collect_ib(module):
    """``(rdma facts, warnings)`` for the module's IB_OPTIONS; one sentence and no facts on bad input."""
    try:
        return read_ib_facts(module.params, module)
    except FactReadError as exc:
        module.fail_json(msg=str(exc))
