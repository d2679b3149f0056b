"""Loading the collection's filter files stays cheap.

To find any one filter of the collection, Ansible imports every filter file of it (its Jinja2Loader walks
plugins/filter), in each worker process that templates one: the localhost tasks of the main job, every
host's task of a role that plans with a filter. The collection loader compiles each module it imports from
source. So a filter file brings in only what the filters share; the parsers, plans, checks and the report's
builder are imported by the filters that call them (plugin_utils/_filter_calls.py, LazyModule).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.bandwidth import bandwidth_pairs, bandwidth_plan, bandwidth_verdicts
from ansible_collections.rdma.node.plugins.filter.expectations import port_findings
from ansible_collections.rdma.node.plugins.filter.k8s import k8s_mofed_wait_findings, k8s_node_resource_findings
from ansible_collections.rdma.node.plugins.filter.report import fleet_report_data
from ansible_collections.rdma.node.plugins.plugin_utils import _bandwidth_plan
from testpaths import COLLECTION_ROOT, COLLECTIONS_ROOT

PACKAGE = "ansible_collections.rdma.node.plugins."
FILTER_FILES = sorted(path.stem for path in (COLLECTION_ROOT / "plugins/filter").glob("*.py"))
# What loading them may bring in besides themselves: what the filters share (_filter_calls, the check
# registry's error types and the findings' plain data it names, with the subsets' names they check), and
# the report's two small helpers whose defaults and redaction its filters use.
SHARED = {"plugin_utils._filter_calls", "plugin_utils._registry", "plugin_utils._findings", "plugin_utils._safe_text",
          "module_utils._subsets", "module_utils._lazy_re", "plugin_utils._fleet_artifact", "plugin_utils._fleet_report_upload"}


def loaded_by_the_filter_files():
    """The modules a fresh interpreter holds after importing every filter file, as Ansible's loader does."""
    code = (
        "import importlib, json, sys\n"
        "for name in %r:\n"
        "    importlib.import_module('ansible_collections.rdma.node.plugins.filter.' + name).FilterModule().filters()\n"
        "print(json.dumps(sorted(sys.modules)))\n" % (FILTER_FILES,)
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(COLLECTIONS_ROOT), "PATH": "/usr/bin:/bin"})
    return json.loads(run.stdout)


def test_every_filter_file_is_loaded_without_the_parsers_checks_or_report_they_call():
    assert len(FILTER_FILES) >= 14
    modules = loaded_by_the_filter_files()
    loaded = [name[len(PACKAGE):] for name in modules if name.startswith(PACKAGE)]
    assert sorted(name for name in loaded if name.startswith("filter.")) == ["filter.%s" % name for name in FILTER_FILES]
    logic = [name for name in loaded if "." in name and not name.startswith("filter.")]
    assert sorted(set(logic) - SHARED) == []
    # Nor ansible's HTTP client (TLS and certificates: a tenth of a second), which only an upload uses.
    assert "ansible.module_utils.urls" not in modules


def test_the_defaults_left_to_the_logic_are_its_own():
    assert bandwidth_pairs(["a", "b", "c"]) == bandwidth_pairs(["a", "b", "c"], _bandwidth_plan.ROUNDS_COVER)
    plan = bandwidth_plan({"a": [], "b": []})
    assert (plan["tcp_port_base"], plan["rounds"]) == (_bandwidth_plan.DEFAULT_TCP_PORT_BASE, _bandwidth_plan.ROUNDS_COVER)


@pytest.mark.parametrize("call, expected", [
    (lambda: bandwidth_verdicts("no plan", "a100-node-01"), "rdma.node.bandwidth_verdicts: "),
    (lambda: port_findings({"ports": []}), "rdma.node.port_findings: the port checks did not run (the ports facts were not gathered)"),
    (lambda: k8s_mofed_wait_findings("no nodes", []), "rdma.node.k8s_mofed_wait_findings: "),
    (lambda: k8s_node_resource_findings([], {"ib-a100": "rdma/hca"}, {"ib-a100": ["a"]}, expected_count=-1),
     "rdma.node.k8s_node_resource_findings: "),
    # A findings variable set by hand (or an edited fact cache) is one sentence, not a report without them.
    (lambda: fleet_report_data(["a100-node-01"], {"a100-node-01": {"ib_inventory_findings": "none"}}),
     "rdma.node.fleet_report_data: ib_inventory_findings of a100-node-01: expected a list of findings (mappings), got 'none'"),
], ids=["bandwidth_verdicts", "port_findings", "k8s_mofed_wait_findings", "k8s_node_resource_findings", "fleet_report_data"])
def test_the_filters_that_import_at_the_call_still_judge_and_say_what_is_wrong(call, expected):
    with pytest.raises(AnsibleFilterError) as raised:
        call()
    assert str(raised.value).startswith(expected)
