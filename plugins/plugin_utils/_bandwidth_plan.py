# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan and judge the bandwidth_check role's perftest runs.

Pure functions over the facts of ``rdma.node.ib_facts`` and the results of ``rdma.node.perftest``:

* which ports of a host to test (ACTIVE ports, optionally filtered by link layer or by name), with
  the rate each must reach (``rate_gbps`` x an efficiency threshold) and, for RoCE, the GID index of
  the port's RoCE v2 GID (read from ``gid_attrs`` in sysfs);
* the pairing of the hosts of a group by rounds (circle method: in each round every host is in at
  most one pair; with an odd count one host sits out and is paired in another round);
* the plan the role executes: one loopback test per port, then steps of pair tests where a host takes
  part in at most one test per step and every test of a step has its own TCP port;
* the verdict of each test of one host once the tests have run; the registered checks of
  ``_checks/bandwidth.py`` turn them into findings, and the role's status shows them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from ansible_collections.rdma.node.plugins.plugin_utils import _gpu_memory
from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError
from ansible_collections.rdma.node.plugins.module_utils._ib_common import port_key

ROLE = "bandwidth_check"
LINK_LAYERS = ("InfiniBand", "Ethernet")
BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
DEFAULT_TCP_PORT_BASE = 18515
ROUNDS_COVER = "cover"
ROUNDS_ALL = "all"
# Every perftest process the role starts carries this variable, so a server that outlives its
# test can be found (and stopped) by its own value, never by a process name.
JOB_ENV = "RDMA_NODE_BANDWIDTH_JOB"

_ZERO_GID = re.compile(r"^[0:]*$")
_IPV4_MAPPED = "0000:0000:0000:0000:0000:ffff:"
_GID_LINE = re.compile(r"/(gids|gid_attrs/types|gid_attrs/ndevs)/(\d+):(.*)$")
# A row of MLNX_OFED's show_gids: "mlx5_3<TAB>1<TAB>3<TAB>0000:...:c0a8:0a02<TAB>192.168.10.2<TAB>v2<TAB>net1" (the IPv4
# column empty for a GID that maps none).
_SHOW_GIDS_ROW = re.compile(r"^(?P<device>\S+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7})\s+"
                            r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}\s+)?(?P<version>v[12])(?:\s+(?P<ndev>\S+))?\s*$")
_SHOW_GIDS_TYPES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}
# An author's comment mark before a row (a shell's "#", a C comment's "*" or "//"): a root prompt's command after it
# ("# show_gids") is no row anyway.
_COMMENT_MARK = re.compile(r"^(?:#|\*|//)\s+")
_PORT_NAME = re.compile(r"^[^/\s]+/\d+$")
# The role's settings, as messages name them.
VARIABLES = {"efficiency": "bandwidth_check_efficiency", "efficiency_gpu": "bandwidth_check_efficiency_gpu",
             "gpu_mode": "bandwidth_check_gpu_mode"}
# A failure on this side only says that the other side went away (or nothing clear): the peer's
# own cause, when it has one, explains more.
_VAGUE_CAUSES = ("remote_unreachable", "unknown")


class BandwidthPlanError(CheckError):
    """Input the plan cannot use; the message names the variable and what was expected.

    A CheckError, so that a check given bad input reports the sentence, not a traceback."""


# ---------------------------------------------------------------------------------------------
# Ports


def _names(value, variable):
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise BandwidthPlanError("%s: expected a list, got %r" % (variable, value))
    return list(value)


def _efficiency(value, variable="bandwidth_check_efficiency"):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BandwidthPlanError("%s: expected a number between 0 and 1 such as 0.9, got %r" % (variable, value)) from None
    if not 0 < number <= 1:
        raise BandwidthPlanError("%s: expected a number between 0 and 1 such as 0.9, got %r" % (variable, value))
    return number


def expected_gbps(rate_gbps, efficiency):
    """The bandwidth a port must reach: its link rate times the efficiency threshold, or None."""
    if rate_gbps is None:
        return None
    return round(float(rate_gbps) * _efficiency(efficiency), 2)


