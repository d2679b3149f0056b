# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rdma.node.driver_facts (and rdma.node.node_facts) run on the node: the tools, the saved
outputs, and the bound on the result. The module files keep only their documentation."""

from __future__ import annotations

import os

from ansible_collections.rdma.node.plugins.module_utils._dkms import parse_dkms_version, status_of_node
from ansible_collections.rdma.node.plugins.module_utils._driver import gather
from ansible_collections.rdma.node.plugins.module_utils._files import (
    FileReadError,
    cap_warnings,
    read_bytes,
    take_read_warnings,
)
from ansible_collections.rdma.node.plugins.module_utils._subsets import DRIVER_FACTS, declare

# The options of the driver facts, shared by the modules that gather them.
DRIVER_OPTIONS = {
    "root": {"type": "path", "default": "/"},
    "dkms_modules": {"type": "list", "elements": "str", "default": ["mlnx-ofed-kernel"]},
    "dkms_status_file": {"type": "path"},
    "ofed_info_file": {"type": "path"},
    "run_tools": {"type": "bool", "default": True},
}

# The one subset of the driver facts: the driver_verify options named in inputs fill the module's.
declare("driver", DRIVER_FACTS, fills=("rdma_driver",),
        inputs={"root": "facts_root", "dkms_modules": "dkms_modules", "dkms_status_file": "dkms_status_file",
                "ofed_info_file": "ofed_info_file", "run_tools": "run_tools"}, base=True)

_C_LOCALE = {"LANG": "C", "LC_ALL": "C"}
# Saved tool outputs are kilobytes; a bound keeps a wrong path (a log, a device) from exhausting memory.
_SAVED_OUTPUT_MAX_BYTES = 16 * 1024 * 1024
# Past this many loaded modules or DKMS entries, the facts keep the RDMA part and a count.
_MAX_LISTED = 500
_RDMA_MODULE_PREFIXES = ("ib_", "rdma", "mlx", "nvidia", "nv_peer", "iw_", "irdma", "bnxt_re", "efa", "rxe", "siw",
                         "ocrdma", "qedr", "hfi1", "qib", "vmw_pvrdma")


def _read_saved(module, path, option):
    try:
        data = read_bytes(path, "the saved output of a command (%s)" % option, _SAVED_OUTPUT_MAX_BYTES)
    except FileReadError as exc:
        module.fail_json(msg="%s: %s" % (option, exc))
    if data is None:
        module.fail_json(msg="%s %s does not exist; expected a file with the saved command output." % (option, path))
    return data.decode("utf-8", "replace")


def _bound_results(facts):
    """Keep the result small enough for the controller: long lists become their RDMA part plus a count.

    A node with thousands of modules or DKMS entries would otherwise send megabytes back for
    every host; the RDMA stack is what the checks read, so that part is always kept.
    """
    warnings = []
    modules = facts["loaded_modules"]
    if len(modules) > _MAX_LISTED:
        kept = {name: value for name, value in modules.items() if name.startswith(_RDMA_MODULE_PREFIXES)}
        kept = dict(sorted(kept.items())[:_MAX_LISTED])
        facts["loaded_modules"] = kept
        warnings.append("%d kernel modules are loaded; loaded_modules lists only the %d RDMA and GPU ones."
                        % (len(modules), len(kept)))
    dkms = facts.get("dkms")
    if dkms and len(dkms["entries"]) > _MAX_LISTED:
        total = len(dkms["entries"])
        dkms["entries"] = dkms["entries"][:_MAX_LISTED]
        warnings.append("dkms status lists %d entries; dkms.entries keeps the first %d (dkms.relevant covers all)."
                        % (total, _MAX_LISTED))
    for key in ("errors", "warnings"):
        if dkms and len(dkms[key]) > _MAX_LISTED:
            warnings.append("dkms status printed %d %s; dkms.%s keeps the first %d."
                            % (len(dkms[key]), key, key, _MAX_LISTED))
            dkms[key] = dkms[key][:_MAX_LISTED]
    if len(facts["notes"]) > _MAX_LISTED:
        warnings.append("%d notes; notes keeps the first %d." % (len(facts["notes"]), _MAX_LISTED))
        facts["notes"] = facts["notes"][:_MAX_LISTED]
    facts["notes"].extend(warnings)
    return warnings


def _dkms(module, notes):
    """Return ``(status_text, version)``; status_text None when dkms is not there."""
    params = module.params
    if params["dkms_status_file"]:
        return _read_saved(module, params["dkms_status_file"], "dkms_status_file"), None
    path = module.get_bin_path("dkms") if params["run_tools"] else None
    if path is None:
        notes.append("dkms is not installed: nothing rebuilds out-of-tree drivers for a new kernel")
        return None, None
    rc, out, err = module.run_command([path, "status"], environ_update=_C_LOCALE)
    if rc != 0:
        first = (err.strip().splitlines() or ["no message"])[0]
        notes.append("dkms status exited with %d: %s" % (rc, first))
    v_rc, v_out, _v_err = module.run_command([path, "--version"], environ_update=_C_LOCALE)
    return out + "\n" + err, parse_dkms_version(v_out) if v_rc == 0 else None


def _ofed(module, notes):
    params = module.params
    if params["ofed_info_file"]:
        return _read_saved(module, params["ofed_info_file"], "ofed_info_file")
    path = module.get_bin_path("ofed_info") if params["run_tools"] else None
    if path is None:
        notes.append("ofed_info is not installed: no MLNX_OFED/DOCA-OFED release (inbox driver?)")
        return None
    rc, out, err = module.run_command([path, "-s"], environ_update=_C_LOCALE)
    if rc != 0 or not out.strip():
        notes.append("ofed_info -s exited with %d and printed no release: %s" % (rc, err.strip() or "no message"))
        return None
    return out


def _dkms_warnings(dkms_text):
    """dkms's own errors (a module directory without dkms.conf stops dkms status) and lines that
    are not dkms output are warnings: the module list may be incomplete."""
    status = status_of_node(dkms_text)
    warnings = ["dkms status reported an error, its module list may be incomplete: %s" % error for error in status["errors"]]
    warnings += ["dkms status printed a line that is not a status line: %r" % line for line in status["unplaced"] + status["redacted"]]
    return cap_warnings(warnings)


def collect_driver(module):
    """``(rdma_driver facts, warnings)`` for the module's DRIVER_OPTIONS; fails the module on a bad root."""
    root = module.params["root"]
    if not os.path.isdir(root):
        module.fail_json(msg="root %s is not a directory; expected / or the top of a node's file tree" % root)
    notes = []
    dkms_text, dkms_version = _dkms(module, notes)
    ofed_text = _ofed(module, notes)
    facts = gather(
        root,
        dkms_text=dkms_text,
        dkms_version=dkms_version,
        ofed_text=ofed_text,
        dkms_modules=module.params["dkms_modules"],
        notes=notes,
    )
    return facts, take_read_warnings() + _bound_results(facts) + _dkms_warnings(dkms_text)
