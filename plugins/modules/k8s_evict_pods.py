#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name, on the controller; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_evict_pods
short_description: Evict chosen pods through the Kubernetes Eviction API, respecting PodDisruptionBudgets
version_added: 0.3.0
description:
  - Sends one eviction (C(POST /api/v1/namespaces/NS/pods/NAME/eviction), C(policy/v1)) per pod of O(pods), in order,
    and reports each pod's outcome. A PodDisruptionBudget that refuses (HTTP 429) is reported with the API server's
    message and the budget it names, and the other pods are still evicted.
  - Then waits, up to O(timeout) seconds, until each evicted pod is gone from the node.
  - Unlike M(kubernetes.core.k8s_drain), which evicts every pod of a node and stops at the first refusal, this evicts
    only the pods named, as the quarantine of the role C(rdma.node.k8s_quarantine) needs (the pods that use RDMA or GPU
    resources). It neither cordons nor uncordons.
  - Runs on the controller with the C(kubernetes) Python library. The connection options, and the C(K8S_AUTH_*)
    environment variables that stand for them, are those of C(kubernetes.core).
author: rdma.node developers (!UNKNOWN)
extends_documentation_fragment:
  - rdma.node.attributes
attributes:
  check_mode:
    support: full
    details: The evictions are sent as server-side dry runs (C(dryRun=All)), so a refusing PodDisruptionBudget still shows.
  diff_mode:
    support: none
options:
  pods:
    description: The pods to evict, each as C({namespace, name}) (other keys are ignored).
    type: list
    elements: dict
    required: true
  node:
    description: The node the pods run on; while waiting, a pod of the same name on another node (a StatefulSet's) counts as gone.
    type: str
  timeout:
    description: How long to wait, in seconds, for the evicted pods to be gone; V(0) does not wait.
    type: int
    default: 300
  poll:
    description: How often to look while waiting, in seconds.
    type: int
    default: 5
  grace_period:
    description: The grace period of the pods' deletion in seconds; unset keeps each pod's own.
    type: int
  kubeconfig:
    description: A kubeconfig file; unset uses C(K8S_AUTH_KUBECONFIG), then C(~/.kube/config).
    type: path
  context:
    description: A context of the kubeconfig; unset uses C(K8S_AUTH_CONTEXT), then its current context.
    type: str
  host:
    description: The API server URL (with O(api_key)); unset uses C(K8S_AUTH_HOST), and without one the kubeconfig.
    type: str
  api_key:
    description: A bearer token for O(host); unset uses C(K8S_AUTH_API_KEY).
    type: str
  ca_cert:
    description: A CA bundle that signs the API server's certificate; unset uses C(K8S_AUTH_SSL_CA_CERT).
    type: path
  validate_certs:
    description: V(true) or V(false) overrides the TLS verification; unset uses C(K8S_AUTH_VERIFY_SSL), then the kubeconfig's.
    type: bool
requirements:
  - the C(kubernetes) Python library on the controller
notes:
  - Only pods that a controller recreates elsewhere should be evicted; the caller chooses them
    (the filter C(rdma.node.k8s_quarantine_pods) leaves out DaemonSet and mirror pods).
"""

EXAMPLES = r"""
- name: Evict the RDMA pods of a quarantined node
  rdma.node.k8s_evict_pods:
    node: gpu-node-07
    pods:
      - {namespace: training, name: nccl-allreduce-0}
      - {namespace: training, name: nccl-allreduce-1}
    timeout: 120
  delegate_to: localhost
  register: evicted
"""

RETURN = r"""
pods:
  description: One entry per pod of O(pods), in order.
  returned: always
  type: list
  elements: dict
  contains:
    namespace:
      description: The pod's namespace.
      type: str
    name:
      description: The pod's name.
      type: str
    outcome:
      description:
        - V(evicted) (and gone from the node, unless O(timeout) is 0), V(gone) (it no longer existed), V(dry_run)
          (check mode, the server accepted the eviction), V(refused) (a PodDisruptionBudget, HTTP 429), V(timeout)
          (evicted but still there after O(timeout) seconds) or V(failed).
      type: str
      sample: refused
    message:
      description: The API server's message where there is one, with the causes it names.
      type: str
      sample: "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget nccl needs 2 healthy pods and has 2 currently"
node:
  description: O(node), as given.
  returned: always
  type: str
msg:
  description: How many pods were evicted.
  returned: always
  type: str
  sample: 1 of 2 pod(s) evicted
"""
