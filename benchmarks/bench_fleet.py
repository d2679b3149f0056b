"""What the main job costs at fleet scale, against merely reaching the hosts.

Builds an inventory of N simulated GPU nodes on this machine (local connection), shaped like the demo
inventory: the demo's eight hardware profiles (inventories/demo/demo.simulated_nodes.yml) are built once as node
roots, and every simulated host's node root is a symlink to the root of its profile. Then, for each N
and forks setting, it times side by side, alternating in rounds so that they share the machine's noise:

* ``ping``: a play that runs ``ansible.builtin.ping`` on every host, the cost of reaching them;
* ``ib_inventory``: the ``rdma.node.ib_inventory`` playbook;
* ``site``: the ``rdma.node.site`` playbook without remediation, filling a jsonfile fact cache
  (it exits 2 because some hosts fail their checks; the JSON report must have been written);
* ``report``: the ``rdma.node.fleet_report`` playbook from that fact cache alone, gathering nothing;
* ``site_nocache`` (only with ``--only``): ``rdma.node.site`` with Ansible's default in-memory fact
  cache, to show what the persistent cache costs;
* ``ping_assert`` (only with ``--only``): ping and then one ``assert`` on every host, the floor of a
  role that gathers and checks in one task and then fails a host in a second one (ib_inventory).
* ``ping_fail`` (only with ``--only``): ping and then ``fail`` on every host. Every hardware profile of
  the demo plants a critical fault, so ``site`` fails every host of this fleet: this is what reaching
  the hosts and failing each of them costs Ansible itself.
* ``site_nofail`` (only with ``--only``): ``site`` with ``-e rdma_fail_on_findings=false``, the report
  without failing a host: what failing the hosts costs the site run.
* ``site_nocode`` (only with ``--only``): ``site`` with the nodes' code cache off
  (``RDMA_NODE_CODE_CACHE=off``): every module call compiles the collection's module_utils, as the
  first call on a node does. The other jobs keep it in the benchmark's directory, as a node keeps it
  from one run to the next (every simulated host runs on this machine, so they share one).
* ``site_noinject`` and ``ping_noinject`` (only with ``--only``): ``site`` and ``ping`` with
  ``inject_facts_as_vars = false`` (``ANSIBLE_INJECT_FACT_VARS=False``), the default ansible-core 2.21
  announces for 2.24. With it on, ansible-core copies and cleans every host's facts again to put them at
  the top level, in the worker of each task that returns facts and in every variable lookup of a host;
  rdma.node reads ``ansible_facts`` only.

The hosts' paths under their node roots (sysfs, saved outputs, the metrics directory) are plain host
variables, as a real inventory gives a node's paths; ``--node-paths templated`` keeps the demo's
templates of the node root instead, which every evaluate task renders and compiles anew. Neither is
free: the templates cost each evaluate task their compile, the plain values make the main process
larger (14 values a host; at 1000 hosts ``ping``'s main process 139 MB against 74 MB, about 5% slower).

ansible-playbook runs as an operator runs it: default stdout callback (its output goes to a file),
no retry files. For each job it records the wall time and the CPU time (user + system of
ansible-playbook and every process it waited for: workers and modules), which other load on the
machine disturbs much less. Prints a Markdown table of the medians of each, their ratios to
``ping`` and, per forks setting, t(largest N)/t(smallest N). Usage::

    python benchmarks/bench_fleet.py [--hosts 100,200,1000] [--forks default,50] [--rounds 3]
                                     [--only ping,site] [--node-paths plain|templated]
                                     [--json FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jinja2
import jinja2.meta
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

import sysfs_tree  # noqa: E402  (tools/)
from testpaths import COLLECTIONS_PATH  # noqa: E402  (tests/)

DEMO = ROOT / "inventories" / "demo"
BIN = Path(sys.executable).parent
JOBS = ("ping", "ib_inventory", "site", "report")
# Measured only when asked for (--only); the module's docstring says what each shows.
OPTIONAL_JOBS = ("site_nocache", "ping_assert", "ping_fail", "site_nofail", "site_nocode", "ping_noinject", "site_noinject")
# The jobs that run with inject_facts_as_vars off.
NO_INJECT = {"ANSIBLE_INJECT_FACT_VARS": "False"}
# ansible-playbook exits 2 when hosts failed: the demo profiles plant faults, so the checking jobs must.
ACCEPTED_RC = {"ping": (0,), "ping_assert": (0,), "ping_fail": (2,), "ib_inventory": (0, 2), "site": (0, 2), "site_nocache": (0, 2),
               "site_nofail": (0,), "site_nocode": (0, 2), "report": (0,), "ping_noinject": (0,), "site_noinject": (0, 2)}
# Where each job that writes the fleet report writes it.
REPORT_DIRS = {"site": "site-report", "site_nocache": "site-nocache-report", "site_nofail": "site-nofail-report",
               "site_nocode": "site-nocode-report", "site_noinject": "site-noinject-report", "report": "cached-report"}

PING_PLAYBOOK = """\
---
- name: Reach every host
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""

