# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the ``node_remediation`` role: the memlock fix, what it changed, and what processes really got.

They read ``ansible_facts.rdma_memlock`` (``rdma.node.container_limits``: containerd's process, the
running containers, the test container). Parameters, without the ``node_remediation_`` prefix:

* ``unit``, ``spec_path``, ``memlock``, ``nofile``, ``require_cri``: the role's settings;
* ``check_mode``: whether the run is in check mode (messages say "would");
* ``spec``, ``config``, ``dropin``: the registered results of ``rdma.node.oci_rlimits``,
  ``rdma.node.containerd_runtime`` and ``rdma.node.systemd_limits`` (``{}`` when they did not run);
* ``restart``: ``{"ran": bool}``, whether the restart handler ran;
* ``rollback``: ``None``, or what the role's rollback did: ``cause`` (``containerd_not_back`` or
  ``change_failed``), ``reason``, ``host``, ``containerd_said`` (containerd's last words in the
  journal), ``results`` (the results of the restore and remove tasks, each with its ``item``:
  ``path``, ``backup_file``, ``created``), ``restarted`` (whether containerd was restarted with the
  previous files), ``containerd_running`` and ``not_back_reason`` (after that restart).
"""

from __future__ import annotations

from ansible_collections.rdma.node.plugins.plugin_utils._registry import CheckError, check, summary
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RlimitError, parse_rlimit_value

ROLE = "node_remediation"
FACTS = ("rdma_memlock",)


def _value(text, where):
    try:
        return parse_rlimit_value(text, where)
    except RlimitError as exc:
        raise CheckError(str(exc)) from None


def _same(pair, number):
    """Whether soft and hard of a ``/proc`` pair both equal ``number``; a value /proc would not print is not."""
    try:
        return all(parse_rlimit_value(pair[key]) == number for key in ("soft", "hard"))
    except RlimitError:
        return False


def _pair(pair):
    return "%s/%s" % (pair["soft"], pair["hard"]) if pair else "?/?"


def _result(params, name):
    value = params.get(name) or {}
    if not isinstance(value, dict):
        raise CheckError("%s: expected the registered result of the role's task, got %r" % (name, value))
    return value


def _changed(result):
    return bool(result.get("changed")) and not result.get("failed")


def _written(params, found, subject, what):
    # After a rollback the file is back as it was: the rolled_back finding says what was put back.
    if params.get("rollback"):
        return
    prefix = "Check mode: would write " if params.get("check_mode") else "Wrote "
    found.info(subject, prefix + what + ".")


def _limits_text(params):
    text = "RLIMIT_MEMLOCK %s" % params["memlock"]
    if params.get("nofile") is not None:
        text += " and RLIMIT_NOFILE %s" % params["nofile"]
    return text


@check(ROLE, "spec_written", params=("spec", "rollback", "memlock", "nofile", "check_mode"))
def spec_written(facts, params, found):
    """The base runtime spec was written (check mode: would be)."""
    spec = _result(params, "spec")
    if _changed(spec):
        source = " (from ctr oci spec)" if spec.get("created") else ""
        _written(params, found, spec["path"], "the base runtime spec %s%s with %s" % (spec["path"], source, _limits_text(params)))


@check(ROLE, "runtimes_pointed", params=("config", "rollback", "spec_path", "check_mode"))
def runtimes_pointed(facts, params, found):
    """containerd's CRI runtimes were pointed at the spec (check mode: would be)."""
    config = _result(params, "config")
    if _changed(config):
        added = config.get("runtimes_created") or []
        what = "base_runtime_spec = %s for the CRI runtime(s) %s in %s%s" % (
            params["spec_path"], ", ".join(config.get("runtimes_changed") or []), config["path"],
            " (added: %s)" % ", ".join(added) if added else "")
        _written(params, found, config["path"], what)


@check(ROLE, "dropin_written", params=("dropin", "rollback", "check_mode"))
def dropin_written(facts, params, found):
    """containerd's systemd drop-in was written (check mode: would be)."""
    dropin = _result(params, "dropin")
    if _changed(dropin):
        limits = ", ".join("%s=%s" % item for item in (dropin.get("limits") or {}).items())
        _written(params, found, dropin["path"], "%s with %s" % (dropin["path"], limits))


@check(ROLE, "limit_overridden", params=("dropin",))
def limit_overridden(facts, params, found):
    """A drop-in applied after ours sets the same limit, so containerd gets that value instead."""
    dropin = _result(params, "dropin")
    for item in dropin.get("overridden_by") or []:
        found.warning(item["path"], "%s line %s sets %s=%s and applies after %s, so containerd gets that value instead." % (
            item["path"], item["line"], item["directive"], item["value"], dropin["path"]),
            (dropin.get("limits") or {}).get(item["directive"]), item["value"])


