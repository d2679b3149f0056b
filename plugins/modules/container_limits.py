# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: container_limits
short_description: Read the locked-memory and open-files limits that containerd and its containers really run with
version_added: 0.1.0
author: rdma.node developers (!UNKNOWN)
description:
  - Reads, in one call, what the processes of a node actually got, not what a file says. It reads containerd's
    main process (C(systemctl show), then C(/proc/<MainPID>/limits)) and the limits systemd has loaded for its unit.
    It reads the running containers of the given containerd namespaces (C(ctr tasks ls), then C(/proc/<pid>/limits)),
    with the pod each belongs to from its CRI labels. Optionally it starts a short test container from a spec.
  - The test container (O(probe_spec)) is started by containerd with exactly that spec, its root, command and cgroup
    replaced, in a containerd namespace of its own (C(rdma-node-probe)). Its root file system is an image containerd
    already has (mounted with C(ctr images mount), never pulled) or a directory. Everything it creates (container,
    snapshot, mount, namespace, working directory) is removed on every path.
  - Without O(probe_spec) nothing is started and nothing changes, so the module fits a read-only readiness run.
    In check mode no test container is started either.
  - It returns facts only; the checks of the C(node_remediation) role (C(rdma.node.evaluate)) judge them.
options:
  service:
    description: containerd's systemd unit. Without a type suffix V(.service) is added.
    type: str
    default: containerd.service
  address:
    description: containerd's socket, used by every C(ctr) call. When it does not exist no C(ctr) call is made.
    type: path
    default: /run/containerd/containerd.sock
  pidfile:
    description:
      - A file holding the pid of a containerd that systemd does not run (the simulated nodes of the demo inventory
        run their own). Its process is read instead of the unit's MainPID, no C(systemctl) is called, and
        C(systemd) stays empty.
      - Empty reads the systemd unit O(service).
    type: path
  namespaces:
    description:
      - containerd namespaces whose running containers are read (the CRI plugin keeps pods in V(k8s.io)).
      - Namespaces that do not exist on the node are left out. An empty list reads no container.
    type: list
    elements: str
    default: [k8s.io]
  expected_memlock:
    description:
      - The locked-memory limit new containers get (V(unlimited), a number of bytes, or a number with a 1024-based
        suffix such as V(4M)). Running containers with exactly this soft and hard limit are listed without their CRI
        labels, which cost one C(ctr containers info) per container. Empty reads the labels of every running container.
    type: str
    default: ""
  probe_spec:
    description:
      - An OCI spec file (the base runtime spec) to start a test container from. Empty starts none.
    type: path
  probe_image:
    description: An image containerd already has, in O(probe_image_namespace), used as the test container's root.
    type: str
    default: ""
  probe_image_namespace:
    description: containerd namespace of O(probe_image).
    type: str
    default: k8s.io
  probe_rootfs:
    description: A directory holding a root file system for the test container, used when O(probe_image) is not found.
    type: path
  probe_command:
    description: The test container's command; it must print C(/proc/self/limits).
    type: list
    elements: str
    default: [/bin/cat, /proc/self/limits]
  probe_timeout:
    description: Seconds the test container may run (C(timeout) kills it 5 seconds later).
    type: int
    default: 60
extends_documentation_fragment:
  - rdma.node.attributes
attributes:
  check_mode:
    support: full
    details: No test container is started in check mode; everything else is read as in a normal run.
  diff_mode:
    support: none
notes:
  - Needs C(systemctl) and, for the containers and the test container, C(ctr) and C(timeout) (coreutils). Run as root.
  - A runtime can only give a container a limit above containerd's own hard limit when it has C(CAP_SYS_RESOURCE).
seealso:
  - module: rdma.node.oci_rlimits
  - module: rdma.node.systemd_limits
  - module: rdma.node.evaluate
"""

EXAMPLES = r"""
- name: Read what containerd and the pods run with (read-only)
  rdma.node.container_limits:

- name: Also start a test container from the base runtime spec with a busybox image containerd has
  rdma.node.container_limits:
    probe_spec: /etc/containerd/rdma-spec.json
    probe_image: docker.io/library/busybox:1.36
    expected_memlock: unlimited

- name: Judge them
  rdma.node.evaluate:
    role: node_remediation
    params:
      memlock: unlimited
      spec_path: /etc/containerd/rdma-spec.json
