# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over perftest output (ib_write_bw, ib_read_bw, ib_send_bw and the _lat tools)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_perftest_output = LazyModule("ansible_collections.rdma.node.plugins.module_utils._perftest_output")


def _text(value, what):
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, Mapping)) and all(
        isinstance(line, str) for line in value
    ):
        return "\n".join(value)
    raise AnsibleFilterError(
        "rdma.node.parse_perftest: %s must be text or a list of lines, not %s" % (what, type(value).__name__)
    )


def parse_perftest(data, strict=False):
    """Parse perftest output: a string, a list of lines, or a registered command result."""
    if not isinstance(strict, bool):
        raise AnsibleFilterError("rdma.node.parse_perftest: strict must be true or false, not %r" % (strict,))
    try:
        return _parse_input(data, strict)
    except _perftest_output.PerftestOutputError as exc:
        raise AnsibleFilterError("rdma.node.parse_perftest: %s" % exc) from None


def _parse_input(data, strict):
    if isinstance(data, Mapping):
        if "stdout" not in data and "stdout_lines" not in data:
            raise AnsibleFilterError(
                "rdma.node.parse_perftest expects perftest output: a string, a list of lines, or a "
                "registered command result with stdout; this dict has no stdout (keys: %s)"
                % ", ".join(sorted(str(key) for key in data)[:10])
            )
        stdout = _text(data["stdout"] if "stdout" in data else data.get("stdout_lines"), "stdout")
        stderr = _text(data.get("stderr"), "stderr")
        rc = data.get("rc")
        if rc is not None and (not isinstance(rc, int) or isinstance(rc, bool)):
            raise AnsibleFilterError("rdma.node.parse_perftest: rc must be an integer, not %r" % (rc,))
        return _perftest_output.parse_perftest(stdout, stderr, rc=rc, strict=strict)
    if isinstance(data, str) or (isinstance(data, Sequence) and not isinstance(data, (bytes, Mapping))):
        return _perftest_output.parse_perftest(_text(data, "the input"), strict=strict)
    raise AnsibleFilterError(
        "rdma.node.parse_perftest expects perftest output: a string, a list of lines, or a registered "
        "command result with stdout, not %s" % type(data).__name__
    )


class FilterModule:
    def filters(self):
        return {"parse_perftest": parse_perftest}
