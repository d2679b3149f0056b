"""The archive keeps real trees byte-for-byte; the builder makes trees ibstat would accept."""

from __future__ import annotations

import os

import pytest
import sysfs_tree

from testpaths import FIXTURES


def snapshot(root):
    """Every entry of a tree: symlinks by target, files by bytes, directories by presence."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[rel] = ("dir",)
            else:
                with open(path, "rb") as handle:
                    found[rel] = ("file", handle.read())
    return found


def test_round_trip_keeps_dangling_links_empty_dirs_and_missing_newlines(tmp_path):
    src = tmp_path / "src"
    (src / "class/infiniband/mlx5_0/ports/1/counters").mkdir(parents=True)
    (src / "class/infiniband/mlx5_0/node_guid").write_bytes(b"0a7f:bc12:45ef:d23b")
    (src / "class/infiniband/mlx5_0/fw_ver").write_bytes(b"16.35.2000\n\n")
    os.symlink("../../devices/gone", str(src / "class/infiniband/mlx5_9"))
    data = sysfs_tree.pack(str(src))
    sysfs_tree.unpack(data, str(tmp_path / "copy"))
    assert snapshot(str(tmp_path / "copy")) == snapshot(str(src))
    assert sysfs_tree.pack(str(tmp_path / "copy")) == data


def test_shipped_fixture_unpacks(tmp_path):
    count = sysfs_tree.unpack((FIXTURES / "sysfs/prometheus-procfs.sysfs").read_bytes(), str(tmp_path))
    assert count > 100
    assert (tmp_path / "class/infiniband/mlx5_0/node_guid").read_bytes() == b"0a7f:bc12:45ef:d23b"


@pytest.mark.parametrize("data, message", [
    (b"not an archive\n", "not a sysfs archive"),
    (sysfs_tree.ARCHIVE_MAGIC.encode() + b"\nF ../escape\t1\nx\n", "leaves the destination"),
    (sysfs_tree.ARCHIVE_MAGIC.encode() + b"\nX what\n", "unknown record"),
])
def test_bad_archives_are_refused(tmp_path, data, message):
    with pytest.raises(sysfs_tree.ArchiveError, match=message):
        sysfs_tree.unpack(data, str(tmp_path / "dest"))
    assert not (tmp_path / "escape").exists()


def test_cli_reports_bad_input_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.sysfs"
    bad.write_bytes(b"nope\n")
    assert sysfs_tree.main(["unpack", str(bad), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a sysfs archive" in err


def test_builder_links_like_the_kernel(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.port(tree.hca("mlx5_0", "0000:3b:00.0"), 1)
    tree.netdev("ibp59s0", "0000:3b:00.0", kind=sysfs_tree.ARPHRD_INFINIBAND)
    assert os.readlink(str(tmp_path / "class/infiniband/mlx5_0")) == "../../devices/pci0000:3b/0000:3b:00.0/infiniband/mlx5_0"
    assert os.path.realpath(str(tmp_path / "class/net/ibp59s0/device")) == str(tmp_path / "devices/pci0000:3b/0000:3b:00.0")
    assert os.path.basename(os.readlink(str(tmp_path / "class/infiniband/mlx5_0/device/driver"))) == "mlx5_core"


def test_cli_bad_archive_leaves_the_old_tree(tmp_path, capsys):
    old = tmp_path / "tree"
    old.mkdir()
    (old / "kept").write_text("x")
    bad = tmp_path / "bad.sysfs"
    bad.write_bytes(sysfs_tree.ARCHIVE_MAGIC.encode() + b"\nD a\nX what\n")
    assert sysfs_tree.main(["unpack", str(bad), str(old)]) == 1
    assert "unknown record" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sysfs", "tree"]
    assert (old / "kept").read_text() == "x"


def test_cli_bad_hardware_yaml_is_one_line(tmp_path, capsys):
    bad = tmp_path / "hardware.yml"
    bad.write_text("a: [\n")
    assert sysfs_tree.main(["build", str(bad), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not valid YAML" in err
    assert not (tmp_path / "out").exists()
