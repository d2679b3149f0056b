# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The config.toml editor against the real configs in tests/fixtures/containerd/config_toml."""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path

import pytest
import tomlkit

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "config_toml"
SPEC = "/etc/containerd/rdma-spec.json"

# What each real file is: its schema and the runtimes it configures for CRI.
EXPECTED = {
    # k3s's containerd 2.x template: its Windows runtime (runhcs-wcow-process) is left alone, with a warning.
    "k3s-tmpl_v3_crun_default_wasm_runhcs_v2-name-wasmedge.toml": (3, ["runc", "crun", "wasm"]),
    "containerd-1.6_config_default_v2.toml": (2, ["runc"]),
    "eks-ami_containerd2_v3_default_base_runtime_spec.toml": (3, ["runc"]),
    # containerd 2.3's own default: schema 4 keeps the CRI runtimes where schema 3 does.
    "gardener_containerd-2.3_config_default_v4.toml": (4, ["runc"]),
    "eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml": (2, ["nvidia"]),
    "kind-fork_v2_runc_base_runtime_spec.toml": (2, ["runc", "test-handler"]),
    # schema 1 with only the deprecated default_runtime table, which containerd runs pods with
    "k8s-the-hard-way-1.21_v1_default_runtime.toml": (1, ["default_runtime"]),
    "k8s-the-hard-way-1.10_v1_default_runtime_untrusted_gvisor.toml": (1, ["default_runtime"]),
    "containerd-1.7_config_default_v2.toml": (2, ["runc"]),
    "nvidia-ctk_v3_dropin_default_nvidia.toml": (3, ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]),
    "aks-ubuntu-gb_v2_default_nvidia_untrusted_4space.toml": (2, ["nvidia", "runc", "untrusted"]),
    # no version, and its runtime under the version 3 name only: containerd 2.x reads it there
    "talos-ext_v3-names_noversion_nvidia_dropin.toml": (3, ["nvidia"]),
    # schema 1 whose runc table only holds its options: no runtime_type, which containerd 1.x needs
    "flatcar-2021_v1_noversion_runc_options_only_no_runtime_type.toml": (1, ["runc"]),
}
# Files whose runtime table only its options table implies ([...runtimes.runc.options] and no [...runtimes.runc]).
IMPLICIT_RUNTIME_TABLES = {"flatcar-2021_v1_noversion_runc_options_only_no_runtime_type.toml"}
# Real files the edit refuses, with the reason it gives.
REFUSED = {
    # Docker's containerd.io package turns CRI off: no pod would ever get the spec.
    "containerd.io-deb_noversion_cri_disabled_all_commented.toml": (
        "containerd.io-deb_noversion_cri_disabled_all_commented.toml: disabled_plugins holds 'cri', so containerd runs no "
        "Kubernetes (CRI) pod with this file and none would get base_runtime_spec; take it out of disabled_plugins (and "
        "restart containerd) first; nothing was changed."),
    # Talos keeps its runtimes in a file the main one imports: adding one here would stand beside it.
    "talos_hack_v3_imports_only_no_runtimes.toml": (
        "talos_hack_v3_imports_only_no_runtimes.toml: no CRI runtime is configured under "
        "'plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes', and the file imports '/etc/cri/conf.d/cri.toml', "
        "where its runtimes probably are: give that file as path instead; nothing was changed."),
}
# A Windows node's file: every runtime runs Windows containers (runhcs), so the edit leaves each alone.
WINDOWS_NODE = "aks-windows_v1_noversion_runhcs_default_runtime.toml"
ALL_FIXTURES = sorted(path.name for path in FIXTURES.glob("*.toml") if path.name not in REFUSED and path.name != WINDOWS_NODE)
KEY_LINE = re.compile(r"^[ \t]*base_runtime_spec[ \t]*=")