def parse_gid_table(text, port=None):
    """Parse ``grep -r -H . PORT/gids PORT/gid_attrs`` output into ``{index: {gid, type, ndev}}``.

    Entries the kernel refuses to show (unused GIDs answer EINVAL) are simply absent; an all-zero
    GID is an unused entry and is dropped. The rows of ``show_gids`` are read too: those of ``port``
    (``DEVICE/PORT``) where it is given, as show_gids lists every port of the node; rows an author
    commented out (``# mlx5_0  1  0  fe80:...``) count as rows, and where one port's index comes twice
    (two hosts' listings pasted together) the first listing's row is kept.
    """
    table, listed = {}, set()
    for line in (text or "").splitlines():
        row = _SHOW_GIDS_ROW.match(_COMMENT_MARK.sub("", line.strip()))
        if row and (port is None or port_key(row.group("device"), row.group("port")) == port):
            key = (row.group("device"), row.group("port"), int(row.group("index")))
            if key not in listed:
                listed.add(key)
                table[key[2]] = {"gid": row.group("gid"), "type": _SHOW_GIDS_TYPES[row.group("version")], "ndev": row.group("ndev")}
            continue
        match = _GID_LINE.search(line.rstrip("\r"))
        if not match:
            continue
        kind, index, value = match.group(1), int(match.group(2)), match.group(3).strip()
        entry = table.setdefault(index, {"gid": None, "type": None, "ndev": None})
        entry[{"gids": "gid", "gid_attrs/types": "type", "gid_attrs/ndevs": "ndev"}[kind]] = value or None
    return {index: entry for index, entry in table.items() if entry["gid"] and not _ZERO_GID.match(entry["gid"])}


def roce_v2_gid_index(table, netdevs=None):
    """The index of the port's RoCE v2 GID on its own netdev, or None.

    Among the RoCE v2 GIDs of the netdev, an IPv4-mapped one (``::ffff:a.b.c.d``, what show_gids
    lists for an interface address) is preferred, then any other global one, then the link-local one;
    the lowest index wins within each kind.
    """
    wanted = set(netdevs or [])
    candidates = []
    for index, entry in table.items():
        if (entry.get("type") or "").strip().lower() != "roce v2":
            continue
        if wanted and entry.get("ndev") not in wanted:
            continue
        gid = entry["gid"].lower()
        rank = 0 if gid.startswith(_IPV4_MAPPED) else (2 if gid.startswith("fe80:") else 1)
        candidates.append((rank, index))
    return min(candidates)[1] if candidates else None


