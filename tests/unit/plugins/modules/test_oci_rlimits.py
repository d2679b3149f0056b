"""rdma.node.oci_rlimits run for real (its main()) over copies of the fixture specs."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils._rlimits import RLIM_INFINITY
from ansible_collections.rdma.node.plugins.modules import oci_rlimits

SPEC_DIR = Path(__file__).resolve().parents[3] / "fixtures" / "containerd" / "oci_spec"
SPECS = sorted(SPEC_DIR.glob("*.json"))
MEMLOCK = [{"type": "RLIMIT_MEMLOCK", "soft": "unlimited", "hard": "unlimited"}]


@pytest.fixture(params=SPECS, ids=lambda p: p.name)
def spec(request, tmp_path):
    target = tmp_path / "base-runtime-spec.json"
    shutil.copyfile(request.param, target)
    return target


def test_four_steps_check_apply_again_diff(run_module, spec):
    original = spec.read_bytes()

    # 1. check mode: reports the change, writes nothing
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK}, check_mode=True)
    assert result["changed"] is True and not result.failed
    assert spec.read_bytes() == original
    assert result["nofile_raised"] == {"soft": 1024, "hard": 1024}
    assert result["created"] is False and result["regenerated"] is False
    planned = result["rlimits"]

    # 2. apply
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK})
    assert result["changed"] is True
    written = json.loads(spec.read_text())
    assert written["process"]["rlimits"] == planned == result["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1048576},
        {"type": "RLIMIT_MEMLOCK", "hard": RLIM_INFINITY, "soft": RLIM_INFINITY},
    ]
    assert '"hard": 18446744073709551615,' in spec.read_text()
    assert "RLIMIT_NOFILE raised from soft 1024/hard 1024 to soft 1048576/hard 1048576" in result["msg"]
    assert "backup_file" not in result
    applied = spec.read_bytes()

    # 3. again: nothing to do
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK})
    assert result["changed"] is False
    assert result["nofile_raised"] is False
    assert spec.read_bytes() == applied

    # 4. diff shows before/after of a further change (memlock down to 4 MiB)
    lower = [{"type": "RLIMIT_MEMLOCK", "soft": "4M", "hard": "4M"}]
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": lower}, diff=True)
    assert result["changed"] is True
    diff = result["diff"]
    assert diff["before_header"] == diff["after_header"] == str(spec)
    assert diff["before"] == applied.decode()
    assert diff["after"] == spec.read_text()
    assert '"hard": 18446744073709551615,' in diff["before"] and '"hard": 4194304,' in diff["after"]


def test_diff_in_check_mode_writes_nothing(run_module, spec):
    original = spec.read_bytes()
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK}, check_mode=True, diff=True)
    assert result["changed"] is True
    assert result["diff"]["before"] == original.decode()
    assert '"type": "RLIMIT_MEMLOCK"' in result["diff"]["after"]
    assert spec.read_bytes() == original


def test_user_managed_nofile_and_absent(run_module, spec):
    rlimits = MEMLOCK + [{"type": "NOFILE", "soft": "16K", "hard": "16K"}, {"type": "RLIMIT_CORE", "state": "absent"}]
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": rlimits})
    assert result["changed"] is True and result["nofile_raised"] is False
    assert json.loads(spec.read_text())["process"]["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "hard": 16384, "soft": 16384},
        {"type": "RLIMIT_MEMLOCK", "hard": RLIM_INFINITY, "soft": RLIM_INFINITY},
    ]
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": [{"type": "MEMLOCK", "state": "absent"}],
                                      "nofile_floor": 0})
    assert result["changed"] is True
    assert json.loads(spec.read_text())["process"]["rlimits"] == [
        {"type": "RLIMIT_NOFILE", "hard": 16384, "soft": 16384},
    ]


def test_floor_only_run_without_rlimits(run_module, spec):
    result = run_module(oci_rlimits, {"path": str(spec)})
    assert result["changed"] is True and result["nofile_raised"] == {"soft": 1024, "hard": 1024}
    result = run_module(oci_rlimits, {"path": str(spec), "nofile_floor": 0})
    assert result["changed"] is False


def test_backup_keeps_the_old_file(run_module, spec):
    original = spec.read_bytes()
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "backup": True})
    assert result["changed"] is True
    backup = Path(result["backup_file"])
    assert backup.parent == spec.parent and backup.read_bytes() == original
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "backup": True})
    assert result["changed"] is False and "backup_file" not in result


def test_mode_is_applied_and_kept(run_module, spec):
    os.chmod(spec, 0o640)
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK})
    assert result["changed"] is True
    assert stat.S_IMODE(os.stat(spec).st_mode) == 0o640
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "mode": "0600"})
    assert result["changed"] is True
    assert stat.S_IMODE(os.stat(spec).st_mode) == 0o600
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "mode": "0600"})
    assert result["changed"] is False


def test_no_temp_files_left_behind(run_module, spec):
    run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK})
    assert sorted(p.name for p in spec.parent.iterdir()) == [spec.name]


# --------------------------------------------------------------------------------------------------
# Bad input: one clear sentence, the file byte-identical afterwards
# --------------------------------------------------------------------------------------------------

BAD_RLIMITS = [
    ([{"type": "RLIMIT_MEMLOCK", "soft": "8M", "hard": "4M"}],
     "rlimits[0] (RLIMIT_MEMLOCK) has soft 8388608 above hard 4194304; the soft limit must not exceed the hard limit."),
    ([{"type": "RLIMIT_MEMLOK", "soft": 1}],
     "rlimits[0].type 'RLIMIT_MEMLOK' is not a Linux resource limit; expected one of RLIMIT_CPU, RLIMIT_FSIZE, "
     "RLIMIT_DATA, RLIMIT_STACK, RLIMIT_CORE, RLIMIT_RSS, RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_MEMLOCK, RLIMIT_AS, "
     "RLIMIT_LOCKS, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, RLIMIT_NICE, RLIMIT_RTPRIO, RLIMIT_RTTIME."),
    ([{"type": "RLIMIT_MEMLOCK", "soft": -1, "hard": 4096}], "rlimits[0].soft must not be negative, got -1."),
    ([{"type": "RLIMIT_MEMLOCK", "soft": "lots"}],
     "rlimits[0].soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got 'lots'."),
    ([{"type": "RLIMIT_MEMLOCK"}], "rlimits[0] (RLIMIT_MEMLOCK) needs a soft or a hard value."),
    ([{"type": "MEMLOCK", "soft": 1}, {"type": "memlock", "soft": 2}],
     "rlimits[1] repeats RLIMIT_MEMLOCK, already given in rlimits[0]; list each type once."),
    ({"type": "RLIMIT_MEMLOCK", "soft": 1},
     "argument 'rlimits' is of type dict and we were unable to convert to list: "
     "<class 'dict'> cannot be converted to a list"),
]


@pytest.mark.parametrize("rlimits, message", BAD_RLIMITS)
def test_bad_rlimits(run_module, spec, rlimits, message):
    original = spec.read_bytes()
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": rlimits})
    assert result.failed
    assert result["msg"] == message
    assert spec.read_bytes() == original


@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda text: text[: len(text) // 2], "is not valid JSON: "),
        (lambda text: text[:-3], "is not valid JSON: "),
        (lambda text: "[" + text + "]", "holds a JSON array, not an object; an OCI runtime spec is a JSON object."),
        (lambda text: "", "is empty; expected an OCI runtime spec (a JSON object)."),
        (lambda text: json.dumps({"process": {"rlimits": "RLIMIT_MEMLOCK=unlimited"}}),
         ": process.rlimits is a JSON string, expected an array of {type, hard, soft} objects."),
    ],
    ids=["truncated-half", "truncated-end", "array", "empty", "rlimits-not-array"],
)
def test_bad_spec_files(run_module, spec, mangle, message):
    spec.write_text(mangle(spec.read_text()))
    original = spec.read_bytes()
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "regenerate": False})
    assert result.failed
    assert result["msg"].startswith(str(spec))
    assert message in result["msg"]
    assert result["msg"].endswith(".")
    assert spec.read_bytes() == original
    if "not valid JSON" in message or "not an object" in message or "empty" in message:
        # regenerate does not paper over a file that is not a JSON object either
        result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "regenerate": True})
        assert result.failed and result["msg"].startswith(str(spec))
        assert spec.read_bytes() == original


def test_truncated_json_message_is_exact(run_module, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text('{\n    "ociVersion": "1.0.2-dev",\n    "process": {\n        "rlimits": [\n')
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK})
    assert result["msg"] == "%s is not valid JSON: Expecting value at line 5, column 1." % spec


@pytest.mark.parametrize(
    "element, message",
    [
        # ansible-core's argument validation answers these two before the module runs.
        ("RLIMIT_MEMLOCK", "dictionary requested, could not parse JSON or key=value"),
        ("RLIMIT_MEMLOCK=unlimited", "missing required arguments: type found in rlimits"),
    ],
)
def test_rlimits_elements_must_be_dicts(run_module, spec, element, message):
    original = spec.read_bytes()
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": [element]})
    assert result.failed
    assert result["msg"] == message
    assert spec.read_bytes() == original


def test_path_is_a_directory(run_module, tmp_path):
    result = run_module(oci_rlimits, {"path": str(tmp_path), "rlimits": MEMLOCK})
    assert result["msg"] == "%s is a directory, not a regular file; expected an OCI runtime spec (JSON)." % tmp_path


def test_negative_floor(run_module, spec):
    result = run_module(oci_rlimits, {"path": str(spec), "nofile_floor": -1})
    assert result["msg"] == "nofile_floor must be 0 (off) or a positive number of files, got -1."


def test_missing_file_without_ctr(run_module, tmp_path, monkeypatch):
    """A node without containerd's CLI: nothing to start the full default spec from."""
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    target = tmp_path / "spec.json"
    result = run_module(oci_rlimits, {"path": str(target), "rlimits": MEMLOCK})
    assert result.failed
    assert result["msg"] == (
        "%s does not exist and creating it needs the default spec from `ctr oci spec`, "
        "but ctr (containerd's CLI) is not installed." % target
    )
    assert not target.exists()


def test_regenerate_without_ctr(run_module, spec, monkeypatch, tmp_path):
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    original = spec.read_bytes()
    result = run_module(oci_rlimits, {"path": str(spec), "rlimits": MEMLOCK, "regenerate": True})
    assert result["msg"] == (
        "regenerate needs the default spec from `ctr oci spec`, but ctr (containerd's CLI) is not installed."
    )
    assert spec.read_bytes() == original


def test_missing_directory(run_module, tmp_path):
    target = tmp_path / "no-such-dir" / "spec.json"
    result = run_module(oci_rlimits, {"path": str(target), "rlimits": MEMLOCK})
    assert result.failed
    assert result["msg"] == "Cannot create %s: the directory %s does not exist." % (target, target.parent)
    assert not target.parent.exists()