def read(name: str) -> str:
    with open(FIXTURES / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def runtime_table(text: str, version: int) -> dict:
    """The runtimes containerd uses, by name; the deprecated default_runtime table as 'default_runtime'."""
    data = tomllib.loads(text)
    node = data
    for part in cc.runtimes_path(version):
        node = node.get(part, {})
    legacy = cc.legacy_default_runtime(data, version, "test")
    return dict(node, **({"default_runtime": legacy} if legacy is not None else {}))


def changed_lines(before: str, after: str):
    """(removed, added) lines of a line diff; everything else is byte-identical."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    removed, added = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            removed.extend(old[i1:i2])
            added.extend(new[j1:j2])
    return removed, added


@pytest.mark.parametrize("name, default", [
    ("k8s-the-hard-way-1.21_v1_default_runtime.toml", "default_runtime"),  # the deprecated table containerd 1.x runs pods with
    ("aks-ubuntu-gb_v2_default_nvidia_untrusted_4space.toml", "nvidia"),
    ("kind-fork_v2_runc_base_runtime_spec.toml", "runc"),
])
def test_the_default_runtime_of_a_real_file(name, default):
    data = tomllib.loads(read(name))
    version = cc.config_version(data, name)
    assert cc.default_runtime_name(data, version, name) == default


def test_every_fixture_is_covered():
    assert ALL_FIXTURES == sorted(EXPECTED)
    assert all((FIXTURES / name).is_file() for name in REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_fixture_refused_in_one_sentence(name):
    with pytest.raises(cc.ContainerdConfigError) as raised:
        cc.plan_base_runtime_spec(read(name), SPEC, source=name)
    assert str(raised.value) == REFUSED[name]


def test_the_imports_named_in_a_refusal_are_quoted_with_their_control_characters_escaped():
    text = 'version = 3\nimports = ["/etc/cri/\\u001b[2Jcri.toml"]\n'
    with pytest.raises(cc.ContainerdConfigError) as raised:
        cc.plan_base_runtime_spec(text, SPEC, source="config.toml")
    assert "imports '/etc/cri/\\x1b[2Jcri.toml'" in str(raised.value) and "\x1b" not in str(raised.value)


def test_an_import_only_file_gets_the_runtime_it_is_asked_to_create():
    # create_missing=true is the operator's explicit choice: the default runtime is added beside the import.
    plan = cc.plan_base_runtime_spec(read("talos_hack_v3_imports_only_no_runtimes.toml"), SPEC, create_missing=True)
    assert (plan.runtimes_changed, plan.runtimes_created) == (["runc"], ["runc"])
    assert tomllib.loads(plan.new_text)["imports"] == ["/etc/cri/conf.d/cri.toml"]


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fixture_set_base_runtime_spec_on_every_runtime(name):
    text = read(name)
    version, runtimes = EXPECTED[name]
    plan = cc.plan_base_runtime_spec(text, SPEC, source=name)

    assert plan.config_version == version
    assert plan.runtimes == runtimes
    assert plan.runtimes_changed == runtimes
    assert plan.runtimes_created == []
    # The result parses with both parsers, and the key sits on each runtime at the schema's path.
    tomlkit.parse(plan.new_text)
    for runtime in runtimes:
        assert runtime_table(plan.new_text, version)[runtime]["base_runtime_spec"] == SPEC
    # Only base_runtime_spec lines differ: every other line is byte-identical, in order.
    removed, added = changed_lines(text, plan.new_text)
    if name in IMPLICIT_RUNTIME_TABLES:  # the runtime's own header, which only its options table implied, comes first
        header = "[%s]\n" % cc.toml_path(cc.runtime_table_path(tomllib.loads(text), version, runtimes[0], name))
        assert added[0] == header and added[-1] == "\n", added
        added = added[1:-1]
    assert added and all(KEY_LINE.match(line) for line in added), added
    assert all(KEY_LINE.match(line) for line in removed), removed
    # The rest of the document is unchanged too.
    before, after = tomllib.loads(text), tomllib.loads(plan.new_text)
    for path in [cc.runtime_table_path(before, version, runtime, name) for runtime in runtimes]:
        for doc in (before, after):
            table = doc
            for part in path:
                table = table[part]
            table.pop("base_runtime_spec", None)
    assert before == after
    # A second run changes nothing.
    again = cc.plan_base_runtime_spec(plan.new_text, SPEC, source=name)
    assert not again.changed and again.runtimes_changed == [] and again.new_text == plan.new_text


def test_kind_key_inserted_in_its_table_with_its_indentation():
    # test-handler has no base_runtime_spec: the key goes right after its last key, indented like it,
    # even though the parent [plugins."io.containerd.grpc.v1.cri"] table comes after its sub-tables.
    text = read("kind-fork_v2_runc_base_runtime_spec.toml")
    new = cc.plan_base_runtime_spec(text, SPEC).new_text.splitlines()
    header = new.index('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler]')
    assert new[header + 1:header + 4] == [
        '  runtime_type = "io.containerd.runc.v2"',
        '  base_runtime_spec = "/etc/containerd/rdma-spec.json"',
        "",
    ]
    # runc's existing key was replaced in place, below its comment line.
    runc = new.index('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]')
    assert new[runc + 3:runc + 5] == [
        '  # Generated by "ctr oci spec" and modified at base container to mount poduct_uuid',
        '  base_runtime_spec = "/etc/containerd/rdma-spec.json"',
    ]


@pytest.mark.parametrize("name", [
    "eks-ami_containerd2_v3_default_base_runtime_spec.toml",
    "eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml",
])
def test_single_quoted_files_keep_literal_strings(name):
    text = read(name)
    _removed, added = changed_lines(text, cc.plan_base_runtime_spec(text, SPEC).new_text)
    assert added == ["base_runtime_spec = '/etc/containerd/rdma-spec.json'\n"]


def test_a_base_spec_another_file_named_is_replaced_with_a_warning():
    # An EKS node's runc names the image's own base spec: containerd reads one per runtime, so the operator is told.
    text = read("eks-ami_containerd2_v3_default_base_runtime_spec.toml")
    plan = cc.plan_base_runtime_spec(text, SPEC, source="config.toml")
    assert plan.runtimes_changed == ["runc"]
    assert plan.warnings == ["config.toml: runtime 'runc' named the base spec '/etc/containerd/base-runtime-spec.json', which is "
                             "replaced by '/etc/containerd/rdma-spec.json': whatever '/etc/containerd/base-runtime-spec.json' sets "
                             "no longer applies to its containers unless the new spec carries it too."]
    # The same file named again, or containerd's "" (no base spec), is no replacement.
    assert cc.plan_base_runtime_spec(text, "/etc/containerd/base-runtime-spec.json").warnings == []
    assert cc.plan_base_runtime_spec(read("containerd-1.6_config_default_v2.toml"), SPEC).warnings == []


def test_a_value_a_literal_string_cannot_hold_becomes_a_basic_string():
    text = read("eks-ami_v2_nvidia_default-runtime_base_runtime_spec.toml")
    plan = cc.plan_base_runtime_spec(text, "/etc/containerd/it's.json")
    _removed, added = changed_lines(text, plan.new_text)
    assert added == ['base_runtime_spec = "/etc/containerd/it\'s.json"\n']
    assert runtime_table(plan.new_text, 2)["nvidia"]["base_runtime_spec"] == "/etc/containerd/it's.json"


def test_containerd_default_leaves_deprecated_runtime_tables_alone():
    # default_runtime and untrusted_workload_runtime also carry base_runtime_spec = "" but are not runtimes.
    text = read("containerd-1.6_config_default_v2.toml")
    removed, added = changed_lines(text, cc.plan_base_runtime_spec(text, SPEC).new_text)
    assert removed == ['          base_runtime_spec = ""\n']
    assert added == ['          base_runtime_spec = "/etc/containerd/rdma-spec.json"\n']


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fixture_state_absent_removes_only_the_key_lines(name):
    text = read(name)
    version, runtimes = EXPECTED[name]
    plan = cc.plan_base_runtime_spec(text, state="absent", source=name)
    with_value = [rt for rt in runtimes if runtime_table(text, version)[rt].get("base_runtime_spec")]
    assert plan.runtimes_changed == with_value
    removed, added = changed_lines(text, plan.new_text)
    assert added == []
    assert len(removed) == len(with_value) and all(KEY_LINE.match(line) for line in removed)
    for runtime in runtimes:
        assert not runtime_table(plan.new_text, version)[runtime].get("base_runtime_spec")
    assert not cc.plan_base_runtime_spec(plan.new_text, state="absent").changed


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fixture_create_missing_adds_a_runtime_table_and_changes_no_existing_line(name):
    text = read(name)
    version, runtimes = EXPECTED[name]
    plan = cc.plan_base_runtime_spec(text, SPEC, runtimes=["gpu-rdma"], create_missing=True, source=name)
    assert plan.runtimes_created == ["gpu-rdma"] and plan.runtimes_changed == ["gpu-rdma"]
    assert runtime_table(plan.new_text, version)["gpu-rdma"] == {
        "runtime_type": "io.containerd.runc.v2", "base_runtime_spec": SPEC}
    removed, added = changed_lines(text, plan.new_text)
    assert removed == []
    header = "[%s.gpu-rdma]" % cc.toml_path(cc.runtimes_path(version))
    stripped = [line.strip() for line in added]
    # the new table spells the plugin key as the file does ('...' in the eks files)
    assert header.replace('"', "'" if "'io." in text else '"') in stripped
    tomlkit.parse(plan.new_text)
    # the existing runtimes are not touched
    assert {rt: runtime_table(plan.new_text, version)[rt] for rt in runtimes} == \
        {rt: runtime_table(text, version)[rt] for rt in runtimes}
    assert not cc.plan_base_runtime_spec(plan.new_text, SPEC, runtimes=["gpu-rdma"], create_missing=True).changed


def test_created_runtime_follows_the_go_toml_indentation():
    text = read("containerd-1.6_config_default_v2.toml")
    plan = cc.plan_base_runtime_spec(text, SPEC, runtimes=["nvidia"], create_missing=True)
    _removed, added = changed_lines(text, plan.new_text)
    assert [line for line in added if line.strip()] == [
        '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n',
        '          runtime_type = "io.containerd.runc.v2"\n',
        '          base_runtime_spec = "/etc/containerd/rdma-spec.json"\n',
    ]
    # placed after runc's options table (and its trailing comment lines), before the next section
    lines = plan.new_text.splitlines()
    new_at = lines.index('        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]')
    assert lines[new_at - 2] == "            #SystemdCgroup = false"
    assert lines[new_at + 4] == '      [plugins."io.containerd.grpc.v1.cri".containerd.untrusted_workload_runtime]'


def test_crlf_tabs_trailing_spaces_and_comments_survive():
    # The kind file rewritten with CRLF line ends, tab indentation and trailing spaces.
    text = read("kind-fork_v2_runc_base_runtime_spec.toml")
    text = "".join(line.replace("  ", "\t", 1).rstrip("\n") + "  \r\n" for line in text.splitlines(keepends=True))
    text = text.replace('"/etc/containerd/cri-base.json"  ', '"/etc/containerd/cri-base.json"   # keep me ')
    plan = cc.plan_base_runtime_spec(text, SPEC)
    removed, added = changed_lines(text, plan.new_text)
    assert removed == ['\tbase_runtime_spec = "/etc/containerd/cri-base.json"   # keep me \r\n']
    assert added == [
        '\tbase_runtime_spec = "/etc/containerd/rdma-spec.json"   # keep me \r\n',
        '\tbase_runtime_spec = "/etc/containerd/rdma-spec.json"\r\n',
    ]
    assert not cc.plan_base_runtime_spec(plan.new_text, SPEC).changed


def test_runtime_known_only_through_its_options_table_gets_its_own_header():
    # The usual SystemdCgroup snippet: [...runtimes.runc.options] without [...runtimes.runc].
    text = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
    plan = cc.plan_base_runtime_spec(text, SPEC)
    assert plan.new_text == (
        'version = 2\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  base_runtime_spec = "/etc/containerd/rdma-spec.json"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
    )


def test_a_file_without_version_is_version_1():
    # The kind file in containerd 1.x's first layout: plugins.cri and no version line.
    text = read("kind-fork_v2_runc_base_runtime_spec.toml").replace('"io.containerd.grpc.v1.cri"', "cri")
    text = text.replace("version = 2\n", "")
    plan = cc.plan_base_runtime_spec(text, SPEC)
    assert plan.config_version == 1
    assert tomllib.loads(plan.new_text)["plugins"]["cri"]["containerd"]["runtimes"]["test-handler"] == {
        "runtime_type": "io.containerd.runc.v2", "base_runtime_spec": SPEC}


def test_a_file_without_version_with_both_names_is_still_version_1():
    # Version 3 names are taken as the file's schema only when no older name holds runtimes too.
    text = ('[plugins.cri.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n')
    plan = cc.plan_base_runtime_spec(text, SPEC)
    assert (plan.config_version, plan.runtimes) == (1, ["runc"])


def test_multiline_strings_and_arrays_are_not_mistaken_for_tables():
    text = (
        'version = 2\nnote = """\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        'base_runtime_spec = "x"\n"""\nlist = [\n  "a", # [not a table]\n  [1, 2],\n]\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."kata.v2"]\n  runtime_type = "io.containerd.kata.v2"\n'
    )
    plan = cc.plan_base_runtime_spec(text, SPEC, runtimes=["kata.v2"])
    assert plan.new_text == text + '  base_runtime_spec = "/etc/containerd/rdma-spec.json"\n'


