# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: systemd_limits
short_description: Manage the resource limits (Limit*=) of a systemd unit through its own drop-in
version_added: 0.1.0
author: rdma.node developers (!UNKNOWN)
description:
  - Writes C(/etc/systemd/system/<unit>.d/<dropin_name>.conf) with C(Limit*=) directives, for example
    C(LimitMEMLOCK=infinity) for C(containerd.service), the daemon that starts RDMA containers.
  - The drop-in belongs to this module; it holds exactly the limits given in O(limits).
  - Values are checked the way systemd 252 parses them, so a typo fails here instead of being
    ignored by systemd with only a log line.
  - Reports every other drop-in or unit file that sets the same directives. Drop-ins apply after
    the unit file, sorted by file name across C(/etc), C(/run) and C(/usr/lib); the last assignment
    wins, so a drop-in whose name sorts after O(dropin_name) overrides ours (RV(overridden_by)).
  - Where systemd runs (C(/run/systemd/system) exists and O(root=/)), reloads systemd after a change
    and reports the limits systemd has loaded for the unit (RV(effective)).
  - New limits apply to processes started afterwards; restart the unit (RV(restart_required)).
options:
  unit:
    description:
      - The unit, for example V(containerd.service). Without a type suffix V(.service) is added.
      - Only service, socket, mount and swap units have resource limits.
    type: str
    required: true
  limits:
    description:
      - "The limits as C(NAME: value), for example C(MEMLOCK: infinity) and C(NOFILE: 1048576). Names
        may carry the C(Limit) prefix (V(LimitMEMLOCK)) or not; case does not matter."
      - Values are what systemd accepts for that limit - V(infinity), a size in bytes with an optional
        1024-based suffix C(B), C(K), C(M), C(G), C(T), C(P), C(E) for the size limits (C(MEMLOCK),
        C(STACK), C(AS), ...), a plain number for the count limits (C(NOFILE), C(NPROC), ...), a time
        span for C(CPU) and C(RTTIME) - or C(soft:hard) of two such values. V(unlimited) is accepted
        and written as V(infinity).
      - Required when O(state=present); ignored when O(state=absent), which removes the whole drop-in.
    type: dict
  dropin_name:
    description:
      - File name of the drop-in; V(.conf) is added when missing. Drop-ins apply sorted by file name,
        so a higher number wins over lower ones.
    type: str
    default: 50-rdma-node-limits
  root:
    description:
      - The root of the file system to manage, for images and tests. systemd is only reloaded and
        queried when this is V(/).
    type: path
    default: /
  daemon_reload:
    description:
      - Run C(systemctl daemon-reload) after changing the drop-in, when systemd is running (detected by
        C(/run/systemd/system)). Without it systemd keeps the old limits until the next reload.
    type: bool
    default: true
  state:
    description:
      - V(present) writes the drop-in, V(absent) removes it (and its directory when that becomes empty).
      - A drop-in at that path that is a symbolic link is refused, not followed - a link there (for
        example to C(/dev/null), which masks the drop-in) belongs to someone else - and nothing is
        changed. A drop-in that is not UTF-8 text is still replaced or removed, as the module owns it.
    type: str
    choices: [present, absent]
    default: present
  backup:
    description:
      - Keep a copy of the previous drop-in (timestamped, next to it) when it changes or is removed.
    type: bool
    default: false
extends_documentation_fragment:
  - rdma.node.attributes
  - rdma.node.attributes.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  safe_file_operations:
    support: full
notes:
  - systemd clamps C(infinity) to the hard limit of the process manager itself; in a container
    without C(CAP_SYS_RESOURCE) the effective value can be lower than written.
seealso:
  - module: rdma.node.oci_rlimits
  - module: ansible.builtin.systemd_service
"""

EXAMPLES = r"""
- name: Let containerd lock unlimited memory and open many files
  rdma.node.systemd_limits:
    unit: containerd.service
    limits:
      MEMLOCK: infinity
      NOFILE: 1048576
  register: __limits
  notify: Restart containerd

- name: Fail when another drop-in overrides ours
  ansible.builtin.assert:
    that: __limits.overridden_by | length == 0
    fail_msg: "{{ __limits.overridden_by }}"

- name: Soft and hard limit separately
  rdma.node.systemd_limits:
    unit: containerd
    limits:
      LimitMEMLOCK: "64M:infinity"

- name: Remove the drop-in
  rdma.node.systemd_limits:
    unit: containerd.service
    state: absent
"""

RETURN = r"""
path:
  description: The drop-in file.
  returned: always
  type: str
  sample: /etc/systemd/system/containerd.service.d/50-rdma-node-limits.conf
unit:
  description: The full unit name.
  returned: always
  type: str
  sample: containerd.service
limits:
  description: The directives written, as systemd reads them.
  returned: always
  type: dict
  sample: {LimitMEMLOCK: infinity, LimitNOFILE: "1048576"}
unit_file:
  description: The unit file systemd would load (the first on its search path), or null when there is none.
  returned: always
  type: str
  sample: /lib/systemd/system/containerd.service
dropins:
  description: Every drop-in of the unit in the order systemd applies them (ours included when present).
  returned: always
  type: list
  elements: str
overridden_by:
  description:
    - Drop-ins applied after ours that set one of our directives to a valid value; they win.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file.
      type: str
    line:
      description: Line number of the assignment.
      type: int
    directive:
      description: The directive, for example C(LimitMEMLOCK).
      type: str
    value:
      description: The value that wins.
      type: str
  sample:
    - {path: /etc/systemd/system/containerd.service.d/90-local.conf, line: 2, directive: LimitMEMLOCK, value: 64M}
