# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Numbers of node files (plugins/module_utils/_numbers.py): the kernel's ASCII form or null with a warning."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._numbers import UINT64_MAX, parse_int, parse_uint


@pytest.fixture(autouse=True)
def no_leftover_warnings():
    take_read_warnings()
    yield
    take_read_warnings()


@pytest.mark.parametrize("text, base, expected", [
    ("0", 10, 0), ("14\n", 10, 14), (" 4096 ", 10, 4096), (str(UINT64_MAX), 10, UINT64_MAX),
    ("0x00010000", 16, 0x10000), ("0x0", 16, 0), ("0xffffffffffffffff", 16, UINT64_MAX),
    ("a8", 16, 0xA8), ("0XA8", 16, 0xA8), ("0000000000000000001", 10, 1),
])
def test_the_kernels_forms_are_read(text, base, expected):
    assert parse_uint(text, "/sys/x", base) == expected
    assert take_read_warnings() == []


@pytest.mark.parametrize("text", [
    "²",  # superscript two: isdigit() is true, int() raises
    "٣",  # Arabic-Indic three: int() takes it
    "１２",  # fullwidth
    "1_000",  # int() takes separators
    "+5", "-5", " - 5",
    str(UINT64_MAX + 1),  # past 64 bits
    "0x10",  # hex where the attribute is decimal
    "99999999999999999999999999999999",
    "1e3", "1.0", "0b101", "0o17", "12abc", "a8", "N/A", "\x1b[31m7",
])
def test_anything_else_is_null_with_a_warning_naming_file_and_value(text):
    assert parse_uint(text, "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error") is None
    assert take_read_warnings() == [
        "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error holds %r, not an unsigned whole number of at "
        "most 64 bits; read as null." % text.strip()]


def test_missing_or_empty_is_null_without_a_warning():
    assert parse_uint(None, "f") is None and parse_uint("", "f") is None and parse_uint(" \n", "f") is None
    assert take_read_warnings() == []


def test_a_long_value_is_shown_cut():
    assert parse_uint("x" * 5000, "f") is None
    (warning,) = take_read_warnings()
    assert warning == "f holds %r, not an unsigned whole number of at most 64 bits; read as null." % ("x" * 40 + "...")


def test_hex_past_64_bits_is_null_with_a_warning():
    assert parse_uint("0x1" + "0" * 16, "cap_mask", 16) is None
    assert take_read_warnings() == ["cap_mask holds '0x10000000000000000', not an unsigned whole number of at most 64 "
                                    "bits; read as null."]


def test_signed_numbers_for_numa_node():
    assert parse_int("-1", "numa_node") == -1 and parse_int("3", "numa_node") == 3
    assert parse_int("-²", "numa_node") is None and parse_int(str(2 ** 63), "numa_node") is None
    assert len(take_read_warnings()) == 2
