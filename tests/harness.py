"""The one way the tests run Ansible: ``ansible-playbook`` and ad-hoc modules (``ansible``) as an
operator runs them, read through the JSON callback (``ansible.posix.json``), and the jsonfile fact
cache that a later job reads. Tests assert on these structured results, never on the recap text.

* ``run_playbook(playbook, *args, inventory=, extra_vars=, env=, fact_cache=, ...)`` -> ``PlaybookRun``
* ``run_playbook_printed(playbook, *args, ...)`` -> ``PrintedRun``: the default output, for tests of
  what an operator's terminal shows
* ``run_module(module, args, *cli_args, host=, host_vars=, ...)`` -> ``ModuleRun``
* ``FactCache(directory)``: the environment that points a run at it, and each host's cached facts.

Only tests under ``tests/integration`` start Ansible; ``tests/unit`` runs in process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testpaths import COLLECTION_ROOT, COLLECTIONS_PATH

BIN = Path(sys.executable).parent
ANSIBLE_PLAYBOOK = str(BIN / "ansible-playbook")
ANSIBLE = str(BIN / "ansible")

# Every run: this tree as rdma.node, structured output, nothing written beside the playbook, and no
# warnings about the write-up's dashed group names or an implicit localhost.
BASE_ENVIRONMENT = {
    "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
    "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",  # ad-hoc runs use the stdout callback only with this
    "ANSIBLE_SHOW_CUSTOM_STATS": "1",
    "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS": "ignore",
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_RETRY_FILES_ENABLED": "0",
    "ANSIBLE_LOCALHOST_WARNING": "0",
    "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
}

# A local host that runs modules with the Python of the tests' venv.
LOCAL_HOST_VARS = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
# An inventory of that one host, for ``run_playbook(..., inventory=LOCALHOST)``.
LOCALHOST = {"all": {"hosts": {"localhost": LOCAL_HOST_VARS}}}


def jsonfile_cache(directory):
    """Ansible's jsonfile cache plugin on ``directory``, configured as a job configures it: through
    ANSIBLE_CACHE_PLUGIN_CONNECTION, and an empty ANSIBLE_CACHE_PLUGIN_PREFIX (the plugin's ``keys()``
    needs a prefix set), read when the plugin is made."""
    from ansible.plugins.loader import cache_loader  # controller code, imported only when a test reads or writes a cache

    saved = {name: os.environ.pop(name, None) for name in ("ANSIBLE_CACHE_PLUGIN_CONNECTION", "ANSIBLE_CACHE_PLUGIN_PREFIX")}
    os.environ.update(ANSIBLE_CACHE_PLUGIN_CONNECTION=str(directory), ANSIBLE_CACHE_PLUGIN_PREFIX="")
    try:
        return cache_loader.get("jsonfile")  # short name: no collection loader in pytest
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


class FactCache:
    """A jsonfile fact cache directory, read the way a later job reads it: through Ansible's plugin."""

    def __init__(self, directory):
        self.path = Path(directory)

    @property
    def env(self) -> dict:
        return {"ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile", "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(self.path)}

    def hosts(self) -> list:
        """The hosts the cache holds facts for (ansible-core 2.21 also keeps an empty entry for localhost
        when a task was delegated there)."""
        if not self.path.is_dir():
            return []
        plugin = jsonfile_cache(self.path)
        return sorted(host for host in plugin.keys() if plugin.get(host))

    def facts(self, host) -> dict:
        """The host's cached facts as plain JSON types ({} when the cache holds none for it)."""
        if not self.path.is_dir():
            return {}
        plugin = jsonfile_cache(self.path)
        if host not in plugin.keys():
            return {}
        return json.loads(json.dumps(plugin.get(host)))

    def clear(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class _JsonRun:
    """rc, output and the JSON callback's document of one ansible or ansible-playbook process."""

    command = "ansible-playbook"

    def __init__(self, proc, fact_cache=None):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.fact_cache = fact_cache
        try:
            self.data = json.loads(proc.stdout)
        except ValueError:
            raise AssertionError("%s printed no JSON (rc %d): %s %s"
                                 % (self.command, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])) from None

    @property
    def stats(self) -> dict:
        """Per host: ok, changed, failures, unreachable, skipped, rescued, ignored."""
        return self.data["stats"]

    @property
    def failed_hosts(self) -> list:
        return sorted(h for h, s in self.stats.items() if s["failures"] or s["unreachable"])

    @property
    def changed_hosts(self) -> list:
        return sorted(h for h, s in self.stats.items() if s["changed"])

    @property
    def tasks(self) -> list:
        """Every task that ran, in order: ``{"name", "play", "hosts": {host: result}}``."""
        return [{"name": task["task"]["name"], "play": play["play"]["name"], "hosts": task["hosts"]}
                for play in self.data["plays"] for task in play["tasks"]]

    def failed_results(self, host) -> list:
        """``(task name, result)`` of every task that failed on ``host``, in order."""
        return [(task["name"], task["hosts"][host]) for task in self.tasks
                if host in task["hosts"] and (task["hosts"][host].get("failed") or task["hosts"][host].get("unreachable"))]

    def facts(self, host) -> dict:
        """The host's facts in the fact cache this run used."""
        if self.fact_cache is None:
            raise AssertionError("this run used no fact cache: pass fact_cache= to read cached facts")
        return self.fact_cache.facts(host)


class PlaybookRun(_JsonRun):
    """One ansible-playbook run: rc, stats, each task's per-host results, the custom stats."""

    def task_results(self, name) -> dict:
        """Per host results of the first task whose name ends with ``name``."""
        for task in self.tasks:
            if task["name"].endswith(name):
                return task["hosts"]
        raise AssertionError("no task named %r ran" % name)

    def results_of(self, name) -> list:
        """Per host results of every run of the tasks whose name ends with ``name`` (included tasks run
        once per include)."""
        return [task["hosts"] for task in self.tasks if task["name"].endswith(name)]

    def result(self, name, host) -> dict:
        results = self.task_results(name)
        if host not in results:
            raise AssertionError("the task %r did not run on %s (it ran on %s)" % (name, host, sorted(results)))
        return results[host]

    @property
    def custom_stats(self) -> dict:
        """What set_stats published for the whole run (``global_custom_stats``)."""
        return self.data.get("global_custom_stats") or {}


class ModuleRun(_JsonRun):
    """One ad-hoc module run on one host: ``result`` is that host's module result."""

    command = "ansible"

    def __init__(self, proc, host, fact_cache=None):
        super().__init__(proc, fact_cache)
        self.host = host
        try:
            self.result = self.data["plays"][0]["tasks"][0]["hosts"][host]
        except (IndexError, KeyError):
            raise AssertionError("ansible returned no result for %s (rc %d): %s %s"
                                 % (host, proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])) from None

    @property
    def failed(self) -> bool:
        return bool(self.result.get("failed") or self.result.get("unreachable"))


