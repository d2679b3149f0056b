"""PCIe AER counters: the parser on real aer_dev_* files (prometheus/procfs fixtures, the kernel's
ABI documentation with the long names of 4.19), and the reader on a PCI tree with bridges."""

from __future__ import annotations

import os

import pytest
from pci_tree import PciTree, aer_text

from ansible_collections.rdma.node.plugins.module_utils._ib_collect import read_ib_facts
from ansible_collections.rdma.node.plugins.module_utils._pcie_aer import AerTextError, parse_aer_counters, read_aer, totals_sample
from testpaths import FIXTURES

AER = FIXTURES / "pcie" / "aer"
HCA_CHAIN = ["0000:3a:00.0", "0000:3b:00.0", "0000:3c:08.0", "0000:3d:00.0"]
FACTS = {"devices": {"mlx5_0": {"numa_node": 0}}, "ports": [{"device": "mlx5_0", "port": 1, "link_layer": "InfiniBand"}]}


def test_procfs_fixture_with_counts_and_a_mislabeled_total():
    correctable = parse_aer_counters((AER / "procfs_0000-00-1f.6_aer_dev_correctable").read_text(), "correctable")
    assert correctable["counts"] == {"RxErr": 1, "BadTLP": 2, "BadDLLP": 3, "Rollover": 4, "Timeout": 5, "NonFatalErr": 6,
                                     "CorrIntErr": 7, "HeaderOF": 8}
    assert (correctable["total"], correctable["notes"]) == (9, [])  # the total as printed, not the sum (36)
    nonfatal = parse_aer_counters((AER / "procfs_0000-00-1f.6_aer_dev_nonfatal").read_text(), "nonfatal")
    assert nonfatal["counts"]["PoisonTLPBlocked"] == 47 and len(nonfatal["counts"]) == 18
    # procfs' nonfatal file ends with TOTAL_ERR_FATAL: kept as its total, and said.
    assert nonfatal["total"] == 48
    assert nonfatal["notes"] == ["the total line says TOTAL_ERR_FATAL in the aer_dev_nonfatal file; read as its total"]


def test_kernel_doc_long_names_behind_a_prompt_get_the_short_names():
    correctable = parse_aer_counters((AER / "kernel-doc-4.19_long-names_prompt_aer_dev_correctable.txt").read_text(), "correctable")
    assert correctable["counts"] == {"RxErr": 2, "BadTLP": 0, "BadDLLP": 0, "Rollover": 0, "Timeout": 0, "NonFatalErr": 0,
                                     "CorrIntErr": 0, "HeaderOF": 0}
    assert correctable["total"] == 2
    fatal = parse_aer_counters((AER / "kernel-doc-4.19_long-names_prompt_aer_dev_fatal.txt").read_text(), "fatal")
    current = parse_aer_counters((AER / "procfs_0000-a2-00.0_aer_dev_fatal").read_text(), "fatal")
    # 4.19 had no PoisonTLPBlocked; every type it did have is named as the current kernels name it.
    assert set(fatal["counts"]) == set(current["counts"]) - {"PoisonTLPBlocked"}


def test_a_user_prompt_and_the_paths_grep_prints_before_each_line():
    parsed = parse_aer_counters((AER / "smc_45_user_prompt_grep_dot_paths_before_aer_dev_correctable.txt").read_text(), "correctable")
    assert (parsed["counts"]["RxErr"], parsed["total"], parsed["notes"]) == (0, 0, [])
    assert parse_aer_counters("[root@node01 ~]# cat aer_dev_fatal\nDLP 1\nTOTAL_ERR_FATAL 1\n", "fatal")["total"] == 1
    # grep over a directory mixes several files: one file's text is expected, and the sentence names both.
    with pytest.raises(AerTextError, match=r"^line 2 is from /d/aer_dev_fatal, line before from /d/aer_dev_correctable: the text holds"):
        parse_aer_counters("/d/aer_dev_correctable:RxErr 0\n/d/aer_dev_fatal:DLP 0\n")


def test_a_files_lines_joined_by_blanks_are_read_pair_by_pair_not_as_one_name():
    """What ``echo $(cat aer_dev_correctable)`` prints: the error types were one name with digits in it."""
    parsed = parse_aer_counters("RxErr 5 BadTLP 0 BadDLLP 2 TOTAL_ERR_COR 7", "correctable")
    assert parsed == {"counts": {"RxErr": 5, "BadTLP": 0, "BadDLLP": 2}, "total": 7, "notes": []}


