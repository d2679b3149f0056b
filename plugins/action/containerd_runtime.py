# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdma.node.containerd_runtime: config.toml is edited here, on the controller.

Round trips to the node, chosen so that the node needs only Python's standard library and every
option stays documented (no hidden module parameters):

1. ``rdma.node.containerd_runtime`` (the module of the same name) reads, in one call, the file, the
   base runtime spec's state, and the node's ``containerd --version`` / ``containerd config default``
   (the default is both the content for a missing file and the schema that containerd reads). When
   nothing changes, this is the only round trip.
2. Only when the file changes and validation applies: the candidate goes to Ansible's temporary
   directory on the node and ``containerd --config <copy> config dump`` runs there as a plain command
   (no module, so it also runs in check mode, and it writes nothing but that copy). The dump comes
   back here and is parsed with tomlkit, so the check is what containerd really reads, not only its
   exit status: containerd 1.6 exits 0 on a version 3 file and on an import that replaces the CRI
   section, and silently drops the runtime settings.
3. Only when the file changes, outside check mode: the module again, in its write step, moves the
   transferred content into place (temp file and rename in the target's directory, owner, mode and
   SELinux context of the old file kept, ``backup`` through ``backup_local``) - but only when the
   file still has the SHA-256 it had in step 1. When the validated copy is the content to write,
   it is not transferred a second time.

Concurrency: a compare-and-swap, not a lock across the task. The edit is planned here, between
round trips, and a lock on the node cannot outlive the module process that took it. The write
step takes the directory lock every writer of this collection uses, compares the digest and
renames under it, so of two runs that read the same file only the first write lands; the other
gets a conflict, reads the file again and re-plans its edit on top (up to ``_CAS_ATTEMPTS`` times),
so parallel edits all land or the task fails saying so - never a lost update reported as changed.

Not shipping what the controller already has (``_content_cache``): the controller keeps every text it
read or wrote, addressed by SHA-256, and remembers per host and path the digests it saw last.
Step 1 sends that host's digests (the module's documented ``known_sha256``); a file that still has one
of them comes back as its digest alone and its text is taken from the cache (verified against the
digest; on a miss, step 1 runs once more without digests).

A node is not trusted with other nodes' files (config.toml holds registry credentials): a host is
offered only digests of texts that it sent or that were written to it, and an answer that claims
any other digest, or sends a text whose SHA-256 is not the one it reports, fails the task before
anything is planned, so no other host's text is ever planned, transferred or written for it. A plan that found nothing to change is
remembered too, keyed by everything it depends on (the file's digest and real path, every option,
the node's containerd version and default config, and the planner's own code), so an idempotent
re-run of an unchanged file neither transfers nor parses it. Anything that changes (check mode,
diff, validation, the write) always works from the full text as before.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
import sys

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.rdma.node.plugins.plugin_utils._containerd_config import (
    ARGUMENT_SPEC,
    BASE_RUNTIME_SPEC,
    REQUIRED_IF,
    ContainerdConfigError,
    EditPlan,
    check_dump,
    native_version,
    plan_base_runtime_spec,
    require_tomlkit,
    validate_spec_path,
    validation_text,
)
from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config, _toml_splice
from ansible_collections.rdma.node.plugins.plugin_utils._content_cache import ContentCache, is_digest, sha256_hex

display = Display()

# Rounds of read, plan, compare-and-swap before giving up on a file that keeps changing under us.
_CAS_ATTEMPTS = 10

# How many digests of a path's texts step 1 offers the host they came from.
_KNOWN_PER_HOST = 4

_LOG_MSG = re.compile(r'level=(?P<level>\w+) msg="(?P<msg>(?:[^"\\]|\\.)*)"')


def _containerd_label(version_output):
    """``containerd 1.6.20~ds1`` from ``containerd github.com/containerd/containerd 1.6.20~ds1 ...``."""
    words = (version_output or "").split()
    return "containerd %s" % words[2] if len(words) >= 3 else "containerd"


def _containerd_messages(stderr, level):
    return [match.group("msg").replace('\\"', '"') for match in _LOG_MSG.finditer(stderr or "")
            if match.group("level") == level]


_PLANNER = []


def _planner_identity():
    """The planner's code and libraries: a cached plan is only valid for the code that made it."""
    if not _PLANNER:
        digest = hashlib.sha256()
        for source in (_containerd_config.__file__, _toml_splice.__file__):
            with open(source, "rb") as handle:
                digest.update(handle.read())
        tomlkit = _toml_splice.tomlkit
        digest.update(repr((sys.version_info[:3], getattr(tomlkit, "__version__", None))).encode())
        _PLANNER.append(digest.hexdigest())
    return _PLANNER[0]


