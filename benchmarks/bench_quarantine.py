"""What the quarantine (rdma.node.k8s_quarantine) costs at fleet scale: requests to the API server, and time.

Builds a fleet of N simulated hosts in a jsonfile fact cache, as a check job leaves it
(tests/synthetic_fleet.py: the demo's hardware profiles with planted faults, their findings made by
the registered checks), and a FAKE Kubernetes API server (tests/fake_k8s_api, FakeKubeApi with its
NodeMaintenance extension) with one node per host, in eight racks, and the write-up's NicClusterPolicy.
Then:

* **Requests per run** (reads and writes, by kind) of ``playbooks/quarantine.yml`` against the fake:
  report mode and apply mode on every host (the default breaker trips: the synthetic fleet plants a
  critical fault on about half of its hosts), apply on ten faulty nodes (the hosts of the first 60,
  for a port down, within the default breaker of 10 of the 1,000 eligible nodes), and the same
  apply again (nothing to do).
  The fake records every request, so the counts are exact, not sampled.
* **Time** of a report-only run from the fact cache (``quarantine.yml -e k8s_quarantine_mode=report
  -e k8s_quarantine_read_cluster=false``), against the report job alone (``fleet_report.yml`` from the
  same cache), alternating in rounds so they share the machine's noise; wall and CPU time (of
  ansible-playbook and every process it waited for), medians, and their ratio. Also the report-only
  run that reads the cluster (the fake, 1,000 nodes in one list).

ansible-playbook runs as an operator runs it (default stdout callback into a log file). Usage::

    python benchmarks/bench_quarantine.py [--hosts 1000] [--rounds 3] [--json FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))

from testpaths import COLLECTIONS_ROOT, FIXTURES  # noqa: E402  (tests/)

sys.path.insert(0, str(COLLECTIONS_ROOT))

import synthetic_fleet  # noqa: E402  (tests/, needs the collection importable)
from fake_k8s_api.maintenance import NodeMaintenance  # noqa: E402
from fake_k8s_api.server import FakeKubeApi  # noqa: E402

BIN = Path(sys.executable).parent
ZONE = "topology.kubernetes.io/zone"


def environment(base, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") or k == "ANSIBLE_NOCOLOR"}
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS_ROOT), "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "ignore",
        "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_LOCAL_TEMP": str(base / "tmp"), "ANSIBLE_HOME": str(base / "ansible-home"),
        "ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache), "TMPDIR": str(base / "tmp"),
    })
    (base / "tmp").mkdir(exist_ok=True)
    return env


def run(argv, env, log, accepted=(0,)):
    """Wall and CPU seconds of one ansible-playbook run (CPU: it and every process it waited for)."""
    with open(log, "w", encoding="utf-8") as output:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=env)  # pylint: disable=consider-using-with
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in accepted:
        raise SystemExit("%s failed with rc %d; its output is in %s" % (" ".join(argv[:4]), code, log))
    return elapsed, usage.ru_utime + usage.ru_stime


def cluster(hosts):
    """The fake cluster: a node per host, in eight racks, and the write-up's NicClusterPolicy."""
    nodes = [{"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: "rack-%d" % (i % 8)}},
              "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for i, name in enumerate(hosts)]
    policy = yaml.safe_load((FIXTURES / "k8s" / "seed_nic_cluster_policy_rdma_shared_dp.yaml").read_text())
    return FakeKubeApi(nodes=nodes, policies=[policy], extensions=[NodeMaintenance()]).start()


def counts(requests):
    """Reads and writes of one run, by kind."""
    kinds = collections.Counter()
    for request in requests:
        path = request["path"]
        if request["method"] == "GET":
            kind = ("list nodes" if path == "/api/v1/nodes" else "get a node" if path.startswith("/api/v1/nodes/") else
                    "ledger" if "/configmaps" in path else "NicClusterPolicy" if "nicclusterpolicies" in path else "discovery")
            kinds["read: " + kind] += 1
        else:
            dry = " (dry run)" if request["query"].get("dryRun") == ["All"] else ""
            kind = ("patch a node" if path.startswith("/api/v1/nodes/") else "ledger" if "/configmaps" in path else
                    "NicClusterPolicy" if "nicclusterpolicies" in path else path)
            kinds["write: %s%s" % (kind, dry)] += 1
    reads = sum(v for k, v in kinds.items() if k.startswith("read"))
    return {"reads": reads, "writes": sum(kinds.values()) - reads, "kinds": dict(sorted(kinds.items()))}


def ten_faulty(cache, hosts):
    """Ten hosts whose cached ib_inventory findings have a port down, and fifty without one."""
    from ansible.plugins.loader import cache_loader  # controller code, imported once the collection is importable

    facts = cache_loader.get("jsonfile", _uri=str(cache))
    down = [h for h in hosts if any(f["check"] == "port_down" for f in facts.get(h).get("ib_inventory_findings") or [])]
    return down[:10] + [h for h in hosts if h not in down][:50]


def request_counts(base, inventory, cache, hosts):
    api = cluster(hosts)
    try:
        kubeconfig = base / "kubeconfig"
        kubeconfig.write_text(api.kubeconfig())
        env = environment(base, cache)
        # Ten faulty hosts among all the nodes: ten hosts with a port down and fifty without, quarantined
        # for that check alone, within the default breaker (10 of the 1,000 eligible nodes).
        ten = json.dumps({"k8s_quarantine_mode": "apply", "k8s_quarantine_checks": ["ib_inventory/port_down"],
                          "k8s_quarantine_hosts": ten_faulty(cache, hosts)})
        runs = [("report, all hosts (the breaker trips)", ["-e", "k8s_quarantine_mode=report"], (2,)),
                ("apply, all hosts (the breaker trips)", ["-e", "k8s_quarantine_mode=apply"], (2,)),
                ("apply, 10 faulty nodes", ["-e", ten], (0,)),
                ("apply again (nothing to do)", ["-e", ten], (0,))]
        out = {}
        for name, args, accepted in runs:
            api.clear_log()
            wall, _cpu = run([str(BIN / "ansible-playbook"), "-i", str(inventory), "rdma.node.quarantine", "-e",
                              "k8s_quarantine_kubeconfig=%s" % kubeconfig, *args], env, base / ("requests-%d.log" % len(out)), accepted)
            out[name] = dict(counts(api.recorded()), seconds=round(wall, 1),
                             quarantined=sum(1 for n in hosts if "rdma.node/quarantined" in api.node(n)["metadata"].get("labels", {})))
        return out
    finally:
        api.stop()


def timings(base, inventory, cache, hosts, rounds):
    api = cluster(hosts)
    try:
        kubeconfig = base / "kubeconfig-timing"
        kubeconfig.write_text(api.kubeconfig())
        env = environment(base, cache)
        playbook = [str(BIN / "ansible-playbook"), "-i", str(inventory)]
        jobs = {
            "report": playbook + ["rdma.node.fleet_report", "-e", "fleet_report_dir=%s" % (base / "report")],
            "quarantine_report_only": playbook + ["rdma.node.quarantine", "-e", "k8s_quarantine_mode=report",
                                                  "-e", "k8s_quarantine_read_cluster=false", "-e", "k8s_quarantine_fail_on_findings=false"],
            "quarantine_report_cluster_read": playbook + ["rdma.node.quarantine", "-e", "k8s_quarantine_mode=report",
                                                          "-e", "k8s_quarantine_kubeconfig=%s" % kubeconfig,
                                                          "-e", "k8s_quarantine_fail_on_findings=false"],
        }
        times = {job: [] for job in jobs}
        for number in range(rounds):
            for job, argv in jobs.items():
                times[job].append(run(argv, env, base / ("%s-%d.log" % (job, number))))
        return times
    finally:
        api.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="write the figures to this file too")
    parser.add_argument("--keep", help="build under this directory and keep it (logs, fact cache)")
    options = parser.parse_args()
    base = Path(options.keep or tempfile.mkdtemp(prefix="bench-quarantine-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        inventory, cache = synthetic_fleet.build(base, options.hosts)
        hosts = sorted(h for group in yaml.safe_load(inventory.read_text())["all"]["children"].values() for h in group["hosts"])
        hosts = sorted(set(hosts))
        times = timings(base, inventory, cache, hosts, options.rounds)
        requests = request_counts(base, inventory, cache, hosts)
    finally:
        if not options.keep:
            shutil.rmtree(base, ignore_errors=True)
    print("## Requests per run at %d nodes (one list request for the nodes)\n" % len(hosts))
    print("| run | reads | writes | nodes quarantined after | seconds | by kind |\n|---|---:|---:|---:|---:|---|")
    for name, entry in requests.items():
        kinds = "; ".join("%s %d" % kv for kv in entry["kinds"].items())
        print("| %s | %d | %d | %d | %.1f | %s |" % (name, entry["reads"], entry["writes"], entry["quarantined"], entry["seconds"], kinds))
    print("\n## Time from a fact cache of %d hosts (medians of %d rounds)\n" % (options.hosts, options.rounds))
    print("| job | wall s | CPU s | wall / report | CPU / report |\n|---|---:|---:|---:|---:|")
    report_wall = statistics.median(t[0] for t in times["report"])
    report_cpu = statistics.median(t[1] for t in times["report"])
    for job, values in times.items():
        wall, cpu = statistics.median(t[0] for t in values), statistics.median(t[1] for t in values)
        print("| %s | %.1f | %.1f | %.2f | %.2f |" % (job, wall, cpu, wall / report_wall, cpu / report_cpu))
    if options.json:
        Path(options.json).write_text(json.dumps({"hosts": options.hosts, "rounds": options.rounds, "requests": requests,
                                                  "times": times}, indent=2))


if __name__ == "__main__":
    main()
