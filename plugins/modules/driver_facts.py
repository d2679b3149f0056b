# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: driver_facts
short_description: Gather RDMA driver, kernel and DKMS facts, including the kernel that boots next
version_added: 0.1.0
description:
  - Reports what decides whether a node keeps RDMA across a kernel upgrade, as
    C(ansible_facts.rdma_driver). The running kernel, the installed kernels and the one the boot
    loader starts next. The loaded kernel modules with their versions. C(dkms status), parsed. The
    OFED release from C(ofed_info -s). The device nodes in C(/dev/infiniband). Whether GPUDirect's
    C(nvidia_peermem) is loaded.
  - Files are read under O(root). The only commands run are C(dkms status), C(dkms --version) and
    C(ofed_info -s), and only when the tools are installed and O(run_tools=true).
  - A missing file or tool gives an empty or V(null) fact and a line in RV(ansible_facts.rdma_driver.notes),
    never a failure. The module changes nothing.
  - dkms's own errors (C(Error!), for example a module directory without C(dkms.conf), after which
    C(dkms status) lists nothing more) and lines of C(dkms status) that are not status lines are also
    warnings of the task.
  - Needs only the Python standard library on the node.
author: rdma.node developers (!UNKNOWN)
extends_documentation_fragment:
  - rdma.node.facts_options.driver
  - rdma.node.attributes
  - rdma.node.attributes.facts
