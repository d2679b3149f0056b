# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the text fleet-health checks read besides sysfs: kernel logs and ``rdma system``.
The parsing lives in ``module_utils/_health_text.py``; these wrappers only turn a parse error into an
``AnsibleFilterError``. Documentation: ``parse_carrier_events.yml`` and ``parse_rdma_system.yml``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_health_text = LazyModule("ansible_collections.rdma.node.plugins.module_utils._health_text")


def _plain(data):
    """Ansible hands over its own string and list types; the parsers want plain ones."""
    if isinstance(data, str):
        return str(data)
    if isinstance(data, (list, tuple)):
        return [str(line) if isinstance(line, str) else line for line in data]
    return data


def parse_carrier_events(data):
    """Kernel log text (string or list of lines) -> carrier events, per-netdev counts and notes."""
    try:
        return _health_text.parse_carrier_events(_plain(data))
    except _health_text.HealthTextError as exc:
        raise AnsibleFilterError(str(exc)) from None


def parse_rdma_system(data):
    """``rdma system`` output (string or list of lines) -> netns mode and the flags it prints."""
    try:
        return _health_text.parse_rdma_system(_plain(data))
    except _health_text.HealthTextError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """Parsers for kernel logs and rdma system output."""

    def filters(self):
        return {
            "parse_carrier_events": parse_carrier_events,
            "parse_rdma_system": parse_rdma_system,
        }
