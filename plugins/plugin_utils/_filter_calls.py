# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's filters share: Ansible's values turned into plain data before the logic sees
them, the logic's one-sentence errors turned into Ansible's filter errors, named after the filter, and
the logic's modules imported when a filter first needs them.

Ansible loads every filter file of the collection to find any one of its filters (its Jinja2Loader
walks plugins/filter), in each worker process that templates one, and the collection loader compiles
every module it imports from source (it keeps no bytecode). A filter file that imported its logic at
its top would cost each such process all of the collection's parsers, plans and checks: about 0.4 s
of CPU. So a filter file imports only this module and Ansible's at its top, and its logic through
``LazyModule``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError


_SCALARS = (int, float, bool, type(None))


class LazyModule:
    """The module ``name``, imported at the first use of one of its attributes (see the docstring above)."""

    def __init__(self, name):
        self._name = name
        self._module = None

    def __getattr__(self, attribute):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)


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
