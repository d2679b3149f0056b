#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ib_facts
short_description: Gather InfiniBand and RoCE device, port and netdev facts from sysfs
version_added: 0.1.0
description:
  - Reads C(class/infiniband), C(class/net) and the PCI device links under O(sysfs_root) in one pass,
    without running any command, and returns what C(ibstat) and C(ibdev2netdev) would show as
    C(ansible_facts.rdma).
  - Netdevs are matched to ports as C(ibdev2netdev) does. RoCE ports and bonds take the netdev named in
    C(gid_attrs/ndevs). IPoIB interfaces are matched by the port GUID in their hardware address.
    Anything left is matched through the PCI function and C(dev_port)/C(dev_id).
  - A file that is missing or unreadable gives V(null) for its field. A dangling symlink is skipped
    with a warning. A node without RDMA devices gets empty facts, not an error.
  - Needs only the Python standard library on the node.
author: rdma.node developers (!UNKNOWN)
extends_documentation_fragment:
  - rdma.node.attributes
  - rdma.node.attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
options:
  sysfs_root:
    description:
      - The directory that stands for C(/sys).
      - Point it at a copy of a node's sysfs (or a simulated tree) to read that instead.
    type: path
    default: /sys
notes:
  - Port states are normalised to the kernel's names (V(ACTIVE), V(DOWN), V(INIT), V(ARMED)). Physical
    states use the names C(ibstat) prints (V(LinkUp), V(Polling), V(Disabled)). The numeric code wins
    when a tree writes an unusual name next to it.
  - GUIDs are written as C(ibstat) writes them, V(0x) and 16 lower-case hex digits. The port GUID is
    the interface ID of GID 0.
seealso:
  - name: rdma.node.parse_ibstat filter
    description: Parses C(ibstat) output into the same port fields, for output you already have.
    link: https://github.com/linux-rdma/rdma-core/blob/master/infiniband-diags/man/ibstat.8.in
"""

EXAMPLES = r"""
- name: Gather RDMA facts
  rdma.node.ib_facts:

- name: Fail when a port that must be up is not ACTIVE
  ansible.builtin.assert:
    that: "'mlx5_0/1' in ansible_facts.rdma.summary.active_ports"
    fail_msg: "mlx5_0 port 1 is {{ (ansible_facts.rdma.ports | selectattr('device', 'eq', 'mlx5_0') | first).state }}"

- name: Read a saved copy of a node's sysfs instead of the live one
  rdma.node.ib_facts:
    sysfs_root: /srv/sysfs-snapshots/gpu-node-07/sys
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host's facts.
  returned: always
  type: dict
  contains:
    rdma:
      description: Everything found under O(sysfs_root).
      returned: always
      type: dict
      contains:
        devices:
          description:
            - RDMA devices by name, for example V(mlx5_0).
            - Each has C(node_type), C(hca_type), C(fw_ver), C(board_id), C(node_guid),
              C(sys_image_guid), C(hw_rev), C(node_desc), C(pci_address), C(numa_node), C(driver),
              C(virtual_function), C(physical_function), C(sriov_numvfs) and C(ports), the list of
              port numbers.
          type: dict
          returned: always
          sample:
            mlx5_0:
              node_type: CA
              node_type_code: 1
              hca_type: MT4123
              fw_ver: 20.39.1002
              board_id: MT_0000000223
              node_guid: "0xb8599f0300d40a30"
              sys_image_guid: "0xb8599f0300d40a30"
              hw_rev: "0x0"
              node_desc: gpu-node-07 mlx5_0
              pci_address: "0000:3b:00.0"
              numa_node: 0
              driver: mlx5_core
              virtual_function: false
              physical_function: null
              sriov_numvfs: null
              ports: [1]
        ports:
          description:
            - One entry per port of every device, in device and port order.
            - V(null) where the tree does not say.
          type: list
          elements: dict
          returned: always
          sample:
            - device: mlx5_0
              port: 1
              state: ACTIVE
              state_code: 4
              phys_state: LinkUp
              phys_state_code: 5
              rate: 200 Gb/sec (4X HDR)
              rate_gbps: 200.0
              width: 4X
              speed: HDR
              link_layer: InfiniBand
              lid: 3
              sm_lid: 1
              lmc: 0
              sm_sl: 0
              cap_mask: "0x2651e848"
              gid: "fe80:0000:0000:0000:b859:9f03:00d4:0a31"
              port_guid: "0xb8599f0300d40a31"
              netdevs: [ibp59s0]
              netdev_state: Up
        netdevs:
          description:
            - The netdevs that belong to an RDMA port, by name.
            - C(carrier) is V(null) when the kernel refuses to tell, which it does for an interface
              that is administratively down.
          type: dict
          returned: always
          sample:
            ibp59s0:
              device: mlx5_0
              port: 1
              carrier: true
              operstate: up
              mtu: 4092
              master: null
              address: "00:00:10:49:fe:80:00:00:00:00:00:00:b8:59:9f:03:00:d4:0a:31"
              pci_address: "0000:3b:00.0"
        summary:
          description: Counts an operator reads first.
          type: dict
          returned: always
          sample:
            device_count: 3
            port_count: 3
            active_ports: [mlx5_1/1, mlx5_bond_0/1]
            down_ports: [mlx5_0/1]
            max_rate_gbps: 200.0
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdma.node.plugins.module_utils._files import take_read_warnings
from ansible_collections.rdma.node.plugins.module_utils._sysfs import gather


def main():
    module = AnsibleModule(
        argument_spec={"sysfs_root": {"type": "path", "default": "/sys"}},
        supports_check_mode=True,
    )
    root = module.params["sysfs_root"]
    if not os.path.isdir(root):
        module.fail_json(msg="sysfs_root %s is not a directory; expected the path of a sysfs tree such as /sys" % root)
    facts, warnings = gather(root)
    for warning in warnings + take_read_warnings():
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"rdma": facts})


if __name__ == "__main__":
    main()