def test_warns_when_a_runtime_has_no_runtime_type():
    name = "flatcar-2021_v1_noversion_runc_options_only_no_runtime_type.toml"
    plan = cc.plan_base_runtime_spec(read(name), SPEC, source=name)
    assert plan.warnings == [
        "%s: runtime 'runc' sets no runtime_type, and containerd 1.x creates no container with it (\"container.Runtime.Name "
        "must be set\"); set runtime_type = \"io.containerd.runc.v2\" in its table." % name]


def test_warns_when_the_default_runtime_is_not_in_the_file():
    text = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n  runtime_type = "x"\n'
    plan = cc.plan_base_runtime_spec(text, SPEC, source="/etc/containerd/config.toml")
    assert plan.warnings == [
        "/etc/containerd/config.toml: the default CRI runtime 'runc' is not configured in the file, so containerd "
        "runs it from its built-in definition without base_runtime_spec; add it to runtimes with "
        "create_missing=true to cover it."
    ]


def test_no_runtime_configured_adds_the_default_runtime_with_create_missing():
    text = 'version = 2\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    sandbox_image = "pause"\n'
    plan = cc.plan_base_runtime_spec(text, SPEC, create_missing=True)
    assert plan.runtimes_created == ["runc"]
    assert runtime_table(plan.new_text, 2)["runc"]["base_runtime_spec"] == SPEC
    assert plan.new_text.startswith(text)


