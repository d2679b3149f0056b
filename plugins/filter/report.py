# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's data, built from hostvars (live, or loaded from a fact cache)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import DEFAULT_MAX_BYTES, fleet_artifact as _fleet_artifact
from ansible_collections.rdma.node.plugins.plugin_utils._filter_calls import LazyModule
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_upload import redact_url

_report_hosts = LazyModule("ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_hosts")


def fleet_report_data(host_names, hostvars, title="RDMA fleet report", sources=None, cluster_hosts=("localhost",)):
    """Return the report structure for ``host_names``, reading each host's variables from ``hostvars``.

    ``sources`` are the roles whose ``<role>_findings``/``<role>_status`` are read (default: every role
    of the check registry); ``cluster_hosts`` are where cluster-scope roles (k8s_rdma) ran.
    """
    try:
        return _report_hosts.report_from_hostvars(host_names, hostvars, title, sources, cluster_hosts)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rdma.node.fleet_report_data: %s" % exc) from None


def fleet_artifact(report, report_dir=None, files=None, upload_url=None, max_bytes=DEFAULT_MAX_BYTES):
    """Return the ``rdma_fleet`` summary of ``report`` for AWX's artifacts, at most ``max_bytes`` of JSON;
    ``upload_url`` is shown without its user, password and query."""
    location = {"dir": report_dir or None, "files": list(files or []), "upload_url": redact_url(upload_url) or None}
    try:
        return _fleet_artifact(report, location, int(max_bytes))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rdma.node.fleet_artifact: %s" % exc)


# A name that Ansible's host pattern parser takes as itself: it splits patterns at commas, colons and
# white space, reads brackets as subscripts, * and ? as wildcards, and a leading !, & or ~ as
# exclusion, intersection or a regular expression. Such a name is looked up as an inventory host
# before anything else, so a group of the same name does not stand in for it.
_PLAIN_NAME = re.compile(r"[^\s,:\[\]*?!&~][^\s,:\[\]*?]*")


def _spelled(char):
    code = ord(char)
    if char.isascii() and char.isalnum():
        return char
    return "\\x%02x" % code if code < 0x100 else ("\\u%04x" % code if code < 0x10000 else "\\U%08x" % code)


def exact_host_patterns(names):
    """Host patterns that match exactly the hosts ``names`` (a list, or a mapping keyed by name), whatever
    their characters: each plain name as itself, and the others in one regular expression (``~^(...)\\Z``)
    that spells every character but letters and digits as an escape, so that nothing in it is a comma, a
    colon, a space or a bracket. A group named like one of the odd names matches that expression too: a
    play on these patterns should still check ``inventory_hostname`` against the names."""
    if isinstance(names, Mapping):
        names = list(names)
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise AnsibleFilterError("rdma.node.exact_host_patterns: expected a list of host names or a mapping keyed by them, got %s"
                                 % type(names).__name__)
    plain, odd = [], []
    for name in names:
        name = str(name)
        if _PLAIN_NAME.fullmatch(name):
            plain.append(name)
        elif name:
            odd.append("".join(_spelled(c) for c in name))
    return plain + (["~^(%s)\\Z" % "|".join(odd)] if odd else [])


class FilterModule:
    def filters(self):
        return {"fleet_report_data": fleet_report_data, "fleet_artifact": fleet_artifact, "exact_host_patterns": exact_host_patterns}
