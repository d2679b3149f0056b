"""The rdma.node.parse_dkms_status filter: every real sample, the input types Ansible hands it, clear errors."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.dkms import FilterModule, parse_dkms_status
from ansible_collections.rdma.node.plugins.module_utils._dkms import STATE_RANK, parse_status
from testpaths import FIXTURES

SAMPLES = sorted((FIXTURES / "dkms").glob("*.txt"))
# The node's own output is one run of dkms status; a paste of several runs is read run by run (test_dkms.py).
ONE_RUN = [sample for sample in SAMPLES if sample.read_text().count("dkms status") <= 1]


def test_filter_is_registered():
    assert FilterModule().filters() == {"parse_dkms_status": parse_dkms_status}


def test_only_the_known_pastes_of_several_runs_are_left_to_test_dkms():
    assert [sample.name for sample in SAMPLES if sample not in ONE_RUN] == [
        "dkms3_debian13_two_runs_uninstall_remove_add_commands_without_prompts_r8125_issue85.txt",
        "dkms3_debian_root_prompt_three_runs_last_filtered_empty_xpad_xone_pr59.txt",
        "dkms3_status_error_then_commands_then_a_second_status_zfs_issue15336_comment.txt"]


@pytest.mark.parametrize("sample", ONE_RUN, ids=lambda p: p.name)
def test_every_sample_parses_like_the_module_sees_it(sample):
    text = sample.read_text()
    result = parse_dkms_status(text)
    items = parse_status(text, strict=False)
    assert result["modules"] == [item for item in items if item["name"]]
    assert [e["message"] for e in result["errors"]] == [item["message"] for item in items if item["state"] == "error"]
    assert all(item["name"] and item["state"] in STATE_RANK for item in result["modules"])


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_stdout_lines_give_the_same_result(sample):
    text = sample.read_text()
    assert parse_dkms_status(text.splitlines()) == parse_dkms_status(text)


def test_empty_output_is_an_empty_result():
    empty = {"modules": [], "errors": [], "warnings": [], "notes": []}
    assert parse_dkms_status("") == empty
    assert parse_dkms_status([]) == empty


def test_error_lines_are_apart_from_the_modules():
    result = parse_dkms_status("Error! Could not locate dkms.conf file.\nfoo/1.0: added")
    assert [(m["name"], m["state"]) for m in result["modules"]] == [("foo", "added")]
    assert result["errors"] == [{"line": 1, "message": "Could not locate dkms.conf file."}]


def test_lines_that_are_not_dkms_output_are_notes_unless_strict():
    text = "spl, 0.6.4, 3.13.0-48-generic, x86_64: installed\nPID TTY TIME CMD\n1 ? 00:00:01 init\n"
    result = parse_dkms_status(text)
    assert [(m["name"], m["state"]) for m in result["modules"]] == [("spl", "installed")]
    assert result["notes"] == [
        {"line": 2, "text": "PID TTY TIME CMD", "reason": "not dkms status output"},
        {"line": 3, "text": "1 ? 00:00:01 init", "reason": "not dkms status output"},
    ]
    with pytest.raises(AnsibleFilterError) as caught:
        parse_dkms_status(text, strict=True)
    assert caught.value.message == "rdma.node.parse_dkms_status: line 2 is not dkms status output: 'PID TTY TIME CMD'"


def test_text_with_nothing_of_dkms_is_refused():
    with pytest.raises(AnsibleFilterError) as caught:
        parse_dkms_status("PID TTY TIME CMD\n1 ? 00:00:01 init\n")
    assert caught.value.message == (
        "rdma.node.parse_dkms_status: nothing in the text is dkms status output (line 1: 'PID TTY TIME CMD')"
    )
    with pytest.raises(AnsibleFilterError) as caught:
        parse_dkms_status("", strict="no")
    assert caught.value.message == "rdma.node.parse_dkms_status: strict must be true or false, not 'no'"


@pytest.mark.parametrize("value, kind", [(None, "NoneType"), (3, "int"), ({"stdout": ""}, "dict"), (["ok", 1], "list"), (b"x", "bytes")])
def test_wrong_input_types_are_named(value, kind):
    with pytest.raises(AnsibleFilterError) as caught:
        parse_dkms_status(value)
    assert caught.value.message == (
        "rdma.node.parse_dkms_status expects the text of dkms status, a string or a list of lines "
        "(such as stdout_lines), not %s" % kind
    )
