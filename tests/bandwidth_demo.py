"""The demo inventory's hosts for the bandwidth_check unit tests: their ports, GID tables and plan,
and perftest results from the real captured outputs of tests/fixtures/perftest."""

from __future__ import annotations

import os
import subprocess

import sysfs_tree

from ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan import build_plan, select_ports
from ansible_collections.rdma.node.plugins.module_utils._perftest_output import average_for, parse_perftest
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from testpaths import COLLECTION_ROOT, FIXTURES

PERFTEST = FIXTURES / "perftest"
DEMO_HOSTS = ["v100-node-01", "v100-node-02", "a100-node-01", "a100-node-02"]


def demo_hosts(dest, subsets=("locality", "gpudirect")):
    """Each demo host's ib_facts ports, its whole ``rdma`` facts with the locality and gpudirect subsets
    (where its GPUs sit, which GPUDirect path it offers; ``subsets`` to read others), and the grep output of
    its RoCE ports' GID tables (trees built in ``dest``)."""
    sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), str(dest))
    hosts = {}
    for host in DEMO_HOSTS:
        root = str(dest / host / "sys")
        facts = read_ib_facts({"sysfs_root": root, "proc_root": str(dest / host / "proc"), "gather_subset": list(subsets)})[0]
        tables = {}
        for port in facts["ports"]:
            if port["state"] == "ACTIVE" and port["link_layer"] == "Ethernet":
                where = os.path.join(root, "class/infiniband", port["device"], "ports", str(port["port"]))
                proc = subprocess.run(["grep", "-r", "-s", "-H", ".", where + "/gids", where + "/gid_attrs"],
                                      capture_output=True, text=True, check=False)
                tables["%s/%s" % (port["device"], port["port"])] = proc.stdout
        hosts[host] = {"ports": facts["ports"], "rdma": facts, "gid_tables": tables, "group": host.rsplit("-node", 1)[0]}
    return hosts


def perftest_result(name, size=65536, **extra):
    """What rdma.node.perftest returns for a capture (its own parser; no process runs)."""
    text = (PERFTEST / name).read_text()
    failed = name.startswith(("err_", "seed_err_"))
    parsed = parse_perftest("" if failed else text, text if failed else "", rc=1 if failed else 0, role="client")
    result = {"results": parsed["results"], "failure": parsed["failure"], "bw_average_gbps": average_for(parsed["results"], size),
              "cmd": ["ib_write_bw"], "msg": "fake",
              "parsed": {key: parsed[key] for key in ("gpu", "gpu_memory", "warnings")}}
    result.update(extra)
    return result


def demo_plan(demo, efficiency=0.9, gpu_mode="host", efficiency_gpu=0.9, **kwargs):
    """The plan of the four demo hosts, and what each host gave the plan."""
    infos = {}
    for host in DEMO_HOSTS:
        chosen = select_ports(demo[host]["ports"], efficiency=efficiency, gid_tables=demo[host]["gid_tables"], gpu_mode=gpu_mode,
                              efficiency_gpu=efficiency_gpu, rdma=demo[host]["rdma"])
        infos[host] = {"group": "ib-" + demo[host]["group"], "address": "10.0.0.%d" % (DEMO_HOSTS.index(host) + 1),
                       "ports": chosen["ports"], "efficiency": chosen["efficiency"], "efficiency_gpu": chosen["efficiency_gpu"]}
    return build_plan(infos, order=DEMO_HOSTS, **kwargs), infos
