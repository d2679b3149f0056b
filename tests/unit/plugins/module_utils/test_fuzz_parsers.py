# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzzing every text parser and its filter with hypothesis.

Inputs: random text (with tabs, CRs, box drawing, prompts and digits other than ASCII in the
alphabet), and the real samples of tests/fixtures mutated the way pastes get mutated: lines dropped,
duplicated, shuffled, cut short, padded with odd whitespace, digits swapped for Arabic-Indic or
fullwidth ones, foreign lines inserted, CRLF. The properties, for both modes (lenient and strict):

* the only exception is the documented one (IbTextError, DkmsParseError, PerftestOutputError from
  module_utils; AnsibleFilterError from the filters), with a one-line message;
* the result is plain JSON: ``json.dumps(..., allow_nan=False)`` accepts it (no Infinity, no NaN);
* the result has its documented shape (every port has every field; notes are line/text/reason);
* every number came from ASCII digits: no int or float field holds a value the text did not spell
  in ASCII (checked by feeding the same text with every ASCII digit removed from the mutations).

The example counts are bounded and derandomized so that the suite stays fast and reproducible.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ansible.errors import AnsibleFilterError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.rdma.node.plugins.filter.dkms import parse_dkms_status as dkms_filter
from ansible_collections.rdma.node.plugins.filter.ib_parsers import FilterModule as IbFilters
from ansible_collections.rdma.node.plugins.filter.perftest import parse_perftest as perftest_filter
from ansible_collections.rdma.node.plugins.module_utils._dkms import DkmsParseError, parse_dkms_status, parse_status
from ansible_collections.rdma.node.plugins.module_utils._ib_text import FIELDS, PARSERS, IbTextError
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import PerftestOutputError, parse_perftest

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
IB_SAMPLES = {tool: [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "cmd" / tool).glob("*.txt"))]
              for tool in PARSERS}
DKMS_SAMPLES = [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "dkms").glob("*.txt"))]
PERFTEST_SAMPLES = [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "perftest").glob("*.txt"))]
IB_FILTERS = IbFilters().filters()

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

OTHER_DIGITS = ["\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669",  # Arabic-Indic
                "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19",  # fullwidth
                "\u0966\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f"]  # Devanagari
ODD_WHITESPACE = [" ", "\t", "\u00a0", "\u2003", "\x0b", "\x0c", "\r", "\ufeff", "  \t "]
FOREIGN_LINES = ["[root@node ~]# ibstat", "$ ", "# note", "...", "[snip]", "ibwarn: [1] x", "ibpanic: boom",
                 "libibverbs: Warning: no userspace device-specific driver found", "Port 1:", "CA 'x'", ":",
                 "Rate: 1e309", "Rate: inf", "Rate: nan", "Base lid: 99999999999999999999999999", "port: 0x",
                 "1 2 3 4 5", "#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]",
                 "65536 5000 " + "9" * 400 + " 1.0 0.5", "Error! x", "a/1: added", "\u2502 \u2500\u2500 \u2502"]
TEXT_ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(
    list("\t\r\n :#$'()[]<>=/-_.,0123456789xX") + list(OTHER_DIGITS[0]) + ["\u2502", "\u00a0"])


@st.composite
def mutated(draw, samples):
    """A real sample after what pasting does to text."""
    lines = draw(st.sampled_from(samples)).split("\n")
    for dummy in range(draw(st.integers(min_value=1, max_value=5))):
        if not lines:
            lines = [""]
        index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        operation = draw(st.sampled_from(["drop", "duplicate", "shuffle", "truncate", "whitespace", "digits",
                                          "foreign", "cut_text"]))
        if operation == "drop":
            del lines[index]
        elif operation == "duplicate":
            lines.insert(draw(st.integers(min_value=0, max_value=len(lines))), lines[index])
        elif operation == "shuffle":
            lines = draw(st.permutations(lines))
        elif operation == "truncate":
            lines[index] = lines[index][:draw(st.integers(min_value=0, max_value=max(len(lines[index]), 0)))]
        elif operation == "whitespace":
            lines[index] = draw(st.sampled_from(ODD_WHITESPACE)) + lines[index] + draw(st.sampled_from(ODD_WHITESPACE))
        elif operation == "digits":
            table = str.maketrans("0123456789", draw(st.sampled_from(OTHER_DIGITS)))
            lines[index] = lines[index].translate(table)
        elif operation == "foreign":
            lines.insert(index, draw(st.sampled_from(FOREIGN_LINES)))
        else:
            lines = lines[:index + 1]
    separator = draw(st.sampled_from(["\n", "\r\n", "\n\n"]))
    return separator.join(lines)


