# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What scripts/demo.sh prints after the run: a summary a person reads, and the verdict.

The demo's hosts fail their checks on purpose: the inventory plants one or more faults per host and
names the checks that find them (``planted_faults`` of the simulated_nodes inventory file). This
reads the run's fleet report (JSON) and the tasks that failed (ansible-core's junit callback), and
tells those planted faults from a real failure: any other critical finding, any other failed task, an
unreachable host, a run that ended without a report or with another exit code. It exits 0 when every
failure is planted, and otherwise with ansible-playbook's exit code (1 where that was 0).

Every string of node data it prints has its control characters replaced: a node's firmware, netdev
or log line never reaches the terminal as an escape sequence.

Usage::

    python demo_summary.py --report DIR --inventory FILE --junit DIR --rc N --log FILE [--remediated]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import unicodedata
from xml.etree import ElementTree

SEVERITIES = ("critical", "warning", "info")
FAILED_FOR_FINDINGS = re.compile(r"\d+ critical finding\(s\) on (?P<host>\S+?):")


def printable(value) -> str:
    """``value`` as one line of text without control or format characters (each shown as ``?``)."""
    text = str(value)
    return "".join(" " if ch in "\t\n\r" else "?" if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text)


def planted_faults(inventory_file: str) -> dict:
    """Host name to the set of ``role/check`` names that find its planted faults."""
    import yaml  # the demo's venv has PyYAML (ansible-core needs it)

    with open(inventory_file, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    return {str(host): set(checks or []) for host, checks in (data.get("planted_faults") or {}).items()}


def failed_tasks(junit_dir: str) -> list:
    """``(host, task, message)`` of every task that failed or was unreachable, from the junit callback's files."""
    failed = []
    for path in sorted(glob.glob(os.path.join(junit_dir, "*.xml"))):
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if problem is None:
                continue
            name = case.get("name", "")
            match = re.match(r"\[(?P<host>[^\]]*)\] (?P<task>.*)", name)
            host, task = (match.group("host"), match.group("task")) if match else ("?", name)
            failed.append((host, task, problem.get("message") or problem.text or ""))
    return failed


def judge(report: dict, planted: dict, failures: list, rc: int) -> list:
    """The real failures of the run, one sentence each (empty: every failure is a planted fault)."""
    real = []
    if rc not in (0, 2):
        real.append("ansible-playbook ended with exit code %d, which is not the code of hosts failing their checks (2)." % rc)
    if report is None:
        real.append("the run wrote no fleet report (fleet-report.json).")
        return real
    unplanted = {}
    for host in report.get("hosts", []):
        for finding in host.get("findings", []):
            check = "%s/%s" % (finding.get("role"), finding.get("check"))
            if finding.get("severity") == "critical" and check not in planted.get(host.get("name"), set()):
                unplanted.setdefault(host.get("name"), []).append(finding)
    for finding in cluster_findings(report):
        check = "%s/%s" % (finding.get("role"), finding.get("check"))
        if finding.get("severity") == "critical" and check not in planted.get(finding.get("subject"), set()):
            unplanted.setdefault(finding.get("subject"), []).append(finding)
    for host, findings in sorted(unplanted.items()):
        for finding in findings:
            real.append("%s: critical finding %s/%s is not a planted fault: %s" % (
                printable(host), printable(finding.get("role")), printable(finding.get("check")), printable(finding.get("message"))))
    failed_per_host = {}
    for host, task, message in failures:
        failed_per_host.setdefault(host, []).append((task, message))
    for host, tasks in sorted(failed_per_host.items()):
        for task, message in tasks:
            named = FAILED_FOR_FINDINGS.search(message)
            if named and named.group("host") == host and len(tasks) == 1:
                continue  # the last play failing the host for its critical findings, judged one by one above
            real.append("%s: the task %s failed: %s" % (printable(host), printable(task), printable(message)))
    return real


def cluster_findings(report: dict) -> list:
    """The findings of the report's cluster section (their subject: a group, a pair, the cluster)."""
    return [finding for cluster in report.get("clusters") or [] for finding in cluster.get("findings") or []]


def finding_line(finding: dict, planted: set) -> str:
    check = "%s/%s" % (finding.get("role"), finding.get("check"))
    mark = "planted" if check in planted else "NOT PLANTED"
    return "  - %-8s %s (%s): %s" % (finding.get("severity"), printable(check), mark, printable(finding.get("message")))


def summary_lines(report: dict, planted: dict) -> list:
    lines = []
    for host in report.get("hosts", []):
        name = host.get("name")
        findings = host.get("findings", [])
        counts = {severity: sum(1 for f in findings if f.get("severity") == severity) for severity in SEVERITIES}
        worst = next((severity for severity in SEVERITIES[:2] if counts[severity]), "ok")
        lines.append("%s  %s" % (printable(name), worst.upper() if worst != "ok" else "ok"))
        for finding in findings:
            if finding.get("severity") == "info":
                continue
            lines.append(finding_line(finding, planted.get(name, set())))
        if counts["info"]:
            lines.append("  - and %d info finding%s (in the report)" % (counts["info"], "" if counts["info"] == 1 else "s"))
    shared = [finding for finding in cluster_findings(report) if finding.get("severity") != "info"]
    if shared:
        lines.append("")
        lines.append("What the groups' jobs show (the report's cluster section; no host fails for these):")
        for finding in shared:
            lines.append("%s" % printable(finding.get("subject")))
            lines.append(finding_line(finding, planted.get(finding.get("subject"), set())))
    return lines


def _tail(path: str, count: int) -> list:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()[-count:]
    except OSError:
        return []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The demo's summary and verdict.")
    parser.add_argument("--report", required=True, help="the directory of fleet-report.json")
    parser.add_argument("--inventory", required=True, help="the simulated_nodes inventory file (planted_faults)")
    parser.add_argument("--junit", required=True, help="the junit callback's output directory")
    parser.add_argument("--rc", required=True, type=int, help="ansible-playbook's exit code")
    parser.add_argument("--log", required=True, help="ansible-playbook's output")
    parser.add_argument("--remediated", action="store_true", help="the run applied the memlock remediation")
    args = parser.parse_args(argv)

    report_file = os.path.join(args.report, "fleet-report.json")
    try:
        with open(report_file, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        report = None
    planted = planted_faults(args.inventory)
    real = judge(report, planted, failed_tasks(args.junit), args.rc)

    out = []
    if report is not None:
        totals = report.get("totals", {})
        out.append("What the checks found on the %d simulated nodes (worst first):" % totals.get("hosts", 0))
        out.append("")
        out.extend(summary_lines(report, planted))
        out.append("")
        out.append("Reports: %s (open it in a browser), fleet-report.md, fleet-report.json" % os.path.join(args.report, "fleet-report.html"))
    out.append("Ansible's output: %s" % args.log)
    if args.remediated:
        out.append("The simulated nodes' own containerds keep running; stop one with "
                   "`python tools/simulated_containerd.py stop inventories/demo/.nodes/<host>`.")
    out.append("")
    if real:
        out.append("A REAL FAILURE, not one of the demo's planted faults:")
        out.extend("  - " + line for line in real)
        if args.rc not in (0, 2):
            out.append("The last lines of Ansible's output:")
            out.extend("  | " + printable(line) for line in _tail(args.log, 15))
        print("\n".join(out))
        return args.rc if args.rc else 1
    failed = sorted({failure[0] for failure in failed_tasks(args.junit)})
    if failed:
        out.append("Every failure is one of the demo's planted faults: %d of %d hosts failed their checks as the demo intends "
                   "(ansible-playbook exit code %d)." % (len(failed), len(report.get("hosts", [])), args.rc))
    else:
        out.append("No host failed and every finding is planted (ansible-playbook exit code %d)." % args.rc)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
