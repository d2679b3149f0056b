"""Every command README.md shows works as written (issue 23, item 1).

The README's shell blocks run in order, in a copy of this checkout as a fresh clone has it, each in a
fresh shell (``bash --noprofile --norc``, HOME a new directory, nothing of this test's environment
but PATH and pyenv's root) after the one documented step, ``source scripts/env.sh``. Each command's
exit code is recorded; a block this machine cannot run is named below with the reason, and a block
that is neither run nor named fails the test, as does a name that matches no block.

RDMA_NODE_CACHE is passed on so that the fresh shell finds the venvs already built (it is the
documented place of the set-up's cache); what the commands add to it for the copy is removed after.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sysfs_tree

from testpaths import COLLECTION_ROOT, checkout_copy, demo_hosts, forget_collections_root

# First command of a block -> why it cannot run here.
NOT_RUN = {
    "# In a source checkout, on Debian 12 as root; each command does all of its set-up first:":
        "the test command runs this very test (CI runs it through .ci/run); the demo command runs in the demo's own block below",
    "ansible-galaxy collection install -p ~/.ansible/collections rdma.node":
        "installs from Galaxy, which this machine cannot reach",
    "ansible-galaxy collection install --no-deps -p ~/.ansible/collections rdma.node":
        "installs from Galaxy, which this machine cannot reach",
    "ansible-playbook -i my-cluster rdma.node.site":
        "needs a cluster's nodes: the example inventory's hosts (gpu-v100-01.cluster.example, ...) are placeholders",
    "ansible-playbook -i my-cluster rdma.node.site -e rdma_quarantine=report":
        "needs a cluster's nodes (placeholders in the example inventory); test_site_demo runs the quarantine's report mode on the demo",
    "ansible-galaxy collection build --output-path build && mv build/rdma-node-*.tar.gz build/rdma-node.tar.gz":
        "pushes to a container registry (the <registry> placeholders); scripts/build-ee.sh builds the same image offline",
    "export CONTROLLER_HOST=https://awx.example.org CONTROLLER_USERNAME=admin CONTROLLER_PASSWORD=...  # or CONTROLLER_OAUTH_TOKEN":
        "needs an AWX server (test_awx_controller_config.py runs the playbook against a fake AWX API)",
}
# Command -> the exit code it has, where that is not 0, and why.
EXIT_CODES = {
    "ansible-playbook -i inventories/demo rdma.node.site": 2,  # the demo's hosts fail their checks on purpose
}
DEMO_HOSTS = demo_hosts()


def shell_blocks(markdown: str) -> list:
    """The README's ```sh blocks, each as its list of commands (continued lines joined)."""
    blocks = []
    for match in re.finditer(r"^(?P<indent> *)```sh\n(?P<body>.*?)^(?P=indent)```$", markdown, re.M | re.S):
        lines = [line[len(match.group("indent")):] for line in match.group("body").splitlines()]
        commands, current = [], ""
        for line in lines:
            current += line
            if current.endswith("\\"):
                current = current[:-1] + " "
                continue
            if current.strip():
                commands.append(current.strip())
            current = ""
        blocks.append(commands)
    return blocks


BLOCKS = shell_blocks((COLLECTION_ROOT / "README.md").read_text())


