# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The text parsers in their default, lenient mode, on what people actually paste.

Every class of mess from issue 11 is built from the real samples of tests/fixtures/cmd (and from
synthetic ones where no real sample exists, written from the tools' print formats): prompts and the
command line, ``column -t`` (the real ``column``, in tests/integration/test_node_tools_for_real.py), ``#`` comments, redaction marks, diagnostics of
other tools, ``ibv_devinfo -v`` continuation lines, odd blank lines, CRLF, stray lines, duplicated
blocks and digits other than ASCII. The parser must keep every port it recognises and list every
line it could not place with its number; only text with nothing of the tool's output fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.rdma.node.plugins.module_utils._ib_text import PARSERS, IbTextError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "cmd"
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*/*.txt") if p.parent.name in PARSERS)
COMMANDS = {"ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo -v",
            "ibdev2netdev": "ibdev2netdev -v", "rdma_link": "rdma link show"}
TOOL_NAMES = {"ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo",
              "ibdev2netdev": "ibdev2netdev", "rdma_link": "rdma link"}


def _id(path):
    return "%s/%s" % (path.parent.name, path.name)


def _sample(path):
    """(parser, text, clean result) of a fixture."""
    parser = PARSERS[path.parent.name]
    text = path.read_text(encoding="utf-8")
    return parser, text, parser(text)


def _diagnostics(notes):
    return [note for note in notes if note["reason"] == "a diagnostic message, not part of the listing"]


# ----------------------------------------------------------------------------------------------
# Pasted without loss: the same ports and no new notes
# ----------------------------------------------------------------------------------------------

def _prompt_and_command(text, tool):
    return "[root@gpu-node01 ~]# %s\n%s\n[root@gpu-node01 ~]# \n" % (COMMANDS[tool], text)


def _bare_command_line(text, tool):
    return "sudo %s\n%s" % (COMMANDS[tool], text)


def _comments(text, tool):
    lines = text.split("\n")
    return "# %s on gpu-node01, after the cable swap\n" % tool + "\n".join(
        line + ("\n# ----- checked" if number % 4 == 3 else "") for number, line in enumerate(lines))


def _blank_lines_everywhere(text, tool):
    return "\n\n" + "\n \n\t\n".join(text.split("\n")) + "\n\n\n"


def _crlf_and_bom(text, tool):
    return "\ufeff" + text.replace("\n", "\r\n")


def _markdown_fence_and_quote(text, tool):
    return "```console\n" + "\n".join("> " + line for line in text.split("\n")) + "\n```\n"


LOSSLESS = [_prompt_and_command, _bare_command_line, _comments, _blank_lines_everywhere, _crlf_and_bom,
            _markdown_fence_and_quote]


@pytest.mark.parametrize("mess", LOSSLESS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_pastes_that_lose_nothing_give_the_same_ports_and_notes(path, mess):
    parser, text, clean = _sample(path)
    result = parser(mess(text, path.parent.name))
    assert result["ports"] == clean["ports"]
    assert [n["text"] for n in result["notes"]] == [n["text"] for n in clean["notes"]]


# ----------------------------------------------------------------------------------------------
# Pasted with something in the way: the ports stay, the line is a note with its number
# ----------------------------------------------------------------------------------------------

REDACTIONS = ["...", "[snip]", "<snip>", "[...]", "\u2026", "--- snip ---", "<redacted>", "[output truncated]"]


@pytest.mark.parametrize("mark", REDACTIONS)
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_a_redaction_mark_is_a_note_and_every_port_stays(path, mark):
    parser, text, clean = _sample(path)
    lines = text.split("\n")
    middle = len(lines) // 2
    result = parser("\n".join(lines[:middle] + [mark] + lines[middle:]))
    assert result["ports"] == clean["ports"]
    # The sample's own marks (an author's elisions) stay, one line further down where they follow the new one.
    own = [dict(n, line=n["line"] + (n["line"] > middle)) for n in clean["notes"] if n["reason"].startswith("a redaction mark")]
    redacted = [n for n in result["notes"] if n["reason"].startswith("a redaction mark")]
    assert redacted == sorted(own + [{"line": middle + 1, "text": mark,
                                      "reason": "a redaction mark: the listing around it is incomplete"}], key=lambda n: n["line"])


TRAILERS = [
    "ibpanic: [4711] main: stat of IB device 'mlx5_9' failed: No such file or directory",
    "ibwarn: [4711] umad_get_port: port 1 not found",
    "libibverbs: Warning: couldn't load driver 'libvmw_pvrdma-rdmav34.so': libvmw_pvrdma-rdmav34.so: "
    "cannot open shared object file: No such file or directory",
    "libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.",
]


@pytest.mark.parametrize("trailer", TRAILERS, ids=lambda t: t.split(":")[0] + ":" + t.split(":")[1][:12])
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_a_trailing_diagnostic_of_another_tool_is_a_note(path, trailer):
    parser, text, clean = _sample(path)
    lines = text.rstrip("\n").split("\n")
    result = parser("\n".join(lines + [trailer]))
    assert result["ports"] == clean["ports"]
    assert _diagnostics(result["notes"])[-1] == {
        "line": len(lines) + 1, "text": trailer[:117] + "..." if len(trailer) > 120 else trailer,
        "reason": "a diagnostic message, not part of the listing"}


STRAYS = ["Connection to gpu-node01 closed.", "bash: ibstatt: command not found", "foo bar",
          "Last login: Mon Nov 23 08:01:12 2026 from 10.0.0.5"]


@pytest.mark.parametrize("stray", STRAYS)
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_a_stray_line_anywhere_keeps_every_port_and_is_named(path, stray):
    parser, text, clean = _sample(path)
    lines = text.split("\n")
    for where in sorted({0, len(lines) // 3, len(lines) - 1}):
        pasted = "\n".join(lines[:where] + [stray] + lines[where:])
        result = parser(pasted)
        assert result["ports"] == clean["ports"], where
        (note,) = [n for n in result["notes"] if n["line"] == where + 1]
        assert note["text"] == stray
        if note["reason"].startswith(("a key %s does not print" % path.parent.name, "a device attribute of ibv_devinfo -v")):
            # "Last login: ..." inside a block reads like a field a newer tool added, and any line
            # among the device attributes of MLNX_OFED's ibv_devinfo -v like one of its own: strict
            # mode tolerates those, as it always did; the note is there either way.
            continue
        with pytest.raises(IbTextError) as error:
            parser(pasted, strict=True)
        assert str(error.value).startswith("parse_%s: line " % path.parent.name)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_a_listing_pasted_twice_gives_each_port_once(path):
    parser, text, clean = _sample(path)
    result = parser(text + "\n" + text)
    assert result["ports"] == clean["ports"]


# ----------------------------------------------------------------------------------------------
# Only text with nothing of the tool fails
# ----------------------------------------------------------------------------------------------

# ``ibv_devinfo -l`` is a count line and device names, one per line: the names alone are also what
# ``ibstat -l`` prints, so parse_ibstat keeps them (and notes the count line) instead of failing.
OTHER_TOOL_PAIRS = [(tool, path) for tool in sorted(PARSERS) for path in FIXTURE_FILES
                    if path.parent.name != tool and (tool, _id(path)) != ("ibstat", "ibv_devinfo/l_list_2hcas.txt")]


def test_a_device_name_listing_of_ibv_devinfo_reads_as_ibstat_l_with_a_note():
    result = PARSERS["ibstat"]((FIXTURES / "ibv_devinfo" / "l_list_2hcas.txt").read_text(encoding="utf-8"))
    assert [p["device"] for p in result["ports"]] == ["mlx4_1", "mlx4_0"]  # in the order printed
    assert result["notes"] == [{"line": 1, "text": "2 HCAs found:", "reason": "not a device name"}]


@pytest.mark.parametrize("tool, path", OTHER_TOOL_PAIRS, ids=lambda v: _id(v) if isinstance(v, Path) else v)
def test_another_tools_output_is_refused_in_one_sentence(tool, path):
    with pytest.raises(IbTextError) as error:
        PARSERS[tool](path.read_text(encoding="utf-8"))
    message = str(error.value)
    assert message.startswith("parse_%s: nothing in the text is %s output (line " % (tool, TOOL_NAMES[tool]))
    assert "\n" not in message


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_only_diagnostics_give_no_ports_and_the_diagnostics(tool):
    result = PARSERS[tool]("$ %s\n%s\n" % (COMMANDS[tool], TRAILERS[0]))
    assert result == {"ports": [], "notes": [{"line": 2, "text": TRAILERS[0],
                                              "reason": "a diagnostic message, not part of the listing"}]}


# ----------------------------------------------------------------------------------------------
# Digits other than ASCII never give silently wrong numbers
# ----------------------------------------------------------------------------------------------

UNREADABLE = "a value that cannot be read, left out (numbers are read from ASCII digits only)"
ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")
FULLWIDTH = str.maketrans("0123456789", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19")


@pytest.mark.parametrize("digits", [ARABIC_INDIC, FULLWIDTH], ids=["arabic-indic", "fullwidth"])
def test_other_digits_in_values_give_none_and_a_note(digits):
    values = ("1".translate(digits), "200".translate(digits), "12".translate(digits))
    text = ("CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: %s\n\tPort 1:\n\t\tState: Active\n"
            "\t\tRate: %s\n\t\tBase lid: %s\n\t\tSM lid: 1\n" % values)
    result = PARSERS["ibstat"](text)
    (port,) = result["ports"]
    assert (port["num_ports"], port["rate_gbps"], port["lid"], port["sm_lid"]) == (None, None, None, 1)
    assert [(n["line"], n["reason"]) for n in result["notes"]] == [
        (3, UNREADABLE),
        (6, UNREADABLE),
        (7, UNREADABLE),
    ]


@pytest.mark.parametrize("digits", [ARABIC_INDIC, FULLWIDTH], ids=["arabic-indic", "fullwidth"])
def test_other_digits_in_headers_are_not_ports(digits):
    text = "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\tPort %s:\n\t\tState: Down\n" % "2".translate(digits)
    result = PARSERS["ibstat"](text)
    assert [(p["port"], p["state"]) for p in result["ports"]] == [(1, "ACTIVE")]
    assert result["notes"][0]["line"] == 4
    ibdev = "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port %s ==> ib1 (Up)\n" % "1".translate(digits)
    result = PARSERS["ibdev2netdev"](ibdev)
    assert [p["device"] for p in result["ports"]] == ["mlx5_0"]
    assert [n["line"] for n in result["notes"]] == [2]
    state = "Infiniband device 'mlx4_0' port 1 status:\n\tstate:\t%s: ACTIVE\n" % "4".translate(digits)
    (port,) = PARSERS["ibstatus"](state)["ports"]
    assert port["state_code"] is None  # never 4 read from other digits, never a wrong code


# ----------------------------------------------------------------------------------------------
# ibv_devinfo -v: synthetic, written from rdma-core's libibverbs/examples/devinfo.c print formats
# (tabs as it prints them; the values are made up). No real -v sample is among the fixtures.
# ----------------------------------------------------------------------------------------------

IBV_DEVINFO_V = (
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t28.39.1002\n"
    "\tnode_guid:\t\t\t946d:ae03:00f1:2a40\n"
    "\tsys_image_guid:\t\t\t946d:ae03:00f1:2a40\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tboard_id:\t\t\tMT_0000000838\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
    "\tpage_size_cap:\t\t\t0xfffffffffffff000\n"
    "\tdevice_cap_flags:\t\t0x25361c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n"
    "\t\t\t\t\tAUTO_PATH_MIG\n"
    "\t\t\t\t\tMANAGED_FLOW_STEERING\n"
    "\t\t\t\t\tUnknown flags: 0xC8400000\n"
    "\tatomic_cap:\t\t\tATOMIC_HCA (1)\n"
    "\tgeneral_odp_caps:\n"
    "\t\t\t\t\tODP_SUPPORT\n"
    "\tuc_odp_caps:\n"
    "\t\t\t\t\tNO SUPPORT\n"
    "\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff\n"
    "\thca_core_clock:\t\t\t156250kHZ\n"
    "\traw packet caps:\n"
    "\t\t\t\t\tC-VLAN stripping offload\n"
    "\t\t\t\t\tDelay drop\n"
    "\tdevice_cap_flags_ex:\t\t0x1025361C36\n"
    "\t\t\t\t\tPCI_WRITE_END_PADDING\n"
    "\ttso_caps:\n"
    "\tmax_tso:\t\t\t0\n"
    "\trss_caps:\n"
    "\t\tmax_rwq_indirection_tables:\t\t\t0\n"
    "\t\trx_hash_fields_mask:\t\t\t\t0x0\n"
    "\ttag matching not supported\n"
    "\n"
    "\tcq moderation caps:\n"
    "\t\tmax_cq_count:\t65535\n"
    "\t\tmax_cq_period:\t4095 us\n"
    "\n"
    "\tmaximum available device memory:\t131072Bytes\n"
    "\n"
    "\tnum_comp_vectors:\t\t63\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t1\n"
    "\t\t\tport_lid:\t\t27\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\t\t\tmax_msg_sz:\t\t0x40000000\n"
    "\t\t\tport_cap_flags:\t\t0xa259e848\n"
    "\t\t\tport_cap_flags2:\t0x0032\n"
    "\t\t\tmax_vl_num:\t\t4 (3)\n"
    "\t\t\tactive_width:\t\t4X (2)\n"
    "\t\t\tactive_speed:\t\t100.0 Gbps (128)\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:946d:ae03:00f1:2a40\n"
    "\t\t\tGID[  1]:\t\tfe80:0000:0000:0000:946d:ae03:00f1:2a41, RoCE v2\n"
    "\n"
)


def test_ibv_devinfo_verbose_continuation_lines_and_odd_keys_are_placed():
    result = PARSERS["ibv_devinfo"](IBV_DEVINFO_V, strict=True)
    assert result["notes"] == []
    (port,) = result["ports"]
    assert (port["device"], port["port"], port["state"], port["phys_state"]) == ("mlx5_0", 1, "ACTIVE", "LinkUp")
    assert (port["width"], port["speed"], port["rate_gbps"]) == ("4X", "NDR", 400.0)
    assert (port["lid"], port["sm_lid"], port["lmc"], port["active_mtu"]) == (27, 1, 0, 4096)
    assert (port["fw_ver"], port["vendor_part_id"], port["num_ports"]) == ("28.39.1002", 4129, 1)
    assert port["port_guid"] == "0x946dae0300f12a40"


def test_ibv_devinfo_verbose_with_a_new_kind_of_line_keeps_the_port():
    lines = IBV_DEVINFO_V.split("\n")
    lines.insert(25, "\tsome future capability, described in prose")
    result = PARSERS["ibv_devinfo"]("\n".join(lines))
    assert [(p["device"], p["port"], p["rate_gbps"]) for p in result["ports"]] == [("mlx5_0", 1, 400.0)]
    assert result["notes"] == [{"line": 26, "text": "some future capability, described in prose",
                                "reason": "a device attribute of ibv_devinfo -v that is not read"}]
    assert PARSERS["ibv_devinfo"]("\n".join(lines), strict=True)["ports"] == result["ports"]  # an attribute, not foreign text


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=_id)
def test_a_comment_after_a_line_is_read_past_with_a_note(path):
    """Issue 24, item 16: ``mlx5_0 port 1 ==> ib0 (Up)  # rack 3`` refused the whole paste."""
    parser, text, clean = _sample(path)
    lines = text.rstrip("\n").split("\n")
    commented = [number for number, line in enumerate(lines) if line.strip()]
    pasted = "\n".join(line + "  # rack 3, see ticket 4711" if number in commented else line
                       for number, line in enumerate(lines))
    result = parser(pasted)
    assert result["ports"] == clean["ports"]
    comment_notes = [note for note in result["notes"] if note["reason"] == "a comment after the text, not read"]
    # every commented line the parser reads has its note (prompts and diagnostics are dropped whole)
    assert comment_notes and {note["line"] for note in comment_notes} <= {number + 1 for number in commented}
    assert all(note["text"].endswith(("# rack 3, see ticket 4711", "...")) for note in comment_notes)
    assert parser(pasted, strict=True)["ports"] == clean["ports"]


def test_the_issues_example():
    result = PARSERS["ibdev2netdev"]("mlx5_0 port 1 ==> ib0 (Up)  # rack 3\nmlx5_1 port 1 ==> ib1 (Down)\n")
    assert [(p["device"], p["netdev_state"]) for p in result["ports"]] == [("mlx5_0", "Up"), ("mlx5_1", "Down")]
    assert result["notes"] == [{"line": 1, "text": "mlx5_0 port 1 ==> ib0 (Up)  # rack 3",
                                "reason": "a comment after the text, not read"}]


def test_values_blanked_out_before_a_paste_are_left_out_in_line_order():
    """A real paste (leptonai/gpud PR 752) in a Markdown fence, with a redaction line, values replaced
    by "..." and ibstat's ibpanic for the next device: the port stays, each blanked value is a note."""
    text = (FIXTURES / "pastes" / "issue_gpud752_redacted_values_ibpanic_fenced.txt").read_text(encoding="utf-8")
    for strict in (False, True):
        result = PARSERS["ibstat"](text, strict=strict)
        (port,) = result["ports"]
        assert (port["device"], port["port"], port["state"], port["rate_gbps"], port["lid"], port["link_layer"]) == (
            "mlx5_7", 1, "ACTIVE", 200.0, 13305, "InfiniBand")
        assert (port["hca_type"], port["fw_ver"], port["node_guid"], port["cap_mask"], port["port_guid"]) == (None,) * 5
        assert [(n["line"], n["reason"]) for n in result["notes"]] == [
            (2, "a redaction mark: the listing around it is incomplete")] + [
            (line, "a redacted value, left out") for line in (5, 7, 9, 10, 18, 19)] + [
            (21, "a diagnostic message, not part of the listing")]


def test_ibstatus_without_any_device_says_so_instead_of_refusing():
    result = PARSERS["ibstatus"]((FIXTURES / "ibstatus" / "trinity_219_fatal_error_sys_files_not_found_prompt.txt").read_text(encoding="utf-8"))
    assert result["ports"] == []
    assert [(n["line"], n["reason"]) for n in result["notes"]] == [(2, "ibstatus found no RDMA device")]
    # As `column -t` spaces it out.
    spaced = PARSERS["ibstatus"]("Fatal          error:  device    '*':  sys  files  not  found  (/sys/class/infiniband/*/ports)\n")
    assert spaced["ports"] == [] and spaced["notes"][0]["reason"] == "ibstatus found no RDMA device"
    named = PARSERS["ibstatus"]("Fatal error:  device 'mlx5_9': sys files not found (/sys/class/infiniband/mlx5_9/ports)\n")
    assert named["ports"] == [] and named["notes"][0]["reason"] == "ibstatus found no RDMA device named 'mlx5_9'"