@check(ROLE, "dropin_masked", params=("dropin",))
def dropin_masked(facts, params, found):
    """A drop-in of the same name earlier on systemd's search path hides ours."""
    dropin = _result(params, "dropin")
    masked_by = dropin.get("masked_by")
    if masked_by:
        found.warning(masked_by, "%s has the same name as %s and comes first on systemd's search path, so systemd never reads ours." % (
            masked_by, dropin["path"]), dropin["path"], masked_by)


@check(ROLE, "containerd_restarted", params=("restart", "rollback", "unit", "require_cri", "check_mode"))
def containerd_restarted(facts, params, found):
    """containerd was restarted for the change and answers again (check mode: would be restarted)."""
    if not (params.get("restart") or {}).get("ran") or params.get("rollback"):
        return
    unit = params["unit"]
    command = (params.get("restart") or {}).get("command") or []
    # A containerd that systemd does not run (node_remediation_restart_command): say what restarted it.
    how = (" with `%s`" % " ".join(str(arg) for arg in command)) if command else ""
    if params.get("check_mode"):
        found.info(unit, "Check mode: %s would be restarted%s." % (unit, how))
    else:
        found.info(unit, "Restarted %s%s; it answers again (ctr version)%s" % (
            unit, how, " and its CRI plugin is loaded." if params.get("require_cri") else "."))


def rollback_restored(rollback):
    """What the rollback put back, one sentence part per file."""
    done = []
    for result in rollback.get("results") or []:
        item = result.get("item") or {}
        if result.get("skipped"):
            continue
        backup = item.get("backup_file")
        if result.get("failed"):
            done.append("could not %s %s: %s" % ("restore" if backup else "remove", item.get("path"), (result.get("msg") or "no message").strip()))
        elif backup:
            done.append("restored %s from %s" % (item.get("path"), backup))
        else:
            done.append("removed %s (this run created it)" % item.get("path"))
    return done


def rollback_message(rollback):
    """The one message of a rollback: what failed, what containerd said, what was put back, where containerd stands."""
    host = rollback.get("host") or "this node"
    if rollback.get("cause") == "containerd_not_back":
        opening = "containerd did not come back after the memlock change on %s" % host
    else:
        opening = "The memlock change stopped on %s" % host
    reason = " ".join(str(rollback.get("reason") or "no reason given").split()).rstrip(".")
    said = (rollback.get("containerd_said") or "").strip()
    restored = "; ".join(rollback_restored(rollback)) or "nothing had been written"
    if not rollback.get("restarted"):
        state = "containerd was not restarted."
    elif rollback.get("containerd_running"):
        state = "containerd runs again with the previous configuration."
    else:
        state = "containerd is still not back after the rollback (%s); the node needs attention." % (rollback.get("not_back_reason") or "no reason given")
    return "%s: %s%s. Rolled back: %s. %s The rollout stops here." % (
        opening, reason, (" containerd said: " + said) if said else "", restored, state)


@check(ROLE, "rolled_back", params=("rollback", "unit"))
def rolled_back(facts, params, found):
    """containerd did not come back after the change, or a change failed: the files were put back and the host fails."""
    rollback = params.get("rollback")
    if rollback:
        if not isinstance(rollback, dict):
            raise CheckError("rollback: expected the role's description of the rollback, got %r" % (rollback,))
        found.critical(params["unit"], rollback_message(rollback), "running with the new limits", rollback.get("cause"))


@check(ROLE, "remediation_failed", params=("failure",))
def remediation_failed(facts, params, found):
    """The role itself failed on the host before it could check and publish (playbooks/site.yml reports it)."""
    failure = params.get("failure")
    if failure:
        host = failure.get("host") or "this node"
        found.critical(host, "The memlock remediation failed on %s in the task '%s': %s The rollout stops here." % (
            host, failure.get("task") or "?", " ".join(str(failure.get("msg") or "no message").split())), "remediated", "failed")


@check(ROLE, "rollout_stopped", params=("stopped_by",))
def rollout_stopped(facts, params, found):
    """The rollout stopped at a failed host of an earlier batch, so the remediation did not run here."""
    stopped_by = params.get("stopped_by") or []
    if stopped_by:
        found.warning("node_remediation", "The memlock remediation did not run on this node: the rollout stopped after it failed on %s."
                      % ", ".join(stopped_by), "remediated", "not run")


@check(ROLE, "containerd_not_running", reads=FACTS, params=("unit",))
def containerd_not_running(facts, params, found):
    """containerd has no main process: no pod can start on the node."""
    containerd = facts["rdma_memlock"].get("containerd") or {}
    if not containerd.get("pid"):
        unit = params.get("unit") or containerd.get("unit")
        why = (" (%s)" % containerd["error"]) if containerd.get("error") else ""
        found.critical(unit, "%s is not running (MainPID 0)%s, so no pod can start on this node." % (unit, why), "running", "stopped")


