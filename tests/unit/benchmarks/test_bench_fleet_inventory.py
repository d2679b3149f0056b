"""The fleet benchmark's inventory (benchmarks/bench_fleet.py): each host's paths as plain values.

The demo names a simulated node's paths by templates of its node root. The benchmark gives each host
those paths as plain host variables, as a real inventory does; they must be exactly what Ansible
renders from the demo's templates for that host, or the benchmark would time a different job.
"""

from __future__ import annotations

import sys

import pytest
import yaml

from ansible.template import Templar, trust_as_template

from testpaths import COLLECTION_ROOT

sys.path.insert(0, str(COLLECTION_ROOT / "benchmarks"))
import bench_fleet  # noqa: E402  (benchmarks/)

HOSTS = 8  # one host of each of the demo's eight hardware profiles


def host_vars(inventory):
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["children"]
    return {host: variables for group in hosts.values() for host, variables in group["hosts"].items()}


@pytest.fixture(scope="module")
def fleets(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    plain = bench_fleet.build_fleet(base / "plain", [HOSTS])[HOSTS]
    templated = bench_fleet.build_fleet(base / "templated", [HOSTS], "templated")[HOSTS]
    return plain, templated


def test_each_host_has_the_paths_ansible_renders_from_the_demos_templates(fleets):
    plain, _templated = fleets
    demo = yaml.safe_load((bench_fleet.DEMO / "group_vars/all.yml").read_text())
    names = sorted(bench_fleet.node_path_templates(demo))
    assert {"ib_inventory_sysfs_root", "node_health_sysfs_root", "node_health_counters_resample_root",
            "node_health_metrics_dir", "driver_verify_dkms_status_file"} <= set(names)
    resampled = []
    for host, variables in host_vars(plain).items():
        templar = Templar(variables={"rdma_demo_node_root": variables["rdma_demo_node_root"]})
        for name in names:
            assert variables[name] == templar.template(trust_as_template(demo[name])), (host, name)
        resampled.append(bool(variables["node_health_counters_resample_root"]))
    # The demo's profiles with a later counter sample, and those without: both kinds are in the fleet.
    assert any(resampled) and not all(resampled)
    group_vars = yaml.safe_load((plain / "group_vars/all.yml").read_text())
    assert not set(names) & set(group_vars)


def test_the_templated_fleet_keeps_the_demos_templates(fleets):
    _plain, templated = fleets
    group_vars = yaml.safe_load((templated / "group_vars/all.yml").read_text())
    assert group_vars["node_health_sysfs_root"] == "{{ rdma_demo_node_root }}/sys"
    assert all(set(variables) == {"rdma_demo_node_root"} for variables in host_vars(templated).values())


def test_an_unknown_kind_of_node_paths_is_refused(tmp_path):
    with pytest.raises(ValueError, match="node_paths: expected plain or templated, got 'jinja'"):
        bench_fleet.build_fleet(tmp_path, [HOSTS], "jinja")