notes:
  - Installed kernels are the releases in C(lib/modules) (and C(usr/lib/modules)) that have the
    kernel itself, a C(kernel/) module tree or a C(vmlinuz), plus every C(boot/vmlinuz-RELEASE).
    A module directory with only C(build)/C(source) links (headers without the kernel) or
    left-overs such as C(updates/dkms) after the kernel package was removed cannot boot. It is
    listed in RV(ansible_facts.rdma_driver.other_module_dirs) instead.
  - The next kernel is read the way the boot loader reads it. For GRUB, C(next_entry) in grubenv
    (C(grub-reboot)) wins once. Otherwise grub.cfg's C(default), which is an index, a title, an
    id, a C(submenu>entry) path or C(saved_entry) from grubenv (C(grub-set-default)). BLS
    entries in C(/boot/loader/entries) are included where grub.cfg runs C(blscfg). An unconditional
    C(set default=) in the C(custom.cfg) that grub.cfg sources (C(41_custom)) wins; a conditional one
    makes the next kernel unknown. For
    systemd-boot, the C(LoaderEntryOneShot) and C(LoaderEntryDefault) EFI variables come first,
    then C(default) in C(loader/loader.conf); the entries of the ESP and of an XBOOTLDR partition at
    C(/boot) are read, and where unified kernel images (C(EFI/Linux/*.efi)) may boot, the next
    kernel is unknown. Without a readable boot loader configuration, the
    newest installed kernel is assumed, with the source V(newest_installed).
  - Kernel releases are compared part by part, numbers as numbers. C(rc) releases come before the
    release itself, so V(6.5.0-rc5) is older than V(6.5.0).
seealso:
  - name: rdma.node.parse_dkms_status filter
    description: The same C(dkms status) parser, for output you already have.
    link: https://github.com/dell/dkms
  - name: rdma.node.driver_verify role
    description: Turns these facts into findings, above all the kernel a node boots next without its driver.
    link: https://github.com/dell/dkms/blob/master/dkms.8.in
"""

EXAMPLES = r"""
- name: Gather the driver facts
  rdma.node.driver_facts:

- name: Warn when the kernel that boots next has no DKMS build of the OFED driver
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }} loses RDMA at its next reboot into {{ __kernel }}"
  vars:
    __kernel: "{{ ansible_facts.rdma_driver.next_boot_kernel }}"
    __state: "{{ ansible_facts.rdma_driver.dkms.relevant['mlnx-ofed-kernel'].kernels[__kernel] | default('absent') }}"
  when: __state not in ['installed', 'installed-weak']

- name: Look at several DKMS modules
  rdma.node.driver_facts:
    dkms_modules: [mlnx-ofed-kernel, knem, nvidia]

- name: Read a simulated node, with saved command output and without running any tool
  rdma.node.driver_facts:
    root: /srv/snapshots/gpu-node-07
    dkms_status_file: /srv/snapshots/gpu-node-07.dkms-status.txt
    ofed_info_file: /srv/snapshots/gpu-node-07.ofed-info.txt
    run_tools: false
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host's facts.
  returned: always
  type: dict
  contains:
    rdma_driver:
      description: The driver side of the node.
      returned: always
      type: dict
      contains:
        running_kernel:
          description: The running kernel release (C(uname -r)), from C(proc/sys/kernel/osrelease).
          type: str
          returned: always
          sample: 6.1.0-27-amd64
        installed_kernels:
          description: Kernel releases that can boot, oldest first.
          type: list
          elements: str
          returned: always
          sample: [6.1.0-27-amd64, 6.1.0-28-amd64]
        newer_kernels:
          description:
            - The installed kernels newer than the running one, oldest first.
            - Another flavour of the running build (its realtime kernel, C(+debug), C(-cloud-amd64)) is not newer.
          type: list
          elements: str
          returned: always
          sample: [6.1.0-28-amd64]
        other_module_dirs:
          description:
            - Releases in C(lib/modules) without a kernel image (headers only, left-overs).
            - Only names that start with a digit are releases (RHEL's C(kabi-*) lists are not).
          type: list
          elements: str
          returned: always
          sample: [6.1.0-21-amd64]
        next_boot_kernel:
          description: The kernel the node boots next, V(null) when it cannot be told.
          type: str
          returned: always
          sample: 6.1.0-28-amd64
        next_boot_source:
          description:
            - How RV(ansible_facts.rdma_driver.next_boot_kernel) was found.
            - V(grub_next_entry), V(grub_saved_entry), V(grub_default), V(grub_custom_cfg) (a C(set default=)
              in the C(custom.cfg) grub.cfg sources), V(grub_first_entry) (the default
              named no entry), V(systemd_boot_oneshot), V(systemd_boot_efi_default),
              V(systemd_boot_default), V(systemd_boot_first_entry), V(newest_installed), or V(null).
          type: str
          returned: always
          sample: grub_default
        next_boot_entry:
          description: The boot menu entry (title or id) that boots next, where a boot loader named one.
          type: str
          returned: always
          sample: Debian GNU/Linux
        loaded_modules:
          description:
            - Loaded kernel modules from C(proc/modules) by name.
            - C(version) and C(srcversion) come from C(sys/module/NAME/); C(taint) holds the flags
              such as V(OE) (out of tree, unsigned) that C(proc/modules) shows.
            - C(refcount) and C(used_by) are V(null) on a kernel built without module unloading (it
              prints C(- -) there).
          type: dict
          returned: always
          sample:
            mlx5_core:
              size: 2207744
              refcount: 1
              used_by: [mlx5_ib]
              state: Live
              taint: OE
              version: 23.10-1.1.9
              srcversion: 7A6C9F4D0C3B5E2A1F8D6E4
        nvidia_peermem_loaded:
          description: Whether C(nvidia_peermem) (GPUDirect RDMA) is loaded.
          type: bool
          returned: always
          sample: true
        gpudirect_module:
          description: The loaded GPUDirect RDMA module, V(nvidia_peermem) or the older V(nv_peer_mem), else V(null).
          type: str
          returned: always
          sample: nvidia_peermem
        dkms:
          description:
            - C(dkms status), parsed; V(null) when dkms is not installed (see RV(ansible_facts.rdma_driver.notes)).
          type: dict
          returned: always
          contains:
            version:
              description: The dkms version (C(dkms --version)); V(null) when saved output was read.
              type: str
              returned: always
              sample: 3.0.10
            entries:
              description:
                - One item per status line, with C(name), C(version), C(kernel), C(arch) (V(null) for
                  modules only V(added)), C(state), C(built_for) (the kernel an V(installed-weak) module was
                  built for), C(warnings) and C(notes) (the parenthesised suffixes) and C(message).
              type: list
              elements: dict
              returned: always
              sample:
                - name: mlnx-ofed-kernel
                  version: "23.10"
                  kernel: 6.1.0-27-amd64
                  arch: x86_64
                  state: installed
                  built_for: null
                  warnings: []
                  notes: []
                  message: null
            errors:
              description: The text of dkms's C(Error!) lines, continuation lines included.
              type: list
              elements: str
              returned: always
              sample: ["Bad return status for module build on kernel: 6.1.0-28-amd64 (x86_64)"]
            warnings:
              description: The text of dkms's C(Warning:) and C(Deprecated feature:) lines.
              type: list
              elements: str
              returned: always
              sample: []
            relevant:
              description:
                - Each name of O(dkms_modules). C(present) says whether dkms knows it, C(versions) lists its
                  versions, and C(kernels) maps each kernel to the best state over its versions
                  (V(installed), V(installed-weak), V(built)).
              type: dict
              returned: always
              sample:
                mlnx-ofed-kernel:
                  present: true
                  versions: ["23.10"]
                  kernels:
                    6.1.0-27-amd64: installed
        ofed_version:
          description: The OFED release as C(ofed_info -s) prints it, without the colon; V(null) without OFED.
          type: str
          returned: always
          sample: MLNX_OFED_LINUX-23.10-1.1.9.0
        ofed:
          description: RV(ansible_facts.rdma_driver.ofed_version) split into C(id), C(distribution) and C(version); V(null) without OFED.
          type: dict
          returned: always
          sample:
            id: MLNX_OFED_LINUX-23.10-1.1.9.0
            distribution: MLNX_OFED_LINUX
            version: 23.10-1.1.9.0
        infiniband_devices:
          description: The names in C(dev/infiniband), in natural order.
          type: list
          elements: str
          returned: always
          sample: [rdma_cm, umad0, uverbs0]
        notes:
          description: What was missing or odd, one sentence each.
          type: list
          elements: str
          returned: always
          sample: ["ofed_info is not installed: OFED version unknown (inbox driver?)"]
"""

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._driver_collect import DRIVER_OPTIONS, collect_driver


def main():
    module = AnsibleModule(argument_spec=DRIVER_OPTIONS, supports_check_mode=True)
    facts, warnings = collect_driver(module)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"rdma_driver": facts})


if __name__ == "__main__":
    main()
