"""A synthetic fleet for sizing what the fleet report publishes: hostvars shaped as the roles leave them.

The findings' wording and fields are those the roles produce on the demo (a V100 port DOWN, a kernel
without the DKMS driver, a dkms error) and after a remediation (the proof of the new limits, an info
finding); how often each occurs is set by ``rates``. The same seed gives the same fleet.
"""

from __future__ import annotations

import random

DEFAULT_RATES = {"port_down": 0.05, "dkms_missing_next_boot": 0.02, "dkms_error": 0.10, "remediated": 1.0}


def _finding(role, check, severity, subject, message, expected=None, actual=None):
    return {"role": role, "check": check, "severity": severity, "subject": subject, "message": message,
            "expected": expected, "actual": actual}


def host_vars(name, group, rng, rates):
    """The variables one host carries after site.yml and a remediation run."""
    inventory, driver, remediation = [], [], []
    if rng.random() < rates["port_down"]:
        inventory.append(_finding("ib_inventory", "port_down", "critical", "mlx5_1/1",
                                  "mlx5_1/1 is DOWN (Polling); expected ACTIVE", "ACTIVE", "DOWN"))
    if rng.random() < rates["dkms_missing_next_boot"]:
        driver.append(_finding("driver_verify", "dkms_missing_next_boot", "critical", "6.1.0-28-amd64",
                               "mlnx-ofed-kernel is not installed by DKMS for 6.1.0-28-amd64, the kernel that boots next: "
                               "this node loses RDMA at its next reboot into 6.1.0-28-amd64", "installed", "missing"))
    if rng.random() < rates["dkms_error"]:
        driver.append(_finding("driver_verify", "dkms_error", "warning", "dkms",
                               "dkms status printed an error: Error! Could not locate dkms.conf file."))
    if rng.random() < rates["remediated"]:
        remediation.append(_finding("node_remediation", "container_limits", "info", "probe",
                                    "A new container gets Max locked memory unlimited and Max open files 1048576, as the spec says.",
                                    "unlimited", "unlimited"))

    def status(findings):
        return {"ok": not any(f["severity"] == "critical" for f in findings),
                "critical": sum(f["severity"] == "critical" for f in findings),
                "warning": sum(f["severity"] == "warning" for f in findings)}

    return {
        "group_names": [group],
        "ib_inventory_findings": inventory, "ib_inventory_status": status(inventory),
        "driver_verify_findings": driver, "driver_verify_status": status(driver),
        "node_remediation_findings": remediation, "node_remediation_status": status(remediation),
    }


def synthetic_hostvars(count, seed=12, rates=None):
    """``{host name: variables}`` for ``count`` hosts, half V100 and half A100 nodes."""
    rng = random.Random(seed)
    rates = dict(DEFAULT_RATES, **(rates or {}))
    hosts = {}
    for index in range(count):
        group = "ib-v100" if index % 2 == 0 else "ib-a100"
        name = "%s-node-%04d" % (group[3:], index)
        hosts[name] = host_vars(name, group, rng, rates)
    return hosts


def role_stats(hosts):
    """What the roles' own set_stats publish for these hosts: ``rdma_<role>: {host: {status, findings}}``."""
    stats = {}
    for name, variables in hosts.items():
        for role in ("ib_inventory", "driver_verify", "node_remediation"):
            stats.setdefault("rdma_" + role, {})[name] = {
                "status": variables[role + "_status"], "findings": variables[role + "_findings"]}
    return stats
