"""The playbooks run the way AWX runs them: through ansible-runner, in a private data directory.

Real: ansible-runner's ``transmit | worker --delete | process`` pipeline, which is how AWX hands a
job to an execution node and reads its events back (the worker unpacks the job into a directory of
its own and deletes it at the end, as the job's container is thrown away), ansible-playbook, the
collection, the demo inventory's simulated nodes, and an HTTP upload to a server on 127.0.0.1.

What stands in for AWX itself: the private data directory is laid out as AWX lays it out
(project/, inventory/, env/extravars with the survey's answers), job slices are the same playbook
run on disjoint halves of the inventory (``--limit``), and the controller's fact cache is the slice
jobs' fact cache files copied into the report job's fact cache before it starts, as AWX saves each
host's facts after a job and writes them out for the next one. The upload server is a recorder, not
a real WebDAV or artifact repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sysfs_tree
import yaml

from testpaths import COLLECTION_ROOT, COLLECTIONS_PATH
from upload_servers import UploadRecorder

VENV_BIN = Path(sys.executable).parent
AWX_MAX_EVENT_RES = 700000  # AWX's MAX_EVENT_RES_DATA default, which it passes to jobs as MAX_EVENT_RES
DEMO = COLLECTION_ROOT / "inventories/demo"
# The demo's planted faults, one critical finding or more on every host.
EXPECTED_CRITICAL = {("v100-node-02", "ib_inventory", "port_down", "mlx5_1/1"),
                     ("v100-node-02", "node_health", "link_flapping", "mlx5_0/1"),
                     ("v100-node-01", "node_health", "pcie_degraded", "0000:5e:00"),
                     ("a100-node-01", "node_health", "counter_rising", "mlx5_1/1"),
                     ("a100-node-01", "node_health", "gpudirect", "gpudirect"),
                     ("a100-node-02", "driver_verify", "dkms_missing_next_boot", "6.1.0-28-amd64"),
                     # The physical layer's planted faults (issue 20).
                     ("v100-node-03", "node_health", "pcie_aer", "0000:5e:00.0"),
                     ("v100-node-04", "node_health", "link_ber", "mlx5_0/1"),
                     ("a100-node-03", "node_health", "roce_qos", "ens12f1np1"),
                     ("a100-node-03", "node_health", "counter_rising", "mlx5_bond_0/1")}
DEMO_HOSTS = ["a100-node-01", "a100-node-02", "a100-node-03", "a100-node-04", "v100-node-01", "v100-node-02", "v100-node-03", "v100-node-04"]
# a100-node-04's planted faults (a hot ASIC, an old kernel) are warnings: it does not fail.
CRITICAL_HOSTS = [host for host in DEMO_HOSTS if host != "a100-node-04"]


def private_data_dir(base, extravars):
    """A private data directory as AWX prepares one: the project, the inventory, the survey's answers."""
    pdd = base / "private_data_dir"
    shutil.copytree(COLLECTION_ROOT / "playbooks", pdd / "project/playbooks")
    (pdd / "inventory").mkdir(parents=True)
    # The demo inventory as a project holds it: the simulated_nodes file and the group_vars beside it
    # (its plugin, rdma.demo.simulated_nodes, comes from the checkout's development collection).
    shutil.copy(DEMO / "demo.simulated_nodes.yml", pdd / "inventory/demo.simulated_nodes.yml")
    shutil.copytree(DEMO / "group_vars", pdd / "inventory/group_vars")
    (pdd / "env").mkdir()
    (pdd / "env/envvars").write_text(yaml.safe_dump({
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_PATH,
        "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "ignore",
        "ANSIBLE_NOCOLOR": "1",
        "MAX_EVENT_RES": str(AWX_MAX_EVENT_RES),
    }))
    (pdd / "env/extravars").write_text(yaml.safe_dump(extravars))
    return pdd


