# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fact subsets: what each reader of the node fills, and the options it reads.

A reader declares itself where it is written::

    @reader("pcie", IB_FACTS, fills=("rdma.pcie",))
    def read_pcie(facts, params, module):
        # the function's docstring says what it reads
        ...

It is called with the namespace's facts built so far (the ports first), the fact module's options
(``params``) and the module (or None outside one: a reader that runs a command says it could not);
it adds what it read to ``facts`` and raises FactReadError, one sentence, for an option it cannot use.

* ``name`` is what ``gather_subset`` of the fact module takes;
* ``fills`` are the fact paths it fills: ``rdma.pcie`` (a key of a namespace), or
  ``rdma.ports[].counters`` (a key of every element of a list); the checks on the controller declare
  what they read with the same paths, so a check whose data was not gathered is skipped and the
  subset it lacked is named;
* ``inputs`` are the options of the fact module the reader uses, a tuple of their names, or a mapping
  of option name to the suffix of the role option that gives it where the two differ
  (``{"service": "containerd_service"}``: ``node_health_containerd_service`` fills ``service``);
  a role derives the module's arguments from its options by this declaration;
* ``fixed`` are module arguments a role's gather always passes with this subset;
* ``in_all``: whether ``gather_subset: all`` includes it (a reader that runs a command does not);
* ``base``: the subset every call of its module reads first (the ports of ib_facts), whose inputs
  every call passes;
* ``again``: a second read, ``again(facts, params, root)``, taken with the counters' second sample
  when a call samples twice (``counters_interval``): the reader's first read becomes the earlier
  sample of a rise within the call (the AER counters), ``root`` is the sysfs tree of that read.

Only this small table is imported where the fact modules start; the readers' own modules are
imported when one of their subsets is asked for (``_ib_collect.load_readers``), because on a node an
import costs more than reading the ports does. The controller imports them all to know every subset.
"""

from __future__ import annotations


from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

IB_FACTS = "rdma.node.ib_facts"
DRIVER_FACTS = "rdma.node.driver_facts"
CONTAINER_LIMITS = "rdma.node.container_limits"

# A fact path: dotted names, where a name followed by [] stands for every element of a list.
_PATH = lazy_compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[\])?(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\])?)*$")

_SUBSETS = {}


class SubsetError(ValueError):
    """A subset declared twice or with a malformed path; the message names it."""


class FactReadError(ValueError):
    """An option a reader cannot use (a root that is not a directory, an interval out of range)."""


class Subset:
    """One fact reader: its name, the module that runs it, what it fills and what it reads."""

    __slots__ = ("name", "module", "fills", "inputs", "fixed", "in_all", "reader", "base", "again", "description")

    def __init__(self, name, module, fills, inputs, fixed, in_all, reader, base, again=None):
        self.name = name
        self.module = module
        self.fills = fills
        self.inputs = inputs
        self.fixed = fixed
        self.in_all = in_all
        self.reader = reader
        self.base = base
        self.again = again
        self.description = " ".join(((reader.__doc__ if reader else None) or "").split())

    def __repr__(self):
        return "Subset(%s of %s)" % (self.name, self.module)


def check_path(path, where):
    """``path`` if it is a fact path (``rdma.pcie``, ``rdma.ports[].counters``), else SubsetError."""
    if not isinstance(path, str) or not _PATH.match(path):
        raise SubsetError("%s: %r is not a fact path such as rdma.pcie or rdma.ports[].counters" % (where, path))
    return path


def declare(name, module, fills, inputs=(), fixed=None, in_all=True, reader=None, base=False, again=None):
    """Add the subset ``name`` gathered by ``module``; returns it."""
    where = "fact subset %s" % name
    existing = _SUBSETS.get(name)
    if existing is not None and existing.module != module:
        raise SubsetError("%s is declared twice: by %s and by %s" % (where, existing.module, module))
    if isinstance(fills, str) or not fills:
        raise SubsetError("%s: fills must be a list of fact paths, got %r" % (where, fills))
    inputs = dict(inputs) if isinstance(inputs, dict) else {option: option for option in inputs}
    subset = Subset(name, module, tuple(check_path(p, where) for p in fills), inputs, dict(fixed or {}), in_all, reader, base, again)
    _SUBSETS[name] = subset
    return subset


def reader(name, module, fills, inputs=(), fixed=None, in_all=True, again=None):
    """Declare the decorated function as the reader of the subset ``name``; it is called as
    ``function(facts, params, module)`` and adds what it read to ``facts`` (the namespace's dict).
    ``again`` is its second read within a call that samples twice (see the module's docstring)."""
    def decorate(function):
        declare(name, module, fills, inputs, fixed, in_all, function, again=again)
        return function
    return decorate


def subsets(module=None):
    """The declared subsets (of one module, when given): each module's base first, then the others in
    the order they were declared."""
    chosen = [s for s in _SUBSETS.values() if module is None or s.module == module]
    return sorted(chosen, key=lambda s: not s.base)


def base_of(module):
    """The subset every call of ``module`` reads (the first declared, where none is marked as base)."""
    chosen = subsets(module)
    return chosen[0] if chosen else None


def get(name):
    return _SUBSETS.get(name)


def provider(path):
    """The subset that fills the fact path ``path`` (or fills a path above it), or None.

    ``rdma.ports[].counters`` is filled by the subset that declares it; ``rdma.kernel_log.netdevs``
    by the one that fills ``rdma.kernel_log``; a namespace alone (``rdma``) by the base subset of the
    module that fills it."""
    best, namespace = None, None
    for subset in subsets():
        for filled in subset.fills:
            if path == filled or path.startswith(filled + ".") or path.startswith(filled + "[]"):
                if best is None or len(filled) > len(best[1]):
                    best = (subset, filled)
            elif namespace is None and filled.startswith(path + "."):
                namespace = subset  # subsets() lists each module's base first
    return best[0] if best else namespace
