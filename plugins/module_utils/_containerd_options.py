# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of rdma.node.containerd_runtime: one definition for the module (node side) and the
action plugin (controller side)."""

from __future__ import annotations

ARGUMENT_SPEC = dict(
    path=dict(type="path", default="/etc/containerd/config.toml"),
    base_runtime_spec=dict(type="path"),
    runtimes=dict(type="list", elements="str"),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    create_missing=dict(type="bool", default=False),
    backup=dict(type="bool", default=False),
    validate=dict(type="bool"),
)
REQUIRED_IF = [("state", "present", ["base_runtime_spec"])]
