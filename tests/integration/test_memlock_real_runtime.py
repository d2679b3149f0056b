"""Memlock remediation against the real parts of this machine.

* ``rdma.node.oci_rlimits`` runs through ``ansible`` (AnsiballZ, as on a node) and starts from the
  real ``ctr oci spec`` of Debian's containerd 1.6.
* The spec it wrote runs a container with the real runtime - ``runc run`` with the spec as bundle
  config, and ``ctr run --config`` against a private containerd daemon - and the container reports
  ``ulimit -l`` = 4096. This machine's hard memlock limit is 8 MiB and it has no CAP_SYS_RESOURCE
  (see ENVIRONMENT.md), so 4 MiB is the largest value that can be proven applied; the unlimited spec
  is checked for its exact values and for runc's reaction to them.
* ``rdma.node.systemd_limits`` writes a drop-in for a copy of the packaged ``containerd.service``
  that ``systemd-analyze verify`` accepts with empty stderr, and the value checks agree with
  systemd's own parser.
* Read-only directories are real read-only bind mounts in a private mount namespace (``unshare -m``).

Nothing here is faked. Every tool is required: a missing one fails the test (``scripts/setup.sh``
installs them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils._rlimits import (
    RLIM_INFINITY,
    RlimitError,
    normalize_systemd_limits,
)
from ansible_collections.rdma.node.plugins.module_utils._systemd_dropin import render_dropin
from harness import run_module

PACKAGED_UNIT = Path("/lib/systemd/system/containerd.service")
FOUR_MIB = 4 * 1024 * 1024
# The hard RLIMIT_NOFILE of this machine is 20000, so the 1048576 floor cannot be applied for real
# either; the runtime tests set NOFILE themselves (which also switches the floor off).
NOFILE_FOR_RUNS = 16384
PROBE = 'ulimit -l; ulimit -Hl; while read -r line; do echo "$line"; done < /proc/self/limits'


def tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    assert path, "%s is not installed; scripts/setup.sh installs it" % name
    return path


def ansible_module(name: str, args: dict, check: bool = False, diff: bool = False, wrapper=()) -> dict:
    """Run ``rdma.node.<name>`` on localhost through the ansible CLI; return the host's result."""
    return run_module("rdma.node.%s" % name, args, check=check, diff=diff, wrapper=wrapper, timeout=180).result


def read_only(directory: Path) -> list:
    """A command prefix that runs the rest with ``directory`` bind-mounted read-only (private namespace)."""
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    return [tool("unshare"), "-m", "sh", "-c", script, "sh", str(directory)]


def ctr_default_spec() -> dict:
    out = subprocess.run([tool("ctr"), "oci", "spec"], capture_output=True, text=True, check=True, timeout=60).stdout
    return json.loads(out)


def without_rlimits(spec: dict) -> dict:
    spec = json.loads(json.dumps(spec))
    spec["process"].pop("rlimits", None)
    return spec


# --------------------------------------------------------------------------------------------------
# A minimal root file system and the two ways of running a container
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rootfs(tmp_path_factory):
    """The node's own /bin/sh (dash) and the libraries ``ldd`` names, nothing else."""
    root = tmp_path_factory.mktemp("rootfs")
    shell = os.path.realpath("/bin/sh")
    ldd = subprocess.run(["ldd", shell], capture_output=True, text=True, check=True).stdout
    files = [shell] + re.findall(r"(/\S+) \(0x", ldd)
    for source in files:
        target = root / source.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(source), target)
    (root / "bin").mkdir(exist_ok=True)
    if not (root / "bin/sh").exists():
        os.symlink(shell, root / "bin/sh")
    for mount_point in ("proc", "dev", "sys", "run", "tmp"):
        (root / mount_point).mkdir(exist_ok=True)
    return root


def container_config(spec_path: Path, rootfs: Path, name: str) -> dict:
    """The written spec, plus only what a run needs: the command, the root file system, a cgroup name."""
    config = json.loads(spec_path.read_text())
    config["process"]["args"] = ["/bin/sh", "-c", PROBE]
    config["process"]["terminal"] = False
    config["root"] = {"path": str(rootfs), "readonly": True}
    config["linux"]["cgroupsPath"] = "/" + name
    return config


