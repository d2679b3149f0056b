# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the output of ibstat, ibstatus, ibv_devinfo, ibdev2netdev and rdma link into
one dict per port, plus notes on the lines they could not place. The parsing lives in
``module_utils/_ib_text.py``; these wrappers only check ``strict`` and turn a parse error into an
``AnsibleFilterError``. Documentation: ``parse_*.yml`` beside this file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule

_ib_text = LazyModule("ansible_collections.rdma.node.plugins.module_utils._ib_text")


def _run(parser, data, strict):
    if not isinstance(strict, bool):
        raise AnsibleFilterError("rdma.node.%s: strict must be true or false, not %r" % (parser.__name__, strict))
    try:
        return parser(data, strict=strict)
    except _ib_text.IbTextError as exc:
        raise AnsibleFilterError(str(exc)) from None


def parse_ibstat(data, strict=False):
    """``ibstat`` output (string or list of lines) -> ``{ports, notes}``."""
    return _run(_ib_text.parse_ibstat, data, strict)


def parse_ibstatus(data, strict=False):
    """``ibstatus`` output (string or list of lines) -> ``{ports, notes}``."""
    return _run(_ib_text.parse_ibstatus, data, strict)


def parse_ibv_devinfo(data, strict=False):
    """``ibv_devinfo`` output (string or list of lines) -> ``{ports, notes}``."""
    return _run(_ib_text.parse_ibv_devinfo, data, strict)


def parse_ibdev2netdev(data, strict=False):
    """``ibdev2netdev`` / ``ibdev2netdev -v`` output (string or list of lines) -> ``{ports, notes}``."""
    return _run(_ib_text.parse_ibdev2netdev, data, strict)


def parse_rdma_link(data, strict=False):
    """``rdma link show`` output (string or list of lines) -> ``{ports, notes}``."""
    return _run(_ib_text.parse_rdma_link, data, strict)


class FilterModule:
    """Parsers for the text of RDMA command-line tools."""

    def filters(self):
        return {
            "parse_ibstat": parse_ibstat,
            "parse_ibstatus": parse_ibstatus,
            "parse_ibv_devinfo": parse_ibv_devinfo,
            "parse_ibdev2netdev": parse_ibdev2netdev,
            "parse_rdma_link": parse_rdma_link,
        }
