"""The rdma.node.rlimit_value filter, through its FilterModule and through a real template."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdma.node.plugins.filter import rlimits
from ansible_collections.rdma.node.plugins.filter.rlimits import FilterModule

rlimit_value = FilterModule().filters()["rlimit_value"]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("unlimited", 18446744073709551615),
        ("infinity", 18446744073709551615),
        ("64K", 65536),
        ("8M", 8388608),
        ("4M", 4194304),
        ("1G", 1073741824),
        ("2T", 2199023255552),
        (4096, 4096),
        ("4096", 4096),
        (0, 0),
    ],
)
def test_rlimit_value(value, expected):
    assert rlimit_value(value) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        ("-1", "rlimit_value input must not be negative, got '-1'."),
        (-5, "rlimit_value input must not be negative, got -5."),
        ("8MB", "rlimit_value input must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), "
                "got '8MB'."),
        (True, "rlimit_value input must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got True."),
        (2.5, "rlimit_value input must be a whole number, got the fraction 2.5."),
        ("16E", "rlimit_value input '16E' is larger than 18446744073709551615 (unlimited), the largest value an "
                "rlimit can hold."),
    ],
)
def test_rlimit_value_errors(value, message):
    with pytest.raises(AnsibleFilterError) as error:
        rlimit_value(value)
    assert str(error.value) == message


def test_filter_by_fqcn_in_a_real_ansible_run(tmp_path):
    """``ansible localhost -m debug`` resolves rdma.node.rlimit_value from this tree and gets the integers."""
    collections_root = Path(rlimits.__file__).parents[5]
    assert (collections_root / "ansible_collections/rdma/node/plugins/filter/rlimits.py").exists()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path), ANSIBLE_HOME=str(tmp_path), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    expression = "{{ ['unlimited' | rdma.node.rlimit_value, '64K' | rdma.node.rlimit_value, 4096 | rdma.node.rlimit_value] }}"
    ansible = Path(sys.executable).with_name("ansible")
    proc = subprocess.run(
        [str(ansible), "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
         "-m", "ansible.builtin.debug", "-a", "msg=" + expression],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["msg"] == [18446744073709551615, 65536, 4096]
    proc = subprocess.run(
        [str(ansible), "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
         "-m", "ansible.builtin.debug", "-a", "msg={{ '-1' | rdma.node.rlimit_value }}"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode != 0
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert "rlimit_value input must not be negative, got '-1'." in result["msg"]
