# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over what NCCL and nccl-tests print: ``parse_nccl_log`` and ``parse_nccl_tests``.

The reading lives in ``module_utils/_nccl_output.py``; documentation: ``parse_nccl_log.yml`` and
``parse_nccl_tests.yml``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_nccl_output = LazyModule("ansible_collections.rdma.node.plugins.module_utils._nccl_output")


def _text(data, name):
    """The text of ``data``: a string, a list of lines, or a registered result (stdout and stderr, a k8s_log's log)."""
    if data is None:
        raise AnsibleFilterError("rdma.node.%s: expected the text of a log, got nothing (None)" % name)
    if isinstance(data, str):
        return data
    if isinstance(data, Mapping):
        for key in ("log", "stdout", "content"):
            if isinstance(data.get(key), str):
                text = data[key]
                if key == "stdout" and isinstance(data.get("stderr"), str) and data["stderr"]:
                    text += "\n" + data["stderr"]
                return text
        raise AnsibleFilterError(
            "rdma.node.%s: expected a string, a list of lines or a registered result with log or stdout; this dict has "
            "neither (keys: %s)" % (name, ", ".join(sorted(str(k) for k in data)[:10])))
    if isinstance(data, Sequence) and not isinstance(data, bytes) and all(isinstance(line, str) for line in data):
        return "\n".join(data)
    raise AnsibleFilterError("rdma.node.%s: expected a string, a list of lines or a registered result, not %s" % (name, type(data).__name__))


def _strict(value, name):
    if not isinstance(value, bool):
        raise AnsibleFilterError("rdma.node.%s: strict must be true or false, not %r" % (name, value))
    return value


def parse_nccl_log(data, strict=False):
    """An NCCL_DEBUG=INFO log -> NCCL's network, HCAs and the transport of every channel."""
    try:
        return _nccl_output.parse_nccl_log(_text(data, "parse_nccl_log"), strict=_strict(strict, "parse_nccl_log"))
    except _nccl_output.NcclOutputError as exc:
        raise AnsibleFilterError("rdma.node.parse_nccl_log: %s" % exc) from None


def parse_nccl_tests(data, strict=False):
    """nccl-tests output (all_reduce_perf...) -> its rows and the bus bandwidth at the largest size."""
    try:
        return _nccl_output.parse_nccl_tests(_text(data, "parse_nccl_tests"), strict=_strict(strict, "parse_nccl_tests"))
    except _nccl_output.NcclOutputError as exc:
        raise AnsibleFilterError("rdma.node.parse_nccl_tests: %s" % exc) from None


class FilterModule:
    """NCCL's log and nccl-tests' output."""

    def filters(self):
        return {"parse_nccl_log": parse_nccl_log, "parse_nccl_tests": parse_nccl_tests}
