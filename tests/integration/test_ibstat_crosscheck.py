"""ib_facts agrees with the real ibstat on every port of every tree.

Each tree is bind-mounted over /sys in a private mount namespace (``unshare -m``), where Debian's
``ibstat`` (infiniband-diags, path compiled in) and the ib_facts module (default sysfs_root) both read
it. ibstat's output is parsed here by a deliberately small reader of its own, not by the collection's
parsers, so that a shared normalisation mistake cannot hide itself.

ibstat lists a CA only when the files it needs exist (node_type among them); the prometheus tree has
none, so for that tree the facts are compared with the files themselves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import sysfs_tree

from ansible_collections.rdma.node.plugins.module_utils._ib_text import parse_ibstat as collection_parse_ibstat
from testpaths import COLLECTION_ROOT, FIXTURES

IB_FACTS = COLLECTION_ROOT / "plugins/modules/ib_facts.py"
SEPARATOR = "=====ib_facts====="

# ibstat's words for the kernel's port states.
IBSTAT_STATES = {"Down": "DOWN", "Initializing": "INIT", "Armed": "ARMED", "Active": "ACTIVE"}

# Fields the rdma.node.parse_ibstat filter and ib_facts share, with the same meaning.
SHARED_PORT_FIELDS = ("state", "state_code", "phys_state", "phys_state_code", "rate_gbps", "link_layer", "lid",
                      "sm_lid", "lmc", "cap_mask", "port_guid")
SHARED_DEVICE_FIELDS = ("hca_type", "fw_ver", "hw_rev", "node_guid", "sys_image_guid")


def build_edge_tree(root):
    """Ports that stress the conversions: fractional and NDR rates, hex LIDs, RoCE, multi-port."""
    tree = sysfs_tree.TreeBuilder(root)
    mlx4 = tree.hca("mlx4_0", "0000:03:00.0", hca_type="MT4099", fw_ver="2.42.5000", hw_rev="1",
                    node_guid="e41d:2d03:007b:4080", driver="mlx4_core")
    tree.port(mlx4, 1, rate="2.5 Gb/sec (1X)", lid="0x1a", sm_lid="0xc", port_guid="e41d:2d03:007b:4081")
    tree.port(mlx4, 2, state="1: DOWN", phys_state="3: Disabled", rate="40 Gb/sec (4X QDR)",
              link_layer="Ethernet", lid="0x0", sm_lid="0x0", cap_mask="0x00010000",
              port_guid="e61d:2dff:fe7b:4082", ndevs=["eth2"])
    cx7 = tree.hca("mlx5_0", "0000:9a:00.0", hca_type="MT4129", fw_ver="28.39.1002",
                   node_guid="58a2:e103:00da:e626")
    tree.port(cx7, 1, rate="400 Gb/sec (4X NDR)", lid="0x2bc", sm_lid="0x1", lmc=2,
              port_guid="58a2:e103:00da:e626")
    tree.netdev("eth2", "0000:03:00.0", dev_port=1)


def trees(tmp_root):
    """Every tree to compare: the real fixture, each demo host, and the edge-case tree."""
    found = {}
    procfs = os.path.join(tmp_root, "prometheus-procfs", "sys")
    sysfs_tree.unpack((FIXTURES / "sysfs/prometheus-procfs.sysfs").read_bytes(), procfs)
    found["prometheus-procfs"] = procfs
    demo = os.path.join(tmp_root, "demo")
    for host in sysfs_tree.build_hardware_file(str(COLLECTION_ROOT / "inventories/demo/demo.simulated_nodes.yml"), demo):
        found["demo-" + host] = os.path.join(demo, host, "sys")
    edge = os.path.join(tmp_root, "edge", "sys")
    build_edge_tree(edge)
    found["edge"] = edge
    return found


def run_in_namespace(tree, args_file):
    """Run ibstat, then the ib_facts module, with ``tree`` mounted over /sys; return both outputs."""
    script = (
        'mount --bind "$1" /sys && { ibstat; echo "%s"; "$2" "$3" "$4"; }' % SEPARATOR
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         tree, sys.executable, str(IB_FACTS), args_file],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    ibstat_text, module_json = proc.stdout.split(SEPARATOR + "\n", 1)
    return ibstat_text, json.loads(module_json)


def parse_ibstat(text):
    """``{(ca, port): {field: value}}`` plus CA fields copied onto each of its ports."""
    ports = {}
    ca_fields = {}
    ca = current = None
    for line in text.splitlines():
        ca_match = re.match(r"^CA '(.+)'$", line)
        if ca_match:
            ca, ca_fields, current = ca_match.group(1), {}, None
            continue
        port_match = re.match(r"^\tPort (\d+):$", line)
        if port_match:
            current = ports.setdefault((ca, int(port_match.group(1))), dict(ca_fields))
            continue
        key, sep, value = line.strip().partition(": ")
        if sep:
            (current if current is not None else ca_fields)[key] = value
    return ports


def compare_with_ibstat(ibstat_ports, facts):
    by_key = {(p["device"], p["port"]): p for p in facts["ports"]}
    assert set(by_key) == set(ibstat_ports), "ibstat and ib_facts list different ports"
    for key, seen in ibstat_ports.items():
        port = by_key[key]
        device = facts["devices"][key[0]]
        assert device["hca_type"] == seen["CA type"], key
        assert device["fw_ver"] == seen["Firmware version"], key
        assert device["hw_rev"] == seen["Hardware version"], key
        assert device["node_guid"] == seen["Node GUID"], key
        assert device["sys_image_guid"] == seen["System image GUID"], key
        assert port["state"] == IBSTAT_STATES[seen["State"]], key
        assert port["phys_state"] == seen["Physical state"], key
        assert port["rate_gbps"] == float(seen["Rate"]), key
        assert port["lid"] == int(seen["Base lid"]), key
        assert port["sm_lid"] == int(seen["SM lid"]), key
        assert port["lmc"] == int(seen["LMC"]), key
        assert port["cap_mask"] == seen["Capability mask"], key
        assert port["port_guid"] == seen["Port GUID"], key
        assert port["link_layer"] == seen["Link layer"], key
    return len(ibstat_ports)


def compare_with_parse_ibstat(ibstat_text, facts):
    """The collection's parse_ibstat filter reads real ibstat output into the same values as ib_facts."""
    parsed = {(p["device"], p["port"]): p for p in collection_parse_ibstat(ibstat_text, strict=True)["ports"]}
    ports = {(p["device"], p["port"]): p for p in facts["ports"]}
    assert set(parsed) == set(ports)
    for key, port in parsed.items():
        assert {f: port[f] for f in SHARED_PORT_FIELDS} == {f: ports[key][f] for f in SHARED_PORT_FIELDS}, key
        device = facts["devices"][key[0]]
        assert {f: port[f] for f in SHARED_DEVICE_FIELDS} == {f: device[f] for f in SHARED_DEVICE_FIELDS}, key
    return len(parsed)


