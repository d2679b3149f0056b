"""Drop-in rendering, unit file parsing and systemd's drop-in order over temporary root trees."""

from __future__ import annotations

import os

import pytest

from ansible_collections.rdma.node.plugins.module_utils._systemd_dropin import (
    DropinError,
    analyze,
    dropin_filename,
    dropin_path,
    find_unit_file,
    list_dropins,
    normalize_unit,
    parse_systemctl_show,
    parse_unit_text,
    render_dropin,
    unit_section,
)
from ansible_collections.rdma.node.plugins.module_utils._rlimits import parse_systemd_limit
from testpaths import FIXTURES

# Shaped like Debian 12's /lib/systemd/system/containerd.service (containerd 1.6): it sets
# LimitNOFILE=infinity itself, which our drop-in overrides.
CONTAINERD_UNIT = """\
[Unit]
Description=containerd container runtime
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/bin/containerd

Type=notify
Delegate=yes
# Having non-zero Limit*s causes performance problems due to accounting overhead
LimitNPROC=infinity
LimitCORE=infinity
LimitNOFILE=infinity
TasksMax=infinity

[Install]
WantedBy=multi-user.target
"""


def write(root, path, text):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as handle:
        handle.write(text)
    return full


def link(root, path, target):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)
    return full


@pytest.mark.parametrize(
    "unit, expected",
    [
        ("containerd", "containerd.service"),
        ("containerd.service", "containerd.service"),
        (" containerd.service ", "containerd.service"),
        ("docker.socket", "docker.socket"),
        ("home.mount", "home.mount"),
        ("getty@tty1.service", "getty@tty1.service"),
        ("getty@.service", "getty@.service"),
        ("foo.bar", "foo.bar.service"),
    ],
)
def test_normalize_unit(unit, expected):
    assert normalize_unit(unit) == expected


@pytest.mark.parametrize(
    "unit, message",
    [
        ("", "unit must be a unit name such as containerd.service, got ''."),
        (None, "unit must be a unit name such as containerd.service, got None."),
        ("../etc/passwd", "unit '../etc/passwd' is not a valid unit name; use letters, digits and :-_.\\@ only, "
                          "without a path."),
        ("my unit.service", "unit 'my unit.service' is not a valid unit name; use letters, digits and :-_.\\@ only, "
                            "without a path."),
        ("fstrim.timer", "unit fstrim.timer is a .timer unit; Limit* directives only apply to service, socket, "
                         "mount and swap units."),
        ("multi-user.target", "unit multi-user.target is a .target unit; Limit* directives only apply to service, "
                              "socket, mount and swap units."),
    ],
)
def test_normalize_unit_rejects(unit, message):
    with pytest.raises(DropinError) as error:
        normalize_unit(unit)
    assert str(error.value) == message


def test_unit_section():
    assert unit_section("containerd.service") == "Service"
    assert unit_section("docker.socket") == "Socket"
    assert unit_section("swapfile.swap") == "Swap"


def test_dropin_filename():
    assert dropin_filename("50-rdma-node-limits") == "50-rdma-node-limits.conf"
    assert dropin_filename("90-x.conf") == "90-x.conf"
    for bad in ("../x", "a/b", ".hidden", "", None):
        with pytest.raises(DropinError):
            dropin_filename(bad)


def test_dropin_path():
    assert dropin_path("/", "containerd.service", "50-x.conf") == "/etc/systemd/system/containerd.service.d/50-x.conf"
    assert dropin_path("/tmp/r", "containerd.service", "50-x.conf") == (
        "/tmp/r/etc/systemd/system/containerd.service.d/50-x.conf"
    )


def test_render_dropin():
    assert render_dropin("containerd.service", {"LimitMEMLOCK": "infinity", "LimitNOFILE": "1048576"}) == (
        "# Managed by rdma.node.systemd_limits: local changes to this file are overwritten.\n"
        "[Service]\n"
        "LimitMEMLOCK=infinity\n"
        "LimitNOFILE=1048576\n"
    )
    assert render_dropin("docker.socket", {"LimitNOFILE": "1"}).splitlines()[1] == "[Socket]"


