"""The node_health role on the demo nodes writes rdma_node.prom; Debian's ``promtool check metrics``
accepts it and a real ``prometheus-node-exporter`` with only its textfile collector, on 127.0.0.1,
serves it: the planted faults show as samples an alert rule can use.

A second run with a fact cache compares the counters with the first run's sample (no in-run
interval), which the rates show.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import node_exporter
import pytest
import sysfs_tree
import yaml

from playbook import run_playbook
from testpaths import COLLECTION_ROOT, demo_inventory_copy

# The node_health task that gathers, checks and writes the metrics (task names match by their end).
EVALUATE = "check the node's health, write the metrics, keep and publish the findings"
HOSTS = ["a100-node-01", "a100-node-02", "a100-node-03", "a100-node-04", "v100-node-01", "v100-node-02", "v100-node-03", "v100-node-04"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("health")
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(base / "nodes"))
    inventory = base / "inventory"  # the demo's hosts and group_vars; the node roots are base/nodes (-e below)
    demo_inventory_copy(inventory)
    cache = base / "cache"
    env = {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(cache)}
    args = ["-i", str(inventory), "-e", "rdma_demo_node_root=%s/nodes/{{ inventory_hostname }}" % base,
            "-e", "node_health_fail_on_findings=false"]
    started = time.time()
    run = run_playbook("playbooks/node_health.yml", *args, env=env)
    assert run.rc == 0, run.stderr
    return {"base": base, "run": run, "args": args, "env": env, "started": started}


def prom(demo, host):
    return demo["base"] / "nodes" / host / "var/lib/prometheus/node-exporter/rdma_node.prom"


def serve_and_scrape(directory):
    """node_exporter with the textfile collector on ``directory``: its /metrics text."""
    return node_exporter.scrape("--collector.textfile", "--collector.textfile.directory=%s" % directory, what=directory)


def samples(text):
    found = {}
    for line in text.splitlines():
        if line.startswith(("rdma_node_", "node_textfile_scrape_error")):
            head, value = line.rsplit(" ", 1)
            found[head] = float(value)
    return found


def test_every_node_writes_a_file_promtool_accepts(demo):
    # The metrics are an output of the run, like the report: written every run, never a change.
    assert demo["run"].changed_hosts == []
    written = demo["run"].task_results(EVALUATE)
    assert {host: written[host]["metrics_written"] for host in HOSTS} == dict.fromkeys(HOSTS, True)
    for host in HOSTS:
        path = prom(demo, host)
        assert path.is_file() and oct(path.stat().st_mode & 0o777) == "0o644"
        lint = subprocess.run(["promtool", "check", "metrics"], input=path.read_text(), capture_output=True, text=True, check=False)
        assert lint.returncode == 0, (host, lint.stdout, lint.stderr)
    assert not list(prom(demo, HOSTS[0]).parent.glob(".*"))  # nothing left of the atomic write


def test_node_exporter_serves_the_planted_faults(demo):
    served = samples(serve_and_scrape(prom(demo, "a100-node-01").parent))
    assert served["node_textfile_scrape_error"] == 0
    assert served['rdma_node_port_state{device="mlx5_1",link_layer="InfiniBand",port="1"}'] == 4
    assert served['rdma_node_port_state{device="mlx5_0",link_layer="InfiniBand",port="1"}'] == 1
    assert served['rdma_node_port_rate_gbps{device="mlx5_1",link_layer="InfiniBand",port="1"}'] == 200
    assert served['rdma_node_port_total{counter="symbol_error",device="mlx5_1",link_layer="InfiniBand",port="1"}'] == 2410
    rate = served['rdma_node_port_rise_per_hour{counter="symbol_error",device="mlx5_1",link_layer="InfiniBand",port="1"}']
    assert 537 * 3600 / 2.0 < rate <= 537 * 3600 / 1.0  # 537 errors in the 1 s interval (plus the module's own time)
    assert served['rdma_node_findings{check="counter_rising",role="node_health",severity="critical"}'] == 1
    assert served['rdma_node_findings{check="gpudirect",role="node_health",severity="critical"}'] == 1
    last_run = served["rdma_node_last_run_timestamp_seconds"]
    assert demo["started"] <= last_run <= time.time()
    v100 = samples(serve_and_scrape(prom(demo, "v100-node-02").parent))
    assert v100['rdma_node_findings{check="link_flapping",role="node_health",severity="critical"}'] == 1
    assert v100['rdma_node_port_total{counter="link_downed",device="mlx5_0",link_layer="InfiniBand",port="1"}'] == 4


def test_node_exporter_serves_the_physical_layer_of_the_demo(demo):
    """The planted faults of the physical layer, and the healthy values beside them, as node_exporter serves them."""
    pcie = samples(serve_and_scrape(prom(demo, "v100-node-03").parent))
    hca = 'address="0000:5e:00.0",device="mlx5_0",kind="%s",role="hca"'
    assert pcie["rdma_node_pcie_aer_errors_total{%s}" % (hca % "nonfatal")] == 3  # the later read: 1, then 3
    assert pcie["rdma_node_pcie_aer_errors_total{%s}" % (hca % "fatal")] == 0
    assert pcie['rdma_node_pcie_acs_p2p_redirect{address="0000:5c:08.0",device="",role="bridge"}'] == 1
    assert pcie['rdma_node_pcie_acs_p2p_redirect{address="0000:5c:0c.0",device="",role="bridge"}'] == 0
    assert pcie['rdma_node_pcie_ats_enabled{address="0000:5e:00.0",device="mlx5_0",role="hca"}'] == 0
    assert pcie['rdma_node_findings{check="pcie_aer",role="node_health",severity="critical"}'] == 1
    link = samples(serve_and_scrape(prom(demo, "v100-node-04").parent))
    assert link['rdma_node_link_effective_ber{device="mlx5_0",port="1"}'] == 3.1e-11
    assert link['rdma_node_link_effective_ber{device="mlx5_1",port="1"}'] < 1e-200  # mlxlink's 15E-255: no error
    assert link['rdma_node_module_temperature_celsius{device="mlx5_0",port="1"}'] == 43
    assert link['rdma_node_link_down_longest_seconds{netdev="ibp94s0f0",port="mlx5_0/1"}'] == 407
    roce = samples(serve_and_scrape(prom(demo, "a100-node-03").parent))
    assert roce['rdma_node_roce_pfc_enabled{netdev="ens12f1np1",priority="3"}'] == 0
    assert roce['rdma_node_roce_pfc_enabled{netdev="ens12f0np0",priority="3"}'] == 1
    assert roce['rdma_node_roce_ecn_enabled{netdev="ens12f1np1",point="rp",priority="3"}'] == 1
    assert roce['rdma_node_roce_trust_info{mode="dscp",netdev="ens12f1np1"}'] == 1
    assert roce['rdma_node_port_rise_per_hour{counter="rnr_nak_retry_err",device="mlx5_bond_0",link_layer="Ethernet",port="1"}'] > 0
    hot = samples(serve_and_scrape(prom(demo, "a100-node-04").parent))
    assert hot['rdma_node_hca_temperature_celsius{device="mlx5_1",sensor="asic"}'] == 98
    assert hot['rdma_node_hca_temperature_critical_celsius{device="mlx5_1",sensor="asic"}'] == 105
    assert hot['rdma_node_findings{check="hca_temperature",role="node_health",severity="warning"}'] == 1
    # What the demo cannot give is exported as not judged, never as a pass: the uncabled port has no BER.
    assert hot['rdma_node_check_not_judged{check="link_ber",role="node_health",subject="mlx5_0/1"}'] == 1
    assert 'rdma_node_link_effective_ber{device="mlx5_0",port="1"}' not in hot


def test_next_run_compares_with_the_cached_sample(demo):
    """One read per run (no interval): the first run reads the node, the next one its later tree, and
    compares with the first run's sample from the fact cache."""
    env = {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(demo["base"] / "cache-across-runs")}
    once = ["-e", "node_health_counters_interval=0", "--limit", "a100-node-01"]
    first = run_playbook("playbooks/node_health.yml", *demo["args"], *once, env=env)
    assert first.rc == 0, first.stderr
    status = first.task_results(EVALUATE)["a100-node-01"]["ansible_facts"]["node_health_status"]
    assert (status["counter_rates_source"], status["counter_rates_per_hour"]) == (None, {})
    assert status["counter_sample"]["ports"]["mlx5_1/1"]["symbol_error"] == 1873
    later = "node_health_sysfs_root=%s/nodes/a100-node-01/later/sys" % demo["base"]
    second = run_playbook("playbooks/node_health.yml", *demo["args"], *once, "-e", later, env=env)
    assert second.rc == 0, second.stderr
    result = second.task_results(EVALUATE)["a100-node-01"]
    findings = [f for f in result["ansible_facts"]["node_health_findings"] if f["check"] == "counter_rising"]
    assert len(findings) == 1 and "symbol_error rose from 1873 to 2410" in findings[0]["message"]
    assert "(between samples of the previous run)" in findings[0]["message"]
    assert result["ansible_facts"]["node_health_status"]["counter_sample"]["ports"]["mlx5_1/1"]["symbol_error"] == 2410
    text = prom(demo, "a100-node-01").read_text()
    assert re.search(r'^rdma_node_findings\{check="counter_rising",role="node_health",severity="critical"\} 1$', text, re.M)


