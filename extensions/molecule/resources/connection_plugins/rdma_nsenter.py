# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection of the molecule scenarios to their podman hosts, by entering the container's namespaces.

Test infrastructure, not part of the collection: the scenarios load it through
ANSIBLE_CONNECTION_PLUGINS (config.yml). ``podman exec`` costs about a quarter of a second per call
on the project's machines and a task makes three or four of them; ``nsenter`` into the container's
init process costs milliseconds, and with pipelining a task is one call. The commands run in the
container's mount, UTS, IPC, network, PID and cgroup namespaces, as root, with a clean
environment, which is how a root session on a real node runs them. Files are copied through
``/proc/<pid>/root``.
"""

from __future__ import annotations

DOCUMENTATION = """
name: rdma_nsenter
short_description: Run tasks in a local podman container through nsenter (rdma.node molecule hosts)
description:
  - Enters the namespaces of the container's first process with nsenter; copies files through
    /proc/<pid>/root. Runs as root on the machine that hosts the containers.
author: rdma.node developers (!UNKNOWN)
options:
  remote_addr:
    description: The container's name.
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
    type: str
  podman_executable:
    description: The podman command used to find the container's first process.
    default: podman
    vars:
      - name: ansible_podman_executable
    env:
      - name: ANSIBLE_PODMAN_EXECUTABLE
    type: str
"""

import shlex
import shutil
import subprocess

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.connection import ConnectionBase

# What a login shell on a Debian node has; nothing of the controller's environment goes in.
CLEAN_ENV = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOME=/root", "LANG=C.UTF-8", "TERM=dumb"]
NAMESPACES = ["--mount", "--uts", "--ipc", "--net", "--pid", "--cgroup"]


class Connection(ConnectionBase):
    """Commands through nsenter, files through /proc/<pid>/root."""

    transport = "rdma_nsenter"
    has_pipelining = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pid = None

    def _container(self):
        return self.get_option("remote_addr")

    def _connect(self):
        if self._connected:
            return self
        podman = shutil.which(self.get_option("podman_executable"))
        if not podman:
            raise AnsibleConnectionFailure("podman is not installed on the controller")
        found = subprocess.run([podman, "inspect", "--type", "container", "--format", "{{.State.Pid}}", self._container()],
                               capture_output=True, text=True, check=False)
        pid = found.stdout.strip()
        if found.returncode != 0 or not pid.isdigit() or pid == "0":
            raise AnsibleConnectionFailure("container %s is not running: %s" % (self._container(), found.stderr.strip() or pid))
        self._pid = pid
        self._connected = True
        return self

    def _root(self, path):
        return to_bytes("/proc/%s/root/%s" % (self._pid, path.lstrip("/")), errors="surrogate_or_strict")

    def exec_command(self, cmd, in_data=None, sudoable=False):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        self._connect()
        argv = ["nsenter", "--target", self._pid] + NAMESPACES + ["--"] + CLEAN_ENV + ["/bin/sh", "-c", to_native(cmd)]
        self._display.vvv("EXEC %s" % " ".join(shlex.quote(a) for a in argv), host=self._container())
        proc = subprocess.run([to_bytes(a, errors="surrogate_or_strict") for a in argv], input=in_data,
                              capture_output=True, check=False)
        return proc.returncode, proc.stdout, proc.stderr

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)
        self._connect()
        self._display.vvv("PUT %s TO %s" % (in_path, out_path), host=self._container())
        try:
            shutil.copyfile(to_bytes(in_path, errors="surrogate_or_strict"), self._root(out_path))
        except OSError as exc:
            raise AnsibleError("cannot copy %s to %s in %s: %s" % (in_path, out_path, self._container(), exc))

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        self._connect()
        self._display.vvv("FETCH %s TO %s" % (in_path, out_path), host=self._container())
        try:
            shutil.copyfile(self._root(in_path), to_bytes(out_path, errors="surrogate_or_strict"))
        except OSError as exc:
            raise AnsibleError("cannot copy %s from %s to %s: %s" % (in_path, self._container(), out_path, exc))

    def close(self):
        self._connected = False
        self._pid = None
