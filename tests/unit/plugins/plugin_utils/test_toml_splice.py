# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layouts that TOML allows and containerd reads, and the schema-1 ``default_runtime`` table.

Every edit is checked two ways: tomllib reads the intended value, and the text differs from the
input only where the edit is (a single contiguous change).
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils import _containerd_config as cc
from ansible_collections.rdma.node.plugins.plugin_utils import _toml_splice as ts

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "config_toml"
SPEC = "/etc/containerd/rdma-spec.json"
CRI = '[plugins."io.containerd.grpc.v1.cri"'
RUNC = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "runc")


def changed_spans(before: str, after: str) -> list:
    """The (removed, added) character runs between the two texts."""
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return [(before[i1:i2], after[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def dig(data: dict, path) -> object:
    for part in path:
        data = data[part]
    return data


LAYOUTS = {
    "parent table after its sub-table": (
        'version = 2\n'
        + CRI + '.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
        + CRI + '.containerd.runtimes]\n'
        + CRI + '.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n',
        '  runtime_type = "io.containerd.runc.v2"\n  base_runtime_spec = "%s"\n' % SPEC,
    ),
    "runtimes table after runc": (
        'version = 2\n'
        + CRI + '.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        + CRI + '.containerd.runtimes]\n'
        + CRI + '.containerd]\n  default_runtime_name = "runc"\n',
        '  runtime_type = "io.containerd.runc.v2"\n  base_runtime_spec = "%s"\n' % SPEC,
    ),
    "dotted keys": (
        'version = 2\n' + CRI + '.containerd]\n  runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
        '  runtimes.runc.options.SystemdCgroup = true\n',
        '  runtimes.runc.options.SystemdCgroup = true\n  runtimes.runc.base_runtime_spec = "%s"\n' % SPEC,
    ),
    "inline table": (
        'version = 2\n' + CRI + '.containerd.runtimes]\n  runc = { runtime_type = "io.containerd.runc.v2" }\n',
        'runc = { runtime_type = "io.containerd.runc.v2", base_runtime_spec = "%s" }' % SPEC,
    ),
    "empty inline table": (
        'version = 2\n' + CRI + '.containerd.runtimes]\nrunc = {}\n',
        'runc = { base_runtime_spec = "%s" }' % SPEC,
    ),
    "dotted key holding an inline table, literal strings": (
        "version = 2\n" + CRI + ".containerd]\nruntimes.runc = {runtime_type='io.containerd.runc.v2'}\n",
        "runtimes.runc = {runtime_type='io.containerd.runc.v2', base_runtime_spec='%s'}" % SPEC,
    ),
    "dotted keys from the root, CRLF": (
        'version = 2\r\nplugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.runtime_type = "x"\r\n',
        'runtimes.runc.runtime_type = "x"\r\nplugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.'
        'base_runtime_spec = "%s"\r\n' % SPEC,
    ),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layouts_set_remove_and_replace(name):
    text, expected_piece = LAYOUTS[name]
    plan = cc.plan_base_runtime_spec(text, SPEC, source="config.toml")
    assert plan.runtimes_changed == ["runc"]
    assert expected_piece in plan.new_text
    assert dig(tomllib.loads(plan.new_text), RUNC)["base_runtime_spec"] == SPEC
    assert len(changed_spans(text, plan.new_text)) == 1
    # idempotent, then replace the value in place, then remove it again
    assert not cc.plan_base_runtime_spec(plan.new_text, SPEC).changed
    other = cc.plan_base_runtime_spec(plan.new_text, "/other.json")
    assert changed_spans(plan.new_text, other.new_text) == [(SPEC[1:4], "oth")] or \
        dig(tomllib.loads(other.new_text), RUNC)["base_runtime_spec"] == "/other.json"
    removed = cc.plan_base_runtime_spec(other.new_text, state="absent")
    assert "base_runtime_spec" not in dig(tomllib.loads(removed.new_text), RUNC)
    assert tomllib.loads(removed.new_text) == tomllib.loads(text)


def test_inline_member_removal_keeps_the_other_members():
    text = 'version = 2\n' + CRI + '.containerd.runtimes]\nrunc = { base_runtime_spec = "/a.json", runtime_type = "x" }\n'
    removed = cc.plan_base_runtime_spec(text, state="absent").new_text
    assert removed == 'version = 2\n' + CRI + '.containerd.runtimes]\nrunc = { runtime_type = "x" }\n'
    last = 'version = 2\n' + CRI + '.containerd.runtimes]\nrunc = { runtime_type = "x" , base_runtime_spec = "/a.json" }\n'
    assert cc.plan_base_runtime_spec(last, state="absent").new_text.endswith('runc = { runtime_type = "x" }\n')


def test_create_missing_next_to_dotted_runtimes_is_valid_toml():
    text = 'version = 2\n' + CRI + '.containerd]\n  runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
    plan = cc.plan_base_runtime_spec(text, SPEC, runtimes=["runc", "nvidia"], create_missing=True)
    data = dig(tomllib.loads(plan.new_text), RUNC[:-1])
    assert data["nvidia"] == {"runtime_type": "io.containerd.runc.v2", "base_runtime_spec": SPEC}
    assert data["runc"]["base_runtime_spec"] == SPEC


@pytest.mark.parametrize("text", [
    "a = " + "[" * 100000 + "]" * 100000 + "\n",
    "a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n",
])
def test_deep_nesting_is_one_sentence(text):
    with pytest.raises(cc.ContainerdConfigError) as caught:
        cc.plan_base_runtime_spec(text, SPEC, source="/etc/containerd/config.toml")
    assert str(caught.value) in (
        "/etc/containerd/config.toml is not valid TOML: arrays or inline tables are nested too deeply to read; "
        "nothing was changed.",
    )


def test_scan_finds_inline_members_and_dotted_keys():
    text = 'a.b = { c = 1, d = { e = "x" } }\n[t]\nf.g = 2\n'
    tables = ts.scan(text)
    entry = ts.find_entry(tables, ("a", "b", "d", "e"))
    assert entry.inline and text[entry.value_start:entry.value_end] == '"x"'
    dotted = ts.find_entry(tables, ("t", "f", "g"))
    assert not dotted.inline and dotted.raw_parts == ["f", "g"] and dotted.line_end == len(text)


# --------------------------------------------------------------------------------------------------
# Schema 1 with the deprecated default_runtime table (real files from a widely copied guide)
# --------------------------------------------------------------------------------------------------

LEGACY = ("plugins", "cri", "containerd", "default_runtime")


@pytest.mark.parametrize("name", [
    "k8s-the-hard-way-1.21_v1_default_runtime.toml",
    "k8s-the-hard-way-1.10_v1_default_runtime_untrusted_gvisor.toml",
])
def test_schema1_default_runtime_gets_the_spec(name):
    text = (FIXTURES / name).read_text()
    plan = cc.plan_base_runtime_spec(text, SPEC, source=name)
    assert plan.config_version == 1 and plan.runtimes_changed == ["default_runtime"] and not plan.warnings
    after = tomllib.loads(plan.new_text)
    assert dig(after, LEGACY)["base_runtime_spec"] == SPEC
    before = tomllib.loads(text)
    dig(before, LEGACY)["base_runtime_spec"] = SPEC
    assert after == before  # untrusted_workload_runtime untouched
    assert changed_spans(text, plan.new_text) == [
        ("", '      base_runtime_spec = "%s"\n' % SPEC)] or len(changed_spans(text, plan.new_text)) == 1
    assert '      runtime_root = ""\n      base_runtime_spec = "%s"\n' % SPEC in plan.new_text + "\n"
    removed = cc.plan_base_runtime_spec(plan.new_text, state="absent")
    assert removed.new_text == text and removed.runtimes_changed == ["default_runtime"]


def test_schema1_default_runtime_by_name_and_without_runtime_type():
    text = (FIXTURES / "k8s-the-hard-way-1.21_v1_default_runtime.toml").read_text()
    plan = cc.plan_base_runtime_spec(text, SPEC, runtimes=["default_runtime"])
    assert plan.runtimes_changed == ["default_runtime"]
    unused = text.replace('runtime_type = "io.containerd.runtime.v1.linux"', 'runtime_type = ""')
    with pytest.raises(cc.ContainerdConfigError, match=r"no CRI runtime is configured under 'plugins.cri.containerd."
                                                       r"runtimes'"):
        cc.plan_base_runtime_spec(unused, SPEC)
    with pytest.raises(cc.ContainerdConfigError, match=r"names the deprecated 'plugins.cri.containerd.default_runtime' "
                                                       r"table, which containerd only uses when it sets a runtime_type"):
        cc.plan_base_runtime_spec(unused, SPEC, runtimes=["default_runtime"])


def test_schema1_default_runtime_next_to_runtimes_both_covered():
    text = (FIXTURES / "k8s-the-hard-way-1.21_v1_default_runtime.toml").read_text() + (
        '    [plugins.cri.containerd.runtimes.runc]\n      runtime_type = "io.containerd.runc.v2"\n')
    plan = cc.plan_base_runtime_spec(text, SPEC)
    assert plan.runtimes_changed == ["runc", "default_runtime"] and not plan.warnings


def test_check_dump_reads_the_default_runtime_table():
    dump = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.default_runtime]\n'
            '  base_runtime_spec = "%s"\n  runtime_type = "io.containerd.runtime.v1.linux"\n' % SPEC)
    assert cc.check_dump(dump, {"default_runtime": SPEC}, "config.toml", "containerd 1.6") == 2
    with pytest.raises(cc.ContainerdConfigError, match="with base_runtime_spec unset for runtime 'default_runtime'"):
        cc.check_dump(dump.replace(SPEC, ""), {"default_runtime": SPEC}, "config.toml", "containerd 1.6")


def test_validation_text_splices_imports_and_keeps_the_rest():
    text = '# head\nversion = 2\nimports = [ "conf.d/a.toml" ]  # drop-ins\n' + CRI + '.containerd.runtimes.runc]\n'
    out = cc.validation_text(text, "/etc/containerd")
    assert out == '# head\nversion = 2\nimports = ["/etc/containerd/conf.d/a.toml"]  # drop-ins\n' + CRI + (
        '.containerd.runtimes.runc]\n')
