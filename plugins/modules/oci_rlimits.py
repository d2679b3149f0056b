# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: oci_rlimits
short_description: Manage the rlimits of an OCI runtime spec used as containerd's base runtime spec
version_added: 0.1.0
author: rdma.node developers (!UNKNOWN)
description:
  - Manages C(process.rlimits) in an OCI runtime spec JSON file, the file that containerd's CRI
    runtimes read through C(base_runtime_spec). This is how a node raises C(RLIMIT_MEMLOCK) inside
    every container, which RDMA memory registration needs (Kubernetes has no pod ulimit field and
    containerd has no daemon-wide default).
  - containerd does not merge a base runtime spec with its default spec, it B(replaces) it. So when
    O(path) does not exist the module starts from the node's own C(ctr oci spec) output (the full
    default spec), never from a fragment.
  - Only the C(rlimits) array is rewritten; key order, unknown keys, hooks, mounts and the
    indentation style (spaces or tabs, detected from the file) of everything else stay as they are.
  - B(The RLIMIT_NOFILE trap.) C(ctr oci spec) carries C(RLIMIT_NOFILE) 1024/1024, which would cap
    every container at 1024 open files. Unless O(rlimits) lists C(RLIMIT_NOFILE) itself, the module
    raises a C(RLIMIT_NOFILE) entry whose soft or hard value is below O(nofile_floor) up to that floor,
    and reports the old value in RV(nofile_raised).
  - Changes apply to containers created after containerd has re-read its configuration (restart
    containerd, then recreate the pods).
