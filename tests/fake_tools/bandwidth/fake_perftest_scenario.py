#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""FAKE perftest, per simulated host and device, for the bandwidth_check role's tests.

This is NOT perftest and measures nothing. It chooses which captured output the FAKE perftest
(tests/fake_tools/perftest/fake_perftest.py) replays for this one invocation, then becomes that fake
(exec, same pid). The demo hosts all run on one machine, so the choice is made from:

* the simulated host: FAKE_BANDWIDTH_HOST (the tests set it per host through the role's
  bandwidth_check_environment);
* the kind of test: the prefix of RDMA_NODE_BANDWIDTH_JOB, which the role gives every perftest it
  starts (loopback-..., server-..., client-...); loopback runs both roles on the node;
* the role: a host argument makes a client, as with perftest;
* the device (-d / --ib-dev).

FAKE_BANDWIDTH_SCENARIO names a JSON file {"rules": [RULE, ...]}; the first rule whose keys (any of
host, kind: loopback|pair, role: server|client, device) all match wins, and its "env" mapping is
exported as FAKE_PERFTEST_<ROLE>_<KEY> (OUTPUT, RC, STAGE, HANG; see fake_perftest.py), or as
FAKE_PERFTEST_<KEY> for the keys the fake reads for both roles (CHILD, PIDFILE, ARGV_LOG, BIND). Relative
OUTPUT paths are taken from the scenario file's directory. No matching rule: exit 2 with a message.

Every invocation is appended as one JSON line to FAKE_BANDWIDTH_LOG when it is set (host, kind, role,
device, port, pid, argv, the CPUs it may run on and CUDA_DEVICE_ORDER).

Install it under the perftest tool names (sh wrappers):  python fake_perftest_scenario.py --fake-install BIN_DIR
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_PERFTEST = os.path.join(os.path.dirname(HERE), "perftest", "fake_perftest.py")
JOB_ENV = "RDMA_NODE_BANDWIDTH_JOB"
GLOBAL_KEYS = ("CHILD", "PIDFILE", "ARGV_LOG", "BIND")


def _load_fake():
    """fake_perftest.py's own argument reading, so both fakes agree on who is the client."""
    sys.path.insert(0, os.path.dirname(FAKE_PERFTEST))
    try:
        import fake_perftest  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    return fake_perftest


def _device(argv):
    for index, arg in enumerate(argv):
        if arg in ("-d", "--ib-dev") and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--ib-dev="):
            return arg.split("=", 1)[1]
    return None


def _matches(rule, facts):
    return all(rule[key] == facts[key] for key in ("host", "kind", "role", "device") if key in rule)


def main(argv):
    fake = _load_fake()
    if len(argv) == 2 and argv[0] == "--fake-install":
        return fake.install(argv[1], script=__file__, what="picks a capture per host and side (bandwidth_check)")
    host_arg, port = fake._parse_args(argv)  # pylint: disable=protected-access
    job = os.environ.get(JOB_ENV, "")
    facts = {
        "host": os.environ.get("FAKE_BANDWIDTH_HOST"),
        "kind": "loopback" if job.startswith("loopback-") else "pair",
        "role": "client" if host_arg else "server",
        "device": _device(argv),
    }
    if os.environ.get("FAKE_BANDWIDTH_LOG"):
        with open(os.environ["FAKE_BANDWIDTH_LOG"], "a") as log:
            log.write(json.dumps(dict(facts, port=port, pid=os.getpid(), job=job, argv=argv, cpus=sorted(os.sched_getaffinity(0)),
                                      cuda_device_order=os.environ.get("CUDA_DEVICE_ORDER"))) + "\n")
    scenario_path = os.environ.get("FAKE_BANDWIDTH_SCENARIO")
    if not scenario_path:
        sys.stderr.write("FAKE perftest: set FAKE_BANDWIDTH_SCENARIO to a scenario file\n")
        return 2
    with open(scenario_path) as handle:
        scenario = json.load(handle)
    rule = next((r for r in scenario.get("rules", []) if _matches(r, facts)), None)
    if rule is None:
        sys.stderr.write("FAKE perftest: no scenario rule for %s\n" % json.dumps(facts, sort_keys=True))
        return 2
    env = dict(os.environ)
    role = facts["role"].upper()
    for key, value in rule.get("env", {}).items():
        if key == "OUTPUT" and not os.path.isabs(value):
            value = os.path.join(os.path.dirname(os.path.abspath(scenario_path)), value)
        # fake_perftest.py reads these without a role in the name.
        name = "FAKE_PERFTEST_%s" % key if key in GLOBAL_KEYS else "FAKE_PERFTEST_%s_%s" % (role, key)
        env[name] = str(value)
    env.setdefault("FAKE_PERFTEST_TOOL", os.path.basename(sys.argv[0]))
    os.execve(sys.executable, [sys.executable, FAKE_PERFTEST] + list(argv), env)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
