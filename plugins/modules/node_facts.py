#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: node_facts
short_description: Gather the RDMA facts and the driver facts of a node in one call
version_added: 0.2.0
description:
  - What M(rdma.node.ib_facts) and M(rdma.node.driver_facts) gather, in one module call, as
    C(ansible_facts.rdma) and C(ansible_facts.rdma_driver).
  - At fleet scale every module call costs a round trip and a Python start on every node; the
    readiness run (C(rdma.node.site)) gathers what all its checks read with this one call, then the
    roles only evaluate. The facts are exactly those of the two modules; see their documentation.
  - Needs only the Python standard library on the node.
author: rdma.node developers (!UNKNOWN)
extends_documentation_fragment:
  - rdma.node.facts_options.ib
  - rdma.node.facts_options.driver
  - rdma.node.attributes
  - rdma.node.attributes.facts
options:
  gather:
    description:
      - Which fact namespaces to gather, V(rdma) (M(rdma.node.ib_facts)) and V(rdma_driver)
        (M(rdma.node.driver_facts)).
    type: list
    elements: str
    choices: [rdma, rdma_driver]
    default: [rdma, rdma_driver]
seealso:
  - module: rdma.node.ib_facts
  - module: rdma.node.driver_facts
"""

EXAMPLES = r"""
- name: Gather every fact the readiness checks read, in one call
  rdma.node.node_facts:
    gather_subset: [all]

- name: A simulated node with its own trees and saved tool outputs
  rdma.node.node_facts:
    sysfs_root: /srv/nodes/gpu-07/sys
    root: /srv/nodes/gpu-07
    dkms_status_file: /srv/nodes/gpu-07/saved/dkms-status.txt
    run_tools: false
"""

RETURN = r"""
ansible_facts:
  description: The facts of the namespaces in O(gather).
  returned: always
  type: dict
  contains:
    rdma:
      description: As M(rdma.node.ib_facts) returns it.
      returned: when V(rdma) is in O(gather)
      type: dict
    rdma_driver:
      description: As M(rdma.node.driver_facts) returns it.
      returned: when V(rdma_driver) is in O(gather)
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._driver_collect import DRIVER_OPTIONS, collect_driver
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import IB_OPTIONS, collect_ib

COLLECTORS = {"rdma": collect_ib, "rdma_driver": collect_driver}


def main():
    argument_spec = dict(IB_OPTIONS, **DRIVER_OPTIONS)
    argument_spec["gather"] = {"type": "list", "elements": "str", "choices": list(COLLECTORS), "default": list(COLLECTORS)}
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    facts = {}
    for name in module.params["gather"]:
        facts[name], warnings = COLLECTORS[name](module)
        for warning in warnings:
            module.warn(warning)
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
