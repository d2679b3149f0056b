"""rdma.node.systemd_limits run for real (its main()) against temporary root trees."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.rdma.node.plugins.modules import systemd_limits

UNIT_TEXT = """\
[Unit]
Description=containerd container runtime

[Service]
ExecStart=/usr/bin/containerd
Type=notify
LimitNPROC=infinity
LimitCORE=infinity
LimitNOFILE=infinity

[Install]
WantedBy=multi-user.target
"""
LIMITS = {"MEMLOCK": "infinity", "NOFILE": 1048576}
EXPECTED = (
    "# Managed by rdma.node.systemd_limits: local changes to this file are overwritten.\n"
    "[Service]\n"
    "LimitMEMLOCK=infinity\n"
    "LimitNOFILE=1048576\n"
)


@pytest.fixture
def root(tmp_path):
    unit = tmp_path / "lib/systemd/system/containerd.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(UNIT_TEXT)
    return tmp_path


def dropin(root, name="50-rdma-node-limits.conf"):
    return root / "etc/systemd/system/containerd.service.d" / name


def warnings(result):
    """Warning texts; ansible-core 2.19 reports them as structured events."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings", [])]


def args(root, **extra):
    base = {"unit": "containerd", "limits": LIMITS, "root": str(root)}
    base.update(extra)
    return base


def test_four_steps_check_apply_again_diff(run_module, root):
    path = dropin(root)

    # 1. check mode: a change is reported, nothing is written (not even the directory)
    result = run_module(systemd_limits, args(root), check_mode=True)
    assert result["changed"] is True and not result.failed
    assert not path.parent.exists()
    assert result["path"] == str(path)
    assert result["unit"] == "containerd.service"

    # 2. apply
    result = run_module(systemd_limits, args(root))
    assert result["changed"] is True and result["restart_required"] is True
    assert path.read_text() == EXPECTED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert result["limits"] == {"LimitMEMLOCK": "infinity", "LimitNOFILE": "1048576"}
    assert result["unit_file"] == str(root / "lib/systemd/system/containerd.service")
    assert result["dropins"] == [str(path)]
    assert result["overridden_by"] == []
    # The unit file sets LimitNOFILE itself; our drop-in comes after it and wins.
    assert result["also_set_in"] == [
        {"path": str(root / "lib/systemd/system/containerd.service"), "line": 9,
         "directive": "LimitNOFILE", "value": "infinity"},
    ]
    # Not the node's root: systemd is neither reloaded nor asked.
    assert result["daemon_reloaded"] is False and result["effective"] == {}

    # 3. again: unchanged
    result = run_module(systemd_limits, args(root))
    assert result["changed"] is False and result["restart_required"] is False
    assert path.read_text() == EXPECTED

    # 4. diff of a change
    result = run_module(systemd_limits, args(root, limits={"LimitMEMLOCK": "64M:infinity"}), diff=True)
    assert result["changed"] is True
    assert result["diff"] == {
        "before": EXPECTED,
        "after": EXPECTED.replace("LimitMEMLOCK=infinity\nLimitNOFILE=1048576\n", "LimitMEMLOCK=64M:infinity\n"),
        "before_header": str(path),
        "after_header": str(path),
    }
    assert path.read_text() == result["diff"]["after"]


def test_check_mode_diff_of_a_new_file(run_module, root):
    result = run_module(systemd_limits, args(root), check_mode=True, diff=True)
    assert result["diff"]["before"] == "" and result["diff"]["after"] == EXPECTED
    assert not dropin(root).exists()


def test_reports_a_later_dropin_that_wins(run_module, root):
    late = root / "etc/systemd/system/containerd.service.d/90-local.conf"
    late.parent.mkdir(parents=True)
    late.write_text("[Service]\nLimitMEMLOCK=64K\n")
    result = run_module(systemd_limits, args(root))
    assert result["overridden_by"] == [
        {"path": str(late), "line": 2, "directive": "LimitMEMLOCK", "value": "64K"},
    ]
    assert result["dropins"] == [str(dropin(root)), str(late)]
    assert "%s line 2 sets LimitMEMLOCK=64K and is applied after our drop-in, so it wins." % late in warnings(result)
    # A later name for our own drop-in wins again.
    result = run_module(systemd_limits, args(root, dropin_name="99-rdma-node-limits"))
    assert result["overridden_by"] == []


def test_absent_removes_file_and_directory(run_module, root):
    run_module(systemd_limits, args(root))
    path = dropin(root)
    result = run_module(systemd_limits, {"unit": "containerd.service", "state": "absent", "root": str(root)},
                        check_mode=True, diff=True)
    assert result["changed"] is True and path.exists()
    assert result["diff"]["before"] == EXPECTED and result["diff"]["after"] == ""
    result = run_module(systemd_limits, {"unit": "containerd.service", "state": "absent", "root": str(root)})
    assert result["changed"] is True
    assert not path.exists() and not path.parent.exists()
    result = run_module(systemd_limits, {"unit": "containerd.service", "state": "absent", "root": str(root)})
    assert result["changed"] is False


