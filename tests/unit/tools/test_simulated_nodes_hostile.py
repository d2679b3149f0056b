"""The simulator never deletes or writes what it did not create (issue 24, items 17 and 18).

``ensure_built`` builds the node roots in ``<nodes_dir>-<hash>`` beside the inventory file, points
``<nodes_dir>`` at it, and removes older builds. Whatever ``nodes_dir`` and the host names say, it
refuses, with one sentence, anything but a name of its own in the inventory's directory, and removes
only directories that carry its marker. Each case plants what a careless or hostile description would
destroy, and checks it is still there, byte for byte.
"""

from __future__ import annotations

import os

import pytest
import sysfs_tree

ONE_HOST = {"n1": {"devices": {"mlx5_0": {"bdf": "0000:3b:00.0", "ports": {1: {"port_guid": "b859:9f03:00d4:0a31"}}}}}}


def plant(directory, text="keep me"):
    """A directory that is someone else's: one file inside."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "precious.txt").write_text(text)
    return directory


def intact(directory, text="keep me"):
    return (directory / "precious.txt").read_text() == text


@pytest.fixture
def inventory(tmp_path):
    """An inventory directory inside a project, beside a neighbouring project."""
    inventory = plant(tmp_path / "project" / "inventory")
    plant(tmp_path / "neighbour")
    return inventory


@pytest.mark.parametrize("nodes_dir", [".", "..", "../neighbour", "", "a/b", "{base}/neighbour", "x\x00y"])
def test_a_nodes_dir_that_is_not_one_new_name_is_refused(inventory, nodes_dir):
    nodes_dir = nodes_dir.format(base=inventory.parent.parent)  # absolute, but the test's own directory
    with pytest.raises(sysfs_tree.ArchiveError, match="nodes_dir"):
        sysfs_tree.node_roots_link(str(inventory), nodes_dir)
    assert intact(inventory) and intact(inventory.parent.parent / "neighbour")


@pytest.mark.parametrize("link", [".", ".."])
def test_the_inventory_and_its_parent_are_never_emptied(inventory, link):
    with pytest.raises(sysfs_tree.ArchiveError):
        sysfs_tree.ensure_built(ONE_HOST, os.path.join(str(inventory), link))
    assert intact(inventory) and intact(inventory.parent.parent / "neighbour")


def test_an_existing_directory_of_someone_else_is_refused_and_its_siblings_kept(inventory):
    reports = plant(inventory / "reports")
    older = plant(inventory / "reports-2024")
    looks_like_a_build = plant(inventory / "reports-0123456789abcdef")
    with pytest.raises(sysfs_tree.ArchiveError, match="did not create"):
        sysfs_tree.ensure_built(ONE_HOST, str(inventory / "reports"))
    assert intact(reports) and intact(older) and intact(looks_like_a_build)
    assert sorted(p.name for p in inventory.iterdir()) == ["precious.txt", "reports", "reports-0123456789abcdef", "reports-2024"]


def test_a_symlink_of_someone_else_is_refused_and_its_target_kept(inventory, tmp_path):
    elsewhere = plant(tmp_path / "elsewhere")
    (inventory / ".nodes").symlink_to(elsewhere)
    with pytest.raises(sysfs_tree.ArchiveError, match="did not create"):
        sysfs_tree.ensure_built(ONE_HOST, str(inventory / ".nodes"))
    assert intact(elsewhere) and os.readlink(inventory / ".nodes") == str(elsewhere)


def test_a_rebuild_removes_only_its_own_marked_builds(inventory):
    link = inventory / ".nodes"
    assert sysfs_tree.ensure_built(ONE_HOST, str(link)) is True
    first = os.readlink(link)
    assert (inventory / first / sysfs_tree.BUILD_MARKER).is_file()
    unmarked = plant(inventory / ".nodes-fedcba9876543210")  # a build's name, not its marker
    backup = plant(inventory / ".nodes-backup")
    changed = {"n1": dict(ONE_HOST["n1"], gpus=[{"bdf": "0000:5f:00.0"}])}
    assert sysfs_tree.ensure_built(changed, str(link)) is True
    assert not (inventory / first).exists()  # the older build: marked, so removed
    assert intact(unmarked) and intact(backup)
    assert sorted(p.name for p in inventory.iterdir()) == sorted(
        [".nodes", os.readlink(link), ".nodes-backup", ".nodes-fedcba9876543210", "precious.txt"])


@pytest.mark.parametrize("host", ["../escape", "a/b", ".", "..", "", "x\x00y", "n" * 256])
def test_a_host_name_must_be_one_path_component(inventory, host):
    with pytest.raises(sysfs_tree.ArchiveError, match="one path component"):
        sysfs_tree.ensure_built({host: ONE_HOST["n1"]}, str(inventory / ".nodes"))
    assert sorted(p.name for p in inventory.iterdir()) == ["precious.txt"]
    assert sorted(p.name for p in inventory.parent.iterdir()) == ["inventory"]


@pytest.mark.parametrize("host", ["../escape", "a/b"])
def test_the_command_line_build_refuses_a_host_name_with_a_slash(tmp_path, host):
    with pytest.raises(sysfs_tree.ArchiveError, match="one path component"):
        sysfs_tree.build_hosts({host: ONE_HOST["n1"]}, str(tmp_path / "nodes"))
    assert not (tmp_path / "escape").exists() and not (tmp_path / "nodes").exists()