PING_ASSERT_PLAYBOOK = PING_PLAYBOOK + """
    - name: Assert, as a role's fail switch does
      ansible.builtin.assert:
        that: inventory_hostname | length > 0
"""

PING_FAIL_PLAYBOOK = PING_PLAYBOOK + """
    - name: Fail the host, as site.yml fails a host with a critical finding
      ansible.builtin.fail:
        msg: "1 critical finding(s) on {{ inventory_hostname }}"
"""


def group_of(profile):
    """The demo's group of a hardware profile: v100-node-01 is in ib-v100."""
    return "ib-" + profile.split("-", 1)[0]


def node_path_templates(all_vars):
    """The demo's variables that are templates of the node root alone, ``{name: jinja2 template}``.

    The demo names each simulated node's paths (its sysfs root, its saved outputs) by templates of
    ``rdma_demo_node_root``; ``rdma.demo.simulated_nodes`` gives that root per host."""
    environment = jinja2.Environment()
    environment.tests["exists"] = os.path.exists  # Ansible's test of a path on the controller
    templates = {}
    for name, value in all_vars.items():
        if isinstance(value, str) and "{{" in value:
            parsed = environment.parse(value)
            if jinja2.meta.find_undeclared_variables(parsed) == {"rdma_demo_node_root"}:
                templates[name] = environment.from_string(value)
    return templates


def build_fleet(base, host_counts, node_paths="plain"):
    """Node roots of the demo profiles, and one inventory per host count whose hosts point at them.

    ``node_paths`` "plain": each host's paths under its node root are plain values in its host
    variables, as a real inventory gives a node's paths (/sys, /proc, a directory of saved outputs);
    "templated": they are the demo's templates of the node root, which every task that reads them
    renders, and compiles once in each worker process (about 26 ms of CPU per host and evaluate task
    at 200 hosts; benchmarks/README.md)."""
    if node_paths not in ("plain", "templated"):
        raise ValueError("node_paths: expected plain or templated, got %r" % (node_paths,))
    demo_vars = yaml.safe_load((DEMO / "group_vars/all.yml").read_text())
    templates = node_path_templates(demo_vars) if node_paths == "plain" else {}
    profiles = sysfs_tree.build_hardware_file(str(DEMO / "demo.simulated_nodes.yml"), str(base / "profiles"))
    inventories = {}
    for count in host_counts:
        directory = base / ("fleet-%d" % count)
        nodes = directory / ".nodes"
        shutil.rmtree(directory, ignore_errors=True)
        nodes.mkdir(parents=True)
        groups = {}
        for index in range(count):
            profile = profiles[index % len(profiles)]
            host = "%s-%04d" % (profile.split("-", 1)[0] + "-node", index + 1)
            (nodes / host).symlink_to(base / "profiles" / profile, target_is_directory=True)
            # What the demo's inventory plugin (rdma.demo.simulated_nodes) gives each of its hosts.
            host_vars = {"rdma_demo_node_root": str(nodes / host)}
            host_vars.update((name, template.render(rdma_demo_node_root=str(nodes / host)))
                             for name, template in templates.items())
            groups.setdefault(group_of(profile), {})[host] = host_vars
        inventory = {"all": {"children": {group: {"hosts": hosts} for group, hosts in groups.items()}}}
        (directory / "hosts.yml").write_text("---\n" + yaml.safe_dump(inventory, sort_keys=False))
        shutil.copytree(DEMO / "group_vars", directory / "group_vars")
        all_vars = {name: value for name, value in demo_vars.items() if name not in templates}
        all_vars["ansible_python_interpreter"] = sys.executable  # the venv's, without templating per host
        # Where the demo's groups keep their saved NCCL logs (site's NCCL play reads them), as the demo's
        # inventory plugin says it.
        all_vars["rdma_demo_inventory_dir"] = str(DEMO)
        # The demo waits 1 s per host between two counter samples to show a rise within one run; a fleet
        # compares with the previous run's sample in the fact cache instead. A wait is not overhead.
        all_vars["node_health_counters_interval"] = 0
        (directory / "group_vars/all.yml").write_text("---\n" + yaml.safe_dump(all_vars, sort_keys=False))
        inventories[count] = directory
    (base / "ping.yml").write_text(PING_PLAYBOOK)
    (base / "ping_assert.yml").write_text(PING_ASSERT_PLAYBOOK)
    (base / "ping_fail.yml").write_text(PING_FAIL_PLAYBOOK)
    return inventories