def test_ibstat_filtered_by_grep_down_to_its_port_blocks_is_refused_for_what_it_lacks():
    text = (FIXTURES / "pastes" / "openshift_docs_egrep_port_base_link_no_ca_headers_first_line_unindented_prompt.txt").read_text(encoding="utf-8")
    with pytest.raises(IbTextError) as error:
        PARSERS["ibstat"](text)
    assert str(error.value) == ("parse_ibstat: port blocks without a CA 'name' line to say whose ports they are (first at line 1); "
                                "the output looks filtered: keep the CA lines")


def test_a_state_word_the_kernel_does_not_use_is_kept_without_a_code_and_said():
    # A hand-edited paste (seen in a blog post: "State: Activate"), made here from a real ibstat listing.
    path = FIXTURES / "ibstat" / "gpud_h100_bf3_MT41692_bond_plus_8ib400.txt"
    text = path.read_text(encoding="utf-8")
    edited = text.replace("State: Active", "State: Activate", 1)
    line = next(number for number, row in enumerate(edited.split("\n"), start=1) if "State: Activate" in row)
    result = PARSERS["ibstat"](edited)
    assert {"line": line, "text": "State: Activate", "reason": "a state the kernel does not name so, kept as printed without its code"} in [
        dict(note, text=note["text"].strip()) for note in result["notes"]]
    changed = [p for p in result["ports"] if p["state"] == "Activate"]
    assert len(changed) == 1 and changed[0]["state_code"] is None
    assert sum(p["state"] == "ACTIVE" for p in result["ports"]) == sum(p["state"] == "ACTIVE" for p in PARSERS["ibstat"](text)["ports"]) - 1