def gid_texts(value):
    """GID table outputs by port name, from a mapping or from registered loop results (``item`` a port)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise BandwidthPlanError("expected the GID tables as a mapping of port to text or as loop results, got %r" % (value,))
    texts = {}
    for result in value:
        item = result.get("item") if isinstance(result, Mapping) else None
        if isinstance(item, Mapping) and "device" in item and "port" in item:
            texts[port_key(item["device"], item["port"])] = result.get("stdout") or ""
    return texts


def select_ports(ports, link_layers=None, only=None, exclude=None, efficiency=0.95, gid_tables=None, gid_index=None,
                 gpu_mode="host", efficiency_gpu=0.9, rdma=None, variables=None):
    """The ports of one host to test, from ``ansible_facts.rdma.ports``.

    Returns ``{"ports": [...], "skipped": [...], "efficiency": float, "efficiency_gpu": float}``. A tested
    port has ``name`` (``mlx5_0/1``), ``device``, ``port``, ``link_layer``, ``rate_gbps``,
    ``expected_gbps``, ``netdevs``, ``gid_index`` and ``gid_source`` (``sysfs``: the RoCE v2 GID of the
    port's netdev; ``variable``: ``gid_index`` given; ``none``: perftest's default), and the memory its
    test uses for ``gpu_mode`` (``_gpu_memory.port_memory`` over the node's ``rdma`` facts with their
    gpudirect and locality subsets): ``memory`` (host, cuda, dmabuf), ``memory_reason``, ``gpu`` (the GPU
    nearest the HCA), ``cuda_index``, ``dmabuf``, ``numa_node`` (the HCA's) and ``efficiency``: the rate a
    test must reach is the link rate x ``efficiency`` with host memory, x ``efficiency_gpu`` with GPU
    memory. Skipped ports say why. ``gid_tables`` holds the ``grep -r -H . gids gid_attrs`` output of the
    RoCE ports (see gid_texts()). ``variables`` names the settings in messages (keys ``efficiency``,
    ``efficiency_gpu``, ``gpu_mode``; the role's variables by default).
    """
    names = dict(VARIABLES, **(variables or {}))
    efficiency = _efficiency(efficiency, names["efficiency"])
    efficiency_gpu = _efficiency(efficiency_gpu, names["efficiency_gpu"])
    if gpu_mode not in _gpu_memory.CHOICES:
        raise BandwidthPlanError("%s: expected one of %s, got %r" % (names["gpu_mode"], ", ".join(_gpu_memory.CHOICES), gpu_mode))
    layers = _names(link_layers, "bandwidth_check_link_layers") or list(LINK_LAYERS)
    for layer in layers:
        if layer not in LINK_LAYERS:
            raise BandwidthPlanError("bandwidth_check_link_layers: expected InfiniBand or Ethernet, got %r" % (layer,))
    only = _names(only, "bandwidth_check_ports")
    exclude = _names(exclude, "bandwidth_check_exclude_ports")
    for variable, names in (("bandwidth_check_ports", only), ("bandwidth_check_exclude_ports", exclude)):
        for name in names:
            if not isinstance(name, str) or not _PORT_NAME.match(name):
                raise BandwidthPlanError("%s: expected ports written as DEVICE/PORT such as mlx5_0/1, got %r" % (variable, name))
    if gid_index is not None and (isinstance(gid_index, bool) or not str(gid_index).isdigit()):
        raise BandwidthPlanError("bandwidth_check_gid_index: expected a GID index (0 or more), got %r" % (gid_index,))
    if ports is None:
        ports = []
    if isinstance(ports, Mapping) or isinstance(ports, str) or not isinstance(ports, Sequence):
        raise BandwidthPlanError("ansible_facts.rdma.ports: expected the list of ports of rdma.node.ib_facts, got %r" % (ports,))
    gid_tables = gid_texts(gid_tables)
    tested, skipped = [], []
    for entry in ports:
        if not isinstance(entry, Mapping) or "device" not in entry or "port" not in entry:
            raise BandwidthPlanError("ansible_facts.rdma.ports: expected entries with device and port, got %r" % (entry,))
        name = port_key(entry["device"], entry["port"])
        reason = None
        if only and name not in only:
            reason = "not in bandwidth_check_ports"
        elif name in exclude:
            reason = "in bandwidth_check_exclude_ports"
        elif entry.get("state") != "ACTIVE":
            reason = "state %s, not ACTIVE" % (entry.get("state") or "unknown")
        elif entry.get("link_layer") not in layers:
            reason = "link layer %s, not in %s" % (entry.get("link_layer") or "unknown", ", ".join(layers))
        if reason:
            skipped.append({"name": name, "state": entry.get("state"), "reason": reason})
            continue
        netdevs = list(entry.get("netdevs") or [])
        index, source = None, "none"
        if entry.get("link_layer") == "Ethernet":
            index = roce_v2_gid_index(parse_gid_table(gid_tables.get(name), name), netdevs)
            source = "sysfs"
            if index is None and gid_index is not None:
                index, source = int(gid_index), "variable"
            elif index is None:
                source = "none"
        rate = entry.get("rate_gbps")
        memory = _gpu_memory.port_memory(rdma, entry["device"], gpu_mode)
        share = efficiency if memory["mode"] == "host" else efficiency_gpu
        tested.append({
            "name": name, "device": entry["device"], "port": int(entry["port"]), "link_layer": entry.get("link_layer"),
            "rate_gbps": rate, "expected_gbps": expected_gbps(rate, share), "netdevs": netdevs,
            "gid_index": index, "gid_source": source, "memory": memory["mode"], "memory_reason": memory["reason"],
            "gpu": memory["gpu"], "cuda_index": memory["cuda_index"], "dmabuf": memory["dmabuf"], "numa_node": memory["numa_node"],
            "efficiency": share,
        })
    tested.sort(key=lambda p: (LINK_LAYERS.index(p["link_layer"]), p["device"], p["port"]))
    return {"ports": tested, "skipped": skipped, "efficiency": efficiency, "efficiency_gpu": efficiency_gpu}


# ---------------------------------------------------------------------------------------------
# Pairing


def _rounds_wanted(rounds):
    if rounds in (None, ROUNDS_COVER, ROUNDS_ALL):
        return rounds or ROUNDS_COVER
    if isinstance(rounds, bool) or not str(rounds).isdigit() or int(str(rounds)) < 1:
        raise BandwidthPlanError(
            "bandwidth_check_pair_rounds: expected 'cover', 'all' or a number of rounds of 1 or more, got %r" % (rounds,)
        )
    return int(str(rounds))


def round_robin(hosts):
    """Every round of a full round robin over ``hosts`` (circle method).

    Returns a list of ``{"pairs": [(server, client), ...], "sitting_out": [...]}``. In every round a
    host is in at most one pair; over all rounds every two hosts meet once. With an odd count one
    host sits out per round, each a different one. The first host of a pair is the server; the
    direction alternates from round to round so that hosts serve in turn.
    """
    seats = list(hosts)
    if len(set(seats)) != len(seats):
        raise BandwidthPlanError("the hosts to pair must be distinct, got %r" % (seats,))
    if len(seats) < 2:
        return []
    if len(seats) % 2:
        seats.append(None)
    count = len(seats)
    rounds = []
    for number in range(count - 1):
        pairs, sitting_out = [], []
        for index in range(count // 2):
            first, second = seats[index], seats[count - 1 - index]
            if first is None or second is None:
                sitting_out.append(second if first is None else first)
                continue
            pairs.append((first, second) if number % 2 == 0 else (second, first))
        rounds.append({"pairs": pairs, "sitting_out": sitting_out})
        # The first seat stays; the others move one seat on.
        seats = [seats[0], seats[-1]] + seats[1:-1]
    return rounds


def pair_rounds(hosts, rounds=ROUNDS_COVER):
    """The rounds to run for one group.

    ``cover`` (the default): as few rounds as test every host once - one round for an even count,
    two for an odd one (the host that sits out in the first round is paired in the second); none for
    a single host, which gets its loopback tests only. ``all``: the full round robin, every two hosts
    once. A number: that many rounds of the round robin, at most all of them.
    """
    wanted = _rounds_wanted(rounds)
    schedule = round_robin(hosts)
    if wanted == ROUNDS_ALL:
        return schedule
    if wanted == ROUNDS_COVER:
        return schedule[:1] if len(hosts) % 2 == 0 else schedule[:2]
    return schedule[:wanted]


def pairs_as_lists(schedule):
    """The schedule with plain lists (as templates and JSON see it)."""
    return [{"pairs": [list(pair) for pair in entry["pairs"]], "sitting_out": list(entry["sitting_out"])} for entry in schedule]


def match_ports(server_ports, client_ports):
    """Pair the ports of two hosts: the i-th port of a link layer on one with the i-th on the other.

    Hosts of a group have the same hardware, but which HCA is cabled may differ (A100 nodes: either
    mlx5_0 or mlx5_1), so ports are matched by their order within a link layer, not by name. A port
    without a counterpart is tested by loopback only.
    """
    matched = []
    for layer in LINK_LAYERS:
        mine = [p for p in server_ports if p["link_layer"] == layer]
        theirs = [p for p in client_ports if p["link_layer"] == layer]
        matched.extend(zip(mine, theirs))
    return matched


def _min_known(values):
    known = [v for v in values if v is not None]
    return min(known) if known else None


_MEMORY_KEYS = ("memory", "memory_reason", "gpu", "cuda_index", "dmabuf", "numa_node", "efficiency")


def _port_ref(port):
    """What one side of a pair test needs of its port: the device, the GID, and the memory its test uses."""
    ref = {"name": port["name"], "device": port["device"], "port": port["port"], "gid_index": port["gid_index"]}
    ref.update((key, port.get(key)) for key in _MEMORY_KEYS)
    ref.setdefault("memory", "host")
    ref["memory"] = ref["memory"] or "host"
    return ref


def _tcp_port(base, offset, what):
    number = base + offset
    if number > 65535:
        raise BandwidthPlanError(
            "bandwidth_check_tcp_port_base: %d leaves no TCP port for %s (%d is above 65535); choose a lower base"
            % (base, what, number)
        )
    return number


def build_plan(hosts, order=None, tcp_port_base=DEFAULT_TCP_PORT_BASE, rounds=ROUNDS_COVER, tool="ib_write_bw",
               loopback=True, pairs=True):
    """The whole run: loopback tests per host, then the pair tests in steps.

    ``hosts`` maps each host name to ``{"group", "address", "ports", "efficiency"}`` (``ports`` as
    select_ports() returns them). ``order`` is the order of the hosts (the play's); hosts are numbered
    in it.

    Loopback tests all run at once on every host, each host on TCP port ``base + its number``, so
    hosts that share a network namespace (containers, simulated hosts) do not collide. Pair tests run
    in steps: a step holds, for every pair of the current round of every group, one pair of matched
    ports; a host is in at most one test per step and the tests of a step use TCP ports ``base``,
    ``base + 1``, ... Groups run their rounds side by side. ``loopback``/``pairs`` false leave those
    tests out (the pairing is still planned and shown).

    Notes are ``{"hosts": [...], "note": text}``: what the plan could not do, and for whom.
    """
    if not isinstance(hosts, Mapping):
        raise BandwidthPlanError("expected the hosts as a mapping of host name to its ports, got %r" % (hosts,))
    if tool not in BW_TOOLS:
        raise BandwidthPlanError("bandwidth_check_tool: expected one of %s, got %r" % (", ".join(BW_TOOLS), tool))
    if isinstance(tcp_port_base, bool) or not str(tcp_port_base).isdigit() or not 1 <= int(str(tcp_port_base)) <= 65535:
        raise BandwidthPlanError("bandwidth_check_tcp_port_base: expected a TCP port from 1 to 65535, got %r" % (tcp_port_base,))
    base = int(str(tcp_port_base))
    wanted = _rounds_wanted(rounds)
    order = [h for h in (order or sorted(hosts)) if h in hosts]
    order += sorted(h for h in hosts if h not in order)
    notes = []

    ports = {}
    loopback_tests = {}
    for number, host in enumerate(order):
        info = hosts[host] or {}
        ports[host] = list(info.get("ports") or [])
        loopback_tests[host] = [dict(port, tcp_port=_tcp_port(base, number, "the loopback test of " + host))
                                for port in ports[host]] if loopback else []
        if not ports[host]:
            notes.append({"hosts": [host], "note": "%s has no ACTIVE port to test." % host})

    groups = {}
    for host in order:
        info = hosts[host] or {}
        if info.get("ports"):
            groups.setdefault(str(info.get("group") or "ungrouped"), []).append(host)
    group_plans = []
    schedules = {}
    for name in sorted(groups):
        members = groups[name]
        schedule = pair_rounds(members, wanted)
        schedules[name] = schedule
        paired = set(host for entry in schedule for pair in entry["pairs"] for host in pair)
        group_notes = []
        if len(members) == 1:
            group_notes.append({"hosts": members, "note": "%s is the only host of group %s to test: loopback only, "
                                                          "no pair test." % (members[0], name)})
        else:
            for host in members:
                if host not in paired:
                    group_notes.append({"hosts": [host], "note": "%s of group %s is not paired in the %d round(s) asked for."
                                                                 % (host, name, len(schedule))})
        notes.extend(group_notes)
        group_plans.append({
            "name": name, "hosts": members, "rounds": pairs_as_lists(schedule),
            "notes": [n["note"] for n in group_notes],
        })

    steps = []
    round_count = max([len(s) for s in schedules.values()] or [0]) if pairs else 0
    for round_index in range(round_count):
        pair_slots = []
        for name in sorted(schedules):
            if round_index >= len(schedules[name]):
                continue
            for server, client in schedules[name][round_index]["pairs"]:
                matched = match_ports(hosts[server]["ports"], hosts[client]["ports"])
                if not matched:
                    notes.append({"hosts": [server, client], "note": "%s and %s (group %s) have no ports of the same "
                                                                     "link layer: no pair test." % (server, client, name)})
                for slot, (server_port, client_port) in enumerate(matched):
                    pair_slots.append((slot, name, server, client, server_port, client_port))
        slot_count = max([entry[0] for entry in pair_slots] or [-1]) + 1
        for slot in range(slot_count):
            tests = []
            for entry in pair_slots:
                if entry[0] != slot:
                    continue
                dummy, name, server, client, server_port, client_port = entry
                tests.append({
                    "id": "%s:%s>%s:%s" % (server, server_port["name"], client, client_port["name"]),
                    "group": name,
                    "round": round_index + 1,
                    "slot": slot + 1,
                    "server": server,
                    "client": client,
                    "server_address": str(hosts[server].get("address") or server),
                    "server_port": _port_ref(server_port),
                    "client_port": _port_ref(client_port),
                    "link_layer": server_port["link_layer"],
                    "rate_gbps": _min_known([server_port["rate_gbps"], client_port["rate_gbps"]]),
                    "expected_gbps": _min_known([server_port["expected_gbps"], client_port["expected_gbps"]]),
                    "tcp_port": _tcp_port(base, len(tests), "a pair test"),
                })
            steps.append({"step": len(steps) + 1, "round": round_index + 1, "slot": slot + 1, "tests": tests})
    return {
        "tool": tool, "tcp_port_base": base, "rounds": wanted, "hosts": order, "ports": ports,
        "loopback": loopback_tests, "groups": group_plans, "steps": steps, "notes": notes,
    }


def step_roles(step, host):
    """The test ``host`` serves and the one it is the client of in ``step`` (None when idle)."""
    serving = [t for t in step["tests"] if t["server"] == host]
    client = [t for t in step["tests"] if t["client"] == host]
    return {"serve": serving[0] if serving else None, "client": client[0] if client else None}


# ---------------------------------------------------------------------------------------------
# Processes of a job


def job_processes(ps_text, job):
    """The processes whose environment holds ``RDMA_NODE_BANDWIDTH_JOB=<job>``.

    ``ps_text`` is the output of ``ps e -e -ww -o pid=,pgid=,args=`` (the command line followed by
    the environment). Each process is ``{pid, pgid, command, deadline}``, where ``deadline`` marks
    the coreutils timeout(1) that rdma.node.perftest runs the tool under: signalling it ends the tool's
    process group and lets the module report.
    """
    if not job:
        raise BandwidthPlanError("expected the job value to look for, got %r" % (job,))
    marker = "%s=%s" % (JOB_ENV, job)
    found = []
    for line in (ps_text or "").splitlines():
        fields = line.split(None, 2)
        if len(fields) < 3 or not fields[0].isdigit() or not fields[1].isdigit():
            continue
        words = fields[2].split()
        if marker not in words:
            continue
        found.append({
            "pid": int(fields[0]), "pgid": int(fields[1]), "command": words[0],
            "deadline": os.path.basename(words[0]) == "timeout",
        })
    return found


# ---------------------------------------------------------------------------------------------
# Verdicts


def _outcome(result):
    """What one perftest task result says: ``{ran, measured_gbps, cause, line, side, hint, msg, cmd}``."""
    if not isinstance(result, Mapping) or not result:
        return {"ran": False, "measured_gbps": None, "cause": None, "line": None, "side": None, "hint": None,
                "msg": None, "cmd": None, "gpu_used": None, "pinning": None, "warnings": []}
    parsed = result.get("parsed") if isinstance(result.get("parsed"), Mapping) else {}
    outcome = {"ran": True, "measured_gbps": result.get("bw_average_gbps"), "cause": None, "line": None,
               "side": None, "hint": None, "msg": result.get("msg"), "cmd": result.get("cmd"),
               "gpu_used": parsed.get("gpu"), "pinning": result.get("pinning"),
               "warnings": [w for w in parsed.get("warnings") or [] if isinstance(w, str)]}
    if result.get("skipped"):
        outcome["ran"] = False
        return outcome
    failure = result.get("failure")
    if isinstance(failure, Mapping):
        outcome.update(cause=failure.get("cause") or "unknown", line=failure.get("line"), side=failure.get("side"),
                       hint=failure.get("hint"))
    elif "results" not in result or (not result.get("results") and outcome["measured_gbps"] is None):
        # The module itself failed (perftest missing, bad arguments, the async job lost...).
        outcome.update(cause="error", line=result.get("msg") or "the perftest task returned no result")
    return outcome


def failure_text(failure):
    """``cause (line). hint`` of a failed test, as the findings say it."""
    text = "%s (%s)" % (failure["cause"], failure["line"]) if failure["line"] else failure["cause"]
    if failure["hint"]:
        text += ". " + failure["hint"]
    return text


def _judge(measured, expected):
    if measured is None:
        return "failed"
    if expected is not None and measured < expected:
        return "below_expected"
    return "pass"


def _loopback_verdict(entry, result):
    """``(status, outcome, failure)`` of one loopback test; outcome is the verdict, or ``no_result``."""
    outcome = _outcome(result)
    status = {
        "port": entry["name"], "link_layer": entry["link_layer"], "rate_gbps": entry["rate_gbps"],
        "expected_gbps": entry["expected_gbps"], "measured_gbps": outcome["measured_gbps"], "verdict": None,
        "cause": outcome["cause"], "line": outcome["line"], "hint": outcome["hint"], "gid_index": entry["gid_index"],
        "gid_source": entry["gid_source"], "tcp_port": entry["tcp_port"], "cmd": outcome["cmd"],
    }
    status.update(_memory_status(entry, outcome))
    if not outcome["ran"]:
        status["verdict"] = "not_run"
        return status, "not_run", None
    if outcome["cause"]:
        status["verdict"] = "failed"
        return status, "failed", outcome
    status["verdict"] = _judge(outcome["measured_gbps"], entry["expected_gbps"])
    if status["verdict"] == "failed":
        status["cause"] = "unknown"
        return status, "no_result", None
    return status, status["verdict"], None


def _memory_status(port, outcome):
    """What a test's status says of its memory: the mode, the nearest GPU and the one perftest used, the pinning."""
    gpu = port.get("gpu") if isinstance(port.get("gpu"), Mapping) else None
    return {"memory": port.get("memory") or "host", "memory_reason": port.get("memory_reason"),
            "efficiency": port.get("efficiency"), "gpu": (gpu or {}).get("pci_address"),
            "gpu_used": (outcome["gpu_used"] or {}).get("bus"), "pinning": outcome["pinning"],
            "warnings": outcome["warnings"]}


def _records(pair_runs):
    by_test = {}
    for record in pair_runs or []:
        if isinstance(record, Mapping) and record.get("id") and record.get("side") in ("server", "client"):
            by_test.setdefault(record["id"], {})[record["side"]] = record
    return by_test


def _pair_verdict(host, test, records):
    """``(status, outcome, failure)`` of one pair test as ``host`` took part in it."""
    server_record = records.get("server") or {}
    client_record = records.get("client") or {}
    server = _outcome(server_record.get("result"))
    client = _outcome(client_record.get("result"))
    role = "server" if test["server"] == host else "client"
    status = {
        "id": test["id"], "group": test["group"], "round": test["round"], "slot": test["slot"], "role": role,
        "peer": test["client"] if role == "server" else test["server"],
        "port": (test["server_port"] if role == "server" else test["client_port"])["name"],
        "peer_port": (test["client_port"] if role == "server" else test["server_port"])["name"],
        "link_layer": test["link_layer"], "rate_gbps": test["rate_gbps"], "expected_gbps": test["expected_gbps"],
        "measured_gbps": None, "verdict": None, "cause": None, "side": None, "line": None, "hint": None,
        "tcp_port": test["tcp_port"], "server_stopped_by": server_record.get("stopped_by"),
    }
    mine, theirs = (server, client) if role == "server" else (client, server)
    status.update(_memory_status(test["server_port"] if role == "server" else test["client_port"], mine))
    status["peer_memory"] = (test["client_port"] if role == "server" else test["server_port"]).get("memory") or "host"
    # perftest's CPU frequency warning is printed by either side; a figure below expectation is read with it.
    status["warnings"] = list(dict.fromkeys(mine["warnings"] + theirs["warnings"]))
    if not server_record and not client_record:
        status["verdict"] = "not_run"
        return status, "not_run", None

    chosen = None
    if server_record and not server_record.get("listening", True):
        chosen = dict(server, side="server")
        if chosen["cause"] in (None,) + _VAGUE_CAUSES:
            # Nothing more specific than "it never listened" (a stuck or killed server).
            line = "the server did not listen on TCP port %s" % test["tcp_port"]
            if chosen["line"]:
                line += "; it said: %s" % chosen["line"]
            chosen.update(cause="unknown", line=line, hint=None)
    elif client["cause"]:
        chosen = dict(client, side="client")
        if client["cause"] in _VAGUE_CAUSES and server["cause"] and server["cause"] not in _VAGUE_CAUSES + ("error",):
            chosen = dict(server, side="server")
    elif not client_record and server["cause"]:
        chosen = dict(server, side="server")
    measured = client["measured_gbps"] if client["measured_gbps"] is not None else server["measured_gbps"]
    status["measured_gbps"] = measured
    if chosen is not None:
        if chosen.get("hint") is None and chosen["cause"] == "unknown":
            chosen["hint"] = (
                "Read the output of both sides in the task results, and run the same commands by hand "
                "on the two nodes.")
        status.update(verdict="failed", cause=chosen["cause"], side=chosen["side"], line=chosen["line"], hint=chosen["hint"])
        return status, "failed", chosen
    status["verdict"] = _judge(measured, test["expected_gbps"])
    if status["verdict"] == "failed":
        status["cause"] = "unknown"
        return status, "no_result", None
    return status, status["verdict"], None


def verdicts(plan, host, loopback_results=None, pair_runs=None, check_mode=False, selection=None):
    """The verdict of every test of ``host`` once its tests have run.

    ``loopback_results`` are the task results of its loopback tests (each with ``item``, the plan's
    entry); ``pair_runs`` are the records the hosts kept of the pair tests (``{id, side, result,
    listening, stopped_by}``), from any host: the tests ``host`` took part in are picked out.
    ``selection`` is the host's select_ports() result (its skipped ports, its efficiency).

    Returns ``{"loopback": [...], "pairs": [...], "no_active_port", "skipped", ...}``: each test as
    ``{"status", "outcome", "failure"}`` plus ``entry`` (loopback) or ``test`` and ``server_record``
    (pairs). ``status`` is what the role's status shows; ``outcome`` is its verdict (``pass``,
    ``below_expected``, ``failed``, ``not_run``), or ``no_result`` when the test ran without
    failing and printed no bandwidth; ``failure`` is the failure that explains a failed test.
    """
    if not isinstance(plan, Mapping) or any(key not in plan for key in ("ports", "loopback", "steps", "groups")):
        raise BandwidthPlanError("expected the plan of rdma.node.bandwidth_plan, got %r" % (plan,))
    results_by_port = {}
    for result in loopback_results or []:
        item = result.get("item") if isinstance(result, Mapping) else None
        if isinstance(item, Mapping) and item.get("name"):
            results_by_port[item["name"]] = result
    loopback = []
    for entry in plan["loopback"].get(host) or []:
        status, outcome, failure = _loopback_verdict(entry, results_by_port.get(entry["name"]))
        loopback.append({"status": status, "outcome": outcome, "failure": failure, "entry": entry})
    records = _records(pair_runs)
    pairs = []
    for step in plan["steps"]:
        for test in step["tests"]:
            if host not in (test["server"], test["client"]):
                continue
            these = records.get(test["id"], {})
            status, outcome, failure = _pair_verdict(host, test, these)
            pairs.append({"status": status, "outcome": outcome, "failure": failure, "test": test,
                          "server_record": these.get("server") or {}})
    group = None
    for entry in plan["groups"]:
        if host in entry["hosts"]:
            group = entry["name"]
    return {
        "host": host, "tool": plan["tool"], "check_mode": bool(check_mode), "group": group,
        "efficiency": (selection or {}).get("efficiency"), "efficiency_gpu": (selection or {}).get("efficiency_gpu"),
        "skipped": (selection or {}).get("skipped") or [],
        "no_active_port": host in plan["ports"] and not plan["ports"][host],
        "loopback": loopback, "pairs": pairs,
        "notes": [n["note"] for n in plan.get("notes") or [] if host in n["hosts"]],
    }
