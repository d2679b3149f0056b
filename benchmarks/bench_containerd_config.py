"""How long containerd_runtime's controller side takes to plan an edit of a large config.toml.

Builds a comment-heavy config (containerd 1.6's ``config default`` after a long comment header, the
shape of a file that carries a vendor's licence and notes) of the given size, then times
``plan_base_runtime_spec`` (parse once with tomllib, scan, splice, parse the result to verify).
With ``--tomlkit`` it also times one ``tomlkit.parse`` of the same text: the old planner parsed the
file with tomlkit twice (the document model and the verification), which is what took minutes.

Usage: ``python benchmarks/bench_containerd_config.py [--mb 50] [--rounds 3] [--tomlkit]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import testpaths  # noqa: E402  (makes this tree importable as ansible_collections.rdma.node)

sys.path.insert(0, str(testpaths.COLLECTIONS_ROOT))

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc  # noqa: E402

DEFAULT = testpaths.FIXTURES / "containerd/config_toml/containerd-1.6_config_default_v2.toml"
SPEC = "/etc/containerd/rdma-spec.json"


def comment_heavy(size: int) -> str:
    line = "# " + "licence and site notes " * 3 + "\n"
    return line * (size // len(line)) + DEFAULT.read_text()


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the config in MB (10^6 bytes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tomlkit", action="store_true", help="also time one tomlkit.parse (slow: minutes at 50 MB)")
    args = parser.parse_args()
    text = comment_heavy(int(args.mb * 1_000_000))
    print("config: %.1f MB, %d lines" % (len(text) / 1e6, text.count("\n")))
    plans = [timed(lambda: cc.plan_base_runtime_spec(text, SPEC, source="config.toml")) for dummy in range(args.rounds)]
    print("plan_base_runtime_spec: median %.2f s over %d rounds (min %.2f, max %.2f)"
          % (statistics.median(plans), len(plans), min(plans), max(plans)))
    if args.tomlkit:
        import tomlkit
        print("one tomlkit.parse (the old planner did two): %.2f s" % timed(lambda: tomlkit.parse(text)))


if __name__ == "__main__":
    main()
