"""A fleet of N simulated hosts in a jsonfile fact cache, as a check job leaves it for a report job.

The demo's four hardware profiles (inventories/demo/demo.simulated_nodes.yml) are built as node roots and read by
the collection's own readers (``_sysfs.gather`` for ``ansible_facts.rdma``, ``_driver.gather`` for
``rdma_driver``). Each host is a copy of its profile's facts with planted variations: a port down or
degraded, a netdev without carrier, a next-boot kernel without a DKMS build or unknown, an older
firmware, a PCIe link that trained narrower than the card. The registered checks then run on each
host with the demo groups' parameters, so every finding and status is what the roles would publish.
The facts are written through Ansible's own cache plugin, in the format a later job reads.
"""

from __future__ import annotations

import copy
from pathlib import Path

import sysfs_tree
import yaml

from ansible_collections.rdma.node.plugins.module_utils import _driver, _sysfs
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import evaluate_role
from harness import jsonfile_cache
from testpaths import COLLECTION_ROOT

DEMO = COLLECTION_ROOT / "inventories" / "demo"
DRIVER_DEFAULTS = COLLECTION_ROOT / "roles" / "driver_verify" / "defaults" / "main.yml"
RACKS = 8

# The PCIe link of each card: what ib_facts' pcie subset reports (ansible_facts.rdma.pcie[device]).
PCIE = {
    "v100": {"current_speed_gts": 8.0, "max_speed_gts": 8.0, "current_generation": 3, "max_generation": 3, "current_width": 16, "max_width": 16},
    "a100": {"current_speed_gts": 16.0, "max_speed_gts": 16.0, "current_generation": 4, "max_generation": 4, "current_width": 16, "max_width": 16},
}


def _group_params(group):
    """The demo group's role parameters, without the role prefix, as the roles pass them to evaluate."""
    group_vars = yaml.safe_load((DEMO / "group_vars" / (group + ".yml")).read_text())
    all_vars = yaml.safe_load((DEMO / "group_vars" / "all.yml").read_text())
    driver = yaml.safe_load(DRIVER_DEFAULTS.read_text())
    return {
        "ib_inventory": {
            "expected_ports": group_vars.get("ib_inventory_expected_ports") or [],
            "allowed_down_ports": group_vars.get("ib_inventory_allowed_down_ports") or [],
            "required_netdevs": group_vars.get("ib_inventory_required_netdevs") or [],
        },
        "driver_verify": {
            "required_modules": driver["driver_verify_required_modules"],
            "gpudirect": False,
            "require_uverbs": True,
            "ofed_version": all_vars["driver_verify_ofed_version"],
            "check_dkms": True,
            "dkms_modules": driver["driver_verify_dkms_modules"],
        },
    }


def profile_facts(base):
    """``{profile: {"rdma": ..., "rdma_driver": ...}}`` read from the demo profiles' node roots."""
    profiles = sysfs_tree.build_hardware_file(str(DEMO / "demo.simulated_nodes.yml"), str(base / "profiles"))
    facts = {}
    for profile in profiles:
        root = base / "profiles" / profile
        rdma, _warnings = _sysfs.gather(str(root / "sys"))
        driver = _driver.gather(str(root), dkms_text=(root / "saved/dkms-status.txt").read_text(),
                                ofed_text=(root / "saved/ofed_info.txt").read_text(), dkms_modules=["mlnx-ofed-kernel"])
        facts[profile] = {"rdma": rdma, "rdma_driver": driver}
    return facts


def _port(rdma, key):
    return next(p for p in rdma["ports"] if "%s/%s" % (p["device"], p["port"]) == key)


