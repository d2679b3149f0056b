# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Group consensus beyond firmware: the value most hosts of an inventory group share, and the hosts
that differ from it, for every setting a fleet should have once.

No manifest to maintain: the group's value is what its hosts have. For each setting below, a host
whose value differs from the majority of its group gets a warning naming the majority value and how
many hosts hold it; when no value has more hosts than every other, the split is said as a split and
every host of it is named (nothing says which side is right).

Like the other ``fleet_consistency`` checks these run where all hosts' facts meet (the fleet report).
Their fact is ``hosts``: ``{host: {"group_names", "rdma", "rdma_driver", "reported"}}`` (what
:func:`consensus_facts` keeps of ``ansible_facts.rdma`` and ``ansible_facts.rdma_driver`` of each host,
and the ``role/check`` names of the host's own findings); :func:`consensus_values` turns one host into
the values compared, and a host without a fact is left out of that setting (not counted either way),
as is a setting the host's own check already found wrong (:data:`COVERED_BY`: a PCIe link that
trained below its maximum is ``pcie_degraded``'s, QoS that misses the group's expectation is
``roce_qos``'s).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping

from ansible_collections.rdma.node.plugins.plugin_utils._checks.fleet import FACTS, ROLE
from ansible_collections.rdma.node.plugins.plugin_utils._checks.fleet import _groups as groups_of
from ansible_collections.rdma.node.plugins.plugin_utils._registry import check


# Settings that a host's own check judges against its role's expectations: where that check found
# something on the host, the setting is said there and is left out here (neither reported again nor
# counted in its group's vote), so one fault is one finding.
COVERED_BY = {
    "PCIe link": ("node_health/pcie_degraded", "node_health/pcie_device_gone"),
    "port rate": ("ib_inventory/rate_degraded",),
    "IOMMU mode": ("node_health/iommu_mode",),
    "RoCE QoS": ("node_health/roce_qos",),
    "OFED release": ("driver_verify/ofed_version",),
}


def _text_set(values):
    values = sorted({v for v in values if v is not None})
    return ", ".join(values) if values else None


def _pcie_text(link):
    generation, width = link.get("current_generation"), link.get("current_width")
    if generation is None and width is None:
        return None
    return "Gen%s x%s" % (generation if generation is not None else "?", width if width is not None else "?")


def _qos_text(entry):
    pfc = (entry.get("pfc") or {}).get("enabled_priorities")
    trust = (entry.get("trust") or {}).get("mode")
    ecn = entry.get("ecn") or {}
    if pfc is None and trust is None and not ecn.get("np_read"):
        return None
    return "trust %s, PFC on %s, ECN on %s" % (
        trust or "?", ",".join(str(p) for p in pfc) if pfc else ("none" if pfc == [] else "?"),
        ",".join(str(p) for p in ecn.get("np") or []) or ("none" if ecn.get("np_read") else "?"))


def consensus_values(host):
    """``{setting: value}`` of one host (``{"rdma", "rdma_driver"}``): the values its group is compared on.

    Settings: ``OFED release``, ``kernel``, ``DKMS <module> version``, ``<hca type> port rate`` (the
    rates and widths of its ACTIVE ports), ``<hca type> PCIe link`` (trained generation and width),
    ``IOMMU mode`` of the HCAs and GPUs on GPU-HCA paths, and ``RoCE QoS`` (trust, PFC and ECN
    priorities of the RoCE netdevs). A setting the host has no fact for is left out.
    """
    rdma = (host or {}).get("rdma") or {}
    driver = (host or {}).get("rdma_driver") or {}
    values = {"OFED release": driver.get("ofed_version"), "kernel": driver.get("running_kernel")}
    for name, view in sorted((((driver.get("dkms") or {}).get("relevant")) or {}).items()):
        if isinstance(view, dict) and view.get("versions"):
            values["DKMS %s version" % name] = ", ".join(view["versions"])
    devices = rdma.get("devices") or {}
    by_type = collections.defaultdict(list)
    for port in rdma.get("ports") or []:
        device = devices.get(port.get("device")) or {}
        if port.get("state") == "ACTIVE" and device.get("hca_type") and not device.get("virtual_function"):
            by_type[device["hca_type"]].append("%g Gb/s %s" % (port.get("rate_gbps") or 0, port.get("width") or "?"))
    for hca_type, rates in by_type.items():
        values["%s port rate" % hca_type] = _text_set(rates)
    links = collections.defaultdict(list)
    for name, link in (rdma.get("pcie") or {}).items():
        device = devices.get(name) or {}
        if isinstance(link, dict) and device.get("hca_type") and not device.get("virtual_function"):
            links[device["hca_type"]].append(_pcie_text(link))
    for hca_type, texts in links.items():
        values["%s PCIe link" % hca_type] = _text_set(texts)
    path = rdma.get("pcie_path") or {}
    modes = [(f.get("iommu") or {}).get("type") or (f.get("iommu") or {}).get("mode")
             for f in (path.get("functions") or {}).values() if f.get("role") in ("hca", "gpu")]
    values["IOMMU mode"] = _text_set(modes)
    qos = [_qos_text(e) for e in ((rdma.get("roce_qos") or {}).get("netdevs") or {}).values()]
    values["RoCE QoS"] = _text_set(qos)
    return {k: v for k, v in values.items() if v is not None}


def _dict(value):
    return value if isinstance(value, Mapping) else {}


def _picked(value, keys):
    value = _dict(value)
    return {key: value.get(key) for key in keys if key in value}


def consensus_facts(rdma, driver):
    """``{"rdma", "rdma_driver"}`` with only what :func:`consensus_values` reads of a host's facts: what
    the fleet report keeps of each host for this check (a few hundred bytes, not the facts' trees)."""
    rdma, driver = _dict(rdma), _dict(driver)
    relevant = _dict(_dict(driver.get("dkms")).get("relevant"))
    path = _dict(rdma.get("pcie_path"))
    return {
        "rdma": {
            "devices": {name: _picked(device, ("hca_type", "virtual_function")) for name, device in _dict(rdma.get("devices")).items()},
            "ports": [_picked(port, ("device", "state", "rate_gbps", "width")) for port in rdma.get("ports") or [] if isinstance(port, Mapping)],
            "pcie": {name: _picked(link, ("current_generation", "current_width")) for name, link in _dict(rdma.get("pcie")).items()},
            "pcie_path": {"functions": {address: {"role": _dict(entry).get("role"), "iommu": _picked(_dict(entry).get("iommu"), ("type", "mode"))}
                                        for address, entry in _dict(path.get("functions")).items()}},
            "roce_qos": {"netdevs": {name: {"pfc": _picked(_dict(entry).get("pfc"), ("enabled_priorities",)),
                                            "trust": _picked(_dict(entry).get("trust"), ("mode",)),
                                            "ecn": _picked(_dict(entry).get("ecn"), ("np", "np_read"))}
                                     for name, entry in _dict(_dict(rdma.get("roce_qos")).get("netdevs")).items()}},
        },
        "rdma_driver": {"ofed_version": driver.get("ofed_version"), "running_kernel": driver.get("running_kernel"),
                        "dkms": {"relevant": {name: _picked(view, ("versions",)) for name, view in relevant.items()}}},
    }


def _reported(setting, host):
    """Whether a check of the host itself already found this setting wrong (COVERED_BY)."""
    found = set((host or {}).get("reported") or ())
    return any(setting.endswith(suffix) and found & set(checks) for suffix, checks in COVERED_BY.items())


@check(ROLE, "group_consensus", reads=FACTS)
def group_consensus(facts, params, found):
    """A host's OFED release, kernel, DKMS versions, port rates, PCIe links, IOMMU mode or RoCE QoS differ from most hosts of its group."""
    hosts = facts["hosts"] or {}
    values = {name: {setting: value for setting, value in consensus_values(host).items() if not _reported(setting, host)}
              for name, host in hosts.items()}
    reported = set()
    for group, members in sorted(groups_of(hosts).items()):
        settings = sorted({s for host in members for s in values[host]})
        for setting in settings:
            holders = {host: values[host][setting] for host in members if setting in values[host]}
            counts = collections.Counter(holders.values())
            if len(counts) < 2:
                continue
            ranked = counts.most_common()
            tie = ranked[0][1] == ranked[1][1]
            usual = None if tie else ranked[0][0]
            for host, value in sorted(holders.items()):
                if value == usual or (host, setting) in reported:
                    continue
                reported.add((host, setting))
                if tie:
                    split = "; ".join("%s on %d" % (v, n) for v, n in sorted(counts.items()))
                    message = "%s: %s is %s, and the %d hosts of %s that report it are split with no majority (%s)." % (
                        host, setting, value, len(holders), group, split)
                else:
                    message = "%s: %s is %s where %d of the %d hosts of %s that report it have %s." % (
                        host, setting, value, counts[usual], len(holders), group, usual)
                found.warning(host, message, usual, value)
