# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Point containerd's CRI runtimes at a base runtime spec in ``config.toml`` (controller side).

containerd's schema, as pure functions over text and plain dicts: find the schema version, the CRI
runtimes (and the deprecated ``default_runtime`` table that schema 1 files still use), plan the edit
of ``base_runtime_spec`` for the chosen runtimes and return the new text with what changed; plus the
two checks the action plugin runs around the node's ``containerd config dump``.

The text itself is edited by ``_toml_splice`` (format-preserving splices, see there): the file is
parsed once with ``tomllib`` for the document model and scanned once for byte offsets; the result,
without its comment lines, is parsed again to prove that only the intended keys changed.
"""

from __future__ import annotations

import copy
import posixpath
import typing as t
from dataclasses import dataclass, field

from ansible_collections.rdma.node.plugins.module_utils import _containerd_options as node_options
from ansible_collections.rdma.node.plugins.plugin_utils._toml_splice import (
    ScanError,
    Splice,
    TomlError,
    UnsupportedLayout,
    apply_splices,
    comment_lines,
    create_table,
    delete_entry,
    find_entry,
    insert_key,
    layout_of,
    parse,
    render_string,
    same_document,
    scan,
    toml_path,
    tomlkit,
    tomllib,
    type_name,
)

# Where each schema keeps the CRI runtimes: [<plugin table>.containerd.runtimes.<name>].
CRI_PLUGIN_PATHS = {
    1: ("plugins", "cri"),
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
    # containerd 2.3's schema moves only the server's settings (grpc, ttrpc, debug, metrics) into plugins.
    4: ("plugins", "io.containerd.cri.v1.runtime"),
}
RUNTIMES_SUBPATH = ("containerd", "runtimes")
# The deprecated default runtime of schemas 1 and 2: when its runtime_type is set, containerd's CRI
# plugin copies it to runtimes["default"] and makes it the default runtime, so pods run with it.
LEGACY_DEFAULT_RUNTIME = "default_runtime"
LEGACY_DEFAULT_SUBPATH = ("containerd", LEGACY_DEFAULT_RUNTIME)
KNOWN_VERSIONS = tuple(sorted(CRI_PLUGIN_PATHS))
BASE_RUNTIME_SPEC = "base_runtime_spec"
# What a runtime created by create_missing runs with: the runc v2 shim, containerd's default.
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
DEFAULT_RUNTIME_NAME = "runc"

# The options of rdma.node.containerd_runtime as the action plugin validates them on the controller:
# the module's own, except that paths are plain strings here. A path names a file on the node, and
# "~" or variables must be expanded there (by the module), not on the controller.
ARGUMENT_SPEC = {
    name: dict(option, type="str") if option["type"] == "path" else option
    for name, option in node_options.ARGUMENT_SPEC.items()
}
REQUIRED_IF = node_options.REQUIRED_IF

_GLOB_CHARS = "*?["


class ContainerdConfigError(Exception):
    """Bad input or an edit that cannot be made safely; the message is one sentence for the user."""


@dataclass
class EditPlan:
    """What ``plan_base_runtime_spec`` decided."""

    text: str
    new_text: str
    config_version: int
    runtimes: t.List[str] = field(default_factory=list)  # the runtimes considered
    runtimes_changed: t.List[str] = field(default_factory=list)
    runtimes_created: t.List[str] = field(default_factory=list)
    warnings: t.List[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.new_text != self.text


def require_tomlkit() -> None:
    """Fail with one sentence when the controller lacks tomlkit."""
    if tomlkit is None or tomllib is None:
        raise ContainerdConfigError(
            "rdma.node.containerd_runtime needs the Python library tomlkit (and Python 3.11 or later for "
            "tomllib) on the Ansible controller to edit config.toml; install it there with 'pip install tomlkit'."
        )


# --------------------------------------------------------------------------------------------------
# Document model
# --------------------------------------------------------------------------------------------------

def parse_config(text: str, source: str) -> dict:
    """Parse ``text`` once (tomllib: strict, clear positions, fast); return the plain document."""
    require_tomlkit()
    if not isinstance(text, str):
        raise ContainerdConfigError("%s: expected the file's text, got %s." % (source, type(text).__name__))
    try:
        return parse(text)
    except TomlError as exc:
        raise ContainerdConfigError("%s is not valid TOML: %s; nothing was changed." % (source, exc)) from None


def config_version(data: dict, source: str) -> int:
    """The schema version; a file without ``version`` is version 1, containerd's own rule, unless its
    CRI runtimes sit under the version 3 name only: containerd 2.x moves a version 1 file's tables to
    their version 3 names and keeps those already there, and such drop-ins are what Talos ships
    (``/etc/cri/conf.d/*.part``), so the file is edited where containerd 2.x reads it."""
    version = data.get("version")
    if version is None:
        only_schema_3 = _has_runtimes(data, 3, source) and not any(_has_runtimes(data, old, source) for old in (1, 2))
        return 3 if only_schema_3 else 1
    if isinstance(version, bool) or not isinstance(version, int):
        raise ContainerdConfigError(
            "%s: 'version' must be an integer (1, 2, 3 or 4), found %s (%r)." % (source, type_name(version), version)
        )
    if version == 0:
        # containerd cannot tell version = 0 from a missing version and reads both as version 1.
        return 1
    if version not in CRI_PLUGIN_PATHS:
        raise ContainerdConfigError(
            "%s: 'version = %d' is not a containerd config schema this module knows (expected 1 for "
            "containerd 1.x 'plugins.cri', 2 for 'plugins.\"io.containerd.grpc.v1.cri\"', 3 for "
            "containerd 2.0-2.2 'plugins.\"io.containerd.cri.v1.runtime\"' or 4 for containerd 2.3 and later, "
            "with the same CRI tables); nothing was changed." % (source, version)
        )
    return version


def runtimes_path(version: int) -> t.Tuple[str, ...]:
    """The key path of the CRI runtimes table for a schema version."""
    return CRI_PLUGIN_PATHS[version] + RUNTIMES_SUBPATH


def _get_table(data: dict, path: t.Sequence[str], source: str) -> t.Optional[dict]:
    node = data
    for depth, part in enumerate(path):
        if not isinstance(node, dict):
            raise ContainerdConfigError(
                "%s: '%s' must be a table, found %s." % (source, toml_path(path[:depth]), type_name(node))
            )
        if part not in node:
            return None
        node = node[part]
    if not isinstance(node, dict):
        raise ContainerdConfigError("%s: '%s' must be a table, found %s." % (source, toml_path(path), type_name(node)))
    return node


def configured_runtimes(data: dict, version: int, source: str) -> t.List[str]:
    """Names of the CRI runtimes the file configures for its schema, in file order."""
    table = _get_table(data, runtimes_path(version), source) or {}
    for name, value in table.items():
        if not isinstance(value, dict):
            raise ContainerdConfigError(
                "%s: '%s' must be a table, found %s." % (source, toml_path(runtimes_path(version) + (name,)),
                                                         type_name(value))
            )
    return list(table)


def default_runtime_name(data: dict, version: int, source: str) -> str:
    """The runtime containerd runs pods with when they name none: the deprecated ``default_runtime`` table
    where containerd 1.x uses it (named as :func:`runtime_table_path` names it), else the file's
    ``default_runtime_name``, else containerd's own default, runc."""
    if legacy_default_runtime(data, version, source) is not None:
        return LEGACY_DEFAULT_RUNTIME
    containerd = _get_table(data, CRI_PLUGIN_PATHS[version] + ("containerd",), source) or {}
    name = containerd.get("default_runtime_name")
    return name if isinstance(name, str) and name else DEFAULT_RUNTIME_NAME


def _has_runtimes(data: dict, version: int, source: str) -> bool:
    """Whether the runtimes table of a schema's name holds any runtime (a malformed one counts as none here:
    the schema the file is read in reports it)."""
    try:
        return bool(_get_table(data, runtimes_path(version), source))
    except ContainerdConfigError:
        return False


def _check_schema_names(data: dict, version: int, source: str) -> None:
    """A file whose runtimes sit under another schema's plugin name is a mistake containerd ignores."""
    for other, plugin in CRI_PLUGIN_PATHS.items():
        if other != version and _has_runtimes(data, other, source):
            raise ContainerdConfigError(
                "%s: the file is version %d, but its CRI runtimes sit under '%s', the version %d name, which "
                "containerd ignores for version %d; fix 'version' or the table names first." % (
                    source, version, toml_path(plugin + RUNTIMES_SUBPATH), other, version)
            )


def _unsupported_form(source: str, path: t.Sequence[str]) -> ContainerdConfigError:
    return ContainerdConfigError(
        "%s: '%s' is written in a form this module cannot edit in place (an array of tables, or a key inside "
        "a value that is not a table); write it as a [%s] table first." % (source, toml_path(path), toml_path(path))
    )


def _set_path(data: dict, path: t.Sequence[str], value) -> None:
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value


def _verify(new_text: str, expected: dict, source: str) -> None:
    try:
        result = parse(new_text)
    except TomlError as exc:
        raise ContainerdConfigError(
            "%s: the edited file would not be valid TOML (%s), so nothing was changed; please report this "
            "file's layout to the rdma.node developers." % (source, exc)
        ) from None
    if not same_document(result, expected):
        raise ContainerdConfigError(
            "%s: the edit would change more than base_runtime_spec, so nothing was changed; please report "
            "this file's layout to the rdma.node developers." % source
        )


def validate_spec_path(base_runtime_spec) -> str:
    if not isinstance(base_runtime_spec, str) or not base_runtime_spec:
        raise ContainerdConfigError("base_runtime_spec is required with state=present (the spec file's path).")
    if any(ord(char) < 32 or char == "\x7f" for char in base_runtime_spec):
        raise ContainerdConfigError(
            "base_runtime_spec %r contains a NUL or control character; expected the path of a JSON file." % base_runtime_spec)
    if not posixpath.isabs(base_runtime_spec):
        raise ContainerdConfigError(
            "base_runtime_spec must be an absolute path (containerd opens it as given), got '%s'." % base_runtime_spec
        )
    return base_runtime_spec


def legacy_default_runtime(data: dict, version: int, source: str) -> t.Optional[dict]:
    """The deprecated ``default_runtime`` table when containerd runs pods with it, else None.

    containerd 1.x (schemas 1 and 2) copies a ``default_runtime`` whose ``runtime_type`` is set to
    ``runtimes["default"]`` and makes it the default runtime: that table, not ``runtimes.runc``, is
    what pods get. Older guides and docker's bundled containerd write exactly such files.
    """
    if version not in (1, 2):
        return None
    table = _get_table(data, CRI_PLUGIN_PATHS[version] + LEGACY_DEFAULT_SUBPATH, source)
    if table and isinstance(table.get("runtime_type"), str) and table["runtime_type"]:
        return table
    return None


def runtime_table_path(data: dict, version: int, name: str, source: str) -> t.Tuple[str, ...]:
    """Where runtime ``name`` lives: under ``runtimes``, except ``default_runtime`` in a schema 1 or 2 file
    that uses the deprecated table of that name and configures no runtime called so (AKS names its
    containerd 2.x default runtime ``default_runtime``: that one is an ordinary runtime)."""
    if (name == LEGACY_DEFAULT_RUNTIME and legacy_default_runtime(data, version, source) is not None
            and name not in configured_runtimes(data, version, source)):
        return CRI_PLUGIN_PATHS[version] + LEGACY_DEFAULT_SUBPATH
    return runtimes_path(version) + (name,)


# The IDs under which disabled_plugins turns off the plugin that runs pods (its short ID, or type and ID).
CRI_PLUGIN_IDS = {1: ("cri", "io.containerd.grpc.v1.cri"), 2: ("cri", "io.containerd.grpc.v1.cri"),
                  3: ("io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri"),
                  4: ("io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri")}
# The shim of Windows containers: a Linux process's rlimits mean nothing to it.
WINDOWS_RUNTIME_TYPE = "io.containerd.runhcs."


def _refuse_disabled_cri(data, version, source):
    """A file whose ``disabled_plugins`` turns CRI off (Docker's containerd.io package ships one) runs no pod:
    a base_runtime_spec set there would be reported as done and never used."""
    disabled = data.get("disabled_plugins")
    if not isinstance(disabled, list):
        return
    off = [item for item in disabled if isinstance(item, str) and item.strip() in CRI_PLUGIN_IDS[version]]
    if off:
        raise ContainerdConfigError(
            "%s: disabled_plugins holds %r, so containerd runs no Kubernetes (CRI) pod with this file and none would "
            "get base_runtime_spec; take it out of disabled_plugins (and restart containerd) first; nothing was "
            "changed." % (source, off[0]))


def _linux_runtimes(data, version, names, source, plan):
    """``names`` without the Windows runtimes (runhcs), each left alone with a warning."""
    kept = []
    for name in names:
        table = _get_table(data, runtime_table_path(data, version, name, source), source) or {}
        kind = table.get("runtime_type")
        if isinstance(kind, str) and kind.startswith(WINDOWS_RUNTIME_TYPE):
            plan.warnings.append("%s: runtime '%s' runs Windows containers (%s): a Linux process's memory lock limit "
                                 "does not apply to it, so it was left alone." % (source, name, kind))
            continue
        if not kind and version in (1, 2) and name != LEGACY_DEFAULT_RUNTIME:
            # A table that only holds [....runc.options] replaces containerd 1.x's built-in runc, runtime_type and all.
            plan.warnings.append("%s: runtime '%s' sets no runtime_type, and containerd 1.x creates no container with it "
                                 "(\"container.Runtime.Name must be set\"); set runtime_type = \"%s\" in its table."
                                 % (source, name, DEFAULT_RUNTIME_TYPE))
        kept.append(name)
    return kept


def _choose_runtimes(data, version, configured, legacy, runtimes, state, create_missing, source, plan):
    """The runtime names to edit (``default_runtime`` for the deprecated table containerd uses)."""
    rpath = runtimes_path(version)
    if legacy is not None and LEGACY_DEFAULT_RUNTIME in configured:
        raise ContainerdConfigError(
            "%s: '%s' and the deprecated '%s' table, which containerd 1.x runs pods with, are both named '%s'; "
            "rename the runtime first, so that each can be named; nothing was changed." % (
                source, toml_path(rpath + (LEGACY_DEFAULT_RUNTIME,)),
                toml_path(CRI_PLUGIN_PATHS[version] + LEGACY_DEFAULT_SUBPATH), LEGACY_DEFAULT_RUNTIME))
    available = list(configured) + ([LEGACY_DEFAULT_RUNTIME] if legacy is not None else [])
    if runtimes is None:
        names = _linux_runtimes(data, version, available, source, plan) if state == "present" else available
        if available and not names:
            return names  # a Windows node's file: every runtime was left alone, each with its warning
        if not names and state == "present":
            default = default_runtime_name(data, version, source)
            imports = [item for item in data.get("imports") or [] if isinstance(item, str)]
            if imports and not create_missing:
                # Not the advice to add them: a runtime added here would stand beside, or over, the imported one.
                raise ContainerdConfigError(
                    "%s: no CRI runtime is configured under '%s', and the file imports %s, where its runtimes "
                    "probably are: give that file as path instead; nothing was changed." % (
                        source, toml_path(rpath), ", ".join(repr(item) for item in imports)))
            if not create_missing:
                raise ContainerdConfigError(
                    "%s: no CRI runtime is configured under '%s'; name the runtimes to change and set "
                    "create_missing=true to add them (containerd's default runtime here is '%s')." % (
                        source, toml_path(rpath), default)
                )
            names = [default]
        elif state == "present" and legacy is None:
            default = default_runtime_name(data, version, source)
            if default not in names:
                plan.warnings.append(
                    "%s: the default CRI runtime '%s' is not configured in the file, so containerd runs it from "
                    "its built-in definition without base_runtime_spec; add it to runtimes with "
                    "create_missing=true to cover it." % (source, default))
        return names
    names = []
    for name in runtimes:
        if not isinstance(name, str) or not name:
            raise ContainerdConfigError("runtimes must be a list of runtime names, got %r." % (name,))
        if name not in names:
            names.append(name)
    if (LEGACY_DEFAULT_RUNTIME in names and version in (1, 2) and legacy is None
            and LEGACY_DEFAULT_RUNTIME not in configured):
        raise ContainerdConfigError(
            "%s: runtime '%s' names the deprecated '%s' table, which containerd only uses when it sets a "
            "runtime_type, and this file has no such table." % (
                source, LEGACY_DEFAULT_RUNTIME, toml_path(CRI_PLUGIN_PATHS[version] + LEGACY_DEFAULT_SUBPATH)))
    missing = [name for name in names if name not in available]
    if missing and state == "present" and not create_missing:
        raise ContainerdConfigError(
            "%s: CRI runtime '%s' is not configured under '%s' (configured: %s); set create_missing=true "
            "to add it." % (source, missing[0], toml_path(rpath), ", ".join(available) or "none")
        )
    return names


def split_bom(text: str) -> t.Tuple[str, str]:
    """``(byte order mark or "", the rest)``: containerd reads a file that starts with a UTF-8 BOM (TOML
    itself does not allow one), so the edit is planned on the rest and the mark is written back."""
    return ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)


def plan_base_runtime_spec(
    text: str,
    base_runtime_spec: t.Optional[str] = None,
    runtimes: t.Optional[t.Sequence[str]] = None,
    state: str = "present",
    create_missing: bool = False,
    source: str = "config.toml",
) -> EditPlan:
    """Plan setting (state=present) or removing (state=absent) ``base_runtime_spec`` on CRI runtimes.

    ``runtimes=None`` means every runtime the file configures for CRI, plus the deprecated
    ``default_runtime`` table when containerd uses it. Raises ContainerdConfigError with one sentence
    for bad input; otherwise returns the new text (equal to ``text`` when nothing changes) and the
    runtimes changed.
    """
    if state not in ("present", "absent"):
        raise ContainerdConfigError("state must be 'present' or 'absent', got %r." % (state,))
    if state == "present":
        base_runtime_spec = validate_spec_path(base_runtime_spec)
    bom, text = split_bom(text)
    data = parse_config(text, source)
    version = config_version(data, source)
    configured = configured_runtimes(data, version, source)
    legacy = legacy_default_runtime(data, version, source)
    if not configured and legacy is None:
        _check_schema_names(data, version, source)
    if state == "present":
        _refuse_disabled_cri(data, version, source)
    plan = EditPlan(text=bom + text, new_text=bom + text, config_version=version)
    names = _choose_runtimes(data, version, configured, legacy, runtimes, state, create_missing, source, plan)
    plan.runtimes = list(names)
    try:
        tables = scan(text)
    except ScanError as exc:
        raise ContainerdConfigError(
            "%s: cannot locate the lines to edit (%s), so nothing was changed; please report this file's "
            "layout to the rdma.node developers." % (source, exc)
        ) from None
    layout = layout_of(text, tables)
    expected = copy.deepcopy(data)
    splices = []
    for name in names:
        runtime_path = runtime_table_path(data, version, name, source)
        key_path = runtime_path + (BASE_RUNTIME_SPEC,)
        runtime = _get_table(data, runtime_path, source)
        try:
            splice = _plan_runtime(text, tables, layout, runtime_path, runtime, state, base_runtime_spec)
        except UnsupportedLayout as exc:
            raise _unsupported_form(source, exc.path) from None
        if splice is None:
            continue
        splices.append(splice)
        if state == "absent":
            del _get_table(expected, runtime_path, source)[BASE_RUNTIME_SPEC]
        elif runtime is None:
            _set_path(expected, runtime_path, {"runtime_type": DEFAULT_RUNTIME_TYPE,
                                               BASE_RUNTIME_SPEC: base_runtime_spec})
            plan.runtimes_created.append(name)
        else:
            _set_path(expected, key_path, base_runtime_spec)
            replaced = runtime.get(BASE_RUNTIME_SPEC)
            if isinstance(replaced, str) and replaced:
                plan.warnings.append(replaced_spec_warning(source, name, replaced, base_runtime_spec))
        plan.runtimes_changed.append(name)

    if splices:
        try:
            plan.new_text = bom + apply_splices(text, splices)
            compact = apply_splices(text, splices + comment_lines(tables))
        except ScanError as exc:
            raise ContainerdConfigError("%s: %s, so nothing was changed." % (source, exc)) from None
        _verify(compact, expected, source)
    return plan


def replaced_spec_warning(source, runtime, replaced, value):
    """What an operator must know when a runtime's base spec changes file: containerd reads one base spec per
    runtime, so the old file's settings (a cloud image's hooks, mounts, other rlimits) stop applying."""
    return ("%s: runtime '%s' named the base spec %r, which is replaced by %r: whatever %r sets no longer applies to its "
            "containers unless the new spec carries it too." % (source, runtime, replaced, value, replaced))


def _plan_runtime(text, tables, layout, runtime_path, runtime, state, value) -> t.Optional[Splice]:
    """The one splice that sets or removes ``base_runtime_spec`` of one runtime, or None when it is so."""
    key_path = tuple(runtime_path) + (BASE_RUNTIME_SPEC,)
    if state == "absent":
        if not runtime or not runtime.get(BASE_RUNTIME_SPEC):
            return None  # missing or "" (containerd's "no base spec")
        entry = find_entry(tables, key_path)
        if entry is None:
            raise UnsupportedLayout(runtime_path)
        return delete_entry(text, entry)
    if runtime is None:
        return create_table(text, tables, layout, runtime_path,
                            [("runtime_type", DEFAULT_RUNTIME_TYPE), (BASE_RUNTIME_SPEC, value)])
    current = runtime.get(BASE_RUNTIME_SPEC)
    if current == value:
        return None
    if current is None:
        return insert_key(text, tables, layout, runtime_path, BASE_RUNTIME_SPEC, value)
    entry = find_entry(tables, key_path)
    if entry is None:
        raise UnsupportedLayout(runtime_path)
    style = "literal" if entry.raw_value.startswith("'") else "basic"
    return Splice(entry.value_start, entry.value_end, render_string(value, style))


# --------------------------------------------------------------------------------------------------
# Validation with the node's containerd
# --------------------------------------------------------------------------------------------------

def native_version(default_config: str) -> int:
    """The schema the node's containerd writes (``containerd config default``) and so reads natively."""
    return config_version(parse_config(default_config, "containerd config default"), "containerd config default")


def validation_text(text: str, config_dir: str) -> str:
    """``text`` with relative ``imports`` made absolute, for a copy checked outside ``config_dir``.

    containerd joins a relative import to the directory of the file that names it, so a copy in a
    temporary directory would miss them; a relative glob is matched against containerd's working
    directory (``/`` for the service), which the validation command also uses, so it stays.
    """
    bom, text = split_bom(text)
    data = parse_config(text, "config.toml")
    imports = data.get("imports")
    if not isinstance(imports, list):
        return bom + text
    fixed = [
        item if (not isinstance(item, str) or posixpath.isabs(item) or any(ch in item for ch in _GLOB_CHARS))
        else posixpath.normpath(posixpath.join(config_dir, item))
        for item in imports
    ]
    if fixed == imports:
        return bom + text
    entry = find_entry(scan(text), ("imports",))
    return bom + apply_splices(text, [Splice(entry.value_start, entry.value_end, tomlkit.item(fixed).as_string())])


def check_dump(dump: str, expected: t.Mapping[str, t.Optional[str]], source: str, containerd: str,
               dumped: t.Optional[str] = None) -> int:
    """Check containerd's ``config dump`` of the result: each runtime must carry the expected base spec.

    ``expected`` maps runtime names to the spec path (``None`` for state=absent: no base spec). The dump
    is containerd's merged view, imports included, in the schema the node's containerd speaks.
    ``dumped`` is the file containerd was given when that is a copy of ``source``.
    Returns that schema version.
    """
    data = parse_config(dump, "%s config dump" % containerd)
    version = config_version(data, "%s config dump" % containerd)
    # containerd lists the file it was given among its imports, in no fixed order (it walks a Go map).
    imports = sorted(item for item in data.get("imports") or [] if isinstance(item, str) and item not in (source, dumped))
    hint = ""
    if imports:
        hint = "; a file it imports (%s) probably replaces that section" % ", ".join(imports)
    for name, want in expected.items():
        where = "%s config dump" % containerd
        runtime = _get_table(data, runtime_table_path(data, version, name, where), where)
        if runtime is None and want is None:
            continue
        if not isinstance(runtime, dict):
            raise ContainerdConfigError(
                "%s reads %s without a CRI runtime '%s' (config dump)%s; nothing was changed." % (
                    containerd, source, name, hint)
            )
        got = runtime.get(BASE_RUNTIME_SPEC) or None
        if got != want:
            raise ContainerdConfigError(
                "%s reads %s with base_runtime_spec %s for runtime '%s', not %s (config dump)%s; nothing was "
                "changed." % (containerd, source, "'%s'" % got if got else "unset", name,
                              "'%s'" % want if want else "unset", hint)
            )
    return version