def vary(facts, kind, index):
    """Plant host ``index``'s variations into a copy of its profile's facts."""
    facts = copy.deepcopy(facts)
    rdma, driver = facts["rdma"], facts["rdma_driver"]
    rdma["pcie"] = {name: dict(PCIE[kind], present=True) for name in rdma["devices"]}
    if index % 7 == 3:  # the card's link trained at x8 of x16
        for link in rdma["pcie"].values():
            link["current_width"] = 8
    if index % 11 == 5:  # a device left out of the PCIe facts: the report says unknown
        rdma["pcie"].pop(sorted(rdma["devices"])[0])
    if index % 10 == 9:
        for device in rdma["devices"].values():
            device["fw_ver"] = "16.31.1014" if kind == "v100" else "20.35.1012"
    busy = _port(rdma, "mlx5_0/1") if kind == "v100" else _port(rdma, "mlx5_1/1")
    if index % 6 == 1:
        busy.update(state="DOWN", state_code=1, phys_state="Polling", phys_state_code=2, netdev_state="Down")
    elif index % 6 == 4:
        busy.update(rate_gbps=busy["rate_gbps"] / 2)
    if index % 4 == 2:
        other = _port(rdma, "mlx5_bond_0/1") if kind == "a100" else _port(rdma, "mlx5_1/1")
        if other["state"] == "ACTIVE":
            other["netdev_state"] = "Down"
    if index % 9 == 8:
        driver["next_boot_kernel"] = None  # the boot loader's default could not be read
    elif index % 5 == 0 and "6.1.0-28-amd64" not in driver["installed_kernels"]:
        driver["installed_kernels"] = driver["installed_kernels"] + ["6.1.0-28-amd64"]
        driver["newer_kernels"] = ["6.1.0-28-amd64"]
        driver["next_boot_kernel"] = "6.1.0-28-amd64"
    return facts


def cluster_facts(name):
    """What k8s_rdma leaves on localhost when the cluster serves the NicClusterPolicy API but has no
    policy: its registered checks run on that reading."""
    cluster = {"policy_api_found": True, "policy": None, "nodes": [], "tolerations": [], "planned_tolerations": [],
               "mofed_wait": None, "policy_patch": None, "device_plugin": None, "stale_dry_runs": [], "stale_patches": []}
    evaluated = evaluate_role("k8s_rdma", {"k8s_cluster": cluster}, {"policy_name": "nic-cluster-policy"}, "cluster/" + name,
                              only=["policy_missing"])
    return {"k8s_rdma_findings": evaluated["findings"], "k8s_rdma_status": evaluated["status"]}


def build(base, count, cluster=None):
    """Write a fleet of ``count`` hosts under ``base``: ``hosts.yml`` and ``fact-cache/``, and with
    ``cluster`` (a name) what k8s_rdma left on localhost. Returns their paths."""
    base = Path(base)
    profiles = profile_facts(base)
    names = sorted(profiles)
    params = {group: _group_params(group) for group in ("ib-v100", "ib-a100")}
    cache_dir = base / "fact-cache"
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache = jsonfile_cache(cache_dir)
    groups = {}
    for index in range(count):
        profile = names[index % len(names)]
        kind = profile.split("-", 1)[0]
        host = "%s-node-%04d" % (kind, index + 1)
        group = "ib-" + kind
        facts = vary(profiles[profile], kind, index)
        for role in ("ib_inventory", "driver_verify"):
            evaluated = evaluate_role(role, facts, params[group][role], host)
            facts[role + "_findings"] = evaluated["findings"]
            facts[role + "_status"] = evaluated["status"]
        cache.set(host, facts)
        groups.setdefault(group, []).append(host)
        groups.setdefault("rack-%02d" % (index % RACKS + 1), []).append(host)
    if cluster:
        cache.set("localhost", cluster_facts(cluster))
    inventory = {"all": {"children": {group: {"hosts": dict.fromkeys(hosts)} for group, hosts in sorted(groups.items())}}}
    (base / "hosts.yml").write_text("---\n" + yaml.safe_dump(inventory, sort_keys=False))
    return base / "hosts.yml", cache_dir
