# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect bandwidth tests: which memory a perftest run uses, which GPU, and what it must reach.

Shared by ``bandwidth_check`` (on the hosts) and ``pod_proof`` (in pods). Pure functions over the
facts of ``rdma.node.ib_facts`` with the ``gpudirect`` and ``locality`` subsets:

* the mode of a port's test: ``host`` memory, ``cuda`` (``--use_cuda``: the GPU's memory registered
  through the peer-memory API, nvidia_peermem) or ``dmabuf`` (``--use_cuda --use_cuda_dmabuf``: through
  the kernel's DMA-BUF, open NVIDIA module and kernel 5.12 or newer); ``auto`` takes DMA-BUF where the
  facts say it is ready, else peer memory, else host memory, and says why;
* the GPU nearest the port's HCA (from ``rdma.locality``), its CUDA index in PCI bus order (the run
  sets ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so the index is the GPU's place in the address-sorted list
  of ``rdma.gpus``) and the HCA's NUMA node to pin the test to;
* the efficiency a test must reach by mode. The defaults follow the anchors quoted in the roles'
  READMEs: Azure's node health checks require GPUDirect ``ib_write_bw`` loopback of 180 Gb/s per HDR
  HCA (ND A100 v4, 0.90 of 200), 360 per NDR HCA on ND H200 v5 (0.90 of 400) and 380 on ND H100 v5
  (0.95), and host-memory ``ib_write_bw`` of 95 Gb/s per EDR HCA (HC44, 0.95), 190 per HDR (HB120
  v2/v3, 0.95) and 390 per NDR (HBv4, HX, 0.975) at 1 MiB messages.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError

MODES = ("host", "cuda", "dmabuf")
CHOICES = MODES + ("auto",)
# Nearest first, as ib_facts' locality names them (nvidia-smi topo: PIX/PXB, -, PHB, NODE, SYS).
RELATIONS = ("same_pcie_switch", "same_root_port", "same_host_bridge", "same_numa_node", "cross_numa", "unknown")
DEFAULT_EFFICIENCY = {"host": 0.95, "gpu": 0.90}
# What a failure with GPU memory says where the facts found the path ready (or were not gathered to say otherwise).
READY = "the node's GPUDirect facts show that path ready, or were not gathered: check perftest's CUDA build and the GPU (nvidia-smi)"


class GpuMemoryError(CheckError):
    """A GPU-mode setting the plan cannot use; the message names the variable."""


def efficiency_for(mode, host_efficiency, gpu_efficiency, variable="efficiency"):
    """The share of the link rate a test of ``mode`` must reach."""
    value = host_efficiency if mode == "host" else gpu_efficiency
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GpuMemoryError("%s: expected a number between 0 and 1 such as 0.9, got %r" % (variable, value)) from None
    if not 0 < number <= 1:
        raise GpuMemoryError("%s: expected a number between 0 and 1 such as 0.9, got %r" % (variable, value))
    return number


def choose_mode(wanted, gpudirect):
    """``(mode, reason)``: the memory a test uses for the ``wanted`` mode and the node's ``rdma.gpudirect`` facts.

    ``reason`` says why ``auto`` chose what it chose, or why a GPU mode cannot be judged ready (the
    test still runs as asked: the run itself is the proof, and its failure says more than the facts).
    """
    if wanted not in CHOICES:
        raise GpuMemoryError("gpu_mode: expected one of %s, got %r" % (", ".join(CHOICES), wanted))
    facts = gpudirect if isinstance(gpudirect, Mapping) else None
    if wanted == "host":
        return "host", None
    if facts is None:
        if wanted == "auto":
            return "host", "no GPUDirect facts (rdma.gpudirect, ib_facts' gpudirect subset) for this node: host memory"
        return wanted, "no GPUDirect facts (rdma.gpudirect) for this node, so its readiness is not known"
    if wanted == "auto":
        if facts.get("dma_buf_ready"):
            return "dmabuf", "DMA-BUF is ready (open NVIDIA module, kernel 5.12 or newer)"
        if facts.get("peermem_ready"):
            return "cuda", "peer memory is ready (%s)" % (facts.get("peermem_module") or "peer-memory module")
        missing = list(facts.get("dma_buf_missing") or []) + list(facts.get("peermem_missing") or [])
        return "host", "no GPUDirect path is ready (%s): host memory" % ("; ".join(missing) or "neither DMA-BUF nor peer memory")
    if wanted == "dmabuf" and not facts.get("dma_buf_ready"):
        return "dmabuf", "the facts say DMA-BUF is not ready: %s" % ("; ".join(facts.get("dma_buf_missing") or []) or "no reason given")
    if wanted == "cuda" and not facts.get("peermem_ready"):
        return "cuda", "the facts say peer memory is not ready: %s" % ("; ".join(facts.get("peermem_missing") or []) or "no reason given")
    return wanted, None


