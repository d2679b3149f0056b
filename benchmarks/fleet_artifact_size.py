"""How large the fleet's artifacts are in AWX, for a synthetic fleet (default 1000 hosts).

Builds hostvars shaped as the roles leave them (tests/synthetic_fleet.py), then prints, in bytes of
compact JSON: what the roles' own set_stats publish (rdma_<role>: {host: {status, findings}}), the
full fleet report, and the rdma_fleet summary the fleet_report role publishes within its budget,
with what the summary left out. A full ansible-runner run of 1000 hosts would take far longer and
measure the same data: the summary is a pure function of the report.
Usage: ``python benchmarks/fleet_artifact_size.py [--hosts N] [--budget BYTES] [--json FILE]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from synthetic_hostvars import role_stats, synthetic_hostvars  # noqa: E402
from testpaths import COLLECTIONS_ROOT  # noqa: E402

sys.path.insert(0, str(COLLECTIONS_ROOT))  # the working tree as ansible_collections.rdma.node

from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import DEFAULT_MAX_BYTES, fleet_artifact  # noqa: E402
from ansible_collections.rdma.node.plugins.plugin_utils._evaluation import registered_roles
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report import build_report  # noqa: E402


def size(document):
    return len(json.dumps(document, separators=(",", ":"), sort_keys=True).encode("utf-8"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--budget", type=int, default=DEFAULT_MAX_BYTES)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    hosts = synthetic_hostvars(args.hosts)
    report = build_report(hosts, registered_roles(), generated_at="2026-11-25T00:00:00Z")
    unlimited = fleet_artifact(report, {"dir": "/var/lib/rdma-node/reports"}, 10 ** 9)
    summary = fleet_artifact(report, {"dir": "/var/lib/rdma-node/reports"}, args.budget)
    figures = {
        "hosts": args.hosts,
        "roles_set_stats_bytes": size(role_stats(hosts)),
        "fleet_report_json_bytes": size(report),
        "rdma_fleet_unlimited_bytes": unlimited["size_bytes"],
        "rdma_fleet_bytes": summary["size_bytes"],
        "rdma_fleet_budget_bytes": args.budget,
        "rdma_fleet_complete": summary["complete"],
        "rdma_fleet_hosts_listed": len(summary["hosts"]),
        "rdma_fleet_findings_listed": len(summary["findings"]),
        "rdma_fleet_omitted": summary["omitted"],
        "totals": report["totals"],
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
