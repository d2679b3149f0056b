# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compare a host's RDMA facts with what its inventory group should have.

Expectations (the ``ib_inventory`` role's group_vars):

* ``expected_ports``: rules, each either one port that must be ACTIVE
  (``{"port": "mlx5_0/1", "link_layer": "InfiniBand", "min_rate_gbps": 100}``) or "any N ports"
  (``{"count": 1, "any_of": ["mlx5_0/1", "mlx5_1/1"], "min_rate_gbps": 200}``; without ``any_of``
  every port of the host counts);
* ``allowed_down``: ports that may be down without a finding (an HCA that is not cabled);
* ``required_netdevs``: netdev names that must belong to an RDMA port (``bond0``).

Every finding is collected before anything is decided; ``evaluate`` returns them all together with a
verdict per port, for the fleet report.
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.module_utils import _findings
from ansible_collections.rdma.node.plugins.module_utils._ib_common import port_key

ROLE = "ib_inventory"
LINK_LAYERS = ("InfiniBand", "Ethernet")


class ExpectationError(ValueError):
    """An expectation that cannot be understood; the message names the variable and the entry."""


def finding(check, severity, subject, message, expected=None, actual=None):
    return _findings.finding(ROLE, check, severity, subject, message, expected, actual)


def _port_name(value, where):
    if not isinstance(value, str) or value.count("/") != 1 or not value.split("/")[1].isdigit():
        raise ExpectationError("%s: expected a port written as DEVICE/PORT such as mlx5_0/1, got %r" % (where, value))
    return value


def normalize_rules(expected_ports, variable="ib_inventory_expected_ports"):
    """Validate the rules; returns a list of dicts with every key present."""
    if expected_ports is None:
        return []
    if not isinstance(expected_ports, list):
        raise ExpectationError("%s: expected a list of port rules, got %s" % (variable, type(expected_ports).__name__))
    rules = []
    for index, rule in enumerate(expected_ports):
        where = "%s[%d]" % (variable, index)
        if not isinstance(rule, dict):
            raise ExpectationError("%s: expected a mapping with 'port' or 'count', got %r" % (where, rule))
        unknown = set(rule) - {"port", "count", "any_of", "link_layer", "min_rate_gbps"}
        if unknown:
            raise ExpectationError("%s: unknown keys %s; allowed: port, count, any_of, link_layer, min_rate_gbps"
                                   % (where, ", ".join(sorted(unknown))))
        if ("port" in rule) == ("count" in rule):
            raise ExpectationError("%s: give either 'port' (one port that must be ACTIVE) or 'count' (any N ports)" % where)
        link_layer = rule.get("link_layer")
        if link_layer is not None and link_layer not in LINK_LAYERS:
            raise ExpectationError("%s: link_layer must be InfiniBand or Ethernet, got %r" % (where, link_layer))
        min_rate = rule.get("min_rate_gbps")
        if min_rate is not None and (isinstance(min_rate, bool) or not isinstance(min_rate, (int, float)) or min_rate < 0):
            raise ExpectationError("%s: min_rate_gbps must be a number of Gb/s, got %r" % (where, min_rate))
        count = rule.get("count")
        if "count" in rule and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ExpectationError("%s: count must be a whole number of ports (1 or more), got %r" % (where, count))
        any_of = rule.get("any_of")
        if any_of is not None:
            if not isinstance(any_of, list):
                raise ExpectationError("%s: any_of must be a list of DEVICE/PORT names" % where)
            any_of = [_port_name(p, "%s.any_of" % where) for p in any_of]
        rules.append({
            "port": _port_name(rule["port"], where + ".port") if "port" in rule else None,
            "count": count, "any_of": any_of, "link_layer": link_layer,
            "min_rate_gbps": None if min_rate is None else float(min_rate),
        })
    return rules


def _describe(port):
    state = port.get("state") or "in an unknown state"
    if port.get("phys_state"):
        return "%s (%s)" % (state, port["phys_state"])
    return state


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


def _check_port_rule(rule, port, devices, verdicts, findings):
    key = rule["port"]
    device = key.split("/")[0]
    verdict = verdicts.get(key)
    if port is None:
        check = "missing_port" if device in devices else "missing_device"
        what = "port %s does not exist" % key if device in devices else "device %s does not exist" % device
        findings.append(finding(check, "critical", key, "%s; expected it ACTIVE" % what, "ACTIVE", None))
        return
    verdict["expected_rate_gbps"] = rule["min_rate_gbps"]
    verdict["expected_link_layer"] = rule["link_layer"]
    verdict["required"] = True
    if port.get("state") != "ACTIVE":
        verdict["verdict"] = "down"
        findings.append(finding("port_down", "critical", key, "%s is %s; expected ACTIVE" % (key, _describe(port)),
                                "ACTIVE", port.get("state")))
        return
    if rule["link_layer"] and port.get("link_layer") != rule["link_layer"]:
        verdict["verdict"] = "wrong_link_layer"
        findings.append(finding("wrong_link_layer", "critical", key, "%s runs %s; expected %s"
                                % (key, port.get("link_layer"), rule["link_layer"]),
                                rule["link_layer"], port.get("link_layer")))
    rate = port.get("rate_gbps")
    if rule["min_rate_gbps"] is not None and (rate is None or rate < rule["min_rate_gbps"]):
        verdict["verdict"] = "degraded"
        findings.append(finding("rate_degraded", "critical", key, "%s runs at %s; expected at least %g Gb/s"
                                % (key, _rate_text(rate), rule["min_rate_gbps"]), rule["min_rate_gbps"], rate))


def _check_count_rule(rule, ports, findings):
    candidates = [p for p in ports if rule["any_of"] is None or port_key(p["device"], p["port"]) in rule["any_of"]]
    good = [port_key(p["device"], p["port"]) for p in candidates if _meets(p, rule)]
    if len(good) >= rule["count"]:
        return
    among = ", ".join(rule["any_of"]) if rule["any_of"] else "all ports"
    qualifiers = " ".join(q for q in (
        rule["link_layer"], "at >= %g Gb/s" % rule["min_rate_gbps"] if rule["min_rate_gbps"] is not None else "",
    ) if q)
    findings.append(finding(
        "too_few_active_ports", "critical", among,
        "%d of %s %s ACTIVE%s; expected at least %d" % (
            len(good), among, "is" if len(good) == 1 else "are", " " + qualifiers if qualifiers else "", rule["count"]),
        rule["count"], len(good),
    ))


def evaluate(facts, expected_ports=None, allowed_down=None, required_netdevs=None):
    """Return ``{"findings": [...], "ports": [...], "ok": bool, "critical": n, "warning": n}``."""
    if not isinstance(facts, dict) or not isinstance(facts.get("ports"), list):
        raise ExpectationError("expected the rdma facts of rdma.node.ib_facts (a mapping with a 'ports' list)")
    rules = normalize_rules(expected_ports)
    allowed = {_port_name(p, "ib_inventory_allowed_down_ports") for p in (allowed_down or [])}
    ports = facts["ports"]
    by_key = {port_key(p["device"], p["port"]): p for p in ports}
    verdicts = {}
    for key, port in by_key.items():
        verdicts[key] = {
            "port": key, "state": port.get("state"), "phys_state": port.get("phys_state"),
            "rate_gbps": port.get("rate_gbps"), "link_layer": port.get("link_layer"),
            "netdevs": port.get("netdevs") or [], "netdev_state": port.get("netdev_state"),
            "expected_rate_gbps": None, "expected_link_layer": None, "required": False,
            "allowed_down": key in allowed,
            "verdict": "ok" if port.get("state") == "ACTIVE" else ("allowed_down" if key in allowed else "down"),
        }
    findings = []
    for rule in rules:
        if rule["port"]:
            _check_port_rule(rule, by_key.get(rule["port"]), facts.get("devices", {}), verdicts, findings)
        else:
            _check_count_rule(rule, ports, findings)
            for key in rule["any_of"] or by_key:
                if key in verdicts and verdicts[key]["expected_rate_gbps"] is None:
                    verdicts[key]["expected_rate_gbps"] = rule["min_rate_gbps"]
                    verdicts[key]["expected_link_layer"] = rule["link_layer"]
    required = {rule["port"] for rule in rules if rule["port"]}
    for key, port in by_key.items():
        if port.get("state") != "ACTIVE" and key not in required and key not in allowed:
            findings.append(finding("unexpected_port_down", "warning", key,
                                    "%s is %s and is not in the ports allowed to be down" % (key, _describe(port)),
                                    "ACTIVE", port.get("state")))
        elif port.get("state") == "ACTIVE" and port.get("netdev_state") == "Down":
            findings.append(finding("netdev_carrier_down", "warning", key,
                                    "%s is ACTIVE but its netdev %s has no carrier" % (key, port["netdevs"][0]),
                                    "Up", "Down"))
    known_netdevs = facts.get("netdevs") or {}
    for name in required_netdevs or []:
        if name not in known_netdevs:
            findings.append(finding("missing_netdev", "critical", name,
                                    "netdev %s is not attached to any RDMA port" % name, name, None))
    counts = _findings.tally(findings)
    return {
        "ok": counts["critical"] == 0,
        "critical": counts["critical"],
        "warning": counts["warning"],
        "findings": findings,
        "ports": list(verdicts.values()),
    }