def _plain_json(result):
    """The result as JSON a strict reader takes: no Infinity, NaN or other non-JSON value."""
    text = json.dumps(result, allow_nan=False)
    assert json.loads(text) == result
    return text


def _check_notes(notes):
    for note in notes:
        assert set(note) == {"line", "text", "reason"}
        assert note["line"] is None or (isinstance(note["line"], int) and note["line"] >= 1)
        assert note["text"] is None or (isinstance(note["text"], str) and len(note["text"]) <= 120)
        assert isinstance(note["reason"], str) and note["reason"]


def _check_ib_result(result):
    _plain_json(result)
    assert set(result) == {"ports", "notes"}
    for port in result["ports"]:
        assert list(port) == list(FIELDS)
        for value in port.values():
            if isinstance(value, float):
                assert math.isfinite(value)
        assert port["port"] is None or (isinstance(port["port"], int) and port["port"] >= 0)
    _check_notes(result["notes"])


def _one_sentence(error):
    message = str(error)
    assert message and "\n" not in message and "Traceback" not in message
    return message


def _run_ib(tool, text):
    for strict in (False, True):
        try:
            result = PARSERS[tool](text, strict=strict)
        except IbTextError as error:
            _one_sentence(error)
        else:
            _check_ib_result(result)
        try:
            result = IB_FILTERS["parse_%s" % tool](text, strict=strict)
        except AnsibleFilterError as error:
            assert _one_sentence(error.message).startswith("parse_%s: " % tool)
        else:
            _check_ib_result(result)


# ----------------------------------------------------------------------------------------------
# ib parsers (ibstat, ibstatus, ibv_devinfo, ibdev2netdev, rdma link) and their filters
# ----------------------------------------------------------------------------------------------

@FUZZ
@given(tool=st.sampled_from(sorted(PARSERS)), text=st.text(alphabet=TEXT_ALPHABET, max_size=400))
def test_ib_parsers_on_random_text(tool, text):
    _run_ib(tool, text)


@FUZZ
@given(data=st.data(), tool=st.sampled_from(sorted(PARSERS)))
def test_ib_parsers_on_mutated_real_samples(data, tool):
    _run_ib(tool, data.draw(mutated(IB_SAMPLES[tool])))


@FUZZ
@given(data=st.data(), tool=st.sampled_from(sorted(PARSERS)))
def test_ib_parsers_on_other_tools_mutated_samples(data, tool):
    other = data.draw(st.sampled_from(sorted(t for t in PARSERS if t != tool)))
    _run_ib(tool, data.draw(mutated(IB_SAMPLES[other])))


@FUZZ
@given(data=st.data(), tool=st.sampled_from(sorted(PARSERS)))
def test_ib_numbers_only_come_from_ascii_digits(data, tool):
    """Every digit of a sample swapped for another script's digit: no number may come out of it."""
    table = str.maketrans("0123456789", data.draw(st.sampled_from(OTHER_DIGITS)))
    text = data.draw(mutated(IB_SAMPLES[tool])).translate(table)
    try:
        result = PARSERS[tool](text)
    except IbTextError:
        return
    _check_ib_result(result)
    for port in result["ports"]:
        for field, value in port.items():
            assert not (isinstance(value, (int, float)) and not isinstance(value, bool)), (field, value)


@FUZZ
@given(tool=st.sampled_from(sorted(PARSERS)), lines=st.lists(st.text(alphabet=TEXT_ALPHABET, max_size=60), max_size=12))
def test_ib_parsers_on_lists_of_lines(tool, lines):
    _run_ib(tool, lines)


# ----------------------------------------------------------------------------------------------
# dkms status
# ----------------------------------------------------------------------------------------------