def environment(base, forks):
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("ANSIBLE_") and name != "ANSIBLE_NOCOLOR":
            del env[name]  # only what this benchmark sets, not the caller's configuration
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_PATH,
        "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "ignore",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCAL_TEMP": str(base / "tmp"),
        "ANSIBLE_HOME": str(base / "ansible-home"),
        # The nodes' compiled code (module_utils/_zip_import.py), kept here rather than in /var/cache.
        "RDMA_NODE_CODE_CACHE": str(base / "node-code-cache"),
    })
    if forks != "default":
        env["ANSIBLE_FORKS"] = str(forks)
    return env


def command(job, base, inventory):
    """argv and extra environment of one job on one inventory."""
    cache = {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(inventory / "fact-cache")}
    playbook = {
        "ping": [str(base / "ping.yml")],
        "ping_assert": [str(base / "ping_assert.yml")],
        "ping_fail": [str(base / "ping_fail.yml")],
        "ping_noinject": [str(base / "ping.yml")],
        "ib_inventory": ["rdma.node.ib_inventory"],
        "site": ["rdma.node.site", "-e", "fleet_report_dir=%s" % (inventory / REPORT_DIRS["site"])],
        "site_nocache": ["rdma.node.site", "-e", "fleet_report_dir=%s" % (inventory / REPORT_DIRS["site_nocache"])],
        "site_nofail": ["rdma.node.site", "-e", "rdma_fail_on_findings=false", "-e", "fleet_report_dir=%s" % (inventory / REPORT_DIRS["site_nofail"])],
        "site_nocode": ["rdma.node.site", "-e", "fleet_report_dir=%s" % (inventory / REPORT_DIRS["site_nocode"])],
        "site_noinject": ["rdma.node.site", "-e", "fleet_report_dir=%s" % (inventory / REPORT_DIRS["site_noinject"])],
        "report": ["rdma.node.fleet_report", "-e", "fleet_report_dir=%s" % (inventory / REPORT_DIRS["report"])],
    }[job]
    extra = cache if job in ("site", "site_nofail", "site_nocode", "site_noinject", "report") else {}
    if job == "site_nocode":
        extra = dict(extra, RDMA_NODE_CODE_CACHE="off")
    if job.endswith("_noinject"):
        extra = dict(extra, **NO_INJECT)
    return [str(BIN / "ansible-playbook"), "-i", str(inventory / "hosts.yml"), *playbook], extra


def run_job(job, base, inventory, forks, log, settings=None):
    """Run one job; ``settings`` are further ANSIBLE_* variables of this run (bench_ssh_fleet's pipelining)."""
    argv, extra = command(job, base, inventory)
    env = environment(base, forks)
    env.update(extra)
    env.update(settings or {})
    report = inventory / REPORT_DIRS.get(job, "none") / "fleet-report.json"
    if report.exists():
        report.unlink()
    with open(log, "w", encoding="utf-8") as output:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=env)  # pylint: disable=consider-using-with
        # wait4 gives the CPU time of ansible-playbook and every process it waited for (workers, modules).
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ACCEPTED_RC[job]:
        raise SystemExit("%s on %s failed with rc %d; its output is in %s" % (job, inventory.name, proc.returncode, log))
    if job in REPORT_DIRS:
        hosts = json.loads(report.read_text())["totals"]["hosts"] if report.exists() else None
        expected = int(inventory.name.split("-")[1])
        if hosts != expected:
            raise SystemExit("%s on %s wrote no report of %d hosts (%s); see %s" % (job, inventory.name, expected, report, log))
    # ru_maxrss of the children is the largest of them: ansible-playbook's main process, which forks a
    # worker per host and task and so pays for its own size at every fork.
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(options, base, inventories):
    """{(hosts, forks): {job: [(wall seconds, CPU seconds), ...]}}, rounds alternating the jobs of each setting."""
    times = {}
    for count, inventory in inventories.items():
        for forks in options.forks:
            if forks == "default" and count in options.skip_default_forks_at:
                continue
            setting = times.setdefault((count, forks), {job: [] for job in options.only})
            for round_number in range(options.rounds):
                for job in options.only:
                    log = base / "logs" / ("%s-%d-%s-%d.log" % (job, count, forks, round_number))
                    log.parent.mkdir(exist_ok=True)
                    wall, cpu, rss = run_job(job, base, inventory, forks, log)
                    setting[job].append((wall, cpu))
                    print("%5d hosts  forks %-7s  round %d  %-12s %8.1f s wall %8.1f s CPU  %6.0f MB max RSS  (load %.1f)"
                          % (count, forks, round_number + 1, job, wall, cpu, rss, os.getloadavg()[0]), file=sys.stderr, flush=True)
    return times