@check(ROLE, "containerd_memlock", reads=FACTS, params=("unit", "check_mode", "dropin"))
def containerd_memlock(facts, params, found):
    """containerd runs with another locked-memory limit than systemd has for it."""
    containerd = facts["rdma_memlock"].get("containerd") or {}
    memlock = containerd.get("memlock")
    systemd = containerd.get("systemd") or {}
    want_hard = systemd.get("LimitMEMLOCK")
    # In check mode a pending drop-in change has not reached systemd or containerd yet: nothing to compare.
    if not memlock or not want_hard or (params.get("check_mode") and _changed(_result(params, "dropin"))):
        return
    want_soft = systemd.get("LimitMEMLOCKSoft") or want_hard
    wanted = {"soft": _value(want_soft, "systemd's LimitMEMLOCKSoft"), "hard": _value(want_hard, "systemd's LimitMEMLOCK")}
    if all(_value(memlock[key], "containerd's Max locked memory") == wanted[key] for key in ("soft", "hard")):
        return
    found.warning(
        params.get("unit") or containerd.get("unit"),
        "containerd (pid %s) runs with Max locked memory %s (soft) / %s (hard), not the LimitMEMLOCK=%s systemd has for it: "
        "systemd lowers a limit to what it may grant itself (it lacks CAP_SYS_RESOURCE), or containerd has not been "
        "restarted since the drop-in changed." % (containerd.get("pid"), memlock["soft"], memlock["hard"], want_hard),
        "%s/%s" % (want_soft, want_hard), _pair(memlock))


def probe_outcome(probe, memlock, nofile):
    """``ok``, ``mismatch``, ``failed`` (the container ran and failed), ``error`` (it could not be started) or ``not_run``."""
    if not probe.get("ran"):
        return "error" if probe.get("error") else "not_run"
    if probe.get("rc") != 0 or not probe.get("memlock"):
        return "failed"
    if not _same(probe["memlock"], memlock):
        return "mismatch"
    if nofile is not None and probe.get("nofile") and not _same(probe["nofile"], nofile):
        return "mismatch"
    return "ok"


def _wanted(params):
    memlock = _value(params["memlock"], "node_remediation_memlock")
    nofile = None if params.get("nofile") is None else _value(params["nofile"], "node_remediation_nofile")
    return memlock, nofile


def _probe_report(facts, params, found, outcomes):
    probe = facts["rdma_memlock"].get("probe")
    if not probe or params.get("check_mode"):
        return
    memlock, nofile = _wanted(params)
    outcome = probe_outcome(probe, memlock, nofile)
    if outcome not in outcomes:
        return
    spec = params["spec_path"]
    seen = "Max locked memory %s, Max open files %s" % (_pair(probe.get("memlock")), _pair(probe.get("nofile")))
    actual = [probe["memlock"]["soft"], probe["memlock"]["hard"]] if probe.get("memlock") else None
    if outcome == "not_run":
        add = found.warning if probe.get("missing") else found.info
        add(spec, "No test container was started (%s), so the limits a new container gets from %s were not checked on this node." % (
            probe.get("not_run") or "no reason given", spec))
    elif outcome == "ok":
        found.info(spec, "A test container started by containerd with %s got %s (soft/hard), as the spec sets." % (spec, seen), memlock, actual)
    elif outcome == "mismatch":
        found.critical(spec, "A test container started by containerd with %s got %s (soft/hard), not the spec's %s." % (
            spec, seen, _limits_text(params)), memlock, actual)
    elif outcome == "failed":
        error = (probe.get("error") or "rc %s, no message" % probe.get("rc")).rstrip(".")
        consequence = ("The runtime cannot set a limit above containerd's own hard limit without CAP_SYS_RESOURCE, so every new "
                       "container from this spec fails the same way." if "rlimit" in error
                       else "New containers from this spec may fail the same way.")
        found.critical(spec, "A test container could not start with %s: %s. %s" % (spec, error, consequence), memlock, actual)
    else:
        found.warning(spec, "No test container was started: %s. The limits a new container gets from %s were not checked on this node." % (
            probe["error"].rstrip("."), spec), memlock, actual)


@check(ROLE, "probe_ok", reads=FACTS, params=("memlock", "nofile", "spec_path", "check_mode"))
def probe_ok(facts, params, found):
    """The test container got the spec's limits."""
    _probe_report(facts, params, found, ("ok",))


@check(ROLE, "probe_mismatch", reads=FACTS, params=("memlock", "nofile", "spec_path", "check_mode"))
def probe_mismatch(facts, params, found):
    """The test container got other limits than the spec sets: new pods do too."""
    _probe_report(facts, params, found, ("mismatch",))


