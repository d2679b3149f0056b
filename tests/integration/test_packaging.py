"""What a user installs and what an execution environment is built from.

Real: ``ansible-galaxy collection build`` and ``install``, ``ansible-builder create`` (offline: it
only writes the build context), ansible-playbook running the installed collection's fleet_report role.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from testpaths import COLLECTION_ROOT

VENV_BIN = Path(sys.executable).parent
# What a user needs from the collection, and what must stay out of it.
NEEDED = [
    "MANIFEST.json", "README.md", "meta/runtime.yml", "meta/execution-environment.yml", "meta/ee-requirements.txt",
    "meta/ee-galaxy-requirements.yml", "meta/bindep.txt", "plugins/modules/ib_facts.py",
    "plugins/plugin_utils/_fleet_artifact.py", "plugins/filter/fleet_artifact.yml", "roles/fleet_report/tasks/main.yml",
    "playbooks/site.yml", "playbooks/node_remediation.yml", "extensions/awx/configure_controller.yml",
    "extensions/awx/controller_objects.yml", "inventories/example/hosts.yml", "inventories/example/group_vars/ib-a100.yml",
]
LEFT_OUT = ["tests/", "extensions/molecule/", "benchmarks/", "requirements.txt", "scripts/", "tools/", "inventories/demo/",
            "reports/", ".ci/", "build/", ".ansible-lint"]


def run(argv, **kwargs):
    env = dict(os.environ, PATH="%s:%s" % (VENV_BIN, os.environ.get("PATH", "")), ANSIBLE_NOCOLOR="1")
    env.update(kwargs.pop("env", {}))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False, **kwargs)
    return proc


def requirement_pins():
    pins = {}
    for line in (COLLECTION_ROOT / "requirements.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = version.strip()
    return pins


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("collection-build")
    proc = run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(COLLECTION_ROOT)])
    assert proc.returncode == 0, proc.stderr
    (tarball,) = out.glob("rdma-node-*.tar.gz")
    with tarfile.open(tarball) as archive:
        members = [m.name for m in archive.getmembers() if m.isfile()]
        manifest = json.load(archive.extractfile("MANIFEST.json"))
    return {"tarball": tarball, "members": members, "manifest": manifest, "base": out}


def test_the_tarball_holds_what_a_user_needs_and_nothing_else(built):
    members = built["members"]
    assert not [n for n in NEEDED if n not in members], [n for n in NEEDED if n not in members]
    for role in ("ib_inventory", "driver_verify", "node_remediation", "bandwidth_check", "k8s_rdma", "fleet_report"):
        assert "roles/%s/meta/argument_specs.yml" % role in members
    leaked = sorted(m for m in members for prefix in LEFT_OUT if m == prefix or m.startswith(prefix))
    assert leaked == []
    info = built["manifest"]["collection_info"]
    assert (info["namespace"], info["name"]) == ("rdma", "node")
    assert info["dependencies"] == {"kubernetes.core": ">=5.0.0"}


def test_ansible_builder_create_writes_the_build_context(built, tmp_path):
    # The execution environment file reads ../build/rdma-node.tar.gz, as the README's commands leave it.
    layout = tmp_path / "checkout"
    shutil.copytree(COLLECTION_ROOT / "meta", layout / "meta")
    (layout / "build").mkdir()
    shutil.copy(built["tarball"], layout / "build/rdma-node.tar.gz")
    context = tmp_path / "context"
    proc = run([str(VENV_BIN / "ansible-builder"), "create", "-f", str(layout / "meta/execution-environment.yml"),
                "--context", str(context), "--output-filename", "Containerfile"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text()
    pins = requirement_pins()
    # The base image is a build argument; ansible-core and ansible-runner are the versions CI tests.
    assert 'ARG EE_BASE_IMAGE="localhost/rdma-node-ee-base:bookworm"' in containerfile
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner==%s"' % (pins["ansible-core"], pins["ansible-runner"]) in containerfile
    assert "FROM $EE_BASE_IMAGE AS base" in containerfile
    build = context / "_build"
    python_requirements = {line.split(">=")[0].split("==")[0].strip() for line in (build / "requirements.txt").read_text().splitlines()
                           if line.strip() and not line.startswith("#")}
    assert python_requirements == {"tomlkit", "kubernetes"}
    assert (build / "bindep.txt").read_text() == (COLLECTION_ROOT / "meta/bindep.txt").read_text()
    galaxy = yaml.safe_load((build / "requirements.yml").read_text())
    assert {"name": "collections/rdma-node.tar.gz", "type": "file"} in galaxy["collections"]
    assert (build / "collections/rdma-node.tar.gz").read_bytes() == built["tarball"].read_bytes()


@pytest.fixture(scope="module")
def installed(built):
    collections = built["base"] / "installed"
    proc = run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "--force", "-p", str(collections), str(built["tarball"])])
    assert proc.returncode == 0, proc.stderr
    playbook = built["base"] / "report.yml"
    playbook.write_text(
        "- name: Report from the installed collection\n  hosts: localhost\n  gather_facts: false\n"
        "  roles:\n    - role: rdma.node.fleet_report\n      vars:\n        fleet_report_hosts: []\n")
    return {"root": collections / "ansible_collections/rdma/node", "collections": collections, "playbook": playbook}


def report_run(installed, report_dir, cwd):
    return run([str(VENV_BIN / "ansible-playbook"), str(installed["playbook"]), "-e", "fleet_report_dir=%s" % report_dir],
               cwd=str(cwd), env={"ANSIBLE_COLLECTIONS_PATH": str(installed["collections"]),
                                  "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})


def test_no_report_inside_the_installed_collection(installed, tmp_path):
    assert (installed["root"] / "MANIFEST.json").is_file()
    inside = installed["root"] / "reports"
    refused = report_run(installed, inside, tmp_path)
    assert refused.returncode == 2
    assert not inside.exists()
    results = [h for p in json.loads(refused.stdout)["plays"] for t in p["tasks"] for h in t["hosts"].values() if h.get("failed")]
    assert results[0]["msg"] == (
        "rdma.node.write_fleet_report: dir %s is inside the installed collection %s, which an upgrade replaces; expected a "
        "directory outside it (in AWX, a persistent volume mounted into the execution environment)." % (inside, installed["root"]))
    outside = tmp_path / "persistent/reports"
    accepted = report_run(installed, outside, tmp_path)
    assert accepted.returncode == 0, accepted.stdout[-2000:]
    assert sorted(p.name for p in outside.iterdir()) == ["fleet-report.html", "fleet-report.json", "fleet-report.md"]
