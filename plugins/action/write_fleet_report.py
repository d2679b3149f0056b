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
"""

from __future__ import annotations

import json
import os
import tempfile

import jinja2

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.rdma.node.plugins.filter.report_page import fleet_report_page_json
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_artifact import DEFAULT_MAX_BYTES, fleet_artifact
from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_hosts import report_from_hostvars

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
    "artifact_max_bytes": {"type": "int", "default": DEFAULT_MAX_BYTES},
}
# This collection's root; an installed copy has a MANIFEST.json and is replaced on upgrade.
COLLECTION_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def inside_installed_collection(directory, root=COLLECTION_ROOT):
    """Whether ``directory`` lies in an installed copy of the collection (a report there is lost on upgrade)."""
    if not os.path.isfile(os.path.join(root, "MANIFEST.json")):
        return False
    real = os.path.realpath(directory)
    return real == root or real.startswith(root + os.sep)


def _write(path, text):
    """Replace ``path`` with ``text`` atomically: a reader sees the old file or the new one."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _environment():
    environment = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.ChainableUndefined,
                                     autoescape=False)
    environment.filters["rdma.node.fleet_report_page_json"] = fleet_report_page_json
    return environment


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def _template_source(self, name):
        path = self._find_needle("templates", name)
        with open(path, encoding="utf-8") as handle:
            return handle.read()

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        try:
            report = report_from_hostvars(args["hosts"], task_vars["hostvars"], args["title"], args["sources"], args["cluster_hosts"])
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
        environment = _environment()
        files = []
        try:
            for fmt in args["formats"]:
                path = os.path.join(directory, FORMATS[fmt])
                if fmt == "json":
                    text = json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + "\n"
                else:
                    template = environment.from_string(self._template_source(TEMPLATES[fmt]))
                    text = template.render(__fleet_report=report)
                _write(path, text)
                files.append(path)
        except jinja2.TemplateError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: the %s template failed: %s" % (fmt, exc)) from None
        except OSError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: %s cannot be written (%s)." % (
                exc.filename or directory, exc.strerror or exc)) from None
        totals = report["totals"]
        try:
            summary = fleet_artifact(report, {"dir": directory, "files": [os.path.basename(f) for f in files],
                                              "upload_url": args["upload_url"] or None}, args["artifact_max_bytes"])
        except ValueError as exc:
            raise AnsibleActionFail("rdma.node.write_fleet_report: artifact_max_bytes: %s" % exc) from None
        result.update({
            "changed": False,
            "files": files,
            "file_names": [os.path.basename(f) for f in files],
            "dir": directory,
            "totals": totals,
            "schema_version": report["schema_version"],
            "failing_hosts": report["failing_hosts"],
            "msg": "%d hosts: %d critical, %d warning, %d ok, %d without data. Report: %s" % (
                totals["hosts"], totals["critical"], totals["warning"], totals["ok"], totals["no_data"], ", ".join(files) or "no file"),
            "ansible_stats": {
                "data": {"rdma_fleet_report": dict(totals, dir=directory, schema_version=report["schema_version"]),
                         "rdma_fleet": summary},
                "per_host": False, "aggregate": True,
            },
        })
        return result
