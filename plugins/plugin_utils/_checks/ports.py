# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``ib_inventory`` role: a host's RDMA ports against what its group should have.

Parameters (the role's group_vars, without the ``ib_inventory_`` prefix):

* ``expected_ports``: rules, each either one port that must be ACTIVE
  (``{"port": "mlx5_0/1", "link_layer": "InfiniBand", "min_rate_gbps": 100}``) or "any N ports"
  (``{"count": 1, "any_of": ["mlx5_0/1", "mlx5_1/1"], "min_rate_gbps": 200}``; without ``any_of``
  every port of the host counts);
* ``allowed_down_ports``: ports that may be down without a finding (an HCA that is not cabled);
* ``required_netdevs``: netdev names that must belong to an RDMA port (``bond0``).
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, summary
from ansible_collections.rdma.node.plugins.module_utils._ib_common import port_key

ROLE = "ib_inventory"
# The ports subset of ib_facts: devices, ports, netdevs (the summary comes with them).
FACTS = ("rdma.devices", "rdma.ports", "rdma.netdevs")
LINK_LAYERS = ("InfiniBand", "Ethernet")
RULE_KEYS = ("port", "count", "any_of", "link_layer", "min_rate_gbps")
PARAMS = ("expected_ports", "allowed_down_ports", "required_netdevs")


def _port_name(value, where):
    if not isinstance(value, str) or value.count("/") != 1 or not value.split("/")[1].isascii() or not value.split("/")[1].isdigit():
        raise CheckError("%s: expected a port written as DEVICE/PORT such as mlx5_0/1, got %r" % (where, value))
    return value


def _number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _normalize_rule(rule, where):
    if not isinstance(rule, dict):
        raise CheckError("%s: expected a mapping with 'port' or 'count', got %r" % (where, rule))
    unknown = set(rule) - set(RULE_KEYS)
    if unknown:
        raise CheckError("%s: unknown keys %s; allowed: %s" % (where, ", ".join(sorted(map(str, unknown))), ", ".join(RULE_KEYS)))
    if ("port" in rule) == ("count" in rule):
        raise CheckError("%s: give either 'port' (one port that must be ACTIVE) or 'count' (any N ports)" % where)
    link_layer = rule.get("link_layer")
    if link_layer is not None and link_layer not in LINK_LAYERS:
        raise CheckError("%s: link_layer must be InfiniBand or Ethernet, got %r" % (where, link_layer))
    min_rate = rule.get("min_rate_gbps")
    if min_rate is not None and (not _number(min_rate) or not 0 <= min_rate < float("inf")):
        raise CheckError("%s: min_rate_gbps must be a number of Gb/s, got %r" % (where, min_rate))
    count = rule.get("count")
    if "count" in rule and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise CheckError("%s: count must be a whole number of ports (1 or more), got %r" % (where, count))
    any_of = rule.get("any_of")
    if any_of is not None:
        if not isinstance(any_of, list):
            raise CheckError("%s: any_of must be a list of DEVICE/PORT names" % where)
        any_of = [_port_name(p, "%s.any_of" % where) for p in any_of]
    return {
        "port": _port_name(rule["port"], where + ".port") if "port" in rule else None,
        "count": count, "any_of": any_of, "link_layer": link_layer,
        "min_rate_gbps": None if min_rate is None else float(min_rate),
    }


def rules(params):
    """The validated ``expected_ports`` rules, each with every key present."""
    value = params.get("expected_ports")
    if value is None:
        return []
    if not isinstance(value, list):
        raise CheckError("ib_inventory_expected_ports: expected a list of port rules, got %s" % type(value).__name__)
    return [_normalize_rule(rule, "ib_inventory_expected_ports[%d]" % index) for index, rule in enumerate(value)]


def _allowed_down(params):
    value = params.get("allowed_down_ports") or []
    if not isinstance(value, list):
        raise CheckError("ib_inventory_allowed_down_ports: expected a list of DEVICE/PORT names, got %r" % (value,))
    return {_port_name(p, "ib_inventory_allowed_down_ports") for p in value}


def _ports(facts):
    ports = facts["rdma"].get("ports")
    if not isinstance(ports, list):
        raise CheckError("expected the rdma facts of rdma.node.ib_facts (a mapping with a 'ports' list)")
    return {port_key(p["device"], p["port"]): p for p in ports}


# A port whose sysfs state file is missing or unreadable is neither up nor down.
UNKNOWN_STATE = "the state of %s could not be read (its sysfs state file is missing or says nothing known)"


def _base_verdict(port, allowed_down):
    if port.get("state") == "ACTIVE":
        return "ok"
    if allowed_down:
        return "allowed_down"
    return "not_checked" if port.get("state") is None else "down"


def _describe(port):
    state = port.get("state") or "in an unknown state"
    return "%s (%s)" % (state, port["phys_state"]) if port.get("phys_state") else state


def _meets(port, rule):
    """Whether an ACTIVE port satisfies the rule's link layer and rate."""
    if port.get("state") != "ACTIVE":
        return False
    if rule["link_layer"] and port.get("link_layer") != rule["link_layer"]:
        return False
    rate = port.get("rate_gbps")
    return rule["min_rate_gbps"] is None or (rate is not None and rate >= rule["min_rate_gbps"])


def _rate_text(rate):
    return "an unknown rate" if rate is None else "%g Gb/s" % rate


def _required_ports(facts, params):
    """(rule, port facts or None) for each rule that names one port."""
    by_key = _ports(facts)
    return [(rule, by_key.get(rule["port"])) for rule in rules(params) if rule["port"]]


@check(ROLE, "no_rdma_devices", reads=FACTS)
def no_rdma_devices(facts, params, found):
    """A host of an RDMA group on which the kernel shows no RDMA device at all."""
    if not facts["rdma"].get("devices") and not facts["rdma"].get("ports"):
        found.critical("rdma", "The node shows no RDMA device (sysfs class/infiniband is empty or missing): "
                       "the driver is not loaded or the HCA is gone.", "at least one RDMA device", 0)


@check(ROLE, "no_expectations", reads=FACTS, params=PARAMS)
def no_expectations(facts, params, found):
    """A group that sets no expectation passes every host unchecked; say so."""
    if not any(params.get(name) for name in PARAMS):
        found.warning("expectations", "No port expectations are set for this host (ib_inventory_expected_ports, "
                      "ib_inventory_allowed_down_ports and ib_inventory_required_netdevs are empty), "
                      "so its ports are not compared with anything.", "expectations in group_vars", None)


@check(ROLE, "missing_device", reads=FACTS, params=("expected_ports",))
def missing_device(facts, params, found):
    """A port rule names a device the host does not have."""
    devices = facts["rdma"].get("devices") or {}
    for rule, port in _required_ports(facts, params):
        device = rule["port"].split("/")[0]
        if port is None and device not in devices:
            found.critical(rule["port"], "device %s does not exist; expected it ACTIVE" % device, "ACTIVE", None)


@check(ROLE, "missing_port", reads=FACTS, params=("expected_ports",))
def missing_port(facts, params, found):
    """A port rule names a port that the (existing) device does not have."""
    devices = facts["rdma"].get("devices") or {}
    for rule, port in _required_ports(facts, params):
        if port is None and rule["port"].split("/")[0] in devices:
            found.critical(rule["port"], "port %s does not exist; expected it ACTIVE" % rule["port"], "ACTIVE", None)


@check(ROLE, "port_down", reads=FACTS, params=("expected_ports",))
def port_down(facts, params, found):
    """A port that a rule requires is not ACTIVE."""
    for rule, port in _required_ports(facts, params):
        if port is not None and port.get("state") is None:
            found.not_checked(rule["port"], UNKNOWN_STATE % rule["port"])
        elif port is not None and port.get("state") != "ACTIVE":
            found.critical(rule["port"], "%s is %s; expected ACTIVE" % (rule["port"], _describe(port)), "ACTIVE", port.get("state"))


@check(ROLE, "wrong_link_layer", reads=FACTS, params=("expected_ports",))
def wrong_link_layer(facts, params, found):
    """A required ACTIVE port runs another link layer than its rule says."""
    for rule, port in _required_ports(facts, params):
        if port is not None and port.get("state") == "ACTIVE" and rule["link_layer"] and port.get("link_layer") != rule["link_layer"]:
            found.critical(rule["port"], "%s runs %s; expected %s" % (rule["port"], port.get("link_layer"), rule["link_layer"]),
                           rule["link_layer"], port.get("link_layer"))


@check(ROLE, "rate_degraded", reads=FACTS, params=("expected_ports",))
def rate_degraded(facts, params, found):
    """A required ACTIVE port runs below its rule's minimum rate (a link trained down)."""
    for rule, port in _required_ports(facts, params):
        if port is None or port.get("state") != "ACTIVE" or rule["min_rate_gbps"] is None:
            continue
        rate = port.get("rate_gbps")
        if rate is None or rate < rule["min_rate_gbps"]:
            found.critical(rule["port"], "%s runs at %s; expected at least %g Gb/s" % (rule["port"], _rate_text(rate), rule["min_rate_gbps"]),
                           rule["min_rate_gbps"], rate)


@check(ROLE, "too_few_active_ports", reads=FACTS, params=("expected_ports",))
def too_few_active_ports(facts, params, found):
    """Fewer ports than an "any N ports" rule asks for are ACTIVE at the rule's link layer and rate."""
    ports = list(_ports(facts).values())
    for rule in rules(params):
        if rule["port"]:
            continue
        candidates = [p for p in ports if rule["any_of"] is None or port_key(p["device"], p["port"]) in rule["any_of"]]
        good = [p for p in candidates if _meets(p, rule)]
        if len(good) >= rule["count"]:
            continue
        among = ", ".join(rule["any_of"]) if rule["any_of"] else "all ports"
        qualifiers = " ".join(q for q in (
            rule["link_layer"], "at >= %g Gb/s" % rule["min_rate_gbps"] if rule["min_rate_gbps"] is not None else "") if q)
        found.critical(among, "%d of %s %s ACTIVE%s; expected at least %d" % (
            len(good), among, "is" if len(good) == 1 else "are", " " + qualifiers if qualifiers else "", rule["count"]),
            rule["count"], len(good))


@check(ROLE, "unexpected_port_down", reads=FACTS, params=("expected_ports", "allowed_down_ports"))
def unexpected_port_down(facts, params, found):
    """A port that no rule requires and that is not allowed down is not ACTIVE."""
    required = {rule["port"] for rule in rules(params) if rule["port"]}
    allowed = _allowed_down(params)
    for key, port in _ports(facts).items():
        if key in required or key in allowed:
            continue
        if port.get("state") is None:
            found.not_checked(key, UNKNOWN_STATE % key)
        elif port.get("state") != "ACTIVE":
            found.warning(key, "%s is %s and is not in the ports allowed to be down" % (key, _describe(port)), "ACTIVE", port.get("state"))


@check(ROLE, "netdev_carrier_down", reads=FACTS, params=("expected_ports", "allowed_down_ports"))
def netdev_carrier_down(facts, params, found):
    """An ACTIVE port whose netdev has no carrier (IPoIB or RoCE traffic cannot flow)."""
    for key, port in _ports(facts).items():
        if port.get("state") == "ACTIVE" and port.get("netdev_state") == "Down":
            found.warning(key, "%s is ACTIVE but its netdev %s has no carrier" % (key, (port.get("netdevs") or ["?"])[0]), "Up", "Down")


@check(ROLE, "missing_netdev", reads=FACTS, params=("required_netdevs",))
def missing_netdev(facts, params, found):
    """A netdev the group requires (a RoCE bond, say) is not attached to any RDMA port."""
    names = params.get("required_netdevs") or []
    if not isinstance(names, list):
        raise CheckError("ib_inventory_required_netdevs: expected a list of netdev names, got %r" % (names,))
    known = facts["rdma"].get("netdevs") or {}
    for name in names:
        if name not in known:
            found.critical(name, "netdev %s is not attached to any RDMA port" % name, name, None)


@summary(ROLE, reads=FACTS, params=("expected_ports", "allowed_down_ports"))
def port_verdicts(facts, params, findings):
    """Each port with its verdict and what was expected of it, and the facts' summary, for the report."""
    allowed = _allowed_down(params)
    verdicts = {}
    for key, port in _ports(facts).items():
        verdicts[key] = {
            "port": key, "state": port.get("state"), "phys_state": port.get("phys_state"),
            "rate_gbps": port.get("rate_gbps"), "link_layer": port.get("link_layer"),
            "netdevs": port.get("netdevs") or [], "netdev_state": port.get("netdev_state"),
            "expected_rate_gbps": None, "expected_link_layer": None, "required": False,
            "allowed_down": key in allowed,
            "verdict": _base_verdict(port, key in allowed),
        }
    for rule in rules(params):
        if rule["port"]:
            verdict = verdicts.get(rule["port"])
            if verdict is None:
                continue
            verdict.update(expected_rate_gbps=rule["min_rate_gbps"], expected_link_layer=rule["link_layer"], required=True)
            if verdict["state"] is None:
                verdict["verdict"] = "not_checked"
            elif verdict["state"] != "ACTIVE":
                verdict["verdict"] = "down"
            elif rule["min_rate_gbps"] is not None and (verdict["rate_gbps"] is None or verdict["rate_gbps"] < rule["min_rate_gbps"]):
                verdict["verdict"] = "degraded"
            elif rule["link_layer"] and verdict["link_layer"] != rule["link_layer"]:
                verdict["verdict"] = "wrong_link_layer"
        else:
            for key in rule["any_of"] or verdicts:
                if key in verdicts and verdicts[key]["expected_rate_gbps"] is None:
                    verdicts[key].update(expected_rate_gbps=rule["min_rate_gbps"], expected_link_layer=rule["link_layer"])
    return {"ports": list(verdicts.values()), "facts_summary": facts["rdma"].get("summary")}
