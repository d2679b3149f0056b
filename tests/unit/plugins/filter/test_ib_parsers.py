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
    """What a filter says about another tool's output: nothing in it is recognisable."""
    wrong, line, quoted = WRONG_SAMPLES[tool]
    return "parse_%s: nothing in the text is %s output (%s: %s)" % (tool, TOOL_NAMES[tool], line, quoted)


def _strict_message(tool):
    """What a filter says with strict=true: the first line it cannot place."""
    wrong, line, quoted = WRONG_SAMPLES[tool]
    return "parse_%s: %s is not %s output: %s" % (tool, line, TOOL_NAMES[tool], quoted)


# A paste as it lands in a ticket: the prompt and command, a comment, a redacted middle, a
# diagnostic line, CRLF line ends and a stray line from the terminal.
MESSY_IBSTAT = (
    "[root@gpu-node01 ~]# ibstat mlx4_0\r\n"
    "# first CA only\r\n"
    "ibwarn: [4711] umad_get_port: port 1 not found\r\n"
    "CA 'mlx4_0'\r\n"
    "\tCA type: MT4099\r\n"
    "[snip]\r\n"
    "\tPort 1:\r\n"
    "\t\tState: Active\r\n"
    "\t\tRate: 56\r\n"
    "Connection to gpu-node01 closed.\r\n"
)


def test_filter_names():
    assert sorted(FILTERS) == sorted("parse_%s" % tool for tool in PARSERS)


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("*/*.txt") if p.parent.name in PARSERS),
                         ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_filters_return_what_the_parsers_return(path):
    tool = path.parent.name
    text = path.read_text(encoding="utf-8")
    assert FILTERS["parse_%s" % tool](text) == PARSERS[tool](text)
    assert FILTERS["parse_%s" % tool](text.splitlines()) == PARSERS[tool](text)
    assert FILTERS["parse_%s" % tool](text, strict=True) == PARSERS[tool](text, strict=True)


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_filters_raise_filter_errors(tool):
    wrong = (FIXTURES / WRONG_SAMPLES[tool][0]).read_text(encoding="utf-8")
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](wrong)
    assert error.value.message == _message(tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](wrong, strict=True)
    assert error.value.message == _strict_message(tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool](None)
    assert error.value.message.startswith("parse_%s: expected the command's output as a string" % tool)
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_%s" % tool]("", strict="yes")
    assert error.value.message == "rdma.node.parse_%s: strict must be true or false, not 'yes'" % tool


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_filters_give_no_ports_for_empty_output(tool):
    assert FILTERS["parse_%s" % tool]("") == {"ports": [], "notes": []}
    assert FILTERS["parse_%s" % tool]([]) == {"ports": [], "notes": []}


def test_filter_keeps_what_it_recognises_and_notes_the_rest():
    result = FILTERS["parse_ibstat"](MESSY_IBSTAT)
    assert [(p["device"], p["port"], p["hca_type"], p["state"], p["rate_gbps"]) for p in result["ports"]] == [
        ("mlx4_0", 1, "MT4099", "ACTIVE", 56.0)]
    assert result["notes"] == [
        {"line": 3, "text": "ibwarn: [4711] umad_get_port: port 1 not found",
         "reason": "a diagnostic message, not part of the listing"},
        {"line": 6, "text": "[snip]", "reason": "a redaction mark: the listing around it is incomplete"},
        {"line": 10, "text": "Connection to gpu-node01 closed.", "reason": "not ibstat output"},
    ]
    with pytest.raises(AnsibleFilterError) as error:
        FILTERS["parse_ibstat"](MESSY_IBSTAT, strict=True)
    assert error.value.message == "parse_ibstat: line 10 is not ibstat output: 'Connection to gpu-node01 closed.'"


# ----------------------------------------------------------------------------------------------
# Real ansible-playbook runs (localhost, local connection, the venv's Python)
# ----------------------------------------------------------------------------------------------