class ActionModule(ActionBase):

    TRANSFERS_FILES = True
    _args = None
    _transferred = None  # (text, remote path) of the validated candidate, reused by the write step
    _cache = None  # ContentCache of the texts read or written, and of plans that changed nothing
    _host = None
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        try:
            args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF)[1]
            result.update(self._containerd_runtime(args, task_vars or {}))
        except ContainerdConfigError as exc:
            raise AnsibleActionFail(str(exc)) from None
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    # ----------------------------------------------------------------------------------------------

    def _containerd_runtime(self, args, task_vars):
        require_tomlkit()
        self._args, self._transferred = dict(args), None
        self._cache, self._host = ContentCache.from_environment(), task_vars.get("inventory_hostname")
        try:
            for dummy in range(_CAS_ATTEMPTS):
                result, new_text, node = self._plan(args, task_vars)
                if new_text is None:
                    return result
                written = self._write(result["path"], new_text, args["backup"], node["sha256"], task_vars)
                if written is not None:
                    self._remember_text(new_text)  # the next run finds the file as written: a digest will do
                    result.update(written)
                    return result
        finally:
            if self._cache.problem:
                display.warning("rdma.node.containerd_runtime cannot use its controller cache (%s); the whole file "
                                "is read from the node every run." % self._cache.problem)
        raise AnsibleActionFail(
            "%s kept changing on the node while this task edited it (%d attempts, each found it rewritten by "
            "another task or process before its own write); nothing was written by this task."
            % (node["path"], _CAS_ATTEMPTS))

    def _read_node(self, args, task_vars, offer_known=True):
        """Step 1: the module reads the file and what containerd says; a failure keeps its reason.

        With ``offer_known`` the node is told the digests the cache holds for this host and path; a
        file that has one of them comes back without its text (``content_known``).
        """
        module_args = dict(args)
        known = self._known_digests() if offer_known else []
        if known:
            module_args["known_sha256"] = known
        node_result = self._execute_module(module_name="rdma.node.containerd_runtime", module_args=module_args,
                                           task_vars=task_vars)
        if node_result.get("failed") or "node" not in node_result:
            raise AnsibleActionFail(_node_failure(node_result),
                                    result={k: v for k, v in node_result.items() if k not in ("msg", "failed")})
        node = _trusted_answer(node_result["node"], known, args["path"])
        if node.get("content") is not None:
            self._remember_text(node["content"])
        return node

    # -- the controller cache ------------------------------------------------------------------------

    def _index_key(self):
        """The record listing the digests of this host's texts at this path, newest first."""
        return {"index": "host", "host": self._host, "path": self._args["path"]}

    def _known_digests(self):
        """The digests of this host's texts at this path that the cache still holds."""
        digests = self._cache.get_record(self._index_key())
        return [digest for digest in digests if is_digest(digest) and self._cache.has(digest)] \
            if isinstance(digests, list) else []

    def _remember_text(self, text):
        """Keep ``text`` (read from, or written to, this host's path) and note its digest for the next run."""
        stored = self._cache.put(to_bytes(text))
        if stored is None:
            return
        digests = self._cache.get_record(self._index_key())
        digests = [d for d in digests if d != stored] if isinstance(digests, list) else []
        self._cache.put_record(self._index_key(), [stored] + digests[:_KNOWN_PER_HOST - 1])

    def _node_text(self, node, args, task_vars):
        """``node`` with the file's text: from the node, else from the cache, else read again in full."""
        if node["content"] is not None or not node.get("content_known"):
            return node
        data = self._cache.get(node["sha256"])
        if data is not None:
            display.vvv("%s: the node sent only its digest %s; its text came from the controller cache."
                        % (node["path"], node["sha256"]))
            return dict(node, content=to_text(data))
        display.vvv("%s: the controller cache lost the text of %s; reading the file again." % (node["path"], node["sha256"]))
        return self._read_node(args, task_vars, offer_known=False)

    @staticmethod
    def _plan_key(node, args):
        """Everything the plan of an existing file depends on (more than it reads, never less)."""
        default_config = node.get("default_config")
        return {"plan": "containerd_runtime", "planner": _planner_identity(), "sha256": node["sha256"],
                "path": node["path"], "options": dict(args), "base_runtime_spec": node.get(BASE_RUNTIME_SPEC),
                "containerd_version": node.get("containerd_version"),
                "default_config_sha256": None if default_config is None else sha256_hex(to_bytes(default_config))}

    def _cached_plan(self, key):
        """The remembered plan of a file that needed no change, or None."""
        value = self._cache.get_record(key)
        if not (isinstance(value, dict) and isinstance(value.get("config_version"), int)
                and isinstance(value.get("warnings"), list)):
            return None
        return EditPlan(text=None, new_text=None, config_version=value["config_version"],
                        warnings=[str(warning) for warning in value["warnings"]])

    def _plan(self, args, task_vars):
        """``(result, new_text, node)``: new_text is None when nothing is to be written."""
        present = args["state"] == "present"
        node = self._read_node(args, task_vars)
        plan_key = self._plan_key(node, args) if node["exists"] else None
        plan = self._cached_plan(plan_key) if plan_key else None
        if plan is None:
            node = self._node_text(node, args, task_vars)
            plan_key = self._plan_key(node, args) if node["exists"] else None
        else:
            display.vvv("%s (SHA-256 %s) was planned before with these options and needed no change."
                        % (node["path"], node["sha256"]))
        path = node["path"]
        spec = validate_spec_path(node.get(BASE_RUNTIME_SPEC)) if present else None
        result = dict(changed=False, path=path, runtimes_changed=[], runtimes_created=[], created=False,
                      restart_required=False, validated=False)
        if node.get("containerd_version"):
            result["containerd_version"] = node["containerd_version"]
        label = _containerd_label(node.get("containerd_version"))

        if node["exists"]:
            before = text = node["content"]  # None with a remembered plan: nothing changes, nothing reads it
        elif not present:
            result["msg"] = "%s does not exist; nothing to remove." % path
            return result, None, node
        else:
            directory = posixpath.dirname(path)
            if not node["directory_exists"]:
                raise AnsibleActionFail("cannot create %s: its directory %s does not exist on the node." % (path, directory))
            if not node.get("containerd"):
                raise AnsibleActionFail(
                    "%s does not exist and containerd is not installed on the node to create it from "
                    "'containerd config default'; install containerd first." % path)
            if node.get("default_config") is None:
                raise AnsibleActionFail("%s does not exist and 'containerd config default' failed on the node: %s."
                                        % (path, node.get("default_config_error")))
            before, text = "", node["default_config"]
            result["created"] = True

        if plan is None:
            plan = plan_base_runtime_spec(text, spec, runtimes=args["runtimes"], state=args["state"],
                                          create_missing=args["create_missing"], source=path)
            if plan_key and not plan.changed:
                self._cache.put_record(plan_key, {"config_version": plan.config_version, "warnings": plan.warnings})
        for warning in plan.warnings:
            display.warning(warning)
        result.update(config_version=plan.config_version, runtimes_changed=plan.runtimes_changed,
                      runtimes_created=plan.runtimes_created)
        new_text = plan.new_text
        changed = result["created"] or plan.changed

        if args["validate"] is not False:
            reason = self._cannot_validate(node, plan.config_version, path, label)
            if reason and args["validate"]:
                raise AnsibleActionFail("cannot validate %s: %s; set validate=false to write it unvalidated." % (path, reason))
            if reason and node.get("containerd"):
                display.warning("%s was not validated: %s." % (path, reason))
            if not reason and changed:
                self._check_spec(node, spec)
                expected = {name: spec for name in plan.runtimes}
                self._validate(node["containerd"], label, path, new_text, expected, task_vars)
                result["validated"] = True

        if not changed:
            return result, None, node
        if not node["directory_writable"]:
            raise AnsibleActionFail(
                "cannot write %s: its directory %s is not writable on the node (read-only file system or "
                "permissions); nothing was changed." % (path, posixpath.dirname(path)))
        if self._task.diff:
            result["diff"] = dict(before=before, after=new_text, before_header=path, after_header=path)
        result.update(changed=True, restart_required=True)
        if self._task.check_mode:
            return result, None, node
        return result, new_text, node

    @staticmethod
    def _cannot_validate(node, version, path, label):
        """Why the node's containerd cannot check this file, or None."""
        if not node.get("containerd"):
            return "containerd is not installed on the node"
        if node.get("default_config") is None:
            return "'containerd config default' failed on the node (%s)" % node.get("default_config_error")
        native = native_version(node["default_config"])
        if native < version:
            return ("%s on the node reads config versions up to %d and %s is version %d, which it would "
                    "silently ignore" % (label, native, path, version))
        return None

    def _check_spec(self, node, spec):
        """containerd's CRI plugin does not start when the base runtime spec cannot be loaded."""
        status = node.get("spec_status")
        if spec is None or status in (None, "ok"):
            return
        message = ("base_runtime_spec %s on the node is %s, and containerd's CRI plugin does not start without a "
                   "loadable spec" % (spec, status))
        if self._task.check_mode:
            display.warning(message + " (check mode: an earlier task may create it).")
            return
        raise AnsibleActionFail(message + "; create it first (rdma.node.oci_rlimits), nothing was changed.")

    def _remote_file(self, name, content):
        tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
        remote = self._connection._shell.join_path(tmpdir, name)
        self._transfer_data(remote, content)
        self._fixup_perms2((tmpdir, remote))
        return remote

    def _validate(self, containerd, label, path, new_text, expected, task_vars):
        """Run the node's ``containerd config dump`` on the candidate and check what containerd reads."""
        candidate = validation_text(new_text, posixpath.dirname(path))
        remote = self._remote_file("config.toml", candidate)
        # Without relative imports the candidate is the content to write: the write step reuses it.
        self._transferred = (new_text, remote) if candidate == new_text else None
        command = shlex.join([containerd, "--config", remote, "config", "dump"])
        res = self._low_level_execute_command(command, chdir="/")
        stderr = to_text(res.get("stderr", "")).replace(remote, path).strip()
        if res.get("rc") != 0:
            detail = " ".join(stderr.split()) or "exit status %s" % res.get("rc")
            raise AnsibleActionFail("%s rejects the new %s: %s; nothing was changed." % (label, path, detail))
        for message in _containerd_messages(stderr, "warning"):
            display.warning("%s about %s: %s" % (label, path, message))
        check_dump(to_text(res.get("stdout", "")), expected, path, label, dumped=remote)

    def _write(self, path, new_text, backup, expected_sha256, task_vars):
        """Step 3: the module's write step; None when the file changed since it was read (retry)."""
        if self._transferred and self._transferred[0] == new_text:
            remote = self._transferred[1]
        else:
            remote = self._remote_file("content", to_bytes(new_text))
        write_result = self._execute_module(
            module_name="rdma.node.containerd_runtime",
            module_args=dict(self._args, path=path, replace_with=remote, expected_sha256=expected_sha256, backup=backup),
            task_vars=task_vars,
        )
        if write_result.get("conflict"):
            display.vvv("%s changed on the node since it was read; reading it again." % path)
            return None
        if write_result.get("failed"):
            raise AnsibleActionFail("cannot write %s: %s" % (path, _node_failure(write_result)))
        written = {}
        if write_result.get("backup_file"):
            written["backup_file"] = write_result["backup_file"]
        return written


