# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Regular expressions compiled at first use (plugins/module_utils/_lazy_re.py).

A pattern is compiled when first used, answers as ``re.compile`` would, and every pattern of the
collection's module_utils compiles: compiled lazily, a broken one would otherwise wait for the one
input that reaches it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

from ansible_collections.rdma.node.plugins import module_utils
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import LazyPattern, lazy_compile

TEXT = "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port 1 ==> ib1 (Down)\n"
PORT = r"^(?P<device>mlx5_\d+) port (?P<port>\d+) ==> (?P<netdev>\S+) \((?P<state>\w+)\)$"


def test_nothing_is_compiled_until_the_first_use(monkeypatch):
    compiled = []
    original = re.compile
    monkeypatch.setattr(re, "compile", lambda *args: compiled.append(args) or original(*args))
    pattern = lazy_compile(PORT, re.M)
    assert compiled == []
    assert pattern.search(TEXT).group("netdev") == "ib0"
    assert pattern.search(TEXT, 10).group("netdev") == "ib1"
    assert compiled == [(PORT, re.M)], "compiled once, at the first call"


@pytest.mark.parametrize("method, args", [
    ("match", (TEXT,)), ("search", (TEXT, 5)), ("fullmatch", ("mlx5_0 port 1 ==> ib0 (Up)",)),
    ("findall", (TEXT,)), ("sub", (r"\g<netdev>", TEXT)), ("subn", ("x", TEXT, 1)), ("split", (TEXT,)),
])
def test_every_method_answers_as_re_compile_does(method, args):
    lazy, eager = lazy_compile(PORT, re.M), re.compile(PORT, re.M)
    first, again, expected = getattr(lazy, method)(*args), getattr(lazy, method)(*args), getattr(eager, method)(*args)
    if isinstance(expected, re.Match):
        assert (first.span(), first.groupdict(), again.span()) == (expected.span(), expected.groupdict(), expected.span())
    else:
        assert first == again == expected


def test_finditer_and_the_compiled_patterns_attributes():
    pattern = lazy_compile(PORT, re.M)
    assert [m.group("state") for m in pattern.finditer(TEXT)] == ["Up", "Down"]
    assert (pattern.pattern, pattern.groups, sorted(pattern.groupindex)) == (PORT, 4, ["device", "netdev", "port", "state"])
    assert pattern.flags == re.compile(PORT, re.M).flags
    assert pattern.compiled() is pattern.compiled()


def test_a_broken_expression_fails_at_its_first_use_as_re_compile_would():
    broken = lazy_compile(r"(unclosed")
    with pytest.raises(re.error):
        broken.match("x")


def _patterns(value, found):
    if isinstance(value, LazyPattern):
        found.append(value)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for item in value:
            _patterns(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _patterns(item, found)
    return found


def test_every_pattern_of_the_module_utils_compiles():
    found = {}
    for info in pkgutil.iter_modules(module_utils.__path__):
        module = importlib.import_module("%s.%s" % (module_utils.__name__, info.name))
        patterns = _patterns(list(vars(module).values()), [])
        if patterns:
            found[info.name] = len({id(p) for p in patterns})
            for pattern in patterns:
                assert isinstance(pattern.compiled(), re.Pattern), (info.name, pattern)
    # The readers with the most forms are among them: a pattern kept out of reach of this test would be missed.
    assert found["_health_text"] >= 60 and found["_nccl_output"] >= 40 and found["_perftest_output"] >= 35, found
    assert sum(found.values()) >= 250, found