# ------------------------------------------------------------------------------------------------
# Bad input: one sentence, nothing planned
# ------------------------------------------------------------------------------------------------

BAD = [
    ("version = 5\n", {},
     "config.toml: 'version = 5' is not a containerd config schema this module knows (expected 1 for containerd "
     "1.x 'plugins.cri', 2 for 'plugins.\"io.containerd.grpc.v1.cri\"', 3 for containerd 2.0-2.2 "
     "'plugins.\"io.containerd.cri.v1.runtime\"' or 4 for containerd 2.3 and later, with the same CRI tables); "
     "nothing was changed."),
    ('version = "2"\n', {}, "config.toml: 'version' must be an integer (1, 2, 3 or 4), found a string ('2')."),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc\n', {},
     "config.toml is not valid TOML: Expected ']' at the end of a table declaration (at line 2, column 62); "
     "nothing was changed."),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n', {"runtimes": ["nvidia"]},
     "config.toml: CRI runtime 'nvidia' is not configured under "
     "'plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes' (configured: runc); set create_missing=true to add it."),
    ("version = 2\n", {},
     "config.toml: no CRI runtime is configured under 'plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes'; "
     "name the runtimes to change and set create_missing=true to add them (containerd's default runtime here is 'runc')."),
    ('version = 2\n[plugins.cri.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n', {},
     "config.toml: the file is version 2, but its CRI runtimes sit under 'plugins.cri.containerd.runtimes', the "
     "version 1 name, which containerd ignores for version 2; fix 'version' or the table names first."),
    ('version = 2\n[[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]]\nx = 1\n', {"runtimes": ["runc"]},
     "config.toml: 'plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc' is written in a form this module "
     "cannot edit in place (an array of tables, or a key inside a value that is not a table); write it as a "
     "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc] table first."),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\nrunc = "io.containerd.runc.v2"\n', {},
     "config.toml: 'plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc' must be a table, found a string."),
    ('version = 2\nplugins = []\n', {},
     "config.toml: 'plugins' must be a table, found an array."),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n', {"base_runtime_spec": "rdma.json"},
     "base_runtime_spec must be an absolute path (containerd opens it as given), got 'rdma.json'."),
    ('version = 2\n', {"base_runtime_spec": None},
     "base_runtime_spec is required with state=present (the spec file's path)."),
]


