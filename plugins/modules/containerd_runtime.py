# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: containerd_runtime
short_description: Point containerd's CRI runtimes at a base runtime spec in config.toml
version_added: 0.1.0
author: rdma.node developers (!UNKNOWN)
description:
  - Sets (or removes) C(base_runtime_spec) on the CRI runtimes of containerd's C(config.toml), so that
    every container those runtimes create starts from that OCI spec, for example one with
    C(RLIMIT_MEMLOCK) raised for RDMA (see M(rdma.node.oci_rlimits)).
  - Knows the three config schemas and finds the runtimes where containerd looks for them.
    Version 1 (containerd 1.x) keeps them under C(plugins.cri.containerd.runtimes.<name>), version 2
    under C(plugins."io.containerd.grpc.v1.cri".containerd.runtimes.<name>), version 3 (containerd 2.x)
    under C(plugins."io.containerd.cri.v1.runtime".containerd.runtimes.<name>). A file without
    C(version) is version 1, as containerd reads it. Any other version is an error, not a guess.
  - Only the C(base_runtime_spec) lines change. Comments, quoting (single- or double-quoted keys and
    strings), indentation, tabs, trailing spaces, line endings and the order of tables (also a parent
    table written after its sub-tables) stay byte for byte. A runtime table without the key gets it
    after its last key, indented like its other keys.
  - The TOML is edited on the Ansible controller (with the Python library C(tomlkit)); the node needs
    only Python's standard library. This is an action plugin; on the node, this module only reads the
    file, the base runtime spec and C(containerd config default). The file is then written by
    M(ansible.builtin.copy) (atomic rename in the file's directory, owner, mode and SELinux context
    kept, optional backup).
  - Before anything is written the result is checked with the node's own containerd, see O(validate).
  - containerd reads C(config.toml) only when it starts. Restart it when RV(restart_required) is true
    (a handler), then recreate the pods that started before, as the new spec applies to new
    containers only.
