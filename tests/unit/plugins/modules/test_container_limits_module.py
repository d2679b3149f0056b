"""rdma.node.container_limits run for real on its options (tests/integration/test_node_tools_for_real.py runs it
with the real systemctl and ctr)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.rdma.node.plugins.modules import container_limits


@pytest.mark.parametrize("args, msg", [
    ({"namespaces": ["k8s.io", "--address=/tmp/x"]},
     "'--address=/tmp/x' is not a containerd namespace name (letters and digits, separated by single '.', '_' or '-'); "
     "check namespaces and probe_image_namespace."),
    ({"probe_image_namespace": "a..b"}, "'a..b' is not a containerd namespace name (letters and digits, separated by single '.', '_' or '-'); "
     "check namespaces and probe_image_namespace."),
    ({"address": "containerd.sock"}, "address must be the absolute path of containerd's socket, got containerd.sock."),
    ({"expected_memlock": "lots"}, "expected_memlock must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got 'lots'."),
    ({"service": "containerd.timer"}, "service: unit containerd.timer is a .timer unit; Limit* directives only apply to service, socket, "
     "mount and swap units."),
    ({"probe_timeout": 0}, "probe_timeout must be a positive number of seconds, got 0."),
    ({"probe_command": ["/bin/cat", " "]}, "probe_command must not hold an empty entry, got ['/bin/cat', ' ']."),
])
def test_bad_options_are_one_sentence(run_module, args, msg):
    result = run_module(container_limits, args)
    assert result.failed and result["msg"] == msg


@pytest.mark.parametrize("content", ["fifo", "\u00b2", "\u0663"])
def test_a_hostile_pidfile_is_one_sentence_in_the_facts(run_module, tmp_path, content, no_hang):
    """Issue 24, items 5 and 7: a FIFO or a Unicode digit as containerd's pidfile neither hangs nor crashes."""
    pidfile = tmp_path / "containerd.pid"
    if content == "fifo":
        os.mkfifo(pidfile)
        reason = "could not be read: %s is a FIFO (named pipe), not a regular file; expected containerd's pidfile " \
                 "(a process id)." % pidfile
    else:
        pidfile.write_text(content + "\n", encoding="utf-8")
        reason = "holds %r, not a process id" % content
    result = run_module(container_limits, {"address": str(tmp_path / "c.sock"), "pidfile": str(pidfile)})
    assert not result.failed
    containerd = result["ansible_facts"]["rdma_memlock"]["containerd"]
    assert containerd["pid"] == 0 and containerd["error"] == "its pidfile %s %s" % (pidfile, reason)
    if content != "fifo":
        assert result.warning_messages == ["%s holds %r, not an unsigned whole number of at most 64 bits; read as null."
                                           % (pidfile, content)]
