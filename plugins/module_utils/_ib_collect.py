# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rdma.node.ib_facts (and rdma.node.node_facts) run on the node: the sysfs reader and the
health subsets. The module files keep only their documentation."""

from __future__ import annotations

import os

from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather
from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import SUBSETS, add_health_facts, resolve_subsets

SUBSET_CHOICES = ["all"] + list(SUBSETS)

# The options of the RDMA facts, shared by the modules that gather them.
IB_OPTIONS = {
    "sysfs_root": {"type": "path", "default": "/sys"},
    "proc_root": {"type": "path", "default": "/proc"},
    "gather_subset": {"type": "list", "elements": "str", "choices": SUBSET_CHOICES, "default": ["ports"]},
}


def collect_ib(module):
    """``(rdma facts, warnings)`` for the module's IB_OPTIONS; fails the module on a bad sysfs root."""
    root = module.params["sysfs_root"]
    if not os.path.isdir(root):
        module.fail_json(msg="sysfs_root %s is not a directory; expected the path of a sysfs tree such as /sys" % root)
    facts, warnings = gather(root)
    subsets = resolve_subsets(module.params["gather_subset"])
    if subsets != {"ports"}:
        add_health_facts(facts, root, subsets, module.params["proc_root"])
    return facts, warnings + take_read_warnings()