def run_job(pdd, ident, playbook, *args, fact_cache_from=()):
    """transmit | worker --delete | process, as AWX runs a job; returns (rc, status, events, job dir)."""
    cache = pdd / "artifacts" / ident / "fact_cache"
    for source in fact_cache_from:  # what AWX writes out of its database before the job starts
        cache.mkdir(parents=True, exist_ok=True)
        for entry in (pdd / "artifacts" / source / "fact_cache").iterdir():
            shutil.copy(entry, cache / entry.name)
    job_dir = pdd.parent / ("worker-" + ident)
    runner = str(VENV_BIN / "ansible-runner")
    env = dict(os.environ, PATH="%s:%s" % (VENV_BIN, os.environ.get("PATH", "")))
    pipeline = "%s transmit %s -p %s --ident %s %s | %s worker --private-data-dir %s --delete | %s process %s --ident %s" % (
        runner, pdd, playbook, ident, " ".join(args), runner, job_dir, runner, pdd, ident)
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", pipeline], capture_output=True, text=True, env=env, timeout=600, check=False)
    artifacts = pdd / "artifacts" / ident
    assert (artifacts / "status").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    event_files = sorted((artifacts / "job_events").glob("*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
    events = [json.loads(p.read_text()) for p in event_files]
    return int((artifacts / "rc").read_text()), (artifacts / "status").read_text(), events, job_dir


def stats_artifacts(events):
    (stats,) = [e for e in events if e.get("event") == "playbook_on_stats"]
    return stats["event_data"]["artifact_data"]


def compact_size(data):
    return len(json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8"))


@pytest.fixture(scope="module")
def awx_like(tmp_path_factory):
    base = tmp_path_factory.mktemp("awx-runner")
    sysfs_tree.build_hardware_file(str(DEMO / "demo.simulated_nodes.yml"), str(base / "nodes"))
    with UploadRecorder() as uploads:
        extravars = {
            # The demo's nodes are directories on this machine; in AWX they are the inventory's hosts.
            "rdma_demo_node_root": "%s/nodes/{{ inventory_hostname }}" % base,
            # The survey's answers: a persistent volume for the report, and an upload.
            "fleet_report_dir": str(base / "persistent-volume/reports/job-7"),
            "fleet_report_upload_url": uploads.url + "/rdma-reports/job-7/",
        }
        pdd = private_data_dir(base, extravars)
        site = run_job(pdd, "site", "playbooks/site.yml")
        yield {"base": base, "pdd": pdd, "site": site, "uploads": list(uploads.received), "extravars": extravars}
    shutil.rmtree(str(base), ignore_errors=True)


def test_site_job_runs_and_its_container_is_gone(awx_like):
    rc, status, events, job_dir = awx_like["site"]
    # The faulty demo hosts fail their checks, as the demo intends; the job ran to its end.
    assert (rc, status) == (2, "failed")
    assert events[0]["event"] == "playbook_on_start" and events[-1]["event"] == "playbook_on_stats"
    failed = sorted({e["event_data"]["host"] for e in events if e["event"] == "runner_on_failed" and not e["event_data"].get("ignore_errors")})
    assert failed == CRITICAL_HOSTS
    assert not job_dir.exists(), "the worker's private data directory outlived the job"


def test_the_summary_is_in_the_stats_event(awx_like):
    artifacts = stats_artifacts(awx_like["site"][2])
    fleet = artifacts["rdma_fleet"]
    assert set(fleet) == {"schema", "title", "generated_at", "totals", "report", "hosts", "findings", "complete",
                          "omitted", "limit_bytes", "size_bytes", "changes"}
    assert fleet["schema"] == 2 and fleet["complete"] is True and fleet["limit_bytes"] == 65536
    assert fleet["totals"] == {"hosts": 8, "critical": 7, "unreachable": 0, "no_data": 0, "warning": 1, "ok": 0, "findings": 23,
                               "cluster_findings": 0, "hosts_not_fully_checked": 8}
    assert fleet["changes"] is None  # the first report on this volume: nothing to compare with
    assert {h: s["status"] for h, s in fleet["hosts"].items()} == dict(dict.fromkeys(CRITICAL_HOSTS, "critical"), **{"a100-node-04": "warning"})
    assert list(fleet["hosts"])[:3] == ["a100-node-01", "a100-node-03", "v100-node-02"]  # worst first: two critical findings each
    critical = {(f["host"], f["role"], f["check"], f["subject"]) for f in fleet["findings"] if f["severity"] == "critical"}
    assert critical == EXPECTED_CRITICAL
    assert fleet["report"] == {"dir": awx_like["extravars"]["fleet_report_dir"],
                               "files": ["fleet-report.json", "fleet-report.md", "fleet-report.html"],
                               "upload_url": awx_like["extravars"]["fleet_report_upload_url"],
                               "upload": {"url": awx_like["extravars"]["fleet_report_upload_url"], "ok": True, "error": None, "not_sent": [],
                                          "files": [{"file": name, "status": 201}
                                                    for name in ("fleet-report.json", "fleet-report.md", "fleet-report.html")]}}
    assert fleet["size_bytes"] == compact_size(fleet)
    # The totals of the report job are there too, and everything the job published fits what AWX keeps.
    assert artifacts["rdma_fleet_report"]["critical"] == 7
    assert compact_size(artifacts) < AWX_MAX_EVENT_RES


def test_the_report_lands_on_the_persistent_volume_and_is_uploaded(awx_like):
    report_dir = Path(awx_like["extravars"]["fleet_report_dir"])
    written = {p.name: p.read_bytes() for p in report_dir.iterdir()}
    assert sorted(written) == ["fleet-report.html", "fleet-report.json", "fleet-report.md"]
    report = json.loads(written["fleet-report.json"])
    assert report["totals"]["critical"] == 7
    uploads = {u["path"]: u for u in awx_like["uploads"]}
    assert sorted(uploads) == ["/rdma-reports/job-7/fleet-report.html", "/rdma-reports/job-7/fleet-report.json",
                               "/rdma-reports/job-7/fleet-report.md"]
    for name, content in written.items():
        upload = uploads["/rdma-reports/job-7/" + name]
        assert upload["method"] == "PUT" and upload["body"] == content
    assert uploads["/rdma-reports/job-7/fleet-report.json"]["headers"]["Content-Type"] == "application/json"
    assert uploads["/rdma-reports/job-7/fleet-report.html"]["headers"]["Content-Type"] == "text/html"


def test_report_job_reads_the_fact_cache_of_the_slices(awx_like):
    """ib_inventory as two slices (every other host, as AWX slices), then the report job alone."""
    pdd = awx_like["pdd"]
    hosts = DEMO_HOSTS
    slices = []
    for number in (1, 2):
        ident = "inventory-slice-%d" % number
        rc, status, events, _job_dir = run_job(pdd, ident, "playbooks/ib_inventory.yml",
                                               "--limit", ",".join(hosts[number - 1::2]), "--cmdline",
                                               "'-e ib_inventory_fail_on_findings=false'")
        assert (rc, status) == (0, "successful")
        ran = {e["event_data"]["host"] for e in events if e["event"] == "runner_on_ok"}
        assert ran == set(hosts[number - 1::2])
        slices.append(ident)
    rc, status, events, _job_dir = run_job(pdd, "report", "playbooks/fleet_report.yml", fact_cache_from=slices)
    assert (rc, status) == (0, "successful")
    fleet = stats_artifacts(events)["rdma_fleet"]
    assert fleet["totals"]["hosts"] == 8 and fleet["totals"]["no_data"] == 0
    # The port checks of the slices, and the firmware drift the report finds across the group's hosts.
    assert {(f["host"], f["check"]) for f in fleet["findings"]} == {("v100-node-02", "port_down"), ("a100-node-02", "firmware_drift")}
    assert {h for h, s in fleet["hosts"].items() if s["status"] == "critical"} == {"v100-node-02"}