options:
  path:
    description:
      - The absolute path of the spec file, for example C(/etc/containerd/base-runtime-spec.json); a
        relative path is refused (it would depend on the module's working directory on the node).
      - Its directory must exist. When the file does not exist it is created from C(ctr oci spec).
      - A symbolic link is followed - its target is edited and the link stays - as
        M(rdma.node.containerd_runtime) does for C(config.toml).
      - It must be a regular file of at most 64 MiB; a FIFO, socket or device is refused.
      - Parallel runs against one file queue up on an advisory lock (C(flock) on its directory), so
        no run overwrites another's change.
    type: path
    required: true
  rlimits:
    description:
      - The resource limits to manage. Limits not listed here are left as they are (except the
        C(RLIMIT_NOFILE) floor, see O(nofile_floor)).
      - Values accept integers, V(unlimited) or V(infinity) (written as 18446744073709551615, the
        value runc passes to setrlimit for "no limit") and numbers with a 1024-based suffix such as
        V(64K), V(8M), V(1G), V(2T). Negative values, fractions and a soft value above the hard value
        are rejected.
    type: list
    elements: dict
    default: []
    suboptions:
      type:
        description:
          - The limit, as C(RLIMIT_MEMLOCK) or C(MEMLOCK) (case does not matter), one of the Linux
            rlimits C(RLIMIT_CPU), C(RLIMIT_FSIZE), C(RLIMIT_DATA), C(RLIMIT_STACK), C(RLIMIT_CORE),
            C(RLIMIT_RSS), C(RLIMIT_NPROC), C(RLIMIT_NOFILE), C(RLIMIT_MEMLOCK), C(RLIMIT_AS),
            C(RLIMIT_LOCKS), C(RLIMIT_SIGPENDING), C(RLIMIT_MSGQUEUE), C(RLIMIT_NICE),
            C(RLIMIT_RTPRIO), C(RLIMIT_RTTIME).
        type: str
        required: true
      soft:
        description:
          - The soft limit. When omitted, O(rlimits[].hard) is used for both.
        type: raw
      hard:
        description:
          - The hard limit. When omitted, O(rlimits[].soft) is used for both.
        type: raw
      state:
        description:
          - V(present) sets the limit (updating an existing entry in place, or appending one);
            V(absent) removes every entry of this type.
        type: str
        choices: [present, absent]
        default: present
  regenerate:
    description:
      - Rebuild the file from the node's current C(ctr oci spec) and re-apply O(rlimits), so a
        containerd upgrade does not leave a stale spec behind. Local edits other than the rlimits
        are dropped; the diff shows what changed.
      - The rebuilt spec keeps the indentation style of the existing file.
    type: bool
    default: false
  nofile_floor:
    description:
      - When O(rlimits) does not list C(RLIMIT_NOFILE), an C(RLIMIT_NOFILE) entry of the spec whose
        soft or hard value is below this floor is raised to it (each value to at least the floor).
        The default is the kernel's default C(fs.nr_open).
      - V(0) turns the floor off.
      - An entry that is absent is not added; containers then inherit containerd's own limit.
    type: int
    default: 1048576
  backup:
    description:
      - Keep a copy of the previous file (timestamped, next to it) when the module changes it.
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.files
  - rdma.node.attributes
  - rdma.node.attributes.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  safe_file_operations:
    support: full
requirements:
  - C(ctr) (containerd's CLI) on the node when O(path) does not exist or O(regenerate=true).
notes:
  - Point the CRI runtimes at the file with M(rdma.node.containerd_runtime).
  - On a host without C(CAP_SYS_RESOURCE) a runtime cannot raise a limit above the hard limit of
    the process that starts it; runc then fails with C(error setting rlimit type 8). Raise
    containerd's own limit with M(rdma.node.systemd_limits) (C(LimitMEMLOCK=infinity)).
seealso:
  - module: rdma.node.systemd_limits
  - module: rdma.node.containerd_runtime
"""

EXAMPLES = r"""
- name: Lift the memory lock limit of every container (RDMA memory registration)
  rdma.node.oci_rlimits:
    path: /etc/containerd/base-runtime-spec.json
    rlimits:
      - type: RLIMIT_MEMLOCK
        soft: unlimited
        hard: unlimited
    backup: true

- name: Choose RLIMIT_NOFILE yourself instead of the default floor
  rdma.node.oci_rlimits:
    path: /etc/containerd/base-runtime-spec.json
    rlimits:
      - type: MEMLOCK
        soft: unlimited
        hard: unlimited
      - type: NOFILE
        soft: 65536
        hard: 1M

- name: Rebuild the spec from the upgraded containerd's default, keeping the limits
  rdma.node.oci_rlimits:
    path: /etc/containerd/base-runtime-spec.json
    regenerate: true
    rlimits:
      - type: RLIMIT_MEMLOCK
        soft: unlimited
        hard: unlimited
  register: __spec

- name: Remove a limit again
  rdma.node.oci_rlimits:
    path: /etc/containerd/base-runtime-spec.json
    rlimits:
      - type: RLIMIT_CORE
        state: absent
"""

RETURN = r"""
path:
  description: The spec file.
  returned: always
  type: str
  sample: /etc/containerd/base-runtime-spec.json
rlimits:
  description: C(process.rlimits) as written (or as it would be written in check mode).
  returned: always
  type: list
  elements: dict
  sample:
    - {type: RLIMIT_NOFILE, hard: 1048576, soft: 1048576}
    - {type: RLIMIT_MEMLOCK, hard: 18446744073709551615, soft: 18446744073709551615}
nofile_raised:
  description:
    - V(false) when the C(RLIMIT_NOFILE) floor changed nothing; otherwise the old C(soft) and C(hard)
      values that were raised to O(nofile_floor).
  returned: always
  type: raw
  sample: {soft: 1024, hard: 1024}
created:
  description: Whether the file did not exist and was (or would be) created from C(ctr oci spec).
  returned: always
  type: bool
  sample: false
regenerated:
  description: Whether an existing file was rebuilt from C(ctr oci spec) (O(regenerate=true)).
  returned: always
  type: bool
  sample: false
backup_file:
  description: The backup of the previous file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /etc/containerd/base-runtime-spec.json.12345.2026-01-02@03:04:05~
msg:
  description: What was done, including the C(RLIMIT_NOFILE) floor when it applied.
  returned: always
  type: str
  sample: "RLIMIT_NOFILE raised from soft 1024/hard 1024 to soft 1048576/hard 1048576 (nofile_floor)"
diff:
  description: The file before and after.
  returned: in diff mode
  type: dict
  contains:
    before:
      description: The previous content (empty when the file is created).
      type: str
    after:
      description: The new content.
      type: str
    before_header:
      description: The file path.
      type: str
    after_header:
      description: The file path.
      type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._files import locked, read_text, resolve_target, write_atomically
from ansible_collections.rdma.node.plugins.module_utils._oci_spec import (
    DEFAULT_NOFILE_FLOOR,
    SpecError,
    load_spec,
    plan_spec,
)
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RlimitError, normalize_rlimits


def default_spec(module, path, regenerate):
    """The output of the node's ``ctr oci spec``."""
    ctr = module.get_bin_path("ctr")
    if not ctr:
        why = "regenerate needs" if regenerate else "%s does not exist and creating it needs" % path
        module.fail_json(
            msg="%s the default spec from `ctr oci spec`, but ctr (containerd's CLI) is not installed." % why
        )
    rc, out, err = module.run_command([ctr, "oci", "spec"])
    if rc != 0:
        module.fail_json(msg="`%s oci spec` failed with rc %d: %s" % (ctr, rc, (err or out).strip()), rc=rc)
    return out


def _edit(module, path, regenerate, desired):
    """Read, plan and write the spec; the caller holds the lock across all three."""
    before = read_text(module, path, "an OCI runtime spec (JSON)")
    directory = os.path.dirname(os.path.abspath(path))
    if before is None and not os.path.isdir(directory):
        module.fail_json(msg="Cannot create %s: the directory %s does not exist." % (path, directory))
    if before is not None:
        try:
            load_spec(before, path)
        except SpecError as exc:
            module.fail_json(msg=str(exc))
    ctr_text = default_spec(module, path, regenerate) if before is None or regenerate else None
    try:
        plan = plan_spec(before, ctr_text, desired, module.params["nofile_floor"], regenerate, path)
    except SpecError as exc:
        module.fail_json(msg=str(exc))

    result = dict(
        changed=plan["changed"],
        path=path,
        rlimits=plan["rlimits"],
        nofile_raised=plan["nofile_raised"],
        created=plan["created"],
        regenerated=plan["regenerated"],
    )
    if module._diff:
        result["diff"] = dict(before=before or "", after=plan["text"], before_header=path, after_header=path)
    if plan["changed"] and not module.check_mode:
        backup_file = write_atomically(module, path, plan["text"], module.params["backup"])
        if backup_file:
            result["backup_file"] = backup_file
    if os.path.exists(path):
        file_args = module.load_file_common_arguments(module.params)
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"])

    notes = list(plan["messages"])
    if plan["created"]:
        notes.insert(0, "Created %s from `ctr oci spec`." % path)
    elif plan["regenerated"]:
        notes.insert(0, "Rebuilt %s from `ctr oci spec`." % path)
    if not notes:
        notes.append("%s %s the requested rlimits." % (path, "now has" if result["changed"] else "already has"))
    result["msg"] = " ".join(notes)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            rlimits=dict(
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    type=dict(type="str", required=True),
                    soft=dict(type="raw"),
                    hard=dict(type="raw"),
                    state=dict(type="str", choices=["present", "absent"], default="present"),
                ),
            ),
            regenerate=dict(type="bool", default=False),
            nofile_floor=dict(type="int", default=DEFAULT_NOFILE_FLOOR),
            backup=dict(type="bool", default=False),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params["path"]
    regenerate = module.params["regenerate"]
    if module.params["nofile_floor"] < 0:
        module.fail_json(msg="nofile_floor must be 0 (off) or a positive number of files, got %d."
                         % module.params["nofile_floor"])
    try:
        desired = normalize_rlimits(module.params["rlimits"])
    except RlimitError as exc:
        module.fail_json(msg=str(exc))

    if "\x00" in path:
        module.fail_json(msg="path %r contains a NUL byte; expected the path of an OCI runtime spec." % path)
    if not os.path.isabs(path):
        module.fail_json(msg="path must be the absolute path of the OCI runtime spec on the node, got %r." % path)
    target = resolve_target(module, path, True, "an OCI runtime spec")
    with locked(module, target):
        _edit(module, target, regenerate, desired)


if __name__ == "__main__":
    main()
