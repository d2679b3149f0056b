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
  - Knows the four config schemas and finds the runtimes where containerd looks for them.
    Version 1 (containerd 1.x) keeps them under C(plugins.cri.containerd.runtimes.<name>), version 2
    under C(plugins."io.containerd.grpc.v1.cri".containerd.runtimes.<name>), versions 3 (containerd 2.0)
    and 4 (containerd 2.3, which moved only the server's settings)
    under C(plugins."io.containerd.cri.v1.runtime".containerd.runtimes.<name>). A file without
    C(version) is version 1, as containerd reads it. Any other version is an error, not a guess.
  - Only the C(base_runtime_spec) lines change. Comments, quoting (single- or double-quoted keys and
    strings), indentation, tabs, trailing spaces, line endings and the order of tables (also a parent
    table written after its sub-tables) stay byte for byte. A runtime table without the key gets it
    after its last key, indented like its other keys; a runtime written with dotted keys
    (C(runtimes.runc.runtime_type = ...)) gets one more dotted key, an inline table
    (C(runc = { ... })) one more member.
  - The file is parsed once on the controller (Python's C(tomllib)); a 50 MB comment-heavy file is
    planned in seconds.
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
      - It must be a regular file (a FIFO, socket or device is refused) of at most 64 MiB. A UTF-8 byte order
        mark at its start, which containerd accepts, is kept.
      - B(Concurrent runs.) The file is read, edited on the controller and written back in separate
        steps; the write happens under an advisory lock on the file's directory and only when the file
        still has the digest it had when read (compare-and-swap). When another run changed it in
        between, the task reads it again and re-plans, up to 10 times, then fails; a change is never
        silently lost.
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
      - The deprecated C(default_runtime) table of schemas 1 and 2 (what older guides and docker's bundled
        containerd write, often with no C(runtimes) table at all) counts as the runtime V(default_runtime)
        when it sets C(runtime_type), because containerd 1.x then runs pods with it; it is included when
        O(runtimes) is omitted and can be named. C(untrusted_workload_runtime) is left alone. A runtime
        of the C(runtimes) table that is itself named C(default_runtime) (AKS names its containerd 2.x
        default runtime so) is that runtime; a schema 1 or 2 file with both is refused.
      - A file without C(version) is schema 1, as containerd reads it, unless its runtimes sit under
        the schema 3 name C(io.containerd.cri.v1.runtime) only (Talos's CRI drop-ins), which containerd 2.x
        reads there, so it is edited as schema 3.
      - When omitted, a runtime of Windows containers (C(runtime_type) C(io.containerd.runhcs.v1), which
        k3s's containerd 2.x template lists) is left alone with a warning, as a Linux memory lock limit
        means nothing to it. Named in O(runtimes), it is edited like any other.
      - With O(state=present), a file whose C(disabled_plugins) turns the CRI plugin off (Docker's
        C(containerd.io) package installs one) is refused, as containerd runs no pod with it.
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
  replace_with:
    description:
      - Internal, set by the action plugin for its write step; a task cannot set it (the action rejects it).
      - The path, on the node, of a file with the new content of O(path).
    type: path
  expected_sha256:
    description:
      - Internal, set by the action plugin together with O(replace_with); a task cannot set it.
      - The SHA-256 of O(path) when the action plugin read it (empty when it did not exist). The write
        is refused when the file changed since, so a concurrent edit is reported instead of lost.
    type: str
  known_sha256:
    description:
      - Internal, set by the action plugin when it reads the file; a task cannot set it (the action rejects it).
      - SHA-256 digests of contents of O(path) on this host that the controller already holds in its cache (see the notes).
        When the file's digest is one of them, the node returns only the digest, not the file's text, and the
        controller takes the text from its cache.
    type: list
    elements: str
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
  - B(Controller cache.) The controller keeps the texts of the files it read or wrote, addressed by their
    SHA-256, in C($RDMA_NODE_CONTENT_CACHE), else C($XDG_CACHE_HOME/rdma-node/content), else
    C(~/.cache/rdma-node/content) (private to the user, at most C($RDMA_NODE_CONTENT_CACHE_MAX_BYTES) bytes,
    default 256 MiB, least recently used entries removed first; V(0) turns it off). It sends a node the
    digests of the texts of O(path) that this same host sent or was sent (never another host's); when the
    file still has one of them, only the digest comes back. It also remembers that a file with that digest
    needed no change for these options and this containerd, so an unchanged file is then not parsed again
    either.
  - B(What the cache trusts.) A cached text only for the bytes whose SHA-256 is its name (checked on every
    read). The remembered digests and "no change needed" plans only when their HMAC-SHA256 verifies under
    the controller user's key, 32 random bytes kept outside the cache, in C($RDMA_NODE_CONTENT_CACHE_KEY),
    else C($XDG_CONFIG_HOME/rdma-node/content-cache.key), else C(~/.config/rdma-node/content-cache.key),
    made on first use with mode 0600. Whoever can read that key file (this user, root) can write entries
    the controller believes; a cache directory copied, restored, shared or written by anyone else cannot
    make it skip an edit or use another text. An entry that fails these checks is removed and the file
    is read and planned again. A key file that is a link, not this user's, readable or writable by
    others, or not 32 bytes, and an unusable cache directory, turn the cache off with a warning (every run
    then reads and plans the whole file).
  - B(What it trusts from a node.) Nothing it did not send; a node that answers with a digest it was not
    offered, or sends a text whose SHA-256 is not the one it reports, fails the task before anything is
    planned, transferred or written.
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
sha256:
  description: The SHA-256 of the file as read on the node before any change (empty when it did not exist).
  returned: always
  type: str
  sample: 3b4c...e9
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

import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._containerd_options import ARGUMENT_SPEC, REQUIRED_IF
from ansible_collections.rdma.node.plugins.module_utils._files import (
    DEFAULT_MAX_BYTES,
    FileReadError,
    locked,
    read_bytes,
    read_text_or_none,
    write_atomically,
)

# The action plugin's write step: the new content (already on the node) and the digest it planned against.
# They are documented, but only the action plugin passes them: its own argument spec does not accept them.
# known_sha256 likewise: the digests of contents the controller holds, so a known file is not sent again.
NODE_ARGUMENT_SPEC = dict(ARGUMENT_SPEC, replace_with=dict(type="path"), expected_sha256=dict(type="str"),
                          known_sha256=dict(type="list", elements="str", no_log=False))
# The base runtime spec is a few kilobytes; refuse to load something absurd into memory.
_SPEC_MAX_BYTES = 64 * 1024 * 1024
_CONFIG_WHAT = "containerd's config.toml (TOML text)"


def _reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def _read_config(module, path):
    """The file's real path (links followed), whether it exists, its text and its SHA-256."""
    if "\x00" in path:
        module.fail_json(msg="path %r contains a NUL byte; expected the path of containerd's config.toml." % path)
    real = os.path.realpath(path)
    try:
        data = read_bytes(real, _CONFIG_WHAT, DEFAULT_MAX_BYTES)
    except FileReadError as exc:
        module.fail_json(msg=str(exc))
    if data is None:
        return real, False, None, ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        module.fail_json(msg="%s is not UTF-8 text (byte %d), so it is not a TOML file." % (path, exc.start))
    return real, True, text, hashlib.sha256(data).hexdigest()


def _spec_status(path):
    """'ok', or why containerd's CRI plugin could not load the spec file."""
    if "\x00" in path:
        return "not a usable path (it contains a NUL byte)"
    try:
        text = read_text_or_none(path, "an OCI runtime spec (JSON)", _SPEC_MAX_BYTES)
    except FileReadError as exc:
        return "unusable (%s)" % str(exc).rstrip(".")
    if text is None:
        return "missing"
    try:
        spec = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return "not valid JSON (nested too deeply)"
    except ValueError as exc:
        return "not valid JSON (%s)" % exc
    if not isinstance(spec, dict):
        return "not a JSON object"
    return "ok"


def _replace(module, params):
    """The write step: replace the file with ``replace_with`` only if it is still what was read.

    Compare-and-swap under a lock rather than a lock held across the whole task: the edit is planned
    on the controller between two round trips, and a lock cannot outlive the module process that
    holds it. The lock (flock on the directory, the one every writer in this collection takes)
    makes "compare digest, then rename" atomic against other writers; the digest catches any
    change made since the read, by anyone. A mismatch fails visibly and the action plugin retries.
    """
    real = os.path.realpath(params["path"])
    with locked(module, real):
        try:
            current = read_bytes(real, _CONFIG_WHAT, DEFAULT_MAX_BYTES)
            new = read_bytes(params["replace_with"], "the new content of %s" % real, DEFAULT_MAX_BYTES)
        except FileReadError as exc:
            module.fail_json(msg=str(exc))
        if new is None:
            module.fail_json(msg="%s is missing on the node; nothing was written." % params["replace_with"])
        digest = "" if current is None else hashlib.sha256(current).hexdigest()
        if digest != (params["expected_sha256"] or ""):
            module.fail_json(msg="%s changed on the node since it was read (another task or process wrote it); "
                                 "nothing was written." % real, conflict=True, sha256=digest)
        if current == new:
            module.exit_json(changed=False, path=real, sha256=digest)
        backup_file = write_atomically(module, real, new, backup=params["backup"])
    result = dict(changed=True, path=real, sha256=hashlib.sha256(new).hexdigest())
    if backup_file:
        result["backup_file"] = backup_file
    module.exit_json(**result)


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
        argument_spec=NODE_ARGUMENT_SPEC,
        required_if=REQUIRED_IF,
        supports_check_mode=True,
    )
    params = module.params
    if params["replace_with"] is not None:
        if params["expected_sha256"] is None:
            module.fail_json(msg="replace_with needs expected_sha256 (both are set by the action plugin only).")
        if module.check_mode:
            module.exit_json(changed=True, msg="check mode: nothing written.")
        _replace(module, params)
    # Read-only inspection for the action plugin, which plans the edit on the controller. The text
    # goes to the controller once (it plans the edit there, with tomlkit); the digest lets the write
    # step prove nothing changed in between without sending the file back.
    real, exists, content, digest = _read_config(module, params["path"])
    # The controller already holds this exact content: the digest alone identifies it.
    content_known = exists and digest in (params["known_sha256"] or ())
    directory = os.path.dirname(real)
    node = {
        "path": real,
        "exists": exists,
        "content": None if content_known else content,
        "content_known": content_known,
        "sha256": digest,
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