_CONTENT_CACHE = []


def _content_cache() -> str:
    """rdma.node.containerd_runtime's controller cache for this test session, not the user's own.

    Its key file (which authenticates the cache's records) is beside it, ``<directory>.key``.
    """
    if not _CONTENT_CACHE:
        _CONTENT_CACHE.append(tempfile.mkdtemp(prefix="rdma-node-content-cache-"))
    return _CONTENT_CACHE[0]


def ansible_environment(env=None, fact_cache=None, collections_root=None) -> dict:
    """The environment of a run: the caller's, this tree as rdma.node, the JSON callback, and ``env`` last."""
    environment = dict(os.environ)
    environment.update(BASE_ENVIRONMENT)
    environment.setdefault("RDMA_NODE_CONTENT_CACHE", _content_cache())
    environment.setdefault("RDMA_NODE_CONTENT_CACHE_KEY", _content_cache() + ".key")
    environment["ANSIBLE_COLLECTIONS_PATH"] = str(collections_root or COLLECTIONS_PATH)
    environment["PATH"] = str(BIN) + os.pathsep + environment.get("PATH", "")  # ansible-* of the venv first
    if fact_cache is not None:
        environment.update(fact_cache.env)
    environment.update(env or {})
    return environment


def _extra_vars_args(extra_vars) -> list:
    if extra_vars is None:
        return []
    if isinstance(extra_vars, dict):
        extra_vars = [extra_vars]
    args = []
    for value in extra_vars:
        args += ["-e", json.dumps(value) if isinstance(value, dict) else str(value)]
    return args


def _inventory_args(inventory, scratch) -> list:
    """``-i`` for a path, an inline host list (``"localhost,"``) or an inventory as data (written as JSON)."""
    if inventory is None:
        return []
    if isinstance(inventory, dict):
        path = Path(scratch) / "inventory.json"
        path.write_text(json.dumps(inventory), encoding="utf-8")
        inventory = path
    return ["-i", str(inventory)]


