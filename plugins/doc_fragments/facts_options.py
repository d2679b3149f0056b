# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of the fact gatherers, shared by ib_facts, driver_facts and node_facts (one node call)."""

from __future__ import annotations


class ModuleDocFragment:
    IB = r"""
options:
  sysfs_root:
    description:
      - The directory that stands for C(/sys).
      - Point it at a copy of a node's sysfs (or a simulated tree) to read that instead.
    type: path
    default: /sys
  proc_root:
    description:
      - The directory that stands for C(/proc). The V(gpudirect) subset reads the kernel release in
        C(sys/kernel/osrelease) and the NVIDIA driver's C(driver/nvidia/version) there, the V(roce)
        subset the netdevs' addresses in C(net/if_inet6), C(net/fib_trie) and C(net/route).
    type: path
    default: /proc
  gather_subset:
    description:
      - Which facts to gather, by the names of their readers. V(ports) (devices, ports, netdevs,
        summary) is always gathered and costs what ib_facts always cost; every other subset adds files
        to read.
      - V(counters) adds the port counters to every port in C(ansible_facts.rdma.ports).
      - V(pcie) adds C(ansible_facts.rdma.pcie), the PCIe link of each RDMA device.
      - V(locality) adds C(ansible_facts.rdma.gpus) and C(ansible_facts.rdma.locality). It lists
        C(bus/pci/devices), so it reads two files for every PCI function of the node.
      - V(gpudirect) adds C(ansible_facts.rdma.gpudirect).
      - V(roce) adds C(ansible_facts.rdma.roce), the netns mode and the GID table of every Ethernet
        port.
      - V(temperature) adds C(ansible_facts.rdma.temperature), the HCA's temperatures from the mlx5
        driver's hwmon device (Linux 6.6 and later).
      - V(aer) adds C(ansible_facts.rdma.aer), the PCIe Advanced Error Reporting counters of every HCA
        function and of the bridges on its path to the root port.
      - V(pcie_path) adds C(ansible_facts.rdma.pcie_path), ACS and ATS of every PCI function between
        each GPU and its nearest HCA and their IOMMU modes, from config space (all of it only as root)
        or from O(lspci_file).
      - V(roce_qos) adds C(ansible_facts.rdma.roce_qos), ECN per priority from sysfs and PFC per
        priority and the trust mode from C(dcb ... show) or C(mlnx_qos -i IF) (O(roce_qos_tools)) or
        their saved outputs (O(roce_qos_dir)), for every RoCE netdev. Only queries ever run.
      - V(link_quality) adds C(ansible_facts.rdma.link_quality), bit error rates, lane faults and module
        readings of every physical port from C(mlxlink --json) (O(mlxlink)) or its saved outputs
        (O(mlxlink_dir)).
      - V(kernel_log) adds C(ansible_facts.rdma.kernel_log), the carrier losses of the RDMA netdevs
        in the kernel log window, read from O(kernel_log_file) or from C(journalctl) on the node.
      - V(all) gathers every subset but V(kernel_log), the only one that runs a command.
      - The names are checked on the node, where the readers declare them; a name no reader declares
        fails the module with one sentence that lists the known ones.
    type: list
    elements: str
    default: [ports]
  lspci_file:
    description:
      - With the V(pcie_path) subset, saved C(lspci -vvv) text to read ACS and ATS from instead of each
        function's config space (which only root reads past its first 64 bytes).
    type: path
  roce_qos_tools:
    description:
      - With the V(roce_qos) subset, run C(dcb pfc show dev IF), C(dcb app show dev IF),
        C(dcb apptrust show dev IF) and C(mlnx_qos -i IF) where installed. Each argument list is
        checked against the collection's fixed list of query shapes before it runs; no setting flag can
        be passed.
    type: bool
    default: true
  roce_qos_dir:
    description:
      - With the V(roce_qos) subset, a directory of saved outputs (C(IF_dcb_pfc.json) or C(.txt),
        C(IF_dcb_app.json) or C(.txt), C(IF_dcb_apptrust.json) or C(.txt), C(IF_mlnx_qos.txt)), read for
        what the tools did not give.
    type: path
  mlxlink:
    description:
      - With the V(link_quality) subset, run C(mlxlink -d DEV -p PORT --json --show_module
        --show_counters) (a query, about a second a port) where it is installed.
    type: bool
    default: false
  mlxlink_dir:
    description:
      - With the V(link_quality) subset, a directory of saved outputs (C(DEV_PORT.json) or C(.txt)),
        read for what mlxlink did not give.
    type: path
  counters_interval:
    description:
      - With the V(counters) subset, V(0) reads the counters once. A positive number of seconds keeps
        that read as C(ansible_facts.rdma.counters_earlier), waits, and reads the counters again, so
        one call yields a delta and a rate.
      - At most V(300) (the module waits that long on the node); infinity and NaN are refused.
    type: float
    default: 0
  counters_resample_root:
    description:
      - The sysfs tree the second counter read of O(counters_interval) uses; default O(sysfs_root).
      - For a saved or simulated node whose later state is a second tree.
    type: path
  kernel_log_file:
    description:
      - With the V(kernel_log) subset, a file of saved kernel log text (C(journalctl -k) with C(-o short),
        C(short-iso), C(short-monotonic), C(short-full) or C(json); C(dmesg) plain, C(-T), C(-d) or
        C(--time-format iso); C(/dev/kmsg) records; syslog) to read instead of running C(journalctl) on the node.
      - A file is judged as of its newest carrier change with an ISO time stamp, so a copy reads the same later.
    type: path
  kernel_log_window_hours:
    description:
      - With the V(kernel_log) subset, how many hours of the kernel log count, from V(1) to V(87600) (ten
        years). Without O(kernel_log_file), C(journalctl -o short-iso --reverse --since -<N>h) reads the
        kernel's and systemd-networkd's messages of that window, newest first, at most 64 MiB of them.
    type: int
    default: 24
"""

    DRIVER = r"""
options:
  root:
    description:
      - The directory that stands for C(/). Every file is read under it (C(proc/modules),
        C(lib/modules), C(boot), C(etc/default/grub), C(sys/module), C(dev/infiniband)).
      - Point it at a copy of a node's files, or at a simulated node, to read that instead.
      - Commands still run on the managed node. Set O(run_tools=false) or give O(dkms_status_file)
        and O(ofed_info_file) to keep a simulated node's facts apart from the real host.
    type: path
    default: /
  dkms_modules:
    description:
      - DKMS module names of interest. C(ansible_facts.rdma_driver.dkms.relevant) shows each of them by kernel.
      - MLNX_OFED registers V(mlnx-ofed-kernel) and, depending on the options it was installed with,
        V(knem), V(xpmem), V(iser), V(isert), V(srp), V(kernel-mft-dkms). The NVIDIA driver
        (which builds C(nvidia_peermem)) registers V(nvidia).
    type: list
    elements: str
    default: [mlnx-ofed-kernel]
  dkms_status_file:
    description:
      - Read saved C(dkms status) output from this file on the managed node instead of running dkms.
      - Standard error mixed in (C(2>&1)) is fine; C(Error!) and C(Warning:) lines are kept as such.
      - The path is not put under O(root). A file that cannot be read fails the module.
    type: path
  ofed_info_file:
    description:
      - Read saved C(ofed_info -s) output from this file on the managed node instead of running it.
      - The path is not put under O(root). A file that cannot be read fails the module.
    type: path
  run_tools:
    description:
      - Whether to run C(dkms) and C(ofed_info) when no saved output is given for them.
      - With V(false), a tool without a saved output counts as not installed.
    type: bool
    default: true
"""