def test_absent_keeps_a_directory_with_other_dropins(run_module, root):
    run_module(systemd_limits, args(root))
    other = dropin(root, "90-other.conf")
    other.write_text("[Service]\nTasksMax=10\n")
    run_module(systemd_limits, {"unit": "containerd", "state": "absent", "root": str(root)})
    assert not dropin(root).exists() and other.read_text() == "[Service]\nTasksMax=10\n"


def test_missing_unit_is_a_warning_not_an_error(run_module, tmp_path):
    result = run_module(systemd_limits, args(tmp_path))
    assert result["changed"] is True and result["unit_file"] is None
    assert warnings(result) == [
        "No unit file for containerd.service was found under %s; the drop-in takes effect once the unit "
        "is installed." % tmp_path
    ]


def test_our_file_is_overwritten_whole(run_module, root):
    path = dropin(root)
    path.parent.mkdir(parents=True)
    path.write_text("[Service]\nLimitMEMLOCK=64K\nTasksMax=10\n")
    result = run_module(systemd_limits, args(root), diff=True)
    assert result["changed"] is True and path.read_text() == EXPECTED
    assert result["diff"]["before"] == "[Service]\nLimitMEMLOCK=64K\nTasksMax=10\n"


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"limits": {"MEMLOCK": "8m"}},
         "limits.MEMLOCK must be infinity, a size in bytes (suffixes B, K, M, G, T, P, E; 1024-based), or soft:hard "
         "of those, got '8m'."),
        ({"limits": {"MEMLOCK": "2048:1024"}},
         "limits.MEMLOCK has the soft limit 2048 above the hard limit 1024; systemd would ignore it."),
        ({"limits": {"MEMLOCK": -1}}, "limits.MEMLOCK must not be negative, got -1."),
        ({"limits": {"NOFILE": "64K"}},
         "limits.NOFILE must be infinity, a plain number, or soft:hard of those, got '64K'."),
        ({"limits": {"MEMLOK": "infinity"}},
         "limits key 'MEMLOK' is not a systemd resource limit; expected one of LimitCPU, LimitFSIZE, LimitDATA, "
         "LimitSTACK, LimitCORE, LimitRSS, LimitNPROC, LimitNOFILE, LimitMEMLOCK, LimitAS, LimitLOCKS, "
         "LimitSIGPENDING, LimitMSGQUEUE, LimitNICE, LimitRTPRIO, LimitRTTIME (the Limit prefix is optional)."),
        ({"limits": {}}, "limits must name at least one limit (for example MEMLOCK: infinity) when state is present."),
        ({"limits": None}, "limits must name at least one limit (for example MEMLOCK: infinity) when state is present."),
        ({"unit": "fstrim.timer"},
         "unit fstrim.timer is a .timer unit; Limit* directives only apply to service, socket, mount and swap units."),
        ({"unit": "../../etc/passwd"},
         "unit '../../etc/passwd' is not a valid unit name; use letters, digits and :-_.\\@ only, without a path."),
        ({"dropin_name": "../evil"}, "dropin_name '../evil' must be a plain file name (no directories, not hidden, no control characters or NUL)."),
    ],
)
def test_bad_input_changes_nothing(run_module, root, extra, message):
    run_module(systemd_limits, args(root))
    before = dropin(root).read_bytes()
    result = run_module(systemd_limits, args(root, **extra))
    assert result.failed
    assert result["msg"] == message
    assert dropin(root).read_bytes() == before
    assert sorted(p.name for p in dropin(root).parent.iterdir()) == [dropin(root).name]


def test_root_must_exist(run_module, tmp_path):
    result = run_module(systemd_limits, args(tmp_path / "nope"))
    assert result["msg"] == "root %s is not a directory." % (tmp_path / "nope")


def test_socket_unit_gets_a_socket_section(run_module, tmp_path):
    result = run_module(systemd_limits, {"unit": "docker.socket", "limits": {"NOFILE": 1024}, "root": str(tmp_path)})
    path = tmp_path / "etc/systemd/system/docker.socket.d/50-rdma-node-limits.conf"
    assert result["path"] == str(path)
    assert path.read_text().splitlines()[1:] == ["[Socket]", "LimitNOFILE=1024"]


def test_created_and_backup(run_module, root):
    path = dropin(root)
    first = run_module(systemd_limits, args(root, backup=True), check_mode=True)
    assert first["created"] is True and "backup_file" not in first and not path.exists()

    first = run_module(systemd_limits, args(root, backup=True))
    assert first["created"] is True and "backup_file" not in first  # nothing to back up yet
    again = run_module(systemd_limits, args(root, backup=True))
    assert again["changed"] is False and again["created"] is False and "backup_file" not in again

    changed = run_module(systemd_limits, args(root, limits={"MEMLOCK": "64M"}, backup=True))
    assert changed["changed"] is True and changed["created"] is False
    assert open(changed["backup_file"]).read() == EXPECTED
    assert os.path.dirname(changed["backup_file"]) == str(path.parent)
    # systemd reads only *.conf from the drop-in directory, so the backup never applies.
    assert not changed["backup_file"].endswith(".conf")

    removed = run_module(systemd_limits, args(root, state="absent", backup=True))
    assert removed["changed"] is True and removed["created"] is False and not path.exists()
    assert "LimitMEMLOCK=64M" in open(removed["backup_file"]).read()
