# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The only commands the physical-layer readers run, built from an allow-list of query shapes.

The tools that show RoCE QoS and link quality also change it, with the same binary and one more
flag: ``mlnx_qos -i eth0`` shows PFC, ``mlnx_qos -i eth0 --pfc 0,0,0,0,0,0,0,0`` switches it off on
every priority (a public "verification" script does exactly that to print the PFC line); ``dcb pfc
show`` reads, ``dcb pfc set`` writes. So no argv is assembled anywhere else: :func:`query_argv`
builds each one from a fixed shape with only the interface, device and port filled in, and
:func:`is_query_argv` is the gate every runner calls before it executes anything.
"""

from __future__ import annotations


from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

# kind -> the argv shape; "{netdev}", "{device}" and "{port}" are the only holes.
QUERY_SHAPES = {
    "dcb_pfc": ("dcb", "-j", "pfc", "show", "dev", "{netdev}"),
    "dcb_app": ("dcb", "-j", "app", "show", "dev", "{netdev}"),
    "dcb_apptrust": ("dcb", "-j", "apptrust", "show", "dev", "{netdev}"),
    "mlnx_qos": ("mlnx_qos", "-i", "{netdev}"),
    "mlxlink": ("mlxlink", "-d", "{device}", "-p", "{port}", "--json", "--show_module", "--show_counters"),
}

# Words that make these tools write: dcb's commands, and every setting flag of mlnx_qos and mlxlink
# that a mistake could let through (documented in dcb(8), mlnx_qos --help and mlxlink --help).
WRITING_WORDS = frozenset((
    "set", "add", "del", "delete", "replace", "flush", "-b", "-batch", "--batch",
    "-f", "--pfc", "-F", "--specific_pfc", "-p", "--prio_tc", "-s", "--tsa", "-t", "--tcbw", "-r", "--ratelimit",
    "-d", "--dcbx", "--trust", "--dscp2prio", "--cable_len", "--prio2buffer", "--buffer_size",
    "-a", "--port_state", "--speeds", "--link_mode_force", "--fec", "--loopback", "--serdes_tx",
    "--pc", "--prbs", "--clear_counters", "--fec_speed", "--set_tx_precoding", "--snr",
))
# The flags each shape itself uses; they are queries there (mlnx_qos -i, mlxlink -d/-p select a device).
_SHAPE_FLAGS = {"dcb": {"-j"}, "mlnx_qos": {"-i"}, "mlxlink": {"-d", "-p", "--json", "--show_module", "--show_counters"}}

_NETDEV = lazy_compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}$")  # IFNAMSIZ is 16 with the NUL
_DEVICE = lazy_compile(r"^[A-Za-z0-9_/][A-Za-z0-9_.:/-]{0,63}$")  # mlx5_0, a PCI address, or /dev/mst/...


class QueryCommandError(ValueError):
    """A command that is not one of the allowed queries; the message says which part is wrong."""


def query_argv(kind, netdev=None, device=None, port=None):
    """The argv of the query ``kind`` (a key of :data:`QUERY_SHAPES`) for one interface or device port."""
    shape = QUERY_SHAPES.get(kind)
    if shape is None:
        raise QueryCommandError("unknown query %r; the known ones are %s" % (kind, ", ".join(sorted(QUERY_SHAPES))))
    values = {}
    if "{netdev}" in shape:
        if not isinstance(netdev, str) or not _NETDEV.match(netdev):
            raise QueryCommandError("%s: %r is not a network interface name" % (kind, netdev))
        values["{netdev}"] = netdev
    if "{device}" in shape:
        if not isinstance(device, str) or not _DEVICE.match(device):
            raise QueryCommandError("%s: %r is not an RDMA device name or PCI address" % (kind, device))
        values["{device}"] = device
    if "{port}" in shape:
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 255:
            raise QueryCommandError("%s: the port must be a number from 1 to 255, got %r" % (kind, port))
        values["{port}"] = str(port)
    argv = [values.get(part, part) for part in shape]
    if not is_query_argv(argv):  # the shapes are fixed, so this only fails if someone edits them badly
        raise QueryCommandError("%s: %s is not a query" % (kind, " ".join(argv)))
    return argv


def is_query_argv(argv):
    """True when ``argv`` is exactly one of the allowed query shapes and holds no writing word."""
    if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
        return False
    for shape in QUERY_SHAPES.values():
        if len(argv) != len(shape) or argv[0] != shape[0]:
            continue
        fixed_ok = all(a == s for a, s in zip(argv, shape) if not s.startswith("{"))
        holes_ok = all(_hole_ok(s, a) for a, s in zip(argv, shape) if s.startswith("{"))
        if fixed_ok and holes_ok:
            words = [a for a, s in zip(argv, shape) if not s.startswith("{")]
            return not any(w in WRITING_WORDS and w not in _SHAPE_FLAGS.get(argv[0], ()) for w in words)
    return False


def _hole_ok(hole, value):
    if hole == "{netdev}":
        return bool(_NETDEV.match(value))
    if hole == "{device}":
        return bool(_DEVICE.match(value))
    return value.isdigit() and 1 <= int(value) <= 255


def node_runner(module):
    """``run(argv) -> (rc, stdout, stderr)`` for the readers that query a tool on the node: only an
    argv :func:`is_query_argv` accepts, only a tool that is installed (else OSError, which the readers
    report as "could not be run"), with the C locale. None without a module (a unit test, a saved tree)."""
    if module is None:
        return None

    def run(argv):
        if not is_query_argv(argv):
            raise QueryCommandError("%s is not a query" % " ".join(argv))
        tool = module.get_bin_path(argv[0])
        if tool is None:
            raise OSError(2, "%s is not installed" % argv[0])
        return module.run_command([tool] + list(argv[1:]), environ_update={"LANG": "C", "LC_ALL": "C"})
    return run