options:
  path:
    description:
      - containerd's configuration file on the node. A symbolic link is followed.
      - When it does not exist it is created from the node's C(containerd config default) (with
        O(state=present)); its directory must exist.
      - When the file has to change and its directory is not writable (for example a read-only file
        system), the task fails, in check mode too.
    type: path
    default: /etc/containerd/config.toml
  base_runtime_spec:
    description:
      - Absolute path, on the node, of the OCI runtime spec JSON file the runtimes should use (it
        replaces containerd's default spec, it is not merged with it).
      - Required with O(state=present).
    type: path
  runtimes:
    description:
      - Names of the CRI runtimes to change, for example V(runc) and V(nvidia).
      - When omitted, every runtime the file configures for CRI (which includes C(nvidia) where the
        NVIDIA GPU Operator or C(nvidia-ctk) added it). When the file configures none, the task fails
        unless O(create_missing=true), which then adds containerd's default runtime (the file's
        C(default_runtime_name), else V(runc)).
      - The deprecated C(default_runtime) and C(untrusted_workload_runtime) tables of schemas 1 and 2
        are not runtimes of this list and are left alone.
    type: list
    elements: str
  state:
    description:
      - V(present) sets C(base_runtime_spec) to O(base_runtime_spec).
      - V(absent) removes the C(base_runtime_spec) line of the runtimes, so they use containerd's default
        spec again (an empty value already counts as absent).
    type: str
    choices: [present, absent]
    default: present
  create_missing:
    description:
      - With O(state=present), add a runtime named in O(runtimes) that the file does not configure, as
        a new table with C(runtime_type = "io.containerd.runc.v2") (containerd's runc shim) and
        C(base_runtime_spec). Set any other option of the new runtime yourself.
      - When V(false), a named runtime that does not exist is an error.
    type: bool
    default: false
  backup:
    description:
      - Keep a copy of the previous file (timestamped, next to it) when the file changes.
    type: bool
    default: false
  validate:
    description:
      - Check the result with the node's containerd before writing it. The candidate file is parsed by
        C(containerd --config <copy> config dump) (with its C(imports), run from C(/) like the service);
        the check passes when containerd accepts it B(and) its merged view shows the expected
        C(base_runtime_spec) on every runtime (an imported file can replace the whole CRI section).
        It also checks that O(base_runtime_spec) exists on the node and holds a JSON object, because
        containerd's CRI plugin does not start when it cannot load that file. On failure the file is
        left untouched and the message quotes containerd.
      - When not set, validate when containerd is installed on the node. When the node's containerd is
        older than the file's schema (for example containerd 1.6, which knows versions 1 and 2, and a
        version 3 file, which it would silently ignore), validation is skipped with a warning.
      - V(true) requires validation; the task fails when containerd is missing or cannot read the schema.
      - V(false) skips it.
      - In check mode validation runs too (it writes only to Ansible's temporary directory); a missing
        or invalid O(base_runtime_spec) is then a warning, as an earlier task may create it.
    type: bool
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
  action:
    description: Runs on the controller as an action plugin, which calls modules on the node.
    support: full
requirements:
  - tomlkit on the Ansible controller.
  - containerd on the node to validate, or to create a missing O(path).
notes:
  - Create the spec file with M(rdma.node.oci_rlimits) first, and raise containerd's own limit with
    M(rdma.node.systemd_limits) (C(LimitMEMLOCK=infinity)).
  - Under containerd 1.6 a file listed in C(imports) that has a C([plugins."io.containerd.grpc.v1.cri"])
    section replaces the whole CRI section of C(config.toml); validation detects that case.
seealso:
  - module: rdma.node.oci_rlimits
  - module: rdma.node.systemd_limits
  - name: containerd CRI plugin configuration
    description: The runtime options, C(base_runtime_spec) included.
    link: https://github.com/containerd/containerd/blob/main/docs/cri/config.md
"""

EXAMPLES = r"""
- name: Every CRI runtime (runc, nvidia, ...) starts containers from the RDMA spec
  rdma.node.containerd_runtime:
    base_runtime_spec: /etc/containerd/rdma-spec.json
    backup: true
  notify: Restart containerd

- name: Only the nvidia runtime, added when the GPU Operator has not configured it yet
  rdma.node.containerd_runtime:
    path: /etc/containerd/config.toml
    base_runtime_spec: /etc/containerd/rdma-spec.json
    runtimes: [nvidia]
    create_missing: true
  register: __containerd_runtime

- name: Prepare a version 3 file on a node whose containerd is still 1.6 (no validation possible)
  rdma.node.containerd_runtime:
    path: /etc/containerd/config-2.x.toml
    base_runtime_spec: /etc/containerd/rdma-spec.json
    validate: false

- name: Back to containerd's default spec
  rdma.node.containerd_runtime:
    state: absent
  notify: Restart containerd
"""

RETURN = r"""
path:
  description: The file edited (symbolic links resolved).
  returned: always
  type: str
  sample: /etc/containerd/config.toml
config_version:
  description: The schema version of the file (1 when it has no C(version)).
  returned: when the file exists or is created
  type: int
  sample: 2
runtimes_changed:
  description: The runtimes whose C(base_runtime_spec) changed (or would change in check mode).
  returned: always
  type: list
  elements: str
  sample: [runc, nvidia]
runtimes_created:
  description: The runtimes added by O(create_missing=true); they are also in RV(runtimes_changed).
  returned: always
  type: list
  elements: str
  sample: []
created:
  description: Whether the file did not exist and was (or would be) created from C(containerd config default).
  returned: always
  type: bool
  sample: false
restart_required:
  description: Whether the file changed, so containerd must be restarted to read it.
  returned: always
  type: bool
  sample: true
validated:
  description:
    - Whether the node's containerd checked the new content (see O(validate)).
    - V(false) when nothing changes, as there is nothing to check.
  returned: always
  type: bool
  sample: true
containerd_version:
  description: The node's C(containerd --version), when containerd was looked up.
  returned: when containerd is installed on the node and was needed
  type: str
  sample: containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3
backup_file:
  description: The backup of the previous file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /etc/containerd/config.toml.12345.2026-01-02@03:04:05~
diff:
  description: The file before and after.
  returned: in diff mode, when the file changes
  type: dict
  contains:
    before:
      description: The previous content (empty when the file is created).
      type: str
    after:
      description: The new content.
      type: str
    before_header:
      description: The file's path.
      type: str
    after_header:
      description: The file's path.
      type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.rdma.node.plugins.module_utils._containerd_options import ARGUMENT_SPEC, REQUIRED_IF

# The base runtime spec is a few kilobytes; refuse to load something absurd into memory.
_SPEC_MAX_BYTES = 64 * 1024 * 1024


def _read_config(module, path):
    """The file's real path, whether it exists, and its text."""
    real = os.path.realpath(path)
    if not os.path.exists(real):
        return real, False, None
    if not os.path.isfile(real):
        module.fail_json(msg="%s is not a regular file; path must name containerd's config.toml." % path)
    try:
        with open(real, "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s." % (path, to_native(exc.strerror or exc)))
    try:
        return real, True, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        module.fail_json(msg="%s is not UTF-8 text (byte %d), so it is not a TOML file." % (path, exc.start))


def _spec_status(path):
    """'ok', or why containerd's CRI plugin could not load the spec file."""
    if not os.path.exists(path):
        return "missing"
    if not os.path.isfile(path):
        return "not a regular file"
    try:
        if os.path.getsize(path) > _SPEC_MAX_BYTES:
            return "larger than %d bytes" % _SPEC_MAX_BYTES
        with open(path, "rb") as handle:
            spec = json.loads(handle.read().decode("utf-8"))
    except (IOError, OSError) as exc:
        return "unreadable (%s)" % to_native(exc.strerror or exc)
    except (UnicodeDecodeError, ValueError) as exc:
        return "not valid JSON (%s)" % to_native(exc)
    if not isinstance(spec, dict):
        return "not a JSON object"
    return "ok"


def _containerd(module):
    """containerd's path, version and ``config default`` output; None values where it is missing."""
    found = {"containerd": None, "containerd_version": None, "default_config": None, "default_config_error": None}
    binary = module.get_bin_path("containerd")
    if not binary:
        return found
    found["containerd"] = binary
    rc, out, err = module.run_command([binary, "--version"])
    if rc == 0:
        found["containerd_version"] = out.strip()
    rc, out, err = module.run_command([binary, "config", "default"])
    if rc == 0:
        found["default_config"] = out
    else:
        found["default_config_error"] = (err or out).strip() or "exit status %d" % rc
    return found


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=REQUIRED_IF,
        supports_check_mode=True,
    )
    # Read-only inspection for the action plugin, which plans the edit on the controller.
    params = module.params
    real, exists, content = _read_config(module, params["path"])
    directory = os.path.dirname(real)
    node = {
        "path": real,
        "exists": exists,
        "content": content,
        "directory_exists": os.path.isdir(directory),
        "directory_writable": os.access(directory, os.W_OK),
        "spec_status": None,
    }
    present = params["state"] == "present"
    wants_validation = params["validate"] is not False
    if (exists and wants_validation) or (not exists and present):
        node.update(_containerd(module))
    if present:
        node["base_runtime_spec"] = params["base_runtime_spec"]
        if wants_validation:
            node["spec_status"] = _spec_status(params["base_runtime_spec"])
    module.exit_json(changed=False, node=node)


if __name__ == "__main__":
    main()