def test_operators_checks_reach_the_findings_and_the_metrics(demo, tmp_path):
    """Operators' JMESPath checks (tests/fixtures/custom_checks) on the demo's A100 nodes; a bad one is one error naming it."""
    operator_checks = yaml.safe_load((COLLECTION_ROOT / "tests/fixtures/custom_checks/operator_checks.yml").read_text())
    example = operator_checks["common"] + operator_checks["ib-a100"]
    extra = tmp_path / "custom.yml"
    extra.write_text(yaml.safe_dump({"node_health_custom_checks": example}))
    env = {"ANSIBLE_CACHE_PLUGIN": "memory"}
    run = run_playbook("playbooks/node_health.yml", *demo["args"], "-e", "@%s" % extra, "--limit", "ib-a100", env=env)
    assert run.rc == 0, run.stderr
    results = run.task_results(EVALUATE)
    custom = {host: sorted((f["check"], f["severity"], f["subject"]) for f in r["ansible_facts"]["node_health_findings"]
                           if f["check"].startswith("custom_"))
              for host, r in results.items()}
    # a100-node-01 lacks nvidia_peermem; every ACTIVE InfiniBand port runs at 200 Gb/s; no port has receive errors.
    assert custom == {"a100-node-01": [("custom_nvidia_peermem_loaded", "critical", "nvidia_peermem_loaded")],
                      "a100-node-02": [], "a100-node-03": [], "a100-node-04": []}
    status = results["a100-node-02"]["ansible_facts"]["node_health_status"]
    assert {"custom_port_rcv_errors", "custom_nvidia_peermem_loaded", "custom_ib_port_below_200g"} <= set(status["checks"])
    text = prom(demo, "a100-node-01").read_text()
    assert 'rdma_node_findings{check="custom_nvidia_peermem_loaded",role="node_health",severity="critical"} 1' in text

    extra.write_text(yaml.safe_dump({"node_health_custom_checks": [
        {"name": "broken", "severity": "warning", "message": "m", "expression": "rdma.ports[?rate_gbps <"}]}))
    bad = run_playbook("playbooks/node_health.yml", *demo["args"], "-e", "@%s" % extra, "--limit", "a100-node-02", env=env)
    assert (bad.rc, bad.failed_hosts) == (2, ["a100-node-02"])
    message = bad.task_results(EVALUATE)["a100-node-02"]["msg"]
    assert message.startswith("rdma.node.evaluate: custom_checks check 'broken': the expression 'rdma.ports[?rate_gbps <' is not valid JMESPath")
    assert "\n" not in message and "Traceback" not in message