@pytest.mark.parametrize("text, kwargs, message", BAD)
def test_bad_input_is_one_clear_sentence(text, kwargs, message):
    kwargs = dict({"base_runtime_spec": SPEC}, **kwargs)
    with pytest.raises(cc.ContainerdConfigError) as caught:
        cc.plan_base_runtime_spec(text, source="config.toml", **kwargs)
    assert str(caught.value) == message


def test_syntax_error_in_a_real_fixture_names_the_line():
    text = read("kind-fork_v2_runc_base_runtime_spec.toml").replace("discard_unpacked_layers = true",
                                                                    "discard_unpacked_layers = yes")
    with pytest.raises(cc.ContainerdConfigError, match=r"^/etc/containerd/config.toml is not valid TOML: "
                                                       r"Invalid value \(at line 12, column 29\); nothing was changed.$"):
        cc.plan_base_runtime_spec(text, SPEC, source="/etc/containerd/config.toml")


def test_missing_tomlkit_is_one_sentence(monkeypatch):
    monkeypatch.setattr(cc, "tomlkit", None)
    with pytest.raises(cc.ContainerdConfigError, match=r"needs the Python library tomlkit .* on the Ansible "
                                                       r"controller .*'pip install tomlkit'\.$"):
        cc.plan_base_runtime_spec("version = 2\n", SPEC)


