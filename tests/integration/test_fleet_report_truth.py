"""Reports that say the truth, through real runs of the collection's playbooks on the demo inventory
(its simulated nodes, edited per test) and on a fact cache:

* node and inventory text that is hostile (host and group names, firmware, board ID, device and netdev
  names, kernel log lines, a custom check's message) forges no Markdown structure, no HTML, and no
  terminal escape reaches the operator's terminal;
* hosts named with a space, a comma, a colon, a leading ``!`` still fail for their critical findings;
* a failed upload (a certificate refused, a server that never answers) is reported apart and the
  critical hosts still fail; the URL's user, password and query are never shown;
* the changes since the last report head every format;
* an unreachable host reads as unreachable, with Ansible's reason; a host that Ansible took out of
  the run before the report reads as having no data, and says why;
* ``rdma.node.write_fleet_report`` works in a play of its own and never leaves a partial report.

Markdown is parsed by markdown-it-py (CommonMark, GitHub's tables, raw HTML allowed as on GitHub);
the HTML is rendered by headless Chromium. What stands in for a server is named in upload_servers.py.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
from html.parser import HTMLParser

import pytest
import synthetic_fleet
import yaml
from markdown_it import MarkdownIt

from ansible.plugins.loader import cache_loader
from browser import rendered_dom
from harness import run_playbook, run_playbook_printed
from testpaths import demo_inventory_copy
from upload_servers import SilentServer, UploadRecorder

GFM = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
FIRST_REPORT = "This is the first report in this directory: there is no earlier report to compare with."
# Control characters a terminal acts on: everything below space but line feed and tab, DEL, C1, and
# the bidirectional overrides that reorder what is shown.
TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def demo_copy(base, edit):
    """A copy of the demo inventory whose description ``edit(description, group_vars_all)`` changed."""
    inventory = demo_inventory_copy(base / "inventory")
    description = inventory / "demo.simulated_nodes.yml"
    nodes = yaml.safe_load(description.read_text())
    all_vars = inventory / "group_vars" / "all.yml"
    extra = edit(nodes) or {}
    description.write_text(yaml.safe_dump(nodes, sort_keys=False, allow_unicode=True))
    if extra:
        all_vars.write_text(all_vars.read_text() + "\n" + yaml.safe_dump(extra, sort_keys=False, allow_unicode=True))
    return inventory


def rename(nodes, old, new):
    nodes["hardware"][new] = nodes["hardware"].pop(old)
    for members in nodes["node_groups"].values():
        members[:] = [new if member == old else member for member in members]
    if old in (nodes.get("planted_faults") or {}):
        nodes["planted_faults"][new] = nodes["planted_faults"].pop(old)


def mend_pcie(nodes, host="v100-node-01"):
    for device in nodes["hardware"][host]["devices"].values():
        device["pcie"] = dict(device["pcie"], current_width=16)


def report_of(directory):
    return json.loads((directory / "fleet-report.json").read_text())


def headings(tokens):
    """``[(level, text shown)]`` of every heading."""
    return [(int(token.tag[1]), shown_text(tokens[i + 1])) for i, token in enumerate(tokens) if token.type == "heading_open"]


def shown_text(inline):
    """The text a renderer shows of an inline token (escapes resolved)."""
    return "".join(c.content for c in inline.children if c.type in ("text", "code_inline"))


def tables(tokens):
    """Each table as rows of cell texts (the header row first)."""
    found, rows, row = [], None, None
    for token in tokens:
        if token.type == "table_open":
            rows = []
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(shown_text(token))
        elif token.type == "tr_close":
            rows.append(row)
            row = None
        elif token.type == "table_close":
            found.append(rows)
    return found


class Elements(HTMLParser):
    """The elements and attribute names of an HTML document, as a browser's parser sees them."""

    def __init__(self):
        super().__init__()
        self.tags, self.attributes = [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.update(name for name, _value in attrs)


def table_after(tokens, heading):
    """The first table after the heading ``heading``."""
    index = next(i for i, t in enumerate(tokens) if t.type == "inline" and shown_text(t) == heading)
    return tables(tokens[index:])[0]


# ---------------------------------------------------------------------------------------- hostile text

EVIL_HOST = "v100-node-01 | <img src=x onerror=alert(1)> # h"
EVIL_GROUP = "rack|7 <script>alert(1)</script>\n## forged group"
EVIL_FIRMWARE = "20.37.1014 \x1b[31m|<script>alert(2)</script>\x1b]0;owned\x07\n# forged heading"
EVIL_BOARD = "MT_0000000223<img src=x onerror=alert(3)>`code`"
EVIL_NETDEV = "ib\x1b[31m|x<b>bold"
EVIL_DEVICE = "mlx5_bond_0|<i>x"
EVIL_LOG = "2026-11-24T23:06:00+0000 v100-node-02 kernel: \x1b]0;pwned\x07\x1b[2J\x9b31m mlx5_core: <script>alert(4)</script> | # x\n"
EVIL_MESSAGE = "custom \x1b[31m| # <script>alert(5)</script>\n- forged \x1b]0;t\x07\u202eevil"


def plant_hostile_text(nodes):
    rename(nodes, "v100-node-01", EVIL_HOST)
    nodes["node_groups"][EVIL_GROUP] = [EVIL_HOST, "a100-node-02"]
    hardware = nodes["hardware"]
    hardware["a100-node-02"]["devices"]["mlx5_1"]["fw_ver"] = EVIL_FIRMWARE  # the drifted firmware: quoted by a finding
    hardware["a100-node-01"]["devices"]["mlx5_0"]["board_id"] = EVIL_BOARD
    hardware["v100-node-02"]["netdevs"][1]["name"] = EVIL_NETDEV
    hardware["v100-node-02"]["driver"]["kernel_log"] += EVIL_LOG
    devices = hardware["a100-node-01"]["devices"]
    devices[EVIL_DEVICE] = devices.pop("mlx5_bond_0")
    # An operator's own check whose message and subject (a device name) carry the same payloads.
    return {"node_health_custom_checks": [{
        "name": "hostile_message", "severity": "warning", "message": EVIL_MESSAGE,
        "expression": "rdma.ports[?state=='ACTIVE']", "subject": "join('', [device, '\u001b[1m|<u>u</u>'])"}]}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    inventory = demo_copy(base, plant_hostile_text)
    run = run_playbook_printed("rdma.node.site", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % base)
    assert run.rc == 2, run.stdout[-3000:] + run.stderr[-3000:]
    return {"base": base, "run": run, "report": report_of(base / "report"), "markdown": (base / "report/fleet-report.md").read_text()}


def test_the_payloads_reached_the_report(hostile):
    """The test is worth only what it plants: every payload is in the JSON report, controls removed."""
    text = json.dumps(hostile["report"], ensure_ascii=False)
    for planted in ("v100-node-01 | <img src=x onerror=alert(1)> # h", "rack|7 <script>alert(1)</script>\\\\x0a## forged group",
                    "20.37.1014 |<script>alert(2)</script> # forged heading", EVIL_BOARD.replace("`", "`"), "mlx5_bond_0|<i>x",
                    "custom | # <script>alert(5)</script> - forged evil", "mlx5_1|<u>u</u>"):
        assert planted in text, planted
    netdevs = [n for h in hostile["report"]["hosts"] for p in h["ports"] for n in p["netdevs"]]
    assert "ib|x<b>bold" in netdevs


def test_no_escape_sequence_or_control_character_reaches_the_terminal(hostile):
    run = hostile["run"]
    for stream in (run.stdout, run.stderr):
        assert not TERMINAL_CONTROL.search(stream), repr(TERMINAL_CONTROL.search(stream))
    # Ansible printed the report's line and failed the critical hosts with their findings, cleaned.
    assert "fleet-report.md" in run.stdout and "custom | # <script>alert(5)</script> - forged evil" in run.stdout
    # demo.sh prints the Markdown report to the terminal: no control character in it either.
    assert not TERMINAL_CONTROL.search(hostile["markdown"].replace("\t", " "))


def test_the_markdown_keeps_its_structure(hostile):
    tokens = GFM.parse(hostile["markdown"])
    assert not [t.type for t in tokens if t.type.startswith("html")]
    assert not [c.type for t in tokens for c in t.children or [] if c.type.startswith(("html", "link", "image"))]
    found = headings(tokens)
    # The demo's NCCL play (site.yml) adds the cluster section and each host's NCCL transport (Pod proof).
    assert [text for level, text in found if level <= 2] == [
        "RDMA fleet report", "Changes since the last report", "Findings by check", "Groups", "Cluster", "Hosts, worst first", "Ports and HCAs",
        "Pod proof", "Findings"]
    names = [h["name"] for h in hostile["report"]["hosts"]]
    labels = {h["name"]: h["status"].upper().replace("_", " ") for h in hostile["report"]["hosts"]}
    clusters = ["%s: %d critical, %d warning, %d info" % (c["subject"], c["critical"], c["warning"], c["info"]) for c in hostile["report"]["clusters"]]
    assert [text for level, text in found if level == 3] == (
        clusters + [n for n in names if any(h["name"] == n and (h["ports"] or h["hcas"]) for h in hostile["report"]["hosts"])]
        + [n for n in names if any(h["name"] == n and h["pod_proof"] for h in hostile["report"]["hosts"])]
        + ["%s (%s)" % (n, labels[n]) for n in names])
    hosts = table_after(tokens, "Hosts, worst first")
    assert [row[0] for row in hosts[1:]] == names and all(len(row) == len(hosts[0]) for row in hosts)
    assert EVIL_HOST in names
    groups = table_after(tokens, "Groups")
    assert [row[0] for row in groups[1:]] == ["ib-a100", "ib-v100", "rack|7 <script>alert(1)</script>\\x0a## forged group"]
    hcas = [row for table in tables(tokens) for row in table if row[0] == "mlx5_1" and "forged" in row[2]]
    assert [row[2] for row in hcas] == ["20.37.1014 |<script>alert(2)</script> # forged heading (differs: the group has 20.39.1002)"]
    for table in tables(tokens):
        assert all(len(row) == len(table[0]) for row in table)


def test_the_markdown_source_has_no_unescaped_cell_ends(hostile):
    """GitHub's table parser drops cells past the header's count: count the pipes in the text itself."""
    table_lines = [line for line in hostile["markdown"].splitlines() if line.startswith("|")]
    widths = [len(re.findall(r"(?<!\\)\|", line)) for line in table_lines]
    blocks = hostile["markdown"].split("\n\n")
    for block in blocks:
        lines = [line for line in block.splitlines() if line.startswith("|")]
        if lines:
            assert len({len(re.findall(r"(?<!\\)\|", line)) for line in lines}) == 1, block
    assert widths


def test_the_html_page_shows_the_text_escaped(hostile):
    dom = rendered_dom(str(hostile["base"] / "report/fleet-report.html"))
    assert len(re.findall(r"<script\b", dom)) == 2  # the page's own: its data and its code
    elements = Elements()
    elements.feed(dom)
    assert not {"img", "i", "u"} & set(elements.tags) and "onerror" not in elements.attributes
    assert elements.tags.count("script") == 2
    assert 'data-host="v100-node-01 | &lt;img src=x onerror=alert(1)&gt; # h"' in dom
    assert "rack|7 &lt;script&gt;alert(1)&lt;/script&gt;\\x0a## forged group" in dom
    assert "20.37.1014 |&lt;script&gt;alert(2)&lt;/script&gt; # forged heading" in dom
    assert "custom | # &lt;script&gt;alert(5)&lt;/script&gt; - forged evil" in dom
    assert not TERMINAL_CONTROL.search(dom)


# ---------------------------------------------------------------------------------------- odd host names

ODD_NAMES = {"v100-node-02": "v100 node:02 [rack 7]", "a100-node-01": "a100,node-01", "a100-node-02": "!a100&node*02"}
# The demo's nodes with a critical fault of the physical layer, which keep their names here.
PHYSICAL_CRITICAL_HOSTS = ["a100-node-03", "v100-node-03", "v100-node-04"]


def plant_odd_names(nodes):
    mend_pcie(nodes)  # v100-node-01 healthy: it must not fail
    rename(nodes, "v100-node-01", "node")
    for old, new in ODD_NAMES.items():
        rename(nodes, old, new)
    # A group named like a failing host, holding the healthy one: a pattern would bring it in too.
    nodes["node_groups"]["a100,node-01"] = ["node"]


def test_hosts_fail_for_their_findings_whatever_their_names(tmp_path):
    inventory = demo_copy(tmp_path, plant_odd_names)
    run = run_playbook("rdma.node.site", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % tmp_path, env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    failing = sorted(list(ODD_NAMES.values()) + PHYSICAL_CRITICAL_HOSTS)
    assert (run.rc, run.failed_hosts) == (2, failing), run.stderr[-3000:]
    results = run.task_results("Fail the host for its critical findings")
    for name in failing:
        assert results[name]["failed"] and results[name]["msg"].startswith("%d critical finding(s) on %s: " % (
            next(h["critical"] for h in report_of(tmp_path / "report")["hosts"] if h["name"] == name), name))
    # The healthy host came along with the group named like a failing host, and checked its own name.
    assert results["node"].get("skipped") is True
    assert report_of(tmp_path / "report")["failing_hosts"].keys() == set(failing)


# ---------------------------------------------------------------------------------------- the upload

CRITICAL_HOSTS = sorted(["a100-node-01", "a100-node-02", "v100-node-02"] + PHYSICAL_CRITICAL_HOSTS)
SECRETS = ("ci-user", "hunter22-pass", "s3cr3t-token", "hdr-secret-99")


@pytest.fixture(scope="module")
def one_healthy(tmp_path_factory):
    base = tmp_path_factory.mktemp("one-healthy")
    return demo_copy(base, mend_pcie)


@pytest.mark.parametrize("server_kind", ["refused certificate", "silent server"])
def test_a_failed_upload_is_reported_apart_and_the_critical_hosts_still_fail(one_healthy, tmp_path, server_kind):
    server = UploadRecorder(tls=True) if server_kind == "refused certificate" else SilentServer()
    with server:
        scheme, rest = server.url.split("://")
        url = "%s://ci-user:hunter22-pass@%s/reports/?token=s3cr3t-token" % (scheme, rest)
        run = run_playbook("rdma.node.site", "-i", str(one_healthy), "-e", "fleet_report_dir=%s/report" % tmp_path,
                           extra_vars={"fleet_report_upload_url": url, "fleet_report_upload_timeout": 2,
                                       "fleet_report_upload_headers": {"Authorization": "Bearer hdr-secret-99"}},
                           env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert (run.rc, run.failed_hosts) == (2, CRITICAL_HOSTS), run.stderr[-3000:]
    assert sorted(h for h, r in run.task_results("Fail the host for its critical findings").items() if r.get("failed")) == CRITICAL_HOSTS
    (written,) = run.task_results("Build the fleet report and write it on the controller (JSON, Markdown, HTML)").values()
    shown = "%s://REDACTED@%s/reports/?REDACTED" % (scheme, rest)
    upload = written["upload"]
    assert (upload["ok"], upload["url"], upload["files"], upload["not_sent"]) == (
        False, shown, [], ["fleet-report.json", "fleet-report.md", "fleet-report.html"])
    reason = "certificate verify failed" if server_kind == "refused certificate" else "no answer within the time limit of 2 s"
    assert upload["error"].startswith("PUT of fleet-report.json to %s failed: " % shown) and reason in upload["error"], upload["error"]
    assert any("its upload failed" in w and reason in w for w in written["warnings"])
    stats = run.custom_stats
    assert stats["rdma_fleet"]["report"]["upload"] == upload and stats["rdma_fleet"]["report"]["upload_url"] == shown
    assert stats["rdma_fleet_report"]["upload"] == upload
    assert report_of(tmp_path / "report")["totals"]["critical"] == len(CRITICAL_HOSTS)
    everything = run.stdout + run.stderr + json.dumps(stats) + "".join(p.read_text() for p in (tmp_path / "report").iterdir())
    assert not [secret for secret in SECRETS if secret in everything]


# ---------------------------------------------------------------------------------------- changes

LONG_NAME = "gpu-a100-node-02.rack07.row3.datacenter-frankfurt-main.example.org"


def long_name(nodes):
    rename(nodes, "a100-node-02", LONG_NAME)


def break_and_mend(nodes):
    mend_pcie(nodes)
    nodes["hardware"]["v100-node-01"]["devices"]["mlx5_1"]["ports"][1].update(state="1: DOWN", phys_state="2: Polling")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("changes")
    inventory = demo_copy(base, long_name)
    first = run_playbook("rdma.node.site", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % base, env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert first.rc == 2
    first_report = report_of(base / "report")
    first_markdown = (base / "report/fleet-report.md").read_text()
    description = inventory / "demo.simulated_nodes.yml"
    nodes = yaml.safe_load(description.read_text())
    break_and_mend(nodes)
    description.write_text(yaml.safe_dump(nodes, sort_keys=False))
    second = run_playbook("rdma.node.site", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % base, env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert second.rc == 2
    return {"base": base, "first": first_report, "first_markdown": first_markdown, "second": report_of(base / "report"), "run": second}


def test_the_first_report_says_there_is_nothing_to_compare(two_runs):
    assert two_runs["first"]["changes"] == {"previous": None, "note": FIRST_REPORT, "totals": None, "hosts": []}
    tokens = GFM.parse(two_runs["first_markdown"])
    assert headings(tokens)[1] == (2, "Changes since the last report")
    assert "\n## Changes since the last report\n\n" + FIRST_REPORT + "\n" in two_runs["first_markdown"]


def test_the_second_report_says_what_changed_first(two_runs):
    changes = two_runs["second"]["changes"]
    assert changes["previous"] == {"generated_at": two_runs["first"]["generated_at"], "schema_version": 3}
    rows = {row["name"]: row for row in changes["hosts"]}
    node = rows["v100-node-01"]
    assert [(f["role"], f["check"], f["subject"]) for f in node["new"]] == [("ib_inventory", "port_down", "mlx5_1/1")]
    assert [(f["role"], f["check"], f["subject"]) for f in node["resolved"]] == [("node_health", "pcie_degraded", "0000:5e:00")]
    assert node["not_checked"] == [] and changes["totals"]["resolved"] == 1
    unchanged = sum(len(h["findings"]) for h in two_runs["first"]["hosts"] if h["name"] != "v100-node-01")
    assert changes["totals"]["still_open"] == unchanged + node["still_open"]
    # The JSON's changes come right after its totals; the Markdown's section is its first.
    assert list(two_runs["second"])[:5] == ["schema_version", "title", "generated_at", "totals", "changes"]
    markdown = (two_runs["base"] / "report/fleet-report.md").read_text()
    tokens = GFM.parse(markdown)
    assert headings(tokens)[1] == (2, "Changes since the last report")
    table = table_after(tokens, "Changes since the last report")
    assert table[0] == ["host", "new", "resolved", "still open", "not checked again"]
    assert ["v100-node-01", "critical ib_inventory/port_down mlx5_1/1", "critical node_health/pcie_degraded 0000:5e:00",
            str(node["still_open"]), "-"] in table
    dom = rendered_dom(str(two_runs["base"] / "report/fleet-report.html"))
    section = re.search(r'<div id="changes">(.*?)</div>\n', dom, re.S).group(1)
    assert "<b>1 new</b>, <b>1 resolved</b>" in section and 'critical</span> <code>ib_inventory/port_down</code> mlx5_1/1' in section


def test_the_cards_count_hosts_and_rates_say_their_interval(two_runs):
    dom = rendered_dom(str(two_runs["base"] / "report/fleet-report.html"))
    tiles = re.findall(r'<div class="tile[^"]*"><b>(\d+)</b>([^<]+)</div>', dom)
    totals = two_runs["second"]["totals"]
    assert tiles == [(str(totals["critical"]), "hosts critical"), (str(totals["unreachable"]), "hosts unreachable"),
                     (str(totals["no_data"]), "hosts without data"), (str(totals["warning"]), "hosts with warnings"),
                     (str(totals["ok"]), "hosts ok"), (str(totals["hosts_not_fully_checked"]), "hosts with checks not run")]
    # a100-node-01's symbol errors: a rise over about a second, extrapolated to an hour, says so.
    rises = next(h for h in two_runs["second"]["hosts"] if h["name"] == "a100-node-01")["counter_rises"]
    assert rises["source"] == "this run" and 0.5 < rises["interval_seconds"] < 5
    row = re.search(r'<tr class="host critical" data-host="a100-node-01">(.*?)</tr>', dom, re.S).group(1)
    assert re.search(r'error counters rising, per hour, measured over [\d.]+ s \(two reads in this run\)</div><div class="rise">mlx5_1/1 '
                     r'symbol_error \+\d+/h</div>', row)
    markdown = (two_runs["base"] / "report/fleet-report.md").read_text()
    assert re.search(r"Error counters that rose, per hour, extrapolated from a rise measured over [\d.]+ s \(between two reads in this run\): "
                     r"over so short an interval a single error reads as about \d+ per hour\.", markdown)


def test_long_host_names_are_not_clipped_at_800_pixels(two_runs, tmp_path):
    """Chromium lays the page out 800 px wide; a script added to a copy measures each host name against its cell."""
    page = tmp_path / "page.html"
    measure = ('<script>(function () { var clipped = []; document.querySelectorAll("b.name").forEach(function (name) {'
               ' var cell = name.closest("td").getBoundingClientRect(), box = name.getBoundingClientRect();'
               ' if (box.right > cell.right + 0.5 || box.left < cell.left - 0.5 || name.scrollWidth > name.clientWidth + 1) {'
               ' clipped.push(name.textContent); } });'
               ' document.documentElement.setAttribute("data-measured", JSON.stringify({width: window.innerWidth, clipped: clipped,'
               ' names: document.querySelectorAll("b.name").length})); })();</script></body>')
    page.write_text((two_runs["base"] / "report/fleet-report.html").read_text().replace("</body>", measure))
    dom = rendered_dom(str(page), width=800, height=1200)
    measured = json.loads(re.search(r"data-measured=\"([^\"]+)\"", dom).group(1).replace("&quot;", '"'))
    assert measured["width"] == 800 and measured["names"] >= 5  # the hosts and the changes' rows
    assert measured["clipped"] == []
    assert LONG_NAME in dom


# ---------------------------------------------------------------------------------------- unreachable


REASON = "Failed to connect to the host via ssh: ssh: connect to host 10.0.7.12 port 22: No route to host"


def test_an_unreachable_host_reads_as_unreachable_with_the_reason(tmp_path):
    """What the collection's gather leaves on a host it cannot reach (the lead's contract): the fact
    rdma_unreachable, and statuses whose checks were all skipped. Planted in the fact cache of a check
    job; the report job reads it."""
    inventory, cache_dir = synthetic_fleet.build(tmp_path, 6)
    cache = cache_loader.get("jsonfile", _uri=str(cache_dir), _prefix="")
    dark = sorted(cache.keys())[0]
    cache.set(dark, {
        "rdma_unreachable": {"reason": REASON, "time": "2026-11-26T10:00:00Z"},
        "ib_inventory_findings": [], "driver_verify_findings": [],
        "ib_inventory_status": {"ok": True, "critical": 0, "warning": 0, "checks": [], "skipped_checks": [
            {"check": "port_down", "missing": ["rdma"], "reason": "the host could not be reached"}]},
    })
    run = run_playbook("playbooks/fleet_report.yml", "-i", str(inventory), "-e", "fleet_report_dir=%s/report" % tmp_path,
                       "-e", "fleet_report_fail_on_critical=true", env={"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache_dir)})
    assert run.rc == 2 and dark in run.failed_hosts
    assert run.result("Fail the host for its critical findings", dark)["msg"] == "%s could not be reached, so none of its checks ran: %s" % (dark, REASON)
    report = report_of(tmp_path / "report")
    entry = next(h for h in report["hosts"] if h["name"] == dark)
    assert (entry["status"], entry["reason"], entry["unreachable"]["time"]) == ("unreachable", REASON, "2026-11-26T10:00:00Z")
    assert report["totals"]["unreachable"] == 1
    assert [n["check"] for n in entry["not_checked"]] == ["port_down"]
    markdown = (tmp_path / "report/fleet-report.md").read_text()
    assert "### %s (UNREACHABLE)\n\n- **unreachable** at 2026-11-26T10:00:00Z: %s\n" % (dark, REASON.replace("10.0.7.12", "10.0.7.12")) in markdown
    assert re.search(r"^\| %s \| [^|]+ \| UNREACHABLE, 1 not checked \|.*\| %s \|$" % (re.escape(dark), re.escape(REASON)), markdown, re.M)
    fleet = run.custom_stats["rdma_fleet"]
    assert fleet["hosts"][dark] == {"status": "unreachable", "critical": 0, "warning": 0, "info": 0, "reason": REASON, "not_checked": 1}
    assert fleet["totals"]["unreachable"] == 1
    dom = rendered_dom(str(tmp_path / "report/fleet-report.html"))
    row = re.search(r'<tr class="host unreachable" data-host="%s">(.*?)</tr>' % re.escape(dark), dom, re.S).group(1)
    assert '<span class="badge unreachable">Unreachable</span>' in row
    assert '<div class="reason">unreachable at 2026-11-26T10:00:00Z: %s</div>' % REASON in row


def test_a_host_gone_before_any_task_has_no_data_and_says_why(tmp_path):
    inventory = demo_copy(tmp_path, lambda nodes: None)
    with socket.socket() as closed:  # a port bound but never listening: ssh is refused at once
        closed.bind(("127.0.0.1", 0))
        extra = tmp_path / "gone.yml"
        extra.write_text(yaml.safe_dump({"all": {"children": {"ib-a100": {"hosts": {"gone": {
            "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": closed.getsockname()[1]}}}}}}))
        plays = [
            {"name": "Reach every host", "hosts": "all", "gather_facts": False, "tasks": [{"name": "Ping", "ansible.builtin.ping": {}}]},
            {"name": "Report", "hosts": "all", "gather_facts": False, "tasks": [{
                "name": "Write the report", "ansible.builtin.include_role": {"name": "rdma.node.fleet_report", "tasks_from": "write"},
                "run_once": True, "vars": {"fleet_report_fail_on_critical": True}}]},
            {"ansible.builtin.import_playbook": "rdma.node.fail_reported_hosts"},
        ]
        run = run_playbook(plays, "-i", str(inventory), "-i", str(extra), "-e", "fleet_report_dir=%s/report" % tmp_path,
                           env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert run.stats["gone"]["unreachable"] == 1
    entry = next(h for h in report_of(tmp_path / "report")["hosts"] if h["name"] == "gone")
    assert entry["status"] == "no_data" and entry["reason"].startswith("Ansible took this host out of the run before the report")
    assert "- **no data**: Ansible took this host out of the run before the report" in (tmp_path / "report/fleet-report.md").read_text()


# ---------------------------------------------------------------------------------------- the action alone


def test_the_action_writes_the_whole_report_in_a_play_of_its_own_or_nothing(tmp_path):
    inventory, cache_dir = synthetic_fleet.build(tmp_path, 4)
    cache_env = {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache_dir)}
    out = tmp_path / "out"
    plays = [{"name": "Report", "hosts": "all", "gather_facts": False, "tasks": [{
        "name": "Write", "rdma.node.write_fleet_report": {"hosts": "{{ ansible_play_hosts_all }}", "dir": str(out)}, "run_once": True}]}]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = run_playbook(plays, "-i", str(inventory), env=cache_env, cwd=str(elsewhere))
    assert run.rc == 0, run.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["fleet-report.html", "fleet-report.json", "fleet-report.md"]
    assert "## Hosts, worst first" in (out / "fleet-report.md").read_text()
    before = {name: (out / name).read_bytes() for name in ("fleet-report.json", "fleet-report.md")}
    # A target that cannot be replaced: refused before any file is touched.
    (out / "fleet-report.html").unlink()
    (out / "fleet-report.html").mkdir()
    failed = run_playbook(plays, "-i", str(inventory), env=cache_env, cwd=str(elsewhere))
    message = failed.result("Write", failed.failed_hosts[0])["msg"]
    assert message == ("rdma.node.write_fleet_report: %s cannot be written (it exists and is not a regular file); the earlier report, "
                       "if any, is unchanged." % (out / "fleet-report.html"))
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in out.iterdir()) == ["fleet-report.html", "fleet-report.json", "fleet-report.md"]  # no temporary left
    shutil.rmtree(out / "fleet-report.html")