def test_a_node_without_the_textfile_directory_is_checked_and_says_so(demo):
    missing = demo["base"] / "no-node-exporter"
    run = run_playbook("playbooks/node_health.yml", *demo["args"], "--limit", "a100-node-02", "-e", "node_health_metrics_dir=%s" % missing,
                       env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert (run.rc, run.failed_hosts, run.changed_hosts) == (0, [], [])
    evaluated = run.task_results(EVALUATE)["a100-node-02"]
    note = "no metrics written: %s does not exist on the node (is prometheus-node-exporter installed?)" % missing
    assert (evaluated["metrics_written"], evaluated["metrics_note"]) == (False, note)
    assert note in evaluated["warnings"]
    assert not missing.exists()


def test_a_connection_without_standard_input_gets_the_metrics_through_a_file(demo, tmp_path):
    # rdma_test_no_stdin (tests/connection_plugins) is the local connection without pipelining.
    metrics = tmp_path / "textfile"
    metrics.mkdir()
    run = run_playbook("playbooks/node_health.yml", *demo["args"], "--limit", "a100-node-01", "-e", "ansible_connection=rdma_test_no_stdin",
                       "-e", "node_health_metrics_dir=%s" % metrics,
                       env={"ANSIBLE_CACHE_PLUGIN": "memory", "ANSIBLE_CONNECTION_PLUGINS": str(COLLECTION_ROOT / "tests/connection_plugins")})
    assert run.rc == 0, run.stderr
    assert run.task_results(EVALUATE)["a100-node-01"]["metrics_written"] is True
    assert run.task_results(EVALUATE)["a100-node-01"]["metrics_written_via"] == "a transferred file"
    assert sorted(p.name for p in metrics.iterdir()) == ["rdma_node.prom"]
    written = metrics / "rdma_node.prom"
    assert written.stat().st_mode & 0o777 == 0o644
    assert 'rdma_node_findings{check="counter_rising",role="node_health",severity="critical"} 1' in written.read_text().splitlines()


@pytest.mark.parametrize("settings, via", [
    (["-e", "ansible_pipelining=true"], "standard input"),
    # Without become the command reads the connection's standard input, pipelining or not.
    (["-e", "ansible_pipelining=false"], "standard input"),
    # su reads its terminal (Ansible never pipelines through it): the text is transferred, as modules are.
    (["-e", "ansible_pipelining=true", "-e", "ansible_become=true", "-e", "ansible_become_method=su"], "a transferred file"),
])
def test_the_text_goes_on_standard_input_only_where_the_command_surely_reads_it(demo, settings, via):
    run = run_playbook("playbooks/node_health.yml", *demo["args"], "--limit", "a100-node-02", *settings,
                       env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert run.rc == 0, run.stderr
    evaluated = run.task_results(EVALUATE)["a100-node-02"]
    assert (evaluated["metrics_written"], evaluated["metrics_written_via"]) == (True, via)
    assert prom(demo, "a100-node-02").read_text().startswith("# HELP rdma_node_port_state")


PORTS_THEN_HEALTH = """\
---
- name: Gather the ports only, then check the health with what was gathered
  hosts: all
  gather_facts: false
  tasks:
    - name: Gather the ports only
      rdma.node.ib_facts:
        sysfs_root: "{{ ib_inventory_sysfs_root }}"
    - name: Check the health without gathering
      ansible.builtin.include_role:
        name: rdma.node.node_health
      vars:
        node_health_gather: false
    - name: Write the report
      ansible.builtin.include_role:
        name: rdma.node.fleet_report
        tasks_from: write
      vars:
        fleet_report_fail_on_critical: false
      run_once: true
"""


def test_a_ports_only_gather_skips_the_checks_that_need_more_and_names_them(demo, tmp_path):
    """node_health_gather false after a ports-only ib_facts: no check over counters, PCIe, temperature
    or GPUDirect may count as run; each is skipped with the subset it lacked, in the status and in the
    metrics."""
    playbook = tmp_path / "ports_then_health.yml"
    playbook.write_text(PORTS_THEN_HEALTH)
    reports = tmp_path / "reports"
    run = run_playbook(str(playbook), *demo["args"], "--limit", "a100-node-01", "-e", "fleet_report_dir=%s" % reports,
                       env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert run.rc == 0, run.stderr
    status = run.task_results(EVALUATE)["a100-node-01"]["ansible_facts"]["node_health_status"]
    skipped = {entry["check"]: entry for entry in status["skipped_checks"]}
    for check, subset in (("pcie_degraded", "pcie"), ("counter_rising", "counters"), ("hca_temperature", "temperature"),
                          ("gpudirect", "gpudirect"), ("roce_gid_missing", "roce")):
        assert skipped[check] == {"check": check, "missing": [subset], "reason": "the %s facts were not gathered" % subset}
        assert check not in status["checks"]
    assert skipped["effective_memlock"]["missing"] == ["memlock"]
    assert "not run for lack of data" in status["summary"]
    served = samples(prom(demo, "a100-node-01").read_text())
    assert served['rdma_node_check_skipped{check="pcie_degraded",missing="pcie",role="node_health"}'] == 1
    assert served['rdma_node_check_skipped{check="hca_temperature",missing="temperature",role="node_health"}'] == 1
    assert not any(key.startswith('rdma_node_findings{check="pcie_degraded"') for key in served)
    # The report lists per host what was not checked and why; the host never reads as plainly ok.
    (host,) = json.loads((reports / "fleet-report.json").read_text())["hosts"]
    unchecked = {(item["role"], item["check"]): item["reason"] for item in host["not_checked"]}
    assert unchecked[("node_health", "pcie_degraded")] == "the pcie facts were not gathered"
    assert unchecked[("node_health", "hca_temperature")] == "the temperature facts were not gathered"
    markdown = (reports / "fleet-report.md").read_text()
    assert "not checked" in markdown and "the pcie facts were not gathered" in markdown
