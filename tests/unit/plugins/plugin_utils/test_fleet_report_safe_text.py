"""Hostile text from nodes and inventories: no escape sequence reaches a terminal, no Markdown structure
is forged. Markdown is parsed by markdown-it-py (CommonMark with GitHub's tables and strikethrough, raw
HTML allowed, as GitHub renders it), not by patterns written here."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from ansible_collections.rdma.node.plugins.plugin_utils._findings import finding
from ansible_collections.rdma.node.plugins.plugin_utils._safe_text import clean, markdown_code, markdown_text, markdown_view, strip_controls, visible

GFM = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")

# What a node or an inventory can hold where the report shows a name, a firmware or a message.
PAYLOADS = {
    "pipe": "20.39.1002 | forged cell | x",
    "newline row": "fw\n| forged | row | of | a | table |",
    "heading": "# Forged heading",
    "newline heading": "x\n## Forged heading",
    "quote": "> quoted",
    "list": "- item",
    "numbered": "1. item",
    "setext": "x\n===",
    "code span": "`rm -rf /`",
    "fence": "```\ncode\n```",
    "link": "[click](https://example.org)",
    "image": "![x](https://example.org/x.png)",
    "script": "<script>alert(1)</script>",
    "img onerror": "<img src=x onerror=alert(1)>",
    "html comment": "<!-- hidden -->",
    "entity": "&lt;b&gt;",
    "emphasis": "*bold* _em_ ~~gone~~",
    "backslash": "C:\\path\\",
    "csi colour": "\x1b[31mred\x1b[0m",
    "clear screen": "\x1b[2J\x1b[H",
    "osc title": "\x1b]0;owned\x07text",
    "osc hyperlink": "\x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\",
    "c1 csi": "\x9b31mred",
    "bell and nul": "a\x07b\x00c",
    "bidi override": "evil\u202etxt.exe",
    "carriage return": "ok\rFAKE",
}


def rendered_text(tokens):
    """Every text the renderer would show, joined."""
    texts = []
    for token in tokens:
        for child in token.children or []:
            if child.type in ("text", "code_inline"):
                texts.append(child.content)
    return "".join(texts)


def structure(tokens):
    return [t.type for t in tokens if t.type not in ("text", "inline")]


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_a_table_cell_stays_one_cell_of_plain_text(payload):
    cell = markdown_text(payload)
    tokens = GFM.parse("| a | b |\n|---|---|\n| %s | end |\n" % cell)
    cells = ["tr_open", "th_open", "th_open", "tr_open", "td_open", "td_open"]
    assert [t.type for t in tokens if t.type in ("tr_open", "td_open", "th_open")] == cells
    inline = [t for t in tokens if t.type == "inline"][2]
    assert [c.type for c in inline.children] == ["text"] * len(inline.children), inline.children
    # What the reader sees is the payload itself, without its control characters.
    assert "".join(c.content for c in inline.children) == strip_controls(payload).strip()


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_a_line_after_a_list_marker_or_a_heading_stays_that_line(payload):
    for prefix, kind in (("- **critical** ", "bullet_list_open"), ("### ", "heading_open")):
        tokens = GFM.parse(prefix + markdown_text(payload) + "\n")
        assert structure(tokens)[0] == kind
        assert [t.type for t in tokens if t.type.endswith("_open") and not t.type.startswith(("strong", "em"))] in (
            [kind, "list_item_open", "paragraph_open"], [kind])
        assert not any(t.type.startswith(("html", "link", "image", "code", "fence", "s_")) for t in tokens)
        assert not any(c.type.startswith(("html", "link", "image", "code", "s_", "em")) for t in tokens for c in t.children or [])


def test_text_at_the_start_of_a_line_starts_no_block():
    for payload in ("# x", "> x", "- x", "+ x", "* x", "1. x", "2) x", "---", "===", "    indented"):
        tokens = GFM.parse(markdown_text(payload) + "\n")
        assert structure(tokens) == ["paragraph_open", "paragraph_close"], payload
        assert rendered_text(tokens) == payload.strip()


def test_names_that_read_the_same_are_left_alone():
    for name in ("mlx5_bond_0", "6.1.0-27-amd64", "MT_0000000223", "node_health/gpudirect", "-rc1", "a100-node-01", "20.39.1002"):
        assert markdown_text(name) == name


def test_terminal_escapes_and_controls_are_gone():
    for payload in PAYLOADS.values():
        text = strip_controls(payload)
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)
        assert "\u202e" not in text
    assert strip_controls("\x1b[31mred\x1b[0m") == "red"
    assert strip_controls("\x1b]0;owned\x07text") == "text"
    assert strip_controls("\x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert strip_controls("a\tb\nc") == "a b c"
    assert strip_controls("Größe ≥ 100 Gb/s") == "Größe ≥ 100 Gb/s"


def test_visible_names_stay_distinct_and_printable():
    names = ["a100-node-01", "a\x1b[31m", "a\\x1b[31m", "a", "rack\u202e7", "tab\there"]
    shown = [visible(n) for n in names]
    assert len(set(shown)) == len(names)
    assert shown[:3] == ["a100-node-01", "a\\x1b[31m", "a\\\\x1b[31m"]
    assert shown[4:] == ["rack\\u202e7", "tab\\x09here"]
    assert all(c.isprintable() for name in shown for c in name)


def test_code_spans_take_plain_names_only():
    assert markdown_code(markdown_text("node_health/gpudirect")) == "`node_health/gpudirect`"
    escaped = markdown_code(markdown_text("custom_x`|y"))
    assert "`" not in escaped.replace("\\`", "")
    tokens = GFM.parse("| %s |\n|---|\n" % escaped)
    assert len([t for t in tokens if t.type == "th_open"]) == 1


def test_markdown_view_escapes_every_text_and_keeps_the_vocabulary():
    view = markdown_view({"status": "no_data", "verdict": "allowed_down", "hosts": [{"name": "a|b", "rate": 100.0, "ok": True}]})
    assert view == {"status": "no_data", "verdict": "allowed_down", "hosts": [{"name": "a\\|b", "rate": 100.0, "ok": True}]}


def test_clean_reaches_every_text():
    assert clean({"k\x1b[1m": ["x\x1b[2J", {"y": "z\x07"}], "n": 3}) == {"k": ["x", {"y": "z"}], "n": 3}


def test_findings_lose_control_characters_at_the_source():
    item = finding("fleet_consistency", "firmware_drift", "warning", "node\x1b[31m", "mlx5_1 runs \x1b]0;owned\x07firmware\n20.37\x1b[0m",
                   expected={"fw": "20.39\x1b[5m"}, actual=["20.37\r\x9b2J"])
    assert (item["subject"], item["message"]) == ("node", "mlx5_1 runs firmware 20.37")
    assert (item["expected"], item["actual"]) == ({"fw": "20.39"}, ["20.37 "])
    # A subject of control characters alone is still named, spelled out.
    assert finding("r", "c", "info", "\x1b\x07", "m")["subject"] == "\\x1b\\x07"
