"""The physical-layer readers against the real parts this machine has: iproute2's dcb (its argument
handling of every query the collection runs, and its failure without a DCB-capable netdev, which
must become "not checked"), the kernel's PCI configuration space as root and as an unprivileged
user, and promtool on the metrics and alert rules."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

import pytest
from physical_samples import physical_facts

from ansible_collections.rdma.node.plugins.module_utils._pcie_path import config_from_read, read_config_space
from ansible_collections.rdma.node.plugins.module_utils._query_commands import QUERY_SHAPES, query_argv
from ansible_collections.rdma.node.plugins.module_utils._roce_qos import qos_of_netdev, run_queries
from ansible_collections.rdma.node.plugins.plugin_utils._metrics import render
from testpaths import COLLECTION_ROOT

RULES = COLLECTION_ROOT / "extensions/prometheus/rdma_node_physical.rules.yml"


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_real_dcb_takes_every_query_and_fails_only_for_lack_of_dcb_support():
    assert shutil.which("dcb"), "dcb is missing: scripts/setup.sh installs iproute2"
    for kind in ("dcb_pfc", "dcb_app"):
        rc, out, err = run(query_argv(kind, netdev="lo"))
        # dcb parsed the argv and asked the kernel: no usage text, only the netlink answer for lo.
        assert (rc, out.strip()) == (1, "") and "Usage" not in err and "What is" not in err
        assert err.strip() == "Attribute read: Operation not supported"
    rc, _out, err = run(query_argv("dcb_pfc", netdev="nosuchdev0"))
    assert rc == 1 and err.strip() == "Attribute read: No such device"
    # A command that is not a query shape gets dcb's usage text, which none of ours ever does.
    rc, _out, err = run(["dcb", "-j", "pfc", "shoe", "dev", "lo"])
    assert rc != 0 and "Usage" in err


def test_real_dcb_failures_become_reasons_and_not_checked():
    outputs = run_queries("lo", run, kinds=("dcb_pfc", "dcb_app", "dcb_apptrust", "mlnx_qos"))
    assert outputs["dcb_pfc"] == (None, "dcb -j pfc show dev lo exited with 1: Attribute read: Operation not supported")
    apptrust_rc, _o, apptrust_err = run(query_argv("dcb_apptrust", netdev="lo"))
    if "unknown" in apptrust_err:  # iproute2 before 6.2 has no apptrust object
        assert outputs["dcb_apptrust"][1].startswith('dcb -j apptrust show dev lo exited with %d: Object "apptrust" is unknown' % apptrust_rc)
    assert outputs["mlnx_qos"] == (None, "mlnx_qos could not be run: No such file or directory") or shutil.which("mlnx_qos")
    entry = qos_of_netdev("/sys", "lo", outputs)
    assert entry["pfc"]["enabled_priorities"] is None
    assert entry["pfc"]["reason"].startswith("dcb -j pfc show dev lo exited with 1: Attribute read: Operation not supported")
    assert entry["ecn"]["reason"] == "/sys/class/net/lo/ecn does not exist: the driver exposes no ECN settings (not mlx5, or a VF)"


def test_every_shape_names_an_installed_tool_or_one_the_machine_lacks():
    # The shapes run three tools; the machine has dcb and lacks mlnx_qos and mlxlink (ENVIRONMENT.md).
    assert {shape[0] for shape in QUERY_SHAPES.values()} == {"dcb", "mlnx_qos", "mlxlink"}
    assert shutil.which("dcb") and not shutil.which("mlxlink")


def machine_functions():
    return sorted(glob.glob("/sys/bus/pci/devices/*"))


@pytest.mark.skipif(os.geteuid() != 0, reason="reading the whole config space needs root; the integration stage runs as root")
def test_real_config_space_as_root_and_as_nobody():
    functions = machine_functions()
    assert functions, "this machine lists no PCI function in /sys/bus/pci/devices"
    extended = [f for f in functions if os.stat(os.path.join(f, "config")).st_size == 4096]
    conventional = [f for f in functions if os.stat(os.path.join(f, "config")).st_size == 256]
    for function in extended:
        parsed, reason = read_config_space(function)
        assert reason is None and parsed["extended"] is True, function
    for function in conventional:
        parsed, reason = read_config_space(function)
        assert parsed is None and reason.endswith("holds 256 bytes: no PCIe extended configuration space (a conventional PCI "
                                                  "function, or the platform gives no ECAM access), so no ACS or ATS capability to read")
    # As nobody the kernel hands out only the first 64 bytes of the same file: not readable, not "no ACS".
    target = os.path.join((extended or conventional)[0], "config")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "/usr/bin/python3", "-c",
                           "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())", target],
                          capture_output=True, timeout=30, check=True)
    size = os.stat(target).st_size
    assert len(proc.stdout) == 64
    assert config_from_read(proc.stdout, size, target) == (
        None, "not readable without root: only 64 of the %d bytes of %s could be read (the capabilities past byte 64 need "
              "CAP_SYS_ADMIN)" % (size, target))


def test_promtool_accepts_the_metrics_and_the_alert_rules_and_their_tests(tmp_path):
    text = render(physical_facts(tmp_path), now=1764034512.5)
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    for argv in (["promtool", "check", "rules", str(RULES)],
                 ["promtool", "test", "rules", str(RULES.with_name("rdma_node_physical.rules.test.yml"))]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=str(RULES.parent))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # Every metric the rules read is one the textfile writes.
    used = {name for line in RULES.read_text().splitlines() if line.strip().startswith("expr:")
            for name in re.findall(r"rdma_node_[a-z0-9_]+", line)}
    written = set(re.findall(r"^(rdma_node_[a-z0-9_]+)", text, re.MULTILINE))
    assert used and used <= written, used - written