def test_a_listing_kept_as_comments_is_read_without_the_marks():
    """A Chef recipe keeps the ibstat of a QLogic qib0 as Ruby comments ("    # \\tCA type: ..."): each line looks
    like a root prompt, so the text is read without the marks, with a note; the same as the plain listing."""
    text = (FIXTURES / "pastes" / "chef_recipe_qib0_QLE7340_qdr_as_ruby_comments.txt").read_text(encoding="utf-8")
    for strict in (False, True):
        result = PARSERS["ibstat"](text, strict=strict)
        (port,) = result["ports"]
        assert (port["device"], port["hca_type"], port["port"], port["state"], port["phys_state"], port["rate_gbps"]) == (
            "qib0", "InfiniPath_QLE7340", 1, "ACTIVE", "LinkUp", 40.0)
        assert (port["lid"], port["sm_lid"], port["link_layer"], port["fw_ver"], port["node_guid"]) == (
            6, 3, "InfiniBand", None, "0x001175000076dcbe")
        assert result["notes"][0] == {"line": None, "text": None, "reason": "every line is commented out with '#': read without the marks"}
    plain = "\n".join(line.split("# ", 1)[1] for line in text.splitlines() if line.strip())
    assert PARSERS["ibstat"](plain)["ports"] == result["ports"]
    assert PARSERS["ibstat"](text.splitlines())["ports"] == result["ports"]


