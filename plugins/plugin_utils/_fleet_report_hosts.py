# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what the report needs out of Ansible's hostvars (live, or loaded from a fact cache).

Only the variables the report reads are pulled out of each host's variables, and they are turned
into plain Python data at once: hostvars are lazy and their values carry ansible-core's tags, which
would make every later step (the report, its renderings) slower at fleet scale.

They are made safe here too, once for every rendering: host and group names are spelled out where
they hold control characters (``_safe_text.visible``), and every other text loses its escape
sequences and control characters (``_safe_text.clean``). The hosts to fail are named by their
inventory names, as Ansible knows them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.rdma.node.plugins.plugin_utils._findings import plain
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report, failing_hosts
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_physical import VIEWS_KEY, report_views
from ansible_collections.rdma.node.plugins.plugin_utils._safe_text import clean, visible

# The variables of a host the report reads besides the roles' findings and status; rdma_unreachable
# is what the collection's gather leaves on a host it could not reach ({"reason", "time"}).
HOST_KEYS = ("group_names", "ansible_facts", "rdma_unreachable")


def names(value, what):
    """``value`` as a list of host names, or ValueError naming ``what``."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError("expected %s as a list of names, got %r" % (what, value))
    return [str(v) for v in value]


# What the report reads of a host's ansible_facts besides the roles' results (which a fact cache keeps
# there): the RDMA devices with their PCIe links, and the ports summary, plus the compact views of the
# physical layer and of what the group consensus compares (_fleet_report_physical). The rest of the facts
# (ports, counters, GID tables, AER and mlxlink trees...) is never copied, so the report's cost does not
# grow with what was gathered.
RDMA_FACT_KEYS = ("summary", "devices", "pcie", "counters_interval_seconds")


def _report_facts(facts, wanted, where):
    if not isinstance(facts, Mapping):
        return plain(facts, where)
    kept = {key: plain(facts[key], "%s.%s" % (where, key)) for key in wanted if key in facts}
    rdma = facts.get("rdma")
    if isinstance(rdma, Mapping):
        kept["rdma"] = {key: plain(rdma[key], "%s.rdma.%s" % (where, key)) for key in RDMA_FACT_KEYS if key in rdma}
    # The physical layer and the group consensus: compact views made here, not the facts' trees.
    kept[VIEWS_KEY] = plain(report_views(facts), "%s (report views)" % where)
    return kept


def host_variables(hostvars, name, wanted):
    """The ``wanted`` variables of host ``name``, as plain data ({} for a host hostvars does not know).

    Ansible's hostvars render every value they give out; the variables the report reads are facts and
    inventory names, never templates, so they are read raw (``raw_get``) where hostvars can."""
    try:
        host_vars = hostvars.raw_get(name) if hasattr(hostvars, "raw_get") else hostvars[name]
    except Exception:  # hostvars raises for a host outside the inventory (an implicit localhost)
        return {}
    if not isinstance(host_vars, Mapping):  # raw_get gives an undefined value for such a host
        return {}
    return {key: _report_facts(host_vars.get(key), wanted, "ansible_facts of %s" % name) if key == "ansible_facts"
            else plain(host_vars.get(key), "%s of %s" % (key, name)) for key in wanted if key in host_vars}


def _safe_host(host_vars):
    """The host's variables with control characters gone from every text, its group names spelled out."""
    safe = clean(host_vars)
    if isinstance(host_vars.get("group_names"), list):
        safe["group_names"] = [visible(g) for g in host_vars["group_names"]]
    return safe


def report_from_hostvars(host_names, hostvars, title="RDMA fleet report", sources=None, cluster_hosts=("localhost",), removed=()):
    """The report structure for ``host_names`` plus ``failing_hosts`` (by inventory name).

    ``sources`` are the roles whose ``<role>_findings``/``<role>_status`` are read (default: every role
    of the check registry); ``cluster_hosts`` are where cluster-scope roles (k8s_rdma) ran; ``removed``
    are the hosts Ansible took out of the play before the report (unreachable, or failed).
    """
    host_names = names(host_names, "the host names")
    if not isinstance(hostvars, Mapping) and not hasattr(hostvars, "__getitem__"):
        raise ValueError("expected hostvars")
    sources = tuple(names(sources, "sources") if sources else registered_roles())
    wanted = HOST_KEYS + tuple(s + suffix for s in sources for suffix in ("_findings", "_status"))
    shown = {}
    for name in host_names:
        shown.setdefault(visible(name), name)
    hosts = {label: _safe_host(host_variables(hostvars, name, wanted)) for label, name in shown.items()}
    extra = [_safe_host(host_variables(hostvars, name, wanted))
             for name in names(list(cluster_hosts or ()), "cluster_hosts") if name not in shown.values()]
    removed = {visible(name) for name in names(list(removed or ()), "removed")}
    report = build_report(hosts, sources, title=clean(title), cluster_vars=extra, removed=removed)
    report["failing_hosts"] = {shown[label]: message for label, message in failing_hosts(report).items()}
    return report