def test_an_edit_that_would_change_more_is_refused(monkeypatch):
    # Simulate a scanner that puts the key in the wrong table: the re-parse check must refuse it.
    real_insert = cc.insert_key

    def misplaced(text, tables, layout, table_path, key, value):
        splice = real_insert(text, tables, layout, table_path, key, value)
        return cc.Splice(0, 0, splice.text.lstrip())

    monkeypatch.setattr(cc, "insert_key", misplaced)
    text = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "x"\n'
    with pytest.raises(cc.ContainerdConfigError, match="would change more than base_runtime_spec, so nothing was changed"):
        cc.plan_base_runtime_spec(text, SPEC, source="config.toml")


# ------------------------------------------------------------------------------------------------
# Helpers for validation with containerd
# ------------------------------------------------------------------------------------------------

def test_native_version_of_containerd_1_6_default_is_2():
    assert cc.native_version(read("containerd-1.6_config_default_v2.toml")) == 2


def test_validation_text_makes_relative_imports_absolute_and_keeps_globs():
    text = 'version = 2\nimports = ["conf.d/nvidia.toml", "/etc/abs.toml", "conf.d/*.toml"]  # drop-ins\n'
    out = cc.validation_text(text, "/etc/containerd")
    assert tomllib.loads(out)["imports"] == ["/etc/containerd/conf.d/nvidia.toml", "/etc/abs.toml", "conf.d/*.toml"]
    same = 'version = 2\nimports = ["/etc/abs.toml"]\n'
    assert cc.validation_text(same, "/etc/containerd") == same


DUMP = (
    'imports = ["/etc/containerd/config.toml", "/etc/containerd/conf.d/10.toml"]\nversion = 2\n\n'
    '[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    [plugins."io.containerd.grpc.v1.cri".containerd]\n'
    '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
    '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
    '          base_runtime_spec = "%s"\n          runtime_type = "io.containerd.runc.v2"\n'
)