@pytest.mark.parametrize("kind, types", [("correctable", 8), ("fatal", 18)])
def test_a_files_lines_glued_without_breaks_are_read_pair_by_pair(kind, types):
    """A umockdev record kept the file as "RxErr 0BadTLP 0BadDLLP 0...TOTAL_ERR_COR 0": never one error type named
    "RxErr 0BadTLP 0...HeaderOF"."""
    parsed = parse_aer_counters((AER / ("fwupd_umockdev_record_wd_sn740_aer_dev_%s_lines_glued.txt" % kind)).read_text(), kind)
    assert (len(parsed["counts"]), set(parsed["counts"].values()), parsed["total"]) == (types, {0}, 0)
    assert all(" " not in name for name in parsed["counts"])
    assert parsed["notes"] == ["line 1 holds the file's lines glued together (their line breaks lost): read pair by pair"]
    assert parse_aer_counters("RxErr 3BadTLP 12TOTAL_ERR_COR 15", "correctable")["counts"] == {"RxErr": 3, "BadTLP": 12}


def test_pasted_with_crlf_and_indentation():
    text = "\r\n".join("    " + line for line in (AER / "procfs_0000-00-1f.6_aer_dev_fatal").read_text().splitlines())
    assert parse_aer_counters(text, "fatal")["total"] == 28


@pytest.mark.parametrize("text, message", [
    ("", r"^no '<error type> <count>' line: this is not the text of an aer_dev_\* file$"),
    ("RxErr 1\nBadTLP two\n", r"^line 2 is not '<error type> <count>' as in an aer_dev_\* file: 'BadTLP two'$"),
    ("<html><body>404</body></html>", r"^line 1 is not '<error type> <count>'"),
])
def test_garbage_is_one_sentence(text, message):
    with pytest.raises(AerTextError, match=message):
        parse_aer_counters(text)


def test_an_hca_on_the_root_bus_is_an_endpoint_not_a_root_port(tmp_path):
    # A VM's passed-through HCA sits right under the host bridge (pci0000:00/0000:00:04.0): no bridge above it.
    quiet = {"correctable": aer_text("correctable"), "nonfatal": aer_text("nonfatal"), "fatal": aer_text("fatal")}
    PciTree(tmp_path).hca("mlx5_0", ["0000:00:04.0"], aer=quiet)
    functions = read_aer(str(tmp_path), FACTS, now=1.0)["functions"]
    assert list(functions) == ["0000:00:04.0"]
    assert (functions["0000:00:04.0"]["role"], functions["0000:00:04.0"]["root_port"]) == ("hca", False)


def test_reader_gives_the_hca_and_every_bridge_on_its_path(tmp_path):
    tree = PciTree(tmp_path)
    tree.hca("mlx5_0", HCA_CHAIN, aer={"correctable": aer_text("correctable"), "nonfatal": aer_text("nonfatal"), "fatal": aer_text("fatal")})
    tree.bridge_files(HCA_CHAIN[:3], aer={"correctable": aer_text("correctable", RxErr=5, BadDLLP=2),
                                          "nonfatal": aer_text("nonfatal"), "fatal": aer_text("fatal")})
    tree.bridge_files(HCA_CHAIN[:1], aer={"correctable": (AER / "procfs_0000-00-1f.6_aer_dev_correctable").read_text()})
    aer = read_aer(str(tmp_path), FACTS, now=100.0)
    assert (aer["available"], aer["time"]) == (True, 100.0)
    functions = aer["functions"]
    assert sorted(functions) == sorted(HCA_CHAIN)
    assert (functions["0000:3d:00.0"]["role"], functions["0000:3d:00.0"]["device"]) == ("hca", "mlx5_0")
    assert functions["0000:3c:08.0"]["correctable"]["total"] == 7 and functions["0000:3c:08.0"]["correctable"]["BadDLLP"] == 2
    root = functions["0000:3a:00.0"]
    assert (root["role"], root["root_port"], root["devices_below"]) == ("bridge", True, ["mlx5_0"])
    assert (root["correctable"]["total"], root["nonfatal"], root["fatal"]) == (9, None, None)
    # Only the types that counted are kept; the total is the kernel's. A quiet function is its totals.
    assert {kind: functions["0000:3d:00.0"][kind] for kind in ("correctable", "nonfatal", "fatal")} == {
        "correctable": {"total": 0}, "nonfatal": {"total": 0}, "fatal": {"total": 0}}
    assert root["correctable"] == {"RxErr": 1, "BadTLP": 2, "BadDLLP": 3, "Rollover": 4, "Timeout": 5, "NonFatalErr": 6,
                                   "CorrIntErr": 7, "HeaderOF": 8, "total": 9}
    # The switch's upstream port has no AER files: nothing read, nothing claimed.
    assert {k: functions["0000:3b:00.0"][k] for k in ("correctable", "nonfatal", "fatal", "unreadable")} == {
        "correctable": None, "nonfatal": None, "fatal": None, "unreadable": {}}