def runc_run(config: dict, workdir: Path, name: str) -> subprocess.CompletedProcess:
    bundle = workdir / ("bundle-" + name)
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps(config, indent=2))
    state = workdir / "runc-state"
    try:
        return subprocess.run(
            [tool("runc"), "--root", str(state), "run", "--bundle", str(bundle), name],
            capture_output=True, text=True, timeout=60, check=False,
        )
    finally:
        subprocess.run([tool("runc"), "--root", str(state), "delete", "--force", name],
                       capture_output=True, check=False, timeout=60)


def limits_of(output: str) -> dict:
    """``Max locked memory`` -> (soft, hard) from a /proc/<pid>/limits listing."""
    result = {}
    for line in output.splitlines():
        match = re.match(r"^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line)
        if match:
            result[match.group(1)] = (match.group(2), match.group(3))
    return result


@pytest.fixture
def private_containerd():
    """A containerd daemon of our own (temp root/state/socket, CRI off), stopped by its pid afterwards."""
    base = Path(tempfile.mkdtemp(prefix="rdma-ctd-"))
    address = base / "c.sock"
    config = base / "config.toml"
    config.write_text(
        'version = 2\nroot = "%s"\nstate = "%s"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        '[grpc]\n  address = "%s"\n[ttrpc]\n  address = "%s.ttrpc"\n[debug]\n  address = "%s"\n'
        % (base / "root", base / "state", address, address, base / "debug.sock")
    )
    log = open(base / "containerd.log", "w")
    daemon = subprocess.Popen([tool("containerd"), "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not address.exists():
            assert daemon.poll() is None, (base / "containerd.log").read_text()
            assert time.monotonic() < deadline, "containerd did not open %s" % address
            time.sleep(0.05)
        yield str(address)
    finally:
        # Shims started for our containers carry our socket path on their command line.
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == daemon.pid:
                continue
            try:
                cmdline = Path("/proc", pid, "cmdline").read_bytes()
            except OSError:
                continue
            if str(address).encode() in cmdline:
                os.kill(int(pid), signal.SIGKILL)
        daemon.terminate()
        try:
            daemon.wait(timeout=15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=15)
        log.close()
        for line in reversed(Path("/proc/self/mountinfo").read_text().splitlines()):
            mount_point = line.split()[4]
            if mount_point.startswith(str(base)):
                subprocess.run(["umount", "-l", mount_point], check=False)
        shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# oci_rlimits: ctr oci spec -> module -> real runtime
# --------------------------------------------------------------------------------------------------


def test_ctr_spec_four_steps_and_runc_applies_4mib(tmp_path, rootfs):
    tool("ctr")
    spec = tmp_path / "base-runtime-spec.json"
    args = {
        "path": str(spec),
        "rlimits": [
            {"type": "RLIMIT_MEMLOCK", "soft": "4M", "hard": "4M"},
            {"type": "RLIMIT_NOFILE", "soft": NOFILE_FOR_RUNS, "hard": NOFILE_FOR_RUNS},
        ],
    }

    # 1. check mode: the file would be created from ctr oci spec; nothing is written
    result = ansible_module("oci_rlimits", args, check=True)
    assert result["changed"] is True and result["created"] is True, result
    assert not spec.exists()

    # 2. apply (with diff): created from the node's own default spec, plus the rlimits
    result = ansible_module("oci_rlimits", args, diff=True)
    assert result["changed"] is True and result["created"] is True, result
    written = json.loads(spec.read_text())
    assert without_rlimits(written) == without_rlimits(ctr_default_spec())
    assert written["process"]["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "hard": NOFILE_FOR_RUNS, "soft": NOFILE_FOR_RUNS},
        {"type": "RLIMIT_MEMLOCK", "hard": FOUR_MIB, "soft": FOUR_MIB},
    ]
    assert result["nofile_raised"] is False
    assert result["diff"]["before"] == "" and result["diff"]["after"] == spec.read_text()

    # 3. again: nothing to change
    before = spec.read_bytes()
    result = ansible_module("oci_rlimits", args)
    assert result["changed"] is False, result
    assert spec.read_bytes() == before

    # 4. a change shows up in the diff
    smaller = dict(args, rlimits=[dict(args["rlimits"][0], soft="2M")] + args["rlimits"][1:])
    result = ansible_module("oci_rlimits", smaller, check=True, diff=True)
    assert result["changed"] is True
    assert '"soft": 4194304' in result["diff"]["before"] and '"soft": 2097152' in result["diff"]["after"]
    assert spec.read_bytes() == before

    # The real runtime applies what was written.
    name = "rdma-node-memlock-" + uuid.uuid4().hex[:8]
    run = runc_run(container_config(spec, rootfs, name), tmp_path, name)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "4096" and lines[1] == "4096", run.stdout
    limits = limits_of(run.stdout)
    assert limits["Max locked memory"] == (str(FOUR_MIB), str(FOUR_MIB))
    assert limits["Max open files"] == (str(NOFILE_FOR_RUNS), str(NOFILE_FOR_RUNS))


def test_ctr_run_with_a_private_containerd_applies_4mib(tmp_path, rootfs, private_containerd):
    spec = tmp_path / "spec.json"
    result = ansible_module("oci_rlimits", {
        "path": str(spec),
        "rlimits": [
            {"type": "MEMLOCK", "soft": FOUR_MIB, "hard": FOUR_MIB},
            {"type": "NOFILE", "soft": NOFILE_FOR_RUNS, "hard": NOFILE_FOR_RUNS},
        ],
    })
    assert result["changed"] is True and result["created"] is True, result
    name = "memlock-" + uuid.uuid4().hex[:8]
    config = container_config(spec, rootfs, name)
    del config["linux"]["cgroupsPath"]  # containerd chooses the cgroup (namespace/id)
    run_spec = tmp_path / "run-spec.json"
    run_spec.write_text(json.dumps(config, indent=4))
    ctr = [tool("ctr"), "--address", private_containerd, "--namespace", "rdma-node-test"]
    run = subprocess.run(ctr + ["run", "--rm", "--config", str(run_spec), name],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[:2] == ["4096", "4096"], run.stdout
    assert limits_of(run.stdout)["Max locked memory"] == (str(FOUR_MIB), str(FOUR_MIB))
    left = subprocess.run(ctr + ["containers", "list", "--quiet"], capture_output=True, text=True, check=True)
    assert left.stdout.strip() == ""


def has_cap_sys_resource() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def test_unlimited_spec_exact_values_and_what_runc_does_with_them(tmp_path, rootfs):
    spec = tmp_path / "spec.json"
    result = ansible_module("oci_rlimits", {
        "path": str(spec),
        "rlimits": [
            {"type": "RLIMIT_MEMLOCK", "soft": "unlimited", "hard": "infinity"},
            {"type": "RLIMIT_NOFILE", "soft": NOFILE_FOR_RUNS, "hard": NOFILE_FOR_RUNS},
        ],
    })
    assert result["changed"] is True, result
    text = spec.read_text()
    # The exact lines the seed shows, in ctr's 4-space style.
    assert (
        '            {\n'
        '                "type": "RLIMIT_MEMLOCK",\n'
        '                "hard": 18446744073709551615,\n'
        '                "soft": 18446744073709551615\n'
        '            }\n'
    ) in text
    assert json.loads(text)["process"]["rlimits"][1] == {
        "type": "RLIMIT_MEMLOCK", "hard": RLIM_INFINITY, "soft": RLIM_INFINITY,
    }
    # runc reads the value as RLIM_INFINITY for RLIMIT_MEMLOCK (type 8): with CAP_SYS_RESOURCE the
    # container gets "unlimited"; without it (this machine) the kernel refuses to raise the limit.
    name = "rdma-node-unlimited-" + uuid.uuid4().hex[:8]
    run = runc_run(container_config(spec, rootfs, name), tmp_path, name)
    if has_cap_sys_resource():
        assert run.returncode == 0 and run.stdout.splitlines()[0] == "unlimited", run.stdout + run.stderr
    else:
        assert run.returncode != 0
        assert "error setting rlimit type 8: operation not permitted" in run.stderr


def test_nofile_floor_on_the_real_ctr_default(tmp_path):
    spec = tmp_path / "spec.json"
    result = ansible_module("oci_rlimits", {"path": str(spec), "rlimits": [{"type": "MEMLOCK", "soft": "64M"}]})
    assert ctr_default_spec()["process"]["rlimits"] == [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}]
    assert result["nofile_raised"] == {"soft": 1024, "hard": 1024}
    assert json.loads(spec.read_text())["process"]["rlimits"][0] == {
        "type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576,
    }
    assert "RLIMIT_NOFILE raised from soft 1024/hard 1024 to soft 1048576/hard 1048576" in result["msg"]


def test_regenerate_from_the_real_ctr(tmp_path):
    """An old kind-era spec (2-space indent, extra mounts and a hook) rebuilt from this containerd."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures/containerd/oci_spec"
    spec = tmp_path / "cri-base.json"
    shutil.copyfile(fixture / "kind-fork_cri-base_from_ctr-oci-spec_1.0.2-dev_plus_kind_mounts_hook.json", spec)
    memlock = [{"type": "RLIMIT_MEMLOCK", "soft": "unlimited", "hard": "unlimited"}]
    ansible_module("oci_rlimits", {"path": str(spec), "rlimits": memlock})
    old = spec.read_text()

    result = ansible_module("oci_rlimits", {"path": str(spec), "rlimits": memlock, "regenerate": True,
                                            "backup": True}, diff=True)
    assert result["changed"] is True and result["regenerated"] is True and result["created"] is False, result
    new = json.loads(spec.read_text())
    assert without_rlimits(new) == without_rlimits(ctr_default_spec())
    assert new["process"]["rlimits"] == json.loads(old)["process"]["rlimits"]
    assert "hooks" not in new and '"hooks": {' in result["diff"]["before"]
    assert spec.read_text().startswith('{\n  "ociVersion": ')  # the file's 2-space style is kept
    assert Path(result["backup_file"]).read_text() == old

    again = ansible_module("oci_rlimits", {"path": str(spec), "rlimits": memlock, "regenerate": True})
    assert again["changed"] is False and again["regenerated"] is True


@pytest.mark.parametrize("exists", [True, False], ids=["existing-file", "new-file"])
def test_oci_rlimits_in_a_read_only_directory(tmp_path, exists):
    directory = tmp_path / "containerd"
    directory.mkdir()
    spec = directory / "spec.json"
    if exists:
        spec.write_text(json.dumps(ctr_default_spec(), indent=4) + "\n")
    before = sorted(os.listdir(directory))
    content = spec.read_bytes() if exists else None
    result = ansible_module(
        "oci_rlimits",
        {"path": str(spec), "rlimits": [{"type": "MEMLOCK", "soft": "unlimited"}], "backup": True},
        wrapper=read_only(directory),
    )
    assert result.get("failed") is True, result
    assert result["msg"] == "Cannot write %s: Read-only file system in %s; nothing was changed." % (spec, directory)
    assert sorted(os.listdir(directory)) == before
    if exists:
        assert spec.read_bytes() == content


# --------------------------------------------------------------------------------------------------
# systemd_limits: drop-in for the packaged containerd.service, checked by systemd-analyze
# --------------------------------------------------------------------------------------------------


def verify(unit_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tool("systemd-analyze"), "verify", str(unit_path)],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def unit_root(tmp_path):
    """A root tree holding a copy of Debian's containerd.service in /etc/systemd/system."""
    assert PACKAGED_UNIT.exists(), "containerd's unit file is missing; scripts/setup.sh installs containerd"
    unit = tmp_path / "etc/systemd/system/containerd.service"
    unit.parent.mkdir(parents=True)
    shutil.copyfile(PACKAGED_UNIT, unit)
    return tmp_path


def test_dropin_four_steps_and_systemd_analyze_verify(unit_root):
    unit = unit_root / "etc/systemd/system/containerd.service"
    dropin = unit_root / "etc/systemd/system/containerd.service.d/50-rdma-node-limits.conf"
    args = {"unit": "containerd", "limits": {"MEMLOCK": "infinity", "NOFILE": 1048576}, "root": str(unit_root)}
    clean = verify(unit)
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr

    result = ansible_module("systemd_limits", args, check=True)
    assert result["changed"] is True and not dropin.exists(), result

    result = ansible_module("systemd_limits", args, diff=True)
    assert result["changed"] is True, result
    assert dropin.read_text() == render_dropin("containerd.service", normalize_systemd_limits(args["limits"]))
    assert result["diff"]["after"] == dropin.read_text() and result["diff"]["before"] == ""
    assert result["unit_file"] == str(unit)
    # Debian's unit sets LimitNOFILE=infinity itself; the drop-in is applied after it.
    assert [(e["directive"], e["value"]) for e in result["also_set_in"]] == [("LimitNOFILE", "infinity")]
    assert result["overridden_by"] == []

    result = ansible_module("systemd_limits", args)
    assert result["changed"] is False, result

    checked = verify(unit)
    assert checked.returncode == 0
    assert checked.stderr == "", checked.stderr

    # systemd-analyze does read that very file: a bad value in it is reported, naming it.
    good = dropin.read_text()
    dropin.write_text(good.replace("LimitMEMLOCK=infinity", "LimitMEMLOCK=8m"))
    broken = verify(unit)
    assert "%s:3: Failed to parse resource value, ignoring: 8m" % dropin in broken.stderr
    dropin.write_text(good)

    # A later drop-in that wins is reported.
    late = dropin.with_name("90-local.conf")
    late.write_text("[Service]\nLimitMEMLOCK=64M\n")
    result = ansible_module("systemd_limits", args)
    assert result["overridden_by"] == [{"path": str(late), "line": 2, "directive": "LimitMEMLOCK", "value": "64M"}]
    assert verify(unit).stderr == ""


# (directive, value) pairs; our parser and systemd 252's must agree on each.
SYSTEMD_CASES = [
    ("LimitMEMLOCK", "infinity"), ("LimitMEMLOCK", "8M"), ("LimitMEMLOCK", "8m"), ("LimitMEMLOCK", "8MiB"),
    ("LimitMEMLOCK", "64K"), ("LimitMEMLOCK", "1.5K"), ("LimitMEMLOCK", "1G 512M"), ("LimitMEMLOCK", "8B"),
    ("LimitMEMLOCK", "1E"), ("LimitMEMLOCK", "16E"), ("LimitMEMLOCK", "0x10"), ("LimitMEMLOCK", "-1"),
    ("LimitMEMLOCK", "1024:2048"), ("LimitMEMLOCK", "2048:1024"), ("LimitMEMLOCK", "4M:infinity"),
    ("LimitMEMLOCK", "infinity:4M"), ("LimitMEMLOCK", "18446744073709551614"),
    ("LimitMEMLOCK", "18446744073709551615"), ("LimitNOFILE", "1048576"), ("LimitNOFILE", "64K"),
    ("LimitNOFILE", "1.0"), ("LimitNOFILE", "+5"), ("LimitNOFILE", "1024:4096"), ("LimitNOFILE", "infinity"),
    ("LimitCPU", "10"), ("LimitCPU", "1min"), ("LimitCPU", "1h 5min"), ("LimitCPU", "1.5"),
    ("LimitCPU", "5parsecs"), ("LimitRTTIME", "500ms"), ("LimitNICE", "40"), ("LimitNICE", "41"),
    ("LimitNICE", "+19"), ("LimitNICE", "+20"), ("LimitNICE", "-20"), ("LimitNICE", "-21"),
]


@pytest.mark.parametrize("directive, value", SYSTEMD_CASES)
def test_value_checks_agree_with_systemd(tmp_path, directive, value):
    unit = tmp_path / "probe.service"
    unit.write_text("[Service]\nExecStart=/bin/true\n")
    conf = tmp_path / "probe.service.d/x.conf"
    conf.parent.mkdir()
    conf.write_text("[Service]\n%s=%s\n" % (directive, value))
    systemd_accepts = verify(unit).stderr == ""
    try:
        normalize_systemd_limits({directive: value})
        ours = True
    except RlimitError:
        ours = False
    assert ours == systemd_accepts, "systemd %s %s=%s, rdma.node %s it" % (
        "accepts" if systemd_accepts else "rejects", directive, value, "accepts" if ours else "rejects")


def test_unlimited_alias_is_written_as_infinity_and_accepted(tmp_path):
    unit = tmp_path / "probe.service"
    unit.write_text("[Service]\nExecStart=/bin/true\n")
    conf = tmp_path / "probe.service.d/x.conf"
    conf.parent.mkdir()
    conf.write_text(render_dropin("probe.service", normalize_systemd_limits({"MEMLOCK": "Unlimited"})))
    assert "LimitMEMLOCK=infinity\n" in conf.read_text()
    assert verify(unit).stderr == ""


def test_systemd_limits_in_a_read_only_directory(unit_root):
    args = {"unit": "containerd", "limits": {"MEMLOCK": "infinity"}, "root": str(unit_root)}
    system = unit_root / "etc/systemd/system"
    result = ansible_module("systemd_limits", args, wrapper=read_only(system))
    assert result.get("failed") is True, result
    assert result["msg"] == "Cannot write %s: Read-only file system in %s; nothing was changed." % (
        system / "containerd.service.d/50-rdma-node-limits.conf", system / "containerd.service.d")
    assert sorted(os.listdir(system)) == ["containerd.service"]

    ansible_module("systemd_limits", args)
    dropin = system / "containerd.service.d/50-rdma-node-limits.conf"
    content = dropin.read_bytes()
    changed = dict(args, limits={"MEMLOCK": "64M"})
    result = ansible_module("systemd_limits", changed, wrapper=read_only(dropin.parent))
    assert result["msg"] == "Cannot write %s: Read-only file system in %s; nothing was changed." % (dropin, dropin.parent)
    assert dropin.read_bytes() == content
    assert sorted(os.listdir(dropin.parent)) == [dropin.name]
    result = ansible_module("systemd_limits", dict(args, state="absent"), wrapper=read_only(dropin.parent))
    assert result["msg"] == "Cannot remove %s: Read-only file system." % dropin
    assert dropin.read_bytes() == content


# --------------------------------------------------------------------------------------------------
# container_limits: what containerd's containers and a test container really got
# --------------------------------------------------------------------------------------------------


def test_container_limits_reads_running_pods_and_runs_the_probe(tmp_path, rootfs, private_containerd):
    """A pod started from a 64 KiB spec, one from the 4 MiB spec, a sandbox, and the module's own test container."""
    sleep = os.path.realpath("/bin/sleep")
    shutil.copy2(sleep, rootfs / "bin/sleep")
    spec = tmp_path / "spec.json"
    ansible_module("oci_rlimits", {"path": str(spec), "rlimits": [
        {"type": "MEMLOCK", "soft": "4M", "hard": "4M"}, {"type": "NOFILE", "soft": NOFILE_FOR_RUNS, "hard": NOFILE_FOR_RUNS}]})
    ctr = [tool("ctr"), "--address", private_containerd, "--namespace", "k8s.io"]
    # runc keeps its state per id outside the private containerd: ids of this run only, never one an
    # earlier (killed) run may have left behind.
    run_id = uuid.uuid4().hex[:8]
    pods = {"old-sandbox-" + run_id: ("65536", "sandbox", "ib-bench-0"), "old-bench-" + run_id: ("65536", "container", "ib-bench-0"),
            "new-bench-" + run_id: (str(FOUR_MIB), "container", "ib-bench-1")}
    for name, (memlock, kind, pod) in pods.items():
        config = container_config(spec, rootfs, name)
        del config["linux"]["cgroupsPath"]
        config["process"]["args"] = ["/bin/sleep", "300"]
        config["process"]["rlimits"] = [{"type": "RLIMIT_MEMLOCK", "soft": int(memlock), "hard": int(memlock)}]
        (tmp_path / (name + ".json")).write_text(json.dumps(config))
        started = subprocess.run(ctr + ["run", "-d", "--label", "io.cri-containerd.kind=" + kind, "--label", "io.kubernetes.pod.name=" + pod,
                                        "--label", "io.kubernetes.pod.namespace=rdma-jobs", "--label", "io.kubernetes.container.name=bench",
                                        "--config", str(tmp_path / (name + ".json")), name], capture_output=True, text=True, timeout=60, check=False)
        assert started.returncode == 0, (name, started.stderr)

    result = ansible_module("container_limits", {
        "address": private_containerd, "namespaces": ["k8s.io", "default"], "expected_memlock": "4M",
        "probe_spec": str(spec), "probe_rootfs": str(rootfs), "probe_command": ["/bin/sh", "-c", PROBE], "probe_timeout": 30})
    assert result.get("changed") is False, result
    facts = result["ansible_facts"]["rdma_memlock"]
    assert facts["namespaces"] == ["k8s.io"] and facts["socket"] is True and facts["containers_error"] is None
    seen = {c["id"]: (c["memlock"]["soft"], (c["labels"] or {}).get("kind")) for c in facts["containers"]}
    # The container that already has 4 MiB is listed without its labels (not read: nothing to recreate).
    assert seen == {"old-sandbox-" + run_id: ("65536", "sandbox"), "old-bench-" + run_id: ("65536", "container"),
                    "new-bench-" + run_id: (str(FOUR_MIB), None)}
    probe = facts["probe"]
    assert (probe["ran"], probe["rc"], probe["source"], probe["error"]) == (True, 0, "rootfs", None), probe
    assert probe["memlock"] == {"soft": str(FOUR_MIB), "hard": str(FOUR_MIB)}
    assert probe["nofile"] == {"soft": str(NOFILE_FOR_RUNS), "hard": str(NOFILE_FOR_RUNS)}
    # The test container and its namespace are gone; the pods still run.
    probe_ns = subprocess.run([tool("ctr"), "--address", private_containerd, "namespaces", "ls", "--quiet"],
                              capture_output=True, text=True, check=True).stdout.split()
    assert probe_ns == ["k8s.io"]
    tasks = subprocess.run(ctr + ["tasks", "ls"], capture_output=True, text=True, check=True).stdout
    assert sorted(line.split()[0] for line in tasks.splitlines()[1:]) == sorted(pods)

    unlimited = tmp_path / "unlimited.json"
    ansible_module("oci_rlimits", {"path": str(unlimited), "rlimits": [
        {"type": "MEMLOCK", "soft": "unlimited", "hard": "unlimited"}, {"type": "NOFILE", "soft": NOFILE_FOR_RUNS, "hard": NOFILE_FOR_RUNS}]})
    result = ansible_module("container_limits", {"address": private_containerd, "namespaces": [], "probe_spec": str(unlimited),
                                                 "probe_rootfs": str(rootfs)})
    probe = result["ansible_facts"]["rdma_memlock"]["probe"]
    if not has_cap_sys_resource():
        assert probe["ran"] is True and probe["rc"] != 0 and probe["memlock"] is None
        assert "error setting rlimit type 8: operation not permitted" in probe["error"]
    left = subprocess.run([tool("ctr"), "--address", private_containerd, "--namespace", "rdma-node-probe", "containers", "ls", "--quiet"],
                          capture_output=True, text=True, check=True).stdout
    assert left.strip() == ""
