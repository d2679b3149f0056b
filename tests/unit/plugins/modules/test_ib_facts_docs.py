"""The documentation of the fact modules says what the readers declare: a subset a reader declares is
named in gather_subset's description and its facts in RETURN, and every option a reader takes is one
of the module's documented options."""

from __future__ import annotations

import yaml

from ansible_collections.rdma.node.plugins.doc_fragments.facts_options import ModuleDocFragment
from ansible_collections.rdma.node.plugins.module_utils import _ib_collect, _subsets
from ansible_collections.rdma.node.plugins.modules import ib_facts

_ib_collect.load_readers()
OPTIONS = yaml.safe_load(ModuleDocFragment.IB)["options"]
RETURNED = yaml.safe_load(ib_facts.RETURN)["ansible_facts"]["contains"]["rdma"]["contains"]


def test_every_declared_subset_is_described_under_gather_subset():
    described = " ".join(OPTIONS["gather_subset"]["description"])
    for subset in _subsets.subsets(_subsets.IB_FACTS):
        assert "V(%s)" % subset.name in described, subset.name


def test_every_fact_a_reader_fills_is_documented_in_return():
    for subset in _subsets.subsets(_subsets.IB_FACTS):
        for path in subset.fills:
            key = path.split(".")[1].rstrip("[]")
            assert key in RETURNED, (subset.name, path)


def test_every_input_of_a_reader_is_a_documented_option_of_the_module():
    for subset in _subsets.subsets(_subsets.IB_FACTS):
        for option in subset.inputs:
            assert option in OPTIONS and option in _ib_collect.IB_OPTIONS, (subset.name, option)