def test_no_aer_anywhere_says_why(tmp_path):
    PciTree(tmp_path).hca("mlx5_0", HCA_CHAIN)
    aer = read_aer(str(tmp_path), FACTS)
    assert aer["available"] is False
    assert aer["reason"].startswith("no AER statistics in sysfs: the kernel is older than 4.19")


def test_a_fifo_or_garbage_is_unreadable_not_a_crash(tmp_path):
    path = PciTree(tmp_path).hca("mlx5_0", HCA_CHAIN, aer={"correctable": "garbage here\n"})
    os.mkfifo(os.path.join(path, "aer_dev_fatal"))
    aer = read_aer(str(tmp_path), FACTS)
    unreadable = aer["functions"]["0000:3d:00.0"]["unreadable"]
    assert unreadable["correctable"].endswith("aer_dev_correctable: line 1 is not '<error type> <count>' as in an aer_dev_* file: 'garbage here'")
    assert "is a FIFO (named pipe), not a regular file" in unreadable["fatal"]
    assert aer["available"] is False and "FIFO" in aer["reason"]


def test_no_rdma_device_on_a_pci_function(tmp_path):
    aer = read_aer(str(tmp_path), {"devices": {"mlx5_0": {}}})
    assert aer == {"available": False, "reason": "no RDMA device on a PCI function was found under %s" % tmp_path,
                   "time": None, "functions": {}}


def _aer_node(root, nonfatal):
    tree = PciTree(root)
    tree.hca("mlx5_0", HCA_CHAIN, aer={"correctable": aer_text("correctable"), "nonfatal": aer_text("nonfatal", CmpltTO=nonfatal),
                                       "fatal": aer_text("fatal")})
    return str(root)


def test_a_call_that_samples_twice_reads_aer_again_with_the_first_read_as_its_earlier_sample(tmp_path):
    """With counters_interval, ib_facts reads the AER counters again from the counters' second tree: the
    rise within the one call is in the facts (aer.earlier), as the pcie_aer check judges it."""
    first, later = _aer_node(tmp_path / "first", 0), _aer_node(tmp_path / "later", 2)
    facts, _warnings = read_ib_facts({"sysfs_root": first, "gather_subset": ["aer", "counters"], "counters_interval": 0.01,
                                      "counters_resample_root": later})
    aer = facts["aer"]
    assert aer["functions"]["0000:3d:00.0"]["nonfatal"]["total"] == 2  # the later read
    assert aer["earlier"]["functions"]["0000:3d:00.0"] == {"correctable": 0, "nonfatal": 0, "fatal": 0}
    assert aer["earlier"]["time"] < aer["time"]
    # One read without the interval: no earlier sample in the facts (the previous run's, cached, is the check's).
    once, _warnings = read_ib_facts({"sysfs_root": later, "gather_subset": ["aer", "counters"]})
    assert "earlier" not in once["aer"]


def test_totals_sample_keeps_the_printed_total_or_the_sum():
    aer = {"time": 5.0, "functions": {"0000:3d:00.0": {"fatal": {"SDES": 1, "DLP": 2, "total": None},
                                                       "nonfatal": {"CmpltTO": 4, "total": 3}, "correctable": None}}}
    assert totals_sample(aer) == {"time": 5.0, "functions": {"0000:3d:00.0": {"fatal": 3, "nonfatal": 3}}}
    assert totals_sample({"available": False, "time": None, "functions": {}}) is None


def test_an_operators_notes_after_the_counts_and_the_command_without_its_prompt():
    # As a page of notes shows them: the cat command without a prompt, a comment after each count.
    text = ("cat /sys/bus/pci/devices/0000:98:00.0/aer_dev_fatal\n"
            "Undefined 0        # undefined\nSDES 2             # surprise down\nTOTAL_ERR_FATAL 2  # all fatal errors: 2\n")
    assert parse_aer_counters(text, "fatal") == {"counts": {"Undefined": 0, "SDES": 2}, "total": 2, "notes": []}


def test_an_error_bit_the_kernel_has_no_name_for_is_counted_by_its_number():
    # drivers/pci/pcie/aer.c prints a counted bit without a name as "<its array>_bit[<bit>] <count>".
    parsed = parse_aer_counters("RxErr 0\nBadTLP 2\ndev_cor_errs_bit[11] 3\nTOTAL_ERR_COR 5\n", "correctable")
    assert parsed == {"counts": {"RxErr": 0, "BadTLP": 2, "dev_cor_errs_bit[11]": 3}, "total": 5, "notes": []}
