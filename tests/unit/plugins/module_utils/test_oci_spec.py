"""Planning rlimits edits of real OCI runtime specs (tests/fixtures/containerd/oci_spec)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils._oci_spec import (
    CTR_SOURCE,
    SpecError,
    detect_style,
    load_spec,
    plan_rlimits,
    plan_spec,
    restyle,
)
from ansible_collections.rdma.node.plugins.module_utils._rlimits import RLIM_INFINITY, normalize_rlimits

SPEC_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "oci_spec"
SPECS = sorted(SPEC_DIR.glob("*.json"))
KIND = SPEC_DIR / "kind-fork_cri-base_from_ctr-oci-spec_1.0.2-dev_plus_kind_mounts_hook.json"
DEBIAN = SPEC_DIR / "debian12_containerd-1.6.20_ctr-oci-spec.json"

MEMLOCK_UNLIMITED = normalize_rlimits([{"type": "RLIMIT_MEMLOCK", "soft": "unlimited", "hard": "unlimited"}])


def changed_lines(before: str, after: str) -> list:
    """The -/+ lines of a unified diff, without headers."""
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def variants(text: str):
    """The same spec in other indentation styles people use: tabs, 3 spaces, one line, CRLF."""
    data = json.loads(text)
    yield "tabs", json.dumps(data, indent="\t") + "\n"
    yield "three-spaces", json.dumps(data, indent=3)
    yield "compact", json.dumps(data, separators=(",", ":"))
    yield "crlf", json.dumps(data, indent=2).replace("\n", "\r\n") + "\r\n"


def test_fixtures_are_present():
    assert KIND in SPECS and DEBIAN in SPECS


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_memlock_appended_and_everything_else_byte_identical(spec):
    text = spec.read_text()
    plan = plan_rlimits(text, MEMLOCK_UNLIMITED, nofile_floor=0, source=str(spec))
    assert plan["changed"]
    assert plan["nofile_raised"] is False
    # The only difference is the new array element; the file's own indentation is kept.
    indent = detect_style(text)["indent"]
    unit = indent * 3
    assert changed_lines(text, plan["text"]) == [
        "+" + unit + "},",
        "+" + unit + "{",
        "+" + unit + indent + '"type": "RLIMIT_MEMLOCK",',
        "+" + unit + indent + '"hard": 18446744073709551615,',
        "+" + unit + indent + '"soft": 18446744073709551615',
    ]
    data = json.loads(plan["text"])
    assert data["process"]["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
        {"type": "RLIMIT_MEMLOCK", "hard": RLIM_INFINITY, "soft": RLIM_INFINITY},
    ]
    assert plan["rlimits"] == data["process"]["rlimits"]
    # Key order of the whole document is unchanged.
    assert list(data) == list(json.loads(text))
    assert list(data["process"]) == list(json.loads(text)["process"])


def test_kind_hooks_and_mounts_survive():
    text = KIND.read_text()
    after = json.loads(plan_rlimits(text, MEMLOCK_UNLIMITED)["text"])
    before = json.loads(text)
    assert after["hooks"] == before["hooks"] == {"createContainer": [{"path": "/usr/local/bin/mount-product-files"}]}
    assert after["mounts"] == before["mounts"]
    assert after["mounts"][-1]["destination"] == "/sys/devices/virtual/dmi/id/product_uuid"


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_nofile_floor_raises_the_ctr_default(spec):
    text = spec.read_text()
    plan = plan_rlimits(text, MEMLOCK_UNLIMITED)
    assert plan["nofile_raised"] == {"soft": 1024, "hard": 1024}
    assert plan["rlimits"][0] == {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576}
    assert plan["messages"] == [
        "RLIMIT_NOFILE raised from soft 1024/hard 1024 to soft 1048576/hard 1048576 (nofile_floor); "
        "list RLIMIT_NOFILE in rlimits to choose the value yourself."
    ]


def test_nofile_floor_keeps_higher_values_and_raises_each_side():
    text = json.dumps({"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "hard": 2097152, "soft": 1024}]}}, indent=2)
    plan = plan_rlimits(text, [], nofile_floor=1048576)
    assert plan["rlimits"] == [{"type": "RLIMIT_NOFILE", "hard": 2097152, "soft": 1048576}]
    assert plan["nofile_raised"] == {"soft": 1024, "hard": 2097152}


def test_nofile_managed_by_the_user_disables_the_floor():
    desired = normalize_rlimits([{"type": "NOFILE", "soft": 4096, "hard": 8192}])
    plan = plan_rlimits(DEBIAN.read_text(), desired)
    assert plan["nofile_raised"] is False
    assert plan["rlimits"] == [{"type": "RLIMIT_NOFILE", "hard": 8192, "soft": 4096}]
    # The value the spec held is said, as it is replaced.
    assert plan["messages"] == ["RLIMIT_NOFILE was soft 1024/hard 1024 in the spec; now soft 4096/hard 8192."]


def test_nofile_absent_removes_it_and_no_floor_applies():
    plan = plan_rlimits(DEBIAN.read_text(), normalize_rlimits([{"type": "NOFILE", "state": "absent"}]))
    assert plan["rlimits"] == []
    assert json.loads(plan["text"])["process"]["rlimits"] == []
    assert plan["nofile_raised"] is False


def test_missing_nofile_entry_is_not_added():
    text = json.dumps({"process": {"args": ["sh"]}}, indent=4)
    plan = plan_rlimits(text, [], nofile_floor=1048576)
    assert not plan["changed"] and plan["text"] == text and plan["rlimits"] == []


def test_nofile_floor_needs_integers():
    text = json.dumps({"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "hard": "lots", "soft": 1}]}})
    with pytest.raises(SpecError) as error:
        plan_rlimits(text, [], source="/etc/containerd/spec.json")
    assert str(error.value) == (
        "/etc/containerd/spec.json: process.rlimits[0] (RLIMIT_NOFILE) needs integer soft and hard values to "
        "apply nofile_floor, got soft 1 and hard 'lots'; manage RLIMIT_NOFILE in rlimits instead."
    )


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_second_plan_changes_nothing(spec):
    first = plan_rlimits(spec.read_text(), MEMLOCK_UNLIMITED)
    second = plan_rlimits(first["text"], MEMLOCK_UNLIMITED)
    assert not second["changed"]
    assert second["text"] == first["text"]
    assert second["nofile_raised"] is False


def test_update_in_place_keeps_position_and_key_order():
    text = json.dumps(
        {"process": {"rlimits": [
            {"soft": 1, "type": "RLIMIT_MEMLOCK", "hard": 1},
            {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
        ]}},
        indent=4,
    )
    plan = plan_rlimits(text, normalize_rlimits([{"type": "MEMLOCK", "soft": "4M", "hard": "8M"}]))
    assert plan["rlimits"] == [
        {"soft": 4194304, "type": "RLIMIT_MEMLOCK", "hard": 8388608},
        {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
    ]
    assert list(json.loads(plan["text"])["process"]["rlimits"][0]) == ["soft", "type", "hard"]


def test_duplicates_of_a_managed_type_are_folded():
    text = json.dumps({"process": {"rlimits": [
        {"type": "RLIMIT_MEMLOCK", "hard": 1, "soft": 1},
        {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
        {"type": "RLIMIT_MEMLOCK", "hard": 2, "soft": 2},
    ]}}, indent=2)
    plan = plan_rlimits(text, MEMLOCK_UNLIMITED, source="spec.json")
    assert [entry["type"] for entry in plan["rlimits"]] == ["RLIMIT_MEMLOCK", "RLIMIT_NOFILE"]
    assert plan["messages"] == ["RLIMIT_MEMLOCK was soft 1/hard 1 in spec.json; now soft unlimited/hard unlimited.",
                                "RLIMIT_MEMLOCK appeared 2 times in spec.json; kept one entry."]


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
@pytest.mark.parametrize("style", ["tabs", "three-spaces", "compact", "crlf"])
def test_indentation_styles_are_kept(spec, style):
    text = dict(variants(spec.read_text()))[style]
    plan = plan_rlimits(text, MEMLOCK_UNLIMITED)
    after = plan["text"]
    assert json.loads(after)["process"]["rlimits"][-1]["type"] == "RLIMIT_MEMLOCK"
    # Re-serialising the result in the detected style reproduces it exactly: one consistent style.
    assert restyle(after, detect_style(text), "result") == after
    assert detect_style(after) == detect_style(text)
    if style == "tabs":
        assert '\n\t\t"rlimits": [\n\t\t\t{\n\t\t\t\t"type": "RLIMIT_NOFILE",' in after
    if style == "compact":
        assert "\n" not in after
    if style == "crlf":
        assert "\n" not in after.replace("\r\n", "")


def test_detect_style():
    assert detect_style(DEBIAN.read_text())["indent"] == "    "
    assert detect_style(KIND.read_text())["indent"] == "  "
    assert detect_style('{"a":1,"b":2}') == {
        "indent": None, "key_sep": ":", "item_sep": ",", "newline": "\n", "final_newline": False,
    }
    assert detect_style('{"a": 1, "b": 2}\n')["item_sep"] == ", "


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{\n  "ociVersion": "1.0.2"\n}\n',
         '{\n  "ociVersion": "1.0.2",\n  "process": {\n    "rlimits": [\n      {\n        "type": "RLIMIT_MEMLOCK",\n'
         '        "hard": 18446744073709551615,\n        "soft": 18446744073709551615\n      }\n    ]\n  }\n}\n'),
        ('{\n\t"process": {}\n}',
         '{\n\t"process": {\n\t\t"rlimits": [\n\t\t\t{\n\t\t\t\t"type": "RLIMIT_MEMLOCK",\n'
         '\t\t\t\t"hard": 18446744073709551615,\n\t\t\t\t"soft": 18446744073709551615\n\t\t\t}\n\t\t]\n\t}\n}'),
        ('{"process":{"args":["sh"]}}',
         '{"process":{"args":["sh"],"rlimits":[{"type":"RLIMIT_MEMLOCK","hard":18446744073709551615,'
         '"soft":18446744073709551615}]}}'),
        ('{}', '{"process":{"rlimits":[{"type":"RLIMIT_MEMLOCK","hard":18446744073709551615,'
               '"soft":18446744073709551615}]}}'),
        ('{"process": null, "rlimits": null}',
         '{"process": {"rlimits": [{"type": "RLIMIT_MEMLOCK", "hard": 18446744073709551615, '
         '"soft": 18446744073709551615}]}, "rlimits": null}'),
        ('{\n    "process": {\n        "rlimits": null\n    }\n}\n',
         '{\n    "process": {\n        "rlimits": [\n            {\n                "type": "RLIMIT_MEMLOCK",\n'
         '                "hard": 18446744073709551615,\n                "soft": 18446744073709551615\n'
         '            }\n        ]\n    }\n}\n'),
    ],
    ids=["no-process", "empty-process-tabs", "compact-no-rlimits", "empty-object", "null-process", "null-rlimits"],
)
def test_process_or_rlimits_missing(text, expected):
    plan = plan_rlimits(text, MEMLOCK_UNLIMITED)
    assert plan["text"] == expected


def test_escapes_and_numbers_elsewhere_stay_verbatim():
    text = '{\n  "annotations": {"a": "\\u003cb\\u003e", "n": 1.50},\n  "process": {\n    "rlimits": []\n  }\n}\n'
    after = plan_rlimits(text, MEMLOCK_UNLIMITED)["text"]
    assert after.startswith('{\n  "annotations": {"a": "\\u003cb\\u003e", "n": 1.50},\n  "process": {\n    "rlimits": [\n')


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "spec.json is empty; expected an OCI runtime spec (a JSON object)."),
        ("  \n", "spec.json is empty; expected an OCI runtime spec (a JSON object)."),
        ("[]", "spec.json holds a JSON array, not an object; an OCI runtime spec is a JSON object."),
        ('"spec"', "spec.json holds a JSON string, not an object; an OCI runtime spec is a JSON object."),
        ("null", "spec.json holds a JSON null, not an object; an OCI runtime spec is a JSON object."),
        ("42", "spec.json holds a JSON number, not an object; an OCI runtime spec is a JSON object."),
        ('{"process": []}', "spec.json: process is a JSON array, expected an object."),
        ('{"process": {"rlimits": {}}}',
         "spec.json: process.rlimits is a JSON object, expected an array of {type, hard, soft} objects."),
        ('{"process": {"rlimits": [{"hard": 1}]}}',
         "spec.json: process.rlimits[0] is not an object with a string type; expected {type, hard, soft}."),
    ],
)
def test_bad_specs(text, message):
    with pytest.raises(SpecError) as error:
        plan_rlimits(text, MEMLOCK_UNLIMITED, source="spec.json")
    assert str(error.value) == message


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_truncated_json_names_the_file_line_and_column(spec):
    text = spec.read_text()
    truncated = text[: len(text) // 2]
    with pytest.raises(SpecError) as error:
        load_spec(truncated, "/etc/containerd/base-runtime-spec.json")
    message = str(error.value)
    assert message.startswith("/etc/containerd/base-runtime-spec.json is not valid JSON: ")
    assert " at line " in message and ", column " in message and message.endswith(".")


def test_plan_spec_creates_from_ctr_output():
    ctr = DEBIAN.read_text()
    plan = plan_spec(None, ctr, MEMLOCK_UNLIMITED, 1048576, False, "/etc/containerd/spec.json")
    assert plan["created"] and plan["changed"] and not plan["regenerated"]
    assert plan["nofile_raised"] == {"soft": 1024, "hard": 1024}
    data = json.loads(plan["text"])
    assert data["process"]["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
        {"type": "RLIMIT_MEMLOCK", "hard": RLIM_INFINITY, "soft": RLIM_INFINITY},
    ]
    # The whole default spec is there: the file replaces containerd's default, it is not merged.
    assert {key: value for key, value in data.items() if key != "process"} == {
        key: value for key, value in json.loads(ctr).items() if key != "process"
    }


def test_plan_spec_regenerate_keeps_the_old_style_and_shows_what_containerd_changed():
    old = plan_rlimits(KIND.read_text(), MEMLOCK_UNLIMITED)["text"]
    plan = plan_spec(old, DEBIAN.read_text(), MEMLOCK_UNLIMITED, 1048576, True, "spec.json")
    assert plan["regenerated"] and plan["changed"] and not plan["created"]
    assert detect_style(plan["text"])["indent"] == "  "
    removed = [line for line in changed_lines(old, plan["text"]) if line.startswith("-")]
    added = [line for line in changed_lines(old, plan["text"]) if line.startswith("+")]
    # Debian's containerd 1.6.20 has no inheritable capabilities; kind's extra mounts and hook go away.
    assert '-      "inheritable": [' in removed
    assert '-      "source": "/kind/product_name",' in removed
    assert '-  "hooks": {' in removed
    assert added == []
    assert json.loads(plan["text"])["process"]["rlimits"] == json.loads(old)["process"]["rlimits"]


def test_plan_spec_regenerate_without_changes_is_unchanged():
    first = plan_spec(None, DEBIAN.read_text(), MEMLOCK_UNLIMITED, 1048576, False, "spec.json")
    again = plan_spec(first["text"], DEBIAN.read_text(), MEMLOCK_UNLIMITED, 1048576, True, "spec.json")
    assert again["regenerated"] and not again["changed"]
    assert again["nofile_raised"] == {"soft": 1024, "hard": 1024}


def test_plan_spec_errors_name_the_source():
    with pytest.raises(SpecError) as error:
        plan_spec('{"process": ', DEBIAN.read_text(), [], 0, True, "/etc/containerd/spec.json")
    assert str(error.value).startswith("/etc/containerd/spec.json is not valid JSON: ")
    with pytest.raises(SpecError) as error:
        plan_spec(None, "ctr: not found", [], 0, False, "spec.json")
    assert str(error.value).startswith(CTR_SOURCE + " is not valid JSON: ")
