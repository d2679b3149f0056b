# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdma.node.write_fleet_report: build the fleet report and write its files, once.

Why one action: at a thousand hosts the report is megabytes. Kept as a fact (``set_fact`` with
``run_once`` puts it on every host of the play) and fed to ``copy`` and ``template``, every later
task of every host assembles it again, and Ansible's templating reads it through its lazy, tagged
containers. Here the report is built from plain data, the Markdown and HTML templates of the role
are rendered by Jinja directly on that plain data, each file is written atomically on the
controller, and only what the play needs afterwards is returned: the totals, the files, the hosts
to fail and the summary for AWX's artifacts.

The templates are read from the collection itself (``roles/fleet_report/templates`` beside this
plugin), so the action works in any play, not only inside the role. Every rendering is made before
any file is written: a report is replaced whole or not at all. The changes since the previous report
are read from the JSON report already in the directory, before it is replaced. The upload, when
asked for, comes last and never fails the task: its failure is a warning and a result of its own.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile

import jinja2

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.filter.report_page import fleet_report_page_json
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import DEFAULT_MAX_BYTES, fleet_artifact
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_changes import compare, read_previous
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_hosts import report_from_hostvars
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_upload import redact_url, upload
from ansible_collections.rdma.node.plugins.plugin_utils._safe_text import markdown_code, markdown_view, strip_controls

FORMATS = {"json": "fleet-report.json", "markdown": "fleet-report.md", "html": "fleet-report.html"}
TEMPLATES = {"markdown": "fleet-report.md.j2", "html": "fleet-report.html.j2"}

ARGUMENT_SPEC = {
    "hosts": {"type": "list", "elements": "str", "required": True},
    "dir": {"type": "path", "required": True},
    "formats": {"type": "list", "elements": "str", "choices": list(FORMATS), "default": list(FORMATS)},
    "title": {"type": "str", "default": "RDMA fleet report"},
    "sources": {"type": "list", "elements": "str"},
    "cluster_hosts": {"type": "list", "elements": "str", "default": ["localhost"]},
    "upload_url": {"type": "str"},
    "upload_method": {"type": "str", "choices": ["PUT", "POST"], "default": "PUT"},
    "upload_headers": {"type": "dict", "default": {}, "no_log": True},
    "upload_validate_certs": {"type": "bool", "default": True},
    "upload_timeout": {"type": "float", "default": 30},
    "artifact_max_bytes": {"type": "int", "default": DEFAULT_MAX_BYTES},
}
# This collection's root; an installed copy has a MANIFEST.json and is replaced on upgrade.
COLLECTION_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The role's templates, found from this file wherever the action runs (in the role, in a play of its own).
TEMPLATE_DIR = os.path.join(COLLECTION_ROOT, "roles", "fleet_report", "templates")


def inside_installed_collection(directory, root=COLLECTION_ROOT):
    """Whether ``directory`` lies in an installed copy of the collection (a report there is lost on upgrade)."""
    if not os.path.isfile(os.path.join(root, "MANIFEST.json")):
        return False
    real = os.path.realpath(directory)
    return real == root or real.startswith(root + os.sep)


def _temporary(path, text):
    """``text`` written to a new temporary file beside ``path``; returns its name."""
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_all(texts):
    """Replace each file of ``texts`` (``{path: text}``) with its text: all of them are written to
    temporary files first, then renamed over the old ones, so a full disk or a template error leaves
    the previous report whole. A target that is not a regular file is refused before anything is written."""
    for path in texts:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise OSError(0, "it exists and is not a regular file", path)
    written = {}
    try:
        for path, text in texts.items():
            written[path] = _temporary(path, text)
        for path, tmp in written.items():
            os.replace(tmp, path)
    finally:
        for tmp in written.values():
            if os.path.exists(tmp):
                os.unlink(tmp)


def _environment():
    environment = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.ChainableUndefined,
                                     autoescape=False, loader=jinja2.FileSystemLoader(TEMPLATE_DIR))
    environment.filters["rdma.node.fleet_report_page_json"] = fleet_report_page_json
    environment.filters["md_code"] = markdown_code
    return environment


def render(report, formats):
    """``{format: text}`` of every format asked for. The Markdown template receives the report with each
    text escaped for Markdown (``_safe_text.markdown_view``); the HTML template escapes as it renders."""
    environment = _environment()
    texts = {}
    for fmt in formats:
        if fmt == "json":
            texts[fmt] = json.dumps(report, indent=2, allow_nan=False) + "\n"
        elif fmt == "markdown":
            texts[fmt] = environment.get_template(TEMPLATES[fmt]).render(__fleet_report=markdown_view(report))
        else:
            texts[fmt] = environment.get_template(TEMPLATES[fmt]).render(__fleet_report=report)
    return texts