def _fact_cache(fact_cache):
    if fact_cache is None or isinstance(fact_cache, FactCache):
        return fact_cache
    return FactCache(fact_cache)


def _run(argv, environment, cwd, timeout):
    return subprocess.run(argv, capture_output=True, text=True, env=environment, cwd=cwd, timeout=timeout, check=False)


def _playbook_target(playbook, scratch):
    if isinstance(playbook, list):
        target = Path(scratch) / "playbook.json"
        target.write_text(json.dumps(playbook), encoding="utf-8")
        return target
    if isinstance(playbook, str) and playbook.startswith("rdma.node."):
        return playbook
    return Path(playbook) if Path(playbook).is_absolute() else COLLECTION_ROOT / playbook


def run_playbook(playbook, *args, inventory=None, extra_vars=None, env=None, fact_cache=None, check=False,
                 diff=False, collections_root=None, cwd=None, wrapper=(), timeout=600) -> PlaybookRun:
    """Run a playbook with the JSON callback and return its structured results.

    ``playbook``: a playbook's FQCN (``rdma.node.site``), a path (relative ones are relative to the
    collection), or the plays as data (a list, written to a temporary file). ``inventory``: a path,
    ``"host,"`` or an inventory as data. ``extra_vars``: a dict, or a list of dicts and ``@file``
    strings. ``fact_cache``: a directory (or ``FactCache``) used as the jsonfile fact cache.
    ``wrapper``: a command prefix (``unshare -m ...``). Further ``args`` go to ansible-playbook.
    """
    cache = _fact_cache(fact_cache)
    with tempfile.TemporaryDirectory(prefix="rdma-node-run-") as scratch:
        argv = [*wrapper, ANSIBLE_PLAYBOOK, *_inventory_args(inventory, scratch), str(_playbook_target(playbook, scratch)),
                *_extra_vars_args(extra_vars), *(["--check"] if check else []), *(["--diff"] if diff else []), *args]
        proc = _run(argv, ansible_environment(env, cache, collections_root), cwd, timeout)
    return PlaybookRun(proc, cache)


class PrintedRun:
    """An ansible-playbook run as an operator's terminal shows it: rc and Ansible's default output."""

    def __init__(self, proc):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr


def run_playbook_printed(playbook, *args, inventory=None, env=None, fact_cache=None, timeout=600) -> PrintedRun:
    """Run a playbook as ``run_playbook`` does, but with Ansible's default output callback, for tests of
    what reaches the operator's terminal (never to read results from: use ``run_playbook`` for those)."""
    environment = dict(env or {}, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    with tempfile.TemporaryDirectory(prefix="rdma-node-run-") as scratch:
        argv = [ANSIBLE_PLAYBOOK, *_inventory_args(inventory, scratch), str(_playbook_target(playbook, scratch)), *args]
        proc = _run(argv, ansible_environment(environment, _fact_cache(fact_cache)), None, timeout)
    return PrintedRun(proc)


def run_module(module, args=None, *cli_args, host="localhost", host_vars=None, inventory=None, extra_vars=None,
               env=None, fact_cache=None, check=False, diff=False, collections_root=None, cwd=None, wrapper=(),
               timeout=300) -> ModuleRun:
    """Run one module ad hoc (``ansible HOST -m MODULE -a ARGS``) and return the host's result.

    ``args``: a dict (passed as JSON) or a ``key=value`` string. Unless ``inventory`` is given, the
    inventory holds only ``host`` with a local connection and this venv's Python, plus ``host_vars``.
    """
    cache = _fact_cache(fact_cache)
    with tempfile.TemporaryDirectory(prefix="rdma-node-run-") as scratch:
        if inventory is None:
            inventory = {"all": {"hosts": {host: dict(LOCAL_HOST_VARS, **(host_vars or {}))}}}
        module_args = json.dumps(args) if isinstance(args, dict) else (args or "")
        argv = [*wrapper, ANSIBLE, host, *_inventory_args(inventory, scratch), "-m", module, "-a", module_args,
                *_extra_vars_args(extra_vars), *(["--check"] if check else []), *(["--diff"] if diff else []), *cli_args]
        proc = _run(argv, ansible_environment(env, cache, collections_root), cwd, timeout)
    return ModuleRun(proc, host, cache)
