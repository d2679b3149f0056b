"""What the main job costs over real SSH, against merely reaching the hosts, with pipelining on and off.

The fleet is bench_fleet's (the demo's hardware profiles, one node root per host), reached over SSH:
Debian's openssh-server, started by this script on loopback addresses only, each simulated host with
its own ``127.0.x.y`` as ``ansible_host``, so each has its own connection, its own ControlMaster and
its own control socket, as real nodes do. One sshd listens on at most 16 addresses (its limit), so
the script starts as many as the fleet needs, each from its own configuration in a temporary
directory, and stops them (by the pids it started) when it ends, whatever happens.

For each pipelining setting (and, with ``--facts-as-vars on,off``, with ``inject_facts_as_vars`` on and
off: bench_fleet's ``site_noinject``), it times side by side, alternating in rounds:

* ``ping``: ``ansible.builtin.ping`` on every host;
* ``site``: ``rdma.node.site`` without remediation, with the jsonfile fact cache.

Each command of a session runs through root's login shell, bash, which sources ``~/.bashrc`` when sshd
starts it. On a node that file does next to nothing for a command; on the machine that runs this
benchmark it may set up a developer's tools (a ``pyenv init`` costs 190 ms of CPU per command here),
which would be charged to every command of the fleet, twice to a host of ``site`` (its module, then its
metrics file) and once to a host of ``ping``. So by default the daemons give their sessions
``SHLVL=1`` (sshd's ``SetEnv``): bash sources the rc files under sshd only as a shell of the first
level. ``--root-bashrc source`` keeps this machine's rc files, to compare.

Prints the medians, hosts per minute, and site / ping per setting. Usage::

    python benchmarks/bench_ssh_fleet.py [--hosts 200] [--rounds 3] [--forks default] [--pipelining on,off]
                                         [--facts-as-vars on] [--root-bashrc skip]

Needs ``/usr/sbin/sshd`` (Debian's openssh-server) and root (sshd's privilege separation).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_fleet  # noqa: E402  (benchmarks/)

SSHD = "/usr/sbin/sshd"
ADDRESSES_PER_SSHD = 16  # sshd's MAX_LISTEN_SOCKS
JOBS = ("ping", "site")


def loopback(index):
    """The index-th loopback address given to a host: 127.0.0.2, 127.0.0.3, ... 127.0.1.1, ..."""
    number = index + 2
    return "127.0.%d.%d" % (number // 254, number % 254 + (1 if number // 254 else 0))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SshFleet:
    """sshd daemons on loopback addresses, keys, and the inventory variables that reach them."""

    def __init__(self, base, count, root_bashrc="skip"):
        self.base, self.count = base / "ssh", count
        self.root_bashrc = root_bashrc
        self.port = free_port()
        self.daemons = []

    def start(self):
        self.base.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.base / name)], check=True)
        shutil.copy(self.base / "client_key.pub", self.base / "authorized_keys")
        os.chmod(self.base / "authorized_keys", 0o600)
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
        addresses = [loopback(index) for index in range(self.count)]
        for start in range(0, len(addresses), ADDRESSES_PER_SSHD):
            number = start // ADDRESSES_PER_SSHD
            config = self.base / ("sshd-%d.conf" % number)
            listen = "".join("ListenAddress %s:%d\n" % (address, self.port) for address in addresses[start:start + ADDRESSES_PER_SSHD])
            # A session's bash at shell level 2 does not source /etc/bash.bashrc and ~/.bashrc (the module docstring).
            session_environment = "SetEnv SHLVL=1\n" if self.root_bashrc == "skip" else ""
            config.write_text(listen + session_environment + (
                "HostKey {base}/host_key\nPidFile {base}/sshd-{n}.pid\nAuthorizedKeysFile {base}/authorized_keys\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                "StrictModes no\nMaxStartups 1000:30:1000\nMaxSessions 100\nLogLevel ERROR\nSubsystem sftp internal-sftp\n"
            ).format(base=self.base, n=number))
            checked = subprocess.run([SSHD, "-t", "-f", str(config)], capture_output=True, text=True, check=False)
            if checked.returncode != 0:
                # An older sshd refuses SetEnv (OpenSSH 7.8 and later know it): one sentence, not a traceback.
                raise SystemExit("%s refused the benchmark's configuration %s: %s" % (SSHD, config, " ".join(checked.stderr.split()) or "no reason given"))
            # -D: in the foreground, so the pid is the one this script started and stops.
            self.daemons.append(subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL))  # pylint: disable=consider-using-with
            self._wait_listening(addresses[start])
        return self

    def _wait_listening(self, address, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((address, self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline or self.daemons[-1].poll() is not None:
                    raise SystemExit("sshd did not listen on %s:%d" % (address, self.port)) from None
                time.sleep(0.05)

    def stop(self):
        for daemon in self.daemons:
            daemon.terminate()
        for daemon in self.daemons:
            daemon.wait(timeout=10)
        self.daemons = []

    def host_vars(self, index):
        return {
            "ansible_connection": "ssh", "ansible_host": loopback(index), "ansible_port": self.port, "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.base / "client_key"),
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        }


def over_ssh(inventory, fleet):
    """Rewrite a bench_fleet inventory so that every host is reached over SSH at its own address."""
    path = inventory / "hosts.yml"
    data = yaml.safe_load(path.read_text())
    index = 0
    for group in data["all"]["children"].values():
        for host_vars in group["hosts"].values():
            host_vars.update(fleet.host_vars(index))
            index += 1
    path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
    return index


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forks", default="default", help="'default' (ansible's 5) or a number")
    parser.add_argument("--pipelining", default="on,off", help="comma-separated: on, off")
    parser.add_argument("--facts-as-vars", default="on", help="inject_facts_as_vars, comma-separated: on (ansible-core's default), off")
    parser.add_argument("--root-bashrc", default="skip", choices=("skip", "source"),
                        help="whether each session's bash sources this machine's /etc/bash.bashrc and ~/.bashrc (the module docstring)")
    options = parser.parse_args(argv)
    if not os.path.exists(SSHD):
        parser.error("%s is not installed: apt-get install openssh-server (it is only started by this benchmark)" % SSHD)
    settings = [(pipelining.strip(), injected.strip()) for pipelining in options.pipelining.split(",") if pipelining.strip()
                for injected in options.facts_as_vars.split(",") if injected.strip()]
    context = tempfile.TemporaryDirectory(prefix="rdma-node-ssh-fleet-")
    base = Path(context.name)
    fleet = SshFleet(base, options.hosts, options.root_bashrc)
    times = {setting: {job: [] for job in JOBS} for setting in settings}
    try:
        (base / "tmp").mkdir()
        inventory = bench_fleet.build_fleet(base, [options.hosts])[options.hosts]
        reached = over_ssh(inventory, fleet)
        fleet.start()
        print("%d hosts over SSH at 127.0.x.y:%d, %d sshd, root's bashrc: %s" % (reached, fleet.port, len(fleet.daemons), options.root_bashrc),
              file=sys.stderr)
        for round_number in range(options.rounds):
            for setting in settings:
                pipelining, injected = setting
                configuration = {"ANSIBLE_PIPELINING": "True" if pipelining == "on" else "False",
                                 "ANSIBLE_INJECT_FACT_VARS": "True" if injected == "on" else "False"}
                for job in JOBS:
                    log = base / "logs" / ("%s-%s-%s-%d.log" % (job, pipelining, injected, round_number))
                    log.parent.mkdir(exist_ok=True)
                    wall, cpu, _rss = bench_fleet.run_job(job, base, inventory, options.forks, log, configuration)
                    times[setting][job].append(wall)
                    print("pipelining %-3s facts as vars %-3s round %d %-5s %7.1f s wall %7.1f s CPU (load %.1f)"
                          % (pipelining, injected, round_number + 1, job, wall, cpu, os.getloadavg()[0]), file=sys.stderr, flush=True)
    finally:
        fleet.stop()
        context.cleanup()
    print("\n%d hosts over SSH, forks %s, median of %d round(s):\n" % (options.hosts, options.forks, options.rounds))
    print("| pipelining | facts as variables | ping | site | ping hosts/min | site hosts/min | site / ping |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for setting in settings:
        ping, site = (statistics.median(times[setting][job]) for job in JOBS)
        print("| %s | %s | %.1f s | %.1f s | %.0f | %.0f | %.2f |" % (
            *setting, ping, site, options.hosts * 60 / ping, options.hosts * 60 / site, site / ping))
    return 0


if __name__ == "__main__":
    sys.exit(main())