def test_parse_unit_text_sections_comments_continuations():
    text = (
        "# comment\n"
        "[Unit]\n"
        "Description = spaced\n"
        "; other comment\n"
        "[Service]\n"
        "LimitMEMLOCK=64M\n"
        "ExecStart=/bin/echo a \\\n"
        "# a comment inside the continuation is skipped\n"
        "  b\n"
        "LimitMEMLOCK= infinity \n"
        "NoEquals\n"
    )
    assert parse_unit_text(text) == [
        ("Unit", "Description", "spaced", 3),
        ("Service", "LimitMEMLOCK", "64M", 6),
        ("Service", "ExecStart", "/bin/echo a  b", 7),
        ("Service", "LimitMEMLOCK", "infinity", 10),
    ]


def test_parse_unit_text_real_shape():
    assignments = parse_unit_text(CONTAINERD_UNIT)
    assert ("Service", "LimitNOFILE", "infinity", 14) in assignments
    assert ("Install", "WantedBy", "multi-user.target", 18) in assignments


def test_parse_systemctl_show():
    assert parse_systemctl_show("LimitMEMLOCK=infinity\nLimitMEMLOCKSoft=8388608\n\n") == {
        "LimitMEMLOCK": "infinity",
        "LimitMEMLOCKSoft": "8388608",
    }


def test_systemctl_show_keeps_an_exec_value_whose_argument_holds_a_newline_whole():
    # systemctl prints the value as it is: the argv of "/bin/echo 'foo<newline>bar'" goes on over the next line.
    shown = parse_systemctl_show("Type=simple\n"
                                 "ExecStart={ path=/bin/echo ; argv[]=/bin/echo foo\n"
                                 "bar ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }\n"
                                 "LimitMEMLOCK=infinity\n"
                                 "Warning: The unit file changed on disk. Run 'systemctl daemon-reload' to reload units.\n")
    assert shown == {"Type": "simple",
                     "ExecStart": "{ path=/bin/echo ; argv[]=/bin/echo foo\nbar ; ignore_errors=no ; start_time=[n/a] ; "
                                  "stop_time=[n/a] ; pid=0 ; code=(null) ; status=0/0 }",
                     "LimitMEMLOCK": "infinity"}


def test_find_unit_file_follows_the_search_path(tmp_path):
    assert find_unit_file(str(tmp_path), "containerd.service") is None
    lib = write(tmp_path, "/lib/systemd/system/containerd.service", CONTAINERD_UNIT)
    assert find_unit_file(str(tmp_path), "containerd.service") == lib
    usr_local = write(tmp_path, "/usr/local/lib/systemd/system/containerd.service", CONTAINERD_UNIT)
    assert find_unit_file(str(tmp_path), "containerd.service") == usr_local
    etc = write(tmp_path, "/etc/systemd/system/containerd.service", CONTAINERD_UNIT)
    assert find_unit_file(str(tmp_path), "containerd.service") == etc
    template = write(tmp_path, "/usr/lib/systemd/system/getty@.service", "[Service]\n")
    assert find_unit_file(str(tmp_path), "getty@tty1.service") == template


