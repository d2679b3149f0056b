"""Run Debian's real prometheus-node-exporter on 127.0.0.1 for one scrape, and stop it by its pid."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

EXPORTER = "prometheus-node-exporter"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def scrape(*collector_args, what="node_exporter"):
    """Start node_exporter with only the given collector arguments, return its /metrics text, stop it."""
    port = free_port()
    proc = subprocess.Popen(
        [EXPORTER, "--collector.disable-defaults", *collector_args, "--web.listen-address=127.0.0.1:%d" % port],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as response:
                    return response.read().decode()
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("node_exporter did not serve %s: %s" % (what, proc.stderr.read()))
                time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
