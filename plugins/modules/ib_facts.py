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
  - rdma.node.facts_options.ib
  - rdma.node.attributes
  - rdma.node.attributes.facts
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

- name: Gather everything the fleet health checks read
  rdma.node.ib_facts:
    gather_subset: [all]

- name: Ports whose symbol error counter no longer moves
  ansible.builtin.debug:
    msg: "{{ ansible_facts.rdma.ports | selectattr('counters_saturated', 'contains', 'symbol_error')
             | map(attribute='device') | list }}"

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
            - With the V(counters) subset each port also has C(counters), C(counters_ext),
              C(hw_counters), C(hw_counters_lifespan_ms), C(counters_data_width_bits) and
              C(counters_saturated), described below.
            - C(counters) holds the files of C(ports/N/counters) by name, as integers; V(null) for
              a file that reads C(N/A (no PMA)) or cannot be read, and C(counters) itself is V(null)
              when the directory does not exist. C(port_xmit_data) and C(port_rcv_data) count
              4-byte words in sysfs; here they are converted to bytes (multiplied by 4) and named
              C(port_xmit_data_bytes) and C(port_rcv_data_bytes). The same holds for
              C(port_xmit_data_64)/C(port_rcv_data_64) of C(counters_ext).
            - C(counters_ext) holds C(ports/N/counters_ext), the 64-bit counters older MLNX_OFED
              drivers export there; V(null) when absent (the usual case).
            - C(hw_counters) holds the driver's C(ports/N/hw_counters) (mlx5 RoCE and transport
              counters, 64 bits, never saturated); its C(lifespan) file is a cache time, not a
              counter, and is reported as C(hw_counters_lifespan_ms).
            - IBTA PortCounters do not wrap; they stop at their maximum. Their widths (from the
              kernel's C(drivers/infiniband/core/sysfs.c) table) are 16 bits for C(symbol_error),
              C(port_rcv_errors), C(port_rcv_remote_physical_errors), C(port_rcv_switch_relay_errors),
              C(port_xmit_discards) and C(VL15_dropped); 8 bits for C(link_error_recovery),
              C(link_downed), C(port_xmit_constraint_errors) and C(port_rcv_constraint_errors); 4
              bits for C(local_link_integrity_errors) and C(excessive_buffer_overrun_errors); 32 bits
              for C(port_xmit_wait). The width of the data and packet counters is C(counters_data_width_bits), 64
              when the port exposes the extended set (C(unicast_*)/C(multicast_*) files, or a value
              above 32 bits), else 32.
            - C(counters_saturated) lists the keys of C(counters) whose raw value equals 2^width - 1.
              Such a counter no longer moves, so a rate or a rise computed from it means nothing.
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
              counters:
                symbol_error: 0
                link_downed: 255
                port_xmit_data_bytes: 921770677727356
                port_rcv_data_bytes: 922159499729932
                port_xmit_wait: 2489603687
              counters_ext: null
              hw_counters:
                out_of_buffer: 0
                rnr_nak_retry_err: 0
              hw_counters_lifespan_ms: 12
              counters_data_width_bits: 64
              counters_saturated: [link_downed]
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
          description:
            - Counts an operator reads first. C(down_ports) are the ports in a known state other than
              ACTIVE; C(unknown_state_ports) those whose state could not be read (neither up nor down);
              C(max_rate_gbps) the fastest ACTIVE port's rate, null without one (a port without a link
              still shows a rate, which is no link's speed).
          type: dict
          returned: always
          sample:
            device_count: 3
            port_count: 3
            active_ports: [mlx5_1/1, mlx5_bond_0/1]
            down_ports: [mlx5_0/1]
            unknown_state_ports: []
            max_rate_gbps: 200.0
        pcie:
          description:
            - With the V(pcie) subset, the PCIe link of the PCI function behind each RDMA device,
              by device name.
            - C(present) is V(false) when the device link dangles, the function is missing from
              C(bus/pci/devices) or its config space reads all ones (it fell off the bus), with
              C(absent_reason) saying which; V(null) when the tree has no device link at all.
            - C(current_speed_gts)/C(max_speed_gts) are the transfer rates per lane in GT/s from
              C(current_link_speed)/C(max_link_speed) (V(16.0 GT/s PCIe), V(8 GT/s)); V(null) for
              V(Unknown). C(current_generation)/C(max_generation) name the PCIe generation of those
              rates. C(current_width)/C(max_width) are lane counts. C(speed_below_max) and
              C(width_below_max) are V(true) for a degraded link, V(null) when a value is missing.
            - C(vendor) and C(device) are the function's PCI IDs (V(0x15b3), V(0x101b)).
          type: dict
          returned: when the pcie subset is gathered
          sample:
            mlx5_0:
              pci_address: "0000:0c:00.0"
              present: true
              absent_reason: null
              vendor: "0x15b3"
              device: "0x101b"
              current_speed_gts: 16.0
              max_speed_gts: 16.0
              current_width: 8
              max_width: 16
              current_generation: 4
              max_generation: 4
              speed_below_max: false
              width_below_max: true
        gpus:
          description:
            - With the V(locality) subset, the NVIDIA GPUs of the node (PCI vendor V(0x10de), class
              V(0x03xxxx)) from C(bus/pci/devices), in address order.
            - C(pci_path) lists the PCI bridges from the root port down to the GPU (the GPU itself
              excluded); C(host_bridge) is the root complex (V(pci0000:17)). C(numa_node) is V(-1)
              when the firmware does not say.
          type: list
          elements: dict
          returned: when the locality subset is gathered
          sample:
            - pci_address: "0000:1b:00.0"
              device: "0x20b0"
              class: "0x030200"
              driver: nvidia
              numa_node: 0
              host_bridge: pci0000:17
              pci_path: ["0000:17:00.0", "0000:18:00.0", "0000:19:08.0"]
        locality:
          description:
            - With the V(locality) subset, where each GPU sits relative to each HCA.
            - C(hcas) has, by RDMA device name (physical functions only), C(pci_address),
              C(numa_node), C(host_bridge), C(pci_path) and C(link_layers) (the link layers of its
              ports, so a check can keep the compute HCAs).
            - C(gpus) has one entry per GPU with every HCA in C(candidates), nearest first, and the
              first one as C(nearest_hca) and C(relation). C(shared_bridge) is the deepest PCI bridge
              both sit below.
            - C(relation), nearest first; V(same_pcie_switch) they share a bridge below the root
              port, a PCIe switch (nvidia-smi PIX or PXB); V(same_root_port) they share only the root
              port; V(same_host_bridge) same root complex, different root ports (nvidia-smi PHB);
              V(same_numa_node) different root complexes on one NUMA node (nvidia-smi NODE);
              V(cross_numa) different NUMA nodes (nvidia-smi SYS); V(unknown) nothing shared and no
              NUMA node to compare.
          type: dict
          returned: when the locality subset is gathered
          sample:
            hcas:
              mlx5_0:
                pci_address: "0000:1a:00.0"
                numa_node: 0
                host_bridge: pci0000:17
                pci_path: ["0000:17:00.0", "0000:18:00.0", "0000:19:04.0"]
                link_layers: [InfiniBand]
            gpus:
              - gpu: "0000:1b:00.0"
                numa_node: 0
                nearest_hca: mlx5_0
                relation: same_pcie_switch
                candidates:
                  - device: mlx5_0
                    relation: same_pcie_switch
                    shared_bridge: "0000:18:00.0"
                    link_layers: [InfiniBand]
        temperature:
          description:
            - With the V(temperature) subset, by RDMA device (physical functions only), the sensors of the
              hwmon device the mlx5 driver registers on its PCI function (Linux 6.6 and later), that is the
              ASIC (label C(asic)) and the cable module when it reports one (C(Module0)).
            - Each sensor has C(hwmon), C(label), and C(input_celsius), C(highest_celsius) (the highest
              since the history was last reset) and C(crit_celsius) (the sensor's high threshold), in
              degrees Celsius, V(null) where unreadable.
            - C(sensors) is empty and C(reason) says why where the kernel exposes no hwmon device or it has
              no temperature channel; the checks then say "not checked" for the device.
          type: dict
          returned: when the temperature subset is gathered
          sample:
            mlx5_0:
              pci_address: "0000:3b:00.0"
              reason: null
              sensors:
                - {hwmon: hwmon3, label: asic, input_celsius: 65.0, highest_celsius: 71.0, crit_celsius: 105.0}
                - {hwmon: hwmon3, label: Module0, input_celsius: 62.0, highest_celsius: 64.0, crit_celsius: 75.0}
        aer:
          description:
            - With the V(aer) subset, the PCIe Advanced Error Reporting counters (Linux 4.19 and later,
              C(aer_dev_correctable), C(aer_dev_nonfatal), C(aer_dev_fatal)) of every HCA function and of
              every bridge on its path to the root port, by PCI address; a bad link often shows at the
              port above the HCA.
            - C(available) and C(reason) say whether the kernel exposes them; C(time) is when they were
              read. Each function has C(role) (V(hca) or V(bridge)), C(device) (the RDMA device of an HCA
              function), C(devices_below), C(root_port), and C(correctable), C(nonfatal), C(fatal) (the count
              of each error type that counted, by its short kernel name, and C(total); V(null) where the
              kernel has no such file), C(unreadable) and C(notes).
            - When the call reads the counters twice (O(counters_interval)), the AER counters are read again
              with them (from O(counters_resample_root) when given); C(earlier) then holds the first read's
              C(time) and, by address, its total per kind, so that a rise within the call is judged.
          type: dict
          returned: when the aer subset is gathered
        pcie_path:
          description:
            - With the V(pcie_path) subset, the PCIe path between each GPU and its nearest HCA. C(paths)
              lists C(gpu), C(hca), C(hca_address), C(relation), C(bridges) and C(shared_bridge);
              C(functions) holds, by PCI address, C(role), C(device), C(port_type), C(acs) (C(capable) and
              C(control), seven flags each), C(ats) (C(enabled) and its queue depth and unit), C(iommu)
              (C(group), C(type), C(mode)) and C(unreadable).
            - C(applicable) is false on a node without both GPUs and HCAs; C(available) false, with the
              reason, where the path could not be read (config space without root reads 64 bytes).
              C(source) says whether config space or saved lspci text was read.
          type: dict
          returned: when the pcie_path subset is gathered
        roce_qos:
          description:
            - With the V(roce_qos) subset, by RoCE netdev (the slaves of a RoCE bond, each with C(bond)
              naming it, since the bond itself has no ECN files and no DCB), C(device) and C(port), C(ecn) (C(np) and C(rp),
              the priorities with ECN on, from C(ecn/roce_np/enable/N) and C(ecn/roce_rp/enable/N)),
              C(pfc) (C(enabled_priorities) and the C(source) output), C(trust) (C(mode) V(dscp) or V(pcp),
              its C(source), C(inferred) where iproute2 has no C(apptrust) and the DSCP map says it),
              C(dscp_prio) and C(notes); each part has a C(reason) where it could not be read.
          type: dict
          returned: when the roce_qos subset is gathered
        link_quality:
          description:
            - With the V(link_quality) subset, by C(device/port), what C(mlxlink) reports (run where
              O(mlxlink) allows it, or read from O(mlxlink_dir)) with its C(source) or the C(reason) it is
              missing. C(effective_ber), C(raw_ber), C(raw_ber_per_lane), C(symbol_ber), C(fec), C(speed), C(width),
              C(link_down_counter), C(link_error_recovery_counter) and C(module) (C(identifier), vendor
              and part, C(lane_faults) per fault and lane, and C(temperature_c), C(voltage_mv),
              C(bias_current_ma), C(rx_power_dbm), C(tx_power_dbm), each with C(values) per lane and the
              module's own C(low)/C(high) alarm thresholds).
            - What mlxlink prints as V(N/A), and the V(0 [0..0]) readings of a module without monitoring
              (a passive copper cable), are V(null), as are the lane flags of a passive copper cable (it
              has no receiver, laser or clock recovery to raise one); its terminal colours are ignored.
          type: dict
          returned: when the link_quality subset is gathered
        gpudirect:
          description:
            - With the V(gpudirect) subset, which GPUDirect RDMA path the node offers.
            - C(peermem_module) is the loaded peer-memory module (V(nvidia_peermem) or the older
              V(nv_peer_mem)) or V(null). C(memory_peers) says whether C(kernel/mm/memory_peers)
              exists (the peer-memory API of MLNX_OFED's ib_core); C(memory_peer_clients) lists its
              entries.
            - C(kernel_release) comes from O(proc_root)/sys/kernel/osrelease. C(nvidia_driver_version)
              from C(module/nvidia/version), else from O(proc_root)/driver/nvidia/version.
              C(nvidia_kernel_module_flavour) is V(open) or V(proprietary) (the version text, else
              the module's taint flags, where V(P) means proprietary).
            - C(peermem_ready) is V(true) when the nvidia module, a peer-memory module and
              C(memory_peers) are all there; C(peermem_missing) says what is not.
            - C(dma_buf_ready) is V(true) when the kernel is 5.12 or newer (RDMA dma-buf memory
              registration) and the open NVIDIA kernel module is loaded (the proprietary one does not
              export GPU memory as dma-buf); C(dma_buf_missing) says what is not.
            - C(reason) says why neither can be judged (a sysfs tree without C(module), as a saved copy
              of C(/sys) may be), else V(null); C(nvidia_module_loaded) is then V(null), and the gpudirect
              check says "not checked".
          type: dict
          returned: when the gpudirect subset is gathered
          sample:
            nvidia_module_loaded: true
            nvidia_driver_version: "535.104.05"
            nvidia_kernel_module_flavour: proprietary
            peermem_module: null
            memory_peers: true
            memory_peer_clients: []
            kernel_release: 6.1.0-27-amd64
            peermem_ready: false
            peermem_missing: [neither nvidia_peermem nor nv_peer_mem is loaded]
            dma_buf_ready: false
            dma_buf_missing: [the NVIDIA kernel module is proprietary, DMA-BUF needs the open one]
            reason: null
        counters_time:
          description: With the V(counters) subset, when the counters were read (seconds since the epoch; the later read with O(counters_interval)).
          type: float
          returned: when the counters subset is gathered
          sample: 1764034512.27
        counters_earlier:
          description:
            - With a positive O(counters_interval), the first read of the error counters (the IBTA
              PortCounters of C(ports/N/counters)) by C(device/port), and when it was taken. The
              ports' C(counters) hold the second read.
          type: dict
          returned: when counters_interval is positive
          sample:
            time: 1764034502.26
            ports:
              mlx5_1/1: {symbol_error: 1873, link_downed: 0}
        counters_interval_seconds:
          description: With a positive O(counters_interval), the seconds between the two reads.
          type: float
          returned: when counters_interval is positive
          sample: 10.01
        kernel_log:
          description:
            - With the V(kernel_log) subset, the carrier changes of the RDMA netdevs (and of the slaves of
              an RDMA bond, counted for the bond) in the window, parsed on the node by the same parser as
              the P(rdma.node.parse_carrier_events#filter) filter.
            - C(netdevs) has per RDMA netdev the counts C(down), C(up), C(losses) (transitions into
              down), the C(last) carrier and the C(port) (C(device/port)) it belongs to.
            - C(events) holds the newest 50 events (C(events_total) counts them all). C(window_applied)
              is V(false) for a saved file whose records carry no ISO time stamp (all of it counts);
              C(since)/C(until) bound a saved file's window. C(error) says why C(journalctl) gave nothing.
            - A saved file's window ends at its newest carrier change that is not after the node's clock;
              C(future_dated) counts the changes dated later (they count, but do not move the window).
            - C(journalctl) is read newest first, up to 64 MiB and 120 s; when it printed more, C(cut)
              says so and C(since) is the oldest carrier change read (else C(cut) is V(null)).
            - >-
              C(lines) counts the lines read, C(records) the log records among them and C(unread_lines) the
              other lines (blank lines and the marker lines C(journalctl) prints between entries aside), so a
              log with lines and no record was in a form the parser does not read, and its carrier changes
              are not checked.
            - C(down_periods) has per netdev the periods its carrier was down, with C(down_at), C(up_at),
              C(seconds) and C(ongoing), measured on the log's own clock (C(clock), the kernel's monotonic
              time, wall time, or yearless syslog time), or the C(reason) durations could not be told.
          type: dict
          returned: when the kernel_log subset is gathered
          sample:
            source: journalctl
            window_hours: 24
            window_applied: true
            cut: null
            since: null
            until: null
            future_dated: 0
            lines: 5120
            records: 5120
            unread_lines: 0
            netdevs:
              ibp94s0f0: {down: 3, up: 3, losses: 3, last: up, port: mlx5_0/1}
            events:
              - {netdev: ibp94s0f0, rdma_netdev: ibp94s0f0, carrier: down, time: "2026-11-24T21:14:07+0000",
                 source: networkd, message: "ibp94s0f0: Lost carrier"}
            events_total: 6
        roce:
          description:
            - With the V(roce) subset, the RDMA network-namespace mode and the RoCE GID table.
            - C(netns_mode) is V(shared) or V(exclusive), read from ib_core's C(netns_mode) parameter
              (C(netns_mode_source)); the kernel binds that parameter to the variable
              C(rdma system set netns) changes, so it is the current mode. V(null) when ib_core
              does not show it.
            - C(gids) lists every populated GID of every Ethernet port with its C(type)
              (V(RoCE v2), V(IB/RoCE v1)), C(netdev) and the C(address) it stands for
              (C(address_family) V(ipv4) for IPv4-mapped GIDs, else V(ipv6)).
            - C(netdev_addresses) gives, for every netdev of an Ethernet RDMA port, its C(ipv4) and
              C(ipv6) addresses, so a check can find an address without a RoCE v2 GID. They come from
              O(proc_root), IPv6 from C(net/if_inet6), IPv4 from the local entries of C(net/fib_trie),
              each given to the interface whose connected route in C(net/route) holds it. V(null)
              when O(proc_root) has neither file; a family whose file is missing is V(null).
          type: dict
          returned: when the roce subset is gathered
          sample:
            netns_mode: shared
            netns_mode_source: module/ib_core/parameters/netns_mode
            gids:
              - device: mlx5_bond_0
                port: 1
                index: 3
                gid: "0000:0000:0000:0000:0000:ffff:0a00:0b15"
                type: RoCE v2
                netdev: bond0
                address: 10.0.11.21
                address_family: ipv4
            netdev_addresses:
              bond0:
                ipv4: [10.0.11.21]
                ipv6: ["fe80::e42:a1ff:fe65:3a9e"]
"""

from ansible.module_utils.basic import AnsibleModule

# First: the collection's imports below are then compiled once and kept on the node (module_utils/_zip_import.py).
from ansible_collections.rdma.node.plugins.module_utils import _zip_import  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.rdma.node.plugins.module_utils._ib_collect import IB_OPTIONS, collect_ib


def main():
    module = AnsibleModule(argument_spec=IB_OPTIONS, supports_check_mode=True)
    facts, warnings = collect_ib(module)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"rdma": facts})


if __name__ == "__main__":
    main()
