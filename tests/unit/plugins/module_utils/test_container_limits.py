"""The parsers and the gatherer of module_utils/_container_limits.py on recorded outputs of this machine's tools."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ansible_collections.rdma.node.plugins.module_utils import _container_limits as cl
from testpaths import FIXTURES

MEMLOCK = FIXTURES / "memlock"


def text(name):
    return (MEMLOCK / name).read_text()


@pytest.mark.parametrize("name, memlock, nofile", [
    ("proc_limits_debian12_process_memlock_8m_nofile_20000.txt", ("8388608", "8388608"), ("20000", "20000")),
    ("proc_limits_debian12_init_memlock_unlimited.txt", ("unlimited", "unlimited"), ("32768", "32768")),
    ("proc_limits_container_memlock_64k_nofile_1024.txt", ("65536", "65536"), ("1024", "1024")),
    ("proc_limits_container_memlock_4m_nofile_16384.txt", ("4194304", "4194304"), ("16384", "16384")),
    ("ctr_run_memlock_4m.stdout", ("4194304", "4194304"), ("16384", "16384")),
])
def test_parse_limits_of_real_processes(name, memlock, nofile):
    limits = cl.parse_limits(text(name))
    assert limits == {"memlock": dict(zip(("soft", "hard"), memlock)), "nofile": dict(zip(("soft", "hard"), nofile))}


def test_parse_limits_of_nothing_and_of_a_failed_run():
    assert cl.parse_limits(text("ctr_run_memlock_unlimited_without_cap_sys_resource.stdout")) == {"memlock": None, "nofile": None}
    assert cl.parse_limits(None) == {"memlock": None, "nofile": None}
    # A line without the unit column (Max nice priority) does not confuse the others.
    assert cl.parse_limits("Max nice priority         0                    0\nMax locked memory         64  128  bytes\n") == {
        "memlock": {"soft": "64", "hard": "128"}, "nofile": None}


def test_parse_tasks_and_namespaces():
    assert cl.parse_tasks(text("ctr_tasks_ls_k8s_io_4_running.txt")) == [
        {"id": "plain0", "pid": 31053, "status": "RUNNING"},
        {"id": "sandbox0", "pid": 30855, "status": "RUNNING"},
        {"id": "bench0", "pid": 30920, "status": "RUNNING"},
        {"id": "bench1", "pid": 30990, "status": "RUNNING"},
    ]
    assert cl.parse_tasks("TASK    PID    STATUS    \nstopped1    0    STOPPED\n") == [{"id": "stopped1", "pid": 0, "status": "STOPPED"}]
    assert cl.parse_namespaces(text("ctr_namespaces_ls_quiet.txt")) == ["k8s.io"]


def test_parse_container_labels():
    assert cl.parse_container_labels(text("ctr_containers_info_cri_labels_container.json")) == {
        "pod": "ib-bench-0", "pod_namespace": "rdma-jobs", "container": "bench", "kind": "container"}
    assert cl.parse_container_labels(text("ctr_containers_info_cri_labels_sandbox.json"))["kind"] == "sandbox"
    assert cl.parse_container_labels(text("ctr_containers_info_no_labels.json")) == dict.fromkeys(("pod", "pod_namespace", "container", "kind"))
    assert cl.parse_container_labels("ctr: container not found") is None
    assert cl.parse_container_labels("[]") is None


def test_probe_config_replaces_only_root_command_and_cgroup():
    spec = json.loads(text("ctr_containers_info_cri_labels_container.json"))["Spec"]
    config = cl.probe_config(spec, "/tmp/root", ["/bin/cat", "/proc/self/limits"], "probe-1")
    assert config["root"] == {"path": "/tmp/root", "readonly": True}
    assert config["process"]["args"] == ["/bin/cat", "/proc/self/limits"] and config["process"]["terminal"] is False
    assert config["linux"]["cgroupsPath"] == "/probe-1"
    assert config["process"]["rlimits"] == spec["process"]["rlimits"]
    assert {k: v for k, v in config.items() if k not in ("root", "process", "linux")} == {
        k: v for k, v in spec.items() if k not in ("root", "process", "linux")}
    assert spec["process"]["args"] == ["/bin/sleep", "600"]  # the input is left as it was
    with pytest.raises(cl.ContainerLimitsError, match="no process object"):
        cl.probe_config({"ociVersion": "1.0.2"}, "/r", ["/bin/true"], "x")


class RecordedNode:
    """A node whose tools answer from the recorded outputs; every call is kept."""

    def __init__(self, tmp_path, answers):
        self.answers = answers
        self.calls = []
        self.proc = tmp_path / "proc"
        self.socket = tmp_path / "containerd.sock"
        self.socket.write_text("")

    def add_process(self, pid, fixture):
        (self.proc / str(pid)).mkdir(parents=True)
        (self.proc / str(pid) / "limits").write_text(text(fixture))

    def run(self, argv):
        self.calls.append(argv)
        for prefix, answer in self.answers:
            if argv[:len(prefix)] == prefix:
                return answer
        return 1, "", "not recorded: %s" % " ".join(argv)

    def reader(self):
        return cl.Reader(self.run, "ctr", str(self.socket), "systemctl", "timeout", proc=str(self.proc))


CTR = ["ctr", "--address"]


def test_gather_reads_containerd_and_the_running_containers(tmp_path):
    show = "MainPID=812\nActiveState=active\nLimitMEMLOCK=infinity\nLimitMEMLOCKSoft=infinity\nLimitNOFILE=1048576\nLimitNOFILESoft=1048576\n"
    node = RecordedNode(tmp_path, [])
    socket = str(node.socket)
    node.answers = [
        (["systemctl", "show", "containerd.service"], (0, show, "")),
        (CTR + [socket, "namespaces"], (0, text("ctr_namespaces_ls_quiet.txt"), "")),
        (CTR + [socket, "--namespace", "k8s.io", "tasks", "ls"], (0, text("ctr_tasks_ls_k8s_io_4_running.txt"), "")),
        (CTR + [socket, "--namespace", "k8s.io", "containers", "info", "--", "bench0"], (0, text("ctr_containers_info_cri_labels_container.json"), "")),
        (CTR + [socket, "--namespace", "k8s.io", "containers", "info", "--", "sandbox0"], (0, text("ctr_containers_info_cri_labels_sandbox.json"), "")),
        (CTR + [socket, "--namespace", "k8s.io", "containers", "info", "--", "plain0"], (0, text("ctr_containers_info_no_labels.json"), "")),
    ]
    node.add_process(812, "proc_limits_debian12_process_memlock_8m_nofile_20000.txt")
    node.add_process(30920, "proc_limits_container_memlock_64k_nofile_1024.txt")
    node.add_process(30855, "proc_limits_container_memlock_64k_nofile_1024.txt")
    node.add_process(31053, "proc_limits_container_memlock_64k_nofile_1024.txt")
    node.add_process(30990, "proc_limits_container_memlock_4m_nofile_16384.txt")

    facts = cl.gather(node.reader(), "containerd.service", ["k8s.io", "moby"], label_unless=4194304)
    assert facts["containerd"] == {
        "unit": "containerd.service", "pid": 812, "active_state": "active", "error": None,
        "memlock": {"soft": "8388608", "hard": "8388608"}, "nofile": {"soft": "20000", "hard": "20000"},
        "systemd": {"LimitMEMLOCK": "infinity", "LimitMEMLOCKSoft": "infinity", "LimitNOFILE": "1048576", "LimitNOFILESoft": "1048576"},
    }
    assert facts["namespaces"] == ["k8s.io"]  # moby does not exist on this node
    assert facts["containers_error"] is None and facts["probe"] is None and facts["socket"] is True
    by_id = {c["id"]: c for c in facts["containers"]}
    assert sorted(by_id) == ["bench0", "bench1", "plain0", "sandbox0"]
    assert by_id["bench0"]["labels"] == {"pod": "ib-bench-0", "pod_namespace": "rdma-jobs", "container": "bench", "kind": "container"}
    assert by_id["bench0"]["memlock"] == {"soft": "65536", "hard": "65536"}
    assert by_id["sandbox0"]["labels"]["kind"] == "sandbox"
    # bench1 already has the expected 4 MiB: its labels are not read (one ctr call saved per container).
    assert by_id["bench1"]["labels"] is None
    assert not any(call[-1] == "bench1" for call in node.calls)
    # One systemctl call gives MainPID and systemd's limits together.
    assert [c for c in node.calls if c[0] == "systemctl"] == [[
        "systemctl", "show", "containerd.service", "--property",
        "MainPID,ActiveState,LimitMEMLOCK,LimitMEMLOCKSoft,LimitNOFILE,LimitNOFILESoft"]]


def test_gather_on_a_node_without_containerd_makes_no_ctr_call(tmp_path):
    node = RecordedNode(tmp_path, [(["systemctl"], (0, "MainPID=0\nActiveState=inactive\n", ""))])
    node.socket.unlink()
    facts = cl.gather(node.reader(), "containerd.service", ["k8s.io"], probe=dict(
        spec_path="/etc/containerd/rdma-spec.json", image="", image_namespace="k8s.io", rootfs="/srv/root", command=["/bin/cat"], timeout=5))
    assert facts["containerd"]["pid"] == 0 and facts["containerd"]["memlock"] is None
    assert facts["containers_error"] == "containerd's socket %s does not exist" % node.socket
    assert facts["probe"]["ran"] is False and facts["probe"]["error"] == facts["containers_error"]
    assert all(call[0] == "systemctl" for call in node.calls)


def test_gather_when_systemctl_fails_and_in_check_mode(tmp_path):
    node = RecordedNode(tmp_path, [(["systemctl"], (1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.\n"))])
    facts = cl.gather(node.reader(), "containerd.service", [], probe=dict(
        spec_path="/s.json", image="", image_namespace="k8s.io", rootfs="", command=["/bin/cat"], timeout=5), check_mode=True)
    assert facts["containerd"]["pid"] == 0
    assert facts["containerd"]["error"] == ("systemctl show containerd.service failed with rc 1: System has not been booted "
                                            "with systemd as init system (PID 1). Can't operate.")
    assert facts["probe"]["not_run"] == "check mode starts no container" and not facts["probe"]["ran"]
    assert facts["containers_error"] is None and facts["namespaces"] == []
    assert all(call[0] == "systemctl" for call in node.calls)


def test_probe_without_root_says_why_and_starts_nothing(tmp_path):
    node = RecordedNode(tmp_path, [])
    socket = str(node.socket)
    node.answers = [(CTR + [socket, "--namespace", "k8s.io", "images", "ls", "--quiet"], (0, "docker.io/library/alpine:3\n", ""))]
    probe = node.reader().probe("/s.json", "busybox:1.36", "k8s.io", str(tmp_path / "nowhere"), ["/bin/cat"], 5)
    assert probe["not_run"] == ("the image busybox:1.36 is not in containerd namespace k8s.io and the directory %s does not exist"
                                % (tmp_path / "nowhere"))
    assert probe["missing"] is True and probe["ran"] is False
    nothing = node.reader().probe("/s.json", "", "k8s.io", "", ["/bin/cat"], 5)
    assert nothing["not_run"] == "no image or root file system is configured" and nothing["missing"] is False
    assert len(node.calls) == 1


def test_probe_with_an_image_that_does_not_mount_cleans_up(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(json.loads(text("ctr_containers_info_cri_labels_container.json"))["Spec"]))
    node = RecordedNode(tmp_path, [])
    socket = str(node.socket)
    node.answers = [
        (CTR + [socket, "--namespace", "k8s.io", "images", "ls"], (0, "busybox:1.36\n", "")),
        (CTR + [socket, "--namespace", "k8s.io", "images", "mount"], (1, "", "ctr: mount: permission denied\n")),
    ]
    probe = node.reader().probe(str(spec), "busybox:1.36", "k8s.io", "", ["/bin/cat"], 5)
    assert probe["error"] == "ctr images mount busybox:1.36 failed: ctr: mount: permission denied"
    assert probe["source"] == "image" and probe["ran"] is False
    mount = next(c for c in node.calls if "mount" in c)
    assert mount[-3:-1] == ["--", "busybox:1.36"] and os.path.basename(mount[-1]) == "rootfs"
    assert not os.path.exists(mount[-1])  # its working directory is gone
    assert node.calls[-1] == CTR + [socket, "namespaces", "remove", "--", "rdma-node-probe"]
    assert not any("unmount" in c for c in node.calls)  # nothing was mounted


def test_probe_that_fails_to_start_is_cleaned_up_by_its_id(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(json.loads(text("ctr_containers_info_cri_labels_container.json"))["Spec"]))
    root = tmp_path / "root"
    root.mkdir()
    node = RecordedNode(tmp_path, [])
    failure = (1, text("ctr_run_memlock_unlimited_without_cap_sys_resource.stdout"), text("ctr_run_memlock_unlimited_without_cap_sys_resource.stderr"))
    node.answers = [(["timeout"], failure)]
    probe = node.reader().probe(str(spec), "", "k8s.io", str(root), ["/bin/cat", "/proc/self/limits"], 7)
    assert probe["ran"] is True and probe["rc"] == 1 and probe["memlock"] is None
    assert probe["error"].endswith("error setting rlimit type 8: operation not permitted: unknown")
    run = next(c for c in node.calls if c[0] == "timeout")
    assert run[:3] == ["timeout", "--kill-after=5", "7"]
    container_id = run[-1]
    assert run[-2] == "--" and container_id.startswith("rdma-node-probe-")
    assert [c[5:] for c in node.calls[1:4]] == [
        ["tasks", "kill", "--signal", "SIGKILL", "--", container_id],
        ["tasks", "delete", "--force", "--", container_id],
        ["containers", "delete", "--", container_id]]
    assert not os.path.exists(os.path.dirname(run[run.index("--config") + 1]))


def test_a_containerd_by_pidfile_is_read_from_proc_without_systemctl(tmp_path):
    """The demo nodes' own containerd: its pid comes from a pidfile; this test process stands in for it."""
    calls = []
    pidfile = tmp_path / "containerd.pid"
    pidfile.write_text("%d\n" % os.getpid())

    def reader():
        return cl.Reader(lambda argv: calls.append(argv) or (1, "", ""), "ctr", str(tmp_path / "none.sock"), None, pidfile=str(pidfile))

    facts = cl.gather(reader(), "containerd.service")
    with open("/proc/self/limits") as handle:
        own = cl.parse_limits(handle.read())
    assert facts["containerd"]["pid"] == os.getpid() and facts["containerd"]["active_state"] == "active"
    assert facts["containerd"]["memlock"] == own["memlock"] and facts["containerd"]["nofile"] == own["nofile"]
    assert facts["containerd"]["systemd"] == {} and facts["containerd"]["error"] is None
    assert calls == []

    pidfile.write_text("not a pid\n")
    assert cl.gather(reader(), "containerd.service")["containerd"]["error"] == "its pidfile %s holds 'not a pid', not a process id" % pidfile
    child = subprocess.Popen(["true"])
    child.wait()
    pidfile.write_text("%d\n" % child.pid)
    facts = cl.gather(reader(), "containerd.service")["containerd"]
    assert (facts["pid"], facts["active_state"]) == (0, "inactive")
    assert facts["error"] == "process %d of the pidfile %s does not run" % (child.pid, pidfile)
    pidfile.unlink()
    assert cl.gather(reader(), "containerd.service")["containerd"]["error"] == (
        "its pidfile %s could not be read: No such file or directory" % pidfile)


