"""The demo's inventory plugin, rdma.demo.simulated_nodes, on hostile descriptions (issue 24, items 17, 18).

Run through ansible-inventory as the demo runs it, with ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED (as
scripts/demo.sh sets it): a ``nodes_dir`` that is not one new name inside the inventory's directory,
an existing directory the plugin did not create, or a host name that is not one path component is
refused with one sentence naming the file, and everything planted around the inventory is still there.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from testpaths import COLLECTIONS_PATH, demo_inventory_copy

ANSIBLE_INVENTORY = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")


def inventory_run(source):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS="ignore",
               ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="1", ANSIBLE_NOCOLOR="1")
    return subprocess.run([ANSIBLE_INVENTORY, "-i", str(source), "--list"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def plant(directory):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "precious.txt").write_text("keep me")
    return directory


def everything_planted(base):
    return sorted(str(path.relative_to(base)) for path in base.rglob("precious.txt"))


@pytest.fixture
def project(tmp_path):
    """A project holding the demo inventory and a reports directory, beside a neighbouring project."""
    inventory = demo_inventory_copy(tmp_path / "project" / "inventory")
    (tmp_path / "copied.txt").write_text("\n".join(sorted(p.name for p in inventory.iterdir())))
    plant(tmp_path / "project" / "inventory" / "reports")
    plant(tmp_path / "project" / "inventory" / "reports-2024")
    plant(tmp_path / "project" / "docs")
    plant(tmp_path / "neighbour")
    return tmp_path, inventory / "demo.simulated_nodes.yml"


def describe(description, **changes):
    data = yaml.safe_load(description.read_text())
    data.update(changes)
    description.write_text(yaml.safe_dump(data))


PLANTED = ["neighbour/precious.txt", "project/docs/precious.txt", "project/inventory/reports-2024/precious.txt",
           "project/inventory/reports/precious.txt"]


@pytest.mark.parametrize("nodes_dir, refusal", [
    ("reports", "is a directory that rdma.demo.simulated_nodes did not create"),
    (".", "nodes_dir '.' must be one name inside the inventory's directory"),
    ("..", "nodes_dir '..' must be one name inside the inventory's directory"),
    ("../neighbour", "nodes_dir '../neighbour' must be one name inside the inventory's directory"),
    ("{base}/neighbour", "nodes_dir '{base}/neighbour' must be one name inside the inventory's directory"),
    ("", "nodes_dir '' must be one name inside the inventory's directory"),
])
def test_a_nodes_dir_of_someone_else_is_refused_and_nothing_is_removed(project, nodes_dir, refusal):
    base, description = project
    # An absolute path names a directory the test owns: the code before the fix removed what it named.
    nodes_dir, refusal = nodes_dir.format(base=base), refusal.format(base=base)
    describe(description, nodes_dir=nodes_dir)
    listed = inventory_run(description.parent)
    assert listed.returncode != 0
    assert "%s: " % description in listed.stderr and refusal in listed.stderr, listed.stderr
    assert everything_planted(base) == PLANTED
    # The inventory's directory holds what was copied and planted, and no build of node roots.
    copied = (base / "copied.txt").read_text().split("\n")
    assert "demo.simulated_nodes.yml" in copied and not [name for name in copied if name.startswith(".nodes")]
    assert sorted(p.name for p in description.parent.iterdir()) == sorted(copied + ["reports", "reports-2024"])


@pytest.mark.parametrize("host", ["../escape", "a/b", ".."])
def test_a_host_name_that_is_not_one_path_component_is_refused(project, host):
    base, description = project
    data = yaml.safe_load(description.read_text())
    data["hardware"][host] = data["hardware"].pop("v100-node-01")
    data["node_groups"]["ib-v100"] = [host, "v100-node-02"]
    description.write_text(yaml.safe_dump(data))
    listed = inventory_run(description)
    assert listed.returncode != 0
    assert "%s: hardware: host name %r must be one path component" % (description, host) in listed.stderr, listed.stderr
    assert everything_planted(base) == PLANTED and not (base / "project/inventory/escape").exists()
    assert not [p for p in description.parent.iterdir() if p.name.startswith(".nodes")]


def test_the_default_nodes_dir_builds_beside_the_file_and_keeps_everything_else(project):
    base, description = project
    listed = inventory_run(description)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    assert everything_planted(base) == PLANTED
    assert os.readlink(description.parent / ".nodes").startswith(".nodes-")
