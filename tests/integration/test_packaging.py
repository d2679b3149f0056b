"""What a user installs and what an execution environment is built from.

Real: ``ansible-galaxy collection build`` and ``install``, ``ansible-builder create`` (offline: it
only writes the build context), ``ansible-builder introspect`` on the installed collection (what the image
build runs to find each collection's Python and system requirements), ansible-playbook running the
installed collection's fleet_report role.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from testpaths import COLLECTION_ROOT

VENV_BIN = Path(sys.executable).parent
# What a user needs from the collection, and what must stay out of it.
NEEDED = [
    "MANIFEST.json", "README.md", "meta/runtime.yml", "meta/execution-environment.yml", "meta/ee-requirements.txt",
    "meta/bindep.txt", "plugins/modules/ib_facts.py",
    "plugins/plugin_utils/_fleet_artifact.py", "plugins/filter/fleet_artifact.yml", "roles/fleet_report/tasks/main.yml",
    "playbooks/site.yml", "playbooks/node_remediation.yml", "extensions/awx/configure_controller.yml",
    "extensions/awx/controller_objects.yml", "inventories/example/hosts.yml", "inventories/example/group_vars/ib-a100.yml",
]
LEFT_OUT = ["tests/", "extensions/molecule/", "extensions/ee/", "benchmarks/", "requirements.txt", "requirements-demo.txt",
            "requirements-ansible-2.21.txt", "CONTRIBUTING.md", "scripts/", "tools/", "inventories/demo/", "reports/", ".ci/", "build/",
            ".ansible-lint"]


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


def test_the_tarball_ships_no_part_of_the_demo_simulator(built):
    """The simulated nodes (inventory plugin, tree builder, containerd script) are the development
    collection rdma.demo's, under tools/collections: nothing of them reaches a user's installation."""
    simulator = ("simulated_nodes", "sysfs_tree", "simulated_containerd")
    shipped = sorted(m for m in built["members"] if any(name in m for name in simulator))
    assert shipped == [], shipped
    assert not [m for m in built["members"] if m.startswith("plugins/inventory/")]
    names = [entry["name"] for entry in json.loads(tarfile.open(built["tarball"]).extractfile("FILES.json").read())["files"]]
    assert not [n for n in names if any(name in n for name in simulator)]


def test_ansible_builder_create_writes_the_build_context(built, tmp_path):
    # The build definition reads ../../build/rdma-node.tar.gz, where the README's commands leave it in a checkout.
    layout = tmp_path / "checkout"
    shutil.copytree(COLLECTION_ROOT / "extensions/ee", layout / "extensions/ee")
    (layout / "build").mkdir()
    shutil.copy(built["tarball"], layout / "build/rdma-node.tar.gz")
    context = tmp_path / "context"
    proc = run([str(VENV_BIN / "ansible-builder"), "create", "-f", str(layout / "extensions/ee/execution-environment.yml"),
                "--context", str(context), "--output-filename", "Containerfile"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text()
    steps = containerfile.splitlines()
    pins = requirement_pins()
    # The base image is a build argument; ansible-core and ansible-runner are the versions CI tests.
    assert 'ARG EE_BASE_IMAGE="localhost/rdma-node-ee-base:bookworm"' in steps
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner==%s"' % (pins["ansible-core"], pins["ansible-runner"]) in steps
    assert "FROM $EE_BASE_IMAGE AS base" in steps
    # The galaxy stage installs the collection tarball (ansible-galaxy adds kubernetes.core, its dependency);
    # the builder stage copies the installed collections in and introspects them for their requirements.
    galaxy_install = ('RUN ANSIBLE_GALAXY_DISABLE_GPG_VERIFY=1 ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS '
                      '-r requirements.yml --collections-path "/usr/share/ansible/collections"')
    builder = steps.index("FROM base AS builder")
    final = steps.index("FROM base AS final")
    assert steps.index(galaxy_install) < builder
    introspect = [n for n, step in enumerate(steps) if "/output/scripts/introspect.py introspect" in step]
    assert len(introspect) == 1 and builder < introspect[0] < final
    assert builder < steps.index("COPY --from=galaxy /usr/share/ansible /usr/share/ansible") < introspect[0]
    # Nothing listed by hand beside the collections' own metadata: no user pip or bindep file.
    assert steps[introspect[0]] == ("RUN $PYCMD /output/scripts/introspect.py introspect "
                                    "--write-bindep=/tmp/src/bindep.txt --write-pip=/tmp/src/requirements.txt")
    build = context / "_build"
    assert not (build / "requirements.txt").exists() and not (build / "bindep.txt").exists()
    assert final < steps.index("RUN /output/scripts/install-from-bindep && rm -rf /output/wheels")
    galaxy = yaml.safe_load((build / "requirements.yml").read_text())
    assert galaxy == {"collections": [{"name": "collections/rdma-node.tar.gz", "type": "file"}]}
    assert (build / "collections/rdma-node.tar.gz").read_bytes() == built["tarball"].read_bytes()
    # The introspection script in the context is the one the next test runs on the installed collection.
    assert (build / "scripts/introspect.py").is_file()


@pytest.fixture(scope="module")
def introspected(built):
    """The built collection installed as the image's galaxy stage installs it, then ansible-builder's introspection.

    kubernetes.core (rdma.node's Galaxy dependency) comes from the installed ``ansible`` package, as in
    scripts/build-ee.sh: its directory is an installed collection (MANIFEST.json at its root).
    """
    collections = built["base"] / "ee-collections"
    proc = run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force",
                "-p", str(collections), str(built["tarball"])])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    import ansible_collections.kubernetes.core as kubernetes_core  # pylint: disable=import-outside-toplevel

    shutil.copytree(list(kubernetes_core.__path__)[0], collections / "ansible_collections/kubernetes/core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    pip_out, bindep_out = built["base"] / "introspect-requirements.txt", built["base"] / "introspect-bindep.txt"
    proc = run([str(VENV_BIN / "ansible-builder"), "introspect", "--sanitize", str(collections),
                "--write-pip", str(pip_out), "--write-bindep", str(bindep_out)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"python": pip_out.read_text().splitlines(), "system": bindep_out.read_text().splitlines(),
            "stdout": proc.stdout, "root": collections / "ansible_collections/rdma/node"}


def from_collection(lines, collection):
    """The requirement lines that introspection attributes to a collection (``<line>  # from collection <name>``)."""
    suffix = "  # from collection %s" % collection
    return [line[:-len(suffix)] for line in lines if line.endswith(suffix)]


def test_introspection_finds_the_collections_python_and_system_requirements(built, introspected):
    # What the image's builder stage writes to /tmp/src/requirements.txt and bindep.txt (the same code).
    declared = yaml.safe_load((introspected["root"] / "meta/execution-environment.yml").read_text())["dependencies"]
    assert {"meta/ee-requirements.txt", "meta/bindep.txt"} <= set(built["members"])
    assert declared == {"python": "meta/ee-requirements.txt", "system": "meta/bindep.txt"}
    python = {canonicalize_name(Requirement(line).name): line for line in from_collection(introspected["python"], "rdma.node")}
    assert sorted(python) == ["jmespath", "kubernetes", "tomlkit"]
    assert all(Requirement(line).specifier for line in python.values())  # a lower bound each
    # kubernetes.core asks for the kubernetes library too (its modules); rdma.node asks for it for its own action.
    assert "kubernetes" in {canonicalize_name(Requirement(line).name) for line in from_collection(introspected["python"], "kubernetes.core")}
    assert from_collection(introspected["system"], "rdma.node") == [
        "openssh-client [platform:dpkg]", "openssh-clients [platform:rpm]", "sshpass [platform:dpkg platform:rpm]"]
    # Every line comes from an installed collection, and nothing else is introspected.
    assert {line.rsplit("# from collection ", 1)[1] for line in introspected["python"] + introspected["system"]} == {"rdma.node", "kubernetes.core"}


def test_the_declared_python_requirements_cover_what_the_plugins_import():
    """Every third-party library the collection's plugins import is ansible-core's or in meta/ee-requirements.txt."""
    distributions = importlib.metadata.packages_distributions()
    core = {canonicalize_name("ansible-core")} | {canonicalize_name(Requirement(r).name) for r in importlib.metadata.requires("ansible-core")}
    declared = {canonicalize_name(Requirement(line.split("#", 1)[0]).name)
                for line in (COLLECTION_ROOT / "meta/ee-requirements.txt").read_text().splitlines() if line.split("#", 1)[0].strip()}
    needed = {}
    for source in (COLLECTION_ROOT / "plugins").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top == "ansible_collections":
                    continue
                for distribution in distributions.get(top, [top]):
                    needed.setdefault(canonicalize_name(distribution), set()).add(source.relative_to(COLLECTION_ROOT).as_posix())
    assert {"tomlkit", "jmespath", "jinja2"} <= set(needed)  # the scan sees the imports it is meant to see
    missing = {name: sorted(files) for name, files in needed.items() if name not in core | declared}
    assert missing == {}
    assert declared <= set(needed), "meta/ee-requirements.txt lists libraries no plugin imports: %s" % sorted(declared - set(needed))


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
