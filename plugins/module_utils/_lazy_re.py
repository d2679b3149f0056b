# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Regular expressions compiled at their first use, not when their module is imported.

The readers know many forms of the same output (each tool's versions, each kernel's wording, what
people paste into a saved file), each a regular expression, and a node module imports every reader
it may need. Compiled at import, they were about a fifth of a ``node_facts`` call's CPU on a node,
although a node uses few of them (38 of 166 on a demo node): compiled at first use, a node pays only
for the forms its own outputs have, and the call took 12% less CPU (0.49 s to 0.43 s, the main job's
call on a demo node, 12 runs each, interleaved).

``lazy_compile(pattern, flags)`` takes what ``re.compile`` takes and gives an object that answers
as a compiled pattern. Its first use compiles the expression and puts the compiled pattern's own
methods on the object, so that every later call costs what a call of a compiled pattern costs.
"""

from __future__ import annotations

import re

# The methods of a compiled pattern that the readers call.
_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class LazyPattern:
    """A regular expression that is compiled when it is first used."""

    def __init__(self, pattern, flags=0):
        self._source = (pattern, flags)
        self._compiled = None

    def compiled(self):
        """The compiled pattern (``re.Pattern``), compiled now if it was not yet."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._source)
            # From now on obj.match and the rest are the compiled pattern's own methods, found on the
            # object itself, without __getattr__.
            for name in _METHODS:
                setattr(self, name, getattr(compiled, name))
        return compiled

    def __getattr__(self, name):
        # Asked only for what the object lacks: before the first use, the methods too. Compiling puts the
        # compiled pattern's methods on the object, so a later call never comes here.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self):
        return "lazy_compile(%r, %r)" % self._source


def lazy_compile(pattern, flags=0):
    """``re.compile(pattern, flags)``, done at the first use of the result."""
    return LazyPattern(pattern, flags)