def test_list_dropins_order_and_masking(tmp_path):
    """File names sort across directories; the same name earlier on the search path wins."""
    root = str(tmp_path)
    write(root, "/usr/lib/systemd/system/containerd.service", CONTAINERD_UNIT)
    write(root, "/usr/lib/systemd/system/containerd.service.d/10-vendor.conf", "[Service]\n")
    write(root, "/usr/lib/systemd/system/containerd.service.d/60-shared.conf", "[Service]\nLimitMEMLOCK=1\n")
    run_shared = write(root, "/run/systemd/system/containerd.service.d/60-shared.conf", "[Service]\n")
    etc_80 = write(root, "/etc/systemd/system/containerd.service.d/80-local.conf", "[Service]\n")
    write(root, "/usr/lib/systemd/system/containerd.service.d/80-local.conf", "[Service]\n")
    type_wide = write(root, "/usr/lib/systemd/system/service.d/99-all.conf", "[Service]\n")
    masked = link(root, "/etc/systemd/system/containerd.service.d/10-vendor.conf", "/dev/null")
    write(root, "/etc/systemd/system/containerd.service.d/README", "not a drop-in")
    assert os.path.islink(masked)
    assert list_dropins(root, "containerd.service") == [
        ("60-shared.conf", run_shared),
        ("80-local.conf", etc_80),
        ("99-all.conf", type_wide),
    ]


def test_list_dropins_dash_prefix_template_and_extra(tmp_path):
    root = str(tmp_path)
    prefix = write(root, "/etc/systemd/system/foo-.service.d/20-prefix.conf", "[Service]\n")
    template = write(root, "/etc/systemd/system/foo-bar@.service.d/30-template.conf", "[Service]\n")
    planned = os.path.join(root, "etc/systemd/system/foo-bar@x.service.d/50-rdma-node-limits.conf")
    result = list_dropins(root, "foo-bar@x.service", {"50-rdma-node-limits.conf": planned})
    assert result == [
        ("20-prefix.conf", prefix),
        ("30-template.conf", template),
        ("50-rdma-node-limits.conf", planned),
    ]
    assert not os.path.exists(planned)


def test_list_dropins_merged_usr_is_one_directory(tmp_path):
    """On merged-/usr systems /lib links to usr/lib: systemd (252, checked in a Debian 12 container)
    reports such drop-ins by their resolved /usr/lib path, once, while unit files keep /lib."""
    root = str(tmp_path)
    dropin = write(root, "/usr/lib/systemd/system/containerd.service.d/10-a.conf", "[Service]\n")
    unit = write(root, "/usr/lib/systemd/system/containerd.service", "[Service]\n")
    os.symlink("usr/lib", os.path.join(root, "lib"))
    assert list_dropins(root, "containerd.service") == [("10-a.conf", dropin)]
    assert find_unit_file(root, "containerd.service") == os.path.join(root, "lib/systemd/system/containerd.service")
    assert os.path.samefile(find_unit_file(root, "containerd.service"), unit)


OURS = render_dropin("containerd.service", {"LimitMEMLOCK": "infinity", "LimitNOFILE": "1048576"})


def test_analyze_reports_later_dropins_that_win(tmp_path):
    root = str(tmp_path)
    unit = write(root, "/lib/systemd/system/containerd.service", CONTAINERD_UNIT)
    early = write(root, "/run/systemd/system/containerd.service.d/10-early.conf", "[Service]\nLimitMEMLOCK=64K\n")
    late = write(
        root,
        "/usr/lib/systemd/system/containerd.service.d/90-late.conf",
        "[Service]\nLimitMEMLOCK=8M\nLimitMEMLOCK=16M\n[Unit]\nLimitNOFILE=1\n",
    )
    bogus = write(root, "/etc/systemd/system/containerd.service.d/95-typo.conf", "[Service]\nLimitNOFILE=64K\n")
    ours = dropin_path(root, "containerd.service", "50-rdma-node-limits.conf")
    report = analyze(root, "containerd.service", "50-rdma-node-limits.conf", ["LimitMEMLOCK", "LimitNOFILE"], OURS)
    assert report["unit_file"] == unit
    assert report["dropins"] == [early, ours, late, bogus]
    # The last assignment in 90-late.conf wins; its [Unit] LimitNOFILE is not a service setting.
    assert report["overridden_by"] == [{"path": late, "line": 3, "directive": "LimitMEMLOCK", "value": "16M"}]
    assert report["also_set_in"] == [
        {"path": unit, "line": 14, "directive": "LimitNOFILE", "value": "infinity"},
        {"path": early, "line": 2, "directive": "LimitMEMLOCK", "value": "64K"},
    ]
    assert report["masked_by"] is None
    assert report["warnings"] == [
        "%s line 2 sets LimitNOFILE=64K after our drop-in, a value systemd cannot parse and ignores." % bogus,
        "%s line 3 sets LimitMEMLOCK=16M and is applied after our drop-in, so it wins." % late,
    ]