def medians_of(times, which):
    """{(hosts, forks): {job: median}} of the wall (0) or CPU (1) seconds."""
    return {key: {job: statistics.median(run[which] for run in runs) for job, runs in setting.items()}
            for key, setting in times.items()}


def table(times, jobs, which):
    """A Markdown table of the medians and their ratios to ping, and t(largest N)/t(smallest N) per forks."""
    medians = medians_of(times, which)
    ratio_jobs = [job for job in jobs if job != "ping"] if "ping" in jobs else []
    lines = ["| hosts | forks | " + " | ".join(jobs) + "".join(" | %s / ping" % job for job in ratio_jobs) + " |",
             "|---:|---|" + "---:|" * (len(jobs) + len(ratio_jobs))]
    for (count, forks), median in sorted(medians.items(), key=lambda item: (str(item[0][1]), item[0][0])):
        cells = ["%.1f s" % median[job] for job in jobs] + ["%.2f" % (median[job] / median["ping"]) for job in ratio_jobs]
        lines.append("| %d | %s | %s |" % (count, forks, " | ".join(cells)))
    for forks in sorted({setting for _count, setting in medians}, key=str):
        counts = sorted(count for count, setting_forks in medians if setting_forks == forks)
        if len(counts) > 1:
            small, large = medians[(counts[0], forks)], medians[(counts[-1], forks)]
            lines.append("")
            lines.append("forks %s, t(%d)/t(%d): %s" % (forks, counts[-1], counts[0], ", ".join(
                "%s %.2f" % (job, large[job] / small[job]) for job in jobs)))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", default="100,200,1000", help="comma-separated host counts")
    parser.add_argument("--forks", default="default,50", help="comma-separated: 'default' (ansible's 5) or a number")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(JOBS), help="comma-separated jobs in the order to run them, from "
                        + ", ".join(JOBS + OPTIONAL_JOBS) + " (default: %(default)s)")
    parser.add_argument("--skip-default-forks-at", default="",
                        help="host counts at which the default forks setting is not measured (e.g. 1000: ~20 min a site run)")
    parser.add_argument("--node-paths", choices=("plain", "templated"), default="plain",
                        help="each host's paths under its node root as plain host variables (default), or as the demo's "
                        "templates of the node root")
    parser.add_argument("--json", help="also write the raw times and medians to this file")
    parser.add_argument("--keep", help="build the fleet in this directory and keep it (logs, reports, fact caches)")
    options = parser.parse_args(argv)
    options.forks = [f.strip() for f in options.forks.split(",") if f.strip()]
    options.only = [j.strip() for j in options.only.split(",") if j.strip()]
    options.skip_default_forks_at = {int(n) for n in options.skip_default_forks_at.split(",") if n.strip()}
    unknown = sorted(set(options.only) - set(JOBS + OPTIONAL_JOBS))
    if unknown:
        parser.error("--only: unknown job(s) %s; expected some of %s" % (", ".join(unknown), ", ".join(JOBS + OPTIONAL_JOBS)))
    if "report" in options.only and ("site" not in options.only or options.only.index("report") < options.only.index("site")):
        parser.error("--only: the report job reads the fact cache that the site job fills; put site before it")
    host_counts = sorted({int(n) for n in options.hosts.split(",") if n.strip()})

    if options.keep:
        base = Path(options.keep).resolve()
        base.mkdir(parents=True, exist_ok=True)
        context = None
    else:
        context = tempfile.TemporaryDirectory(prefix="rdma-node-fleet-")
        base = Path(context.name)
    try:
        (base / "tmp").mkdir(exist_ok=True)
        inventories = build_fleet(base, host_counts, options.node_paths)
        times = measure(options, base, inventories)
    finally:
        if context is not None:
            context.cleanup()
    print("Wall clock, median of %d round(s):\n" % options.rounds)
    print(table(times, options.only, 0))
    print("\nCPU time of ansible-playbook and its workers and modules (user + system), median:\n")
    print(table(times, options.only, 1))
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump({"rounds": options.rounds,
                       "runs": {"%d/%s" % key: value for key, value in times.items()},
                       "median_wall": {"%d/%s" % key: value for key, value in medians_of(times, 0).items()},
                       "median_cpu": {"%d/%s" % key: value for key, value in medians_of(times, 1).items()}}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
