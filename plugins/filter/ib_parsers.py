# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn the output of ibstat, ibstatus, ibv_devinfo, ibdev2netdev and rdma link into
one dict per port. The parsing lives in ``module_utils/_ib_text.py``; these wrappers only turn a
parse error into an ``AnsibleFilterError``. Documentation: ``parse_*.yml`` beside this file."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.module_utils._ib_text import (
    IbTextError,
    parse_ibdev2netdev as _parse_ibdev2netdev,
    parse_ibstat as _parse_ibstat,
    parse_ibstatus as _parse_ibstatus,
    parse_ibv_devinfo as _parse_ibv_devinfo,
    parse_rdma_link as _parse_rdma_link,
)


def _run(parser, data):
    try:
        return parser(data)
    except IbTextError as exc:
        raise AnsibleFilterError(str(exc)) from None


def parse_ibstat(data):
    """``ibstat`` output (string or list of lines) -> list of port dicts."""
    return _run(_parse_ibstat, data)


def parse_ibstatus(data):
    """``ibstatus`` output (string or list of lines) -> list of port dicts."""
    return _run(_parse_ibstatus, data)


def parse_ibv_devinfo(data):
    """``ibv_devinfo`` output (string or list of lines) -> list of port dicts."""
    return _run(_parse_ibv_devinfo, data)


def parse_ibdev2netdev(data):
    """``ibdev2netdev`` / ``ibdev2netdev -v`` output (string or list of lines) -> list of port dicts."""
    return _run(_parse_ibdev2netdev, data)


def parse_rdma_link(data):
    """``rdma link show`` output (string or list of lines) -> list of port dicts."""
    return _run(_parse_rdma_link, data)


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
