"""The rdma.node.parse_dkms_status filter: every real sample, the input types Ansible hands it, clear errors."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter.dkms import FilterModule, parse_dkms_status
from ansible_collections.rdma.node.plugins.module_utils._dkms import parse_status
from testpaths import FIXTURES

SAMPLES = sorted((FIXTURES / "dkms").glob("*.txt"))


def test_filter_is_registered():
    assert FilterModule().filters() == {"parse_dkms_status": parse_dkms_status}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_sample_parses_like_the_module_sees_it(sample):
    text = sample.read_text()
    items = parse_dkms_status(text)
    assert items and items == parse_status(text)
    assert all(item["name"] and item["state"] in ("installed", "built", "added") for item in items)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_stdout_lines_give_the_same_result(sample):
    text = sample.read_text()
    assert parse_dkms_status(text.splitlines()) == parse_dkms_status(text)


def test_empty_output_is_an_empty_list():
    assert parse_dkms_status("") == []
    assert parse_dkms_status([]) == []


def test_error_lines_do_not_fail_the_filter():
    items = parse_dkms_status("Error! Could not locate dkms.conf file.\nfoo/1.0: added")
    assert [(i["state"], i["message"]) for i in items] == [("error", "Could not locate dkms.conf file."), ("added", None)]


def test_text_that_is_not_dkms_output_quotes_the_first_bad_line():
    with pytest.raises(AnsibleFilterError) as caught:
        parse_dkms_status("spl, 0.6.4, 3.13.0-48-generic, x86_64: installed\nPID TTY TIME CMD\n1 ? 00:00:01 init\n")
    assert caught.value.message == (
        "rdma.node.parse_dkms_status: this is not dkms status output: cannot place the line 'PID TTY TIME CMD'"
    )


@pytest.mark.parametrize("value, kind", [(None, "NoneType"), (3, "int"), ({"stdout": ""}, "dict"), (["ok", 1], "list"), (b"x", "bytes")])
def test_wrong_input_types_are_named(value, kind):
    with pytest.raises(AnsibleFilterError) as caught:
        parse_dkms_status(value)
    assert caught.value.message == (
        "rdma.node.parse_dkms_status expects the text of dkms status, a string or a list of lines "
        "(such as stdout_lines), not %s" % kind
    )