@pytest.mark.parametrize("text", ["# just\n# a comment\n# here\n", "# ibstat\n", "    # mlx5_0\n    # mlx5_1\n"])
def test_comments_that_hold_no_listing_give_no_ports(text):
    # ibstat -l prints a bare name per line, which any comment could be: names alone are not read out of comments.
    assert PARSERS["ibstat"](text) == {"ports": [], "notes": []}


def test_inline_markup_of_a_rendered_page_is_left_out():
    """A blog marked the SR-IOV VFs of an ibdev2netdev -v listing red (<font color="red">...</font>)."""
    text = (FIXTURES / "pastes" / "sriov_kvm_notes_ibdev2netdev_v_quoted_font_tags_vf_down.txt").read_text(encoding="utf-8")
    result = PARSERS["ibdev2netdev"](text, strict=True)
    assert [(p["pci_address"], p["device"], p["state"], p["state_code"], p["netdevs"], p["netdev_state"]) for p in result["ports"]] == [
        ("0000:02:00.0", "mlx5_0", "ACTIVE", 4, ["ib0"], "Up"), ("0000:81:00.0", "mlx5_1", "ACTIVE", 4, ["ib1"], "Up"),
        ("0000:02:00.1", "mlx5_2", "DOWN", 1, ["ib2"], "Down"), ("0000:02:00.2", "mlx5_3", "DOWN", 1, ["ib3"], "Down"),
        ("0000:02:00.3", "mlx5_4", "DOWN", 1, ["ib4"], "Down"), ("0000:02:00.4", "mlx5_5", "DOWN", 1, ["ib5"], "Down")]
    assert result["notes"] == []