# -- hostile pidfiles and proc files (issue 24, items 5 and 7) --------------------------------------


def pidfile_reader(tmp_path, pidfile, proc="/proc"):
    return cl.Reader(lambda argv: (1, "", ""), "ctr", str(tmp_path / "none.sock"), None, proc=proc, pidfile=str(pidfile))


@pytest.mark.parametrize("content", ["²", "٣", "1_0", "+1", "-1", "0x10", str(2 ** 64), "1e3", "  "])
def test_a_pidfile_without_a_process_id_is_one_sentence(tmp_path, content, in_child):
    pidfile = tmp_path / "containerd.pid"
    pidfile.write_text(content + "\n", encoding="utf-8")
    facts = in_child(lambda: cl.gather(pidfile_reader(tmp_path, pidfile), "containerd.service")["containerd"])
    assert (facts["pid"], facts["active_state"]) == (0, "inactive")
    assert facts["error"] == "its pidfile %s holds %r, not a process id" % (pidfile, content.strip())


def test_a_fifo_as_pidfile_does_not_hang_the_module(tmp_path, in_child):
    pidfile = tmp_path / "containerd.pid"
    os.mkfifo(pidfile)
    facts = in_child(lambda: cl.gather(pidfile_reader(tmp_path, pidfile), "containerd.service")["containerd"])
    assert (facts["pid"], facts["active_state"]) == (0, "inactive")
    assert facts["error"] == ("its pidfile %s could not be read: %s is a FIFO (named pipe), not a regular file; "
                              "expected containerd's pidfile (a process id)." % (pidfile, pidfile))


def test_a_fifo_as_a_process_limits_file_does_not_hang(tmp_path, in_child):
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    os.mkfifo(proc / "4242" / "limits")
    pidfile = tmp_path / "containerd.pid"
    pidfile.write_text("4242\n")
    facts = in_child(lambda: cl.gather(pidfile_reader(tmp_path, pidfile, proc=str(proc)), "containerd.service")["containerd"])
    assert facts["pid"] == 0 and facts["error"] == "process 4242 of the pidfile %s does not run" % pidfile
