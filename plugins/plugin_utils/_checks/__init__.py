# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every check of the collection, one module per role (the registry is ``plugin_utils/_registry.py``).

Importing this package registers them all; the list below is the whole of it. The operators' own
checks (``custom``, JMESPath) are built at run time and imported only where they are used, since they
need the jmespath library.

===============  =================  ======================================================
module           role               judges
===============  =================  ======================================================
``ports``        ib_inventory       the ports against the group's expectations
``driver``       driver_verify      the loaded modules, OFED and DKMS for each kernel
``health``       node_health        counters, links, PCIe, GPUDirect, locality, RoCE, memlock
``physical``     node_health        PCIe AER, GPU-HCA path (ACS, ATS, IOMMU), RoCE QoS, BER, optics, link downtime
``memlock``      node_remediation   what the memlock remediation wrote, restarted and proved
``bandwidth``    bandwidth_check    ib_write_bw loopback and pair results against the link rate
``fleet``        fleet_health       HCAs that differ from the rest of their inventory group
``consensus``    fleet_consistency  OFED, kernel, DKMS, port rates, PCIe, IOMMU, QoS that differ from the group's majority
``cluster``      k8s_rdma           NicClusterPolicy, mofed.wait, device plugin, node resources
``pod_proof``    pod_proof          ib_write_bw between pods of a group, their memlock, pods that never start
``nccl``         pod_proof          NCCL's transport (socket fallback, GPUDirect) and nccl-tests' bus bandwidth
``quarantine``   k8s_quarantine     what the quarantine of faulty nodes planned and did
===============  =================  ======================================================
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils._checks import (  # noqa: F401 (imported to register)
    bandwidth,
    cluster,
    consensus,
    driver,
    fleet,
    health,
    memlock,
    nccl,
    physical,
    pod_proof,
    ports,
    quarantine,
)
