"""What the fleet report costs at fleet scale: the report job's tasks, the files' sizes, and the HTML
page's render time in headless Chromium.

Builds a simulated fleet of N hosts in a jsonfile fact cache (tests/synthetic_fleet.py: the demo's
hardware with planted faults, findings from the registered checks), runs ``playbooks/fleet_report.yml``
from that cache as a report job does, and prints each task's duration and the size of each file. Then
it opens the HTML report in headless Chromium, unfiltered and filtered, and reads the time the page's
script took to render its rows (``data-render-ms``) and the wall time of the whole browser run.

``--compare-template FILE`` also renders another HTML template (for example the report's earlier
template, which wrote every host row in Jinja: ``git show REV:roles/fleet_report/templates/fleet-report.html.j2``)
from the same report, side by side with the role's template, and prints both templating times. Usage::

    python benchmarks/bench_report.py [--hosts 1000] [--keep DIR] [--compare-template FILE] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from testpaths import COLLECTIONS_ROOT  # noqa: E402  (tests/)

sys.path.insert(0, str(COLLECTIONS_ROOT))  # the working tree as ansible_collections.rdma.node

import synthetic_fleet  # noqa: E402  (tests/)
from browser import rendered_dom  # noqa: E402  (tests/)
from playbook import run_playbook  # noqa: E402  (tests/)

TEMPLATE_PLAYBOOK = """\
---
- name: Template the HTML report from a written JSON report
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the report
      ansible.builtin.set_fact:
        __fleet_report: "{{ lookup('ansible.builtin.file', report_json) | from_json }}"
    - name: Template {{ label }}
      ansible.builtin.template:
        src: "{{ template }}"
        dest: "{{ dest }}"
        mode: "0644"
"""


def _moment(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _seconds(task):
    duration = task["task"]["duration"]
    return (_moment(duration["end"]) - _moment(duration["start"])).total_seconds()


def report_job(inventory, cache, out):
    start = time.perf_counter()
    run = run_playbook("playbooks/fleet_report.yml", "-i", str(inventory), "-e", "fleet_report_dir=%s" % out,
                       env={"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache)})
    elapsed = time.perf_counter() - start
    if run.rc != 0:
        raise SystemExit("the report job failed (rc %d): %s" % (run.rc, run.stderr[-2000:]))
    tasks = [(task["task"]["name"].split(" : ", 1)[-1], _seconds(task)) for play in run.data["plays"] for task in play["tasks"]]
    return elapsed, tasks


def template_time(base, template, report_json, label):
    playbook = base / "template.yml"
    playbook.write_text(TEMPLATE_PLAYBOOK)
    dest = base / ("templated-%s.html" % label)
    run = run_playbook(str(playbook), "-i", "localhost,", "-c", "local", "-e", "template=%s report_json=%s dest=%s label=%s" % (
        template, report_json, dest, label), env={"ANSIBLE_PYTHON_INTERPRETER": sys.executable})
    if run.rc != 0:
        raise SystemExit("templating %s failed: %s" % (template, run.stderr[-2000:]))
    task = run.data["plays"][0]["tasks"][-1]
    return _seconds(task), dest.stat().st_size


def browser(page, fragment):
    start = time.perf_counter()
    dom = rendered_dom(str(page), fragment)
    wall = time.perf_counter() - start
    render_ms = float(re.search(r'data-render-ms="([\d.]+)"', dom).group(1))
    rows = len(re.findall(r'<tr class="host \w+" data-host=', dom))
    return render_ms, wall, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="browser runs per view")
    parser.add_argument("--keep", help="build the fleet in this directory and keep it")
    parser.add_argument("--compare-template", help="another HTML template to time against the role's")
    options = parser.parse_args(argv)
    context = None if options.keep else tempfile.TemporaryDirectory(prefix="rdma-node-report-")
    base = Path(options.keep or context.name).resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        inventory, cache = synthetic_fleet.build(base, options.hosts)
        out = base / "report"
        elapsed, tasks = report_job(inventory, cache, out)
        print("## Report job over %d cached hosts: %.1f s\n\n| task | seconds |\n|---|---:|" % (options.hosts, elapsed))
        for name, seconds in tasks:
            print("| %s | %.1f |" % (name, seconds))
        print("\n| file | bytes |\n|---|---:|")
        for name in ("fleet-report.json", "fleet-report.md", "fleet-report.html"):
            print("| %s | %d |" % (name, (out / name).stat().st_size))
        print("\n| view | rows | render (median) | browser run (median) |\n|---|---:|---:|---:|")
        for fragment in ("", "severity=critical&hide_healthy=1", "sort=name"):
            runs = [browser(out / "fleet-report.html", fragment) for _round in range(options.rounds)]
            render_ms = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            print("| %s | %d | %.0f ms | %.1f s |" % (fragment or "(none)", runs[0][2], render_ms, wall))
        if options.compare_template:
            role_template = ROOT / "roles/fleet_report/templates/fleet-report.html.j2"
            print("\n| template | templating | bytes |\n|---|---:|---:|")
            for label, template in (("role", role_template), ("compared", Path(options.compare_template).resolve())):
                seconds, size = template_time(base, template, out / "fleet-report.json", label)
                print("| %s (%s) | %.1f s | %d |" % (label, template.name, seconds, size))
    finally:
        if context is not None:
            context.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
