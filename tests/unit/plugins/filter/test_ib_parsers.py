# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parse_* filters, called directly. Real ansible-playbook runs that resolve them by their FQCN
and show the message an operator sees: tests/integration/test_filters_through_ansible.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.ib_parsers import FilterModule
from ansible_collections.rdma.node.plugins.module_utils._ib_text import PARSERS

COLLECTION_ROOT = Path(__file__).resolve().parents[4]
FIXTURES = COLLECTION_ROOT / "tests" / "fixtures" / "cmd"
FILTERS = FilterModule().filters()
TOOL_NAMES = {"ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo",
              "ibdev2netdev": "ibdev2netdev", "rdma_link": "rdma link"}
# Another tool's sample each filter must refuse, the line it stops at, and that line quoted.
WRONG_SAMPLES = {
    "ibstat": ("ibv_devinfo/mlx5_cx7_4129_ib_port_down_lid65535_block.txt", "line 1", "'hca_id: mlx5_0'"),
    "ibstatus": ("ibstat/mlx4_ibwarn_debug_lines_before_CA_partial.txt", "line 5", "\"CA 'mlx4_0'\""),
    "ibv_devinfo": ("ibstat/seed_a100_prompt_3ca_rate10_lid65535_bond.txt", "line 2", "\"CA 'mlx5_0'\""),
    "ibdev2netdev": ("rdma_link/rxe_softroce_single.txt", "line 1",
                     "'link rxe_0/1 state ACTIVE physical_state LINK_UP netdev p1p1'"),
    "rdma_link": ("ibdev2netdev/mlx5_cx4_eth_2pf_up.txt", "line 1", "'mlx5_0 port 1 ==> enp2s0f0 (Up)'"),
}


def _message(tool):
    wrong, line, quoted = WRONG_SAMPLES[tool]
    return "parse_%s: %s is not %s output: %s" % (tool, line, TOOL_NAMES[tool], quoted)


def test_filter_names():
    assert sorted(FILTERS) == sorted("parse_%s" % tool for tool in PARSERS)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/*.txt")), ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_filters_return_what_the_parsers_return(path):
    tool = path.parent.name
    text = path.read_text(encoding="utf-8")
    assert FILTERS["parse_%s" % tool](text) == PARSERS[tool](text)
    assert FILTERS["parse_%s" % tool](text.splitlines()) == PARSERS[tool](text)


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_filters_raise_filter_errors(tool):
    wrong = (FIXTURES / WRONG_SAMPLES[tool][0]).read_text(encoding="utf-8")
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](wrong)
    assert error.value.message == _message(tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](None)
    assert error.value.message.startswith("parse_%s: expected the command's output as a string" % tool)


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_filters_give_empty_list_for_empty_output(tool):
    assert FILTERS["parse_%s" % tool]("") == []
    assert FILTERS["parse_%s" % tool]([]) == []