def _run_dkms(text):
    for strict in (False, True):
        try:
            result = parse_dkms_status(text, strict=strict)
        except DkmsParseError as error:
            _one_sentence(error)
        else:
            _plain_json(result)
            assert set(result) == {"modules", "errors", "warnings", "notes"}
            assert all(module["name"] and module["version"] for module in result["modules"])
            assert all(set(d) == {"line", "message"} for d in result["errors"] + result["warnings"])
            _check_notes(result["notes"])
        try:
            dkms_filter(text, strict=strict)
        except AnsibleFilterError as error:
            assert _one_sentence(error.message).startswith("rdma.node.parse_dkms_status: ")
    _plain_json(parse_status(text, strict=False))


@FUZZ
@given(text=st.text(alphabet=TEXT_ALPHABET, max_size=400))
def test_dkms_on_random_text(text):
    _run_dkms(text)


@FUZZ
@given(data=st.data())
def test_dkms_on_mutated_real_samples(data):
    _run_dkms(data.draw(mutated(DKMS_SAMPLES)))


# ----------------------------------------------------------------------------------------------
# perftest
# ----------------------------------------------------------------------------------------------

def _check_perftest(result):
    _plain_json(result)
    _check_notes(result["notes"])
    for row in result["results"]:
        for value in row.values():
            assert not isinstance(value, float) or math.isfinite(value)


def _run_perftest(text, stderr=""):
    for strict in (False, True):
        try:
            _check_perftest(parse_perftest(text, stderr, strict=strict))
        except PerftestOutputError as error:
            _one_sentence(error)
        # A run's own output (rc and role known) is always classified, never refused.
        if not strict:
            _check_perftest(parse_perftest(text, stderr, rc=1, role="client"))
        try:
            _check_perftest(perftest_filter({"stdout": text, "stderr": stderr, "rc": 0}, strict=strict))
            _check_perftest(perftest_filter(text.split("\n"), strict=strict))
        except AnsibleFilterError as error:
            assert _one_sentence(error.message).startswith("rdma.node.parse_perftest")


@FUZZ
@given(text=st.text(alphabet=TEXT_ALPHABET, max_size=400), stderr=st.text(alphabet=TEXT_ALPHABET, max_size=80))
def test_perftest_on_random_text(text, stderr):
    _run_perftest(text, stderr)


@FUZZ
@given(data=st.data())
def test_perftest_on_mutated_real_samples(data):
    _run_perftest(data.draw(mutated(PERFTEST_SAMPLES)))


def _perftest_rows(text):
    """The numbers of a sample's lines that are rows of its table (a row may be quoted in a mail, "> ", as one
    sample is); none for a sample whose run failed before its first row."""
    lines = text.split("\n")
    return [i for i, line in enumerate(lines) if "#bytes" in text and line.lstrip("> \t")[:1].isdigit() and len(line.split()) >= 4]


@FUZZ
@given(data=st.data(), exponent=st.integers(min_value=15, max_value=400))
def test_perftest_huge_figures_never_give_infinity(data, exponent):
    text = data.draw(st.sampled_from([s for s in PERFTEST_SAMPLES if _perftest_rows(s)]))
    lines = text.split("\n")
    index = data.draw(st.sampled_from(_perftest_rows(text)))
    tokens = lines[index].split()
    position = data.draw(st.integers(min_value=0, max_value=len(tokens) - 1))
    tokens[position] = "9" * exponent + data.draw(st.sampled_from(["", ".5", "e309", "0" * 10]))
    lines[index] = "  ".join(tokens)
    _run_perftest("\n".join(lines))


# ----------------------------------------------------------------------------------------------
# Long lines: every parser's work per line is bounded (found by timing 5000-character lines, on
# which backtracking patterns took seconds)
# ----------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=2000, derandomize=True, database=None)
@given(unit=st.sampled_from([":a", "a@", " ", "[a", "(a", "a\t", "#a", "1 ", "A "]),
       size=st.integers(min_value=900, max_value=60000))
def test_long_lines_are_fast_and_noted(unit, size):
    line = "a" + unit * (size // len(unit)) + "b"
    for tool in PARSERS:
        for text in ("CA 'x'\n" + line, line):
            try:
                _check_ib_result(PARSERS[tool](text))
            except IbTextError as error:
                _one_sentence(error)
    try:
        _check_perftest(parse_perftest(line))
    except PerftestOutputError as error:
        _one_sentence(error)
    try:
        parse_dkms_status(line)
    except DkmsParseError as error:
        _one_sentence(error)