also_set_in:
  description:
    - The unit file and drop-ins applied before ours that set the same directives; ours wins over them.
  returned: always
  type: list
  elements: dict
  sample:
    - {path: /lib/systemd/system/containerd.service, line: 26, directive: LimitNOFILE, value: infinity}
masked_by:
  description: A drop-in with the same file name earlier on systemd's search path that hides ours, or null.
  returned: always
  type: str
effective:
  description:
    - The limits systemd has loaded for the unit (C(systemctl show)), with the C(Soft) variants. Empty
      where systemd does not run or O(root) is not V(/).
  returned: always
  type: dict
  sample: {LimitMEMLOCK: infinity, LimitMEMLOCKSoft: infinity}
daemon_reloaded:
  description: Whether C(systemctl daemon-reload) ran.
  returned: always
  type: bool
restart_required:
  description: Whether the drop-in changed, so the unit must be restarted for its processes to get the limits.
  returned: always
  type: bool
created:
  description: Whether the drop-in did not exist before and was (or would be in check mode) written.
  returned: always
  type: bool
  sample: true
backup_file:
  description: The backup of the previous drop-in.
  returned: when O(backup=true) and an existing drop-in changed or was removed
  type: str
  sample: /etc/systemd/system/containerd.service.d/50-rdma-node-limits.conf.12345.2026-01-02@03:04:05~
diff:
  description: The drop-in before and after.
  returned: in diff mode
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._rlimits import (
    RlimitError,
    SYSTEMD_DIRECTIVES,
    normalize_systemd_limits,
)
from ansible_collections.rdma.node.plugins.module_utils._files import (
    SMALL_FILE_MAX_BYTES,
    FileReadError,
    locked,
    read_bytes,
    remove_file,
    take_read_warnings,
    write_atomically,
)
from ansible_collections.rdma.node.plugins.module_utils._systemd_dropin import (
    DEFAULT_DROPIN_NAME,
    DropinError,
    analyze,
    dropin_filename,
    dropin_path,
    normalize_unit,
    parse_systemctl_show,
    parse_unit_text,
    render_dropin,
)


def systemd_running(root):
    return root in ("/", "") and os.path.isdir("/run/systemd/system")


def _read_own_dropin(module, path):
    """Our drop-in's text (None when missing). Bytes that are not UTF-8 are shown replaced: the file is
    ours to overwrite or remove, so an unreadable one must not block that."""
    try:
        data = read_bytes(path, "a systemd drop-in", SMALL_FILE_MAX_BYTES, follow=False)
    except FileReadError as exc:
        module.fail_json(msg="%s Nothing was changed." % exc)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        module.warn("%s is not UTF-8 text; as the module owns it, it is replaced or removed as a whole." % path)
        return data.decode("utf-8", "replace")


def _apply(module, path, unit, limits):
    """Read, compare and write our drop-in; the caller holds the directory lock across it."""
    params = module.params
    before = _read_own_dropin(module, path)
    after = render_dropin(unit, limits) if params["state"] == "present" else None
    changed = before != after
    directives = list(limits) if limits else sorted(
        {key for dummy, key, value, line in parse_unit_text(before or "") if key in SYSTEMD_DIRECTIVES}
    )
    result = dict(changed=changed, path=path, unit=unit, limits=limits, daemon_reloaded=False,
                  restart_required=changed, effective={}, created=before is None and after is not None)
    if module._diff:
        result["diff"] = dict(before=before or "", after=after or "", before_header=path, after_header=path)
    if changed and not module.check_mode:
        if after is None:
            if params["backup"]:
                result["backup_file"] = module.backup_local(path)
            remove_file(module, path, remove_empty_parent=True)
        else:
            backup_file = write_atomically(module, path, after, backup=params["backup"], mode=0o644, make_parent=True)
            if backup_file:
                result["backup_file"] = backup_file
    return result, directives, after


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", required=True),
            limits=dict(type="dict"),
            dropin_name=dict(type="str", default=DEFAULT_DROPIN_NAME),
            root=dict(type="path", default="/"),
            daemon_reload=dict(type="bool", default=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            backup=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ("limits",))],
        supports_check_mode=True,
    )
    params = module.params
    root = params["root"]
    try:
        unit = normalize_unit(params["unit"])
        filename = dropin_filename(params["dropin_name"])
        limits = normalize_systemd_limits(params["limits"]) if params["state"] == "present" else {}
    except (DropinError, RlimitError) as exc:
        module.fail_json(msg=str(exc))
    if params["state"] == "present" and not limits:
        module.fail_json(msg="limits must name at least one limit (for example MEMLOCK: infinity) when state is present.")
    if not os.path.isdir(root):
        module.fail_json(msg="root %s is not a directory." % root)

    path = dropin_path(root, unit, filename)
    with locked(module, path):
        result, directives, after = _apply(module, path, unit, limits)

    report = analyze(root, unit, filename, directives, after)
    for key in ("unit_file", "dropins", "overridden_by", "also_set_in", "masked_by"):
        result[key] = report[key]
    for warning in report["warnings"] + take_read_warnings():
        module.warn(warning)

    if systemd_running(root):
        systemctl = module.get_bin_path("systemctl", required=True)
        if result["changed"] and params["daemon_reload"] and not module.check_mode:
            rc, out, err = module.run_command([systemctl, "daemon-reload"])
            if rc != 0:
                module.fail_json(msg="systemctl daemon-reload failed with rc %d: %s" % (rc, err.strip()), **result)
            result["daemon_reloaded"] = True
        if directives:
            argv = [systemctl, "show"]
            for directive in directives:
                argv.extend(["-p", directive, "-p", directive + "Soft"])
            argv.extend(["--", unit])  # the unit name is never read as an option
            rc, out, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg="systemctl show %s failed with rc %d: %s" % (unit, rc, err.strip()), **result)
            result["effective"] = parse_systemctl_show(out)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
