"""The HTML report in a real browser: a report job over a fact cache of 24 simulated hosts (and the
cluster side that k8s_rdma left on localhost) writes it,
headless Chromium opens it with a filter in the URL's fragment, and the rows it shows are those the
JSON report says match.

The fleet (tests/synthetic_fleet.py) is the demo's hardware with planted faults; its findings come
from the registered checks. What the page must show is computed here from fleet-report.json.
"""

from __future__ import annotations

import json
import re

import pytest
import synthetic_fleet

from browser import count_near, rendered_dom, screenshot
from playbook import run_playbook

CRITICAL_RED = (0xC6, 0x28, 0x28)
STATUS_RANK = {"critical": 0, "unreachable": 1, "no_data": 2, "warning": 3, "ok": 4}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    inventory, cache = synthetic_fleet.build(base, 24, cluster="prod")
    run = run_playbook("playbooks/fleet_report.yml", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % base,
                       env={"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache)})
    assert run.rc == 0, run.stderr
    report = json.loads((base / "report/fleet-report.json").read_text())
    return {"base": base, "page": str(base / "report/fleet-report.html"), "report": report}


@pytest.fixture(scope="module")
def unfiltered(fleet):
    """The page's DOM without a filter."""
    return rendered_dom(fleet["page"])


def rows(dom):
    """``{host: row HTML}`` of the host table's rows, in the order shown."""
    found = re.findall(r'<tr class="host \w+" data-host="([^"]+)">(.*?)</tr>', dom, re.S)
    return dict(found)


def shown(dom):
    return re.search(r'<span id="shown">([^<]*)</span>', dom).group(1)


def has(host, severity=None, check=None):
    return any((severity is None or f["severity"] == severity) and (check is None or "%s/%s" % (f["role"], f["check"]) == check)
               for f in host["findings"])


def natural(name):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def test_the_fleet_has_every_kind_of_host(fleet):
    statuses = {h["status"] for h in fleet["report"]["hosts"]}
    assert statuses == {"critical", "warning", "ok"}
    assert fleet["report"]["schema_version"] == 3


def test_without_a_filter_every_host_shows_worst_first(fleet, unfiltered):
    dom = unfiltered
    assert list(rows(dom)) == [h["name"] for h in fleet["report"]["hosts"]]
    assert shown(dom) == "showing 24 of 24 hosts"


def test_critical_filter_and_hide_healthy(fleet, tmp_path):
    fragment = "severity=critical&hide_healthy=1"
    dom = rendered_dom(fleet["page"], fragment)
    expected = [h for h in fleet["report"]["hosts"] if has(h, "critical")]
    assert 0 < len(expected) < 24
    shown_rows = rows(dom)
    assert list(shown_rows) == [h["name"] for h in expected]
    assert shown(dom) == "showing %d of 24 hosts" % len(expected)
    for host in expected:
        row = shown_rows[host["name"]]
        # Only the critical findings are listed; the others are counted as hidden by the filter.
        assert row.count('<span class="sev critical">') == host["critical"]
        assert '<span class="sev warning">' not in row
        hidden = len(host["findings"]) - host["critical"]
        assert (("%d more hidden by the filter" % hidden) in row) == (hidden > 0)
    pixels = screenshot(fleet["page"], str(tmp_path / "critical.png"), fragment=fragment)[2]
    assert count_near(pixels, CRITICAL_RED) > 500


def test_group_check_and_name_sort(fleet):
    dom = rendered_dom(fleet["page"], "group=rack-03&check=ib_inventory/netdev_carrier_down&sort=name")
    expected = sorted((h["name"] for h in fleet["report"]["hosts"]
                       if "rack-03" in h["groups"] and has(h, check="ib_inventory/netdev_carrier_down")), key=natural)
    assert expected and list(rows(dom)) == expected
    for row in rows(dom).values():
        assert re.findall(r'<code class="check">([^<]+)</code>', row) == ["ib_inventory/netdev_carrier_down"]


def test_hide_healthy_sorted_by_critical_count(fleet):
    dom = rendered_dom(fleet["page"], "hide_healthy=1&sort=critical")
    unhealthy = [h for h in fleet["report"]["hosts"] if h["status"] != "ok"]
    unhealthy.sort(key=lambda h: (-h["critical"], -h["warning"], STATUS_RANK[h["status"]], natural(h["name"])))
    assert list(rows(dom)) == [h["name"] for h in unhealthy]


def test_a_filter_that_matches_nothing_says_so(fleet):
    dom = rendered_dom(fleet["page"], "severity=info")
    assert rows(dom) == {} and "No host matches the filter." in dom


def driver_cell(row):
    return re.findall(r"<td>(.*?)</td>", row, re.S)[3]


def test_unknown_is_never_blank_and_a_changing_kernel_stands_out(fleet, unfiltered):
    page_rows = rows(unfiltered)
    hosts = {h["name"]: h for h in fleet["report"]["hosts"]}
    unknown_boot = [name for name, h in hosts.items() if h["driver"]["next_boot_kernel"] is None]
    changing = [name for name, h in hosts.items() if h["driver"]["next_boot_kernel"] not in (None, h["driver"]["kernel"])]
    assert unknown_boot and changing
    for name in unknown_boot:
        assert 'next boot</div><div class="mono"><span class="unknown">unknown</span>' in driver_cell(page_rows[name])
    for name in changing:
        assert '<span class="differs" title="the next boot changes the kernel">%s</span>' % hosts[name]["driver"]["next_boot_kernel"] \
            in driver_cell(page_rows[name])
    assert sum(driver_cell(row).count('class="differs"') for row in page_rows.values()) == len(changing)


def test_hcas_show_firmware_board_and_pcie_link(fleet, unfiltered):
    page_rows = rows(unfiltered)
    for host in fleet["report"]["hosts"]:
        row = page_rows[host["name"]]
        for hca in host["hcas"]:
            line = re.search(r'<div class="hca"><b>%s</b> (.*?)</div>' % re.escape(hca["name"]), row).group(1)
            # A firmware that the fleet-wide check found different from its group's stands out like the other deviations.
            firmware = hca["fw_ver"] if "fw_expected" not in hca else '<span class="differs" title="differs from its group: %s">%s</span>' % (
                hca["fw_expected"] or "no majority", hca["fw_ver"])
            assert line.startswith("%s fw %s %s PCIe " % (hca["hca_type"], firmware, hca["board_id"]))
            link = hca["pcie"]
            if link is None:
                assert line.endswith('PCIe <span class="unknown">unknown</span>')
            elif link["current_width"] < link["max_width"]:
                assert line.endswith('PCIe <span class="below">Gen%d x%d</span> of Gen%d x%d' % (
                    link["current_generation"], link["current_width"], link["max_generation"], link["max_width"]))
            else:
                assert line.endswith("PCIe Gen%d x%d of Gen%d x%d" % (
                    link["current_generation"], link["current_width"], link["max_generation"], link["max_width"]))
    drifted = {(host["name"], hca["fw_ver"]) for host in fleet["report"]["hosts"] for hca in host["hcas"] if "fw_expected" in hca}
    found = {(host["name"], f["actual"]) for host in fleet["report"]["hosts"] for f in host["findings"] if f["check"] == "firmware_drift"}
    assert drifted and drifted == found
    links = [hca["pcie"] for host in fleet["report"]["hosts"] for hca in host["hcas"]]
    assert None in links and any(link and link["current_width"] == 8 for link in links)


def test_ports_show_physical_state_and_netdevs(fleet, unfiltered):
    page_rows = rows(unfiltered)
    for host in fleet["report"]["hosts"]:
        for port in host["ports"]:
            assert re.search(r'<div class="port %s"[^>]*><span class="mark"></span>%s %s %s [^<]*%s \(%s\)</div>' % (
                port["verdict"], re.escape(port["port"]), port["state"], port["phys_state"], re.escape(",".join(port["netdevs"])),
                port["netdev_state"]), page_rows[host["name"]])


def test_one_self_contained_file(fleet):
    page = open(fleet["page"], encoding="utf-8").read()
    assert not re.search(r'(src|href)=|@import|url\(|https?://', page)
    assert len(re.findall(r"<script", page)) == 2


def test_cluster_section(fleet, unfiltered):
    clusters = fleet["report"]["clusters"]
    assert [(c["subject"], c["critical"]) for c in clusters] == [("cluster/prod", 1)]
    section = re.search(r'<div class="cluster" id="cluster/prod">(.*?)</div>\n', unfiltered, re.S).group(1)
    assert "1 critical · 0 warning · 0 info · checked by k8s_rdma" in section  # the DOM has the characters, not the entities
    assert '<span class="sev critical">critical</span> There is no NicClusterPolicy named nic-cluster-policy' in section
    assert "1 cluster finding ·" in unfiltered
    assert '<tr class="pick" data-check="k8s_rdma/policy_missing"' in unfiltered
