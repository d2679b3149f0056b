# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: simulated_nodes
short_description: Simulated GPU nodes with RDMA hardware, each built as a node root on the controller
version_added: 0.1.0
author: rdma.node developers (!UNKNOWN)
description:
  - Adds the hosts of a hardware description and their groups, and builds each host's node root (a kernel-shaped
    sysfs tree in C(sys/), the driver side, saved tool outputs, and a containerd config of its own) under
    C(<directory of this file>/.nodes/<host>).
  - The trees are rebuilt only when the description changes (keyed by its hash) and swapped in atomically, so
    concurrent runs against the same inventory never see a half-built tree.
  - The file name must end in C(.simulated_nodes.yml) or C(.simulated_nodes.yaml). Such a file can sit in an
    inventory directory with its C(group_vars); C(-i) the directory or the file.
  - Each host gets C(rdma_demo_node_root), the path of its node root, C(rdma_simulated_containerd), the path of
    this collection's C(scripts/simulated_containerd.py), which restarts the node's own containerd (the demo's
    C(node_remediation_restart_command)), and C(rdma_simulated_containerd_address), that containerd's socket.
  - The group C(all) gets C(rdma_demo_inventory_dir), the directory of this file, so that the controller's own
    plays (the implicit C(localhost) has no C(inventory_dir)) find what the demo keeps beside it, such as the
    groups' saved NCCL logs.
  - A development collection of rdma.node's source checkout (C(tools/collections)), for its demo, tests and
    benchmarks; it is not part of the rdma.node collection that users install.
options:
  plugin:
    description: The name of this plugin.
    required: true
    choices: [rdma.demo.simulated_nodes]
    type: str
  hardware:
    description:
      - Host name to hardware description, in the format of this collection's C(plugins/plugin_utils/sysfs_tree.py) (devices with
        ports, netdevs, gpus, driver). Keys starting with C(x-) hold YAML anchors only and are not hosts.
    required: true
    type: dict
  node_groups:
    description: Group name to the list of its hosts.
    type: dict
    default: {}
  planted_faults:
    description:
      - Host name to the checks (C(role/check)) that find the faults its description plants. Each host gets the list as
        C(rdma_demo_planted_faults); C(scripts/demo.sh) of the source checkout tells these findings from a real failure.
      - A group of O(node_groups) names the checks of the faults planted in what the group shares (its saved NCCL log),
        that is the findings of the report's cluster section whose subject is that group.
    type: dict
    default: {}
  nodes_dir:
    description:
      - The name under which the node roots are built, in the directory of this file; one name, no path.
      - It must not exist yet, or be the plugin's own symlink to its build (C(<nodes_dir>-<hash>) beside it). The plugin
        removes only the builds it made, which carry its marker file C(.rdma-demo-node-roots).
    type: str
    default: .nodes
"""

EXAMPLES = r"""
# inventories/demo/demo.simulated_nodes.yml
plugin: rdma.demo.simulated_nodes
node_groups:
  ib-v100: [v100-node-01]
hardware:
  v100-node-01:
    devices:
      mlx5_0:
        bdf: "0000:5e:00.0"
        ports:
          1: {port_guid: "b859:9f03:00d4:0a31"}
"""

import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseFileInventoryPlugin

from ansible_collections.rdma.demo.plugins.plugin_utils.sysfs_tree import (
    ArchiveError,
    containerd_sockets,
    ensure_built,
    hardware_hosts,
    node_roots_link,
)

SUFFIXES = (".simulated_nodes.yml", ".simulated_nodes.yaml")
# This collection's script that restarts a simulated node's own containerd (plugins/inventory/ is two levels down).
SIMULATED_CONTAINERD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "scripts", "simulated_containerd.py")


class InventoryModule(BaseFileInventoryPlugin):
    NAME = "rdma.demo.simulated_nodes"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(SUFFIXES)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            hosts = hardware_hosts(_plain(self.get_option("hardware")), "%s: hardware" % path)
        except ArchiveError as exc:
            raise AnsibleParserError(str(exc)) from None
        groups = self.get_option("node_groups") or {}
        for group, members in groups.items():
            if not isinstance(members, list) or any(str(member) not in hosts for member in members):
                raise AnsibleParserError("%s: node_groups.%s must be a list of hosts of hardware, got %r." % (path, group, members))
        planted = self.get_option("planted_faults") or {}
        for subject, checks in planted.items():
            if str(subject) not in hosts and str(subject) not in groups or not isinstance(checks, list) \
                    or not all(isinstance(c, str) and c.count("/") == 1 for c in checks):
                raise AnsibleParserError("%s: planted_faults.%s must be a list of role/check names of a host of hardware or a group "
                                         "of node_groups, got %r." % (path, subject, checks))
        nodes = None
        try:
            nodes = node_roots_link(os.path.dirname(os.path.abspath(path)), self.get_option("nodes_dir"))
            ensure_built(hosts, nodes)
        except ArchiveError as exc:
            raise AnsibleParserError("%s: %s" % (path, exc)) from None
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise AnsibleParserError("%s: the node roots could not be built under %s: %s" % (path, nodes, exc)) from None
        for host in hosts:
            self.inventory.add_host(host)
            self.inventory.set_variable(host, "rdma_demo_node_root", os.path.join(nodes, host))
            self.inventory.set_variable(host, "rdma_simulated_containerd", SIMULATED_CONTAINERD)
            self.inventory.set_variable(host, "rdma_simulated_containerd_address", containerd_sockets(os.path.join(nodes, host))[0])
            self.inventory.set_variable(host, "rdma_demo_planted_faults", [str(check) for check in planted.get(host, [])])
        for group, members in groups.items():
            self.inventory.add_group(group)
            for member in members:
                self.inventory.add_child(group, str(member))
        self.inventory.set_variable("all", "rdma_demo_inventory_dir", os.path.dirname(os.path.abspath(path)))


def _plain(value):
    """The option as plain dicts, lists and scalars (the loader's tagged YAML types hash and dump the same)."""
    if isinstance(value, dict):
        return {key if isinstance(key, int) else str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return str(value)