def _gpu_order(gpus):
    return sorted((g for g in gpus or [] if isinstance(g, Mapping) and g.get("pci_address")), key=lambda g: str(g["pci_address"]))


def nearest_gpu(rdma, device):
    """The GPU nearest the HCA ``device``: ``{pci_address, cuda_index, relation, numa_node}``, or None.

    ``cuda_index`` is the GPU's place among the node's NVIDIA GPUs in PCI address order (what CUDA
    numbers with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``). Among the GPUs the lowest relation wins, then the
    lowest address.
    """
    rdma = rdma if isinstance(rdma, Mapping) else {}
    locality = rdma.get("locality") if isinstance(rdma.get("locality"), Mapping) else {}
    order = [g["pci_address"] for g in _gpu_order(rdma.get("gpus"))]
    best = None
    for gpu in locality.get("gpus") or []:
        if not isinstance(gpu, Mapping):
            continue
        for candidate in gpu.get("candidates") or []:
            if not isinstance(candidate, Mapping) or candidate.get("device") != device:
                continue
            relation = candidate.get("relation") or "unknown"
            rank = RELATIONS.index(relation) if relation in RELATIONS else len(RELATIONS)
            key = (rank, str(gpu.get("gpu")))
            if best is None or key < best[0]:
                best = (key, gpu, relation)
    if best is None:
        return None
    gpu = best[1]
    address = gpu.get("gpu")
    return {"pci_address": address, "cuda_index": order.index(address) if address in order else None,
            "relation": best[2], "numa_node": gpu.get("numa_node")}


def hca_numa_node(rdma, device):
    """The NUMA node of the HCA ``device`` (``rdma.devices`` or ``rdma.locality.hcas``), or None when unknown (-1 too)."""
    rdma = rdma if isinstance(rdma, Mapping) else {}
    for source in ((rdma.get("devices") or {}).get(device), ((rdma.get("locality") or {}).get("hcas") or {}).get(device)):
        if isinstance(source, Mapping) and isinstance(source.get("numa_node"), int) and source["numa_node"] >= 0:
            return source["numa_node"]
    return None


def port_memory(rdma, device, wanted):
    """What a test of the port of ``device`` uses: ``{mode, reason, gpu, cuda_index, dmabuf, numa_node}``.

    ``cuda_index`` is the GPU for ``--use_cuda`` (``dmabuf``: with ``--use_cuda_dmabuf``) in a GPU mode:
    the GPU nearest the HCA; without locality facts, index 0, and the reason says so. ``numa_node`` is
    the HCA's, to pin the test to, in every mode.
    """
    gpudirect = (rdma or {}).get("gpudirect") if isinstance(rdma, Mapping) else None
    mode, reason = choose_mode(wanted, gpudirect)
    entry = {"mode": mode, "reason": reason, "gpu": None, "cuda_index": None, "dmabuf": mode == "dmabuf",
             "numa_node": hca_numa_node(rdma, device)}
    if mode == "host":
        return entry
    gpu = nearest_gpu(rdma, device)
    entry["gpu"] = gpu
    index = gpu["cuda_index"] if gpu and gpu.get("cuda_index") is not None else None
    if index is None:
        index = 0
        note = "no GPU locality facts for %s (rdma.locality): the first GPU (CUDA index 0) is used" % device
        entry["reason"] = "%s; %s" % (reason, note) if reason else note
    entry["cuda_index"] = index
    return entry


def memory_text(mode, gpu=None):
    """``host memory``, or ``GPU memory (cuda, GPU 0000:1b:00.0)`` as the findings say it."""
    if mode == "host":
        return "host memory"
    where = (gpu or {}).get("pci_address") if isinstance(gpu, Mapping) else None
    return "GPU memory (%s%s)" % (mode, ", GPU %s" % where if where else "")


def same_gpu(pci_address, bus):
    """Whether perftest's ``bus`` (``1b:00``, as it prints the PCIe address) is the GPU at ``pci_address`` (``0000:1b:00.0``)."""
    if not pci_address or not bus:
        return None
    parts = str(pci_address).lower().split(":")
    return ":".join(parts[-2:]).split(".", maxsplit=1)[0] == str(bus).lower() if len(parts) >= 2 else None
