"""How long containerd_runtime's controller side takes to plan an edit of a large config.toml.

Builds a comment-heavy config (containerd 1.6's ``config default`` after a long comment header, the
shape of a file that carries a vendor's licence and notes) of the given size, then times
``plan_base_runtime_spec`` (parse once with tomllib, scan, splice, parse the result to verify).
With ``--tomlkit`` it also times one ``tomlkit.parse`` of the same text: the old planner parsed the
file with tomlkit twice (the document model and the verification), which is what took minutes.

``--cache`` times, side by side and alternating, what the controller does with the node's answer
on an idempotent re-run (the file already has the spec):

* ``uncached``: decode a read-step result that carries the whole text (JSON), plan it;
* ``text from cache``: decode a result that carries only the digest, take the text from the
  controller's content cache (read and verify the SHA-256), plan it;
* ``plan from cache``: decode the digest-only result, find the remembered plan; no text, no parse.

``--playbook`` runs the real thing: ``ansible-playbook`` on localhost (local connection, this
venv's Python) against a file of that size, a re-run with the cache off
(``RDMA_NODE_CONTENT_CACHE_MAX_BYTES=0``) against a re-run with a warm cache, alternating.

Usage: ``python benchmarks/bench_containerd_config.py [--mb 50] [--rounds 3] [--tomlkit] [--cache] [--playbook]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import testpaths  # noqa: E402  (makes this tree importable as ansible_collections.rdma.node)

sys.path.insert(0, str(testpaths.COLLECTIONS_ROOT))

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc  # noqa: E402
from ansible_collections.rdma.node.plugins.plugin_utils._content_cache import ContentCache  # noqa: E402

DEFAULT = testpaths.FIXTURES / "containerd/config_toml/containerd-1.6_config_default_v2.toml"
SPEC = "/etc/containerd/rdma-spec.json"


def comment_heavy(size: int) -> str:
    line = "# " + "licence and site notes " * 3 + "\n"
    return line * (size // len(line)) + DEFAULT.read_text()


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def children_cpu() -> float:
    """CPU seconds of every finished child and what it waited for (ansible-playbook, its workers, modules)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(name: str, times: list) -> str:
    return "%-28s median %7.3f s over %d rounds (min %.3f, max %.3f)" % (
        name, statistics.median(times), len(times), min(times), max(times))


def bench_cache(text: str, rounds: int) -> None:
    """The controller's share of an idempotent re-run: uncached, text from the cache, plan from the cache."""
    applied = cc.plan_base_runtime_spec(text, SPEC).new_text
    data = applied.encode()
    digest = hashlib.sha256(data).hexdigest()
    node = {"path": "/etc/containerd/config.toml", "exists": True, "sha256": digest}
    with_text = json.dumps({"changed": False, "node": dict(node, content=applied, content_known=False)})
    digest_only = json.dumps({"changed": False, "node": dict(node, content=None, content_known=True)})
    plan_key = {"plan": "bench", "sha256": digest, "spec": SPEC}
    with tempfile.TemporaryDirectory(prefix="bench-content-cache-") as directory:
        cache = ContentCache(directory)
        cache.put(data)
        cache.put_record(plan_key, {"config_version": 2, "warnings": []})

        def uncached():
            received = json.loads(with_text)["node"]
            assert not cc.plan_base_runtime_spec(received["content"], SPEC).changed

        def text_from_cache():
            received = json.loads(digest_only)["node"]
            assert not cc.plan_base_runtime_spec(cache.get(received["sha256"]).decode(), SPEC).changed

        def plan_from_cache():
            received = json.loads(digest_only)["node"]
            assert cache.get_record(dict(plan_key, sha256=received["sha256"]))["config_version"] == 2

        cases = {"uncached": uncached, "text from cache": text_from_cache, "plan from cache": plan_from_cache}
        times = {name: [] for name in cases}
        for dummy in range(rounds):
            for name, function in cases.items():
                times[name].append(timed(function))
    print("read-step result: %d bytes with the text, %d with the digest only" % (len(with_text), len(digest_only)))
    for name, values in times.items():
        print(summary(name, values))


def bench_playbook(text: str, rounds: int) -> None:
    """ansible-playbook re-runs on an unchanged file: cache off against a warm cache."""
    from harness import LOCALHOST, run_playbook

    with tempfile.TemporaryDirectory(prefix="bench-containerd-") as scratch:
        config = Path(scratch) / "config.toml"
        config.write_text(cc.plan_base_runtime_spec(text, SPEC).new_text)
        play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
            {"name": "re-run", "rdma.node.containerd_runtime": {"path": str(config), "base_runtime_spec": SPEC}}]}]
        cache_env = {"RDMA_NODE_CONTENT_CACHE": os.path.join(scratch, "cache")}
        modes = {"playbook, cache off": dict(cache_env, RDMA_NODE_CONTENT_CACHE_MAX_BYTES="0"),
                 "playbook, warm cache": cache_env}

        cpu = {}

        def rerun(env, name=None):
            before = children_cpu()
            run = run_playbook(play, inventory=LOCALHOST, cwd=scratch, env=env, timeout=1800)
            if name:
                cpu.setdefault(name, []).append(children_cpu() - before)
            result = run.result("re-run", "localhost")
            assert run.rc == 0 and result["changed"] is False, run.stdout[-2000:] + run.stderr

        rerun(cache_env)
        rerun(cache_env)  # the first run stores the text, the second the plan: the cache is warm now
        times = {name: [] for name in modes}
        for dummy in range(rounds):
            for name, env in modes.items():
                times[name].append(timed(lambda: rerun(env, name)))
        empty = [{"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.ping": {}}]}]
        for dummy in range(rounds):
            before = children_cpu()
            times.setdefault("playbook, one ping", []).append(
                timed(lambda: run_playbook(empty, inventory=LOCALHOST, cwd=scratch)))
            cpu.setdefault("playbook, one ping", []).append(children_cpu() - before)
    for name, values in times.items():
        print(summary(name + " wall", values))
        print(summary(name + " CPU", cpu[name]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the config in MB (10^6 bytes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tomlkit", action="store_true", help="also time one tomlkit.parse (slow: minutes at 50 MB)")
    parser.add_argument("--cache", action="store_true", help="time a re-run's controller side with and without the cache")
    parser.add_argument("--playbook", action="store_true", help="time ansible-playbook re-runs with and without the cache")
    args = parser.parse_args()
    text = comment_heavy(int(args.mb * 1_000_000))
    print("config: %.1f MB, %d lines" % (len(text) / 1e6, text.count("\n")))
    plans = [timed(lambda: cc.plan_base_runtime_spec(text, SPEC, source="config.toml")) for dummy in range(args.rounds)]
    print(summary("plan_base_runtime_spec", plans))
    if args.tomlkit:
        import tomlkit
        print("one tomlkit.parse (the old planner did two): %.2f s" % timed(lambda: tomlkit.parse(text)))
    if args.cache:
        bench_cache(text, args.rounds)
    if args.playbook:
        bench_playbook(text, args.rounds)


if __name__ == "__main__":
    main()