@check(ROLE, "probe_failed", reads=FACTS, params=("memlock", "nofile", "spec_path", "check_mode"))
def probe_failed(facts, params, found):
    """The test container could not start with the spec: new pods cannot either."""
    _probe_report(facts, params, found, ("failed",))


@check(ROLE, "probe_error", reads=FACTS, params=("memlock", "nofile", "spec_path", "check_mode"))
def probe_error(facts, params, found):
    """The test container could not be set up (its image did not mount, the spec could not be read): nothing was checked."""
    _probe_report(facts, params, found, ("error",))


@check(ROLE, "probe_not_run", reads=FACTS, params=("memlock", "nofile", "spec_path", "check_mode"))
def probe_not_run(facts, params, found):
    """No test container was configured or found, so what new containers get was not checked."""
    _probe_report(facts, params, found, ("not_run",))


def pods_to_recreate(facts, params):
    """Running containers (not pod sandboxes) whose process still has another memlock than the spec's."""
    memlock = _value(params["memlock"], "node_remediation_memlock")
    pods = []
    for entry in facts["rdma_memlock"].get("containers") or []:
        labels = entry.get("labels")
        if not entry.get("memlock") or labels is None or labels.get("kind") == "sandbox" or _same(entry["memlock"], memlock):
            continue
        pods.append({"pod": labels.get("pod"), "namespace": labels.get("pod_namespace"), "container": labels.get("container"),
                     "container_id": entry["id"], "containerd_namespace": entry["namespace"], "pid": entry["pid"],
                     "memlock": entry["memlock"]})
    return pods


@check(ROLE, "pod_restart_required", reads=FACTS, params=("memlock",))
def pod_restart_required(facts, params, found):
    """A pod started before the change and still runs with the old limit; it must be recreated (the role never deletes pods)."""
    memlock = _value(params["memlock"], "node_remediation_memlock")
    for pod in pods_to_recreate(facts, params):
        if pod["pod"]:
            what = "Pod %s/%s (container %s, id %s)" % (pod["namespace"], pod["pod"], pod["container"] or "?", pod["container_id"])
            subject = "%s/%s" % (pod["namespace"], pod["pod"])
            how = " (kubectl delete pod -n %s %s)" % (pod["namespace"], pod["pod"])
        else:
            what = "Container %s in containerd namespace %s (no pod labels)" % (pod["container_id"], pod["containerd_namespace"])
            subject = "%s/%s" % (pod["containerd_namespace"], pod["container_id"])
            how = ""
        found.warning(subject, "%s runs with Max locked memory %s (soft/hard), not the spec's %s: it started before the change. "
                      "Recreate it%s so it starts from the new spec; this role never deletes pods." % (
                          what, _pair(pod["memlock"]), params["memlock"], how), memlock, _pair(pod["memlock"]))


@summary(ROLE, reads=FACTS, params=("memlock", "nofile", "check_mode", "spec", "config", "dropin", "restart", "rollback"))
def memlock_summary(facts, params, findings):
    """What changed, whether containerd restarted or was rolled back, what it and the test container run with, the pods to recreate."""
    if params.get("memlock") is None:  # only the failure checks of playbooks/site.yml ran: nothing to sum up
        return {}
    gathered = facts["rdma_memlock"]
    containerd = gathered.get("containerd") or {}
    rollback = params.get("rollback")
    probe = gathered.get("probe")
    probe_view = None
    if probe is not None:
        memlock, nofile = _wanted(params)
        outcome = "not_run" if params.get("check_mode") else probe_outcome(probe, memlock, nofile)
        probe_view = {"source": probe.get("source"), "root": probe.get("root"), "result": outcome,
                      "memlock": probe.get("memlock"), "nofile": probe.get("nofile"),
                      "error": probe.get("error") if outcome in ("failed", "error") else None,
                      "note": probe.get("not_run") if outcome == "not_run" else None}
    return {
        "check_mode": bool(params.get("check_mode")),
        "changed": [r["path"] for r in (_result(params, n) for n in ("spec", "config", "dropin")) if _changed(r)],
        "restarted": bool((params.get("restart") or {}).get("ran")) and not params.get("check_mode"),
        "rolled_back": None if not rollback else {
            "cause": rollback.get("cause"), "reason": " ".join(str(rollback.get("reason") or "").split()),
            "containerd_said": rollback.get("containerd_said") or "", "restored": rollback_restored(rollback),
            "containerd_running": rollback.get("containerd_running") if rollback.get("restarted") else None,
        },
        "containerd": {"pid": containerd.get("pid"), "memlock": containerd.get("memlock"), "nofile": containerd.get("nofile"),
                       "systemd": containerd.get("systemd") or {}},
        "probe": probe_view,
        "pods_to_recreate": pods_to_recreate(facts, params),
    }