def _trusted_answer(node, offered, path):
    """The read step's answer, once it is consistent: a node is trusted with nothing it did not send.

    Its text must have the SHA-256 it reports (the digest keys the remembered plans), and a file it
    answers with only a digest must have one of the digests it was ``offered``: those are texts this
    host sent or was sent, so the text taken from the cache is never another host's.
    """
    digest = node.get("sha256") if isinstance(node, dict) else None
    if not (is_digest(digest) or (digest == "" and not node.get("exists"))):
        raise AnsibleActionFail("%s: the node's answer has no SHA-256 of the file; nothing was changed." % path)
    content = node.get("content")
    if content is not None:
        actual = sha256_hex(to_bytes(content)) if isinstance(content, str) else "not a text"
        if actual != digest:
            raise AnsibleActionFail("%s: the node reported the SHA-256 %s but sent a text whose SHA-256 is %s; "
                                    "nothing was changed." % (path, digest, actual))
    elif node.get("content_known") and digest not in offered:
        raise AnsibleActionFail("%s: the node answered with only the SHA-256 %s, which the controller did not offer "
                                "it (a host is offered only digests of texts it sent or was sent); nothing was "
                                "changed." % (path, digest))
    elif node.get("exists") and not node.get("content_known"):
        raise AnsibleActionFail("%s: the node said the file exists but sent neither its text nor a digest it was "
                                "offered; nothing was changed." % path)
    return node


def _node_failure(node_result):
    """The module's own message, or for a crash its last line of error output, never just 'failed'."""
    message = node_result.get("msg") or ""
    detail = node_result.get("exception") or node_result.get("module_stderr") or node_result.get("module_stdout") or ""
    lines = [line.strip() for line in to_text(detail).splitlines() if line.strip()]
    if lines and (not message or message.startswith("MODULE FAILURE")):
        return "rdma.node.containerd_runtime failed on the node: %s" % lines[-1]
    return message or "rdma.node.containerd_runtime failed on the node without a message (rc %s)." % node_result.get("rc")
