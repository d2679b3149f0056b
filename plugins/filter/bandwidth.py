# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that plan and judge perftest bandwidth runs (the bandwidth_check role uses them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule, call

_plan = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan")
_checks = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._checks.bandwidth")


def bandwidth_ports(ports, link_layers=None, only=None, exclude=None, efficiency=0.95, gid_tables=None, gid_index=None,
                    gpu_mode="host", efficiency_gpu=0.9, rdma=None):
    """The ports of one host to test, with the memory of each test, expected rates and RoCE GID indexes."""
    return call("bandwidth_ports", _plan.select_ports, ports, link_layers=link_layers, only=only, exclude=exclude,
                efficiency=efficiency, gid_tables=gid_tables, gid_index=gid_index, gpu_mode=gpu_mode,
                efficiency_gpu=efficiency_gpu, rdma=rdma)


def bandwidth_pairs(hosts, rounds=None):
    """Rounds of pairs of ``hosts``: every host in at most one pair per round (``rounds``: cover by default)."""
    if isinstance(hosts, (str, Mapping)) or not isinstance(hosts, Sequence):
        raise AnsibleFilterError("rdma.node.bandwidth_pairs: expected a list of host names, got %r" % (hosts,))
    return call("bandwidth_pairs", lambda h, r: _plan.pairs_as_lists(_plan.pair_rounds(h, r)), list(hosts),
                _plan.ROUNDS_COVER if rounds is None else rounds)


def bandwidth_plan(hosts, order=None, tcp_port_base=None, rounds=None, tool="ib_write_bw", loopback=True, pairs=True):
    """The loopback and pair tests of a set of hosts (``tcp_port_base`` and ``rounds``: the plan's defaults when None)."""
    return call("bandwidth_plan", _plan.build_plan, hosts, order=order,
                tcp_port_base=_plan.DEFAULT_TCP_PORT_BASE if tcp_port_base is None else tcp_port_base,
                rounds=_plan.ROUNDS_COVER if rounds is None else rounds, tool=tool, loopback=bool(loopback), pairs=bool(pairs))


def bandwidth_verdicts(plan, host, loopback_results=None, pair_runs=None, check_mode=False, info=None):
    """Findings and status of one host after its tests ran: the role's registered checks, as rdma.node.evaluate runs them."""
    return call("bandwidth_verdicts", _checks.evaluate, plan, host, loopback_results=loopback_results, pair_runs=pair_runs,
                check_mode=bool(check_mode), selection=info)


def bandwidth_job_processes(ps_output, job):
    """The processes of one perftest job, from ``ps e -e -ww -o pid=,pgid=,args=`` output."""
    if isinstance(ps_output, Mapping):
        ps_output = ps_output.get("stdout", "")
    if not isinstance(ps_output, str):
        raise AnsibleFilterError("rdma.node.bandwidth_job_processes: expected ps output as text, got %r" % (ps_output,))
    return call("bandwidth_job_processes", _plan.job_processes, ps_output, job)


class FilterModule:
    def filters(self):
        return {
            "bandwidth_ports": bandwidth_ports,
            "bandwidth_pairs": bandwidth_pairs,
            "bandwidth_plan": bandwidth_plan,
            "bandwidth_verdicts": bandwidth_verdicts,
            "bandwidth_job_processes": bandwidth_job_processes,
        }