def removed_hosts(task_vars):
    """The hosts of the play that Ansible took out of it (unreachable, or a task failed on them)."""
    play_hosts_all = task_vars.get("ansible_play_hosts_all")
    play_hosts = task_vars.get("ansible_play_hosts")
    if not isinstance(play_hosts_all, list) or not isinstance(play_hosts, list):
        return []
    active = set(play_hosts)
    return [host for host in play_hosts_all if host not in active]


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        removed = removed_hosts(task_vars)
        try:
            report = report_from_hostvars(args["hosts"], task_vars["hostvars"], args["title"], args["sources"], args["cluster_hosts"], removed)
        except (TypeError, ValueError) as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: %s" % exc) from None
        directory = args["dir"]
        if inside_installed_collection(directory):
            raise AnsibleActionFail("rdma.node.write_fleet_report: dir %s is inside the installed collection %s, which an upgrade "
                                    "replaces; expected a directory outside it (in AWX, a persistent volume mounted into the "
                                    "execution environment)." % (directory, COLLECTION_ROOT))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: dir %s cannot be created (%s); expected a writable directory "
                                    "on the controller." % (directory, exc.strerror or exc)) from None
        previous, note = read_previous(os.path.join(directory, FORMATS["json"]))
        report["changes"] = compare(previous, report, note)
        try:
            texts = render(report, args["formats"])
        except jinja2.TemplateError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: the report's templates in %s failed (%s: %s); no file was "
                                    "written." % (TEMPLATE_DIR, type(exc).__name__, exc)) from None
        files = [os.path.join(directory, FORMATS[fmt]) for fmt in texts]
        try:
            write_all(dict(zip(files, texts.values())))
        except OSError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: %s cannot be written (%s); the earlier report, if any, is "
                                    "unchanged." % (exc.filename or directory, exc.strerror or exc)) from None
        file_names = [os.path.basename(f) for f in files]
        sent = None
        if args["upload_url"]:
            sent = upload(files, args["upload_url"], args["upload_method"], args["upload_headers"], args["upload_validate_certs"],
                          args["upload_timeout"])
            if not sent["ok"]:
                result.setdefault("warnings", []).append(
                    "rdma.node.write_fleet_report: the report was written in %s, but its upload failed: %s (not sent: %s). The "
                    "findings and the hosts to fail are unaffected." % (directory, sent["error"], ", ".join(sent["not_sent"])))
        totals = report["totals"]
        location = {"dir": directory, "files": file_names, "upload_url": redact_url(args["upload_url"]) or None, "upload": sent}
        try:
            summary = fleet_artifact(report, location, args["artifact_max_bytes"])
        except ValueError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: artifact_max_bytes: %s" % exc) from None
        changes = report["changes"]
        result.update({
            "changed": False,
            "files": files,
            "file_names": file_names,
            "dir": directory,
            "totals": totals,
            "changes": changes["totals"],
            "schema_version": report["schema_version"],
            "failing_hosts": report["failing_hosts"],
            "upload": sent,
            "msg": strip_controls(_summary_line(totals, changes, files, sent)),
            "ansible_stats": {
                "data": {"rdma_fleet_report": dict(totals, dir=directory, schema_version=report["schema_version"], changes=changes["totals"],
                                                   upload=sent),
                         "rdma_fleet": summary},
                "per_host": False, "aggregate": True,
            },
        })
        return result


def _summary_line(totals, changes, files, sent):
    """One line: the totals, what changed, where the files are, and the upload's outcome."""
    line = "%d hosts: %d critical, %d unreachable, %d without data, %d warning, %d ok" % (
        totals["hosts"], totals["critical"], totals["unreachable"], totals["no_data"], totals["warning"], totals["ok"])
    if totals["hosts_not_fully_checked"]:
        line += " (%d with checks not run)" % totals["hosts_not_fully_checked"]
    moved = changes["totals"]
    if moved:
        line += ". Since %s: %d new, %d resolved, %d still open, %d not checked again" % (
            changes["previous"]["generated_at"], moved["new"], moved["resolved"], moved["still_open"], moved["not_checked"])
    else:
        line += ". " + changes["note"].rstrip(".")
    line += ". Report: %s" % (", ".join(files) or "no file")
    if sent is not None:
        line += "; uploaded to %s" % sent["url"] if sent["ok"] else "; its upload FAILED: %s" % sent["error"]
    return line + "."
