"""The archive keeps real trees byte-for-byte; the builder makes trees ibstat would accept."""

from __future__ import annotations

import os

import pytest
import sysfs_tree
import yaml

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


def test_h100_fixture_is_the_shared_tree_byte_for_byte(tmp_path):
    """The archive holds what the gpud tree holds: 9 devices, 21 counters per port, no newlines."""
    sysfs_tree.unpack((FIXTURES / "sysfs/gpud-h100.sysfs").read_bytes(), str(tmp_path))
    devices = sorted(os.listdir(tmp_path / "class/infiniband"))
    assert devices == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    assert (tmp_path / "class/infiniband/mlx5_1/ports/1/counters/link_downed").read_bytes() == b"255"
    assert all(len(os.listdir(tmp_path / "class/infiniband" / d / "ports/1/counters")) == 21 for d in devices)


def test_builder_pci_paths_links_and_gpus(tmp_path):
    tree = sysfs_tree.TreeBuilder(str(tmp_path))
    tree.hca("mlx5_0", "0000:1a:00.0", bridges=["0000:17:00.0", "0000:18:00.0"],
             pcie={"current_speed": "16.0 GT/s PCIe", "max_width": 16})
    tree.gpu("0000:1b:00.0", numa_node=1, bridges=["0000:17:00.0", "0000:18:00.0"])
    pci = tmp_path / "devices/pci0000:17/0000:17:00.0/0000:18:00.0/0000:1a:00.0"
    assert (pci / "current_link_speed").read_text() == "16.0 GT/s PCIe\n"
    assert (pci / "max_link_width").read_text() == "16\n"
    assert os.path.realpath(tmp_path / "bus/pci/devices/0000:1a:00.0") == str(pci)
    gpu = tmp_path / "bus/pci/devices/0000:1b:00.0"
    assert [(gpu / name).read_text() for name in ("vendor", "class", "numa_node")] == ["0x10de\n", "0x030200\n", "1\n"]
    assert (tmp_path / "devices/pci0000:17/0000:17:00.0/class").read_text() == "0x060400\n"  # a bridge


def test_later_sample_only_where_the_hardware_gives_one(tmp_path):
    hardware = tmp_path / "hardware.yml"
    hardware.write_text("""
steady:
  devices:
    mlx5_0: {bdf: "0000:3b:00.0", ports: {1: {counters: {symbol_error: 0}}}}
rising:
  devices:
    mlx5_0: {bdf: "0000:3b:00.0", ports: {1: {counters: {symbol_error: 5, link_downed: 1},
                                              counters_later: {symbol_error: 9}}}}
""")
    sysfs_tree.build_hardware_file(str(hardware), str(tmp_path / "nodes"))
    assert not (tmp_path / "nodes/steady/later").exists()
    counters = "sys/class/infiniband/mlx5_0/ports/1/counters"
    now = snapshot(tmp_path / "nodes/rising/sys")
    later = snapshot(tmp_path / "nodes/rising/later/sys")
    assert set(now) == set(later)
    assert {path for path in now if now[path] != later[path]} == {
        "devices/pci0000:3b/0000:3b:00.0/infiniband/mlx5_0/ports/1/counters/symbol_error"}
    assert (tmp_path / "nodes/rising/later" / counters / "symbol_error").read_text() == "9\n"
    assert (tmp_path / "nodes/rising/later" / counters / "link_downed").read_text() == "1\n"


def test_ensure_built_builds_once_per_description_and_swaps_atomically(tmp_path):
    demo = yaml.safe_load((FIXTURES.parent.parent / "inventories/demo/demo.simulated_nodes.yml").read_text())["hardware"]
    hosts = {name: spec for name, spec in demo.items() if name in ("v100-node-02", "a100-node-02")}
    link = tmp_path / ".nodes"
    assert sysfs_tree.ensure_built(hosts, str(link)) is True
    first = os.readlink(link)
    assert link.is_symlink() and sorted(p.name for p in link.iterdir()) == [sysfs_tree.BUILD_MARKER, "a100-node-02", "v100-node-02"]
    assert (link / "v100-node-02/sys/class/infiniband/mlx5_1/ports/1/phys_state").read_text() == "2: Polling\n"
    # The node's containerd config names paths through the link, where the node is used.
    assert 'address = "%s/v100-node-02/run/containerd.sock"' % link in (link / "v100-node-02/etc/containerd/config.toml").read_text()
    assert sysfs_tree.ensure_built(hosts, str(link)) is False and os.readlink(link) == first
    changed = dict(hosts, **{"v100-node-02": dict(hosts["v100-node-02"], gpus=[])})
    assert sysfs_tree.ensure_built(changed, str(link)) is True
    assert os.readlink(link) != first
    assert sorted(p.name for p in tmp_path.iterdir()) == [".nodes", os.readlink(link)]  # the old build and no staging left


def test_a_node_root_too_deep_for_a_socket_gets_a_short_socket_directory(tmp_path):
    shallow = str(tmp_path / "n1")
    assert sysfs_tree.containerd_sockets(shallow) == (shallow + "/run/containerd.sock", shallow + "/run/containerd.ttrpc")
    deep = str(tmp_path / ("d" * 80) / "n1")
    grpc, ttrpc = sysfs_tree.containerd_sockets(deep)
    assert grpc.startswith("/tmp/rdma-node-") and len(ttrpc) <= 104
    assert sysfs_tree.containerd_sockets(deep + "x") != (grpc, ttrpc)  # one directory per node root
    assert 'address = "%s"' % grpc in sysfs_tree.containerd_config(deep)


@pytest.mark.parametrize("length", [104, 105, 106, 107])
def test_no_socket_path_is_longer_than_containerd_takes(length):
    """containerd refuses a unix socket path over 104 bytes ("unix socket path too long (> 104)"):
    a node root whose ttrpc socket would be 105-107 bytes long gets the short directory too."""
    suffix = "/run/containerd.ttrpc"
    root = "/tmp/" + "n" * (length - len(suffix) - len("/tmp/"))
    assert len(root + suffix) == length
    grpc, ttrpc = sysfs_tree.containerd_sockets(root)
    assert len(ttrpc) <= 104 and len(grpc) <= 104
    assert (ttrpc == root + suffix) is (length <= 104)
