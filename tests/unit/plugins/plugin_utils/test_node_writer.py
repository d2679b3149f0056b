"""The node writer of rdma.node.evaluate: the shell command that replaces the metrics file, run here
with the machine's own /bin/sh and coreutils, as the node runs it.

What it must hold against whoever can write the textfile directory: no write or chmod through a link
planted there, no fixed temporary name (two runs at once), nothing left behind when the write fails.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading

import pytest
from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import become_loader, connection_loader

from ansible_collections.rdma.node.plugins.plugin_utils._node_writer import (NO_DIRECTORY, TEMPORARY_PREFIX, metrics_file, stdin_reaches_the_command,
                                                                             write_command)


def run(command, text, env=None, umask=0o077):
    """Run the command as Ansible runs it on the node: /bin/sh -c, with a strict umask of the caller."""
    return subprocess.run(["/bin/sh", "-c", "umask %03o; %s" % (umask, command)], input=text.encode(), capture_output=True,
                          env=env, check=False, timeout=30)


def leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith(TEMPORARY_PREFIX))


def test_it_writes_the_text_world_readable_whatever_the_callers_umask(tmp_path):
    target = tmp_path / "rdma_node.prom"
    done = run(write_command(str(target)), "rdma_node_last_run_timestamp_seconds 1\n")
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "rdma_node_last_run_timestamp_seconds 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert leftovers(tmp_path) == []


def test_a_link_planted_as_the_target_is_replaced_never_followed(tmp_path):
    victim = tmp_path / "shadow"
    victim.write_text("root:secret\n")
    victim.chmod(0o600)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    (textfiles / "rdma_node.prom").symlink_to(victim)
    assert run(write_command(str(textfiles / "rdma_node.prom")), "x 1\n").returncode == 0
    assert victim.read_text() == "root:secret\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert not (textfiles / "rdma_node.prom").is_symlink()


def test_the_old_fixed_temporary_name_planted_as_a_link_changes_nothing(tmp_path):
    victim = tmp_path / "shadow"
    victim.write_text("root:secret\n")
    victim.chmod(0o600)
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    (textfiles / ".rdma_node.prom.tmp").symlink_to(victim)
    assert run(write_command(str(textfiles / "rdma_node.prom")), "x 1\n").returncode == 0
    assert victim.read_text() == "root:secret\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600


def fake_tool(directory, name, script):
    """A stand-in for one coreutils command, named as such, first on PATH."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return {"PATH": "%s:%s" % (directory, os.environ["PATH"])}


def test_a_link_planted_under_the_very_temporary_name_makes_the_write_fail_not_follow(tmp_path):
    # The attacker "predicted" the random name (the test gives it): a link planted there, to a file and
    # to a name that does not exist yet. The exclusive create refuses both; the victim is untouched.
    victim = tmp_path / "shadow"
    victim.write_text("root:secret\n")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    for planted_target in (victim, tmp_path / "created-by-root"):
        planted = textfiles / (TEMPORARY_PREFIX + "predicted")
        if planted.is_symlink():
            planted.unlink()
        planted.symlink_to(planted_target)
        done = run(write_command(str(textfiles / "rdma_node.prom"), suffix="predicted"), "x 1\n")
        assert done.returncode != 0
        assert victim.read_text() == "root:secret\n"
        assert not (tmp_path / "created-by-root").exists()
        assert not (textfiles / "rdma_node.prom").exists()


def test_the_temporary_name_is_drawn_anew_for_each_write_and_no_tool_draws_it_on_the_node(tmp_path):
    commands = [write_command(str(tmp_path / "rdma_node.prom")) for dummy in range(50)]
    names = {command.split("t=\"$d\"/", 1)[1].split(";", 1)[0] for command in commands}
    assert len(names) == 50 and all(len(name) == len(TEMPORARY_PREFIX) + 16 for name in names)
    # Only the shell's builtins, cat and mv: nothing else runs on the node.
    assert "mktemp" not in commands[0] and "$(" not in commands[0]


def test_a_failed_write_leaves_no_temporary_file_and_the_old_metrics(tmp_path):
    target = tmp_path / "rdma_node.prom"
    target.write_text("old 1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # cat that writes half and fails, as on a full disk.
    env = fake_tool(bin_dir, "cat", "printf 'half'\nexit 1\n")
    done = run(write_command(str(target)), "new 2\n", env=env)
    assert done.returncode == 1
    assert target.read_text() == "old 1\n" and leftovers(tmp_path) == []


def test_a_missing_directory_is_its_own_status_and_sentence(tmp_path):
    done = run(write_command(str(tmp_path / "nope" / "rdma_node.prom")), "x 1\n")
    assert done.returncode == NO_DIRECTORY
    assert done.stderr.decode().strip() == "%s does not exist on the node (is prometheus-node-exporter installed?)" % (tmp_path / "nope")


def test_runs_at_once_never_share_a_temporary_name(tmp_path):
    target = tmp_path / "rdma_node.prom"
    texts = ["run%d %s\n" % (n, "x" * 20000) for n in range(12)]
    results = []

    def one(text):
        results.append(run(write_command(str(target)), text).returncode)

    threads = [threading.Thread(target=one, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [0] * len(texts)
    assert target.read_text() in texts and leftovers(tmp_path) == []


def test_a_path_with_shell_characters_is_one_argument(tmp_path):
    odd = tmp_path / "text file; touch pwned $(id)"
    odd.mkdir()
    assert run(write_command(str(odd / "rdma_node.prom")), "x 1\n").returncode == 0
    assert (odd / "rdma_node.prom").read_text() == "x 1\n"
    assert not os.path.exists("pwned")


def test_the_metrics_file_is_in_the_roles_textfile_directory_or_nowhere():
    assert metrics_file("node_health", {"node_health_metrics_dir": "/var/lib/prometheus/node-exporter/"}) == \
        "/var/lib/prometheus/node-exporter/rdma_node.prom"
    assert metrics_file("node_health", {"node_health_metrics_dir": ""}) is None
    assert metrics_file("ib_inventory", {}) is None


def local_connection(pipelining, become=None):
    """Ansible's own local connection, set up as a task would set it up, with the named become method."""
    connection = connection_loader.get("local", PlayContext())
    connection.set_options(var_options={"ansible_pipelining": pipelining})
    if become:
        connection.set_become_plugin(become_loader.get(become))
    return connection


@pytest.mark.parametrize("pipelining, become, expected", [
    # Nothing between the connection and the command: it reads the data, pipelining or not.
    (False, None, True), (True, None, True),
    # sudo may require a tty (requiretty): only where the operator enabled pipelining, as for modules.
    (False, "sudo", False), (True, "sudo", True),
    # su reads its terminal: Ansible never pipelines through it, nor do we.
    (False, "su", False), (True, "su", False),
])
def test_the_text_goes_on_standard_input_where_the_command_surely_reads_it(pipelining, become, expected):
    assert stdin_reaches_the_command(local_connection(pipelining, become)) is expected


def test_a_connection_that_cannot_send_standard_input_never_gets_it():
    connection = local_connection(True)
    connection.has_pipelining = False  # as winrm or a network connection
    assert stdin_reaches_the_command(connection) is False
