# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over DKMS output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_dkms = LazyModule("ansible_collections.rdma.node.plugins.module_utils._dkms")


def parse_dkms_status(data, strict=False):
    """Parse ``dkms status`` output (a string, or a list of lines such as ``stdout_lines``)."""
    if isinstance(data, str):
        text = data
    elif isinstance(data, Sequence) and not isinstance(data, (bytes, Mapping)) and all(
        isinstance(line, str) for line in data
    ):
        text = "\n".join(data)
    else:
        raise AnsibleFilterError(
            "rdma.node.parse_dkms_status expects the text of dkms status, a string or a list of "
            "lines (such as stdout_lines), not %s" % type(data).__name__
        )
    if not isinstance(strict, bool):
        raise AnsibleFilterError("rdma.node.parse_dkms_status: strict must be true or false, not %r" % (strict,))
    try:
        return _dkms.parse_dkms_status(text, strict=strict)
    except _dkms.DkmsParseError as exc:
        raise AnsibleFilterError("rdma.node.parse_dkms_status: %s" % exc) from None


class FilterModule:
    def filters(self):
        return {"parse_dkms_status": parse_dkms_status}
