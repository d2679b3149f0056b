# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rdma.node.ib_facts (and rdma.node.node_facts) run on the node: the sysfs reader and the
health subsets. The module files keep only their documentation."""

from __future__ import annotations

import os
import time

from ansible_collections.rdma.node.plugins.module_utils._files import FileReadError, read_bytes, take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._ib_common import SUBSETS, resolve_subsets
from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather

# The health readers (_sysfs_health, _health_collect) are imported only when a health subset is asked
# for: on a node, importing them costs more than reading the ports does, and the port inventory of a
# large fleet asks for the ports only.

# kernel_log is not part of "all": it runs journalctl, where every other subset only reads files.
KERNEL_LOG = "kernel_log"
SUBSET_CHOICES = ["all"] + list(SUBSETS) + [KERNEL_LOG]
KERNEL_LOG_MAX_BYTES = 64 * 1024 * 1024
# Bounds of the options: ten years of log, five minutes between two counter reads (the module waits).
KERNEL_LOG_WINDOW_MAX_HOURS = 87600
COUNTERS_INTERVAL_MAX_SECONDS = 300

# The options of the RDMA facts, shared by the modules that gather them.
IB_OPTIONS = {
    "sysfs_root": {"type": "path", "default": "/sys"},
    "proc_root": {"type": "path", "default": "/proc"},
    "gather_subset": {"type": "list", "elements": "str", "choices": SUBSET_CHOICES, "default": ["ports"]},
    "counters_interval": {"type": "float", "default": 0},
    "counters_resample_root": {"type": "path"},
    "kernel_log_file": {"type": "path"},
    "kernel_log_window_hours": {"type": "int", "default": 24},
}


def collect_ib(module):
    """``(rdma facts, warnings)`` for the module's IB_OPTIONS; fails the module on a bad sysfs root."""
    root = module.params["sysfs_root"]
    if not os.path.isdir(root):
        module.fail_json(msg="sysfs_root %s is not a directory; expected the path of a sysfs tree such as /sys" % root)
    facts, warnings = gather(root)
    subsets = resolve_subsets(module.params["gather_subset"])
    if subsets != {"ports"}:
        from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import add_health_facts
        add_health_facts(facts, root, subsets, module.params["proc_root"])
    if "counters" in subsets:
        _resample_counters(module, facts)
    if KERNEL_LOG in module.params["gather_subset"]:
        facts[KERNEL_LOG] = _kernel_log(module, facts, root)
    return facts, warnings + take_read_warnings()


def _resample_counters(module, facts):
    """Time stamp the counters; with ``counters_interval`` keep them as the earlier sample, wait, and
    read them again (from ``counters_resample_root`` when given), so one call yields a delta."""
    interval = module.params["counters_interval"]
    if not 0 <= interval <= COUNTERS_INTERVAL_MAX_SECONDS:  # also false for NaN
        module.fail_json(msg="counters_interval is %s; expected a number of seconds from 0 to %d (0: one sample)"
                         % (interval, COUNTERS_INTERVAL_MAX_SECONDS))
    facts["counters_time"] = time.time()
    if not interval:
        return
    from ansible_collections.rdma.node.plugins.module_utils._health_collect import error_counters
    from ansible_collections.rdma.node.plugins.module_utils._sysfs_health import port_counters

    again_root = module.params["counters_resample_root"] or module.params["sysfs_root"]
    if not os.path.isdir(again_root):
        module.fail_json(msg="counters_resample_root %s is not a directory; expected a sysfs tree such as /sys" % again_root)
    facts["counters_earlier"] = {"time": facts["counters_time"], "ports": error_counters(facts["ports"])}
    time.sleep(interval)
    ib_dir = os.path.join(again_root, "class", "infiniband")
    for port in facts["ports"]:
        port.update(port_counters(os.path.join(ib_dir, port["device"], "ports", str(port["port"]))))
    facts["counters_time"] = time.time()
    facts["counters_interval_seconds"] = facts["counters_time"] - facts["counters_earlier"]["time"]


def _kernel_log(module, facts, root):
    """Carrier events of the RDMA netdevs in the kernel log window: from ``kernel_log_file``, or
    from ``journalctl -k`` on the node (which keeps only the window itself)."""
    from ansible_collections.rdma.node.plugins.module_utils._health_collect import journal_kernel_log, kernel_log_facts

    hours = module.params["kernel_log_window_hours"]
    if not 1 <= hours <= KERNEL_LOG_WINDOW_MAX_HOURS:
        module.fail_json(msg="kernel_log_window_hours is %s; expected a whole number of hours from 1 to %d (ten years)"
                         % (hours, KERNEL_LOG_WINDOW_MAX_HOURS))
    path = module.params["kernel_log_file"]
    if path:
        try:
            data = read_bytes(path, "a saved kernel log", KERNEL_LOG_MAX_BYTES)
        except FileReadError as exc:  # also FileShapeError: one sentence naming the file
            module.fail_json(msg="kernel_log_file: %s" % exc)
        if data is None:
            module.fail_json(msg="kernel_log_file %s does not exist; expected saved journalctl -k or dmesg output" % path)
        return kernel_log_facts(data, facts["netdevs"], root, hours, path, False)
    journalctl = module.get_bin_path("journalctl")
    if journalctl is None:
        return dict(kernel_log_facts("", facts["netdevs"], root, hours, None, True), error="journalctl is not installed")
    # Kernel messages and systemd-networkd's carrier lines of the window, read with a bound.
    return journal_kernel_log(journalctl, facts["netdevs"], root, hours)