def compare_with_files(tree, facts):
    """For trees ibstat will not list: the facts say what the files say."""
    compared = 0
    for port in facts["ports"]:
        base = os.path.join(tree, "class/infiniband", port["device"])
        port_dir = os.path.join(base, "ports", str(port["port"]))

        def raw(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read().strip()

        code, name = raw(os.path.join(port_dir, "state")).split(":", 1)
        assert (port["state_code"], port["state"]) == (int(code), name.strip())
        assert port["phys_state_code"] == int(raw(os.path.join(port_dir, "phys_state")).partition(":")[0])
        assert port["rate"] == raw(os.path.join(port_dir, "rate"))
        assert port["rate_gbps"] == float(port["rate"].split()[0])
        assert port["link_layer"] == raw(os.path.join(port_dir, "link_layer"))
        fw_path = os.path.join(base, "fw_ver")
        assert facts["devices"][port["device"]]["fw_ver"] == (raw(fw_path) if os.path.exists(fw_path) else None)
        compared += 1
    return compared


def test_ib_facts_agrees_with_ibstat_on_every_tree(tmp_path):
    assert shutil.which("ibstat"), "ibstat is missing: scripts/setup.sh installs infiniband-diags"
    assert os.geteuid() == 0, "a private mount namespace needs root"
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {}}))
    counts = {}
    for name, tree in trees(str(tmp_path / "trees")).items():
        ibstat_text, result = run_in_namespace(tree, str(args_file))
        facts = result["ansible_facts"]["rdma"]
        ibstat_ports = parse_ibstat(ibstat_text)
        if ibstat_ports:
            counts[name] = ("ibstat", compare_with_ibstat(ibstat_ports, facts))
            assert compare_with_parse_ibstat(ibstat_text, facts) == counts[name][1]
        else:
            assert facts["ports"], "%s: neither ibstat nor ib_facts found a port" % name
            counts[name] = ("files", compare_with_files(tree, facts))
    print("ports compared:", counts)
    compared_with_ibstat = sum(n for how, n in counts.values() if how == "ibstat")
    assert compared_with_ibstat > 0
    assert counts["prometheus-procfs"] == ("files", 4)
    assert counts["demo-a100-node-01"] == ("ibstat", 3)
    assert counts["edge"] == ("ibstat", 3)
