"""rdma.node.systemd_limits on a host where systemd really runs (PID 1 of a podman container).

systemd is not PID 1 on this machine, so a Debian 12 container booted with ``--systemd=always``
stands in for a node (ENVIRONMENT.md, "Throwaway hosts"). The module reaches it through the
``containers.podman.podman`` connection, as a playbook would. systemd itself is the oracle:

* ``daemon_reload`` runs and ``effective`` holds what ``systemctl show`` reports;
* the drop-in order the module computes equals systemd's ``DropInPaths``, and the last
  ``overridden_by`` entry is the value systemd uses - across ``/etc``, ``/run``, ``/usr/lib``,
  dash-prefix and type-wide (``service.d``) directories, and a same-named file that hides ours;
* the service started afterwards has the limits in ``/proc/<MainPID>/limits``.

The host is the molecule scenarios' image (``extensions/molecule/build-image.sh``: debootstrap
once per machine, then reused while its inputs are unchanged).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

import harness
from testpaths import COLLECTION_ROOT

UNIT = "rdma-probe.service"
DROPIN = "/etc/systemd/system/rdma-probe.service.d/50-rdma-node-limits.conf"
# The molecule scenarios' host image (Debian 12, systemd as PID 1, the real containerd): built once
# per machine by its own script and cached by the hash of its inputs; one image for both test suites.
MOLECULE = COLLECTION_ROOT / "extensions/molecule"


def tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    assert path, "%s is not installed; scripts/setup.sh installs it" % name
    return path


@pytest.fixture(scope="module")
def podman_env():
    # crun fails on this machine's hybrid cgroups and podman's default ulimits exceed its hard limits.
    return dict(os.environ, CONTAINERS_CONF=str(MOLECULE / "containers.conf"))


def podman(env, *args, check=True, timeout=120):
    return subprocess.run([tool("podman")] + list(args), env=env, capture_output=True, text=True,
                          timeout=timeout, check=check)


@pytest.fixture(scope="module")
def image(podman_env):
    """The molecule hosts' image: built with debootstrap when missing, else reused."""
    proc = subprocess.run([str(MOLECULE / "build-image.sh")], env=podman_env, capture_output=True, text=True,
                          timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


@pytest.fixture
def host(image, podman_env):
    """A booted systemd container with a small service; removed by its name afterwards."""
    name = "rdma-node-memlock-" + uuid.uuid4().hex[:8]
    podman(podman_env, "run", "-d", "--name", name, "--systemd=always", image, "/sbin/init")
    try:
        deadline = time.monotonic() + 60
        while True:
            state = podman(podman_env, "exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
            if state in ("running", "degraded"):
                break
            assert time.monotonic() < deadline, "systemd in %s did not finish booting: %s" % (name, state)
            time.sleep(0.2)
        # Installed where packages put their units (Debian's containerd.service sits there too).
        sh(podman_env, name, "printf '[Service]\\nExecStart=/bin/sleep infinity\\nLimitNOFILE=4096\\n' "
                             "> /usr/lib/systemd/system/%s && systemctl daemon-reload" % UNIT)
        yield name
    finally:
        podman(podman_env, "rm", "--force", "--time", "0", name, check=False)


def sh(env, name, script):
    return podman(env, "exec", name, "sh", "-c", script).stdout


def run_module(env, name, args, check=False):
    """rdma.node.systemd_limits in the container ``name`` over the podman connection; the host's result."""
    return harness.run_module("rdma.node.systemd_limits", args, host=name, check=check, env=env, timeout=180,
                              host_vars={"ansible_connection": "containers.podman.podman",
                                         "ansible_python_interpreter": "/usr/bin/python3"}).result


def show(env, name, *props):
    argv = ["systemctl", "show", UNIT]
    for prop in props:
        argv += ["-p", prop]
    out = podman(env, "exec", name, *argv).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def process_limits(env, name):
    pid = show(env, name, "MainPID")["MainPID"]
    text = sh(env, name, "cat /proc/%s/limits" % pid)
    result = {}
    for line in text.splitlines():
        match = re.match(r"^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if match:
            result[match.group(1)] = (match.group(2), match.group(3))
    return result


def test_reload_effective_and_the_started_service(host, podman_env):
    args = {"unit": "rdma-probe", "limits": {"MEMLOCK": "4M", "NOFILE": 8192}}

    result = run_module(podman_env, host, args, check=True)
    assert result["changed"] is True and result["daemon_reloaded"] is False, result
    # check mode: nothing written, systemd still has the unit's own values
    assert result["effective"]["LimitNOFILE"] == "4096"
    assert sh(podman_env, host, "test -e %s || echo absent" % DROPIN).strip() == "absent"

    result = run_module(podman_env, host, args)
    assert result["changed"] is True and result["daemon_reloaded"] is True, result
    assert result["effective"] == {
        "LimitMEMLOCK": "4194304", "LimitMEMLOCKSoft": "4194304", "LimitNOFILE": "8192", "LimitNOFILESoft": "8192",
    }
    assert result["also_set_in"] == [
        {"path": "/lib/systemd/system/%s" % UNIT, "line": 3, "directive": "LimitNOFILE", "value": "4096"},
    ]
    assert result["dropins"] == [DROPIN] == show(podman_env, host, "DropInPaths")["DropInPaths"].split()
    assert result["unit_file"] == show(podman_env, host, "FragmentPath")["FragmentPath"]

    again = run_module(podman_env, host, args)
    assert again["changed"] is False and again["daemon_reloaded"] is False
    assert again["effective"] == result["effective"]

    # What the service's process gets once started (4 MiB is below this machine's 8 MiB hard limit).
    sh(podman_env, host, "systemctl start %s" % UNIT)
    limits = process_limits(podman_env, host)
    assert limits["Max locked memory"] == ("4194304", "4194304")
    assert limits["Max open files"] == ("8192", "8192")


def test_infinity_is_what_systemd_loads_and_clamped_to_what_it_has(host, podman_env):
    result = run_module(podman_env, host, {"unit": UNIT, "limits": {"LimitMEMLOCK": "unlimited"}})
    assert result["limits"] == {"LimitMEMLOCK": "infinity"}
    assert result["effective"] == {"LimitMEMLOCK": "infinity", "LimitMEMLOCKSoft": "infinity"}
    sh(podman_env, host, "systemctl start %s" % UNIT)
    pid1 = sh(podman_env, host, "grep 'Max locked memory' /proc/1/limits").split()
    # systemd cannot give more than it has itself (no CAP_SYS_RESOURCE in this container).
    assert process_limits(podman_env, host)["Max locked memory"] == (pid1[4], pid1[4])


def test_drop_in_order_agrees_with_systemd(host, podman_env):
    args = {"unit": UNIT, "limits": {"MEMLOCK": "4M"}}
    run_module(podman_env, host, args)
    sh(podman_env, host, " && ".join([
        "mkdir -p /usr/lib/systemd/system/rdma-probe.service.d /run/systemd/system/rdma-probe.service.d "
        "/etc/systemd/system/rdma-.service.d /etc/systemd/system/service.d",
        "printf '[Service]\\nLimitMEMLOCK=1M\\n' > /usr/lib/systemd/system/rdma-probe.service.d/10-vendor.conf",
        "printf '[Service]\\nLimitMEMLOCK=1M\\n' > /usr/lib/systemd/system/rdma-probe.service.d/60-vendor.conf",
        "printf '[Service]\\nLimitMEMLOCK=5M\\n' > /run/systemd/system/rdma-probe.service.d/60-vendor.conf",
        "printf '[Service]\\nLimitMEMLOCK=2M\\n' > /etc/systemd/system/rdma-.service.d/70-prefix.conf",
        "printf '[Service]\\nLimitMEMLOCK=3M\\nLimitMEMLOCK=6M\\n' > /etc/systemd/system/service.d/99-all.conf",
        "systemctl daemon-reload",
    ]))
    result = run_module(podman_env, host, args)
    assert result["changed"] is False
    # Debian's /lib links to usr/lib; systemd names drop-in directories by their resolved path.
    assert result["dropins"] == show(podman_env, host, "DropInPaths")["DropInPaths"].split() == [
        "/usr/lib/systemd/system/rdma-probe.service.d/10-vendor.conf",
        DROPIN,
        "/run/systemd/system/rdma-probe.service.d/60-vendor.conf",
        "/etc/systemd/system/rdma-.service.d/70-prefix.conf",
        "/etc/systemd/system/service.d/99-all.conf",
    ]
    assert [(entry["path"], entry["value"]) for entry in result["overridden_by"]] == [
        ("/run/systemd/system/rdma-probe.service.d/60-vendor.conf", "5M"),
        ("/etc/systemd/system/rdma-.service.d/70-prefix.conf", "2M"),
        ("/etc/systemd/system/service.d/99-all.conf", "6M"),
    ]
    assert [(entry["path"], entry["value"]) for entry in result["also_set_in"]] == [
        ("/usr/lib/systemd/system/rdma-probe.service.d/10-vendor.conf", "1M"),
    ]
    # The last overriding assignment is the value systemd loaded.
    assert result["effective"]["LimitMEMLOCK"] == str(6 * 1024 * 1024)

    # A later name for our drop-in puts it last: nothing overrides it any more.
    moved = run_module(podman_env, host, dict(args, dropin_name="99-zz-rdma-node-limits"))
    assert moved["changed"] is True and moved["overridden_by"] == []
    assert moved["effective"]["LimitMEMLOCK"] == str(4 * 1024 * 1024)


def test_same_name_earlier_on_the_search_path_hides_ours(host, podman_env):
    sh(podman_env, host, "mkdir -p /etc/systemd/system.control/rdma-probe.service.d && printf "
                         "'[Service]\\nLimitMEMLOCK=1M\\n' > /etc/systemd/system.control/rdma-probe.service.d/"
                         "50-rdma-node-limits.conf && systemctl daemon-reload")
    result = run_module(podman_env, host, {"unit": UNIT, "limits": {"MEMLOCK": "4M"}})
    hider = "/etc/systemd/system.control/rdma-probe.service.d/50-rdma-node-limits.conf"
    assert result["masked_by"] == hider
    assert result["dropins"] == show(podman_env, host, "DropInPaths")["DropInPaths"].split() == [hider]
    assert result["effective"]["LimitMEMLOCK"] == "1048576"


def test_absent_reloads_and_systemd_forgets_the_limits(host, podman_env):
    run_module(podman_env, host, {"unit": UNIT, "limits": {"MEMLOCK": "4M", "NOFILE": 8192}})
    result = run_module(podman_env, host, {"unit": UNIT, "state": "absent"})
    assert result["changed"] is True and result["daemon_reloaded"] is True, result
    assert result["effective"]["LimitNOFILE"] == "4096"  # the unit file's own value again
    assert result["effective"]["LimitMEMLOCK"] != "4194304"
    assert sh(podman_env, host, "test -e %s || echo absent" % DROPIN).strip() == "absent"
