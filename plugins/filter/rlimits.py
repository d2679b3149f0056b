# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for resource limit values."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_rlimits = LazyModule("ansible_collections.rdma.node.plugins.module_utils._rlimits")


def rlimit_value(value):
    """Return the integer an OCI runtime expects for ``unlimited``, ``64K``, ``8M`` or a number."""
    try:
        return _rlimits.parse_rlimit_value(value, "rlimit_value input")
    except _rlimits.RlimitError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule:
    """rdma.node resource limit filters."""

    def filters(self):
        return {"rlimit_value": rlimit_value}
