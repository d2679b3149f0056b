# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's filters share: Ansible's values turned into plain data before the logic sees
them, and the logic's one-sentence errors turned into Ansible's filter errors, named after the filter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError


_SCALARS = (int, float, bool, type(None))


def plain_data(value):
    """Ansible's containers (hostvars, lazy and tagged values) as plain dicts, lists and scalars."""
    # The exact types first: the filters take every host's facts (the NCCL play, 200 hosts of RDMA
    # facts several times), and the abstract-class tests cost several times these.
    kind = type(value)
    if kind is str or kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {str(key): plain_data(item) for key, item in value.items()}
    if kind is list or (isinstance(value, Sequence) and not isinstance(value, (str, bytes))):
        return [plain_data(item) for item in value]
    if isinstance(value, str):
        return str(value)  # a tagged string
    return value


def call(name, function, *args, **kwargs):
    """``function`` on the plain data of the arguments; a CheckError (or a subclass, such as the
    planners' errors) becomes ``AnsibleFilterError("rdma.node.<name>: ...")``."""
    try:
        return function(*[plain_data(a) for a in args], **{k: plain_data(v) for k, v in kwargs.items()})
    except CheckError as exc:
        raise AnsibleFilterError("rdma.node.%s: %s" % (name, exc)) from None
