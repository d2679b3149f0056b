"""The HTML report's embedded data: what the page shows of each host, as JSON that no text can break out of."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.rdma.node.plugins.filter.report_page import fleet_report_page_json
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_page import page_data, script_json

HOSTILE = "mlx5_1/1 </script><script>alert(1)</script> <!-- & \u2028 done"

HOSTS = {
    "a100-node-02": {
        "group_names": ["ib-a100", "rack-7"],
        "ib_inventory_status": {"ok": False, "critical": 1, "ports": [
            {"port": "mlx5_1/1", "state": "DOWN", "phys_state": "Polling", "rate_gbps": 10.0, "link_layer": "InfiniBand",
             "netdevs": ["ibp75s0"], "netdev_state": "Down", "expected_rate_gbps": 200.0, "expected_link_layer": "InfiniBand",
             "required": True, "allowed_down": False, "verdict": "down"}]},
        "ib_inventory_findings": [{"role": "ib_inventory", "check": "port_down", "severity": "critical", "subject": "mlx5_1/1",
                                   "message": HOSTILE, "expected": "ACTIVE", "actual": "DOWN"}],
        "driver_verify_status": {"ok": True, "critical": 0, "checks": ["dkms_error"], "summary": "a long line",
                                 "kernel": "6.1.0-27-amd64", "next_boot_kernel": None, "ofed_version": None, "missing_kernels": []},
        "driver_verify_findings": [{"role": "driver_verify", "check": "dkms_remediation_planned", "severity": "info", "subject": "dkms",
                                    "message": "planned", "expected": None, "actual": None}],
    },
    "unreached": {"group_names": ["ib-v100"]},
}


def report():
    return build_report(HOSTS, registered_roles(), generated_at="2026-11-25T00:00:00Z")


def test_page_keeps_what_the_page_shows():
    data = page_data(report())
    assert data["groups"] == ["ib-a100", "ib-v100", "rack-7"]
    assert data["checks"] == ["driver_verify/dkms_remediation_planned", "ib_inventory/port_down"]
    host = data["hosts"][0]
    assert (host["name"], host["status"], host["critical"], host["warning"], host["info"]) == ("a100-node-02", "critical", 1, 0, 1)
    assert (host["kernel"], host["next_boot_kernel"], host["ofed_version"], host["missing_kernels"]) == ("6.1.0-27-amd64", None, None, [])
    assert host["ports"] == [{"port": "mlx5_1/1", "state": "DOWN", "phys_state": "Polling", "rate_gbps": 10.0, "expected_rate_gbps": 200.0,
                              "link_layer": "InfiniBand", "netdevs": ["ibp75s0"], "netdev_state": "Down", "verdict": "down"}]
    assert host["findings"][0] == {"severity": "critical", "role": "ib_inventory", "check": "port_down", "subject": "mlx5_1/1", "message": HOSTILE}
    unreached = data["hosts"][1]
    assert (unreached["status"], unreached["ports"], unreached["hcas"], unreached["kernel"]) == ("no_data", [], [], None)
    # What is not known is said: why the host has no data, and (none here) the checks that did not run.
    assert unreached["reason"].startswith("No role of this collection left results for this host")
    assert (unreached["not_checked"], unreached["counter_rises"], unreached["unreachable_time"]) == ([], None, None)


def test_script_json_cannot_end_the_script_element():
    text = fleet_report_page_json(report())
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == page_data(report())  # the same data once parsed

    class ScriptText(HTMLParser):
        """What an HTML parser takes as the script element's text."""

        def __init__(self):
            super().__init__()
            self.inside, self.text, self.elements = False, "", 0

        def handle_starttag(self, tag, attrs):
            self.elements += 1
            self.inside = tag == "script"

        def handle_endtag(self, tag):
            self.inside = False

        def handle_data(self, data):
            if self.inside:
                self.text += data

    parser = ScriptText()
    parser.feed('<script type="application/json">%s</script>' % text)
    assert parser.elements == 1 and json.loads(parser.text)["hosts"][0]["findings"][0]["message"] == HOSTILE


def test_script_json_of_non_ascii_text():
    assert json.loads(script_json({"m": "Größe ≥ 100 Gb/s <ok>"})) == {"m": "Größe ≥ 100 Gb/s <ok>"}


@pytest.mark.parametrize("bad", [None, [], {"hosts": "a100-node-01"}])
def test_filter_refuses_what_is_not_a_report(bad):
    with pytest.raises(AnsibleFilterError, match="expected the report of rdma.node.fleet_report_data"):
        fleet_report_page_json(bad)