def test_check_dump_accepts_what_containerd_reads():
    assert cc.check_dump(DUMP % SPEC, {"runc": SPEC}, "/etc/containerd/config.toml", "containerd 1.6.20") == 2
    assert cc.check_dump(DUMP % "", {"runc": None, "nvidia": None}, "/etc/containerd/config.toml", "containerd") == 2


def test_check_dump_names_an_import_that_replaced_the_runtime():
    with pytest.raises(cc.ContainerdConfigError) as caught:
        cc.check_dump(DUMP % "", {"runc": SPEC}, "/etc/containerd/config.toml", "containerd 1.6.20")
    assert str(caught.value) == (
        "containerd 1.6.20 reads /etc/containerd/config.toml with base_runtime_spec unset for runtime 'runc', not "
        "'/etc/containerd/rdma-spec.json' (config dump); a file it imports (/etc/containerd/conf.d/10.toml) "
        "probably replaces that section; nothing was changed."
    )
    with pytest.raises(cc.ContainerdConfigError, match="without a CRI runtime 'nvidia'"):
        cc.check_dump(DUMP % SPEC, {"nvidia": SPEC}, "/etc/containerd/config.toml", "containerd 1.6.20")


def test_check_dump_names_the_imports_whatever_order_containerd_lists_them_in():
    # containerd 1.6 lists the loaded files from a Go map: the file it was given (here a copy) may come anywhere.
    dump = (DUMP % "").replace(
        '["/etc/containerd/config.toml", "/etc/containerd/conf.d/10.toml"]',
        '["/etc/containerd/conf.d/20.toml", "/tmp/ansible-tmp-1/config.toml", "/etc/containerd/conf.d/10.toml"]')
    with pytest.raises(cc.ContainerdConfigError) as caught:
        cc.check_dump(dump, {"runc": SPEC}, "/etc/containerd/config.toml", "containerd 1.6.20",
                      dumped="/tmp/ansible-tmp-1/config.toml")
    assert str(caught.value).endswith(
        "(config dump); a file it imports (/etc/containerd/conf.d/10.toml, /etc/containerd/conf.d/20.toml) "
        "probably replaces that section; nothing was changed.")


def test_controller_argument_spec_matches_the_module(monkeypatch):
    from ansible_collections.rdma.node.plugins.modules import containerd_runtime as module

    captured = {}

    class Capture(Exception):
        pass

    def fake_module(**kwargs):
        captured.update(kwargs)
        raise Capture()

    monkeypatch.setattr(module, "AnsibleModule", fake_module)
    with pytest.raises(Capture):
        module.main()
    node_spec = captured["argument_spec"]
    # Same options; paths are 'str' on the controller because they are expanded on the node.
    controller = {name: dict(opt, type="path") if name in ("path", "base_runtime_spec") else opt
                  for name, opt in cc.ARGUMENT_SPEC.items()}
    # plus the write step's two options and the read step's known digests, which only the action plugin
    # passes (its spec rejects them)
    assert node_spec == dict(controller, replace_with={"type": "path"}, expected_sha256={"type": "str"},
                             known_sha256={"type": "list", "elements": "str", "no_log": False})
    assert not {"replace_with", "expected_sha256", "known_sha256"} & set(cc.ARGUMENT_SPEC)
    assert captured["required_if"] == cc.REQUIRED_IF


@pytest.mark.parametrize("state", ["present", "absent"])
def test_a_byte_order_mark_is_accepted_and_kept(state):
    """Issue 24, item 15: containerd reads a file that starts with a UTF-8 BOM; tomllib alone refuses it."""
    text = (FIXTURES / "kind-fork_v2_runc_base_runtime_spec.toml").read_text()
    plain = cc.plan_base_runtime_spec(text, SPEC, state=state)
    marked = cc.plan_base_runtime_spec("\ufeff" + text, SPEC, state=state)
    assert marked.new_text == "\ufeff" + plain.new_text and marked.text == "\ufeff" + text
    assert (marked.config_version, marked.runtimes_changed) == (plain.config_version, plain.runtimes_changed)
    assert cc.validation_text("\ufeff" + 'version = 2\nimports = ["a.toml"]\n', "/etc/containerd") == (
        '\ufeffversion = 2\nimports = ["/etc/containerd/a.toml"]\n')


