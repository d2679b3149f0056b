# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of rdma.node.k8s_evict_pods: evict named pods through the Eviction API, on the controller.

Why an action with the ``kubernetes`` client rather than a ``kubernetes.core`` module: the eviction is
a subresource (``POST /api/v1/namespaces/NS/pods/NAME/eviction``) that no ``kubernetes.core`` module
sends for chosen pods. ``k8s_drain`` evicts every pod of a node (a label selector at most), stops at
the first PodDisruptionBudget that refuses, and patches the cordon without a resourceVersion. The
quarantine evicts only the pods that use RDMA or GPU resources, goes on past a refusal and reports
each pod's outcome. Connection options and their ``K8S_AUTH_*`` environment variables are those of
``kubernetes.core``, so an AWX Kubernetes credential serves both.
"""

from __future__ import annotations

import json
import os
import time

from ansible.errors import AnsibleActionFail
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = {
    "pods": {"type": "list", "elements": "dict", "required": True},
    "node": {"type": "str"},
    "timeout": {"type": "int", "default": 300},
    "poll": {"type": "int", "default": 5},
    "grace_period": {"type": "int"},
    "kubeconfig": {"type": "path"},
    "context": {"type": "str"},
    "host": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "ca_cert": {"type": "path"},
    "validate_certs": {"type": "bool"},
}


def _setting(args, name, variable):
    value = args.get(name)
    return value if value not in (None, "") else os.environ.get(variable) or None


def api_client(args):
    """A ``kubernetes`` ApiClient from the options, else the K8S_AUTH_* variables, else the kubeconfig."""
    from kubernetes import client, config  # controller-side library, imported where it is used

    configuration = client.Configuration()
    host = _setting(args, "host", "K8S_AUTH_HOST")
    if host:
        configuration.host = host
        key = _setting(args, "api_key", "K8S_AUTH_API_KEY")
        if key:
            configuration.api_key = {"authorization": "Bearer " + key}
        ca_cert = _setting(args, "ca_cert", "K8S_AUTH_SSL_CA_CERT")
        if ca_cert:
            configuration.ssl_ca_cert = ca_cert
    else:
        config.load_kube_config(config_file=_setting(args, "kubeconfig", "K8S_AUTH_KUBECONFIG"),
                                context=_setting(args, "context", "K8S_AUTH_CONTEXT"), client_configuration=configuration)
    verify = args.get("validate_certs")
    if verify is None and os.environ.get("K8S_AUTH_VERIFY_SSL"):
        verify = boolean(os.environ["K8S_AUTH_VERIFY_SSL"], strict=False)
    if verify is not None:
        configuration.verify_ssl = verify
    return client.ApiClient(configuration)


def _refusal(exc):
    """The API server's message, with the causes it gives (the PodDisruptionBudget that refused)."""
    try:
        body = json.loads(exc.body or "{}")
    except ValueError:
        return str(exc.body or exc.reason)
    causes = [c.get("message") for c in (body.get("details") or {}).get("causes") or [] if c.get("message")]
    return " ".join([body.get("message") or str(exc.reason)] + causes)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        for index, pod in enumerate(args["pods"]):
            if not isinstance(pod.get("namespace"), str) or not isinstance(pod.get("name"), str) or not pod["name"]:
                raise AnsibleActionFail("rdma.node.k8s_evict_pods: pods[%d] needs a namespace and a name, got %r" % (index, pod))
        try:
            from kubernetes.client import CoreV1Api
            from kubernetes.client.exceptions import ApiException
            from kubernetes.config.config_exception import ConfigException
        except ImportError:
            raise AnsibleActionFail("rdma.node.k8s_evict_pods: the kubernetes Python library is not installed on the controller "
                                    "(it comes with kubernetes.core's requirements)") from None
        try:
            core = CoreV1Api(api_client(args))
        except (ConfigException, OSError, TypeError, ValueError) as exc:
            raise AnsibleActionFail("rdma.node.k8s_evict_pods: no connection to the cluster: %s" % exc) from None
        check_mode = bool(self._task.check_mode)
        outcomes = [self._evict(core, ApiException, pod, args, check_mode) for pod in args["pods"]]
        evicted = [o for o in outcomes if o["outcome"] == "evicted"]
        if evicted and args["timeout"] > 0:
            self._wait(core, ApiException, evicted, args)
        result.update(changed=bool(evicted), node=args["node"], pods=outcomes,
                      msg="%d of %d pod(s) evicted%s" % (len([o for o in outcomes if o["outcome"] in ("evicted", "gone", "dry_run")]),
                                                         len(outcomes), " (check mode: dry runs)" if check_mode else ""))
        return result

    @staticmethod
    def _evict(core, api_exception, pod, args, check_mode):
        from kubernetes.client import V1DeleteOptions, V1Eviction, V1ObjectMeta

        options = V1DeleteOptions(grace_period_seconds=args["grace_period"]) if args["grace_period"] is not None else None
        body = V1Eviction(api_version="policy/v1", kind="Eviction", metadata=V1ObjectMeta(name=pod["name"], namespace=pod["namespace"]),
                          delete_options=options)
        out = {"namespace": pod["namespace"], "name": pod["name"], "outcome": None, "message": None}
        try:
            # The server answers a Status, not an Eviction: keep the answer raw rather than decode it as one.
            core.create_namespaced_pod_eviction(pod["name"], pod["namespace"], body, dry_run="All" if check_mode else None,
                                                _preload_content=False)
            out["outcome"] = "dry_run" if check_mode else "evicted"
        except api_exception as exc:
            if exc.status == 404:
                out.update(outcome="gone", message="the pod no longer exists")
            elif exc.status == 429:
                out.update(outcome="refused", message=_refusal(exc))
            else:
                out.update(outcome="failed", message="%s %s" % (exc.status, _refusal(exc)))
        except Exception as exc:  # the connection: say which pod and why, go on with the others
            out.update(outcome="failed", message="%s: %s" % (type(exc).__name__, exc))
        return out

    @staticmethod
    def _wait(core, api_exception, evicted, args):
        """Until each evicted pod is gone from the node (or the timeout): one that stays says so."""
        deadline = time.monotonic() + args["timeout"]
        pending = list(evicted)
        while pending:
            still = []
            for out in pending:
                try:
                    pod = core.read_namespaced_pod(out["name"], out["namespace"])
                except api_exception as exc:
                    if exc.status == 404:
                        continue
                    still.append(out)
                    continue
                if args.get("node") and pod.spec.node_name != args["node"]:
                    continue  # a new pod of the same name (a StatefulSet's) on another node
                still.append(out)
            pending = still
            if pending and time.monotonic() >= deadline:
                for out in pending:
                    out.update(outcome="timeout", message="evicted, but still there after %d s" % args["timeout"])
                return
            if pending:
                time.sleep(max(1, args["poll"]))