"""

RETURN = r"""
ansible_facts:
  description: The facts, under one key.
  returned: always
  type: dict
  contains:
    rdma_memlock:
      description: What containerd and its containers run with.
      returned: always
      type: dict
      contains:
        containerd:
          description: containerd's main process and what systemd has for its unit.
          type: dict
          contains:
            unit:
              description: The unit.
              type: str
              sample: containerd.service
            pid:
              description: The unit's MainPID; V(0) when it does not run.
              type: int
              sample: 812
            active_state:
              description: systemd's ActiveState of the unit, or null when systemctl failed.
              type: str
              sample: active
            memlock:
              description: C(Max locked memory) of the process, soft and hard as C(/proc) prints them, or null.
              type: dict
              sample: {soft: "8388608", hard: "8388608"}
            nofile:
              description: C(Max open files) of the process, soft and hard, or null.
              type: dict
              sample: {soft: "1048576", hard: "1048576"}
            systemd:
              description: The limits systemd has loaded for the unit (C(systemctl show)).
              type: dict
              sample: {LimitMEMLOCK: infinity, LimitMEMLOCKSoft: infinity, LimitNOFILE: "1048576", LimitNOFILESoft: "1048576"}
            error:
              description: Why the process could not be read (systemctl failed, the process ended), or null.
              type: str
        socket:
          description: Whether containerd's socket (O(address)) exists.
          type: bool
        namespaces:
          description: The namespaces of O(namespaces) that exist on the node, in that order.
          type: list
          elements: str
          sample: [k8s.io]
        containers:
          description: The running containers of those namespaces (pod sandboxes included; their C(kind) label says so).
          type: list
          elements: dict
          contains:
            namespace:
              description: The containerd namespace.
              type: str
            id:
              description: The container id.
              type: str
            pid:
              description: Its process.
              type: int
            memlock:
              description: C(Max locked memory) of the process, soft and hard, or null.
              type: dict
              sample: {soft: "65536", hard: "65536"}
            labels:
              description:
                - The CRI labels as C(pod), C(pod_namespace), C(container) and C(kind) (V(sandbox) or V(container)),
                  null for a label the container lacks.
                - Null when they were not read (the container has O(expected_memlock)) or could not be.
              type: dict
              sample: {pod: ib-bench-0, pod_namespace: rdma-jobs, container: bench, kind: container}
        containers_error:
          description: Why the containers could not all be listed, or null.
          type: str
        probe:
          description: The test container, or null without O(probe_spec).
          type: dict
          contains:
            spec:
              description: The spec it started from.
              type: str
            source:
              description: Its root file system, V(image), V(rootfs), or V(none) when none was started.
              type: str
            root:
              description: The image or the directory.
              type: str
            ran:
              description: Whether the container was started.
              type: bool
            rc:
              description: The exit code of C(ctr run), or null.
              type: int
            memlock:
              description: C(Max locked memory) the container printed, soft and hard, or null.
              type: dict
              sample: {soft: "4194304", hard: "4194304"}
            nofile:
              description: C(Max open files) the container printed, soft and hard, or null.
              type: dict
            error:
              description: What went wrong (the mount, the spec, or the last line C(ctr run) printed on stderr), or null.
              type: str
              sample: "ctr: failed to create shim task: ... error setting rlimit type 8: operation not permitted: unknown"
            not_run:
              description: Why no container was started when nothing failed (check mode, nothing configured, nothing found), or null.
              type: str
            missing:
              description: Whether a configured image or directory was not found.
              type: bool
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._container_limits import Reader, gather
from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RlimitError, parse_rlimit_value
from ansible_collections.rdma.node.plugins.module_utils._systemd_dropin import DropinError, normalize_unit

# containerd's own rule for namespace names (namespaces/validate.go).
NAMESPACE_NAME = re.compile(r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$")


ARGUMENT_SPEC = dict(
    service=dict(type="str", default="containerd.service"),
    address=dict(type="path", default="/run/containerd/containerd.sock"),
    pidfile=dict(type="path"),
    namespaces=dict(type="list", elements="str", default=["k8s.io"]),
    expected_memlock=dict(type="str", default=""),
    probe_spec=dict(type="path"),
    probe_image=dict(type="str", default=""),
    probe_image_namespace=dict(type="str", default="k8s.io"),
    probe_rootfs=dict(type="path"),
    probe_command=dict(type="list", elements="str", default=["/bin/cat", "/proc/self/limits"]),
    probe_timeout=dict(type="int", default=60),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    try:
        unit = normalize_unit(params["service"])
    except DropinError as exc:
        module.fail_json(msg="service: %s" % exc)
    try:
        expected = parse_rlimit_value(params["expected_memlock"], "expected_memlock") if params["expected_memlock"].strip() else None
    except RlimitError as exc:
        module.fail_json(msg=str(exc))
    for namespace in params["namespaces"] + [params["probe_image_namespace"]]:
        if not NAMESPACE_NAME.match(namespace):
            module.fail_json(msg="%r is not a containerd namespace name (letters and digits, separated by single '.', '_' or '-'); "
                                 "check namespaces and probe_image_namespace." % namespace)
    if not os.path.isabs(params["address"]):
        module.fail_json(msg="address must be the absolute path of containerd's socket, got %s." % params["address"])
    if any(not value.strip() for value in params["probe_command"]):
        module.fail_json(msg="probe_command must not hold an empty entry, got %r." % params["probe_command"])
    if params["probe_spec"] and not params["probe_command"]:
        module.fail_json(msg="probe_command must name the command of the test container, got an empty list.")
    if params["probe_timeout"] < 1:
        module.fail_json(msg="probe_timeout must be a positive number of seconds, got %d." % params["probe_timeout"])
    if params["pidfile"] and not os.path.isabs(params["pidfile"]):
        module.fail_json(msg="pidfile must be an absolute path, got %s." % params["pidfile"])
    if params["probe_spec"] and not os.path.isabs(params["probe_spec"]):
        module.fail_json(msg="probe_spec must be an absolute path, got %s." % params["probe_spec"])

    probing = bool(params["probe_spec"])
    reader = Reader(
        run=module.run_command,
        ctr=module.get_bin_path("ctr", required=probing),
        address=params["address"],
        systemctl=None if params["pidfile"] else module.get_bin_path("systemctl"),
        timeout_bin=module.get_bin_path("timeout", required=probing),
        pidfile=params["pidfile"],
    )
    probe = None
    if probing:
        probe = dict(spec_path=params["probe_spec"], image=params["probe_image"].strip(),
                     image_namespace=params["probe_image_namespace"], rootfs=params["probe_rootfs"] or "",
                     command=params["probe_command"], timeout=params["probe_timeout"])
    facts = gather(reader, unit, params["namespaces"], expected, probe, module.check_mode)
    for warning in take_read_warnings():  # a /proc file that is not a regular file, a pidfile that is not a pid
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"rdma_memlock": facts})


if __name__ == "__main__":
    main()
