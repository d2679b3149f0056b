"""Every spelling of a state, rate, GUID and LID the tools print maps to one normal form."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _ib_common as ib


@pytest.mark.parametrize("text, expected", [
    ("4: ACTIVE", ("ACTIVE", 4)),           # sysfs, ibstatus
    ("Active", ("ACTIVE", 4)),              # ibstat
    ("PORT_ACTIVE (4)", ("ACTIVE", 4)),     # ibv_devinfo
    ("DOWN  ", ("DOWN", 1)),                # ibdev2netdev -v, padded
    ("Initializing", ("INIT", 2)),
    ("3: ARMED", ("ARMED", 3)),
    ("5: ACTIVE_DEFER", ("ACTIVE_DEFER", 5)),
    ("1", ("DOWN", 1)),
    ("9: FUTURE", ("FUTURE", 9)),           # unknown code keeps its text
    ("Weird", ("Weird", None)),
    ("", (None, None)),
    (None, (None, None)),
])
def test_port_state(text, expected):
    assert ib.port_state(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("5: LinkUp", ("LinkUp", 5)),
    ("LINK_UP", ("LinkUp", 5)),             # rdma link
    ("Polling", ("Polling", 2)),
    ("3: Disabled", ("Disabled", 3)),
    ("4: ACTIVE", ("PortConfigurationTraining", 4)),  # prometheus fixture: the code wins
    ("PORT_CONFIGURATION_TRAINING", ("PortConfigurationTraining", 4)),
    ("LINK_ERROR_RECOVERY", ("LinkErrorRecovery", 6)),
    (None, (None, None)),
])
def test_phys_state(text, expected):
    assert ib.phys_state(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("100 Gb/sec (4X EDR)", (100.0, "4X", "EDR")),
    ("25 Gb/sec (1X EDR)", (25.0, "1X", "EDR")),
    ("10 Gb/sec (4X)", (10.0, "4X", None)),
    ("2.5 Gb/sec (1X)", (2.5, "1X", None)),
    ("400 Gb/sec (4X NDR)", (400.0, "4X", "NDR")),
    ("56", (56.0, None, None)),             # ibstat Rate:
    ("2.5", (2.5, None, None)),
    ("unknown", (None, None, None)),
    (None, (None, None, None)),
])
def test_parse_rate(text, expected):
    rate = ib.parse_rate(text)
    assert (rate["rate_gbps"], rate["width"], rate["speed"]) == expected


@pytest.mark.parametrize("text, expected", [
    ("0a7f:bc12:45ef:d23b", "0x0a7fbc1245efd23b"),
    ("0xEC0D9A03000C8980", "0xec0d9a03000c8980"),
    ("f452:1403:0091:ba10", "0xf45214030091ba10"),
    ("0x3", "0x0000000000000003"),
    ("zz", None),
    ("0x1234567890abcdef12", None),
    (None, None),
])
def test_normalize_guid(text, expected):
    assert ib.normalize_guid(text) == expected


def test_gid_interface_id():
    assert ib.gid_interface_id("fe80:0000:0000:0000:b859:9f03:00d4:0a31") == "0xb8599f0300d40a31"
    assert ib.gid_interface_id("fe80::1") is None
    assert ib.gid_interface_id(None) is None


@pytest.mark.parametrize("text, expected", [("0x3", 3), ("0xffff", 65535), ("10", 10), ("65535", 65535), ("x", None), (None, None)])
def test_parse_lid(text, expected):
    assert ib.parse_lid(text) == expected


@pytest.mark.parametrize("line, prompt", [
    ("$ ibstat", True), ("# dkms status", True), ("[root@node ~]# ibstat", True), ("root@node:~# ibstat", True),
    ("user@host $", True), ("bash-5.1$ dkms status onload", True), ("sh-4.2# ibstat", True), ("bash$ ibstat", True),
    ("mlx5_0 port 1 ==> ib0 (Up)", False), ("bash-5.1: command not found", False), ("nvidia/535.86.05, 6.5.0, x86_64: installed", False),
    # The prompts of real pastes: a login shell, a themed prompt, a bracketed one without a prompt
    # character, and after virtual environments' names (conda nests them).
    ("-bash-4.1# ibstat", True), ("\u276f ibstat", True), ("[aae4:~] ibv_devinfo -v", True),
    ("((sglang-0.5.9) ) [user@host ~]$ ibdev2netdev", True), ("(base) root@node:~# ibstat", True), ("(a) (b) $ ls", True),
    ("[  12.345678] mlx5_core 0000:3b:00.0: Link up", False), ("(0) InfiniBand", False), ("(venv)$ x", False),
    ("(WARNING! Diff between built and installed module!)", False), ("(", False), ("[8086:1234] x", False),
])
def test_shell_prompts(line, prompt):
    assert ib.is_shell_prompt(line) is prompt


def test_a_long_run_of_environment_names_is_read_whole():
    # Read index by index (slicing the line again at each name would make this quadratic).
    assert ib.is_shell_prompt("(a) " * 100000 + "$ ibstat") is True
    assert ib.is_shell_prompt("(" * 100000) is False