def test_guids_masked_short_before_a_paste_are_read_padded_and_noted():
    text = (FIXTURES / "pastes" / "sriov_cx6_vf_ibstat_author_masked_short_guids_prompt.txt").read_text(encoding="utf-8")
    result = PARSERS["ibstat"](text)
    (port,) = result["ports"]
    assert (port["device"], port["hca_type"], port["state"], port["phys_state"], port["rate_gbps"], port["lid"]) == (
        "mlx5_0", "MT4124", "DOWN", "LinkUp", 10.0, 65535)
    assert (port["node_guid"], port["sys_image_guid"], port["port_guid"]) == ("0x0000000000000000", "0x0000000000bbbbbb", "0x0000000000000000")
    assert [(n["line"], n["text"]) for n in result["notes"]] == [
        (8, "Node GUID: 0x000000"), (9, "System image GUID: 0xbbbbbb"), (18, "Port GUID: 0x000000")]
    assert {n["reason"] for n in result["notes"]} == {"a GUID of fewer than 16 hex digits (cut or masked?), read with leading zeros"}


def test_an_authors_arrows_and_notes_after_ca_lines_and_values_are_left_out():
    text = (FIXTURES / "pastes" / "k8s_rdma_sriov_notes_ibstat_mlx4_two_cas_author_arrows_after_ca_lines_and_guid.txt").read_text(
        encoding="utf-8")
    result = PARSERS["ibstat"](text)
    assert [(p["device"], p["port"], p["state"], p["phys_state"], p["rate_gbps"], p["lid"], p["sm_lid"]) for p in result["ports"]] == [
        ("mlx4_0", 1, "ACTIVE", "LinkUp", 56.0, 4, 4), ("mlx4_0", 2, "DOWN", "Polling", 10.0, 0, 0),
        ("mlx4_1", 1, "ACTIVE", "LinkUp", 56.0, 6, 8), ("mlx4_1", 2, "DOWN", "Polling", 10.0, 0, 0)]
    assert result["ports"][0]["port_guid"] == "0x248a0703005d07f1"
    assert [(n["line"], n["reason"]) for n in result["notes"]] == [
        (2, "text after the CA's name, not ibstat's, left out"), (17, "an arrow and text after the value, not ibstat's, left out"),
        (29, "text after the CA's name, not ibstat's, left out")]
    lids = PARSERS["ibstat"]((FIXTURES / "pastes" / "cx4_homelab_notes_ibstat_ibp4s0_author_arrows_after_state_and_lids.txt").read_text(
        encoding="utf-8"))
    assert [(p["device"], p["state"], p["phys_state"], p["lid"], p["sm_lid"]) for p in lids["ports"]] == [("ibp4s0", "ACTIVE", "LinkUp", 1, 1)]