def fresh_shell_environment(home: Path) -> dict:
    """What a new login shell of the same user has: PATH without this test's venv, pyenv's root, a new HOME."""
    venv = str(Path(sys.executable).parent)
    path = os.pathsep.join(entry for entry in os.environ["PATH"].split(os.pathsep) if entry != venv and "/venv-" not in entry)
    env = {"HOME": str(home), "PATH": path, "LANG": os.environ.get("LANG", "C.UTF-8")}
    for name in ("PYENV_ROOT", "RDMA_NODE_CACHE"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    if "PYENV_ROOT" not in env:
        env["PYENV_ROOT"] = str(Path.home() / ".pyenv")  # where the image keeps it; the new HOME has none
    return env


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Run every block that can run here; per block, each command's exit code and the block's output."""
    base = tmp_path_factory.mktemp("readme")
    checkout = checkout_copy(base / "rdma-node")
    home = base / "home"
    home.mkdir()
    results = {}
    try:
        for index, commands in enumerate(BLOCKS):
            if commands[0] in NOT_RUN:
                continue
            codes = base / ("codes-%d" % index)
            script = ["source scripts/env.sh"]
            for command in commands:
                script += [command, 'echo "$?" >> %s' % codes]
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", "\n".join(script)], cwd=checkout, env=fresh_shell_environment(home),
                                  capture_output=True, text=True, timeout=900, check=False)
            exit_codes = [int(line) for line in codes.read_text().split()] if codes.exists() else []
            results[index] = {"commands": commands, "codes": exit_codes, "output": proc.stdout + proc.stderr}
        # What the demo's remediation left running, read before the containerds are stopped below.
        containerd_running = {host: bool(sysfs_tree.node_containerd_pid(str(checkout / "inventories/demo/.nodes" / host)))
                              for host in DEMO_HOSTS}
    finally:
        for host in DEMO_HOSTS:  # the remediation demo leaves the copy's simulated containerds running
            subprocess.run([sys.executable, str(checkout / "tools/simulated_containerd.py"), "stop", str(checkout / "inventories/demo/.nodes" / host)],
                           capture_output=True, timeout=60, check=False)
        forget_collections_root(checkout)
    return {"checkout": checkout, "home": home, "results": results, "containerd_running": containerd_running}


def test_every_name_of_a_block_not_run_is_a_block_of_the_readme():
    """Blocks not named here are run (test_the_block_runs_verbatim); a name must still match a block."""
    firsts = [commands[0] for commands in BLOCKS]
    assert [name for name in NOT_RUN if name not in firsts] == []
    assert len(BLOCKS) - len(NOT_RUN) >= 6


@pytest.mark.parametrize("index", [i for i, commands in enumerate(BLOCKS) if commands[0] not in NOT_RUN],
                         ids=[commands[0][:60] for commands in BLOCKS if commands[0] not in NOT_RUN])
def test_the_block_runs_verbatim(ran, index):
    result = ran["results"][index]
    expected = [EXIT_CODES.get(command, 0) for command in result["commands"]]
    assert result["codes"] == expected, "\n".join(
        ["%s -> %s" % pair for pair in zip(result["commands"], result["codes"])] + [result["output"][-4000:]])


def test_what_the_blocks_did(ran):
    checkout, home = ran["checkout"], ran["home"]
    # The tarball block installed the built collection where the next block copies the example from.
    installed = home / ".ansible/collections/ansible_collections/rdma/node"
    assert (installed / "MANIFEST.json").is_file() and not (installed / "tools").exists()
    assert (checkout / "my-cluster/group_vars/ib-a100.yml").is_file()
    graph = next(r for r in ran["results"].values() if r["commands"][-1] == "ansible-inventory -i my-cluster --graph")["output"]
    assert "|--@ib-v100:" in graph and "gpu-v100-01.cluster.example" in graph
    doc = next(r for r in ran["results"].values() if r["commands"][0] == "ansible-doc rdma.node.ib_facts")["output"]
    assert "sysfs_root" in doc and "ib_inventory_expected_ports" in doc
    demo = next(r for r in ran["results"].values() if r["commands"] == ["./scripts/demo.sh", "./scripts/demo.sh -e rdma_remediate=true"])["output"]
    # Seven of the eight demo hosts have a critical planted fault (a100-node-04's are warnings).
    assert demo.count("Every failure is one of the demo's planted faults: 7 of 8 hosts") == 2
    assert "[ERROR]" not in demo


def test_the_demos_remediation_block_remediated_each_node(ran):
    """The README's second demo command runs the memlock remediation on the copy's simulated nodes, after the
    demo's own set-up: each node ends with the spec, the config pointing at it and its own containerd running."""
    checkout = ran["checkout"]
    demo = next(r for r in ran["results"].values() if r["commands"][-1] == "./scripts/demo.sh -e rdma_remediate=true")["output"]
    assert "The simulated nodes' own containerds keep running" in demo
    report = json.loads((checkout / "reports/demo/fleet-report.json").read_text())
    assert not [f for h in report["hosts"] for f in h["findings"] if f["role"] == "node_remediation" and f["severity"] == "critical"]
    # The copy's nodes were built by the first demo command: the remediation changed and restarted each.
    assert sorted(h["name"] for h in report["hosts"] for f in h["findings"] if f["check"] == "containerd_restarted") == sorted(DEMO_HOSTS)
    for host in DEMO_HOSTS:
        node = checkout / "inventories/demo/.nodes" / host
        rlimits = json.loads((node / "etc/containerd/rdma-spec.json").read_text())["process"]["rlimits"]
        assert {"type": "RLIMIT_MEMLOCK", "hard": 2 ** 64 - 1, "soft": 2 ** 64 - 1} in rlimits
        assert 'base_runtime_spec = "%s/etc/containerd/rdma-spec.json"' % node in (node / "etc/containerd/config.toml").read_text()
    assert ran["containerd_running"] == dict.fromkeys(DEMO_HOSTS, True)


def test_the_fresh_shell_had_nothing_before_the_documented_step(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    before = subprocess.run(["bash", "--noprofile", "--norc", "-c", "command -v ansible-playbook ansible-galaxy ansible-doc ansible-builder"],
                            cwd=COLLECTION_ROOT, env=fresh_shell_environment(home), capture_output=True, text=True, check=False)
    assert before.returncode != 0 and before.stdout == ""
    after = subprocess.run(["bash", "--noprofile", "--norc", "-c",
                            "source scripts/env.sh && command -v ansible-playbook ansible-galaxy ansible-doc ansible-builder"],
                           cwd=COLLECTION_ROOT, env=fresh_shell_environment(home), capture_output=True, text=True, check=False)
    assert after.returncode == 0 and len(after.stdout.split()) == 4, after.stderr
