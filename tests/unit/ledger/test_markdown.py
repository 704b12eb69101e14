"""The line-preserving markdown primitives the task files are read and edited with."""

from __future__ import annotations

import pytest

from tidegate.ledger.errors import LedgerFormatError
from tidegate.ledger.markdown import (
    TextFile,
    aligned_widths,
    checklist,
    key_lines,
    parse_table,
    render_row,
    split_row,
)


@pytest.mark.parametrize(
    "data",
    [
        b"a\nb\n",
        b"a\r\nb\r\n",
        b"a\nb",
        b"mix\r\nends\nhere",
        b"",
        b"\n\n",
        "\u00e9\x0cx\u2028y\n".encode(),
    ],
)
def test_bytes_round_trip(data: bytes) -> None:
    assert TextFile.parse("f.md", data).render().encode() == data


def test_not_utf8_names_the_line() -> None:
    with pytest.raises(LedgerFormatError, match=r"^f.md:2: not UTF-8 text$"):
        TextFile.parse("f.md", b"ok\n\xff\xfe\n")


def test_inserted_lines_follow_the_file_line_ending() -> None:
    file = TextFile.parse("f.md", b"# T\r\n\r\n## S\r\n- one\r\n")
    file.append_to_section("S", ["- two"])
    assert file.render() == "# T\r\n\r\n## S\r\n- one\r\n- two\r\n"


def test_appending_to_a_file_without_final_newline() -> None:
    file = TextFile.parse("f.md", b"## S\n- one")
    file.append_to_section("S", ["- two"])
    assert file.render() == "## S\n- one\n- two\n"


def test_split_row_with_escaped_bars_and_empty_cells() -> None:
    assert split_row("| a | b \\| c || d |") == [" a ", " b \\| c ", "", " d "]
    assert split_row("| a | b") == [" a ", " b"]


def test_render_row_keeps_unchanged_cells_and_aligned_widths() -> None:
    aligned = split_row("| T1   | pending      | x |")
    widths = [None, 14, None]
    assert render_row(aligned, [None, "done", None], True, widths) == "| T1   | done         | x |"
    plain = split_row("| T1 | in_progress | x |")
    assert render_row(plain, [None, "done", "a|b"], True) == "| T1 | done | a\\|b |"


def test_aligned_columns_are_those_of_equal_width() -> None:
    file = TextFile.from_text("l.md", "| ID | Status  |\n|----|:--------|\n| T1 | in_progress |\n")
    assert aligned_widths(file, parse_table(file, 0)) == [4, 9]
    file = TextFile.from_text("l.md", "| ID | Status |\n| --- | --- |\n| T1 | pending |\n")
    assert aligned_widths(file, parse_table(file, 0)) == [None, None]


def test_table_errors_name_the_line() -> None:
    file = TextFile.from_text("l.md", "| ID | B |\n| --- | --- |\n| 1 | 2 | 3 |\n")
    with pytest.raises(LedgerFormatError, match=r"^l.md:3: broken table: row has 3 cells"):
        parse_table(file, 0)
    file = TextFile.from_text("l.md", "| ID | B |\n| 1 | 2 |\n")
    with pytest.raises(LedgerFormatError, match=r"^l.md:2: broken table: separator"):
        parse_table(file, 0)
    file = TextFile.from_text("l.md", "| ID | B |\n")
    with pytest.raises(LedgerFormatError, match=r"^l.md:1: table header is not followed"):
        parse_table(file, 0)


def test_headings_and_keys_inside_code_fences_are_text() -> None:
    file = TextFile.from_text(
        "c.md", "# C\n\n```\n## Not a heading\nRoute: epic\n```\nRoute: small\n"
    )
    assert [t for _, _, t in file.headings()] == ["C"]
    assert key_lines(file, {"route"}, len(file))["route"].value == "small"


def test_key_lines_forms_and_duplicates() -> None:
    file = TextFile.from_text("c.md", "- **Route:** small\n**Stage**: plan (in_progress)\n")
    keys = key_lines(file, {"route", "stage"}, len(file))
    assert keys["route"].with_value("medium") == "- **Route:** medium"
    assert keys["stage"].with_value("execute (blocked)") == "**Stage**: execute (blocked)"
    twice = TextFile.from_text("c.md", "Route: small\nRoute: medium\n")
    with pytest.raises(
        LedgerFormatError, match=r"^c.md:2: 'Route:' given twice \(first at line 1\)"
    ):
        key_lines(twice, {"route"}, 2)


def test_checklist_entries_and_malformed_boxes() -> None:
    file = TextFile.from_text("c.md", "## S\n- [ ] open\n* [x] closed\nprose\n")
    entries = checklist(file, 0, len(file))
    assert [(c.closed, c.text) for c in entries] == [(False, "open"), (True, "closed")]
    assert entries[1].with_closed(False) == "* [ ] closed"
    bad = TextFile.from_text("c.md", "## S\n- [?] what\n")
    with pytest.raises(LedgerFormatError, match=r"^c.md:2: malformed checklist entry"):
        checklist(bad, 0, len(bad))


def test_second_section_with_the_same_title_is_an_error() -> None:
    file = TextFile.from_text("n.md", "## Decisions\n\n## Decisions\n")
    with pytest.raises(LedgerFormatError, match=r"^n.md:3: second 'Decisions' section"):
        file.section("Decisions")


def test_only_newlines_end_lines() -> None:
    file = TextFile.parse("f.md", "a\x0cb\u2028c\x1cd\r\ne\n".encode())
    assert file.lines == ["a\x0cb\u2028c\x1cd", "e"]