def test_a_port_listed_again_in_another_namespace_keeps_its_netdev_and_an_authors_arrow_is_left_out():
    text = (FIXTURES / "pastes" / "rdma_link_two_netns_listings_same_ports_twice_author_arrows_mail.txt").read_text(encoding="utf-8")
    result = PARSERS["rdma_link"](text)
    assert [(p["device"], p["state"], p["phys_state"], p["netdevs"]) for p in result["ports"]] == [
        ("roceo12399", "DOWN", "Disabled", ["eno12399"]), ("roceo12409", "DOWN", "Disabled", ["eno12409"]),
        ("rocep202s0f0", "DOWN", "Disabled", ["ens7f0"]), ("rocep202s0f1", "ACTIVE", "LinkUp", ["ens7f1"])]
    assert [(n["line"], n["reason"]) for n in result["notes"]] == [
        (1, "not rdma link output"), (3, "an arrow and text after the values, not rdma's, left out"), (8, "not rdma link output"),
        (11, "an arrow and text after the values, not rdma's, left out"), (12, "an arrow and text after the values, not rdma's, left out"),
        (13, "an arrow and text after the values, not rdma's, left out")]


def test_an_ibv_devinfo_block_cut_at_its_port_line_or_before_its_ports_says_so():
    # `ibv_devinfo | head` cut right after "port:\t1" (EFA): the port is there, none of its fields.
    efa = PARSERS["ibv_devinfo"]((FIXTURES / "ibv_devinfo" / "ozone_ai_efa_notes_ibv_devinfo_pipe_head_cut_at_port_line_efa_0.txt")
                                 .read_text(encoding="utf-8"))
    assert [(p["device"], p["port"], p["num_ports"], p["vendor_id"], p["state"], p["link_layer"]) for p in efa["ports"]] == [
        ("efa_0", 1, 1, "0x1d0f", None, None)]
    reason = "port 1 of efa_0 has no field after its port: line (the text is cut there): its state and link layer are not known"
    assert efa["notes"] == [{"line": 11, "text": "port:\t1", "reason": reason}]
    # A siw device's block that stops after its transport line (an author's comment after it): no phys_port_cnt, no port.
    siw = PARSERS["ibv_devinfo"]((FIXTURES / "ibv_devinfo" / "zh_wsl_notes_siw_0_ibv_devinfo_d_prompt_cut_after_transport_author_comment_PARTIAL.txt")
                                 .read_text(encoding="utf-8"))
    assert [(p["device"], p["port"], p["transport"]) for p in siw["ports"]] == [("siw_0", None, "iWARP")]
    assert [(n["line"], n["reason"]) for n in siw["notes"]] == [
        (2, "the block of siw_0 ends before its phys_port_cnt and its ports (the text is cut there): its ports are not known"),
        (3, "a comment after the text, not read")]


