"""Every command the physical-layer readers can run is a query: the builder's argvs, for every kind
and any name it accepts, hold no setting word, and the gate refuses every writing command people
actually run (mlnx_qos --pfc/--trust, dcb set/add/del/replace/flush, mlxlink --port_state ...)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.rdma.node.plugins.module_utils._query_commands import (
    QUERY_SHAPES,
    WRITING_WORDS,
    QueryCommandError,
    is_query_argv,
    query_argv,
)

NAMES = ["eth0", "ens1f0np0", "mlx5_bond_0", "bond0.100", "ib0", "set", "flush", "enp59s0f1v3", "x" * 15]
DEVICES = ["mlx5_0", "mlx5_bond_0", "0000:3b:00.0", "/dev/mst/mt4125_pciconf0"]


def every_argv():
    for kind, shape in QUERY_SHAPES.items():
        if "{netdev}" in shape:
            for name in NAMES:
                yield kind, query_argv(kind, netdev=name)
        else:
            for device in DEVICES:
                for port in (1, 2, 255):
                    yield kind, query_argv(kind, device=device, port=port)


@pytest.mark.parametrize("kind, argv", list(every_argv()), ids=lambda value: " ".join(value) if isinstance(value, list) else value)
def test_every_argv_the_builder_makes_is_a_query(kind, argv):
    assert is_query_argv(argv)
    shape = QUERY_SHAPES[kind]
    fixed = [word for word, part in zip(argv, shape) if not part.startswith("{")]
    assert fixed == [part for part in shape if not part.startswith("{")]
    # No setting word anywhere but as an interface name (``dcb ... dev set`` names a netdev called "set").
    writing = [word for word, part in zip(argv, shape) if word in WRITING_WORDS and not part.startswith("{")]
    assert writing in ([], ["-d", "-p"]) and (writing == [] or argv[0] == "mlxlink")
    if argv[0] == "dcb":
        assert argv[1:4] in (["-j", "pfc", "show"], ["-j", "app", "show"], ["-j", "apptrust", "show"])
    if argv[0] == "mlnx_qos":
        assert len(argv) == 3 and argv[1] == "-i"


@pytest.mark.parametrize("argv", [
    ["mlnx_qos", "-i", "eth0", "--pfc", "0,0,0,0,0,0,0,0"],  # the "verification" that switches PFC off
    ["mlnx_qos", "-i", "eth0", "--trust", "dscp"],
    ["mlnx_qos", "-i", "eth0", "--trust=dscp"],
    ["mlnx_qos", "-i", "eth0", "-f", "0,0,0,1,0,0,0,0"],
    ["mlnx_qos", "-i", "eth0", "--prio2buffer", "0,0,0,1,0,0,0,0"],
    ["mlnx_qos", "-i", "eth0", "--buffer_size", "87296,87296,0,0,0,0,0,0"],
    ["mlnx_qos", "-i", "eth0", "--tsa", "ets,ets,ets,ets,ets,ets,ets,ets"],
    ["mlnx_qos", "-i", "eth0", "--dscp2prio", "set,30,2"],
    ["mlnx_qos", "-i", "eth0", "-d", "os"],
    ["mlnx_qos", "-i", "eth0", "--cable_len=3"],
    ["dcb", "pfc", "set", "dev", "eth0", "prio-pfc", "3:on"],
    ["dcb", "-j", "pfc", "set", "dev", "eth0", "prio-pfc", "3:on"],
    ["dcb", "app", "add", "dev", "eth0", "dscp-prio", "24:3"],
    ["dcb", "app", "del", "dev", "eth0", "dscp-prio", "24:3"],
    ["dcb", "app", "replace", "dev", "eth0", "dscp-prio", "24:4"],
    ["dcb", "app", "flush", "dev", "eth0", "dscp-prio"],
    ["dcb", "apptrust", "set", "dev", "eth0", "order", "dscp"],
    ["dcb", "-batch", "/tmp/commands"],
    ["dcb", "-j", "pfc", "show", "dev", "eth0", "prio-pfc", "3:on"],
    ["mlxlink", "-d", "mlx5_0", "-p", "1", "--port_state", "DN"],
    ["mlxlink", "-d", "mlx5_0", "-p", "1", "--json", "--show_module", "--show_counters", "--clear_counters"],
    ["mlxlink", "-d", "mlx5_0", "-p", "1", "--json", "--show_module", "--pc"],
    ["mlnx_qos", "-i", "-f"],
    ["dcb", "-j", "pfc", "show", "dev", "--help"],
    ["sh", "-c", "dcb -j pfc show dev eth0"],
    "dcb -j pfc show dev eth0",
    [],
])
def test_writing_or_foreign_commands_are_refused(argv):
    assert not is_query_argv(argv)


@pytest.mark.parametrize("kind, kwargs, message", [
    ("dcb_pfc", {"netdev": "-f"}, r"^dcb_pfc: '-f' is not a network interface name$"),
    ("mlnx_qos", {"netdev": "eth0 --pfc 0,0,0,0,0,0,0,0"}, r"is not a network interface name$"),
    ("mlnx_qos", {"netdev": "averylonginterface0"}, r"is not a network interface name$"),
    ("mlxlink", {"device": "mlx5_0", "port": 0}, r"^mlxlink: the port must be a number from 1 to 255, got 0$"),
    ("mlxlink", {"device": "mlx5_0", "port": True}, r"got True$"),
    ("mlxlink", {"device": "--port_state", "port": 1}, r"^mlxlink: '--port_state' is not an RDMA device name or PCI address$"),
    ("ethtool", {"netdev": "eth0"}, r"^unknown query 'ethtool'; the known ones are dcb_app, dcb_apptrust, dcb_pfc, mlnx_qos, mlxlink$"),
])
def test_bad_names_are_refused_with_one_sentence(kind, kwargs, message):
    with pytest.raises(QueryCommandError, match=message):
        query_argv(kind, **kwargs)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(kind=st.sampled_from(sorted(QUERY_SHAPES)), name=st.text(min_size=0, max_size=24), port=st.integers(-5, 300))
def test_any_name_gives_a_query_or_a_refusal(kind, name, port):
    try:
        argv = query_argv(kind, netdev=name, device=name, port=port)
    except QueryCommandError:
        return
    assert is_query_argv(argv)
    assert not any(word in WRITING_WORDS for word, part in zip(argv, QUERY_SHAPES[kind]) if word != name and word not in ("-d", "-p"))