def test_a_hand_written_unlimited_after_our_dropin_is_ignored_by_systemd_so_ours_still_applies(tmp_path):
    """``unlimited`` is our options' alias of ``infinity``; in someone else's file systemd ignores it."""
    root = str(tmp_path)
    sample = (FIXTURES / "systemd" / "elasticsearch8_hand_written_unit_limitmemlock_unlimited.service").read_text()
    write(root, "/etc/systemd/system/elasticsearch8.service", sample)
    line = next(text for text in sample.splitlines() if text.startswith("LimitMEMLOCK="))
    later = write(root, "/etc/systemd/system/elasticsearch8.service.d/override.conf", "[Service]\n%s\n" % line)
    report = analyze(root, "elasticsearch8.service", "50-rdma-node-limits.conf", ["LimitMEMLOCK"], OURS)
    assert report["overridden_by"] == []
    assert report["warnings"] == [
        "%s line 2 sets LimitMEMLOCK=unlimited after our drop-in, a value systemd cannot parse and ignores." % later]
    assert parse_systemd_limit("LimitMEMLOCK", "unlimited")[0] == "infinity"  # our own option keeps the alias


def test_analyze_nothing_overrides(tmp_path):
    root = str(tmp_path)
    write(root, "/lib/systemd/system/containerd.service", CONTAINERD_UNIT)
    write(root, "/etc/systemd/system/containerd.service.d/90-other.conf", "[Service]\nTasksMax=100\n")
    report = analyze(root, "containerd.service", "50-rdma-node-limits.conf", ["LimitMEMLOCK"], OURS)
    assert report["overridden_by"] == [] and report["also_set_in"] == [] and report["warnings"] == []


def test_analyze_same_name_earlier_on_the_path_hides_ours(tmp_path):
    root = str(tmp_path)
    write(root, "/lib/systemd/system/containerd.service", CONTAINERD_UNIT)
    control = write(root, "/etc/systemd/system.control/containerd.service.d/50-rdma-node-limits.conf",
                    "[Service]\nLimitMEMLOCK=64K\n")
    report = analyze(root, "containerd.service", "50-rdma-node-limits.conf", ["LimitMEMLOCK"], OURS)
    assert report["masked_by"] == control
    assert report["warnings"][0] == (
        "%s hides our drop-in %s (same file name, earlier on systemd's search path)."
        % (control, dropin_path(root, "containerd.service", "50-rdma-node-limits.conf"))
    )


def test_analyze_missing_and_masked_units(tmp_path):
    root = str(tmp_path)
    report = analyze(root, "containerd.service", "50-x.conf", ["LimitMEMLOCK"], OURS)
    assert report["unit_file"] is None
    assert report["warnings"] == [
        "No unit file for containerd.service was found under %s; the drop-in takes effect once the unit "
        "is installed." % root
    ]
    masked = link(root, "/etc/systemd/system/containerd.service", "/dev/null")
    report = analyze(root, "containerd.service", "50-x.conf", ["LimitMEMLOCK"], OURS)
    assert report["masked"] and report["unit_file"] == masked
    assert report["warnings"] == [
        "containerd.service is masked (%s links to /dev/null); its limits do not apply." % masked
    ]


def test_analyze_when_removing_reports_no_overrides(tmp_path):
    root = str(tmp_path)
    write(root, "/etc/systemd/system/containerd.service.d/90-late.conf", "[Service]\nLimitMEMLOCK=8M\n")
    report = analyze(root, "containerd.service", "50-x.conf", ["LimitMEMLOCK"], None)
    assert report["overridden_by"] == [] and report["also_set_in"] == []