def test_a_whole_ibv_devinfo_block_and_an_ibstat_like_device_list_give_no_cut_note():
    # Constructed from the EFA fixture: the same block with the port's fields ibv_devinfo prints after port:.
    text = (FIXTURES / "ibv_devinfo" / "ozone_ai_efa_notes_ibv_devinfo_pipe_head_cut_at_port_line_efa_0.txt").read_text(encoding="utf-8")
    whole = text.replace("\t\tport:\t1\n", "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tUnspecified\n")
    result = PARSERS["ibv_devinfo"](whole)
    assert result["notes"] == [] and result["ports"][0]["state"] == "ACTIVE"
    assert PARSERS["ibv_devinfo"]((FIXTURES / "ibv_devinfo" / "l_list_2hcas.txt").read_text(encoding="utf-8"))["notes"] == []


def test_rdma_link_run_before_and_after_a_port_came_up_reads_the_later_state_and_keeps_the_earlier():
    # The same two ports listed before and after `ip link set enp65s0f0np0 up` (MOFED 5.8, ConnectX-5).
    text = (FIXTURES / "pastes" / "rdma_link_rdma_test_readme_rdma_d_link_twice_before_and_after_ip_link_up_netdev_index_PARTIAL.txt")
    result = PARSERS["rdma_link"](text.read_text(encoding="utf-8"))
    assert [(p["device"], p["port"], p["state"], p["phys_state"], p["netdevs"]) for p in result["ports"]] == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", ["enp65s0f0np0"]), ("mlx5_1", 1, "DOWN", "Disabled", ["enp65s0f1np1"])]
    assert result["notes"] == [{"line": 9, "text": "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev enp65s0f0np0 netdev_index 8",
                                "reason": "mlx5_0/1 is listed again and its state differs from line 2's (DOWN/Disabled); the later one "
                                          "is read"}]
