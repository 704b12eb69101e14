"""SEARCH/REPLACE edit blocks and tolerant matching."""

from __future__ import annotations

import pytest

from tidegate.validate.edit_blocks import EditBlockError, apply_edit_blocks, parse_edit_blocks
from tidegate.validate.matching import MatchError, locate, split_lines

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


def _reader(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda path: files[path].encode() if path in files else None


def test_parse_blocks_with_fences_and_prose() -> None:
    text = (
        "Here is the fix.\n\n"
        "```python\n"
        "calc.py\n"
        "<<<<<<< SEARCH\n"
        "    return a - b\n"
        "=======\n"
        "    return a + b\n"
        ">>>>>>> REPLACE\n"
        "```\n"
        "**docs/new.md**\n"
        "<<<<<<< SEARCH\n"
        "=======\n"
        "# New\n"
        ">>>>>>> REPLACE\n"
    )
    blocks = parse_edit_blocks(text)
    assert [(b.path, b.search, b.replace, b.line) for b in blocks] == [
        ("calc.py", "    return a - b\n", "    return a + b\n", 5),
        ("docs/new.md", "", "# New\n", 12),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("calc.py\n<<<<<<< SEARCH\nx\n", "line 2: SEARCH block is not closed by '======='"),
        (
            "calc.py\n<<<<<<< SEARCH\nx\n=======\ny\n",
            "line 2: SEARCH block is not closed by '>>>>>>> REPLACE'",
        ),
        ("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", "line 1: SEARCH block with no file"),
        ("calc.py\n=======\n", "line 2: '=======' without an opening"),
        ("just prose\n", "no '<<<<<<< SEARCH' block found"),
    ],
)
def test_malformed_blocks_name_the_line(text: str, message: str) -> None:
    with pytest.raises(EditBlockError, match=message):
        parse_edit_blocks(text)


def test_apply_exact_and_create() -> None:
    blocks = parse_edit_blocks(
        "calc.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
        "new.txt\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n"
    )
    contents, notes = apply_edit_blocks(blocks, _reader({"calc.py": SOURCE}))
    assert contents["calc.py"].decode() == SOURCE.replace("a - b", "a + b")
    assert contents["new.txt"] == b"hello\n"
    assert notes == []


def test_apply_reindents_when_only_indentation_differs() -> None:
    blocks = parse_edit_blocks(
        "calc.py\n<<<<<<< SEARCH\nreturn a - b\n=======\nresult = a + b\nreturn result\n"
        ">>>>>>> REPLACE\n"
    )
    contents, notes = apply_edit_blocks(blocks, _reader({"calc.py": SOURCE}))
    assert "    result = a + b\n    return result\n" in contents["calc.py"].decode()
    assert notes and "indentation and whitespace ignored" in notes[0]


def test_trailing_whitespace_is_tolerated_and_reported() -> None:
    blocks = parse_edit_blocks(
        "calc.py\n<<<<<<< SEARCH\n    return a - b   \n=======\n    return a + b\n>>>>>>> REPLACE\n"
    )
    contents, notes = apply_edit_blocks(blocks, _reader({"calc.py": SOURCE}))
    assert contents["calc.py"].decode() == SOURCE.replace("a - b", "a + b")
    assert "trailing whitespace ignored" in notes[0]


def test_ambiguous_and_missing_blocks_are_refused_with_the_closest_lines() -> None:
    source = "x = 1\ny = 2\nx = 1\n"
    with pytest.raises(EditBlockError, match=r"matches 2 places \(lines 1, 3\)"):
        apply_edit_blocks(
            parse_edit_blocks("f.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 3\n>>>>>>> REPLACE\n"),
            _reader({"f.py": source}),
        )
    with pytest.raises(EditBlockError, match=r"closest lines are 2-2:\n      2 \| y = 2"):
        apply_edit_blocks(
            parse_edit_blocks("f.py\n<<<<<<< SEARCH\ny = 3\n=======\ny = 4\n>>>>>>> REPLACE\n"),
            _reader({"f.py": source}),
        )


def test_missing_file_and_empty_search_on_existing_file() -> None:
    with pytest.raises(EditBlockError, match=r"nope\.py does not exist"):
        apply_edit_blocks(
            parse_edit_blocks("nope.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"),
            _reader({}),
        )
    with pytest.raises(EditBlockError, match=r"empty SEARCH, but calc\.py already exists"):
        apply_edit_blocks(
            parse_edit_blocks("calc.py\n<<<<<<< SEARCH\n=======\nb\n>>>>>>> REPLACE\n"),
            _reader({"calc.py": SOURCE}),
        )


def test_locate_prefers_the_hinted_place_and_reports_shifts() -> None:
    lines = split_lines("a\nb\nc\na\nb\nc\n")
    assert locate(lines, ["a\n", "b\n"], hint=3).start == 3
    match = locate(split_lines("z\nz\na\nb\n"), ["a\n", "b\n"], hint=0)
    assert (match.start, match.relaxed) == (2, "found 2 line(s) below where expected")
    with pytest.raises(MatchError, match="equally near"):
        locate(split_lines("a\nq\na\n"), ["a\n"], hint=1)