# Modeled on AKS's Windows template for containerd 2.x (Azure/AgentBaker, staging/cse/windows/containerd2template.toml),
# which names its default runtime "default_runtime": in schema 3 that is an ordinary runtime, never the
# deprecated table of containerd 1.x.
AKS_WINDOWS_V3 = (
    "version = 3\r\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd]\r\n"
    "  default_runtime_name = 'default_runtime'\r\n"
    "  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]\r\n"
    "    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.default_runtime]\r\n"
    "      runtime_type = 'io.containerd.runhcs.v1'\r\n"
    "    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runhcs-wcow-process]\r\n"
    "      runtime_type = 'io.containerd.runhcs.v1'\r\n"
)


def test_a_windows_nodes_runtimes_are_left_alone_each_with_a_warning():
    for text, version, source in ((read(WINDOWS_NODE), 1, WINDOWS_NODE), (AKS_WINDOWS_V3, 3, "config.toml")):
        plan = cc.plan_base_runtime_spec(text, SPEC, source=source)
        assert plan.config_version == version and not plan.changed and plan.runtimes == [] and plan.runtimes_changed == []
        assert sorted(w.split("'")[1] for w in plan.warnings) == ["default_runtime", "runhcs-wcow-process"]
        assert all("runs Windows containers (io.containerd.runhcs.v1): a Linux process's memory lock limit does not apply"
                   in warning for warning in plan.warnings)


def test_a_runtime_named_default_runtime_is_a_runtime_in_schema_3():
    # Named on purpose, a runhcs runtime is edited like any other.
    plan = cc.plan_base_runtime_spec(AKS_WINDOWS_V3, SPEC, runtimes=["default_runtime", "runhcs-wcow-process"])
    assert (plan.runtimes_changed, plan.runtimes_created) == (["default_runtime", "runhcs-wcow-process"], [])
    runtimes = runtime_table(plan.new_text, 3)
    assert {name: runtimes[name]["base_runtime_spec"] for name in runtimes} == {"default_runtime": SPEC, "runhcs-wcow-process": SPEC}
    assert "default_runtime" not in tomllib.loads(plan.new_text)["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    _removed, added = changed_lines(AKS_WINDOWS_V3, plan.new_text)
    # Each key in its runtime's table, indented like its keys, quoted and ended (CRLF) like the file's lines.
    assert added == ["      base_runtime_spec = '%s'\r\n" % SPEC] * 2


def test_schema_2_with_the_deprecated_table_and_a_runtime_of_its_name_is_refused():
    text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.default_runtime]\n  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.default_runtime]\n  runtime_type = "io.containerd.runc.v2"\n')
    with pytest.raises(cc.ContainerdConfigError, match="are both named 'default_runtime'; rename the runtime first"):
        cc.plan_base_runtime_spec(text, SPEC)


def test_k3s_template_leaves_its_windows_runtime_alone_and_says_so():
    name = "k3s-tmpl_v3_crun_default_wasm_runhcs_v2-name-wasmedge.toml"
    plan = cc.plan_base_runtime_spec(read(name), SPEC, source=name)
    assert plan.warnings == ["%s: runtime 'runhcs-wcow-process' runs Windows containers (io.containerd.runhcs.v1): a Linux "
                             "process's memory lock limit does not apply to it, so it was left alone." % name]
    assert "base_runtime_spec" not in runtime_table(plan.new_text, 3)["runhcs-wcow-process"]


def test_cri_disabled_is_refused_even_where_runtimes_may_be_created():
    name = "containerd.io-deb_noversion_cri_disabled_all_commented.toml"
    with pytest.raises(cc.ContainerdConfigError, match="disabled_plugins holds 'cri'"):
        cc.plan_base_runtime_spec(read(name), SPEC, runtimes=["runc"], create_missing=True, source=name)
    # Taking the spec away needs no CRI: state=absent has nothing to remove here and changes nothing.
    assert not cc.plan_base_runtime_spec(read(name), state="absent", source=name).changed
